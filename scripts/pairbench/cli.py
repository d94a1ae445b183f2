"""The `pairbench` command line: sweep | plot | compare | accept | report | default."""

from __future__ import annotations

import argparse
import sys

from pairbench import __version__
from pairbench.errors import UsageError


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad usage as one line and exit 2 (its default is a usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    from pairbench import accept, compare, default, plot, report, sweep

    p = _Parser(prog="pairbench", description=__doc__)
    p.add_argument("--version", action="version", version=f"pairbench {__version__}")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    sweep.add_arguments(sub.add_parser("sweep", help="run sizes x pairs x tests into a new run "
                                       "directory"))
    plot.add_arguments(sub.add_parser("plot", help="PNG and SVG plots of a run"))
    compare.add_arguments(sub.add_parser("compare", help="BASE vs NEW: ratios and a "
                                         "noise-aware verdict"))
    accept.add_arguments(sub.add_parser("accept", help="check a run against an acceptance spec"))
    report.add_arguments(sub.add_parser("report", help="one self-contained HTML report"))
    default.add_arguments(sub.add_parser("default", help="the embedded default run (verbs on "
                                         "the Soft-RoCE rig, MPI on this node, plots, reports)"))
    return p


def main(argv: list[str] | None = None) -> int:
    from pairbench import accept, compare, default, plot, report, sweep

    parser = build_parser()
    ns = parser.parse_args(argv)
    handlers = {"sweep": sweep.run_sweep, "plot": plot.run_plot, "compare": compare.run_compare,
                "accept": accept.run_accept, "report": report.run_report,
                "default": default.run_default, None: default.run_default}
    if ns.command is None:
        ns = parser.parse_args(["default", *(argv if argv is not None else sys.argv[1:])])
    try:
        return handlers[ns.command](ns)
    except UsageError as exc:
        print(f"pairbench {ns.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("pairbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
