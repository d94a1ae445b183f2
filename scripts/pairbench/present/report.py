"""`pairbench report RUN [BASE]`: one self-contained HTML file that opens on what the run
found — warnings that cannot be missed, the comparison verdict with BASE (regressions
first), per-test findings (pairbench.present.findings) — then the tables, the plots (inline PNG),
the environment and the pinning as readable tables.  Rendered through jinja2 templates
(scripts/pairbench/templates); numbers through pairbench.present.fmt (never scientific notation).

Extra sections: `build_report(..., extra=[(title, html), ...])` appends them after the
tables (the caller owns that HTML; e.g. a fabric scan's page).
"""

from __future__ import annotations

import base64
import math
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from pairbench import __version__
from pairbench.analysis import canary
from pairbench.analysis.compare import Thresholds, compare_frames
from pairbench.analysis.envdiff import diff as env_diff
from pairbench.analysis.flags import infer_legacy, row_flags
from pairbench.analysis.frames import (
    METRICS,
    device_fairness,
    is_headline,
    median_by_point,
    test_label,
)
from pairbench.analysis.load import load_run
from pairbench.contract import testtable
from pairbench.contract.schema import load_metadata
from pairbench.contract.sizes import size_label
from pairbench.contract.testtable import TestTable
from pairbench.errors import UsageError
from pairbench.io.safeio import write_output
from pairbench.present import congestion, findings, fmt
from pairbench.present.compare import method_lines
from pairbench.present.plot import plot_runs, run_label

SUMMARY_METRICS = ["lat_us_p50", "lat_us_p99", "bw_gbit_s", "msg_rate_per_s", "link_pct",
                   "fairness", "start_skew_us"]
# Marked in the worst-pair table; the thresholds of examples/accept-spec.toml.
WORST_RATIO_MARK, SHARE_MARK = 1.5, 0.8


@dataclass
class Table:
    head: list[str]
    rows: list[list[str]]
    numeric: list[bool] | None = None
    classes: list[str] | None = None
    caption: str = ""
    css: str = "data"


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    items: list[str] = field(default_factory=list)
    figures: list[dict] = field(default_factory=list)
    html: str = ""


def _header(metric: str) -> str:
    m = METRICS.get(metric)
    return f"{m.label} ({m.unit})" if m and m.unit else (m.label if m else metric)


def _flagged_points(df: pd.DataFrame) -> set[tuple]:
    agg = df[is_headline(df)]
    fl = row_flags(agg).map(lambda s: bool(s & {"oversubscribed", "above_link_rate",
                                                 "tail_dominated"}))
    return {(r.layer, r.test, r.msg_size_bytes, r.pairs) for r in agg[fl].itertuples()}


def _windows(df: pd.DataFrame) -> dict[tuple, str]:
    """(layer, test, size, pairs) -> how its points were timed (docs/methodology.md,
    "Windows"): "window 0.2 s", "target 0.1 s", "count"; repetitions that differ are
    joined; runs of schema < 4 carry no column: "count" (they were timed by a count unless
    -D was given)."""
    agg = df[is_headline(df)]
    if agg.empty:
        return {}
    method = agg["window_method"] if "window_method" in agg.columns else None
    secs = agg["window_s"] if "window_s" in agg.columns else None
    labels = []
    for i in agg.index:
        m = str(method[i]) if method is not None and isinstance(method[i], str) and method[i] \
            else "count"
        s = secs[i] if secs is not None else float("nan")
        labels.append(f"{m} {s:g} s" if m != "count" and pd.notna(s) else m)
    lab = pd.Series(labels, index=agg.index)
    out: dict[tuple, str] = {}
    for key, g in lab.groupby([agg["layer"], agg["test"], agg["msg_size_bytes"], agg["pairs"]]):
        out[key] = ", ".join(dict.fromkeys(g))
    return out


