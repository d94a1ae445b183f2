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


def schema_columns(binary: str) -> list[str]:
    out = subprocess.run([binary, "--print-schema"], capture_output=True, text=True,
                         timeout=30, check=True).stdout.splitlines()
    if not out or out[0] != "pairbench-schema 1":
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
        if r["schema_version"] != "1" or r["layer"] != "verbs" or int(r["pairs"]) != pairs:
            fail(f"{where} pair {r['pair_id']}: schema_version/layer/pairs wrong")
        if "above_link_rate" in r["flags"]:
            fail(f"{where} pair {r['pair_id']}: bandwidth above the link rate")
        if r["link_pct"] and num(r, "link_pct") > 100.0:
            fail(f"{where} pair {r['pair_id']}: link_pct {r['link_pct']} > 100")
    if int(agg["iterations"]) != sum(int(r["iterations"]) for r in per):
        fail(f"{where}: aggregate iterations {agg['iterations']} != sum over pairs")
    lat = [r for r in per if r["lat_kind"]]
    for r in lat:
        mn, p50, mx = num(r, "lat_us_min"), num(r, "lat_us_p50"), num(r, "lat_us_max")
        if not (mn > 0 and mn <= p50 <= mx):
            fail(f"{where} pair {r['pair_id']}: latency min/p50/max {mn}/{p50}/{mx} not 0 < min <= p50 <= max")
    if lat:
        if abs(num(agg, "lat_us_min") - min(num(r, "lat_us_min") for r in lat)) > 1e-3:
            fail(f"{where}: aggregate lat_us_min is not the minimum over pairs")
        if abs(num(agg, "lat_us_max") - max(num(r, "lat_us_max") for r in lat)) > 1e-3:
            fail(f"{where}: aggregate lat_us_max is not the maximum over pairs")
    bw = [r for r in per if r["bw_gbit_s"]]
    if bw:
        for r in bw:
            if not num(r, "bw_gbit_s") > 0 or not num(r, "msg_rate_per_s") > 0:
                fail(f"{where} pair {r['pair_id']}: bandwidth or message rate not > 0")
            # message rate x window = messages of the row
            msgs = num(r, "msg_rate_per_s") * num(r, "duration_s")
            if abs(msgs - int(r["iterations"])) > 0.01 * int(r["iterations"]) + 1:
                fail(f"{where} pair {r['pair_id']}: msg_rate x duration = {msgs:.1f}, iterations {r['iterations']}")
        agg_bw = num(agg, "bw_mbyte_s")
        sum_bw = sum(num(r, "bw_mbyte_s") for r in bw)
        # Aggregate window >= every pair's window, so Σ bytes / window <= Σ per-pair rates.
        if not agg_bw > 0 or agg_bw > sum_bw * 1.001 + 1e-6:
            fail(f"{where}: aggregate {agg_bw} MB/s not in (0, sum of pairs {sum_bw}]")
        if not lat:  # pure bandwidth point: the aggregate window is the row's duration
            # Σ bytes (= Σ messages x size, exact) / window must be the aggregate rate.
            want = sum(int(r["iterations"]) for r in bw) * size / 1e6 / num(agg, "duration_s")
            if abs(agg_bw - want) > 0.01 * want + 2e-4:
                fail(f"{where}: aggregate {agg_bw} MB/s != sum of bytes / window = {want:.4f} MB/s")
        fair = num(agg, "fairness")
        if not (0 < fair <= 1.0001):
            fail(f"{where}: fairness {fair} not in (0, 1]")
    if pairs > 1 and not agg["start_skew_us"]:
        fail(f"{where}: aggregate row has no start_skew_us")


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
