"""OSU micro-benchmarks text output (5.x to 7.x): a title line ('# OSU MPI Latency Test
v7.4'), optional '# [ pairs: 4 ] [ window size: 64 ]' and '# Datatype: MPI_CHAR.' lines,
the column header ('# Size ...') and one row per size. -z adds percentile columns ('P50
Tail Lat(us)'), -c a Validation column (Pass/Fail), -f (collectives) min/max over ranks and
the iteration count; -G graphs are skipped. docs/import.md has the mapping."""

from __future__ import annotations

import re
from pathlib import Path

from pairbench.importers.base import Bench, Measure, Parsed, bad, check_sizes, integer, number

TITLE = re.compile(r"^#\s*OSU\s+(?P<flavour>[A-Za-z+\-]+)\s+(?P<name>.+?)\s+Test"
                   r"(?:\s+v?(?P<version>[\d.]+\w*))?\s*$")
# Titles whose test name is not the slug of the title.
NAMES = {
    "Latency": "osu_latency", "Bandwidth": "osu_bw", "Bi-Directional Bandwidth": "osu_bibw",
    "Multiple Bandwidth / Message Rate": "osu_mbw_mr", "Multi Latency": "osu_multi_lat",
    "Broadcast Latency": "osu_bcast", "All-to-All Personalized Exchange Latency": "osu_alltoall",
    "All-to-Allv Personalized Exchange Latency": "osu_alltoallv",
    "Non-blocking Broadcast Latency": "osu_ibcast",
    "Non-blocking All-to-All Personalized Exchange Latency": "osu_ialltoall",
}
# Header columns -> our columns (keys: lower case, no spaces); None: the tool's figure has
# no place in the schema (docs/import.md says why).
COLUMNS: dict[str, str | None] = {
    "latency(us)": "lat_us_mean", "avglatency(us)": "lat_us_mean",
    "p50taillat(us)": "lat_us_p50", "p90taillat(us)": "lat_us_p90",
    "p99taillat(us)": "lat_us_p99", "p99.9taillat(us)": "lat_us_p999",
    "bandwidth(mb/s)": "bw_mbyte_s", "mb/s": "bw_mbyte_s", "messages/s": "msg_rate_per_s",
    "minlatency(us)": None, "maxlatency(us)": None, "iterations": "iterations",
    "validation": "validation",
    # non-blocking collectives: the communication alone; overlap with computation is lost
    "purecomm.(us)": "lat_us_mean", "overall(us)": None, "compute(us)": None,
    "overlap(%)": None, "coll.init(us)": None, "mpi_test(us)": None, "mpi_wait(us)": None,
}
PERCENTILE = re.compile(r"p[\d.]+taillat\(us\)")


def test_of(name: str) -> tuple[str, str, str | None, str]:
    """(test, kind, lat_kind, primary metric) of a title's name part."""
    test = NAMES.get(name)
    if test is None:
        base = re.sub(r"\s+Latency$", "", name)
        nb = base.startswith("Non-blocking ")
        base = base.removeprefix("Non-blocking ")
        test = "osu_" + ("i" if nb else "") + re.sub(r"[^a-z0-9]+", "_", base.lower()).strip("_")
    if test in ("osu_latency", "osu_multi_lat"):
        return test, "latency", "half_rtt", "lat_us_mean"
    if test in ("osu_bw", "osu_bibw"):
        return test, "bandwidth", None, "bw_gbit_s"
    if test == "osu_mbw_mr":
        return test, "message_rate", None, "msg_rate_per_s"
    if "Latency" in name:
        return test, "collective", "op", "lat_us_mean"
    return test, "latency", "half_rtt", "lat_us_mean"


