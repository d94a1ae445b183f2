"""The row invariants of the CSV contract, in one place (docs/methodology.md, pb_schema.h).

One measured point (a test at one size and pair count) is `pairs` per-pair rows plus
one aggregate row (pair_id=all, scope all), and where the pairs used two or more devices
one sub-aggregate per device (pair_id=all, scope device), and where pairbench-mpi
--pattern wrote them one per host (scope node), each checked against its own pair rows
like the headline aggregate against all of them.
`check_point` returns what is wrong with it, one
message per failure: schema columns, identity columns, percentile order, bandwidth
and message rate against iterations and duration, the aggregate's `iterations` by
the table's `aggregate_iterations` rule, aggregate = bytes / global window,
fairness in (0, 1], worst-pair columns, empty cells where a column does not apply.

Rows are dicts of CSV text cells ('' = empty), as csv.DictReader gives them.
Standard library only: ctest's checkers (tests/verbs/check_rows.py,
tests/mpi/mpi_check.py) import it with the system python3, and so can pytest.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from pathlib import Path

from pairbench.contract.columns import BLOCK_TIMED, COLUMNS, SCHEMA_VERSION
from pairbench.contract.schema import read_binary_schema
from pairbench.contract.testtable import BANDWIDTH_KINDS, LATENCY_KINDS, LOADED_KIND, TestInfo
from pairbench.errors import UsageError

Row = dict[str, str]
LAT_COLUMNS = ("lat_us_min", "lat_us_p50", "lat_us_p90", "lat_us_p99", "lat_us_p999",
               "lat_us_max", "lat_us_mean")
BW_COLUMNS = ("bw_gbit_s", "bw_mbyte_s", "msg_rate_per_s")
WORST_LAT = ("worst_lat_pair_id", "worst_lat_us_p50", "worst_lat_us_p99")
MIN_BW = ("min_bw_pair_id", "min_pair_bw_gbit_s", "min_pair_bw_share")


def schema_columns(binary: Path | str) -> list[str]:
    """`BINARY --print-schema`'s columns; UsageError unless its version is this driver's."""
    version, cols = read_binary_schema(binary)
    if version != SCHEMA_VERSION:
        raise UsageError(f"{binary} --print-schema: schema version {version}, "
                         f"expected {SCHEMA_VERSION}")
    return cols


def check_header(header: Sequence[str] | None, columns: Sequence[str] = COLUMNS) -> list[str]:
    if list(header or []) != list(columns):
        return [f"CSV header differs from --print-schema: {list(header or [])}"]
    return []


def num(row: Row, col: str) -> float:
    v = row.get(col, "")
    try:
        return float(v) if v != "" else math.nan
    except ValueError:
        return math.nan


class _Failures(list[str]):
    def __call__(self, msg: str) -> None:
        self.append(msg)


SUB_SCOPES = {"device": "device", "node": "host"}  # sub-aggregate scope -> column naming it


def _is_headline(r: Row) -> bool:
    return r["pair_id"] == "all" and r.get("scope", "") in ("all", "")


def check_point(rows: Sequence[Row], info: TestInfo, layer: str, pairs: int,
                size: int | None = None) -> list[str]:
    """Every failure of one point's rows (empty list: all invariants hold)."""
    fail = _Failures()
    size_txt = f"{size} B" if size is not None else (rows[0]["msg_size_bytes"] + " B"
                                                     if rows else "? B")
    where = f"{info.name} {size_txt} pairs={pairs}"
    subs = [r for r in rows if r["pair_id"] == "all" and not _is_headline(r)]
    main = [r for r in rows if r not in subs]
    ids = sorted(r["pair_id"] for r in main)
    want = sorted([str(i) for i in range(pairs)] + ["all"])
    if ids != want:
        fail(f"{where}: pair_id values {ids}, expected {want}")
        return fail
    for r in rows:
        tag = f"{r['scope']} {r[SUB_SCOPES[r['scope']]]}" if r in subs and r.get("scope") in \
            SUB_SCOPES else f"pair {r['pair_id']}"
        _check_row(r, info, layer, pairs, size, f"{where} {tag}", fail)
    if len({r.get("pattern", "") for r in rows}) > 1:
        fail(f"{where}: more than one pattern in one point: "
             f"{sorted({r.get('pattern', '') for r in rows})}")
    if fail:
        return fail
    per = [r for r in main if r["pair_id"] != "all"]
    agg = next(r for r in main if r["pair_id"] == "all")
    _check_aggregate(info, agg, per, len(per), where, fail, loaded_probe_here=True)
    _check_sub_aggregates(info, subs, per, where, fail)
    return fail


