#!/usr/bin/env python3
"""Calibration of `pairbench compare` (issue 10): A/A false alarms and detection power on
real runs, and a simulation over synthetic log-normal noise. Writes the CSV files next to
this script and prints the Markdown tables of README.md.

    PYTHONPATH=scripts python3 results/compare-calibration/calibrate.py [--quick]

The same functions, with fewer trials and fixed seeds, are the tests in
tests/python/test_calibration.py.

A "comparison" below is one whole `compare` of every point and metric of a run (the unit
the A/A acceptance is about): a false alarm is ANY regression/improvement verdict in it.
The old method (percentile bootstrap of the median ratio, before issue 10) is reproduced
here from the project's own history so that its A/A rate can be shown beside the new one.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
if str(REPO / "scripts") not in sys.path:
    sys.path.insert(0, str(REPO / "scripts"))

from pairbench.analysis import METRICS, POINT_KEY, aggregate_rows  # noqa: E402
from pairbench.compare import DEFAULT_METRICS, Thresholds  # noqa: E402
from pairbench.noise import noise_frame  # noqa: E402
from pairbench.schema import load_run  # noqa: E402
from pairbench.verdict import IMPROVEMENT, MIN_REPS, REGRESSION, Feature, judge  # noqa: E402

CLAIMS = (REGRESSION, IMPROVEMENT)
ALPHA = 0.05                      # compare's default: --confidence 0.95
AA_RUN = "aa-10reps"
POWER_RUN = "power-100reps"
OLD_TRIALS = 100                  # the old bootstrap is slow: A/A trials it is run on


# --- the old method (scripts/pairbench/compare.py before issue 10) -------------------------

def old_bootstrap_ci(base: np.ndarray, new: np.ndarray, confidence: float = 0.95,
                     seed: int = 12345, samples: int = 4000) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    mb = np.median(base[rng.integers(0, len(base), (samples, len(base)))], axis=1)
    mn = np.median(new[rng.integers(0, len(new), (samples, len(new)))], axis=1)
    r = mn / mb
    r = r[np.isfinite(r)]
    a = (1 - confidence) / 2
    return float(np.quantile(r, a)), float(np.quantile(r, 1 - a))


def old_verdict(f: Feature) -> str:
    """regression / improvement / within noise / no change, as compare used to say."""
    bmed, nmed = float(np.median(f.base)), float(np.median(f.new))
    sign = 1.0 if f.higher_is_worse else -1.0
    worse_abs = sign * (nmed - bmed)
    worse_rel = worse_abs / abs(bmed)
    worse = worse_rel > f.rel and worse_abs > f.abs
    better = -worse_rel > f.rel and -worse_abs > f.abs
    if not (worse or better):
        return "no change"
    lo, hi = old_bootstrap_ci(f.base, f.new)
    if lo <= 1.0 <= hi:
        return "within noise"
    return REGRESSION if worse else IMPROVEMENT


# --- real runs: every (point, metric) as an array over repetitions --------------------------

@dataclass
class RunArrays:
    labels: list[str]             # "test size metric"
    metrics: list[str]
    values: np.ndarray            # (features, repetitions)


def run_arrays(run_dir: Path, metrics: list[str] | None = None) -> RunArrays:
    agg = aggregate_rows(load_run(run_dir))
    agg["variant"] = agg["variant"].fillna("")
    reps = sorted(agg["repetition"].unique())
    labels, mets, vals = [], [], []
    for key, g in agg.groupby(POINT_KEY):
        g = g.set_index("repetition").reindex(reps)
        for m in metrics or DEFAULT_METRICS:
            v = g[m].to_numpy(dtype=float)
            if np.all(np.isfinite(v)):
                k = dict(zip(POINT_KEY, key, strict=True))
                labels.append(f"{k['test']} {int(k['msg_size_bytes'])} {m}")
                mets.append(m)
                vals.append(v)
    return RunArrays(labels, mets, np.array(vals))


def features_of(ra: RunArrays, base_reps: np.ndarray, new_reps: np.ndarray,
                th: Thresholds, plant: tuple[int, float] | None = None) -> list[Feature]:
    feats = []
    for i, m in enumerate(ra.metrics):
        new = ra.values[i, new_reps].copy()
        if plant is not None and plant[0] == i:
            new *= plant[1]
        feats.append(Feature(m, ra.values[i, base_reps], new, METRICS[m].higher_is_worse,
                             th.rel(m), th.abs(m)))
    return feats


def splits(n_reps: int, per_side: int, count: int, seed: int) -> list[tuple[np.ndarray, ...]]:
    """`count` random disjoint base/new selections of `per_side` repetitions each."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        perm = rng.permutation(n_reps)
        out.append((np.sort(perm[:per_side]), np.sort(perm[per_side:2 * per_side])))
    return out


