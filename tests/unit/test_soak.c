/* SPDX-License-Identifier: BSD-3-Clause */
/* Soak buckets (core/pb_soak.h): bucket boundaries, the series file, exact percentiles, stalls. */
#define _GNU_SOURCE
#include "pb_soak.h"
#include "pb_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#define MS 1000000ull

static struct pb_soak_rec rec;
static struct pb_row row;

static void test_check(void)
{
	char err[256];
	struct pb_soak_params p = { .soak_s = 4, .bucket_s = 0.1, .stall_fraction = 0.5 };

	CHECK_EQ_INT(pb_soak_check(&p, err, sizeof(err)), 0);
	p.soak_s = 1.05;
	p.bucket_s = 0.1;
	CHECK_EQ_INT(pb_soak_check(&p, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "whole number") != NULL);
	p.soak_s = 0.1;
	CHECK_EQ_INT(pb_soak_check(&p, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "at least 2") != NULL);
	p.soak_s = 0;
	CHECK_EQ_INT(pb_soak_check(&p, err, sizeof(err)), 0);
	p.soak_s = 86400;
	CHECK_EQ_INT(pb_soak_check(&p, err, sizeof(err)), 0);
}

static void test_path(void)
{
	char buf[128];

	CHECK_EQ_INT(pb_soak_path("/r/s", 65536, NULL, 3, buf, sizeof(buf)), 0);
	CHECK(strcmp(buf, "/r/s-65536B-pair3.pbsoak") == 0);
	CHECK_EQ_INT(pb_soak_path("/r/s", 8, "shift:1", 0, buf, sizeof(buf)), 0);
	CHECK(strcmp(buf, "/r/s-8B-shift:1-pair0.pbsoak") == 0);
	CHECK_EQ_INT(pb_soak_path("/r/s", 8, NULL, 0, buf, 10), -ENAMETOOLONG);
}

static int open_rec(double soak_s, double bucket_s, const char *path)
{
	struct pb_soak_params p = { .soak_s = soak_s, .bucket_s = bucket_s, .stall_fraction = 0.5 };
	struct pb_soak_header h = { .pair_id = 1, .pairs = 2, .msg_size_bytes = 64 };
	char err[256];
	int rc = pb_soak_open(&rec, path, &p, &h, err, sizeof(err));

	if (rc)
		fprintf(stderr, "%s\n", err);
	return rc;
}

/* Read bucket i of the recorder's file. */
static struct pb_soak_bucket bucket_at(uint64_t i)
{
	struct pb_soak_bucket b = { 0 };

	CHECK(pread(rec.fd, &b, sizeof(b), (off_t)(PB_SOAK_HEADER_BYTES + i * sizeof(b))) == sizeof(b));
	return b;
}

/*
 * 2 s of 0.1 s buckets; 10 messages complete every ms, except from 0.7 s to 1.2 s (a peer
 * stopped): buckets 7..11 are zero, the stall is bucket 7, 5 buckets long; the window that
 * completes after the end counts in the last bucket.
 */
static void test_stall(void)
{
	const uint64_t t0 = 5000 * MS;
	struct pb_soak_summary s;
	struct pb_soak_header h;
	char err[256];
	uint64_t total = 0;

	CHECK_EQ_INT(open_rec(2.0, 0.1, NULL), 0);
	pb_soak_start(&rec, t0);
	for (uint64_t ms = 1; ms <= 2000; ms++) {
		if (ms > 700 && ms <= 1200)
			continue;
		pb_soak_add(&rec, t0 + ms * MS - 1, 10);
		total += 10;
	}
	pb_soak_add(&rec, t0 + 2003 * MS, 7); /* the last window, after the deadline */
	total += 7;
	CHECK(rec.fill < PB_SOAK_RING);
	CHECK_EQ_INT(pb_soak_finish(&rec, t0 + 2003 * MS, false, &s, err, sizeof(err)), 0);
	CHECK_EQ_INT(s.on, 1);
	CHECK_EQ_INT(s.buckets, 20);
	CHECK_EQ_INT(s.sum_msgs, total);
	CHECK_EQ_INT(s.stalls, 1);
	CHECK_EQ_INT(s.first_stall_bucket, 7);
	CHECK_EQ_INT(s.longest_stall_buckets, 5);
	CHECK(s.min_msgs == 0);
	CHECK(s.p50_msgs == 1000);
	CHECK(s.p1_msgs == 0);
	CHECK_EQ_INT(bucket_at(0).messages, 1000);
	CHECK_EQ_INT(bucket_at(7).messages, 0);
	CHECK_EQ_INT(bucket_at(12).messages, 1000);
	CHECK_EQ_INT(bucket_at(19).messages, 1007);
	/* The row: 1000 messages of 64 B per 0.1 s bucket = 5.12 Mbit/s; the stall as found. */
	memset(&row, 0, sizeof(row));
	pb_soak_row_pair(&row, &s, 64);
	CHECK_STR(row.cell[PB_COL_bucket_gbit_s_p50], "0.00512");
	CHECK_STR(row.cell[PB_COL_stalls], "1");
	CHECK_STR(row.cell[PB_COL_first_stall_s], "0.7");
	CHECK_STR(row.cell[PB_COL_longest_stall_s], "0.5");
	CHECK_STR(row.cell[PB_COL_min_bucket_share], "0");
	CHECK(strstr(row.cell[PB_COL_flags], "soak_zero_median") == NULL);
	CHECK(strstr(row.cell[PB_COL_flags], "soak_coarse") == NULL); /* window unknown */
	/* 1000 messages per median bucket in windows of 64: 15.6 windows, not coarse; of 128: coarse */
	s.window_msgs = 64;
	memset(&row, 0, sizeof(row));
	pb_soak_row_pair(&row, &s, 64);
	CHECK(strstr(row.cell[PB_COL_flags], "soak_coarse") == NULL);
	s.window_msgs = 128;
	memset(&row, 0, sizeof(row));
	pb_soak_row_pair(&row, &s, 64);
	CHECK(strstr(row.cell[PB_COL_flags], "soak_coarse") != NULL);
	CHECK(pread(rec.fd, &h, sizeof(h), 0) == sizeof(h));
	CHECK(memcmp(h.magic, PB_SOAK_MAGIC, 8) == 0);
	CHECK_EQ_INT(h.complete, 1);
	CHECK_EQ_INT(h.buckets, 20);
	CHECK_EQ_INT(h.start_ns, t0);
	CHECK_EQ_INT(h.bucket_ns, 100 * MS);
	CHECK_EQ_INT(h.pair_id, 1);
	pb_soak_close(&rec);
}

