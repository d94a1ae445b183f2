/* SPDX-License-Identifier: BSD-3-Clause */
#include "pb_result.h"

#include "pb_window.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void pb_result_fail(struct pb_pair_result *r, int neg_errno, const char *fmt, ...)
{
	va_list ap;

	r->status = neg_errno ? neg_errno : -EIO;
	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
}

static void pb_rows_common(const struct pb_point_desc *pt, struct pb_row *row)
{
	pb_row_init(row);
	pb_row_set_str(row, PB_COL_layer, pt->layer);
	pb_row_set_str(row, PB_COL_test, pt->test);
	pb_row_set_str(row, PB_COL_variant, pt->variant);
	pb_row_set_str(row, PB_COL_buffers, pt->buffers);
	pb_row_set_str(row, PB_COL_pattern, pt->pattern);
	pb_row_set_u64(row, PB_COL_msg_size_bytes, pt->msg_size_bytes);
	pb_row_set_u64(row, PB_COL_pairs, pt->pairs);
	if (pt->qps)
		pb_row_set_u64(row, PB_COL_qps, pt->qps);
	pb_row_set_str(row, PB_COL_window_method, pt->window_method);
	if (pt->window_s > 0)
		pb_row_set_double(row, PB_COL_window_s, pt->window_s);
}

/* Bandwidth columns over a window; flags a rate above the link capacity. */
static void pb_rows_bw(const struct pb_point_desc *pt, struct pb_row *row, uint64_t bytes,
		       uint64_t messages, uint64_t window_ns, double *gbit_out)
{
	double secs = (double)window_ns / 1e9;
	double gbit = secs > 0 ? (double)bytes * 8.0 / secs / 1e9 : NAN;

	pb_row_set_double(row, PB_COL_bw_gbit_s, gbit);
	pb_row_set_double(row, PB_COL_bw_mbyte_s, secs > 0 ? (double)bytes / secs / 1e6 : NAN);
	pb_row_set_double(row, PB_COL_msg_rate_per_s, secs > 0 ? (double)messages / secs : NAN);
	if (pt->link_gbit_s > 0 && isfinite(gbit)) {
		pb_row_set_double(row, PB_COL_link_pct, 100.0 * gbit / pt->link_gbit_s);
		if (gbit > pt->link_gbit_s)
			pb_row_add_flag(row, "above_link_rate");
	}
	if (gbit_out)
		*gbit_out = gbit;
}

/* start_delay_us of a row whose window began with r's (empty when the release is unknown). */
static void pb_rows_start_delay(struct pb_row *row, const struct pb_pair_result *r)
{
	if (r && r->release_ns && r->start_ns >= r->release_ns)
		pb_row_set_double(row, PB_COL_start_delay_us, (double)(r->start_ns - r->release_ns) / 1e3);
}

static void pb_rows_pair(const struct pb_point_desc *pt, const struct pb_pair_result *r,
			 struct pb_row *row, double *gbit)
{
	pb_rows_common(pt, row);
	pb_row_set_u64(row, PB_COL_pair_id, r->pair_id);
	pb_row_set_str(row, PB_COL_scope, "pair");
	pb_row_set_u64(row, PB_COL_iterations, r->iterations);
	pb_row_set_u64(row, PB_COL_warmup_iterations, r->warmup_iterations);
	if (r->window)
		pb_row_set_u64(row, PB_COL_window, r->window);
	pb_row_set_str(row, PB_COL_host, r->host);
	pb_row_set_str(row, PB_COL_peer, r->peer);
	if (r->cpu >= 0)
		pb_row_set_i64(row, PB_COL_cpu, r->cpu);
	if (r->numa_node >= 0)
		pb_row_set_i64(row, PB_COL_numa_node, r->numa_node);
	pb_row_set_str(row, PB_COL_flags, r->flags);
	*gbit = NAN;
	if (r->status) {
		pb_row_set_str(row, PB_COL_status, "error");
		pb_row_set_str(row, PB_COL_error, r->error[0] ? r->error : strerror(-r->status));
		return;
	}
	pb_row_set_str(row, PB_COL_status, "ok");
	if (r->has_lat) {
		pb_row_set_str(row, PB_COL_lat_kind, pt->lat_kind);
		pb_row_set_lat_stats(row, &r->lat_us);
	}
	if (r->end_ns > r->start_ns)
		pb_row_set_double(row, PB_COL_duration_s, (double)(r->end_ns - r->start_ns) / 1e9);
	pb_rows_start_delay(row, r);
	if (r->has_bw)
		pb_rows_bw(pt, row, r->bytes, r->messages, r->end_ns - r->start_ns, gbit);
	pb_soak_row_pair(row, &r->soak, pt->msg_size_bytes);
}

