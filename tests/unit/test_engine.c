/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine with a fake transport: forked "pairs" meeting through
 * shm_meet, deterministic samples and windows, so every row can be checked.
 * Also: a failing pair gives error rows for its size and "not run" rows for
 * the later sizes, and the run returns the error.
 */
#define _GNU_SOURCE
#include "pb_engine.h"
#include "pb_test.h"
#include "shm_meet.h"

#include <string.h>

#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAIRS 3
#define ITERS 200
#define MAX_SAMPLES 800   /* shm room per pair; the target test's capacity */

struct fake {
	unsigned pair;
	uint64_t fail_at_size; /* 0 = never */
	uint64_t base_ns;
};

/* How the run of a test is timed (pb_window.h): count, or the window / target tests below. */
static enum pb_window_method g_method = PB_WM_COUNT;
#define WINDOW_NS 2000000ull   /* window test: 2 ms */
#define TARGET_NS 1000000ull   /* target test: 1 ms */
#define TARGET_MIN 400

/*
 * A deadline (window, target): the fake derives the common start from it and
 * runs in fake time.  window (bandwidth): pair p starts p us after the start,
 * moves one message per (p + 1) us and stops at the deadline.  target
 * (latency): one iteration per (p + 1) us, as many as reach the deadline and
 * --lat-samples, at most the room it was given.
 */
static int fake_until(const struct fake *f, struct pb_timed *t)
{
	uint64_t cost = (f->pair + 1) * 1000ull;

	if (g_method == PB_WM_WINDOW) {
		t->start_ns = t->end_by_ns - WINDOW_NS + f->pair * 1000ull;
		t->end_ns = t->end_by_ns;
		t->messages = (t->end_ns - t->start_ns) / cost;
		t->bytes = t->messages * t->msg_size_bytes;
		t->done = t->messages;
		t->has_bw = true;
		return 0;
	}
	uint64_t n = (TARGET_NS + cost - 1) / cost;

	if (n < t->min_iterations)
		n = t->min_iterations;
	if (n > t->iterations)
		n = t->iterations;
	for (uint64_t i = 0; i < n; i++)
		t->samples_ns[i] = cost;
	t->start_ns = t->end_by_ns - TARGET_NS;
	t->end_ns = t->start_ns + n * cost;
	t->done = n;
	t->has_lat = true;
	return 0;
}

/* The order of this process's calls with the quiet hook (pair 0: the test's own process). */
static char g_calls[64];

static void note_call(char c)
{
	size_t n = strlen(g_calls);

	if (n + 1 < sizeof(g_calls))
		g_calls[n] = c;
}

static int fake_timed(void *ctx, struct pb_timed *t)
{
	struct fake *f = ctx;

	note_call('T');

	if (t->end_by_ns)
		return fake_until(f, t);
	if (f->fail_at_size == t->msg_size_bytes) {
		snprintf(t->error, sizeof(t->error), "fake completion error on QP %u", 100 + f->pair);
		return -EIO;
	}
	/* latency samples: pair p at size s -> (p + 1) µs + i ns */
	for (uint64_t i = 0; i < t->iterations; i++)
		t->samples_ns[i] = (f->pair + 1) * 1000 + i;
	t->done = t->iterations;
	t->has_lat = true;
	/* a bandwidth window: pair p moves s*iters bytes in [base + p*1ms, base + (p+2)*1ms] */
	t->has_bw = true;
	t->bytes = t->msg_size_bytes * t->iterations;
	t->messages = t->iterations;
	t->start_ns = f->base_ns + f->pair * 1000000ull;
	t->end_ns = t->start_ns + 2000000ull;
	return 0;
}

static const struct pb_test_ops fake_ops = { .timed = fake_timed };

/* quiet(): b before the window, a after it (verbs reads its device counters there). */
static int fake_quiet(void *ctx, uint64_t msg_size_bytes, bool after)
{
	(void)ctx;
	(void)msg_size_bytes;
	note_call(after ? 'a' : 'b');
	return 0;
}

static const struct pb_test_ops quiet_ops = { .timed = fake_timed, .quiet = fake_quiet };
static const struct pb_test_ops *g_ops = &fake_ops;

