"""`pairbench accept RUN --spec SPEC.toml`: acceptance criteria for a new HCA.

Criteria (each an array of tables in the spec; see examples/accept-spec.toml):
  [[min_link_pct]]     link_pct >= min_pct for sizes >= min_size_bytes
  [[max_latency]]      a latency metric (lat_us_p50, lat_us_p99, ...) <= max_us at given sizes
  [[max_pair_scaling]] N-pair / 1-pair latency <= max_ratio (flat scaling), every N > 1
  [[min_fairness]]     Jain fairness index >= min_fairness
  [[max_worst_pair]]   worst pair's latency / pooled latency of the same point <= max_ratio:
                       worst_lat_us_p50 / lat_us_p50 (metric = "lat_us_p50", default) or
                       worst_lat_us_p99 / lat_us_p99; every point with >= 2 pairs
  [[min_pair_share]]   slowest pair's bandwidth / mean pair bandwidth (min_pair_bw_share)
                       >= min_share; every point with >= 2 pairs
  [sanity]             max_link_pct (default 100): any row above it fails (bandwidth above
                       the link rate is a measurement error), as does the above_link_rate flag
Values are medians over repetitions of the aggregate (pair_id=all) row. A criterion that
matches no measured point fails ("no data"); a matched point with status=error fails.
Exit 0 = every check passed, 1 = some failed, 2 = bad spec or run.
"""

from __future__ import annotations

import argparse
import math
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pandas as pd

from pairbench.analysis import METRICS
from pairbench.errors import UsageError
from pairbench.safeio import write_output
from pairbench.schema import load_run
from pairbench.sizes import parse_size, size_label

SECTIONS: dict[str, dict[str, tuple[str, bool]]] = {
    # key -> (type, required); types: str, num, size, sizes, ints, metric
    "min_link_pct": {"test": ("str", True), "min_size_bytes": ("size", False),
                     "min_pct": ("num", True), "pairs": ("ints", False),
                     "variant": ("str", False)},
    "max_latency": {"test": ("str", True), "size_bytes": ("sizes", True),
                    "metric": ("metric", False), "max_us": ("num", True),
                    "pairs": ("ints", False), "variant": ("str", False)},
    "max_pair_scaling": {"test": ("str", True), "metric": ("metric", False),
                         "max_ratio": ("num", True), "max_size_bytes": ("size", False),
                         "variant": ("str", False)},
    "min_fairness": {"test": ("str", True), "min_fairness": ("num", True),
                     "min_size_bytes": ("size", False), "pairs": ("ints", False),
                     "variant": ("str", False)},
    "max_worst_pair": {"test": ("str", True), "max_ratio": ("num", True),
                       "metric": ("worst_metric", False), "min_size_bytes": ("size", False),
                       "max_size_bytes": ("size", False), "pairs": ("ints", False),
                       "variant": ("str", False)},
    "min_pair_share": {"test": ("str", True), "min_share": ("num", True),
                       "min_size_bytes": ("size", False), "pairs": ("ints", False),
                       "variant": ("str", False)},
}
# max_worst_pair: the pooled metric -> the worst pair's column of the same row.
WORST_OF = {"lat_us_p50": "worst_lat_us_p50", "lat_us_p99": "worst_lat_us_p99"}
SPEC_KEYS = {"name": "str", "layer": "str"}
SANITY_KEYS = {"max_link_pct": "num"}


def _typed(value: Any, kind: str, where: str) -> Any:
    if kind == "str":
        if not isinstance(value, str):
            raise UsageError(f"{where}: expected a string, got {value!r}")
        return value
    if kind == "num":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise UsageError(f"{where}: expected a number, got {value!r}")
        if not math.isfinite(value) or value < 0:  # limits are latencies, %, ratios
            raise UsageError(f"{where}: expected a finite number >= 0, got {value!r}")
        return float(value)
    if kind == "size":
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise UsageError(f"{where}: expected a size (e.g. 65536 or \"64K\"), got {value!r}")
        size = value if isinstance(value, int) else parse_size(value)
        if size < 1:
            raise UsageError(f"{where}: expected a size >= 1 byte, got {value!r}")
        return size
    if kind == "sizes":
        vals = value if isinstance(value, list) else [value]
        return [_typed(v, "size", where) for v in vals]
    if kind == "ints":
        vals = value if isinstance(value, list) else [value]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in vals):
            raise UsageError(f"{where}: expected positive integers, got {value!r}")
        return vals
    if kind == "metric":
        if value not in METRICS or not str(value).startswith("lat_us_"):
            raise UsageError(f"{where}: expected a latency metric (lat_us_p50, lat_us_p99, ...), "
                             f"got {value!r}")
        return value
    if kind == "worst_metric":
        if value not in WORST_OF:
            raise UsageError(f"{where}: expected one of {', '.join(WORST_OF)}, got {value!r}")
        return value
    raise AssertionError(kind)