def aa_rates(ra: RunArrays, per_side: int, count: int, seed: int,
             old: bool = False) -> dict[str, float]:
    """Share of whole A/A comparisons with any claim: the method as shipped, the same with
    proofs allowed from 2 repetitions per side (why MIN_REPS is 3), the old method."""
    th = Thresholds()
    any_claim = any_suspected = any_min2 = any_old = 0
    for b, n in splits(ra.values.shape[1], per_side, count, seed):
        feats = features_of(ra, b, n, th)
        verdicts = [r["verdict"] for r in judge(feats, ALPHA, needed=False).rows]
        any_claim += any(v in CLAIMS for v in verdicts)
        any_suspected += any(v.startswith("suspected") for v in verdicts)
        any_min2 += any(r["verdict"] in CLAIMS
                        for r in judge(feats, ALPHA, needed=False, min_reps=2).rows)
        if old:
            any_old += any(old_verdict(f) in CLAIMS for f in feats)
    out = {"per_side": per_side, "comparisons": count, "features": len(ra.metrics),
           "any_claim": any_claim / count, "any_suspected": any_suspected / count,
           "any_claim_if_2_proved": any_min2 / count}
    if old:
        out["old_any_claim"] = any_old / count
    return out


def recommended_reps(run_dir: Path, label: str, detect: float) -> int | None:
    """What `pairbench noise RUN --detect detect` recommends for the point `label`."""
    res = noise_frame(load_run(run_dir), Thresholds(), detect=detect)
    for _, r in res.iterrows():
        if f"{r['test']} {int(r['msg_size_bytes'])} {r['metric']}" == label:
            n = r["reps_recommended"]
            return None if n is None or (isinstance(n, float) and math.isnan(n)) else int(n)
    raise KeyError(label)


def power_rate(ra: RunArrays, label: str, factor: float, per_side: int, count: int,
               seed: int) -> dict[str, float]:
    """Plant `factor` in one point of the NEW side; share of splits calling it regression
    (and share with a claim anywhere else: false alarms beside the planted change)."""
    th = Thresholds()
    i = ra.labels.index(label)
    hit = other = 0
    for b, n in splits(ra.values.shape[1], per_side, count, seed):
        rows = judge(features_of(ra, b, n, th, plant=(i, factor)), ALPHA, needed=False).rows
        hit += rows[i]["verdict"] == REGRESSION
        other += any(r["verdict"] in CLAIMS for k, r in enumerate(rows) if k != i)
    return {"point": label, "factor": factor, "per_side": per_side, "comparisons": count,
            "detected": hit / count, "other_claims": other / count}


# --- simulation ------------------------------------------------------------------------------

def simulate(cv: float, per_side: int, trials: int, seed: int, points: int = 100,
             change: float = 1.2, threshold: float = 0.05, old: bool = False,
             min_reps: int = MIN_REPS) -> dict:
    """`points` latency-like points with log-normal run-to-run noise of coefficient of
    variation `cv`; A/A trials (no change anywhere) and trials with a `change` planted in
    point 0. Returns the share of A/A comparisons with any claim, and the detection rate."""
    rng = np.random.default_rng(seed)
    sigma = math.sqrt(math.log1p(cv * cv))
    aa = sus = det = old_aa = 0
    old_trials = min(trials, OLD_TRIALS)
    for t in range(trials):
        base = np.exp(rng.normal(0.0, sigma, (points, per_side)))
        new = np.exp(rng.normal(0.0, sigma, (points, per_side)))
        feats = [Feature("lat_us_p50", base[i], new[i], True, threshold)
                 for i in range(points)]
        v = [r["verdict"] for r in judge(feats, ALPHA, needed=False, min_reps=min_reps).rows]
        aa += any(x in CLAIMS for x in v)
        sus += any(x.startswith("suspected") for x in v)
        if old and t < old_trials:
            old_aa += any(old_verdict(f) in CLAIMS for f in feats)
        feats[0] = Feature("lat_us_p50", base[0], new[0] * change, True, threshold)
        det += judge(feats, ALPHA, needed=False,
                     min_reps=min_reps).rows[0]["verdict"] == REGRESSION
    out = {"cv": cv, "per_side": per_side, "min_reps": min_reps, "points": points,
           "trials": trials,
           "change": change, "aa_any_claim": aa / trials, "aa_any_suspected": sus / trials,
           "detected": det / trials}
    if old:
        out["old_aa_any_claim"] = old_aa / old_trials
        out["old_trials"] = old_trials
    return out


# --- main ------------------------------------------------------------------------------------

