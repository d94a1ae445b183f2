#!/usr/bin/env python3
"""Copy a run directory's data.csv and metadata.json, multiplying the latency columns
(lat_us_*) of one point (every repetition, every pair and the aggregate) by a factor.

    python3 results/compare-calibration/plant.py RUN OUT --test latency --size 65536 \\
        [--pairs 1] [--factor 1.2]

Cells are edited as text with 6 significant digits; every other cell is copied unchanged.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import sys
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--test", required=True)
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--factor", type=float, default=1.2)
    a = ap.parse_args()
    with (a.run / "data.csv").open(newline="") as f:
        reader = csv.DictReader(f)
        fields = list(reader.fieldnames or [])
        rows = list(reader)
    hit = 0
    for r in rows:
        if (r["test"], int(r["msg_size_bytes"]), int(r["pairs"])) != (a.test, a.size, a.pairs):
            continue
        hit += 1
        for c in fields:
            if c.startswith("lat_us_") and r[c] != "":
                r[c] = f"{float(r[c]) * a.factor:.6g}"
    if not hit:
        print(f"plant: no rows for {a.test} {a.size} B {a.pairs} pair(s)", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    with (a.out / "data.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    if (a.run / "metadata.json").exists():
        shutil.copy(a.run / "metadata.json", a.out / "metadata.json")
    print(f"plant: {hit} rows of {a.test} {a.size} B x{a.factor} -> {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
