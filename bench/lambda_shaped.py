#!/usr/bin/env python3
"""python.execute at Lambda's CPU share: per call latency, the CPU the call
costs, and the CPU spent after it (the replacement spare), next to
pydantic-monty in the same limits.

A cgroup gets what AWS Lambda gives a function of --mb MB (default 1024): a
CPU quota of mb/1769 of one vCPU (Lambda gives a full vCPU at 1,769 MB) and
a memory limit of mb MiB. `toolgate serve` runs in it with the settings the
python-execute function gets on Lambda (the same sandbox, zygote and
spares; Lambda is recognised by AWS_LAMBDA_RUNTIME_API, which the bench
sets and serve never talks to; --serve-settings: serve's own); so does a
monty server (a pool
worker, a fresh session per call, spoken to over pipes: no HTTP in its
path, which favours it). Calls go --gap-ms apart (default 100: an agent
thinks between calls, and Lambda serves one at a time), one kept-alive
connection. As Lambda freezes an instance once it has answered, the cgroup
is frozen from each answer to the next call (--no-freeze: left running):
what the sandbox does after a call (the used child's exit, the replacement
spare) waits for the next call and takes its share of the CPU. For each
call the cgroup's CPU counter is read before the request, after the answer,
and, unfrozen, again before the next call:
  ms        the latency the caller saw;
  cpu_ms    the CPU the cgroup spent from the request to the answer
            (whatever process spent it: the script's child, the server,
            the spare a frozen call before left unmade);
  after_ms  with --no-freeze, the CPU spent after the answer (the
            replacement spare); frozen, none is.
Medians over --n calls per snippet. Needs root and cgroups (v2, or v1's
cpu, cpuacct, memory and freezer controllers). With the kernel's default
period for the quota (--period-ms 100), a call shorter than its quota runs
unthrottled, as it may on Lambda: the CPU column is its cost either way.

With --against PATH (another toolgate build, e.g. a lever switched off),
the two builds run side by side, each in its own such cgroup, and their
calls alternate one by one (which goes first alternates too): each
snippet reports both builds' medians and, pair by pair, the median ratio
against/toolgate of CPU and of latency. Both servers start afresh
--restarts times (default 6), the calls split between the starts: two
starts of the same build differ by up to 10%. A lever worth a few
percent of a call's CPU needs this and a few hundred calls. Monty is
not run then.

Usage: bench/lambda_shaped.py --toolgate PATH [--python VENV_PYTHON]
                              [--mb 1024] [--n 21] [--gap-ms 100] [--json OUT]
                              [--engines toolgate,monty] [--snippets a,b]
                              [--against PATH]
"""
import argparse
import contextlib
import http.client
import json
import os
import pathlib
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).parent
SNIPPETS = {p.stem: p.read_text() for p in sorted((HERE / "snippets").glob("*.py"))}
# Lambda's CPU is proportional to memory: one vCPU at 1,769 MB.
FULL_VCPU_MB = 1769

MONTY_SERVER = r"""
import json, sys
import pydantic_monty as pm
pool = pm.Monty(min_processes=1, max_processes=1)
pool.__enter__()
print("ready", flush=True)
for line in sys.stdin:
    code = json.loads(line)["code"]
    try:
        with pool.checkout() as s:
            s.feed_run(code, print_callback=pm.CollectString())
            s.feed_run("result")
        out = {"ok": True}
    except Exception as e:
        out = {"ok": False, "error": (str(e).splitlines() or [type(e).__name__])[-1][:200]}
    print(json.dumps(out), flush=True)
"""


