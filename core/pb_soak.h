/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A soak (docs/methodology.md "Soak"): one common window of --soak seconds,
 * cut into buckets of --bucket seconds that every flow of the point shares:
 * bucket i = [start + i*B, start + (i+1)*B), start = the node's common start
 * (the start barrier's release, the same value in every process of a node).
 *
 * Per flow (one measuring process) a recorder counts the messages that
 * COMPLETED in each bucket: the stream tells it once per window of W
 * messages, with the clock value it already read there (pb_soak_add: one
 * compare and one add; no clock read of its own).  A completion after the
 * soak's end (the last window) counts in the last bucket, so the buckets sum
 * to the row's messages.  Completed buckets are written to the flow's series
 * file about once a second (a write(2) of ~160 bytes at 0.1 s buckets), so a
 * recorder holds at most PB_SOAK_RING buckets in memory whatever the length,
 * and a soak killed mid-way leaves every second but the last on disk.
 *
 * After the window (pb_soak_finish), the file is read back in bounded memory:
 *   min, p1, p50     exact nearest-rank percentiles (pb_stats.h rule) of the
 *                    messages per bucket, zero buckets included (radix
 *                    selection: a few passes over the file, fixed memory)
 *   stall            a maximal run of consecutive buckets whose messages are
 *                    below stall_fraction x p50 (strictly); zero buckets are
 *                    stalls; none when p50 is 0 (then the rows are flagged
 *                    soak_zero_median: half the buckets or more saw nothing
 *                    complete, the flow moved in bursts or not at all)
 *   stalls, longest  their count, the longest run, the first one's start
 * scripts/pairbench/analysis/soak.py computes the same from the series
 * (tests/python/test_soak.py holds them equal on real runs).
 *
 * Series file (native byte order, read by contract/soakfile.py):
 *   struct pb_soak_header (PB_SOAK_HEADER_BYTES), then one struct
 *   pb_soak_bucket per bucket from bucket 0, in order.  The header is written
 *   at open, again with the start at the first write of buckets, and once more
 *   at the end; header.buckets says how many were written when the recorder
 *   finished (0 while running: a reader then takes the file's length).
 */
#ifndef PB_SOAK_H
#define PB_SOAK_H

#include "pb_common.h"
#include "pb_csv.h"
#include "pb_opts.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PB_SOAK_MAGIC "PBSOAK01"
#define PB_SOAK_VERSION 1u
#define PB_SOAK_HEADER_BYTES 512u
/* Buckets a recorder keeps in memory (16 B each); it writes them out long before. */
#define PB_SOAK_RING 4096u
/* Most buckets one soak may have (2^32 - 1: 13.6 years of 0.1 s buckets). */
#define PB_SOAK_MAX_BUCKETS 4294967295ull
/* Default: stall = below half the flow's median bucket. */
#define PB_SOAK_DEFAULT_FRACTION "0.5"

struct pb_soak_params {
	double soak_s;           /* --soak: the soak's window; 0 = no soak */
	double bucket_s;         /* --bucket */
	double stall_fraction;   /* --stall-fraction */
	const char *series;      /* --series PREFIX: PREFIX-<size>B-pair<id>.pbsoak; NULL = a temporary file */
	uint64_t validate_every; /* --validate-live N: the receiver checks every Nth window's first message; 0 = off */
};

/* Option-table entries (a layer that implements the soak puts them in its table). */
#define PB_SOAK_OPTS(type, m)                                                                     \
	{ "soak", 0, PB_OPT_DOUBLE, offsetof(type, m.soak_s), "0", 0, 604800, NULL, "SEC",          \
	  "soak: bandwidth/message-rate pairs run one common window of SEC seconds, counted per bucket (--bucket), stalls found per pair (0 = no soak)" }, \
	{ "bucket", 0, PB_OPT_DOUBLE, offsetof(type, m.bucket_s), "0.1", 0.001, 3600, NULL, "SEC", \
	  "soak: bucket length; --soak must be a whole number of buckets" },                      \
	{ "stall-fraction", 0, PB_OPT_DOUBLE, offsetof(type, m.stall_fraction),                    \
	  PB_SOAK_DEFAULT_FRACTION, 0.01, 0.99, NULL, "F",                                          \
	  "soak: a stall is a run of buckets below F x the pair's median bucket" },                \
	{ "series", 0, PB_OPT_STRING, offsetof(type, m.series), NULL, 0, 0, NULL, "PREFIX",        \
	  "soak: write each pair's bucket series to PREFIX-<size>B-pair<id>.pbsoak (binary, core/pb_soak.h)" }, \
	{ "validate-live", 0, PB_OPT_U64, offsetof(type, m.validate_every), "0", 0, 1e9, NULL, "N", \
	  "soak: data checked under load: the receiver checks the first message of every Nth window (a pattern of pair, window and offset), corruptions counted per bucket (PREFIX-...pbsoak-rx) and the pair's row an error (0 = off)" }

/* One bucket on file and in memory. */
struct pb_soak_bucket {
	uint64_t messages;       /* messages completed in the bucket */
	uint32_t checked;        /* messages whose data was checked (--validate live); 0 = none */
	uint32_t corrupt;        /* of those, how many were wrong */
};

struct pb_soak_header {
	char magic[8];           /* PB_SOAK_MAGIC */
	uint32_t version;        /* PB_SOAK_VERSION */
	uint32_t header_bytes;   /* PB_SOAK_HEADER_BYTES */
	uint32_t bucket_bytes;   /* sizeof(struct pb_soak_bucket) */
	uint32_t pair_id;
	uint32_t pairs;
	uint32_t complete;       /* 1: finished normally; 0: running or killed */
	uint32_t partial;        /* 1: stopped before the soak's end (a signal) */
	uint32_t bidir;          /* messages count both directions */
	uint64_t msg_size_bytes;
	uint64_t bucket_ns;
	uint64_t planned_buckets;
	uint64_t buckets;        /* written (complete = 1); 0 while running */
	uint64_t start_ns;       /* the common start, pb_clock_now_ns() (CLOCK_MONOTONIC_RAW) */
	int64_t start_unix_ns;   /* the same moment, CLOCK_REALTIME */
	double stall_fraction;
	char layer[8];
	char test[32];
	char pattern[64];
	char host[64];
	char peer[64];
};

/* What a flow's soak gave (plain data: lives in struct pb_pair_result). */
struct pb_soak_summary {
	uint32_t on;             /* this result is a soak's */
	uint32_t partial;        /* stopped before its end */
	double bucket_s;
	double stall_fraction;
	uint64_t buckets;        /* buckets analysed */
	double min_msgs, p1_msgs, p50_msgs;  /* messages per bucket; p1/p50 NAN when buckets < 2 */
	uint64_t stalls;
	uint64_t longest_stall_buckets;
	uint64_t first_stall_bucket;          /* UINT64_MAX: none */
	uint64_t checked, corrupt;            /* --validate live totals */
	uint64_t sum_msgs;                    /* over the buckets (equals the row's messages) */
	uint64_t window_msgs;                 /* messages one window adds (set by the transport; 0 = unknown) */
};

/*
 * A median bucket of fewer windows than this is coarse: one window more or less moves a
 * bucket by over 10 % (rows flagged soak_coarse: use longer buckets or a smaller --window).
 */
#define PB_SOAK_MIN_WINDOWS 10

/* A flow's recorder.  Create with pb_soak_open, one point at a time. */
struct pb_soak_rec {
	int fd;
	uint64_t start_ns, bucket_ns, n_buckets;
	uint64_t cur;            /* index of the current bucket */
	uint64_t cur_end_ns;     /* its end: a later completion advances */
	uint64_t written;        /* buckets on file */
	uint32_t fill;           /* ring[fill] is the current bucket; ring[0..fill) complete */
	uint32_t flush_every;    /* write when this many are complete (~1 s) */
	int write_err;           /* first write error (negative errno), reported at finish */
	struct pb_soak_header hdr;
	struct pb_soak_bucket ring[PB_SOAK_RING];
};

/* Checks of the options (soak_s > 0): whole number of buckets, at least 2. 0 or -EINVAL, err set. */
int pb_soak_check(const struct pb_soak_params *p, char *err, size_t errlen);

/*
 * Every check of a layer's soak options against its test and the common options: the
 * above; --soak only for bandwidth and message-rate tests, not with -n or -D; --bucket,
 * --stall-fraction, --series only with --soak (given: which of those three the user gave,
 * bits 1, 2, 4).  0 or -EINVAL with one message in err (exit code 2).
 */
int pb_soak_validate(const struct pb_soak_params *p, const struct pb_common_params *c,
		     const struct pb_test_info *t, unsigned given, char *err, size_t errlen);
#define PB_SOAK_GIVEN_BUCKET 1u
#define PB_SOAK_GIVEN_FRACTION 2u
#define PB_SOAK_GIVEN_SERIES 4u
#define PB_SOAK_GIVEN_VALIDATE 8u

/*
 * --validate-live: the payload of a checked message, 64-bit words that depend on the pair,
 * the window's index in the timed block and the word's offset (a tail shorter than a word
 * takes the low bytes of its word).  fill: the sender, before posting the window; check:
 * the receiver, after it completed; it returns how many bytes differ (0 = intact).
 */
void pb_soak_pattern_fill(void *buf, size_t len, unsigned pair, uint64_t window);
size_t pb_soak_pattern_check(const void *buf, size_t len, unsigned pair, uint64_t window);

/* The receiver's series of checks: the flow's series file name + this suffix. */
#define PB_SOAK_RX_SUFFIX "-rx"

/*
 * The fault hook of the checks (tests): PAIRBENCH_SOAK_FAULT="flip:PAIR:SECONDS" makes the
 * receiver of pair PAIR flip one byte of the first checked message that completes SECONDS
 * or later after the common start, before it is checked.  0 and *seconds < 0 when the
 * variable is unset or names another pair; -EINVAL when it is malformed.
 */
int pb_soak_fault(const char *text, unsigned pair, double *seconds);

/*
 * The series file name of one point's flow: "<prefix>-<size>B-pair<id>.pbsoak", with
 * "-<pattern>" after the size when pattern is not NULL or "" (a --pattern round).
 * 0 or -ENAMETOOLONG.
 */
int pb_soak_path(const char *prefix, uint64_t msg_size_bytes, const char *pattern, unsigned pair_id,
		 char *out, size_t len);

/*
 * Open the series file of one point (path NULL: an unlinked temporary file) and write its
 * header from hdr (magic, version and sizes are filled in).  Untimed: call before the
 * start barrier.  0 or -errno with err set.
 */
int pb_soak_open(struct pb_soak_rec *r, const char *path, const struct pb_soak_params *p,
		 const struct pb_soak_header *hdr, char *err, size_t errlen);

/* The common start: bucket 0 begins here.  Call once, before the first pb_soak_add. */
void pb_soak_start(struct pb_soak_rec *r, uint64_t start_ns);

/* Out of line part of pb_soak_add: completes the buckets up to now_ns, writes them. */
void pb_soak_advance(struct pb_soak_rec *r, uint64_t now_ns);

/*
 * messages completed at now_ns (a clock value the caller read anyway).  Timed loop: one
 * compare and one add, except about once per bucket (pb_soak_advance).
 */
static inline void pb_soak_add(struct pb_soak_rec *r, uint64_t now_ns, uint64_t messages)
{
	if (now_ns >= r->cur_end_ns)
		pb_soak_advance(r, now_ns);
	r->ring[r->fill].messages += messages;
}

/* --validate live: checked messages and how many of them were corrupt, at now_ns. */
static inline void pb_soak_check_add(struct pb_soak_rec *r, uint64_t now_ns, uint32_t checked,
				     uint32_t corrupt)
{
	if (now_ns >= r->cur_end_ns)
		pb_soak_advance(r, now_ns);
	r->ring[r->fill].checked += checked;
	r->ring[r->fill].corrupt += corrupt;
}

/*
 * The soak ended at end_ns (partial: before its planned end, e.g. a signal): write every
 * bucket up to the end (planned: all of them; partial: up to end_ns's bucket), the final
 * header, then analyse the file into out.  0 or -errno with err set (a failed write).
 */
int pb_soak_finish(struct pb_soak_rec *r, uint64_t end_ns, bool partial, struct pb_soak_summary *out,
		   char *err, size_t errlen);

/*
 * Ending a soak early and keeping it: signum (the driver sends SIGUSR1; mpirun forwards it to
 * every rank) sets the word pb_soak_stop_word() points to; a soak's stream polls it once per
 * window (its stop word) and ends at the next window, its rows flagged soak_partial.
 * 0 or -errno (sigaction).
 */
int pb_soak_stop_on(int signum);
/* The word signum sets: 0, then 1 once the signal came. */
const volatile uint64_t *pb_soak_stop_word(void);

/* Copy src into a header text field of len bytes, cut to fit (always terminated). */
void pb_soak_text(char *dst, size_t len, const char *src);

/* Close the file (NULL-safe, idempotent). */
void pb_soak_close(struct pb_soak_rec *r);

/*
 * The analysis of n buckets read from fd at offset off (the file's buckets), as above.
 * Memory: fixed (chunks of PB_SOAK_RING buckets).  0 or -errno (a failed read).
 */
int pb_soak_analyse(int fd, uint64_t off, uint64_t n, double stall_fraction,
		    struct pb_soak_summary *out);


/* The soak columns of a pair's row (pb_schema.h) from its summary; nothing when !s->on. */
void pb_soak_row_pair(struct pb_row *row, const struct pb_soak_summary *s, uint64_t msg_size_bytes);

/* An aggregate row's soak columns: fold each pair's summary in, then write. */
struct pb_soak_agg {
	unsigned n, stalled;
	double bucket_s, fraction, min_gbit, p1_gbit, p50_gbit, share, longest_s, first_s;
	uint64_t buckets, stalls;
	bool partial, zero_median, coarse;
};
void pb_soak_agg_init(struct pb_soak_agg *a);
void pb_soak_agg_add(struct pb_soak_agg *a, const struct pb_soak_summary *s, uint64_t msg_size_bytes);
void pb_soak_row_aggregate(struct pb_row *row, const struct pb_soak_agg *a);

#endif
