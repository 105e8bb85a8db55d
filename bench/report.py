#!/usr/bin/env python3
"""Merges bench/run's measurements into the markdown table README.md shows."""
import json, sys

sandbox = json.load(open(sys.argv[1]))
anchors = json.load(open(sys.argv[2]))
cold = json.load(open(sys.argv[3]))
alone = json.load(open(sys.argv[4])) if len(sys.argv) > 4 else {}


def ms(row, engine):
    c = row.get(engine) or {}
    return None if c.get("error") else c.get("median_ms")


def apart_ms(row, engine):
    """The median 20 ms apart: None where it failed, "—" where not measured."""
    c = row.get(engine) or {}
    if c.get("error") or c.get("apart_error"):
        return None
    return c.get("median_apart_ms", "—")


def fmt(v):
    return "ERR" if v is None else v if isinstance(v, str) else f"{v:.2f}"


def ratio(a, b):
    numbers = all(isinstance(v, (int, float)) for v in (a, b))
    return f"{a / b:.2f}×" if numbers and b != 0 else "—"


print("| snippet | API, 20 ms apart | API, back to back | HTTP, back to back | HTTP, 20 ms apart "
      "| CPython exec | RestrictedPython | monty | monty, 20 ms apart | API ÷ monty "
      "| API ÷ monty, 20 ms apart | HTTP ÷ monty | API ÷ CPython |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for name in sorted(anchors):
    row, ours = anchors[name], sandbox["sandbox"].get(name, {})
    idle, b2b = ours.get("api_idle_ms"), ours.get("api_b2b_ms")
    h_b2b, h_idle = ours.get("http_b2b_ms"), ours.get("http_idle_ms")
    cpy, rp, monty = ms(row, "cpython-exec"), ms(row, "restricted"), ms(row, "monty")
    monty_apart = apart_ms(row, "monty")
    print(f"| {name} | {fmt(idle)} | {fmt(b2b)} | {fmt(h_b2b)} | {fmt(h_idle)} | {fmt(cpy)} | {fmt(rp)} "
          f"| {fmt(monty)} | {fmt(monty_apart)} | {ratio(b2b, monty)} | {ratio(idle, monty_apart)} "
          f"| {ratio(h_b2b, monty)} | {ratio(b2b, cpy)} |")
faults = {name: row.get("api_b2b_faults") for name, row in sorted(sandbox["sandbox"].items())}
if any(v is not None for v in faults.values()):
    print()
    print("Page faults per call back to back at the API, whole machine: "
          + ", ".join(f"{name} {v}" for name, v in faults.items() if v is not None) + ".")
child = {name: (row.get("child_b2b_ms"), row.get("child_ms")) for name, row in sorted(sandbox["sandbox"].items())}
if any(b2b is not None for b2b, _ in child.values()):
    print()
    print("Of a call at the API, the time in the child (from its request to its report), back to back / "
          "20 ms apart: " + ", ".join(f"{name} {fmt(b2b)} / {fmt(apart)}" for name, (b2b, apart) in child.items()
                                        if b2b is not None) + " ms.")
hot, cold_vm = alone.get("in_process", {}), alone.get("in_process_apart", {})
if hot:
    print()
    print("The interpreter alone (in-process, one warm VM, no fork), back to back"
          + (" / 20 ms apart" if cold_vm else "") + ": "
          + ", ".join(f"{name} {hot[name]:.3f}" + (f" / {cold_vm[name]:.3f}" if name in cold_vm else "")
                      for name in sorted(hot)) + " ms.")
print()
print(f"Medians in ms over {sandbox['n']} calls each. Ratios compare back-to-back calls with back-to-back "
      f"anchors, and calls 20 ms apart with monty's calls 20 ms apart. Cold start (process start to first answered call): {cold['cold_start_ms']} ms; "
      f"zygote warm-up {sandbox['zygote_warm_ms']:.0f} ms.")
