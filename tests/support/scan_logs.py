#!/usr/bin/env python3
"""The suite-wide log scan of issue #50: no log line carries an id, capability,
token or link.

    scan_logs.py DIR         scans DIR (scripts/test's TOOLGATE_TEST_LOG_DIR)
    scan_logs.py --self-test plants a leak in a temporary folder and fails
                             unless the scan reports it

DIR holds a copy of every Toolgate process's log the tests started, one
`*.log` file each (tests/src/logsink.rs), and `issued.tsv`: every id,
capability, link, task token, bearer token and secret the tests saw issued or
configured (tests/src/issued.rs; kind, value, test binary, with \\t \\n \\r \\\\
escaped). Each log line is checked for every recorded value of at least
MIN_CHARS characters (shorter ones would match by chance), and for patterns
that need no registry (PATTERNS). Exit 0: clean; 1: a finding; 2: nothing to
scan (no log file: the sink is broken).
"""

import bisect
import os
import re
import sys
import tempfile

MIN_CHARS = 16
# Registry-free: things no log line may hold, whoever issued them.
PATTERNS = [
    ("clarification link", re.compile(r"/clarifications/[0-9a-f]{40}")),
    ("approval link", re.compile(r"/approval-links/[0-9a-f]{40}")),
    ("inbox link", re.compile(r"/inbox/[0-9a-f]{40}")),
    ("capability fragment", re.compile(r"#cap=")),
    ("bearer token", re.compile(r"Bearer [A-Za-z0-9._~+/=-]{8,}")),
    # A field whose value is a bare 160-bit id (`id=…`, `"id":"…"`,
    # `session: …`): ids are logged as `ref:` + 16 hex.
    ("40-hex id in a field", re.compile(r'(?:=|"\s*:\s*"|:\s*)"?[0-9a-f]{40}\b')),
]
# wrangler dev's own access log (miniflare's maybeLogRequest, `[wrangler:info]
# GET /path 200 OK (3ms)`): the platform's, not the Worker's, and its paths
# hold ids by design (as API Gateway's access log would). The Worker's own
# lines in the same output are scanned.
PLATFORM_ACCESS_LOG = re.compile(r"\[wrangler:\w+\]\s+[A-Z]+ /\S* \d{3}\b")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
SHOWN = 240  # characters of a finding's line shown around the match


def platform_access_log(line):
    return "[wrangler:" in line and PLATFORM_ACCESS_LOG.match(ANSI.sub("", line).lstrip())


