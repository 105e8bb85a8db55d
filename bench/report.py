#!/usr/bin/env python3
"""Merges bench/run's measurements into the markdown table README.md shows."""
import json, sys

sandbox = json.load(open(sys.argv[1]))
anchors = json.load(open(sys.argv[2]))
cold = json.load(open(sys.argv[3]))


def ms(row, engine):
    c = row.get(engine) or {}
    return None if c.get("error") else c.get("median_ms")


def fmt(v):
    return "ERR" if v is None else f"{v:.2f}"


def ratio(a, b):
    return "—" if a is None or b is None or b == 0 else f"{a / b:.2f}×"


print("| snippet | sandbox API | HTTP | CPython exec | RestrictedPython | monty | HTTP ÷ monty | API ÷ CPython |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for name in sorted(anchors):
    row = anchors[name]
    api = sandbox["sandbox_api"].get(name, {}).get("median_ms")
    http, cpy, rp, monty = ms(row, "http"), ms(row, "cpython-exec"), ms(row, "restricted"), ms(row, "monty")
    print(f"| {name} | {fmt(api)} | {fmt(http)} | {fmt(cpy)} | {fmt(rp)} | {fmt(monty)} | {ratio(http, monty)} | {ratio(api, cpy)} |")
print()
print(f"Medians in ms over {sandbox['n']} calls each. Cold start (process start to first answered call): "
      f"{cold['cold_start_ms']} ms; zygote warm-up {sandbox['zygote_warm_ms']:.0f} ms.")
