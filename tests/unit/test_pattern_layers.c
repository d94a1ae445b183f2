/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One definition of who talks to whom, two users: for every pattern, K = 2..9
 * nodes and R = 1..8 ranks (slots) per node, the MPI layer's rank assignment
 * (mpi/mp_pattern.c: world ranks -> side, peer, pair id) and the verbs
 * layer's per-node workers (verbs/vb_pattern.c: node -> flows, side, peer,
 * port) must give the same (flow -> A node/slot, B node/slot) map, which is
 * core/pb_pattern.c's; both accept and refuse the same jobs.  Each layer's
 * map is rebuilt only from what that layer hands its processes.
 */
#include "pb_test.h"

#include "mp_pattern.h"
#include "vb_pattern.h"

#include <errno.h>
#include <stdbool.h>

#define KMAX 9
#define RMAX 8
#define FMAX (KMAX * RMAX)

/* flow -> ends, as a layer sees it; seen[f] counts the ends reported. */
struct layer_map {
	int n;
	struct pb_flow f[FMAX];
	int seen[FMAX];
};

/* MPI: ranks laid out cyclically (rank r on node r % K): the assignment must not depend on
 * world ranks following nodes. */
static int mpi_map(const struct pb_pattern *p, int k, int r, struct layer_map *m, char *err, size_t len)
{
	struct mp_pattern_rank ranks[KMAX * RMAX];
	int size = k * r, n;

	memset(m, 0, sizeof(*m));
	for (int i = 0; i < size; i++)
		ranks[i] = (struct mp_pattern_rank){ .node = i % k, .node_rank = i / k };
	n = mp_pattern_assign(p, k, r, ranks, size, err, len);
	if (n < 0)
		return n;
	m->n = n;
	for (int i = 0; i < size; i++) {
		const struct mp_pattern_rank *x = &ranks[i];

		if (x->side == MP_SIDE_NONE) {
			CHECK(x->peer == -1 && x->pair_id == -1);
			continue;
		}
		CHECK(x->pair_id >= 0 && x->pair_id < n && x->peer >= 0 && x->peer < size);
		if (x->pair_id < 0 || x->pair_id >= n || x->peer < 0 || x->peer >= size)
			continue;
		/* the peer says the same pair, the other side, and points back */
		CHECK(ranks[x->peer].pair_id == x->pair_id && ranks[x->peer].peer == i);
		CHECK(ranks[x->peer].side == (x->side == MP_SIDE_A ? MP_SIDE_B : MP_SIDE_A));
		if (x->side == MP_SIDE_A) {
			m->f[x->pair_id].a_node = x->node;
			m->f[x->pair_id].a_slot = x->node_rank;
		} else {
			m->f[x->pair_id].b_node = x->node;
			m->f[x->pair_id].b_slot = x->node_rank;
		}
		m->seen[x->pair_id]++;
	}
	return n;
}

/* verbs: every node's workers, as each node's launch computes them. */
static int verbs_map(const struct pb_pattern *p, int k, int r, struct layer_map *m, char *err, size_t len)
{
	struct vb_pattern_worker w[RMAX + 1];
	int port_of[FMAX][2];

	memset(m, 0, sizeof(*m));
	for (int node = 0; node < k; node++) {
		int flows = -1, n = vb_pattern_node(p, k, r, node, w, RMAX + 1, &flows, err, len);
		bool port_used[RMAX] = { false };

		if (n < 0)
			return n;
		CHECK(n <= r);
		m->n = flows;
		for (int i = 0; i < n; i++) {
			int f = w[i].flow, side = w[i].client ? 0 : 1;

			CHECK(f >= 0 && f < flows && w[i].slot >= 0 && w[i].slot < r);
			CHECK(i == 0 || w[i].slot > w[i - 1].slot);  /* slot order, one flow per slot */
			if (f < 0 || f >= flows)
				continue;
			if (w[i].client) {
				m->f[f].a_node = node;
				m->f[f].a_slot = w[i].slot;
				m->f[f].b_node = w[i].peer_node;
				m->f[f].b_slot = w[i].peer_slot;
			} else {
				/* a server's listening ports are distinct on its node */
				CHECK(w[i].port_offset >= 0 && w[i].port_offset < r && !port_used[w[i].port_offset]);
				if (w[i].port_offset >= 0 && w[i].port_offset < r)
					port_used[w[i].port_offset] = true;
			}
			port_of[f][side] = w[i].port_offset;
			m->seen[f] += w[i].client ? 1 : 10;
		}
	}
	/* each flow: one client, one server, meeting on one port */
	for (int f = 0; f < m->n && f < FMAX; f++) {
		CHECK_EQ_INT(m->seen[f], 11);
		if (m->seen[f] == 11)
			CHECK_EQ_INT(port_of[f][0], port_of[f][1]);
		m->seen[f] = m->seen[f] == 11 ? 2 : -1;
	}
	return m->n;
}

