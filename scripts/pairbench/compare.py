"""`pairbench compare BASE NEW`: per point and metric, both values, the ratio and a
noise-aware verdict; exit 0 = no regression, 1 = regression, 2 = bad input.

A point is (layer, test, variant, msg_size_bytes, pairs) on the aggregate row (pair_id=all).
Each repetition gives one value per point. The ratio is median(NEW) / median(BASE).
With >= 2 repetitions on both sides a seeded bootstrap gives a confidence interval of
that ratio; a change counts only if it exceeds the thresholds (relative AND absolute) in
the worse direction AND the interval excludes 1. With one repetition on either side no
significance can be claimed: the verdict is by thresholds only, and says so.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from pairbench.analysis import METRICS, POINT_KEY, aggregate_rows, point_label, test_label
from pairbench.errors import UsageError
from pairbench.safeio import write_output
from pairbench.schema import load_run
from pairbench.sizes import size_label

DEFAULT_METRICS = ["lat_us_p50", "lat_us_p99", "bw_gbit_s", "msg_rate_per_s"]
DEFAULT_RELATIVE = {"lat_us_p99": 0.15, "lat_us_p999": 0.25, "lat_us_max": 0.5}
DEFAULT_REL = 0.05
BOOTSTRAP_SAMPLES = 4000


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
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{where}: expected a number, got {value!r}")
    if value < 0 or not math.isfinite(value):
        raise UsageError(f"{where}: must be a finite number >= 0")
    return float(value)


def _parse_fraction(text: str, where: str) -> float:
    t = text.strip()
    try:
        v = float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
    except ValueError:
        raise UsageError(f"{where}: {text!r} is not a number (e.g. 0.1 or 10%)") from None
    return _number(v, where)


def load_thresholds(path: Path, th: Thresholds) -> None:
    """[default] relative/absolute/confidence, [metric.NAME] relative/absolute, metrics=[...]."""
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML ({exc})") from None
    for key in data:
        if key not in ("default", "metric", "metrics"):
            raise UsageError(f"{path}: unknown key {key!r} (allowed: default, metric, metrics)")
    d = data.get("default", {})
    if not isinstance(d, dict):
        raise UsageError(f"{path}: [default] must be a table")
    for key, val in d.items():
        if key == "relative":
            th.default_relative = _number(val, f"{path}: default.relative")
        elif key == "absolute":
            th.default_absolute = _number(val, f"{path}: default.absolute")
        elif key == "confidence":
            th.confidence = _number(val, f"{path}: default.confidence")
            if not 0 < th.confidence < 1:
                raise UsageError(f"{path}: default.confidence must be in (0, 1)")
        else:
            raise UsageError(f"{path}: unknown key default.{key} "
                             "(allowed: relative, absolute, confidence)")
    metrics = data.get("metric", {})
    if not isinstance(metrics, dict):
        raise UsageError(f"{path}: [metric.NAME] must be tables")
    for name, tab in metrics.items():
        if name not in METRICS:
            raise UsageError(f"{path}: unknown metric {name!r} (one of {', '.join(METRICS)})")
        if not isinstance(tab, dict):
            raise UsageError(f"{path}: metric.{name} must be a table")
        for key, val in tab.items():
            if key == "relative":
                th.relative[name] = _number(val, f"{path}: metric.{name}.relative")
            elif key == "absolute":
                th.absolute[name] = _number(val, f"{path}: metric.{name}.absolute")
            else:
                raise UsageError(f"{path}: unknown key metric.{name}.{key} "
                                 "(allowed: relative, absolute)")
    if "metrics" in data:
        ms = data["metrics"]
        if not isinstance(ms, list) or not all(isinstance(m, str) for m in ms):
            raise UsageError(f"{path}: metrics must be a list of metric names")
        th.metrics = _check_metrics(ms, str(path))


def _check_metrics(names: list[str], where: str) -> list[str]:
    for m in names:
        if m not in METRICS:
            raise UsageError(f"{where}: unknown metric {m!r} (one of {', '.join(METRICS)})")
    return names


def bootstrap_ratio_ci(base: np.ndarray, new: np.ndarray, confidence: float,
                       seed: int = 12345) -> tuple[float, float]:
    """Percentile bootstrap CI of median(new)/median(base); deterministic (seeded)."""
    rng = np.random.default_rng(seed)
    mb = np.median(base[rng.integers(0, len(base), (BOOTSTRAP_SAMPLES, len(base)))], axis=1)
    mn = np.median(new[rng.integers(0, len(new), (BOOTSTRAP_SAMPLES, len(new)))], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = mn / mb
    r = r[np.isfinite(r)]
    if len(r) == 0:
        return math.nan, math.nan
    alpha = (1 - confidence) / 2
    return float(np.quantile(r, alpha)), float(np.quantile(r, 1 - alpha))


def judge(metric: str, base: np.ndarray, new: np.ndarray, th: Thresholds) -> dict:
    """Verdict for one point and metric."""
    m = METRICS[metric]
    bmed, nmed = float(np.median(base)), float(np.median(new))
    ratio = nmed / bmed if bmed != 0 else math.nan
    sign = 1.0 if m.higher_is_worse else -1.0
    worse_abs = sign * (nmed - bmed)
    worse_rel = worse_abs / abs(bmed) if bmed != 0 else (math.inf if worse_abs > 0 else 0.0)
    rel_t, abs_t = th.rel(metric), th.abs(metric)
    worse = worse_rel > rel_t and worse_abs > abs_t
    better = -worse_rel > rel_t and -worse_abs > abs_t
    ci_lo = ci_hi = math.nan
    if len(base) >= 2 and len(new) >= 2:
        ci_lo, ci_hi = bootstrap_ratio_ci(base, new, th.confidence)
        significant = not (ci_lo <= 1.0 <= ci_hi) if math.isfinite(ci_lo) else False
        note = f"{th.confidence:.0%} CI of ratio [{ci_lo:.3g}, {ci_hi:.3g}]"
        if worse:
            verdict = "regression" if significant else "within noise"
        elif better:
            verdict = "improvement" if significant else "within noise"
        else:
            verdict = "no change"
    else:
        note = "one repetition: no significance can be claimed; judged by thresholds only"
        verdict = "regression" if worse else "improvement" if better else "no change"
    return {"metric": metric, "unit": m.unit, "base": bmed, "new": nmed, "ratio": ratio,
            "change_pct": 100.0 * (ratio - 1) if math.isfinite(ratio) else math.nan,
            "n_base": len(base), "n_new": len(new), "ci_low": ci_lo, "ci_high": ci_hi,
            "rel_threshold": rel_t, "abs_threshold": abs_t, "verdict": verdict, "note": note}


def compare_frames(base: pd.DataFrame, new: pd.DataFrame, th: Thresholds,
                   metrics: list[str] | None = None) -> pd.DataFrame:
    """One row per (point, metric) present in both runs."""
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
    rows = []
    for key in sorted(common, key=lambda k: (k[0], k[1], k[2], k[4], k[3])):
        b, n = gb[key], gn[key]
        for metric in wanted:
            vb = b[metric].dropna().to_numpy(dtype=float)
            vn = n[metric].dropna().to_numpy(dtype=float)
            if len(vb) == 0 or len(vn) == 0:
                continue
            rows.append({**dict(zip(POINT_KEY, key, strict=True)), **judge(metric, vb, vn, th)})
    if not rows:
        raise UsageError(f"the common points have no values for metrics {', '.join(wanted)}")
    out = pd.DataFrame(rows)
    out["msg_size_bytes"] = out["msg_size_bytes"].astype(int)
    out["pairs"] = out["pairs"].astype(int)
    return out


def _factor(ratio: float, higher_is_worse: bool) -> str:
    if not math.isfinite(ratio) or ratio <= 0:
        return "not comparable"
    if abs(ratio - 1) < 0.005:
        return "unchanged"
    if ratio < 1:
        return f"{1 / ratio:.1f}× lower" if ratio <= 0.5 else f"{(1 - ratio) * 100:.0f} % lower"
    return f"{ratio:.1f}× higher" if ratio >= 2 else f"{(ratio - 1) * 100:.0f} % higher"


def summary_lines(res: pd.DataFrame) -> list[str]:
    """Paper-002 style headlines: per (layer, test, variant) and its primary metric, the
    largest pair count and the size with the largest change, e.g.
    '8-pair write latency at 128 B: 6.0× lower (11.2 → 1.86 µs)'."""
    lines = []
    for (_layer, test, variant), g in res.groupby(["layer", "test", "variant"], sort=True):
        primary = next((m for m in ("lat_us_p50", "bw_gbit_s", "msg_rate_per_s")
                        if m in set(g["metric"])), g["metric"].iloc[0])
        g = g[(g["metric"] == primary) & (g["pairs"] == g["pairs"].max())]
        g = g[np.isfinite(g["ratio"]) & (g["ratio"] > 0)]
        if g.empty:
            continue
        r = g.loc[np.abs(np.log(g["ratio"])).idxmax()]
        m = METRICS[primary]
        lines.append(f"{point_label(test, variant, r['msg_size_bytes'], r['pairs'])}"
                     f"{'' if primary == 'lat_us_p50' or primary == 'bw_gbit_s' else ' ' + m.label}"
                     f": {_factor(r['ratio'], m.higher_is_worse)} "
                     f"({r['base']:.3g} → {r['new']:.3g} {m.unit}; {r['verdict']})")
    return lines


def _fmt(v: float) -> str:
    return "" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.4g}"


TABLE_COLS = ["test", "variant", "size", "pairs", "metric", "base", "new", "ratio", "change",
              "n", "verdict"]


def table_rows(res: pd.DataFrame) -> list[list[str]]:
    out = []
    for _, r in res.iterrows():
        out.append([r["test"], r["variant"], size_label(int(r["msg_size_bytes"])),
                    str(r["pairs"]), r["metric"], _fmt(r["base"]), _fmt(r["new"]),
                    _fmt(r["ratio"]), f"{r['change_pct']:+.1f} %"
                    if math.isfinite(r["change_pct"]) else "", f"{r['n_base']}/{r['n_new']}",
                    r["verdict"]])
    return out


def render_text(res: pd.DataFrame, summary: list[str]) -> str:
    rows = [TABLE_COLS, *table_rows(res)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(TABLE_COLS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = sorted(set(res["note"]))
    return "\n".join([*lines, "", *[f"note: {n}" for n in notes if n.startswith("one")],
                      *summary]) + "\n"


def render_markdown(res: pd.DataFrame, summary: list[str], base: str, new: str) -> str:
    out = [f"# pairbench compare\n\nBASE `{base}` vs NEW `{new}` (ratio = NEW / BASE)\n"]
    out += [f"- {s}" for s in summary]
    out.append("")
    out.append("| " + " | ".join(TABLE_COLS) + " |")
    out.append("|" + "---|" * len(TABLE_COLS))
    for r in table_rows(res):
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    if (res["n_base"].min() < 2) or (res["n_new"].min() < 2):
        out.append("\nWith one repetition no significance can be claimed; verdicts where n = 1 "
                   "are by thresholds only.")
    return "\n".join(out) + "\n"


def to_json(res: pd.DataFrame, summary: list[str], base: str, new: str, th: Thresholds) -> dict:
    recs = json.loads(res.to_json(orient="records"))
    return {"base": base, "new": new, "ratio": "new / base", "summary": summary,
            "regressions": int((res["verdict"] == "regression").sum()),
            "improvements": int((res["verdict"] == "improvement").sum()),
            "thresholds": {"default_relative": th.default_relative,
                           "default_absolute": th.default_absolute,
                           "relative": th.relative, "absolute": th.absolute,
                           "confidence": th.confidence},
            "points": recs}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", metavar="BASE", help="baseline run directory or data CSV")
    p.add_argument("new", metavar="NEW", help="new run directory or data CSV")
    p.add_argument("--metrics", default=None,
                   help=f"comma-separated (default {','.join(DEFAULT_METRICS)}, those present)")
    p.add_argument("--thresholds", default=None, metavar="TOML",
                   help="threshold file (see examples/compare-thresholds.toml)")
    p.add_argument("--rel", action="append", default=[], metavar="METRIC=FRACTION",
                   help="relative threshold, e.g. lat_us_p50=10%% or all=0.05")
    p.add_argument("--abs", action="append", default=[], metavar="METRIC=VALUE",
                   help="absolute threshold in the metric's unit, e.g. lat_us_p50=0.1")
    p.add_argument("--confidence", type=float, default=None)
    p.add_argument("--format", choices=["table", "markdown", "json"], default="table")
    p.add_argument("--markdown", default=None, metavar="FILE", help="also write Markdown here")
    p.add_argument("--json", default=None, metavar="FILE", help="also write JSON here")


def thresholds_from_args(ns: argparse.Namespace) -> Thresholds:
    th = Thresholds()
    if ns.thresholds:
        load_thresholds(Path(ns.thresholds), th)
    for opt, target in (("--rel", "relative"), ("--abs", "absolute")):
        for item in getattr(ns, target[:3]):
            name, sep, val = item.partition("=")
            if not sep:
                raise UsageError(f"{opt} {item!r}: expected METRIC=VALUE")
            v = (_parse_fraction(val, f"{opt} {item}") if target == "relative"
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


def run_compare(ns: argparse.Namespace) -> int:
    th = thresholds_from_args(ns)
    base, new = load_run(ns.base), load_run(ns.new)
    res = compare_frames(base, new, th)
    summary = summary_lines(res)
    if ns.format == "json":
        sys.stdout.write(json.dumps(to_json(res, summary, ns.base, ns.new, th), indent=2) + "\n")
    elif ns.format == "markdown":
        sys.stdout.write(render_markdown(res, summary, ns.base, ns.new))
    else:
        sys.stdout.write(render_text(res, summary))
    if ns.markdown:
        write_output(ns.markdown, render_markdown(res, summary, ns.base, ns.new), "--markdown")
    if ns.json:
        write_output(ns.json, json.dumps(to_json(res, summary, ns.base, ns.new, th),
                                         indent=2) + "\n", "--json")
    n_reg = int((res["verdict"] == "regression").sum())
    print(f"compare: {len(res)} comparisons, {n_reg} regression(s), "
          f"{int((res['verdict'] == 'improvement').sum())} improvement(s)", file=sys.stderr)
    return 1 if n_reg else 0


__all__ = ["compare_frames", "run_compare", "summary_lines", "test_label"]
