/* SPDX-License-Identifier: BSD-3-Clause */
/* CSV: header/row column counts, quoting, empty cells, schema printing, row building. */
#include "pb_csv.h"
#include "pb_result.h"
#include "pb_test.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

/* Count the fields of one CSV line (RFC 4180 quotes). */
static int count_fields(const char *line)
{
	int n = 1;
	bool q = false;

	for (const char *p = line; *p && *p != '\n'; p++) {
		if (*p == '"')
			q = !q;
		else if (*p == ',' && !q)
			n++;
	}
	return n;
}

static char *read_all(FILE *f)
{
	static char buf[1 << 16];
	size_t n;

	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	return buf;
}

static void test_header_and_row(void)
{
	FILE *f = tmpfile();
	struct pb_row row;
	char *text, *second;

	CHECK(f != NULL);
	CHECK_EQ_INT(pb_csv_write_header(f), 0);
	pb_row_init(&row);
	pb_row_set_str(&row, PB_COL_layer, "verbs");
	pb_row_set_str(&row, PB_COL_error, "peer said \"no\", twice");
	pb_row_set_double(&row, PB_COL_link_pct, NAN); /* unknown link: empty, not 0 */
	pb_row_set_double(&row, PB_COL_lat_us_p50, 1.23456789);
	CHECK_EQ_INT(pb_csv_write_row(f, &row), 0);
	text = read_all(f);
	CHECK(!strncmp(text, "schema_version,layer,test,", 26));
	CHECK_EQ_INT(count_fields(text), PB_COL_COUNT);
	second = strchr(text, '\n') + 1;
	CHECK_EQ_INT(count_fields(second), PB_COL_COUNT);
	CHECK(strstr(second, "\"peer said \"\"no\"\", twice\"") != NULL);
	CHECK(!strncmp(second, "6,verbs,", 8));
	CHECK_STR(row.cell[PB_COL_link_pct], "");
	CHECK_STR(row.cell[PB_COL_lat_us_p50], "1.23456789");
	fclose(f);
}

static void test_schema_print(void)
{
	FILE *f = tmpfile();
	char *text;
	int lines = 0;

	pb_schema_print(f);
	text = read_all(f);
	CHECK(!strncmp(text, "pairbench-schema 6\n", 19));
	for (char *p = text; *p; p++)
		lines += *p == '\n';
	CHECK_EQ_INT(lines, PB_COL_COUNT + 1);
	CHECK(strstr(text, "\nlat_us_p999\t") != NULL);
	CHECK(strstr(text, "\nbw_gbit_s\t") != NULL);
	CHECK(strstr(text, "\nstatus\t") != NULL);
	CHECK_STR(pb_col_name(PB_COL_pair_id), "pair_id");
	fclose(f);
}

static struct pb_pair_result bw_pair(unsigned id, uint64_t start, uint64_t end, uint64_t bytes)
{
	struct pb_pair_result r = { .pair_id = id, .cpu = (int)id, .numa_node = 0, .has_bw = 1,
				    .iterations = bytes / 1000, .bytes = bytes,
				    .messages = bytes / 1000, .start_ns = start, .end_ns = end };
	return r;
}

/*
 * The pairs' end spread and the window all of them ran in; tail_dominated exactly when the
 * ends spread by more than PB_TAIL_FRACTION of the aggregate's window.
 */
