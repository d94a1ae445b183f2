"""`pairbench compare BASE NEW`: per point and metric, both values, the ratio and a
verdict whose error rate over the whole comparison is controlled, and the gate's answer:
exit 1 = regression proven (with --strict also a suspected one), 0 = no regression beyond
the threshold proven everywhere, 3 = inconclusive (neither; 0 with --allow-inconclusive),
2 = bad input.

A point is (layer, test, variant, msg_size_bytes, pairs) on the aggregate row (pair_id=all).
Each repetition gives one value per point and metric; base and new are geometric means over
repetitions and ratio = new / base. The verdicts come from pairbench.analysis.verdict: a moderated t
test on log values against the threshold, Benjamini-Hochberg over every comparison made.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from pairbench.analysis.flags import has_flag
from pairbench.analysis.frames import METRICS, POINT_KEY, aggregate_rows, test_label
from pairbench.analysis.verdict import (
    FAILED,
    GATE_REGRESSION,
    NOT_COMPARABLE,
    Feature,
    judge,
    log_cv,
    prior_record,
)
from pairbench.contract.columns import BLOCK_TIMED
from pairbench.contract.sizes import size_label
from pairbench.errors import UsageError
from pairbench.io import tomlschema
from pairbench.io.tomlschema import ListOf, Num, Str, Table, TablesByName

DEFAULT_METRICS = ["lat_us_p50", "lat_us_p99", "bw_gbit_s", "msg_rate_per_s",
                   "worst_lat_us_p50", "min_pair_bw_gbit_s"]
DEFAULT_RELATIVE = {"lat_us_p99": 0.15, "lat_us_p999": 0.25, "lat_us_max": 0.5}
DEFAULT_REL = 0.05
# The victim probe's rows (scope=probe, pairbench-verbs --probe) are compared too, as a point
# of their own (variant 'probe:TEST' after the point's own), on these by default: a firmware
# that lets the victim's latency inflate more under the same incast is a regression the
# headline rows cannot show (docs/compare-and-accept.md).
PROBE_METRICS = ["lat_inflation_p50", "lat_inflation_p99"]
# A point timed as blocks (pairbench-mpi --timing block, flag block_timed) has one latency
# statistic, the mean: by default it is compared on that instead of the latency percentiles
# (docs/mpi.md, Block timing); what else it measured (an imported IMB or nccl-tests
# bandwidth, docs/import.md) is compared as usual.
BLOCK_METRICS = ["lat_us_mean"]


@dataclass
class Thresholds:
    relative: dict[str, float] = field(default_factory=dict)
    absolute: dict[str, float] = field(default_factory=dict)
    default_relative: float = DEFAULT_REL
    default_absolute: float = 0.0
    confidence: float = 0.95
    metrics: list[str] | None = None

    def rel(self, metric: str) -> float:
        return self.relative.get(metric, DEFAULT_RELATIVE.get(metric, self.default_relative))

    def abs(self, metric: str) -> float:
        return self.absolute.get(metric, self.default_absolute)


def _number(value: object, where: str) -> float:
    """A finite number >= 0: the same rule as in the thresholds file."""
    return Num()(value, where)


def parse_fraction(text: str, where: str) -> float:
    t = text.strip()
    try:
        v = float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
    except ValueError:
        raise UsageError(f"{where}: {text!r} is not a number (e.g. 0.1 or 10%)") from None
    return _number(v, where)


def _metric_name(name: str, where: str) -> None:
    if name not in METRICS:
        raise UsageError(f"{where}: unknown metric {name!r} (one of {', '.join(METRICS)})")


class _MetricName(Str):
    def __call__(self, value: object, where: str) -> str:
        name = super().__call__(value, where)
        _metric_name(name, where.partition(": ")[0])
        return name


# The thresholds file's schema (pairbench.io.tomlschema; examples/compare-thresholds.toml).
@dataclass(frozen=True)
class _DefaultThresholds:
    relative: float | None = tomlschema.key(Num(), None)
    absolute: float | None = tomlschema.key(Num(), None)
    confidence: float | None = tomlschema.key(Num(open_unit=True), None)


@dataclass(frozen=True)
class _MetricThreshold:
    relative: float | None = tomlschema.key(Num(), None)
    absolute: float | None = tomlschema.key(Num(), None)


@dataclass(frozen=True)
class ThresholdsFile:
    default: _DefaultThresholds = tomlschema.key(Table(_DefaultThresholds),
                                                 factory=_DefaultThresholds)
    metric: dict[str, _MetricThreshold] = tomlschema.key(
        TablesByName(_MetricThreshold, _metric_name), factory=dict)
    metrics: list[str] | None = tomlschema.key(ListOf(_MetricName(), strict=True), None)


def load_thresholds(path: Path, th: Thresholds) -> None:
    """[default] relative/absolute/confidence, [metric.NAME] relative/absolute, metrics=[...]
    (schema ThresholdsFile), applied onto th."""
    f = tomlschema.load(ThresholdsFile, path)
    if f.default.relative is not None:
        th.default_relative = f.default.relative
    if f.default.absolute is not None:
        th.default_absolute = f.default.absolute
    if f.default.confidence is not None:
        th.confidence = f.default.confidence
    for name, m in f.metric.items():
        if m.relative is not None:
            th.relative[name] = m.relative
        if m.absolute is not None:
            th.absolute[name] = m.absolute
    if f.metrics is not None:
        th.metrics = f.metrics


def _check_metrics(names: list[str], where: str) -> list[str]:
    for m in names:
        if m not in METRICS:
            raise UsageError(f"{where}: unknown metric {m!r} (one of {', '.join(METRICS)})")
    return names


def point_order(key: tuple) -> tuple:
    """A point key's place in the output: layer, test, variant, pattern, buffers, qps, then
    pairs and size.  (The key once had 5 fields and was sorted by positions; with 8, sizes
    and pairs were left to set order, which differs between processes.)"""
    d = dict(zip(POINT_KEY, key, strict=True))
    return (*(str(d[k]) for k in ("layer", "test", "variant", "pattern", "buffers", "qps")),
            int(d["pairs"]), int(d["msg_size_bytes"]))


def point_features(base: pd.DataFrame, new: pd.DataFrame, th: Thresholds,
                   metrics: list[str] | None = None) -> tuple[list[tuple], list[Feature]]:
    """The (point key, Feature) pairs of a comparison: every metric with values on both
    sides of every point present in both runs (aggregate rows, status=ok)."""
    ab, an = aggregate_rows(base), aggregate_rows(new)
    for df in (ab, an):
        df["variant"] = df["variant"].fillna("")
    keys_b = set(map(tuple, ab[POINT_KEY].itertuples(index=False)))
    keys_n = set(map(tuple, an[POINT_KEY].itertuples(index=False)))
    common = keys_b & keys_n
    if not common:
        raise UsageError("the runs have no common points (layer, test, variant, size, pairs) "
                         "with status=ok")
    wanted = metrics or th.metrics or DEFAULT_METRICS
    gb = dict(list(ab.groupby(POINT_KEY)))
    gn = dict(list(an.groupby(POINT_KEY)))
    keys, feats = [], []
    for key in sorted(common, key=point_order):
        b, n = gb[key], gn[key]
        tb, tn = timing_of(b), timing_of(n)
        if tb != tn:
            continue  # a 'not comparable' row from _timing_rows says why
        here = wanted
        if tb == "block" and not (metrics or th.metrics):
            here = BLOCK_METRICS + [m for m in wanted if METRICS[m].unit != "µs"]
        for metric in here:
            if metric not in b.columns or metric not in n.columns:
                continue
            vb = b[metric].dropna().to_numpy(dtype=float)
            vn = n[metric].dropna().to_numpy(dtype=float)
            if len(vb) == 0 or len(vn) == 0:
                continue
            keys.append(key)
            feats.append(Feature(metric, vb, vn, METRICS[metric].higher_is_worse,
                                 th.rel(metric), th.abs(metric)))
    pk, pf = _probe_features(base, new, th, metrics)
    keys += pk
    feats += pf
    if not feats:
        block = " (block-timed points: lat_us_mean)" if any(
            timing_of(gb[k]) == "block" for k in common) else ""
        raise UsageError(f"the common points have no values for metrics {', '.join(wanted)}"
                         f"{block}")
    return keys, feats


def probe_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The victim probe's ok rows, keyed as points of their own: variant 'probe:TEST' after
    the point's own variant ('+' between), so compare lists them beside their point."""
    if "scope" not in df.columns or "probe_test" not in df.columns:
        return df.iloc[0:0]
    pr = df[(df["scope"] == "probe") & (df["status"] == "ok")].copy()
    if pr.empty:
        return pr
    own = pr["variant"].fillna("").astype(str)
    tag = "probe:" + pr["probe_test"].fillna("").astype(str)
    pr["variant"] = (own + "+").where(own != "", "") + tag
    return pr


