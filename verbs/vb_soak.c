/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --soak in pairbench-verbs: a measuring bandwidth worker's recorder (core/pb_soak.h), its
 * series file per point and its analysis after the stream, and --validate-live of read_bw
 * and send_bw (vb_soak.h).  The stream itself (vb_bw.c) adds each poll's completions at the clock value
 * it reads there.
 */
#include "vb_soak.h"

#include "pb_clock.h"
#include "pb_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int vb_soak_create(struct vb_worker *w)
{
	const struct vb_params *p = w->p;

	/* send_bw: the server receives the data, so it checks it (vb_soak.h) */
	bool send_check = p->soak.validate_every && p->test_desc->op == VB_OP_SEND;
	bool rx = send_check && w->side == VB_SERVER;

	w->soak = NULL;
	if (!(p->soak.soak_s > 0) || p->test_desc->info.kind != PB_TK_BANDWIDTH ||
	    (!rx && (!w->measuring || w->side != VB_CLIENT)))
		return 0;
	w->soak = calloc(1, sizeof(*w->soak));
	if (!w->soak)
		return -ENOMEM;
	w->soak->rec.fd = -1;
	w->soak->check_every = send_check && !rx ? 0 : p->soak.validate_every;
	w->soak->rx_totals = send_check && !rx;
	w->soak->fault_s = -1;
	if (w->soak->check_every &&
	    pb_soak_fault(getenv("PAIRBENCH_SOAK_FAULT"), w->link, &w->soak->fault_s))
		pb_log_warn("PAIRBENCH_SOAK_FAULT=%s: expected flip:PAIR:SECONDS; ignored",
			    getenv("PAIRBENCH_SOAK_FAULT"));
	w->soak->pause_s = -1;
	{
		const char *v = getenv("PAIRBENCH_SOAK_PAUSE");
		unsigned pair;
		double at, len;
		int used = 0;

		if (v && *v && (sscanf(v, "%u:%lf:%lf%n", &pair, &at, &len, &used) != 3 || v[used] ||
				at < 0 || len <= 0))
			pb_log_warn("PAIRBENCH_SOAK_PAUSE=%s: expected PAIR:SECONDS:DURATION; ignored", v);
		else if (v && *v && pair == w->link) {
			w->soak->pause_s = at;
			w->soak->pause_for_s = len;
		}
	}
	return 0;
}

void vb_soak_destroy(struct vb_worker *w)
{
	if (!w->soak)
		return;
	pb_soak_close(&w->soak->rec);
	free(w->soak);
	w->soak = NULL;
}

int vb_soak_open(struct vb_worker *w, uint64_t size)
{
	const struct vb_params *p = w->p;
	const char *pattern = p->pattern ? p->pat_label : p->scan ? p->scan_label : NULL;
	const char *peer = p->scan ? p->peer_name : p->pattern ? p->pat[w->member].peer_name : w->peer;
	/* --pattern: the flow id (unique over the nodes: their files may share a folder) */
	struct pb_soak_header h = { .pair_id = w->link, .pairs = p->pattern ? p->pat_clients : p->pairs,
				    .msg_size_bytes = size, .bidir = p->bidir };
	char path[4096];

	if (!w->soak)
		return 0;
	pb_soak_close(&w->soak->rec);
	pb_soak_text(h.layer, sizeof(h.layer), "verbs");
	pb_soak_text(h.test, sizeof(h.test), p->test_desc->info.name);
	pb_soak_text(h.pattern, sizeof(h.pattern), pattern);
	pb_soak_text(h.host, sizeof(h.host), w->host);
	pb_soak_text(h.peer, sizeof(h.peer), peer);
	/* send_bw's server: the checks of the flow's data (PREFIX-...pbsoak-rx, as pairbench-mpi's) */
	const char *suffix = w->side == VB_SERVER ? PB_SOAK_RX_SUFFIX : "";

	if (p->soak.series && (pb_soak_path(p->soak.series, size, pattern, w->link, path, sizeof(path)) ||
			       strlen(path) + strlen(suffix) >= sizeof(path))) {
		snprintf(w->error, sizeof(w->error), "--series %s: the file name is too long", p->soak.series);
		return -ENAMETOOLONG;
	}
	if (p->soak.series)
		strcat(path, suffix);
	return pb_soak_open(&w->soak->rec, p->soak.series ? path : NULL, &p->soak, &h, w->error,
			    sizeof(w->error));
}

