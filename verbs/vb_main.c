/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pairbench-verbs: options, the test table, the role of this process, main().
 * The launcher (vb_launch.c) does the rest.
 */
#include "vb.h"

#include "pb_csv.h"
#include "pb_log.h"
#include "pb_opts.h"
#include "pb_window.h"
#include "vb_dev.h"
#include "vb_devmap.h"
#include "vb_hdr.h"
#include "vb_launch.h"
#include "vb_ops.h"
#include "vb_patrole.h"
#include "vb_scan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const vb_atomic_variants[] = { "fadd", "cswap", NULL };

/* MR access of a data buffer: the side written to (write), read from (read), received into,
 * or the target of atomics; the "access" strings of --list-tests say the same. */
#define VB_LW IBV_ACCESS_LOCAL_WRITE
#define VB_WRITTEN (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
#define VB_READ_FROM IBV_ACCESS_REMOTE_READ
#define VB_ATOMIC_TARGET (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC)

#define VB_LAT(lbl, lk, ...)                                                                       \
	.label = lbl, .kind = PB_TK_LATENCY, .lat_kind = lk, .primary_metric = "lat_us_p50",      \
	.higher_is_worse = true, .payload = true, .min_pairs = 1, __VA_ARGS__
#define VB_BW(lbl, ...)                                                                            \
	.label = lbl, .kind = PB_TK_BANDWIDTH, .primary_metric = "bw_gbit_s", .bidir = true,     \
	.payload = true, .window = true, .buffers = true, .min_pairs = 1, __VA_ARGS__

static const struct vb_test vb_tests[] = {
	{ .info = { .name = "write_lat", .summary = "RDMA write ping-pong latency (half round trip)",
		    VB_LAT("RDMA write latency", "half_rtt", .buffers = true, .access_client = "local_write,remote_write",
			   .access_server = "local_write,remote_write") },
	  .op = VB_OP_WRITE, .client = { &vb_write_lat_client, VB_WRITTEN },
	  .server = { &vb_write_lat_server, VB_WRITTEN } },
	{ .info = { .name = "read_lat", .summary = "RDMA read latency (full round trip)",
		    VB_LAT("RDMA read latency", "full_rtt", .access_client = "local_write",
			   .access_server = "remote_read") },
	  .op = VB_OP_READ, .client = { &vb_read_lat_client, VB_LW },
	  .server = { &vb_passive_ops, VB_READ_FROM } },
	{ .info = { .name = "send_lat", .summary = "send/receive ping-pong latency (half round trip)",
		    VB_LAT("send/receive latency", "half_rtt", .buffers = true, .access_client = "local_write",
			   .access_server = "local_write") },
	  .op = VB_OP_SEND, .client = { &vb_send_lat_client, VB_LW },
	  .server = { &vb_send_lat_server, VB_LW } },
	{ .info = { .name = "atomic_lat",
		    .summary = "atomic latency, --variant fadd|cswap (full round trip, 8 B)",
		    VB_LAT("RDMA atomic latency", "full_rtt", .variants = vb_atomic_variants,
			   .fixed_size = true, .fixed_size_bytes = 8, .access_client = "local_write",
			   .access_server = "local_write,remote_atomic") },
	  .op = VB_OP_ATOMIC, .client = { &vb_atomic_client, VB_LW },
	  .server = { &vb_passive_ops, VB_ATOMIC_TARGET } },
	{ .info = { .name = "write_bw",
		    .summary = "RDMA write bandwidth and message rate (--bidir: both directions)",
		    VB_BW("RDMA write bandwidth", .access_client = "none",
			  .access_server = "local_write,remote_write") },
	  .op = VB_OP_WRITE, .client = { &vb_bw_client, 0 }, .server = { &vb_bw_server, VB_WRITTEN } },
	{ .info = { .name = "read_bw",
		    .summary = "RDMA read bandwidth and message rate (--bidir: both directions)",
		    VB_BW("RDMA read bandwidth", .access_client = "local_write",
			  .access_server = "remote_read") },
	  .op = VB_OP_READ, .client = { &vb_bw_client, VB_LW },
	  .server = { &vb_bw_server, VB_READ_FROM } },
	{ .info = { .name = "send_bw",
		    .summary = "send/receive bandwidth and message rate (--bidir: both directions)",
		    VB_BW("send/receive bandwidth", .access_client = "local_write",
			  .access_server = "local_write") },
	  .op = VB_OP_SEND, .client = { &vb_bw_client, VB_LW }, .server = { &vb_bw_server, VB_LW } },
	/* pair 0: write_lat whose end of point stops the load; pairs 1..N-1: write_bw */
	{ .info = { .name = "loaded_lat", .label = "RDMA write latency under load",
		    .summary = "pair 0 measures write_lat while pairs 1..N-1 run write_bw (needs --pairs >= 2)",
		    .kind = PB_TK_LOADED_LATENCY, .lat_kind = "half_rtt", .primary_metric = "lat_us_p50",
		    .higher_is_worse = true, .payload = true, .window = true, .buffers = true, .min_pairs = 2,
		    .access_client = "local_write,remote_write",
		    .access_server = "local_write,remote_write" },
	  .op = VB_OP_WRITE, .client = { &vb_write_lat_client, VB_WRITTEN, .probe = true },
	  .server = { &vb_write_lat_server, VB_WRITTEN },
	  .load_client = { &vb_bw_client, 0, .until_probe = true },
	  .load_server = { &vb_bw_server, VB_WRITTEN } },
	{ .info = { .name = NULL } },
};