def _probe_features(base: pd.DataFrame, new: pd.DataFrame, th: Thresholds,
                    metrics: list[str] | None) -> tuple[list[tuple], list[Feature]]:
    """Features of the probe rows present in both runs: PROBE_METRICS by default, or the
    named metrics that are inflation metrics."""
    named = metrics or th.metrics
    wanted = [m for m in named if m.startswith("lat_inflation_")] if named else PROBE_METRICS
    pb, pn = probe_rows(base), probe_rows(new)
    if not wanted or pb.empty or pn.empty:
        return [], []
    for df in (pb, pn):
        df["variant"] = df["variant"].fillna("")
    gb = dict(list(pb.groupby(POINT_KEY)))
    gn = dict(list(pn.groupby(POINT_KEY)))
    keys, feats = [], []
    for key in sorted(gb.keys() & gn.keys(), key=point_order):
        for metric in wanted:
            if metric not in gb[key].columns or metric not in gn[key].columns:
                continue
            vb = gb[key][metric].dropna().to_numpy(dtype=float)
            vn = gn[key][metric].dropna().to_numpy(dtype=float)
            if len(vb) and len(vn):
                keys.append(key)
                feats.append(Feature(metric, vb, vn, METRICS[metric].higher_is_worse,
                                     th.rel(metric), th.abs(metric)))
    return keys, feats


