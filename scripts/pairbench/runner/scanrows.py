"""The rows of a fabric scan's MPI jobs, streamed: which rounds a part (one job's CSV) holds
complete, and data.csv assembled from the parts without holding the rows in memory.

A scan of K nodes writes ~K²/2 pair rows per test and size (1,024 nodes, two tests, two
sizes: ~4 million rows, ~0.7 GB of CSV); here every row is one line, split on commas (a
quoted line, rare: error texts, goes through csv), never a dict.

Round R of a part is *complete* when every one of its rows is ok and a later round follows
it in the same file, or the job exited 0 (pairbench-mpi flushes its CSV after each round:
rounds before the last one seen are whole; the last may be cut short by a dying job).
"""

from __future__ import annotations

import csv
import io
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairbench.contract.columns import COLUMNS, DRIVER_COLUMNS, SCHEMA_VERSION

HEADER = ",".join(COLUMNS)


def rows_header_problem(path: Path) -> str:
    """header_problem() of a rows file's first line ('cannot read' when it cannot be read)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return header_problem(f.readline()) or "its header is the schema's"
    except OSError as exc:
        return f"cannot read it: {exc.strerror}"


def header_problem(line: str) -> str | None:
    """None when `line` is this driver's CSV header; else what differs, said so that a
    stale build is recognised (a scan of such rows would otherwise end with no node pair
    measured and no word on why)."""
    line = line.rstrip("\r\n")
    if line == HEADER:
        return None
    if not line:
        return "its CSV has no header"
    got = line.split(",")
    missing = [c for c in COLUMNS if c not in got]
    extra = [c for c in got if c not in COLUMNS]
    if "schema_version" not in got:
        return f"its first line is not a CSV header of pairbench rows: {line[:80]!r}"
    return (f"its CSV header has {len(got)} columns, this driver's schema {len(COLUMNS)} "
            f"(missing {', '.join(missing[:6]) or 'none'}{' ...' if len(missing) > 6 else ''}; "
            f"unexpected {', '.join(extra[:6]) or 'none'}{' ...' if len(extra) > 6 else ''}): "
            "an executable built from another version of pairbench? Rebuild it (cmake "
            "--build build) or give the matching --binary")
IDX = {c: i for i, c in enumerate(COLUMNS)}
I_PATTERN, I_STATUS = IDX["pattern"], IDX["status"]


N_COMMAS = len(COLUMNS) - 1
TAIL = len(COLUMNS) - 1 - I_STATUS  # cells after status (flags, error)


def split_line(line: str) -> list[str]:
    """One CSV line's cells (the fast path: no quotes)."""
    if '"' in line:
        return next(csv.reader([line]))
    return line.split(",")


def pattern_status(line: str) -> tuple[str, str] | None:
    """(pattern, status) of a data line, None if it is not a whole row. Fast path: the
    cells before pattern and from status on hold no comma unless the line is quoted."""
    if '"' in line:
        try:
            cells = split_line(line)
        except csv.Error:  # not a CSV row (a stray \r in a quoted cell: bytes, not rows)
            return None
        return (cells[I_PATTERN], cells[I_STATUS]) if len(cells) == len(COLUMNS) else None
    if line.count(",") != N_COMMAS:
        return None
    return line.split(",", I_PATTERN + 1)[I_PATTERN], line.rsplit(",", TAIL + 1)[1]


def round_of(pattern: str) -> int:
    """scan:R -> R; 0 for anything else (a confirmation round's nodes:..., no pattern)."""
    if pattern.startswith("scan:"):
        try:
            return int(pattern[5:])
        except ValueError:
            return 0
    return 0


FEED_BYTES = 16 << 20  # read at most this much of a part at a time (64 MB blocks: peak RSS
# 1,086 MiB at 1,024 nodes, 16 MB: 665 MiB; results/fabric-scale)


