"""`pairbench report RUN [BASE]`: one self-contained HTML file — fingerprint, tables,
plots embedded as base64 PNG, and the comparison with BASE if given."""

from __future__ import annotations

import argparse
import base64
import html
import math
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from pairbench import __version__
from pairbench.analysis import median_by_point
from pairbench.compare import TABLE_COLS as COMPARE_COLS
from pairbench.compare import (
    Thresholds,
    compare_frames,
    method_lines,
    summary_lines,
    table_rows,
)
from pairbench.errors import UsageError
from pairbench.plot import plot_runs, run_label
from pairbench.safeio import write_output
from pairbench.schema import load_metadata, load_run
from pairbench.sizes import size_label

SUMMARY_METRICS = ["lat_us_p50", "lat_us_p99", "bw_gbit_s", "msg_rate_per_s", "link_pct",
                   "fairness", "start_skew_us"]
CSS = """body{font-family:sans-serif;margin:2em;max-width:1200px}
table{border-collapse:collapse;margin:1em 0;font-size:90%}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
th{background:#eee}.bad{color:#b00;font-weight:bold}.good{color:#070}
img{max-width:100%;border:1px solid #ddd;margin:0.5em 0}code{background:#f4f4f4}"""


def _e(x: object) -> str:
    return html.escape("" if x is None else str(x))


def _flatten(d: object, prefix: str = "") -> list[tuple[str, object]]:
    if isinstance(d, dict):
        out: list[tuple[str, object]] = []
        for k, v in d.items():
            out += _flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(d, list) and d and all(isinstance(x, dict) for x in d):
        out = []
        for i, v in enumerate(d):
            out += _flatten(v, f"{prefix}[{i}]")
        return out
    return [(prefix, d)]


def _table(head: list[str], rows: list[list[object]], classes: list[str] | None = None) -> str:
    out = ["<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"]
    for i, r in enumerate(rows):
        cls = f' class="{classes[i]}"' if classes and classes[i] else ""
        out.append(f"<tr{cls}>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>")
    return "\n".join(out) + "</table>"


def _num(v: object) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4g}"


def fingerprint_html(meta: dict) -> str:
    if not meta:
        return "<p>No metadata.json: fingerprint missing.</p>"
    keep = {k: v for k, v in meta.items() if k not in ("points", "pinning")}
    rows = [[k, "null (missing)" if v is None else v] for k, v in _flatten(keep)]
    return _table(["field", "value"], rows)


def data_html(df: pd.DataFrame) -> str:
    med = median_by_point(df, SUMMARY_METRICS)
    cols = [m for m in SUMMARY_METRICS if m in med.columns and med[m].notna().any()]
    reps = df[df["pair_id"] == "all"].groupby(["layer", "test", "msg_size_bytes",
                                                "pairs"])["repetition"].nunique()
    rows = []
    for _, r in med.sort_values(["layer", "test", "pairs", "msg_size_bytes"]).iterrows():
        n = reps.get((r["layer"], r["test"], r["msg_size_bytes"], r["pairs"]), "")
        rows.append([r["layer"], r["test"], r["variant"], size_label(int(r["msg_size_bytes"])),
                     int(r["pairs"]), n, *[_num(r[c]) for c in cols]])
    out = _table(["layer", "test", "variant", "size", "pairs", "reps", *cols], rows)
    errs = df[df["status"] != "ok"]
    if len(errs):
        erows = [[r["test"], size_label(int(r["msg_size_bytes"])), int(r["pairs"]),
                  r["pair_id"], r["repetition"], r["error"]] for _, r in errs.iterrows()]
        out += f"<h3 class=\"bad\">{len(errs)} error row(s)</h3>" + _table(
            ["test", "size", "pairs", "pair_id", "repetition", "reason"], erows)
    return out


# Marked in the worst-pair table; the thresholds of examples/accept-spec.toml.
WORST_RATIO_MARK, SHARE_MARK = 1.5, 0.8


def worst_pair_html(df: pd.DataFrame) -> str:
    """Multi-pair points: what the worst pair did next to the pooled aggregate (medians over
    repetitions; the pair named is the one most often worst)."""
    agg = df[(df["pair_id"] == "all") & (df["status"] == "ok") & (df["pairs"] > 1)]
    agg = agg[agg["worst_lat_us_p50"].notna() | agg["min_pair_bw_share"].notna()]
    if agg.empty:
        return "<p>No multi-pair point carries worst-pair columns (schema version 1 data, " \
               "one pair, or collectives only).</p>"
    rows, classes = [], []
    for key, g in agg.groupby(["layer", "test", "variant", "msg_size_bytes", "pairs"],
                              dropna=False, sort=True):
        def most(col: str, g: pd.DataFrame = g) -> str:
            ids = g[col].dropna()
            return str(int(ids.mode().iloc[0])) if len(ids) else ""
        pooled, worst = g["lat_us_p50"].median(), g["worst_lat_us_p50"].median()
        ratio = worst / pooled if pooled and pooled > 0 else math.nan
        share = g["min_pair_bw_share"].median()
        rows.append([key[1], key[2] if isinstance(key[2], str) else "",
                     size_label(int(key[3])), int(key[4]), _num(pooled), most("worst_lat_pair_id"),
                     _num(worst), _num(ratio), most("min_bw_pair_id"),
                     _num(g["min_pair_bw_gbit_s"].median()), _num(share)])
        classes.append("bad" if ratio > WORST_RATIO_MARK or share < SHARE_MARK else "")
    head = ["test", "variant", "size", "pairs", "pooled p50 µs", "worst pair", "its p50 µs",
            "worst / pooled", "slowest pair", "its Gbit/s", "share of mean pair"]
    return (f"<p>Marked: worst pair's p50 above {WORST_RATIO_MARK}× the pooled p50, or the "
            f"slowest pair below {SHARE_MARK:.0%} of the mean pair bandwidth.</p>"
            + _table(head, rows, classes))


