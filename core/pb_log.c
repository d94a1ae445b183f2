/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "pb_log.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t pb_clip_span(const char *s, size_t n, char *out)
{
	size_t w = 0;

	for (size_t i = 0; i < n; i++) {
		if (n > PB_CLIP_CHARS && i == PB_CLIP_HEAD) {
			memcpy(out + w, "...", 3);
			w += 3;
			i = n - PB_CLIP_TAIL;
		}
		out[w++] = isprint((unsigned char)s[i]) ? s[i] : '?';
	}
	out[w] = 0;
	return w;
}

/*
 * The last line of defence for every message: control bytes print as '?', and a
 * word (a run of non-blank bytes) longer than PB_LOG_WORD_MAX that its call site did
 * not clip gets the clipping rule, so no value pushes the reason out of the line.
 */
static void pb_log_tidy(const char *msg, char *line, size_t len)
{
	size_t w = 0;

	while (*msg && w + PB_CLIP_CHARS + 2 < len) {
		size_t n = strcspn(msg, " ");

		if (n > PB_LOG_WORD_MAX) {
			w += pb_clip_span(msg, n, line + w);
		} else {
			n = n ? n : 1; /* a blank */
			for (size_t i = 0; i < n && w + 1 < len; i++)
				line[w++] = isprint((unsigned char)msg[i]) ? msg[i] : '?';
		}
		msg += n;
	}
	line[w] = 0;
}

static void pb_log_v(const char *level, const char *fmt, va_list ap)
{
	char stack[1024], line[1024], *msg = stack;
	va_list aq;
	int n;

	va_copy(aq, ap);
	n = vsnprintf(stack, sizeof(stack), fmt, aq);
	va_end(aq);
	if (n < 0)
		return;
	/* Formatted whole, so the reason at the end of a long message is kept. */
	if ((size_t)n >= sizeof(stack) && (msg = malloc((size_t)n + 1)) != NULL)
		vsnprintf(msg, (size_t)n + 1, fmt, ap);
	pb_log_tidy(msg ? msg : stack, line, sizeof(line));
	if (msg != stack)
		free(msg);
	/* One write per message so lines from concurrent workers do not interleave. */
	fprintf(stderr, "%s: %s%s\n", program_invocation_short_name, level, line);
}

static _Atomic unsigned *pb_log_errors;

void pb_log_count_errors(_Atomic unsigned *counter)
{
	pb_log_errors = counter;
}

void pb_log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pb_log_v("error: ", fmt, ap);
	va_end(ap);
	if (pb_log_errors)
		atomic_fetch_add_explicit(pb_log_errors, 1, memory_order_relaxed);
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
