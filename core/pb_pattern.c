/* SPDX-License-Identifier: BSD-3-Clause */
/* Traffic patterns across nodes: parsing and the flows (pure functions, see pb_pattern.h). */
#include "pb_pattern.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int pb_pattern_parse_nodes(const char *s, struct pb_pattern *p, char *err, size_t len)
{
	const char *q = s;
	size_t off = (size_t)snprintf(p->name, sizeof(p->name), "nodes:");

	p->kind = PB_PAT_NODES;
	p->n_links = 0;
	while (*q) {
		long a, b;

		if (p->n_links == PB_PATTERN_MAX_LINKS) {
			snprintf(err, len, "--pattern nodes: more than %d node pairs",
				 PB_PATTERN_MAX_LINKS);
			return -EINVAL;
		}
		a = pb_num_parse(q, &q);
		if (a < 0 || *q != '-')
			goto bad;
		b = pb_num_parse(q + 1, &q);
		if (b < 0 || (*q && *q != ','))
			goto bad;
		if (a == b) {
			snprintf(err, len, "--pattern %s: node pair %ld-%ld pairs a node with itself",
				 s - 6, a, b);
			return -EINVAL;
		}
		for (int i = 0; i < p->n_links; i++) {
			for (int k = 0; k < 2; k++) {
				if (p->link[i][k] == a || p->link[i][k] == b) {
					snprintf(err, len,
						 "--pattern %s: node %d is in two node pairs (one pair per node in a round)",
						 s - 6, p->link[i][k]);
					return -EINVAL;
				}
			}
		}
		p->link[p->n_links][0] = (int)a;
		p->link[p->n_links][1] = (int)b;
		off += (size_t)snprintf(p->name + off, off < sizeof(p->name) ? sizeof(p->name) - off : 0,
					"%s%ld-%ld", p->n_links ? "," : "", a, b);
		p->n_links++;
		if (*q == ',')
			q++;
		if (!*q && q[-1] == ',')
			goto bad;
	}
	if (!p->n_links)
		goto bad;
	if (off >= sizeof(p->name)) {
		snprintf(err, len, "--pattern nodes:...: longer than %d characters", PB_PATTERN_NAME_MAX - 1);
		return -EINVAL;
	}
	return 0;
bad:
	snprintf(err, len, "--pattern %.200s: expected nodes:A-B[,C-D...] with node numbers from 0",
		 s - 6);
	return -EINVAL;
}

int pb_pattern_parse(const char *text, struct pb_pattern *p, char *err, size_t len)
{
	static const struct { const char *name; enum pb_pattern_kind kind; int arg; } simple[] = {
		{ "pairs", PB_PAT_PAIRS, -1 }, { "bisection", PB_PAT_BISECTION, -1 },
		{ "alltoall", PB_PAT_ALLTOALL, -1 }, { "incast", PB_PAT_INCAST, 0 },
		{ "fanout", PB_PAT_FANOUT, 0 },
	};
	const char *end;
	long v;

	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < sizeof(simple) / sizeof(simple[0]); i++) {
		if (!strcmp(text, simple[i].name)) {
			p->kind = simple[i].kind;
			p->arg = simple[i].arg;
			snprintf(p->name, sizeof(p->name), "%s", text);
			return 0;
		}
	}
	if (!strncmp(text, "shift:", 6) || !strncmp(text, "incast:", 7) ||
	    !strncmp(text, "fanout:", 7)) {
		const char *num = strchr(text, ':') + 1;

		v = pb_num_parse(num, &end);
		if (v < 0 || *end || (text[0] == 's' && v == 0)) {
			snprintf(err, len, "--pattern %.200s: expected %s", text,
				 text[0] == 's' ? "shift:S with an integer S >= 1" :
				 "incast:T / fanout:T with a node number T >= 0");
			return -EINVAL;
		}
		p->kind = text[0] == 's' ? PB_PAT_SHIFT : text[0] == 'i' ? PB_PAT_INCAST : PB_PAT_FANOUT;
		p->arg = (int)v;
		snprintf(p->name, sizeof(p->name), "%.*s:%ld", (int)(num - text - 1), text, v);
		return 0;
	}
	if (!strncmp(text, "nodes:", 6))
		return pb_pattern_parse_nodes(text + 6, p, err, len);
	if (!strncmp(text, "scan", 4) && (!text[4] || text[4] == ':' || text[4] == ',')) {
		p->kind = PB_PAT_SCAN;
		snprintf(p->name, sizeof(p->name), "scan:%d", 1);
		return pb_scan_parse(text + 4, &p->scan, err, len);
	}
	snprintf(err, len,
		 "unknown --pattern '%.200s' (pairs, shift:S, bisection, incast[:T], fanout[:T], alltoall, nodes:A-B,..., scan[:F-L])",
		 text);
	return -EINVAL;
}