def load_spec(path: Path) -> dict:
    """Parse and validate a spec; unknown keys and wrong types are errors."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a TOML spec (not UTF-8 text)") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML ({exc})") from None
    spec: dict = {"name": path.stem, "layer": None, "sanity": {"max_link_pct": 100.0}}
    allowed = {"spec", "sanity", *SECTIONS}
    for key, val in raw.items():
        if key not in allowed:
            raise UsageError(f"{path}: unknown key {key!r} (allowed: {', '.join(sorted(allowed))})")
        if key in ("spec", "sanity"):
            keys = SPEC_KEYS if key == "spec" else SANITY_KEYS
            if not isinstance(val, dict):
                raise UsageError(f"{path}: [{key}] must be a table")
            for k, v in val.items():
                if k not in keys:
                    raise UsageError(f"{path}: unknown key {key}.{k} "
                                     f"(allowed: {', '.join(keys)})")
                typed = _typed(v, keys[k], f"{path}: {key}.{k}")
                (spec["sanity"] if key == "sanity" else spec)[k] = typed
            continue
        if not isinstance(val, list):
            raise UsageError(f"{path}: {key} must be an array of tables ([[{key}]])")
        fields = SECTIONS[key]
        spec[key] = []
        for i, tab in enumerate(val):
            where = f"{path}: {key}[{i}]"
            if not isinstance(tab, dict):
                raise UsageError(f"{where}: must be a table")
            for k in tab:
                if k not in fields:
                    raise UsageError(f"{where}: unknown key {k!r} "
                                     f"(allowed: {', '.join(fields)})")
            crit = {"metric": "lat_us_p50", "variant": ""}
            for k, (kind, required) in fields.items():
                if k in tab:
                    crit[k] = _typed(tab[k], kind, f"{where}.{k}")
                elif required:
                    raise UsageError(f"{where}: missing key {k!r}")
            spec[key].append(crit)
    if not any(spec.get(k) for k in SECTIONS):
        raise UsageError(f"{path}: no criteria (add e.g. [[max_latency]])")
    return spec


def _rows_for(agg: pd.DataFrame, crit: dict) -> pd.DataFrame:
    d = agg[(agg["test"] == crit["test"]) & (agg["variant"].fillna("") == crit["variant"])]
    if "pairs" in crit:
        d = d[d["pairs"].isin(crit["pairs"])]
    return d


def _check(name: str, crit: dict, rows: list[dict], d: pd.DataFrame, metric: str,
           limit: float, ok_if_le: bool) -> None:
    """One check row per (size, pairs) of d; median over repetitions."""
    label = crit["test"] + (f"[{crit['variant']}]" if crit["variant"] else "")
    if d.empty:
        rows.append({"criterion": name, "test": label, "size": "", "pairs": "", "value": None,
                     "limit": limit, "verdict": "fail", "detail": "no data for this criterion"})
        return
    for (size, pairs), g in d.groupby(["msg_size_bytes", "pairs"]):
        errs = g[g["status"] != "ok"]
        base = {"criterion": name, "test": label, "size": size_label(int(size)),
                "pairs": int(pairs), "limit": limit}
        if len(errs):
            rows.append({**base, "value": None, "verdict": "fail",
                         "detail": f"point failed: {errs['error'].iloc[0]}"})
            continue
        vals = g[metric].dropna()
        if vals.empty:
            rows.append({**base, "value": None, "verdict": "fail",
                         "detail": f"{metric} not measured (empty)"})
            continue
        v = float(vals.median())
        ok = v <= limit if ok_if_le else v >= limit
        rows.append({**base, "value": v, "verdict": "pass" if ok else "fail",
                     "detail": f"{metric} {'<=' if ok_if_le else '>='} {limit:g}"})


def evaluate(df: pd.DataFrame, spec: dict) -> list[dict]:
    agg = df[df["pair_id"] == "all"].copy()
    if spec.get("layer"):
        agg = agg[agg["layer"] == spec["layer"]]
    rows: list[dict] = []
    for c in spec.get("min_link_pct", []):
        d = _rows_for(agg, c)
        d = d[d["msg_size_bytes"] >= c.get("min_size_bytes", 0)]
        _check("min_link_pct", c, rows, d, "link_pct", c["min_pct"], ok_if_le=False)
    for c in spec.get("max_latency", []):
        d = _rows_for(agg, c)
        d = d[d["msg_size_bytes"].isin(c["size_bytes"])]
        _check(f"max_latency {c['metric']}", c, rows, d, c["metric"], c["max_us"], ok_if_le=True)
    for c in spec.get("min_fairness", []):
        d = _rows_for(agg, c)
        d = d[(d["msg_size_bytes"] >= c.get("min_size_bytes", 0)) & (d["pairs"] > 1)]
        _check("min_fairness", c, rows, d, "fairness", c["min_fairness"], ok_if_le=False)
    for c in spec.get("max_pair_scaling", []):
        _scaling(agg, c, rows)
    for c in spec.get("max_worst_pair", []):
        _worst_pair(agg, c, rows)
    for c in spec.get("min_pair_share", []):
        d = _sized(_rows_for(agg, c), c)
        n0 = len(rows)
        _check("min_pair_share", c, rows, d[d["pairs"] > 1], "min_pair_bw_share",
               c["min_share"], ok_if_le=False)
        _name_pair(rows[n0:], d, "min_bw_pair_id", "slowest pair")
    _sanity(df, spec, rows)
    return rows


def _scaling(agg: pd.DataFrame, c: dict, rows: list[dict]) -> None:
    d = _rows_for(agg, c)
    if "max_size_bytes" in c:
        d = d[d["msg_size_bytes"] <= c["max_size_bytes"]]
    ok = d[d["status"] == "ok"]
    med = ok.groupby(["msg_size_bytes", "pairs"])[c["metric"]].median()
    scaled = []
    for (size, pairs), v in med.items():
        one = med.get((size, 1.0))
        if pairs == 1 or one is None or pd.isna(one) or pd.isna(v) or one == 0:
            continue
        scaled.append({"msg_size_bytes": size, "pairs": pairs, "status": "ok", "error": "",
                       "ratio": v / one})
    sub = pd.DataFrame(scaled, columns=["msg_size_bytes", "pairs", "status", "error", "ratio"])
    errs = d[(d["status"] != "ok")]
    sub = pd.concat([sub, errs[["msg_size_bytes", "pairs", "status", "error"]]],
                    ignore_index=True)
    _check(f"max_pair_scaling {c['metric']}", c, rows, sub, "ratio", c["max_ratio"],
           ok_if_le=True)


def _sized(d: pd.DataFrame, c: dict) -> pd.DataFrame:
    if "min_size_bytes" in c:
        d = d[d["msg_size_bytes"] >= c["min_size_bytes"]]
    if "max_size_bytes" in c:
        d = d[d["msg_size_bytes"] <= c["max_size_bytes"]]
    return d


def _worst_pair(agg: pd.DataFrame, c: dict, rows: list[dict]) -> None:
    """worst pair's latency / pooled latency, per row, then the median over repetitions."""
    metric = c["metric"]
    d = _sized(_rows_for(agg, c), c)
    d = d[d["pairs"] > 1].copy()
    ratio = f"{WORST_OF[metric]} / {metric}"
    d[ratio] = d[WORST_OF[metric]] / d[metric].where(d[metric] > 0)
    n0 = len(rows)
    _check(f"max_worst_pair {metric}", c, rows, d, ratio, c["max_ratio"], ok_if_le=True)
    _name_pair(rows[n0:], d, "worst_lat_pair_id", "worst pair")