class Cgroup:
    """A cgroup with Lambda's limits; `usage_ns()` is its CPU so far."""

    def __init__(self, mb, period_us, tag=""):
        name = f"toolgate-lambda-shaped-{os.getpid()}{tag}"
        quota = max(1000, int(period_us * mb / FULL_VCPU_MB))
        self.share = quota / period_us
        self.dirs = []
        try:
            self._make(name, mb, quota, period_us)
        except BaseException:
            self.remove()
            raise

    def _make(self, name, mb, quota, period_us):
        root = pathlib.Path("/sys/fs/cgroup")
        if (root / "cgroup.controllers").exists():
            missing = {"cpu", "memory"} - set((root / "cgroup.subtree_control").read_text().split())
            if missing:
                (root / "cgroup.subtree_control").write_text(" ".join("+" + c for c in missing))
            d = root / name
            d.mkdir()
            self.dirs.append(d)
            (d / "cpu.max").write_text(f"{quota} {period_us}")
            (d / "memory.max").write_text(str(mb << 20))
            self._usage = lambda: int(next(
                l.split()[1] for l in (d / "cpu.stat").read_text().splitlines()
                if l.startswith("usage_usec"))) * 1000
            self._freeze = lambda on: self._v2_freeze(d, on)
        else:
            cpu, acct, mem, frz = (self._v1(root, c, name)
                                   for c in ("cpu", "cpuacct", "memory", "freezer"))
            (cpu / "cpu.cfs_period_us").write_text(str(period_us))
            (cpu / "cpu.cfs_quota_us").write_text(str(quota))
            (mem / "memory.limit_in_bytes").write_text(str(mb << 20))
            self._usage = lambda: int((acct / "cpuacct.usage").read_text())
            self._freeze = lambda on: self._v1_freeze(frz, on)

    def _v1(self, root, controller, name):
        # cpu and cpuacct are often mounted together, under either name.
        mounts = [root / controller]
        if controller in ("cpu", "cpuacct"):
            mounts.append(root / "cpu,cpuacct")
        for mount in mounts:
            if (mount / "tasks").exists():
                d = pathlib.Path(os.path.realpath(mount / name))
                if d not in self.dirs:
                    d.mkdir(exist_ok=True)
                    self.dirs.append(d)
                return d
        sys.exit(f"lambda_shaped: no cgroup v1 {controller} controller under {root}")

    def usage_ns(self):
        return self._usage()

    def freeze(self, on):
        """Stops (or resumes) every process in the cgroup, as Lambda does
        between invocations; returns once they are."""
        self._freeze(on)

    @staticmethod
    def _v2_freeze(d, on):
        (d / "cgroup.freeze").write_text("1" if on else "0")
        want = f"frozen {1 if on else 0}"
        while want not in (d / "cgroup.events").read_text():
            time.sleep(0.0002)

    @staticmethod
    def _v1_freeze(d, on):
        want = "FROZEN" if on else "THAWED"
        (d / "freezer.state").write_text(want)
        while (d / "freezer.state").read_text().strip() != want:
            time.sleep(0.0002)

    def enter(self):
        """In a child before exec: join the cgroup."""
        for d in self.dirs:
            (d / "cgroup.procs").write_text(str(os.getpid()))

    def remove(self):
        """Thaws and kills whatever is left in it, then removes it."""
        for d in self.dirs:
            for f, value in (("cgroup.freeze", "0"), ("freezer.state", "THAWED")):
                if (d / f).exists():
                    with contextlib.suppress(OSError):
                        (d / f).write_text(value)
        for d in self.dirs:
            with contextlib.suppress(OSError):
                for pid in (d / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
        for d in self.dirs:
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)
            else:
                print(f"lambda_shaped: could not remove {d}", file=sys.stderr)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Toolgate:
    def __init__(self, exe, cg, as_lambda):
        self.data = tempfile.mkdtemp(prefix="tg-lambda-shaped-")
        port = free_port()
        env = dict(os.environ, TOOLGATE_DATA_DIR=self.data)
        if as_lambda:
            env["AWS_LAMBDA_RUNTIME_API"] = "127.0.0.1:9"
        self.proc = subprocess.Popen([exe, "serve", "--addr", f"127.0.0.1:{port}"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=cg.enter)
        try:
            deadline = time.time() + 60
            while True:
                try:
                    self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                    self.call("print(1)")
                    break
                except (OSError, http.client.HTTPException):
                    if time.time() > deadline or self.proc.poll() is not None:
                        sys.exit("lambda_shaped: toolgate serve did not answer")
                    time.sleep(0.05)
        except BaseException:
            self.close()
            raise

    def call(self, code):
        self.conn.request("POST", "/tools/python.execute", json.dumps({"code": code}),
                          {"Content-Type": "application/json"})
        r = self.conn.getresponse()
        out = json.loads(r.read())
        if r.status != 200 or out.get("exit_code") != 0:
            raise RuntimeError((out.get("stderr") or str(out))[-200:])

    def close(self):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.data, ignore_errors=True)