struct pb_pattern_out {
	struct pb_flow *out;
	int n, max;
};

static void pb_pattern_add(struct pb_pattern_out *o, int an, int as, int bn, int bs)
{
	if (o->n < o->max)
		o->out[o->n] = (struct pb_flow){ an, as, bn, bs };
	o->n++;
}

/* Index of node b among the nodes other than a (0..K-2). */
static int pb_pattern_other(int a, int b)
{
	return b < a ? b : b - 1;
}

static bool pb_pattern_alltoall_dir(int a, int b, int k)
{
	int d = ((b - a) % k + k) % k;

	return 2 * d < k || (2 * d == k && a < b);
}

/* incast (into = true) or fanout around node t. */
static void pb_pattern_star(struct pb_pattern_out *o, int t, int k, int r, bool into)
{
	int m = r / (k - 1);

	for (int s = 0; s < k; s++) {
		if (s == t)
			continue;
		for (int j = 0; j < m; j++) {
			int ts = pb_pattern_other(t, s) * m + j;

			if (into)
				pb_pattern_add(o, s, j, t, ts);
			else
				pb_pattern_add(o, t, ts, s, j);
		}
	}
}

static int pb_pattern_check(const struct pb_pattern *p, int k, int r, char *err, size_t len)
{
	const char *per = p->slot_noun ? p->slot_noun : "ranks per node";

	if (k < 2) {
		snprintf(err, len, "--pattern %s needs ranks on at least 2 nodes; the job has %d",
			 p->name, k);
		return -EINVAL;
	}
	switch (p->kind) {
	case PB_PAT_PAIRS:
	case PB_PAT_BISECTION:
		if (k % 2) {
			snprintf(err, len,
				 "--pattern %s pairs nodes and needs an even number of nodes; the job has %d (use shift:S, or nodes:... with a bye)",
				 p->name, k);
			return -EINVAL;
		}
		return 0;
	case PB_PAT_SHIFT:
		if (p->arg >= k) {
			snprintf(err, len, "--pattern %s: S must be 1..%d on %d nodes", p->name, k - 1, k);
			return -EINVAL;
		}
		if (r % 2) {
			snprintf(err, len,
				 "--pattern %s: every node sends and receives, so it needs an even number of %s; the job has %d",
				 p->name, per, r);
			return -EINVAL;
		}
		return 0;
	case PB_PAT_INCAST:
	case PB_PAT_FANOUT:
		if (p->arg >= k) {
			snprintf(err, len, "--pattern %s: node %d does not exist (nodes 0..%d)", p->name,
				 p->arg, k - 1);
			return -EINVAL;
		}
		/* fall through */
	case PB_PAT_ALLTOALL:
		if (r < k - 1) {
			snprintf(err, len,
				 "--pattern %s over %d nodes needs at least %d %s (one per other node); the job has %d",
				 p->name, k, k - 1, per, r);
			return -EINVAL;
		}
		return 0;
	case PB_PAT_SCAN:
		return 0;
	case PB_PAT_NODES:
		for (int i = 0; i < p->n_links; i++) {
			if (p->link[i][0] >= k || p->link[i][1] >= k) {
				snprintf(err, len, "--pattern %.200s: node %d does not exist (nodes 0..%d)",
					 p->name, p->link[i][0] >= k ? p->link[i][0] : p->link[i][1], k - 1);
				return -EINVAL;
			}
		}
		return 0;
	}
	snprintf(err, len, "unknown pattern kind");
	return -EINVAL;
}

/* The pairs of a scan's current round: its node pairs, slot j -> slot j. */
static int pb_pattern_scan_pairs(const struct pb_pattern *p, int k, int r, struct pb_pattern_out *o,
				 char *err, size_t len)
{
	int (*ab)[2] = calloc((size_t)k / 2 + 1, sizeof(*ab));
	int n;

	if (!ab) {
		snprintf(err, len, "out of memory for the round's node pairs");
		return -ENOMEM;
	}
	n = pb_scan_links(&p->scan, k, ab, k / 2 + 1);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < r; j++)
			pb_pattern_add(o, ab[i][0], j, ab[i][1], j);
	free(ab);
	if (!n) {
		snprintf(err, len, "--pattern %s: no node pair left in this round (too many skipped)",
			 p->name);
		return -EINVAL;
	}
	return 0;
}

int pb_pattern_rounds(struct pb_pattern *p, int nodes, char *err, size_t len)
{
	int n = p->kind == PB_PAT_SCAN ? pb_scan_rounds(&p->scan, nodes, err, len) : 1;

	p->n_rounds = n > 0 ? n : 0;
	if (n > 0)
		pb_pattern_round(p, 0);
	return n;
}