def _name_pair(rows: list[dict], d: pd.DataFrame, id_col: str, what: str) -> None:
    """Add which pair it was (the most frequent over repetitions) to failed check rows."""
    ids = d.dropna(subset=[id_col]).groupby(["msg_size_bytes", "pairs"])[id_col]
    most = {(size_label(int(k[0])), int(k[1])): int(v.mode().iloc[0]) for k, v in ids}
    for r in rows:
        key = (r["size"], r["pairs"])
        if r["verdict"] == "fail" and key in most:
            r["detail"] += f" ({what}: pair {most[key]})"


def _sanity(df: pd.DataFrame, spec: dict, rows: list[dict]) -> None:
    limit = spec["sanity"]["max_link_pct"]
    d = df[df["status"] == "ok"]
    above = d[(d["link_pct"] > limit)
              | d["flags"].fillna("").str.split(";").apply(lambda f: "above_link_rate" in f)]
    if d["link_pct"].notna().sum() == 0 and above.empty:
        rows.append({"criterion": "sanity max_link_pct", "test": "*", "size": "", "pairs": "",
                     "value": None, "limit": limit, "verdict": "pass",
                     "detail": "link rate unknown (link_pct empty): nothing to check"})
        return
    for _, r in above.iterrows():
        rows.append({"criterion": "sanity max_link_pct", "test": r["test"],
                     "size": size_label(int(r["msg_size_bytes"])), "pairs": int(r["pairs"]),
                     "value": r["link_pct"], "limit": limit, "verdict": "fail",
                     "detail": f"bandwidth above the link rate (pair {r['pair_id']}): "
                               "a measurement error"})
    if above.empty:
        rows.append({"criterion": "sanity max_link_pct", "test": "*", "size": "", "pairs": "",
                     "value": float(d["link_pct"].max()), "limit": limit, "verdict": "pass",
                     "detail": "no bandwidth above the link rate"})


