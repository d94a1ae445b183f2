/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "pb_log.h"

#include <stdarg.h>
#include <stdio.h>

static void pb_log_v(const char *level, const char *fmt, va_list ap)
{
	char line[1024];
	int off = snprintf(line, sizeof(line), "%s: %s", program_invocation_short_name, level);

	if (off < 0)
		return;
	if ((size_t)off < sizeof(line))
		vsnprintf(line + off, sizeof(line) - (size_t)off, fmt, ap);
	/* One write per message so lines from concurrent workers do not interleave. */
	fprintf(stderr, "%s\n", line);
}

void pb_log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pb_log_v("error: ", fmt, ap);
	va_end(ap);
}

void pb_log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pb_log_v("warning: ", fmt, ap);
	va_end(ap);
}

void pb_log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pb_log_v("", fmt, ap);
	va_end(ap);
}

int pb_exit_code(int neg_errno)
{
	if (neg_errno == 0)
		return PB_EXIT_OK;
	if (neg_errno == -EINVAL || neg_errno == -E2BIG || neg_errno == -ERANGE)
		return PB_EXIT_USAGE;
	if (neg_errno == -ENODEV || neg_errno == -ENOSYS)
		return PB_EXIT_SKIP;
	return PB_EXIT_RUNTIME;
}