void pb_pattern_round(struct pb_pattern *p, int i)
{
	if (p->kind != PB_PAT_SCAN)
		return;
	p->scan.round = p->scan.first + i;
	snprintf(p->name, sizeof(p->name), "scan:%d", p->scan.round);
}

int pb_pattern_flows(const struct pb_pattern *p, int k, int r, struct pb_flow *out, int max,
		     char *err, size_t len)
{
	struct pb_pattern_out o = { .out = out, .max = max };
	int rc = r < 1 ? -EINVAL : pb_pattern_check(p, k, r, err, len);

	if (r < 1)
		snprintf(err, len, "--pattern %s: no %s", p->name, p->slot_noun ? p->slot_noun : "ranks per node");
	if (rc)
		return rc;
	switch (p->kind) {
	case PB_PAT_PAIRS:
		for (int a = 0; a < k; a += 2)
			for (int j = 0; j < r; j++)
				pb_pattern_add(&o, a, j, a + 1, j);
		break;
	case PB_PAT_BISECTION:
		for (int a = 0; a < k / 2; a++)
			for (int j = 0; j < r; j++)
				pb_pattern_add(&o, a, j, a + k / 2, j);
		break;
	case PB_PAT_SHIFT:
		for (int a = 0; a < k; a++)
			for (int j = 0; j < r / 2; j++)
				pb_pattern_add(&o, a, j, (a + p->arg) % k, r / 2 + j);
		break;
	case PB_PAT_INCAST:
	case PB_PAT_FANOUT:
		pb_pattern_star(&o, p->arg, k, r, p->kind == PB_PAT_INCAST);
		break;
	case PB_PAT_ALLTOALL:
		for (int a = 0; a < k; a++)
			for (int b = 0; b < k; b++)
				if (a != b && pb_pattern_alltoall_dir(a, b, k))
					pb_pattern_add(&o, a, pb_pattern_other(a, b), b,
						       pb_pattern_other(b, a));
		break;
	case PB_PAT_NODES:
		for (int i = 0; i < p->n_links; i++)
			for (int j = 0; j < r; j++)
				pb_pattern_add(&o, p->link[i][0], j, p->link[i][1], j);
		break;
	case PB_PAT_SCAN:
		rc = pb_pattern_scan_pairs(p, k, r, &o, err, len);
		if (rc)
			return rc;
		break;
	}
	if (o.n > max) {
		snprintf(err, len, "--pattern %s: %d flows, room for %d", p->name, o.n, max);
		return -E2BIG;
	}
	return o.n;
}

/* Breadth-first distances from node src over the flows' undirected edges (adjacency as CSR). */
static int pb_pattern_ecc(const int *start, const int *adj, int nodes, int src, int *dist, int *queue,
			  int *reached)
{
	int head = 0, tail = 0, far = 0;

	for (int i = 0; i < nodes; i++)
		dist[i] = -1;
	dist[src] = 0;
	queue[tail++] = src;
	while (head < tail) {
		int u = queue[head++];

		for (int e = start[u]; e < start[u + 1]; e++) {
			int v = adj[e];

			if (dist[v] >= 0)
				continue;
			dist[v] = dist[u] + 1;
			far = dist[v] > far ? dist[v] : far;
			queue[tail++] = v;
		}
	}
	*reached = tail;
	return far;
}

int pb_pattern_meet_rounds(const struct pb_flow *flows, int n, int nodes, bool *connected)
{
	int *start = calloc((size_t)nodes + 1, sizeof(int)), *adj = calloc(2 * (size_t)n + 1, sizeof(int));
	int *fill = calloc((size_t)nodes + 1, sizeof(int)), *dist = calloc((size_t)nodes + 1, sizeof(int));
	int *queue = calloc((size_t)nodes + 1, sizeof(int));
	int d = 0, active = 0, first = -1;

	*connected = true;
	if (!start || !adj || !fill || !dist || !queue || n <= 0) {
		d = n <= 0 ? 0 : -ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		start[flows[i].a_node + 1]++;
		start[flows[i].b_node + 1]++;
	}
	for (int i = 0; i < nodes; i++) {
		active += start[i + 1] > 0;
		if (first < 0 && start[i + 1] > 0)
			first = i;
		start[i + 1] += start[i];
	}
	for (int i = 0; i < n; i++) {
		adj[start[flows[i].a_node] + fill[flows[i].a_node]++] = flows[i].b_node;
		adj[start[flows[i].b_node] + fill[flows[i].b_node]++] = flows[i].a_node;
	}
	for (int u = 0; u < nodes; u++) {
		int reached, e;

		if (start[u + 1] == start[u])
			continue;
		e = pb_pattern_ecc(start, adj, nodes, u, dist, queue, &reached);
		d = e > d ? e : d;
		if (u == first && reached < active)
			*connected = false;
	}
out:
	free(start);
	free(adj);
	free(fill);
	free(dist);
	free(queue);
	return d;
}