static const struct vb_test *vb_test_find(const char *name)
{
	for (const struct vb_test *t = vb_tests; t->info.name; t++)
		if (name && !strcmp(t->info.name, name))
			return t;
	return NULL;
}

static const char *const vb_cm_names[] = { "rdma_cm", "tcp", NULL };

#define VB_P struct vb_params
static const struct pb_opt vb_opts[] = {
	PB_COMMON_OPTS(VB_P, c, "write_lat", "8,4K,64K", NULL),
	/* several devices (issue 13, multidev): -d LIST|all, --pair-devices */
	{ "device", 'd', PB_OPT_STRING, offsetof(VB_P, device), NULL, 0, 0, NULL, "DEV[,DEV...]|all",
	  "RDMA device(s): a name, a list (pairs round-robin over it), or all (every device with an ACTIVE port); default: the first one" },
	{ "pair-devices", 0, PB_OPT_STRING, offsetof(VB_P, pair_devices), NULL, 0, 0, NULL,
	  "PAIR:DEV[:PEER_DEV],...", "device of each pair (every pair once), instead of round-robin; "
	  "PEER_DEV (--loopback): the device of the pair's server side" },
	{ "ib-port", 'i', PB_OPT_U64, offsetof(VB_P, ib_port), "1", 1, 255, NULL, "N", "device port" },
	{ "gid-index", 'x', PB_OPT_STRING, offsetof(VB_P, gid_index), "auto", 0, 0, NULL, "N|auto",
	  "GID index; auto prefers RoCE v2 with an IPv4-mapped address (the choice is printed)" },
	{ "all", 'a', PB_OPT_FLAG, offsetof(VB_P, all_sizes), NULL, 0, 0, NULL, NULL,
	  "all sizes 1 B .. 8 MiB (powers of two); not with -s" },
	{ "inline-size", 'I', PB_OPT_STRING, offsetof(VB_P, inline_size), "auto", 0, 0, NULL, "N|auto",
	  "max inline bytes; auto = the largest the device accepts (effective value recorded)" },
	{ "tx-depth", 't', PB_OPT_U64, offsetof(VB_P, tx_depth), "128", 1, 8192, NULL, "N",
	  "window: outstanding work requests per pair (bandwidth); send queue depth" },
	{ "cq-mod", 0, PB_OPT_U64, offsetof(VB_P, cq_mod), "16", 1, 8192, NULL, "N",
	  "signal every N-th work request (CQ moderation); must be <= --tx-depth" },
	{ "mtu", 0, PB_OPT_U64, offsetof(VB_P, mtu), "0", 0, 4096, NULL, "BYTES",
	  "path MTU 256|512|1024|2048|4096 (0 = what rdma_cm resolves)" },
	{ "server", 0, PB_OPT_FLAG, offsetof(VB_P, server), NULL, 0, 0, NULL, NULL,
	  "server side: listen (ports --port .. --port+pairs-1)" },
	{ "connect", 0, PB_OPT_STRING, offsetof(VB_P, connect), NULL, 0, 0, NULL, "HOST",
	  "client side: connect to the server at HOST (an IP of its RDMA device)" },
	{ "port", 'p', PB_OPT_U64, offsetof(VB_P, cm_port), "18515", 1, 65000, NULL, "PORT",
	  "rdma_cm (or --cm tcp: TCP) port of pair 0 (pair i uses PORT+i)" },
	{ "loopback", 0, PB_OPT_FLAG, offsetof(VB_P, loopback), NULL, 0, 0, NULL, NULL,
	  "both sides on this host through the device ($PB_RDMA_IP or the device's IPv4)" },
	{ "bidir", 'b', PB_OPT_FLAG, offsetof(VB_P, bidir), NULL, 0, 0, NULL, NULL,
	  "bandwidth tests: both directions at once" },
	{ "validate", 0, PB_OPT_FLAG, offsetof(VB_P, validate), NULL, 0, 0, NULL, NULL,
	  "untimed data check instead of measuring (pattern of pair, iteration, offset)" },
	{ "validate-selftest", 0, PB_OPT_FLAG, offsetof(VB_P, validate_selftest), NULL, 0, 0, NULL,
	  NULL, "like --validate, but flip one received byte and require the check to catch it" },
	{ "variant", 0, PB_OPT_STRING, offsetof(VB_P, variant), NULL, 0, 0, NULL, "NAME",
	  "test variant (atomic_lat: fadd | cswap)" },
	/* issue 13 (qpscm): many QPs per pair, connections without IP */
	{ "qps", 0, PB_OPT_U64, offsetof(VB_P, qps), "1", 1, VB_MAX_QPS, NULL, "N",
	  "QPs per pair: the pair's requests round-robin over N QPs on one shared CQ (every test)" },
	{ "cm", 0, PB_OPT_CHOICE, offsetof(VB_P, cm), "rdma_cm", 0, 0, vb_cm_names, "METHOD",
	  "connection: rdma_cm (by IP address of the device) or tcp (QP info over a TCP socket on any "
	  "address, then INIT/RTR/RTS by us: LID on InfiniBand, GID -x on RoCE)" },
	{ "buffers", 0, PB_OPT_CHOICE, offsetof(VB_P, buffers), "fresh", 0, 0, pb_buffers_names,
	  "LAYOUT",
	  "write_lat, send_lat, *_bw, loaded_lat: fresh = a ping-pong sends what it received / each message of a window in its own slot; peer = separate send and receive regions / one address for a whole window, as perftest (docs/verbs.md)" },
	/* issue 24: one launch per round of a fabric scan */
	{ "scan", 0, PB_OPT_STRING, offsetof(VB_P, scan), NULL, 0, 0, NULL, "ROUND[,skip=I,...]",
	  "one round of a fabric scan: one rank per node (mpirun/srun), each finds its node pair, side "
	  "(A = client) and peer from its rank, the round and --scan-hosts; %r in -o/--env-json = the rank" },
	{ "scan-hosts", 0, PB_OPT_STRING, offsetof(VB_P, scan_hosts), NULL, 0, 0, NULL, "FILE",
	  "--scan: the job's nodes, line i = rank i's node: NAME [ADDR] (ADDR to connect to; default NAME)" },
	/* issue 35: a traffic pattern over K nodes, one launch per node */
	{ "pattern", 0, PB_OPT_STRING, offsetof(VB_P, pattern), NULL, 0, 0, NULL, "PATTERN",
	  "flows of a pattern over the job's nodes (pairs, shift:S, bisection, incast[:T], fanout[:T], alltoall, "
	  "nodes:A-B,..., scan:R; docs/patterns.md): one rank per node (mpirun/srun), --pairs = slots per node; "
	  "each node runs the client of its outgoing and the server of its incoming flows" },
	{ "pattern-hosts", 0, PB_OPT_STRING, offsetof(VB_P, pattern_hosts), NULL, 0, 0, NULL, "FILE",
	  "--pattern: the job's nodes, line i = rank i's node: NAME [ADDR] (as --scan-hosts)" },
	{ "probe", 0, PB_OPT_STRING, offsetof(VB_P, probe), NULL, 0, 0, NULL, "write_lat|send_lat",
	  "--pattern incast|fanout: a victim latency flow (8 B ping-pong) into the hub from the lowest other node, "
	  "measured during the pattern's window and idle in the same point (docs/patterns.md)" },
	/* issue 36: a soak (core/pb_soak.h, vb_soak.c) */
	PB_SOAK_OPTS(VB_P, soak),
	/* issues 35 and 36: counters over time on every node */
	{ "counters-series", 0, PB_OPT_STRING, offsetof(VB_P, cnt_series), NULL, 0, 0, NULL, "PREFIX",
	  "every --counters-interval, the counters/, hw_counters/ and netdev statistics of this node's ports into PREFIX-<host>.pbcnt.csv (docs/health.md)" },
	{ "counters-interval", 0, PB_OPT_DOUBLE, offsetof(VB_P, cnt_interval_s), "1", 0.01, 3600, NULL, "SEC",
	  "--counters-series: seconds between two samples" },
};
#define VB_NOPTS (sizeof(vb_opts) / sizeof(vb_opts[0]))

