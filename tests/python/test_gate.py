"""The regression gate of compare (issue 22): three answers (regression, no regression,
inconclusive: exit 1, 0, 3), robust to one outlying repetition, --allow-inconclusive; and
the warning when two runs used different window methods (issue 21)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from conftest import cli, sweep
from pairbench.analysis.compare import Thresholds, compare_frames, window_method_notes
from pairbench.analysis.load import load_run, read_csv_text
from pairbench.analysis.verdict import (
    GATE_INCONCLUSIVE,
    GATE_NO_REGRESSION,
    GATE_REGRESSION,
    Feature,
    judge,
    noninferiority_pvalue,
    side_stats,
    trim_inflation,
)
from pairbench.contract.columns import COLUMNS, columns_of

LATENCIES = ("lat_us_min", "lat_us_p50", "lat_us_p90", "lat_us_p99", "lat_us_p999",
             "lat_us_max", "lat_us_mean", "worst_lat_us_p50", "worst_lat_us_p99")
RATES = ("bw_gbit_s", "bw_mbyte_s", "msg_rate_per_s", "min_pair_bw_gbit_s")
NOISY = {"FAKE_PB_NOISE": "0.05"}


def _run(tmp_path_factory: pytest.TempPathFactory, name: str, seed: str, reps: str) -> Path:
    proc, run = sweep(tmp_path_factory.mktemp(name), env={"FAKE_PB_SEED": seed, **NOISY},
                      reps=reps)
    assert proc.returncode == 0 and run is not None, proc.stderr
    return run


@pytest.fixture(scope="module")
def six_a(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory, "six_a", "61", "6")


@pytest.fixture(scope="module")
def six_b(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory, "six_b", "62", "6")


def _scaled(run: Path, out: Path, factor: float, rows: Callable | None = None,
            rates: bool = False) -> Path:
    """A copy of the run's CSV with the latencies of `rows` (every row: None) x factor and,
    with rates, the bandwidths and rates / factor (the repetition ran faster or slower)."""
    raw = read_csv_text(run / "data.csv")
    mask = pd.Series(True, index=raw.index) if rows is None else rows(raw)
    cols = LATENCIES + (RATES if rates else ())
    for col in cols:
        f = factor if col in LATENCIES else 1.0 / factor
        hit = mask & (raw[col] != "")
        raw.loc[hit, col] = [f"{float(v) * f:.6g}" for v in raw.loc[hit, col]]
    raw.to_csv(out, index=False)
    return out


def _gate_rows(stdout: str) -> list[str]:
    return [ln.strip() for ln in stdout.splitlines() if ln.startswith("  ")
            and ln.strip().split(":")[0] in ("regression", "inconclusive")]


def test_one_vs_one_with_x15_is_inconclusive_and_says_what_would_decide(
        tmp_path: Path, six_a: Path) -> None:
    """The default sweep (1 repetition) can never prove anything: every latency x1.5 is
    'inconclusive', exit 3, naming each point and the repetitions per side needed."""
    raw = read_csv_text(six_a / "data.csv")
    raw[raw["repetition"] == "1"].to_csv(tmp_path / "one.csv", index=False)
    one = tmp_path / "one.csv"
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "data.csv").write_text(one.read_text())
    worse = _scaled(tmp_path / "one", tmp_path / "worse.csv", 1.5)
    args = ("compare", str(one), str(worse), "--metrics", "lat_us_p50")
    proc = cli(*args)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("gate: INCONCLUSIVE"), proc.stdout
    named = _gate_rows(proc.stdout)
    assert len(named) == 6 and all(n.startswith("inconclusive: write_lat") for n in named)
    assert all("+50.0 %" in n and "≥ 3 repetitions per side" in n for n in named), named
    assert "8 B 1 pair(s) lat_us_p50" in proc.stdout and "1 KiB 2 pair(s)" in proc.stdout
    assert "gate inconclusive" in proc.stderr and "exit 3" in proc.stderr
    data = json.loads(cli(*args, "--format", "json").stdout)
    assert data["gate"] == "inconclusive" and data["exit_code"] == 3
    assert {p["gate"] for p in data["points"]} == {"inconclusive"}
    assert all(p["reps_needed"] == 3 for p in data["points"])
    assert cli(*args, "--allow-inconclusive").returncode == 0
    assert cli(*args, "--strict").returncode == 1
    assert cli(*args, "--allow-inconclusive", "--strict").returncode == 1


def test_six_vs_six_outlying_repetition_does_not_hide_a_x12_change(
        tmp_path: Path, six_a: Path, six_b: Path) -> None:
    """Base: one of six repetitions ran 2x faster at every point (a placement effect of a
    shared host). New: latency x1.2 at one point. Exit 1 naming exactly that point."""
    base = _scaled(six_a, tmp_path / "base.csv", 0.5,
                   lambda df: df["repetition"] == "4", rates=True)
    def at(df: pd.DataFrame) -> pd.Series:
        return (df["test"] == "write_lat") & (df["msg_size_bytes"] == "64") & (df["pairs"] == "1")

    new = _scaled(six_b, tmp_path / "new.csv", 1.2, at)
    proc = cli("compare", str(base), str(new), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    reg = [p for p in data["points"] if p["gate"] == "regression"]
    assert reg and {(p["test"], p["msg_size_bytes"], p["pairs"]) for p in reg} == {
        ("write_lat", 64, 1)}
    assert any(p["metric"] == "lat_us_p50" for p in reg)
    assert data["gate"] == "regression" and data["improvements"] == 0
    text = cli("compare", str(base), str(new)).stdout
    assert text.startswith("gate: REGRESSION")
    assert [ln for ln in _gate_rows(text) if ln.startswith("regression")] == [
        f"regression: write_lat 64 B 1 pair(s) {p['metric']}: {p['change_pct']:+.1f} % "
        f"(q = {p['q_value']:.2g})" for p in reg]


def test_six_vs_six_aa_makes_no_claim(six_a: Path, six_b: Path, tmp_path: Path) -> None:
    """A/A at 6 repetitions, with and without an outlying repetition on one side: no
    regression and no improvement claimed; the gate says no regression or inconclusive."""
    base = _scaled(six_a, tmp_path / "base.csv", 0.5,
                   lambda df: df["repetition"] == "2", rates=True)
    for b in (six_a, base):
        proc = cli("compare", str(b), str(six_b), "--format", "json")
        assert proc.returncode in (0, 3), proc.stderr
        data = json.loads(proc.stdout)
        assert data["regressions"] == 0 and data["improvements"] == 0, data["gate_lines"]
        assert data["gate"] in ("no regression", "inconclusive")
        assert data["gate_no_regression"] > 0


def test_gate_from_judge_three_answers() -> None:
    """Per comparison: a proven change beyond the threshold, a proven absence of one, and
    neither (a noisy point) in one family."""
    rng = np.random.default_rng(3)
    quiet = [(np.exp(rng.normal(0, 0.01, 5)), np.exp(rng.normal(0, 0.01, 5)))
             for _ in range(8)]
    feats = [Feature("lat_us_p50", b, n, True, 0.05) for b, n in quiet]
    feats[0] = Feature("lat_us_p50", feats[0].base, feats[0].new * 1.3, True, 0.05)
    noisy = Feature("lat_us_p99", np.exp(rng.normal(0, 0.3, 3)),
                    np.exp(rng.normal(0, 0.3, 3)), True, 0.05)
    rows = judge([*feats, noisy], 0.05).rows
    assert rows[0]["gate"] == GATE_REGRESSION
    assert {r["gate"] for r in rows[1:8]} == {GATE_NO_REGRESSION}
    assert rows[8]["gate"] == GATE_INCONCLUSIVE
    assert rows[8]["reps_needed"] is None or rows[8]["reps_needed"] >= 3


def test_trimmed_side_stats() -> None:
    """Below 5 repetitions: the mean and the sample variance; from 5: one value cut from
    each end, and the variance estimate ignores how far the cut value was."""
    y = np.log([1.0, 1.1, 0.9])
    loc, var, df = side_stats(y)
    assert loc == pytest.approx(y.mean()) and var == pytest.approx(y.var(ddof=1)) and df == 2
    y = np.log([1.0, 1.02, 0.98, 1.01, 0.99])
    far = np.log([1.0, 1.02, 0.98, 1.01, 0.4])
    assert side_stats(far)[0] == pytest.approx(side_stats(y)[0], abs=0.01)
    for v in (y, far, np.log(np.arange(1.0, 12.0))):
        assert side_stats(v)[0] == pytest.approx(stats.trim_mean(v, 0.2))
    # The winsorized variance stays at the level of the other four values (the plain one
    # would be ~300 times larger).
    assert side_stats(far)[1] < 3 * side_stats(y)[1] < 0.01 * far.var(ddof=1)
    assert side_stats(y)[2] == 2
    assert trim_inflation(4) == 1.0 and trim_inflation(5) == pytest.approx(1.145, abs=0.002)


def test_noninferiority_pvalue_is_one_sided() -> None:
    se, tau, df = np.array([0.01]), np.array([math.log1p(0.05)]), np.array([10.0])
    assert noninferiority_pvalue(np.array([0.0]), se, tau, df)[0] < 1e-3
    assert noninferiority_pvalue(np.array([tau[0]]), se, tau, df)[0] == pytest.approx(0.5)
    assert noninferiority_pvalue(np.array([-0.2]), se, tau, df)[0] < 1e-6   # better


def _frame(run: Path, method: str | None) -> pd.DataFrame:
    """The run's rows with every window_method set to `method` (None: the column absent)."""
    df = load_run(run)
    if method is None:
        return df.drop(columns=["window_method"], errors="ignore")
    df["window_method"] = method
    return df


