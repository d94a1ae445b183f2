"""`pairbench plot RUN [RUN...]`: PNG and SVG figures of one run (or several, overlaid).

Per (layer, test, variant): latency vs size per pair count (log-log), aggregate bandwidth vs
size per pair count, latency and bandwidth vs pair count at chosen sizes (the "zero
scalable latency" view), and per-pair values at the largest pair count (fairness).
Every value plotted is the median over repetitions of the aggregate (pair_id=all) row,
except the fairness figure, which shows the per-pair rows.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from pairbench.analysis import device_label, median_by_point, test_label
from pairbench.errors import UsageError
from pairbench.safeio import output_dir, write_output
from pairbench.schema import load_metadata, load_run
from pairbench.sizes import parse_sizes, size_label

if TYPE_CHECKING:
    import matplotlib.pyplot as plt


def _pyplot():
    """matplotlib with the Agg backend, imported only when plotting: it is slow to import,
    and the sweep inside the emulated VM must not pay for it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


LAT = "lat_us_p50"
BW = "bw_gbit_s"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", metavar="RUN", help="run directory or data CSV")
    p.add_argument("--out", default=None, help="output directory (default RUN/plots)")
    p.add_argument("--at-sizes", default=None,
                   help="sizes for the vs-pairs and fairness figures (default: smallest, "
                        "middle, largest)")
    p.add_argument("--label", action="append", default=[],
                   help="legend label per RUN (default: metadata label or directory name)")


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


def _save(fig: plt.Figure, out: Path, stem: str, written: list[Path]) -> None:
    for ext in ("png", "svg"):
        path = out / f"{stem}.{ext}"
        buf = io.BytesIO()
        fig.savefig(buf, format=ext, dpi=110, bbox_inches="tight")
        write_output(path, buf.getvalue(), "plot")
        written.append(path)
    _pyplot().close(fig)


