"""The soak in the driver (issue 36): the stall rules (the mirror of core/pb_soak.c), the run's
soak.parquet, stability in show/report, compare's soak metrics, a Ctrl-C that keeps a
partial soak (accept's soak criteria: test_soak_accept.py). Real runs use pairbench-mpi
through mpirun; nothing here asserts a timing."""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import REPO, SCRIPTS, cli
from pairbench.analysis import soak
from pairbench.analysis.load import load_run
from pairbench.contract import soakfile
from pairbench.runner.plan import SOAK_DIR

MPI_BIN = Path(os.environ.get("PAIRBENCH_BIN_DIR", REPO / "build" / "bin")) / "pairbench-mpi"


# ---- the rules, on synthetic series ---------------------------------------------------------

def test_stall_runs_and_percentiles_follow_the_c_rules() -> None:
    msgs = np.array([100, 100, 100, 60, 100, 100, 40, 50, 100, 100], dtype=np.uint64)
    st = soak.flow_stats(msgs, 0.5)
    assert st.p50_msgs == 100 and st.min_msgs == 40 and st.p1_msgs == 40
    assert st.stalls == (soak.Stall(6, 1),)  # 40 < 50; 50 is not below half of 100
    assert st.min_share == pytest.approx(0.4)
    gap = np.array([1000] * 7 + [0] * 5 + [1000] * 8, dtype=np.uint64)
    st = soak.flow_stats(gap, 0.5)
    assert st.stalls == (soak.Stall(7, 5),) and st.longest == 5
    # a median of 0: nothing is below a fraction of it (the rows flag soak_zero_median)
    st = soak.flow_stats(np.array([0, 0, 0, 5], dtype=np.uint64), 0.5)
    assert st.p50_msgs == 0 and st.stalls == () and math.isnan(st.min_share)
    # one bucket: no percentile
    assert math.isnan(soak.flow_stats(np.array([3], dtype=np.uint64), 0.5).p50_msgs)