def has_latency(r: Row) -> bool:
    """The row measured latency: every statistic, or (flag block_timed) the mean alone."""
    return bool(r["lat_us_p50"] or r["lat_us_mean"])


def block_timed(r: Row) -> bool:
    """--timing block: one clock read at each end of the block, the mean only."""
    return BLOCK_TIMED in r["flags"].split(";")


def _check_aggregate(info: TestInfo, agg: Row, per: list[Row], pairs: int, where: str,
                     fail: Callable[[str], None], loaded_probe_here: bool) -> None:
    """An aggregate row against the pair rows it covers (all of them, or one device's)."""
    lat = [r for r in per if has_latency(r)]
    bw = [r for r in per if r["bw_gbit_s"]]
    if loaded_probe_here:
        _check_kind(info, agg, per, lat, bw, where, fail)
    _check_iterations(info, agg, per, lat, bw, where, fail)
    if any(block_timed(r) for r in (agg, *lat)):
        _check_block_mean(agg, lat, where, fail)
    elif info.pairwise and lat:
        if abs(num(agg, "lat_us_min") - min(num(r, "lat_us_min") for r in lat)) > 1e-3:
            fail(f"{where}: aggregate lat_us_min is not the minimum over pairs")
        if abs(num(agg, "lat_us_max") - max(num(r, "lat_us_max") for r in lat)) > 1e-3:
            fail(f"{where}: aggregate lat_us_max is not the maximum over pairs")
    if bw:
        _check_aggregate_bw(agg, bw, where, fail)
    _check_window(agg, per, lat, bw, where, fail)
    _check_worst_pair(info, agg, lat, bw, where, fail)
    if info.pairwise and pairs > 1 and not agg["start_skew_us"]:
        fail(f"{where}: aggregate row has no start_skew_us")


def _check_sub_aggregates(info: TestInfo, subs: list[Row], per: list[Row], where: str,
                          fail: Callable[[str], None]) -> None:
    """scope=device (node): one row per device (host) of the pair rows when there are two or
    more of them, none otherwise; each consistent with its own pair rows."""
    for scope, col in SUB_SCOPES.items():
        mine = [r for r in subs if r["scope"] == scope]
        groups: dict[str, list[Row]] = {}
        for r in per:
            groups.setdefault(r[col], []).append(r)
        if scope == "device" and len(groups) >= 2 and "" in groups:
            fail(f"{where}: pair(s) {[r['pair_id'] for r in groups['']]} name no device "
                 f"while others do")
        named = [r[col] for r in mine]
        if mine and len(set(named)) != len(named):
            fail(f"{where}: more than one {scope} aggregate for {sorted(named)}")
        if scope == "device":
            expect = sorted(groups) if len(groups) >= 2 else []
            if sorted(named) != expect:
                fail(f"{where}: {scope} aggregates for {sorted(named)}, expected one for each "
                     f"of {expect}")
        elif mine and sorted(named) != sorted(groups):
            # pairbench-mpi --pattern: one per host that measured pairs, or none at all.
            fail(f"{where}: node aggregates for hosts {sorted(named)}, the pairs were "
                 f"measured on {sorted(groups)}")
            continue
        for agg in mine:
            group = groups.get(agg[col], [])
            if not group:
                fail(f"{where}: {scope} aggregate for {agg[col]!r} without pair rows")
                continue
            probe_here = info.kind != LOADED_KIND or any(r["pair_id"] == "0" for r in group)
            _check_aggregate(info, agg, group, len(group), f"{where} {scope} {agg[col]}", fail,
                             loaded_probe_here=probe_here and info.kind != LOADED_KIND)


