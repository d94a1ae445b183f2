#!/usr/bin/env python3
"""Check a pairbench-verbs CSV: schema, one row per pair plus 'all' per size,
sane values, and the aggregate row consistent with the per-pair rows.

usage: check_rows.py --binary PAIRBENCH --csv FILE --test NAME --pairs N --sizes 1,4096
Exit 0 when every check passes, 1 with one line per failure otherwise.
"""
import argparse
import csv
import math
import os
import subprocess
import sys

SCHEMA_VERSION = 2


def schema_columns(binary: str) -> list[str]:
    out = subprocess.run([binary, "--print-schema"], capture_output=True, text=True,
                         timeout=30, check=True).stdout.splitlines()
    if not out or out[0] != f"pairbench-schema {SCHEMA_VERSION}":
        raise SystemExit(f"unexpected --print-schema first line: {out[:1]}")
    return [line.split("\t", 1)[0] for line in out[1:]]


def num(row: dict, col: str) -> float:
    v = row[col]
    return float(v) if v != "" else math.nan


def check_point(test: str, size: int, pairs: int, rows: list[dict], fail) -> None:
    where = f"{test} {size} B"
    ids = sorted(r["pair_id"] for r in rows)
    want = sorted([str(i) for i in range(pairs)] + ["all"])
    if ids != want:
        fail(f"{where}: pair_id values {ids}, expected {want}")
        return
    per = [r for r in rows if r["pair_id"] != "all"]
    agg = next(r for r in rows if r["pair_id"] == "all")
    for r in rows:
        if r["status"] != "ok":
            fail(f"{where} pair {r['pair_id']}: status {r['status']}: {r['error']}")
            return
        if r["schema_version"] != str(SCHEMA_VERSION) or r["layer"] != "verbs" or int(r["pairs"]) != pairs:
            fail(f"{where} pair {r['pair_id']}: schema_version/layer/pairs wrong")
        if "above_link_rate" in r["flags"]:
            fail(f"{where} pair {r['pair_id']}: bandwidth above the link rate")
        if r["link_pct"] and num(r, "link_pct") > 100.0:
            fail(f"{where} pair {r['pair_id']}: link_pct {r['link_pct']} > 100")
    lat = [r for r in per if r["lat_kind"]]
    bw = [r for r in per if r["bw_gbit_s"]]
    # The aggregate's iterations count what its columns count: the bandwidth pairs'
    # messages when it has bandwidth (loaded_lat: the loading pairs), else the latency pairs'.
    counted = bw or lat or per
    if int(agg["iterations"]) != sum(int(r["iterations"]) for r in counted):
        fail(f"{where}: aggregate iterations {agg['iterations']} != sum over the "
             f"{'bandwidth' if bw else 'latency'} pairs")
    check_worst_pair(where, agg, lat, bw, fail)
    for r in lat:
        mn, p50, mx = num(r, "lat_us_min"), num(r, "lat_us_p50"), num(r, "lat_us_max")
        if not (mn > 0 and mn <= p50 <= mx):
            fail(f"{where} pair {r['pair_id']}: latency min/p50/max {mn}/{p50}/{mx} not 0 < min <= p50 <= max")
    if lat:
        if abs(num(agg, "lat_us_min") - min(num(r, "lat_us_min") for r in lat)) > 1e-3:
            fail(f"{where}: aggregate lat_us_min is not the minimum over pairs")
        if abs(num(agg, "lat_us_max") - max(num(r, "lat_us_max") for r in lat)) > 1e-3:
            fail(f"{where}: aggregate lat_us_max is not the maximum over pairs")
    if bw:
        for r in [*bw, agg]:
            if not num(r, "bw_gbit_s") > 0 or not num(r, "msg_rate_per_s") > 0:
                fail(f"{where} pair {r['pair_id']}: bandwidth or message rate not > 0")
            # message rate x window = messages of the row
            msgs = num(r, "msg_rate_per_s") * num(r, "duration_s")
            if abs(msgs - int(r["iterations"])) > 1e-5 * int(r["iterations"]) + 0.5:
                fail(f"{where} pair {r['pair_id']}: msg_rate x duration = {msgs:.1f}, iterations {r['iterations']}")
        agg_bw = num(agg, "bw_mbyte_s")
        sum_bw = sum(num(r, "bw_mbyte_s") for r in bw)
        # Aggregate window >= every pair's window, so Σ bytes / window <= Σ per-pair rates.
        if not agg_bw > 0 or agg_bw > sum_bw * 1.001 + 1e-6:
            fail(f"{where}: aggregate {agg_bw} MB/s not in (0, sum of pairs {sum_bw}]")
        # The aggregate's duration_s is its bandwidth window (also for loaded_lat):
        # Σ bytes (= Σ messages x size, exact) / window must be the aggregate rate.
        want = sum(int(r["iterations"]) for r in bw) * size / 1e6 / num(agg, "duration_s")
        if abs(agg_bw - want) > 1e-5 * want + 1e-6:
            fail(f"{where}: aggregate {agg_bw} MB/s != sum of bytes / window = {want:.6g} MB/s")
        fair = num(agg, "fairness")
        if not (0 < fair <= 1.0001):
            fail(f"{where}: fairness {fair} not in (0, 1]")
    if pairs > 1 and not agg["start_skew_us"]:
        fail(f"{where}: aggregate row has no start_skew_us")


