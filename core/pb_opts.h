/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Option parsing from one table: name, type, range, default, help.
 * Defaults are text parsed exactly like user input, so --help prints the
 * real default.  Invalid input is rejected with a message naming the
 * option and the accepted range; no value is ever rewritten.
 *
 * Sizes: an integer with an optional binary suffix K (2^10), M (2^20) or
 * G (2^30).  Size lists (PB_SIZE_LIST_RULE; the driver's
 * scripts/pairbench/contract/sizes.py follows the same rule, tests/unit/size_list_parity.py
 * checks both): comma-separated items, each a size or a range "A:B" meaning
 * every power of two from A to B, where A and B must themselves be powers of
 * two and A <= B.  Values stay in the order written; a value listed twice
 * (also through a range) is rejected, as are empty items and spaces.
 */
#define PB_SIZE_LIST_RULE                                                                  \
	"comma-separated sizes (suffix K/M/G = 2^10/2^20/2^30); A:B = every power of two "    \
	"from A to B (A, B powers of two); in the order given, no size twice"
#ifndef PB_OPTS_H
#define PB_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pb_log.h" /* PB_CLIP_CHARS, the clipping rule */

#define PB_LIST_MAX 64

struct pb_u64_list {
	size_t n;
	uint64_t v[PB_LIST_MAX];
};

enum pb_opt_type {
	PB_OPT_FLAG,      /* bool; takes no value */
	PB_OPT_U64,       /* uint64_t, decimal */
	PB_OPT_SIZE,      /* uint64_t with K/M/G suffix */
	PB_OPT_DOUBLE,    /* double */
	PB_OPT_SIZE_LIST, /* struct pb_u64_list of sizes */
	PB_OPT_U64_LIST,  /* struct pb_u64_list of integers (no suffix) */
	PB_OPT_STRING,    /* const char * (points into argv or the default) */
	PB_OPT_CHOICE,    /* int: index into choices */
};

struct pb_opt {
	const char *name;            /* long name without "--" */
	char short_name;             /* 0 = none */
	enum pb_opt_type type;
	size_t offset;               /* of the field in the caller's parameter struct */
	const char *def;             /* default as text; NULL = none */
	double min, max;             /* inclusive range of numbers / each list item (min == max == 0: any) */
	const char *const *choices;  /* PB_OPT_CHOICE: NULL-terminated */
	const char *metavar;
	const char *help;
};

/* Result of a parse. */
struct pb_opts_result {
	uint64_t set_mask;   /* bit i: table[i] was given on the command line */
};

/*
 * Parse argv into params using table[0..n).  Every field named by the table
 * is first set to its default (flags false, options without a default 0,
 * NULL or an empty list), so the caller need not clear params.
 * Returns 0, or -EINVAL after printing one error line to stderr naming
 * the option, the value and what is accepted (the caller exits with 2).
 */
int pb_opts_parse(const struct pb_opt *table, size_t n, int argc, char **argv, void *params,
		  struct pb_opts_result *res);

/*
 * Same, but the error line goes into msg[0..msglen) instead of stderr
 * (e.g. so that only MPI rank 0 prints it).
 */
int pb_opts_parse_msg(const struct pb_opt *table, size_t n, int argc, char **argv, void *params,
		      struct pb_opts_result *res, char *msg, size_t msglen);

/* True if the option with this long name was given by the user. */
bool pb_opts_given(const struct pb_opt *table, size_t n, const struct pb_opts_result *res,
		   const char *name);

/* --help text: usage line, summary, one entry per option with its default. */
void pb_opts_print_help(FILE *f, const char *prog, const char *summary, const struct pb_opt *table,
			size_t n);

/*
 * A value as echoed in a message, by the one clipping rule (pb_log.h pb_clip_span):
 * at most PB_CLIP_CHARS characters (a 10 KB value must not push the reason out of the
 * message), non-printable ones as '?' (a newline must not split it).  Returns buf;
 * len >= PB_CLIP_CHARS + 1, or "" when smaller.
 */
const char *pb_opts_clip(const char *v, char *buf, size_t len);

/* Parse one size ("64K") or a size list ("1:8M,3"). Return 0 or -EINVAL with why in err. */
int pb_parse_size(const char *text, uint64_t *out, char *err, size_t errlen);
int pb_parse_size_list(const char *text, bool suffixes, struct pb_u64_list *out, char *err,
		       size_t errlen);

#endif
