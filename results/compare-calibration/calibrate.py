#!/usr/bin/env python3
"""Calibration of `pairbench compare` (issues 10 and 22): A/A false alarms, the A/A rate of
the gate's "no regression", and detection power with and without one outlying repetition,
on real runs and in a simulation over synthetic log-normal noise. Writes the CSV files next
to this script and prints the Markdown tables of README.md.

    PYTHONPATH=scripts python3 results/compare-calibration/calibrate.py [--quick]

The same functions, with fewer trials and fixed seeds, are the tests in
tests/python/test_calibration.py.

A "comparison" below is one whole `compare` of every point and metric of a run (the unit
the A/A acceptance is about): a false alarm is ANY regression/improvement verdict in it.
Two older methods are shown beside the shipped one: "plain" is issue 10's method (plain
means of the log values, judge(..., trim=0)), and "old" the percentile bootstrap of the
median ratio before issue 10, reproduced here from the project's own history.

An *outlying repetition* is one repetition of BASE scaled at every point and metric (a
latency x OUT, a bandwidth or rate / OUT): OUT = 0.5 is a repetition that ran 2x faster,
as seen on a shared host (issue 22), 2.0 one that ran 2x slower.
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

from pairbench.analysis.frames import METRICS, POINT_KEY, aggregate_rows  # noqa: E402
from pairbench.analysis.compare import DEFAULT_METRICS, Thresholds  # noqa: E402
from pairbench.analysis.noise import noise_frame  # noqa: E402
from pairbench.analysis.load import load_run  # noqa: E402
from pairbench.analysis.verdict import (  # noqa: E402
    GATE_NO_REGRESSION,
    IMPROVEMENT,
    MIN_REPS,
    REGRESSION,
    Feature,
    judge,
)

CLAIMS = (REGRESSION, IMPROVEMENT)
ALPHA = 0.05                      # compare's default: --confidence 0.95
AA_RUN = "aa-10reps"
POWER_RUN = "power-100reps"
OLD_TRIALS = 100                  # the old bootstrap is slow: A/A trials it is run on
OUTLIERS = (None, 0.5, 2.0)       # no outlying repetition, one 2x faster, one 2x slower


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
                th: Thresholds, plant: tuple[int, float] | None = None,
                outlier: float | None = None) -> list[Feature]:
    """The features of one split; `plant` = (feature, factor) scales NEW there, `outlier`
    scales BASE's first repetition at every feature (latency x, bandwidth /)."""
    feats = []
    for i, m in enumerate(ra.metrics):
        new = ra.values[i, new_reps].copy()
        base = ra.values[i, base_reps].copy()
        if plant is not None and plant[0] == i:
            new *= plant[1] if METRICS[m].higher_is_worse else 1 / plant[1]
        if outlier is not None:
            base[0] *= outlier if METRICS[m].higher_is_worse else 1 / outlier
        feats.append(Feature(m, base, new, METRICS[m].higher_is_worse, th.rel(m), th.abs(m)))
    return feats


def _gate_no_regression(rows: list[dict]) -> bool:
    """The whole comparison's gate says no regression: every tested comparison proven."""
    return all(r["gate"] == GATE_NO_REGRESSION for r in rows if r["gate"] != "not comparable")


