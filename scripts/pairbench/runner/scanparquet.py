"""A large scan's rows as Parquet (data.parquet): the CSV that pairbench-mpi writes is
parsed ONCE, by pyarrow, while the job runs (the progress poll reads what the job appended),
into a columnar copy of the part (raw/NAME.parquet); data.parquet is assembled from those
copies without parsing a row again.

The rule (docs/fabric.md "Rows files"): a fabric scan of PARQUET_MIN_NODES nodes or more
keeps its rows as data.parquet; smaller scans, and every sweep, keep data.csv. At 4,096
nodes the rows are 67 million (10.6 GiB of CSV); reading them back as text was most of
the driver's work.

data.parquet is a directory of Parquet files (a Parquet dataset: `pandas.read_parquet`,
`pyarrow.parquet.read_table` and DuckDB read it as one table), one file per part of the
scan, linked (a hard link, no copy) when every row of the part is kept, else the kept
rounds' rows copied, and one file of the error rows the driver adds. Every file has the
same schema (rows_schema()): the CSV contract's columns in its order, the numeric ones
(pairbench.contract.schema.NUMERIC_COLUMNS) as float64 (an empty cell is null), every
other one as text (an empty cell is ""), then the driver's run_id (text) and repetition
(int64). The same cells as data.csv, typed. Within a file the rows are in row groups of
either only scope=pair rows or only the others (node, all, device), so a reader that wants
the node pairs' values reads the second kind alone (node_groups()).

pyarrow is imported here only, and only when a scan uses Parquet (the Soft-RoCE VM's
runner never does).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pairbench.contract.columns import COLUMNS
from pairbench.contract.schema import NUMERIC_COLUMNS
from pairbench.errors import UsageError

PARQUET_MIN_NODES = 256
ROWS_PARQUET = "data.parquet"
GROUP_ROWS = 1 << 18  # rows buffered per kind before a row group is written
NUMBER = r"^\s*[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|(?i:inf|infinity|nan))\s*$"


def rows_format(nodes: int) -> str:
    """The rows file of a scan of `nodes` nodes: "parquet" from PARQUET_MIN_NODES on."""
    return "parquet" if nodes >= PARQUET_MIN_NODES else "csv"


def rows_schema() -> Any:
    import pyarrow as pa

    fields = [pa.field(c, pa.float64() if c in NUMERIC_COLUMNS else pa.string())
              for c in COLUMNS]
    return pa.schema([*fields, pa.field("run_id", pa.string()),
                      pa.field("repetition", pa.int64())])


def parse_lines(data: bytes, where: str = "", as_dict: tuple[str, ...] = ()) -> Any:
    """Whole CSV data lines (no header, each ending in \\n) -> a table of COLUMNS (typed as
    rows_schema(); the text columns in as_dict as dictionaries: cheap to compute on, see
    split_rounds()); a line that is not a whole row (wrong number of cells: cut short by a
    dying job) is skipped. A numeric column with a cell that is not a number (never written
    by the executables) is read as null there, with a warning naming it."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    schema = rows_schema()
    ropts = pacsv.ReadOptions(column_names=list(COLUMNS), use_threads=False,
                              block_size=1 << 24)
    popts = pacsv.ParseOptions(invalid_row_handler=lambda row: "skip")

    def convert(types: dict) -> Any:
        return pacsv.ConvertOptions(column_types=types, strings_can_be_null=False,
                                    quoted_strings_can_be_null=False)

    dict_type = pa.dictionary(pa.int32(), pa.string())
    typed = {c: dict_type if c in as_dict else schema.field(c).type for c in COLUMNS}
    try:
        return pacsv.read_csv(io.BytesIO(data), read_options=ropts, parse_options=popts,
                              convert_options=convert(typed))
    except pa.ArrowInvalid:
        pass
    import pyarrow.compute as pc

    t = pacsv.read_csv(io.BytesIO(data), read_options=ropts, parse_options=popts,
                       convert_options=convert({c: pa.string() for c in COLUMNS}))
    cols = []
    for c in COLUMNS:
        col = t.column(c)
        if c in NUMERIC_COLUMNS:
            num = pc.match_substring_regex(col, NUMBER)
            bad = pc.sum(pc.and_(pc.invert(num), pc.not_equal(col, ""))).as_py() or 0
            if bad:
                print(f"pairbench: warning: {where}: {bad} cell(s) of {c} are not numbers: "
                      "read as empty", file=sys.stderr)
            col = pc.if_else(num, col, pa.scalar(None, pa.string())).cast(pa.float64())
        elif c in as_dict:
            col = col.dictionary_encode()
        cols.append(col)
    return pa.table(cols, names=list(COLUMNS))


