/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Options every pairbench executable shares, as a parameter struct and the
 * option-table entries that fill it.  A layer embeds struct pb_common_params
 * in its own parameter struct and puts PB_COMMON_OPTS(its_type, member) in
 * its table, so spellings, ranges and defaults are the same everywhere.
 */
#ifndef PB_COMMON_H
#define PB_COMMON_H

#include "pb_opts.h"
#include "pb_pin.h"
#include "pb_test_info.h"

#include <stddef.h>

/* --pin choices, indexed by enum pb_pin_policy (pb_pin.h): the option is the policy. */
extern const char *const pb_pin_policy_names[];

/* Most pairs of one run, every layer (verbs: 2 workers per pair on one node;
 * the driver checks the same limit before it starts anything). */
#define PB_MAX_PAIRS 256

/*
 * Latency without -n/-D keeps every sample (exact percentiles) of a window of
 * --lat-seconds: at most this many per pair (a pair that fills them stops
 * there, flagged sample_cap); 4 MiB of doubles per pair.
 */
#define PB_TARGET_MAX_SAMPLES 524288
/* Tests with no time-based stop (collectives, halo, --timing block) without -n. */
#define PB_DEFAULT_ITERATIONS 1000

struct pb_common_params {
	const char *test;
	struct pb_u64_list sizes;
	uint64_t iterations;    /* -n: a fixed count; 0 = not given (the point's time decides) */
	uint64_t warmup;
	double duration_s;      /* -D: one common window for every test; 0 = not given */
	double bw_seconds;      /* bandwidth, message rate: the common window when neither is given */
	double lat_seconds;     /* latency: samples for at least this long ... */
	uint64_t lat_samples;   /* ... and at least this many, when neither is given */
	uint64_t pairs;
	int pin;                /* enum pb_pin_policy */
	const char *pin_list;
	bool allow_oversubscribe;
	const char *output;     /* NULL = stdout */
	const char *env_json;
	double timeout_s;
	bool quiet;
	bool print_schema;
	bool list_tests;
	int list_format;         /* enum pb_list_format */
	bool help;
};

/*
 * Checks across the common options after parsing (e.g. --pin-list without
 * --pin list).  Returns 0 or -EINVAL with one message in err (exit code 2).
 */
int pb_common_check(const struct pb_common_params *c, char *err, size_t errlen);

#define PB_COMMON_OPTS(type, m, default_test, default_sizes, default_iters)                      \
	{ "test", 0, PB_OPT_STRING, offsetof(type, m.test), default_test, 0, 0, NULL, "NAME",      \
	  "test to run (see --list-tests)" },                                                      \
	{ "sizes", 's', PB_OPT_SIZE_LIST, offsetof(type, m.sizes), default_sizes, 1,             \
	  1073741824.0, NULL, "LIST", "message sizes: " PB_SIZE_LIST_RULE },                      \
	{ "iterations", 'n', PB_OPT_U64, offsetof(type, m.iterations), default_iters, 1, 1e9, NULL, \
	  "N", "a fixed count of timed iterations per size instead of a time (bandwidth: messages per pair and direction); rows then report the window all pairs ran in and flag a spread of end times" }, \
	{ "warmup", 'w', PB_OPT_U64, offsetof(type, m.warmup), "100", 0, 1e9, NULL, "N",           \
	  "untimed warm-up iterations per size" },                                                 \
	{ "duration", 'D', PB_OPT_DOUBLE, offsetof(type, m.duration_s), "0", 0, 86400, NULL, "SEC", \
	  "every test: all pairs of a point run one common window of SEC seconds (0 = not given); latency via histogram" }, \
	{ "bw-seconds", 0, PB_OPT_DOUBLE, offsetof(type, m.bw_seconds), "0.2", 0.001, 86400, NULL, \
	  "SEC", "bandwidth and message rate without -n/-D: all pairs of a point run one common window of SEC seconds" }, \
	{ "lat-seconds", 0, PB_OPT_DOUBLE, offsetof(type, m.lat_seconds), "0.1", 0.001, 86400, NULL, \
	  "SEC", "latency without -n/-D: every pair samples until SEC seconds after the common start and --lat-samples samples, whichever is later" }, \
	{ "lat-samples", 0, PB_OPT_U64, offsetof(type, m.lat_samples), "1000", 1, PB_TARGET_MAX_SAMPLES, NULL, \
	  "N", "latency without -n/-D: at least N samples per pair (see --lat-seconds)" }, \
	{ "pairs", 0, PB_OPT_U64, offsetof(type, m.pairs), "1", 1, PB_MAX_PAIRS, NULL, "N",        \
	  "pairs running at once" },                                                               \
	{ "pin", 0, PB_OPT_CHOICE, offsetof(type, m.pin), "near-device", 0, 0, pb_pin_policy_names, \
	  "POLICY", "process placement" },                                                         \
	{ "pin-list", 0, PB_OPT_STRING, offsetof(type, m.pin_list), NULL, 0, 0, NULL, "LIST",      \
	  "PU OS indices for --pin list, e.g. 0,2,4" },                                            \
	{ "allow-oversubscribe", 0, PB_OPT_FLAG, offsetof(type, m.allow_oversubscribe), NULL, 0, 0, \
	  NULL, NULL, "allow more pinned processes than PUs" },                                    \
	{ "output", 'o', PB_OPT_STRING, offsetof(type, m.output), NULL, 0, 0, NULL, "FILE",        \
	  "write CSV to FILE instead of stdout" },                                                 \
	{ "env-json", 0, PB_OPT_STRING, offsetof(type, m.env_json), NULL, 0, 0, NULL, "FILE",      \
	  "write the environment record of this run (JSON) to FILE" },                             \
	{ "timeout", 0, PB_OPT_DOUBLE, offsetof(type, m.timeout_s), "60", 0.1, 86400, NULL, "SEC", \
	  "deadline for every wait (connect, barrier, completion)" },                              \
	{ "quiet", 'q', PB_OPT_FLAG, offsetof(type, m.quiet), NULL, 0, 0, NULL, NULL,             \
	  "no human-readable table on stderr" },                                                   \
	{ "print-schema", 0, PB_OPT_FLAG, offsetof(type, m.print_schema), NULL, 0, 0, NULL, NULL,  \
	  "print the CSV columns and exit" },                                                      \
	{ "list-tests", 0, PB_OPT_FLAG, offsetof(type, m.list_tests), NULL, 0, 0, NULL, NULL,      \
	  "list the tests and exit" },                                                             \
	{ "format", 0, PB_OPT_CHOICE, offsetof(type, m.list_format), "human", 0, 0,              \
	  pb_list_format_names, "FMT", "--list-tests output: human, json (the test table as data) or tsv" }, \
	{ "help", 'h', PB_OPT_FLAG, offsetof(type, m.help), NULL, 0, 0, NULL, NULL,                \
	  "this help" }

#endif
