"""`pairbench compare`."""

from __future__ import annotations

import argparse
import json
import sys

from pairbench.analysis.compare import (
    LAYOUT_NOTE,
    add_threshold_arguments,
    compare_frames,
    thresholds_from_args,
    window_method_notes,
)
from pairbench.analysis.envdiff import (
    EXPECTABLE,
    FIELD_NAMES,
    HOST_FIELD,
    diff,
    inconclusive_reasons,
    parse_expected,
)
from pairbench.analysis.gate import EXIT_INCONCLUSIVE, exit_code, run_gate
from pairbench.analysis.imported import across_tools, version_lines
from pairbench.analysis.load import load_run
from pairbench.analysis.verdict import (
    FAILED,
    GATE_INCONCLUSIVE,
    IMPROVEMENT,
    NOT_COMPARABLE,
    REGRESSION,
    SUSPECTED_REGRESSION,
)
from pairbench.contract import testtable
from pairbench.contract.schema import load_metadata
from pairbench.contract.sizes import size_label
from pairbench.errors import UsageError
from pairbench.io.safeio import write_output
from pairbench.present.compare import (
    count_verdict,
    environment_json,
    environment_lines,
    render_markdown,
    render_text,
    summary_lines,
    to_json,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", metavar="BASE", help="baseline run directory or data CSV")
    p.add_argument("new", metavar="NEW", help="new run directory or data CSV")
    add_threshold_arguments(p)
    p.add_argument("--strict", action="store_true",
                   help="also exit 1 on a suspected (unproven) regression or a point that "
                   "cannot be compared")
    p.add_argument("--allow-inconclusive", action="store_true",
                   help="exit 0 instead of 3 when the gate is inconclusive (some comparison "
                   "neither a proven regression nor proven no regression)")
    p.add_argument("--expect-change", action="append", default=[], metavar="FIELD[,FIELD]",
                   help="the environment changes this comparison is about (e.g. fw_ver for a "
                   "firmware upgrade): any other difference between the runs' environments, or "
                   "an expected one that did not happen, makes it inconclusive (exit 3). "
                   f"Fields: {', '.join(EXPECTABLE)}, or a variable of those families by "
                   "name (e.g. OMPI_MCA_btl_vader_single_copy_mechanism). A host canary that "
                   "moved makes the comparison inconclusive unless host is expected")
    p.add_argument("--across-tools", action="store_true",
                   help="compare runs measured by different tools (imported perftest, OSU, IMB, "
                   "nccl-tests runs, or pairbench's): refused without it (docs/import.md)")
    p.add_argument("--format", choices=["table", "markdown", "json"], default="table")
    p.add_argument("--markdown", default=None, metavar="FILE", help="also write Markdown here")
    p.add_argument("--json", default=None, metavar="FILE", help="also write JSON here")


def check_expect_change(items: list[str]) -> None:
    """Every --expect-change value names fields: an empty one ('', 'fw_ver,', an unset shell
    variable) would otherwise expect nothing and silently turn the environment gate off."""
    for item in items:
        if any(not name.strip() for name in item.split(",")):
            raise UsageError(f"--expect-change {item!r}: empty field name (an unset variable?); "
                             f"name the fields expected to change, one of {', '.join(FIELD_NAMES)}")


def run_compare(ns: argparse.Namespace) -> int:
    th = thresholds_from_args(ns)
    check_expect_change(getattr(ns, "expect_change", []))
    expected = parse_expected(getattr(ns, "expect_change", []))
    base, new = load_run(ns.base), load_run(ns.new)
    base, new, tool_lines = across_tools(base, new, bool(getattr(ns, "across_tools", False)))
    tool_lines += version_lines(load_metadata(ns.base), load_metadata(ns.new))
    for line in tool_lines:
        print(f"compare: {line}", file=sys.stderr)
    envd = diff(load_metadata(ns.base), load_metadata(ns.new))
    reasons = inconclusive_reasons(envd, expected)
    env_lines = environment_lines(envd, expected, reasons)
    env_json = environment_json(envd, expected, reasons)
    res = compare_frames(base, new, th)
    for test, variant, size, pairs, layouts in res.attrs.get("layout_mismatches", []):
        b, n = layouts.split("|")
        print(f"compare: warning: {test}{' ' + variant if variant else ''} at "
              f"{size_label(int(size))}, {int(pairs)} pair(s): {LAYOUT_NOTE.format(b=b, n=n)}: "
              "not comparable", file=sys.stderr)
    for test, variant, size, pairs, note in res.attrs.get("timing_mismatches", []):
        print(f"compare: warning: {test}{' ' + variant if variant else ''} at "
              f"{size_label(int(size))}, {int(pairs)} pair(s): {note}: not comparable",
              file=sys.stderr)
    for note in window_method_notes(base, new):
        print(f"compare: warning: {note}", file=sys.stderr)
    summary = summary_lines(res, testtable.tables_for_run(load_metadata(ns.new)))
    strict = bool(getattr(ns, "strict", False))
    allow = bool(getattr(ns, "allow_inconclusive", False))
    if ns.format == "json":
        sys.stdout.write(json.dumps(to_json(res, summary, ns.base, ns.new, th, strict, allow,
                                            env_json), indent=2) + "\n")
    elif ns.format == "markdown":
        sys.stdout.write(render_markdown(res, summary, ns.base, ns.new, env_lines))
    else:
        sys.stdout.write(render_text(res, summary, color=sys.stdout.isatty(), env=env_lines))
    if ns.markdown:
        write_output(ns.markdown, render_markdown(res, summary, ns.base, ns.new, env_lines),
                     "--markdown")
    if ns.json:
        write_output(ns.json, json.dumps(to_json(res, summary, ns.base, ns.new, th, strict,
                                                 allow, env_json), indent=2) + "\n", "--json")
    # An unexpected environment change (or an expected one that did not happen) leaves the
    # comparison unattributable, whatever its verdicts: inconclusive, also with
    # --allow-inconclusive, which is about undecided statistics only.
    code = EXIT_INCONCLUSIVE if reasons else exit_code(res, strict, allow)
    host_moved = HOST_FIELD in envd.fields and HOST_FIELD not in expected
    gate = run_gate(res)
    print(f"compare: gate {gate}{' (allowed)' if allow and gate == GATE_INCONCLUSIVE else ''}; "
          f"{len(res)} comparisons, {count_verdict(res, REGRESSION)} regression(s), "
          f"{count_verdict(res, FAILED)} failed, "
          f"{count_verdict(res, IMPROVEMENT)} improvement(s), "
          f"{count_verdict(res, SUSPECTED_REGRESSION)} suspected regression(s), "
          f"{int((res['gate'] == GATE_INCONCLUSIVE).sum())} inconclusive, "
          f"{count_verdict(res, NOT_COMPARABLE)} not comparable"
          f"{' (strict)' if strict else ''}"
          f"{'; environment inconclusive' if reasons else ''}"
          f"{' (the host speed changed, not the adapter)' if host_moved else ''}"
          f": exit {code}", file=sys.stderr)
    return code


