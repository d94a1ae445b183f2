"""Block-timed rows (pairbench-mpi --timing block, flag block_timed: the mean alone) in
compare, show, report and plot: compared on lat_us_mean, never against per-iteration rows,
and shown rather than dropped for lack of a p50."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from conftest import FAKE, cli
from pairbench.analysis.load import read_csv_text

ONLY_MEAN_BLANK = ["lat_us_min", "lat_us_p50", "lat_us_p90", "lat_us_p99", "lat_us_p999",
                   "lat_us_max", "lat_us_stdev", "worst_lat_pair_id", "worst_lat_us_p50",
                   "worst_lat_us_p99"]


def _fake(tmp_path: Path, name: str, pairs: str = "1") -> pd.DataFrame:
    frames = []
    for p in pairs.split(","):
        out = tmp_path / f"{name}-raw-{p}.csv"
        subprocess.run([sys.executable, str(FAKE), "--test", "latency", "--sizes", "8,4K",
                        "--pairs", p, "-o", str(out)], check=True, timeout=60,
                       capture_output=True, env={**os.environ, "FAKE_PB_LAYER": "mpi"})
        frames.append(read_csv_text(out))
    return pd.concat(frames)


def _run(tmp_path: Path, name: str, block: bool, scale: float = 1.0,
         pairs: str = "1") -> Path:
    """Three repetitions of a fake MPI latency run; block=True turns its rows into what
    --timing block writes: mean_us alone, worst-pair columns empty, flag block_timed.  The
    repetitions' means differ by ±1 % so the run-to-run noise is known and small."""
    frames = []
    for rep, wobble in enumerate((0.99, 1.0, 1.01), start=1):
        df = _fake(tmp_path, name, pairs)
        mean = pd.to_numeric(df["lat_us_mean"])
        df["lat_us_mean"] = (mean * scale * wobble).map(repr)
        if block:
            for col in ONLY_MEAN_BLANK:
                df[col] = ""
            df["flags"] = df["flags"].fillna("").map(
                lambda f: ";".join([*[x for x in f.split(";") if x], "block_timed"]))
        df.insert(len(df.columns), "repetition", str(rep))
        frames.append(df)
    path = tmp_path / f"{name}.csv"
    pd.concat(frames).to_csv(path, index=False)
    return path


def test_block_timed_runs_are_compared_on_the_mean(tmp_path: Path) -> None:
    base = _run(tmp_path, "base", block=True)
    slow = _run(tmp_path, "slow", block=True, scale=1.3)
    proc = cli("compare", str(base), str(slow), "--format", "json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    points = json.loads(proc.stdout)["points"]
    assert {p["metric"] for p in points} == {"lat_us_mean"}
    assert {p["verdict"] for p in points} == {"regression"}
    assert all(1.25 < p["ratio"] < 1.35 for p in points)
    same = cli("compare", str(base), str(base), "--format", "json")
    assert same.returncode == 0, same.stderr
    assert {p["verdict"] for p in json.loads(same.stdout)["points"]} == {"no change"}


def test_block_and_per_iteration_timing_are_not_compared(tmp_path: Path) -> None:
    block = _run(tmp_path, "block", block=True)
    iteration = _run(tmp_path, "iter", block=False, scale=1.3)
    proc = cli("compare", str(block), str(iteration), "--format", "json")
    # 30 % slower, but measured differently: nothing tested, so no pass either (exit 3)...
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.count("compare: warning: latency") == 2  # ...and said, per point
    assert "timing methods differ (base block, new iteration)" in proc.stderr
    points = json.loads(proc.stdout)["points"]
    assert points and {p["verdict"] for p in points} == {"not comparable"}
    assert {p["metric"] for p in points} == {"lat_us_mean"}
    assert cli("compare", str(block), str(iteration), "--strict").returncode == 1


def test_show_report_and_plot_use_the_mean_of_block_timed_rows(tmp_path: Path) -> None:
    run = _run(tmp_path, "run", block=True, pairs="1,2")
    shown = cli("show", str(run), "--width", "160")
    assert shown.returncode == 0, shown.stderr
    assert "1-pair latency mean (block-timed)" in shown.stdout
    assert "latency scaling (block-timed mean) at 8 B" in shown.stdout
    html = tmp_path / "report.html"
    rep = cli("report", str(run), "--out", str(html))
    assert rep.returncode == 0, rep.stderr
    text = html.read_text()
    assert "latency (mean) (µs)" in text and "nothing to plot" not in text
    plots = tmp_path / "plots"
    assert cli("plot", str(run), "--out", str(plots)).returncode == 0
    assert {"mpi-latency-lat-vs-size.png", "mpi-latency-vs-pairs.png",
            "mpi-latency-per-pair.png"} <= {p.name for p in plots.iterdir()}


def test_accept_says_why_a_p50_criterion_has_no_value_on_block_timed_rows(
        tmp_path: Path) -> None:
    run = _run(tmp_path, "run", block=True)
    spec = tmp_path / "spec.toml"
    spec.write_text('[spec]\nname = "block"\nlayer = "mpi"\n'
                    '[[max_latency]]\ntest = "latency"\nsize_bytes = [8]\n'
                    'metric = "lat_us_p50"\nmax_us = 1000.0\n')
    proc = cli("accept", str(run), "--spec", str(spec))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "lat_us_p50 not measured (empty); the rows are block_timed" in proc.stdout
    spec.write_text(spec.read_text().replace('"lat_us_p50"', '"lat_us_mean"'))
    proc = cli("accept", str(run), "--spec", str(spec))
    assert proc.returncode == 0, proc.stdout + proc.stderr
