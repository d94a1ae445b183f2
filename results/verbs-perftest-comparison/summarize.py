#!/usr/bin/env python3
"""Markdown tables from comparison.csv and ../verbs-multipair-sweep/sweep.csv (run on the host)."""
import csv
import os
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))


def comparison() -> None:
    with open(os.path.join(here, "comparison.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    print("| test | bytes | metric | perftest (median of reps) | pairbench (median of reps) | ratio pairbench/perftest |")
    print("|---|---|---|---|---|---|")
    keys = []
    for r in rows:
        k = (r["test"], r["bytes"])
        if k not in keys:
            keys.append(k)
    for test, size in keys:
        col = "bw_gbit_s" if test.endswith("_bw") else "p50_us"
        vals = {}
        for tool in ("perftest", "pairbench"):
            v = [float(r[col]) for r in rows if r["test"] == test and r["bytes"] == size
                 and r["tool"] == tool and r[col]]
            vals[tool] = (statistics.median(v), v) if v else (float("nan"), v)
        ratio = vals["pairbench"][0] / vals["perftest"][0]
        metric = "bandwidth Gbit/s" if col == "bw_gbit_s" else "p50 latency µs"
        print(f"| {test} | {size} | {metric} | {vals['perftest'][0]:.3f} {vals['perftest'][1]} | "
              f"{vals['pairbench'][0]:.3f} {vals['pairbench'][1]} | {ratio:.3f} |")
    if "min_us" not in rows[0]:
        return
    print("\n| test | bytes | perftest min / mean µs (median of reps) | pairbench min / mean µs (median of reps) |")
    print("|---|---|---|---|")
    for test, size in keys:
        if test.endswith("_bw"):
            continue
        cells = []
        for tool in ("perftest", "pairbench"):
            sel = [r for r in rows if r["test"] == test and r["bytes"] == size and r["tool"] == tool]
            mn = [float(r["min_us"]) for r in sel if r["min_us"]]
            me = [float(r["mean_us"]) for r in sel if r["mean_us"]]
            cells.append(f"{statistics.median(mn):.2f} / {statistics.median(me):.2f}" if mn and me else "")
        print(f"| {test} | {size} | {cells[0]} | {cells[1]} |")


def sweep() -> None:
    path = os.path.join(here, "..", "verbs-multipair-sweep", "sweep.csv")
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["pair_id"] == "all"]
    tests = []
    for r in rows:
        if r["test"] not in tests:
            tests.append(r["test"])
    for t in tests:
        tr = [r for r in rows if r["test"] == t]
        pairs = sorted({int(r["pairs"]) for r in tr})
        sizes = sorted({int(r["msg_size_bytes"]) for r in tr})
        lat = t.endswith("_lat")
        what = "aggregate p50 latency µs (pooled samples; loaded_lat: probe pair)" if lat else \
            "aggregate bandwidth Gbit/s [fairness]"
        print(f"\n### {t}: {what}\n")
        print("| bytes | " + " | ".join(f"{p} pair(s)" for p in pairs) + " |")
        print("|---|" + "---|" * len(pairs))
        for s in sizes:
            cells = []
            for p in pairs:
                r = next((x for x in tr if int(x["pairs"]) == p and int(x["msg_size_bytes"]) == s), None)
                if r is None:
                    cells.append("")
                elif r["status"] != "ok":
                    cells.append("error")
                elif lat:
                    cells.append(r["lat_us_p50"])
                else:
                    cells.append(f"{float(r['bw_gbit_s']):.4f} [{r['fairness']}]")
            print(f"| {s} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    {"comparison": comparison, "sweep": sweep}[sys.argv[1]]()
