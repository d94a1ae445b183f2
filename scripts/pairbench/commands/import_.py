"""`pairbench import`: other tools' outputs as a run directory (docs/import.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pairbench.importers.build import (
    PARSERS,
    SETTABLE,
    build_rows,
    items_of,
    metadata,
    parse_files,
    parse_sets,
    write_run,
)
from pairbench.runner.rundir import repo_root


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from", dest="tool", required=True, choices=list(PARSERS),
                   help="the tool that wrote the files")
    p.add_argument("files", metavar="FILE", nargs="+",
                   help="the tool's outputs; files of one configuration are repetitions")
    p.add_argument("--results-dir", default=None,
                   help="parent of the new run directory (default: <checkout>/results)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="what the outputs do not say, for every row: "
                   f"{', '.join(SETTABLE)} (e.g. --set pairs=3)")


def run_import(ns: argparse.Namespace) -> int:
    sets = parse_sets(ns.sets)
    files = parse_files(ns.tool, [Path(f) for f in ns.files], sets)
    items = items_of(files, sets)
    rows = build_rows(items, sets, "")
    results = Path(ns.results_dir).absolute() if ns.results_dir else repo_root() / "results"
    argv = ["pairbench", "import", "--from", ns.tool, *ns.files,
            *[a for s in ns.sets for a in ("--set", s)]]
    run_dir = write_run(results, ns.tool, rows,
                        lambda run_id: metadata(ns.tool, files, items, rows, sets, run_id, argv))
    n_err = sum(r["status"] == "error" for r in rows)
    points = {(r["test"], r["variant"], r["msg_size_bytes"], r["pairs"]) for r in rows}
    print(f"import: {len(files)} file(s), {len(points)} point(s), {len(rows)} rows, "
          f"{n_err} error rows -> {run_dir}/data.csv", file=sys.stderr)
    print(run_dir, flush=True)
    return 0