static void pb_rows_aggregate_error(const struct pb_pair_result *res, unsigned n,
				    struct pb_row *agg)
{
	char msg[PB_CELL_MAX] = "";
	size_t len = 0;

	for (unsigned i = 0; i < n && len + 1 < sizeof(msg); i++) {
		if (!res[i].status)
			continue;
		const char *why = res[i].error[0] ? res[i].error : strerror(-res[i].status);
		char who[32];
		int wl = snprintf(who, sizeof(who), "pair %u", res[i].pair_id);
		/* Reasons that already name their pair ("pair 0 at 8 B: ...") keep one prefix. */
		bool named = wl > 0 && !strncmp(why, who, (size_t)wl) &&
			     (why[wl] == ' ' || why[wl] == ':');
		int w = snprintf(msg + len, sizeof(msg) - len, "%s%s%s%s", len ? "; " : "",
				 named ? "" : who, named ? "" : ": ", why);
		if (w < 0)
			break;
		len += (size_t)w;
	}
	pb_row_set_str(agg, PB_COL_status, "error");
	pb_row_set_str(agg, PB_COL_error, msg);
}

/* What the pairs of one point add up to; filled by pb_rows_scan. */
struct pb_rows_sum {
	unsigned failed, n_bw, n_lat;
	uint64_t first_start, last_start, last_end, first_end, iters;   /* every pair */
	const struct pb_pair_result *first, *bw_first, *lat_first;      /* earliest start */
	uint64_t bytes, msgs;
	uint64_t bw_iters, bw_start, bw_end;      /* bandwidth pairs */
	uint64_t bw_last_start, bw_first_end;
	uint64_t lat_iters, lat_start, lat_end;   /* latency pairs */
	uint64_t lat_last_start, lat_first_end;
	const struct pb_pair_result *lat_pair;    /* the last latency pair */
	const struct pb_pair_result *worst_lat;   /* highest p50; NULL: none */
	const struct pb_pair_result *min_bw;      /* lowest bw_gbit_s; NULL: none */
	double min_gbit, sum_gbit;                /* over n_gbit finite per-pair rates */
	unsigned n_gbit;
};

/* Sum (or, with shared iterations, the common count: the max) of iterations. */
static void pb_rows_add_iters(const struct pb_point_desc *pt, uint64_t *acc, uint64_t v)
{
	if (!pt->shared_iterations)
		*acc += v;
	else if (v > *acc)
		*acc = v;
}

/* Earliest start, latest end (the window) and latest start, earliest end (all running). */
static void pb_rows_span(uint64_t *start, uint64_t *end, uint64_t *last_start, uint64_t *first_end,
			 const struct pb_pair_result **first, const struct pb_pair_result *r)
{
	if (r->start_ns < *start) {
		*start = r->start_ns;
		*first = r;
	}
	if (r->end_ns > *end)
		*end = r->end_ns;
	if (r->start_ns > *last_start)
		*last_start = r->start_ns;
	if (r->end_ns < *first_end)
		*first_end = r->end_ns;
}

/* One successful pair into the sums; gbit = its bandwidth (NaN: none). */
static void pb_rows_scan(const struct pb_point_desc *pt, const struct pb_pair_result *r,
			 double gbit, struct pb_rows_sum *s)
{
	if (r->start_ns < s->first_start) {
		s->first_start = r->start_ns;
		s->first = r;
	}
	if (r->start_ns > s->last_start)
		s->last_start = r->start_ns;
	if (r->end_ns > s->last_end)
		s->last_end = r->end_ns;
	if (r->end_ns < s->first_end)
		s->first_end = r->end_ns;
	pb_rows_add_iters(pt, &s->iters, r->iterations);
	if (r->has_bw) {
		s->n_bw++;
		s->bytes += r->bytes;
		s->msgs += r->messages;
		pb_rows_add_iters(pt, &s->bw_iters, r->iterations);
		pb_rows_span(&s->bw_start, &s->bw_end, &s->bw_last_start, &s->bw_first_end,
			     &s->bw_first, r);
		if (isfinite(gbit)) {
			s->n_gbit++;
			s->sum_gbit += gbit;
			if (!s->min_bw || gbit < s->min_gbit) {
				s->min_bw = r;
				s->min_gbit = gbit;
			}
		}
	}
	if (r->has_lat) {
		s->n_lat++;
		s->lat_pair = r;
		pb_rows_add_iters(pt, &s->lat_iters, r->iterations);
		pb_rows_span(&s->lat_start, &s->lat_end, &s->lat_last_start, &s->lat_first_end,
			     &s->lat_first, r);
		if (isfinite(r->lat_us.p50) &&
		    (!s->worst_lat || r->lat_us.p50 > s->worst_lat->lat_us.p50))
			s->worst_lat = r;
	}
}