def splits(n_reps: int, per_side: int, count: int, seed: int) -> list[tuple[np.ndarray, ...]]:
    """`count` random disjoint base/new selections of `per_side` repetitions each."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        perm = rng.permutation(n_reps)
        out.append((np.sort(perm[:per_side]), np.sort(perm[per_side:2 * per_side])))
    return out


def aa_rates(ra: RunArrays, per_side: int, count: int, seed: int, old: bool = False,
             outlier: float | None = None) -> dict[str, float]:
    """Share of whole A/A comparisons with any claim: the method as shipped, the same with
    proofs allowed from 2 repetitions per side (why MIN_REPS is 3), issue 10's plain means,
    the old bootstrap; and the share whose gate says "no regression" (every comparison
    proven not worse than its threshold) and the mean share of comparisons so proven."""
    th = Thresholds()
    n_claim = n_sus = n_min2 = n_old = n_plain = n_gate = n_plain_gate = 0
    ni = 0.0
    for b, n in splits(ra.values.shape[1], per_side, count, seed):
        feats = features_of(ra, b, n, th, outlier=outlier)
        rows = judge(feats, ALPHA, needed=False).rows
        verdicts = [r["verdict"] for r in rows]
        n_claim += any(v in CLAIMS for v in verdicts)
        n_sus += any(v.startswith("suspected") for v in verdicts)
        n_gate += _gate_no_regression(rows)
        ni += float(np.mean([r["gate"] == GATE_NO_REGRESSION for r in rows]))
        plain = judge(feats, ALPHA, needed=False, trim=0.0).rows
        n_plain += any(r["verdict"] in CLAIMS for r in plain)
        n_plain_gate += _gate_no_regression(plain)
        if outlier is None:
            n_min2 += any(r["verdict"] in CLAIMS
                          for r in judge(feats, ALPHA, needed=False, min_reps=2).rows)
        if old:
            n_old += any(old_verdict(f) in CLAIMS for f in feats)
    out = {"per_side": per_side, "outlier": outlier or "", "comparisons": count,
           "features": len(ra.metrics), "any_claim": n_claim / count,
           "gate_no_regression": n_gate / count, "no_regression_share": ni / count,
           "any_suspected": n_sus / count, "plain_any_claim": n_plain / count,
           "plain_gate_no_regression": n_plain_gate / count}
    if outlier is None:
        out["any_claim_if_2_proved"] = n_min2 / count
    if old:
        out["old_any_claim"] = n_old / count
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
               seed: int, outlier: float | None = None) -> dict[str, float]:
    """Plant `factor` in one point of the NEW side (with `outlier`: and one outlying BASE
    repetition at every point); share of splits calling it regression, with the shipped
    method and with issue 10's plain means (and the share with a claim anywhere else)."""
    th = Thresholds()
    i = ra.labels.index(label)
    hit = other = plain_hit = 0
    for b, n in splits(ra.values.shape[1], per_side, count, seed):
        feats = features_of(ra, b, n, th, plant=(i, factor), outlier=outlier)
        rows = judge(feats, ALPHA, needed=False).rows
        hit += rows[i]["verdict"] == REGRESSION
        other += any(r["verdict"] in CLAIMS for k, r in enumerate(rows) if k != i)
        plain_hit += judge(feats, ALPHA, needed=False, trim=0.0).rows[i]["verdict"] == REGRESSION
    return {"point": label, "factor": factor, "per_side": per_side, "outlier": outlier or "",
            "comparisons": count, "detected": hit / count, "plain_detected": plain_hit / count,
            "other_claims": other / count}


# --- simulation ------------------------------------------------------------------------------

def simulate(cv: float, per_side: int, trials: int, seed: int, points: int = 100,
             change: float = 1.2, threshold: float = 0.05, old: bool = False,
             min_reps: int = MIN_REPS, outlier: float | None = None,
             changes: tuple[float, ...] = (), plain: bool = False) -> dict:
    """`points` latency-like points with log-normal run-to-run noise of coefficient of
    variation `cv`; A/A trials (no change anywhere) and trials with a `change` (and each of
    `changes`) planted in point 0; with `outlier`, BASE's first repetition is scaled by it
    at every point. Returns the share of A/A comparisons with any claim and with the gate
    "no regression", the mean share of points proven no regression, and the detection
    rates; with `plain` the same for issue 10's plain means, with `old` the old bootstrap's
    A/A rate."""
    rng = np.random.default_rng(seed)
    sigma = math.sqrt(math.log1p(cv * cv))
    planted = (change, *[c for c in changes if c != change])
    trims = (("", None), ("plain_", 0.0)) if plain else (("", None),)
    count: dict[str, float] = {}

    def add(key: str, v: float) -> None:
        count[key] = count.get(key, 0.0) + v

    old_aa = 0
    old_trials = min(trials, OLD_TRIALS)
    for t in range(trials):
        base = np.exp(rng.normal(0.0, sigma, (points, per_side)))
        new = np.exp(rng.normal(0.0, sigma, (points, per_side)))
        if outlier is not None:
            base[:, 0] *= outlier
        feats = [Feature("lat_us_p50", base[i], new[i], True, threshold)
                 for i in range(points)]
        for tag, trim in trims:
            kw = {"trim": trim} if trim is not None else {}
            rows = judge(feats, ALPHA, needed=False, min_reps=min_reps, **kw).rows
            add(f"{tag}aa_any_claim", any(r["verdict"] in CLAIMS for r in rows))
            add(f"{tag}aa_gate_no_regression", _gate_no_regression(rows))
            add(f"{tag}aa_no_regression_share",
                float(np.mean([r["gate"] == GATE_NO_REGRESSION for r in rows])))
            if not tag:
                add("aa_any_suspected", any(r["verdict"].startswith("suspected") for r in rows))
            for c in planted:
                f2 = [Feature("lat_us_p50", base[0], new[0] * c, True, threshold), *feats[1:]]
                hit = judge(f2, ALPHA, needed=False, min_reps=min_reps,
                            **kw).rows[0]["verdict"] == REGRESSION
                add(f"{tag}detected_x{c:g}", hit)
                if c == change:
                    add(f"{tag}detected", hit)
        if old and t < old_trials:
            old_aa += any(old_verdict(f) in CLAIMS for f in feats)
    out = {"cv": cv, "per_side": per_side, "min_reps": min_reps, "points": points,
           "trials": trials, "outlier": outlier or "", "change": change,
           **{k: v / trials for k, v in count.items()}}
    if old:
        out["old_aa_any_claim"] = old_aa / old_trials
        out["old_trials"] = old_trials
    return out


