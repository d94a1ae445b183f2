"""`pairbench reframe`: a run's medians as ReFrame performance values or a reference table.

One ReFrame performance variable per (point, metric): the median over repetitions of the
point's headline aggregate rows (pair_id=all, status ok) — the values `accept` judges
(`analysis.frames.median_by_point`). Its name says the point: `TEST[+VARIANT][+PATTERN]
[+BUFFERS][+qQPS]_SIZE_Pp_METRIC`, e.g. `latency_8_1p_lat_us_p50`, `bw_4K_2p_bw_gbit_s`.

The reference of a variable is the baseline's median with `compare`'s threshold as its
tolerance (`--rel`, `--abs`, `--thresholds`; default 5 %, p99 15 %): t = max(rel, abs/base),
on the worse side only — a latency may be up to (1 + t) × base, a bandwidth down to
base / (1 + t), the same symmetric log threshold compare uses. ReFrame then fails the check
naming the variable when a value leaves its bounds (integrations/reframe, docs/integrations.md).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys

from pairbench.analysis.compare import (
    DEFAULT_METRICS,
    add_threshold_arguments,
    thresholds_from_args,
)
from pairbench.analysis.frames import METRICS, POINT_KEY, median_by_point, present_metrics
from pairbench.analysis.load import load_run
from pairbench.errors import UsageError
from pairbench.io.safeio import write_output

FORMAT_VERSION = 1
_UNSAFE = re.compile(r"[^A-Za-z0-9_.+-]")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", metavar="RUN", help="run directory or data CSV")
    p.add_argument("--format", choices=["reference", "values"], default="reference",
                   help="reference: a ReFrame reference table (JSON) for a check's "
                   "`reference`; values: one `NAME VALUE UNIT` line per variable (what "
                   "the checks read as performance values)")
    p.add_argument("--system", default="*", metavar="SYSTEM[:PARTITION]",
                   help="the reference's ReFrame system key (default '*': any system)")
    p.add_argument("-o", "--output", default=None, metavar="FILE", help="write here, "
                   "not to stdout")
    add_threshold_arguments(p)


def size_token(n: int) -> str:
    """8 -> '8', 4096 -> '4K', 1048576 -> '1M' (the sizes' own K/M/G suffixes)."""
    for suffix, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div}{suffix}"
    return str(n)


def variable_name(point: dict, metric: str) -> str:
    parts = [point["test"], point["variant"], point["pattern"],
             "" if point["buffers"] in ("", "fresh") else point["buffers"],
             f"q{point['qps']}" if point["qps"] else ""]
    label = "+".join(str(p) for p in parts if p)
    return _UNSAFE.sub("-", f"{label}_{size_token(int(point['msg_size_bytes']))}_"
                            f"{int(point['pairs'])}p_{metric}")


def unit(metric: str) -> str:
    return METRICS[metric].unit.replace("µ", "u") if metric in METRICS else ""


def variables(df, metrics: list[str]) -> dict[str, dict]:
    """name -> {value, metric, unit, point}; medians over repetitions, points with a value."""
    med = median_by_point(df, metrics)
    out: dict[str, dict] = {}
    for rec in med.to_dict("records"):
        point = {k: ("" if isinstance(rec[k], float) and math.isnan(rec[k]) else rec[k])
                 for k in POINT_KEY}
        for m in metrics:
            v = rec.get(m)
            if v is None or math.isnan(v):
                continue
            name = variable_name(point, m)
            if name in out:
                raise UsageError(f"two points give the ReFrame variable {name}")
            out[name] = {"value": float(v), "metric": m, "unit": unit(m),
                         "point": {**point, "msg_size_bytes": int(point["msg_size_bytes"]),
                                   "pairs": int(point["pairs"])}}
    return out


def bounds(metric: str, value: float, rel: float, absolute: float) -> tuple[float | None,
                                                                           float | None]:
    """ReFrame's (lower, upper) fractions: the worse side only, compare's log threshold."""
    t = max(rel, absolute / value if value > 0 else 0.0)
    worse_up = METRICS[metric].higher_is_worse if metric in METRICS else True
    return (None, round(t, 6)) if worse_up else (round(-t / (1 + t), 6), None)


def run_reframe(ns: argparse.Namespace) -> int:
    th = thresholds_from_args(ns)
    df = load_run(ns.run)
    metrics = present_metrics(df, th.metrics or DEFAULT_METRICS)
    found = variables(df, metrics)
    if not found:
        raise UsageError(f"{ns.run}: no ok aggregate row with any of {', '.join(metrics)}")
    if ns.format == "values":
        text = "".join(f"{n} {v['value']:.6g} {v['unit'] or '-'}\n" for n, v in found.items())
    else:
        ref = {}
        for n, v in found.items():
            lo, hi = bounds(v["metric"], v["value"], th.rel(v["metric"]), th.abs(v["metric"]))
            ref[n] = [v["value"], lo, hi, v["unit"]]
        text = json.dumps({"pairbench_reframe_reference": FORMAT_VERSION, "source": str(ns.run),
                           "reference": {ns.system: ref},
                           "variables": {n: {"metric": v["metric"], **v["point"]}
                                         for n, v in found.items()}}, indent=1) + "\n"
    if ns.output:
        write_output(ns.output, text, "--output")
    else:
        sys.stdout.write(text)
    return 0
