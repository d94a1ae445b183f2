"""A run's rows as a typed, validated data frame (the columns and their types are the
contract's: pairbench.contract.schema): truncated rows repaired or dropped with a warning,
negative measurements and duplicated rows refused. A run's rows are data.csv, or
data.parquet for a large fabric scan (pairbench.runner.scanparquet): both read into the
same frame and checked by the same rules (read_rows_text); read_chunks() streams either."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from pairbench.contract.columns import (
    COLUMNS,
    READABLE_VERSIONS,
    columns_of,
)
from pairbench.contract.schema import (
    FLOAT_COLUMNS,
    INT_STRING_COLUMNS,
    KEY_COLUMNS,
    NUMERIC_COLUMNS,
    ROW_IDENTITY,
    SCOPES,
    ends_with_newline,
    find_data_csv,
)
from pairbench.errors import UsageError


def read_rows_text(path: Path) -> pd.DataFrame:
    """A rows file (data.csv, or data.parquet: pairbench.runner.scanparquet) with every
    cell as a string ('' for empty): the same frame from both, so one validation serves
    both (a Parquet number comes back as text that reads as the same number)."""
    if path.suffix == ".parquet":
        return read_parquet_text(path)
    return read_csv_text(path)


def read_parquet_text(path: Path) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.compute as pc

    from pairbench.runner.scanparquet import read_table

    t = read_table(path)
    cols = [pc.fill_null(c if pa.types.is_string(c.type) else pc.cast(c, pa.string()), "")
            for c in t.columns]
    return pa.table(cols, names=t.column_names).to_pandas()


def read_chunks(path: Path, columns: list[str], numeric: tuple[str, ...] = (),
                chunksize: int = 500_000, only_groups: bool = False) -> Iterator[pd.DataFrame]:
    """The given columns of a rows file (those it has), in chunks: `numeric` ones as
    float (NaN: empty), the others as categoricals of their text ('' for empty), from
    data.csv (chunks of chunksize rows) or data.parquet (a row group at a time;
    only_groups: only the groups that may hold rows other than scope=pair)."""
    if path.suffix != ".parquet":
        head = pd.read_csv(path, nrows=0).columns
        use = [c for c in columns if c in head]
        yield from pd.read_csv(path, usecols=use, chunksize=chunksize, keep_default_na=False,
                               dtype={c: "category" for c in use if c not in numeric},
                               na_values={c: [""] for c in use if c in numeric})
        return
    import pyarrow as pa
    import pyarrow.compute as pc

    from pairbench.runner.scanparquet import iter_tables

    for t in iter_tables(path, columns, only_groups):
        cols = []
        for name, c in zip(t.column_names, t.columns, strict=True):
            if name in numeric:
                cols.append(pc.cast(c, pa.float64()))
                continue
            if not pa.types.is_string(c.type):
                c = pc.cast(c, pa.string())
            cols.append(pc.fill_null(c, "").dictionary_encode())
        yield pa.table(cols, names=t.column_names).to_pandas()


def read_csv_text(path: Path) -> pd.DataFrame:
    """Read a CSV with every cell as a string ('' for empty)."""
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


# Filled in on an error row made from a truncated one; every other cell is blanked.
_KEEP_ON_TRUNCATED = frozenset({*ROW_IDENTITY, "schema_version", "host", "peer"})


def repair_truncated_rows(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """A row whose status cell is empty was cut short (its point died while writing it).
    It becomes an error row for its point when its identity survived, else it is dropped;
    either way with one warning, so that one truncated row does not reject a whole run."""
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


def load_run(run: Path | str) -> pd.DataFrame:
    """Load and validate the data of a run directory (or a rows file: CSV or Parquet)."""
    csv = find_data_csv(Path(run))
    df = read_rows_text(csv)
    if (len(df) and "status" in df.columns and csv.suffix != ".parquet"
            and not ends_with_newline(csv)):
        # Cut in its last row (every writer ends rows with a newline): that row is truncated
        # even when the cut fell after its status cell.
        df.loc[df.index[-1], "status"] = ""
    return validate_frame(df, str(csv))


