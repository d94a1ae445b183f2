/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Traffic patterns (core/pb_pattern.c) for K = 2..9 nodes and R = 1..8 ranks
 * per node: every rank in at most one pair, never a pair within a node, and
 * the shape of each pattern (who talks to whom); the invalid combinations
 * are rejected with a message naming the pattern.
 */
#include "pb_test.h"

#include "pb_pattern.h"

#include <errno.h>
#include <stdbool.h>

#define MAXP 1024

static struct pb_flow pairs[MAXP];

static int run(const char *text, int k, int r, char *err, size_t len)
{
	struct pb_pattern p;
	int rc = pb_pattern_parse(text, &p, err, len);

	if (rc)
		return rc;
	return pb_pattern_flows(&p, k, r, pairs, MAXP, err, len);
}

/* Every (node, slot) at most once; both ends valid; no intra-node pair. */
static void check_disjoint(const char *what, int n, int k, int r)
{
	static bool used[64][64];

	memset(used, 0, sizeof(used));
	for (int i = 0; i < n; i++) {
		const struct pb_flow *m = &pairs[i];

		CHECK(m->a_node >= 0 && m->a_node < k && m->b_node >= 0 && m->b_node < k);
		CHECK(m->a_slot >= 0 && m->a_slot < r && m->b_slot >= 0 && m->b_slot < r);
		CHECK(m->a_node != m->b_node);
		if (used[m->a_node][m->a_slot] || used[m->b_node][m->b_slot])
			fprintf(stderr, "%s K=%d R=%d: rank (%d,%d)/(%d,%d) in two pairs\n", what, k, r,
				m->a_node, m->a_slot, m->b_node, m->b_slot);
		CHECK(!used[m->a_node][m->a_slot] && !used[m->b_node][m->b_slot]);
		used[m->a_node][m->a_slot] = used[m->b_node][m->b_slot] = true;
	}
}

/* links[a][b] = number of pairs a -> b. */
static void count_links(int n, int links[16][16])
{
	memset(links, 0, sizeof(int) * 16 * 16);
	for (int i = 0; i < n; i++)
		links[pairs[i].a_node][pairs[i].b_node]++;
}

static void test_pairs_bisection(int k, int r)
{
	char err[512];
	int links[16][16];
	int n = run("pairs", k, r, err, sizeof(err));

	if (k % 2) {
		CHECK_EQ_INT(n, -EINVAL);
		CHECK(strstr(err, "even number of nodes") != NULL);
	} else {
		CHECK_EQ_INT(n, k * r / 2);
		check_disjoint("pairs", n, k, r);
		count_links(n, links);
		for (int a = 0; a < k; a += 2)
			CHECK_EQ_INT(links[a][a + 1], r);
	}
	n = run("bisection", k, r, err, sizeof(err));
	if (k % 2) {
		CHECK_EQ_INT(n, -EINVAL);
		CHECK(strstr(err, "bisection") != NULL);
		return;
	}
	CHECK_EQ_INT(n, k * r / 2);
	check_disjoint("bisection", n, k, r);
	for (int i = 0; i < n; i++) {
		CHECK(pairs[i].a_node < k / 2);
		CHECK_EQ_INT(pairs[i].b_node, pairs[i].a_node + k / 2);
		CHECK_EQ_INT(pairs[i].b_slot, pairs[i].a_slot);
	}
}

static void test_shift(int k, int r)
{
	char err[512], text[32];

	for (int s = 1; s < k; s++) {
		int links[16][16];
		int n;

		snprintf(text, sizeof(text), "shift:%d", s);
		n = run(text, k, r, err, sizeof(err));
		if (r % 2) {
			CHECK_EQ_INT(n, -EINVAL);
			CHECK(strstr(err, "even number of ranks per node") != NULL);
			continue;
		}
		CHECK_EQ_INT(n, k * r / 2);
		check_disjoint(text, n, k, r);
		count_links(n, links);
		/* Every node sends r/2 pairs to node i+S and receives r/2 from node i-S. */
		for (int a = 0; a < k; a++)
			CHECK_EQ_INT(links[a][(a + s) % k], r / 2);
	}
	snprintf(text, sizeof(text), "shift:%d", k);
	CHECK_EQ_INT(run(text, k, 2, err, sizeof(err)), -EINVAL);
}

