#!/usr/bin/env python3
"""The driver's side of a day-long soak at full scale, synthesised (issue 36): FLOWS series
files of HOURS x 3600 / BUCKET buckets each, written in the executable's format
(contract/soakfile.py), a few planted stalls; then what the driver does with them after a
sweep: soak.parquet (analysis/soak.convert), the stability of the point (analysis/soak.stability)
and its plot (present/soak.plot_point: a heat map past 16 flows). Prints file sizes, times and
the process's peak memory after each step (ru_maxrss).

usage: PYTHONPATH=scripts .venv/bin/python results/soak-scale/scale.py DIR [HOURS] [FLOWS] [BUCKET]
"""

from __future__ import annotations

import resource
import struct
import sys
import time
from pathlib import Path

import numpy as np

from pairbench.analysis import soak
from pairbench.contract import soakfile
from pairbench.present import soak as soakout


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_flow(path: Path, pair: int, flows: int, n: int, bucket_s: float, rng) -> None:
    hdr = struct.pack("=8s8I5Qqd8s32s64s64s64s", soakfile.MAGIC, soakfile.VERSION,
                      soakfile.HEADER_BYTES, soakfile.BUCKET_BYTES, pair, flows, 1, 0, 0,
                      65536, int(bucket_s * 1e9), n, n, 10**12, 1_795_000_000 * 10**9, 0.5,
                      b"mpi", b"bw", b"", b"node1", b"node2")
    with open(path, "wb") as f:
        f.write(hdr.ljust(soakfile.HEADER_BYTES, b"\0"))
        chunk = 1 << 20
        for start in range(0, n, chunk):
            m = min(chunk, n - start)
            b = np.zeros(m, dtype=soak.BUCKET_DTYPE)
            b["messages"] = rng.normal(1800, 120, m).clip(0).astype(np.uint64)
            # a flapping link on flow 3: 2 s down every 10 minutes
            if pair == 3:
                idx = np.arange(start, start + m)
                b["messages"][(idx % int(600 / bucket_s)) < int(2 / bucket_s)] = 0
            b.tofile(f)


def main() -> int:
    out = Path(sys.argv[1])
    hours = float(sys.argv[2]) if len(sys.argv) > 2 else 24
    flows = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    bucket_s = float(sys.argv[4]) if len(sys.argv) > 4 else 0.1
    n = int(hours * 3600 / bucket_s)
    run = out / "run"
    (run / "soak").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(36)
    t = time.monotonic()
    for p in range(flows):
        write_flow(run / "soak" / f"r1-bw-p{flows}-65536B-pair{p}.pbsoak", p, flows, n, bucket_s,
                   rng)
    series = sum(f.stat().st_size for f in (run / "soak").iterdir())
    print(f"{flows} flows x {n} buckets ({hours:g} h of {bucket_s:g} s): series files "
          f"{series / 1e6:.1f} MB, written in {time.monotonic() - t:.0f} s; "
          f"peak {peak_mib():.0f} MiB")
    t = time.monotonic()
    soak.convert(run / "soak", run / soak.PARQUET)
    pq = (run / soak.PARQUET).stat().st_size
    print(f"convert: soak.parquet {pq / 1e6:.1f} MB ({pq / (flows * n):.2f} B per bucket) in "
          f"{time.monotonic() - t:.0f} s; peak {peak_mib():.0f} MiB")
    t = time.monotonic()
    pts = soak.stability(run)
    ps = pts[0]
    print(f"stability: {ps.stalls} stalls in {ps.stalled_flows} flows, {len(ps.shared)} shared, "
          f"in {time.monotonic() - t:.0f} s; peak {peak_mib():.0f} MiB")
    t = time.monotonic()
    png = soakout.plot_point(run, ps, out)
    print(f"plot: {png.name} {png.stat().st_size / 1e3:.0f} kB in {time.monotonic() - t:.0f} s; "
          f"peak {peak_mib():.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
