"""The CSV column list (mirror of core/pb_schema.h), free of heavy imports so that tiny
programs (the fake executable, checks inside the slow VM) can use it."""

SCHEMA_VERSION = 6

COLUMNS: tuple[str, ...] = (
    "schema_version",
    "layer",
    "test",
    "variant",
    "pattern",
    "buffers",
    "msg_size_bytes",
    "pairs",
    "pair_id",
    "scope",
    "iterations",
    "warmup_iterations",
    "window",
    "qps",
    "lat_kind",
    "lat_us_min",
    "lat_us_p50",
    "lat_us_p90",
    "lat_us_p99",
    "lat_us_p999",
    "lat_us_max",
    "lat_us_mean",
    "lat_us_stdev",
    "bw_gbit_s",
    "bw_mbyte_s",
    "msg_rate_per_s",
    "link_pct",
    "start_skew_us",
    "fairness",
    "worst_lat_pair_id",
    "worst_lat_us_p50",
    "worst_lat_us_p99",
    "min_bw_pair_id",
    "min_pair_bw_gbit_s",
    "min_pair_bw_share",
    "duration_s",
    "window_method",
    "window_s",
    "start_delay_us",
    "overlap_s",
    "end_spread_us",
    "soak_bucket_s",
    "soak_buckets",
    "bucket_gbit_s_min",
    "bucket_gbit_s_p1",
    "bucket_gbit_s_p50",
    "min_bucket_share",
    "stall_fraction",
    "stalls",
    "stalled_pairs",
    "longest_stall_s",
    "first_stall_s",
    "probe_test",
    "idle_iterations",
    "idle_lat_us_p50",
    "idle_lat_us_p99",
    "idle_lat_us_p999",
    "lat_inflation_p50",
    "lat_inflation_p99",
    "lat_inflation_p999",
    "host",
    "peer",
    "device",
    "port",
    "port_addr",
    "peer_device",
    "cpu",
    "numa_node",
    "status",
    "flags",
    "error",
)

# The soak's columns (core/pb_soak.h, docs/methodology.md "Soak"): empty without --soak.
SOAK_COLUMNS: tuple[str, ...] = (
    "soak_bucket_s", "soak_buckets", "bucket_gbit_s_min", "bucket_gbit_s_p1",
    "bucket_gbit_s_p50", "min_bucket_share", "stall_fraction", "stalls", "stalled_pairs",
    "longest_stall_s", "first_stall_s")

# The victim probe's columns (pairbench-verbs --probe, docs/patterns.md): scope=probe rows only.
PROBE_COLUMNS: tuple[str, ...] = (
    "probe_test", "idle_iterations", "idle_lat_us_p50", "idle_lat_us_p99", "idle_lat_us_p999",
    "lat_inflation_p50", "lat_inflation_p99", "lat_inflation_p999")

# Version 2 added the worst-pair columns, version 3 the pattern, buffer layout, aggregate
# scope, QP count and device columns, version 4 the window columns (issue 21: a common
# window per point by default; older runs were timed by a fixed count unless -D was given),
# version 5 the soak columns (issue 36), version 6 the victim probe's (issue 35);
# an older file lacks them (read as empty cells).
ADDED_IN: dict[int, tuple[str, ...]] = {
    2: ("worst_lat_pair_id", "worst_lat_us_p50", "worst_lat_us_p99", "min_bw_pair_id",
        "min_pair_bw_gbit_s", "min_pair_bw_share"),
    3: ("pattern", "buffers", "scope", "qps", "device", "port", "port_addr", "peer_device"),
    4: ("window_method", "window_s", "start_delay_us", "overlap_s", "end_spread_us"),
    5: SOAK_COLUMNS,
    6: PROBE_COLUMNS,
}
READABLE_VERSIONS: tuple[int, ...] = (1, 2, 3, 4, 5, 6)


def columns_of(version: int) -> tuple[str, ...]:
    """The column list of an older (readable) schema version."""
    later = {c for v, cols in ADDED_IN.items() if v > version for c in cols}
    return tuple(c for c in COLUMNS if c not in later)


# Columns the driver adds to every row of data.csv.
DRIVER_COLUMNS: tuple[str, ...] = ("run_id", "repetition")

# The flag of rows timed as one block (pairbench-mpi --timing block: lat_us_mean only;
# core/pb_result.c writes it, docs/mpi.md "Block timing"); pairbench.contract.flags
# documents the rest.
BLOCK_TIMED = "block_timed"
