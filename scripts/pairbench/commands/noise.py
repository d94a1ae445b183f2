"""`pairbench noise`."""

from __future__ import annotations

import argparse
import json
import sys

from pairbench.analysis.compare import (
    add_threshold_arguments,
    parse_fraction,
    thresholds_from_args,
)
from pairbench.analysis.frames import METRICS
from pairbench.analysis.load import load_run
from pairbench.analysis.noise import noise_frame
from pairbench.analysis.verdict import (
    DEFAULT_POWER,
)
from pairbench.errors import UsageError
from pairbench.present.noise import render_text, to_json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", metavar="RUN", help="run directory or data CSV")
    add_threshold_arguments(p)
    p.add_argument("--power", type=float, default=DEFAULT_POWER,
                   help="probability of proving a real change (default 0.8)")
    p.add_argument("--detect", default=None, metavar="CHANGE",
                   help="change that must be caught, e.g. 10%% (default: twice each "
                   "metric's relative threshold)")
    p.add_argument("--format", choices=["table", "json"], default="table")


def run_noise(ns: argparse.Namespace) -> int:
    th = thresholds_from_args(ns)
    if not 0 < ns.power < 1:
        raise UsageError("--power must be in (0, 1)")
    detect = parse_fraction(ns.detect, "--detect") if ns.detect is not None else None
    for m in th.metrics or []:
        if m not in METRICS:
            raise UsageError(f"--metrics: unknown metric {m!r}")
    res = noise_frame(load_run(ns.run), th, ns.power, detect)
    if ns.format == "json":
        sys.stdout.write(json.dumps(to_json(res, ns.run), indent=2) + "\n")
    else:
        sys.stdout.write(render_text(res))
    return 0