/*
 * What the worst pair did: only where pairs measure independently (not
 * collectives/halo, whose aggregate is already the max over ranks per
 * iteration) and at least two pairs measured the quantity.
 */
static void pb_rows_worst(const struct pb_point_desc *pt, const struct pb_rows_sum *s,
			  struct pb_row *agg)
{
	if (pt->shared_iterations)
		return;
	if (s->n_lat >= 2 && s->worst_lat) {
		pb_row_set_u64(agg, PB_COL_worst_lat_pair_id, s->worst_lat->pair_id);
		pb_row_set_double(agg, PB_COL_worst_lat_us_p50, s->worst_lat->lat_us.p50);
		pb_row_set_double(agg, PB_COL_worst_lat_us_p99, s->worst_lat->lat_us.p99);
	}
	if (s->n_bw >= 2 && s->min_bw) {
		double mean = s->sum_gbit / s->n_gbit;

		pb_row_set_u64(agg, PB_COL_min_bw_pair_id, s->min_bw->pair_id);
		pb_row_set_double(agg, PB_COL_min_pair_bw_gbit_s, s->min_gbit);
		pb_row_set_double(agg, PB_COL_min_pair_bw_share, mean > 0 ? s->min_gbit / mean : NAN);
	}
}

/*
 * iterations and duration_s of the aggregate describe the numbers next to
 * them: the bandwidth pairs when the row has bandwidth (loaded_lat: the
 * loading pairs, not the probe), else the latency pairs, else every pair.
 */
static void pb_rows_agg_count(const struct pb_rows_sum *s, struct pb_row *agg)
{
	uint64_t iters = s->iters, start = s->first_start, end = s->last_end;
	uint64_t last_start = s->last_start, first_end = s->first_end;
	const struct pb_pair_result *first = s->first;

	if (s->n_bw) {
		iters = s->bw_iters;
		start = s->bw_start;
		end = s->bw_end;
		last_start = s->bw_last_start;
		first_end = s->bw_first_end;
		first = s->bw_first;
	} else if (s->n_lat) {
		iters = s->lat_iters;
		start = s->lat_start;
		end = s->lat_end;
		last_start = s->lat_last_start;
		first_end = s->lat_first_end;
		first = s->lat_first;
	}
	pb_rows_start_delay(agg, first);
	pb_row_set_u64(agg, PB_COL_iterations, iters);
	if (end <= start)
		return;
	double window = (double)(end - start), spread = (double)(end - first_end);

	pb_row_set_double(agg, PB_COL_duration_s, window / 1e9);
	pb_row_set_double(agg, PB_COL_overlap_s,
			  first_end > last_start ? (double)(first_end - last_start) / 1e9 : 0.0);
	pb_row_set_double(agg, PB_COL_end_spread_us, spread / 1e3);
	/* The last part of the window measured fewer pairs than the point names. */
	if (s->n_bw >= 2 && spread > PB_TAIL_FRACTION * window)
		pb_row_add_flag(agg, "tail_dominated");
}

/* Block timing: the count-weighted mean of the latency pairs' means; nothing else. */
static void pb_rows_block_mean(const struct pb_pair_result *res, unsigned n, struct pb_stats *st)
{
	double sum = 0;

	*st = (struct pb_stats){ .min = NAN, .max = NAN, .mean = NAN, .stdev = NAN,
				 .p50 = NAN, .p90 = NAN, .p99 = NAN, .p999 = NAN };
	for (unsigned i = 0; i < n; i++) {
		if (res[i].status || !res[i].has_lat)
			continue;
		st->count += res[i].lat_us.count;
		sum += res[i].lat_us.mean * (double)res[i].lat_us.count;
	}
	if (st->count)
		st->mean = sum / (double)st->count;
}

