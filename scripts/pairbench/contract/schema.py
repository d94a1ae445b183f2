"""The CSV contract as the driver expects it (mirror of core/pb_schema.h), and run loading.

The column list lives in core/pb_schema.h; this module keeps a copy so the driver
works without a build, and checks it against `--print-schema` of the real
executables (tests/python/test_schema.py compares all three).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pairbench.contract.columns import (
    COLUMNS,
    SCHEMA_VERSION,
)
from pairbench.errors import UsageError
from pairbench.io import procutil

if TYPE_CHECKING:  # pandas is imported where it is used: the sweep must not need it
    pass

INT_COLUMNS = frozenset(
    {"schema_version", "msg_size_bytes", "pairs", "iterations", "warmup_iterations", "window",
     "cpu", "numa_node", "worst_lat_pair_id", "min_bw_pair_id", "soak_buckets", "stalls",
     "stalled_pairs", "idle_iterations"}
)
FLOAT_COLUMNS = frozenset(
    {"lat_us_min", "lat_us_p50", "lat_us_p90", "lat_us_p99", "lat_us_p999", "lat_us_max",
     "lat_us_mean", "lat_us_stdev", "bw_gbit_s", "bw_mbyte_s", "msg_rate_per_s", "link_pct",
     "start_skew_us", "fairness", "worst_lat_us_p50", "worst_lat_us_p99", "min_pair_bw_gbit_s",
     "min_pair_bw_share", "duration_s", "window_s", "start_delay_us", "overlap_s",
     "end_spread_us", "soak_bucket_s", "bucket_gbit_s_min", "bucket_gbit_s_p1",
     "bucket_gbit_s_p50", "min_bucket_share", "stall_fraction", "longest_stall_s",
     "first_stall_s", "idle_lat_us_p50", "idle_lat_us_p99", "idle_lat_us_p999",
     "lat_inflation_p50", "lat_inflation_p99", "lat_inflation_p999"}
)
NUMERIC_COLUMNS = INT_COLUMNS | FLOAT_COLUMNS
# Integer-valued but kept as strings: they are part of a point's identity (groupby keys),
# where an empty cell must stay '' rather than become NaN.
INT_STRING_COLUMNS = ("qps", "port")
SCOPES = ("pair", "all", "device", "node", "probe", "flow")
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


# What identifies a row; two rows with the same identity are one measurement counted twice.
ROW_IDENTITY = ("run_id", "repetition", "layer", "test", "variant", "pattern", "buffers", "qps",
                "msg_size_bytes", "pairs", "pair_id", "scope", "device", "host")


def find_data_csv(run: Path) -> Path:
    """The rows file of RUN: RUN is a run directory holding data.parquet (a large fabric
    scan's rows: pairbench.runner.scanparquet) or data.csv, or such a file itself (a
    data.parquet may be a directory of Parquet files)."""
    if not run.exists():
        raise UsageError(f"{run}: no such file or directory")
    if run.is_dir() and run.suffix != ".parquet":
        for name in ("data.parquet", "data.csv"):
            if (run / name).exists():
                return run / name
        raise UsageError(f"{run}: not a run directory (no data.csv or data.parquet)")
    return run


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
