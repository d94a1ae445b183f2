#!/usr/bin/env python3
"""Ratios pairbench/NetPIPE from the raw files of run.sh (stdlib only)."""
import csv
import statistics
import sys
from pathlib import Path

raw, runs = Path(sys.argv[1]), int(sys.argv[2])


def np_val(name: str) -> tuple[float, float]:
    """NetPIPE output line: bytes, Mbps (10^6 bit/s), seconds (one-way time)."""
    f = raw / name
    _bytes, mbps, sec = f.read_text().split()[:3]
    return float(mbps) / 1e3, float(sec) * 1e6  # Gbit/s, µs


def pb_row(name: str, size: str) -> dict:
    with open(raw / name) as f:
        return next(r for r in csv.DictReader(f) if r["pair_id"] == "all" and r["msg_size_bytes"] == size)


series: dict[str, list[float]] = {k: [] for k in (
    "np_lat8_us", "pb_lat8_p50_us", "pb_lat8_mean_us", "pb_lat8_min_us",
    "np_stream1m_gbit", "np_pp1m_gbit", "pb_bw1m_gbit", "pb_pp1m_p50_gbit")}
for r in range(1, runs + 1):
    series["np_lat8_us"].append(np_val(f"np-lat8-{r}.out")[1])
    series["np_stream1m_gbit"].append(np_val(f"np-stream1m-{r}.out")[0])
    series["np_pp1m_gbit"].append(np_val(f"np-pp1m-{r}.out")[0])
    lat = pb_row(f"pb-lat-{r}.csv", "8")
    series["pb_lat8_p50_us"].append(float(lat["lat_us_p50"]))
    series["pb_lat8_mean_us"].append(float(lat["lat_us_mean"]))
    series["pb_lat8_min_us"].append(float(lat["lat_us_min"]))
    pp = pb_row(f"pb-lat-{r}.csv", "1048576")
    series["pb_pp1m_p50_gbit"].append(1048576 * 8 / float(pp["lat_us_p50"]) / 1e3)
    series["pb_bw1m_gbit"].append(float(pb_row(f"pb-bw1m-{r}.csv", "1048576")["bw_gbit_s"]))

print(f"{'series':22} {'min':>10} {'median':>10} {'max':>10}   (runs: {runs})")
for k, v in series.items():
    print(f"{k:22} {min(v):10.4f} {statistics.median(v):10.4f} {max(v):10.4f}")


def ratio(a: str, b: str, how) -> float:
    return how(series[a]) / how(series[b])


print()
print("ratios pairbench / NetPIPE (best run of each: min time / max rate ; median over runs):")
for a, b, what in (("pb_lat8_p50_us", "np_lat8_us", "latency 8 B, pairbench p50 vs NetPIPE"),
                   ("pb_lat8_mean_us", "np_lat8_us", "latency 8 B, pairbench mean vs NetPIPE"),
                   ("pb_bw1m_gbit", "np_stream1m_gbit", "bandwidth 1 MiB, bw (window 8) vs NetPIPE -s"),
                   ("pb_pp1m_p50_gbit", "np_pp1m_gbit", "ping-pong bandwidth 1 MiB, p50 vs NetPIPE")):
    best = min if a.endswith("_us") else max
    print(f"  {what:48} {ratio(a, b, best):8.3f} ; {ratio(a, b, statistics.median):8.3f}")
