#!/usr/bin/env python3
"""Summarise results/verbs-qps/raw/*.csv: per QP count, the median over the repetitions of
write_lat's p50 / p99 (us, half round trip) and write_bw's message rate (8 B messages/s), and
the spread (min..max over repetitions). Writes summary.csv and prints a Markdown table.
Standard library only."""
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

here = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
vals: dict[tuple[str, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
errors = 0
for f in sorted((here / "raw").glob("r*-*-q*.csv")):
    for r in csv.DictReader(f.open()):
        if r["pair_id"] != "all":
            continue
        if r["status"] != "ok":
            errors += 1
            continue
        key = (r["test"], int(r["qps"]))
        if r["test"] == "write_lat":
            vals[key]["p50"].append(float(r["lat_us_p50"]))
            vals[key]["p99"].append(float(r["lat_us_p99"]))
        else:
            vals[key]["rate"].append(float(r["msg_rate_per_s"]))
qs = sorted({q for _, q in vals})
rows = []
for q in qs:
    lat, bw = vals[("write_lat", q)], vals[("write_bw", q)]
    rows.append({
        "qps_per_side": q, "qps_on_device": 2 * q, "repetitions": len(lat["p50"]),
        "write_lat_p50_us": round(statistics.median(lat["p50"]), 2) if lat["p50"] else "",
        "write_lat_p50_min_max_us": f"{min(lat['p50']):.2f}..{max(lat['p50']):.2f}" if lat["p50"] else "",
        "write_lat_p99_us": round(statistics.median(lat["p99"]), 2) if lat["p99"] else "",
        "msg_rate_per_s": round(statistics.median(bw["rate"])) if bw["rate"] else "",
        "msg_rate_min_max": f"{min(bw['rate']):.0f}..{max(bw['rate']):.0f}" if bw["rate"] else "",
    })
with (here / "summary.csv").open("w", newline="") as out:
    w = csv.DictWriter(out, fieldnames=list(rows[0]) if rows else ["qps_per_side"])
    w.writeheader()
    w.writerows(rows)
print("| QPs per side | QPs on rxe0 | write_lat p50 µs (min..max of reps) | p99 µs | write_bw 8 B msg/s (min..max) |")
print("|---:|---:|---|---:|---|")
for r in rows:
    print(f"| {r['qps_per_side']} | {r['qps_on_device']} | {r['write_lat_p50_us']} ({r['write_lat_p50_min_max_us']}) "
          f"| {r['write_lat_p99_us']} | {r['msg_rate_per_s']} ({r['msg_rate_min_max']}) |")
if errors:
    print(f"\n{errors} aggregate rows with status error", file=sys.stderr)
sys.exit(1 if errors else 0)
