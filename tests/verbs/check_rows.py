#!/usr/bin/env python3
"""Check a pairbench-verbs CSV with the one row checker (tests/support/rowcheck.py):
header = --print-schema, one row per pair plus 'all' per size, and every row
invariant of the contract for the test as the binary's test table describes it.

usage: check_rows.py --binary PAIRBENCH --csv FILE --test NAME --pairs N --sizes 1,4096 [--qps Q]
                    [--buffers fresh|peer]
Every verbs row carries its QP count (--qps Q, default 1) in the qps column.
--buffers: the layout the run asked for; every row must carry it (tests without a layout
choice: empty), default: the test's default layout.
Exit 0 when every check passes, 1 with one line per failure otherwise.
Standard library only (runs with the system python3 inside the rig).
"""
import argparse
import csv
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))  # rowcheck

import rowcheck

from pairbench.contract import testtable


def default_window(rows: list[dict[str, str]], info: testtable.TestInfo,
                   lat_samples: int) -> list[str]:
    """No -n/-D (docs/methodology.md "Windows"): bandwidth points ran one common 0.2 s window,
    latency points sampled 0.1 s and at least lat_samples per pair; each aggregate lasted at
    least its window (rowcheck allows 0.1 % for the barrier's exit delay; this says so
    outright)."""
    bw = info.kind in testtable.BANDWIDTH_KINDS
    want = ("window", "0.2") if bw else \
        ("target", "0.2" if info.kind == testtable.LOADED_KIND else "0.1")
    out = []
    for i, r in enumerate(rows):
        where = f"row {i + 2} (pair {r['pair_id']}, {r['msg_size_bytes']} B)"
        if (r["window_method"], r["window_s"]) != want:
            out.append(f"{where}: timed by {r['window_method']} {r['window_s']!r}, expected "
                       f"{want[0]} {want[1]!r}")
        if r["pair_id"] == "all" and r["duration_s"] and \
                float(r["duration_s"]) + float(r["start_delay_us"] or "nan") / 1e6 < \
                float(want[1]) * (1 - 1e-8):
            out.append(f"{where}: the point lasted {r['duration_s']} s from "
                       f"{r['start_delay_us']} us after the common start, its window "
                       f"{want[1]} s")
        if not bw and r["pair_id"] != "all" and r["lat_us_p50"] and \
                int(r["iterations"]) < lat_samples:
            out.append(f"{where}: {r['iterations']} latency samples, expected >= {lat_samples}")
    durs = [float(r["duration_s"]) for r in rows if r["pair_id"] == "all" and r["duration_s"]]
    if durs:
        delays = [float(r["start_delay_us"]) for r in rows
                  if r["pair_id"] == "all" and r["start_delay_us"]]
        print(f"check_rows: aggregate duration_s {min(durs):.6f} .. {max(durs):.6f} s, "
              f"start_delay_us {min(delays, default=float('nan')):.1f} .. "
              f"{max(delays, default=float('nan')):.1f} ({want[0]} {want[1]} s)",
              file=sys.stderr)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--pairs", type=int, required=True)
    ap.add_argument("--sizes", required=True)
    ap.add_argument("--qps", type=int, default=1)
    ap.add_argument("--buffers", choices=["fresh", "peer"])
    ap.add_argument("--defaults", action="store_true",
                    help="the run had no -n/-D: every row timed by the default window "
                         "(bandwidth: window 0.2 s; latency: target 0.1 s, >= --lat-samples)")
    ap.add_argument("--lat-samples", type=int, default=1000)
    a = ap.parse_args()
    info = testtable.load_snapshot()["verbs"].get(a.test)
    if info is None:
        print(f"check_rows: unknown verbs test {a.test!r}", file=sys.stderr)
        return 1
    cols = rowcheck.schema_columns(a.binary)
    if not os.path.isfile(a.csv) or os.path.getsize(a.csv) == 0:
        print(f"{a.csv}: missing or empty (the run wrote no rows)", file=sys.stderr)
        return 1
    with open(a.csv, newline="") as f:
        reader = csv.DictReader(f)
        failures = rowcheck.check_header(reader.fieldnames, cols)
        rows = list(reader) if not failures else []
    if not failures:
        sizes = [int(s) for s in a.sizes.split(",")]
        failures = rowcheck.check_rows(rows, info, "verbs", a.pairs, sizes)
        failures += [f"row {i + 2} (pair {r['pair_id']}, {r['msg_size_bytes']} B): "
                     f"qps {r.get('qps')!r}, expected '{a.qps}'"
                     for i, r in enumerate(rows) if r.get("qps") != str(a.qps)]
        want = (a.buffers or info.default_buffers) if info.buffers else ""
        failures += [f"row {i + 2}: buffers {r['buffers']!r}, the run asked for {want!r}"
                     for i, r in enumerate(rows) if r["buffers"] != want]
        if a.defaults:
            failures += default_window(rows, info, a.lat_samples)
    for msg in failures:
        print(f"check_rows: FAIL: {msg}", file=sys.stderr)
    if not failures:
        print(f"check_rows: {a.test} pairs={a.pairs} sizes={a.sizes} qps={a.qps}: "
              f"{len(rows)} rows OK",
              file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