class Monty:
    def __init__(self, python, cg):
        self.proc = subprocess.Popen([python, "-c", MONTY_SERVER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, preexec_fn=cg.enter)
        if self.proc.stdout.readline().strip() != "ready":
            self.close()
            sys.exit("lambda_shaped: the monty server did not start (pip install pydantic-monty)")

    def call(self, code):
        self.proc.stdin.write(json.dumps({"code": code}) + "\n")
        self.proc.stdin.flush()
        out = json.loads(self.proc.stdout.readline())
        if not out["ok"]:
            raise RuntimeError(out["error"])

    def close(self):
        self.proc.kill()
        self.proc.wait()


def series(engine, cg, code, n, gap, freeze):
    engine.call(code)  # warm, and whether it runs at all
    ms, cpu, after = [], [], []
    time.sleep(gap)
    try:
        for _ in range(n):
            call_ms, call_cpu, u1 = one_call(engine, cg, code, freeze)
            time.sleep(gap)
            u2 = cg.usage_ns()
            if freeze:
                cg.freeze(False)
            ms.append(call_ms)
            cpu.append(call_cpu)
            after.append((u2 - u1) / 1e6)
    finally:
        if freeze:
            cg.freeze(False)
    return {k: round(statistics.median(v), 3) for k, v in
            (("ms", ms), ("cpu_ms", cpu), ("after_ms", after))}


def one_call(engine, cg, code, freeze):
    """One call, the cgroup frozen after it if `freeze`: its latency and
    the CPU the cgroup spent on it (ms), and the CPU counter at the answer."""
    u0 = cg.usage_ns()
    t0 = time.perf_counter()
    engine.call(code)
    t1 = time.perf_counter()
    u1 = cg.usage_ns()
    if freeze:
        cg.freeze(True)
    return (t1 - t0) * 1e3, (u1 - u0) / 1e6, u1


def series_ab(a, b, code, n, gap, freeze, got):
    """`a` and `b` ((engine, cgroup)) called in turn, each frozen from its
    answer to its next call; latencies and CPU appended to `got`."""
    runs = {"toolgate": a, "against": b}
    for engine, cg in runs.values():
        engine.call(code)
        if freeze:
            cg.freeze(True)
    try:
        for i in range(n):
            for k in (("toolgate", "against") if i % 2 == 0 else ("against", "toolgate")):
                engine, cg = runs[k]
                time.sleep(gap)
                if freeze:
                    cg.freeze(False)
                ms, cpu, _ = one_call(engine, cg, code, freeze)
                got[k][0].append(ms)
                got[k][1].append(cpu)
    finally:
        if freeze:
            for _, cg in runs.values():
                cg.freeze(False)


def medians_ab(got):
    out = {k: {"ms": round(statistics.median(v[0]), 3), "cpu_ms": round(statistics.median(v[1]), 3)}
           for k, v in got.items()}
    for i, what in ((0, "ms_ratio"), (1, "cpu_ratio")):
        pairs = [y / x for x, y in zip(got["toolgate"][i], got["against"][i]) if x > 0]
        out[what] = round(statistics.median(pairs), 3)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--toolgate", required=True)
    ap.add_argument("--python", default=sys.executable, help="a Python with pydantic-monty")
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--n", type=int, default=21)
    ap.add_argument("--gap-ms", type=float, default=100)
    ap.add_argument("--period-ms", type=float, default=100,
                    help="the CPU quota's period (the kernel's default): a call shorter than "
                         "the quota uses it unthrottled")
    ap.add_argument("--no-freeze", action="store_true",
                    help="leave the cgroup running between calls")
    ap.add_argument("--serve-settings", action="store_true",
                    help="run toolgate with serve's settings, not the Lambda function's")
    ap.add_argument("--engines", default="toolgate,monty")
    ap.add_argument("--snippets", help="these of bench/snippets only (comma-separated)")
    ap.add_argument("--json")
    ap.add_argument("--against", help="another toolgate build, its calls alternating with "
                                      "--toolgate's one by one (each in its own cgroup)")
    ap.add_argument("--restarts", type=int, default=6,
                    help="with --against: start both servers afresh this many times, the "
                         "--n calls split between them (two starts of one build differ by "
                         "up to 10%%)")
    a = ap.parse_args()
    snippets = SNIPPETS
    if a.snippets:
        unknown = set(a.snippets.split(",")) - set(SNIPPETS)
        if unknown:
            sys.exit(f"lambda_shaped: no such snippet: {', '.join(sorted(unknown))}")
        snippets = {k: v for k, v in SNIPPETS.items() if k in a.snippets.split(",")}
    wanted = a.engines.split(",")
    if not wanted or set(wanted) - {"toolgate", "monty"}:
        sys.exit("lambda_shaped: --engines is toolgate, monty or both")
    if os.geteuid() != 0:
        sys.exit("lambda_shaped: needs root, to make a cgroup")
    # `kill` or `timeout` must not skip the clean-up: the processes would
    # stay frozen.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cg = Cgroup(a.mb, int(a.period_ms * 1000))
    table = {}
    if a.against:
        try:
            table = against(a, cg, snippets)
        finally:
            cg.remove()
        report(a, cg, table)
        return
    try:
        engines = {"toolgate": lambda: Toolgate(a.toolgate, cg, not a.serve_settings),
                   "monty": lambda: Monty(a.python, cg)}
        for name in wanted:
            start = engines[name]
            engine = start()
            try:
                for sn, code in snippets.items():
                    try:
                        table.setdefault(sn, {})[name] = series(engine, cg, code, a.n, a.gap_ms / 1e3,
                                                                not a.no_freeze)
                    except Exception as e:  # the engine cannot run this snippet
                        table.setdefault(sn, {})[name] = {"error": str(e)[:200]}
            finally:
                engine.close()
    finally:
        cg.remove()
    report(a, cg, table)


def against(a, cg, snippets):
    """--against: the two builds side by side, calls alternating, started
    afresh --restarts times (which starts first alternating)."""
    cg_b = Cgroup(a.mb, int(a.period_ms * 1000), "-against")
    got = {sn: {k: ([], []) for k in ("toolgate", "against")} for sn in snippets}
    failed = {}
    per_start = -(-a.n // max(1, a.restarts))
    try:
        for r in range(max(1, a.restarts)):
            builds = [(a.toolgate, cg), (a.against, cg_b)]
            started = [None, None]
            try:
                for j in ((0, 1) if r % 2 == 0 else (1, 0)):
                    exe, group = builds[j]
                    started[j] = Toolgate(exe, group, not a.serve_settings)
                pair = [(started[j], builds[j][1]) for j in (0, 1)]
                for sn, code in snippets.items():
                    if sn in failed:
                        continue
                    try:
                        series_ab(pair[0], pair[1], code, per_start, a.gap_ms / 1e3,
                                  not a.no_freeze, got[sn])
                    except Exception as e:  # a build cannot run this snippet
                        failed[sn] = {"error": str(e)[:200]}
            finally:
                for engine in filter(None, started):
                    engine.close()
    finally:
        cg_b.remove()
    return {sn: failed.get(sn) or medians_ab(got[sn]) for sn in snippets}


def report(a, cg, table):
    out = {"mb": a.mb, "cpu_share": cg.share, "period_ms": a.period_ms, "n": a.n, "gap_ms": a.gap_ms,
           "frozen_between_calls": not a.no_freeze,
           "settings": "serve" if a.serve_settings else "lambda", "snippets": table}
    if a.against:
        out["against"] = a.against
        out["restarts"] = a.restarts
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(out, indent=1))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
