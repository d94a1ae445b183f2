"""Collecting a point's output into tidy rows; error rows for everything that did not work.

A failed point is never a missing row: each requested size without an aggregate row
gets one row with status=error and the reason.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
from dataclasses import replace
from pathlib import Path

from pairbench.contract.columns import COLUMNS, DRIVER_COLUMNS, SCHEMA_VERSION
from pairbench.contract.counters import (
    COUNTER_COLUMNS,
    counter_class,
    data_agrees,
    data_counted,
    data_expectation,
)
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
    flag_counters(out, _env_record(p, run_dir))
    return out + pattern_rows(p, run_dir, run_id)


def _rank_path(path: str, rank: int) -> str:
    """A pattern point's file of rank `rank` (plan_pattern_point: raw/NAME.%r.csv)."""
    head, sep, tail = path.rpartition(".0.")
    return f"{head}.{rank}.{tail}" if sep else path


def _flow_ids(rec: dict | None) -> dict[str, str]:
    """pair_id -> the pattern's flow id, from a node's --env-json placement (a measuring
    worker's pair is its member index, docs/patterns.md); {} when the record has none."""
    out: dict[str, str] = {}
    for w in (rec or {}).get("placement") or []:
        pat = w.get("pattern") if isinstance(w, dict) else None
        if isinstance(pat, dict) and "flow" in pat and "victim_probe" not in pat:
            out[str(w.get("pair"))] = str(pat["flow"])
    return out


def pattern_rows(point: Point, run_dir: Path, run_id: str) -> list[Row]:
    """The rows of a pattern point's other ranks (sweep --layer verbs --pattern: every node
    writes its own CSV), so every flow's row is in data.csv.  Rank 0's rows are the point's
    (the target's incoming flows and their aggregate); another node's rows keep what they
    measured and change only how they are filed: pairs = the point's, a pair row becomes
    scope=flow with pair_id = its flow id (the same flow seen from its other end: an incast
    sender's own view, on its own clock), an aggregate (scope all) becomes scope=node (that
    node's flows, host = it), the victim probe's row stays scope=probe.  A rank whose CSV is
    missing or unreadable adds nothing (the point's failure reason already says why)."""
    out: list[Row] = []
    for rank in range(1, point.ranks if point.csv else 0):
        sub = replace(point, csv=_rank_path(point.csv or "", rank),
                      env_json=_rank_path(point.env_json, rank) if point.env_json else None)
        rows, _problem = read_point_csv(sub, run_dir)
        flows = _flow_ids(_env_record(sub, run_dir))
        for r in rows or []:
            if not complete_row(r):
                continue
            row = {**{c: r.get(c, "") for c in COLUMNS}, "run_id": run_id,
                   "repetition": str(point.repetition), "pairs": str(point.pairs)}
            if row["scope"] in ("pair", "") and row["pair_id"] != "all":
                row.update(scope="flow", pair_id=flows.get(row["pair_id"], row["pair_id"]))
            elif row["scope"] in ("all", "") and row["pair_id"] == "all":
                row["scope"] = "node"
            out.append(row)
    return out


def _env_record(point: Point, run_dir: Path) -> dict | None:
    if not point.env_json:
        return None
    try:
        rec = json.loads((run_dir / point.env_json).read_text())
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) else None


def _add_flag(row: Row, flag: str) -> None:
    have = [f for f in row.get("flags", "").split(";") if f]
    if flag not in have:
        row["flags"] = ";".join([*have, flag])


