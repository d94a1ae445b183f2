"""The statistics of compare (pairbench.verdict) and the noise command, checked against
scipy's own tests and against known answers; compare's exit codes and JSON fields."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from conftest import cli
from pairbench.analysis.compare import Thresholds, compare_frames
from pairbench.analysis.frames import METRICS
from pairbench.analysis.load import load_run, read_csv_text
from pairbench.analysis.verdict import (
    MIN_REPS,
    NO_PRIOR,
    VERDICTS,
    Feature,
    Prior,
    bh_adjust,
    detectable_change,
    fit_prior,
    future_df,
    judge,
    moderate,
    power,
    reps_needed,
    treat_pvalue,
)
from pairbench.contract.testtable import label


def test_fit_prior_recovers_a_scaled_inverse_chi_square() -> None:
    rng = np.random.default_rng(5)
    s0, d0, n_feat, df = 0.004, 6.0, 3000, 4.0
    true_var = s0 * d0 / stats.chi2.rvs(d0, size=n_feat, random_state=rng)
    obs = true_var * stats.chi2.rvs(df, size=n_feat, random_state=rng) / df
    prior = fit_prior(obs, np.full(n_feat, df))
    assert prior.features == n_feat
    assert prior.var == pytest.approx(s0, rel=0.15)
    assert prior.df == pytest.approx(d0, rel=0.35)


def test_fit_prior_limits() -> None:
    # Too few features: no prior. Identical variances: d0 capped at the data's own df.
    assert fit_prior(np.array([0.01, 0.02]), np.array([2.0, 2.0])) == NO_PRIOR
    p = fit_prior(np.full(5, 0.01), np.full(5, 3.0))
    assert p.df == 15.0 and 0.01 <= p.var <= 0.015   # the log-scale bias correction
    # All-zero variances carry no information about the noise.
    assert fit_prior(np.zeros(5), np.full(5, 3.0)) == NO_PRIOR


def test_moderation_is_a_weighted_mean() -> None:
    post, df = moderate(np.array([0.04, 0.0]), np.array([2.0, 0.0]), Prior(0.01, 6.0, 10))
    assert post[0] == pytest.approx((6 * 0.01 + 2 * 0.04) / 8) and df[0] == 8
    assert post[1] == pytest.approx(0.01) and df[1] == 6          # no own df: the prior
    raw, rdf = moderate(np.array([0.04, 0.0]), np.array([2.0, 0.0]), NO_PRIOR)
    assert raw[0] == 0.04 and math.isnan(raw[1]) and rdf[0] == 2


def test_without_threshold_and_prior_it_is_the_students_t_test() -> None:
    rng = np.random.default_rng(1)
    yb, yn = rng.normal(0, 0.1, 4), rng.normal(0.15, 0.1, 5)
    var = (np.sum((yb - yb.mean()) ** 2) + np.sum((yn - yn.mean()) ** 2)) / 7
    se = math.sqrt(var * (1 / 4 + 1 / 5))
    p = treat_pvalue(np.array([yn.mean() - yb.mean()]), np.array([se]), np.array([0.0]),
                     np.array([7.0]))
    assert p[0] == pytest.approx(stats.ttest_ind(yn, yb).pvalue, rel=1e-9)


def test_treat_is_harder_than_testing_against_zero() -> None:
    d, se, df = np.array([0.10]), np.array([0.02]), np.array([10.0])
    p0 = treat_pvalue(d, se, np.array([0.0]), df)[0]
    p5 = treat_pvalue(d, se, np.array([math.log1p(0.05)]), df)[0]
    assert p0 < p5 < 0.05
    # An estimate inside the threshold is never significant.
    assert treat_pvalue(np.array([0.04]), se, np.array([0.05]), df)[0] > 0.5


def test_bh_adjust_is_scipys() -> None:
    p = np.array([0.001, 0.01, 0.02, 0.04, 0.5])
    q = bh_adjust(p)
    assert np.allclose(q, stats.false_discovery_control(p))
    assert list(q <= 0.05) == [True, True, True, True, False]
    assert bh_adjust(np.array([])).size == 0


def test_power_and_detectable_change_agree() -> None:
    var, df, n, tau, alpha = 0.05 ** 2, 12.0, 5, math.log1p(0.05), 0.05 / 24
    delta = detectable_change(var, df, n, tau, alpha, 0.8)
    assert power(delta, var, df, n, tau, alpha) == pytest.approx(0.8, abs=1e-4)
    assert delta > tau
    need = reps_needed(delta, var, 4.0, tau, alpha, 0.8)
    assert need is not None and need >= MIN_REPS
    assert power(delta, var, future_df(4.0, need), need, tau, alpha) >= 0.8
    # The fewest: no smaller count reaches the power (trimming makes power non-monotone
    # where it starts, so every smaller count is checked).
    assert all(power(delta, var, future_df(4.0, k), k, tau, alpha) < 0.8
               for k in range(MIN_REPS, need))
    assert reps_needed(0.01, var, 4.0, tau, alpha) is None       # within the threshold


def _feats(base: list[list[float]], new: list[list[float]], rel: float = 0.05) -> list[Feature]:
    return [Feature("lat_us_p50", np.array(b, float), np.array(n, float), True, rel)
            for b, n in zip(base, new, strict=True)]


def test_judge_verdicts_and_the_minimum_repetitions() -> None:
    rng = np.random.default_rng(3)
    base = np.exp(rng.normal(0, 0.01, (20, 5)))
    new = np.exp(rng.normal(0, 0.01, (20, 5)))
    new[0] *= 1.5                      # proven regression
    new[1] /= 1.5                      # proven improvement
    rows = judge(_feats(base.tolist(), new.tolist()), 0.05).rows
    assert rows[0]["verdict"] == "regression" and rows[1]["verdict"] == "improvement"
    assert {r["verdict"] for r in rows[2:]} == {"no change"}
    assert rows[0]["q_value"] < 0.05 and rows[0]["ci_low"] > 1.05
    # The same change with 2 repetitions per side is only suspected, and says how many.
    rows = judge(_feats(base[:, :2].tolist(), new[:, :2].tolist()), 0.05).rows
    assert rows[0]["verdict"] == "suspected regression"
    assert "insufficient repetitions (2/2)" in rows[0]["evidence"]
    assert rows[0]["reps_needed"] == MIN_REPS


def test_judge_values_that_have_no_logarithm() -> None:
    rows = judge(_feats([[0.0, 0.0, 0.0], [1.0, 1.1, 0.9], [1.0, 1.0, 1.0], [-1, 2, 3]],
                        [[0.0, 0.0, 0.0], [0.0, 1.0, 1.0], [math.inf, 1, 1], [0, 2, 3]]),
                 0.05).rows
    assert rows[0]["verdict"] == "no change" and "identical" in rows[0]["evidence"]
    for r, side in zip(rows[1:], ["NEW", "NEW", "BASE and NEW"], strict=True):
        assert r["verdict"] == "not comparable"
        assert f"in {side}:" in r["evidence"] and "log-scale" in r["evidence"]
    assert all(r["verdict"] in VERDICTS for r in rows)


def test_compare_reads_every_metric(base_run: Path) -> None:
    """Nothing is special about the default metrics: every metric the run has is judged."""
    df = load_run(base_run)
    present = [m for m in METRICS if df[m].notna().any()]
    res = compare_frames(df, df, Thresholds(), present)
    assert set(res["metric"]) == set(present)
    assert set(res["verdict"]) == {"no change"}


def _edit(run: Path, out: Path, col: str, factor: float | None = None,
          value: str | None = None) -> Path:
    raw = read_csv_text(run / "data.csv")
    sel = (raw["test"] == "write_lat") & (raw["msg_size_bytes"] == "8") & (raw[col] != "")
    raw.loc[sel, col] = value if value is not None else [
        f"{float(v) * factor:.6g}" for v in raw.loc[sel, col]]
    out.mkdir()
    raw.to_csv(out / "data.csv", index=False)
    return out


def test_compare_exit_codes_strict_and_json(base_run: Path, same_run: Path,
                                            tmp_path: Path) -> None:
    slow = _edit(same_run, tmp_path / "slow", "lat_us_p50", factor=1.5)
    proc = cli("compare", str(base_run), str(slow), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    hit = [p for p in data["points"] if p["verdict"] == "regression"]
    assert [(p["test"], p["msg_size_bytes"], p["metric"]) for p in hit] == \
        [("write_lat", 8, "lat_us_p50")] * len(hit) and len(hit) == 2   # 1 and 2 pairs
    assert data["regressions"] == 2 and data["exit_code"] == 1
    assert data["method"]["multiple_testing"] == "Benjamini-Hochberg"
    assert set(data["method"]["priors"]) >= {"lat_us_p50"}
    for key in ("q_value", "p_value", "evidence", "reps_needed", "noise_cv", "threshold"):
        assert key in hit[0]
    # The text output names the proven point and its headline.
    proc = cli("compare", str(base_run), str(slow))
    assert proc.returncode == 1 and "proven beyond" in proc.stdout
    headline = f"2-pair {label('write_lat', layer='verbs')} at 8 B: "
    assert headline in proc.stdout and "% higher (" in proc.stdout
    # Zero latency cannot be judged on a log scale: exit 0, but --strict fails on it.
    zero = _edit(same_run, tmp_path / "zero", "lat_us_p50", value="0")
    proc = cli("compare", str(base_run), str(zero), "--metrics", "lat_us_p50")
    assert proc.returncode == 0 and "not comparable" in proc.stdout
    assert cli("compare", str(base_run), str(zero), "--metrics", "lat_us_p50",
               "--strict").returncode == 1


def test_noise_command(base_run: Path, tmp_path: Path) -> None:
    proc = cli("noise", str(base_run), "--format", "json", "--detect", "10%")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["repetitions_per_side"] == [2, 3, 5, 10] and data["power"] == 0.8
    p = next(x for x in data["points"] if x["metric"] == "lat_us_p50")
    assert p["n"] == 3 and 0 < p["cv"] < 0.02             # the fake's 1 % uniform noise
    assert p["detectable_2"] is None                       # nothing is proven with 2
    assert p["detectable_3"] > p["detectable_5"] > p["detectable_10"] > 0.05
    assert p["reps_recommended"] >= MIN_REPS
    assert any(r.startswith("recommended: lat_us_p50: ") for r in data["recommended"])
    proc = cli("noise", str(base_run))
    assert proc.returncode == 0 and "detectable @5" in proc.stdout
    assert "ONE point of a sweep" in proc.stdout
    bad = cli("noise", str(base_run), "--power", "1.5")
    assert bad.returncode == 2 and "--power" in bad.stderr


def test_report_shows_noise_only_with_repetitions(base_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert cli("report", str(base_run), "--out", str(out)).returncode == 0
    assert "Run-to-run noise" in out.read_text()
    raw = read_csv_text(base_run / "data.csv")
    (tmp_path / "one").mkdir()
    raw[raw["repetition"] == "1"].to_csv(tmp_path / "one" / "data.csv", index=False)
    assert cli("report", str(tmp_path / "one"), "--out", str(out)).returncode == 0
    assert "Run-to-run noise" not in out.read_text()


def _strict_json(text: str) -> dict:
    def reject(const: str) -> None:
        raise ValueError(f"not JSON: {const}")

    return json.loads(text, parse_constant=reject)


def test_json_is_strict_even_without_noise_estimates(tmp_path: Path) -> None:
    """One repetition per side (published data): no prior, no q; JSON null, never NaN."""
    pub = Path(__file__).resolve().parents[2] / "results" / "published"
    proc = cli("compare", str(pub / "paper002-infinihost3"), str(pub / "paper002-connectx"),
               "--format", "json")
    assert proc.returncode == 3, proc.stderr      # 1 repetition per side: inconclusive
    data = _strict_json(proc.stdout)
    assert data["gate"] == "inconclusive" and data["exit_code"] == 3
    assert data["method"]["priors"]["lat_us_p50"]["var"] is None
    assert {p["verdict"] for p in data["points"]} == {"suspected improvement"}
    assert all(p["q_value"] is None for p in data["points"])
    proc = cli("noise", str(pub / "paper002-connectx"), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert all(p["cv"] is None for p in _strict_json(proc.stdout)["points"])
