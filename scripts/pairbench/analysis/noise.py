"""`pairbench noise RUN`: how noisy a run's repetitions are, and what `compare` could prove.

Per point (layer, test, variant, size, pairs) and metric, from the aggregate rows:
- the run-to-run noise: the coefficient of variation of the repetitions, from the standard
  deviation of their logs (CV = sqrt(exp(s^2) - 1)), raw and moderated (the point's variance
  shrunk toward the prior fitted over all points of the metric, as `compare` does);
- the smallest change `compare` would prove (verdict `regression`) with the chosen power,
  for 2, 3, 5 and 10 repetitions per side ("never" below verdict.MIN_REPS);
- the repetitions per side needed to prove a change of --detect (default: twice the
  metric's relative threshold).

Assumptions (printed with the table): the noise of a future comparison is this run's
moderated noise, with this run's prior strength; the change sits in ONE point of a sweep as
large as this run (Benjamini-Hochberg then acts like Bonferroni: per-test level
alpha / comparisons, the hardest case; when many points change together it is easier);
repetitions are independent and log-normal. See docs/compare-and-accept.md.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pairbench.analysis.compare import (
    DEFAULT_METRICS,
    Thresholds,
)
from pairbench.analysis.frames import POINT_KEY, aggregate_rows
from pairbench.analysis.verdict import (
    DEFAULT_POWER,
    MIN_REPS,
    detectable_change,
    fit_prior,
    future_df,
    log_cv,
    moderate,
    prior_record,
    reps_needed,
    side_stats,
)
from pairbench.errors import UsageError

REPS = (2, 3, 5, 10)


def noise_frame(df: pd.DataFrame, th: Thresholds, target_power: float = DEFAULT_POWER,
                detect: float | None = None) -> pd.DataFrame:
    """One row per (point, metric) of a run; settings and priors in `.attrs`."""
    agg = aggregate_rows(df)
    agg["variant"] = agg["variant"].fillna("")
    wanted = [m for m in (th.metrics or DEFAULT_METRICS) if m in agg.columns]
    rows: list[dict] = []
    # POINT_KEY ends with (msg_size_bytes, pairs): order by pairs, then size.
    for key, g in sorted(agg.groupby(POINT_KEY), key=lambda kv: (*kv[0][:-2], kv[0][-1],
                                                                  kv[0][-2])):
        for metric in wanted:
            v = g[metric].dropna().to_numpy(dtype=float)
            if len(v) == 0:
                continue
            row = {**dict(zip(POINT_KEY, key, strict=True)), "metric": metric, "n": len(v),
                   "df": 0}
            if not (np.all(np.isfinite(v)) and np.all(v > 0)):
                row.update(value=math.nan, var=math.nan, note="a value <= 0 or infinite")
            else:
                # compare's estimate: trimmed mean and Yuen's variance (verdict.side_stats)
                loc, var, df_own = side_stats(np.log(v))
                row.update(value=float(np.exp(loc)), var=var if df_own > 0 else math.nan,
                           df=df_own, note="")
            rows.append(row)
    if not rows:
        raise UsageError(f"no aggregate ok rows with values for {', '.join(wanted)}")
    out = pd.DataFrame(rows)
    out["msg_size_bytes"] = out["msg_size_bytes"].astype(int)
    out["pairs"] = out["pairs"].astype(int)
    alpha = 1.0 - th.confidence
    family = len(out)
    priors = {}
    out["post_var"] = math.nan
    out["prior_df"] = 0.0
    for metric, idx in out.groupby("metric").groups.items():
        sub = out.loc[idx]
        prior = fit_prior(sub["var"].to_numpy(), sub["df"].to_numpy(dtype=float))
        priors[metric] = prior
        post, _ = moderate(sub["var"].fillna(0).to_numpy(), sub["df"].to_numpy(float), prior)
        post[~np.isfinite(sub["value"].to_numpy())] = math.nan
        out.loc[idx, "post_var"] = post
        out.loc[idx, "prior_df"] = prior.df
    out["cv"] = [log_cv(v) for v in out["var"]]
    out["cv_moderated"] = [log_cv(v) for v in out["post_var"]]
    out["threshold"] = [max(th.rel(m), th.abs(m) / val) if math.isfinite(val) else math.nan
                        for m, val in zip(out["metric"], out["value"], strict=True)]
    out["detect"] = [detect if detect is not None else 2 * th.rel(m) for m in out["metric"]]
    per_test = alpha / family
    for n in REPS:
        out[f"detectable_{n}"] = [
            math.expm1(detectable_change(pv, future_df(d0, n), n, math.log1p(t), per_test,
                                         target_power))
            if math.isfinite(pv) and pv > 0 and n >= MIN_REPS else math.nan
            for pv, d0, t in zip(out["post_var"], out["prior_df"], out["threshold"],
                                 strict=True)]
    out["reps_recommended"] = [
        reps_needed(math.log1p(d), pv, d0, math.log1p(t), per_test, target_power)
        if math.isfinite(pv) and pv > 0 else None
        for d, pv, d0, t in zip(out["detect"], out["post_var"], out["prior_df"],
                                out["threshold"], strict=True)]
    out.attrs.update(
        family=family, fdr=alpha, power=target_power, per_test_alpha=per_test,
        priors={m: prior_record(p) for m, p in priors.items()})
    return out