static void test_end_spread(void)
{
	struct pb_point_desc pt = { "mpi", "bw", NULL, NULL, 1000, 2, 0, false, NULL, NULL, 0, false,
				    "count", 0 };
	struct pb_pair_result res[2] = {
		bw_pair(0, 0, 100000000, 1000000),      /* 0 .. 100 ms */
		bw_pair(1, 1000, 104000000, 1000000),   /* 1 us .. 104 ms: 4 ms apart, 3.8 % */
	};
	struct pb_row rows[3];

	CHECK_EQ_INT(pb_result_rows(&pt, res, 2, NULL, 0, rows), 0);
	CHECK_STR(rows[2].cell[PB_COL_end_spread_us], "4000");
	CHECK_STR(rows[2].cell[PB_COL_overlap_s], "0.099999");
	CHECK_STR(rows[2].cell[PB_COL_duration_s], "0.104");
	CHECK_STR(rows[2].cell[PB_COL_window_method], "count");
	CHECK_STR(rows[0].cell[PB_COL_window_method], "count");
	CHECK_STR(rows[2].cell[PB_COL_window_s], "");
	CHECK(strstr(rows[2].cell[PB_COL_flags], "tail_dominated") == NULL);
	/* 6 ms apart over 106 ms: 5.7 % > 5 %, flagged on the aggregate only */
	res[1].end_ns = 106000000;
	CHECK_EQ_INT(pb_result_rows(&pt, res, 2, NULL, 0, rows), 0);
	CHECK_STR(rows[2].cell[PB_COL_end_spread_us], "6000");
	CHECK(strstr(rows[2].cell[PB_COL_flags], "tail_dominated") != NULL);
	CHECK(strstr(rows[1].cell[PB_COL_flags], "tail_dominated") == NULL);
	/* Pairs that never ran at the same time: no overlap. */
	res[1].start_ns = 101000000;
	CHECK_EQ_INT(pb_result_rows(&pt, res, 2, NULL, 0, rows), 0);
	CHECK_STR(rows[2].cell[PB_COL_overlap_s], "0");
	/* A common window: the method and its length in every row. */
	pt.window_method = "window";
	pt.window_s = 0.2;
	CHECK_EQ_INT(pb_result_rows(&pt, res, 2, NULL, 0, rows), 0);
	CHECK_STR(rows[0].cell[PB_COL_window_s], "0.2");
	CHECK_STR(rows[2].cell[PB_COL_window_method], "window");
	/* One bandwidth pair: nothing to be tail-dominated by. */
	res[0].end_ns = 10000000;
	CHECK_EQ_INT(pb_result_rows(&pt, res, 1, NULL, 0, rows), 0);
	CHECK(strstr(rows[1].cell[PB_COL_flags], "tail_dominated") == NULL);
}

/* Aggregate = sum of bytes over the global window, never a sum of per-pair rates. */
static void test_aggregate_window(void)
{
	struct pb_point_desc pt = { "verbs", "write_bw", NULL, NULL, 1000, 2, 100.0, false, "fresh", NULL, 0, false, NULL, 0 };
	struct pb_pair_result res[2] = {
		bw_pair(0, 0, 1000000, 1000000),       /* 1 MB in 1 ms  = 8 Gbit/s */
		bw_pair(1, 1000000, 2000000, 1000000), /* 1 MB in the next ms, no overlap */
	};
	struct pb_row rows[3];

	CHECK_EQ_INT(pb_result_rows(&pt, res, 2, NULL, 0, rows), 0);
	CHECK_STR(rows[0].cell[PB_COL_bw_gbit_s], "8");
	CHECK_STR(rows[1].cell[PB_COL_bw_gbit_s], "8");
	/* 2 MB over 2 ms = 8 Gbit/s, not the 16 a sum of rates would claim */
	CHECK_STR(rows[2].cell[PB_COL_bw_gbit_s], "8");
	CHECK_STR(rows[2].cell[PB_COL_pair_id], "all");
	CHECK_STR(rows[2].cell[PB_COL_start_skew_us], "1000");
	CHECK_STR(rows[2].cell[PB_COL_fairness], "1");
	CHECK_STR(rows[2].cell[PB_COL_link_pct], "8");
	CHECK_STR(rows[2].cell[PB_COL_msg_rate_per_s], "1000000");
	CHECK_STR(rows[2].cell[PB_COL_iterations], "2000");
	CHECK_STR(rows[0].cell[PB_COL_fairness], "");
	CHECK_STR(rows[2].cell[PB_COL_lat_us_p50], ""); /* not a latency test: empty */
	CHECK_STR(rows[2].cell[PB_COL_status], "ok");
	/* The layout is in every row of the point (issue 16). */
	CHECK_STR(rows[0].cell[PB_COL_buffers], "fresh");
	CHECK_STR(rows[2].cell[PB_COL_buffers], "fresh");

	/* Above the link rate: flagged. */
	pt.link_gbit_s = 4.0;
	CHECK_EQ_INT(pb_result_rows(&pt, res, 2, NULL, 0, rows), 0);
	CHECK(strstr(rows[2].cell[PB_COL_flags], "above_link_rate") != NULL);
	CHECK(strstr(rows[0].cell[PB_COL_flags], "above_link_rate") != NULL);
	pt.link_gbit_s = 0; /* unknown: no link_pct */
	CHECK_EQ_INT(pb_result_rows(&pt, res, 2, NULL, 0, rows), 0);
	CHECK_STR(rows[2].cell[PB_COL_link_pct], "");

	/* Collectives: every row took part in the same iterations: not summed. */
	res[1].iterations = 999; /* a rank that stopped early shows, the max counts */
	pt.shared_iterations = true;
	CHECK_EQ_INT(pb_result_rows(&pt, res, 2, NULL, 0, rows), 0);
	CHECK_STR(rows[2].cell[PB_COL_iterations], "1000");
	pt.shared_iterations = false;
	CHECK_EQ_INT(pb_result_rows(&pt, res, 2, NULL, 0, rows), 0);
	CHECK_STR(rows[2].cell[PB_COL_iterations], "1999");
}

