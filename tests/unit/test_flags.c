/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pb_flags: the machine-dependent flags from the facts each executable
 * gathers (pairbench-verbs: its workers, the PUs, the device's driver and
 * rate; pairbench-mpi: the node's ranks and PUs), and how every row of a
 * point carries them.
 */
#include "pb_flags.h"
#include "pb_engine.h"
#include "pb_test.h"

#include <errno.h>
#include <stdlib.h>

static void test_oversubscribed(void)
{
	CHECK(!pb_flags_oversubscribed(2, 2));
	CHECK(pb_flags_oversubscribed(3, 2));
	CHECK(!pb_flags_oversubscribed(8, 0));   /* CPUs unknown: no claim */
	CHECK(!pb_flags_oversubscribed(0, 4));
}

static void test_driver(void)
{
	CHECK(pb_flags_emulated_driver("rdma_rxe"));
	CHECK(pb_flags_emulated_driver("rxe"));
	CHECK(pb_flags_emulated_driver("siw"));
	CHECK(!pb_flags_emulated_driver("mlx5_core"));
	CHECK(!pb_flags_emulated_driver(""));
	CHECK(!pb_flags_emulated_driver(NULL));
	/* The sysfs driver link wins; the software drivers have none and are known by vendor id. */
	CHECK_STR(pb_flags_rdma_driver("mlx5_core", 0x02c9), "mlx5_core");
	CHECK_STR(pb_flags_rdma_driver("", 0xffffff), "rdma_rxe");
	CHECK_STR(pb_flags_rdma_driver(NULL, 0x626d74), "siw");
	CHECK_STR(pb_flags_rdma_driver("", 0x02c9), "");
}

/* pairbench-verbs: members = 2 x pairs in loopback, PUs of the topology, the device. */
static void test_verbs_facts(void)
{
	char fl[96];
	/* The default run: 4 pairs in loopback on the 2-CPU VM's rxe0 (reports 1x SDR). */
	struct pb_run_facts rig = { .busy_procs = 8, .cpus = 2, .driver = "rdma_rxe",
				    .link_gbit_s = 2.0 };
	struct pb_run_facts hca = { .busy_procs = 4, .cpus = 64, .driver = "mlx5_core",
				    .link_gbit_s = 200.0 };
	struct pb_run_facts norate = { .busy_procs = 2, .cpus = 2, .driver = "mlx5_core",
				       .link_gbit_s = 0 };
	struct pb_run_facts rig1 = { .busy_procs = 2, .cpus = 2, .driver = "rdma_rxe",
				     .link_gbit_s = 2.0 };

	CHECK_NEAR(pb_flags_run(&rig, fl, sizeof(fl)), 0, 0);
	CHECK_STR(fl, "oversubscribed;emulated_device;link_rate_nominal");
	CHECK_NEAR(pb_flags_run(&rig1, fl, sizeof(fl)), 0, 0);
	CHECK_STR(fl, "emulated_device;link_rate_nominal");
	CHECK_NEAR(pb_flags_run(&hca, fl, sizeof(fl)), 200.0, 0);
	CHECK_STR(fl, "");
	CHECK_NEAR(pb_flags_run(&norate, fl, sizeof(fl)), 0, 0);
	CHECK_STR(fl, "link_rate_unknown");
	/* A short buffer truncates, never overflows. */
	CHECK_NEAR(pb_flags_run(&rig, fl, 8), 0, 0);
	CHECK_STR(fl, "oversub");
}

/* pairbench-mpi: the node's ranks against its PUs; no device, no link flags. */
static void test_mpi_facts(void)
{
	char fl[96];
	struct pb_run_facts two = { .busy_procs = 2, .cpus = 2 };
	struct pb_run_facts eight = { .busy_procs = 8, .cpus = 2 };

	CHECK_NEAR(pb_flags_run(&two, fl, sizeof(fl)), 0, 0);
	CHECK_STR(fl, "");
	CHECK_NEAR(pb_flags_run(&eight, fl, sizeof(fl)), 0, 0);
	CHECK_STR(fl, "oversubscribed");
}

/* The rows of what was not run carry the run's flags too (the ok rows: test_engine). */
static void test_rest_rows_carry_flags(void)
{
	static const uint64_t sizes[] = { 8, 64 };
	struct pb_engine_params p = { .layer = "verbs", .test = "write_bw", .sizes = sizes,
				      .n_sizes = 2, .pairs = 2,
				      .flags = "oversubscribed;emulated_device;link_rate_nominal" };
	FILE *csv = tmpfile();
	struct pb_sink sink = { .csv = csv };
	char line[4096];
	int rows = 0;

	CHECK(csv != NULL);
	if (!csv)
		return;
	CHECK_EQ_INT(pb_engine_rest_rows(&p, "nodeA", 0, "killed", &sink), 0);
	rewind(csv);
	while (fgets(line, sizeof(line), csv)) {
		if (!strncmp(line, "schema_version", 14))
			continue;
		rows++;
		CHECK(strstr(line, ",oversubscribed;emulated_device;link_rate_nominal,") != NULL);
	}
	CHECK_EQ_INT(rows, 2 * 3);
	fclose(csv);
}

/* Several devices: one set of flags, each flag once, in first-seen order. */
static void test_merge(void)
{
	char out[96] = "", small[20] = "";

	pb_flags_merge(out, sizeof(out), "oversubscribed;emulated_device;link_rate_nominal");
	pb_flags_merge(out, sizeof(out), "oversubscribed;emulated_device;link_rate_nominal");
	CHECK_STR(out, "oversubscribed;emulated_device;link_rate_nominal");
	pb_flags_merge(out, sizeof(out), "link_rate_unknown;emulated");
	CHECK_STR(out, "oversubscribed;emulated_device;link_rate_nominal;link_rate_unknown;emulated");
	pb_flags_merge(out, sizeof(out), "");
	pb_flags_merge(out, sizeof(out), NULL);
	CHECK_STR(out, "oversubscribed;emulated_device;link_rate_nominal;link_rate_unknown;emulated");
	pb_flags_merge(small, sizeof(small), "oversubscribed;emulated_device;x");
	CHECK_STR(small, "oversubscribed;x");
}

int main(void)
{
	test_merge();
	test_oversubscribed();
	test_driver();
	test_verbs_facts();
	test_mpi_facts();
	test_rest_rows_carry_flags();
	TEST_DONE();
}
