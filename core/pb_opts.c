/* SPDX-License-Identifier: BSD-3-Clause */
#include "pb_opts.h"
#include "pb_pin.h"
#include "pb_common.h"
#include "pb_log.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A clipped copy in a buffer of the calling statement (C11 compound literal). */
#define PB_CLIP(v) pb_opts_clip((v), (char[PB_CLIP_CHARS + 4]){ 0 }, PB_CLIP_CHARS + 4)

const char *pb_opts_clip(const char *v, char *buf, size_t len)
{
	if (len < PB_CLIP_CHARS + 1)
		return "";
	pb_clip_span(v, strlen(v), buf);
	return buf;
}

static int pb_parse_u64_text(const char *text, bool suffixes, uint64_t *out, char *err,
			     size_t errlen)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!*text || !isdigit((unsigned char)*text)) {
		snprintf(err, errlen, "'%s' is not a non-negative integer", PB_CLIP(text));
		return -EINVAL;
	}
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno == ERANGE) {
		snprintf(err, errlen, "'%s' is too large", PB_CLIP(text));
		return -EINVAL;
	}
	if (suffixes && *end) {
		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		default: break;
		}
		if (shift)
			end++;
	}
	if (*end) {
		snprintf(err, errlen, "'%s' has trailing characters '%s'%s", PB_CLIP(text),
			 PB_CLIP(end), suffixes ? " (suffixes: K, M, G)" : "");
		return -EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift)) {
		snprintf(err, errlen, "'%s' is too large", PB_CLIP(text));
		return -EINVAL;
	}
	*out = (uint64_t)v << shift;
	return 0;
}

int pb_parse_size(const char *text, uint64_t *out, char *err, size_t errlen)
{
	return pb_parse_u64_text(text, true, out, err, errlen);
}

static int pb_list_push(struct pb_u64_list *l, uint64_t v, char *err, size_t errlen)
{
	for (size_t i = 0; i < l->n; i++) {
		if (l->v[i] == v) {
			snprintf(err, errlen, "value %llu is listed twice", (unsigned long long)v);
			return -EINVAL;
		}
	}
	if (l->n == PB_LIST_MAX) {
		snprintf(err, errlen, "more than %d values", PB_LIST_MAX);
		return -EINVAL;
	}
	l->v[l->n++] = v;
	return 0;
}

static bool pb_is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* An item: one value, or A:B = the powers of two A, 2A, 4A, ... B (A, B powers of two). */
static int pb_parse_list_item(char *item, bool suffixes, struct pb_u64_list *out, char *err,
			      size_t errlen)
{
	char *colon = strchr(item, ':');
	uint64_t lo, hi;
	int rc;

	if (!colon) {
		rc = pb_parse_u64_text(item, suffixes, &lo, err, errlen);
		return rc ? rc : pb_list_push(out, lo, err, errlen);
	}
	*colon = '\0';
	rc = pb_parse_u64_text(item, suffixes, &lo, err, errlen);
	if (!rc)
		rc = pb_parse_u64_text(colon + 1, suffixes, &hi, err, errlen);
	if (rc)
		return rc;
	if (!pb_is_pow2(lo) || !pb_is_pow2(hi) || hi < lo) {
		snprintf(err, errlen, "range '%s:%s': both ends must be powers of two, low <= high",
			 item, colon + 1);
		return -EINVAL;
	}
	for (uint64_t v = lo; v <= hi; v *= 2) {
		rc = pb_list_push(out, v, err, errlen);
		if (rc || v == hi)
			return rc;
	}
	return 0;
}

