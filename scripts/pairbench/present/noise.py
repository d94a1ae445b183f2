"""How a noise result is shown: terminal text, markdown, JSON (the result itself:
pairbench.analysis.noise)."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas as pd

from pairbench.analysis.frames import POINT_KEY
from pairbench.analysis.noise import REPS
from pairbench.analysis.verdict import (
    MAX_REPS,
    MIN_REPS,
)
from pairbench.contract.sizes import size_label


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


