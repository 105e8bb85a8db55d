#!/usr/bin/env python3
"""Code mode's costs through a running `toolgate serve` (issue #58), in one
run, rounds interleaved, medians:

- a tool call from a script, to an in-process tool (`list_servers`): a
  script making K calls against the same script making none, per call;
  next to the same tool called directly over HTTP;
- a resume: a script that waited for a person (a question, answered
  before the resume) run again from its journal, against the same
  script's size run plainly (`result = 1`), both over HTTP.

Usage: bench/code_mode_http.py BASE_URL [--token T] [--n N] [--rounds R] [--calls K]
Prints JSON (ms). Calls are 20 ms apart on one kept-alive connection.
"""

import argparse
import http.client
import json
import statistics
import sys
import time
import urllib.parse

GAP = 0.020


class Api:
    def __init__(self, base, token):
        u = urllib.parse.urlsplit(base)
        if u.scheme != "http":
            sys.exit(f"only http:// URLs: {base}")
        self.conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=120)
        self.base = u.path.rstrip("/")
        self.headers = {"Content-Type": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    def post(self, path, body):
        """(ms, status, answer)"""
        time.sleep(GAP)
        data = json.dumps(body)
        t = time.perf_counter()
        self.conn.request("POST", self.base + path, data, self.headers)
        r = self.conn.getresponse()
        raw = r.read()
        ms = (time.perf_counter() - t) * 1e3
        return ms, r.status, json.loads(raw)

    def script(self, body):
        ms, status, out = self.post("/tools/python.execute", body)
        if status != 200:
            sys.exit(f"python.execute answered {status}: {out}")
        return ms, out


def calls_script(k):
    return f"from toolgate import tools\nfor _ in range({k}):\n    tools.list_servers()\nresult = {k}"


WAITS = 'from toolgate import tools\na = tools.clarify(question="go on?", options=["yes"])\nresult = a["answer"]'
PLAIN = "from toolgate import tools\nresult = 1"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("base")
    p.add_argument("--token")
    p.add_argument("--n", type=int, default=15)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--calls", type=int, default=50)
    a = p.parse_args()
    api = Api(a.base, a.token)
    k = a.calls
    series = {"direct": [], "script_0": [], f"script_{k}": [], "plain": [], "resume": []}
    for _ in range(a.rounds):
        for _ in range(a.n):
            ms, status, out = api.post("/tools/list_servers", {})
            if status != 200:
                sys.exit(f"list_servers answered {status}: {out}")
            series["direct"].append(ms)
            series["script_0"].append(api.script({"code": calls_script(0)})[0])
            ms, out = api.script({"code": calls_script(k)})
            if out.get("result") != k:
                sys.exit(f"the script failed: {out}")
            series[f"script_{k}"].append(ms)
            # A question answered between the wait and the resume.
            _, waiting = api.script({"code": WAITS})
            q = waiting["waiting"]["clarification"]["id"]
            _, status, ans = api.post(f"/clarifications/{q}/answer", {"choice": 0})
            if status != 200:
                sys.exit(f"the answer route answered {status}: {ans}")
            ms, out = api.script({"code": WAITS, "resume": waiting["resume"]})
            if out.get("result") != "yes":
                sys.exit(f"the resume failed: {out}")
            series["resume"].append(ms)
            series["plain"].append(api.script({"code": PLAIN})[0])
    med = {name: round(statistics.median(v), 3) for name, v in series.items()}
    med["per_tool_call_from_script"] = round((med[f"script_{k}"] - med["script_0"]) / k, 4)
    med["resume_over_plain"] = round(med["resume"] - med["plain"], 3)
    print(json.dumps(med, indent=2))


if __name__ == "__main__":
    main()