def test_window_method_warning_with_and_without_the_column(six_a: Path, six_b: Path,
                                                           tmp_path: Path) -> None:
    """Issue 21 adds window_method (window | target | count ...); older runs lack it and are
    read as 'count'. Different methods: a warning per test, compared all the same."""
    old, new = _frame(six_a, None), _frame(six_b, "window")
    notes = window_method_notes(old, new)
    assert len(notes) == 2 and all("window methods differ" in n for n in notes)
    assert "base count (assumed: no window_method column), new window" in notes[0]
    assert window_method_notes(old, _frame(six_b, "count")) == []
    assert window_method_notes(_frame(six_a, "window"), new) == []
    empty = _frame(six_a, "")                      # an older version's rows read empty
    assert window_method_notes(empty, new) == notes
    assert len(compare_frames(old, new, Thresholds())) > 0
    # Through the CLI: a version-3 file (no column) against one whose rows say 'window'.
    raw = read_csv_text(six_a / "data.csv")
    v3 = raw.drop(columns=[c for c in COLUMNS if c not in columns_of(3)], errors="ignore")
    v3["schema_version"] = "3"
    v3.to_csv(tmp_path / "old.csv", index=False)
    raw = read_csv_text(six_b / "data.csv")
    raw["window_method"] = "window"
    raw.to_csv(tmp_path / "new.csv", index=False)
    proc = cli("compare", str(tmp_path / "old.csv"), str(tmp_path / "new.csv"))
    assert proc.returncode in (0, 3), proc.stderr
    assert proc.stderr.count("window methods differ") == 2, proc.stderr
    assert "assumed: no window_method column" in proc.stderr
