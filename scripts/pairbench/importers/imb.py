"""Intel MPI Benchmarks output (IMB-MPI1, 2018 to 2021, also -multi): a banner ('Intel(R) MPI
Benchmarks 2021.3, MPI-1 part'; 2019: '... 2019 Update 6, MPI-1 part'), the calling
sequence, then one block per benchmark and process count ('# Benchmarking PingPong',
'# #processes = 2', the table). One file holds many benchmarks; each is its own test.
-multi 1 lists every group (pair rows), -multi 0 only their min/max/avg. docs/import.md has
the mapping."""

from __future__ import annotations

import re
from pathlib import Path

from pairbench.importers.base import Bench, Measure, Parsed, bad, check_sizes, integer, number

# 'Intel(R) MPI Benchmarks 2021.3, MPI-1 part', '... 2019 Update 6, MPI-1 part', '... 2018, ...'
BANNER = re.compile(r"Intel\s*\(R\)\s*MPI\s+Benchmark(?:s| Suite)\s+"
                    r"V?(?P<version>[\w.]+(?:\s+Update\s+\d+)?),?"
                    r"\s+(?P<part>\S+)\s+part", re.I)
COLS = {"#bytes": "size", "#repetitions": "iterations", "t[usec]": "lat_us_mean",
        "t_avg[usec]": "lat_us_mean", "t_min[usec]": None, "t_max[usec]": None,
        "Mbytes/sec": "bw_mbyte_s", "Msg/sec": "msg_rate_per_s", "Group": "group",
        "defects": "defects"}
PAIRWISE = ("PingPong", "PingPing", "Uniband", "Biband")
BANDWIDTH = ("Uniband", "Biband")


def _bench(name: str, no: int, config: dict[str, str]) -> Bench:
    multi = name.startswith("Multi-")
    test = name.removeprefix("Multi-")
    if test in BANDWIDTH:
        b = Bench(test=test, line=no, kind="bandwidth", label=f"IMB {test}", primary="bw_gbit_s")
    elif test in PAIRWISE or test in ("Sendrecv", "Exchange"):
        b = Bench(test=test, line=no, kind="latency",
                  lat_kind="half_rtt" if test == "PingPong" else "op", label=f"IMB {test}",
                  primary="lat_us_mean")
    else:
        b = Bench(test=test, line=no, kind="collective", lat_kind="op", label=f"IMB {test}",
                  primary="lat_us_mean")
    b.config.update(config)
    if multi:
        b.config["multi"] = "yes"
    return b


def parse(path: Path, text: str, sha: str) -> Parsed:
    out = Parsed(path=path, tool="imb", sha256=sha)
    lines = text.splitlines()
    config: dict[str, str] = {}
    bench: Bench | None = None
    cols: list[str | None] = []
    head_line = 0
    calling: list[str] | None = None
    banner = 0
    last_row = finalized = 0  # IMB's last words: '# All processes entering MPI_Finalize'
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        body = line.lstrip("#").strip()
        if body.startswith("All processes entering MPI_Finalize"):
            finalized = no
            continue
        m = BANNER.search(line)
        if m:
            if banner:
                raise bad(path, no, f"a second IMB banner after the one at line {banner}: two "
                          "outputs in one file; give each its own file")
            banner, out.version = no, m.group("version")
            out.info["part"] = m.group("part")
            continue
        if calling is not None:
            if line.startswith("#") and body:
                calling.append(body)
                continue
            if calling:
                out.command = " ".join(calling)
                calling = None
        if body.startswith("Calling sequence was:"):
            calling = [body.split(":", 1)[1].strip()] if body.split(":", 1)[1].strip() else []
            continue
        if not banner:
            if line and not line.startswith("#") and re.match(r"^\d", line):
                raise bad(path, no, "not an IMB output: a table row before the 'Intel(R) MPI "
                          "Benchmarks' banner")
            continue
        mm = re.match(r"(MPI_Datatype(?: for reductions)?|MPI_Op)\s*:\s*(\S+)", body)
        if mm:
            config[{"MPI_Datatype": "datatype", "MPI_Datatype for reductions": "red_datatype",
                    "MPI_Op": "op"}[mm.group(1)]] = mm.group(2)
            continue
        mm = re.match(r"Benchmarking\s+(\S+)", body)
        if mm:
            _finish(path, bench, head_line, no)
            bench, cols, head_line = _bench(mm.group(1), no, config), [], 0
            out.benches.append(bench)
            continue
        if bench is None:
            continue
        mm = re.match(r"#processes\s*=\s*(\d+)", body)
        if mm:
            n = int(mm.group(1))
            bench.pairs = 1 if bench.test in PAIRWISE else n  # -npmin: one block per count
            continue
        mm = re.match(r"\(\s*(\d+)\s+groups? of\s+(\d+)\s+processes", body)
        if mm:
            bench.pairs = int(mm.group(1))
            bench.config["group_processes"] = mm.group(2)
            continue
        if "#repetitions" in line:
            if head_line:
                raise bad(path, no, f"{bench.test}: a second table header in one block")
            cols, head_line = _header(path, no, line.split(), bench), no
            continue
        if not line or line.startswith("#") or not head_line:
            continue
        fields = line.split()
        if not all(re.fullmatch(r"[\d.eE+-]+", f) for f in fields):
            continue  # IMB's notes between tables
        if len(fields) != len(cols):
            raise bad(path, no, f"{bench.test}: {len(fields)} field(s), the header at line "
                      f"{head_line} has {len(cols)}: truncated?")
        if no == len(lines) and not text.endswith("\n"):
            raise bad(path, no, "the file ends inside this row (no newline): truncated?")
        bench.measures.append(_row(path, no, fields, cols))
        last_row = no
    if not banner:
        raise bad(path, 1, "not an IMB output: no 'Intel(R) MPI Benchmarks' banner")
    _finish(path, bench, head_line, len(lines))
    if not out.benches:
        raise bad(path, len(lines), "no '# Benchmarking ...' block: truncated?")
    if finalized < last_row:
        raise bad(path, last_row, "no '# All processes entering MPI_Finalize' after this row, "
                  "as IMB ends its output: truncated? (a file cut between two rows or blocks "
                  "looks whole)")
    for b in out.benches:
        _aggregate_groups(b)
        check_sizes(path, b)
    return out