def timing_of(rows: pd.DataFrame) -> str:
    """How a point's rows were timed: 'block' (every row flagged block_timed), 'iteration'
    (none) or 'mixed' (a run that should not exist; never compared)."""
    block = has_flag(rows, BLOCK_TIMED) if "flags" in rows.columns else pd.Series(False)
    if len(rows) and bool(block.all()):
        return "block"
    return "mixed" if bool(block.any()) else "iteration"


TIMING_NOTE = ("timing methods differ (base {b}, new {n}): a block's mean and per-iteration "
               "samples are different measurements; rerun with the same --timing "
               "(docs/mpi.md, Block timing)")


LAYOUT_NOTE = ("buffer layouts differ (base {b}, new {n}): a ratio would measure the layout, "
               "not a change; rerun with the same --buffers (docs/mpi.md, Buffer layouts)")


def layout_mismatches(base: pd.DataFrame, new: pd.DataFrame) -> list[tuple[tuple, str, str]]:
    """Points of both runs that differ only in their buffer layout (issue 16): (the point key
    with buffers blank, base's layouts, new's layouts) where the two sides share no layout.
    Their POINT_KEYs never match, so without this they would silently not be compared."""
    other = [k for k in POINT_KEY if k != "buffers"]

    def layouts(df: pd.DataFrame) -> dict[tuple, set[str]]:
        agg = _keyed(df)[POINT_KEY]
        out: dict[tuple, set[str]] = {}
        for rec in agg.itertuples(index=False):
            d = dict(zip(POINT_KEY, rec, strict=True))
            out.setdefault(tuple(d[k] for k in other), set()).add(d["buffers"])
        return out

    lb, ln = layouts(base), layouts(new)
    found = []
    for key in sorted(lb.keys() & ln.keys()):
        if lb[key].isdisjoint(ln[key]):
            full = dict(zip(other, key, strict=True))
            full["buffers"] = ""
            found.append((tuple(full[k] for k in POINT_KEY), "+".join(sorted(lb[key])) or "none",
                          "+".join(sorted(ln[key])) or "none"))
    return found