/* Device labels of the run (NULL: none), as pairbench-verbs -d devA,devB gives them. */
static const struct pb_pair_label *run_labels;
static const struct pb_pair_label two_devs[PAIRS] = {
	{ "devA", "gid:1:a", "devA", 1, 10 }, { "devB", "gid:1:b", "devB", 1, 40 },
	{ "devA", "gid:1:a", "devA", 1, 10 },
};
/*
 * Node aggregates (--pattern runs): pairs 0, 1 measured on nodeA towards nodeB, pair 2 on
 * nodeB towards nodeA; g_mixed_peers: pair 1 towards nodeC instead.
 */
static bool g_node_aggregates, g_mixed_peers;

static int run_member(struct shm_sync *s, unsigned pair, uint64_t fail_at, FILE *csv)
{
	static const uint64_t sizes[] = { 8, 64, 512 };
	struct pb_engine_params p = { .layer = "verbs", .test = "fake_lat", .lat_kind = "half_rtt",
				      .sizes = sizes, .n_sizes = 3, .iterations = ITERS,
				      .warmup = 5, .pairs = PAIRS, .link_gbit_s = 100,
				      .flags = "oversubscribed", .labels = run_labels };
	struct pb_engine_role role = { .measuring = true, .leader = pair == 0, .pair_id = pair,
				       .cpu = -1, .numa_node = -1, .host = "nodeA", .peer = "nodeB" };

	if (g_method == PB_WM_WINDOW) {
		p.method = PB_WM_WINDOW;
		p.duration_s = (double)WINDOW_NS / 1e9;
		p.test = "fake_bw";
	} else if (g_method == PB_WM_TARGET) {
		p.method = PB_WM_TARGET;
		p.duration_s = (double)TARGET_NS / 1e9;
		p.iterations = MAX_SAMPLES;
		p.min_iterations = TARGET_MIN;
	}
	if (g_node_aggregates) {
		p.pattern = "shift:1";
		p.node_aggregates = true;
		role.host = pair < 2 ? "nodeA" : "nodeB";
		role.peer = pair == 1 && g_mixed_peers ? "nodeC" : pair < 2 ? "nodeB" : "nodeA";
	}
	struct fake f = { .pair = pair, .fail_at_size = fail_at, .base_ns = 1000000000ull };
	struct pb_sink sink = { .csv = csv };
	struct shm_meet m;
	int rc = shm_sync_join(s, pair);

	if (rc)
		return rc;
	shm_meet_init(&m, s, pair, PAIRS, MAX_SAMPLES, 5000000000ull);
	rc = pb_engine_run(&p, &role, &shm_meet_ops, &m, g_ops, &f, &sink);
	shm_meet_cleanup(&m);
	return rc;
}

/* Runs PAIRS members (pair 0 in this process), CSV into a temp file; returns pair 0's rc. */
static int run_group(unsigned failing_pair, uint64_t fail_at, FILE *csv, int *child_fail)
{
	struct shm_sync *s;
	pid_t pid[PAIRS];
	int rc;

	CHECK_EQ_INT(shm_sync_create(PAIRS, 64, shm_meet_extra_bytes(PAIRS, MAX_SAMPLES), true, &s), 0);
	for (unsigned i = 1; i < PAIRS; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			_exit(run_member(s, i, i == failing_pair ? fail_at : 0, NULL) ? 1 : 0);
	}
	rc = run_member(s, 0, failing_pair == 0 ? fail_at : 0, csv);
	*child_fail = 0;
	for (unsigned i = 1; i < PAIRS; i++) {
		int st;

		waitpid(pid[i], &st, 0);
		*child_fail += !WIFEXITED(st) || WEXITSTATUS(st);
	}
	shm_sync_detach(s);
	return rc;
}

/* Split the CSV text into rows of cells (no quoting in these rows but the error text). */
static int field(const char *line, int col, char *out, size_t len)
{
	int c = 0;
	bool q = false;
	size_t o = 0;

	for (const char *p = line; *p && *p != '\n'; p++) {
		if (*p == '"') {
			q = !q;
			continue;
		}
		if (*p == ',' && !q) {
			c++;
			continue;
		}
		if (c == col && o + 1 < len)
			out[o++] = *p;
	}
	out[o] = '\0';
	return c + 1;
}

static char lines[64][4096];

static int read_lines(FILE *f)
{
	int n = 0;

	rewind(f);
	while (n < 64 && fgets(lines[n], sizeof(lines[n]), f))
		n++;
	return n;
}

/* Cell col of CSV line l equals want (v: the caller's buffer). */
#define CHECK_CELL(l, col, want)                          \
	do {                                              \
		field(lines[l], col, v, sizeof(v));       \
		CHECK_STR(v, want);                       \
	} while (0)

