/* SPDX-License-Identifier: BSD-3-Clause */
/* A tiny assertion header: each failure prints file:line and the values. */
#ifndef PB_TEST_H
#define PB_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int pb_test_failures;

#define CHECK(cond)                                                                    \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
			pb_test_failures++;                                            \
		}                                                                      \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                             \
	do {                                                                           \
		long long a_ = (long long)(a), b_ = (long long)(b);                    \
		if (a_ != b_) {                                                        \
			fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, \
				__LINE__, #a, #b, a_, b_);                             \
			pb_test_failures++;                                            \
		}                                                                      \
	} while (0)

#define CHECK_NEAR(a, b, tol)                                                          \
	do {                                                                           \
		double a_ = (a), b_ = (b);                                             \
		if (!(fabs(a_ - b_) <= (tol))) {                                       \
			fprintf(stderr, "%s:%d: %s ~= %s failed: %.12g vs %.12g (tol %g)\n", \
				__FILE__, __LINE__, #a, #b, a_, b_, (double)(tol));    \
			pb_test_failures++;                                            \
		}                                                                      \
	} while (0)

#define CHECK_STR(a, b)                                                                \
	do {                                                                           \
		const char *a_ = (a), *b_ = (b);                                       \
		if (strcmp(a_, b_)) {                                                  \
			fprintf(stderr, "%s:%d: %s == %s failed: '%s' != '%s'\n", __FILE__, \
				__LINE__, #a, #b, a_, b_);                             \
			pb_test_failures++;                                            \
		}                                                                      \
	} while (0)

#define TEST_DONE()                                                                    \
	do {                                                                           \
		if (pb_test_failures)                                                  \
			fprintf(stderr, "%d check(s) failed\n", pb_test_failures);     \
		return pb_test_failures ? 1 : 0;                                       \
	} while (0)

#endif