WINDOW_METHOD = "window_method"   # issue 21: window | target | count; absent in older runs


def _window_methods(agg: pd.DataFrame) -> tuple[dict[tuple, set[str]], bool]:
    """Per (layer, test, variant): the window methods of its aggregate rows, and whether any
    was assumed ('count': rows before the column existed timed a fixed message count)."""
    has = WINDOW_METHOD in agg.columns
    col = agg[WINDOW_METHOD].fillna("") if has else pd.Series("", index=agg.index)
    assumed = bool((col == "").any())
    out: dict[tuple, set[str]] = {}
    for key, m in zip(agg[["layer", "test", "variant"]].itertuples(index=False), col,
                      strict=True):
        out.setdefault(tuple(key), set()).add(m or "count")
    return out, assumed


def window_method_notes(base: pd.DataFrame, new: pd.DataFrame) -> list[str]:
    """A warning per test whose two runs used different window methods (issue 21: one
    common timed window, a latency target time, or a fixed count): the ratio then
    includes the change of method.  Compared all the same."""
    (mb, ab), (mn, an) = _window_methods(_keyed(base)), _window_methods(_keyed(new))
    notes = []
    for key in sorted(mb.keys() & mn.keys()):
        if mb[key] == mn[key]:
            continue
        layer, test, variant = key
        side = {"base": ("+".join(sorted(mb[key])), ab), "new": ("+".join(sorted(mn[key])), an)}
        said = ", ".join(f"{k} {m}{' (assumed: no window_method column)' if a else ''}"
                         for k, (m, a) in side.items())
        notes.append(f"{layer} {test}{' ' + variant if variant else ''}: window methods "
                     f"differ ({said}): the ratios include the change of method, not only "
                     "of the system (docs/methodology.md)")
    return notes


def _keyed(df: pd.DataFrame, ok_only: bool = True) -> pd.DataFrame:
    """The aggregate rows with the point key's text columns blank instead of missing."""
    agg = aggregate_rows(df, ok_only)
    for col in POINT_KEY:
        if agg[col].dtype == object:
            agg[col] = agg[col].fillna("")
    return agg


def _not_comparable(point: dict, metric: str, vb: pd.Series, vn: pd.Series,
                    note: str, verdict: str = NOT_COMPARABLE,
                    gate: str = NOT_COMPARABLE) -> dict:
    """A result row that is reported but not tested: both medians, no ratio, the reason."""
    return {**point, "metric": metric, "unit": METRICS[metric].unit,
            "base": float(vb.median()), "new": float(vn.median()), "ratio": math.nan,
            "change_pct": math.nan, "n_base": len(vb), "n_new": len(vn), "ci_low": math.nan,
            "ci_high": math.nan, "rel_threshold": math.nan, "abs_threshold": math.nan,
            "threshold": math.nan, "noise_cv": math.nan, "df": math.nan, "p_value": math.nan,
            "q_value": math.nan, "p_noninferior": math.nan, "q_noninferior": math.nan,
            "verdict": verdict, "gate": gate, "evidence": note,
            "reps_needed": 0, "note": note}