static int vb_parse_auto(const char *opt, const char *text, long max, int *out)
{
	char *end;
	long v;

	if (!strcmp(text, "auto")) {
		*out = -1;
		return 0;
	}
	v = strtol(text, &end, 10);
	if (!*text || *end || v < 0 || v > max) {
		char c[PB_CLIP_CHARS + 4];

		pb_log_error("option %s: '%s' is not 'auto' or an integer in [0, %ld]", opt,
			     pb_opts_clip(text, c, sizeof(c)), max);
		return -EINVAL;
	}
	*out = (int)v;
	return 0;
}

static int vb_role(struct vb_params *p)
{
	int roles = p->server + !!p->connect + p->loopback;
	const char *var = NULL;
	long rank = -1;
	int rc;

	if (p->probe && !p->pattern) {
		pb_log_error("--probe goes with --pattern incast|fanout");
		return -EINVAL;
	}
	if (p->probe && !(p->probe_desc = vb_test_find(p->probe))) {
		char clip[PB_CLIP_CHARS + 4];

		pb_log_error("option --probe: unknown test '%s' (write_lat or send_lat)", pb_opts_clip(p->probe, clip, sizeof(clip)));
		return -EINVAL;
	}
	if (p->pattern)
		return vb_pattern_role(p);
	if (p->pattern_hosts) {
		pb_log_error("--pattern-hosts goes with --pattern");
		return -EINVAL;
	}
	if (p->scan)
		return vb_scan_role(p);
	if (p->scan_hosts) {
		pb_log_error("--scan-hosts goes with --scan");
		return -EINVAL;
	}
	if (p->loopback && roles > 1) {
		pb_log_error("--loopback runs both sides here: do not combine it with --server or --connect");
		return -EINVAL;
	}
	if (roles && !(p->server && p->connect))
		goto done;
	rc = vb_launcher_rank(&rank, &var);
	if (rc == -EINVAL)
		return rc;
	if (rc && p->server && p->connect) {
		pb_log_error("--server and --connect exclude each other (outside an mpirun/srun launch)");
		return -EINVAL;
	}
	if (rc) {
		pb_log_error("choose a role: --loopback, --server, or --connect HOST (or launch 2 ranks with mpirun/srun)");
		return -EINVAL;
	}
	if (!p->connect) {
		pb_log_error("role from %s=%ld needs --connect HOST (the rank-0 host) for the client", var, rank);
		return -EINVAL;
	}
	if (rank > 1) {
		pb_log_error("%s=%ld: pairbench-verbs takes 2 ranks (0 = server, 1 = client; --scan: one per node)",
			     var, rank);
		return -EINVAL;
	}
	p->server = rank == 0;
	pb_log_info("role from %s=%ld: %s", var, rank, p->server ? "server" : "client");
done:
	p->side = p->server ? VB_SERVER : VB_CLIENT;
	p->peer_host = p->connect;
	return 0;
}