def _pick_sizes(sizes: list[int], wanted: list[int] | None) -> list[int]:
    if wanted:
        return [s for s in wanted if s in sizes]
    if len(sizes) <= 3:
        return sizes
    return [sizes[0], sizes[len(sizes) // 2], sizes[-1]]


def plot_runs(runs: list[tuple[str, pd.DataFrame, dict]], out: Path,
              at_sizes: list[int] | None = None) -> list[Path]:
    """Write the figures for every (layer, test, variant) found; return the files written."""
    plt = _pyplot()
    output_dir(out, "--out")
    written: list[Path] = []
    frames = []
    for label, df, _meta in runs:
        m = median_by_point(df, [LAT, BW])
        m["run"] = label
        frames.append(m)
    med = pd.concat(frames, ignore_index=True)
    multi = len(runs) > 1
    device = " vs ".join(device_label(meta) for _l, _d, meta in runs)
    for (layer, test, variant), g in med.groupby(["layer", "test", "variant"], dropna=False):
        variant = variant if isinstance(variant, str) else ""
        stem = f"{layer}-{test}" + (f"-{variant}" if variant else "")
        title = f"{layer} {test_label(test, variant, layer)} — {device}"
        for metric, ylabel, name in ((LAT, "latency p50 (µs)", "lat-vs-size"),
                                     (BW, "aggregate bandwidth (Gbit/s)", "bw-vs-size")):
            if g[metric].notna().sum() == 0:
                continue
            fig, ax = plt.subplots(figsize=(7, 4.5))
            for (run, pairs), s in g.groupby(["run", "pairs"]):
                s = s.sort_values("msg_size_bytes").dropna(subset=[metric])
                lab = f"{run}: {int(pairs)} pair(s)" if multi else f"{int(pairs)} pair(s)"
                ax.plot(s["msg_size_bytes"], s[metric], marker="o", label=lab)
            _size_axis(ax)
            _plain_log_y(ax)
            ax.set_ylabel(ylabel)
            ax.set_title(title, fontsize=10)
            ax.legend(fontsize=8)
            _save(fig, out, f"{stem}-{name}", written)
        sizes = sorted(int(s) for s in g["msg_size_bytes"].unique())
        chosen = _pick_sizes(sizes, at_sizes)
        metrics = [m for m in (LAT, BW) if g[m].notna().any()]
        if chosen and metrics:
            fig, axes = plt.subplots(1, len(metrics), figsize=(6 * len(metrics), 4.2),
                                     squeeze=False)
            for ax, metric in zip(axes[0], metrics, strict=True):
                for (run, size), s in g[g["msg_size_bytes"].isin(chosen)].groupby(
                        ["run", "msg_size_bytes"]):
                    s = s.sort_values("pairs").dropna(subset=[metric])
                    lab = f"{run}: {size_label(int(size))}" if multi else size_label(int(size))
                    ax.plot(s["pairs"], s[metric], marker="o", label=lab)
                ax.set_xticks(sorted(int(x) for x in g["pairs"].unique()))
                ax.set_xlabel("pairs running at once")
                ax.set_ylabel("latency p50 (µs)" if metric == LAT
                              else "aggregate bandwidth (Gbit/s)")
                ax.grid(True, alpha=0.3)
                ax.legend(fontsize=8)
            fig.suptitle(f"{title}: scaling with pairs", fontsize=10)
            _save(fig, out, f"{stem}-vs-pairs", written)
        _plot_fairness(runs, layer, test, variant, chosen, out, stem, title, written)
    if not written:
        raise UsageError("nothing to plot: no ok aggregate rows with latency or bandwidth")
    return written


def _plot_fairness(runs: list[tuple[str, pd.DataFrame, dict]], layer: str, test: str,
                   variant: str, chosen: list[int], out: Path, stem: str, title: str,
                   written: list[Path]) -> None:
    """Per-pair value at the largest pair count (bandwidth if measured, else latency p50)."""
    plt = _pyplot()
    for label, df, _meta in runs:
        d = df[(df["layer"] == layer) & (df["test"] == test) & (df["status"] == "ok")
               & (df["variant"].fillna("") == variant) & (df["pair_id"] != "all")]
        if d.empty:
            continue
        pmax = d["pairs"].max()
        d = d[(d["pairs"] == pmax) & d["msg_size_bytes"].isin(chosen)]
        metric = BW if d[BW].notna().any() else LAT
        d = d.dropna(subset=[metric])
        if d.empty:
            continue
        per = d.groupby(["msg_size_bytes", "pair_id"])[metric].median().reset_index()
        allrows = df[(df["layer"] == layer) & (df["test"] == test) & (df["pair_id"] == "all")
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
        ax.set_xlabel("pair id")
        ax.set_ylabel("bandwidth per pair (Gbit/s)" if metric == BW
                      else "latency p50 per pair (µs)")
        ax.set_title(f"{title}: per pair, {int(pmax)} pairs ({label})", fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
        suffix = "" if len(runs) == 1 else "-" + "".join(c if c.isalnum() else "_" for c in label)
        _save(fig, out, f"{stem}-per-pair{suffix}", written)


def load_runs(paths: list[str], labels: list[str]) -> list[tuple[str, pd.DataFrame, dict]]:
    if labels and len(labels) != len(paths):
        raise UsageError(f"{len(labels)} --label for {len(paths)} runs")
    runs = []
    for i, p in enumerate(paths):
        path = Path(p)
        df = load_run(path)
        meta = load_metadata(path)
        runs.append((labels[i] if labels else run_label(path, meta), df, meta))
    return runs


def run_plot(ns: argparse.Namespace) -> int:
    runs = load_runs(ns.runs, ns.label)
    first = Path(ns.runs[0])
    if ns.out:
        out = Path(ns.out)
    else:
        out = first / "plots" if first.is_dir() else first.with_name(first.stem + "-plots")
    at = parse_sizes(ns.at_sizes) if ns.at_sizes else None
    written = plot_runs(runs, out, at)
    print(f"plot: {len(written)} files in {out}")
    return 0