def data_section(df: pd.DataFrame, tables: dict[str, TestTable] | None) -> Section:
    med = median_by_point(df, [*SUMMARY_METRICS, "lat_us_mean"])
    cols = [m for m in SUMMARY_METRICS if m in med.columns and med[m].notna().any()]
    if "lat_us_mean" in med.columns and (med["lat_us_mean"].notna() &
                                         med["lat_us_p50"].isna()).any():
        # block-timed points (pairbench-mpi --timing block) carry the mean alone
        cols.insert(0, "lat_us_mean")
    reps = df[is_headline(df)].groupby(["layer", "test", "msg_size_bytes",
                                        "pairs"])["repetition"].nunique()
    flagged = _flagged_points(df)
    windows = _windows(df)
    rows, classes = [], []
    for _, r in med.sort_values(["layer", "test", "pairs", "msg_size_bytes"]).iterrows():
        key = (r["layer"], r["test"], r["msg_size_bytes"], r["pairs"])
        rows.append([r["layer"], test_label(r["test"], "", r["layer"], tables), r["variant"],
                     size_label(int(r["msg_size_bytes"])), str(int(r["pairs"])),
                     str(reps.get(key, "")), windows.get(key, ""),
                     *[fmt.cell(c, r[c]) for c in cols]])
        classes.append("flagged" if key in flagged else "")
    head = ["layer", "test", "variant", "size", "pairs", "reps", "timed by",
            *[_header(c) for c in cols]]
    sec = Section("Results (median over repetitions, headline aggregate rows)")
    if flagged:
        sec.paragraphs.append("Shaded rows are flagged (oversubscribed, above the link "
                              "rate, or tail-dominated): see the warnings at the top.")
    sec.paragraphs.append("\"timed by\": window = every pair stopped at one common deadline "
                          "that long after the common start; target = latency samples until "
                          "then and at least --lat-samples; count = a fixed count (-n). An "
                          "aggregate is flagged tail_dominated when its pairs ended apart: "
                          "with a count, the pairs' own tails; in a window, stop jitter "
                          "(an oversubscribed or busy machine, an emulated device) "
                          "(docs/methodology.md, \"Windows\").")
    sec.tables.append(Table(head, rows, [False] * 7 + [True] * len(cols), classes))
    errs = df[df["status"] != "ok"]
    if len(errs):
        erows = [[r["test"], size_label(int(r["msg_size_bytes"])), str(int(r["pairs"])),
                  str(r["pair_id"]), str(r["repetition"]), str(r["error"])]
                 for _, r in errs.iterrows()]
        sec.tables.append(Table(["test", "size", "pairs", "pair", "repetition", "reason"],
                                erows, caption=f"{len(errs)} error row(s)",
                                classes=["bad"] * len(erows), css="errors"))
    return sec


def worst_pair_section(df: pd.DataFrame) -> Section:
    """Multi-pair points: what the worst pair did next to the pooled aggregate (medians over
    repetitions; the pair named is the one most often worst)."""
    sec = Section("Worst pair")
    agg = df[is_headline(df) & (df["status"] == "ok") & (df["pairs"] > 1)]
    agg = agg[agg["worst_lat_us_p50"].notna() | agg["min_pair_bw_share"].notna()]
    if agg.empty:
        sec.paragraphs.append("No multi-pair point carries worst-pair columns (schema version "
                              "1 data, one pair, or collectives only).")
        return sec
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
                     size_label(int(key[3])), str(int(key[4])), fmt.num(pooled),
                     most("worst_lat_pair_id"), fmt.num(worst), fmt.ratio(ratio),
                     most("min_bw_pair_id"), fmt.num(g["min_pair_bw_gbit_s"].median()),
                     fmt.pct(100 * share) if pd.notna(share) else ""])
        classes.append("bad" if ratio > WORST_RATIO_MARK or share < SHARE_MARK else "")
    head = ["test", "variant", "size", "pairs", "pooled p50 (µs)", "worst pair",
            "its p50 (µs)", "worst / pooled", "slowest pair", "its bandwidth (Gbit/s)",
            "share of mean pair"]
    sec.paragraphs.append(f"Marked: worst pair's p50 above {WORST_RATIO_MARK}× the pooled "
                          f"p50, or the slowest pair below {SHARE_MARK:.0%} of the mean pair "
                          "bandwidth.")
    numeric = [False] * 4 + [True, False, True, True, False, True, True]  # pair ids: labels
    sec.tables.append(Table(head, rows, numeric, classes))
    return sec


