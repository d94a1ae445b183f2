"""nccl-tests output (all_reduce_perf, ...): the text table (out-of-place and in-place
time, algbw, busbw and #wrong per size; older releases have no root column and an `error`
column) and the -J/--output_file JSON (format version 3: `config`, `results` with
`out_of_place`/`in_place` objects). Each size gives two rows, variant out_of_place and
in_place. docs/import.md has the mapping."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pairbench.importers.base import Bench, Measure, Parsed, bad, check_sizes, integer, number

PLACES = ("out_of_place", "in_place")


def _bench(test: str, line: int) -> Bench:
    label = f"nccl-tests {test.removesuffix('_perf')}" if test else "nccl-tests"
    return Bench(test=test, line=line, kind="collective", lat_kind="op", label=label,
                 primary="bw_gbit_s", lost=("algbw",))


def _values(time_us: float, busbw_gb_s: float) -> dict[str, float]:
    # busbw in GB/s (10^9 bytes/s); time: the mean of a timed block of iterations
    return {"lat_us_mean": time_us, "bw_gbit_s": busbw_gb_s * 8,
            "bw_mbyte_s": busbw_gb_s * 1000}


def parse(path: Path, text: str, sha: str) -> Parsed:
    if text.lstrip().startswith("{"):
        return parse_json(path, text, sha)
    out = Parsed(path=path, tool="nccl-tests", sha256=sha)
    lines = text.splitlines()
    bench: Bench | None = None
    ranks: set[int] = set()
    cols: list[str] = []
    head_line = 0
    closed = False  # nccl-tests ends its table with '# Out of bounds values' and its average
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        m = re.match(r"#\s*nccl-tests version (\S+)", line)
        if m:
            out.version = m.group(1)
        m = re.match(r"#\s*Collective test starting:\s*(\S+)", line)
        if m:
            if bench is not None and bench.test:
                raise bad(path, no, f"a second test ({m.group(1)}) after {bench.test}: two "
                          "outputs in one file; give each its own file")
            bench = bench or _bench("", no)
            bench.test, bench.label = m.group(1), _bench(m.group(1), no).label
            continue
        m = re.match(r"#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)", line)
        if m:
            if bench is not None and bench.measures:
                raise bad(path, no, "a second nccl-tests header: two outputs in one file?")
            bench = bench or _bench("", no)
            for key, pat in (("agg_iters", r"agg iters:\s*(\d+)"), ("graph", r"graph:\s*(\d+)"),
                             ("blocking", r"Blocking Enabled")):
                mm = re.search(pat, line)
                if mm:
                    bench.config[key] = mm.group(1) if mm.groups() else "yes"
            out.info["header"] = line.lstrip("# ")
            continue
        m = re.match(r"#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)", line)
        if m:
            ranks.add(int(m.group(1)))
            continue
        if re.match(r"#\s*(Out of bounds values|Avg bus bandwidth)", line) and bench is not None:
            closed = bool(bench.measures)
            continue
        if line.startswith("#"):
            names = line.lstrip("#").split()
            if names[:2] == ["size", "count"]:
                if bench is None:
                    raise bad(path, no, "a table header before the nccl-tests header "
                              "('# nThread ... nGpus ...')")
                cols, head_line = names, no
            continue
        if bench is None or not head_line:
            if re.match(r"^\d+\s+\d+\s", line):
                raise bad(path, no, "a table row before the nccl-tests header and the "
                          "'# size count ...' column header")
            continue  # NCCL's own lines (NCCL INFO, version, warnings)
        fields = line.split()
        if not re.fullmatch(r"\d+", fields[0]):
            continue
        if len(fields) != len(cols):
            raise bad(path, no, f"{len(fields)} field(s), the header at line {head_line} has "
                      f"{len(cols)}: truncated?")
        if no == len(lines) and not text.endswith("\n"):
            raise bad(path, no, "the file ends inside this row (no newline): truncated?")
        _text_row(path, no, dict(zip(range(len(cols)), fields, strict=True)), cols, bench)
        closed = False
    if bench is None:
        raise bad(path, 1, "not an nccl-tests output: no '# nThread ... nGpus ...' header")
    if not head_line:
        raise bad(path, len(lines), "no '# size count type ...' column header: truncated?")
    if not bench.measures:
        raise bad(path, len(lines), "the table has no rows: truncated?")
    if not closed:
        raise bad(path, bench.measures[-1].line, "no '# Out of bounds values' / '# Avg bus "
                  "bandwidth' lines after this row, as nccl-tests ends its table: truncated? "
                  "(a file cut between two rows looks whole)")
    bench.pairs = len(ranks) or None
    _one_rank(bench)
    check_sizes(path, bench)
    out.benches.append(bench)
    return out


def _one_rank(bench: Bench) -> None:
    """With one rank nothing crosses a bus: nccl-tests prints busbw 0 by its formula
    ((n - 1)/n factors), which is not a measurement: the rows leave it empty."""
    if bench.pairs != 1:
        return
    for m in bench.measures:
        for col in ("bw_gbit_s", "bw_mbyte_s"):
            m.values.pop(col, None)
    bench.lost = (*bench.lost, "busbw (0 by definition with one rank)")
    bench.primary = "lat_us_mean"


def _text_row(path: Path, no: int, f: dict[int, str], cols: list[str], bench: Bench) -> None:
    size = integer(f[0], path, no, "size")
    bench.config.setdefault("type", f[2])
    bench.config.setdefault("redop", f[3])
    if (f[2], f[3]) != (bench.config["type"], bench.config["redop"]):
        raise bad(path, no, f"type/redop {f[2]}/{f[3]}, earlier rows {bench.config['type']}/"
                  f"{bench.config['redop']}: mixed outputs?")
    first = cols.index("time")  # out-of-place: time algbw busbw wrong; then in-place
    for place, at in zip(PLACES, (first, first + 4), strict=True):
        if at + 3 >= len(cols) or cols[at] != "time":
            raise bad(path, no, f"unknown nccl-tests column layout {' '.join(cols)!r}")
        m = Measure(size=size, line=no, variant=place,
                    values=_values(number(f[at], path, no, "time"),
                                   number(f[at + 2], path, no, "busbw")))
        number(f[at + 1], path, no, "algbw")
        wrong = f[at + 3]
        if cols[at + 3] == "#wrong" and wrong != "N/A" and number(wrong, path, no, "#wrong") > 0:
            m.status, m.error = "error", f"nccl-tests: {wrong} wrong element(s) ({place})"
        bench.measures.append(m)


def parse_json(path: Path, text: str, sha: str) -> Parsed:
    try:
        obj: Any = json.loads(text)
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        raise bad(path, line, f"not valid JSON ({getattr(exc, 'msg', exc)}): a truncated "
                  "nccl-tests -J file?") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("results"), list):
        raise bad(path, 1, "not an nccl-tests JSON file: no 'results' list")
    args = [str(a) for a in obj.get("args") or []]
    test = Path(args[0]).name if args else ""
    bench = _bench(test, 1)
    out = Parsed(path=path, tool="nccl-tests", sha256=sha, command=" ".join(args))
    out.info["format"] = "json"
    out.info["json_version"] = str(obj.get("version", ""))
    if obj.get("nccl_version") is not None:
        out.info["nccl_version"] = str(obj["nccl_version"])
    cfg = obj.get("config") or {}
    if isinstance(cfg, dict):
        for key, name in (("aggregated_iterations", "agg_iters"), ("graph", "graph")):
            if key in cfg:
                bench.config[name] = str(cfg[key])
        devs = cfg.get("devices")
        if isinstance(devs, list) and devs:
            bench.pairs = len(devs)
    if not obj["results"]:
        raise bad(path, 1, "the results list is empty: the run ended before the first size?")
    for i, r in enumerate(obj["results"]):
        where = f"results[{i}]"
        if not isinstance(r, dict) or "size" not in r:
            raise bad(path, None, f"{where}: not a result object with a size")
        size = integer(str(r["size"]), path, 0, f"{where}.size")
        for key in ("type", "redop"):
            bench.config.setdefault(key, str(r.get(key, "")))
        for place in PLACES:
            body = r.get(place)
            if body is None:
                continue
            if not isinstance(body, dict):
                raise bad(path, None, f"{where}.{place}: not an object")
            t = body.get("time", body.get("cpu_time"))
            try:
                vals = _values(float(t), float(body["bus_bw"]))
            except (TypeError, KeyError, ValueError):
                raise bad(path, None, f"{where}.{place}: no numeric time and bus_bw") from None
            m = Measure(size=size, line=0, variant=place, values=vals)
            wrong = body.get("nwrong")
            if isinstance(wrong, (int, float)) and wrong > 0:
                m.status, m.error = "error", f"nccl-tests: {wrong:g} wrong element(s) ({place})"
            bench.measures.append(m)
    _one_rank(bench)
    check_sizes(path, bench)
    out.benches.append(bench)
    return out
