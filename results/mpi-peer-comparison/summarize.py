#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Ratios of a run.py directory: pairbench / peer, each the median over rounds, with a
bootstrap 95 % interval (scipy.stats.bootstrap, percentile method, the two tools' round
values resampled independently).  Writes OUT/values.csv (one value per job, round, point),
OUT/ratios.csv and OUT/table.md; prints the table.

usage: summarize.py OUT      (needs numpy and scipy: the shared venv has them)
"""
from __future__ import annotations

import csv
import io
import json
import re
import statistics
import sys
from pathlib import Path

import numpy as np
from scipy.stats import bootstrap

NUM = re.compile(r"^\s*\d")


def numeric_rows(text: str) -> list[list[float]]:
    rows = []
    for line in text.split("--- stderr ---")[0].splitlines():
        if NUM.match(line):
            try:
                rows.append([float(x) for x in line.split()])
            except ValueError:
                continue
    return rows


def pb(text: str, col: str) -> dict[int, float]:
    body = text.split("--- stderr ---")[0]
    return {int(r["msg_size_bytes"]): float(r[col])
            for r in csv.DictReader(io.StringIO(body))
            if r["pair_id"] == "all" and r["status"] == "ok" and r[col]}


def col(text: str, i: int) -> dict[int, float]:
    return {int(r[0]): r[i] for r in numeric_rows(text) if len(r) > i}


def imb(text: str, i: int) -> dict[int, float]:
    return {int(r[0]): r[i] for r in numeric_rows(text) if len(r) > i}


def dtype_exp(text: str, dt: str) -> dict[int, float]:
    """experiments/allreduce_dtype: "BYTES float T double T" per block; the block median."""
    vals = [(int(m[0]), float(m[1] if dt == "float" else m[2]))
            for m in re.findall(r"^(\d+) float ([\d.]+) double ([\d.]+)$", text, re.MULTILINE)]
    return {vals[0][0]: statistics.median(v for _, v in vals)} if vals else {}


def netpipe(text: str) -> dict[int, float]:
    m = re.findall(r"(\d+) bytes\s+\d+ times -->\s+[\d.]+ Mbps in\s+([\d.]+) usec", text)
    return {int(s): float(u) for s, u in m}


def ucx(text: str, i: int) -> dict[int, float]:
    """The client's "Final:" line (iterations, p50, average, ...); size -1 = the job's size
    (the client does not print it)."""
    fin = re.search(r"^Final:\s+(.*)$", text, re.MULTILINE)
    return {-1: float(fin.group(1).split()[i])} if fin else {}


# (series name, job prefix, parser): one value per size and round.
SERIES = {
    "pb_peer_lat_mean": ("pb_latency_peer", lambda t: pb(t, "lat_us_mean")),
    "pb_peer_lat_p50": ("pb_latency_peer", lambda t: pb(t, "lat_us_p50")),
    "pb_peer_block_lat_mean": ("pb_latency_peer_block", lambda t: pb(t, "lat_us_mean")),
    "pb_fresh_lat_mean": ("pb_latency_fresh", lambda t: pb(t, "lat_us_mean")),
    "pb_fresh_lat_p50": ("pb_latency_fresh", lambda t: pb(t, "lat_us_p50")),
    "osu_latency_mean": ("osu_latency", lambda t: col(t, 1)),
    "osu_latency_p50": ("osu_latency", lambda t: col(t, 2)),
    "osu_latency_noz_mean": ("osu_latency_noz", lambda t: col(t, 1)),
    "exp_allreduce_float": ("exp_allreduce_dtype", lambda t: dtype_exp(t, "float")),
    "exp_allreduce_double": ("exp_allreduce_dtype", lambda t: dtype_exp(t, "double")),
    "imb_pingpong_mean": ("imb_pingpong", lambda t: imb(t, 2)),
    "netpipe_mean": ("netpipe_", netpipe),
    "ucx_tag_lat_mean": ("ucx_tag_lat_", lambda t: ucx(t, 2)),
    "ucx_tag_lat_p50": ("ucx_tag_lat_", lambda t: ucx(t, 1)),
    "pb_peer_bw": ("pb_bw_peer", lambda t: pb(t, "bw_mbyte_s")),
    "pb_peer_ackwin_bw": ("pb_bw_peer_ackwin", lambda t: pb(t, "bw_mbyte_s")),
    "pb_fresh_bw": ("pb_bw_fresh", lambda t: pb(t, "bw_mbyte_s")),
    "osu_bw": ("osu_bw", lambda t: col(t, 1)),
    "imb_uniband": ("imb_uniband", lambda t: imb(t, 2)),
    "pb_allreduce_barrier_mean": ("pb_allreduce_barrier", lambda t: pb(t, "lat_us_mean")),
    "pb_allreduce_b2b_mean": ("pb_allreduce_b2b", lambda t: pb(t, "lat_us_mean")),
    "osu_allreduce_avg": ("osu_allreduce", lambda t: col(t, 1)),
    "osu_allreduce_max": ("osu_allreduce", lambda t: col(t, 3)),
    "imb_allreduce_sync_on_tmax": ("imb_allreduce_sync_on", lambda t: imb(t, 3)),
    "imb_allreduce_sync_off_tmax": ("imb_allreduce_sync_off", lambda t: imb(t, 3)),
}

# (point, size, numerator series, denominator series, bound): bound "le1" = the issue's
# acceptance (pairbench peer-style not slower: latency ratio <= 1, bandwidth ratio >= 1
# within the interval); "" = explained in the README.
LAT = (8, 4096, 65536)
COMPARISONS = [
    *[(f"latency {s} B mean", s, "pb_peer_lat_mean", peer, "le1")
      for s in LAT for peer in ("osu_latency_mean", "imb_pingpong_mean", "netpipe_mean")],
    # The block-timed mean (--timing block) against the block-timed peers: the same method.
    *[(f"latency {s} B mean, block timing", s, "pb_peer_block_lat_mean", peer, "le1")
      for s in LAT for peer in ("imb_pingpong_mean", "netpipe_mean", "osu_latency_mean")],
    *[(f"timing experiment: latency {s} B mean per iteration / block", s, "pb_peer_lat_mean",
       "pb_peer_block_lat_mean", "") for s in LAT],
    *[(f"latency {s} B p50", s, "pb_peer_lat_p50", "osu_latency_p50", "le1") for s in LAT],
    *[(f"latency {s} B mean", s, "pb_peer_lat_mean", "osu_latency_noz_mean", "le1")
      for s in LAT],
    # Peer against peer: OSU times every iteration (two MPI_Wtime per round trip, as
    # pairbench), IMB and NetPIPE time the whole block once.
    *[(f"timestamp comparison: osu_latency / {peer} {s} B mean (peer vs peer)", s,
       "osu_latency_mean", f"{peer}_mean", "") for s in (8,) for peer in ("imb_pingpong",
                                                                           "netpipe")],
    *[(f"timestamp experiment: osu_latency {s} B mean with -z / without", s,
       "osu_latency_mean", "osu_latency_noz_mean", "") for s in LAT],
    # NetPIPE 3.7 (cache mode, its default) sends and receives in ONE buffer: our fresh layout.
    *[(f"latency {s} B mean, fresh layout", s, "pb_fresh_lat_mean", "netpipe_mean", "")
      for s in LAT],
    # ucx_perftest is UCX's tag API, not MPI (another stack): for information, no bound.
    *[(f"latency {s} B {m}, UCX (not MPI)", s, f"pb_peer_lat_{m}", f"ucx_tag_lat_{m}", "")
      for s in LAT for m in ("mean", "p50")],
    *[(f"latency {s} B mean, fresh layout", s, "pb_fresh_lat_mean", "osu_latency_mean", "")
      for s in LAT],
    *[(f"layout experiment: latency {s} B mean fresh / peer", s, "pb_fresh_lat_mean",
       "pb_peer_lat_mean", "") for s in LAT],
    *[(f"bw {s} B window 64", s, "pb_peer_bw", peer, "ge1")
      for s in (65536, 1048576) for peer in ("osu_bw", "imb_uniband")],
    # --ack-each-window: the loop of osu_bw -W and IMB Uniband exactly (docs/mpi.md).
    *[(f"bw {s} B window 64, ack every window (the peers' loop)", s, "pb_peer_ackwin_bw", peer,
       "ge1") for s in (65536, 1048576) for peer in ("osu_bw", "imb_uniband")],
    *[(f"bw {s} B window 64, fresh layout", s, "pb_fresh_bw", "osu_bw", "")
      for s in (65536, 1048576)],
    *[(f"layout experiment: bw {s} B fresh / peer", s, "pb_fresh_bw", "pb_peer_bw", "")
      for s in (65536, 1048576)],
    *[(f"ack experiment: bw {s} B peer, ack every window / once", s, "pb_peer_ackwin_bw",
       "pb_peer_bw", "") for s in (65536, 1048576)],
    *[(f"allreduce {s} B barrier-separated", s, "pb_allreduce_barrier_mean", peer, "")
      for s in (8, 65536) for peer in ("imb_allreduce_sync_on_tmax", "osu_allreduce_max",
                                       "osu_allreduce_avg")],
    *[(f"allreduce {s} B back-to-back", s, "pb_allreduce_b2b_mean",
       "imb_allreduce_sync_off_tmax", "") for s in (8, 65536)],
    ("dtype experiment: allreduce 65536 B MPI_FLOAT / MPI_DOUBLE (IMB -sync on loop)", 65536,
     "exp_allreduce_float", "exp_allreduce_double", ""),
]


def collect(out: Path) -> dict[str, dict[int, list[float]]]:
    vals: dict[str, dict[int, list[float]]] = {k: {} for k in SERIES}
    for f in sorted((out / "raw").glob("r*-*.txt")):
        job = f.stem.split("-", 1)[1]
        text = f.read_text()
        for name, (prefix, parse) in SERIES.items():
            exact = not prefix.endswith("_")
            if (exact and job != prefix) or (not exact and not job.startswith(prefix)):
                continue
            for size, v in parse(text).items():
                if size == -1:
                    size = int(job.rsplit("_", 1)[1])
                vals[name].setdefault(size, []).append(v)
    return vals


def ratio_ci(a: list[float], b: list[float]) -> tuple[float, float, float]:
    r = statistics.median(a) / statistics.median(b)
    if len(a) < 2 or len(b) < 2:
        return r, float("nan"), float("nan")
    res = bootstrap((np.array(a), np.array(b)),
                    lambda x, y, axis=-1: np.median(x, axis=axis) / np.median(y, axis=axis),
                    vectorized=True, paired=False, n_resamples=9999, confidence_level=0.95,
                    method="percentile", random_state=np.random.default_rng(16))
    return r, float(res.confidence_interval.low), float(res.confidence_interval.high)


# Job-level bimodality (README "Run 3"): on some VMs a whole job runs in one of two modes
# (8 B ping-pong 0.10-0.13 or 0.35-0.44 us), for every tool alike. Pooling both modes makes
# any interval contain 1, so a latency comparison whose pooled job values (both tools,
# sorted) have a gap of more than MODE_GAP between two neighbours, with jobs of each tool on
# both sides, is made again within the lower mode (every job up to the gap), if each tool
# has MODE_MIN_JOBS jobs there. Within one mode jobs spread by a few per cent; the modes
# are 1.2-3.5x apart.
MODE_GAP, MODE_MIN_JOBS = 1.15, 2


def low_mode_limit(a: list[float], b: list[float]) -> float | None:
    """The largest value of the lower mode, or None when the jobs form one mode."""
    v = sorted(a + b)
    if len(v) < 2 or v[0] <= 0:
        return None
    i = max(range(len(v) - 1), key=lambda k: v[k + 1] / v[k])
    if v[i + 1] / v[i] <= MODE_GAP:
        return None
    # Modes of the machine show in both tools; a gap between the tools alone is a real
    # difference (a layout, a definition), not a mode.
    both = all(min(x) <= v[i] < max(x) for x in (a, b))
    return v[i] if both else None


def verdict(bound: str, lo: float, hi: float) -> str:
    if bound == "le1":
        return "meets (<= 1)" if lo <= 1.0 else "ABOVE 1"
    if bound == "ge1":
        return "meets (>= 1)" if hi >= 1.0 else "BELOW 1"
    return ""


def main() -> int:
    out = Path(sys.argv[1])
    vals = collect(out)
    with open(out / "values.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["series", "msg_size_bytes", "values_per_round"])
        for name, by in vals.items():
            for size, v in sorted(by.items()):
                w.writerow([name, size, " ".join(f"{x:.6g}" for x in v)])
    rows = []
    for point, size, num, den, bound in COMPARISONS:
        a, b = vals[num].get(size, []), vals[den].get(size, [])
        if not a or not b:
            continue
        limit = low_mode_limit(a, b) if "latency" in point else None
        split = limit is not None
        r, lo, hi = ratio_ci(a, b)
        rows.append({"point": point, "pairbench": num, "vs": den,
                     "pairbench_median": statistics.median(a), "vs_median": statistics.median(b),
                     "n": f"{len(a)}/{len(b)}", "ratio": r, "ci_low": lo, "ci_high": hi,
                     "bound": "two modes: see low mode" if split and bound
                     else verdict(bound, lo, hi)})
        if split:  # the same comparison within the lower mode of the jobs
            fa, fb = [x for x in a if x <= limit], [x for x in b if x <= limit]
            if min(len(fa), len(fb)) < MODE_MIN_JOBS:
                rows.append({"point": f"{point} (low mode)", "pairbench": num, "vs": den,
                             "pairbench_median": float("nan"), "vs_median": float("nan"),
                             "n": f"{len(fa)}/{len(fb)}", "ratio": float("nan"),
                             "ci_low": float("nan"), "ci_high": float("nan"),
                             "bound": f"n/a: < {MODE_MIN_JOBS} jobs of a tool in the low mode"
                             if bound else ""})
                continue
            r, lo, hi = ratio_ci(fa, fb)
            rows.append({"point": f"{point} (low mode)", "pairbench": num, "vs": den,
                         "pairbench_median": statistics.median(fa),
                         "vs_median": statistics.median(fb), "n": f"{len(fa)}/{len(fb)}",
                         "ratio": r, "ci_low": lo, "ci_high": hi,
                         "bound": verdict(bound, lo, hi)})
    with open(out / "ratios.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    log = json.loads((out / "log.json").read_text())
    loads = [float(e[k].split()[0]) for e in log for k in ("loadavg_before", "loadavg_after")]
    md = [f"Rounds: {max(e['round'] for e in log) + 1}; jobs: {len({e['job'] for e in log})}; "
          f"1-min load average over the jobs: min {min(loads):.2f}, median "
          f"{statistics.median(loads):.2f}, max {max(loads):.2f}.", "",
          "| point | pairbench | vs | pairbench median | peer median | n | ratio | 95 % CI | "
          "bound |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['point']} | {r['pairbench']} | {r['vs']} | {r['pairbench_median']:.4g}"
                  f" | {r['vs_median']:.4g} | {r['n']} | {r['ratio']:.3f} | "
                  f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] | {r['bound']} |")
    (out / "table.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
