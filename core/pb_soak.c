/* SPDX-License-Identifier: BSD-3-Clause */
/* Soak buckets: the recorder, its series file and the stall analysis (pb_soak.h). */
#define _GNU_SOURCE
#include "pb_soak.h"

#include "pb_stats.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int pb_soak_check(const struct pb_soak_params *p, char *err, size_t errlen)
{
	double n;

	if (!(p->soak_s > 0))
		return 0;
	n = p->soak_s / p->bucket_s;
	if (fabs(n - round(n)) > 1e-6 * n) {
		snprintf(err, errlen,
			 "--soak %g is not a whole number of --bucket %g buckets (%.3f): choose a soak that is",
			 p->soak_s, p->bucket_s, n);
		return -EINVAL;
	}
	if (round(n) < 2) {
		snprintf(err, errlen, "--soak %g: at least 2 buckets of --bucket %g are needed (a median needs 2)",
			 p->soak_s, p->bucket_s);
		return -EINVAL;
	}
	if (round(n) > (double)PB_SOAK_MAX_BUCKETS) {
		snprintf(err, errlen, "--soak %g / --bucket %g: more than %llu buckets", p->soak_s,
			 p->bucket_s, PB_SOAK_MAX_BUCKETS);
		return -EINVAL;
	}
	return 0;
}

int pb_soak_validate(const struct pb_soak_params *p, const struct pb_common_params *c,
		     const struct pb_test_info *t, unsigned given, char *err, size_t errlen)
{
	static const char *const names[] = { "--bucket", "--stall-fraction", "--series", "--validate-live" };

	if (!(p->soak_s > 0)) {
		for (unsigned i = 0; i < 4; i++) {
			if (given & (1u << i)) {
				snprintf(err, errlen, "%s applies to a soak: add --soak SECONDS", names[i]);
				return -EINVAL;
			}
		}
		return 0;
	}
	if (t->kind != PB_TK_BANDWIDTH && t->kind != PB_TK_MESSAGE_RATE) {
		snprintf(err, errlen,
			 "--soak applies to the bandwidth and message-rate tests (bw, bibw, msgrate), not --test %s",
			 t->name);
		return -EINVAL;
	}
	if (c->iterations || c->duration_s > 0) {
		snprintf(err, errlen, "--soak is the window: drop %s",
			 c->iterations ? "-n/--iterations" : "-D/--duration");
		return -EINVAL;
	}
	return pb_soak_check(p, err, errlen);
}

