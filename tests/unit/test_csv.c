/* SPDX-License-Identifier: BSD-3-Clause */
/* CSV: header/row column counts, quoting, empty cells, schema printing, row building. */
#include "pb_csv.h"
#include "pb_result.h"
#include "pb_test.h"

#include <errno.h>

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
	pb_row_set_double(&row, PB_COL_link_pct, NAN, 2); /* unknown link: empty, not 0 */
	pb_row_set_double(&row, PB_COL_lat_us_p50, 1.23456789, 4);
	CHECK_EQ_INT(pb_csv_write_row(f, &row), 0);
	text = read_all(f);
	CHECK(!strncmp(text, "schema_version,layer,test,", 26));
	CHECK_EQ_INT(count_fields(text), PB_COL_COUNT);
	second = strchr(text, '\n') + 1;
	CHECK_EQ_INT(count_fields(second), PB_COL_COUNT);
	CHECK(strstr(second, "\"peer said \"\"no\"\", twice\"") != NULL);
	CHECK(!strncmp(second, "1,verbs,", 8));
	CHECK_STR(row.cell[PB_COL_link_pct], "");
	CHECK_STR(row.cell[PB_COL_lat_us_p50], "1.2346");
	fclose(f);
}

static void test_schema_print(void)
{
	FILE *f = tmpfile();
	char *text;
	int lines = 0;

	pb_schema_print(f);
	text = read_all(f);
	CHECK(!strncmp(text, "pairbench-schema 1\n", 19));
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

/* Aggregate = sum of bytes over the global window, never a sum of per-pair rates. */
static void test_aggregate_window(void)
{
	struct pb_point_desc pt = { "verbs", "write_bw", NULL, NULL, 1000, 2, 100.0, false };
	struct pb_pair_result res[2] = {
		bw_pair(0, 0, 1000000, 1000000),       /* 1 MB in 1 ms  = 8 Gbit/s */
		bw_pair(1, 1000000, 2000000, 1000000), /* 1 MB in the next ms, no overlap */
	};
	struct pb_row rows[3];

	CHECK_EQ_INT(pb_result_rows(&pt, res, 2, NULL, 0, rows), 0);
	CHECK_STR(rows[0].cell[PB_COL_bw_gbit_s], "8.000000");
	CHECK_STR(rows[1].cell[PB_COL_bw_gbit_s], "8.000000");
	/* 2 MB over 2 ms = 8 Gbit/s, not the 16 a sum of rates would claim */
	CHECK_STR(rows[2].cell[PB_COL_bw_gbit_s], "8.000000");
	CHECK_STR(rows[2].cell[PB_COL_pair_id], "all");
	CHECK_STR(rows[2].cell[PB_COL_start_skew_us], "1000.000");
	CHECK_STR(rows[2].cell[PB_COL_fairness], "1.0000");
	CHECK_STR(rows[2].cell[PB_COL_link_pct], "8.00");
	CHECK_STR(rows[2].cell[PB_COL_msg_rate_per_s], "1000000.0");
	CHECK_STR(rows[2].cell[PB_COL_iterations], "2000");
	CHECK_STR(rows[0].cell[PB_COL_fairness], "");
	CHECK_STR(rows[2].cell[PB_COL_lat_us_p50], ""); /* not a latency test: empty */
	CHECK_STR(rows[2].cell[PB_COL_status], "ok");

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
	struct pb_point_desc pt = { "verbs", "write_lat", NULL, "half_rtt", 64, 2, 0, false };
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
}

int main(void)
{
	test_header_and_row();
	test_schema_print();
	test_aggregate_window();
	test_error_rows();
	TEST_DONE();
}
