"""What a run found, computed from its data: the headline the report and `pairbench show`
open with (docs/driver.md, "Findings").

Per test (layer, test, variant, pattern, buffers, qps), from the headline aggregate rows,
median over repetitions:
  1 pair       latency p50 and aggregate bandwidth at the smallest and largest size
  scaling      latency p50 at the smallest size and bandwidth at the largest size,
               largest pair count / 1 pair (a ratio)
  peak         the highest aggregate bandwidth of any point, and its link_pct where the
               link rate is real (link_pct empty otherwise: flags say why)
  fairness     the lowest Jain index over multi-pair points
  worst pair   the multi-pair point whose worst pair is furthest from the pooled p50
               (worst_lat_us_p50 / lat_us_p50), or whose slowest pair has the smallest
               share of the mean pair bandwidth (min_pair_bw_share)
  start skew   the largest start skew of a multi-pair point
Warnings: every machine flag (pairbench.contract.flags), error rows, missing points (metadata's
planned points without a headline row), bandwidth above the link rate.  With a base run:
the gate's answer first (regression / no regression / inconclusive, with the points and the
repetitions that would decide them: compare.gate_lines), then the verdicts, regressions
first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from pairbench.analysis.flags import row_flags
from pairbench.analysis.frames import is_headline, latency_metric
from pairbench.analysis.gate import gate_lines, run_gate
from pairbench.contract import testtable
from pairbench.contract.flags import MACHINE_FLAGS, tail_advice
from pairbench.contract.sizes import size_label
from pairbench.contract.testtable import TestTable
from pairbench.present import fmt

TEST_KEY = ["layer", "test", "variant", "pattern", "buffers", "qps"]
LAT, BW = "lat_us_p50", "bw_gbit_s"
# A block-timed test (pairbench-mpi --timing block) has the mean alone (docs/mpi.md).
LAT_MEAN = "lat_us_mean"


@dataclass
class Warning:
    kind: str        # a flag name, or error_rows / missing_points / source
    text: str


@dataclass
class TestFindings:
    title: str
    facts: list[tuple[str, str]] = field(default_factory=list)   # (what, value)


@dataclass
class Findings:
    warnings: list[Warning] = field(default_factory=list)
    tests: list[TestFindings] = field(default_factory=list)
    verdict: list[str] = field(default_factory=list)              # with a base run
    regressions: int = 0
    gate: str = ""          # with a base run: regression / no regression / inconclusive


def _med(agg: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in (LAT, LAT_MEAN, BW, "link_pct", "fairness", "start_skew_us",
                        "worst_lat_us_p50", "worst_lat_pair_id", "min_pair_bw_share",
                        "min_bw_pair_id")
            if c in agg.columns]
    return agg.groupby([*TEST_KEY, "msg_size_bytes", "pairs"], dropna=False)[cols] \
              .median().reset_index()


def _at(g: pd.DataFrame, size: int, pairs: int, col: str) -> float:
    v = g.loc[(g["msg_size_bytes"] == size) & (g["pairs"] == pairs), col]
    return float(v.iloc[0]) if len(v) and pd.notna(v.iloc[0]) else math.nan


def _point(size: float, pairs: float) -> str:
    return f"{int(pairs)} pair{'s' if int(pairs) != 1 else ''}, {size_label(int(size))}"


def _scaling_text(one: float, many: float, pmax: int, value) -> str:
    if not (math.isfinite(one) and math.isfinite(many)) or one <= 0:
        return ""
    return f"1 pair {value(one)} → {pmax} pairs {value(many)} ({fmt.ratio(many / one)})"


def _test_findings(key: tuple, g: pd.DataFrame, tables: dict[str, TestTable] | None,
                   nominal_link: bool) -> TestFindings:
    layer, test, variant = key[0], key[1], key[2]
    title = f"{layer} {testtable.label(test, variant, layer, tables)}"
    extra = [f"{n} {v}" for n, v in (("pattern", key[3]), ("buffers", key[4]), ("QPs", key[5]))
             if isinstance(v, str) and v]
    tf = TestFindings(title + (f" ({', '.join(extra)})" if extra else ""))
    sizes = sorted(int(s) for s in g["msg_size_bytes"].unique())
    pairs = sorted(int(p) for p in g["pairs"].unique())
    small, large, pmax = sizes[0], sizes[-1], pairs[-1]
    lat = latency_metric(g)
    lat_name = "p50" if lat == LAT else "mean (block-timed)"
    has_lat, has_bw = g[lat].notna().any(), g[BW].notna().any()
    if 1 in pairs:
        for what, col, value in ((f"1-pair latency {lat_name}", lat, fmt.us),
                                 ("1-pair bandwidth", BW, fmt.gbit)):
            if not (has_lat if col == lat else has_bw):
                continue
            vs = [(size_label(s), _at(g, s, 1, col)) for s in dict.fromkeys((small, large))]
            text = "; ".join(f"{value(v)} at {s}" for s, v in vs if math.isfinite(v))
            if text:
                tf.facts.append((what, text))
    if pmax > 1 and 1 in pairs:
        if has_lat:
            t = _scaling_text(_at(g, small, 1, lat), _at(g, small, pmax, lat), pmax, fmt.us)
            if t:
                what = "latency scaling" if lat == LAT else "latency scaling (block-timed mean)"
                tf.facts.append((f"{what} at {size_label(small)}", t))
        if has_bw:
            t = _scaling_text(_at(g, large, 1, BW), _at(g, large, pmax, BW), pmax, fmt.gbit)
            if t:
                tf.facts.append((f"bandwidth scaling at {size_label(large)}", t))
    if has_bw:
        r = g.loc[g[BW].idxmax()]
        text = f"{fmt.gbit(r[BW])} ({_point(r['msg_size_bytes'], r['pairs'])})"
        if pd.notna(r.get("link_pct")):
            text += f" = {fmt.pct(r['link_pct'])} of the link"
        elif nominal_link:
            text += "; share of the link not given: the link rate is nominal or unknown"
        tf.facts.append(("peak aggregate bandwidth", text))
    multi = g[g["pairs"] > 1]
    if "fairness" in multi and multi["fairness"].notna().any():
        r = multi.loc[multi["fairness"].idxmin()]
        where = _point(r["msg_size_bytes"], r["pairs"])
        tf.facts.append(("lowest fairness (Jain)", f"{fmt.num(r['fairness'], 4)} ({where})"))
    if "worst_lat_us_p50" in multi and multi["worst_lat_us_p50"].notna().any():
        m = multi[multi[LAT] > 0].copy()
        m["ratio"] = m["worst_lat_us_p50"] / m[LAT]
        if m["ratio"].notna().any():
            r = m.loc[m["ratio"].idxmax()]
            pid = "" if pd.isna(r["worst_lat_pair_id"]) else f"pair {int(r['worst_lat_pair_id'])}: "
            tf.facts.append(("worst pair (latency)",
                             f"{pid}{fmt.us(r['worst_lat_us_p50'])} vs pooled "
                             f"{fmt.us(r[LAT])} ({fmt.ratio(r['ratio'])}, "
                             f"{_point(r['msg_size_bytes'], r['pairs'])})"))
    if "min_pair_bw_share" in multi and multi["min_pair_bw_share"].notna().any():
        r = multi.loc[multi["min_pair_bw_share"].idxmin()]
        pid = "" if pd.isna(r["min_bw_pair_id"]) else f"pair {int(r['min_bw_pair_id'])}: "
        tf.facts.append(("slowest pair (bandwidth)",
                         f"{pid}{fmt.pct(100 * r['min_pair_bw_share'])} of the mean pair "
                         f"({_point(r['msg_size_bytes'], r['pairs'])})"))
    if "start_skew_us" in multi and multi["start_skew_us"].notna().any():
        r = multi.loc[multi["start_skew_us"].idxmax()]
        tf.facts.append(("largest start skew",
                         f"{fmt.us(r['start_skew_us'])} "
                         f"({_point(r['msg_size_bytes'], r['pairs'])})"))
    return tf


def _cpus(meta: dict) -> int | None:
    return ((meta.get("fingerprint") or {}).get("cpu") or {}).get("logical_cpus")


def tail_warnings(layer: str, d: pd.DataFrame) -> list[Warning]:
    """One warning per way of timing (window_method) among the tail-dominated aggregate
    rows d: the advice is that timing's (contract.flags.tail_advice), never "run without
    -n" for points that ran without it."""
    out: list[Warning] = []
    method = (d["window_method"].fillna("").astype(str) if "window_method" in d.columns
              else pd.Series("", index=d.index))
    for m in sorted(method.unique()):
        g = d[method == m]
        pts = sorted({(str(t), int(s), int(p)) for t, s, p in
                      g[["test", "msg_size_bytes", "pairs"]].itertuples(index=False)},
                     key=lambda k: (k[0], k[2], k[1]))
        shown = ", ".join(f"{t} {size_label(s)} x {p} pairs" for t, s, p in pts[:4])
        more = f" and {len(pts) - 4} more" if len(pts) > 4 else ""
        out.append(Warning("tail_dominated", (
            f"{layer}: the aggregate of {len(pts)} point(s) is tail-dominated ({shown}{more}): "
            f"{tail_advice(m)} (flag tail_dominated)")))
    return out


