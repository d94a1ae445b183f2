"""The statistics behind `compare` and `noise` (docs/compare-and-accept.md, "The test").

The unit of evidence is the repetition: each repetition gives one value per (point,
metric); per-iteration samples of one run are never treated as independent. Everything is
done on log values, so a change is a ratio and noise a relative spread.

1. Per (point, metric) — a *feature* — the difference of mean logs NEW - BASE and the
   pooled residual variance s2 of the logs with d = n_base + n_new - 2 degrees of freedom.
2. Empirical Bayes (Smyth 2004, the limma method): the residual variances of all features
   of one metric are modelled as draws from a scaled inverse-chi-square prior (s0^2, d0),
   fitted by the method of moments on log s2. Each feature's variance is moderated to
   (d0 s0^2 + d s2) / (d0 + d), with d0 + d degrees of freedom: a point with 2 repetitions
   borrows the noise level seen at the other points instead of trusting its own 2 values.
   d0 is capped at the sum of the features' d (the prior cannot know more than the data it
   was fitted on).
3. The test is against the threshold (McCarthy & Smyth 2009, "TREAT"): H0 |change| <= tau
   on the log scale, p = P(T > (|x| - tau)/se) + P(T > (|x| + tau)/se), T ~ t(d0 + d).
   A rejection therefore means "changed by MORE than the threshold", not merely "changed".
4. Benjamini-Hochberg over every tested feature of the comparison (scipy's
   false_discovery_control): the expected share of false claims among the claims is at
   most alpha; when nothing changed (an A/A comparison) that is the probability of any
   claim at all.

Distributions come from scipy.stats, special functions and root finding from scipy; the
only arithmetic here is the method's own formulas.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

MIN_PRIOR_FEATURES = 3       # fewer features with residual df: no prior for that metric
MIN_REPS = 3                 # repetitions per side below which nothing is proven: with 2, a
                             # pair of disturbed runs on one side looks like a shift (the
                             # real A/A calibration: 7 % false alarms at 2, 0.3 % at 3)
ZERO_VAR_FLOOR = 1e-5        # limma's floor for zero variances, relative to the median
MAX_REPS = 100               # repetitions per side searched by reps_needed
DEFAULT_POWER = 0.8
TRIM = 0.2                   # share trimmed from each end of a side (Yuen's 20 %): from 5
                             # repetitions on, one outlying repetition per side is cut off


def trim_count(n: int, trim: float = TRIM) -> int:
    """Repetitions cut from each end of a side of n (scipy.stats.trim_mean's int(trim n))."""
    return int(trim * n)


@functools.lru_cache(maxsize=256)
def trim_inflation(n: int, trim: float = TRIM) -> float:
    """rho: n x Var(trimmed mean) / sigma^2 for normal data (asymptotic, accurate to 2 %
    from n = 5 on): 1 without trimming, 1.145 at 20 %.  With gamma = g/n and c the normal
    (1 - gamma) quantile, the winsorized variance is (2 Phi(c) - 1) - 2 c phi(c) + 2 gamma c^2
    (in sigma^2) and Var(trimmed mean) = that / ((1 - 2 gamma)^2 n)."""
    gamma = trim_count(n, trim) / n if n > 0 else 0.0
    if gamma == 0:
        return 1.0
    c = float(stats.norm.isf(gamma))
    wvar = (2 * float(stats.norm.cdf(c)) - 1) - 2 * c * float(stats.norm.pdf(c)) \
        + 2 * gamma * c * c
    return wvar / (1 - 2 * gamma) ** 2


def side_stats(y: np.ndarray, trim: float = TRIM) -> tuple[float, float, int]:
    """One side's log values -> (20 % trimmed mean, variance estimate of sigma^2, its degrees
    of freedom h - 1 with h = n - 2g values kept).  The variance is Yuen's: the winsorized sum
    of squares SSD_w (the g lowest values set to the (g+1)-th, the g highest likewise), as
    n SSD_w / (h (h - 1) rho) — without trimming (n < 5) the ordinary sample variance."""
    y = np.sort(np.asarray(y, dtype=float))
    n = len(y)
    g = trim_count(n, trim)
    h = n - 2 * g
    loc = float(y[g:n - g].mean())         # = scipy.stats.trim_mean(y, trim), 30x faster
    if h < 2:
        return loc, math.nan, 0
    w = np.clip(y, y[g], y[n - g - 1])
    ssd = float(np.sum((w - w.mean()) ** 2))
    return loc, n * ssd / (h * (h - 1) * trim_inflation(n, trim)), h - 1


@dataclass(frozen=True)
class Prior:
    """Scaled inverse-chi-square prior of the run-to-run variance of log values."""

    var: float      # s0^2 (nan: no prior)
    df: float       # d0 (0: no prior)
    features: int   # features it was fitted on

    @property
    def usable(self) -> bool:
        return self.df > 0 and math.isfinite(self.var) and self.var > 0


NO_PRIOR = Prior(math.nan, 0.0, 0)


def _trigamma_inverse(y: float) -> float:
    """x > 0 with trigamma(x) = y (trigamma falls from +inf at 0 to 0 at +inf)."""
    def f(x: float) -> float:
        return float(special.polygamma(1, x)) - y

    lo, hi = 1e-8, 1.0
    while f(hi) > 0 and hi < 1e12:
        hi *= 4
    return float(optimize.brentq(f, lo, hi, xtol=1e-10, rtol=1e-10))


def fit_prior(var: np.ndarray, df: np.ndarray) -> Prior:
    """Fit (s0^2, d0) to residual variances `var` with `df` degrees of freedom (limma's
    fitFDist by moments of log var). Features with df <= 0 or a non-finite variance are
    ignored; zero variances are floored at ZERO_VAR_FLOOR x the median."""
    var, df = np.asarray(var, dtype=float), np.asarray(df, dtype=float)
    ok = (df > 0) & np.isfinite(var) & (var >= 0)
    var, df = var[ok], df[ok]
    g = len(var)
    if g < MIN_PRIOR_FEATURES:
        return NO_PRIOR
    med = float(np.median(var))
    if med <= 0:
        return NO_PRIOR
    var = np.maximum(var, ZERO_VAR_FLOOR * med)
    e = np.log(var) - special.digamma(df / 2) + np.log(df / 2)
    emean = float(np.mean(e))
    evar = float(np.var(e, ddof=1) - np.mean(special.polygamma(1, df / 2)))
    cap = float(np.sum(df))
    d0 = 2 * _trigamma_inverse(evar) if evar > 0 else math.inf
    d0 = min(d0, cap)
    s0 = math.exp(emean + float(special.digamma(d0 / 2)) - math.log(d0 / 2))
    return Prior(s0, d0, g)


def moderate(var: np.ndarray, df: np.ndarray, prior: Prior) -> tuple[np.ndarray, np.ndarray]:
    """Posterior variances and their degrees of freedom (no prior: the raw ones)."""
    var, df = np.asarray(var, dtype=float), np.asarray(df, dtype=float)
    if not prior.usable:
        return np.where(df > 0, var, np.nan), df.copy()
    own = np.where(df > 0, var, 0.0)
    return (prior.df * prior.var + df * own) / (prior.df + df), prior.df + df


def treat_pvalue(diff: np.ndarray, se: np.ndarray, tau: np.ndarray,
                 df: np.ndarray) -> np.ndarray:
    """p of H0 |change| <= tau (log scale) for estimates `diff` with standard error `se`."""
    a = (np.abs(diff) - tau) / se
    b = (np.abs(diff) + tau) / se
    return np.minimum(stats.t.sf(a, df) + stats.t.sf(b, df), 1.0)


def bh_adjust(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values)."""
    p = np.asarray(p, dtype=float)
    if p.size == 0:
        return p
    return np.asarray(stats.false_discovery_control(p, method="bh"))


def power(change: float, var: float, df: float, n: int, tau: float, alpha: float) -> float:
    """Probability that a true change `change` (log) is proven beyond `tau` by a comparison
    of n repetitions per side, residual variance `var` (log^2), df degrees of freedom, at a
    per-test level `alpha` (a one-sided test vs. tau; the negligible far tail is ignored).
    The estimate is the trimmed mean: its variance is var x rho(n) / n per side."""
    se = math.sqrt(var * 2.0 * trim_inflation(n) / n)
    crit = float(stats.t.isf(alpha, df))
    return float(stats.nct.sf(crit, df, (abs(change) - tau) / se))


def detectable_change(var: float, df: float, n: int, tau: float, alpha: float,
                      target_power: float = DEFAULT_POWER) -> float:
    """Smallest true change (log) proven beyond `tau` with probability `target_power`."""
    se = math.sqrt(var * 2.0 * trim_inflation(n) / n)
    crit = float(stats.t.isf(alpha, df))

    def f(nc: float) -> float:
        return float(stats.nct.sf(crit, df, nc)) - target_power

    hi = crit + 10.0
    while f(hi) < 0:
        hi *= 2
    nc = float(optimize.brentq(f, -10.0, hi, xtol=1e-6))
    return tau + nc * se


def future_df(prior_df: float, n: int) -> float:
    """Degrees of freedom of a comparison with n repetitions per side and this prior (each
    side contributes h - 1, h the repetitions kept by the trimming)."""
    return prior_df + 2.0 * (n - 2 * trim_count(n) - 1)


def reps_needed(change: float, var: float, prior_df: float, tau: float, alpha: float,
                target_power: float = DEFAULT_POWER) -> int | None:
    """Fewest repetitions per side (MIN_REPS..MAX_REPS) that prove `change` beyond `tau`
    with the target power; None if even MAX_REPS do not (or the change is within tau)."""
    if not (math.isfinite(var) and var > 0) or abs(change) <= tau:
        return None
    return reps_to_decide(abs(change) - tau, var, prior_df, alpha, target_power)


def reps_to_decide(distance: float, var: float, prior_df: float, alpha: float,
                   target_power: float = DEFAULT_POWER) -> int | None:
    """Fewest repetitions per side (MIN_REPS..MAX_REPS) with which a one-sided test at level
    `alpha` rejects, with the target power, when the true change lies `distance` (log, > 0)
    beyond the boundary of its null: |change| - tau for a regression, tau - worse for no
    regression (non-inferiority).  None if even MAX_REPS do not."""
    if not (math.isfinite(var) and var > 0 and distance > 0):
        return None

    def ok(n: int) -> bool:
        return power(distance, var, future_df(prior_df, n), n, 0.0, alpha) >= target_power

    if not ok(MAX_REPS):
        return None
    # A scan, not a bisection: trimming makes power non-monotone where it starts (5 per side
    # keeps 3, 4 keeps 4).
    return next(n for n in range(MIN_REPS, MAX_REPS + 1) if ok(n))


def prior_record(prior: Prior) -> dict:
    """A prior for JSON output (null where there is no value)."""
    def num(v: float) -> float | None:
        return v if math.isfinite(v) else None

    return {"var": num(prior.var), "df": prior.df, "features": prior.features,
            "noise_cv": num(log_cv(prior.var))}


def log_cv(var: float) -> float:
    """Coefficient of variation of a log-normal variable whose log has variance `var`."""
    return math.sqrt(math.expm1(var)) if math.isfinite(var) and var >= 0 else math.nan


REGRESSION = "regression"
IMPROVEMENT = "improvement"
SUSPECTED_REGRESSION = "suspected regression"
SUSPECTED_IMPROVEMENT = "suspected improvement"
NO_CHANGE = "no change"
NOT_COMPARABLE = "not comparable"
# NEW failed (status=error) at a point BASE measured without failure: no statistics needed.
FAILED = "failed"
VERDICTS = (REGRESSION, IMPROVEMENT, SUSPECTED_REGRESSION, SUSPECTED_IMPROVEMENT, NO_CHANGE,
            NOT_COMPARABLE, FAILED)
# The gate's three answers per comparison (and for the whole run): regression proven, no
# regression beyond the threshold proven (non-inferiority), or neither.
GATE_REGRESSION = "regression"
GATE_NO_REGRESSION = "no regression"
GATE_INCONCLUSIVE = "inconclusive"
GATES = (GATE_REGRESSION, GATE_NO_REGRESSION, GATE_INCONCLUSIVE)


@dataclass
class Feature:
    """One (point, metric) of a comparison: the repetitions' values on each side."""

    metric: str
    base: np.ndarray
    new: np.ndarray
    higher_is_worse: bool
    rel: float          # relative threshold (fraction)
    abs: float = 0.0    # absolute threshold, in the metric's unit


def _pct(tau: float) -> str:
    return f"{math.expm1(tau) * 100:.3g} %"


@dataclass
class Judgement:
    """What the method concluded, one entry per feature, plus the fitted priors."""

    rows: list[dict]
    priors: dict[str, Prior]
    family: int          # features tested together (the BH family)
    alpha: float


def _classify(f: Feature) -> str | None:
    """None when the feature can be compared on the log scale, else why not."""
    vals = np.concatenate([f.base, f.new])
    if np.all(np.isfinite(vals)) and np.all(vals > 0):
        return None
    if np.all(np.isfinite(vals)) and np.all(vals == vals[0]):
        return "identical"
    side = [name for name, v in (("BASE", f.base), ("NEW", f.new))
            if not (np.all(np.isfinite(v)) and np.all(v > 0))]
    return (f"a value <= 0 or infinite in {' and '.join(side)}: no relative (log-scale) "
            "comparison is possible")


@dataclass
class _Work:
    """Per-feature arrays of one comparison (nan where not applicable)."""

    diff: np.ndarray      # trimmed mean ln NEW - trimmed mean ln BASE
    var: np.ndarray       # pooled residual variance of the logs (Yuen's, on sigma^2 scale)
    dfr: np.ndarray       # its degrees of freedom
    sef: np.ndarray       # se^2 / var: rho_base / n_base + rho_new / n_new
    post: np.ndarray      # moderated variance
    post_df: np.ndarray   # its degrees of freedom
    tau: np.ndarray       # threshold, log scale
    se: np.ndarray        # standard error of diff


def _estimate(features: list[Feature], ok_idx: list[int], rows: list[dict],
              trim: float) -> _Work:
    """Step 1: differences of trimmed mean logs, pooled residual variances, thresholds."""
    k = len(features)
    w = _Work(diff=np.full(k, math.nan), var=np.full(k, math.nan), dfr=np.zeros(k),
              sef=np.full(k, math.nan), post=np.full(k, math.nan), post_df=np.zeros(k),
              tau=np.full(k, math.nan), se=np.full(k, math.nan))
    for i in ok_idx:
        f = features[i]
        lb, vb, db = side_stats(np.log(f.base), trim)
        ln, vn, dn = side_stats(np.log(f.new), trim)
        w.diff[i] = ln - lb
        w.dfr[i] = db + dn
        if w.dfr[i] > 0:
            w.var[i] = (db * (vb if db else 0.0) + dn * (vn if dn else 0.0)) / w.dfr[i]
        w.sef[i] = (trim_inflation(len(f.base), trim) / len(f.base)
                    + trim_inflation(len(f.new), trim) / len(f.new))
        base = float(np.exp(lb))
        w.tau[i] = max(math.log1p(f.rel), math.log1p(f.abs / base))
        rows[i].update(base=base, new=float(np.exp(ln)), ratio=float(np.exp(w.diff[i])),
                       threshold=math.expm1(w.tau[i]))
    return w


def _moderate_by_metric(features: list[Feature], ok_idx: list[int], w: _Work,
                        rows: list[dict]) -> dict[str, Prior]:
    """Step 2: one prior per metric; moderated variances and standard errors."""
    priors: dict[str, Prior] = {}
    for metric in sorted({features[i].metric for i in ok_idx}):
        idx = np.array([i for i in ok_idx if features[i].metric == metric])
        priors[metric] = fit_prior(w.var[idx], w.dfr[idx])
        w.post[idx], w.post_df[idx] = moderate(w.var[idx], w.dfr[idx], priors[metric])
    for i in ok_idx:
        if math.isfinite(w.post[i]):
            w.se[i] = math.sqrt(w.post[i] * w.sef[i])
            rows[i]["log_sd"] = math.sqrt(w.post[i])
        rows[i]["df"] = float(w.post_df[i])
    return priors


def noninferiority_pvalue(worse: np.ndarray, se: np.ndarray, tau: np.ndarray,
                          df: np.ndarray) -> np.ndarray:
    """p of H0 'worse by tau or more' (log scale; `worse` is the estimate signed so that
    positive is worse): a one-sided test whose rejection proves 'not worse than tau'."""
    return np.asarray(stats.t.cdf((worse - tau) / se, df))


def _test(t_idx: np.ndarray, w: _Work, worse: np.ndarray, alpha: float,
          rows: list[dict]) -> None:
    """Steps 3-4: TREAT p-values, non-inferiority p-values, Benjamini-Hochberg q-values of
    each family, FCR-adjusted intervals."""
    p = treat_pvalue(w.diff[t_idx], w.se[t_idx], w.tau[t_idx], w.post_df[t_idx])
    q = bh_adjust(p)
    p_ni = noninferiority_pvalue(worse[t_idx], w.se[t_idx], w.tau[t_idx], w.post_df[t_idx])
    q_ni = bh_adjust(p_ni)
    n_claims = int(np.sum(q <= alpha))
    side_alpha = max(n_claims, 1) * alpha / (2 * max(len(t_idx), 1))
    for k, i in enumerate(t_idx):
        half = float(stats.t.isf(side_alpha, w.post_df[i])) * w.se[i]
        rows[i].update(p_value=float(p[k]), q_value=float(q[k]),
                       p_noninferior=float(p_ni[k]), q_noninferior=float(q_ni[k]),
                       ci_low=float(np.exp(w.diff[i] - half)),
                       ci_high=float(np.exp(w.diff[i] + half)))


def _unproven(f: Feature, i: int, w: _Work, q: float | None, prior: Prior,
              per_test: float, needed: bool, target_power: float,
              min_reps: int) -> tuple[int | None, str]:
    """For a suspected change: the repetitions per side that would prove it, and why it is
    not proven (q is None when the feature could not be tested)."""
    n_need, how = None, ""
    if needed and math.isfinite(w.post[i]):
        n_need = reps_needed(w.diff[i], w.post[i], prior.df, w.tau[i], per_test, target_power)
        how = (f"; ≈{n_need} repetitions per side would prove a change this large"
               if n_need is not None else f"; more than {MAX_REPS} repetitions per side needed")
    elif needed:
        n_need = max(min_reps, len(f.base), len(f.new)) if min(
            len(f.base), len(f.new)) < min_reps else None
        how = "; run-to-run noise unknown" + (
            f": at least {n_need} repetitions per side needed" if n_need else "")
    if min(len(f.base), len(f.new)) < min_reps:
        why = (f"insufficient repetitions ({len(f.base)}/{len(f.new)}): a proof needs "
               f">= {min_reps} per side")
    elif q is None:
        why = "no run-to-run variation observed: noise unknown"
    else:
        why = f"not proven (q = {q:.2g})"
    return n_need, why + how


def _undecided_within(f: Feature, i: int, w: _Work, worse: float, prior: Prior,
                      per_test: float, needed: bool, target_power: float,
                      min_reps: int) -> int | None:
    """Repetitions per side that would prove 'no regression' at this estimate (the change
    within the threshold, non-inferiority not yet proven); None when unknown."""
    if not needed:
        return None
    if math.isfinite(w.post[i]):
        return reps_to_decide(w.tau[i] - worse, w.post[i], prior.df, per_test, target_power)
    if min(len(f.base), len(f.new)) < min_reps:
        return max(min_reps, len(f.base), len(f.new))
    return None


def _invalid_row(f: Feature, why: str, min_reps: int) -> dict:
    """The verdict of a feature that has no logarithm (or identical values)."""
    if why == "identical":
        v = float(f.base[0])
        enough = min(len(f.base), len(f.new)) >= min_reps
        return {"base": v, "new": v, "ratio": 1.0 if v != 0 else math.nan,
                "verdict": NO_CHANGE, "evidence": "identical values on both sides",
                "gate": GATE_NO_REGRESSION if enough else GATE_INCONCLUSIVE}
    return {"base": math.nan, "new": math.nan, "ratio": math.nan, "verdict": NOT_COMPARABLE,
            "evidence": why, "gate": NOT_COMPARABLE}


def _gate(r: dict, i: int, tested: set[int], alpha: float) -> str:
    """A tested comparison's gate answer from its verdict and its non-inferiority q."""
    if r["verdict"] == REGRESSION:
        return GATE_REGRESSION
    if i in tested and r["q_noninferior"] <= alpha:
        return GATE_NO_REGRESSION
    return GATE_INCONCLUSIVE


def judge(features: list[Feature], alpha: float, needed: bool = True,
          target_power: float = DEFAULT_POWER, min_reps: int = MIN_REPS,
          trim: float = TRIM) -> Judgement:
    """Verdicts for all features of one comparison (the steps of the module docstring).

    `needed` computes, for undecided comparisons, the repetitions per side that would decide
    them (a power calculation; skipped by the simulations for speed). Features with fewer
    than `min_reps` repetitions on a side still feed the prior but are never proven (neither
    a change nor its absence). `trim` = 0 is the method before issue 22 (plain means; the
    calibration shows it beside the trimmed one)."""
    rows: list[dict] = []
    ok_idx: list[int] = []
    for i, f in enumerate(features):
        rows.append({"n_base": len(f.base), "n_new": len(f.new), "p_value": math.nan,
                     "q_value": math.nan, "p_noninferior": math.nan,
                     "q_noninferior": math.nan, "ci_low": math.nan, "ci_high": math.nan,
                     "log_sd": math.nan, "df": math.nan, "threshold": math.nan,
                     "reps_needed": None})
        why = _classify(f)
        if why is None:
            ok_idx.append(i)
        else:
            rows[i].update(_invalid_row(f, why, min_reps))
    w = _estimate(features, ok_idx, rows, trim)
    priors = _moderate_by_metric(features, ok_idx, w, rows)
    worse = np.array([w.diff[i] if f.higher_is_worse else -w.diff[i]
                      for i, f in enumerate(features)])
    t_idx = np.array([i for i in ok_idx
                      if min(len(features[i].base), len(features[i].new)) >= min_reps
                      and w.post_df[i] > 0 and np.isfinite(w.se[i]) and w.se[i] > 0],
                     dtype=int)
    _test(t_idx, w, worse, alpha, rows)
    tested = set(t_idx.tolist())
    per_test = alpha / max(len(ok_idx), 1)
    for i in ok_idx:
        f, r = features[i], rows[i]
        prior = priors.get(f.metric, NO_PRIOR)
        if abs(w.diff[i]) <= w.tau[i]:
            r.update(verdict=NO_CHANGE, evidence=f"within ±{_pct(w.tau[i])}")
        elif i in tested and r["q_value"] <= alpha:
            r.update(verdict=REGRESSION if worse[i] > 0 else IMPROVEMENT,
                     evidence=f"proven beyond ±{_pct(w.tau[i])} (q = {r['q_value']:.2g})")
        else:
            n_need, evidence = _unproven(f, i, w, r["q_value"] if i in tested else None,
                                         prior, per_test, needed, target_power, min_reps)
            r.update(verdict=SUSPECTED_REGRESSION if worse[i] > 0 else SUSPECTED_IMPROVEMENT,
                     reps_needed=n_need, evidence=evidence)
        r["gate"] = _gate(r, i, tested, alpha)
        if r["gate"] == GATE_INCONCLUSIVE and worse[i] <= w.tau[i]:
            n_need = _undecided_within(f, i, w, worse[i], prior, per_test, needed,
                                       target_power, min_reps)
            r["reps_needed"] = n_need
            if needed:
                r["evidence"] += ("; no regression not proven" + (
                    f" (q = {r['q_noninferior']:.2g})" if i in tested else "")
                    + (f"; ≈{n_need} repetitions per side would prove it"
                       if n_need is not None else
                       f"; more than {MAX_REPS} repetitions per side needed"
                       if math.isfinite(w.post[i]) else ""))
    return Judgement(rows, priors, len(t_idx), alpha)