FAILED_NOTE = "NEW failed in {k} of {n} repetition(s), BASE in none of {nb}: {error}"


def _failed_rows(ab: pd.DataFrame, an: pd.DataFrame, wanted: list[str]) -> list[dict]:
    """A 'failed' row per metric of every point whose NEW headline rows include a failure
    (status=error) while BASE measured it in every repetition: the new run could not measure
    what the base did.  The statistics compare ok rows only and would not see it; the gate
    counts it as a regression.  The BASE median and NEW's (ok repetitions, if any) are kept.
    ab, an: both runs' aggregate rows, failed ones included (_keyed(df, ok_only=False))."""
    gb = dict(list(ab.groupby(POINT_KEY)))
    gn = dict(list(an.groupby(POINT_KEY)))
    rows = []
    for key in sorted(gb.keys() & gn.keys(), key=point_order):
        b, n = gb[key], gn[key]
        errs = n[n["status"] != "ok"]
        if errs.empty or (b["status"] != "ok").any():
            continue  # failed in BASE too: point_notes says so
        reason = str(errs["error"].fillna("").iloc[0]) or "no reason given"
        note = FAILED_NOTE.format(k=len(errs), n=len(n), nb=len(b), error=reason)
        ok = n[n["status"] == "ok"]
        for metric in wanted:
            if metric not in b.columns:
                continue
            vb = b[metric].dropna()
            if vb.empty:
                continue
            vn = ok[metric].dropna() if metric in ok.columns else pd.Series(dtype=float)
            rows.append(_not_comparable(dict(zip(POINT_KEY, key, strict=True)), metric, vb, vn,
                                        note, verdict=FAILED, gate=GATE_REGRESSION))
    return rows


def point_notes(ab: pd.DataFrame, an: pd.DataFrame) -> list[str]:
    """Warnings about points the comparison judges on less than both runs measured: a point
    in one run only, or one that failed (status=error) in BASE, alone or in both runs.  A point
    NEW failed and BASE measured in every repetition is a 'failed' row instead (_failed_rows).
    Points that differ only in their buffer layout are said by the layout rows.  ab, an: as
    for _failed_rows."""
    nobuf = [i for i, k in enumerate(POINT_KEY) if k != "buffers"]

    def keys(df: pd.DataFrame) -> set[tuple]:
        return {tuple(k) for k in df[POINT_KEY].itertuples(index=False)}

    kb, kn = keys(ab), keys(an)
    fb, fn = keys(ab[ab["status"] != "ok"]), keys(an[an["status"] != "ok"])
    notes = []
    for one, mine, theirs in (("BASE", kb, kn), ("NEW", kn, kb)):
        loose = {tuple(k[i] for i in nobuf) for k in theirs}
        only = [k for k in mine - theirs if tuple(k[i] for i in nobuf) not in loose]
        notes += _listed(only, f"only in {one}, not compared")
    common = kb & kn
    notes += _listed(common & fb - fn, "failed in BASE (some or all repetitions), not in NEW: "
                     "compared on the repetitions that measured it, if both runs have one")
    notes += _listed(common & fb & fn, "failed in both runs: compared on the repetitions that "
                     "measured it, if both runs have one")
    return notes


def _listed(keys: set[tuple] | list[tuple], what: str) -> list[str]:
    if not keys:
        return []
    ordered = sorted(keys, key=point_order)
    shown = ", ".join(_point_text(k) for k in ordered[:5])
    more = f" and {len(ordered) - 5} more" if len(ordered) > 5 else ""
    return [f"{len(ordered)} point(s) {what}: {shown}{more}"]


def _point_text(key: tuple) -> str:
    d = dict(zip(POINT_KEY, key, strict=True))
    variant = f" {d['variant']}" if d.get("variant") else ""
    return (f"{d['layer']} {d['test']}{variant} at {size_label(int(d['msg_size_bytes']))}, "
            f"{int(d['pairs'])} pair(s)")


