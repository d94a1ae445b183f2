"""Counters over time as a person reads them (analysis/cntseries.py; docs/health.md "Counters
over time"): per point, which counters moved on which node and when (error and congestion
first), and per soak stall, what moved around it and which data counters stood still."""

from __future__ import annotations

import html
from pathlib import Path

from pairbench.analysis import cntseries
from pairbench.contract.sizes import size_label

SHOWN = 6  # counters named per class and point (the rest counted)


def _moved_text(items: list[cntseries.Moved], t0_ns: int | None) -> str:
    parts = []
    for m in items[:SHOWN]:
        when = f" from {(m.first_unix_ns - t0_ns) / 1e9:.1f} s" if t0_ns is not None else ""
        parts.append(f"{m.counter} {m.delta:+d} ({m.where}{when})")
    more = f", … {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return ", ".join(parts) + more


def _point_starts(run: Path) -> dict[str, int]:
    """The earliest soak start (CLOCK_REALTIME ns) of each point, when the run has a soak."""
    from pairbench.analysis import soak

    out: dict[str, int] = {}
    for f in soak.run_flows(run):
        out[f.point] = min(out.get(f.point, f.start_unix_ns), f.start_unix_ns)
    return out


def point_lines(run: Path, df=None) -> list[str]:
    """One line per point: the counters that moved by class (times after the point's first
    soak start when it has one, else after its first sample)."""
    df = cntseries.run_deltas(run) if df is None else df
    if df is None or not len(df):
        return []
    starts = _point_starts(run)
    lines = []
    for point in sorted(df["point"].unique()):
        sel = df[df["point"] == point]
        t0 = starts.get(point, int(sel["t_unix_ns"].min() - sel["interval_s"].max() * 1e9))
        nodes = sorted(sel["node"].unique())
        by = {c: cntseries.moved(sel, classes=(c,)) for c in ("error", "congestion", "data")}
        text = "; ".join(f"{c}: {_moved_text(v, t0)}" for c, v in by.items() if v)
        lines.append(f"{point}: counters of {len(nodes)} node(s) ({', '.join(nodes)}) — "
                     + (text or "no error, congestion or data counter moved"))
    return lines


def stall_lines(run: Path, df=None) -> list[str]:
    """One line per soak stall event: what moved around it, what stood still."""
    out = []
    for sc in cntseries.stall_counters(run, df):
        what = (f"{sc.point} {size_label(sc.msg_size_bytes)}: stall of pair(s) "
                f"{list(sc.pair_ids)} at {sc.start_s:g} s for {sc.length_s:g} s")
        moved = (f"error/congestion counters around it: {_moved_text(list(sc.moved), None)}"
                 if sc.moved else "no error or congestion counter moved around it")
        still = ("; data counters that stood still during it: "
                 + ", ".join(f"{c} ({n} {w})" for n, w, c in sc.stopped[:SHOWN])
                 + (f", … {len(sc.stopped) - SHOWN} more" if len(sc.stopped) > SHOWN else "")
                 if sc.stopped else "")
        out.append(f"{what} — {moved}{still}")
    return out


def summary_lines(run: Path) -> list[str]:
    """show's counters panel ([] when the run has no counters over time)."""
    if not run.is_dir():
        return []
    df = cntseries.run_deltas(run)
    if df is None or not len(df):
        return []
    return point_lines(run, df) + stall_lines(run, df)


def section_html(run: Path) -> str | None:
    """The report's "Counters over time" section, None when the run has none."""
    lines = summary_lines(run)
    if not lines:
        return None
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return ("<p>Every node's port counters sampled over time (docs/health.md, \"Counters over "
            "time\"): what moved per point, and around each soak stall.</p><ul>" + items
            + "</ul>")
