"""`pairbench show`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pairbench.present.show import render


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", metavar="RUN", help="run directory or data CSV")
    p.add_argument("base", metavar="BASE", nargs="?", default=None,
                   help="optional base run to compare with")
    p.add_argument("--width", type=int, default=None, help="terminal width (default: auto)")


def run_show(ns: argparse.Namespace) -> int:
    sys.stdout.write(render(Path(ns.run), Path(ns.base) if ns.base else None,
                            color=sys.stdout.isatty(), width=ns.width))
    return 0


