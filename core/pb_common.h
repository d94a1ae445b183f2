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

struct pb_common_params {
	const char *test;
	struct pb_u64_list sizes;
	uint64_t iterations;
	uint64_t warmup;
	double duration_s;      /* 0 = iteration mode */
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
	  "N", "timed iterations per size (bandwidth: messages per pair and direction)" },       \
	{ "warmup", 'w', PB_OPT_U64, offsetof(type, m.warmup), "100", 0, 1e9, NULL, "N",           \
	  "untimed warm-up iterations per size" },                                                 \
	{ "duration", 'D', PB_OPT_DOUBLE, offsetof(type, m.duration_s), "0", 0, 86400, NULL, "SEC", \
	  "run each size for SEC seconds instead of -n (0 = use -n); latency via histogram" },     \
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
