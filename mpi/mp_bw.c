/* SPDX-License-Identifier: BSD-3-Clause */
/* bw / bibw / msgrate: one timed block = side A streams n messages of size bytes to B in windows
 * of --window MPI_Isend (bibw: B streams back at once; msgrate: B acks every window), then waits for B's final ack.
 * --buffers fresh: a receive slot per outstanding message; peer: one receive buffer for the window.
 * B acks a window as soon as it completed, then posts the next window's receives (posting them
 * before the ack put 64 MPI_Irecv between a window's end and its ack: 0.73-0.76 of osu_mbw_mr at
 * 8 B instead of 1.0; results/manycore-loop-2026-11-28). */
#include "mp.h"

#include "pb_clock.h"
#include "pb_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Receive slots: distinct per message up to this many bytes in total, then reused. */
#define MP_RBUF_MAX_BYTES (64ull << 20)

enum { MP_BW_UNI, MP_BW_BIDIR, MP_BW_MSGRATE };

struct mp_bw {
	struct mp_ctx *ctx;
	int sub;
	struct mp_stream s;
	uint64_t cap;
	uint64_t slots;
	uint64_t never;             /* stop word that never reaches its value */
	const char *test;           /* the test's name (soak series header) */
	uint64_t ccap;              /* --validate-live: bytes of s.cbuf */
	double fault_s;             /* B: PAIRBENCH_SOAK_FAULT's time for this pair; < 0 none */
	char err[256];              /* the last failure's text (ops.error) */
};

int mp_stream_init(struct mp_stream *s, struct mp_ctx *ctx, int window, bool bidir, bool ack_each)
{
	memset(s, 0, sizeof(*s));
	s->ctx = ctx;
	s->window = window;
	s->bidir = bidir;
	s->ack_each = ack_each;
	s->req = calloc(2 * (size_t)window, sizeof(*s->req));
	s->st = calloc(2 * (size_t)window, sizeof(*s->st));
	s->stop_value = UINT64_MAX;
	return s->req && s->st ? 0 : -ENOMEM;
}

void mp_stream_cleanup(struct mp_stream *s)
{
	free(s->req);
	free(s->st);
	free(s->sbuf);
	free(s->rbuf);
	memset(s, 0, sizeof(*s));
}

/* Post n receives into the window's slots: distinct while the window fits MP_RBUF_MAX_BYTES, then
 * reused in turn (no division per message: the slot advances and wraps). Returns n. */
static inline int mp_post_recvs(const struct mp_stream *s, uint64_t slots, int n, MPI_Request *req)
{
	char *const base = s->rbuf, *const end = base + slots * (uint64_t)s->count;
	const uint64_t stride = slots > 1 ? (uint64_t)s->count : 0;
	char *slot = base;

	for (int j = 0; j < n; j++) {
		MPI_Irecv(slot, s->count, MPI_BYTE, s->ctx->peer, MPI_ANY_TAG, MPI_COMM_WORLD, &req[j]);
		slot += stride;
		if (slot == end)
			slot = base;
	}
	return n;
}

static uint64_t mp_stream_slots(const struct mp_stream *s)
{
	uint64_t per = s->count ? (uint64_t)s->count : 1, n = MP_RBUF_MAX_BYTES / per;

	if (s->one_rbuf)
		return 1;
	if (n < 1)
		n = 1;
	return n < (uint64_t)s->window ? n : (uint64_t)s->window;
}

/*
 * The stream of side A.  soak (a constant at each call site, so the compiler makes two loops):
 * every window's messages are counted in the bucket of the clock read that follows the
 * window's completion (the read that decides whether the next window is the last: no read of
 * its own), the last window's at the end; see core/pb_soak.h.
 */