def _check_row(r: Row, info: TestInfo, layer: str, pairs: int, size: int | None, where: str,
               fail: Callable[[str], None]) -> None:
    if r["status"] != "ok":
        fail(f"{where}: status {r['status']}: {r['error']}")
        return
    if (r["schema_version"] != str(SCHEMA_VERSION) or r["layer"] != layer
            or r["test"] != info.name or r["pairs"] != str(pairs)):
        fail(f"{where}: schema_version/layer/test/pairs are "
             f"{r['schema_version']}/{r['layer']}/{r['test']}/{r['pairs']}, expected "
             f"{SCHEMA_VERSION}/{layer}/{info.name}/{pairs}")
    if size is not None and r["msg_size_bytes"] != str(size):
        fail(f"{where}: msg_size_bytes {r['msg_size_bytes']}, expected {size}")
    if info.fixed_size_bytes is not None and r["msg_size_bytes"] != str(info.fixed_size_bytes):
        fail(f"{where}: msg_size_bytes {r['msg_size_bytes']}, the test's fixed size is "
             f"{info.fixed_size_bytes}")
    if not r["iterations"].isdigit() or int(r["iterations"]) <= 0:
        fail(f"{where}: iterations={r['iterations']!r}")
    # The layout (issue 16): one of the test's layouts in every row, empty without a choice.
    buffers = r.get("buffers", "")
    if info.buffers and buffers not in info.buffers:
        fail(f"{where}: buffers {buffers!r}, expected one of {', '.join(info.buffers)}")
    elif not info.buffers and buffers:
        fail(f"{where}: buffers {buffers!r} in a test without a layout choice")
    if "above_link_rate" in r["flags"].split(";"):
        fail(f"{where}: bandwidth above the link rate")
    if r["link_pct"] and num(r, "link_pct") > 100.0:
        fail(f"{where}: link_pct {r['link_pct']} > 100")
    if block_timed(r) and has_latency(r):
        # The mean alone: nothing else is known of a block timed at its two ends.
        filled = [c for c in LAT_COLUMNS if c != "lat_us_mean" and r[c]]
        if filled:
            fail(f"{where}: {', '.join(filled)} filled in a block-timed row (the mean only)")
        if not num(r, "lat_us_mean") > 0:
            fail(f"{where}: block-timed lat_us_mean {r['lat_us_mean']!r} not > 0")
        if r["lat_kind"] != (info.lat_kind or ""):
            fail(f"{where}: lat_kind {r['lat_kind']!r}, the table says {info.lat_kind!r}")
    elif has_latency(r):
        lo, med, hi, mean = (num(r, c) for c in ("lat_us_min", "lat_us_p50", "lat_us_max",
                                                  "lat_us_mean"))
        # Percentiles in order; a high percentile is empty with too few samples.
        order = [v for v in (num(r, c) for c in ("lat_us_min", "lat_us_p50", "lat_us_p90",
                                                  "lat_us_p99", "lat_us_p999", "lat_us_max"))
                 if not math.isnan(v)]
        if not (lo > 0 and math.isfinite(med) and math.isfinite(hi)
                and all(a <= b for a, b in itertools.pairwise(order))
                and lo <= mean <= hi):
            fail(f"{where}: latency not 0 < min <= p50 <= p90 <= p99 <= p99.9 <= max with "
                 f"min <= mean <= max: {order} mean {mean}")
        if r["lat_kind"] != (info.lat_kind or ""):
            fail(f"{where}: lat_kind {r['lat_kind']!r}, the table says {info.lat_kind!r}")
    else:
        filled = [c for c in (*LAT_COLUMNS, "lat_kind") if r[c]]
        if filled:
            fail(f"{where}: {', '.join(filled)} filled in a row without latency")
    if r["bw_gbit_s"]:
        if not num(r, "bw_gbit_s") > 0 or not num(r, "msg_rate_per_s") > 0:
            fail(f"{where}: bandwidth or message rate not > 0")
        elif r["duration_s"]:
            # message rate x window = the row's messages (= its iterations)
            msgs = num(r, "msg_rate_per_s") * num(r, "duration_s")
            its = int(r["iterations"]) if r["iterations"].isdigit() else 0
            if abs(msgs - its) > 1e-5 * max(msgs, its) + 0.5:
                fail(f"{where}: msg_rate x duration = {msgs:.1f}, iterations {r['iterations']}")
    else:
        filled = [c for c in (*BW_COLUMNS, "fairness") if r[c]]
        if filled:
            fail(f"{where}: {', '.join(filled)} filled in a row without bandwidth")
    if r["pair_id"] != "all" and r.get("scope", "pair") not in ("pair", ""):
        fail(f"{where}: a pair row with scope {r['scope']!r}")
    if r["pair_id"] == "all" and r.get("scope", "") not in ("all", "", *SUB_SCOPES):
        fail(f"{where}: an aggregate row with scope {r['scope']!r}")
    if r["pair_id"] != "all":
        filled = [c for c in (*WORST_LAT, *MIN_BW, "fairness") if r[c]]
        if filled:
            fail(f"{where}: aggregate-only column(s) {', '.join(filled)} filled in a pair row")