def devices_section(df: pd.DataFrame) -> Section | None:
    """Points measured on several devices: each device's aggregate (its own global window)
    and Jain's fairness across the devices (medians over repetitions); None without them."""
    fair = device_fairness(df)
    if fair.empty:
        return None
    sec = Section("Devices")
    dev = df[(df["pair_id"] == "all") & (df["scope"] == "device") & (df["status"] == "ok")]
    rows = []
    for key, g in fair.groupby(["test", "variant", "msg_size_bytes", "pairs"], dropna=False,
                               sort=True):
        d = dev[(dev["test"] == key[0]) & (dev["msg_size_bytes"] == key[2])
                & (dev["pairs"] == key[3])]
        per = d.groupby("device")["bw_gbit_s"].median()
        rows.append([key[0], key[1] if isinstance(key[1], str) else "", size_label(int(key[2])),
                     str(int(key[3])), ", ".join(f"{n}: {fmt.num(v)}" for n, v in per.items()),
                     fmt.num(g["device_fairness"].median())])
    head = ["test", "variant", "size", "pairs", "bandwidth per device (Gbit/s)",
            "fairness across devices (Jain)"]
    sec.paragraphs.append("Each device's aggregate is computed over its own pairs' global "
                          "window; fairness is Jain's index over the devices' bandwidth.")
    sec.tables.append(Table(head, rows, [False] * 4 + [False, True]))
    return sec


def congestion_section(run: Path) -> Section | None:
    """Which congestion and error counters moved at which point on which node (issue 35);
    None for a run without counters.csv."""
    got = congestion.table(run) if run.is_dir() else None
    if got is None:
        return None
    text, rows = got
    sec = Section("Congestion and error counters", paragraphs=[text])
    if rows:
        sec.tables.append(Table(congestion.HEAD, rows, congestion.NUMERIC))
    else:
        sec.paragraphs.append("No congestion or error counter moved at any point.")
    return sec


def plots_section(runs: list[tuple[str, pd.DataFrame, dict]]) -> Section:
    sec = Section("Plots")
    with tempfile.TemporaryDirectory(prefix="pairbench-report-") as tmp:
        try:
            files = plot_runs(runs, Path(tmp), formats=("png",))
        except UsageError as exc:
            sec.paragraphs.append(f"No plots: {exc}")
            return sec
        for f in files:
            if f.suffix == ".png":
                sec.figures.append({"name": f.stem,
                                    "b64": base64.b64encode(f.read_bytes()).decode("ascii")})
    return sec


COMPARE_HEAD = ["test", "variant", "size", "pairs", "metric", "base", "new", "new / base",
                "change", "reps base/new", "q", "verdict", "gate", "evidence"]


def changed_section(base_meta: dict, meta: dict) -> Section:
    """What changed between BASE's and this run's environments (issue 25), before any
    verdict: firmware, driver, kernel, libraries, CPU, memory, PCIe, link, MTU, pinning."""
    d = env_diff(base_meta, meta)
    sec = Section("What changed since the base")
    if d.missing:
        sec.paragraphs.append(f"Unknown: {' and '.join(d.missing)} has no metadata.json "
                              "fingerprint.")
    elif not d.changes:
        sec.paragraphs.append(f"Nothing in the environment records ({d.compared} values "
                              "compared).")
    else:
        sec.paragraphs.append("From both runs' metadata.json (fingerprint and the points' "
                              "environment records); the verdicts below include these "
                              "changes.")
        sec.items = [c.line() for c in d.changes]
    if d.host is not None and not d.host.moved:
        sec.items += [f"flagged: {s.line()}" for s in d.host.slow]
    return sec


