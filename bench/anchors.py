#!/usr/bin/env python3
# Copied from the team's anchor harness (shared/bench) so that the project can
# reproduce its own table; bench/run drives it.
"""Side-by-side per-call latency of python sandboxes on the same snippets.

Engines (each call gets a fresh sandbox):
  cpython-exec   plain exec() in-process: no isolation, the floor
  cpython-proc   a fresh `python3 -I -c` process per call
  restricted     CPython + RestrictedPython configured as the seed's tool_python node
                 (compile_restricted, safe builtins + extras, allowlisted __import__,
                 PrintCollector, a daemon thread per call); needs `pip install RestrictedPython`
  monty          pydantic-monty: a pool worker, a fresh session per call
  http           POST {"code": ...} to $TOOLGATE_URL (the project's python.execute)

With --gap-ms G, each engine is also measured with its calls G ms apart
(`median_apart_ms`): the CPU's caches go cold in the pause, as they do for
a sandbox called 20 ms apart, so that series is the like-for-like anchor
for those calls.

Usage: anchors.py [--n N] [--engines a,b] [--gap-ms G] [--json OUT]
"""
import argparse, contextlib, io, json, os, pathlib, statistics, subprocess, sys, time, urllib.request

HERE = pathlib.Path(__file__).parent
SNIPPETS = {p.stem: p.read_text() for p in sorted((HERE / "snippets").glob("*.py"))}


def eng_cpython_exec():
    def run(code):
        buf = io.StringIO()
        g = {}
        with contextlib.redirect_stdout(buf):
            exec(compile(code, "<agent_script>", "exec"), g)
        return g.get("result")
    return run, lambda: None


def eng_cpython_proc():
    def run(code):
        p = subprocess.run([sys.executable, "-I", "-c", code + "\nimport json;print(json.dumps(result))"],
                           capture_output=True, text=True, timeout=60)
        return json.loads(p.stdout.strip().splitlines()[-1])
    return run, lambda: None


def eng_restricted():
    import builtins, threading, warnings
    from RestrictedPython import compile_restricted, safe_builtins
    from RestrictedPython.Eval import default_guarded_getiter
    from RestrictedPython.Guards import full_write_guard, guarded_unpack_sequence, safer_getattr
    from RestrictedPython.PrintCollector import PrintCollector
    warnings.simplefilter("ignore")
    allowed = {"math", "cmath", "decimal", "fractions", "statistics", "random", "string", "textwrap",
               "re", "json", "csv", "collections", "itertools", "functools", "operator", "copy",
               "dataclasses", "enum", "typing", "datetime", "time", "calendar", "base64", "hashlib",
               "hmac", "struct", "difflib", "pprint", "bisect", "heapq", "array", "numbers", "unicodedata"}
    extras = ["all", "any", "ascii", "bin", "bytearray", "dict", "enumerate", "filter", "format",
              "frozenset", "hasattr", "iter", "list", "map", "max", "min", "next", "object", "print",
              "reversed", "set", "sum", "super", "type"]

    def guarded_import(name, *a, **k):
        if name.split(".")[0] not in allowed:
            raise ImportError(f"Import of '{name}' is not allowed")
        return __import__(name, *a, **k)

    def inplace(op, x, y):
        return {"+=": lambda: x + y, "-=": lambda: x - y, "*=": lambda: x * y}[op]()

    def run(code):
        b = dict(safe_builtins)
        for n in extras:
            b[n] = getattr(builtins, n)
        b["__import__"] = guarded_import
        g = {"__builtins__": b, "_getattr_": safer_getattr, "_getitem_": lambda o, k: o[k],
             "_getiter_": default_guarded_getiter, "_iter_unpack_sequence_": guarded_unpack_sequence,
             "_unpack_sequence_": guarded_unpack_sequence, "_write_": full_write_guard,
             "_inplacevar_": inplace, "_print_": PrintCollector, "__metaclass__": type,
             "__name__": "<agent_script>"}
        err = []
        compiled = compile_restricted(code, filename="<agent_script>", mode="exec")

        def target():
            try:
                exec(compiled, g)
            except Exception as e:  # the seed reports it as exit_code 1
                err.append(e)
        t = threading.Thread(target=target, daemon=True)
        t.start()
        t.join(20)
        if err:
            raise RuntimeError(repr(err[0]))
        return g.get("result")
    return run, lambda: None


def eng_monty():
    import pydantic_monty as pm
    pool = pm.Monty(min_processes=1, max_processes=1)
    pool.__enter__()
    def run(code):
        with pool.checkout() as s:
            s.feed_run(code, print_callback=pm.CollectString())
            return s.feed_run("result")
    return run, lambda: pool.__exit__(None, None, None)


def eng_http():
    url = os.environ["TOOLGATE_URL"]
    def run(code):
        req = urllib.request.Request(url, data=json.dumps({"code": code}).encode(),
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            out = json.loads(r.read())
        if out.get("exit_code") != 0:
            raise RuntimeError(out.get("stderr", "")[-300:])
        return out.get("result")
    return run, lambda: None


ENGINES = {"cpython-exec": eng_cpython_exec, "cpython-proc": eng_cpython_proc,
           "restricted": eng_restricted, "monty": eng_monty, "http": eng_http}


def describe(e):
    """An engine's failure in a line: the last of its message, or its type."""
    return str(e).splitlines()[-1][:120] if str(e) else type(e).__name__


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=7)
    ap.add_argument("--engines", default="cpython-exec,cpython-proc,restricted,monty")
    ap.add_argument("--gap-ms", type=float, default=0)
    ap.add_argument("--json")
    a = ap.parse_args()
    table = {}
    for name in a.engines.split(","):
        try:
            run, close = ENGINES[name]()
        except Exception as e:  # engine not available here
            print(f"{name}: unavailable ({e})", file=sys.stderr)
            continue
        for sn, code in SNIPPETS.items():
            times, apart, err, res = [], [], None, None
            try:
                res = run(code)  # warm-up, also the answer we compare
                for _ in range(a.n):
                    t = time.perf_counter(); run(code); times.append(time.perf_counter() - t)
            except Exception as e:
                err = describe(e)
            cell = {"median_ms": round(statistics.median(times) * 1e3, 3) if times else None,
                    "error": err, "result": res}
            if a.gap_ms > 0 and err is None:
                try:
                    for _ in range(a.n):
                        time.sleep(a.gap_ms / 1e3)
                        t = time.perf_counter(); run(code); apart.append(time.perf_counter() - t)
                    cell["median_apart_ms"] = round(statistics.median(apart) * 1e3, 3)
                except Exception as e:
                    cell["apart_error"] = describe(e)
            table.setdefault(sn, {})[name] = cell
        close()
    engines = a.engines.split(",")
    print("snippet".ljust(14) + "".join(e.rjust(14) for e in engines))
    for sn, row in table.items():
        cells = []
        for e in engines:
            c = row.get(e)
            cells.append(("-" if c is None else ("ERR" if c["error"] else f'{c["median_ms"]:.2f}')).rjust(14))
        print(sn.ljust(14) + "".join(cells))
    for sn, row in table.items():
        for e, c in row.items():
            if c["error"]:
                print(f"  {sn}/{e}: {c['error']}")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(table, indent=1, default=repr))

main()