def simulate_auto(cv: float, trials: int, seed: int, points: int = 24, base_reps: int = 10,
                  max_reps: int = 10, change: float | None = None,
                  threshold: float = 0.05, naive: bool = False) -> dict:
    """`sweep --repetitions auto:MAX --baseline BASE` then `compare BASE NEW`, simulated:
    BASE has base_reps repetitions of `points` latency-like points (log-normal noise of CV
    `cv`); NEW starts with MIN_REPS and every point whose gate is inconclusive gets one more
    repetition per round (autoreps.run_rounds) until none is or it has max_reps; `change`
    is planted in NEW's point 0. The final comparison's claims and gate, beside a fixed
    max_reps-repetition NEW (no looks): the price of looking after every round. Each look
    decides at autoreps.look_alpha (alpha / looks), or at alpha with `naive`."""
    from pairbench.analysis.decide import look_alpha
    from pairbench.analysis.verdict import GATE_INCONCLUSIVE

    rng = np.random.default_rng(seed)
    sigma = math.sqrt(math.log1p(cv * cv))
    c = {"claim": 0, "claim_fixed": 0, "gate_no_regression": 0, "gate_regression": 0,
         "detected": 0, "detected_fixed": 0, "reps": 0.0, "decided": 0}
    for _ in range(trials):
        base = np.exp(rng.normal(0.0, sigma, (points, base_reps)))
        pool = np.exp(rng.normal(0.0, sigma, (points, max_reps)))
        if change is not None:
            pool[0] *= change
        n = np.full(points, MIN_REPS)
        while True:
            feats = [Feature("lat_us_p50", base[i], pool[i, :n[i]], True, threshold)
                     for i in range(points)]
            look = judge(feats, ALPHA if naive else look_alpha(ALPHA, max_reps),
                         needed=False).rows
            todo = [i for i, r in enumerate(look)
                    if r["gate"] == GATE_INCONCLUSIVE and n[i] < max_reps]
            if not todo:
                break
            n[todo] += 1
        rows = judge(feats, ALPHA, needed=False).rows      # the compare that follows
        fixed = judge([Feature("lat_us_p50", base[i], pool[i], True, threshold)
                       for i in range(points)], ALPHA, needed=False).rows
        claims = [k for k, r in enumerate(rows) if r["verdict"] in CLAIMS]
        c["claim"] += bool([k for k in claims if change is None or k != 0])
        c["claim_fixed"] += any(r["verdict"] in CLAIMS for k, r in enumerate(fixed)
                                if change is None or k != 0)
        c["gate_no_regression"] += _gate_no_regression(rows)
        c["gate_regression"] += any(r["gate"] == "regression" for r in rows)
        c["detected"] += rows[0]["verdict"] == REGRESSION
        c["detected_fixed"] += fixed[0]["verdict"] == REGRESSION
        c["reps"] += float(n.mean())
        c["decided"] += all(r["gate"] != GATE_INCONCLUSIVE for r in rows)
    out = {"cv": cv, "points": points, "base_reps": base_reps, "max_reps": max_reps,
           "look_level": "alpha" if naive else "alpha/looks", "change": change or "",
           "trials": trials}
    out.update({k: v / trials for k, v in c.items()})
    if change is None:
        out.pop("detected"), out.pop("detected_fixed")
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
        out.append("| " + " | ".join(f"{r[c]:.3g}" if isinstance(r.get(c), float)
                                     else str(r.get(c, "")) for c in cols) + " |")
    return "\n".join(out)


def _pct(v: object) -> str:
    return f"{100 * v:.3g} %" if isinstance(v, float) and math.isfinite(v) else ""


