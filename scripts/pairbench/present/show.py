"""`pairbench show RUN [BASE]`: the report's headline in the terminal — the same warnings,
comparison verdict and per-test findings (pairbench.present.findings), as rich tables — for people
who live in ssh sessions.  Exit 0 (it judges nothing; `accept` and `compare` do)."""

from __future__ import annotations

import io
from pathlib import Path

from pairbench.analysis.compare import Thresholds, compare_frames
from pairbench.analysis.envdiff import diff as env_diff
from pairbench.analysis.flags import infer_legacy
from pairbench.analysis.load import load_run
from pairbench.contract import testtable
from pairbench.contract.schema import load_metadata
from pairbench.errors import UsageError
from pairbench.present import cntseries as cntout
from pairbench.present import congestion, findings
from pairbench.present import soak as soakout
from pairbench.present.plot import run_label


def render(run: Path, base: Path | None, color: bool, width: int | None) -> str:
    from rich.console import Console
    from rich.panel import Panel
    from rich.table import Table

    df, meta = load_run(run), load_metadata(run)
    df = infer_legacy(df, meta)
    res = None
    if base is not None:
        bdf, bmeta = load_run(base), load_metadata(base)
        try:
            res = compare_frames(infer_legacy(bdf, bmeta), df, Thresholds())
        except UsageError as exc:
            res = None
            verdict_error = str(exc)
    found = findings.compute(df, meta, testtable.tables_for_run(meta), res)
    buf = io.StringIO()
    con = Console(file=buf, width=width or 120, force_terminal=color, no_color=not color,
                  highlight=False, soft_wrap=False)
    con.print(f"[bold]pairbench run {run_label(run, meta)}[/bold]  ({run})")
    if found.warnings:
        con.print(Panel("\n".join(f"• {w.text}" for w in found.warnings),
                        title=f"WARNINGS ({len(found.warnings)})", border_style="red",
                        title_align="left"))
    if base is not None:
        changed = env_diff(bmeta, meta)
        what = ([c.line() for c in changed.changes] or
                ["nothing in the environment records" if not changed.missing else
                 f"unknown ({' and '.join(changed.missing)} without a fingerprint)"])
        con.print(Panel("\n".join(what), title=f"WHAT CHANGED since {base}",
                        title_align="left"))
        lines = found.verdict if res is not None else [
            f"comparison not possible: {verdict_error}"]
        con.print(Panel("\n".join(lines), title=f"COMPARISON with {base}",
                        border_style="red" if found.regressions else "white",
                        title_align="left"))
    for t in found.tests:
        table = Table(title=t.title, title_justify="left", show_header=False, box=None,
                      pad_edge=False)
        table.add_column("what", style="dim" if color else "")
        table.add_column("value")
        for what, value in t.facts:
            table.add_row(what, value)
        con.print(table)
        con.print()
    if not found.tests:
        con.print("no ok aggregate row: nothing was measured")
    stability = soakout.summary_lines(run) if run.is_dir() else []
    if stability:  # a soak (issue 36; docs/methodology.md "Soak")
        con.print(Panel("\n".join(f"• {line}" for line in stability),
                        title="STABILITY (soak)", title_align="left"))
    cong = congestion.lines(run) if run.is_dir() else []
    if cong:  # every node's port counters per point (docs/health.md)
        con.print(Panel("\n".join(f"• {line}" for line in cong),
                        title="CONGESTION AND ERROR COUNTERS", title_align="left"))
    counters = cntout.summary_lines(run) if run.is_dir() else []
    if counters:  # every node's counters over time (docs/health.md "Counters over time")
        con.print(Panel("\n".join(f"• {line}" for line in counters),
                        title="COUNTERS OVER TIME", title_align="left"))
    return buf.getvalue()