def host_canary_section(meta: dict, base_meta: dict | None = None) -> Section | None:
    """The host canary per repetition (issue 37): the median CPU-loop time and CPU share of
    its points and their longest clock gap; a repetition taken while the host was slow is
    flagged (analysis/canary.py, docs/compare-and-accept.md "The host canary")."""
    if base_meta is not None and canary.samples(base_meta) and canary.samples(meta):
        h = canary.compare(base_meta, meta)
        sides = [("base", "BASE", h.base), ("this run", "NEW", h.new)]
    else:
        h = canary.single(meta)
        if not h.new:
            return None
        sides = [("this run", "", h.new)]
    slow: dict[tuple[str, int], list[str]] = {}
    for s in h.slow:
        slow.setdefault((s.side, s.repetition), []).append(
            f"SLOW ({s.factor:.1f}×{'' if s.measure == canary.LOOP.name else ' less CPU'})")
    sec = Section("Host canary")
    sec.paragraphs.append(
        "A short probe of the host's own speed, no adapter involved, taken by the executable "
        "at every point: the time per iteration of a fixed CPU loop (the CPU's speed while "
        "the process runs), the share of a 30 ms spin the process got (how much CPU it got), "
        "and the longest gap between two clock reads in that spin. A repetition is flagged "
        "slow when either measure is worse than its reference (the base's median with a "
        "base, else the run's own) by at least 1.25×, or by more when the canary's own "
        "repetitions spread more (docs/compare-and-accept.md).")
    if base_meta is not None and h.moved:
        sec.paragraphs.append(h.line() + ": the comparison is inconclusive, not the "
                              "adapter's regression.")
    rows, classes = [], []
    for label, side, reps in sides:
        for r in reps:
            flag = ", ".join(slow.get((side, r.repetition), []))
            rows.append(([label] if len(sides) > 1 else []) + [
                str(r.repetition), fmt.num(r.cpu_loop_ns),
                fmt.num(r.cpu_share) if r.cpu_share is not None else "—",
                fmt.num(r.max_gap_us) if r.max_gap_us is not None else "—", str(r.points),
                flag])
            classes.append("bad" if flag else "")
    head = (["run"] if len(sides) > 1 else []) + [
        "repetition", "CPU loop (ns per iteration, median of its points)", "CPU share",
        "longest clock gap (µs)", "points", "flag"]
    sec.tables.append(Table(head, rows, classes=classes))
    return sec


def imported_section(meta: dict) -> Section | None:
    """Where an imported run's numbers come from (`pairbench import`, docs/import.md): the
    tool, each file with its version, command line and sha256, and what was not imported."""
    imp = meta.get("imported")
    if meta.get("kind") != "pairbench import" or not isinstance(imp, dict):
        return None
    sec = Section("Imported numbers")
    sec.paragraphs.append(
        f"These numbers were not measured by pairbench: they were imported from "
        f"{imp.get('tool', '?')} outputs ({len(imp.get('files') or [])} file(s)), with that "
        "tool's timing method (docs/import.md); compare refuses to set them against another "
        "tool's unless --across-tools.")
    rows = []
    for f in imp.get("files") or []:
        benches = f.get("benchmarks") or []
        lost = sorted({c for b in benches for c in b.get("not_imported") or []})
        rows.append([Path(str(f.get("path", ""))).name, str(f.get("version") or "—"),
                     str(f.get("command") or "—"),
                     ", ".join(f"{b.get('test')} (rep {b.get('repetition')})" for b in benches),
                     ", ".join(lost) or "—", str(f.get("sha256", ""))])
    sec.tables.append(Table(["file", "version", "command", "benchmarks", "not imported",
                             "sha256"], rows))
    if imp.get("set"):
        sec.paragraphs.append("Added by the user (--set): " + ", ".join(
            f"{k}={v}" for k, v in imp["set"].items()))
    return sec


