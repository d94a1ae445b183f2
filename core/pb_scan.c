/* SPDX-License-Identifier: BSD-3-Clause */
/* The round-robin tournament of a fabric scan (pure functions, see pb_scan.h). */
#include "pb_scan.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long pb_num_parse(const char *s, const char **end)
{
	char *e;
	long v;

	if (*s < '0' || *s > '9')
		return -1;
	v = strtol(s, &e, 10);
	if (v > 1000000)
		return -1;
	*end = e;
	return v;
}

static int pb_scan_parse_skip(const char *q, struct pb_scan *s, char *err, size_t len)
{
	while (*q) {
		long v = pb_num_parse(q, &q);

		if (v < 0 || (*q && *q != ',') || (*q == ',' && !q[1]))
			return -EINVAL;
		if (s->n_skip == PB_SCAN_MAX_SKIP) {
			snprintf(err, len, "--pattern scan: more than %d skipped nodes",
				 PB_SCAN_MAX_SKIP);
			return -E2BIG;
		}
		for (int i = 0; i < s->n_skip; i++) {
			if (s->skip[i] == v) {
				snprintf(err, len, "--pattern scan: node %ld skipped twice", v);
				return -E2BIG;
			}
		}
		s->skip[s->n_skip++] = (int)v;
		q += *q == ',';
	}
	/* ascending: the job's nodes fill the other positions in order */
	for (int i = 1; i < s->n_skip; i++)
		for (int j = i; j > 0 && s->skip[j - 1] > s->skip[j]; j--) {
			int t = s->skip[j];

			s->skip[j] = s->skip[j - 1];
			s->skip[j - 1] = t;
		}
	return s->n_skip ? 0 : -EINVAL;
}

int pb_scan_parse(const char *rest, struct pb_scan *s, char *err, size_t len)
{
	const char *q = rest;
	int rc;

	memset(s, 0, sizeof(*s));
	s->first = 1;
	if (*q == ':') {
		long f = pb_num_parse(q + 1, &q), l = f;

		if (f >= 0 && *q == '-')
			l = pb_num_parse(q + 1, &q);
		if (f < 1 || l < f)
			goto bad;
		s->first = (int)f;
		s->last = (int)l;
	}
	if (!*q)
		return 0;
	if (strncmp(q, ",skip=", 6))
		goto bad;
	rc = pb_scan_parse_skip(q + 6, s, err, len);
	if (rc == -E2BIG)
		return -EINVAL;
	if (!rc)
		return 0;
bad:
	snprintf(err, len,
		 "--pattern scan%.200s: expected scan, scan:FIRST or scan:FIRST-LAST (rounds from 1, FIRST <= LAST), optionally ,skip=I[,J...]",
		 rest);
	return -EINVAL;
}

int pb_scan_total(int k)
{
	return k % 2 ? k : k - 1;
}

int pb_scan_rounds(struct pb_scan *s, int nodes, char *err, size_t len)
{
	int k = nodes + s->n_skip, total = pb_scan_total(k);

	if (nodes < 2) {
		snprintf(err, len, "--pattern scan needs ranks on at least 2 nodes; the job has %d",
			 nodes);
		return -EINVAL;
	}
	for (int i = 0; i < s->n_skip; i++) {
		if (s->skip[i] >= k) {
			snprintf(err, len,
				 "--pattern scan: skip=%d is not a node of the scan (%d job nodes + %d skipped = nodes 0..%d)",
				 s->skip[i], nodes, s->n_skip, k - 1);
			return -EINVAL;
		}
	}
	if (!s->last)
		s->last = total;
	if (s->last > total) {
		snprintf(err, len, "--pattern scan:%d-%d: the scan of %d nodes has rounds 1..%d",
			 s->first, s->last, k, total);
		return -EINVAL;
	}
	s->round = s->first;
	return s->last - s->first + 1;
}

static bool pb_scan_a_first(int a, int b, int k)
{
	int d = ((b - a) % k + k) % k;

	return 2 * d < k || (2 * d == k && a < b);
}

/* Job node at tournament position pos; -1 if pos is skipped or the odd-K placeholder. */
static int pb_scan_job_node(const struct pb_scan *s, int k, int pos)
{
	int below = 0;

	if (pos >= k)
		return -1;
	for (int i = 0; i < s->n_skip; i++) {
		if (s->skip[i] == pos)
			return -1;
		below += s->skip[i] < pos;
	}
	return pos - below;
}

int pb_scan_links(const struct pb_scan *s, int nodes, int (*ab)[2], int max)
{
	int k = nodes + s->n_skip, m = k + k % 2, r = s->round - 1, n = 0;

	/*
	 * Circle method: position 0 fixed, positions 1..m-1 rotated right by r;
	 * order[i] meets order[m-1-i].  Position k (odd k) is the bye.
	 */
	for (int i = 0; i < m / 2; i++) {
		int j = m - 1 - i;
		int x = i ? 1 + (((i - 1 - r) % (m - 1)) + (m - 1)) % (m - 1) : 0;
		int y = 1 + (((j - 1 - r) % (m - 1)) + (m - 1)) % (m - 1);
		int jx = pb_scan_job_node(s, k, x), jy = pb_scan_job_node(s, k, y);

		if (jx < 0 || jy < 0)
			continue;
		if (n < max) {
			bool xa = pb_scan_a_first(x, y, k);

			ab[n][0] = xa ? jx : jy;
			ab[n][1] = xa ? jy : jx;
		}
		n++;
	}
	return n;
}