def machine_warnings(df: pd.DataFrame, meta: dict) -> list[Warning]:
    out: list[Warning] = []
    fl = row_flags(df)
    for layer in sorted(df["layer"].dropna().unique()):
        d, f = df[df["layer"] == layer], fl[df["layer"] == layer]
        over = f.map(lambda s: "oversubscribed" in s)
        if over.any():
            bad = sorted(int(p) for p in d.loc[over, "pairs"].unique())
            good = sorted(int(p) for p in d.loc[~over, "pairs"].unique() if int(p) < min(bad))
            cpus = _cpus(meta)
            where = f"this machine's {cpus} CPUs" if cpus else "the CPUs of this machine"
            limit = (f"figures above {good[-1]} pair{'s' if good[-1] != 1 else ''}"
                     if good else "every figure")
            out.append(Warning("oversubscribed", (
                f"{layer}: {limit} measure the scheduler on this machine, not the "
                f"interconnect: the points with {', '.join(map(str, bad))} pairs ran more "
                f"busy-polling processes than {where} (flag oversubscribed)")))
        for flag in ("emulated_device", "link_rate_nominal", "link_rate_unknown"):
            if f.map(lambda s, flag=flag: flag in s).any():
                out.append(Warning(flag, f"{layer}: {MACHINE_FLAGS[flag]} (flag {flag})"))
        out += tail_warnings(layer, d[f.map(lambda s: "tail_dominated" in s)
                                      & is_headline(d)])
        above = f.map(lambda s: "above_link_rate" in s)
        if above.any():
            out.append(Warning("above_link_rate", (
                f"{layer}: {int(above.sum())} row(s) report bandwidth above the link rate: "
                "a measurement error (flag above_link_rate)")))
    return out


