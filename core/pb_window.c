/* SPDX-License-Identifier: BSD-3-Clause */
/* The window a point is measured over (pb_window.h). */
#include "pb_window.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

const char *const pb_window_method_names[] = { "count", "window", "target", NULL };

void pb_window_plan(const struct pb_common_params *c, const struct pb_test_info *t, bool time_stop,
		    struct pb_window_plan *out)
{
	bool lat = t->kind == PB_TK_LATENCY;

	memset(out, 0, sizeof(*out));
	if (c->iterations || !time_stop) {
		out->method = PB_WM_COUNT;
		out->iterations = c->iterations ? c->iterations : PB_DEFAULT_ITERATIONS;
	} else if (c->duration_s > 0) {
		out->method = PB_WM_WINDOW;
		out->seconds = c->duration_s;
		out->histogram = true;  /* a latency pair of any test (loaded_lat's probe too) */
	} else if (lat) {
		out->method = PB_WM_TARGET;
		out->seconds = c->lat_seconds;
		out->min_iterations = c->lat_samples;
		out->iterations = PB_TARGET_MAX_SAMPLES;
	} else if (t->kind == PB_TK_LOADED_LATENCY) {
		/* The probe keeps its samples like a latency test; the load runs until it is done. */
		out->method = PB_WM_TARGET;
		out->seconds = c->bw_seconds;
		out->min_iterations = c->lat_samples;
		out->iterations = PB_TARGET_MAX_SAMPLES;
	} else {
		out->method = PB_WM_WINDOW;
		out->seconds = c->bw_seconds;
	}
}

int pb_window_check(const struct pb_common_params *c, char *err, size_t errlen)
{
	if (c->iterations && c->duration_s > 0) {
		snprintf(err, errlen,
			 "-n/--iterations %llu and -D/--duration %g both given: choose a fixed count or a common window",
			 (unsigned long long)c->iterations, c->duration_s);
		return -EINVAL;
	}
	return 0;
}

int pb_window_check_time_opts(const struct pb_common_params *c, const struct pb_opt *table,
			      size_t n, const struct pb_opts_result *res, char *err, size_t errlen)
{
	static const char *const time_opts[] = { "bw-seconds", "lat-seconds", "lat-samples" };

	if (!c->iterations && !(c->duration_s > 0))
		return 0;
	for (size_t i = 0; i < sizeof(time_opts) / sizeof(time_opts[0]); i++) {
		if (!pb_opts_given(table, n, res, time_opts[i]))
			continue;
		if (c->iterations)
			snprintf(err, errlen,
				 "--%s applies without -n/-D (the default timing); -n/--iterations %llu decides the point's length: drop one of them",
				 time_opts[i], (unsigned long long)c->iterations);
		else
			snprintf(err, errlen,
				 "--%s applies without -n/-D (the default timing); -D/--duration %g decides the point's length: drop one of them",
				 time_opts[i], c->duration_s);
		return -EINVAL;
	}
	return 0;
}