static void test_error_rows(void)
{
	struct pb_point_desc pt = { "verbs", "write_lat", NULL, "half_rtt", 64, 2, 0, false, NULL, NULL, 0, false, NULL, 0 };
	struct pb_pair_result res[2] = { { .pair_id = 0, .has_lat = 1, .cpu = -1, .numa_node = -1 },
					 { .pair_id = 1, .cpu = -1, .numa_node = -1 } };
	struct pb_row rows[3];
	double pooled[2] = { 2.0, 1.0 };

	res[0].lat_us.p50 = 1.0;
	res[0].iterations = 1;
	pb_result_fail(&res[1], -ETIMEDOUT, "completion timeout on QP %d", 17);
	CHECK_EQ_INT(pb_result_rows(&pt, res, 2, pooled, 2, rows), 0);
	CHECK_STR(rows[0].cell[PB_COL_status], "ok");
	CHECK_STR(rows[1].cell[PB_COL_status], "error");
	CHECK_STR(rows[1].cell[PB_COL_error], "completion timeout on QP 17");
	CHECK_STR(rows[2].cell[PB_COL_status], "error");
	CHECK(strstr(rows[2].cell[PB_COL_error], "pair 1: completion timeout") != NULL);
	CHECK_STR(rows[2].cell[PB_COL_bw_gbit_s], "");

	/* A reason that already names its pair is not prefixed twice (pair 10 is not pair 1). */
	pb_result_fail(&res[1], -ETIMEDOUT, "pair 1 at 64 B: completion timeout");
	CHECK_EQ_INT(pb_result_rows(&pt, res, 2, pooled, 2, rows), 0);
	CHECK_STR(rows[2].cell[PB_COL_error], "pair 1 at 64 B: completion timeout");
	res[1].pair_id = 1;
	pb_result_fail(&res[1], -ETIMEDOUT, "pair 10: not mine");
	CHECK_EQ_INT(pb_result_rows(&pt, res, 2, pooled, 2, rows), 0);
	CHECK_STR(rows[2].cell[PB_COL_error], "pair 1: pair 10: not mine");
}

/* At least 6 significant digits at any magnitude (was: fixed decimals, 0.000082). */
static void test_precision(void)
{
	static const double vals[] = { 8.2123456e-5, 7.5432109e-5, 1.23456789e-9, 0.5,
				       123456.789, 9.87654321e11, 3.0e-300 };
	struct pb_row row;

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		double back;

		pb_row_set_double(&row, PB_COL_bw_gbit_s, vals[i]);
		back = strtod(row.cell[PB_COL_bw_gbit_s], NULL);
		CHECK(fabs(back - vals[i]) <= 5e-7 * fabs(vals[i]));
	}
	pb_row_set_double(&row, PB_COL_bw_gbit_s, 8.2123456e-5);
	CHECK_STR(row.cell[PB_COL_bw_gbit_s], "8.2123456e-05");
	pb_row_set_double(&row, PB_COL_duration_s, 0.000075);
	CHECK_STR(row.cell[PB_COL_duration_s], "7.5e-05");
	pb_row_set_double(&row, PB_COL_lat_us_p50, 69.7);
	CHECK_STR(row.cell[PB_COL_lat_us_p50], "69.7");
	pb_row_set_double(&row, PB_COL_lat_us_p50, INFINITY);
	CHECK_STR(row.cell[PB_COL_lat_us_p50], "");
}

static struct pb_pair_result lat_pair(unsigned id, double p50, double p99, uint64_t iters)
{
	struct pb_pair_result r = { .pair_id = id, .cpu = -1, .numa_node = -1, .has_lat = 1,
				    .iterations = iters, .start_ns = 1000 * id,
				    .end_ns = 1000 * id + 5000 };

	r.lat_us.p50 = p50;
	r.lat_us.p99 = p99;
	r.lat_us.min = r.lat_us.max = r.lat_us.mean = p50;
	return r;
}