def counter_warnings(df: pd.DataFrame, meta: dict) -> list[Warning]:
    """The port counters read around each window (docs/health.md): error-class counters that
    moved, named with the point (from the points' records), and data counters that disagree
    with what a point moved."""
    from pairbench.runner.collect import counter_rows

    out: list[Warning] = []
    fl = row_flags(df)
    flagged = df[fl.map(lambda s: "error_counters" in s) & is_headline(df)]
    moved = [r for r in counter_rows(meta, str(meta.get("run_id", "")))
             if r["class"] == "error" and r["delta"] not in ("0", "")]
    if len(flagged) or moved:
        said = [f"{r['counter']} {int(r['delta']):+d} on {r['device']} port {r['port']} at "
                f"{r['test']} {size_label(int(r['msg_size_bytes']))} {r['pairs']} pair(s), "
                f"repetition {r['repetition']}" for r in moved[:4]]
        more = f" and {len(moved) - 4} more" if len(moved) > 4 else ""
        out.append(Warning("error_counters", (
            f"error counters moved during the timed window of {len(flagged) or len(moved)} "
            f"point(s): {'; '.join(said) or 'see counters.csv'}{more} (flag error_counters; "
            "docs/health.md)")))
    off = df[fl.map(lambda s: "counters_disagree" in s) & is_headline(df)]
    if len(off):
        pts = sorted({(str(t), int(sz), int(p)) for t, sz, p in
                      off[["test", "msg_size_bytes", "pairs"]].itertuples(index=False)})
        shown = ", ".join(f"{t} {size_label(sz)} x {p} pairs" for t, sz, p in pts[:4])
        out.append(Warning("counters_disagree", (
            f"the data counters disagree with what {len(pts)} point(s) moved, beyond the "
            f"tolerance ({shown}): a measurement error or traffic from elsewhere (flag "
            "counters_disagree; docs/health.md)")))
    return out


def data_warnings(df: pd.DataFrame, meta: dict) -> list[Warning]:
    out: list[Warning] = []
    errs = df[df["status"] != "ok"]
    if len(errs):
        heads = errs[is_headline(errs)]
        reasons = list(dict.fromkeys(str(e) for e in errs["error"].fillna("") if e))[:2]
        out.append(Warning("error_rows", (
            f"{len(errs)} error row(s) in {len(heads) or len(errs)} point(s): "
            + "; ".join(reasons))))
    missing = missing_points(df, meta)
    if missing:
        shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4
                                          else "")
        out.append(Warning("missing_points", f"{len(missing)} planned point(s) have no "
                           f"row: {shown}"))
    if meta.get("source"):
        out.append(Warning("source", f"not measured by pairbench: {meta['source']}"))
    return out