@dataclass
class PartScan:
    """What has been read of one part's CSV so far (incrementally: feed() new bytes).
    writer: a scan whose rows are Parquet (pairbench.runner.scanparquet) parses the new
    lines with pyarrow and adds them to the part's columnar copy, so the CSV is parsed
    once, while the job runs; without it every line is split here (data.csv)."""

    path: Path
    offset: int = 0
    header_ok: bool | None = None
    rest: bytes = b""
    order: list[int] = field(default_factory=list)   # rounds in the order they appeared
    bad: set[int] = field(default_factory=set)       # rounds with a row that is not ok
    rows: int = 0
    writer: Any = None  # scanparquet.PartWriter, or None

    def feed(self, limit: int = 4 * FEED_BYTES) -> int:
        """Read what the job appended since the last call (at most `limit` bytes, up to the
        end the file had when called: a poll returns even while a fast job keeps writing);
        the number of new rounds."""
        before = len(self.order)
        try:
            f = open(self.path, "rb")  # noqa: SIM115
        except OSError:
            return 0
        with f:
            end = min(os.fstat(f.fileno()).st_size, self.offset + limit)
            f.seek(self.offset)
            while self.offset < end and (chunk := f.read(min(FEED_BYTES,
                                                             end - self.offset))):
                self.offset += len(chunk)
                data = self.rest + chunk
                cut = data.rfind(b"\n") + 1
                self.rest = data[cut:]
                if cut:
                    self._block(data[:cut])
        return len(self.order) - before

    def at_end(self) -> bool:
        try:
            return self.offset >= self.path.stat().st_size
        except OSError:
            return True

    def _block(self, data: bytes, keep: bool = True) -> None:
        """Whole lines (each ending in \\n); keep: add them to the columnar copy."""
        if self.writer is None:
            for line in data.decode("utf-8", "replace").split("\n"):
                self._line(line)
            return
        while self.header_ok is None and data:  # the header, in bytes (a 64 MB block)
            nl = data.find(b"\n") + 1
            self._line(data[:nl].decode("utf-8", "replace").rstrip("\n"))
            data = data[nl:]
        if not self.header_ok or not data:
            return
        from pairbench.runner.scanparquet import AS_DICT, parse_lines, split_rounds

        t, order, bad, pair = split_rounds(parse_lines(data, str(self.path), AS_DICT))
        for r in order:
            if not self.order or self.order[-1] != r:
                self.order.append(r)
        self.bad |= bad
        self.rows += t.num_rows
        if keep:
            self.writer.add(t, pair)

    def _line(self, line: str) -> None:
        if not line:
            return
        if self.header_ok is None:
            self.header_ok = line.rstrip("\r") == HEADER
            return
        ps = pattern_status(line)
        if ps is None:
            return
        r = round_of(ps[0])
        if not r:
            return
        self.rows += 1
        if not self.order or self.order[-1] != r:
            self.order.append(r)
        if ps[1] != "ok":
            self.bad.add(r)

    def complete(self, exited_ok: bool) -> set[int]:
        """The rounds this part holds whole (see the module's docstring)."""
        if not self.header_ok:
            return set()
        seen = list(dict.fromkeys(self.order))
        last = seen[-1] if seen and not exited_ok else None
        return {r for r in seen if r not in self.bad and r != last}


def scan_part(path: Path, exited_ok: bool,
              ps: PartScan | None = None) -> tuple[PartScan, set[int]]:
    """Read (the rest of) a part: (its scan, its complete rounds). A last line without its
    newline (cut short by a dying job) counts for the rounds but is not a row of the data;
    a part's columnar copy is closed (written whole) here."""
    ps = ps or PartScan(path)
    ps.feed()
    while not ps.at_end():
        ps.feed()
    if ps.rest:
        ps._block(ps.rest + b"\n", keep=False)
        ps.rest = b""
    if ps.writer is not None:
        ps.writer.close()
    return ps, ps.complete(exited_ok)