static inline __attribute__((always_inline)) int mp_stream_a_loop(struct mp_stream *s, uint64_t messages,
								  uint64_t end_by_ns, struct pb_timed *t,
								  const bool soak)
{
	const int peer = s->ctx->peer, count = s->count, W = s->window;
	const uint64_t slots = mp_stream_slots(s), per = s->bidir ? 2 : 1;
	uint64_t remaining = messages, sent = 0, pending = 0, window = 0, until = 0;
	bool last;

	t->start_ns = pb_clock_now_ns();
	do {
		int n = remaining < (uint64_t)W ? (int)remaining : W, k = 0;
		const uint64_t now = pb_clock_now_ns();

		if (soak) {
			pb_soak_add(s->soak, now, pending);
			pending = (uint64_t)n * per;
		}
		last = remaining == (uint64_t)n || now >= end_by_ns || *s->stop_word >= s->stop_value;
		if (soak && last && now < end_by_ns && remaining != (uint64_t)n)
			s->stopped_early = true;
		if (s->bidir)
			k = mp_post_recvs(s, slots, n, s->req);
		int j = 0;

		if (soak && s->check_every && until-- == 0) {
			/* --validate-live: this window's first message carries the pattern */
			pb_soak_pattern_fill(s->cbuf, (size_t)count, s->pair, window);
			MPI_Isend(s->cbuf, count, MPI_BYTE, peer, last ? MP_TAG_STOP : MP_TAG_DATA,
				  MPI_COMM_WORLD, &s->req[k++]);
			j = 1;
			until = s->check_every - 1;
		}
		for (; j < n; j++)
			MPI_Isend(s->sbuf, count, MPI_BYTE, peer, last ? MP_TAG_STOP : MP_TAG_DATA,
				  MPI_COMM_WORLD, &s->req[k++]);
		MPI_Waitall(k, s->req, s->st);
		if (s->ack_each)
			MPI_Recv(NULL, 0, MPI_BYTE, peer, MP_TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		remaining -= (uint64_t)n;
		sent += (uint64_t)n;
		window++;
	} while (!last);
	if (!s->ack_each)
		MPI_Recv(NULL, 0, MPI_BYTE, peer, MP_TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	t->end_ns = pb_clock_now_ns();
	if (soak)
		pb_soak_add(s->soak, t->end_ns, pending);
	if (soak && s->check_every) {
		/* B's checks, after the window (untimed) */
		uint64_t tot[3];

		MPI_Recv(tot, 3, MPI_UINT64_T, peer, MP_TAG_SYNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		s->checked = tot[0];
		s->corrupt = tot[1];
		s->first_corrupt_ns = tot[2];
	}
	/* Bidirectional: iterations, messages and bytes all count both directions (as verbs --bidir). */
	t->messages = sent * per;
	t->done = t->messages;
	t->bytes = t->messages * (uint64_t)count;
	t->has_bw = true;
	return 0;
}

int mp_stream_a(struct mp_stream *s, uint64_t messages, uint64_t end_by_ns, struct pb_timed *t)
{
	return mp_stream_a_loop(s, messages, end_by_ns, t, false);
}

/* A soak's timed block (s->soak open and started): the stream, its buckets, their analysis. */
static int mp_stream_a_soak(struct mp_stream *s, uint64_t end_by_ns, double soak_s, struct pb_timed *t)
{
	int rc;

	s->stopped_early = false;
	/* Bucket 0 begins at the node's common start: the engine's deadline minus the window. */
	pb_soak_start(s->soak, end_by_ns - (uint64_t)(soak_s * 1e9));
	rc = mp_stream_a_loop(s, UINT64_MAX, end_by_ns, t, true);
	if (!rc)
		rc = pb_soak_finish(s->soak, t->end_ns, s->stopped_early, &t->soak, t->error,
				    sizeof(t->error));
	t->soak.checked = s->checked;
	t->soak.corrupt = s->corrupt;
	t->soak.window_msgs = (uint64_t)s->window * (s->bidir ? 2 : 1);
	if (!rc && s->corrupt) {
		/* Said loudly: the pair's row is an error naming when (the series says which buckets). */
		snprintf(t->error, sizeof(t->error),
			 "DATA CORRUPTED under load (--validate-live): %llu of %llu checked messages wrong, the first %.3f s after the common start (bucket %llu; per bucket in the series' -rx file)",
			 (unsigned long long)s->corrupt, (unsigned long long)s->checked,
			 (double)s->first_corrupt_ns / 1e9,
			 (unsigned long long)(s->first_corrupt_ns / s->soak->bucket_ns));
		rc = -EIO;
	}
	return rc;
}

/* One checked message of window `window` (B, --validate-live), completed at now. */
static void mp_stream_check(struct mp_stream *s, uint64_t window, uint64_t start_ns)
{
	const uint64_t now = pb_clock_now_ns();
	size_t bad;

	if (s->fault_ns && now >= s->fault_ns) {
		((unsigned char *)s->rbuf)[s->count / 2] ^= 0x5a; /* the fault hook (pb_soak_fault) */
		s->fault_ns = 0;
	}
	bad = pb_soak_pattern_check(s->rbuf, (size_t)s->count, s->pair, window);
	s->checked++;
	if (bad && !s->corrupt++)
		s->first_corrupt_ns = now - start_ns;
	pb_soak_check_add(s->rx, now, 1, bad ? 1 : 0);
}

/*
 * The stream of side B; check (a constant at each call site): --validate-live, the first
 * message of every check_every-th window is checked once it completed and acknowledged.
 */
static inline __attribute__((always_inline)) int mp_stream_b_loop(struct mp_stream *s, uint64_t messages,
								  uint64_t *done, uint64_t start_ns,
								  const bool check)
{
	const int peer = s->ctx->peer, count = s->count, W = s->window;
	const uint64_t slots = mp_stream_slots(s);
	uint64_t remaining = messages, got = 0, window = 0, until = 0;
	bool last;

	do {
		int n = remaining < (uint64_t)W ? (int)remaining : W;
		int k = mp_post_recvs(s, slots, n, s->req);

		for (int j = 0; s->bidir && j < n; j++)
			MPI_Isend(s->sbuf, count, MPI_BYTE, peer, MP_TAG_DATA, MPI_COMM_WORLD,
				  &s->req[k++]);
		MPI_Waitall(k, s->req, s->st);
		if (s->ack_each)
			MPI_Send(NULL, 0, MPI_BYTE, peer, MP_TAG_ACK, MPI_COMM_WORLD);
		last = s->st[0].MPI_TAG == MP_TAG_STOP;
		if (check && until-- == 0) {
			mp_stream_check(s, window, start_ns);
			until = s->check_every - 1;
		}
		remaining -= (uint64_t)n;
		got += (uint64_t)n;
		window++;
	} while (!last);
	if (!s->ack_each)
		MPI_Send(NULL, 0, MPI_BYTE, peer, MP_TAG_ACK, MPI_COMM_WORLD);
	*done = got;
	return 0;
}

int mp_stream_b(struct mp_stream *s, uint64_t messages, uint64_t *done)
{
	return mp_stream_b_loop(s, messages, done, 0, false);
}

/* B of a soak with --validate-live: the checked stream, then its totals to A. */
static int mp_stream_b_checked(struct mp_stream *s, uint64_t end_by_ns, double soak_s, double fault_s,
			       uint64_t *done)
{
	const uint64_t start = end_by_ns - (uint64_t)(soak_s * 1e9);
	struct pb_soak_summary sum;
	char err[256];
	uint64_t tot[3];
	int rc;

	s->checked = s->corrupt = s->first_corrupt_ns = 0;
	s->fault_ns = fault_s >= 0 ? start + (uint64_t)(fault_s * 1e9) + 1 : 0;
	pb_soak_start(s->rx, start);
	rc = mp_stream_b_loop(s, UINT64_MAX, done, start, true);
	tot[0] = s->checked;
	tot[1] = s->corrupt;
	tot[2] = s->first_corrupt_ns;
	MPI_Send(tot, 3, MPI_UINT64_T, s->ctx->peer, MP_TAG_SYNC, MPI_COMM_WORLD);
	if (!rc && pb_soak_finish(s->rx, pb_clock_now_ns(), false, &sum, err, sizeof(err)))
		pb_log_warn("pair %u: %s", s->pair, err); /* the checks' series only; A has the counts */
	if (s->corrupt)
		pb_log_error("pair %u: DATA CORRUPTED under load: %llu of %llu checked messages wrong, the first %.3f s after the common start",
			     s->pair, (unsigned long long)s->corrupt, (unsigned long long)s->checked,
			     (double)s->first_corrupt_ns / 1e9);
	return rc;
}

static void mp_bw_destroy(void *tctx);

/* A soak: this point's series file (its --series name, or a temporary file), before the start. */
static int mp_bw_soak_open(struct mp_bw *b, struct pb_soak_rec *rec, const char *suffix, uint64_t size)
{
	const struct mp_ctx *ctx = b->ctx;
	const struct pb_soak_params *sp = &ctx->p->soak;
	const char *pattern = ctx->pattern ? ctx->pattern->name : NULL;
	struct pb_soak_header h = { .pair_id = ctx->pair_id, .pairs = ctx->pairs, .msg_size_bytes = size,
				    .bidir = b->s.bidir };
	char path[4096];
	int rc;

	pb_soak_close(rec);
	pb_soak_text(h.layer, sizeof(h.layer), "mpi");
	pb_soak_text(h.test, sizeof(h.test), b->test);
	pb_soak_text(h.pattern, sizeof(h.pattern), pattern);
	pb_soak_text(h.host, sizeof(h.host), ctx->host);
	pb_soak_text(h.peer, sizeof(h.peer), ctx->peer_label);
	if (sp->series && (pb_soak_path(sp->series, size, pattern, ctx->pair_id, path, sizeof(path)) ||
			   strlen(path) + strlen(suffix) >= sizeof(path))) {
		snprintf(b->err, sizeof(b->err), "--series %s: the file name is too long", sp->series);
		return -ENAMETOOLONG;
	}
	if (sp->series)
		strcat(path, suffix);
	rc = pb_soak_open(rec, sp->series ? path : NULL, sp, &h, b->err, sizeof(b->err));
	return rc;
}

static int mp_bw_prepare(void *tctx, uint64_t size)
{
	struct mp_bw *b = tctx;
	int count;

	if (mp_count(size, &count))
		return -E2BIG;
	b->s.count = count;
	if (size > b->cap) {
		free(b->s.sbuf);
		free(b->s.rbuf);
		b->s.sbuf = mp_buf_alloc(size);
		b->s.rbuf = mp_buf_alloc(size * mp_stream_slots(&b->s));
		b->cap = b->s.sbuf && b->s.rbuf ? size : 0;
		if (!b->cap)
			return -ENOMEM;
	}
	if (b->s.check_every && b->s.soak && size > b->ccap) {
		free(b->s.cbuf); /* A: the checked message's own buffer (--validate-live) */
		b->s.cbuf = mp_buf_alloc(size);
		b->ccap = b->s.cbuf ? size : 0;
		if (!b->ccap)
			return -ENOMEM;
	}
	if (b->s.rx)
		return mp_bw_soak_open(b, b->s.rx, PB_SOAK_RX_SUFFIX, size);
	return b->s.soak ? mp_bw_soak_open(b, b->s.soak, "", size) : 0;
}

static int mp_bw_warmup(void *tctx, uint64_t size, uint64_t iters)
{
	struct mp_bw *b = tctx;
	struct pb_timed t = { .msg_size_bytes = size };
	uint64_t done;

	if (!iters)
		return 0;
	if (b->ctx->side == MP_SIDE_A)
		return mp_stream_a(&b->s, iters, UINT64_MAX, &t);
	return mp_stream_b(&b->s, iters, &done);
}

static int mp_bw_timed(void *tctx, struct pb_timed *t)
{
	struct mp_bw *b = tctx;
	uint64_t messages = t->end_by_ns ? UINT64_MAX : t->iterations;

	if (b->ctx->side == MP_SIDE_A && b->s.soak)
		return mp_stream_a_soak(&b->s, t->end_by_ns, b->ctx->p->soak.soak_s, t);
	if (b->ctx->side == MP_SIDE_B && b->s.rx)
		return mp_stream_b_checked(&b->s, t->end_by_ns, b->ctx->p->soak.soak_s, b->fault_s,
					   &t->done);
	if (b->ctx->side == MP_SIDE_A)
		return mp_stream_a(&b->s, messages, t->end_by_ns ? t->end_by_ns : UINT64_MAX, t);
	return mp_stream_b(&b->s, messages, &t->done);
}

static int mp_bw_create(struct mp_ctx *ctx, const struct mp_test *t, void **out)
{
	struct mp_bw *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->ctx = ctx;
	b->sub = t->sub;
	if (mp_stream_init(&b->s, ctx, (int)ctx->p->window, t->sub == MP_BW_BIDIR,
			   t->sub == MP_BW_MSGRATE || (t->ack_choice && ctx->p->ack_each_window))) {
		mp_stream_cleanup(&b->s);
		free(b);
		return -ENOMEM;
	}
	b->s.stop_word = &b->never;
	b->s.one_rbuf = ctx->p->buffers == PB_BUF_PEER;
	b->test = t->info.name;
	if (ctx->p->soak.soak_s > 0 && ctx->side == MP_SIDE_A) {
		/* The measuring side counts the buckets; SIGUSR1 ends the soak early (pb_soak.h). */
		b->s.soak = calloc(1, sizeof(*b->s.soak));
		if (!b->s.soak) {
			mp_bw_destroy(b);
			return -ENOMEM;
		}
		b->s.soak->fd = -1;
		b->s.stop_word = pb_soak_stop_word();
		b->s.stop_value = 1;
	}
	b->s.pair = ctx->pair_id;
	b->s.check_every = ctx->p->soak.soak_s > 0 ? ctx->p->soak.validate_every : 0;
	if (b->s.check_every && ctx->side == MP_SIDE_B) {
		/* The receiver checks (--validate-live); the fault hook may flip a byte. */
		if (pb_soak_fault(getenv("PAIRBENCH_SOAK_FAULT"), ctx->pair_id, &b->fault_s))
			pb_log_warn("PAIRBENCH_SOAK_FAULT=%s: expected flip:PAIR:SECONDS; ignored",
				    getenv("PAIRBENCH_SOAK_FAULT"));
		b->s.rx = calloc(1, sizeof(*b->s.rx));
		if (!b->s.rx) {
			mp_bw_destroy(b);
			return -ENOMEM;
		}
		b->s.rx->fd = -1;
	}
	*out = b;
	return 0;
}

static void mp_bw_destroy(void *tctx)
{
	struct mp_bw *b = tctx;

	if (b->s.soak) {
		pb_soak_close(b->s.soak);
		free(b->s.soak);
		b->s.soak = NULL;
	}
	if (b->s.rx) {
		pb_soak_close(b->s.rx);
		free(b->s.rx);
		b->s.rx = NULL;
	}
	free(b->s.cbuf);
	b->s.cbuf = NULL;
	mp_stream_cleanup(&b->s);
	free(b);
}

static const char *mp_bw_error(void *tctx)
{
	const struct mp_bw *b = tctx;

	return b->err;
}

static const struct pb_test_ops mp_bw_ops = {
	.error = mp_bw_error,
	.prepare = mp_bw_prepare,
	.warmup = mp_bw_warmup,
	.timed = mp_bw_timed,
};

#define MP_BW(nm, which, lbl, k, metric, acks, what)                                             \
	{ .info = { .name = nm, .label = lbl, .summary = what, .kind = k, MP_HIGHER(metric),      \
		    .payload = true, .window = true, .buffers = true, .min_pairs = 1 },          \
	  .kind = MP_KIND_PAIR, .create = mp_bw_create, .destroy = mp_bw_destroy,              \
	  .ops = &mp_bw_ops, .sub = which, .ack_choice = acks, .pattern_ok = true }

const struct mp_test mp_tests_bw[] = {
	MP_BW("bw", MP_BW_UNI, "MPI bandwidth", PB_TK_BANDWIDTH, "bw_gbit_s", true,
	      "multi-pair streaming bandwidth (windows of MPI_Isend, one final ack), aggregate over the global window"),
	MP_BW("bibw", MP_BW_BIDIR, "MPI bidirectional bandwidth", PB_TK_BANDWIDTH, "bw_gbit_s", true,
	      "multi-pair bidirectional bandwidth (both sides stream at once); iterations, bytes and messages of both directions"),
	MP_BW("msgrate", MP_BW_MSGRATE, "MPI message rate", PB_TK_MESSAGE_RATE, "msg_rate_per_s", false,
	      "multi-pair message rate: windows of MPI_Isend, receiver acks every window (osu_mbw_mr method, correct aggregate)"),
	MP_TESTS_END,
};
