#!/usr/bin/env python3
"""Merges bench/run's rounds into the markdown table docs/benchmarks.md shows.

Each argument is one round's folder (sandbox.json, anchors.json, cold.json
and in_process.json, every engine measured within minutes of the others).
A cell is the median of its rounds' medians; a ratio is the median of its
rounds' ratios, so that two engines are compared within a round, not across
the host's slower and faster minutes."""
import json, pathlib, statistics, sys

ARGS = sys.argv[1:]
# `--also DIR`: bench/run's one-off tables (sessions, the Lambda-shaped
# run), printed after the rounds' table.
ALSO = None
if ARGS[:1] == ["--also"]:
    if len(ARGS) < 2:
        sys.exit("report.py: --also takes a folder")
    ALSO, ARGS = pathlib.Path(ARGS[1]), ARGS[2:]
ROUNDS = []
for d in map(pathlib.Path, ARGS):
    for needed in ("sandbox.json", "anchors.json"):
        if not (d / needed).is_file():
            sys.exit(f"report.py: {d} has no {needed}: not a finished round")
    load = lambda name: json.loads((d / name).read_text()) if (d / name).exists() else {}
    ROUNDS.append({"sandbox": load("sandbox.json"), "anchors": load("anchors.json"),
                   "cold": load("cold.json"), "alone": load("in_process.json")})
if not ROUNDS:
    sys.exit("report.py: give one folder per round")
GAPS = {r["sandbox"].get("gap_ms", 20) for r in ROUNDS}
if len(GAPS) > 1:
    sys.exit(f"report.py: the rounds paused differently between calls ({sorted(GAPS)} ms)")
APART = f"{GAPS.pop()} ms apart"


def anchor(rnd, name, engine, key):
    """An anchor's median; None where the engine failed, "—" where not measured."""
    c = rnd["anchors"].get(name, {}).get(engine) or {}
    if c.get("error") or (key == "median_apart_ms" and c.get("apart_error")):
        return None
    return c.get(key, "—")


def ours(rnd, name, key):
    return rnd["sandbox"].get("sandbox", {}).get(name, {}).get(key)


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def median(values):
    """The median of the rounds' values: None (ERR) if any round failed, "—"
    if none measured it."""
    if any(v is None for v in values):
        return None
    nums = [v for v in values if number(v)]
    return statistics.median(nums) if nums else "—"


def fmt(v):
    return "ERR" if v is None else v if isinstance(v, str) else f"{v:.2f}"


def ratios(a, b):
    """Per round, a ÷ b where both are numbers."""
    return [x / y for x, y in zip(a, b) if number(x) and number(y) and y != 0]


def fmt_ratio(rs):
    return f"{statistics.median(rs):.2f}×" if rs else "—"


names = sorted({n for r in ROUNDS for n in r["anchors"]})
COLUMNS = [("API ÷ monty", "api_b2b_ms", "monty", "median_ms"),
           (f"API ÷ monty, {APART}", "api_idle_ms", "monty", "median_apart_ms"),
           ("HTTP ÷ monty", "http_b2b_ms", "monty", "median_ms"),
           ("API ÷ CPython", "api_b2b_ms", "cpython-exec", "median_ms")]
print(f"| snippet | API, {APART} | API, back to back | HTTP, back to back | HTTP, {APART} "
      f"| CPython exec | RestrictedPython | monty | monty, {APART} | "
      + " | ".join(c[0] for c in COLUMNS) + " |")
print("|---|" + "---:|" * (8 + len(COLUMNS)))
per_round = {}
for name in names:
    cells = [median([ours(r, name, k) for r in ROUNDS])
             for k in ("api_idle_ms", "api_b2b_ms", "http_b2b_ms", "http_idle_ms")]
    cells += [median([anchor(r, name, e, k) for r in ROUNDS])
              for e, k in (("cpython-exec", "median_ms"), ("restricted", "median_ms"),
                           ("monty", "median_ms"), ("monty", "median_apart_ms"))]
    shown = []
    for label, mine, engine, key in COLUMNS:
        rs = ratios([ours(r, name, mine) for r in ROUNDS], [anchor(r, name, engine, key) for r in ROUNDS])
        per_round.setdefault(label, {})[name] = rs
        shown.append(fmt_ratio(rs))
    print(f"| {name} | " + " | ".join(map(fmt, cells)) + " | " + " | ".join(shown) + " |")

if len(ROUNDS) > 1:
    for label in ("API ÷ monty", f"API ÷ monty, {APART}"):
        rows = [f"{name} " + ", ".join(f"{x:.2f}" for x in rs) for name, rs in per_round[label].items() if rs]
        if rows:
            print()
            print(f"{label}{'' if 'apart' in label else ', back to back'}, round by round: "
                  + "; ".join(rows) + ".")


def sandbox_line(key):
    return {n: median([ours(r, n, key) for r in ROUNDS]) for n in sorted(ROUNDS[0]["sandbox"].get("sandbox", {}))}