static int vb_sizes(struct vb_params *p, const struct pb_opts_result *res)
{
	bool given = pb_opts_given(vb_opts, VB_NOPTS, res, "sizes");
	const struct pb_test_info *t = &p->test_desc->info;

	if (p->all_sizes) {
		if (given) {
			pb_log_error("-a (all sizes) and -s exclude each other");
			return -EINVAL;
		}
		p->c.sizes.n = 0;
		for (uint64_t s = 1; s <= 8ull << 20; s *= 2)
			p->c.sizes.v[p->c.sizes.n++] = s;
	}
	if (t->fixed_size) {
		unsigned long long fixed = (unsigned long long)t->fixed_size_bytes;

		if ((given || p->all_sizes) && (p->c.sizes.n != 1 || p->c.sizes.v[0] != fixed)) {
			pb_log_error("%s moves exactly %llu bytes: use -s %llu (or leave -s out)", t->name,
				     fixed, fixed);
			return -EINVAL;
		}
		p->c.sizes.n = 1;
		p->c.sizes.v[0] = fixed;
	}
	p->max_size = 0;
	for (size_t i = 0; i < p->c.sizes.n; i++)
		if (p->c.sizes.v[i] > p->max_size)
			p->max_size = p->c.sizes.v[i];
	return 0;
}

