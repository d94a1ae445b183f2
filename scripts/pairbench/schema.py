"""The CSV contract as the driver expects it (mirror of core/pb_schema.h), and run loading.

The column list lives in core/pb_schema.h; this module keeps a copy so the driver
works without a build, and checks it against `--print-schema` of the real
executables (tests/python/test_schema.py compares all three).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pairbench import procutil
from pairbench.columns import (
    COLUMNS,
    READABLE_VERSIONS,
    SCHEMA_VERSION,
    columns_of,
)
from pairbench.errors import UsageError

if TYPE_CHECKING:  # pandas is imported where it is used: the sweep must not need it
    import pandas as pd

INT_COLUMNS = frozenset(
    {"schema_version", "msg_size_bytes", "pairs", "iterations", "warmup_iterations", "window",
     "cpu", "numa_node", "worst_lat_pair_id", "min_bw_pair_id"}
)
FLOAT_COLUMNS = frozenset(
    {"lat_us_min", "lat_us_p50", "lat_us_p90", "lat_us_p99", "lat_us_p999", "lat_us_max",
     "lat_us_mean", "lat_us_stdev", "bw_gbit_s", "bw_mbyte_s", "msg_rate_per_s", "link_pct",
     "start_skew_us", "fairness", "worst_lat_us_p50", "worst_lat_us_p99", "min_pair_bw_gbit_s",
     "min_pair_bw_share", "duration_s", "window_s", "start_delay_us", "overlap_s",
     "end_spread_us"}
)
NUMERIC_COLUMNS = INT_COLUMNS | FLOAT_COLUMNS
# Integer-valued but kept as strings: they are part of a point's identity (groupby keys),
# where an empty cell must stay '' rather than become NaN.
INT_STRING_COLUMNS = ("qps", "port")
SCOPES = ("pair", "all", "device", "node")
# Needed to identify a row; everything else may be empty.
KEY_COLUMNS = ("schema_version", "layer", "test", "msg_size_bytes", "pairs", "pair_id", "status")


def parse_print_schema(text: str) -> tuple[int, list[str]]:
    """Parse `--print-schema` output: 'pairbench-schema N' then 'name<TAB>description' lines."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise UsageError("--print-schema printed nothing")
    head = lines[0].split()
    if len(head) != 2 or head[0] != "pairbench-schema" or not head[1].isdigit():
        raise UsageError(f"--print-schema: first line is {lines[0]!r}, "
                         "expected 'pairbench-schema N'")
    return int(head[1]), [ln.split("\t", 1)[0].strip() for ln in lines[1:]]


def parse_schema_header(path: Path) -> tuple[int, list[str]]:
    """Parse core/pb_schema.h (version and X(name, ...) entries), for the consistency test."""
    import re

    text = path.read_text()
    m = re.search(r"#define\s+PB_SCHEMA_VERSION\s+(\d+)", text)
    if not m:
        raise UsageError(f"{path}: no PB_SCHEMA_VERSION")
    names = re.findall(r"^\s*X\((\w+),", text, flags=re.M)
    return int(m.group(1)), names


def read_binary_schema(binary: Path | str, timeout_s: float = 120.0) -> tuple[int, list[str]]:
    """Run `BINARY --print-schema` (in its own process group, ended as a group after
    timeout_s) and parse it."""
    res = procutil.run_bounded([str(binary), "--print-schema"], timeout_s)
    proc = res.result
    if res.state != "exited" or proc is None:
        why = res.why or f"no answer within {timeout_s:g} s (process group killed)"
        raise UsageError(f"cannot run {binary} --print-schema: {why}")
    if proc.returncode != 0:
        raise UsageError(f"{binary} --print-schema exited {proc.returncode}: "
                         f"{proc.stderr.strip()[-200:]}")
    return parse_print_schema(proc.stdout)


def check_schema(version: int, columns: list[str], where: str) -> None:
    """Raise UsageError if a schema differs from the one this driver reads."""
    if version != SCHEMA_VERSION:
        raise UsageError(f"{where}: schema_version {version}, this driver reads {SCHEMA_VERSION}")
    if list(columns) != list(COLUMNS):
        missing = [c for c in COLUMNS if c not in columns]
        extra = [c for c in columns if c not in COLUMNS]
        raise UsageError(f"{where}: column list differs from the driver's "
                         f"(missing {missing or 'none'}, unexpected {extra or 'none'})")