def missing_points(df: pd.DataFrame, meta: dict) -> list[str]:
    """Planned (metadata points: test, pairs, repetition, sizes) without a headline row."""
    head = df[is_headline(df)]
    have = {(str(r.test), int(r.pairs), int(getattr(r, "repetition", 1) or 1),
             int(r.msg_size_bytes)) for r in head.itertuples()}
    have_tp = {(t, p, rep) for t, p, rep, _s in have}
    out = []
    for p in meta.get("points") or []:
        try:
            test, pairs, rep = str(p["test"]), int(p["pairs"]), int(p.get("repetition", 1))
        except (KeyError, TypeError, ValueError):
            continue
        sizes = p.get("sizes") or []
        if (test, pairs, rep) not in have_tp:
            out.append(f"{test} × {pairs} pair(s) (repetition {rep})")
            continue
        # A test of fixed size runs its one size whatever the sweep's size list says.
        sized = {s for t, pp, r, s in have if (t, pp, r) == (test, pairs, rep)}
        if len(sized) > 1:
            out += [f"{test} × {pairs} pair(s) at {size_label(int(s))} (repetition {rep})"
                    for s in sizes if int(s) not in sized]
    return out


def compute(df: pd.DataFrame, meta: dict, tables: dict[str, TestTable] | None = None,
            compare: pd.DataFrame | None = None) -> Findings:
    """The findings of a run (and, given compare_frames' result, of the comparison)."""
    out = Findings(warnings=machine_warnings(df, meta) + counter_warnings(df, meta)
                   + data_warnings(df, meta))
    agg = df[is_headline(df) & (df["status"] == "ok")]
    fl = row_flags(agg)
    nominal = fl.map(lambda s: bool(s & {"link_rate_nominal", "link_rate_unknown"}))
    if not agg.empty:
        med = _med(agg)
        nominal_keys = {tuple(r) for r in agg.loc[nominal, TEST_KEY].itertuples(index=False)}
        for key, g in med.groupby(TEST_KEY, dropna=False, sort=True):
            out.tests.append(_test_findings(key, g, tables, tuple(key) in nominal_keys))
    if compare is not None:
        out.verdict, out.regressions = verdict_lines(compare)
        out.gate = run_gate(compare)
    return out


ORDER = ["failed", "regression", "suspected regression", "not comparable", "suspected improvement",
         "improvement", "no change"]


def verdict_lines(res: pd.DataFrame) -> tuple[list[str], int]:
    """The gate's lines (compare.gate_lines), then one line per verdict class (regressions
    first), each naming its points."""
    from pairbench.analysis.frames import METRICS, point_label

    lines = ([ln.strip() for ln in gate_lines(res, max_listed=6)] if "gate" in res.columns
             else [])
    n_reg = int(res["verdict"].isin(["regression", "failed"]).sum())
    counts = res["verdict"].value_counts()
    lines.append("verdict: " + (f"{n_reg} regression(s)" if n_reg else "no proven regression")
                 + " — " + ", ".join(f"{int(counts[v])} {v}" for v in ORDER if v in counts))
    for v in ORDER[:-1]:
        sub = res[res["verdict"] == v]
        # Largest change first; ties in a fixed order (the comparison's row order is not).
        sub = sub.assign(_size=sub["ratio"].map(lambda x: abs(math.log(x))
                                                if x and x > 0 and math.isfinite(x) else 0.0))
        sub = sub.sort_values(["_size", "layer", "test", "pairs", "msg_size_bytes", "metric"],
                              ascending=[False, True, True, True, True, True], kind="stable")
        for _, r in sub.head(6).iterrows():
            m = METRICS.get(r["metric"])
            unit = f" {m.unit}" if m and m.unit else ""
            where = point_label(r["test"], r["variant"], r["msg_size_bytes"], r["pairs"],
                                r["layer"])
            lines.append(f"{v}: {where} {r['metric']}: {fmt.num(r['base'])} → "
                         f"{fmt.num(r['new'])}{unit} ({fmt.ratio(r['ratio'])})")
        if len(sub) > 6:
            lines.append(f"{v}: … and {len(sub) - 6} more")
    return lines, n_reg
