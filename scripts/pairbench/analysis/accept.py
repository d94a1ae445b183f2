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
  [[max_stalls]]       soak (--soak): stalls over the point's pairs <= max_stalls (default 0)
  [[no_corruption]]    soak with --validate-live: messages were checked under load and
                       none was corrupt (a run that checked nothing fails: no evidence)
  [[min_incast_share]] incast (pairbench-verbs --pattern, docs/patterns.md): the target's
                       aggregate (the headline row: Σ bytes of its incoming flows over their
                       global window on its clock) / link_gbit_s when given (a known limit,
                       e.g. a rate-limited port), else link_pct / 100, >= min_share
  [[max_probe_inflation]] the victim probe (--probe, scope=probe rows): lat_inflation_p99
                       (metric: lat_inflation_p50 | p99 | p999; loaded / idle twin of the same
                       point) <= max_ratio.  Per-flow fairness under a pattern: [[min_fairness]]
                       (the target's Jain index over its incoming flows) and [[min_pair_share]]
  [[min_bucket_share]] soak: the lowest pair's min bucket / its median bucket
                       (min_bucket_share, the windowed minimum) >= min_share;
                       both soak criteria take the WORST repetition, count only soak rows,
                       and fail a partial soak or a flow without a median
  [spec] accept_flags  machine flags (oversubscribed, emulated_device, link_rate_nominal,
                       link_rate_unknown) the spec accepts; a check on a point whose rows
                       carry any other machine flag fails even when its value is within
                       the limit
  [[fabric_min_link_share]]  fabric scan (pairbench fabric): every node pair's perf
                       (value / reference for bandwidth, reference / value for latency;
                       reference = median over nodes of each node's median link) >= min_share
                       (e.g. 0.9: no node pair below 90 % of the median bandwidth)
  [[fabric_max_outliers]]    fabric scan: suspect nodes + suspect links <= max_outliers,
                       by the rule of pairbench.analysis.outliers with the criterion's tolerance,
                       z; a suspect the scan's confirmation rounds re-measured within the floor
                       (unconfirmed) is listed in the detail, not counted; confirmed ones and
                       ones never re-measured count. A fabric scan's links are read by the
                       streaming path (scanlinks.read_scan), not as the generic frame
  [[fabric_max_components]]  fabric scan with a cable file (pairbench fabric --cables, or
                       cables = FILE here): components named by localisation + slow node
                       pairs none explains <= max_components (default 0), per test and size
  [sanity]             max_link_pct (default 100): any row above it fails (bandwidth above
                       the link rate is a measurement error), as does the above_link_rate flag
  [environment]        the machine, not the speed (issue 25; pairbench.analysis.envcheck):
                       link width/speed (or "max": the highest the port supports), PCIe
                       generation/width minimums or the card's full link, MaxReadReq minimum,
                       MTU, one firmware across devices and nodes or an expected one, no
                       error counter moved (counters.csv)
Values are medians over repetitions of the aggregate (pair_id=all) row. A criterion that
matches no measured point fails ("no data"); a matched point with status=error fails.
Exit 0 = every check passed, 1 = some failed, 2 = bad spec or run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import pandas as pd

from pairbench.analysis.acceptcomp import fabric_components
from pairbench.analysis.envcheck import Environment, evaluate_environment
from pairbench.analysis.flags import row_flags
from pairbench.analysis.frames import METRICS, is_headline
from pairbench.analysis.load import read_chunks
from pairbench.contract import testtable
from pairbench.contract.columns import BLOCK_TIMED
from pairbench.contract.flags import MACHINE_FLAGS, tail_advice
from pairbench.contract.schema import find_data_csv
from pairbench.contract.sizes import Size, size_label
from pairbench.errors import UsageError
from pairbench.io import tomlschema
from pairbench.io.tomlschema import (
    ArrayOfTables,
    ListOf,
    NonNegInt,
    Num,
    PositiveInt,
    Str,
    Table,
    key,
)

# max_worst_pair: the pooled metric -> the worst pair's column of the same row.
WORST_OF = {"lat_us_p50": "worst_lat_us_p50", "lat_us_p99": "worst_lat_us_p99"}
LAT_METRICS = tuple(m for m in METRICS if m.startswith("lat_us_"))


# The spec's schema (pairbench.io.tomlschema): one dataclass per table, one key() per key.
@dataclass(frozen=True, kw_only=True)
class MinLinkPct:
    test: str = key(Str())
    min_size_bytes: int | None = key(Size(), None)
    min_pct: float = key(Num())
    pairs: list[int] | None = key(ListOf(PositiveInt()), None)
    variant: str = key(Str(), "")


@dataclass(frozen=True, kw_only=True)
class MaxLatency:
    test: str = key(Str())
    size_bytes: list[int] = key(ListOf(Size()))
    metric: str = key(Str(LAT_METRICS), "lat_us_p50")
    max_us: float = key(Num())
    pairs: list[int] | None = key(ListOf(PositiveInt()), None)
    variant: str = key(Str(), "")


@dataclass(frozen=True, kw_only=True)
class MaxPairScaling:
    test: str = key(Str())
    metric: str = key(Str(LAT_METRICS), "lat_us_p50")
    max_ratio: float = key(Num())
    max_size_bytes: int | None = key(Size(), None)
    variant: str = key(Str(), "")


@dataclass(frozen=True, kw_only=True)
class MinFairness:
    test: str = key(Str())
    min_fairness: float = key(Num())
    min_size_bytes: int | None = key(Size(), None)
    pairs: list[int] | None = key(ListOf(PositiveInt()), None)
    variant: str = key(Str(), "")


@dataclass(frozen=True, kw_only=True)
class MaxWorstPair:
    test: str = key(Str())
    max_ratio: float = key(Num())
    metric: str = key(Str(tuple(WORST_OF)), "lat_us_p50")
    min_size_bytes: int | None = key(Size(), None)
    max_size_bytes: int | None = key(Size(), None)
    pairs: list[int] | None = key(ListOf(PositiveInt()), None)
    variant: str = key(Str(), "")


@dataclass(frozen=True, kw_only=True)
class MinPairShare:
    test: str = key(Str())
    min_share: float = key(Num())
    min_size_bytes: int | None = key(Size(), None)
    pairs: list[int] | None = key(ListOf(PositiveInt()), None)
    variant: str = key(Str(), "")


@dataclass(frozen=True, kw_only=True)
class MaxStalls:
    test: str = key(Str())
    max_stalls: int = key(NonNegInt(), 0)
    min_size_bytes: int | None = key(Size(), None)
    pairs: list[int] | None = key(ListOf(PositiveInt()), None)
    variant: str = key(Str(), "")


@dataclass(frozen=True, kw_only=True)
class NoCorruption:
    test: str = key(Str())
    variant: str = key(Str(), "")


@dataclass(frozen=True, kw_only=True)
class MinBucketShare:
    test: str = key(Str())
    min_share: float = key(Num())
    min_size_bytes: int | None = key(Size(), None)
    pairs: list[int] | None = key(ListOf(PositiveInt()), None)
    variant: str = key(Str(), "")


@dataclass(frozen=True, kw_only=True)
class MinIncastShare:
    test: str = key(Str())
    min_share: float = key(Num())
    link_gbit_s: float | None = key(Num(), None)
    pattern: str = key(Str(), "incast")
    min_size_bytes: int | None = key(Size(), None)
    pairs: list[int] | None = key(ListOf(PositiveInt()), None)
    variant: str = key(Str(), "")


PROBE_METRICS = ("lat_inflation_p50", "lat_inflation_p99", "lat_inflation_p999")


@dataclass(frozen=True, kw_only=True)
class MaxProbeInflation:
    test: str = key(Str())
    max_ratio: float = key(Num())
    metric: str = key(Str(PROBE_METRICS), "lat_inflation_p99")
    pattern: str | None = key(Str(), None)
    min_size_bytes: int | None = key(Size(), None)
    pairs: list[int] | None = key(ListOf(PositiveInt()), None)
    variant: str = key(Str(), "")


@dataclass(frozen=True, kw_only=True)
class FabricMinLinkShare:
    test: str = key(Str())
    min_share: float = key(Num())
    min_size_bytes: int | None = key(Size(), None)
    max_size_bytes: int | None = key(Size(), None)
    variant: str = key(Str(), "")


@dataclass(frozen=True, kw_only=True)
class FabricMaxOutliers:
    test: str = key(Str())
    max_outliers: int = key(NonNegInt())
    tolerance: float = key(Num(open_unit=True), 0.10)
    z: float = key(Num(), 3.5)
    min_size_bytes: int | None = key(Size(), None)
    max_size_bytes: int | None = key(Size(), None)
    variant: str = key(Str(), "")


@dataclass(frozen=True)
class FabricMaxComponents:
    test: str = key(Str())
    max_components: int = key(NonNegInt(), 0)
    tolerance: float = key(Num(open_unit=True), 0.10)
    z: float = key(Num(), 3.5)
    min_size_bytes: int | None = key(Size(), None)
    max_size_bytes: int | None = key(Size(), None)
    variant: str = key(Str(), "")
    cables: str | None = key(Str(), None)       # default: the scan's --cables
    routing: str | None = key(Str(("dmodk", "ecmp")), None)


@dataclass(frozen=True)
class SpecInfo:
    name: str | None = key(Str(), None)
    layer: str | None = key(Str(testtable.LAYERS), None)
    # Machine flags (pairbench.contract.flags) the spec accepts on the rows it judges; a criterion
    # on a row with any other machine flag cannot pass.
    accept_flags: list[str] = key(ListOf(Str(tuple(MACHINE_FLAGS)), strict=True),
                                  factory=list)


@dataclass(frozen=True)
class Sanity:
    max_link_pct: float = key(Num(), 100.0)


# criterion -> what the test must measure for it (a latency, or a bandwidth).
NEEDS_LATENCY = ("max_latency", "max_pair_scaling", "max_worst_pair")
NEEDS_BANDWIDTH = ("min_link_pct", "min_fairness", "min_pair_share", "max_stalls",
                   "min_bucket_share", "no_corruption", "min_incast_share",
                   "max_probe_inflation")


@dataclass(frozen=True)
class AcceptSpec:
    spec: SpecInfo = key(Table(SpecInfo), factory=SpecInfo)
    sanity: Sanity = key(Table(Sanity), factory=Sanity)
    min_link_pct: list[MinLinkPct] = key(ArrayOfTables(MinLinkPct), factory=list)
    max_latency: list[MaxLatency] = key(ArrayOfTables(MaxLatency), factory=list)
    max_pair_scaling: list[MaxPairScaling] = key(ArrayOfTables(MaxPairScaling), factory=list)
    min_fairness: list[MinFairness] = key(ArrayOfTables(MinFairness), factory=list)
    max_worst_pair: list[MaxWorstPair] = key(ArrayOfTables(MaxWorstPair), factory=list)
    min_pair_share: list[MinPairShare] = key(ArrayOfTables(MinPairShare), factory=list)
    max_stalls: list[MaxStalls] = key(ArrayOfTables(MaxStalls), factory=list)
    min_bucket_share: list[MinBucketShare] = key(ArrayOfTables(MinBucketShare), factory=list)
    no_corruption: list[NoCorruption] = key(ArrayOfTables(NoCorruption), factory=list)
    min_incast_share: list[MinIncastShare] = key(ArrayOfTables(MinIncastShare), factory=list)
    max_probe_inflation: list[MaxProbeInflation] = key(ArrayOfTables(MaxProbeInflation),
                                                       factory=list)
    fabric_min_link_share: list[FabricMinLinkShare] = key(ArrayOfTables(FabricMinLinkShare),
                                                          factory=list)
    fabric_max_outliers: list[FabricMaxOutliers] = key(ArrayOfTables(FabricMaxOutliers),
                                                       factory=list)
    fabric_max_components: list[FabricMaxComponents] = key(
        ArrayOfTables(FabricMaxComponents), factory=list)
    environment: Environment | None = key(Table(Environment), None)


SECTIONS = tuple(f.name for f in fields(AcceptSpec)
                 if f.name not in ("spec", "sanity", "environment"))


def load_spec(path: Path) -> dict:
    """Parse and validate a spec (schema AcceptSpec); unknown keys, wrong types and
    missing keys are errors. Returns {name, layer, sanity, SECTION: [criterion dicts]}
    with a criterion's absent optional keys left out."""
    parsed = tomlschema.load(AcceptSpec, path)
    spec: dict = {"name": parsed.spec.name or path.stem, "layer": parsed.spec.layer,
                  "sanity": asdict(parsed.sanity), "path": str(path),
                  "accept_flags": list(parsed.spec.accept_flags)}
    for sec in SECTIONS:
        crits = getattr(parsed, sec)
        if crits:
            spec[sec] = [{k: v for k, v in asdict(c).items() if v is not None} for c in crits]
    env = parsed.environment
    if env is not None and any(v not in (None, False) for k, v in asdict(env).items()
                               if k != "devices"):
        spec["environment"] = env
    if not any(spec.get(k) for k in SECTIONS) and "environment" not in spec:
        raise UsageError(f"{path}: no criteria (add e.g. [[max_latency]])")
    return spec


def check_tests(spec: dict, tables: Mapping[str, testtable.TestTable]) -> None:
    """Every criterion names a test of the spec's layer (any layer without one) with a
    variant it has, that measures what the criterion judges; else UsageError naming it."""
    layers = [spec["layer"]] if spec.get("layer") else list(tables)
    for sec in SECTIONS:
        for i, c in enumerate(spec.get(sec, [])):
            where = f"{spec.get('path', spec['name'])}: {sec}[{i}]"
            infos = [tables[lay][c["test"]] for lay in layers
                     if lay in tables and c["test"] in tables[lay]]
            if not infos:
                known = sorted({n for lay in layers if lay in tables for n in tables[lay].names()})
                raise UsageError(f"{where}.test: unknown test {c['test']!r} "
                                 f"(tests of {'/'.join(layers)}: {', '.join(known)})")
            if c["variant"] and not any(c["variant"] in t.variants for t in infos):
                have = sorted({v for t in infos for v in t.variants})
                raise UsageError(f"{where}.variant: {c['test']} has no variant {c['variant']!r} "
                                 f"(variants: {', '.join(have) or 'none'})")
            if sec in NEEDS_LATENCY and not any(t.has_latency for t in infos):
                raise UsageError(f"{where}.test: {sec} judges a latency, {c['test']} measures "
                                 "none")
            if sec in NEEDS_BANDWIDTH and not any(t.has_bandwidth for t in infos):
                raise UsageError(f"{where}.test: {sec} judges bandwidth, {c['test']} measures "
                                 "none")


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
            why = f"{metric} not measured (empty)"
            if metric != "lat_us_mean" and {"flags", "lat_us_mean"} <= set(g.columns) and \
                    row_flags(g).map(lambda f: BLOCK_TIMED in f).all() and \
                    g["lat_us_mean"].notna().any():
                why += "; the rows are block_timed (--timing block) and carry lat_us_mean only"
            rows.append({**base, "value": None, "verdict": "fail", "detail": why})
            continue
        v = float(vals.median())
        ok = v <= limit if ok_if_le else v >= limit
        rows.append({**base, "value": v, "verdict": "pass" if ok else "fail",
                     "detail": f"{metric} {'<=' if ok_if_le else '>='} {limit:g}"})


FABRIC_SECTIONS = ("fabric_min_link_share", "fabric_max_outliers", "fabric_max_components")


def is_fabric_scan(meta: dict) -> bool:
    return meta.get("kind") == "pairbench fabric"


def needs_frame(spec: dict, meta: dict) -> bool:
    """Whether evaluate() needs the run as the generic frame: not for a fabric scan judged
    by fabric criteria (and [environment]) alone — its tens of millions of rows are read
    by the streaming paths (links, sanity) instead."""
    return not is_fabric_scan(meta) or any(spec.get(s) for s in SECTIONS
                                           if s not in FABRIC_SECTIONS)


def evaluate(df: pd.DataFrame | None, spec: dict, meta: dict | None = None,
             run: Path | None = None) -> list[dict]:
    """Every check row of the spec; meta (metadata.json) and run (its directory, for
    counters.csv) feed the [environment] criteria; a fabric scan's criteria read run's
    links (pairbench.analysis.scanlinks.read_scan). df: the run's rows, or None where
    needs_frame() says they are not needed."""
    rows: list[dict] = []
    if df is not None:
        _sweep_criteria(df, spec, rows)
        for c in spec.get("no_corruption", []):
            _no_corruption(df, run, c, rows)
    cache: dict = {}
    scan = run if run is not None and is_fabric_scan(meta or {}) else None
    for c in spec.get("fabric_min_link_share", []):
        _fabric(scan, df, spec, c, rows, True, cache)
    for c in spec.get("fabric_max_outliers", []):
        _fabric(scan, df, spec, c, rows, False, cache)
    for c in spec.get("fabric_max_components", []):
        fabric_components(_fabric_results(scan, df, spec, c.get("tolerance", 0.10),
                                          c.get("z", 3.5), cache), meta or {}, c, rows, cache)
    if df is None:
        _sanity_stream(find_data_csv(Path(run)) if run is not None else None, spec, rows)
    else:
        _sanity(df, spec, rows)
    evaluate_environment(spec.get("environment"), meta or {}, run, rows)
    return rows


def _sweep_criteria(df: pd.DataFrame, spec: dict, rows: list[dict]) -> None:
    """The criteria on a sweep's aggregate rows."""
    agg = df[is_headline(df)].copy()
    if spec.get("layer"):
        agg = agg[agg["layer"] == spec["layer"]]
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
    for c in spec.get("max_stalls", []):
        _soak_check("max_stalls", c, rows, _sized(_rows_for(agg, c), c), "stalls",
                    c["max_stalls"], ok_if_le=True)
    for c in spec.get("min_bucket_share", []):
        _soak_check("min_bucket_share", c, rows, _sized(_rows_for(agg, c), c),
                    "min_bucket_share", c["min_share"], ok_if_le=False)
    _pattern_criteria(df, agg, spec, rows)
    _refuse_flagged(agg, spec, rows)
    _note_tail(agg, rows)


def _of_pattern(d: pd.DataFrame, pattern: str | None) -> pd.DataFrame:
    """Rows of a pattern's points: `incast` takes incast and incast:T; None takes any."""
    pat = d["pattern"].fillna("").astype(str)
    if pattern is None:
        return d[pat != ""]
    return d[(pat == pattern) | pat.str.startswith(pattern + ":")]


def _pattern_criteria(df: pd.DataFrame, agg: pd.DataFrame, spec: dict, rows: list[dict]) -> None:
    """[[min_incast_share]] on the target's headline rows, [[max_probe_inflation]] on the
    victim probe's rows (scope=probe), each a median over repetitions per point."""
    for c in spec.get("min_incast_share", []):
        d = _of_pattern(_sized(_rows_for(agg, c), c), c["pattern"]).copy()
        known = c.get("link_gbit_s")
        d["incast_share"] = d["bw_gbit_s"] / known if known else d["link_pct"] / 100.0
        _check("min_incast_share" + (f" (of {known:g} Gbit/s)" if known else " (of link_pct)"),
               c, rows, d, "incast_share", c["min_share"], ok_if_le=False)
    if not spec.get("max_probe_inflation"):
        return
    probe = df[df["scope"] == "probe"] if "scope" in df.columns else df.iloc[0:0]
    if spec.get("layer"):
        probe = probe[probe["layer"] == spec["layer"]]
    for c in spec["max_probe_inflation"]:
        d = _of_pattern(_sized(_rows_for(probe, c), c), c.get("pattern"))
        _check(f"max_probe_inflation {c['metric']}", c, rows, d, c["metric"], c["max_ratio"],
               ok_if_le=True)


def _no_corruption(df: pd.DataFrame, run: Path | None, crit: dict, rows: list[dict]) -> None:
    """[[no_corruption]]: data checked under load (--validate-live) in the run's soak, and not
    one corrupt message: a pair row that says DATA CORRUPTED fails, and so does a soak whose
    series checked nothing (no evidence is not a pass)."""
    from pairbench.analysis import soak

    label = crit["test"] + (f"[{crit['variant']}]" if crit["variant"] else "")
    base = {"criterion": "no_corruption", "test": label, "size": "", "pairs": "", "limit": 0}
    d = df[(df["test"] == crit["test"]) & (df["variant"].fillna("") == crit["variant"])]
    bad = d[d["error"].fillna("").str.contains("DATA CORRUPTED")]
    checked = corrupt = 0
    for ps in soak.stability(run) if run is not None and Path(run).is_dir() else []:
        if ps.test == crit["test"]:
            checked += sum(r.stats.checked for r in ps.flows)
            corrupt += sum(r.stats.corrupt for r in ps.flows)
    if len(bad) or corrupt:
        rows.append({**base, "value": float(max(corrupt, len(bad))), "verdict": "fail",
                     "detail": f"corrupt data: {bad['error'].iloc[0] if len(bad) else ''}"
                               f" ({corrupt} corrupt of {checked} checked in the series)"})
    elif not checked:
        rows.append({**base, "value": None, "verdict": "fail",
                     "detail": "no data was checked under load (sweep --soak S --validate-live N)"})
    else:
        rows.append({**base, "value": 0.0, "verdict": "pass",
                     "detail": f"0 corrupt of {checked} messages checked under load"})


def _soak_check(name: str, crit: dict, rows: list[dict], d: pd.DataFrame, metric: str,
                limit: float, ok_if_le: bool) -> None:
    """A soak criterion (docs/methodology.md "Soak"): only points measured with --soak
    count (soak_buckets given), and the WORST repetition decides, not the median: one soak
    with a stall is a soak with a stall. A partial soak (flag soak_partial) or a flow
    without a median (soak_zero_median) fails: it did not show what was asked."""
    if "soak_buckets" in d.columns:
        d = d[pd.to_numeric(d["soak_buckets"], errors="coerce").notna() | (d["status"] != "ok")]
    else:
        d = d.iloc[0:0]
    label = crit["test"] + (f"[{crit['variant']}]" if crit["variant"] else "")
    if d.empty:
        rows.append({"criterion": name, "test": label, "size": "", "pairs": "", "value": None,
                     "limit": limit, "verdict": "fail",
                     "detail": "no soak data for this criterion (run the sweep with --soak)"})
        return
    for (size, pairs), g in d.groupby(["msg_size_bytes", "pairs"]):
        base = {"criterion": name, "test": label, "size": size_label(int(size)),
                "pairs": int(pairs), "limit": limit}
        errs = g[g["status"] != "ok"]
        if len(errs):
            rows.append({**base, "value": None, "verdict": "fail",
                         "detail": f"point failed: {errs['error'].iloc[0]}"})
            continue
        flags = set().union(*row_flags(g))
        bad = sorted(flags & {"soak_partial", "soak_zero_median"})
        vals = pd.to_numeric(g[metric], errors="coerce")
        if bad or vals.isna().any():
            why = ", ".join(bad) if bad else f"{metric} empty"
            rows.append({**base, "value": None, "verdict": "fail",
                         "detail": f"the soak cannot be judged: {why}"})
            continue
        v = float(vals.max() if ok_if_le else vals.min())
        ok = v <= limit if ok_if_le else v >= limit
        rows.append({**base, "value": v, "verdict": "pass" if ok else "fail",
                     "detail": f"{metric} {'<=' if ok_if_le else '>='} {limit:g}, the worst of "
                               f"{len(g)} repetition(s)"})


def _refuse_flagged(agg: pd.DataFrame, spec: dict, rows: list[dict]) -> None:
    """A passed check on a point whose rows carry a machine flag the spec does not accept
    (spec.accept_flags) fails: the figure measured the machine, not the adapter."""
    accepted = set(spec.get("accept_flags", []))
    flagged: dict[tuple[str, str, int], set[str]] = {}
    for r, fl in zip(agg.itertuples(), row_flags(agg), strict=True):
        bad = (fl & set(MACHINE_FLAGS)) - accepted
        if bad:
            label = r.test + (f"[{r.variant}]" if isinstance(r.variant, str) and r.variant
                              else "")
            flagged.setdefault((label, size_label(int(r.msg_size_bytes)), int(r.pairs)),
                               set()).update(bad)
    for r in rows:
        bad = flagged.get((r["test"], r["size"], r["pairs"]))
        if r["verdict"] == "pass" and bad:
            r["verdict"] = "fail"
            r["detail"] = (f"flagged {', '.join(sorted(bad))}: not accepted "
                           f"(spec.accept_flags); {r['detail']}")


def _note_tail(agg: pd.DataFrame, rows: list[dict]) -> None:
    """A check on a point whose aggregate is tail-dominated (pairs that ended apart,
    docs/methodology.md "Windows") says so, with the advice of how the point was timed
    (contract.flags.tail_advice): a fixed count's aggregate understates what the pairs did
    together; in a common window it is stop jitter of a busy machine. Either way a failed
    minimum there may be the method's or the host's, not the adapter's."""
    tail: dict[tuple[str, str, int], str] = {}
    for r, fl in zip(agg.itertuples(), row_flags(agg), strict=True):
        if "tail_dominated" in fl:
            label = r.test + (f"[{r.variant}]" if isinstance(r.variant, str) and r.variant
                              else "")
            how = getattr(r, "window_method", "")
            tail[(label, size_label(int(r.msg_size_bytes)), int(r.pairs))] = (
                how if isinstance(how, str) else "")
    for r in rows:
        key = (r["test"], r["size"], r["pairs"])
        if key in tail:  # the advice of how the point was timed (-n or a common window)
            r["detail"] = f"{r['detail']}; aggregate tail-dominated: {tail_advice(tail[key])}"


def _fabric_results(run: Path | None, df: pd.DataFrame | None, spec: dict, tol: float,
                    z: float, cache: dict) -> list:
    """The scan's verdicts at (tol, z), confirmation rounds applied
    (pairbench.analysis.outliers.judge_scan); its links read once per evaluate() by the
    streaming read (read_scan), never from the generic frame. Without a run directory (a
    frame given alone: tests) the links come from the frame."""
    from pairbench.analysis.outliers import analyse_links, judge_scan
    from pairbench.analysis.scanlinks import links, read_scan

    if (tol, z) not in cache:
        if "links" not in cache:
            cache["links"] = read_scan(run) if run is not None else links(df)
            if spec.get("layer"):
                lk = cache["links"]
                cache["links"] = lk[(lk["layer"] == spec["layer"]).to_numpy()]
        lk = cache["links"]
        cache[(tol, z)] = (judge_scan(run, tol, z, lk) if run is not None
                           else analyse_links(lk, tol, z))
    return cache[(tol, z)]


def _said(v, key: str) -> str:
    """A suspect's state after the confirmation rounds: confirmed, unconfirmed (re-measured
    within the floor) or untested (not re-measured: --confirm 0, a verbs scan through ssh, more
    suspects than the rounds take)."""
    c = v.confirmation.get(key)
    return "untested" if c is None else ("confirmed" if c["confirmed"] else "unconfirmed")


def _fabric(run: Path | None, df: pd.DataFrame | None, spec: dict, c: dict,
            rows: list[dict], share: bool, cache: dict) -> None:
    """Fabric criteria: per (test, size) of the scan's node pairs (pairbench.analysis.outliers).
    max_outliers counts the suspects the confirmation rounds confirmed and those they did
    not re-measure; an unconfirmed suspect (re-measured within the floor: a disturbance of
    the scan) is listed, not counted."""
    tol, z = (c.get("tolerance", 0.10), c.get("z", 3.5)) if not share else (0.10, 3.5)
    label = c["test"] + (f"[{c['variant']}]" if c["variant"] else "")
    name = "fabric_min_link_share" if share else "fabric_max_outliers"
    limit = c["min_share"] if share else float(c["max_outliers"])
    found = False
    for pk, _lk, v in _fabric_results(run, df, spec, tol, z, cache):
        size = int(pk["msg_size_bytes"])
        if (pk["test"] != c["test"] or pk["variant"] != c["variant"]
                or size < c.get("min_size_bytes", 0)
                or size > c.get("max_size_bytes", size)):
            continue
        found = True
        base = {"criterion": name, "test": label, "size": size_label(size),
                "pairs": "", "limit": limit}
        if v.failed or len(v.links) < v.expected_links:
            rows.append({**base, "value": None, "verdict": "fail",
                         "detail": f"{v.expected_links - len(v.links)} node pair(s) not "
                                   "measured or failed"})
            continue
        if share:
            (a, b), p = v.links.worst() if hasattr(v.links, "worst") else \
                min(v.links.items(), key=lambda x: x[1])
            was = _said(v, f"{a}~{b}")
            ok = p >= limit
            rows.append({**base, "value": p, "verdict": "pass" if ok else "fail",
                         "detail": f"worst node pair {a}~{b}: {v.metric} perf >= {limit:g}"
                                   + ("" if was == "untested" else f" (a suspect, {was})")})
            continue
        sus = [(f"node {n}", _said(v, f"node {n}")) for n in v.suspect_nodes]
        sus += [(f"link {a}~{b}", _said(v, f"{a}~{b}")) for a, b in v.suspect_links]
        by = {s: [n for n, w in sus if w == s] for s in ("confirmed", "untested",
                                                        "unconfirmed")}
        counted = len(by["confirmed"]) + len(by["untested"])
        said = [f"{what}: {', '.join(by[s])}" for s, what in (
            ("confirmed", "confirmed"), ("untested", "suspect, not re-measured (counted)"),
            ("unconfirmed", "unconfirmed, not counted (re-measured within the floor)"))
            if by[s]]
        rows.append({**base, "value": float(counted),
                     "verdict": "pass" if counted <= limit else "fail",
                     "detail": f"confirmed outliers <= {limit:g}"
                               + (f" ({'; '.join(said)})" if said else "")})
    if not found:
        rows.append({"criterion": name, "test": label, "size": "", "pairs": "", "value": None,
                     "limit": limit, "verdict": "fail",
                     "detail": "no fabric scan data for this criterion"})


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


def _sanity_stream(csv: Path | None, spec: dict, rows: list[dict]) -> None:
    """_sanity() of a run too large for the generic frame (a fabric scan), its rows read in
    chunks of the columns it needs; only the rows above the limit are kept."""
    if csv is None:
        return
    limit = spec["sanity"]["max_link_pct"]
    cols = ["test", "msg_size_bytes", "pairs", "pair_id", "status", "link_pct", "flags"]
    n_pct, top, above = 0, float("nan"), []
    for ch in read_chunks(csv, cols, numeric=("link_pct",)):  # data.csv or data.parquet
        ok = ch[(ch["status"] == "ok").to_numpy()]
        pct = pd.to_numeric(ok["link_pct"], errors="coerce") if "link_pct" in ok else \
            pd.Series(float("nan"), index=ok.index)
        n_pct += int(pct.notna().sum())
        top = float(pd.Series([top, pct.max()]).max())
        odd = (pct > limit).to_numpy().copy()
        if "flags" in ok:
            odd |= ok["flags"].astype(str).str.split(";").apply(
                lambda f: "above_link_rate" in f).to_numpy(dtype=bool)
        if odd.any():
            above.append(ok[odd].astype(object).assign(link_pct=pct[odd]))
    hit = pd.concat(above, ignore_index=True) if above else pd.DataFrame(columns=cols)
    _sanity_rows(hit, n_pct, top, limit, rows)


def _sanity(df: pd.DataFrame, spec: dict, rows: list[dict]) -> None:
    limit = spec["sanity"]["max_link_pct"]
    d = df[df["status"] == "ok"]
    above = d[(d["link_pct"] > limit)
              | d["flags"].fillna("").str.split(";").apply(lambda f: "above_link_rate" in f)]
    _sanity_rows(above, int(d["link_pct"].notna().sum()), float(d["link_pct"].max()), limit,
                 rows)


def _sanity_rows(above: pd.DataFrame, n_pct: int, top: float, limit: float,
                 rows: list[dict]) -> None:
    """The sanity check's rows: one per row above the limit, or one pass."""
    if n_pct == 0 and above.empty:
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
                     "value": top, "limit": limit, "verdict": "pass",
                     "detail": "no bandwidth above the link rate"})
