/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Parse each argument as the executables parse --sizes (the same option-table
 * entry, PB_COMMON_OPTS) and print one line per argument: "ok V1,V2,..." or
 * "error MESSAGE".  tests/unit/size_list_parity.py compares it with the driver.
 */
#include "pb_common.h"

#include <stdio.h>

struct size_params {
	struct pb_common_params c;
};

static const struct pb_opt size_opts[] = {
	PB_COMMON_OPTS(struct size_params, c, "x", "8", "1"),
};

int main(int argc, char **argv)
{
	const size_t n = sizeof(size_opts) / sizeof(size_opts[0]);

	for (int i = 1; i < argc; i++) {
		char *av[] = { "size_list_cli", "--sizes", argv[i], NULL };
		struct size_params p;
		struct pb_opts_result res;
		char msg[512];

		if (pb_opts_parse_msg(size_opts, n, 3, av, &p, &res, msg, sizeof(msg))) {
			printf("error %s\n", msg);
			continue;
		}
		printf("ok ");
		for (size_t k = 0; k < p.c.sizes.n; k++)
			printf("%s%llu", k ? "," : "", (unsigned long long)p.c.sizes.v[k]);
		printf("\n");
	}
	return 0;
}