/* A bucket at 60 % of the median is no stall; at 40 % it is one (strictly below half). */
static void test_threshold(void)
{
	const uint64_t t0 = 1000 * MS;
	struct pb_soak_summary s;
	char err[256];

	CHECK_EQ_INT(open_rec(1.0, 0.1, NULL), 0);
	pb_soak_start(&rec, t0);
	for (uint64_t b = 0; b < 10; b++)
		pb_soak_add(&rec, t0 + b * 100 * MS + 50 * MS, b == 3 ? 60 : b == 6 ? 40 : b == 7 ? 50 : 100);
	CHECK_EQ_INT(pb_soak_finish(&rec, t0 + 1000 * MS, false, &s, err, sizeof(err)), 0);
	CHECK(s.p50_msgs == 100);
	CHECK_EQ_INT(s.stalls, 1);
	CHECK_EQ_INT(s.first_stall_bucket, 6);
	CHECK_EQ_INT(s.longest_stall_buckets, 1);
	CHECK(s.min_msgs == 40);
	pb_soak_close(&rec);
}

/* Stopped early (a signal): buckets up to the end's bucket only, marked partial. */
static void test_partial(void)
{
	const uint64_t t0 = 1000 * MS;
	struct pb_soak_summary s;
	char err[256];

	CHECK_EQ_INT(open_rec(10.0, 0.1, NULL), 0);
	pb_soak_start(&rec, t0);
	for (uint64_t ms = 1; ms <= 440; ms++)
		pb_soak_add(&rec, t0 + ms * MS, 1);
	CHECK_EQ_INT(pb_soak_finish(&rec, t0 + 441 * MS, true, &s, err, sizeof(err)), 0);
	CHECK_EQ_INT(s.partial, 1);
	CHECK_EQ_INT(s.buckets, 5);
	CHECK_EQ_INT(s.sum_msgs, 440);
	CHECK_EQ_INT(s.stalls, 1); /* bucket 4 holds 41 of a median 100 */
	CHECK_EQ_INT(s.first_stall_bucket, 4);
	pb_soak_close(&rec);
}

