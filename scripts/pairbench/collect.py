"""Collecting a point's output into tidy rows; error rows for everything that did not work.

A failed point is never a missing row: each requested size without an aggregate row
gets one row with status=error and the reason.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pandas as pd

from pairbench.plan import Point
from pairbench.run import PointResult
from pairbench.schema import COLUMNS, DRIVER_COLUMNS, SCHEMA_VERSION

EXIT_MEANING = {1: "runtime failure", 2: "invalid input", 77: "cannot run here",
                255: "ssh failed: host unreachable or login refused"}
ALL_COLUMNS = (*COLUMNS, *DRIVER_COLUMNS)


def atomic_write_text(path: Path, text: str) -> None:
    """Write a file so that readers see the old or the new content, never a torn one."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def atomic_write_json(path: Path, data: object) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def last_line(path: Path, limit: int = 300) -> str:
    """The last non-empty line of a text file (the usual place of an error message)."""
    try:
        data = path.read_bytes()[-8192:].decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in data.splitlines() if ln.strip()]
    return lines[-1][:limit] if lines else ""


def failure_reason(result: PointResult, run_dir: Path) -> str | None:
    """Why a point failed, in one line; None if every side exited 0."""
    p = result.point
    if result.launch_error:
        return result.launch_error
    if result.timed_out:
        return f"timed out after {p.timeout_s:g} s (process group killed)"
    for side, code in zip(p.sides, result.exit_codes, strict=True):
        if code not in (0, None):
            if code < 0:
                what = f"killed by signal {-code}"
            else:
                what = f"exit {code}" + (f" ({EXIT_MEANING[code]})" if code in EXIT_MEANING else "")
            where = "" if side.role == "main" else f"{side.role} "
            msg = last_line(run_dir / side.stderr)
            return f"{where}{what}" + (f": {msg}" if msg else "")
    return None


def error_rows(point: Point, sizes: list[int], reason: str, run_id: str) -> pd.DataFrame:
    """One error row per size: the keys filled in, measurements empty."""
    rows = []
    for size in sizes:
        row = dict.fromkeys(ALL_COLUMNS, "")
        row.update(schema_version=str(SCHEMA_VERSION), layer=point.layer, test=point.test,
                   msg_size_bytes=str(size), pairs=str(point.pairs), pair_id="all",
                   status="error", error=reason, run_id=run_id, repetition=str(point.repetition))
        rows.append(row)
    return pd.DataFrame(rows, columns=list(ALL_COLUMNS))


def read_point_csv(point: Point, run_dir: Path) -> tuple[pd.DataFrame | None, str | None]:
    """The rows the executable produced (strings), or (None, reason) if unusable."""
    path = run_dir / (point.csv if point.csv else point.data_side.stdout)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None, None
    if not text.strip():
        return None, None
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_values=[])
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        return None, f"unreadable CSV output ({str(exc).splitlines()[0]})"
    if list(df.columns) != list(COLUMNS):
        missing = [c for c in COLUMNS if c not in df.columns]
        extra = [c for c in df.columns if c not in COLUMNS]
        return None, (f"output columns differ from the schema (missing {missing or 'none'}, "
                      f"unexpected {extra or 'none'})")
    bad = df["schema_version"].str.strip() != str(SCHEMA_VERSION)
    if bad.any():
        return None, f"output has schema_version {df['schema_version'][bad].iloc[0]!r}"
    return df, None


def collect_point(result: PointResult, run_dir: Path, run_id: str) -> pd.DataFrame:
    """Rows for one point: what the executable wrote plus error rows for missing sizes."""
    p = result.point
    reason = failure_reason(result, run_dir)
    df, csv_problem = read_point_csv(p, run_dir)
    if csv_problem:
        reason = f"{reason}; {csv_problem}" if reason else csv_problem
        df = None
    if df is None:
        return error_rows(p, list(p.sizes), reason or "no output rows", run_id)
    df = df.copy()
    df["run_id"] = run_id
    df["repetition"] = str(p.repetition)
    have = set(pd.to_numeric(df.loc[df["pair_id"] == "all", "msg_size_bytes"],
                             errors="coerce").dropna().astype(int))
    missing = [s for s in p.sizes if s not in have]
    if missing:
        why = reason or "the executable exited 0 but wrote no row for this size"
        df = pd.concat([df, error_rows(p, missing, why, run_id)], ignore_index=True)
    return df[list(ALL_COLUMNS)]


def frame_to_csv(df: pd.DataFrame) -> str:
    return df.to_csv(index=False, lineterminator="\n")