static void test_all_ok(void)
{
	FILE *csv = tmpfile();
	char v[256];
	int child_fail, n;

	CHECK_EQ_INT(run_group(PAIRS, 0, csv, &child_fail), 0);
	CHECK_EQ_INT(child_fail, 0);
	n = read_lines(csv);
	CHECK_EQ_INT(n, 1 + 3 * (PAIRS + 1)); /* header + (3 pairs + aggregate) per size */
	for (int i = 0; i < n; i++)
		CHECK_EQ_INT(field(lines[i], 0, v, sizeof(v)), PB_COL_COUNT);
	/*
	 * The run's flags (pb_flags_run) on every row, pair and aggregate.  With a fixed count the
	 * fake's pairs end 1 ms apart in a 4 ms window: the aggregate is tail-dominated.
	 */
	for (int i = 1; i < n; i++) {
		field(lines[i], PB_COL_flags, v, sizeof(v));
		CHECK_STR(v, i % (PAIRS + 1) ? "oversubscribed" : "tail_dominated;oversubscribed");
	}
	field(lines[4], PB_COL_end_spread_us, v, sizeof(v));
	CHECK_STR(v, "2000");
	field(lines[4], PB_COL_overlap_s, v, sizeof(v));
	CHECK_STR(v, "0");    /* pair 0 ends (2 ms) as pair 2 starts (2 ms) */
	field(lines[4], PB_COL_window_method, v, sizeof(v));
	CHECK_STR(v, "count");
	/* size 8, pair 1: samples 2000..2199 ns -> p50 = rank 100 = 2099 ns */
	field(lines[2], PB_COL_pair_id, v, sizeof(v));
	CHECK_STR(v, "1");
	field(lines[2], PB_COL_lat_us_p50, v, sizeof(v));
	CHECK_STR(v, "2.099");
	field(lines[2], PB_COL_lat_us_p999, v, sizeof(v));
	CHECK_STR(v, ""); /* 200 samples cannot support p99.9 */
	/* aggregate: pooled 600 samples; min 1.000, max 3.199 */
	field(lines[4], PB_COL_pair_id, v, sizeof(v));
	CHECK_STR(v, "all");
	field(lines[4], PB_COL_lat_us_min, v, sizeof(v));
	CHECK_STR(v, "1");
	field(lines[4], PB_COL_lat_us_max, v, sizeof(v));
	CHECK_STR(v, "3.199");
	/* window: earliest start base, latest end base + 4 ms; 3 x 8 B x 200 = 4800 B -> 9.6 Mbit/s */
	field(lines[4], PB_COL_bw_gbit_s, v, sizeof(v));
	CHECK_STR(v, "0.0096");
	field(lines[4], PB_COL_start_skew_us, v, sizeof(v));
	CHECK_STR(v, "2000");
	field(lines[4], PB_COL_iterations, v, sizeof(v));
	CHECK_STR(v, "600");
	field(lines[4], PB_COL_status, v, sizeof(v));
	CHECK_STR(v, "ok");
	field(lines[1], PB_COL_host, v, sizeof(v));
	CHECK_STR(v, "nodeA");
	fclose(csv);
}

/* One scope=node aggregate per measuring host, each over that host's pairs' windows. */
static void test_node_aggregates(void)
{
	FILE *csv = tmpfile();
	char v[256];
	int child_fail, n;

	g_node_aggregates = true;
	CHECK_EQ_INT(run_group(PAIRS, 0, csv, &child_fail), 0);
	g_node_aggregates = false;
	CHECK_EQ_INT(child_fail, 0);
	n = read_lines(csv);
	CHECK_EQ_INT(n, 1 + 3 * (PAIRS + 1 + 2)); /* + one node row per host and size */
	field(lines[4], PB_COL_scope, v, sizeof(v));
	CHECK_STR(v, "all");
	field(lines[4], PB_COL_pattern, v, sizeof(v));
	CHECK_STR(v, "shift:1");
	/* nodeA: pairs 0, 1: 2 x 1600 B in [base, base + 3 ms] -> 8.5333 Mbit/s */
	field(lines[5], PB_COL_scope, v, sizeof(v));
	CHECK_STR(v, "node");
	field(lines[5], PB_COL_pair_id, v, sizeof(v));
	CHECK_STR(v, "all");
	field(lines[5], PB_COL_host, v, sizeof(v));
	CHECK_STR(v, "nodeA");
	field(lines[5], PB_COL_bw_gbit_s, v, sizeof(v));
	CHECK_STR(v, "0.00853333333");
	field(lines[5], PB_COL_iterations, v, sizeof(v));
	CHECK_STR(v, "400");
	field(lines[5], PB_COL_pattern, v, sizeof(v));
	CHECK_STR(v, "shift:1");
	/* every pair of nodeA measured towards nodeB: the node row names its peer */
	field(lines[5], PB_COL_peer, v, sizeof(v));
	CHECK_STR(v, "nodeB");
	/* nodeB: pair 2 alone: 1600 B in 2 ms -> 6.4 Mbit/s; its own latency statistics */
	field(lines[6], PB_COL_host, v, sizeof(v));
	CHECK_STR(v, "nodeB");
	field(lines[6], PB_COL_peer, v, sizeof(v));
	CHECK_STR(v, "nodeA");
	field(lines[6], PB_COL_bw_gbit_s, v, sizeof(v));
	CHECK_STR(v, "0.0064");
	field(lines[6], PB_COL_lat_us_min, v, sizeof(v));
	CHECK_STR(v, "3");
	fclose(csv);
}