/* --variant: one of the test's (the first by default), none if it has none. */
static int vb_variant_check(struct vb_params *p, const struct pb_test_info *t)
{
	char names[128] = "";
	bool ok = !p->variant;

	if (p->variant && !t->variants) {
		pb_log_error("option --variant: test %s has no variants", t->name);
		return -EINVAL;
	}
	for (size_t i = 0; t->variants && t->variants[i]; i++) {
		ok |= p->variant && !strcmp(p->variant, t->variants[i]);
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "",
			 t->variants[i]);
	}
	if (!ok) {
		char clip[PB_CLIP_CHARS + 4];

		pb_log_error("option --variant: '%s' is not a variant of %s (%s)",
			     pb_opts_clip(p->variant, clip, sizeof(clip)), t->name, names);
		return -EINVAL;
	}
	if (t->variants && !p->variant)
		p->variant = t->variants[0];
	return 0;
}

/* --soak and its options: core's rules (pb_soak_validate), then this layer's. */
static int vb_soak_check(const struct vb_params *p, const struct pb_opts_result *res)
{
	unsigned given = (pb_opts_given(vb_opts, VB_NOPTS, res, "bucket") ? PB_SOAK_GIVEN_BUCKET : 0) |
			 (pb_opts_given(vb_opts, VB_NOPTS, res, "stall-fraction") ? PB_SOAK_GIVEN_FRACTION : 0) |
			 (pb_opts_given(vb_opts, VB_NOPTS, res, "series") ? PB_SOAK_GIVEN_SERIES : 0) |
			 (pb_opts_given(vb_opts, VB_NOPTS, res, "validate-live") ? PB_SOAK_GIVEN_VALIDATE : 0);
	char err[256];

	if (pb_soak_validate(&p->soak, &p->c, &p->test_desc->info, given, err, sizeof(err))) {
		pb_log_error("%s", err);
		return -EINVAL;
	}
	if (pb_opts_given(vb_opts, VB_NOPTS, res, "counters-interval") && !p->cnt_series) {
		pb_log_error("--counters-interval goes with --counters-series PREFIX");
		return -EINVAL;
	}
	if (p->soak.soak_s > 0 && p->bidir) {
		/* the measuring side sees only its own direction's completions */
		pb_log_error("--soak with --bidir: not in pairbench-verbs yet (a side counts only its own direction); soak each direction");
		return -EINVAL;
	}
	if (p->soak.soak_s > 0 && p->validate) {
		pb_log_error("--soak measures; --validate checks without measuring: choose one");
		return -EINVAL;
	}
	if (p->soak.validate_every &&
	    ((p->test_desc->op != VB_OP_READ && p->test_desc->op != VB_OP_SEND) ||
	     p->buffers != PB_BUF_FRESH)) {
		/* the receiver of the data checks it: read_bw's client, send_bw's server (vb_soak.h) */
		pb_log_error("--validate-live: pairbench-verbs checks read_bw and send_bw, with --buffers fresh (the receiver of the data checks it in a slot per message; write_bw's receiver sees no completion that says its data landed)");
		return -EINVAL;
	}
	if (p->soak.validate_every && p->test_desc->op == VB_OP_SEND && (p->pattern || p->scan)) {
		/* the client's row waits for its server's totals: a pair of one run, not a pattern's flow */
		pb_log_error("--validate-live with send_bw: pairs on a node or two nodes only, not --pattern or --scan yet (read_bw checks there)");
		return -EINVAL;
	}
	return 0;
}

