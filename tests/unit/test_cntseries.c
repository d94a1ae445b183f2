/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs/vb_cntseries.c on a fake sysfs tree: every counter file the device has (no fixed
 * list), the network device's statistics, one line per sample, an unreadable file an empty
 * cell, values as the files say them.
 */
#include "pb_test.h"
#include "vb_cntseries.h"

#include <stdlib.h>
#include <string.h>
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

int main(void)
{
	const char *devs[] = { "rxe0" }, *nets[] = { "dummy0" };
	char ib[300], net[300], out[300], buf[4096];
	struct vb_cntseries_cfg cfg = { .path = out, .host = "node7", .root = ib, .net_root = net,
					.ndev = 1, .devices = devs, .netdevs = nets, .port = 1,
					.interval_s = 0.01, .max_samples = 3 };
	FILE *f;
	size_t n;

	snprintf(root, sizeof(root), "/tmp/pb-cntseries-XXXXXX");
	CHECK(mkdtemp(root) != NULL);
	snprintf(ib, sizeof(ib), "%s/ib", root);
	snprintf(net, sizeof(net), "%s/net", root);
	snprintf(out, sizeof(out), "%s/s-node7.pbcnt.csv", root);
	mk("ib");
	mk("ib/rxe0");
	mk("ib/rxe0/ports");
	mk("ib/rxe0/ports/1");
	mk("ib/rxe0/ports/1/hw_counters");
	put("ib/rxe0/ports/1/hw_counters/link_downed", "3\n");
	put("ib/rxe0/ports/1/hw_counters/a_name_nobody_listed", "123456789012345\n");
	put("ib/rxe0/ports/1/hw_counters/lifespan", "10\n");   /* a refresh period, not a counter */
	mk("ib/rxe0/ports/1/hw_counters/unreadable");         /* read() fails: an empty cell */
	mk("net");
	mk("net/dummy0");
	mk("net/dummy0/statistics");
	put("net/dummy0/statistics/tx_dropped", "42\n");
	CHECK_EQ_INT(vb_cntseries_run(&cfg), 0);
	f = fopen(out, "r");
	CHECK(f != NULL);
	n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = 0;
	if (f)
		fclose(f);
	CHECK(strstr(buf, "# pairbench counters series 1\n# host=node7 interval_s=0.01 netdev:rxe0=dummy0\n") == buf);
	CHECK(strstr(buf, "\nt_mono_ns,t_unix_ns,rxe0/1/hw_counters/a_name_nobody_listed,"
			  "rxe0/1/hw_counters/link_downed,rxe0/1/hw_counters/unreadable,"
			  "rxe0/1/netdev/tx_dropped\n") != NULL);
	CHECK(strstr(buf, "lifespan") == NULL);
	/* three samples: two clock values, the values, an empty cell for the unreadable file */
	{
		unsigned lines = 0;
		char *p = strstr(buf, "tx_dropped\n");

		for (p = p ? p + 11 : buf + n; *p; p++) {
			char *e = strchr(p, '\n');

			if (!e)
				break;
			*e = 0;
			CHECK(strstr(p, ",123456789012345,3,,42") != NULL);
			lines++;
			p = e;
		}
		CHECK_EQ_INT(lines, 3);
	}
	/* a file that cannot be created is an error, not a silent nothing */
	cfg.path = "/nonexistent-dir/x.pbcnt.csv";
	CHECK(vb_cntseries_run(&cfg) < 0);
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
		CHECK_EQ_INT(system(cmd), 0);
	}
	TEST_DONE();
}