def junit_xml(spec: dict, rows: list[dict]) -> str:
    fails = sum(r["verdict"] != "pass" for r in rows)
    suite = ET.Element("testsuite", name=f"pairbench accept: {spec['name']}",
                       tests=str(len(rows)), failures=str(fails), errors="0")
    for r in rows:
        name = " ".join(str(x) for x in (r["test"], r["size"],
                                         f"{r['pairs']} pairs" if r["pairs"] != "" else "") if x)
        case = ET.SubElement(suite, "testcase", classname=r["criterion"], name=name)
        if r["verdict"] != "pass":
            f = ET.SubElement(case, "failure", message=f"{_v(r['value'])} vs limit "
                              f"{r['limit']:g}: {r['detail']}")
            f.text = r["detail"]
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def _v(x: object) -> str:
    return "n/a" if x is None or (isinstance(x, float) and pd.isna(x)) else f"{x:.4g}"


def render_text(spec: dict, rows: list[dict]) -> str:
    head = ["criterion", "test", "size", "pairs", "value", "limit", "verdict", "detail"]
    body = [[r["criterion"], r["test"], r["size"], str(r["pairs"]), _v(r["value"]),
             f"{r['limit']:g}", r["verdict"].upper(), r["detail"]] for r in rows]
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    lines = [f"acceptance spec: {spec['name']}"]
    for i, row in enumerate([head, *body]):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    n_fail = sum(r["verdict"] != "pass" for r in rows)
    lines.append(f"verdict: {'PASS' if n_fail == 0 else 'FAIL'} "
                 f"({len(rows) - n_fail} passed, {n_fail} failed)")
    return "\n".join(lines) + "\n"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", metavar="RUN", help="run directory or data CSV")
    p.add_argument("--spec", required=True, help="acceptance spec TOML "
                   "(see examples/accept-spec.toml)")
    p.add_argument("--junit", default=None, metavar="FILE", help="write JUnit XML here")


def run_accept(ns: argparse.Namespace) -> int:
    spec = load_spec(Path(ns.spec))
    df = load_run(ns.run)
    rows = evaluate(df, spec)
    sys.stdout.write(render_text(spec, rows))
    if ns.junit:
        write_output(ns.junit, junit_xml(spec, rows), "--junit")
    return 0 if all(r["verdict"] == "pass" for r in rows) else 1