static int vb_params_finish(struct vb_params *p, const struct pb_opts_result *res)
{
	const struct vb_test *t = vb_test_find(p->c.test);
	char err[256];
	int rc;

	if (!t) {
		pb_log_error("option --test: unknown test '%s' (see --list-tests)",
			     pb_opts_clip(p->c.test, err, sizeof(err)));
		return -EINVAL;
	}
	p->test_desc = t;
	if ((rc = vb_variant_check(p, &t->info)))
		return rc;
	if (p->buffers != PB_BUF_FRESH && !t->info.buffers) {
		pb_log_error("option --buffers %s: test %s has no layout choice (write_lat, send_lat, write_bw, read_bw, send_bw, loaded_lat have)",
			     pb_buffers_names[p->buffers], t->info.name);
		return -EINVAL;
	}
	if (p->bidir && !t->info.bidir) {
		pb_log_error("option --bidir: only the bandwidth tests (write_bw, read_bw, send_bw) have it");
		return -EINVAL;
	}
	if (p->cq_mod > p->tx_depth) {
		pb_log_error("option --cq-mod: %llu is larger than --tx-depth %llu (no completion would ever be signalled)",
			     (unsigned long long)p->cq_mod, (unsigned long long)p->tx_depth);
		return -EINVAL;
	}
	if (p->mtu && !vb_mtu_enum(p->mtu)) {
		pb_log_error("option --mtu: %llu is not one of 256, 512, 1024, 2048, 4096", (unsigned long long)p->mtu);
		return -EINVAL;
	}
	if (p->c.pairs < t->info.min_pairs) {
		pb_log_error("%s needs --pairs >= %u", t->info.name, t->info.min_pairs);
		return -EINVAL;
	}
	if (pb_common_check(&p->c, err, sizeof(err)) || pb_window_check(&p->c, err, sizeof(err)) ||
	    pb_window_check_time_opts(&p->c, vb_opts, VB_NOPTS, res, err, sizeof(err))) {
		pb_log_error("%s", err);
		return -EINVAL;
	}
	if ((rc = vb_soak_check(p, res)))
		return rc;
	if (p->c.pairs > VB_MAX_PAIRS) {
		pb_log_error("option --pairs: at most %d", VB_MAX_PAIRS);
		return -EINVAL;
	}
	p->pairs = (unsigned)p->c.pairs;
	p->validate |= p->validate_selftest;
	if ((rc = vb_parse_auto("-x/--gid-index", p->gid_index, 65535, &p->gid_index_v)) ||
	    (rc = vb_parse_auto("-I/--inline-size", p->inline_size, 65536, &p->inline_v)))
		return rc;
	if ((rc = vb_sizes(p, res)))
		return rc;
	if (p->max_size > (512ull << 20)) {
		pb_log_error("option --sizes: at most 512M per message");
		return -EINVAL;
	}
	if ((rc = vb_role(p)))
		return rc;
	return vb_devmap_parse(p);
}

/*
 * fds 0-2 closed by the caller: occupy them with /dev/null so that no file
 * or rdma_cm channel opened later becomes "stdout" (stdout itself is checked
 * by the caller: rows into /dev/null would be lost silently).
 */
static void vb_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFL) >= 0)
			continue;
		int n = open("/dev/null", fd ? O_WRONLY : O_RDONLY);

		if (n >= 0 && n != fd) {
			dup2(n, fd);
			close(n);
		}
	}
}

/*
 * Open --output (or --env-json) for writing, before the run: a bad path is
 * refused before anything is measured.  Never blocks: a FIFO without a reader is an
 * error (O_NONBLOCK open), not a hang.  Written through, never replaced: a
 * device node, a FIFO or a symlink stays what it is; a regular file is
 * truncated.  NULL after one error line.
 */