def with_driver_columns(t: Any, run_id: str, rep: int) -> Any:
    import pyarrow as pa

    n = t.num_rows
    return (t.append_column("run_id", pa.repeat(pa.scalar(run_id, pa.string()), n))
            .append_column("repetition", pa.repeat(pa.scalar(rep, pa.int64()), n)))


SCAN_PATTERN = re.compile(r"scan:(\d+)")
AS_DICT = ("pattern", "status", "scope")  # parsed as dictionaries by PartScan


def _lookup(col: Any, f: Any, pa_type: Any) -> Any:
    """f(value) for each row of a dictionary column (f(None) for a null), computed once per
    value of its dictionary and taken by the rows' indices (no Python per row)."""
    import pyarrow as pa

    out = []
    for ch in col.chunks:
        values = ch.dictionary.to_pylist()
        lut = pa.array([f(v) for v in values] + [f(None)], pa_type)
        out.append(lut.take(ch.indices.fill_null(len(values))))
    return pa.chunked_array(out, pa_type)


def _round(v: str | None) -> int:
    m = SCAN_PATTERN.fullmatch(v or "")
    return int(m.group(1)) if m else 0


def split_rounds(t: Any) -> tuple[Any, list[int], set[int], Any]:
    """A table of parse_lines(as_dict=AS_DICT) -> (the table with those columns as text and
    only the rows of a round (pattern scan:R), the rounds in order of first appearance, the
    rounds with a row that is not ok, whether each kept row is a scope=pair row), on the
    dictionaries' values: nothing per row in Python."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rnd = _lookup(t.column("pattern"), _round, pa.int64())
    notok = _lookup(t.column("status"), lambda v: v != "ok", pa.bool_())
    pair = _lookup(t.column("scope"), lambda v: v == "pair", pa.bool_())
    scan = pc.greater(rnd, 0)
    order = [r for r in pc.unique(rnd).to_pylist() if r]  # in order of first appearance
    bad = {r for r in pc.unique(rnd.filter(notok)).to_pylist() if r}
    for c in AS_DICT:
        i = t.schema.get_field_index(c)
        t = t.set_column(i, c, t.column(c).cast(pa.string()))
    if not pc.all(scan).as_py():
        t, pair = t.filter(scan), pair.filter(scan)
    return t, order, bad, pair


class PartWriter:
    """The columnar copy of one part (raw/NAME.parquet), written as the part is read:
    add() tables of its rows, close() at the end. Rows are buffered into row groups of
    GROUP_ROWS, scope=pair rows apart from the others (node_groups())."""

    def __init__(self, path: Path, run_id: str, rep: int) -> None:
        self.path, self.run_id, self.rep = path, run_id, rep
        self.tmp = path.with_name(path.name + ".tmp")
        self.writer: Any = None
        self.buf: dict[bool, list] = {True: [], False: []}
        self.n: dict[bool, int] = {True: 0, False: 0}
        self.rows = 0

    def add(self, t: Any, pair: Any = None) -> None:
        """Rows to write; pair: whether each is a scope=pair row (split_rounds())."""
        import pyarrow.compute as pc

        if not t.num_rows:
            return
        t = with_driver_columns(t, self.run_id, self.rep)
        if pair is None:
            pair = pc.fill_null(pc.equal(t.column("scope"), "pair"), False)
        n_pair = pc.sum(pair).as_py() or 0
        parts = ((True, t),) if n_pair == t.num_rows else ((False, t),) if n_pair == 0 \
            else ((True, t.filter(pair)), (False, t.filter(pc.invert(pair))))
        for kind, part in parts:
            if part.num_rows:
                self.buf[kind].append(part)
                self.n[kind] += part.num_rows
                if self.n[kind] >= GROUP_ROWS:
                    self._flush(kind)
        self.rows += t.num_rows

    def _flush(self, kind: bool) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.buf[kind]:
            return
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.tmp, rows_schema(), **WRITE_OPTIONS)
        self.writer.write_table(pa.concat_tables(self.buf[kind]), row_group_size=1 << 30)
        self.buf[kind], self.n[kind] = [], 0

    def close(self) -> None:
        """Write what is buffered and the file's footer; renamed into place only now (a
        driver killed before has no raw/NAME.parquet: the part is read again from its CSV)."""
        import pyarrow.parquet as pq

        self._flush(False)
        self._flush(True)
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.tmp, rows_schema(), **WRITE_OPTIONS)
        self.writer.close()
        os.replace(self.tmp, self.path)


# dictionaries for the text columns (names, patterns: few values each); the numbers plain
WRITE_OPTIONS = {"compression": "zstd",
                 "use_dictionary": [c for c in (*COLUMNS, "run_id")
                                    if c not in NUMERIC_COLUMNS]}


class Kept:
    """A part's columnar copy with the rounds of it that data.parquet keeps (whole: every
    row of the file is kept, so it is linked instead of copied)."""

    def __init__(self, path: Path, rounds: set[int], whole: bool) -> None:
        self.path, self.rounds, self.whole = path, rounds, whole


def _copy_rounds(src: Path, dst: Path, rounds: set[int]) -> int:
    """The rows of src in the given rounds, row group by row group, into dst; rows."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    want = pa.array(sorted(f"scan:{r}" for r in rounds), pa.string())
    n = 0
    with pq.ParquetWriter(dst, rows_schema(), **WRITE_OPTIONS) as w:
        f = open_rows(src)
        for i in range(f.num_row_groups):
            t = f.read_row_group(i)
            t = t.filter(pc.is_in(t.column("pattern"), value_set=want))
            if t.num_rows:
                w.write_table(t, row_group_size=1 << 30)
                n += t.num_rows
    return n