def _check_kind(info: TestInfo, agg: Row, per: list[Row], lat: list[Row], bw: list[Row],
                where: str, fail: Callable[[str], None]) -> None:
    """Which rows measure what follows from the test's kind."""
    if info.kind in LATENCY_KINDS:
        if len(lat) != len(per) or not has_latency(agg):
            fail(f"{where}: a {info.kind} test with rows without latency")
        if bw or agg["bw_gbit_s"]:
            fail(f"{where}: a {info.kind} test with bandwidth")
    elif info.kind in BANDWIDTH_KINDS:
        if len(bw) != len(per) or not agg["bw_gbit_s"]:
            fail(f"{where}: a {info.kind} test with rows without bandwidth")
        if lat or has_latency(agg):
            fail(f"{where}: a {info.kind} test with latency")
    elif info.kind == LOADED_KIND:
        probe = [r for r in per if r["pair_id"] == "0"]
        if [r["pair_id"] for r in lat] != ["0"] or not has_latency(agg):
            fail(f"{where}: latency rows {[r['pair_id'] for r in lat]}, expected the probe "
                 "(pair 0) and the aggregate")
        if sorted(r["pair_id"] for r in bw) != sorted(r["pair_id"] for r in per
                                                       if r not in probe):
            fail(f"{where}: bandwidth rows {[r['pair_id'] for r in bw]}, expected the "
                 "loading pairs 1..N-1")


def _check_iterations(info: TestInfo, agg: Row, per: list[Row], lat: list[Row],
                      bw: list[Row], where: str, fail: Callable[[str], None]) -> None:
    """The aggregate's iterations and duration_s describe the columns next to them:
    'sum' = summed over the pairs its bandwidth counts (loaded_lat: the loading pairs),
    else over the pairs its latency pools; 'shared' = every rank's common N."""
    got = int(agg["iterations"])
    if info.aggregate_iterations == "shared":
        counts = {int(r["iterations"]) for r in per}
        if len(counts) != 1 or got not in counts:
            fail(f"{where}: aggregate iterations {got}, the ranks ran {sorted(counts)} "
                 "(shared: every rank's N)")
        return
    counted = bw or lat or per
    if got != sum(int(r["iterations"]) for r in counted):
        fail(f"{where}: aggregate iterations {got} != sum over the pairs with "
             f"{'a bandwidth' if bw else 'a latency'}")
    if agg["duration_s"] and all(r["duration_s"] for r in counted):
        longest = max(num(r, "duration_s") for r in counted)
        if num(agg, "duration_s") < longest * (1 - 1e-6):
            fail(f"{where}: aggregate duration_s {agg['duration_s']} shorter than a counted "
                 f"pair's {longest}")