def _finish(path: Path, bench: Bench | None, head_line: int, no: int) -> None:
    if bench is None:
        return
    if not head_line or not bench.measures:
        raise bad(path, no, f"{bench.test} (line {bench.line}): a block without a table: "
                  "truncated?")
    if bench.pairs is None:
        raise bad(path, bench.line, f"{bench.test}: no '#processes = N' line")


def _header(path: Path, no: int, names: list[str], bench: Bench) -> list[str | None]:
    cols: list[str | None] = []
    for n in names:
        if n not in COLS:
            raise bad(path, no, f"{bench.test}: unknown IMB column {n!r}")
        cols.append(COLS[n])
    bench.lost = tuple(n for n in names if COLS[n] is None)
    return cols


def _row(path: Path, no: int, fields: list[str], cols: list[str | None]) -> Measure:
    m = Measure(size=0, values={}, line=no)
    for tok, col in zip(fields, cols, strict=True):
        if col == "size":
            m.size = integer(tok, path, no, "#bytes")
        elif col == "iterations":
            m.iterations = integer(tok, path, no, "#repetitions")
        elif col == "group":
            m.pair_id = str(integer(tok, path, no, "Group"))
        elif col == "defects":
            if number(tok, path, no, "defects") > 0:
                m.status, m.error = "error", f"IMB -check: {tok} defect(s)"
        elif col is None:
            number(tok, path, no, "value")
        else:
            m.values[col] = number(tok, path, no, col)
    if "bw_mbyte_s" in m.values:  # IMB's Mbytes/sec is 10^6 bytes/s (2018 and later)
        m.values["bw_gbit_s"] = m.values["bw_mbyte_s"] * 8 / 1000
    return m


def _aggregate_groups(b: Bench) -> None:
    """-multi 1 lists each group: they are the pair rows, and the aggregate row is what
    -multi 0 prints (the mean time over groups; the bandwidth of the slowest group)."""
    groups = [m for m in b.measures if m.pair_id != "all"]
    if not groups:
        return
    by_size: dict[int, list[Measure]] = {}
    for m in groups:
        by_size.setdefault(m.size, []).append(m)
    for size, ms in by_size.items():
        agg = Measure(size=size, values={}, line=ms[0].line, iterations=ms[0].iterations)
        lat = [m.values["lat_us_mean"] for m in ms if "lat_us_mean" in m.values]
        if lat:
            agg.values["lat_us_mean"] = sum(lat) / len(lat)
        bws = [(m.values["bw_mbyte_s"], m.pair_id) for m in ms if "bw_mbyte_s" in m.values]
        if bws:
            low, pid = min(bws)
            agg.values.update(bw_mbyte_s=low, bw_gbit_s=low * 8 / 1000,
                              min_pair_bw_gbit_s=low * 8 / 1000)
            xs = [v for v, _ in bws]  # Jain's index over the groups
            sq = sum(x * x for x in xs)
            if sq > 0:
                agg.values["fairness"] = sum(xs) ** 2 / (len(xs) * sq)
            agg.values["min_bw_pair_id"] = float(pid)
        if any(m.status == "error" for m in ms):
            agg.status, agg.error = "error", next(m.error for m in ms if m.status == "error")
        b.measures.append(agg)