def _layout_rows(base: pd.DataFrame, new: pd.DataFrame, wanted: list[str]) -> list[dict]:
    """A not-comparable row per metric of every point that differs only by layout."""
    ab, an = _keyed(base), _keyed(new)
    rows = []
    for key, lb, ln in layout_mismatches(base, new):
        d = dict(zip(POINT_KEY, key, strict=True))

        def at(df: pd.DataFrame, d: dict = d) -> pd.DataFrame:
            mask = np.ones(len(df), dtype=bool)
            for k in POINT_KEY:
                if k != "buffers":
                    mask &= (df[k] == d[k]).to_numpy()
            return df[mask]

        b, n = at(ab), at(an)
        for metric in wanted:
            if metric not in b.columns or metric not in n.columns:
                continue
            vb, vn = b[metric].dropna(), n[metric].dropna()
            if vb.empty or vn.empty:
                continue
            note = LAYOUT_NOTE.format(b=lb, n=ln)
            rows.append(_not_comparable({**d, "buffers": f"{lb}|{ln}"}, metric, vb, vn, note))
    return rows


def _timing_rows(base: pd.DataFrame, new: pd.DataFrame, wanted: list[str]) -> list[dict]:
    """A not-comparable row per metric with values on both sides of every common point
    whose two runs timed it differently (block vs per-iteration, or mixed)."""
    ab, an = _keyed(base), _keyed(new)
    gb = dict(list(ab.groupby(POINT_KEY)))
    gn = dict(list(an.groupby(POINT_KEY)))
    rows = []
    for key in sorted(gb.keys() & gn.keys(), key=point_order):
        b, n = gb[key], gn[key]
        tb, tn = timing_of(b), timing_of(n)
        if tb == tn:
            continue
        note = TIMING_NOTE.format(b=tb, n=tn)
        for metric in dict.fromkeys([*wanted, *BLOCK_METRICS]):
            if metric not in b.columns or metric not in n.columns:
                continue
            vb, vn = b[metric].dropna(), n[metric].dropna()
            if vb.empty or vn.empty:
                continue
            rows.append(_not_comparable(dict(zip(POINT_KEY, key, strict=True)), metric, vb, vn,
                                        note))
    return rows


