"""compare judges the victim probe (issue 35: a firmware that lets the victim's latency
inflate more under the same incast is a regression the headline rows cannot show): the probe
rows (scope=probe) are points of their own, variant 'probe:TEST', on lat_inflation_p50/p99 by
default. One fake incast sweep with a probe (test_pattern_accept's), its rows repeated as
four repetitions with a little noise: B = A with the probe's inflation 1.6x worse is a
regression on the probe rows only; an A/A with fresh noise is none."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from test_pattern_accept import incast_run  # noqa: F401  (the module fixture)

from pairbench.analysis.compare import Thresholds, compare_frames
from pairbench.analysis.load import load_run

MEASURED = ["lat_us_p50", "lat_us_p99", "bw_gbit_s", "msg_rate_per_s", "worst_lat_us_p50",
            "min_pair_bw_gbit_s", "lat_inflation_p50", "lat_inflation_p99"]


def _repeated(df: pd.DataFrame, seed: int, probe_factor: float = 1.0) -> pd.DataFrame:
    """Four repetitions of the run's rows, each measured column times 1 +- 2 % noise; the
    probe rows' inflation times probe_factor."""
    rng = np.random.default_rng(seed)
    reps = []
    for r in range(1, 5):
        d = df.copy()
        d["repetition"] = r
        for c in MEASURED:
            if c in d.columns:
                v = pd.to_numeric(d[c], errors="coerce")
                d[c] = v * rng.uniform(0.98, 1.02, len(d))
        probe = d["scope"] == "probe"
        for c in ("lat_inflation_p50", "lat_inflation_p99"):
            d.loc[probe, c] = d.loc[probe, c] * probe_factor
        reps.append(d)
    return pd.concat(reps, ignore_index=True)


def test_probe_inflation_regression_is_found_and_only_there(incast_run: Path) -> None:  # noqa: F811
    run = load_run(incast_run)
    assert (run["scope"] == "probe").any() and run["lat_inflation_p99"].notna().any()
    res = compare_frames(_repeated(run, 1), _repeated(run, 2, probe_factor=1.6), Thresholds())
    probe = res[res["variant"].str.contains("probe:write_lat", na=False)]
    assert set(probe["metric"]) == {"lat_inflation_p50", "lat_inflation_p99"}
    assert set(probe["pairs"]) == {1, 2, 3}
    assert (probe["verdict"] == "regression").all(), probe[["pairs", "metric", "verdict"]]
    assert probe["change_pct"].between(55, 65).all()
    rest = res[~res["variant"].str.contains("probe:", na=False)]
    assert len(rest) and (rest["verdict"] != "regression").all()


def test_probe_a_a_is_no_regression(incast_run: Path) -> None:  # noqa: F811
    run = load_run(incast_run)
    res = compare_frames(_repeated(run, 3), _repeated(run, 4), Thresholds())
    probe = res[res["variant"].str.contains("probe:", na=False)]
    assert len(probe) == 6 and (probe["verdict"] != "regression").all()


def test_named_metrics_pick_the_probe_metric(incast_run: Path) -> None:  # noqa: F811
    run = load_run(incast_run)
    res = compare_frames(_repeated(run, 5), _repeated(run, 6, probe_factor=1.6), Thresholds(),
                         ["bw_gbit_s", "lat_inflation_p99"])
    assert set(res["metric"]) == {"bw_gbit_s", "lat_inflation_p99"}
    assert set(res.loc[res["metric"] == "lat_inflation_p99", "verdict"]) == {"regression"}
    only_bw = compare_frames(_repeated(run, 5), _repeated(run, 6, probe_factor=1.6),
                             Thresholds(), ["bw_gbit_s"])
    assert set(only_bw["metric"]) == {"bw_gbit_s"}