static void test_star(int k, int r)
{
	char err[512];

	for (int into = 0; into < 2; into++) {
		for (int t = 0; t < k; t += k - 1) {
			char text[32];
			int n, m = r / (k - 1);

			snprintf(text, sizeof(text), "%s:%d", into ? "incast" : "fanout", t);
			n = run(text, k, r, err, sizeof(err));
			if (r < k - 1) {
				CHECK_EQ_INT(n, -EINVAL);
				CHECK(strstr(err, "ranks per node") != NULL);
				continue;
			}
			CHECK_EQ_INT(n, (k - 1) * m);
			check_disjoint(text, n, k, r);
			for (int i = 0; i < n; i++) {
				/* incast: every pair ends in node t, none starts there; fanout: reverse. */
				CHECK_EQ_INT(into ? pairs[i].b_node : pairs[i].a_node, t);
				CHECK(into ? pairs[i].a_node != t : pairs[i].b_node != t);
			}
		}
	}
	/* incast alone means node 0 */
	if (r >= k - 1) {
		int n = run("incast", k, r, err, sizeof(err));

		for (int i = 0; i < n; i++)
			CHECK_EQ_INT(pairs[i].b_node, 0);
	}
}

static void test_alltoall(int k, int r)
{
	char err[512];
	int links[16][16];
	int n = run("alltoall", k, r, err, sizeof(err));

	if (r < k - 1) {
		CHECK_EQ_INT(n, -EINVAL);
		return;
	}
	CHECK_EQ_INT(n, k * (k - 1) / 2);
	check_disjoint("alltoall", n, k, r);
	count_links(n, links);
	for (int a = 0; a < k; a++) {
		int out = 0, in = 0;

		for (int b = 0; b < k; b++) {
			if (a != b)
				CHECK_EQ_INT(links[a][b] + links[b][a], 1); /* every node pair once */
			out += links[a][b];
			in += links[b][a];
		}
		/* direction balanced: senders and receivers differ by at most one per node */
		CHECK(out - in <= 1 && in - out <= 1);
	}
}

