"""The calibration of compare (results/compare-calibration), kept as tests: the same
functions as calibrate.py with fewer trials and fixed seeds, asserted with generous margins.

(a) A/A splits of a real 10-repetition MPI run: no comparison in 20 carries a claim where
    the nominal level allows 1 in 20; the old bootstrap method fires on most.
(b) A 10 % latency regression planted in one point of a real 100-repetition run is found at
    the repetition count `pairbench noise` recommends.
(c) Simulated log-normal noise: the A/A rate stays at or below 5 %; changes well beyond the
    noise are found.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from conftest import REPO

CAL_DIR = REPO / "results" / "compare-calibration"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("calibrate", CAL_DIR / "calibrate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["calibrate"] = mod
    spec.loader.exec_module(mod)
    return mod


cal = _load()


@pytest.fixture(scope="module")
def aa_run() -> object:
    return cal.run_arrays(cal._run_dir(cal.AA_RUN))


@pytest.mark.parametrize("per_side", [2, 3, 5])
def test_aa_real_run_stays_below_the_nominal_level(aa_run: object, per_side: int) -> None:
    r = cal.aa_rates(aa_run, per_side, 60, seed=11 + per_side, old=per_side < 5)
    assert r["features"] == 24
    assert r["any_claim"] <= 0.05, r
    if per_side < 5:
        # The method before issue 10 called a change in most of these A/A comparisons.
        assert r["old_any_claim"] >= 0.3, r


def test_planted_10_percent_found_at_recommended_repetitions() -> None:
    run = cal._run_dir(cal.POWER_RUN)
    label = "latency 65536 lat_us_p50"
    n = cal.recommended_reps(run, label, detect=0.10)
    assert n is not None and 2 * n <= 100, n
    ra = cal.run_arrays(run, ["lat_us_p50", "lat_us_p99"])
    r = cal.power_rate(ra, label, 1.10, n, 60, seed=21)
    assert r["detected"] >= 0.6, r               # nominal power 80 %
    assert r["other_claims"] <= 0.1, r


@pytest.mark.parametrize("cv,per_side,change,min_detect", [
    (0.01, 3, 1.1, 0.8),
    (0.05, 5, 1.2, 0.5),
    (0.05, 10, 1.2, 0.8),
    (0.20, 10, 1.5, 0.5),
])
def test_simulation_detects_changes_beyond_the_noise(cv: float, per_side: int, change: float,
                                                     min_detect: float) -> None:
    r = cal.simulate(cv, per_side, 25, seed=31, change=change)
    assert r["detected"] >= min_detect, r


def test_simulation_aa_rate_over_the_grid() -> None:
    claims = trials = 0
    for cv in (0.01, 0.05, 0.20):
        for per_side in (3, 5, 10):
            r = cal.simulate(cv, per_side, 12, seed=41, points=100)
            claims += round(r["aa_any_claim"] * r["trials"])
            trials += r["trials"]
    assert claims / trials <= 0.06, (claims, trials)


def test_old_method_fails_simulated_aa() -> None:
    r = cal.simulate(0.10, 2, 5, seed=51, points=100, old=True)
    assert r["old_aa_any_claim"] >= 0.8, r
    assert r["aa_any_claim"] == 0.0, r


def test_noise_power_calculation_matches_simulation() -> None:
    """The change `noise` calls detectable with 80 % power is found about 80 % of the time
    in the simulation (here 5 % CV, 5 repetitions per side, 100 points)."""
    import math

    from pairbench.analysis.verdict import detectable_change

    cv, n, points = 0.05, 5, 100
    var = math.log1p(cv * cv)
    prior_df = 2 * (n - 1) * points          # homogeneous noise: the prior is at its cap
    delta = detectable_change(var, prior_df + 2 * (n - 1), n, math.log1p(0.05),
                              cal.ALPHA / points, 0.8)
    r = cal.simulate(cv, n, 60, seed=61, points=points, change=math.exp(delta))
    assert 0.6 <= r["detected"] <= 0.95, (math.expm1(delta), r)


@pytest.mark.parametrize("outlier", [0.5, 2.0])
def test_simulation_one_outlying_repetition_keeps_power(outlier: float) -> None:
    """Issue 22: one of 10 BASE repetitions 2x faster (or slower) at every point. The
    trimmed method still finds x1.2 at one point of 100 (5 % CV); issue 10's plain means
    lose it; neither claims anything in the A/A trials."""
    r = cal.simulate(0.05, 10, 20, seed=71, change=1.2, outlier=outlier, plain=True)
    assert r["detected"] >= 0.7, r
    assert r["plain_detected"] <= 0.2, r
    assert r["aa_any_claim"] <= 0.05 and r["plain_aa_any_claim"] <= 0.05, r


def test_aa_real_run_with_an_outlying_repetition(aa_run: object) -> None:
    """A/A splits of the real run, one BASE repetition halved/doubled at every point: the
    gate never claims a change (5 per side: the outlier is trimmed)."""
    for outlier in (0.5, 2.0):
        r = cal.aa_rates(aa_run, 5, 40, seed=81, outlier=outlier)
        assert r["any_claim"] <= 0.05, r


def test_simulation_no_regression_is_proven_when_noise_allows() -> None:
    """The gate's 'no regression' (non-inferiority) on A/A: proven at every point of a
    quiet sweep (1 % CV, 5 per side, 5 % threshold); rarely at 20 % CV (inconclusive)."""
    quiet = cal.simulate(0.01, 5, 10, seed=91, points=50)
    assert quiet["aa_gate_no_regression"] >= 0.9, quiet
    noisy = cal.simulate(0.20, 5, 10, seed=91, points=50)
    assert noisy["aa_no_regression_share"] <= 0.1, noisy


def test_repetitions_auto_simulation() -> None:
    """sweep --repetitions auto against a baseline, simulated: a quiet A/A is decided (no
    regression) after 3 repetitions; a x1.2 change at 5 % CV is found, nothing else claimed."""
    quiet = cal.simulate_auto(0.01, 10, seed=3)
    assert quiet["gate_no_regression"] == 1.0 and quiet["reps"] == 3.0, quiet
    planted = cal.simulate_auto(0.05, 10, seed=3, change=1.2)
    assert planted["detected"] >= 0.8 and planted["claim"] == 0.0, planted
