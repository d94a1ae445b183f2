"""`pairbench plot`."""

from __future__ import annotations

import argparse
from pathlib import Path

from pairbench.contract.sizes import parse_sizes
from pairbench.present.plot import load_runs, plot_runs


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", metavar="RUN", help="run directory or data CSV")
    p.add_argument("--out", default=None, help="output directory (default RUN/plots)")
    p.add_argument("--at-sizes", default=None,
                   help="sizes for the vs-pairs and fairness figures (default: smallest, "
                        "middle, largest)")
    p.add_argument("--label", action="append", default=[],
                   help="legend label per RUN (default: metadata label or directory name)")


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


