"""Imported runs in a comparison (docs/import.md): a row's layer names the tool that timed it
(an OSU latency is not a pairbench latency), so compare refuses two runs of different tools
unless asked (`--across-tools`); then the imported tests are matched to the pairbench test
they resemble (testtable.IMPORTED_SAME_AS) and one line per tool says how it times."""

from __future__ import annotations

import pandas as pd

from pairbench.contract.testtable import IMPORTED_LAYERS, IMPORTED_SAME_AS
from pairbench.errors import UsageError

PAIRBENCH = "pairbench"
# How each tool times, in one line (what differs from the others).
METHODS = {
    PAIRBENCH: "pairbench: every iteration timed (percentiles), bandwidth over one shared "
               "window of all pairs, processes pinned, fresh buffers by default",
    "osu": "OSU: a fixed count per size timed as one block (latency = its mean; -z adds "
           "per-iteration percentiles), send buffer never written, streams into one buffer, "
           "no pinning",
    "perftest": "perftest: one process pair, latency per iteration (t_typical = median, "
                "stdev through int), bandwidth of a fixed count, MiB/s",
    "imb": "IMB: a fixed count of repetitions timed as one block (t_avg over ranks), barrier "
           "after each collective call outside the timer (-sync on)",
    "nccl-tests": "nccl-tests: GPU collectives, mean of a block of iterations, bus bandwidth "
                  "(busbw) rather than bytes moved per second",
}


def tool_of(layer: str) -> str:
    return layer if layer in IMPORTED_LAYERS else PAIRBENCH


def tools(df: pd.DataFrame) -> set[str]:
    return {tool_of(str(v)) for v in df["layer"].unique()}


def _align(df: pd.DataFrame) -> pd.DataFrame:
    """Imported rows renamed to the pairbench test they resemble (where there is one)."""
    out = df.copy()
    for (layer, test), (to_layer, to_test) in IMPORTED_SAME_AS.items():
        hit = (out["layer"] == layer) & (out["test"] == test)
        out.loc[hit, "layer"] = to_layer
        out.loc[hit, "test"] = to_test
    return out


def across_tools(base: pd.DataFrame, new: pd.DataFrame, allowed: bool
                 ) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """(base, new, lines): unchanged with no lines when both runs come from one tool; an
    error (exit 2) when they do not and `allowed` is false; else both aligned, with lines
    naming the tools' methods."""
    tb, tn = tools(base), tools(new)
    if tb == tn:
        return base, new, []
    b, n = "/".join(sorted(tb)), "/".join(sorted(tn))
    if not allowed:
        raise UsageError(f"BASE was measured by {b}, NEW by {n}: the tools time differently "
                         "(docs/import.md), so their numbers are not compared silently; add "
                         "--across-tools to compare them anyway")
    lines = [f"warning: across tools (BASE {b}, NEW {n}): the ratios include the change of "
             "method, not only of the system"]
    lines += [f"method: {METHODS.get(t, t)}" for t in sorted(tb | tn)]
    return _align(base), _align(new), lines


def version_lines(base_meta: dict, new_meta: dict) -> list[str]:
    """A warning when two imports of one tool were written by different releases of it (e.g.
    osu_mbw_mr divided by rank 0's time before 7.x, by the senders' mean since: DESIGN.md):
    the ratios may include the change of the tool's method."""
    b, n = base_meta.get("imported"), new_meta.get("imported")
    if not isinstance(b, dict) or not isinstance(n, dict) or b.get("tool") != n.get("tool"):
        return []
    vb, vn = sorted(b.get("versions") or []), sorted(n.get("versions") or [])
    if not vb or not vn or vb == vn:
        return []
    return [f"warning: {b.get('tool')} versions differ (BASE {'/'.join(vb)}, NEW "
            f"{'/'.join(vn)}): the ratios may include a change of the tool's own method"]
