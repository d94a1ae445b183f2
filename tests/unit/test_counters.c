/* SPDX-License-Identifier: BSD-3-Clause */
/* verbs/vb_counters.c on a fake sysfs tree: counters/ and hw_counters/ listed, read, deltas as JSON. */
#include "pb_test.h"
#include "vb_counters.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256];

static void put(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void mk(const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	CHECK_EQ_INT(mkdir(path, 0755), 0);
}

static char *slurp(FILE *f)
{
	static char buf[4096];
	size_t n;

	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	return buf;
}

int main(void)
{
	struct vb_counter_set cs;
	struct vb_counters c;
	const char *devs[] = { "mlx5_0", "nocounters" };
	FILE *out = tmpfile();

	snprintf(root, sizeof(root), "/tmp/pb-counters-XXXXXX");
	CHECK(mkdtemp(root) != NULL);
	mk("mlx5_0");
	mk("mlx5_0/ports");
	mk("mlx5_0/ports/1");
	mk("mlx5_0/ports/1/counters");
	mk("mlx5_0/ports/1/hw_counters");
	mk("nocounters");
	put("mlx5_0/ports/1/counters/symbol_error", "0\n");
	put("mlx5_0/ports/1/counters/port_xmit_data", "1000\n");
	put("mlx5_0/ports/1/hw_counters/out_of_sequence", "7\n");
	put("mlx5_0/ports/1/hw_counters/lifespan", "10\n");      /* not a counter */
	put("mlx5_0/ports/1/hw_counters/broken", "n/a\n");       /* unreadable: left out */

	CHECK_EQ_INT(vb_counter_set_open(&cs, root, "nocounters", 1), -ENOENT);
	CHECK_EQ_INT(vb_counter_set_open(&cs, root, "mlx5_0", 1), 0);
	CHECK_EQ_INT(cs.n, 4);
	CHECK_STR(cs.name[0], "port_xmit_data");   /* sorted per directory */
	CHECK_STR(cs.name[1], "symbol_error");
	CHECK_STR(cs.name[2], "broken");
	CHECK_STR(cs.name[3], "out_of_sequence");

	CHECK_EQ_INT(vb_counters_init(&c, devs, NULL, 2, 1, root, out), 0);
	CHECK_EQ_INT(c.nset, 1);                   /* the device without counters is skipped */
	CHECK_EQ_INT(vb_counters_edge(&c, 4096, false), 0);
	put("mlx5_0/ports/1/counters/port_xmit_data", "1600\n");
	put("mlx5_0/ports/1/counters/symbol_error", "2\n");
	put("mlx5_0/ports/1/hw_counters/out_of_sequence", "3\n"); /* reset: goes backwards */
	CHECK_EQ_INT(vb_counters_edge(&c, 4096, true), 0);
	CHECK_EQ_INT(vb_counters_edge(&c, 8192, false), 0);
	CHECK_EQ_INT(vb_counters_edge(&c, 8192, true), 0);
	CHECK_STR(slurp(out),
		  "\n    {\"msg_size_bytes\": 4096, \"device\": \"mlx5_0\", \"port\": 1, \"source\": \"counters\", "
		  "\"deltas\": {\"port_xmit_data\": 600, \"symbol_error\": 2}},"
		  "\n    {\"msg_size_bytes\": 4096, \"device\": \"mlx5_0\", \"port\": 1, \"source\": \"hw_counters\", "
		  "\"deltas\": {\"out_of_sequence\": -4}},"
		  "\n    {\"msg_size_bytes\": 8192, \"device\": \"mlx5_0\", \"port\": 1, \"source\": \"counters\", "
		  "\"deltas\": {\"port_xmit_data\": 0, \"symbol_error\": 0}},"
		  "\n    {\"msg_size_bytes\": 8192, \"device\": \"mlx5_0\", \"port\": 1, \"source\": \"hw_counters\", "
		  "\"deltas\": {\"out_of_sequence\": 0}}");
	vb_counters_free(&c);
	vb_counters_free(NULL);
	fclose(out);
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		CHECK_EQ_INT(system(cmd), 0);
	}
	TEST_DONE();
}