def plots_html(runs: list[tuple[str, pd.DataFrame, dict]]) -> str:
    with tempfile.TemporaryDirectory(prefix="pairbench-report-") as tmp:
        try:
            files = plot_runs(runs, Path(tmp))
        except UsageError as exc:
            return f"<p>No plots: {_e(exc)}</p>"
        parts = []
        for f in files:
            if f.suffix != ".png":
                continue
            b64 = base64.b64encode(f.read_bytes()).decode("ascii")
            parts.append(f'<figure><img alt="{_e(f.stem)}" src="data:image/png;base64,{b64}">'
                         f"<figcaption>{_e(f.stem)}</figcaption></figure>")
    return "\n".join(parts)


def compare_html(base: pd.DataFrame, new: pd.DataFrame, base_name: str) -> str:
    try:
        res = compare_frames(base, new, Thresholds())
    except UsageError as exc:
        return f"<p class=\"bad\">Comparison not possible: {_e(exc)}</p>"
    summary = summary_lines(res)
    classes = ["bad" if v.endswith("regression") else "good" if v.endswith("improvement")
               else "" for v in res["verdict"]]
    n_reg = int((res["verdict"] == "regression").sum())
    notes = "<ul>" + "".join(f"<li>{_e(s)}</li>" for s in method_lines(res)) + "</ul>"
    return (f"<p>BASE <code>{_e(base_name)}</code>; ratio = NEW / BASE; default thresholds "
            f"(see docs/compare-and-accept.md). <b>{n_reg} regression(s)</b>.</p>"
            + "<ul>" + "".join(f"<li>{_e(s)}</li>" for s in summary) + "</ul>" + notes
            + _table(COMPARE_COLS, table_rows(res), classes))


def noise_html(df: pd.DataFrame) -> str:
    """Run-to-run noise and detectable changes (`pairbench noise`), if >= 2 repetitions."""
    from pairbench.noise import NOISE_COLS, assumption_lines, noise_frame, noise_rows

    if df["repetition"].nunique() < 2:
        return ""
    try:
        res = noise_frame(df, Thresholds())
    except UsageError as exc:
        return f"<p>No noise estimate: {_e(exc)}</p>"
    return ("<h2>Run-to-run noise and what compare can detect</h2>"
            + _table(NOISE_COLS, noise_rows(res))
            + "<ul>" + "".join(f"<li>{_e(s)}</li>" for s in assumption_lines(res)) + "</ul>")


def build_report(run: Path, base: Path | None) -> str:
    df, meta = load_run(run), load_metadata(run)
    runs = [(run_label(run, meta), df, meta)]
    base_df = None
    if base is not None:
        base_df, base_meta = load_run(base), load_metadata(base)
        runs.insert(0, (run_label(base, base_meta), base_df, base_meta))
    title = f"pairbench report: {run_label(run, meta)}"
    body = [f"<h1>{_e(title)}</h1>",
            f"<p>Generated {_e(datetime.now(UTC).isoformat(timespec='seconds'))} by "
            f"pairbench {_e(__version__)} from <code>{_e(run)}</code>.</p>"]
    if meta.get("source"):
        body.append(f"<p class=\"bad\">Source: {_e(meta['source'])}</p>")
    body += ["<h2>Results (median over repetitions, aggregate rows)</h2>", data_html(df),
             "<h2>Worst pair</h2>", worst_pair_html(df)]
    body.append(noise_html(df))
    if base_df is not None:
        body += ["<h2>Comparison with base</h2>", compare_html(base_df, df, str(base))]
    body += ["<h2>Plots</h2>", plots_html(runs),
             "<h2>Environment fingerprint</h2>", fingerprint_html(meta)]
    if meta.get("pinning"):
        body += ["<h2>Pinning per point</h2>",
                 _table(["point", "pinning"], [[k, v] for k, v in meta["pinning"].items()])]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", metavar="RUN", help="run directory or data CSV")
    p.add_argument("base", metavar="BASE", nargs="?", default=None,
                   help="optional base run to compare with")
    p.add_argument("--out", default=None, help="HTML file (default RUN/report.html)")


def run_report(ns: argparse.Namespace) -> int:
    write_report(Path(ns.run), Path(ns.base) if ns.base else None,
                 Path(ns.out) if ns.out else None)
    return 0


def write_report(run: Path, base: Path | None = None, out: Path | None = None) -> Path:
    """The report of RUN (vs BASE) into OUT (default RUN/report.html); says where."""
    text = build_report(run, base)
    where = out or (run / "report.html" if run.is_dir()
                    else run.with_name(run.stem + "-report.html"))
    write_output(where, text, "--out" if out else "report")
    print(f"report: {where}")
    return where
