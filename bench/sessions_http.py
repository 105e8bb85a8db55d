#!/usr/bin/env python3
"""A python.execute session call's cost over a stateless one, through a
running Toolgate's HTTP API (toolgate serve, the Worker under wrangler dev,
a Lambda function under cargo lambda watch): the same state sizes as
`toolgate-bench --sessions` (24, 2,200 and 36,000 rows of a table, which
save as about 1 KB, 64 KB and 1 MB of state), here with
the runtime's own store in the path (SQLite, D1, DynamoDB).

Usage: bench/sessions_http.py BASE_URL [--token TOKEN] [--n N]
  BASE_URL: where /tools/python.execute is, e.g. http://127.0.0.1:8080 or
  http://127.0.0.1:9000/lambda-url/python-execute

Prints JSON medians (ms), calls 20 ms apart on one kept-alive connection:
a session call that does not read the state (`n = 1`: nothing is restored)
and one that does (`n = len(rows)`).
"""

import argparse
import http.client
import json
import statistics
import sys
import time
import urllib.parse

GAP = 0.020
SIZES = [("1KB", 24), ("64KB", 2_200), ("1MB", 36_000)]


class Api:
    def __init__(self, base, token):
        u = urllib.parse.urlsplit(base)
        if u.scheme != "http":
            sys.exit(f"only http:// URLs: {base}")
        self.conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=120)
        self.path = u.path.rstrip("/") + "/tools/python.execute"
        self.headers = {"Content-Type": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    def call(self, body):
        """One call: (ms, the answer)."""
        data = json.dumps(body)
        t = time.perf_counter()
        self.conn.request("POST", self.path, data, self.headers)
        r = self.conn.getresponse()
        raw = r.read()
        ms = (time.perf_counter() - t) * 1e3
        answer = json.loads(raw)
        if r.status != 200 or answer.get("exit_code") != 0:
            sys.exit(f"call failed ({r.status}): {raw[:500]!r}")
        return ms, answer

    def series(self, body, n):
        times = []
        for _ in range(n):
            time.sleep(GAP)
            times.append(self.call(body)[0])
        return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("base_url")
    p.add_argument("--token")
    p.add_argument("--n", type=int, default=21)
    a = p.parse_args()
    api = Api(a.base_url, a.token)
    api.call({"code": "n = 1"})
    stateless = api.series({"code": "n = 1"}, a.n)
    rows = {}
    for label, count in SIZES:
        make = (
            f"rows = [{{'id': i, 'name': 'row%d' % i, 'score': i * 0.5}} "
            f"for i in range({count})]"
        )
        _, first = api.call({"code": make, "session": "new"})
        session = first["session"]
        ms = api.series({"code": "n = 1", "session": session}, a.n)
        # A call that reads the state restores all of it.
        read = api.series({"code": "n = len(rows)", "session": session}, a.n)
        rows[label] = {
            "rows": count,
            "session_ms": round(ms, 2),
            "stateless_ms": round(stateless, 2),
            "overhead_ms": round(ms - stateless, 2),
            "reading_ms": round(read, 2),
            "reading_overhead_ms": round(read - stateless, 2),
        }
    print(json.dumps({"sessions": rows, "n": a.n, "gap_ms": GAP * 1e3, "base_url": a.base_url}))


if __name__ == "__main__":
    main()