/* The worst pair is visible on the aggregate row; empty where it does not apply. */
static void test_worst_pair(void)
{
	struct pb_point_desc pt = { "verbs", "write_lat", NULL, "half_rtt", 8, 4, 0, false, NULL, NULL, 0, false, NULL, 0 };
	struct pb_pair_result res[4] = { lat_pair(0, 2.0, 3.0, 100), lat_pair(1, 2.1, 3.1, 100),
					 lat_pair(2, 4.2, 6.5, 100), lat_pair(3, 2.0, 9.0, 100) };
	double pooled[4] = { 2.0, 2.1, 4.2, 2.0 };
	struct pb_row rows[5];

	CHECK_EQ_INT(pb_result_rows(&pt, res, 4, pooled, 4, rows), 0);
	CHECK_STR(rows[4].cell[PB_COL_worst_lat_pair_id], "2");
	CHECK_STR(rows[4].cell[PB_COL_worst_lat_us_p50], "4.2");
	CHECK_STR(rows[4].cell[PB_COL_worst_lat_us_p99], "6.5"); /* that pair's, not the max p99 */
	CHECK_STR(rows[4].cell[PB_COL_min_bw_pair_id], "");     /* no bandwidth */
	CHECK_STR(rows[3].cell[PB_COL_worst_lat_pair_id], "");  /* pair rows: empty */
	CHECK_STR(rows[4].cell[PB_COL_buffers], "");            /* no layout choice: empty */
	/* iterations: the pooled samples (sum); window over the latency pairs */
	CHECK_STR(rows[4].cell[PB_COL_iterations], "400");
	CHECK_STR(rows[4].cell[PB_COL_duration_s], "8e-06");
	/* a tie goes to the lowest pair id; n < 100 leaves p99 empty */
	res[2].lat_us.p50 = 2.1;
	res[1].lat_us.p99 = NAN;
	CHECK_EQ_INT(pb_result_rows(&pt, res, 4, pooled, 4, rows), 0);
	CHECK_STR(rows[4].cell[PB_COL_worst_lat_pair_id], "1");
	CHECK_STR(rows[4].cell[PB_COL_worst_lat_us_p99], "");
	/* one pair: nothing to single out */
	pt.pairs = 1;
	CHECK_EQ_INT(pb_result_rows(&pt, res, 1, pooled, 1, rows), 0);
	CHECK_STR(rows[1].cell[PB_COL_worst_lat_pair_id], "");
	CHECK_STR(rows[1].cell[PB_COL_worst_lat_us_p50], "");
	/* collectives/halo: the aggregate is already the max over ranks: empty */
	pt.pairs = 4;
	pt.shared_iterations = true;
	CHECK_EQ_INT(pb_result_rows(&pt, res, 4, pooled, 4, rows), 0);
	CHECK_STR(rows[4].cell[PB_COL_worst_lat_pair_id], "");
	CHECK_STR(rows[4].cell[PB_COL_iterations], "100");
}

/* --timing block: pairs carry a mean and its count only; the aggregate is their count-weighted
 * mean, flagged, every other statistic empty (not a percentile of means). */
static void test_block_timed(void)
{
	struct pb_point_desc pt = { "mpi", "latency", NULL, "half_rtt", 8, 3, 0, false, "peer", NULL, 0, true, NULL, 0 };
	struct pb_pair_result res[3] = { lat_pair(0, 2.0, 3.0, 100), lat_pair(1, 2.0, 3.0, 300),
					 lat_pair(2, 9.0, 9.0, 50) };
	struct pb_row rows[4];

	for (unsigned i = 0; i < 3; i++) {
		struct pb_stats *st = &res[i].lat_us;

		st->count = res[i].iterations;
		st->min = st->max = st->stdev = st->p50 = st->p90 = st->p99 = st->p999 = NAN;
	}
	res[0].lat_us.mean = 2.0;
	res[1].lat_us.mean = 4.0;
	res[2].status = -ETIMEDOUT; /* a failed pair: the aggregate is an error row */
	CHECK_EQ_INT(pb_result_rows(&pt, res, 3, NULL, 0, rows), 0);
	CHECK_STR(rows[3].cell[PB_COL_status], "error");
	res[2].status = 0;
	res[2].has_lat = false; /* not a latency pair (loaded_lat's loaders): left out */
	CHECK_EQ_INT(pb_result_rows(&pt, res, 3, NULL, 0, rows), 0);
	CHECK_STR(rows[3].cell[PB_COL_lat_us_mean], "3.5"); /* (2 x 100 + 4 x 300) / 400 */
	CHECK_STR(rows[3].cell[PB_COL_lat_us_p50], "");
	CHECK_STR(rows[3].cell[PB_COL_lat_us_min], "");
	CHECK_STR(rows[3].cell[PB_COL_lat_us_max], "");
	CHECK_STR(rows[3].cell[PB_COL_lat_us_stdev], "");
	CHECK_STR(rows[3].cell[PB_COL_worst_lat_pair_id], ""); /* no p50 to rank pairs by */
	CHECK(strstr(rows[3].cell[PB_COL_flags], "block_timed") != NULL);
	CHECK_STR(rows[0].cell[PB_COL_lat_us_mean], "2");
	CHECK_STR(rows[0].cell[PB_COL_lat_us_p50], "");
}

