/* SPDX-License-Identifier: BSD-3-Clause */
/* --pattern: the flows of core/pb_pattern.c as world ranks (pure, see mp_pattern.h). */
#include "mp_pattern.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* World rank at (node, nr); -1 if none. */
static int mp_pattern_rank_of(const struct mp_pattern_rank *ranks, int size, int node, int nr)
{
	for (int r = 0; r < size; r++)
		if (ranks[r].node == node && ranks[r].node_rank == nr)
			return r;
	return -1;
}

int mp_pattern_assign(const struct pb_pattern *p, int nodes, int per_node, struct mp_pattern_rank *ranks,
		      int size, char *err, size_t len)
{
	int max = size / 2 + 1, n;
	struct pb_flow *map = calloc((size_t)max, sizeof(*map));

	if (!map) {
		snprintf(err, len, "out of memory for the pairing");
		return -ENOMEM;
	}
	for (int r = 0; r < size; r++) {
		ranks[r].side = MP_SIDE_NONE;
		ranks[r].peer = ranks[r].pair_id = -1;
	}
	n = pb_pattern_flows(p, nodes, per_node, map, max, err, len);
	for (int i = 0; i < n; i++) {
		int a = mp_pattern_rank_of(ranks, size, map[i].a_node, map[i].a_slot);
		int b = mp_pattern_rank_of(ranks, size, map[i].b_node, map[i].b_slot);

		if (a < 0 || b < 0) {
			snprintf(err, len, "--pattern %s: pair %d: no rank at node %d, node rank %d", p->name, i,
				 a < 0 ? map[i].a_node : map[i].b_node, a < 0 ? map[i].a_slot : map[i].b_slot);
			n = -EINVAL;
			break;
		}
		ranks[a] = (struct mp_pattern_rank){ ranks[a].node, ranks[a].node_rank, MP_SIDE_A, b, i };
		ranks[b] = (struct mp_pattern_rank){ ranks[b].node, ranks[b].node_rank, MP_SIDE_B, a, i };
	}
	free(map);
	return n;
}