def _num(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def _row_devices(row: Row) -> set[str]:
    return {d for d in row.get("device", "").split("+") if d}


def flag_counters(rows: list[Row], rec: dict | None) -> None:
    """The counter flags (contract.flags.COUNTER_FLAGS) on the rows of a point whose
    --env-json record carries "counters": error_counters on every ok row of a size whose
    device (a row's device, or one of an aggregate's devices joined by '+'; every row when
    the rows name none) had an error-class counter move; counters_disagree where a
    bandwidth point's data counters fall outside contract.counters.data_expectation."""
    if not rec or not isinstance(rec.get("counters"), list):
        return
    deltas: dict[tuple[str, str], dict[str, int]] = {}
    for c in rec["counters"]:
        if isinstance(c, dict) and isinstance(c.get("deltas"), dict):
            d = deltas.setdefault((str(c.get("msg_size_bytes")), str(c.get("device"))), {})
            d.update({str(k): int(v) for k, v in c["deltas"].items()
                      if isinstance(v, int) and not isinstance(v, bool)})
    bad: dict[str, set[str]] = {}
    for (size, dev), d in deltas.items():
        if any(v != 0 and counter_class(k) == "error" for k, v in d.items()):
            bad.setdefault(size, set()).add(dev)
    off = _disagreeing(rows, rec, deltas)
    for r in rows:
        if r.get("status") != "ok":
            continue
        size, devs = r.get("msg_size_bytes", ""), _row_devices(r)
        for flag, hit in (("error_counters", bad.get(size, set())),
                          ("counters_disagree", off.get(size, set()))):
            if hit and (not devs or devs & hit):
                _add_flag(r, flag)


def _mtu(rec: dict, device: str) -> int:
    for d in rec.get("devices") or []:
        if isinstance(d, dict) and d.get("name") == device and d.get("active_mtu_bytes"):
            return int(d["active_mtu_bytes"])
    return int(rec.get("active_mtu_bytes") or 1024)


def _disagreeing(rows: list[Row], rec: dict,
                 deltas: dict[tuple[str, str], dict[str, int]]) -> dict[str, set[str]]:
    """size -> devices whose data counters disagree with the bandwidth pairs' payload (pair
    rows: bytes = bw_mbyte_s x 10^6 x duration_s, messages = msg_rate_per_s x duration_s)."""
    moved: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        if r.get("status") != "ok" or r.get("pair_id") == "all":
            continue
        bw, rate, dur = (_num(r.get(k, "")) for k in ("bw_mbyte_s", "msg_rate_per_s",
                                                       "duration_s"))
        if bw is None or rate is None or dur is None:
            continue
        key = (r.get("msg_size_bytes", ""), r.get("device", "") or str(rec.get("device", "")))
        acc = moved.setdefault(key, [0.0, 0.0])
        acc[0] += bw * 1e6 * dur
        acc[1] += rate * dur
    out: dict[str, set[str]] = {}
    for (size, dev), (payload, messages) in moved.items():
        got = data_counted(deltas.get((size, dev), {}))
        if got is None or not size.isdigit():
            continue
        unit, counted = got
        want = data_expectation(payload, messages, int(size), _mtu(rec, dev))
        if not data_agrees(unit, counted, want):
            out.setdefault(size, set()).add(dev)
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


def pattern_nodes(point: Point) -> list[str]:
    """A pattern point's nodes by rank: the first word of each line of its host file (the
    names its rows' host column carries); [] for a point without one."""
    for path, text in point.files:
        if path.endswith(".hosts"):
            return [ln.split()[0] for ln in text.splitlines() if ln.split()]
    return []


def rank_counters(point: Point, run_dir: Path) -> list[dict]:
    """The counter records of a pattern point's other ranks (every node but rank 0's, whose
    whole record is the point's env_record): [{rank, host, node, layer, test, counters}],
    one per rank whose --env-json has counters (node: the rank's name in the point's host
    file, as its rows name it; host: the record's, the machine's name); [] for a point of
    one rank."""
    out = []
    nodes = pattern_nodes(point)
    for rank in range(1, point.ranks if point.env_json else 0):
        rec = _env_record(replace(point, env_json=_rank_path(point.env_json or "", rank)),
                          run_dir)
        if rec and isinstance(rec.get("counters"), list):
            out.append({"rank": rank, "host": rec.get("host"),
                        "node": nodes[rank] if rank < len(nodes) else None,
                        "layer": rec.get("layer"), "test": rec.get("test"),
                        "counters": rec["counters"]})
    return out


def counter_rows(meta: dict, run_id: str) -> list[Row]:
    """counters.csv of a run (pairbench.contract.counters): one row per (repetition, point,
    host, device, port, counter) from the "counters" list of each point's --env-json record
    and, for a pattern point over K nodes, of every other node's ("rank_counters":
    pairbench-verbs reads the deltas around each timed window on every node: docs/health.md)."""
    rows: list[Row] = []
    for p in meta.get("points") or []:
        if not isinstance(p, dict):
            continue
        nodes = p.get("pattern_nodes") or [None]
        recs = [(p.get("env_record"), nodes[0]),
                *((r, r.get("node")) for r in p.get("rank_counters") or [] if isinstance(r, dict))]
        for rec, node in recs:
            rows += _counter_rows_of(p, rec, run_id, node)
    return rows


def _counter_rows_of(p: dict, rec: object, run_id: str, node: str | None = None) -> list[Row]:
    """The counters.csv rows of one node's record of point p; host: the pattern node's name
    (node) where the point has one, else the record's host."""
    rows: list[Row] = []
    if not isinstance(rec, dict) or not isinstance(rec.get("counters"), list):
        return rows
    for c in rec["counters"]:
        if not isinstance(c, dict) or not isinstance(c.get("deltas"), dict):
            continue
        base = {"run_id": run_id, "repetition": str(p.get("repetition", "")),
                "layer": str(rec.get("layer") or "verbs"),
                "test": str(rec.get("test") or p.get("test") or ""),
                "variant": str(c.get("variant") or ""),
                "msg_size_bytes": str(c.get("msg_size_bytes", "")),
                "pairs": str(p.get("pairs", "")), "qps": _qps_cell(p),
                "host": str(node or rec.get("host") or ""), "device": str(c.get("device", "")),
                "port": str(c.get("port", "")), "source": str(c.get("source", ""))}
        for name, delta in sorted(c["deltas"].items()):
            rows.append({**base, "counter": str(name), "class": counter_class(str(name)),
                         "delta": str(delta)})
    return rows


def _qps_cell(record: dict) -> str:
    q = record.get("qps")
    return "" if q in (None, "", 0) else str(q)


def write_counters(run_dir: Path, meta: dict) -> int:
    """Write RUN/counters.csv when any point recorded counters; the number of rows."""
    rows = counter_rows(meta, str(meta.get("run_id", run_dir.name)))
    if not rows:
        return 0
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(COUNTER_COLUMNS), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(run_dir / "counters.csv", buf.getvalue())
    return len(rows)