def compare_section(res: pd.DataFrame | None, error: str, base_name: str) -> Section:
    sec = Section("Comparison with base")
    if res is None:
        sec.paragraphs.append(f"Comparison not possible: {error}")
        return sec
    order = {v: i for i, v in enumerate(findings.ORDER)}
    res = res.assign(_o=res["verdict"].map(order).fillna(len(order))).sort_values(
        ["_o", "layer", "test", "pairs", "msg_size_bytes"], kind="stable")
    rows, classes = [], []
    for _, r in res.iterrows():
        rows.append([r["test"], r["variant"], size_label(int(r["msg_size_bytes"])),
                     str(r["pairs"]), r["metric"], fmt.num(r["base"]), fmt.num(r["new"]),
                     fmt.ratio(r["ratio"]),
                     f"{r['change_pct']:+.1f} %" if math.isfinite(r["change_pct"]) else "",
                     f"{r['n_base']}/{r['n_new']}", fmt.num(r["q_value"], 2),
                     r["verdict"], r["gate"], r["evidence"]])
        v = r["verdict"]
        classes.append("bad" if v.endswith("regression") else "good"
                       if v.endswith("improvement") else "")
    sec.paragraphs.append(f"BASE {base_name}; ratio = NEW / BASE; default thresholds (see "
                          "docs/compare-and-accept.md). Regressions first.")
    sec.items = method_lines(res)
    sec.tables.append(Table(COMPARE_HEAD, rows, [False] * 5 + [True] * 6 + [False] * 3,
                            classes))
    return sec


def noise_section(df: pd.DataFrame) -> Section | None:
    """Run-to-run noise and detectable changes (`pairbench noise`), if >= 2 repetitions."""
    from pairbench.analysis.noise import noise_frame
    from pairbench.present.noise import NOISE_COLS, assumption_lines, noise_rows

    if df["repetition"].nunique() < 2:
        return None
    sec = Section("Run-to-run noise and what compare can detect")
    try:
        res = noise_frame(df, Thresholds())
    except UsageError as exc:
        sec.paragraphs.append(f"No noise estimate: {exc}")
        return sec
    rows = [[_readable(c) for c in r] for r in noise_rows(res)]
    sec.tables.append(Table(list(NOISE_COLS), rows))
    sec.items = assumption_lines(res)
    return sec