/* Many buckets (the ring is written out ~once a second) and a long gap advance cleanly. */
static void test_long(void)
{
	const uint64_t t0 = 1000 * MS;
	struct pb_soak_summary s;
	char err[256];

	CHECK_EQ_INT(open_rec(1000.0, 0.01, NULL), 0); /* 100,000 buckets */
	pb_soak_start(&rec, t0);
	for (uint64_t b = 0; b < 100000; b++) {
		if (b >= 50000 && b < 80000) /* a 300 s silence: one stall of 30,000 buckets */
			continue;
		pb_soak_add(&rec, t0 + b * 10 * MS + 1, 3);
	}
	CHECK_EQ_INT(pb_soak_finish(&rec, t0 + 1000000 * MS, false, &s, err, sizeof(err)), 0);
	CHECK_EQ_INT(s.buckets, 100000);
	CHECK_EQ_INT(s.stalls, 1);
	CHECK_EQ_INT(s.longest_stall_buckets, 30000);
	CHECK_EQ_INT(s.first_stall_bucket, 50000);
	CHECK(s.p50_msgs == 3);
	CHECK_EQ_INT(s.sum_msgs, 70000 * 3);
	pb_soak_close(&rec);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The radix selection gives exactly the nearest-rank percentiles of a sort. */
static void test_exact_percentiles(void)
{
	enum { N = 12345 };
	static uint64_t v[N];
	static struct pb_soak_bucket b[N];
	struct pb_soak_summary s = { 0 };
	uint64_t x = 88172645463325252ull;
	int fd = open("/tmp", O_RDWR | O_TMPFILE, 0600);

	CHECK(fd >= 0);
	for (int i = 0; i < N; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* wide spread: zeros, small counts and values near 2^40 */
		v[i] = i % 97 == 0 ? 0 : (x % 5 == 0 ? x >> 24 : x % 100000);
		b[i].messages = v[i];
	}
	CHECK(pwrite(fd, b, sizeof(b), 0) == (ssize_t)sizeof(b));
	CHECK_EQ_INT(pb_soak_analyse(fd, 0, N, 0.5, &s), 0);
	qsort(v, N, sizeof(v[0]), cmp_u64);
	CHECK(s.min_msgs == (double)v[0]);
	CHECK(s.p1_msgs == (double)v[(1000ull * N + 99999) / 100000 - 1]);
	CHECK(s.p50_msgs == (double)v[(50000ull * N + 99999) / 100000 - 1]);
	/* 1 bucket: no percentile, no threshold, no stall */
	CHECK_EQ_INT(pb_soak_analyse(fd, 0, 1, 0.5, &s), 0);
	CHECK(isnan(s.p50_msgs));
	CHECK_EQ_INT(s.stalls, 0);
	close(fd);
}

/* A flow that never moved: median 0, so no stall can be below it (the rows say min 0). */
static void test_all_zero(void)
{
	const uint64_t t0 = 1000 * MS;
	struct pb_soak_summary s;
	char err[256];
	char path[] = "/tmp/pb_soak_testXXXXXX";
	int tmp = mkstemp(path);

	CHECK(tmp >= 0);
	close(tmp);
	CHECK_EQ_INT(open_rec(1.0, 0.5, path), 0);
	pb_soak_start(&rec, t0);
	CHECK_EQ_INT(pb_soak_finish(&rec, t0 + 1000 * MS, false, &s, err, sizeof(err)), 0);
	CHECK(s.p50_msgs == 0);
	CHECK_EQ_INT(s.stalls, 0);
	CHECK_EQ_INT(s.buckets, 2);
	/* Said in the row: no median to judge stalls against. */
	memset(&row, 0, sizeof(row));
	pb_soak_row_pair(&row, &s, 64);
	CHECK(strstr(row.cell[PB_COL_flags], "soak_zero_median") != NULL);
	CHECK_STR(row.cell[PB_COL_min_bucket_share], "");
	CHECK_STR(row.cell[PB_COL_stalls], "0");
	pb_soak_close(&rec);
	unlink(path);
}

/* --validate-live: the pattern is intact after fill, one flipped byte is one bad byte, and
 * another pair or window is a different payload. */
static void test_pattern(void)
{
	static unsigned char buf[65536 + 5];
	double sec;

	for (size_t len = 1; len <= sizeof(buf); len = len < 64 ? len + 1 : len * 3 + 5) {
		pb_soak_pattern_fill(buf, len, 3, 77);
		CHECK_EQ_INT(pb_soak_pattern_check(buf, len, 3, 77), 0);
		buf[len / 2] ^= 0x5a;
		CHECK_EQ_INT(pb_soak_pattern_check(buf, len, 3, 77), 1);
		buf[len / 2] ^= 0x5a;
		if (len >= 16) {
			CHECK(pb_soak_pattern_check(buf, len, 4, 77) > 0);
			CHECK(pb_soak_pattern_check(buf, len, 3, 78) > 0);
		}
	}
	CHECK_EQ_INT(pb_soak_fault(NULL, 1, &sec), 0);
	CHECK(sec < 0);
	CHECK_EQ_INT(pb_soak_fault("flip:1:2.5", 1, &sec), 0);
	CHECK(sec == 2.5);
	CHECK_EQ_INT(pb_soak_fault("flip:1:2.5", 0, &sec), 0);
	CHECK(sec < 0);
	CHECK_EQ_INT(pb_soak_fault("flip:x", 1, &sec), -EINVAL);
	CHECK_EQ_INT(pb_soak_fault("flip:1:2.5junk", 1, &sec), -EINVAL);
}

int main(void)
{
	test_pattern();
	test_check();
	test_path();
	test_stall();
	test_threshold();
	test_partial();
	test_long();
	test_exact_percentiles();
	test_all_zero();
	TEST_DONE();
}
