"""perftest (ib_write_bw, ib_read_lat, ...) output: the text a client prints (a banner
'RDMA_Write BW Test', 'key : value' settings, the table) and the --out_json file, valid
(recent releases) or in the unquoted form of older ones (4.5-0.17 writes `test_info: {`,
`MsgSize: 65536,` and trailing commas), read by its line grammar: one `key: value` per
line, `key: {` and `}` — anything else is refused with its line. docs/import.md has the
mapping."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from pairbench.importers.base import Bench, Measure, Parsed, bad, check_sizes, integer, number

VERBS = {"Send": "send", "RDMA_Write": "write", "RDMA_Read": "read", "Atomic": "atomic"}
BANNER = re.compile(r"^(?P<verb>Send|RDMA_Write|RDMA_Read|Atomic)[ _](?P<rest>.*?)[ _]?Test$")
# Settings that say how the test ran (a difference makes another configuration).
CONFIG = {"Number of qps": "qps", "Connection type": "connection", "Mtu": "mtu",
          "TX depth": "tx_depth", "Link type": "link", "Using SRQ": "srq",
          "CQ Moderation": "cq_moderation", "Post List": "post_list",
          "Max inline data": "inline", "Outstand reads": "outstanding_reads",
          "Transport type": "transport"}
MIB = 1048576.0  # perftest's MB/sec (and MiB/sec) is 2^20 bytes/s
GBIT = 125_000_000.0  # --report_gbits: 10^9 bit/s
LAT_COLS = {"t_min": "lat_us_min", "t_max": "lat_us_max", "t_typical": "lat_us_p50",
            "t_avg": "lat_us_mean", "t_stdev": "lat_us_stdev", "99%": "lat_us_p99",
            "99.9%": "lat_us_p999", "percentile_99": "lat_us_p99",
            "percentile_99.9": "lat_us_p999", "avg_lat": "lat_us_mean"}


def _bench(verb: str, rest: str, path: Path, no: int) -> Bench:
    words = rest.replace("_", " ").split()
    op = VERBS[verb]
    if "BW" in words:
        b = Bench(test=f"ib_{op}_bw", line=no, kind="bandwidth", label=f"perftest {verb} BW",
                  primary="bw_gbit_s")
    elif "Latency" in words:
        lat_kind = "half_rtt" if op in ("send", "write") else "full_rtt"
        b = Bench(test=f"ib_{op}_lat", line=no, kind="latency", lat_kind=lat_kind,
                  label=f"perftest {verb} latency", primary="lat_us_p50")
    else:
        raise bad(path, no, f"perftest test {verb} {rest!r}: neither BW nor Latency")
    if verb == "Atomic" and words:
        b.config["atomic"] = words[0]
    if "Bidirectional" in words:
        b.config["direction"] = "bidirectional"
        b.label += " (bidirectional)"
    for extra in ("Post List", "forwarding", "Multicast"):
        if extra in " ".join(words):
            b.config[extra.lower().replace(" ", "_")] = "yes"
    b.pairs = 1
    return b


def parse(path: Path, text: str, sha: str) -> Parsed:
    if text.lstrip().startswith("{"):
        return parse_json(path, text, sha)
    out = Parsed(path=path, tool="perftest", sha256=sha)
    lines = text.splitlines()
    bench: Bench | None = None
    head: list[str] = []
    head_line = 0
    bw_factor = 0.0
    closed = True  # perftest closes its table with a dashed line after the last row
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or set(line) <= {"-", "*"}:
            closed = closed or line.startswith("---")
            continue
        m = BANNER.match(line)
        if m:
            if bench is not None:
                raise bad(path, no, f"a second perftest banner ({line!r}) after the one at line "
                          f"{bench.line}: two outputs in one file; give each its own file")
            bench = _bench(m.group("verb"), m.group("rest"), path, no)
            continue
        if bench is None:
            continue  # 'Waiting for client', CPU frequency warnings, ...
        if line.startswith("#bytes"):
            if head_line:
                raise bad(path, no, "a second table header: two outputs in one file?")
            head, head_line, bw_factor = _header(path, no, line, bench)
            continue
        if not head_line:
            for part in re.split(r"\t+|\s{3,}(?=\S+\s*:)", line):
                k, sep, v = part.partition(":")
                k, v = k.strip(), v.strip()
                if sep and k == "Device":
                    bench.device = v
                elif sep and k in CONFIG:
                    v = re.sub(r"\[B\]$", "", v)
                    if k == "Number of qps":
                        bench.qps = v
                    else:
                        bench.config[CONFIG[k]] = v
            continue
        fields = line.split()
        if not re.fullmatch(r"\d+", fields[0]):
            continue  # a warning after the table
        if len(fields) < len(head):
            raise bad(path, no, f"{bench.test}: {len(fields)} field(s), the header at line "
                      f"{head_line} has {len(head)}: truncated?")
        if no == len(lines) and not text.endswith("\n"):
            raise bad(path, no, "the file ends inside this row (no newline): truncated?")
        bench.measures.append(_row(path, no, fields, head, bw_factor))
        closed = False
    if bench is None:
        raise bad(path, 1, "not a perftest output: no banner such as 'RDMA_Write BW Test' "
                  "(perftest's JSON starts with '{')")
    if not head_line:
        raise bad(path, len(lines), f"{bench.test}: no '#bytes ...' table header: truncated?")
    if not bench.measures:
        raise bad(path, len(lines), f"{bench.test}: the table has no rows: truncated?")
    if not closed:
        raise bad(path, bench.measures[-1].line, f"{bench.test}: no dashed line closes the "
                  "table after this row, as perftest prints it: truncated? (a file cut "
                  "between two rows looks whole)")
    check_sizes(path, bench)
    out.benches.append(bench)
    return out


def _header(path: Path, no: int, line: str, bench: Bench) -> tuple[list[str], int, float]:
    if "[cycles]" in line:
        raise bad(path, no, "latency in cycles (--report-cycles): no clock rate to convert "
                  "with; import an output in usec")
    if bench.kind == "bandwidth":
        if "#sl" in line:
            raise bad(path, no, "a QoS table (#sl column) is not imported")
        unit = re.search(r"BW average\[(MB/sec|MiB/sec|Gb/sec)\]", line)
        if not unit or "MsgRate[Mpps]" not in line:
            raise bad(path, no, f"{bench.test}: unknown bandwidth table header {line!r}")
        factor = GBIT if unit.group(1) == "Gb/sec" else MIB
        head = ["size", "iterations", "peak", "bw", "rate"]
        lost = ["BW peak"] + (["per-port BW/MsgRate"] if "Port1" in line else []) + (
            ["CPU_Util"] if "CPU_Util" in line else [])
        bench.lost = tuple(lost)
        return head, no, factor
    if "tps average" in line:  # a duration run (-D): the mean and transactions/s only
        bench.lost = ("tps average",)
        return ["size", "iterations", "t_avg", "tps"], no, 0.0
    names = re.findall(r"t_\w+|99\.9%|99%", line)
    if not names or names[0] != "t_min":
        raise bad(path, no, f"{bench.test}: unknown latency table header {line!r}")
    return ["size", "iterations", *names], no, 0.0


def _row(path: Path, no: int, fields: list[str], head: list[str], factor: float) -> Measure:
    m = Measure(size=integer(fields[0], path, no, "#bytes"), values={}, line=no,
                iterations=integer(fields[1], path, no, "#iterations"))
    for name, tok in zip(head[2:], fields[2:], strict=False):
        if name == "t_stdev" and tok.lower().lstrip("+-") in ("nan", "inf"):
            continue  # perftest's own arithmetic (seen in the rig: -nan from 2 MiB up): empty
        v = number(tok, path, no, name)
        if name == "bw":
            _bw(m, v * factor)
        elif name == "rate":
            m.values["msg_rate_per_s"] = v * 1e6
        elif name in LAT_COLS:
            m.values[LAT_COLS[name]] = v
    return m


def _bw(m: Measure, bytes_s: float) -> None:
    m.values["bw_mbyte_s"] = bytes_s / 1e6
    m.values["bw_gbit_s"] = bytes_s * 8 / 1e9


# --- --out_json -------------------------------------------------------------------------

_PAIR = re.compile(r'^"?(?P<key>[^":]+?)"?\s*:\s*(?P<value>.*?)\s*,?$')


def load_json(path: Path, text: str) -> dict[str, Any]:
    """The file as JSON; else by perftest's line grammar (older releases' unquoted keys and
    trailing commas); BadFile naming the line where neither holds."""
    try:
        obj = json.loads(text)
        if isinstance(obj, dict):
            return obj
    except ValueError:
        pass
    root: dict[str, Any] = {}
    stack: list[dict[str, Any]] = []
    lines = text.splitlines()
    for no, raw in enumerate(lines, 1):
        s = raw.strip()
        if not s:
            continue
        if s == "{" and not stack and not root:
            stack.append(root)
            continue
        if not stack:
            raise bad(path, no, f"{s[:60]!r} after the end of the JSON object")
        if s in ("}", "},"):
            stack.pop()
            continue
        m = _PAIR.match(s)
        if not m:
            raise bad(path, no, f"not perftest JSON: {s[:60]!r} is not 'key: value'")
        key, value = m.group("key").strip(), m.group("value")
        if value == "{":
            stack[-1][key] = child = {}
            stack.append(child)
            continue
        if '"' in value.strip('"') or value in ("", "[", "]"):
            raise bad(path, no, f"not perftest JSON: value {value!r} of {key!r}")
        v: Any = value.strip('"') if value.startswith('"') else value
        if isinstance(v, str) and re.fullmatch(r"[-+]?\d+(\.\d*)?([eE][-+]?\d+)?", v):
            v = float(v) if re.search(r"[.eE]", v) else int(v)
        stack[-1][key] = v
    if stack or not root:
        raise bad(path, len(lines), "the JSON object is not closed: truncated?")
    return root


def parse_json(path: Path, text: str, sha: str) -> Parsed:
    obj = load_json(path, text)
    info, res = obj.get("test_info"), obj.get("results")
    if not isinstance(info, dict) or not isinstance(res, dict):
        raise bad(path, 1, "not perftest JSON: no 'test_info' and 'results' objects")
    m = re.fullmatch(r"(Send|RDMA_Write|RDMA_Read|Atomic)_(.*)_?Test", str(info.get("test", "")))
    if not m:
        raise bad(path, 1, f"perftest JSON: unknown test {info.get('test')!r}")
    line = _line_of(text, "test")
    bench = _bench(m.group(1), m.group(2), path, line)
    bench.device = str(info.get("Device", ""))
    for k, v in info.items():
        key = k.strip().replace("_", " ")
        key = {"Number of qps": "Number of qps", "TX depth": "TX depth"}.get(key, key)
        for ck, name in CONFIG.items():
            if key.lower() == ck.lower():
                if ck == "Number of qps":
                    bench.qps = str(v)
                else:
                    bench.config[name] = str(v)
    rl = _line_of(text, "MsgSize")
    if "MsgSize" not in res:
        raise bad(path, rl or 1, "perftest JSON: results without MsgSize (--output "
                  "bandwidth/latency keeps only one figure): import the text output")
    meas = Measure(size=_int(res, "MsgSize", path, rl), values={}, line=rl)
    if "n_iterations" in res:
        meas.iterations = _int(res, "n_iterations", path, rl)
    if bench.kind == "bandwidth":
        avg, rate = _num(res, "BW_average", path, rl), _num(res, "MsgRate", path, rl)
        factor = _json_bw_factor(meas.size, avg, rate, path, rl)
        _bw(meas, avg * factor)
        meas.values["msg_rate_per_s"] = rate * 1e6
        bench.lost = ("BW_peak",)
    else:
        for k, col in LAT_COLS.items():
            if k in res:
                meas.values[col] = _num(res, k, path, rl)
        if "lat_us_mean" not in meas.values:
            raise bad(path, rl, "perftest JSON: a latency result without t_avg")
    bench.measures.append(meas)
    out = Parsed(path=path, tool="perftest", sha256=sha, benches=[bench])
    out.info["format"] = "json"
    return out


def _line_of(text: str, key: str) -> int:
    for no, raw in enumerate(text.splitlines(), 1):
        if re.match(rf'^\s*"?{re.escape(key)}"?\s*:', raw):
            return no
    return 1


def _num(res: dict, key: str, path: Path, line: int) -> float:
    if key not in res:
        raise bad(path, line, f"perftest JSON: results without {key}")
    return number(str(res[key]), path, line, key)


def _int(res: dict, key: str, path: Path, line: int) -> int:
    return integer(str(res[key]), path, line, key)


def _json_bw_factor(size: int, avg: float, rate: float, path: Path, line: int) -> float:
    """The JSON does not say its bandwidth unit (MiB/s, or Gb/s with --report_gbits); the
    message rate does: avg × unit = size × rate. Refused when neither unit fits."""
    if avg > 0 and rate > 0:
        unit = size * rate * 1e6 / avg
        for f in (MIB, GBIT):
            if abs(math.log(unit / f)) < math.log(1.25):
                return f
    raise bad(path, line, f"perftest JSON: BW_average {avg:g} and MsgRate {rate:g} at {size} "
              "B fit neither MiB/sec nor Gb/sec: cannot tell the unit")
