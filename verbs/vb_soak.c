/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --soak in pairbench-verbs: a measuring bandwidth worker's recorder (core/pb_soak.h), its
 * series file per point and its analysis after the stream.  The stream itself (vb_bw.c)
 * adds each poll's completions at the clock value it reads there.
 */
#include "vb_soak.h"

#include "pb_soak.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int vb_soak_create(struct vb_worker *w)
{
	const struct vb_params *p = w->p;

	w->soak = NULL;
	if (!(p->soak.soak_s > 0) || !w->measuring || w->side != VB_CLIENT ||
	    p->test_desc->info.kind != PB_TK_BANDWIDTH)
		return 0;
	w->soak = calloc(1, sizeof(*w->soak));
	if (!w->soak)
		return -ENOMEM;
	w->soak->fd = -1;
	return 0;
}

void vb_soak_destroy(struct vb_worker *w)
{
	if (!w->soak)
		return;
	pb_soak_close(w->soak);
	free(w->soak);
	w->soak = NULL;
}

int vb_soak_open(struct vb_worker *w, uint64_t size)
{
	const struct vb_params *p = w->p;
	const char *pattern = p->pattern ? p->pat_label : p->scan ? p->scan_label : NULL;
	const char *peer = p->scan ? p->peer_name : p->pattern ? p->pat[w->member].peer_name : w->peer;
	struct pb_soak_header h = { .pair_id = w->pair, .pairs = p->pattern ? p->pat_clients : p->pairs,
				    .msg_size_bytes = size, .bidir = p->bidir };
	char path[4096];

	if (!w->soak)
		return 0;
	pb_soak_close(w->soak);
	pb_soak_text(h.layer, sizeof(h.layer), "verbs");
	pb_soak_text(h.test, sizeof(h.test), p->test_desc->info.name);
	pb_soak_text(h.pattern, sizeof(h.pattern), pattern);
	pb_soak_text(h.host, sizeof(h.host), w->host);
	pb_soak_text(h.peer, sizeof(h.peer), peer);
	if (p->soak.series && pb_soak_path(p->soak.series, size, pattern, w->pair, path, sizeof(path))) {
		snprintf(w->error, sizeof(w->error), "--series %s: the file name is too long", p->soak.series);
		return -ENAMETOOLONG;
	}
	return pb_soak_open(w->soak, p->soak.series ? path : NULL, &p->soak, &h, w->error,
			    sizeof(w->error));
}

int vb_soak_finish(struct vb_worker *w, struct pb_timed *t, bool partial)
{
	int rc = pb_soak_finish(w->soak, t->end_ns, partial, &t->soak, t->error, sizeof(t->error));

	/* The stream's unit of counting: one signalled completion retires every qp_sig-th
	 * request of its QP (--cq-mod), the coarse-bucket flag's measure of a "window". */
	t->soak.window_msgs = w->qp_sig ? w->qp_sig : w->p->cq_mod;
	return rc;
}