/* A node whose pairs measured towards several peers (fan-out): its node row names none. */
static void test_node_aggregates_mixed_peers(void)
{
	FILE *csv = tmpfile();
	char v[256];
	int child_fail;

	g_node_aggregates = g_mixed_peers = true;
	CHECK_EQ_INT(run_group(PAIRS, 0, csv, &child_fail), 0);
	g_node_aggregates = g_mixed_peers = false;
	CHECK_EQ_INT(child_fail, 0);
	CHECK_EQ_INT(read_lines(csv), 1 + 3 * (PAIRS + 1 + 2));
	field(lines[5], PB_COL_host, v, sizeof(v));
	CHECK_STR(v, "nodeA");
	field(lines[5], PB_COL_peer, v, sizeof(v));
	CHECK_STR(v, "");
	field(lines[6], PB_COL_peer, v, sizeof(v));
	CHECK_STR(v, "nodeA");
	fclose(csv);
}

static void test_failing_pair(void)
{
	FILE *csv = tmpfile();
	char v[256];
	int child_fail, n, rc;

	rc = run_group(2, 64, csv, &child_fail);
	CHECK(rc != 0);
	CHECK(child_fail >= 1);
	n = read_lines(csv);
	CHECK_EQ_INT(n, 1 + 3 * (PAIRS + 1)); /* still a row for every point */
	field(lines[4], PB_COL_status, v, sizeof(v)); /* size 8 aggregate */
	CHECK_STR(v, "ok");
	field(lines[7], PB_COL_status, v, sizeof(v)); /* size 64, pair 2 */
	CHECK_STR(v, "error");
	field(lines[7], PB_COL_error, v, sizeof(v));
	CHECK(strstr(v, "fake completion error on QP 102") != NULL);
	field(lines[8], PB_COL_error, v, sizeof(v)); /* size 64 aggregate names the pair */
	CHECK(strstr(v, "pair 2") != NULL);
	field(lines[12], PB_COL_status, v, sizeof(v)); /* size 512 aggregate: not run */
	CHECK_STR(v, "error");
	field(lines[12], PB_COL_error, v, sizeof(v));
	CHECK(strstr(v, "not run") != NULL);
	fclose(csv);
}

static void expect(int line, int col, const char *want)
{
	char v[256];

	field(lines[line], col, v, sizeof(v));
	if (strcmp(v, want))
		fprintf(stderr, "line %d column %s: '%s', want '%s'\n", line, pb_col_name((enum pb_col)col), v, want);
	CHECK_STR(v, want);
}

/*
 * Two devices: pairs 0 and 2 on devA (capacity 10), pair 1 on devB (40).
 * Per point: 3 pair rows, the node aggregate, then devA's and devB's
 * aggregates, each over its own pairs' window and samples.
 */