def check_worst_pair(where: str, agg: dict, lat: list[dict], bw: list[dict], fail) -> None:
    """The worst pair on the aggregate row: the pair rows' own numbers, or empty cells."""
    if len(lat) >= 2:
        wid = agg["worst_lat_pair_id"]
        worst = next((r for r in lat if r["pair_id"] == wid), None)
        if worst is None:
            fail(f"{where}: worst_lat_pair_id {wid!r} is not a latency pair")
            return
        if (agg["worst_lat_us_p50"], agg["worst_lat_us_p99"]) != (worst["lat_us_p50"],
                                                                   worst["lat_us_p99"]):
            fail(f"{where}: worst_lat_us_p50/p99 are not pair {wid}'s")
        if num(worst, "lat_us_p50") < max(num(r, "lat_us_p50") for r in lat):
            fail(f"{where}: pair {wid} does not have the highest p50")
        if num(agg, "worst_lat_us_p50") < num(agg, "lat_us_min"):
            fail(f"{where}: worst pair p50 below the aggregate minimum")
    elif agg["worst_lat_pair_id"] or agg["worst_lat_us_p50"] or agg["worst_lat_us_p99"]:
        fail(f"{where}: worst-latency columns filled with fewer than 2 latency pairs")
    if len(bw) >= 2:
        rates = [num(r, "bw_gbit_s") for r in bw]
        low = next((r for r in bw if r["pair_id"] == agg["min_bw_pair_id"]), None)
        if low is None or low["bw_gbit_s"] != agg["min_pair_bw_gbit_s"] \
                or num(low, "bw_gbit_s") != min(rates):
            fail(f"{where}: min_bw_pair_id/min_pair_bw_gbit_s are not the slowest pair's")
        share = min(rates) / (sum(rates) / len(rates))
        if not abs(num(agg, "min_pair_bw_share") - share) <= 1e-6:
            fail(f"{where}: min_pair_bw_share {agg['min_pair_bw_share']}, expected {share:.9g}")
    elif agg["min_bw_pair_id"] or agg["min_pair_bw_gbit_s"] or agg["min_pair_bw_share"]:
        fail(f"{where}: slowest-pair columns filled with fewer than 2 bandwidth pairs")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--pairs", type=int, required=True)
    ap.add_argument("--sizes", required=True)
    a = ap.parse_args()
    failures: list[str] = []
    cols = schema_columns(a.binary)
    if not os.path.isfile(a.csv) or os.path.getsize(a.csv) == 0:
        print(f"{a.csv}: missing or empty (the run wrote no rows)", file=sys.stderr)
        return 1
    with open(a.csv, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != cols:
            print(f"CSV header differs from --print-schema: {reader.fieldnames}", file=sys.stderr)
            return 1
        rows = list(reader)
    for size in (int(s) for s in a.sizes.split(",")):
        point = [r for r in rows if r["test"] == a.test and int(r["msg_size_bytes"]) == size]
        check_point(a.test, size, a.pairs, point, failures.append)
    for msg in failures:
        print(f"check_rows: FAIL: {msg}", file=sys.stderr)
    if not failures:
        print(f"check_rows: {a.test} pairs={a.pairs} sizes={a.sizes}: {len(rows)} rows OK", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
