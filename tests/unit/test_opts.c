/* SPDX-License-Identifier: BSD-3-Clause */
/* Option parsing: sizes, lists, ranges, defaults, and every kind of bad input; the log's error count. */
#include "pb_common.h"
#include "pb_log.h"
#include "pb_opts.h"
#include "pb_pin.h"
#include "pb_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

struct params {
	struct pb_common_params c;
	uint64_t depth;
};

static const struct pb_opt table[] = {
	PB_COMMON_OPTS(struct params, c, "write_lat", "1,4K", "1000"),
	{ "tx-depth", 't', PB_OPT_U64, offsetof(struct params, depth), "128", 1, 8192, NULL, "N",
	  "outstanding work requests" },
};
#define NOPTS (sizeof(table) / sizeof(table[0]))

static int parse(struct params *p, const char *a1, const char *a2, const char *a3)
{
	char *argv[] = { "prog", (char *)a1, (char *)a2, (char *)a3, NULL };
	int argc = 1 + (a1 != NULL) + (a2 != NULL) + (a3 != NULL);
	struct pb_opts_result res;

	memset(p, 0xa5, sizeof(*p)); /* garbage: the parser must define every field */
	return pb_opts_parse(table, NOPTS, argc, argv, p, &res);
}

static void test_sizes(void)
{
	struct pb_u64_list l;
	char err[256];
	uint64_t v;

	CHECK_EQ_INT(pb_parse_size("4K", &v, err, sizeof(err)), 0);
	CHECK_EQ_INT(v, 4096);
	CHECK_EQ_INT(pb_parse_size("8M", &v, err, sizeof(err)), 0);
	CHECK_EQ_INT(v, 8 << 20);
	CHECK_EQ_INT(pb_parse_size("1G", &v, err, sizeof(err)), 0);
	CHECK_EQ_INT(v, 1 << 30);
	CHECK_EQ_INT(pb_parse_size_list("1:8M", true, &l, err, sizeof(err)), 0);
	CHECK_EQ_INT(l.n, 24);
	CHECK_EQ_INT(l.v[0], 1);
	CHECK_EQ_INT(l.v[23], 8 << 20);
	CHECK_EQ_INT(pb_parse_size_list("1,2,4,8", true, &l, err, sizeof(err)), 0);
	CHECK_EQ_INT(l.n, 4);
	/* A:B = the powers of two from A to B; the ends must be powers of two. */
	CHECK_EQ_INT(pb_parse_size_list("4:64,3", true, &l, err, sizeof(err)), 0);
	CHECK_EQ_INT(l.n, 6); /* 4 8 16 32 64 3: in the order given */
	CHECK_EQ_INT(l.v[4], 64);
	CHECK_EQ_INT(l.v[5], 3);
	CHECK_EQ_INT(pb_parse_size_list("3:100", true, &l, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "powers of two") != NULL);
	CHECK_EQ_INT(pb_parse_size_list("4:24", true, &l, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(pb_parse_size_list("4:16,8", true, &l, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "listed twice") != NULL);
}

static void test_defaults_and_values(void)
{
	struct params p;

	CHECK_EQ_INT(parse(&p, NULL, NULL, NULL), 0);
	CHECK_STR(p.c.test, "write_lat");
	CHECK_EQ_INT(p.c.sizes.n, 2);
	CHECK_EQ_INT(p.c.sizes.v[1], 4096);
	CHECK_EQ_INT(p.c.iterations, 1000);
	CHECK_EQ_INT(p.c.pairs, 1);
	CHECK_EQ_INT(p.depth, 128);
	CHECK_EQ_INT(p.c.pin, PB_PIN_NEAR_DEVICE);
	CHECK(!p.c.quiet && !p.c.help && !p.c.print_schema && !p.c.allow_oversubscribe);
	CHECK(p.c.output == NULL && p.c.env_json == NULL && p.c.pin_list == NULL);
	CHECK_EQ_INT(parse(&p, "--sizes=64", "-t", "16"), 0);
	CHECK_EQ_INT(p.c.sizes.n, 1);
	CHECK_EQ_INT(p.depth, 16);
	CHECK_EQ_INT(parse(&p, "-n500", "--pin", "scatter"), 0);
	CHECK_EQ_INT(p.c.iterations, 500);
	CHECK_EQ_INT(p.c.pin, PB_PIN_SCATTER);
	/* The option's value is the policy: one enum, no mapping table. */
	CHECK_STR(pb_pin_policy_names[PB_PIN_NEAR_DEVICE], "near-device");
	CHECK_STR(pb_pin_policy_names[PB_PIN_LIST], "list");
	CHECK_STR(pb_pin_policy_names[PB_PIN_NONE], "none");
	CHECK_EQ_INT(parse(&p, "--list-tests", "--format", "json"), 0);
	CHECK_EQ_INT(p.c.list_format, PB_LIST_JSON);
	CHECK_EQ_INT(parse(&p, "--quiet", "--timeout", "2.5"), 0);
	CHECK(p.c.quiet);
	CHECK_NEAR(p.c.timeout_s, 2.5, 0);
}

/* Every kind of bad input is rejected (-EINVAL -> exit code 2), never rewritten. */
static void test_bad_input(void)
{
	struct params p;
	const char *bad[][3] = {
		{ "--sizes", "0", NULL },          /* below range */
		{ "--sizes", "2G", NULL },         /* above range */
		{ "--sizes", "4X", NULL },         /* unknown suffix */
		{ "--sizes", "8:4", NULL },        /* empty range */
		{ "--sizes", "1,,2", NULL },       /* empty item */
		{ "--sizes", "4,4", NULL },        /* duplicate */
		{ "--sizes", "-1", NULL },         /* negative */
		{ "-n", "0", NULL },               /* below range */
		{ "-n", "ten", NULL },             /* not a number */
		{ "-n", NULL, NULL },              /* missing value */
		{ "--pairs", "99999", NULL },      /* above range */
		{ "--pin", "diagonal", NULL },     /* not a choice */
		{ "--timeout", "nan", NULL },      /* not finite */
		{ "--timeout", "0", NULL },        /* below range */
		{ "--frobnicate", NULL, NULL },    /* unknown option */
		{ "--quiet=yes", NULL, NULL },     /* flag with a value */
		{ "stray", NULL, NULL },           /* positional */
		{ "-t", "99999", NULL },           /* layer option above range */
		{ "--output", "", NULL },          /* empty string */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse(&p, bad[i][0], bad[i][1], bad[i][2]);

		if (rc != -EINVAL)
			fprintf(stderr, "bad input #%zu (%s %s) not rejected\n", i, bad[i][0],
				bad[i][1] ? bad[i][1] : "");
		CHECK_EQ_INT(rc, -EINVAL);
		CHECK_EQ_INT(pb_exit_code(rc), PB_EXIT_USAGE);
	}
}

static void test_help_shows_defaults(void)
{
	FILE *f = tmpfile();
	char buf[8192];
	size_t n;

	pb_opts_print_help(f, "prog", "summary", table, NOPTS);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	CHECK(strstr(buf, "--tx-depth N") != NULL);
	CHECK(strstr(buf, "(default: 128)") != NULL);
	CHECK(strstr(buf, "(default: 1,4K)") != NULL);
	CHECK(strstr(buf, "[near-device|compact|scatter|list|none]") != NULL);
	fclose(f);
}

/* pb_log_count_errors: error lines are counted, a forked child's too (the counter in
 * MAP_SHARED memory, as the verbs launcher's); warnings and info lines are not, nor errors
 * once counting stopped. */
static void test_log_counts_errors(void)
{
	_Atomic unsigned *n = mmap(NULL, sizeof(*n), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int saved = dup(2), devnull = open("/dev/null", O_WRONLY);
	pid_t pid;

	CHECK(n != MAP_FAILED && saved >= 0 && devnull >= 0);
	if (n == MAP_FAILED || saved < 0 || devnull < 0)
		return;
	atomic_store(n, 0);
	dup2(devnull, 2);
	pb_log_count_errors(n);
	pb_log_error("counted");
	pb_log_warn("not counted");
	pb_log_info("not counted");
	pid = fork();
	if (pid == 0) {
		pb_log_error("counted, from a child");
		_exit(0);
	}
	CHECK(pid > 0 && waitpid(pid, NULL, 0) == pid);
	pb_log_count_errors(NULL);
	pb_log_error("not counted: counting stopped");
	dup2(saved, 2);
	close(saved);
	close(devnull);
	CHECK_EQ_INT(atomic_load(n), 2);
	munmap((void *)n, sizeof(*n));
}

int main(void)
{
	test_log_counts_errors();
	test_sizes();
	test_defaults_and_values();
	test_bad_input();
	test_help_shows_defaults();
	TEST_DONE();
}