static void test_device_aggregates(void)
{
	FILE *csv = tmpfile();
	int child_fail, n;

	run_labels = two_devs;
	CHECK_EQ_INT(run_group(PAIRS, 0, csv, &child_fail), 0);
	n = read_lines(csv);
	CHECK_EQ_INT(n, 1 + 3 * (PAIRS + 3));
	/* pair rows say their device; link_pct against their own device */
	expect(1, PB_COL_device, "devA");
	expect(1, PB_COL_port_addr, "gid:1:a");
	expect(1, PB_COL_port, "1");
	expect(1, PB_COL_peer_device, "devA");
	expect(1, PB_COL_scope, "pair");
	expect(1, PB_COL_link_pct, "0.064");     /* 0.0064 Gbit/s of 10 */
	expect(2, PB_COL_device, "devB");
	expect(2, PB_COL_link_pct, "0.016");     /* of 40 */
	/* node aggregate: every pair, as without labels */
	expect(4, PB_COL_scope, "all");
	expect(4, PB_COL_device, "devA+devB");
	expect(4, PB_COL_bw_gbit_s, "0.0096");
	expect(4, PB_COL_iterations, "600");
	/* devA: pairs 0 and 2, window base .. base + 4 ms, 3200 B; samples 1.000..1.199 and 3.000..3.199 */
	expect(5, PB_COL_pair_id, "all");
	expect(5, PB_COL_scope, "device");
	expect(5, PB_COL_device, "devA");
	expect(5, PB_COL_pairs, "3");
	expect(5, PB_COL_iterations, "400");
	expect(5, PB_COL_bw_gbit_s, "0.0064");
	expect(5, PB_COL_start_skew_us, "2000");
	expect(5, PB_COL_lat_us_min, "1");
	expect(5, PB_COL_lat_us_max, "3.199");
	expect(5, PB_COL_lat_us_p50, "1.199"); /* rank 200 of 400 */
	expect(5, PB_COL_fairness, "1");
	expect(5, PB_COL_worst_lat_pair_id, "2");
	expect(5, PB_COL_link_pct, "0.064");
	/* devB: pair 1 alone, window base + 1 ms .. base + 3 ms, 1600 B */
	expect(6, PB_COL_device, "devB");
	expect(6, PB_COL_iterations, "200");
	expect(6, PB_COL_bw_gbit_s, "0.0064");
	expect(6, PB_COL_start_skew_us, "0");
	expect(6, PB_COL_lat_us_min, "2");
	expect(6, PB_COL_lat_us_max, "2.199");
	expect(6, PB_COL_link_pct, "0.016");
	expect(6, PB_COL_worst_lat_pair_id, "");
	fclose(csv);

	/* pair 2 (devA) fails at 64 B: devA's aggregate is an error row naming it (devB's status
	 * depends on whether pair 1 published before the abort reached the leader) */
	csv = tmpfile();
	CHECK(run_group(2, 64, csv, &child_fail) != 0);
	n = read_lines(csv);
	CHECK_EQ_INT(n, 1 + 3 * (PAIRS + 3)); /* every point keeps its device rows */
	expect(6 + 5, PB_COL_status, "error");
	expect(6 + 5, PB_COL_device, "devA");
	CHECK(strstr(lines[6 + 5], "pair 2") != NULL);
	expect(6 + 6, PB_COL_device, "devB");
	expect(6 + 6, PB_COL_scope, "device");
	expect(12 + 5, PB_COL_scope, "device"); /* 512 B: not run, still one row per device */
	expect(12 + 6, PB_COL_status, "error");
	fclose(csv);
	run_labels = NULL;
}

/* The meet contract's signals between members: progress() and fail() by one, seen by another. */
static void test_meet_aborted(void)
{
	struct shm_sync *s;
	struct shm_meet a, b;
	char why[64] = "";
	uint64_t before;

	CHECK_EQ_INT(shm_sync_create(2, 64, shm_meet_extra_bytes(2, ITERS), true, &s), 0);
	shm_meet_init(&a, s, 0, 2, ITERS, 5000000000ull);
	shm_meet_init(&b, s, 1, 2, ITERS, 5000000000ull);
	CHECK(!shm_meet_ops.aborted(&b, why, sizeof(why)));
	before = shm_meet_ops.progress_count(&b);
	shm_meet_ops.progress(&a);
	CHECK(shm_meet_ops.progress_count(&b) != before);
	shm_meet_ops.fail(&a, "pair 0 gave up");
	CHECK(shm_meet_ops.aborted(&b, why, sizeof(why)));
	CHECK(strstr(why, "pair 0 gave up") != NULL);
	shm_meet_cleanup(&a);
	shm_meet_cleanup(&b);
	shm_sync_detach(s);
}

/*
 * A common window: every pair stops at one deadline, the node barrier's release + the window
 * (the fake stops exactly there, so pairs given different deadlines would end apart), and the
 * aggregate is the sum of the bytes over that one window.
 */