def _readable(v: object) -> str:
    """A value of a table another module built: numbers through fmt, the rest as text."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int | float):
        return fmt.num(v)
    text = "" if v is None else str(v)
    try:
        x = float(text)
    except ValueError:
        return text
    return fmt.num(x) if ("e" in text.lower() and math.isfinite(x)) else text


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


def _env_value(v: object, none: str = "—") -> str:
    if v is None:
        return none
    if isinstance(v, list):
        return ", ".join(_env_value(x) for x in v) or "—"
    return _readable(v)


def environment_section(meta: dict) -> Section:
    sec = Section("Environment fingerprint")
    if not meta:
        sec.paragraphs.append("No metadata.json: fingerprint missing.")
        return sec
    sec.paragraphs.append("From metadata.json (which keeps the raw record).")
    keep = {k: v for k, v in meta.items() if k not in ("points", "pinning", "tests",
                                                      "host_canary")}
    # null in the fingerprint: not found on the machine; elsewhere (config): not set.
    rows = [[k, _env_value(v, "— (not recorded)" if k.startswith("fingerprint") else "—")]
            for k, v in _flatten(keep)]
    sec.tables.append(Table(["field", "value"], rows, css="env"))
    return sec


def _device(meta: dict) -> str:
    fp = meta.get("fingerprint") or {}
    rig = fp.get("rig") or {}
    if rig.get("PB_RDMA_DEVICE"):
        return str(rig["PB_RDMA_DEVICE"])
    devs = fp.get("rdma_devices") or []
    return str(devs[0].get("name")) if devs and (meta.get("config") or {}).get(
        "layer") == "verbs" else ""


def pinning_section(meta: dict) -> Section | None:
    pin = meta.get("pinning") or {}
    if not pin:
        return None
    sec = Section("Pinning (one row per process)")
    dev = _device(meta)
    rows, classes = [], []
    for point, places in pin.items():
        if not isinstance(places, list):
            rows.append([point, "", "", "", "", "", "", "", str(places)])
            classes.append("")
            continue
        for pl in places:
            if not isinstance(pl, dict):
                continue
            verified = pl.get("verified")
            rows.append([point, _env_value(pl.get("pair")), str(pl.get("role", "")),
                         str(pl.get("host", "")), str(pl.get("device", dev) or ""),
                         _env_value(pl.get("pu")), _env_value(pl.get("cpu")),
                         _env_value(pl.get("numa_node")),
                         "yes" if verified else "NO" if verified is False else "—"])
            classes.append("bad" if verified is False else "")
    head = ["point", "pair", "side", "host", "device", "PU bound", "CPU", "NUMA node",
            "verified"]
    keep = [i for i in range(len(head)) if any(r[i] not in ("", "—") for r in rows)]
    sec.tables.append(Table([head[i] for i in keep], [[r[i] for i in keep] for r in rows],
                            classes=classes))
    return sec


def build_report(run: Path, base: Path | None, extra: list[tuple[str, str]] | None = None
                 ) -> str:
    """The report's HTML. extra: (title, html) sections the caller adds (after the
    tables, before the plots)."""
    import jinja2

    df, meta = load_run(run), load_metadata(run)
    df = infer_legacy(df, meta)
    tables = testtable.tables_for_run(meta)
    runs = [(run_label(run, meta), df, meta)]
    res, cmp_error, base_meta = None, "", {}
    if base is not None:
        base_df, base_meta = load_run(base), load_metadata(base)
        base_df = infer_legacy(base_df, base_meta)
        runs.insert(0, (run_label(base, base_meta), base_df, base_meta))
        try:
            res = compare_frames(base_df, df, Thresholds())
        except UsageError as exc:
            cmp_error = str(exc)
    found = findings.compute(df, meta, tables, res)
    if base is not None and res is None:
        found.verdict = [f"comparison not possible: {cmp_error}"]
    sections = [data_section(df, tables), worst_pair_section(df)]
    imp = imported_section(meta)
    if imp is not None:
        sections.insert(0, imp)
    devices = devices_section(df)
    if devices is not None:
        sections.append(devices)
    noise = noise_section(df)
    if noise:
        sections.append(noise)
    if base is not None:
        sections.append(changed_section(base_meta, meta))
        sections.append(compare_section(res, cmp_error, str(base)))
    cong = congestion_section(run)
    if cong is not None:
        sections.append(cong)
    host = host_canary_section(meta, base_meta if base is not None else None)
    if host is not None:
        sections.append(host)
    sections += [Section(t, html=h) for t, h in extra or []]
    sections += [plots_section(runs), environment_section(meta)]
    pin = pinning_section(meta)
    if pin:
        sections.append(pin)
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("pairbench.present", "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    title = f"pairbench report: {run_label(run, meta)}"
    return env.get_template("report.html.j2").render(
        title=title, generated=datetime.now(UTC).isoformat(timespec="seconds"),
        version=__version__, run=str(run), base=str(base) if base else "",
        findings=found, sections=sections)


def write_report(run: Path, base: Path | None = None, out: Path | None = None,
                 extra: list[tuple[str, str]] | None = None) -> Path:
    """The report of RUN (vs BASE) into OUT (default RUN/report.html); says where."""
    text = build_report(run, base, extra)
    where = out or (run / "report.html" if run.is_dir()
                    else run.with_name(run.stem + "-report.html"))
    write_output(where, text, "--out" if out else "report")
    print(f"report: {where}")
    return where
