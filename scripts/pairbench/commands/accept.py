"""`pairbench accept`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pairbench.analysis.accept import check_tests, evaluate, load_spec, needs_frame
from pairbench.analysis.flags import infer_legacy
from pairbench.analysis.load import load_run
from pairbench.contract import testtable
from pairbench.contract.schema import load_metadata
from pairbench.io.safeio import write_output
from pairbench.present.accept import junit_xml, render_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", metavar="RUN", help="run directory or data CSV")
    p.add_argument("--spec", required=True, help="acceptance spec TOML "
                   "(see examples/accept-spec.toml)")
    p.add_argument("--junit", default=None, metavar="FILE", help="write JUnit XML here")


def run_accept(ns: argparse.Namespace) -> int:
    spec = load_spec(Path(ns.spec))
    meta = load_metadata(ns.run)
    # a fabric scan judged by fabric criteria alone is read by streaming, not as one frame
    df = infer_legacy(load_run(ns.run), meta) if needs_frame(spec, meta) else None
    check_tests(spec, testtable.tables_for_run(meta))
    rows = evaluate(df, spec, meta, Path(ns.run))
    sys.stdout.write(render_text(spec, rows, color=sys.stdout.isatty()))
    if ns.junit:
        write_output(ns.junit, junit_xml(spec, rows), "--junit")
    return 0 if all(r["verdict"] == "pass" for r in rows) else 1