void vb_soak_begin(struct vb_worker *w, uint64_t start_ns)
{
	struct vb_soak *s = w->soak;

	pb_soak_start(&s->rec, start_ns);
	s->start_ns = start_ns;
	s->next_check = 0;
	s->checked = s->corrupt = s->first_corrupt_ns = 0;
	s->fault_ns = s->fault_s >= 0 ? start_ns + (uint64_t)(s->fault_s * 1e9) + 1 : 0;
	s->pause_at_ns = s->pause_s >= 0 ? start_ns + (uint64_t)(s->pause_s * 1e9) : UINT64_MAX;
}

void vb_soak_pause(struct vb_worker *w)
{
	struct vb_soak *s = w->soak;
	struct timespec ts = { .tv_sec = (time_t)s->pause_for_s,
			       .tv_nsec = (long)((s->pause_for_s - (double)(time_t)s->pause_for_s) * 1e9) };

	s->pause_at_ns = UINT64_MAX;
	pb_log_warn("pair %u: PAIRBENCH_SOAK_PAUSE: not polling for %g s", w->pair, s->pause_for_s);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void vb_soak_check_one(struct vb_worker *w, uint64_t msg, uint64_t now_ns)
{
	/* read_bw: the next read of the slot restores a byte the fault hook flipped */
	vb_soak_check_data(w->soak, (uint8_t *)w->slots.lbase + (msg % w->slots.n) * w->slots.stride,
			   w->size, w->link, msg % w->slots.n, now_ns);
}

void vb_soak_rx_begin(struct vb_worker *w, uint64_t start_ns)
{
	vb_soak_begin(w, start_ns);
	w->soak->seen = 0;
	w->soak->live = true;
}

void vb_soak_rx_end(struct vb_worker *w)
{
	struct vb_soak *s = w->soak;
	struct pb_soak_summary sum;
	char err[256];

	s->live = false;
	if (pb_soak_finish(&s->rec, pb_clock_now_ns(), false, &sum, err, sizeof(err)))
		pb_log_warn("pair %u: %s", w->pair, err);  /* the checks' series only: the client has the counts */
	if (s->corrupt)
		pb_log_error("pair %u: DATA CORRUPTED under load (--validate-live, send_bw's receiver): %llu of %llu checked messages wrong, the first %.3f s after the common start",
			     w->pair, (unsigned long long)s->corrupt, (unsigned long long)s->checked,
			     (double)s->first_corrupt_ns / 1e9);
}

void vb_soak_rx_totals(struct vb_worker *w, uint64_t checked_word, uint64_t faults_word)
{
	struct vb_soak *s = w->soak;

	s->checked = checked_word & ((1ull << VB_DONE_SHIFT) - 1);
	s->corrupt = faults_word >> 32;
	s->first_corrupt_ns = (faults_word & 0xffffffffu) * 1000000ull;
}

void vb_soak_abort(struct vb_worker *w, uint64_t end_ns)
{
	struct pb_soak_summary sum;
	char err[256];

	if (pb_soak_finish(&w->soak->rec, end_ns, true, &sum, err, sizeof(err)))
		pb_log_warn("pair %u: %s", w->pair, err);
}

void vb_soak_fill(struct vb_worker *w, uint64_t size, bool by_slot)
{
	for (uint32_t i = 0; i < w->slots.n; i++)
		pb_soak_pattern_fill(w->buf + (uint64_t)i * w->slots.stride, (size_t)size, w->link,
				     by_slot ? i : 0);
}

int vb_soak_finish(struct vb_worker *w, struct pb_timed *t, bool partial)
{
	struct vb_soak *s = w->soak;
	int rc = pb_soak_finish(&s->rec, t->end_ns, partial, &t->soak, t->error, sizeof(t->error));

	/* The stream's unit of counting: one signalled completion retires every qp_sig-th
	 * request of its QP (--cq-mod), the coarse-bucket flag's measure of a "window". */
	t->soak.window_msgs = w->qp_sig ? w->qp_sig : w->p->cq_mod;
	t->soak.checked = s->checked;
	t->soak.corrupt = s->corrupt;
	if (!rc && s->corrupt) {
		/* Said loudly: the pair's row is an error naming when (the series says which buckets). */
		snprintf(t->error, sizeof(t->error),
			 "DATA CORRUPTED under load (--validate-live): %llu of %llu checked messages wrong, the first %.3f s after the common start (bucket %llu)",
			 (unsigned long long)s->corrupt, (unsigned long long)s->checked,
			 (double)s->first_corrupt_ns / 1e9,
			 (unsigned long long)(s->first_corrupt_ns / s->rec.bucket_ns));
		pb_log_error("pair %u: %s", w->pair, t->error);
		rc = -EIO;
	}
	return rc;
}