def part_lines(path: Path, keep: set[int]) -> Iterator[str]:
    """The data lines of a part whose round is in keep (header and cut rows dropped)."""
    try:
        f = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115
    except OSError:
        return
    with f:
        head = f.readline()
        if head.rstrip("\r\n") != HEADER:
            return
        for line in f:
            if not line.endswith("\n"):
                break  # cut short by a dying job
            line = line.rstrip("\r\n")
            ps = pattern_status(line)
            if ps is not None and round_of(ps[0]) in keep:
                yield line


BLOCK_BYTES = 16 << 20


@dataclass
class WholePart:
    """Every data line of a part, copied in blocks instead of line by line (a 4,096-node
    scan's parts hold 67 million lines): for a part that exited 0, every round of which is
    kept, and whose data lines are exactly the whole scan rows its PartScan counted."""

    path: Path

    def blocks(self) -> Iterator[str]:
        """The data lines (header dropped), whole lines per block, each ending in \\n."""
        with open(self.path, encoding="utf-8", errors="replace", newline="") as f:
            f.readline()
            rest = ""
            while chunk := f.read(BLOCK_BYTES):
                text = rest + chunk
                cut = text.rfind("\n") + 1
                rest = text[cut:]
                if cut:
                    yield text[:cut]


def whole_part(path: Path, rows: int) -> WholePart | None:
    """WholePart(path) when the file is its header and exactly `rows` data lines, each
    ending in \\n (no \\r), else None (then part_lines() picks the lines)."""
    try:
        f = open(path, "rb")  # noqa: SIM115
    except OSError:
        return None
    n, last, cr = -1, b"", False
    with f:
        if f.readline().rstrip(b"\r\n") != HEADER.encode():
            return None
        n = 0
        while chunk := f.read(BLOCK_BYTES):
            n += chunk.count(b"\n")
            cr = cr or b"\r" in chunk
            last = chunk[-1:]
    return WholePart(path) if n == rows and not cr and last in (b"\n", b"") else None


def error_line(layer: str, test: str, pattern: str, size: int, pairs: int, host: str,
               peer: str, scope: str, reason: str) -> str:
    """One error row (CSV contract: a failed point is a row, never a missing one)."""
    cells = [""] * len(COLUMNS)
    for k, v in (("schema_version", str(SCHEMA_VERSION)), ("layer", layer), ("test", test),
                 ("pattern", pattern), ("msg_size_bytes", str(size)), ("pairs", str(pairs)),
                 ("pair_id", "all"), ("scope", scope), ("host", host), ("peer", peer),
                 ("status", "error"), ("error", reason)):
        cells[IDX[k]] = v
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(cells)
    return buf.getvalue()


def write_rows(run_dir: Path, sources: Iterable[tuple[Any, str, int]], fmt: str) -> int:
    """The run's rows file from (lines | WholePart | scanparquet.Kept, run_id, repetition)
    sources: data.parquet when fmt is "parquet" (pairbench.runner.scanparquet), else
    data.csv; the other one removed (a run keeps one rows file). Returns the rows."""
    if fmt == "parquet":
        from pairbench.runner.scanparquet import write_data_parquet

        return write_data_parquet(run_dir, sources)
    n = write_data_csv(run_dir / "data.csv", sources)
    old = run_dir / "data.parquet"
    if old.is_dir():
        shutil.rmtree(old)
    elif old.exists():
        old.unlink()
    return n


def write_data_csv(path: Path, sources: Iterable[tuple[Iterable[str], str, int]]) -> int:
    """data.csv from (lines, run_id, repetition) sources, streamed to a temporary file and
    renamed over path (readers see the old or the new file, never a torn one); rows."""
    tmp = path.with_name(path.name + ".tmp")
    n = 0
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(",".join((*COLUMNS, *DRIVER_COLUMNS)) + "\n")
        for lines, run_id, rep in sources:
            tail = f",{run_id},{rep}\n"
            if isinstance(lines, WholePart):
                for block in lines.blocks():
                    out.write(block.replace("\n", tail))
                    n += block.count("\n")
                continue
            for line in lines:
                out.write(line)
                out.write(tail)
                n += 1
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    return n