def write_data_parquet(run_dir: Path,
                       sources: Iterable[tuple[Kept | Iterable[str], str, int]]) -> int:
    """data.parquet (a directory) from (Kept part | data lines, run_id, repetition) sources:
    a Kept part linked or its rounds copied, lines parsed (blocks of LINES_PER_FILE). Built
    in data.parquet.tmp and renamed over data.parquet (readers see the old or the new one);
    a data.csv of the run is removed (a run keeps one rows file). Returns the rows."""
    out = run_dir / ROWS_PARQUET
    tmp = run_dir / (ROWS_PARQUET + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    n = files = 0

    def name(stem: str) -> Path:
        nonlocal files
        files += 1
        return tmp / f"{files:05d}-{stem}.parquet"

    block: list[str] = []
    key = ("", 0)

    def flush() -> None:
        nonlocal n, block
        if block:
            n += _write_lines(name("rows"), block, *key)
            block = []

    for src, run_id, rep in sources:
        if isinstance(src, Kept):
            flush()
            if src.whole:
                dst = name(src.path.stem)
                try:
                    os.link(src.path, dst)
                except OSError:
                    shutil.copyfile(src.path, dst)
                n += open_rows(dst).metadata.num_rows
            else:
                n += _copy_rounds(src.path, name(src.path.stem), src.rounds)
            continue
        for line in src:
            if (run_id, rep) != key:
                flush()
                key = (run_id, rep)
            block.append(line)
            if len(block) >= LINES_PER_FILE:
                flush()
    flush()
    if not files:
        _write_lines(name("rows"), [], "", 0)
    old = run_dir / (ROWS_PARQUET + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if out.is_dir():
        out.rename(old)
    elif out.exists():
        out.unlink()
    tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)
    (run_dir / "data.csv").unlink(missing_ok=True)
    return n


LINES_PER_FILE = 1_000_000


def _write_lines(path: Path, lines: list[str], run_id: str, rep: int) -> int:
    t = parse_lines("".join(f"{ln}\n" for ln in lines).encode(), str(path))
    w = PartWriter(path, run_id, rep)
    w.add(t)
    w.close()
    return t.num_rows


# ---- reading -------------------------------------------------------------------------


def rows_path(run: Path) -> Path | None:
    """The rows file of a run directory: data.parquet (a directory or a file) or data.csv;
    None when it has neither."""
    for name in (ROWS_PARQUET, "data.csv"):
        p = run / name
        if p.exists():
            return p
    return None


def is_parquet(path: Path) -> bool:
    return path.suffix == ".parquet"


def parquet_files(path: Path) -> list[Path]:
    """The files of a data.parquet: itself, or a directory's *.parquet files by name."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix == ".parquet" and p.is_file())
    return [path]


def open_rows(path: Path) -> Any:
    """pyarrow.parquet.ParquetFile of one rows file; UsageError (exit 2) naming the file when
    it is not a readable Parquet file (truncated, corrupted, not Parquet)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as exc:
        raise UsageError(f"{path}: not a readable Parquet file ({_first_line(exc)})") \
            from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def read_group(f: Any, path: Path, i: int, columns: list[str] | None = None) -> Any:
    """Row group i of a rows file (the given columns); UsageError naming the file when it
    cannot be read (a file damaged after its footer)."""
    import pyarrow as pa

    try:
        return f.read_row_group(i, columns=columns)
    except (OSError, pa.ArrowException) as exc:
        raise UsageError(f"{path}: row group {i} not readable ({_first_line(exc)})") from None


def node_groups(f: Any) -> list[int]:
    """The row groups of a rows file that may hold rows other than scope=pair (from the
    groups' statistics: a group whose scope is "pair" in every row is left out)."""
    col = f.schema_arrow.get_field_index("scope")
    out = []
    for i in range(f.num_row_groups):
        st = f.metadata.row_group(i).column(col).statistics
        if not (st is not None and st.has_min_max and st.min == "pair" and st.max == "pair"):
            out.append(i)
    return out


def check_columns(f: Any, path: Path, need: Iterable[str]) -> None:
    names = set(f.schema_arrow.names)
    missing = [c for c in need if c not in names]
    if missing:
        raise UsageError(f"{path}: missing column(s) {', '.join(missing)}")


def iter_tables(path: Path, columns: list[str] | None = None,
                only_groups: bool = False) -> Iterator[Any]:
    """The row groups of a data.parquet (every file) as tables of the given columns (those
    present); only_groups: only the groups that may hold rows other than scope=pair."""
    for p in parquet_files(path):
        f = open_rows(p)
        cols = None if columns is None else [c for c in columns
                                             if c in f.schema_arrow.names]
        for i in (node_groups(f) if only_groups else range(f.num_row_groups)):
            yield read_group(f, p, i, cols)


def read_table(path: Path) -> Any:
    """Every row of a data.parquet as one table (each file checked: UsageError naming a
    file that is not readable)."""
    import pyarrow as pa

    tables = list(iter_tables(path))
    if not tables:
        return rows_schema().empty_table()
    try:
        return pa.concat_tables(tables, promote_options="default")
    except pa.ArrowException as exc:
        raise UsageError(f"{path}: its files do not have one schema ({_first_line(exc)})") \
            from None