/* Bandwidth: the slowest pair and its share of the mean pair. */
static void test_min_pair_bw(void)
{
	struct pb_point_desc pt = { "verbs", "write_bw", NULL, NULL, 1000, 4, 0, false, NULL, NULL, 0, false, NULL, 0 };
	struct pb_pair_result res[4] = {
		bw_pair(0, 0, 1000000, 1000000),   /* 8 Gbit/s */
		bw_pair(1, 0, 1000000, 1000000),   /* 8 */
		bw_pair(2, 0, 2000000, 1000000),   /* 4: the slow one */
		bw_pair(3, 0, 1000000, 1000000),   /* 8 */
	};
	struct pb_row rows[5];

	CHECK_EQ_INT(pb_result_rows(&pt, res, 4, NULL, 0, rows), 0);
	CHECK_STR(rows[4].cell[PB_COL_min_bw_pair_id], "2");
	CHECK_STR(rows[4].cell[PB_COL_min_pair_bw_gbit_s], "4");
	CHECK_STR(rows[4].cell[PB_COL_min_pair_bw_share], "0.571428571"); /* 4 / (28 / 4) */
	CHECK_STR(rows[4].cell[PB_COL_worst_lat_pair_id], "");
	CHECK_STR(rows[4].cell[PB_COL_iterations], "4000");
	CHECK_STR(rows[4].cell[PB_COL_duration_s], "0.002");
}

/*
 * loaded_lat: pair 0 probes (latency only), pairs 1..2 load (bandwidth only).
 * The aggregate's iterations and duration_s describe its bandwidth (the load),
 * not probe iterations plus messages over the probe's window.
 */
static void test_loaded_aggregate(void)
{
	struct pb_point_desc pt = { "mpi", "loaded_lat", NULL, "half_rtt", 1000, 3, 0, false, NULL, NULL, 0, false, NULL, 0 };
	struct pb_pair_result res[3] = {
		lat_pair(0, 5.0, 7.0, 1000),
		bw_pair(1, 100, 1000100, 1000000),
		bw_pair(2, 200, 2000200, 2000000),
	};
	struct pb_row rows[4];

	res[0].start_ns = 0;
	res[0].end_ns = 500000;
	CHECK_EQ_INT(pb_result_rows(&pt, res, 3, NULL, 0, rows), 0);
	CHECK_STR(rows[3].cell[PB_COL_iterations], "3000");      /* 1000 + 2000 messages */
	CHECK_STR(rows[3].cell[PB_COL_duration_s], "0.0020001"); /* 100 .. 2000200 ns */
	CHECK_STR(rows[3].cell[PB_COL_bw_gbit_s], "11.9994");    /* 3 MB * 8 / 2.0001 ms */
	CHECK_STR(rows[3].cell[PB_COL_lat_us_p50], "5");         /* the probe's */
	CHECK_STR(rows[3].cell[PB_COL_worst_lat_pair_id], "");   /* one latency pair */
	CHECK_STR(rows[3].cell[PB_COL_min_bw_pair_id], "1");     /* 8 vs 8 Gbit/s: tie, lowest id */
	CHECK_STR(rows[0].cell[PB_COL_iterations], "1000");
	CHECK_STR(rows[0].cell[PB_COL_duration_s], "0.0005");
}

int main(void)
{
	test_precision();
	test_worst_pair();
	test_block_timed();
	test_min_pair_bw();
	test_loaded_aggregate();
	test_header_and_row();
	test_schema_print();
	test_aggregate_window();
	test_end_spread();
	test_error_rows();
	TEST_DONE();
}