def parse(path: Path, text: str, sha: str) -> Parsed:
    out = Parsed(path=path, tool="osu", sha256=sha)
    lines = text.splitlines()
    bench: Bench | None = None
    cols: list[str | None] = []
    header_line = 0
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        m = TITLE.match(line)
        if m:
            if bench is not None:
                raise bad(path, no, f"a second OSU title ({line!r}) after the one at line "
                          f"{bench.line}: two outputs in one file; give each its own file")
            test, kind, lat_kind, primary = test_of(m.group("name").strip())
            out.version = m.group("version") or ""
            bench = Bench(test=test, line=no, kind=kind, lat_kind=lat_kind, primary=primary,
                          label=f"OSU {m.group('name').strip()}")
            bench.config["flavour"] = m.group("flavour")
            bench.config["datatype"] = "MPI_CHAR"  # 5.x prints none: its buffers were chars
            if lat_kind and kind != "collective":
                bench.pairs = 1 if test == "osu_latency" else None
            elif kind == "bandwidth":
                bench.pairs = 1
            continue
        if bench is None:
            if line.startswith("#") or re.match(r"^\S+:", line) or "warning" in line.lower():
                continue  # MPI's or the shell's lines before the title
            raise bad(path, no, f"not an OSU output: {line[:60]!r} before any '# OSU ... "
                      "Test' title line")
        if line.startswith("#"):
            body = line.lstrip("#").strip()
            pm = re.search(r"pairs:\s*(\d+)", body)
            if pm:
                bench.pairs = int(pm.group(1))
            wm = re.search(r"window size:\s*(\d+)", body, re.I)
            if wm:
                bench.config["window"] = wm.group(1)
            bm = re.search(r"Send Buffer on (\w+).*Receive Buffer on (\w+)", body)
            if bm:  # -d cuda|rocm D H ...: where the buffers live
                bench.config["buffers"] = f"{bm.group(1)}-{bm.group(2)}"
            dm = re.match(r"Datatype:\s*(\S+?)\.?$", body)
            if dm:
                bench.config["datatype"] = dm.group(1)
            if re.match(r"Size\b", body):
                cols = _header(path, no, body, bench)
                header_line = no
            continue
        if not header_line:
            if re.match(r"^\d+\s", line):
                raise bad(path, no, "a table row before the '# Size ...' column header")
            continue
        fields = line.split()
        if not re.fullmatch(r"\d+", fields[0]):
            if bench.measures:
                continue  # -G tty graphs, MPI's messages after the table (2>&1)
            raise bad(path, no, f"{bench.test}: {line[:60]!r} is not a table row "
                      f"(size then {len(cols)} value(s))")
        if len(fields) != len(cols) + 1:
            raise bad(path, no, f"{bench.test}: {len(fields)} field(s), the header at line "
                      f"{header_line} has {len(cols) + 1}: truncated or mixed?")
        if no == len(lines) and not text.endswith("\n"):
            raise bad(path, no, "the file ends inside this row (no newline): truncated?")
        bench.measures.append(_measure(path, no, fields, cols, bench))
    if bench is None:
        raise bad(path, 1, "not an OSU output: no '# OSU ... Test' title line")
    if not header_line:
        raise bad(path, len(lines), f"{bench.test}: no '# Size ...' column header: truncated?")
    if not bench.measures:
        raise bad(path, len(lines), f"{bench.test}: the table has no rows: truncated?")
    check_sizes(path, bench)
    out.benches.append(bench)
    return out


def _header(path: Path, no: int, body: str, bench: Bench) -> list[str | None]:
    if bench.measures:
        raise bad(path, no, "a second column header in one table: two outputs in one file?")
    names = re.split(r"\s{2,}", body)[1:]
    if not names:
        raise bad(path, no, "a column header without columns")
    cols: list[str | None] = []
    lost = []
    for n in names:
        key = re.sub(r"\s+", "", n).lower()
        if key in COLUMNS:
            cols.append(COLUMNS[key])
            if COLUMNS[key] is None:
                lost.append(n)
        elif PERCENTILE.fullmatch(key):
            cols.append(None)
            lost.append(n)
        else:
            raise bad(path, no, f"unknown OSU column {n!r}")
    bench.lost = tuple(lost)
    return cols


def _measure(path: Path, no: int, fields: list[str], cols: list[str | None],
             bench: Bench) -> Measure:
    size = integer(fields[0], path, no, "size")
    m = Measure(size=size, values={}, line=no)
    for tok, col in zip(fields[1:], cols, strict=True):
        if col == "validation":
            if tok.lower() not in ("pass", "fail"):
                raise bad(path, no, f"Validation {tok!r} (expected Pass or Fail)")
            if tok.lower() == "fail":
                m.status, m.error = "error", "OSU validation (-c) failed at this size"
            continue
        if col is None:
            number(tok, path, no, "value")
            continue
        if col == "iterations":
            m.iterations = integer(tok, path, no, "Iterations")
            continue
        m.values[col] = number(tok, path, no, col)
    if "bw_mbyte_s" in m.values:  # OSU's MB/s is 10^6 bytes/s
        m.values["bw_gbit_s"] = m.values["bw_mbyte_s"] * 8 / 1000
    return m
