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

import argparse
import io
import json
import math
import sys

import numpy as np
import pandas as pd

from pairbench.analysis import METRICS, POINT_KEY, aggregate_rows
from pairbench.compare import (
    DEFAULT_METRICS,
    Thresholds,
    _parse_fraction,
    add_threshold_arguments,
    thresholds_from_args,
)
from pairbench.errors import UsageError
from pairbench.schema import load_run
from pairbench.sizes import size_label
from pairbench.verdict import (
    DEFAULT_POWER,
    MAX_REPS,
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


def _pct(v: float) -> str:
    return f"{v:.3g} %" if math.isfinite(v) else ""


def _reps(r: pd.Series) -> str:
    if not math.isfinite(r["post_var"]) or r["post_var"] <= 0:
        return "noise unknown"
    if r["detect"] <= r["threshold"]:
        return "never (not above the threshold)"
    n = r["reps_recommended"]
    return f"> {MAX_REPS}" if n is None or (isinstance(n, float) and math.isnan(n)) \
        else str(int(n))


NOISE_COLS = ["test", "variant", "size", "pairs", "metric", "n", "value", "CV",
              "CV moderated", "threshold", *[f"detectable @{n}" for n in REPS],
              "catch", "reps/side"]


def noise_rows(res: pd.DataFrame) -> list[list[str]]:
    out = []
    for _, r in res.iterrows():
        out.append([r["test"], r["variant"], size_label(int(r["msg_size_bytes"])),
                    str(r["pairs"]), r["metric"], str(r["n"]),
                    f"{r['value']:.4g}" if math.isfinite(r["value"]) else r["note"],
                    _pct(100 * r["cv"]), _pct(100 * r["cv_moderated"]),
                    _pct(100 * r["threshold"]),
                    *[_pct(100 * r[f"detectable_{n}"]) if n >= MIN_REPS
                      else "never" for n in REPS],
                    _pct(100 * r["detect"]), _reps(r)])
    return out


def assumption_lines(res: pd.DataFrame) -> list[str]:
    a = res.attrs
    out = [f"detectable @N: smallest change compare proves (verdict regression) with "
           f"{a['power']:.0%} power, N repetitions per side; reps/side: repetitions that "
           f"prove a change of 'catch'; compare proves nothing with fewer than {MIN_REPS} "
           "repetitions per side",
           f"assumes: this run's (moderated) noise; the change in ONE point of a sweep of "
           f"{a['family']} comparisons, FDR {a['fdr']:.0%} (Benjamini-Hochberg then acts like "
           f"Bonferroni: per-test level {a['per_test_alpha']:.2g}); independent, log-normal "
           "repetitions; no drift between the runs compared"]
    for metric, pr in sorted(a["priors"].items()):
        if pr["df"] > 0:
            out.append(f"noise: {metric}: typical CV {pr['noise_cv']:.2%} (prior fitted on "
                       f"{pr['features']} points, d0 = {pr['df']:.3g})")
    out += recommendation_lines(res)
    if (res["n"] < 2).any():
        out.append("note: points with 1 repetition have no noise of their own (their row "
                   "uses the metric's prior, if any); compare can never prove a change with "
                   "1 repetition on a side")
    return out


def recommendation_lines(res: pd.DataFrame) -> list[str]:
    """Per metric: repetitions per side that catch its `catch` change at every point."""
    out = []
    for metric, g in res.groupby("metric", sort=True):
        g = g[g["detect"] > g["threshold"]]
        if g.empty:
            continue
        need = [math.inf if n is None or (isinstance(n, float) and math.isnan(n)) else int(n)
                for n in g["reps_recommended"]]
        worst = int(np.argmax(need))
        r = g.iloc[worst]
        where = f"{r['test']} {size_label(int(r['msg_size_bytes']))} {r['pairs']}-pair"
        n_txt = f"more than {MAX_REPS}" if need[worst] == math.inf else str(need[worst])
        out.append(f"recommended: {metric}: {n_txt} repetitions per side catch a change of "
                   f"{100 * r['detect']:.3g} % at every point (the noisiest: {where})")
    return out


def render_text(res: pd.DataFrame) -> str:
    from rich.console import Console
    from rich.table import Table

    table = Table(*NOISE_COLS, box=None, header_style="bold", pad_edge=False)
    for row in noise_rows(res):
        table.add_row(*row)
    buf = io.StringIO()
    Console(file=buf, width=240, no_color=True, highlight=False, soft_wrap=False).print(table)
    text = "\n".join(line.rstrip() for line in buf.getvalue().splitlines())
    return text + "\n\n" + "\n".join(assumption_lines(res)) + "\n"


def to_json(res: pd.DataFrame, run: str) -> dict:
    cols = [*POINT_KEY, "metric", "n", "value", "cv", "cv_moderated", "threshold",
            *[f"detectable_{n}" for n in REPS], "detect", "reps_recommended", "note"]
    recs = json.loads(res[cols].to_json(orient="records"))
    a = res.attrs
    return {"run": run, "repetitions_per_side": list(REPS), "power": a["power"],
            "fdr": a["fdr"], "family": a["family"], "per_test_alpha": a["per_test_alpha"],
            "priors": a["priors"], "assumptions": assumption_lines(res)[1],
            "recommended": recommendation_lines(res), "points": recs}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", metavar="RUN", help="run directory or data CSV")
    add_threshold_arguments(p)
    p.add_argument("--power", type=float, default=DEFAULT_POWER,
                   help="probability of proving a real change (default 0.8)")
    p.add_argument("--detect", default=None, metavar="CHANGE",
                   help="change that must be caught, e.g. 10%% (default: twice each "
                   "metric's relative threshold)")
    p.add_argument("--format", choices=["table", "json"], default="table")


def run_noise(ns: argparse.Namespace) -> int:
    th = thresholds_from_args(ns)
    if not 0 < ns.power < 1:
        raise UsageError("--power must be in (0, 1)")
    detect = _parse_fraction(ns.detect, "--detect") if ns.detect is not None else None
    for m in th.metrics or []:
        if m not in METRICS:
            raise UsageError(f"--metrics: unknown metric {m!r}")
    res = noise_frame(load_run(ns.run), th, ns.power, detect)
    if ns.format == "json":
        sys.stdout.write(json.dumps(to_json(res, ns.run), indent=2) + "\n")
    else:
        sys.stdout.write(render_text(res))
    return 0