def _run_dir(name: str) -> Path:
    dirs = sorted(p for p in (HERE / name).iterdir() if p.is_dir())
    return dirs[-1]


def _write(rows: list[dict], path: Path) -> None:
    import pandas as pd

    pd.DataFrame(rows).to_csv(path, index=False, float_format="%.4g")
    print(f"wrote {path.relative_to(REPO)}", file=sys.stderr)


def _md(rows: list[dict], cols: list[str]) -> str:
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(f"{r[c]:.3g}" if isinstance(r[c], float) else str(r[c])
                                     for c in cols) + " |")
    return "\n".join(out)


def sim_table(sim: list[dict]) -> str:
    """The simulation as one row per (CV, repetitions per side): A/A rates and detection of
    each planted change (in parentheses: if proofs were allowed from 2 repetitions)."""
    def pct(v: float) -> str:
        return f"{100 * v:.3g} %"

    cells: dict[tuple, dict] = {}
    for r in sim:
        c = cells.setdefault((r["cv"], r["per_side"]), {})
        tag = "" if r["min_reps"] == MIN_REPS else "2"
        c[f"aa{tag}"] = r["aa_any_claim"]
        c[f"sus{tag}"] = r["aa_any_suspected"]
        c[f"det{tag}{r['change']}"] = r["detected"]
        if "old_aa_any_claim" in r and not math.isnan(r.get("old_aa_any_claim", math.nan)):
            c["old"] = r["old_aa_any_claim"]
    changes = sorted({r["change"] for r in sim})
    head = ["CV", "reps/side", "A/A any claim", "old method A/A", "A/A any suspected",
            *[f"detected ×{ch:g}" for ch in changes]]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    def both(c: dict, key: str) -> str:
        alt = key[:3] + "2" + key[3:]
        return pct(c[key]) + (f" ({pct(c[alt])})" if alt in c else "")

    for (cv, n), c in sorted(cells.items()):
        out.append("| " + " | ".join([pct(cv), str(n), both(c, "aa"),
                                      pct(c["old"]) if "old" in c else "", pct(c["sus"]),
                                      *[both(c, f"det{ch}") for ch in changes]]) + " |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer trials (a smoke run)")
    a = ap.parse_args()
    k = 5 if a.quick else 1
    # (a) A/A on the real 10-repetition run.
    ra = run_arrays(_run_dir(AA_RUN))
    aa = [aa_rates(ra, n, 200 // k, seed=100 + n, old=True) for n in (2, 3, 4, 5)]
    _write(aa, HERE / "aa-real.csv")
    print("## A/A, real run\n\n" + _md(aa, list(aa[0])) + "\n")
    # (b) power on the real 100-repetition latency run, at the recommended count.
    pr = run_arrays(_run_dir(POWER_RUN), ["lat_us_p50", "lat_us_p99"])
    pw = []
    for label in [lb for lb in pr.labels if lb.endswith("lat_us_p50")]:
        n = recommended_reps(_run_dir(POWER_RUN), label, detect=0.10)
        if n is None or 2 * n > pr.values.shape[1]:
            pw.append({"point": label, "factor": 1.1, "per_side": f"{n} (too many)",
                       "comparisons": 0, "detected": math.nan, "other_claims": math.nan})
            continue
        pw.append(power_rate(pr, label, 1.10, n, 200 // k, seed=200))
    _write(pw, HERE / "power-real.csv")
    print("## Power, real run\n\n" + _md(pw, list(pw[0])) + "\n")
    aa100 = [aa_rates(pr, n, 200 // k, seed=300 + n, old=True) for n in (2, 3, 5, 10, 30)]
    _write(aa100, HERE / "aa-real-100reps.csv")
    print("## A/A, real 100-repetition run\n\n" + _md(aa100, list(aa100[0])) + "\n")
    # (c) simulation.
    sim = []
    for cv in (0.01, 0.05, 0.20):
        for n in (2, 3, 5, 10):
            for change in (1.1, 1.2, 1.5):
                for mr in ((2, MIN_REPS) if n == 2 else (MIN_REPS,)):
                    sim.append(simulate(cv, n, 300 // k, seed=1000 + int(cv * 100) * 10 + n,
                                        change=change, min_reps=mr,
                                        old=change == 1.2 and mr == MIN_REPS))
    _write(sim, HERE / "simulation.csv")
    cols = ["cv", "per_side", "min_reps", "change", "aa_any_claim", "aa_any_suspected",
            "detected", "old_aa_any_claim"]
    sim_md = [r | {"old_aa_any_claim": r.get("old_aa_any_claim", "")} for r in sim]
    print("## Simulation\n\n" + _md(sim_md, cols) + "\n\n" + sim_table(sim) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
