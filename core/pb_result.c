/* SPDX-License-Identifier: BSD-3-Clause */
#include "pb_result.h"

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
	pb_row_set_u64(row, PB_COL_msg_size_bytes, pt->msg_size_bytes);
	pb_row_set_u64(row, PB_COL_pairs, pt->pairs);
}

/* Bandwidth columns over a window; flags a rate above the link capacity. */
static void pb_rows_bw(const struct pb_point_desc *pt, struct pb_row *row, uint64_t bytes,
		       uint64_t messages, uint64_t window_ns, double *gbit_out)
{
	double secs = (double)window_ns / 1e9;
	double gbit = secs > 0 ? (double)bytes * 8.0 / secs / 1e9 : NAN;

	pb_row_set_double(row, PB_COL_bw_gbit_s, gbit, 6);
	pb_row_set_double(row, PB_COL_bw_mbyte_s, secs > 0 ? (double)bytes / secs / 1e6 : NAN, 4);
	pb_row_set_double(row, PB_COL_msg_rate_per_s, secs > 0 ? (double)messages / secs : NAN, 1);
	if (pt->link_gbit_s > 0 && isfinite(gbit)) {
		pb_row_set_double(row, PB_COL_link_pct, 100.0 * gbit / pt->link_gbit_s, 2);
		if (gbit > pt->link_gbit_s)
			pb_row_add_flag(row, "above_link_rate");
	}
	if (gbit_out)
		*gbit_out = gbit;
}

static void pb_rows_pair(const struct pb_point_desc *pt, const struct pb_pair_result *r,
			 struct pb_row *row, double *gbit)
{
	pb_rows_common(pt, row);
	pb_row_set_u64(row, PB_COL_pair_id, r->pair_id);
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
		pb_row_set_double(row, PB_COL_duration_s, (double)(r->end_ns - r->start_ns) / 1e9, 6);
	if (r->has_bw)
		pb_rows_bw(pt, row, r->bytes, r->messages, r->end_ns - r->start_ns, gbit);
}

static void pb_rows_aggregate_error(const struct pb_pair_result *res, unsigned n,
				    struct pb_row *agg)
{
	char msg[PB_CELL_MAX] = "";
	size_t len = 0;

	for (unsigned i = 0; i < n && len + 1 < sizeof(msg); i++) {
		if (!res[i].status)
			continue;
		int w = snprintf(msg + len, sizeof(msg) - len, "%spair %u: %s", len ? "; " : "",
				 res[i].pair_id, res[i].error[0] ? res[i].error : strerror(-res[i].status));
		if (w < 0)
			break;
		len += (size_t)w;
	}
	pb_row_set_str(agg, PB_COL_status, "error");
	pb_row_set_str(agg, PB_COL_error, msg);
}

int pb_result_rows(const struct pb_point_desc *pt, const struct pb_pair_result *res,
		   unsigned n, double *pooled_us, size_t n_pooled, struct pb_row *rows)
{
	struct pb_row *agg = &rows[n];
	uint64_t first_start = UINT64_MAX, last_start = 0, last_end = 0, bytes = 0, msgs = 0, iters = 0;
	unsigned failed = 0, n_bw = 0, n_lat = 0;
	const struct pb_pair_result *lat_pair = NULL;
	double *gbit;

	if (n == 0)
		return -EINVAL;
	gbit = calloc(n, sizeof(*gbit));
	if (!gbit)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		const struct pb_pair_result *r = &res[i];

		pb_rows_pair(pt, r, &rows[i], &gbit[i]);
		if (r->status) {
			failed++;
			continue;
		}
		if (!pt->shared_iterations)
			iters += r->iterations;
		else if (r->iterations > iters)
			iters = r->iterations;
		if (r->start_ns < first_start)
			first_start = r->start_ns;
		if (r->start_ns > last_start)
			last_start = r->start_ns;
		if (r->end_ns > last_end)
			last_end = r->end_ns;
		if (r->has_bw) {
			gbit[n_bw++] = gbit[i];
			bytes += r->bytes;
			msgs += r->messages;
		}
		if (r->has_lat) {
			n_lat++;
			lat_pair = r;
		}
	}

	pb_rows_common(pt, agg);
	pb_row_set_str(agg, PB_COL_pair_id, "all");
	pb_row_set_str(agg, PB_COL_host, res[0].host);
	if (failed) {
		pb_rows_aggregate_error(res, n, agg);
		free(gbit);
		return 0;
	}
	pb_row_set_u64(agg, PB_COL_iterations, iters);
	pb_row_set_u64(agg, PB_COL_warmup_iterations, res[0].warmup_iterations);
	if (res[0].window)
		pb_row_set_u64(agg, PB_COL_window, res[0].window);
	pb_row_set_str(agg, PB_COL_status, "ok");
	pb_row_set_double(agg, PB_COL_start_skew_us, (double)(last_start - first_start) / 1e3, 3);
	pb_row_set_double(agg, PB_COL_duration_s, (double)(last_end - first_start) / 1e9, 6);
	if (n_lat) {
		struct pb_stats st;

		pb_row_set_str(agg, PB_COL_lat_kind, pt->lat_kind);
		if (n_pooled && pb_stats_compute(pooled_us, n_pooled, &st) == 0)
			pb_row_set_lat_stats(agg, &st);
		else if (n_lat == 1)
			pb_row_set_lat_stats(agg, &lat_pair->lat_us);
	}
	if (n_bw) {
		/* The aggregate window spans only the bandwidth pairs. */
		uint64_t bw_start = UINT64_MAX, bw_end = 0;

		for (unsigned i = 0; i < n; i++) {
			if (!res[i].has_bw)
				continue;
			if (res[i].start_ns < bw_start)
				bw_start = res[i].start_ns;
			if (res[i].end_ns > bw_end)
				bw_end = res[i].end_ns;
		}
		pb_rows_bw(pt, agg, bytes, msgs, bw_end > bw_start ? bw_end - bw_start : 0, NULL);
		pb_row_set_double(agg, PB_COL_fairness, pb_jain_index(gbit, n_bw), 4);
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

		fprintf(f, "%-12s %-8s %10s %5s %4s %10s %10s %10s %11s %12s %6s %s\n",
			r->cell[PB_COL_test], r->cell[PB_COL_variant], r->cell[PB_COL_msg_size_bytes],
			r->cell[PB_COL_pairs], r->cell[PB_COL_pair_id], r->cell[PB_COL_lat_us_p50],
			r->cell[PB_COL_lat_us_p99], r->cell[PB_COL_lat_us_max],
			r->cell[PB_COL_bw_gbit_s], r->cell[PB_COL_msg_rate_per_s],
			r->cell[PB_COL_status], note);
	}
}