faults = sandbox_line("api_b2b_faults")
if any(number(v) for v in faults.values()):
    print()
    print("Page faults per call back to back at the API, whole machine: "
          + ", ".join(f"{n} {v:.0f}" for n, v in faults.items() if number(v)) + ".")
child_b2b, child_apart = sandbox_line("child_b2b_ms"), sandbox_line("child_ms")
if any(number(v) for v in child_b2b.values()):
    print()
    print("Of a call at the API, the time in the child (from its request to its report), back to back / "
          f"{APART}: " + ", ".join(f"{n} {fmt(v)} / {fmt(child_apart.get(n))}"
                                        for n, v in child_b2b.items() if number(v)) + " ms.")
hot = {n: median([r["alone"].get("in_process", {}).get(n) for r in ROUNDS])
       for n in sorted(ROUNDS[0]["alone"].get("in_process", {}))}
cold_vm = {n: median([r["alone"].get("in_process_apart", {}).get(n) for r in ROUNDS])
           for n in sorted(ROUNDS[0]["alone"].get("in_process_apart", {}))}
if hot:
    print()
    print("The interpreter alone (in-process, one warm VM, no fork), back to back"
          + (f" / {APART}" if cold_vm else "") + ": "
          + ", ".join(f"{n} {v:.3f}" + (f" / {cold_vm[n]:.3f}" if number(cold_vm.get(n)) else "")
                      for n, v in hot.items() if number(v)) + " ms.")
print()
starts = ", ".join(str(r["cold"].get("cold_start_ms", "—")) for r in ROUNDS)
warm = ", ".join(f"{r['sandbox'].get('zygote_warm_ms', 0):.0f}" for r in ROUNDS)
rounds = (f", in {len(ROUNDS)} rounds (each measures every engine within minutes): a cell is the median "
          "of the rounds' medians, a ratio the median of the rounds' ratios" if len(ROUNDS) > 1 else "")
print(f"Medians in ms over {ROUNDS[0]['sandbox'].get('n', '?')} calls each{rounds}. Ratios compare "
      f"back-to-back calls with back-to-back anchors, and calls {APART} with monty's calls {APART}. "
      f"Cold start (process start to first answered call): {starts} ms; zygote warm-up {warm} ms.")


def sessions_table(api, http):
    """A session call's cost over a stateless one, by the size of its state."""
    print()
    print("| state | API, not reading | API, reading | HTTP (serve, SQLite), not reading "
          "| HTTP, reading |")
    print("|---|---:|---:|---:|---:|")
    for label in ("1KB", "64KB", "1MB"):
        a = api.get("sessions", {}).get(label, {})
        h = http.get("sessions", {}).get(label, {})
        cells = [a.get("overhead_ms"), a.get("reading_overhead_ms"),
                 h.get("overhead_ms"), h.get("reading_overhead_ms")]
        print(f"| {label} | " + " | ".join("—" if v is None else f"+{v:.2f}" for v in cells) + " |")
    base = [x.get("sessions", {}).get("1KB", {}).get("stateless_ms") for x in (api, http)]
    print()
    print("Milliseconds over a stateless call (" + ", ".join(
        f"{where} {v:.2f} ms" for where, v in zip(("API", "HTTP"), base) if number(v))
          + f"), medians of {api.get('n', http.get('n', '?'))} calls 20 ms apart.")


def lambda_table(run):
    """python.execute and monty in the same cgroup at Lambda's CPU share."""
    def cell(row, engine, key):
        c = row.get(engine) or {}
        return None if "error" in c else c.get(key)

    print()
    print("| snippet | ms | monty ms | ÷ monty | CPU ms | monty CPU ms | CPU ÷ monty |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, row in sorted(run.get("snippets", {}).items()):
        cells = []
        for key in ("ms", "cpu_ms"):
            ours_v, monty_v = cell(row, "toolgate", key), cell(row, "monty", key)
            cells += [fmt(ours_v), fmt(monty_v),
                      f"{ours_v / monty_v:.2f}×" if number(ours_v) and number(monty_v) and monty_v else "—"]
        print(f"| {name} | " + " | ".join(cells) + " |")
    frozen = "frozen between calls, as Lambda freezes an instance" if run.get("frozen_between_calls") \
        else "left running between calls"
    print()
    print(f"In a cgroup of {run.get('mb')} MB with {run.get('cpu_share', 0):.2f} of a vCPU "
          f"(per {run.get('period_ms', 100):g} ms), {frozen}; "
          f"calls {run.get('gap_ms')} ms apart, medians of {run.get('n')}; CPU is the cgroup's from "
          "request to answer, whatever process spent it.")


if ALSO is not None:
    read = lambda name: json.loads((ALSO / name).read_text()) if (ALSO / name).exists() else None
    api, http = read("sessions_api.json"), read("sessions_http.json")
    if api or http:
        sessions_table(api or {}, http or {})
    shaped = read("lambda_shaped.json")
    if shaped:
        lambda_table(shaped)
