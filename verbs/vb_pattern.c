/* SPDX-License-Identifier: BSD-3-Clause */
/* --pattern: the flows of core/pb_pattern.c that touch one node (pure, see vb_pattern.h). */
#include "vb_pattern.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int vb_pattern_node(const struct pb_pattern *p, int nodes, int per_node, int node,
		    struct vb_pattern_worker *out, int max, int *flows, char *err, size_t len)
{
	/* every (node, slot) is in one flow at most: nodes x per_node / 2 flows at most */
	int room = nodes * per_node / 2 + 1, n, w = 0;
	struct pb_flow *map = calloc((size_t)room, sizeof(*map));

	if (!map) {
		snprintf(err, len, "out of memory for the pattern's flows");
		return -ENOMEM;
	}
	n = pb_pattern_flows(p, nodes, per_node, map, room, err, len);
	if (flows)
		*flows = n;
	/* slot order: the node's workers are its members 0..w-1 */
	for (int s = 0; n > 0 && s < per_node; s++) {
		for (int i = 0; i < n; i++) {
			const struct pb_flow *f = &map[i];
			bool a = f->a_node == node && f->a_slot == s, b = f->b_node == node && f->b_slot == s;

			if (!a && !b)
				continue;
			if (w == max) {
				snprintf(err, len, "--pattern %s: node %d has more than %d flows", p->name, node, max);
				free(map);
				return -E2BIG;
			}
			out[w++] = (struct vb_pattern_worker){
				.flow = i, .client = a, .slot = s,
				.peer_node = a ? f->b_node : f->a_node, .peer_slot = a ? f->b_slot : f->a_slot,
				.port_offset = f->b_slot,
			};
		}
	}
	free(map);
	return n < 0 ? n : w;
}
