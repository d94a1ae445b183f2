#!/usr/bin/env python3
"""Ratios pairbench/perftest per point and buffer layout from layouts/layouts.csv
(run-layouts.sh): ratio of the medians over the rounds, with a 95 % bootstrap interval
(resampling each tool's rounds independently, 5000 resamples, seed fixed), plus the
fresh/peer ratio of pairbench itself (resampled the same way).  Latency: p50 (perftest
t_typical); bandwidth: Gbit/s.  For latency a ratio > 1 means pairbench is slower; for
bandwidth a ratio < 1 means pairbench moves less.

usage: ratios.py LAYOUTS.csv   (Markdown on stdout; standard library only)
"""
import csv
import random
import statistics as st
import sys


def boot(rng: random.Random, a: list[float], b: list[float]) -> tuple[float, float]:
    r = sorted(st.median(rng.choices(a, k=len(a))) / st.median(rng.choices(b, k=len(b)))
               for _ in range(5000))
    return r[124], r[4874]


def main(path: str) -> None:
    data: dict = {}
    loads = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            col = "bw_gbit_s" if r["test"].endswith("_bw") else "p50_us"
            if not r[col]:
                continue
            tool = r["tool"] if r["tool"] == "perftest" else f"pairbench {r['buffers'] or '(no choice)'}"
            data.setdefault((r["test"], int(r["bytes"])), {}).setdefault(tool, []).append(float(r[col]))
            loads.append(float(r["loadavg1"]))
    rng = random.Random(1)
    print("| test | bytes | metric | rounds | perftest median | pairbench layout | pairbench median "
          "| ratio pairbench/perftest | 95 % bootstrap interval |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (test, size), v in data.items():
        pt = v.get("perftest", [])
        metric = "Gbit/s" if test.endswith("_bw") else "p50 µs"
        for tool in sorted(t for t in v if t != "perftest"):
            a = v[tool]
            if not a or not pt:
                continue
            lo, hi = boot(rng, a, pt)
            print(f"| {test} | {size} | {metric} | {len(a)} | {st.median(pt):.4g} | {tool.split(' ', 1)[1]} "
                  f"| {st.median(a):.4g} | {st.median(a) / st.median(pt):.3f} | [{lo:.3f}, {hi:.3f}] |")
    print("\n| test | bytes | fresh / peer (pairbench) | 95 % bootstrap interval |")
    print("|---|---|---|---|")
    for (test, size), v in data.items():
        a, b = v.get("pairbench fresh"), v.get("pairbench peer")
        if a and b:
            lo, hi = boot(rng, a, b)
            print(f"| {test} | {size} | {st.median(a) / st.median(b):.3f} | [{lo:.3f}, {hi:.3f}] |")
    if loads:
        print(f"\nGuest load average (1 min) at the start of the rounds: {min(loads):.2f} .. {max(loads):.2f}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