int pb_result_rows(const struct pb_point_desc *pt, const struct pb_pair_result *res,
		   unsigned n, double *pooled_us, size_t n_pooled, struct pb_row *rows)
{
	struct pb_row *agg = &rows[n];
	struct pb_rows_sum s = { .first_start = UINT64_MAX, .first_end = UINT64_MAX, .bw_start = UINT64_MAX,
				 .lat_start = UINT64_MAX, .bw_first_end = UINT64_MAX,
				 .lat_first_end = UINT64_MAX };
	double *gbit;

	if (n == 0)
		return -EINVAL;
	gbit = calloc(n, sizeof(*gbit));
	if (!gbit)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		double g;

		pb_rows_pair(pt, &res[i], &rows[i], &g);
		if (res[i].status) {
			s.failed++;
			continue;
		}
		pb_rows_scan(pt, &res[i], g, &s);
		if (res[i].has_bw)
			gbit[s.n_bw - 1] = g;
	}

	pb_rows_common(pt, agg);
	pb_row_set_str(agg, PB_COL_pair_id, "all");
	pb_row_set_str(agg, PB_COL_scope, "all");
	pb_row_set_str(agg, PB_COL_host, res[0].host);
	if (s.failed) {
		pb_rows_aggregate_error(res, n, agg);
		free(gbit);
		return 0;
	}
	pb_rows_agg_count(&s, agg);
	pb_row_set_u64(agg, PB_COL_warmup_iterations, res[0].warmup_iterations);
	if (res[0].window)
		pb_row_set_u64(agg, PB_COL_window, res[0].window);
	pb_row_set_str(agg, PB_COL_status, "ok");
	pb_row_set_double(agg, PB_COL_start_skew_us, (double)(s.last_start - s.first_start) / 1e3);
	if (s.n_lat) {
		struct pb_stats st;

		pb_row_set_str(agg, PB_COL_lat_kind, pt->lat_kind);
		if (pt->block_timed) {
			pb_rows_block_mean(res, n, &st);
			pb_row_set_lat_stats(agg, &st);
			pb_row_add_flag(agg, "block_timed");
		} else if (n_pooled && pb_stats_compute(pooled_us, n_pooled, &st) == 0) {
			pb_row_set_lat_stats(agg, &st);
		} else if (s.n_lat == 1) {
			pb_row_set_lat_stats(agg, &s.lat_pair->lat_us);
		}
	}
	if (s.n_bw) {
		/* The aggregate window spans only the bandwidth pairs. */
		pb_rows_bw(pt, agg, s.bytes, s.msgs,
			   s.bw_end > s.bw_start ? s.bw_end - s.bw_start : 0, NULL);
		pb_row_set_double(agg, PB_COL_fairness, pb_jain_index(gbit, s.n_bw));
	}
	pb_rows_worst(pt, &s, agg);
	{
		struct pb_soak_agg sa;

		pb_soak_agg_init(&sa);
		for (unsigned i = 0; i < n; i++)
			pb_soak_agg_add(&sa, &res[i].soak, pt->msg_size_bytes);
		pb_soak_row_aggregate(agg, &sa);
	}
	free(gbit);
	return 0;
}

void pb_result_print_table(FILE *f, const struct pb_row *rows, unsigned n_rows, bool header)
{
	if (header)
		fprintf(f, "%-12s %-8s %10s %5s %4s %10s %10s %10s %11s %12s %6s %s\n", "test",
			"variant", "bytes", "pairs", "pair", "p50_us", "p99_us", "max_us",
			"Gbit/s", "msg/s", "status", "flags/error");
	for (unsigned i = 0; i < n_rows; i++) {
		const struct pb_row *r = &rows[i];
		const char *note = r->cell[PB_COL_error][0] ? r->cell[PB_COL_error] : r->cell[PB_COL_flags];

		/* A row with a mean but no percentiles (--timing block) shows its mean in the note. */
		bool mean_only = !r->cell[PB_COL_lat_us_p50][0] && r->cell[PB_COL_lat_us_mean][0];

		fprintf(f, "%-12s %-8s %10s %5s %4s %10s %10s %10s %11s %12s %6s %s%s%s%s\n",
			r->cell[PB_COL_test], r->cell[PB_COL_variant], r->cell[PB_COL_msg_size_bytes],
			r->cell[PB_COL_pairs], r->cell[PB_COL_pair_id], r->cell[PB_COL_lat_us_p50],
			r->cell[PB_COL_lat_us_p99], r->cell[PB_COL_lat_us_max],
			r->cell[PB_COL_bw_gbit_s], r->cell[PB_COL_msg_rate_per_s],
			r->cell[PB_COL_status], mean_only ? "mean_us " : "",
			mean_only ? r->cell[PB_COL_lat_us_mean] : "", mean_only && note[0] ? " " : "", note);
	}
}