int pb_parse_size_list(const char *text, bool suffixes, struct pb_u64_list *out, char *err,
		       size_t errlen)
{
	char buf[1024], *save = NULL, *item;
	int rc;

	out->n = 0;
	if (strlen(text) >= sizeof(buf) || !*text) {
		snprintf(err, errlen, "'%s' is empty or too long", text);
		return -EINVAL;
	}
	if (text[strlen(text) - 1] == ',' || text[0] == ',' || strstr(text, ",,")) {
		snprintf(err, errlen, "'%s' has an empty list item", text);
		return -EINVAL;
	}
	strcpy(buf, text);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		rc = pb_parse_list_item(item, suffixes, out, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

static bool pb_opt_has_range(const struct pb_opt *o)
{
	return !(o->min == 0 && o->max == 0);
}

static void pb_opt_range_text(const struct pb_opt *o, char *buf, size_t len)
{
	if (o->type == PB_OPT_CHOICE) {
		size_t off = 0;

		buf[0] = '\0';
		for (const char *const *c = o->choices; *c && off < len; c++)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", c == o->choices ? "" : "|", *c);
		return;
	}
	if (!pb_opt_has_range(o)) {
		snprintf(buf, len, "any");
		return;
	}
	snprintf(buf, len, "%.15g..%.15g", o->min, o->max);
}

static int pb_opt_check_range(const struct pb_opt *o, double v, char *err, size_t errlen)
{
	char range[256];

	if (!pb_opt_has_range(o) || (v >= o->min && v <= o->max))
		return 0;
	pb_opt_range_text(o, range, sizeof(range));
	snprintf(err, errlen, "%.15g is out of range (accepted: %s)", v, range);
	return -EINVAL;
}

static int pb_opt_store(const struct pb_opt *o, const char *val, void *params, char *err,
			size_t errlen)
{
	char *field = (char *)params + o->offset;
	uint64_t u;
	int rc;

	switch (o->type) {
	case PB_OPT_FLAG:
		*(bool *)field = true;
		return 0;
	case PB_OPT_U64:
	case PB_OPT_SIZE:
		rc = pb_parse_u64_text(val, o->type == PB_OPT_SIZE, &u, err, errlen);
		if (!rc)
			rc = pb_opt_check_range(o, (double)u, err, errlen);
		if (!rc)
			*(uint64_t *)field = u;
		return rc;
	case PB_OPT_DOUBLE: {
		char *end;
		double d;

		errno = 0;
		d = strtod(val, &end);
		if (!*val || *end || errno || !isfinite(d)) {
			snprintf(err, errlen, "'%s' is not a number", PB_CLIP(val));
			return -EINVAL;
		}
		rc = pb_opt_check_range(o, d, err, errlen);
		if (!rc)
			*(double *)field = d;
		return rc;
	}
	case PB_OPT_SIZE_LIST:
	case PB_OPT_U64_LIST: {
		struct pb_u64_list *l = (struct pb_u64_list *)field;

		if (strlen(val) > 1000) {
			snprintf(err, errlen, "a list of %zu characters is too long (at most 1000)", strlen(val));
			return -EINVAL;
		}
		rc = pb_parse_size_list(val, o->type == PB_OPT_SIZE_LIST, l, err, errlen);
		for (size_t i = 0; !rc && i < l->n; i++)
			rc = pb_opt_check_range(o, (double)l->v[i], err, errlen);
		return rc;
	}
	case PB_OPT_STRING:
		if (!*val) {
			snprintf(err, errlen, "empty value");
			return -EINVAL;
		}
		*(const char **)field = val;
		return 0;
	case PB_OPT_CHOICE:
		for (int i = 0; o->choices[i]; i++) {
			if (!strcmp(o->choices[i], val)) {
				*(int *)field = i;
				return 0;
			}
		}
		{
			char range[256];

			pb_opt_range_text(o, range, sizeof(range));
			snprintf(err, errlen, "'%s' is not one of %s", PB_CLIP(val), range);
		}
		return -EINVAL;
	}
	return -EINVAL;
}

static const struct pb_opt *pb_opt_find(const struct pb_opt *t, size_t n, const char *name,
					size_t name_len, char short_name)
{
	for (size_t i = 0; i < n; i++) {
		if (short_name && t[i].short_name == short_name)
			return &t[i];
		if (!short_name && strlen(t[i].name) == name_len && !strncmp(t[i].name, name, name_len))
			return &t[i];
	}
	return NULL;
}

static int pb_opts_defaults(const struct pb_opt *t, size_t n, void *params)
{
	char err[256];

	for (size_t i = 0; i < n; i++) {
		char *field = (char *)params + t[i].offset;

		/* Every field gets a defined value, whatever the caller's struct held. */
		switch (t[i].type) {
		case PB_OPT_FLAG: *(bool *)field = false; break;
		case PB_OPT_U64: case PB_OPT_SIZE: *(uint64_t *)field = 0; break;
		case PB_OPT_DOUBLE: *(double *)field = 0.0; break;
		case PB_OPT_SIZE_LIST: case PB_OPT_U64_LIST: ((struct pb_u64_list *)field)->n = 0; break;
		case PB_OPT_STRING: *(const char **)field = NULL; break;
		case PB_OPT_CHOICE: *(int *)field = 0; break;
		}
		if (!t[i].def || t[i].type == PB_OPT_FLAG)
			continue;
		if (pb_opt_store(&t[i], t[i].def, params, err, sizeof(err))) {
			/* A bad default is a programming error, reported as such. */
			pb_log_error("internal: default '%s' of --%s: %s", t[i].def, t[i].name, err);
			return -EINVAL;
		}
	}
	return 0;
}

#define PB_OPTS_FAIL(...) (snprintf(msg, msglen, __VA_ARGS__), -EINVAL)

/*
 * Make a reason from any parser one short line: every quoted value ('...')
 * longer than PB_CLIP_CHARS is clipped by the one rule (pb_clip_span), non-printable
 * characters become '?'.
 */
static void pb_opts_clip_quoted(char *s)
{
	char *r = s, *w = s;

	while (*r) {
		if (*r == '\'') {
			char *end = strchr(r + 1, '\'');
			size_t n = end ? (size_t)(end - r - 1) : 0;

			if (end && n > PB_CLIP_CHARS) {
				/* the clipped value is shorter than the original: w stays behind r */
				*w++ = '\'';
				w += pb_clip_span(r + 1, n, w);
				*w++ = '\'';
				r = end + 1;
				continue;
			}
		}
		*w++ = isprint((unsigned char)*r) ? *r : '?';
		r++;
	}
	*w = 0;
}

int pb_opts_parse_msg(const struct pb_opt *t, size_t n, int argc, char **argv, void *params,
		      struct pb_opts_result *res, char *msg, size_t msglen)
{
	char err[1280]; /* room for a list parser's echo of a whole 1000-character value */
	int rc;

	res->set_mask = 0;
	if (n > 64) /* set_mask has one bit per table entry */
		return PB_OPTS_FAIL("internal: option table has %zu entries, at most 64 supported", n);
	rc = pb_opts_defaults(t, n, params);
	for (int i = 1; !rc && i < argc; i++) {
		const char *arg = argv[i], *val = NULL, *eq;
		const struct pb_opt *o;
		char shown[64];

		if (arg[0] != '-' || !arg[1] || (arg[1] == '-' && !arg[2])) {
			return PB_OPTS_FAIL("unexpected argument '%s' (options start with '-'; see --help)",
					    PB_CLIP(arg));
		}
		if (arg[1] == '-') {
			eq = strchr(arg + 2, '=');
			o = pb_opt_find(t, n, arg + 2, eq ? (size_t)(eq - arg - 2) : strlen(arg + 2), 0);
			if (eq)
				val = eq + 1;
			snprintf(shown, sizeof(shown), "--%s", o ? o->name : arg + 2);
		} else {
			o = pb_opt_find(t, n, NULL, 0, arg[1]);
			if (arg[2])
				val = arg + 2;
			if (o)
				snprintf(shown, sizeof(shown), "-%c (--%s)", arg[1], o->name);
		}
		if (!o) {
			return PB_OPTS_FAIL("unknown option '%s' (see --help)", PB_CLIP(arg));
		}
		if (o->type == PB_OPT_FLAG && val) {
			return PB_OPTS_FAIL("option %s takes no value", shown);
		}
		if (o->type != PB_OPT_FLAG && !val) {
			if (i + 1 >= argc)
				return PB_OPTS_FAIL("option %s needs a value (%s)", shown,
						    o->metavar ? o->metavar : "VALUE");
			val = argv[++i];
		}
		rc = pb_opt_store(o, val, params, err, sizeof(err));
		if (rc) {
			pb_opts_clip_quoted(err);
			return PB_OPTS_FAIL("invalid value for %s: %s", shown, err);
		}
		res->set_mask |= 1ull << (o - t);
	}
	if (rc)
		snprintf(msg, msglen, "internal error in the option table's defaults");
	return rc;
}

int pb_opts_parse(const struct pb_opt *t, size_t n, int argc, char **argv, void *params,
		  struct pb_opts_result *res)
{
	char msg[768];
	int rc = pb_opts_parse_msg(t, n, argc, argv, params, res, msg, sizeof(msg));

	if (rc)
		pb_log_error("%s", msg);
	return rc;
}

bool pb_opts_given(const struct pb_opt *t, size_t n, const struct pb_opts_result *res,
		   const char *name)
{
	for (size_t i = 0; i < n && i < 64; i++) {
		if (!strcmp(t[i].name, name))
			return res->set_mask & (1ull << i);
	}
	return false;
}

void pb_opts_print_help(FILE *f, const char *prog, const char *summary, const struct pb_opt *t,
			size_t n)
{
	fprintf(f, "usage: %s [options]\n%s\n\noptions:\n", prog, summary);
	for (size_t i = 0; i < n; i++) {
		const struct pb_opt *o = &t[i];
		char left[96], range[256];

		if (o->short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->name,
				 o->type == PB_OPT_FLAG ? "" : " ", o->type == PB_OPT_FLAG ? "" : o->metavar ? o->metavar : "VALUE");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name, o->type == PB_OPT_FLAG ? "" : " ",
				 o->type == PB_OPT_FLAG ? "" : o->metavar ? o->metavar : "VALUE");
		fprintf(f, "  %-30s %s", left, o->help);
		if (o->type != PB_OPT_FLAG) {
			pb_opt_range_text(o, range, sizeof(range));
			if (o->type == PB_OPT_CHOICE || pb_opt_has_range(o))
				fprintf(f, " [%s]", range);
			fprintf(f, " (default: %s)", o->def ? o->def : "none");
		}
		fputc('\n', f);
	}
}

int pb_common_check(const struct pb_common_params *c, char *err, size_t errlen)
{
	if (c->pin_list && c->pin != PB_PIN_LIST) {
		snprintf(err, errlen, "option --pin-list is used only with --pin list (--pin is %s)",
			 pb_pin_policy_names[c->pin]);
		return -EINVAL;
	}
	if (c->pin == PB_PIN_LIST && !c->pin_list) {
		snprintf(err, errlen, "option --pin list needs --pin-list (PU OS indices, e.g. 0,2,4)");
		return -EINVAL;
	}
	return 0;
}

/* In the order of enum pb_pin_policy (pb_pin.h). */
const char *const pb_pin_policy_names[] = { "near-device", "compact", "scatter", "list", "none", NULL };