static FILE *vb_open_output(const char *opt, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0666), flags;
	struct stat st;
	FILE *f;

	if (fd < 0) {
		pb_log_error("cannot open %s %s: %s", opt, path,
			     errno == ENXIO ? "it is a FIFO with no reader (start the reader first)" : strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || (S_ISREG(st.st_mode) && ftruncate(fd, 0))) {
		pb_log_error("cannot open %s %s: %s", opt, path, strerror(errno));
		close(fd);
		return NULL;
	}
	if (S_ISDIR(st.st_mode)) {
		pb_log_error("cannot open %s %s: it is a directory", opt, path);
		close(fd);
		return NULL;
	}
	if ((flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 ||
	    !(f = fdopen(fd, "w"))) {
		pb_log_error("cannot open %s %s: %s", opt, path, strerror(errno));
		close(fd);
		return NULL;
	}
	return f;
}

static void vb_list_tests(int fmt)
{
	const struct pb_test_info *all[sizeof(vb_tests) / sizeof(vb_tests[0])];
	size_t n = 0;

	for (const struct vb_test *t = vb_tests; t->info.name; t++)
		all[n++] = &t->info;
	pb_test_info_print(stdout, (enum pb_list_format)fmt, "verbs", all, n);
}

int main(int argc, char **argv)
{
	struct vb_params p;
	struct pb_opts_result res;
	FILE *csv = stdout, *env = NULL;
	int rc;

	memset(&p, 0, sizeof(p));
	if (pb_opts_parse(vb_opts, VB_NOPTS, argc, argv, &p, &res))
		return PB_EXIT_USAGE;
	if (p.c.help) {
		pb_opts_print_help(stdout, "pairbench-verbs",
				   "Verbs-level multi-pair latency, bandwidth and message rate: N synchronised pairs.",
				   vb_opts, VB_NOPTS);
		return PB_EXIT_OK;
	}
	if (p.c.print_schema) {
		pb_schema_print(stdout);
		return PB_EXIT_OK;
	}
	if (p.c.list_tests) {
		vb_list_tests(p.c.list_format);
		return PB_EXIT_OK;
	}
	if (vb_params_finish(&p, &res))
		return PB_EXIT_USAGE;
	if (p.scan_bye || (p.pattern && !p.pairs))
		return PB_EXIT_OK;  /* no pair this round / no flow of the pattern: nothing to measure, no rows */
	if (!p.c.output && fcntl(STDOUT_FILENO, F_GETFL) < 0) {
		pb_log_error("stdout is closed: nowhere to write the CSV rows (use -o FILE)");
		return PB_EXIT_USAGE;
	}
	vb_std_fds();
	if (p.c.output && !(csv = vb_open_output("--output", p.c.output)))
		return PB_EXIT_USAGE;
	if (p.c.env_json && !(env = vb_open_output("--env-json", p.c.env_json))) {
		if (csv != stdout)
			fclose(csv);
		return PB_EXIT_USAGE;
	}
	/*
	 * The record is written after the run (it holds what the workers saw); its first
	 * byte, a newline (JSON whitespace), goes now: a target that takes no bytes
	 * (/dev/full, a full disk) fails before anything is measured, not after.
	 */
	if (env && (fputc('\n', env) == EOF || fflush(env))) {
		pb_log_error("writing --env-json %s failed: %s", p.c.env_json, strerror(errno));
		fclose(env);
		if (csv != stdout)
			fclose(csv);
		return PB_EXIT_RUNTIME;
	}
	/* Rows reach the file as they are made: an interrupted run keeps what it measured. */
	setvbuf(csv, NULL, _IOLBF, 0);
	rc = vb_launch(&p, csv, env);
	if (env && fclose(env) && !rc) {
		pb_log_error("writing --env-json %s failed: %s", p.c.env_json, strerror(errno));
		rc = PB_EXIT_RUNTIME;
	}
	if (csv != stdout && fclose(csv) && !rc) {
		pb_log_error("writing %s failed: %s", p.c.output, strerror(errno));
		rc = PB_EXIT_RUNTIME;
	}
	return rc;
}
