/* SPDX-License-Identifier: BSD-3-Clause */
/* Diagnostics to stderr, prefixed with the program name. Data goes to stdout. */
#ifndef PB_LOG_H
#define PB_LOG_H

#include <errno.h>
#include <stddef.h>

/* Exit codes shared by every pairbench executable. */
enum pb_exit {
	PB_EXIT_OK = 0,      /* success */
	PB_EXIT_RUNTIME = 1, /* connect, completion error, timeout, threshold not met */
	PB_EXIT_USAGE = 2,   /* usage or invalid input */
	PB_EXIT_SKIP = 77,   /* cannot run here: no RDMA device, no MPI */
};

#if defined(__GNUC__)
#define PB_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PB_PRINTF(a, b)
#endif

/* "<prog>: error: ..." on stderr. */
void pb_log_error(const char *fmt, ...) PB_PRINTF(1, 2);
/*
 * Count every error line from now on in *counter, in this process and in the children it
 * forks (a counter in MAP_SHARED memory: a launcher learns whether any of its workers said
 * why the run failed, so a failure is never silent); NULL stops counting.
 */
void pb_log_count_errors(_Atomic unsigned *counter);
/* "<prog>: warning: ..." on stderr. */
void pb_log_warn(const char *fmt, ...) PB_PRINTF(1, 2);
/* "<prog>: ..." on stderr. */
void pb_log_info(const char *fmt, ...) PB_PRINTF(1, 2);

/*
 * The one clipping rule for a value echoed in a message, in both executables (and the
 * driver's one_line keeps a long word's start and end alike): at most PB_CLIP_CHARS
 * characters; a longer value keeps its first PB_CLIP_HEAD and last PB_CLIP_TAIL around
 * "..." (a path keeps its file name); non-printable bytes (a newline, an escape) as '?'.
 * Every message passes pb_log, which applies the rule to any word longer than
 * PB_LOG_WORD_MAX that its call site did not clip, so no value pushes the reason out of
 * the line.
 */
#define PB_CLIP_CHARS 40
#define PB_CLIP_HEAD 24
#define PB_CLIP_TAIL (PB_CLIP_CHARS - PB_CLIP_HEAD - 3)
#define PB_LOG_WORD_MAX 80
/* s[0..n) clipped into out (room for PB_CLIP_CHARS + 1 bytes); returns its length. */
size_t pb_clip_span(const char *s, size_t n, char *out);

/* Map a negative errno returned through the stack to an exit code. */
int pb_exit_code(int neg_errno);

#endif
