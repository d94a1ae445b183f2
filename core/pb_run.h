/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every executable does the same way around one run of the engine:
 * the engine's parameters from the test's descriptor, and the pin request
 * from the common options.  The layers keep only their process models
 * (verbs: a launcher forking workers; MPI: ranks).
 */
#ifndef PB_RUN_H
#define PB_RUN_H

#include "pb_clock.h"
#include "pb_common.h"
#include "pb_engine.h"
#include "pb_pin.h"
#include "pb_test_info.h"

/*
 * The engine's parameters of test t: sizes (a test of fixed size runs that
 * one size), window only where the test has one, the aggregate's iteration
 * rule, and how long each point runs (pb_window_plan; time_stop: the test
 * can stop on a deadline).  variant: the row's variant or NULL; pairs:
 * engine pairs.
 */
void pb_run_engine_params(const struct pb_test_info *t, const char *layer,
			  const struct pb_common_params *c, const char *variant, uint64_t window,
			  unsigned pairs, bool time_stop, struct pb_engine_params *ep);

/*
 * The pin request of nprocs processes from --pin, --pin-list and
 * --allow-oversubscribe; list[PB_PIN_MAX] receives --pin-list's PUs.
 * 0, or -EINVAL with why in err.
 */
int pb_run_pin_request(const struct pb_common_params *c, unsigned nprocs, unsigned *list,
		       struct pb_pin_request *req, char *err, size_t errlen);

/*
 * The clock calibration every record holds: measured, a warning on stderr when
 * a read is slow (unless quiet), one error line when it fails.  0 or -errno.
 */
int pb_run_clock(const struct pb_common_params *c, struct pb_clock_info *ci);

#endif
