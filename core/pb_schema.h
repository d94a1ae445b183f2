/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CSV contract of pairbench: the one place where the column list lives.
 * Every executable prints it with --print-schema; the Python driver checks
 * it.  Units are in the names: _us = microseconds, _bytes, _gbit_s = 10^9
 * bit/s, _mbyte_s = 10^6 B/s, _per_s.  A cell that does not apply is empty.
 * Numbers are printed with 9 significant digits (pb_row_set_double).
 */
#ifndef PB_SCHEMA_H
#define PB_SCHEMA_H

#define PB_SCHEMA_VERSION 6

/* X(name, description) — order is the CSV column order. */
#define PB_COLUMNS(X)                                                          \
	X(schema_version, "integer; version of this column list")             \
	X(layer, "verbs | mpi")                                                \
	X(test, "test name as given to --test")                                \
	X(variant, "test variant (e.g. fadd, cswap, bidir, back_to_back); empty for the plain test") \
	X(pattern, "traffic pattern across nodes (pairbench-mpi --pattern: pairs, shift:S, bisection, incast, fanout, alltoall); empty where the run has none (verbs, one node)") \
	X(buffers, "buffer layout: fresh (default: data the peer has not seen, one buffer per rank / a receive slot per outstanding message) or the peer-style layout (separate send and receive buffers, one receive buffer for a window); empty where the test has no choice") \
	X(msg_size_bytes, "payload bytes per message (per rank for collectives)") \
	X(pairs, "number of pairs (or ranks for collectives) running at once") \
	X(pair_id, "integer pair index, or 'all' for the aggregate row")       \
	X(scope, "pair = a per-pair row; aggregate rows (pair_id all): all = every pair of the run (the headline aggregate), device = the pairs on one device (column device), node = the pairs measured on one host (column host); pattern runs (docs/patterns.md): probe = the victim probe (pair_id: its flow id), flow = a flow's row from its other end's node, merged by the driver") \
	X(iterations, "timed iterations of this row (bandwidth: messages, both directions when bidirectional); aggregate row: sum over the pairs its bandwidth columns count (bandwidth tests, loaded_lat's loading pairs), else over the pairs its latency statistics pool; collectives and halo: the common count N") \
	X(warmup_iterations, "untimed iterations before the timed loop")     \
	X(window, "outstanding operations per pair (bandwidth tests); empty for latency") \
	X(qps, "queue pairs per pair (verbs --qps); empty for mpi") \
	X(lat_kind, "half_rtt (ping-pong / 2) | full_rtt (read, atomics) | op (one call, collectives) | empty") \
	X(lat_us_min, "minimum per-iteration latency, microseconds")           \
	X(lat_us_p50, "median (nearest rank), microseconds")                   \
	X(lat_us_p90, "90th percentile (nearest rank); empty if n < 10")       \
	X(lat_us_p99, "99th percentile (nearest rank); empty if n < 100")      \
	X(lat_us_p999, "99.9th percentile (nearest rank); empty if n < 1000")  \
	X(lat_us_max, "maximum per-iteration latency, microseconds")           \
	X(lat_us_mean, "arithmetic mean, microseconds")                        \
	X(lat_us_stdev, "sample standard deviation (n-1), microseconds, computed in double") \
	X(bw_gbit_s, "bandwidth, 10^9 bit/s; aggregate = sum of bytes / (latest end - earliest start)") \
	X(bw_mbyte_s, "bandwidth, 10^6 byte/s; same window as bw_gbit_s")      \
	X(msg_rate_per_s, "messages per second over the same window")          \
	X(link_pct, "bw_gbit_s as a percentage of the port's link rate; empty if unknown") \
	X(start_skew_us, "latest minus earliest start of the pairs' timed windows (first post), microseconds; aggregate row only") \
	X(fairness, "Jain fairness index over per-pair bandwidth (aggregate row only)") \
	X(worst_lat_pair_id, "aggregate row of a point with >= 2 latency pairs: the pair with the highest lat_us_p50 (lowest id on a tie); empty for 1 latency pair, collectives and halo") \
	X(worst_lat_us_p50, "lat_us_p50 of pair worst_lat_pair_id, microseconds")          \
	X(worst_lat_us_p99, "lat_us_p99 of pair worst_lat_pair_id, microseconds; empty if its n < 100") \
	X(min_bw_pair_id, "aggregate row of a point with >= 2 bandwidth pairs: the pair with the lowest bw_gbit_s (lowest id on a tie); empty otherwise") \
	X(min_pair_bw_gbit_s, "bw_gbit_s of pair min_bw_pair_id (over its own window), 10^9 bit/s") \
	X(min_pair_bw_share, "min_pair_bw_gbit_s / mean of the per-pair bw_gbit_s: 1 = the slowest pair got an average pair's share") \
	X(duration_s, "timed window of this row, seconds (first post .. last completion); aggregate row: earliest start .. latest end of the same pairs as its iterations") \
	X(window_method, "how long the point ran (docs/methodology.md \"Windows\"): window = every pair stopped at one common deadline, window_s after the node's common start; target = latency pairs kept every sample until that deadline and until --lat-samples samples; count = a fixed count of iterations (-n; collectives, halo, --timing block)") \
	X(window_s, "window and target: the window asked for (seconds from the common start: --bw-seconds, --lat-seconds or -D); empty for count") \
	X(start_delay_us, "how long after the node's common start (the start barrier's release) the row's window began, microseconds: pair rows their own first post, the aggregate row that of the pair that started first among those of its duration_s; a window or target point ends at the common start + window_s, so duration_s + start_delay_us >= window_s") \
	X(overlap_s, "aggregate row: the part of its window in which all its pairs were running (latest start .. earliest end), seconds; 0 when they never all ran at once") \
	X(end_spread_us, "aggregate row: latest minus earliest end of the same pairs, microseconds (the stop jitter of a common window; with a fixed count, how far apart the pairs finished: flag tail_dominated above 5 % of duration_s)") \
	X(soak_bucket_s, "soak (--soak): the bucket length, seconds; empty without a soak (docs/methodology.md \"Soak\")") \
	X(soak_buckets, "soak: buckets analysed (pair: its own; aggregate: the fewest of its pairs')") \
	X(bucket_gbit_s_min, "soak: the lowest bucket's bandwidth (messages completed in the bucket x msg_size_bytes x 8 / bucket), 10^9 bit/s; aggregate: the lowest of its pairs'") \
	X(bucket_gbit_s_p1, "soak: 1st percentile (nearest rank) of the pair's bucket bandwidths, zero buckets included; aggregate: the lowest of its pairs'") \
	X(bucket_gbit_s_p50, "soak: median (nearest rank) of the pair's bucket bandwidths; aggregate: the lowest of its pairs'") \
	X(min_bucket_share, "soak: bucket_gbit_s_min / bucket_gbit_s_p50 of the pair (0 = a bucket where nothing completed); aggregate: the lowest of its pairs'") \
	X(stall_fraction, "soak: a stall is a run of consecutive buckets below this fraction of the pair's median bucket (--stall-fraction)") \
	X(stalls, "soak: the pair's stalls (maximal runs of buckets below stall_fraction x its median, zero buckets included); aggregate: the sum over its pairs") \
	X(stalled_pairs, "soak, aggregate row: how many of its pairs had at least one stall") \
	X(longest_stall_s, "soak: the longest stall, seconds (buckets x soak_bucket_s); 0 = none; aggregate: the longest of its pairs'") \
	X(first_stall_s, "soak: when the first stall began, seconds after the common start; empty = none; aggregate: the earliest of its pairs'") \
	X(probe_test, "scope=probe (pairbench-verbs --probe): the victim probe's test (write_lat | send_lat: an 8-byte ping-pong into the pattern's hub); the row's lat_us_* are the probe during the pattern's window; empty elsewhere") \
	X(idle_iterations, "scope=probe: samples of the idle twin (the same probe for the same window in the same point, every flow of the pattern waiting)") \
	X(idle_lat_us_p50, "scope=probe: the idle twin's median (nearest rank), microseconds") \
	X(idle_lat_us_p99, "scope=probe: the idle twin's 99th percentile; empty if its n < 100") \
	X(idle_lat_us_p999, "scope=probe: the idle twin's 99.9th percentile; empty if its n < 1000") \
	X(lat_inflation_p50, "scope=probe: lat_us_p50 / idle_lat_us_p50 (1 = the pattern did not slow the probe); empty when either is empty") \
	X(lat_inflation_p99, "scope=probe: lat_us_p99 / idle_lat_us_p99; empty when either is empty") \
	X(lat_inflation_p999, "scope=probe: lat_us_p999 / idle_lat_us_p999; empty when either is empty") \
	X(host, "host name of the measuring process")                          \
	X(peer, "peer host (or rank) of this pair")                            \
	X(device, "RDMA device of the measuring side (verbs); aggregate rows: the device of scope=device, else the devices used joined by '+'") \
	X(port, "port number on device") \
	X(port_addr, "address used on that port: lid:0xNNNN (InfiniBand link layer) or gid:INDEX:GID (RoCE)") \
	X(peer_device, "RDMA device of the peer side, when known") \
	X(cpu, "OS index of the PU the measuring process ran on")              \
	X(numa_node, "NUMA node of that PU")                                   \
	X(status, "ok | error")                                                \
	X(flags, "measurement flags separated by ';' (e.g. above_link_rate, histogram)") \
	X(error, "reason when status=error; empty otherwise")

#define PB_COL_ENUM_(name, desc) PB_COL_##name,
enum pb_col { PB_COLUMNS(PB_COL_ENUM_) PB_COL_COUNT };
#undef PB_COL_ENUM_

#endif
