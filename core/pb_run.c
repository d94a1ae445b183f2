/* SPDX-License-Identifier: BSD-3-Clause */
/* Run scaffolding shared by the executables (pb_run.h). */
#include "pb_run.h"

#include "pb_log.h"

#include <errno.h>
#include <string.h>

int pb_run_clock(const struct pb_common_params *c, struct pb_clock_info *ci)
{
	int rc = pb_clock_calibrate(ci);

	if (rc)
		pb_log_error("clock calibration: %s", strerror(-rc));
	else if (!c->quiet)
		pb_clock_warn_if_slow(ci);
	return rc;
}

void pb_run_engine_params(const struct pb_test_info *t, const char *layer,
			  const struct pb_common_params *c, const char *variant, uint64_t window,
			  unsigned pairs, bool time_stop, struct pb_engine_params *ep)
{
	struct pb_window_plan w;

	memset(ep, 0, sizeof(*ep));
	pb_window_plan(c, t, time_stop, &w);
	ep->layer = layer;
	ep->test = t->name;
	ep->variant = variant;
	ep->lat_kind = t->lat_kind;
	ep->sizes = t->fixed_size ? &t->fixed_size_bytes : c->sizes.v;
	ep->n_sizes = t->fixed_size ? 1 : c->sizes.n;
	ep->method = w.method;
	ep->iterations = w.iterations;
	ep->min_iterations = w.min_iterations;
	ep->warmup = c->warmup;
	ep->duration_s = w.seconds;
	ep->histogram = w.histogram;
	ep->window = t->window ? window : 0;
	ep->pairs = pairs;
	ep->shared_iterations = t->agg_iterations == PB_AGG_SHARED;
}

int pb_run_pin_request(const struct pb_common_params *c, unsigned nprocs, unsigned *list,
		       struct pb_pin_request *req, char *err, size_t errlen)
{
	int n;

	memset(req, 0, sizeof(*req));
	req->policy = (enum pb_pin_policy)c->pin;
	req->nprocs = nprocs;
	req->allow_oversubscribe = c->allow_oversubscribe;
	if (req->policy != PB_PIN_LIST)
		return 0;
	n = pb_pin_parse_list(c->pin_list, list, PB_PIN_MAX, err, errlen);
	if (n < 0)
		return n;
	req->list = list;
	req->nlist = (size_t)n;
	return 0;
}
