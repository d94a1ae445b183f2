"""Port counters of a run, judged (issue 25; docs/health.md): which error-class counters
moved at which point, which congestion and error counters moved where (the congestion
section of show and report: issue 35), and whether the data counters agree with what the
point says it moved.

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


POINT = ["test", "variant", "msg_size_bytes", "pairs"]
WHERE = ["host", "device", "port"]


def congestion_points(df: pd.DataFrame | None) -> list[dict]:
    """Per point (test, variant, size, pairs) and per node's device port (host, device,
    port), the congestion and error counters that moved, their deltas summed over the
    repetitions: [{test, variant, size, pairs, host, device, port, repetitions,
    congestion: [(counter, delta)], error: [(counter, delta)]}], by point then node, each list
    largest |delta| first. Only ports where such a counter moved; [] without counters."""
    if df is None or df.empty:
        return []
    m = df[df["class"].isin(("congestion", "error")) & (df["delta"] != 0)]
    if m.empty:
        return []
    reps = df.groupby(POINT + WHERE, sort=False)["repetition"].nunique()
    sums = m.groupby(POINT + WHERE + ["class", "counter"], sort=False)["delta"].sum()
    out: dict[tuple, dict] = {}
    for key, delta in sums.items():
        *point_where, cls, counter = key
        k = tuple(point_where)
        e = out.get(k)
        if e is None:
            test, variant, size, pairs, host, device, port = k
            e = out[k] = {"test": test, "variant": variant, "size": int(size),
                          "pairs": int(pairs), "host": host, "device": device, "port": port,
                          "repetitions": int(reps.get(k, 0)), "congestion": [], "error": []}
        e[cls].append((str(counter), int(delta)))
    for e in out.values():
        for cls in ("congestion", "error"):
            e[cls].sort(key=lambda x: (-abs(x[1]), x[0]))
    return sorted(out.values(), key=lambda e: (e["test"], e["variant"], e["size"], e["pairs"],
                                               e["host"], e["device"], e["port"]))


def congestion_summary(df: pd.DataFrame | None) -> tuple[int, int, int]:
    """(points with counters, of which with a congestion counter that moved, with an error
    counter that moved)."""
    if df is None or df.empty:
        return 0, 0, 0
    points = df.groupby(POINT).ngroups
    m = df[df["delta"] != 0]
    return (points, m[m["class"] == "congestion"].groupby(POINT).ngroups,
            m[m["class"] == "error"].groupby(POINT).ngroups)


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