def compare_frames(base: pd.DataFrame, new: pd.DataFrame, th: Thresholds,
                   metrics: list[str] | None = None) -> pd.DataFrame:
    """One row per (point, metric) present in both runs, with the verdict of the whole
    comparison (pairbench.analysis.verdict); the fitted priors are in `.attrs["priors"]`.  Points
    that differ only in their buffer layout get a row each with verdict 'not comparable'
    and the reason (they are left out of the tested family), and so do points the two
    runs timed differently (--timing block vs per iteration).  Block-timed points are
    compared on lat_us_mean unless metrics are named."""
    wanted = metrics or th.metrics or DEFAULT_METRICS
    every_b, every_n = _keyed(base, ok_only=False), _keyed(new, ok_only=False)
    # Reported, not tested: layouts or timing methods that differ, points NEW failed.
    untested = (_layout_rows(base, new, wanted) + _timing_rows(base, new, wanted)
                + _failed_rows(every_b, every_n, wanted))
    try:
        keys, feats = point_features(base, new, th, metrics)
    except UsageError:
        if not untested:
            raise
        keys, feats = [], []
    res = judge(feats, 1.0 - th.confidence) if feats else None
    rows = []
    for key, f, r in zip(keys, feats, res.rows if res else [], strict=True):
        m = METRICS[f.metric]
        ratio = r["ratio"]
        rows.append({**dict(zip(POINT_KEY, key, strict=True)), "metric": f.metric,
                     "unit": m.unit, "base": r["base"], "new": r["new"], "ratio": ratio,
                     "change_pct": 100.0 * (ratio - 1) if math.isfinite(ratio) else math.nan,
                     "n_base": r["n_base"], "n_new": r["n_new"],
                     "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                     "rel_threshold": f.rel, "abs_threshold": f.abs,
                     "threshold": r["threshold"], "noise_cv": log_cv(r["log_sd"] ** 2),
                     "df": r["df"], "p_value": r["p_value"], "q_value": r["q_value"],
                     "p_noninferior": r["p_noninferior"], "q_noninferior": r["q_noninferior"],
                     "verdict": r["verdict"], "gate": r["gate"], "evidence": r["evidence"],
                     "reps_needed": r["reps_needed"], "note": r["evidence"]})
    out = pd.DataFrame(rows + untested)
    out["msg_size_bytes"] = out["msg_size_bytes"].astype(int)
    out["pairs"] = out["pairs"].astype(int)
    out.attrs["priors"] = {k: prior_record(v) for k, v in res.priors.items()} if res else {}
    out.attrs["family"] = res.family if res else 0
    out.attrs["fdr"] = res.alpha if res else 1.0 - th.confidence
    out.attrs["layout_mismatches"] = sorted({(r["test"], r["variant"], r["msg_size_bytes"],
                                              r["pairs"], r["buffers"]) for r in untested
                                             if "|" in str(r["buffers"])})
    out.attrs["point_notes"] = point_notes(every_b, every_n)
    out.attrs["timing_mismatches"] = sorted({(r["test"], r["variant"], r["msg_size_bytes"],
                                              r["pairs"], r["note"]) for r in untested
                                             if r["note"].startswith("timing")})
    return out


def add_threshold_arguments(p: argparse.ArgumentParser) -> None:
    """--metrics, --thresholds, --rel, --abs, --confidence (compare and noise)."""
    p.add_argument("--metrics", default=None,
                   help=f"comma-separated (default {','.join(DEFAULT_METRICS)}, those present)")
    p.add_argument("--thresholds", default=None, metavar="TOML",
                   help="threshold file (see examples/compare-thresholds.toml)")
    p.add_argument("--rel", action="append", default=[], metavar="METRIC=FRACTION",
                   help="relative threshold, e.g. lat_us_p50=10%% or all=0.05")
    p.add_argument("--abs", action="append", default=[], metavar="METRIC=VALUE",
                   help="absolute threshold in the metric's unit, e.g. lat_us_p50=0.1")
    p.add_argument("--confidence", type=float, default=None,
                   help="1 - false-discovery rate over the whole comparison (default 0.95)")


def thresholds_from_args(ns: argparse.Namespace) -> Thresholds:
    th = Thresholds()
    if ns.thresholds:
        load_thresholds(Path(ns.thresholds), th)
    for opt, target in (("--rel", "relative"), ("--abs", "absolute")):
        for item in getattr(ns, target[:3]):
            name, sep, val = item.partition("=")
            if not sep:
                raise UsageError(f"{opt} {item!r}: expected METRIC=VALUE")
            v = (parse_fraction(val, f"{opt} {item}") if target == "relative"
                 else _number(_float(val, opt), f"{opt} {item}"))
            if name == "all":
                setattr(th, f"default_{target}", v)
                if target == "relative":
                    th.relative.update({k: v for k in DEFAULT_RELATIVE if k not in th.relative})
            else:
                _check_metrics([name], opt)
                getattr(th, target)[name] = v
    if ns.confidence is not None:
        if not 0 < ns.confidence < 1:
            raise UsageError("--confidence must be in (0, 1)")
        th.confidence = ns.confidence
    if ns.metrics:
        th.metrics = _check_metrics([m.strip() for m in ns.metrics.split(",") if m.strip()],
                                    "--metrics")
    return th


def _float(text: str, opt: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"{opt}: {text!r} is not a number") from None


__all__ = ["compare_frames", "test_label"]
