"""`pairbench plot RUN [RUN...]`: PNG and SVG figures of one run (or several, overlaid).

Per (layer, test, variant): latency vs size per pair count (log-log), aggregate bandwidth vs
size per pair count, latency and bandwidth vs pair count at chosen sizes (the "zero
scalable latency" view), and per-pair values at the largest pair count (fairness).
Every value plotted is the median over repetitions of the aggregate (pair_id=all) row,
except the fairness figure, which shows the per-pair rows.

Points whose rows carry the flag oversubscribed or above_link_rate are drawn with hollow
markers (the legend says so); the "vs pairs" latency figure draws the 1-pair value as a
dashed reference line; bandwidth figures draw the link rate as a line where it is known
(rows with link_pct: link rate = bw_gbit_s / link_pct x 100).  Pair counts and pair ids
are integer ticks, sizes are labelled B/KiB/MiB.  Runs with incast / fan-out points get one
more figure per point size: hub aggregate, victim inflation and per-flow share vs senders
(present/patternplot.py).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from pairbench.analysis.flags import infer_legacy, row_flags
from pairbench.analysis.frames import (
    device_label,
    is_headline,
    latency_metric,
    median_by_point,
    test_label,
)
from pairbench.analysis.load import load_run
from pairbench.contract.schema import load_metadata
from pairbench.contract.sizes import size_label
from pairbench.errors import UsageError
from pairbench.io.safeio import output_dir, write_output
from pairbench.present.patternplot import plot_patterns

if TYPE_CHECKING:
    import matplotlib.pyplot as plt


def _pyplot():
    """matplotlib with the Agg backend, imported only when plotting: it is slow to import,
    and the sweep inside the emulated VM must not pay for it."""
    import matplotlib

    matplotlib.use("Agg")
    # SVG text as <text> elements, not one path per glyph: searchable and selectable, a
    # fraction of the file, and a quarter of a cell-valued heatmap's drawing time
    matplotlib.rcParams["svg.fonttype"] = "none"
    import matplotlib.pyplot as plt

    return plt


LAT = "lat_us_p50"
LAT_MEAN = "lat_us_mean"   # the one latency of block-timed rows (pairbench-mpi --timing block)
BW = "bw_gbit_s"
DRAWN_FLAGS = {"oversubscribed", "above_link_rate"}
FLAG_NOTE = "hollow: flagged (oversubscribed / above link rate)"


def _flagged(df: pd.DataFrame) -> set[tuple]:
    """(layer, test, variant, size, pairs) of headline rows carrying a drawn flag."""
    agg = df[is_headline(df)]
    hit = row_flags(agg).map(lambda s: bool(s & DRAWN_FLAGS))
    return {(r.layer, r.test, r.variant if isinstance(r.variant, str) else "",
             int(r.msg_size_bytes), int(r.pairs)) for r in agg[hit].itertuples()}


def _link_gbit(df: pd.DataFrame, layer: str, test: str) -> float | None:
    """The link rate rows were judged against (x 2 for bidirectional tests), if known."""
    agg = df[is_headline(df) & (df["layer"] == layer) & (df["test"] == test)
             & (df["link_pct"] > 0) & (df["bw_gbit_s"] > 0)]
    if agg.empty:
        return None
    return float((agg["bw_gbit_s"] / agg["link_pct"] * 100).median())


def _line(ax: plt.Axes, x: list, y: list, hollow: list[bool], label: str) -> None:
    """A line with filled markers, hollow where the point is flagged."""
    (ln,) = ax.plot(x, y, marker="o", label=label)
    fx = [a for a, h in zip(x, hollow, strict=True) if h]
    fy = [b for b, h in zip(y, hollow, strict=True) if h]
    if fx:
        ax.plot(fx, fy, linestyle="none", marker="o", markersize=9, markerfacecolor="white",
                markeredgecolor=ln.get_color(), markeredgewidth=1.5)


def _legend(ax: plt.Axes, any_flagged: bool) -> None:
    from matplotlib.lines import Line2D

    handles, labels = ax.get_legend_handles_labels()
    if any_flagged:
        handles.append(Line2D([], [], linestyle="none", marker="o", markersize=8,
                              markerfacecolor="white", markeredgecolor="black"))
        labels.append(FLAG_NOTE)
    ax.legend(handles, labels, fontsize=8)


def _int_ticks(ax: plt.Axes, axis: str = "x") -> None:
    from matplotlib.ticker import MaxNLocator

    (ax.xaxis if axis == "x" else ax.yaxis).set_major_locator(MaxNLocator(integer=True))


def run_label(run: Path, meta: dict) -> str:
    if meta.get("label"):
        return str(meta["label"])
    return run.name if run.is_dir() else run.stem


def _size_axis(ax: plt.Axes) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=2))
    ax.xaxis.set_major_formatter(FuncFormatter(
        lambda v, _p: size_label(round(v)) if v >= 1 else f"{v:g}"))
    ax.set_xlabel("message size")
    ax.grid(True, which="both", alpha=0.3)


def _plain_log_y(ax: plt.Axes) -> None:
    from matplotlib.ticker import FuncFormatter

    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    # Minor ticks: label only 2x and 5x a power of ten, so labels do not overlap.
    ax.yaxis.set_minor_formatter(FuncFormatter(
        lambda v, _p: f"{v:g}" if f"{v:e}"[0] in "25" else ""))


FORMATS = ("png", "svg")  # what `pairbench plot` writes: a raster to look at, a vector to print


def figure_bytes(fig: plt.Figure, formats: tuple[str, ...], dpi: int = 110) -> list[bytes]:
    """The figure in each format, cropped to its tight bounding box (what
    bbox_inches="tight" gives), that box found once for all formats: savefig would lay out
    every text again for each format only to find the same border."""
    from matplotlib import rcParams

    box = fig.get_tightbbox(fig.canvas.get_renderer()).padded(rcParams["savefig.pad_inches"])
    out = []
    for ext in formats:
        buf = io.BytesIO()
        fig.savefig(buf, format=ext, dpi=dpi, bbox_inches=box)
        out.append(buf.getvalue())
    return out


def _save(fig: plt.Figure, out: Path, stem: str, written: list[Path],
          formats: tuple[str, ...] = FORMATS) -> None:
    for ext, data in zip(formats, figure_bytes(fig, formats), strict=True):
        path = out / f"{stem}.{ext}"
        write_output(path, data, "plot")
        written.append(path)
    _pyplot().close(fig)


def _pick_sizes(sizes: list[int], wanted: list[int] | None) -> list[int]:
    if wanted:
        return [s for s in wanted if s in sizes]
    if len(sizes) <= 3:
        return sizes
    return [sizes[0], sizes[len(sizes) // 2], sizes[-1]]


def plot_runs(runs: list[tuple[str, pd.DataFrame, dict]], out: Path,
              at_sizes: list[int] | None = None,
              formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """Write the figures for every (layer, test, variant) found, in each of formats; return
    the files written. The report asks for PNG only (it embeds nothing else): an SVG costs
    about as much again to draw."""
    plt = _pyplot()
    output_dir(out, "--out")
    written: list[Path] = []
    frames = []
    flagged: dict[str, set[tuple]] = {}
    links: dict[tuple[str, str], float] = {}
    for label, df, _meta in runs:
        m = median_by_point(df, [LAT, LAT_MEAN, BW])
        m["run"] = label
        frames.append(m)
        flagged[label] = _flagged(df)
        for layer, test in df[["layer", "test"]].drop_duplicates().itertuples(index=False):
            rate = _link_gbit(df, layer, test)
            if rate:
                links[(layer, test)] = rate
    med = pd.concat(frames, ignore_index=True)
    multi = len(runs) > 1
    device = " vs ".join(device_label(meta) for _l, _d, meta in runs)
    for (layer, test, variant), g in med.groupby(["layer", "test", "variant"], dropna=False):
        variant = variant if isinstance(variant, str) else ""
        stem = f"{layer}-{test}" + (f"-{variant}" if variant else "")
        title = f"{layer} {test_label(test, variant, layer)} — {device}"
        lat = latency_metric(g)
        lat_ylabel = "latency p50 (µs)" if lat == LAT else "latency mean, block-timed (µs)"
        for metric, ylabel, name in ((lat, lat_ylabel, "lat-vs-size"),
                                     (BW, "aggregate bandwidth (Gbit/s)", "bw-vs-size")):
            if g[metric].notna().sum() == 0:
                continue
            fig, ax = plt.subplots(figsize=(7, 4.5))
            any_flag = False
            for (run, pairs), s in g.groupby(["run", "pairs"]):
                s = s.sort_values("msg_size_bytes").dropna(subset=[metric])
                lab = f"{run}: {int(pairs)} pair(s)" if multi else f"{int(pairs)} pair(s)"
                hollow = [(layer, test, variant, int(z), int(pairs)) in flagged[run]
                          for z in s["msg_size_bytes"]]
                any_flag |= any(hollow)
                _line(ax, list(s["msg_size_bytes"]), list(s[metric]), hollow, lab)
            if metric == BW and (layer, test) in links:
                ax.axhline(links[(layer, test)], color="red", linestyle=":",
                           label=f"link rate {links[(layer, test)]:g} Gbit/s")
            _size_axis(ax)
            _plain_log_y(ax)
            ax.set_ylabel(ylabel)
            ax.set_title(title, fontsize=10)
            _legend(ax, any_flag)
            _save(fig, out, f"{stem}-{name}", written, formats)
        sizes = sorted(int(s) for s in g["msg_size_bytes"].unique())
        chosen = _pick_sizes(sizes, at_sizes)
        metrics = [m for m in (lat, BW) if g[m].notna().any()]
        if chosen and metrics:
            fig, axes = plt.subplots(1, len(metrics), figsize=(6 * len(metrics), 4.2),
                                     squeeze=False)
            for ax, metric in zip(axes[0], metrics, strict=True):
                any_flag = False
                for (run, size), s in g[g["msg_size_bytes"].isin(chosen)].groupby(
                        ["run", "msg_size_bytes"]):
                    s = s.sort_values("pairs").dropna(subset=[metric])
                    lab = f"{run}: {size_label(int(size))}" if multi else size_label(int(size))
                    hollow = [(layer, test, variant, int(size), int(p)) in flagged[run]
                              for p in s["pairs"]]
                    any_flag |= any(hollow)
                    _line(ax, [int(p) for p in s["pairs"]], list(s[metric]), hollow, lab)
                    one = s.loc[s["pairs"] == 1, metric]
                    if metric == lat and len(one):
                        # The reference: what one pair alone gets at this size.
                        ax.axhline(float(one.iloc[0]), color=ax.lines[-1].get_color()
                                   if not any(hollow) else ax.lines[-2].get_color(),
                                   linestyle="--", linewidth=0.8, alpha=0.7,
                                   label=f"1 pair alone, {size_label(int(size))}")
                if metric == BW and (layer, test) in links:
                    ax.axhline(links[(layer, test)], color="red", linestyle=":",
                               label=f"link rate {links[(layer, test)]:g} Gbit/s")
                ax.set_xticks(sorted(int(x) for x in g["pairs"].unique()))
                vals = g.loc[g["msg_size_bytes"].isin(chosen), metric].dropna()
                if len(vals) and vals.min() > 0 and vals.max() / vals.min() > 50:
                    _plain_log_y(ax)  # 1-pair and N-pair values orders of magnitude apart
                ax.set_xlabel("pairs running at once")
                ax.set_ylabel(lat_ylabel if metric == lat else "aggregate bandwidth (Gbit/s)")
                ax.grid(True, alpha=0.3)
                _legend(ax, any_flag)
            fig.suptitle(f"{title}: scaling with pairs", fontsize=10)
            _save(fig, out, f"{stem}-vs-pairs", written, formats)
        _plot_fairness(runs, layer, test, variant, chosen, out, stem, title, written, formats)
    plot_patterns(runs, out, written,  # incast / fan-out points (issue 35)
                  lambda fig, o, stem, w: _save(fig, o, stem, w, formats), _pyplot)
    if not written:
        raise UsageError("nothing to plot: no ok aggregate rows with latency or bandwidth")
    return written


def _plot_fairness(runs: list[tuple[str, pd.DataFrame, dict]], layer: str, test: str,
                   variant: str, chosen: list[int], out: Path, stem: str, title: str,
                   written: list[Path], formats: tuple[str, ...] = FORMATS) -> None:
    """Per-pair value at the largest pair count (bandwidth if measured, else latency p50, or
    the mean of block-timed rows)."""
    plt = _pyplot()
    for label, df, _meta in runs:
        d = df[(df["layer"] == layer) & (df["test"] == test) & (df["status"] == "ok")
               & (df["variant"].fillna("") == variant) & (df["pair_id"] != "all")
               & df["scope"].fillna("").isin(["pair", ""])]
        if d.empty:
            continue
        pmax = d["pairs"].max()
        d = d[(d["pairs"] == pmax) & d["msg_size_bytes"].isin(chosen)]
        metric = BW if d[BW].notna().any() else latency_metric(d)
        d = d.dropna(subset=[metric])
        if d.empty:
            continue
        per = d.groupby(["msg_size_bytes", "pair_id"])[metric].median().reset_index()
        allrows = df[(df["layer"] == layer) & (df["test"] == test) & is_headline(df)
                     & (df["pairs"] == pmax)]
        fig, ax = plt.subplots(figsize=(7, 4.2))
        sizes = sorted(per["msg_size_bytes"].unique())
        width = 0.8 / max(len(sizes), 1)
        for i, size in enumerate(sizes):
            s = per[per["msg_size_bytes"] == size].sort_values(
                "pair_id", key=lambda c: c.astype(int))
            jain = allrows.loc[allrows["msg_size_bytes"] == size, "fairness"].median()
            lab = size_label(int(size)) + (f" (Jain {jain:.3f})" if pd.notna(jain) else "")
            ax.bar([int(x) + i * width for x in s["pair_id"]], s[metric], width=width, label=lab)
        ids = sorted(int(x) for x in per["pair_id"].unique())
        ax.set_xticks([i + width * (len(sizes) - 1) / 2 for i in ids], [str(i) for i in ids])
        ax.set_xlabel("pair id")
        ax.set_ylabel({BW: "bandwidth per pair (Gbit/s)", LAT: "latency p50 per pair (µs)"}
                      .get(metric, "latency mean per pair, block-timed (µs)"))
        note = ("\nflagged oversubscribed: measures the scheduler on this machine"
                if row_flags(d).map(lambda f: "oversubscribed" in f).any() else "")
        ax.set_title(f"{title}: per pair, {int(pmax)} pairs ({label}){note}", fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
        suffix = "" if len(runs) == 1 else "-" + "".join(c if c.isalnum() else "_" for c in label)
        _save(fig, out, f"{stem}-per-pair{suffix}", written, formats)


def load_runs(paths: list[str], labels: list[str]) -> list[tuple[str, pd.DataFrame, dict]]:
    if labels and len(labels) != len(paths):
        raise UsageError(f"{len(labels)} --label for {len(paths)} runs")
    runs = []
    for i, p in enumerate(paths):
        path = Path(p)
        meta = load_metadata(path)
        df = infer_legacy(load_run(path), meta)
        runs.append((labels[i] if labels else run_label(path, meta), df, meta))
    return runs


