"""The `pairbench` command line: sweep | plot | compare | noise | accept | report | show |
screenshot | fabric | reframe | import | default.

Only the module of the chosen subcommand is imported: `sweep` runs inside the emulated
VM, where importing pandas or matplotlib alone would cost about a minute.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from pairbench import __version__
from pairbench.errors import call, fail, one_line

SUBCOMMANDS = {
    "sweep": ("sweep", "run_sweep", "run sizes x pairs x tests into a new run directory"),
    "plot": ("plot", "run_plot", "PNG and SVG plots of a run"),
    "compare": ("compare", "run_compare", "BASE vs NEW: ratios and a noise-aware verdict"),
    "noise": ("noise", "run_noise", "a run's run-to-run noise and the smallest change "
              "compare would prove with 2, 3, 5, 10 repetitions"),
    "accept": ("accept", "run_accept", "check a run against an acceptance spec"),
    "report": ("report", "run_report", "one self-contained HTML report"),
    "show": ("show", "run_show", "a run's findings and warnings in the terminal"),
    "screenshot": ("screenshot", "run_screenshot", "render a report in headless Chromium: "
                   "PNG, and exit 1 on console messages"),
    "fabric": ("fabric", "run_fabric", "scan every node pair of K nodes in rounds of disjoint "
               "pairs: matrix, heatmap, suspect links and nodes"),
    "reframe": ("reframe", "run_reframe", "a run's medians as ReFrame performance values or "
                "a ReFrame reference table (JSON)"),
    "import": ("import_", "run_import", "perftest, OSU, IMB or nccl-tests outputs as a run "
               "directory (docs/import.md)"),
    "default": ("default", "run_default", "the embedded default run (verbs on the Soft-RoCE "
                "rig, MPI on this node, plots, reports); also `pairbench` alone"),
}


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad usage as one line and exit 2 (its default is a usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: error: {one_line(message)}", file=sys.stderr)
        raise SystemExit(2)


def build_parser(wanted: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `wanted`, only that subcommand's module is imported."""
    p = _Parser(prog="pairbench", description="pairbench driver: sweep, plot, compare, "
                "accept, report (see docs/driver.md)")
    p.add_argument("--version", action="version", version=f"pairbench {__version__}")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    for name, (module, _func, help_text) in SUBCOMMANDS.items():
        sp = sub.add_parser(name, help=help_text)
        if wanted is None or wanted == name:
            importlib.import_module(f"pairbench.commands.{module}").add_arguments(sp)
    return p


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        args = ["default"]
    wanted = args[0] if args[0] in SUBCOMMANDS else None
    ns = build_parser(wanted).parse_args(args)
    if ns.command is None:
        ns = build_parser("default").parse_args(["default", *args])
    module, func, _ = SUBCOMMANDS[ns.command]
    if sys.stdout is None:  # started with stdout closed (>&-): say so before doing anything
        return fail(ns.command, "stdout is closed; redirect it (e.g. >/dev/null or >FILE)")
    handler = getattr(importlib.import_module(f"pairbench.commands.{module}"), func)
    return call(ns.command, lambda: handler(ns))