def sim_table(sim: list[dict]) -> str:
    """The simulation as one row per (CV, repetitions per side, outlying repetition): the
    shipped method's rates, issue 10's plain means in parentheses."""
    head = ["CV", "reps/side", "outlier", "A/A any claim", "A/A gate: no regression",
            "A/A points proven no regression", "detected ×1.1", "detected ×1.2"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def both(r: dict, key: str) -> str:
        return f"{_pct(r[key])} ({_pct(r['plain_' + key])})"

    for r in sim:
        out.append("| " + " | ".join([
            _pct(r["cv"]), str(r["per_side"]), f"×{r['outlier']:g}" if r["outlier"] else "none",
            both(r, "aa_any_claim"), both(r, "aa_gate_no_regression"),
            both(r, "aa_no_regression_share"), both(r, "detected_x1.1"),
            both(r, "detected_x1.2")]) + " |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer trials (a smoke run)")
    a = ap.parse_args()
    k = 5 if a.quick else 1
    # (a) A/A on the real 10-repetition run, with and without an outlying repetition.
    ra = run_arrays(_run_dir(AA_RUN))
    aa = [aa_rates(ra, n, 200 // k, seed=100 + n, old=True) for n in (2, 3, 4, 5)]
    aa += [aa_rates(ra, 5, 200 // k, seed=105, outlier=o) for o in OUTLIERS[1:]]
    _write(aa, HERE / "aa-real.csv")
    print("## A/A, real run\n\n" + _md(aa, _cols(aa)) + "\n")
    # (b) power on the real 100-repetition latency run: x1.1 at the count noise recommends,
    # x1.1 and x1.2 at 6 and 10 per side; each without and with one outlying repetition.
    pr = run_arrays(_run_dir(POWER_RUN), ["lat_us_p50", "lat_us_p99"])
    pw = []
    for label in [lb for lb in pr.labels if lb.endswith("lat_us_p50")]:
        n = recommended_reps(_run_dir(POWER_RUN), label, detect=0.10)
        if n is None or 2 * n > pr.values.shape[1]:
            pw.append({"point": label, "factor": 1.1, "per_side": f"{n} (too many)",
                       "outlier": "", "comparisons": 0, "detected": math.nan,
                       "plain_detected": math.nan, "other_claims": math.nan})
            continue
        pw.append(power_rate(pr, label, 1.10, n, 200 // k, seed=200))
    label = "latency 65536 lat_us_p50"
    for n in (6, 10):
        for factor in (1.1, 1.2):
            for o in OUTLIERS:
                pw.append(power_rate(pr, label, factor, n, 200 // k, seed=210 + n, outlier=o))
    _write(pw, HERE / "power-real.csv")
    print("## Power, real run\n\n" + _md(pw, _cols(pw)) + "\n")
    aa100 = [aa_rates(pr, n, 200 // k, seed=300 + n, old=True) for n in (2, 3, 5, 10, 30)]
    aa100 += [aa_rates(pr, n, 200 // k, seed=300 + n, outlier=o)
              for n in (6, 10) for o in OUTLIERS[1:]]
    _write(aa100, HERE / "aa-real-100reps.csv")
    print("## A/A, real 100-repetition run\n\n" + _md(aa100, _cols(aa100)) + "\n")
    # (c) simulation.
    sim = []
    for cv in (0.01, 0.05, 0.20):
        for n in (2, 3, 5, 10):
            for o in OUTLIERS:
                sim.append(simulate(cv, n, 200 // k, seed=1000 + int(cv * 100) * 10 + n,
                                    change=1.1, changes=(1.1, 1.2), outlier=o, plain=True,
                                    old=o is None and n in (2, 5)))
                print(f"simulated cv {cv} n {n} outlier {o}", file=sys.stderr)
    _write(sim, HERE / "simulation.csv")
    print("## Simulation\n\n" + sim_table(sim) + "\n")
    # (d) repetitions until decided: the whole procedure, looks after every round.
    seq = [simulate_auto(cv, 200 // k, seed=2000 + int(cv * 100), change=ch, base_reps=m,
                         max_reps=m, naive=naive)
           for naive in (False, True) for m in (10, 20) for cv in (0.01, 0.05, 0.20)
           for ch in (None, 1.2)]
    _write(seq, HERE / "auto-simulation.csv")
    print("## Repetitions until decided (simulation)\n\n" + _md(seq, _cols(seq)) + "\n")
    old = [r for r in sim if "old_aa_any_claim" in r]
    print("Old bootstrap, A/A any claim: " + ", ".join(
        f"CV {_pct(r['cv'])} n {r['per_side']}: {_pct(r['old_aa_any_claim'])}" for r in old))
    return 0


def _cols(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(c for r in rows for c in r))


if __name__ == "__main__":
    sys.exit(main())