def _check_aggregate_bw(agg: Row, bw: list[Row], where: str,
                        fail: Callable[[str], None]) -> None:
    agg_bw = num(agg, "bw_mbyte_s")
    sum_bw = sum(num(r, "bw_mbyte_s") for r in bw)
    # Aggregate window >= every pair's window, so Σ bytes / window <= Σ per-pair rates.
    if not agg_bw > 0 or agg_bw > sum_bw * 1.001 + 1e-6:
        fail(f"{where}: aggregate {agg_bw} MB/s not in (0, sum of pairs {sum_bw}]")
    # The aggregate's duration_s is its bandwidth window: Σ bytes (= Σ messages x size,
    # exact) / window must be the aggregate rate.
    size = int(agg["msg_size_bytes"])
    want = sum(int(r["iterations"]) for r in bw) * size / 1e6 / num(agg, "duration_s")
    if abs(agg_bw - want) > 1e-5 * want + 1e-6:
        fail(f"{where}: aggregate {agg_bw} MB/s != sum of bytes / window = {want:.6g} MB/s")
    fair = num(agg, "fairness")
    if not 0 < fair <= 1.0001:
        fail(f"{where}: fairness {agg['fairness']!r} not in (0, 1]")


# An aggregate whose bandwidth pairs end further apart than this share of its window is
# flagged tail_dominated (PB_TAIL_FRACTION in core/pb_window.h).
TAIL_FRACTION = 0.05


def _check_window(agg: Row, per: list[Row], lat: list[Row], bw: list[Row], where: str,
                  fail: Callable[[str], None]) -> None:
    """How the point was timed (docs/methodology.md "Windows"): every row of the point says
    the same window_method and window_s; a window or target point ran until its common
    deadline (duration_s + start_delay_us >= window_s: its window began start_delay_us after
    the common start); the end spread lies inside the window and tail_dominated is set
    exactly when >= 2 bandwidth pairs end more than TAIL_FRACTION of duration_s apart."""
    if not agg.get("window_method"):  # rows built by hand (tests) or schema < 4
        return
    method, secs = agg["window_method"], agg["window_s"]
    if method not in ("count", "window", "target"):
        fail(f"{where}: window_method {method!r}")
        return
    for r in per:
        if (r["window_method"], r["window_s"]) != (method, secs):
            fail(f"{where}: pair {r['pair_id']} window {r['window_method']} {r['window_s']!r}, "
                 f"aggregate {method} {secs!r}")
    if (method == "count") != (secs == ""):
        fail(f"{where}: window_method {method} with window_s {secs!r}")
    if not agg["duration_s"] or agg["status"] != "ok":
        return
    dur = num(agg, "duration_s")
    if method != "count" and not _reached_deadline(agg):
        fail(f"{where}: {method} of {secs} s, but the aggregate lasted {dur:g} s from "
             f"{agg['start_delay_us'] or '?'} us after the common start")
    spread, overlap = num(agg, "end_spread_us") / 1e6, num(agg, "overlap_s")
    if not (0 <= spread <= dur * (1 + 1e-6) and 0 <= overlap <= dur * (1 + 1e-6)):
        fail(f"{where}: end spread {spread:g} s, overlap {overlap:g} s in a {dur:g} s window")
    tail = "tail_dominated" in agg["flags"].split(";")
    if tail != (len(bw) >= 2 and spread > TAIL_FRACTION * dur * (1 + 1e-6)) and \
            abs(spread - TAIL_FRACTION * dur) > 1e-6 * dur:
        fail(f"{where}: tail_dominated {'set' if tail else 'missing'} with {len(bw)} bandwidth "
             f"pairs ending {spread:g} s apart in {dur:g} s")
    if method == "target":
        short = [r["pair_id"] for r in lat if "sample_cap" not in r["flags"].split(";")
                 and not _reached_deadline(r)]
        if short:
            fail(f"{where}: target {secs} s, but latency pair(s) {short} stopped earlier "
                 "without sample_cap")


def _reached_deadline(r: Row) -> bool:
    """The row's window ended at or after the common deadline (common start + window_s):
    duration_s + start_delay_us >= window_s, up to the 9 printed digits."""
    if not r["start_delay_us"]:
        return False
    end = num(r, "duration_s") + num(r, "start_delay_us") / 1e6
    return end >= num(r, "window_s") * (1 - 1e-8)