static long cases, refused;

static void compare(const char *text, const struct pb_pattern *p, int k, int r)
{
	static struct pb_flow ref[FMAX];
	static struct layer_map mm, vm;
	char e0[512] = "", e1[512] = "", e2[512] = "";
	int n0 = pb_pattern_flows(p, k, r, ref, FMAX, e0, sizeof(e0));
	int n1 = mpi_map(p, k, r, &mm, e1, sizeof(e1));
	int n2 = verbs_map(p, k, r, &vm, e2, sizeof(e2));

	cases++;
	if (n0 != n1 || n0 != n2)
		fprintf(stderr, "%s K=%d R=%d: core %d flows, mpi %d, verbs %d (%s | %s | %s)\n", text, k, r,
			n0, n1, n2, e0, e1, e2);
	CHECK(n0 == n1 && n0 == n2);
	if (n0 < 0) {
		refused++;
		/* refused alike, with the same message */
		CHECK_STR(e0, e1);
		CHECK_STR(e0, e2);
		return;
	}
	if (n0 != n1 || n0 != n2)
		return;
	for (int i = 0; i < n0; i++) {
		const struct pb_flow *c = &ref[i], *a = &mm.f[i], *b = &vm.f[i];
		bool same = !memcmp(c, a, sizeof(*c)) && !memcmp(c, b, sizeof(*c));

		if (!same || mm.seen[i] != 2 || vm.seen[i] != 2)
			fprintf(stderr,
				"%s K=%d R=%d flow %d: core (%d,%d)->(%d,%d), mpi (%d,%d)->(%d,%d) [%d ends], verbs (%d,%d)->(%d,%d) [%d]\n",
				text, k, r, i, c->a_node, c->a_slot, c->b_node, c->b_slot, a->a_node, a->a_slot,
				a->b_node, a->b_slot, mm.seen[i], b->a_node, b->a_slot, b->b_node, b->b_slot,
				vm.seen[i]);
		CHECK(same);
		CHECK_EQ_INT(mm.seen[i], 2);
		CHECK_EQ_INT(vm.seen[i], 2);
	}
}

int main(void)
{
	static const char *const patterns[] = {
		"pairs", "shift:1", "shift:2", "shift:3", "shift:8", "bisection", "incast", "incast:1",
		"incast:3", "fanout", "fanout:2", "alltoall", "nodes:0-1", "nodes:1-0,2-3", "nodes:3-1",
		"scan", "scan,skip=1", "scan:2-3,skip=0,4",
	};
	char err[512];

	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		for (int k = 2; k <= KMAX; k++) {
			for (int r = 1; r <= RMAX; r++) {
				struct pb_pattern p;
				int rounds;

				CHECK_EQ_INT(pb_pattern_parse(patterns[i], &p, err, sizeof(err)), 0);
				rounds = pb_pattern_rounds(&p, k, err, sizeof(err));
				if (rounds < 0) {
					cases++;
					refused++;
					continue;
				}
				for (int j = 0; j < rounds; j++) {
					pb_pattern_round(&p, j);
					compare(patterns[i], &p, k, r);
				}
			}
		}
	}
	/* the test is only worth something if most cases run */
	fprintf(stderr, "%ld cases, %ld refused alike\n", cases, refused);
	CHECK(cases - refused > 1000);
	if (pb_test_failures)
		fprintf(stderr, "%d check(s) failed\n", pb_test_failures);
	return pb_test_failures ? 1 : 0;
}