def test_nearest_rank_matches_a_sort() -> None:
    rng = np.random.default_rng(7)
    v = rng.integers(0, 1 << 40, 12345, dtype=np.uint64)
    s = np.sort(v)
    st = soak.flow_stats(v, 0.5)
    n = len(v)
    assert st.p50_msgs == s[(50000 * n + 99999) // 100000 - 1]
    assert st.p1_msgs == s[(1000 * n + 99999) // 100000 - 1]


def test_coincident_stalls_are_one_shared_event() -> None:
    shared, alone = soak.coincidences([(0, soak.Stall(10, 5)), (1, soak.Stall(12, 2)),
                                       (2, soak.Stall(14, 3)), (1, soak.Stall(40, 1)),
                                       (0, soak.Stall(60, 2)), (0, soak.Stall(61, 1))])
    assert shared == (soak.SharedStall(10, 17, (0, 1, 2)),)
    assert alone == 3  # pair 1 at 40, pair 0's two overlapping runs at 60 (one flow)


def test_downsample_keeps_a_one_bucket_stall_visible() -> None:
    v = np.full(100000, 50.0)
    v[77777] = 0
    cols, per = soak.downsample_min(v, 2000)
    assert per == 50 and len(cols) == 2000 and cols.min() == 0


def _series(path: Path, pair: int, msgs: list[int], complete: bool) -> None:
    """A series file as the executable writes it (a killed soak: complete 0, header
    buckets 0, the buckets on file count)."""
    import struct

    hdr = struct.pack("=8s8I5Qqd8s32s64s64s64s", soakfile.MAGIC, soakfile.VERSION,
                      soakfile.HEADER_BYTES, soakfile.BUCKET_BYTES, pair, 2, int(complete), 0, 0,
                      4096, 100_000_000, 100, len(msgs) if complete else 0, 5 * 10**9,
                      1_795_000_000 * 10**9, 0.5, b"mpi", b"bw", b"", b"n1", b"n2")
    b = np.zeros(len(msgs), dtype=soak.BUCKET_DTYPE)
    b["messages"] = msgs
    path.write_bytes(hdr.ljust(soakfile.HEADER_BYTES, b"\0") + b.tobytes())


def test_a_killed_soak_is_read_from_its_series_files(tmp_path: Path) -> None:
    """No soak.parquet (the sweep was killed): the series files are read as they are,
    marked partial; then stored like any other."""
    (tmp_path / SOAK_DIR).mkdir()
    _series(tmp_path / SOAK_DIR / "r1-bw-p2-4096B-pair0.pbsoak", 0, [9, 9, 0, 0, 9, 9], False)
    _series(tmp_path / SOAK_DIR / "r1-bw-p2-4096B-pair1.pbsoak", 1, [9, 9, 0, 9, 9, 9], False)
    (ps,) = soak.stability(tmp_path)
    assert ps.partial and ps.point == "r1-bw-p2" and ps.stalls == 2
    assert ps.shared == (soak.SharedStall(2, 4, (0, 1)),) and ps.alone == 0
    flows = soak.convert(tmp_path / SOAK_DIR, tmp_path / soak.PARQUET)
    assert len(flows) == 2 and not soakfile.series_files(tmp_path / SOAK_DIR)
    (again,) = soak.stability(tmp_path)
    assert again.stalls == 2 and again.partial
    assert [r.stats.sum_msgs for r in again.flows] == [36, 45]


def test_not_a_series_file_is_a_clear_error(tmp_path: Path) -> None:
    from pairbench.errors import UsageError

    bad = tmp_path / "x-8B-pair0.pbsoak"
    bad.write_bytes(b"nonsense" * 100)
    with pytest.raises(UsageError, match="not a pairbench soak series"):
        soakfile.read_header(bad)


# ---- real runs ------------------------------------------------------------------------------

def _need_mpi() -> None:
    if not MPI_BIN.is_file():
        pytest.skip(f"{MPI_BIN} is not built yet")
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not installed (apt-get install openmpi-bin)")


SWEEP = ("sweep", "--layer", "mpi", "--test", "bw,msgrate", "--sizes", "16K", "--pairs", "2",
         "--soak", "2", "--bucket", "0.2", "--launcher", "mpirun", "--allow-oversubscribe",
         "--pin", "none", "--timeout", "120", "--no-progress")


@pytest.fixture(scope="module")
def soak_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _need_mpi()
    res = tmp_path_factory.mktemp("soak")
    proc = cli(*SWEEP, "--binary", str(MPI_BIN), "--results-dir", str(res), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = Path(proc.stdout.strip().splitlines()[-1])
    assert "soak series of 4 flow(s)" in proc.stderr, proc.stderr[-2000:]
    return run


def test_sweep_stores_the_series_in_parquet(soak_run: Path) -> None:
    import pyarrow.parquet as pq

    assert (soak_run / soak.PARQUET).is_file()
    assert not soakfile.series_files(soak_run / SOAK_DIR)  # converted, then removed
    t = pq.read_table(soak_run / soak.PARQUET).to_pandas()
    assert set(t["point"].astype(str)) == {"r1-bw-p2", "r1-msgrate-p2"}
    assert set(t["pair_id"]) == {0, 1}
    per_flow = t.groupby(["point", "pair_id"], observed=True)["bucket"].agg(["min", "max", "count"])
    assert (per_flow["min"] == 0).all() and (per_flow["count"] == 10).all()


def test_rows_equal_the_analysis_of_the_parquet(soak_run: Path) -> None:
    """One definition: the executable's columns and the driver's reading of the stored
    series agree on every pair row."""
    df = load_run(soak_run)
    pts = {(ps.point.split("-")[1], r.flow.pair_id): (ps, r) for ps in soak.stability(soak_run)
           for r in ps.flows}
    pairs = df[df["pair_id"] != "all"]
    assert len(pairs) == 4
    for _, row in pairs.iterrows():
        ps, r = pts[(row["test"], int(row["pair_id"]))]
        assert int(row["soak_buckets"]) == r.stats.buckets == 10
        assert int(row["stalls"]) == len(r.stats.stalls)
        assert float(row["longest_stall_s"]) == pytest.approx(r.stats.longest * ps.bucket_s)
        assert float(row["bucket_gbit_s_p50"]) == pytest.approx(r.stats.p50_msgs * r.rate_gbit)
        assert int(row["iterations"]) == r.stats.sum_msgs
    agg = df[df["pair_id"] == "all"]
    assert (agg["soak_bucket_s"].astype(float) == 0.2).all()
    assert (agg["stalled_pairs"].astype(int) <= 2).all()


def test_show_and_report_have_a_stability_section(soak_run: Path) -> None:
    shown = cli("show", str(soak_run))
    assert shown.returncode == 0, shown.stderr
    assert "STABILITY (soak)" in shown.stdout and "r1-bw-p2 bw 16 KiB: 2 flow(s)" in shown.stdout
    rep = cli("report", str(soak_run))
    assert rep.returncode == 0, rep.stderr
    html = (soak_run / "report.html").read_text()
    assert "Stability (soak)" in html and 'alt="soak-r1-bw-p2-16384B"' in html


def test_plot_draws_a_heat_map_for_many_flows(soak_run: Path, tmp_path: Path) -> None:
    from pairbench.present import soak as soakout

    ps = soak.stability(soak_run)[0]
    many = soak.PointStability(**{**ps.__dict__, "flows": ps.flows * 9})  # 18 flows
    png = soakout.plot_point(soak_run, many, tmp_path)
    assert png.stat().st_size > 1000


def test_compare_reads_soak_metrics(soak_run: Path) -> None:
    p = cli("compare", str(soak_run), str(soak_run), "--metrics", "min_bucket_share,bw_gbit_s")
    assert p.returncode in (0, 3), p.stdout + p.stderr
    assert "min_bucket_share" in p.stdout or "lowest bucket" in p.stdout, p.stdout


def test_ctrl_c_keeps_a_partial_soak(tmp_path: Path) -> None:
    """SIGINT to the sweep during a 60 s soak: the point is asked to stop (SIGUSR1 through
    mpirun), writes its rows flagged soak_partial, the run is marked interrupted (exit 130)
    and its series still reach soak.parquet."""
    _need_mpi()
    env = {**os.environ, "PYTHONPATH": str(SCRIPTS)}
    argv = [sys.executable, "-m", "pairbench", "sweep", "--layer", "mpi", "--test", "bw",
            "--sizes", "16K", "--pairs", "2", "--soak", "60", "--bucket", "0.2", "--launcher",
            "mpirun", "--allow-oversubscribe", "--pin", "none", "--timeout", "120",
            "--no-progress", "--binary", str(MPI_BIN), "--results-dir", str(tmp_path)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:  # the soak runs once its series has buckets
            files = list(tmp_path.glob(f"*/{SOAK_DIR}/*.pbsoak"))
            if files and all(f.stat().st_size > soakfile.HEADER_BYTES for f in files):
                break
            time.sleep(0.1)
        else:
            pytest.fail("the soak did not start")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-3000:]
    run = Path(out.strip().splitlines()[-1])
    df = pd.read_csv(run / "data.csv", keep_default_na=False)
    assert (df["status"] == "ok").all(), df["error"].tolist()
    assert df["flags"].str.contains("soak_partial").all()
    assert (df["soak_buckets"].astype(int) < 300).all()
    assert "soak stopped by SIGINT" in err and "flag soak_partial" in err
    pts = soak.stability(run)
    assert pts and all(ps.partial for ps in pts)


def test_the_stability_line_claims_no_cause_for_one_flow(tmp_path: Path) -> None:
    """A soak of one flow has nothing its stalls could coincide with: the line says so
    instead of "no two flows stalled at the same time; N stall(s) alone (a flow's own path
    or process)", a cause its evidence cannot support. Two flows keep the words."""
    from pairbench.present.soak import point_line

    (tmp_path / SOAK_DIR).mkdir()
    _series(tmp_path / SOAK_DIR / "r1-bw-p1-4096B-pair0.pbsoak", 0, [9, 9, 0, 0, 9, 9], True)
    (ps,) = soak.stability(tmp_path)
    line = point_line(ps)
    assert "1 flow(s)" in line and "cannot be told" in line, line
    assert "alone" not in line and "no two flows" not in line, line
    two = tmp_path / "two"
    (two / SOAK_DIR).mkdir(parents=True)
    _series(two / SOAK_DIR / "r1-bw-p2-4096B-pair0.pbsoak", 0, [9, 9, 0, 0, 9, 9], True)
    _series(two / SOAK_DIR / "r1-bw-p2-4096B-pair1.pbsoak", 1, [9, 9, 9, 9, 9, 9], True)
    (ps2,) = soak.stability(two)
    line2 = point_line(ps2)
    assert "no two flows stalled at the same time; 1 stall(s) alone" in line2, line2
    assert "cannot be told" not in line2, line2
