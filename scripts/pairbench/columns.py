"""The CSV column list (mirror of core/pb_schema.h), free of heavy imports so that tiny
programs (the fake executable, checks inside the slow VM) can use it."""

SCHEMA_VERSION = 1

COLUMNS: tuple[str, ...] = (
    "schema_version",
    "layer",
    "test",
    "variant",
    "msg_size_bytes",
    "pairs",
    "pair_id",
    "iterations",
    "warmup_iterations",
    "window",
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
    "duration_s",
    "host",
    "peer",
    "cpu",
    "numa_node",
    "status",
    "flags",
    "error",
)

# Columns the driver adds to every row of data.csv.
DRIVER_COLUMNS: tuple[str, ...] = ("run_id", "repetition")