def read_csv_text(path: Path) -> pd.DataFrame:
    """Read a CSV with every cell as a string ('' for empty)."""
    import pandas as pd

    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[])
    except pd.errors.EmptyDataError:
        raise UsageError(f"{path}: empty CSV file") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UsageError(f"{path}: not a readable CSV ({first})") from None


def validate_frame(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """Check a string-typed frame against the contract; return it with numeric columns typed.

    Numeric columns become float (NaN = empty cell = does not apply); pair_id stays a string
    ('all' or an integer); repetition becomes int (1 when absent).
    """
    import pandas as pd

    if "schema_version" not in df.columns:
        raise UsageError(f"{where}: missing column(s) schema_version")
    if df.empty:
        raise UsageError(f"{where}: no data rows")
    versions = set(df["schema_version"].str.strip())
    readable = {str(v) for v in READABLE_VERSIONS}
    if not versions <= readable:
        other = sorted(v for v in versions if v not in readable)
        raise UsageError(f"{where}: schema_version {', '.join(repr(v) for v in other)}, "
                         f"this driver reads {', '.join(sorted(readable))}")
    newest = max(int(v) for v in versions)
    missing = [c for c in columns_of(newest) if c not in df.columns]
    if missing:
        raise UsageError(f"{where}: missing column(s) {', '.join(missing)}")
    df = repair_truncated_rows(df, where)
    if df.empty:
        raise UsageError(f"{where}: no data rows")
    # Older versions lack later columns: they read as empty cells (does not apply).
    df = df.assign(**{c: "" for c in COLUMNS if c not in df.columns})
    out = df.copy()
    for col in KEY_COLUMNS:
        empty = out[col].str.strip() == ""
        if empty.any():
            row = int(empty.idxmax()) + 2
            raise UsageError(f"{where}: empty {col} in line {row}")
    for col in sorted(NUMERIC_COLUMNS):
        cells = out[col].str.strip()
        num = pd.to_numeric(cells.where(cells != "", None), errors="coerce")
        bad = (cells != "") & num.isna()
        if bad.any():
            i = int(bad.idxmax())
            raise UsageError(f"{where}: non-numeric cell {cells[i]!r} in column {col}, "
                             f"line {i + 2}")
        out[col] = num.astype(float)
    pid = out["pair_id"].str.strip()
    bad = ~(pid.eq("all") | pid.str.fullmatch(r"\d+"))
    if bad.any():
        i = int(bad.idxmax())
        raise UsageError(f"{where}: pair_id {pid[i]!r} in line {i + 2} is neither an integer "
                         "nor 'all'")
    out["pair_id"] = pid
    for col in INT_STRING_COLUMNS:
        out[col] = out[col].str.strip()
        bad = ~out[col].str.fullmatch(r"\d*")
        if bad.any():
            i = int(bad.idxmax())
            raise UsageError(f"{where}: {col} {out[col][i]!r} in line {i + 2} is not an integer")
    out["scope"] = out["scope"].str.strip()
    bad = ~out["scope"].isin(["", *SCOPES])
    if bad.any():
        i = int(bad.idxmax())
        raise UsageError(f"{where}: scope {out['scope'][i]!r} in line {i + 2} (expected "
                         f"{', '.join(SCOPES)} or empty)")
    bad = ~out["status"].isin(["ok", "error"])
    if bad.any():
        i = int(bad.idxmax())
        raise UsageError(f"{where}: status {out['status'][i]!r} in line {i + 2} "
                         "(expected ok or error)")
    if "repetition" in out.columns:
        rep = pd.to_numeric(out["repetition"].str.strip(), errors="coerce")
        if rep.isna().any():
            i = int(rep.isna().idxmax())
            raise UsageError(f"{where}: non-numeric repetition in line {i + 2}")
        out["repetition"] = rep.astype(int)
    else:
        out["repetition"] = 1
    if "run_id" not in out.columns:
        out["run_id"] = ""
    check_values(out, where)
    return out


# What identifies a row; two rows with the same identity are one measurement counted twice.
ROW_IDENTITY = ("run_id", "repetition", "layer", "test", "variant", "pattern", "buffers", "qps",
                "msg_size_bytes", "pairs", "pair_id", "scope", "device", "host")
# Filled in on an error row made from a truncated one; every other cell is blanked.
_KEEP_ON_TRUNCATED = frozenset({*ROW_IDENTITY, "schema_version", "host", "peer"})


def repair_truncated_rows(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """A row whose status cell is empty was cut short (its point died while writing it).
    It becomes an error row for its point when its identity survived, else it is dropped;
    either way with one warning, so that one truncated row does not reject a whole run."""
    import sys

    df = df.fillna("")
    cut = df["status"].str.strip() == ""
    if not cut.any():
        return df
    pid = df["pair_id"].str.strip()
    ok_id = (df["msg_size_bytes"].str.strip().str.fullmatch(r"\d+")
             & df["pairs"].str.strip().str.fullmatch(r"\d+")
             & (pid.eq("all") | pid.str.fullmatch(r"\d+"))
             & (df["layer"].str.strip() != "") & (df["test"].str.strip() != ""))
    if "repetition" in df.columns:  # the driver's columns come last: a cut file loses them
        ok_id &= df["repetition"].str.strip().str.fullmatch(r"\d+")
    fix, drop = cut & ok_id, cut & ~ok_id
    out = df.copy()
    blank = [c for c in out.columns if c not in _KEEP_ON_TRUNCATED]
    out.loc[fix, blank] = ""
    out.loc[fix, "status"] = "error"
    out.loc[fix, "error"] = "truncated row: the point ended while writing it"
    lines = ", ".join(str(int(i) + 2) for i in df.index[cut][:10])
    print(f"pairbench: warning: {where}: {int(cut.sum())} truncated row(s) (empty status, "
          f"line {lines}): {int(fix.sum())} read as error rows, {int(drop.sum())} dropped",
          file=sys.stderr)
    return out[~drop].reset_index(drop=True)


def check_values(df: pd.DataFrame, where: str) -> None:
    """Measurements are never negative, and no row is there twice (a duplicated row would
    count as a repetition that never ran)."""
    for col in sorted(FLOAT_COLUMNS & set(df.columns)):
        neg = df[col] < 0
        if neg.any():
            i = int(neg.idxmax())
            raise UsageError(f"{where}: negative value {df[col][i]:g} in column {col}, "
                             f"line {i + 2}")
    ident = [c for c in ROW_IDENTITY if c in df.columns]
    dup = df.duplicated(subset=ident, keep="first")
    if dup.any():
        i = int(dup.idxmax())
        first = int(df.index[(df[ident] == df.loc[i, ident]).all(axis=1)][0])
        raise UsageError(f"{where}: line {i + 2} repeats line {first + 2} (same "
                         f"{', '.join(ident)}): duplicated rows are not repetitions")


def find_data_csv(run: Path) -> Path:
    """RUN is a run directory holding data.csv, or a CSV file."""
    if not run.exists():
        raise UsageError(f"{run}: no such file or directory")
    if run.is_dir():
        csv = run / "data.csv"
        if not csv.is_file():
            raise UsageError(f"{run}: not a run directory (no data.csv)")
        return csv
    return run


def load_run(run: Path | str) -> pd.DataFrame:
    """Load and validate the data of a run directory (or a CSV file)."""
    csv = find_data_csv(Path(run))
    df = read_csv_text(csv)
    if len(df) and "status" in df.columns and not ends_with_newline(csv):
        # Cut in its last row (every writer ends rows with a newline): that row is truncated
        # even when the cut fell after its status cell.
        df.loc[df.index[-1], "status"] = ""
    return validate_frame(df, str(csv))


def ends_with_newline(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            if f.tell() == 0:
                return True
            f.seek(-1, 2)
            return f.read(1) in (b"\n", b"\r")
    except OSError:
        return True


def load_metadata(run: Path | str) -> dict:
    """metadata.json of a run directory ({} when absent or when RUN is a CSV file)."""
    import json

    p = Path(run)
    meta = p / "metadata.json" if p.is_dir() else p.with_name("metadata.json")
    if not meta.is_file():
        return {}
    try:
        data = json.loads(meta.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{meta}: unreadable metadata ({exc})") from None
    return data if isinstance(data, dict) else {}