def unescape(s):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            out.append({"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def read_issued(folder):
    """value -> set of (kind, test binary); and how many were too short."""
    values, short = {}, set()
    path = os.path.join(folder, "issued.tsv")
    if not os.path.exists(path):
        return values, 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 2:
                continue
            kind, value = unescape(parts[0]), unescape(parts[1])
            binary = parts[2] if len(parts) > 2 else "?"
            if len(value) < MIN_CHARS:
                short.add(value)
                continue
            values.setdefault(value, set()).add((kind, binary))
    return values, len(short - set(values))


def trie_regex(words):
    """One regex matching any of `words`, as a trie, so that a line is read
    once whatever the number of values (an alternation of thousands of
    literals would try each at every position)."""
    trie = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node):
        # A chain of single children is one literal.
        lit = []
        while len(node) == 1 and "" not in node:
            (ch, node), = node.items()
            lit.append(re.escape(ch))
        if not node or list(node) == [""]:
            return "".join(lit)
        end = "" in node
        alts = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        group = "(?:" + "|".join(alts) + ")" + ("?" if end else "")
        return "".join(lit) + group

    return re.compile(build(trie)) if words else None


# Characters of ids, tokens and links: a value made only of them is found
# by cutting the logs into runs of them and looking the runs' pieces up.
TOKEN_RUN = re.compile(r"[A-Za-z0-9_\-.+/=~:%@]{" + str(MIN_CHARS) + ",}")


class Finder:
    """Finds recorded values in a text: by set look-ups in its token runs
    for values made of token characters (nearly all), by one trie regex for
    the rest."""

    def __init__(self, values):
        self.simple = {v for v in values if TOKEN_RUN.fullmatch(v)}
        self.lengths = sorted({len(v) for v in self.simple})
        self.other = trie_regex(sorted(set(values) - self.simple, key=len, reverse=True))

    def positions(self, text):
        """Where (offsets) values start in `text`, roughly: one per run."""
        for m in TOKEN_RUN.finditer(text):
            run = m.group()
            if run in self.simple or any(
                    run[i:i + k] in self.simple
                    for k in self.lengths if k < len(run)
                    for i in range(len(run) - k + 1)):
                yield m.start()
        if self.other is not None:
            for m in self.other.finditer(text):
                yield m.start()


def excerpt(line, start, end):
    a = max(0, start - SHOWN // 2)
    b = min(len(line), end + SHOWN // 2)
    return ("…" if a else "") + line[a:b] + ("…" if b < len(line) else "")


def scan(folder, out=sys.stdout):
    """Prints the findings and the counts; returns the exit status."""
    values, short = read_issued(folder)
    finder = Finder(values)
    logs = sorted(n for n in os.listdir(folder) if n.endswith(".log"))
    findings = lines = skipped = 0
    for name in logs:
        with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
            text = f.read()
        # Whole-file searches (C speed), then each hit's line.
        starts = [0] + [m.end() for m in re.finditer("\n", text)]
        lines += len(starts) - (1 if text.endswith("\n") or not text else 0)
        hit_lines = {bisect.bisect_right(starts, i) for i in finder.positions(text)}
        for _, pattern in PATTERNS:
            hit_lines.update(bisect.bisect_right(starts, m.start()) for m in pattern.finditer(text))
        skipped += sum(1 for m in re.finditer(r"^.*\[wrangler:.*$", text, re.M)
                       if platform_access_log(m.group()))
        for number in sorted(hit_lines):
            line = text[starts[number - 1]:starts[number] - 1 if number < len(starts) else len(text)]
            if platform_access_log(line):
                continue
            hits = []
            if any(True for _ in finder.positions(line)):
                for value in sorted(v for v in values if v in line):
                    kinds = ", ".join(sorted(f"{k} ({b})" for k, b in values[value]))
                    i = line.find(value)
                    hits.append((f"issued value, {kinds}", i, i + len(value)))
            for what, pattern in PATTERNS:
                m = pattern.search(line)
                if m:
                    hits.append((what, m.start(), m.end()))
            for what, start, end in hits:
                findings += 1
                print(f"LEAK {name}:{number}: {what}: {excerpt(line, start, end)}", file=out)
    print(
        f"log scan: {len(logs)} log files, {lines} lines "
        f"({skipped} of them the platform's access log, skipped), "
        f"{len(values)} issued values of {MIN_CHARS}+ characters "
        f"({short} shorter ones not looked for), {findings} findings",
        file=out,
    )
    if not logs:
        print(f"log scan: no log file in {folder}: the log sink is broken "
              "(tests/src/logsink.rs)", file=out)
        return 2
    return 1 if findings else 0


def self_test():
    """A planted leak of each kind is reported, a clean folder passes, and
    an empty one fails."""
    import io

    failures = []
    with tempfile.TemporaryDirectory() as d:
        planted_id = "3f" * 20
        token = "a-bearer-token-only-the-test-knows"
        secret = "tab\there-and-more-than-16"
        with open(os.path.join(d, "issued.tsv"), "w") as f:
            f.write(f"id\t{planted_id}\tplanted\n")
            f.write(f"bearer token\t{token}\tplanted\n")
            f.write("config secret\ttab\\there-and-more-than-16\tplanted\n")
            f.write("id\tshort-id\tplanted\n")
            f.write(f"session\t{'ab' * 20}x\tplanted\n")
        with open(os.path.join(d, "clean-1-toolgate-serve.log"), "w") as f:
            f.write('{"level":"INFO","fields":{"message":"clarification asked","id":"ref:0123456789abcdef"}}\n')
            f.write("a line that mentions short-id by chance\n")
            f.write("[wrangler:info] GET /clarifications/" + "cd" * 20 + " 200 OK (3ms)\n")
            f.write("\x1b[32m[wrangler:info]\x1b[0m \x1b[0m\x1b[1mPOST\x1b[22m /clarifications/"
                    + "ef" * 20 + "/answer \x1b[32m\x1b[1m200\x1b[22m OK \x1b[39m(1ms)\n")
        cases = [
            ("leak-2-serve.log", f'{{"message":"notified","id":"{planted_id}"}}', "issued value, id (planted)"),
            ("leak-3-serve.log", f"INFO checking token {token} now", "issued value, bearer token"),
            ("leak-4-serve.log", f"secret={secret} in a line", "issued value, config secret"),
            ("leak-5-serve.log", "answer at http://x/clarifications/" + "ab" * 20 + "/answer", "clarification link"),
            ("leak-6-serve.log", "open http://x/inbox/abc#cap=QWERTY", "capability fragment"),
            ("leak-7-serve.log", "Authorization: Bearer abcdefgh12345", "bearer token"),
            ("leak-8-serve.log", "POST /approval-links/" + "01" * 20 + " with capability", "approval link"),
            ("leak-9-serve.log", "INFO task callback sent id=" + "9a" * 20 + " status=answered", "40-hex id in a field"),
        ]
        for name, line, _ in cases:
            with open(os.path.join(d, name), "w") as f:
                f.write("a clean line first\n" + line + "\n")
        buf = io.StringIO()
        status = scan(d, buf)
        report = buf.getvalue()
        if status != 1:
            failures.append(f"the scan of planted leaks exited {status}, not 1")
        for name, _, what in cases:
            if not re.search(rf"^LEAK {re.escape(name)}:2: {re.escape(what)}", report, re.M):
                failures.append(f"{name}: no '{what}' finding on line 2")
        if "clean-1-toolgate-serve.log" in report.replace("log scan:", ""):
            failures.append("a clean log was reported")
        for name, *_ in cases:
            os.remove(os.path.join(d, name))
        buf = io.StringIO()
        if scan(d, buf) != 0:
            failures.append("a clean folder did not pass:\n" + buf.getvalue())
        os.remove(os.path.join(d, "clean-1-toolgate-serve.log"))
        buf = io.StringIO()
        if scan(d, buf) != 2:
            failures.append("a folder without logs did not fail")
    if failures:
        print("scan_logs.py --self-test FAILED:\n  " + "\n  ".join(failures))
        print("the scan's report of the planted leaks:\n" + report)
        return 1
    print(f"scan_logs.py --self-test: ok ({len(cases)} planted leaks reported, "
          "a clean folder passed, an empty one failed)")
    return 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) != 1 or not os.path.isdir(argv[0]):
        print(__doc__, file=sys.stderr)
        return 2
    return scan(argv[0])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
