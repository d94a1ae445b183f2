"""`pairbench report`."""

from __future__ import annotations

import argparse
from pathlib import Path

from pairbench.present import cntseries as cntout
from pairbench.present import soak as soakout
from pairbench.present.report import write_report


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", metavar="RUN", help="run directory or data CSV")
    p.add_argument("base", metavar="BASE", nargs="?", default=None,
                   help="optional base run to compare with")
    p.add_argument("--out", default=None, help="HTML file (default RUN/report.html)")


def run_report(ns: argparse.Namespace) -> int:
    run = Path(ns.run)
    # A soak (issue 36): its stability block (present/soak.py, templates/stability.html.j2).
    stability = soakout.stability_html(run) if run.is_dir() else None
    # Every node's counters over time (present/cntseries.py; docs/health.md).
    counters = cntout.section_html(run) if run.is_dir() else None
    extra = [(t, s) for t, s in (("Stability (soak)", stability),
                                 ("Counters over time", counters)) if s]
    write_report(run, Path(ns.base) if ns.base else None, Path(ns.out) if ns.out else None,
                 extra=extra or None)
    return 0