def _check_block_mean(agg: Row, lat: list[Row], where: str, fail: Callable[[str], None]) -> None:
    """Block timing: every latency row and the aggregate flagged, and the aggregate's mean
    the iteration-weighted mean of the pairs' means."""
    if not all(block_timed(r) for r in (agg, *lat)):
        fail(f"{where}: block_timed on some latency rows of a point but not all")
        return
    if not lat:
        return
    its = [int(r["iterations"]) for r in lat]
    want = sum(num(r, "lat_us_mean") * n for r, n in zip(lat, its, strict=True)) / sum(its)
    if not abs(num(agg, "lat_us_mean") - want) <= 1e-6 * want + 1e-9:
        fail(f"{where}: block-timed aggregate mean {agg['lat_us_mean']} is not the "
             f"iteration-weighted mean of the pairs' means ({want:.9g})")


def _check_worst_pair(info: TestInfo, agg: Row, lat: list[Row], bw: list[Row], where: str,
                      fail: Callable[[str], None]) -> None:
    """The worst pair on the aggregate row: the pair rows' own numbers, or empty cells."""
    if info.pairwise and len(lat) >= 2 and not block_timed(agg):
        wid = agg["worst_lat_pair_id"]
        worst = next((r for r in lat if r["pair_id"] == wid), None)
        if worst is None:
            fail(f"{where}: worst_lat_pair_id {wid!r} is not a latency pair")
        else:
            if (agg["worst_lat_us_p50"], agg["worst_lat_us_p99"]) != (worst["lat_us_p50"],
                                                                       worst["lat_us_p99"]):
                fail(f"{where}: worst_lat_us_p50/p99 are not pair {wid}'s")
            if num(worst, "lat_us_p50") < max(num(r, "lat_us_p50") for r in lat):
                fail(f"{where}: pair {wid} does not have the highest p50")
            if num(agg, "worst_lat_us_p50") < num(agg, "lat_us_min"):
                fail(f"{where}: worst pair p50 below the aggregate minimum")
    elif any(agg[c] for c in WORST_LAT):
        fail(f"{where}: worst-latency columns filled without >= 2 latency pairs")
    if info.pairwise and len(bw) >= 2:
        rates = [num(r, "bw_gbit_s") for r in bw]
        low = next((r for r in bw if r["pair_id"] == agg["min_bw_pair_id"]), None)
        if low is None or low["bw_gbit_s"] != agg["min_pair_bw_gbit_s"] \
                or num(low, "bw_gbit_s") != min(rates):
            fail(f"{where}: min_bw_pair_id/min_pair_bw_gbit_s are not the slowest pair's")
        share = min(rates) / (sum(rates) / len(rates))
        if not abs(num(agg, "min_pair_bw_share") - share) <= 1e-6 or not 0 < share <= 1:
            fail(f"{where}: min_pair_bw_share {agg['min_pair_bw_share']}, "
                 f"expected {share:.9g}")
    elif any(agg[c] for c in MIN_BW):
        fail(f"{where}: slowest-pair columns filled without >= 2 bandwidth pairs")


def check_rows(rows: Sequence[Row], info: TestInfo, layer: str, pairs: int | None,
               sizes: Sequence[int] | None = None) -> list[str]:
    """Every point of one test in `rows` (all sizes present, or exactly `sizes`; each
    pattern of a --pattern run is its own point).  pairs=None: each point's own pairs
    column (the rounds of a pattern run differ)."""
    mine = [r for r in rows if r.get("test") == info.name]
    found = sorted({int(r["msg_size_bytes"]) for r in mine if r["msg_size_bytes"].isdigit()})
    fail: list[str] = []
    if sizes is not None and sorted(sizes) != found:
        fail.append(f"{info.name}: sizes {found}, expected {sorted(sizes)}")
    if not mine:
        fail.append(f"{info.name}: no rows")
    patterns = list(dict.fromkeys(r.get("pattern", "") for r in mine))
    for pattern in patterns:
        for size in found:
            point = [r for r in mine if r["msg_size_bytes"] == str(size)
                     and r.get("pattern", "") == pattern]
            n = pairs
            if n is None:
                n = int(point[0]["pairs"]) if point and point[0]["pairs"].isdigit() else 0
            fail += check_point(point, info, layer, n, size)
    return fail