static void test_nodes(void)
{
	char err[512];
	struct pb_pattern p;
	int n = run("nodes:0-3,1-2", 4, 2, err, sizeof(err));

	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(pairs[0].a_node, 0);
	CHECK_EQ_INT(pairs[0].b_node, 3);
	CHECK_EQ_INT(pairs[2].a_node, 1);
	CHECK_EQ_INT(pairs[3].b_slot, 1);
	CHECK_EQ_INT(pb_pattern_parse("nodes:0-3,1-2", &p, err, sizeof(err)), 0);
	CHECK(!strcmp(p.name, "nodes:0-3,1-2"));
	/* a bye: node 2 of 3 idle */
	CHECK_EQ_INT(run("nodes:0-1", 3, 1, err, sizeof(err)), 1);
	CHECK_EQ_INT(run("nodes:0-1,1-2", 3, 1, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "node 1 is in two node pairs") != NULL);
	CHECK_EQ_INT(run("nodes:0-0", 3, 1, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(run("nodes:0-5", 3, 1, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "node 5 does not exist") != NULL);
	CHECK_EQ_INT(run("nodes:0-1,", 3, 1, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(run("nodes:", 3, 1, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(run("nodes:a-b", 3, 1, err, sizeof(err)), -EINVAL);
}

/* Select round i of a parsed scan (as mp_world_round) and pair it. */
static int scan_round(struct pb_pattern *p, int i, int k, int r, char *err, size_t len)
{
	pb_pattern_round(p, i);
	return pb_pattern_flows(p, k, r, pairs, MAXP, err, len);
}

/*
 * scan over K nodes (K = 2..40): every node pair exactly once over the
 * rounds, no node twice in a round, K-1 rounds (K even) or K with one bye
 * per node (K odd), side A balanced, rounds named scan:R; and round 2 of
 * K = 4 as docs/fabric.md writes it (0->2, 1->3).
 */
static void test_scan(int k, int r)
{
	static int met[64][64];
	char err[512], name[32];
	struct pb_pattern p;
	int rounds, idle[64] = { 0 }, as_a[64] = { 0 };

	CHECK_EQ_INT(pb_pattern_parse("scan", &p, err, sizeof(err)), 0);
	rounds = pb_pattern_rounds(&p, k, err, sizeof(err));
	CHECK_EQ_INT(rounds, k % 2 ? k : k - 1);
	memset(met, 0, sizeof(met));
	for (int i = 0; i < rounds; i++) {
		bool busy[64] = { false };
		int n = scan_round(&p, i, k, r, err, sizeof(err));

		snprintf(name, sizeof(name), "scan:%d", i + 1);
		CHECK(!strcmp(p.name, name));
		CHECK_EQ_INT(n, (k / 2) * r);
		if (k <= 9)
			check_disjoint("scan", n, k, r);
		for (int j = 0; j < n; j += r) {
			int a = pairs[j].a_node, b = pairs[j].b_node;

			CHECK(!busy[a] && !busy[b]);
			busy[a] = busy[b] = true;
			met[a][b]++;
			met[b][a]++;
			as_a[a]++;
			CHECK_EQ_INT(pairs[j].a_slot, 0);
			CHECK_EQ_INT(pairs[j + r - 1].b_slot, r - 1);
		}
		for (int a = 0; a < k; a++)
			idle[a] += !busy[a];
	}
	for (int a = 0; a < k; a++) {
		for (int b = 0; b < k; b++)
			CHECK_EQ_INT(met[a][b], a != b);
		CHECK_EQ_INT(idle[a], k % 2);
		CHECK(2 * as_a[a] >= k - 2 && 2 * as_a[a] <= k);
	}
	if (k == 4) {
		CHECK_EQ_INT(scan_round(&p, 1, 4, 1, err, sizeof(err)), 2);
		CHECK(pairs[0].a_node == 0 && pairs[0].b_node == 2);
		CHECK(pairs[1].a_node == 1 && pairs[1].b_node == 3);
	}
}

/* Ranges and skipped nodes: the same node pairs as the full scan, less the skipped ones. */
static void test_scan_range_skip(void)
{
	struct pb_flow full[16][8];
	int nfull[16];
	char err[512];
	struct pb_pattern p;

	CHECK_EQ_INT(pb_pattern_parse("scan", &p, err, sizeof(err)), 0);
	CHECK_EQ_INT(pb_pattern_rounds(&p, 8, err, sizeof(err)), 7);
	for (int i = 0; i < 7; i++) {
		nfull[i] = scan_round(&p, i, 8, 1, err, sizeof(err));
		memcpy(full[i], pairs, sizeof(full[i]));
	}
	CHECK_EQ_INT(pb_pattern_parse("scan:3-5", &p, err, sizeof(err)), 0);
	CHECK_EQ_INT(pb_pattern_rounds(&p, 8, err, sizeof(err)), 3);
	CHECK(!strcmp(p.name, "scan:3"));
	CHECK_EQ_INT(scan_round(&p, 2, 8, 1, err, sizeof(err)), nfull[4]);
	CHECK(!strcmp(p.name, "scan:5"));
	CHECK(!memcmp(pairs, full[4], sizeof(full[4][0]) * (size_t)nfull[4]));
	CHECK_EQ_INT(pb_pattern_parse("scan:6", &p, err, sizeof(err)), 0);
	CHECK_EQ_INT(pb_pattern_rounds(&p, 8, err, sizeof(err)), 1);
	/* skip=5,2: a job of 6 nodes; job node j is position j, j+1 (>= 2), j+2 (>= 4) */
	CHECK_EQ_INT(pb_pattern_parse("scan:2-7,skip=5,2", &p, err, sizeof(err)), 0);
	CHECK_EQ_INT(pb_pattern_rounds(&p, 6, err, sizeof(err)), 6);
	for (int i = 0; i < 6; i++) {
		static const int pos[6] = { 0, 1, 3, 4, 6, 7 };
		int n = scan_round(&p, i, 6, 1, err, sizeof(err)), m = 0;

		for (int j = 0; j < nfull[i + 1]; j++) {
			const struct pb_flow *f = &full[i + 1][j];

			if (f->a_node == 2 || f->a_node == 5 || f->b_node == 2 || f->b_node == 5)
				continue;
			CHECK(m < n && pos[pairs[m].a_node] == f->a_node &&
			      pos[pairs[m].b_node] == f->b_node);
			m++;
		}
		CHECK_EQ_INT(m, n);
	}
	/* errors: each names what is wrong */
	CHECK_EQ_INT(pb_pattern_parse("scan:0", &p, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "scan:FIRST-LAST") != NULL);
	CHECK_EQ_INT(pb_pattern_parse("scan:5-3", &p, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(pb_pattern_parse("scan:1-", &p, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(pb_pattern_parse("scanx", &p, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(pb_pattern_parse("scan,skip=", &p, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(pb_pattern_parse("scan,skip=1,", &p, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(pb_pattern_parse("scan,skip=1,1", &p, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "skipped twice") != NULL);
	CHECK_EQ_INT(pb_pattern_parse("scan:2-9", &p, err, sizeof(err)), 0);
	CHECK_EQ_INT(pb_pattern_rounds(&p, 8, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "rounds 1..7") != NULL);
	CHECK_EQ_INT(pb_pattern_parse("scan,skip=9", &p, err, sizeof(err)), 0);
	CHECK_EQ_INT(pb_pattern_rounds(&p, 8, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "skip=9 is not a node") != NULL);
	CHECK_EQ_INT(pb_pattern_parse("scan", &p, err, sizeof(err)), 0);
	CHECK_EQ_INT(pb_pattern_rounds(&p, 1, err, sizeof(err)), -EINVAL);
	/* K = 4 with 3 skipped: one job node, an error; with 2 skipped, a round may be empty */
	CHECK_EQ_INT(pb_pattern_parse("scan,skip=0,1", &p, err, sizeof(err)), 0);
	CHECK_EQ_INT(pb_pattern_rounds(&p, 2, err, sizeof(err)), 3);
	CHECK_EQ_INT(scan_round(&p, 0, 2, 1, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "no node pair left") != NULL);
}

/* Large K: a scan's round has K/2 node pairs without any cap (4,096 nodes). */
static void test_scan_large(void)
{
	static struct pb_flow big[2048];
	char err[512];
	struct pb_pattern p;

	CHECK_EQ_INT(pb_pattern_parse("scan:4095", &p, err, sizeof(err)), 0);
	CHECK_EQ_INT(pb_pattern_rounds(&p, 4096, err, sizeof(err)), 1);
	CHECK_EQ_INT(pb_pattern_flows(&p, 4096, 1, big, 2048, err, sizeof(err)), 2048);
	CHECK(!strcmp(p.name, "scan:4095"));
}

static void test_parse_errors(void)
{
	char err[512];
	struct pb_pattern p;

	CHECK_EQ_INT(pb_pattern_parse("ring", &p, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "unknown --pattern 'ring'") != NULL);
	CHECK_EQ_INT(pb_pattern_parse("shift:0", &p, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(pb_pattern_parse("shift:", &p, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(pb_pattern_parse("shift:1x", &p, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(pb_pattern_parse("incast:-1", &p, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(pb_pattern_parse("shift:2", &p, err, sizeof(err)), 0);
	CHECK(!strcmp(p.name, "shift:2"));
	CHECK_EQ_INT(pb_pattern_flows(&p, 1, 2, pairs, MAXP, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "at least 2 nodes") != NULL);
	/* too small an output array: an error, never a silent truncation */
	CHECK_EQ_INT(pb_pattern_parse("bisection", &p, err, sizeof(err)), 0);
	CHECK_EQ_INT(pb_pattern_flows(&p, 4, 4, pairs, 3, err, sizeof(err)), -E2BIG);
}

/* The cross-node start's rounds: the diameter of the flows' node graph, and whether it is one group. */
static void test_meet_rounds(void)
{
	static const struct pb_flow chain[] = { { 0, 0, 1, 0 }, { 1, 1, 2, 0 }, { 2, 1, 3, 0 }, { 4, 0, 3, 1 } };
	char err[512];
	bool conn;
	int n;

	for (int k = 2; k <= 9; k++) {
		CHECK((n = run("incast", k, k - 1, err, sizeof(err))) == k - 1);
		CHECK_EQ_INT(pb_pattern_meet_rounds(pairs, n, k, &conn), k == 2 ? 1 : 2);
		CHECK(conn);
		CHECK((n = run("fanout:1", k, 2 * (k - 1), err, sizeof(err))) == 2 * (k - 1));
		CHECK_EQ_INT(pb_pattern_meet_rounds(pairs, n, k, &conn), k == 2 ? 1 : 2);
		CHECK(conn);
		CHECK((n = run("alltoall", k, k - 1, err, sizeof(err))) > 0);
		CHECK_EQ_INT(pb_pattern_meet_rounds(pairs, n, k, &conn), 1);
		CHECK(conn);
		/* a ring: half-way round is the farthest */
		CHECK((n = run("shift:1", k, 2, err, sizeof(err))) == k);
		CHECK_EQ_INT(pb_pattern_meet_rounds(pairs, n, k, &conn), k / 2);
		CHECK(conn);
		if (k % 2 == 0) {
			/* node pairs that never meet: one round each, not one group beyond K = 2 */
			CHECK((n = run("pairs", k, 3, err, sizeof(err))) == 3 * k / 2);
			CHECK_EQ_INT(pb_pattern_meet_rounds(pairs, n, k, &conn), 1);
			CHECK(conn == (k == 2));
		}
	}
	/* idle nodes are not in the run: nodes:0-1 on 6 nodes is one group */
	CHECK((n = run("nodes:0-1", 6, 1, err, sizeof(err))) == 1);
	CHECK_EQ_INT(pb_pattern_meet_rounds(pairs, n, 6, &conn), 1);
	CHECK(conn);
	CHECK_EQ_INT(pb_pattern_meet_rounds(chain, 4, 5, &conn), 4);
	CHECK(conn);
	CHECK_EQ_INT(pb_pattern_meet_rounds(chain, 0, 5, &conn), 0);
}

int main(void)
{
	for (int k = 2; k <= 9; k++) {
		for (int r = 1; r <= 8; r++) {
			test_pairs_bisection(k, r);
			test_shift(k, r);
			test_star(k, r);
			test_alltoall(k, r);
		}
	}
	for (int k = 2; k <= 40; k++)
		test_scan(k, k <= 9 ? 1 + k % 3 : 1);
	test_scan_range_skip();
	test_scan_large();
	test_nodes();
	test_parse_errors();
	test_meet_rounds();
	if (pb_test_failures)
		fprintf(stderr, "%d check(s) failed\n", pb_test_failures);
	return pb_test_failures ? 1 : 0;
}
