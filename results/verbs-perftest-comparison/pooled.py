#!/usr/bin/env python3
"""Pool comparison CSVs of several rig boots: ratio of medians pairbench/perftest with a
95 % bootstrap interval (resampling the repetitions of each tool; seed fixed).

usage: pooled.py COMPARISON.csv [COMPARISON.csv ...]
"""
import csv
import random
import statistics as st
import sys


def main(paths: list[str]) -> None:
    data: dict = {}
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                col = "bw_gbit_s" if r["test"].endswith("_bw") else "p50_us"
                if r[col]:
                    data.setdefault((r["test"], r["bytes"]), {}).setdefault(r["tool"], []).append(float(r[col]))
    rng = random.Random(1)
    print("| test | bytes | reps per tool | perftest median | pairbench median | ratio | 95 % bootstrap interval |")
    print("|---|---|---|---|---|---|---|")
    for (test, size), v in data.items():
        a, b = v["pairbench"], v["perftest"]
        boots = sorted(st.median([rng.choice(a) for _ in a]) / st.median([rng.choice(b) for _ in b])
                       for _ in range(5000))
        print(f"| {test} | {size} | {len(a)} | {st.median(b):.3f} | {st.median(a):.3f} | "
              f"{st.median(a) / st.median(b):.3f} | [{boots[125]:.3f}, {boots[4874]:.3f}] |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
