"""Port counters of a run, judged (issue 25; docs/health.md): which error-class counters
moved at which point, and whether the data counters agree with what the point says it moved.

counters.csv (pairbench.contract.counters) holds one delta per (repetition, point, device,
port, counter), read by pairbench-verbs just before and after each point's timed window.
A run without it (MPI runs: no RDMA device is used; runs made before issue 25) has no
counter evidence: criteria that need it fail saying so.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pairbench.contract.counters import COUNTER_COLUMNS
from pairbench.contract.sizes import size_label
from pairbench.errors import UsageError


def counters_path(run: Path | str) -> Path | None:
    p = Path(run)
    f = p / "counters.csv" if p.is_dir() else p.with_name("counters.csv")
    return f if f.is_file() else None


def load_counters(run: Path | str | None) -> pd.DataFrame | None:
    """A run's counters.csv as a frame (delta an integer), None when it has none."""
    f = counters_path(run) if run is not None else None
    if f is None:
        return None
    try:
        df = pd.read_csv(f, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise UsageError(f"{f}: not a readable counters file ({exc})") from None
    missing = [c for c in COUNTER_COLUMNS if c not in df.columns]
    if missing:
        raise UsageError(f"{f}: missing column(s) {', '.join(missing)}")
    delta = pd.to_numeric(df["delta"], errors="coerce")
    if delta.isna().any():
        i = int(delta.isna().idxmax())
        raise UsageError(f"{f}: non-numeric delta {df['delta'][i]!r} in line {i + 2}")
    df["delta"] = delta.astype("int64")
    return df


def _where(r: pd.Series) -> str:
    variant = f" {r['variant']}" if r["variant"] else ""
    return (f"{r['test']}{variant} {size_label(int(r['msg_size_bytes']))} {r['pairs']} "
            f"pair(s), repetition {r['repetition']}")


def moved(df: pd.DataFrame, cls: str = "error") -> pd.DataFrame:
    """The rows of a counter class whose delta is not 0 (a counter going backwards was
    reset or wrapped: that is a movement too)."""
    return df[(df["class"] == cls) & (df["delta"] != 0)]


def moved_lines(df: pd.DataFrame, cls: str = "error", limit: int = 20) -> list[str]:
    """'out_of_seq_request +12 on rxe0 port 1 at write_bw 64 KiB 1 pair(s), repetition 1'."""
    m = moved(df, cls)
    out = [f"{r['counter']} {int(r['delta']):+d} on {r['device']} port {r['port']} at "
           f"{_where(r)}" for _, r in m.head(limit).iterrows()]
    if len(m) > limit:
        out.append(f"... and {len(m) - limit} more")
    return out


def error_counter_rows(run: Path | None, meta: dict) -> list[dict]:
    """accept's 'no_error_counters': one failed check per (point, device, counter) that
    moved, naming the counter and the point; one passing check when none moved."""
    del meta  # the counters live in counters.csv
    base = {"criterion": "environment no_error_counters", "size": "", "pairs": "",
            "limit": 0}
    df = load_counters(run)
    if df is None:
        return [{**base, "test": "*", "value": None, "verdict": "fail",
                 "detail": "no counters.csv: the run recorded no port counters (they are read "
                           "by pairbench-verbs around each timed window; docs/health.md)"}]
    m = moved(df, "error")
    if m.empty:
        points = df.groupby(["repetition", "test", "msg_size_bytes", "pairs"]).ngroups
        names = df.loc[df["class"] == "error", "counter"].nunique()
        return [{**base, "test": "*", "value": 0, "verdict": "pass",
                 "detail": f"no error counter moved ({names} error counter(s) read at "
                           f"{points} point(s))"}]
    rows = []
    for _, r in m.iterrows():
        rows.append({**base, "test": f"{r['device']} port {r['port']}",
                     "size": size_label(int(r["msg_size_bytes"])), "pairs": int(r["pairs"]),
                     "value": int(r["delta"]), "verdict": "fail",
                     "detail": f"{r['counter']} moved by {int(r['delta'])} at {_where(r)}"})
    return rows