/* splitmix64: every word of a checked message differs from its neighbours and its window's. */
static inline uint64_t pb_soak_word(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline uint64_t pb_soak_seed(unsigned pair, uint64_t window)
{
	return ((uint64_t)pair << 44) ^ (window << 4);
}

void pb_soak_pattern_fill(void *buf, size_t len, unsigned pair, uint64_t window)
{
	unsigned char *p = buf;
	const uint64_t seed = pb_soak_seed(pair, window);
	size_t w = 0;

	for (; (w + 1) * 8 <= len; w++) {
		uint64_t v = pb_soak_word(seed + w);

		memcpy(p + w * 8, &v, 8);
	}
	if (w * 8 < len) {
		uint64_t v = pb_soak_word(seed + w);

		memcpy(p + w * 8, &v, len - w * 8);
	}
}

size_t pb_soak_pattern_check(const void *buf, size_t len, unsigned pair, uint64_t window)
{
	const unsigned char *p = buf;
	const uint64_t seed = pb_soak_seed(pair, window);
	size_t bad = 0, w = 0;

	for (; (w + 1) * 8 <= len; w++) {
		uint64_t got;

		memcpy(&got, p + w * 8, 8);
		for (uint64_t d = pb_soak_word(seed + w) ^ got; d; d >>= 8)
			bad += (d & 0xff) != 0;
	}
	if (w * 8 < len) {
		size_t n = len - w * 8;
		uint64_t v = pb_soak_word(seed + w) & ((1ull << (8 * n)) - 1), got = 0;

		memcpy(&got, p + w * 8, n);
		for (uint64_t d = v ^ got; d; d >>= 8)
			bad += (d & 0xff) != 0;
	}
	return bad;
}

int pb_soak_fault(const char *text, unsigned pair, double *seconds)
{
	unsigned p;
	double s;
	int used = 0;

	*seconds = -1;
	if (!text || !*text)
		return 0;
	if (sscanf(text, "flip:%u:%lf%n", &p, &s, &used) != 2 || text[used] || s < 0)
		return -EINVAL;
	if (p == pair)
		*seconds = s;
	return 0;
}

int pb_soak_path(const char *prefix, uint64_t msg_size_bytes, const char *pattern, unsigned pair_id,
		 char *out, size_t len)
{
	bool pat = pattern && pattern[0];
	int n = snprintf(out, len, "%s-%lluB%s%s-pair%u.pbsoak", prefix,
			 (unsigned long long)msg_size_bytes, pat ? "-" : "", pat ? pattern : "", pair_id);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	/* A pattern's ':' and '/' are fine in a name but '/' is not: nodes:0-1 stays, no '/' occurs in one round. */
	return 0;
}

/* Write all of buf at off; 0 or -errno. */
static int pb_soak_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t w = pwrite(fd, p, len, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

int pb_soak_open(struct pb_soak_rec *r, const char *path, const struct pb_soak_params *p,
		 const struct pb_soak_header *hdr, char *err, size_t errlen)
{
	int rc;

	r->fd = -1;
	if (path)
		r->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	else
		r->fd = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
	if (r->fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "soak series %s: open: %s", path ? path : "(temporary file in /tmp)",
			 strerror(-rc));
		return rc;
	}
	r->hdr = *hdr;
	memcpy(r->hdr.magic, PB_SOAK_MAGIC, sizeof(r->hdr.magic));
	r->hdr.version = PB_SOAK_VERSION;
	r->hdr.header_bytes = PB_SOAK_HEADER_BYTES;
	r->hdr.bucket_bytes = sizeof(struct pb_soak_bucket);
	r->hdr.bucket_ns = (uint64_t)llround(p->bucket_s * 1e9);
	r->hdr.planned_buckets = (uint64_t)llround(p->soak_s / p->bucket_s);
	r->hdr.stall_fraction = p->stall_fraction;
	r->hdr.complete = 0;
	r->hdr.buckets = 0;
	r->bucket_ns = r->hdr.bucket_ns;
	r->n_buckets = r->hdr.planned_buckets;
	/* About one write a second, at least one bucket, never more than the ring. */
	r->flush_every = (uint32_t)(1e9 / (double)r->bucket_ns);
	if (r->flush_every < 1)
		r->flush_every = 1;
	if (r->flush_every > PB_SOAK_RING - 1)
		r->flush_every = PB_SOAK_RING - 1;
	r->written = 0;
	r->write_err = 0;
	r->fill = 0;
	r->cur = 0;
	r->cur_end_ns = UINT64_MAX;
	memset(&r->ring[0], 0, sizeof(r->ring[0]));
	{
		char block[PB_SOAK_HEADER_BYTES] = { 0 };

		memcpy(block, &r->hdr, sizeof(r->hdr));
		rc = pb_soak_pwrite(r->fd, block, sizeof(block), 0);
	}
	if (rc) {
		snprintf(err, errlen, "soak series %s: write: %s", path ? path : "(temporary)", strerror(-rc));
		pb_soak_close(r);
	}
	return rc;
}

void pb_soak_start(struct pb_soak_rec *r, uint64_t start_ns)
{
	struct timespec mono, real;

	/* The same moment on the wall clock, so that a reader can place the buckets. */
	clock_gettime(CLOCK_MONOTONIC_RAW, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	r->hdr.start_unix_ns = (int64_t)real.tv_sec * 1000000000 + real.tv_nsec -
			       ((int64_t)mono.tv_sec * 1000000000 + mono.tv_nsec - (int64_t)start_ns);
	r->start_ns = start_ns;
	r->hdr.start_ns = start_ns;
	r->cur = 0;
	r->fill = 0;
	memset(&r->ring[0], 0, sizeof(r->ring[0]));
	r->cur_end_ns = r->n_buckets > 1 ? start_ns + r->bucket_ns : UINT64_MAX;
}

/* Write ring[0..fill) and move the current bucket to ring[0]. */
static void pb_soak_flush(struct pb_soak_rec *r)
{
	int rc;

	if (!r->fill)
		return;
	/* The first write also puts the start in the header: a reader of a running soak
	 * (a killed one too) can place its buckets. */
	rc = r->written ? 0 : pb_soak_pwrite(r->fd, &r->hdr, sizeof(r->hdr), 0);
	if (!rc)
		rc = pb_soak_pwrite(r->fd, r->ring, r->fill * sizeof(r->ring[0]),
				    PB_SOAK_HEADER_BYTES + r->written * sizeof(r->ring[0]));
	if (rc && !r->write_err)
		r->write_err = rc;
	r->written += r->fill;
	r->ring[0] = r->ring[r->fill];
	r->fill = 0;
}

/* Complete the current bucket and open the next (the last one never closes). */
static void pb_soak_next(struct pb_soak_rec *r)
{
	r->fill++;
	memset(&r->ring[r->fill], 0, sizeof(r->ring[0]));
	r->cur++;
	r->cur_end_ns = r->cur + 1 < r->n_buckets ? r->cur_end_ns + r->bucket_ns : UINT64_MAX;
	if (r->fill >= r->flush_every)
		pb_soak_flush(r);
}

void pb_soak_advance(struct pb_soak_rec *r, uint64_t now_ns)
{
	while (now_ns >= r->cur_end_ns)
		pb_soak_next(r);
}

/* Radix selection: the value of nearest rank `rank` (1-based) among n buckets on file. */
static int pb_soak_select(int fd, uint64_t off, uint64_t n, uint64_t rank, struct pb_soak_bucket *chunk,
			  uint64_t *value)
{
	uint64_t lo = 0, span_bits = 64, below = 0;

	/* Each pass splits [lo, lo + 2^span_bits) into 256 bins and keeps the rank's bin. */
	while (span_bits > 0) {
		uint64_t bins[256] = { 0 }, shift = span_bits > 8 ? span_bits - 8 : 0, seen = below;

		for (uint64_t i = 0; i < n;) {
			size_t want = n - i < PB_SOAK_RING ? (size_t)(n - i) : PB_SOAK_RING;
			ssize_t got = pread(fd, chunk, want * sizeof(*chunk),
					    (off_t)(off + i * sizeof(*chunk)));

			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0 || (size_t)got % sizeof(*chunk))
				return got < 0 ? -errno : -EIO;
			for (size_t k = 0; k < (size_t)got / sizeof(*chunk); k++) {
				uint64_t v = chunk[k].messages;

				if (v < lo || (span_bits < 64 && v - lo >= (1ull << span_bits)))
					continue;
				bins[(v - lo) >> shift]++;
			}
			i += (uint64_t)got / sizeof(*chunk);
		}
		for (unsigned b = 0; b < 256; b++) {
			if (seen + bins[b] >= rank) {
				lo += (uint64_t)b << shift;
				below = seen;
				break;
			}
			seen += bins[b];
		}
		span_bits = shift;
	}
	*value = lo;
	return 0;
}

/* Nearest-rank percentile num / PB_PCT_DEN of the n buckets; NAN when n cannot support it. */
static int pb_soak_percentile(int fd, uint64_t off, uint64_t n, uint32_t num, struct pb_soak_bucket *chunk,
			      double *out)
{
	uint64_t rank, v;
	int rc;

	*out = NAN;
	if (n < pb_stats_min_count(num))
		return 0;
	rank = ((uint64_t)num * n + PB_PCT_DEN - 1) / PB_PCT_DEN;
	rc = pb_soak_select(fd, off, n, rank ? rank : 1, chunk, &v);
	if (!rc)
		*out = (double)v;
	return rc;
}

/* One pass: min, sum, checks, and the stalls below threshold (messages < threshold). */
static int pb_soak_scan(int fd, uint64_t off, uint64_t n, double threshold, struct pb_soak_bucket *chunk,
			struct pb_soak_summary *out)
{
	uint64_t run = 0, min = UINT64_MAX;

	out->stalls = 0;
	out->longest_stall_buckets = 0;
	out->first_stall_bucket = UINT64_MAX;
	for (uint64_t i = 0; i < n;) {
		size_t want = n - i < PB_SOAK_RING ? (size_t)(n - i) : PB_SOAK_RING;
		ssize_t got = pread(fd, chunk, want * sizeof(*chunk), (off_t)(off + i * sizeof(*chunk)));

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0 || (size_t)got % sizeof(*chunk))
			return got < 0 ? -errno : -EIO;
		for (size_t k = 0; k < (size_t)got / sizeof(*chunk); k++, i++) {
			const struct pb_soak_bucket *b = &chunk[k];

			if (b->messages < min)
				min = b->messages;
			out->sum_msgs += b->messages;
			out->checked += b->checked;
			out->corrupt += b->corrupt;
			if ((double)b->messages < threshold) {
				if (!run++) {
					out->stalls++;
					if (out->first_stall_bucket == UINT64_MAX)
						out->first_stall_bucket = i;
				}
				if (run > out->longest_stall_buckets)
					out->longest_stall_buckets = run;
			} else {
				run = 0;
			}
		}
	}
	out->min_msgs = n ? (double)min : NAN;
	return 0;
}

