/* SPDX-License-Identifier: BSD-3-Clause */
/* pb_run: the engine's parameters follow the descriptor; the pin request the options. */
#include "pb_run.h"
#include "pb_test.h"

#include <errno.h>
#include <string.h>

static const struct pb_test_info lat = {
	.name = "lat", .kind = PB_TK_LATENCY, .lat_kind = "half_rtt", .payload = true,
	.min_pairs = 1, .primary_metric = "lat_us_p50", .higher_is_worse = true,
};
static const struct pb_test_info bw = {
	.name = "bw", .kind = PB_TK_BANDWIDTH, .payload = true, .window = true, .min_pairs = 1,
	.primary_metric = "bw_gbit_s",
};
static const struct pb_test_info coll0 = {
	.name = "coll", .kind = PB_TK_COLLECTIVE, .lat_kind = "op", .fixed_size = true,
	.fixed_size_bytes = 0, .min_pairs = 1, .agg_iterations = PB_AGG_SHARED,
	.primary_metric = "lat_us_p50", .higher_is_worse = true,
};

static void test_engine_params(void)
{
	struct pb_common_params c = { .sizes = { .n = 2, .v = { 8, 4096 } }, .iterations = 50,
				      .warmup = 5, .duration_s = 0 };
	struct pb_engine_params ep;

	pb_run_engine_params(&lat, "mpi", &c, NULL, 64, 3, true, &ep);
	CHECK_STR(ep.test, "lat");
	CHECK_STR(ep.lat_kind, "half_rtt");
	CHECK_EQ_INT(ep.n_sizes, 2);
	CHECK_EQ_INT(ep.sizes[1], 4096);
	CHECK_EQ_INT(ep.window, 0);          /* no window: none recorded */
	CHECK_EQ_INT(ep.pairs, 3);
	CHECK(!ep.shared_iterations);
	pb_run_engine_params(&bw, "verbs", &c, "bidir", 64, 1, true, &ep);
	CHECK_EQ_INT(ep.window, 64);
	CHECK_STR(ep.variant, "bidir");
	pb_run_engine_params(&coll0, "mpi", &c, NULL, 64, 4, false, &ep);
	CHECK_EQ_INT(ep.n_sizes, 1);         /* a fixed size: that one point */
	CHECK_EQ_INT(ep.sizes[0], 0);
	CHECK(ep.shared_iterations);
	CHECK(ep.lat_kind != NULL);
}

/* How long a point runs: the defaults are times, -n a count, -D one window for every test. */
static void test_window_plan(void)
{
	struct pb_common_params c = { .bw_seconds = 0.2, .lat_seconds = 0.1, .lat_samples = 1000 };
	struct pb_engine_params ep;
	char err[200] = "";

	pb_run_engine_params(&bw, "verbs", &c, NULL, 64, 2, true, &ep);
	CHECK_EQ_INT(ep.method, PB_WM_WINDOW);
	CHECK(ep.duration_s == 0.2);
	CHECK(!ep.histogram);
	pb_run_engine_params(&lat, "mpi", &c, NULL, 64, 2, true, &ep);
	CHECK_EQ_INT(ep.method, PB_WM_TARGET);
	CHECK(ep.duration_s == 0.1);
	CHECK_EQ_INT(ep.min_iterations, 1000);
	CHECK_EQ_INT(ep.iterations, PB_TARGET_MAX_SAMPLES);
	/* No stop on a deadline (collectives, block timing): the default count. */
	pb_run_engine_params(&coll0, "mpi", &c, NULL, 64, 4, false, &ep);
	CHECK_EQ_INT(ep.method, PB_WM_COUNT);
	CHECK_EQ_INT(ep.iterations, PB_DEFAULT_ITERATIONS);
	CHECK(ep.duration_s == 0);
	c.iterations = 20000;
	pb_run_engine_params(&bw, "verbs", &c, NULL, 64, 2, true, &ep);
	CHECK_EQ_INT(ep.method, PB_WM_COUNT);
	CHECK_EQ_INT(ep.iterations, 20000);
	CHECK_EQ_INT(pb_window_check(&c, err, sizeof(err)), 0);
	c.duration_s = 0.5;
	CHECK_EQ_INT(pb_window_check(&c, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "-n/--iterations 20000") && strstr(err, "-D/--duration 0.5"));
	c.iterations = 0;
	pb_run_engine_params(&lat, "mpi", &c, NULL, 64, 2, true, &ep);
	CHECK_EQ_INT(ep.method, PB_WM_WINDOW);   /* -D: latency into a histogram */
	CHECK(ep.histogram && ep.duration_s == 0.5);
}

static void test_pin_request(void)
{
	struct pb_common_params c = { .pin = PB_PIN_LIST, .pin_list = "0,2-3",
				      .allow_oversubscribe = true };
	struct pb_pin_request req;
	unsigned list[PB_PIN_MAX];
	char err[128] = "";

	CHECK_EQ_INT(pb_run_pin_request(&c, 4, list, &req, err, sizeof(err)), 0);
	CHECK_EQ_INT(req.policy, PB_PIN_LIST);
	CHECK_EQ_INT(req.nprocs, 4);
	CHECK(req.allow_oversubscribe);
	CHECK_EQ_INT(req.nlist, 3);
	CHECK_EQ_INT(req.list[2], 3);
	c.pin_list = "x";
	CHECK_EQ_INT(pb_run_pin_request(&c, 4, list, &req, err, sizeof(err)), -EINVAL);
	CHECK(err[0] != 0);
	c.pin = PB_PIN_SCATTER;
	CHECK_EQ_INT(pb_run_pin_request(&c, 2, list, &req, err, sizeof(err)), 0);
	CHECK_EQ_INT(req.policy, PB_PIN_SCATTER);
	CHECK(req.list == NULL);
}

int main(void)
{
	test_engine_params();
	test_pin_request();
	test_window_plan();
	TEST_DONE();
}
