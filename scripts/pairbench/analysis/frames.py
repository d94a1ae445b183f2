"""Shared helpers for plot/compare/accept/report: metric meaning, aggregate rows, labels."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from pairbench.contract import testtable
from pairbench.contract.sizes import size_label
from pairbench.contract.testtable import TestTable

# What one measured point is (schema version 3 added pattern, buffer layout and QP count;
# all three are strings, '' where they do not apply, so that groupby keeps them).
POINT_KEY = ["layer", "test", "variant", "pattern", "buffers", "qps", "msg_size_bytes", "pairs"]


@dataclass(frozen=True)
class Metric:
    name: str
    label: str
    unit: str
    higher_is_worse: bool


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("lat_us_p50", "latency (p50)", "µs", True),
    Metric("lat_us_p90", "latency (p90)", "µs", True),
    Metric("lat_us_p99", "latency (p99)", "µs", True),
    Metric("lat_us_p999", "latency (p99.9)", "µs", True),
    Metric("lat_us_min", "latency (min)", "µs", True),
    Metric("lat_us_mean", "latency (mean)", "µs", True),
    Metric("lat_us_max", "latency (max)", "µs", True),
    Metric("bw_gbit_s", "bandwidth", "Gbit/s", False),
    Metric("bw_mbyte_s", "bandwidth", "MB/s", False),
    Metric("msg_rate_per_s", "message rate", "msg/s", False),
    Metric("link_pct", "link utilisation", "%", False),
    Metric("fairness", "fairness (Jain)", "", False),
    Metric("start_skew_us", "start skew", "µs", True),
    # What the worst pair did (aggregate rows of multi-pair points; schema version 2).
    Metric("worst_lat_us_p50", "worst pair latency (p50)", "µs", True),
    Metric("worst_lat_us_p99", "worst pair latency (p99)", "µs", True),
    Metric("min_pair_bw_gbit_s", "slowest pair bandwidth", "Gbit/s", False),
    Metric("min_pair_bw_share", "slowest pair share", "", False),
    # A soak's windowed figures (schema version 5; docs/methodology.md "Soak"): the lowest
    # pair's, on the aggregate row.
    Metric("bucket_gbit_s_p1", "soak: 1st-percentile bucket bandwidth", "Gbit/s", False),
    Metric("bucket_gbit_s_min", "soak: lowest bucket bandwidth", "Gbit/s", False),
    Metric("min_bucket_share", "soak: lowest bucket / median bucket", "", False),
    # The victim probe (pairbench-verbs --probe, scope=probe rows; docs/patterns.md): its
    # loaded latency over its idle twin's, same percentile.
    Metric("lat_inflation_p50", "victim latency inflation (p50)", "x", True),
    Metric("lat_inflation_p99", "victim latency inflation (p99)", "x", True),
    Metric("lat_inflation_p999", "victim latency inflation (p99.9)", "x", True),
)}

def test_label(test: str, variant: str = "", layer: str | None = None,
               tables: Mapping[str, TestTable] | None = None) -> str:
    """The test's label from the test table (the run's copy or the snapshot)."""
    return testtable.label(test, variant, layer, tables)


def point_label(test: str, variant: str, size: float, pairs: float, layer: str | None = None,
                tables: Mapping[str, TestTable] | None = None) -> str:
    label = test_label(test, variant, layer, tables)
    return f"{int(pairs)}-pair {label} at {size_label(int(size))}"


def is_headline(df: pd.DataFrame) -> pd.Series:
    """The headline aggregate rows: pair_id=all over every pair of the run (scope all; empty
    scope in runs older than schema version 3).  Per-device and per-node aggregates (scope
    device / node) are extra rows of the same point and are not counted here."""
    return (df["pair_id"] == "all") & df["scope"].isin(["all", ""])


def jain(values: list[float]) -> float:
    """Jain's fairness index (Σx)² / (n Σx²): 1 = equal shares, 1/n = one takes all."""
    xs = [float(v) for v in values]
    sq = sum(x * x for x in xs)
    return sum(xs) ** 2 / (len(xs) * sq) if xs and sq > 0 else float("nan")


def device_fairness(df: pd.DataFrame) -> pd.DataFrame:
    """Fairness across devices: for every point (and repetition) with per-device aggregate
    rows (scope=device, status ok, with bandwidth), Jain's index over those rows'
    bw_gbit_s, each a device's own global window.  Columns: POINT_KEY, repetition (when
    the data has it), devices, device_fairness, min_device, min_device_bw_gbit_s."""
    key = POINT_KEY + (["repetition"] if "repetition" in df.columns else [])
    cols = [*key, "devices", "device_fairness", "min_device", "min_device_bw_gbit_s"]
    if "scope" not in df.columns:
        return pd.DataFrame(columns=cols)
    dev = df[(df["pair_id"] == "all") & (df["scope"] == "device") & (df["status"] == "ok")
             & df["bw_gbit_s"].notna()]
    out = []
    for k, g in dev.groupby(key, dropna=False, sort=True):
        low = g.loc[g["bw_gbit_s"].idxmin()]
        out.append([*k, len(g), jain(list(g["bw_gbit_s"])), low["device"], low["bw_gbit_s"]])
    return pd.DataFrame(out, columns=cols)


def aggregate_rows(df: pd.DataFrame, ok_only: bool = True) -> pd.DataFrame:
    """The headline aggregate rows (status=ok unless ok_only is False)."""
    out = df[is_headline(df)]
    if ok_only:
        out = out[out["status"] == "ok"]
    return out.copy()


def median_by_point(df: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Median over repetitions of each metric per point (aggregate ok rows)."""
    agg = aggregate_rows(df)
    cols = [m for m in metrics if m in agg.columns]
    return agg.groupby(POINT_KEY, dropna=False)[cols].median().reset_index()


def latency_metric(df: pd.DataFrame) -> str:
    """The latency a table, finding or plot of these rows shows: lat_us_p50, or lat_us_mean
    when the rows have no p50 but a mean (block-timed: pairbench-mpi --timing block)."""
    if ("lat_us_p50" not in df or df["lat_us_p50"].isna().all()) and \
            "lat_us_mean" in df and df["lat_us_mean"].notna().any():
        return "lat_us_mean"
    return "lat_us_p50"


def present_metrics(df: pd.DataFrame, candidates: list[str]) -> list[str]:
    """Metrics that have at least one value in the aggregate ok rows."""
    agg = aggregate_rows(df)
    return [m for m in candidates if m in agg.columns and agg[m].notna().any()]


def device_label(meta: dict) -> str:
    """A short device description for plot titles, from metadata (or 'unknown device')."""
    if meta.get("label"):
        return str(meta["label"])
    fp = meta.get("fingerprint") or {}
    rig = fp.get("rig") or {}
    devs = fp.get("rdma_devices") or []
    if rig.get("PB_RDMA_DEVICE"):
        mode = rig.get("PB_RIG_MODE")
        return f"{rig['PB_RDMA_DEVICE']} ({mode})" if mode else str(rig["PB_RDMA_DEVICE"])
    if devs:
        d = devs[0]
        return f"{d.get('name')} {d.get('board_id') or ''}".strip()
    cfg = meta.get("config") or {}
    if cfg.get("layer") == "mpi":
        mpi = (fp.get("mpi") or {}).get("library_version")
        return f"{mpi or 'MPI'} on {fp.get('host', 'unknown host')}"
    return "unknown device"