int pb_soak_analyse(int fd, uint64_t off, uint64_t n, double stall_fraction, struct pb_soak_summary *out)
{
	struct pb_soak_bucket *chunk = malloc(PB_SOAK_RING * sizeof(*chunk));
	double threshold;
	int rc;

	if (!chunk)
		return -ENOMEM;
	out->buckets = n;
	out->stall_fraction = stall_fraction;
	out->sum_msgs = out->checked = out->corrupt = 0;
	rc = pb_soak_percentile(fd, off, n, 1000, chunk, &out->p1_msgs);
	if (!rc)
		rc = pb_soak_percentile(fd, off, n, 50000, chunk, &out->p50_msgs);
	/* No median, or a median of 0: nothing is below a fraction of it. */
	threshold = isnan(out->p50_msgs) ? 0.0 : stall_fraction * out->p50_msgs;
	if (!rc)
		rc = pb_soak_scan(fd, off, n, threshold, chunk, out);
	free(chunk);
	return rc;
}

int pb_soak_finish(struct pb_soak_rec *r, uint64_t end_ns, bool partial, struct pb_soak_summary *out,
		   char *err, size_t errlen)
{
	uint64_t last = r->n_buckets - 1;
	int rc;

	memset(out, 0, sizeof(*out));
	if (partial && end_ns >= r->start_ns && (end_ns - r->start_ns) / r->bucket_ns < last)
		last = (end_ns - r->start_ns) / r->bucket_ns;
	/* Buckets nobody completed anything in are zeros, up to the last one. */
	while (r->cur < last)
		pb_soak_next(r);
	r->fill++;           /* the last bucket is complete now */
	pb_soak_flush(r);
	r->hdr.complete = 1;
	r->hdr.partial = partial;
	r->hdr.buckets = r->written;
	rc = r->write_err;
	if (!rc)
		rc = pb_soak_pwrite(r->fd, &r->hdr, sizeof(r->hdr), 0);
	if (!rc)
		rc = pb_soak_analyse(r->fd, PB_SOAK_HEADER_BYTES, r->written, r->hdr.stall_fraction, out);
	if (rc) {
		snprintf(err, errlen, "soak series (pair %u): %s", r->hdr.pair_id, strerror(-rc));
		return rc;
	}
	out->on = 1;
	out->partial = partial;
	out->bucket_s = (double)r->bucket_ns / 1e9;
	return 0;
}

