"""Collecting a point's output into tidy rows; error rows for everything that did not work.

A failed point is never a missing row: each requested size without an aggregate row
gets one row with status=error and the reason.
"""

from __future__ import annotations

import csv
import io
import os
import re
import signal
from pathlib import Path

from pairbench.contract.columns import COLUMNS, DRIVER_COLUMNS, SCHEMA_VERSION
from pairbench.errors import one_line
from pairbench.io.safeio import write_json, write_output
from pairbench.runner.plan import Point
from pairbench.runner.run import PointResult

# Rows are plain dicts of strings here: the sweep runs inside the emulated VM, where
# importing pandas alone costs about a minute.
Row = dict[str, str]

EXIT_MEANING = {1: "runtime failure", 2: "invalid input", 77: "cannot run here",
                255: "ssh failed: host unreachable or login refused"}
ALL_COLUMNS = (*COLUMNS, *DRIVER_COLUMNS)


def _signame(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def atomic_write_text(path: Path, text: str) -> None:
    """Write a run-directory file so that readers see the old or the new content, never a
    torn one (pairbench.io.safeio: the one output writer of every command)."""
    write_output(path, text, "run file")


def atomic_write_json(path: Path, data: object) -> None:
    write_json(path, data, "run file")


_OWN_ERROR = re.compile(r"^pairbench[-\w]*: (error|FAIL)", re.I)
_BANNER = re.compile(r"^[\W_]*$")  # mpirun's "-----" rules and the like


def last_line(path: Path, limit: int = 300) -> str:
    """The line of a process's stderr that says why it failed: pairbench's own first error
    line (under mpirun it is followed by mpirun's banner), else the last line with words in
    it; one line, long words elided (errors.one_line)."""
    try:
        with open(path, "rb") as f:
            head = f.read(65536)
            f.seek(max(0, os.fstat(f.fileno()).st_size - 8192))
            tail = f.read()
    except OSError:
        return ""
    own = [ln.strip() for ln in head.decode("utf-8", "replace").splitlines()
           if _OWN_ERROR.match(ln.strip())]
    if own:
        return one_line(own[0], limit)
    lines = [ln.strip() for ln in tail.decode("utf-8", "replace").splitlines()
             if ln.strip() and not _BANNER.match(ln.strip())]
    return one_line(lines[-1], limit) if lines else ""


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
            elif code in EXIT_MEANING:
                what = f"exit {code} ({EXIT_MEANING[code]})"
            elif 128 < code < 128 + 65:  # the executables' exit on a signal they handled
                what = f"exit {code} (interrupted by {_signame(code - 128)})"
            else:
                what = f"exit {code}"
            where = "" if side.role == "main" else f"{side.role} "
            msg = last_line(run_dir / side.stderr)
            return f"{where}{what}" + (f": {msg}" if msg else "")
    return None


def point_key(point: Point) -> tuple[str, str, str, str]:
    """The identity every row of a point carries (test, pairs, repetition, qps cells), as
    row_key reads it back from a row: which planned points have rows in a data.csv."""
    return (point.test, str(point.pairs), str(point.repetition), point.qps_cell)


def row_key(row: Row) -> tuple[str, str, str, str]:
    return (row.get("test", ""), row.get("pairs", ""), row.get("repetition", ""),
            row.get("qps", ""))


def error_rows(point: Point, sizes: list[int], reason: str, run_id: str) -> list[Row]:
    """One error row per size: the keys filled in, measurements empty."""
    rows = []
    for size in sizes:
        row = dict.fromkeys(ALL_COLUMNS, "")
        row.update(schema_version=str(SCHEMA_VERSION), layer=point.layer, test=point.test,
                   msg_size_bytes=str(size), pairs=str(point.pairs), qps=point.qps_cell,
                   pair_id="all", scope="all",
                   status="error", error=reason, run_id=run_id, repetition=str(point.repetition))
        rows.append(row)
    return rows


def parse_csv_text(text: str) -> tuple[list[str], list[Row]]:
    reader = csv.DictReader(io.StringIO(text))
    rows = [{k: (v or "") for k, v in r.items() if k is not None} for r in reader]
    return list(reader.fieldnames or []), rows


def read_point_csv(point: Point, run_dir: Path) -> tuple[list[Row] | None, str | None]:
    """The rows the executable produced, or (None, reason) if unusable."""
    path = run_dir / (point.csv if point.csv else point.data_side.stdout)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None, None
    if not text.strip():
        return None, None
    try:
        header, rows = parse_csv_text(text)
    except csv.Error as exc:
        return None, f"unreadable CSV output ({exc})"
    if header != list(COLUMNS):
        missing = [c for c in COLUMNS if c not in header]
        extra = [c for c in header if c not in COLUMNS]
        return None, (f"output columns differ from the schema (missing {missing or 'none'}, "
                      f"unexpected {extra or 'none'})")
    whole = [r for r in rows if complete_row(r)]
    bad = [r["schema_version"] for r in whole
           if r["schema_version"].strip() != str(SCHEMA_VERSION)]
    if bad:
        return None, f"output has schema_version {bad[0]!r}"
    return rows, None


def complete_row(row: Row) -> bool:
    """False for a row cut short (its process died while writing it): status empty, or a
    key cell missing. Such a row is dropped and its size gets an error row instead."""
    return (row.get("status", "").strip() in ("ok", "error")
            and row.get("msg_size_bytes", "").strip().isdigit()
            and row.get("pairs", "").strip().isdigit()
            and (row.get("pair_id", "").strip() == "all"
                 or row.get("pair_id", "").strip().isdigit()))


def collect_point(result: PointResult, run_dir: Path, run_id: str) -> list[Row]:
    """Rows for one point: what the executable wrote plus error rows for missing sizes."""
    p = result.point
    reason = failure_reason(result, run_dir)
    rows, csv_problem = read_point_csv(p, run_dir)
    if csv_problem:
        reason = f"{reason}; {csv_problem}" if reason else csv_problem
        rows = None
    if rows is None:
        return error_rows(p, list(p.sizes), reason or "no output rows", run_id)
    whole = [r for r in rows if complete_row(r)]
    if len(whole) < len(rows):
        cut = "the output ended in the middle of a row (truncated row dropped)"
        reason = f"{reason}; {cut}" if reason else cut
    out = [{**{c: r.get(c, "") for c in COLUMNS}, "run_id": run_id,
            "repetition": str(p.repetition)} for r in whole]
    have = set()
    for r in out:
        if r["pair_id"] == "all":
            have.add(int(r["msg_size_bytes"]))
    missing = [s for s in p.sizes if s not in have]
    if missing:
        why = reason or "the executable exited 0 but wrote no row for this size"
        out += error_rows(p, missing, why, run_id)
    return out


def rows_to_csv(rows: list[Row]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(ALL_COLUMNS), lineterminator="\n",
                       extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def read_rows(path: Path) -> list[Row]:
    """data.csv of a run as plain rows ([] if absent or unreadable)."""
    try:
        return parse_csv_text(path.read_text(encoding="utf-8", errors="replace"))[1]
    except (OSError, csv.Error):
        return []
