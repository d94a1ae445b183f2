/* SPDX-License-Identifier: BSD-3-Clause */
/* Diagnostics to stderr, prefixed with the program name. Data goes to stdout. */
#ifndef PB_LOG_H
#define PB_LOG_H

#include <errno.h>

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
/* "<prog>: warning: ..." on stderr. */
void pb_log_warn(const char *fmt, ...) PB_PRINTF(1, 2);
/* "<prog>: ..." on stderr. */
void pb_log_info(const char *fmt, ...) PB_PRINTF(1, 2);

/* Map a negative errno returned through the stack to an exit code. */
int pb_exit_code(int neg_errno);

#endif