/* Set by a signal handler: the one mutable file-scope variable a signal allows. */
static volatile uint64_t pb_soak_stop_flag;

static void pb_soak_on_signal(int signum)
{
	(void)signum;
	pb_soak_stop_flag = 1;
}

int pb_soak_stop_on(int signum)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = pb_soak_on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	return sigaction(signum, &sa, NULL) ? -errno : 0;
}

const volatile uint64_t *pb_soak_stop_word(void)
{
	return &pb_soak_stop_flag;
}

void pb_soak_text(char *dst, size_t len, const char *src)
{
	size_t n = src ? strlen(src) : 0;

	if (!len)
		return;
	if (n >= len)
		n = len - 1;
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

void pb_soak_close(struct pb_soak_rec *r)
{
	if (r && r->fd >= 0) {
		close(r->fd);
		r->fd = -1;
	}
}

/* A bucket's bandwidth in 10^9 bit/s. */
static double pb_soak_gbit(double msgs, uint64_t size, double bucket_s)
{
	return msgs * (double)size * 8.0 / bucket_s / 1e9;
}

static double pb_soak_share(const struct pb_soak_summary *s)
{
	return s->p50_msgs > 0 ? s->min_msgs / s->p50_msgs : NAN;
}

static bool pb_soak_coarse(const struct pb_soak_summary *s)
{
	return s->window_msgs && s->p50_msgs > 0 &&
	       s->p50_msgs < (double)PB_SOAK_MIN_WINDOWS * (double)s->window_msgs;
}

void pb_soak_row_pair(struct pb_row *row, const struct pb_soak_summary *s, uint64_t msg_size_bytes)
{
	if (!s->on)
		return;
	pb_row_set_double(row, PB_COL_soak_bucket_s, s->bucket_s);
	pb_row_set_u64(row, PB_COL_soak_buckets, s->buckets);
	pb_row_set_double(row, PB_COL_bucket_gbit_s_min, pb_soak_gbit(s->min_msgs, msg_size_bytes, s->bucket_s));
	pb_row_set_double(row, PB_COL_bucket_gbit_s_p1, pb_soak_gbit(s->p1_msgs, msg_size_bytes, s->bucket_s));
	pb_row_set_double(row, PB_COL_bucket_gbit_s_p50, pb_soak_gbit(s->p50_msgs, msg_size_bytes, s->bucket_s));
	pb_row_set_double(row, PB_COL_min_bucket_share, pb_soak_share(s));
	pb_row_set_double(row, PB_COL_stall_fraction, s->stall_fraction);
	pb_row_set_u64(row, PB_COL_stalls, s->stalls);
	pb_row_set_double(row, PB_COL_longest_stall_s, (double)s->longest_stall_buckets * s->bucket_s);
	if (s->first_stall_bucket != UINT64_MAX)
		pb_row_set_double(row, PB_COL_first_stall_s, (double)s->first_stall_bucket * s->bucket_s);
	if (s->partial)
		pb_row_add_flag(row, "soak_partial");
	if (s->buckets >= 2 && s->p50_msgs == 0)
		pb_row_add_flag(row, "soak_zero_median");
	if (pb_soak_coarse(s))
		pb_row_add_flag(row, "soak_coarse");
}

void pb_soak_agg_init(struct pb_soak_agg *a)
{
	memset(a, 0, sizeof(*a));
	a->min_gbit = a->p1_gbit = a->p50_gbit = a->share = a->first_s = INFINITY;
	a->buckets = UINT64_MAX;
}

/* NAN-aware minimum: a NAN never wins. */
static double pb_soak_min(double a, double b)
{
	return isnan(b) || a <= b ? a : b;
}

void pb_soak_agg_add(struct pb_soak_agg *a, const struct pb_soak_summary *s, uint64_t msg_size_bytes)
{
	if (!s->on)
		return;
	a->n++;
	a->bucket_s = s->bucket_s;
	a->fraction = s->stall_fraction;
	a->min_gbit = pb_soak_min(a->min_gbit, pb_soak_gbit(s->min_msgs, msg_size_bytes, s->bucket_s));
	a->p1_gbit = pb_soak_min(a->p1_gbit, pb_soak_gbit(s->p1_msgs, msg_size_bytes, s->bucket_s));
	a->p50_gbit = pb_soak_min(a->p50_gbit, pb_soak_gbit(s->p50_msgs, msg_size_bytes, s->bucket_s));
	a->share = pb_soak_min(a->share, pb_soak_share(s));
	if (s->buckets < a->buckets)
		a->buckets = s->buckets;
	a->stalls += s->stalls;
	a->stalled += s->stalls > 0;
	if ((double)s->longest_stall_buckets * s->bucket_s > a->longest_s)
		a->longest_s = (double)s->longest_stall_buckets * s->bucket_s;
	if (s->first_stall_bucket != UINT64_MAX)
		a->first_s = pb_soak_min(a->first_s, (double)s->first_stall_bucket * s->bucket_s);
	a->partial |= s->partial != 0;
	a->zero_median |= s->buckets >= 2 && s->p50_msgs == 0;
	a->coarse |= pb_soak_coarse(s);
}

/* Infinity (no pair had the value) is an empty cell. */
static void pb_soak_set_finite(struct pb_row *row, enum pb_col col, double v)
{
	if (isfinite(v))
		pb_row_set_double(row, col, v);
}

void pb_soak_row_aggregate(struct pb_row *row, const struct pb_soak_agg *a)
{
	if (!a->n)
		return;
	pb_row_set_double(row, PB_COL_soak_bucket_s, a->bucket_s);
	pb_row_set_u64(row, PB_COL_soak_buckets, a->buckets);
	pb_soak_set_finite(row, PB_COL_bucket_gbit_s_min, a->min_gbit);
	pb_soak_set_finite(row, PB_COL_bucket_gbit_s_p1, a->p1_gbit);
	pb_soak_set_finite(row, PB_COL_bucket_gbit_s_p50, a->p50_gbit);
	pb_soak_set_finite(row, PB_COL_min_bucket_share, a->share);
	pb_row_set_double(row, PB_COL_stall_fraction, a->fraction);
	pb_row_set_u64(row, PB_COL_stalls, a->stalls);
	pb_row_set_u64(row, PB_COL_stalled_pairs, a->stalled);
	pb_row_set_double(row, PB_COL_longest_stall_s, a->longest_s);
	pb_soak_set_finite(row, PB_COL_first_stall_s, a->first_s);
	if (a->partial)
		pb_row_add_flag(row, "soak_partial");
	if (a->zero_median)
		pb_row_add_flag(row, "soak_zero_median");
	if (a->coarse)
		pb_row_add_flag(row, "soak_coarse");
}
