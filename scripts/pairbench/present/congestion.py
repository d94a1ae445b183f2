"""The congestion section of show and report (issue 35; docs/health.md "counters.csv"):
per point, which congestion counters (ECN marks, CNPs, pause frames) and error counters
(retransmissions, out-of-sequence, drops) moved on which node's device port, from the
run's counters.csv (every node of a pattern point: the target's responder side too)."""

from __future__ import annotations

from pathlib import Path

from pairbench.analysis import health
from pairbench.contract.sizes import size_label

LIMIT = 6  # counters named per class and port; the rest counted


def _names(items: list[tuple[str, int]]) -> str:
    text = ", ".join(f"{n} {d:+d}" for n, d in items[:LIMIT])
    return text + (f" and {len(items) - LIMIT} more" if len(items) > LIMIT else "")


def _point(e: dict) -> str:
    variant = f" {e['variant']}" if e["variant"] else ""
    return f"{e['test']}{variant} {size_label(e['size'])} {e['pairs']} pair(s)"


def lines(run: Path) -> list[str]:
    """One line per point and node port where a congestion or error counter moved, and a
    first line counting the points; [] for a run without counters.csv."""
    df = health.load_counters(run)
    if df is None:
        return []
    points, cong, err = health.congestion_summary(df)
    out = [f"{points} point(s) with port counters: a congestion counter moved at {cong}, "
           f"an error counter at {err} (deltas over each timed window, summed over its "
           "repetitions)"]
    for e in health.congestion_points(df):
        what = [f"congestion {_names(e['congestion'])}" if e["congestion"] else "",
                f"error {_names(e['error'])}" if e["error"] else ""]
        out.append(f"{_point(e)}: {e['host'] or '-'} {e['device']}/{e['port']}: "
                   + "; ".join(w for w in what if w))
    return out


HEAD = ["test", "size", "pairs", "node", "device/port", "reps", "congestion counters that moved",
        "error counters that moved"]
NUMERIC = [False, False, True, False, False, True, False, False]


def table(run: Path) -> tuple[str, list[list[str]]] | None:
    """The report's section: its paragraph and rows (HEAD), None without counters.csv."""
    df = health.load_counters(run)
    if df is None:
        return None
    points, cong, err = health.congestion_summary(df)
    text = (f"Port counters read just before and after every point's timed window on every "
            f"node of the point (docs/health.md): at {points} point(s), a congestion counter "
            f"(ECN marks, CNPs, pause frames) moved at {cong} and an error counter "
            f"(retransmissions, out-of-sequence packets, drops, link downs) at {err}. Deltas "
            "summed over the point's repetitions; every counter, moved or not, is in "
            "counters.csv.")
    rows = [[e["test"] + (f" {e['variant']}" if e["variant"] else ""), size_label(e["size"]),
             str(e["pairs"]), e["host"] or "-", f"{e['device']}/{e['port']}",
             str(e["repetitions"]), _names(e["congestion"]) or "—", _names(e["error"]) or "—"]
            for e in health.congestion_points(df)]
    return text, rows