static void test_common_window(void)
{
	FILE *csv = tmpfile();
	char v[256];
	int child_fail, n;

	g_method = PB_WM_WINDOW;
	CHECK_EQ_INT(run_group(PAIRS, 0, csv, &child_fail), 0);
	g_method = PB_WM_COUNT;
	CHECK_EQ_INT(child_fail, 0);
	n = read_lines(csv);
	CHECK_EQ_INT(n, 1 + 3 * (PAIRS + 1));
	for (int i = 1; i < n; i++) {
		field(lines[i], PB_COL_window_method, v, sizeof(v));
		CHECK_STR(v, "window");
		field(lines[i], PB_COL_window_s, v, sizeof(v));
		CHECK_STR(v, "0.002");
	}
	/* size 8: pairs 0, 1, 2 move 2000, 999, 666 messages; their ends do not spread */
	CHECK_CELL(4, PB_COL_pair_id, "all");
	CHECK_CELL(4, PB_COL_end_spread_us, "0");
	CHECK_CELL(4, PB_COL_duration_s, "0.002");
	/* The window begins at the common start (pair 0); pair 2 began 2 us after it. */
	CHECK_CELL(4, PB_COL_start_delay_us, "0");
	CHECK_CELL(3, PB_COL_start_delay_us, "2");
	CHECK_CELL(4, PB_COL_iterations, "3665");
	/* 3665 messages x 8 B / 2 ms = 14.66 MB/s */
	CHECK_CELL(4, PB_COL_bw_mbyte_s, "14.66");
	CHECK_CELL(4, PB_COL_flags, "oversubscribed");
	fclose(csv);
}

/*
 * Latency by a target time: each pair samples until the deadline and TARGET_MIN samples,
 * whichever is later, at most the room it has (flagged sample_cap); rows record the counts.
 */
static void test_target_counts(void)
{
	FILE *csv = tmpfile();
	char v[256];
	int child_fail, n;

	g_method = PB_WM_TARGET;
	CHECK_EQ_INT(run_group(PAIRS, 0, csv, &child_fail), 0);
	g_method = PB_WM_COUNT;
	CHECK_EQ_INT(child_fail, 0);
	n = read_lines(csv);
	CHECK_EQ_INT(n, 1 + 3 * (PAIRS + 1));
	/* pair 0: 1 us each, 1000 would reach 1 ms: capped at 800 */
	CHECK_CELL(1, PB_COL_iterations, "800");
	CHECK_CELL(1, PB_COL_flags, "sample_cap;oversubscribed");
	/* pair 1: 2 us each, 500 reach the deadline */
	CHECK_CELL(2, PB_COL_iterations, "500");
	CHECK_CELL(2, PB_COL_lat_us_p50, "2");
	/* pair 2: 3 us each, 334 reach it, but at least 400 */
	CHECK_CELL(3, PB_COL_iterations, "400");
	CHECK_CELL(3, PB_COL_flags, "oversubscribed");
	CHECK_CELL(4, PB_COL_iterations, "1700");
	CHECK_CELL(4, PB_COL_window_method, "target");
	CHECK_CELL(4, PB_COL_window_s, "0.001");
	/* pooled: 800 x 1, 500 x 2, 400 x 3 us: p50 (rank 850 of 1700) = 2 us */
	CHECK_CELL(4, PB_COL_lat_us_p50, "2");
	fclose(csv);
}

/* The quiet hook: every process, before each window (after a barrier) and after collect. */
static void test_quiet_moments(void)
{
	FILE *csv = tmpfile();
	int child_fail;

	g_ops = &quiet_ops;
	g_calls[0] = 0;
	CHECK_EQ_INT(run_group(PAIRS, 0, csv, &child_fail), 0);
	CHECK_EQ_INT(child_fail, 0);
	CHECK_STR(g_calls, "bTabTabTa");   /* 3 sizes */
	CHECK_EQ_INT(read_lines(csv), 1 + 3 * (PAIRS + 1)); /* the rows as without it */
	g_ops = &fake_ops;
	fclose(csv);
}

int main(void)
{
	test_quiet_moments();
	test_common_window();
	test_target_counts();
	test_all_ok();
	test_node_aggregates();
	test_node_aggregates_mixed_peers();
	test_failing_pair();
	test_device_aggregates();
	test_meet_aborted();
	TEST_DONE();
}
