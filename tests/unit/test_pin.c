/* SPDX-License-Identifier: BSD-3-Clause */
/* Placement on hwloc synthetic topologies, and a verified binding on this machine. */
#include "pb_pin.h"
#include "pb_test.h"

#include <errno.h>
#include <string.h>

static hwloc_topology_t synthetic(const char *desc)
{
	hwloc_topology_t t;

	if (hwloc_topology_init(&t) || hwloc_topology_set_synthetic(t, desc) || hwloc_topology_load(t)) {
		fprintf(stderr, "cannot build synthetic topology '%s'\n", desc);
		exit(1);
	}
	return t;
}

static hwloc_obj_t pu_obj(hwloc_topology_t t, int os)
{
	return hwloc_get_pu_obj_by_os_index(t, (unsigned)os);
}

static unsigned core_of(hwloc_topology_t t, int os)
{
	return hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, pu_obj(t, os))->logical_index;
}

static unsigned pkg_of(hwloc_topology_t t, int os)
{
	return hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, pu_obj(t, os))->logical_index;
}

static struct pb_pin_plan plan;

static int make(hwloc_topology_t t, enum pb_pin_policy pol, unsigned n, bool over)
{
	struct pb_pin_request req = { .policy = pol, .nprocs = n, .allow_oversubscribe = over };
	char err[256] = "";
	int rc = pb_pin_plan_make(t, &req, &plan, err, sizeof(err));

	if (rc)
		fprintf(stderr, "(expected or not) plan error: %s\n", err);
	return rc;
}

/* compact: package 0's cores first, one PU per core, distinct cores. */
static void test_compact(void)
{
	hwloc_topology_t t = synthetic("pack:2 core:4 pu:2");

	CHECK_EQ_INT(make(t, PB_PIN_COMPACT, 4, false), 0);
	for (unsigned i = 0; i < 4; i++) {
		CHECK_EQ_INT(pkg_of(t, plan.pu[i]), 0);
		CHECK_EQ_INT(core_of(t, plan.pu[i]), i);
	}
	/* 8 processes: every core once before any SMT sibling */
	CHECK_EQ_INT(make(t, PB_PIN_COMPACT, 8, false), 0);
	for (unsigned i = 0; i < 8; i++)
		for (unsigned j = 0; j < i; j++)
			CHECK(core_of(t, plan.pu[i]) != core_of(t, plan.pu[j]));
	/* 16 = all PUs: siblings used, all distinct PUs */
	CHECK_EQ_INT(make(t, PB_PIN_COMPACT, 16, false), 0);
	for (unsigned i = 0; i < 16; i++)
		for (unsigned j = 0; j < i; j++)
			CHECK(plan.pu[i] != plan.pu[j]);
	hwloc_topology_destroy(t);
}

/* scatter: balanced packages, distinct cores. */
static void test_scatter(void)
{
	hwloc_topology_t t = synthetic("pack:2 core:4 pu:2");
	unsigned per_pkg[2] = { 0, 0 };

	CHECK_EQ_INT(make(t, PB_PIN_SCATTER, 4, false), 0);
	for (unsigned i = 0; i < 4; i++) {
		per_pkg[pkg_of(t, plan.pu[i])]++;
		CHECK_EQ_INT(pkg_of(t, plan.pu[i]), i % 2); /* alternates */
		for (unsigned j = 0; j < i; j++)
			CHECK(core_of(t, plan.pu[i]) != core_of(t, plan.pu[j]));
	}
	CHECK_EQ_INT(per_pkg[0], 2);
	CHECK_EQ_INT(per_pkg[1], 2);
	hwloc_topology_destroy(t);

	/* NUMA nodes inside one package: scatter spreads over NUMA nodes. */
	t = synthetic("pack:1 numa:2 core:2 pu:1");
	CHECK_EQ_INT(make(t, PB_PIN_SCATTER, 2, false), 0);
	CHECK(plan.numa[0] != plan.numa[1]);
	hwloc_topology_destroy(t);
}

static void test_oversubscription(void)
{
	hwloc_topology_t t = synthetic("pack:1 core:2 pu:1");

	CHECK_EQ_INT(make(t, PB_PIN_COMPACT, 3, false), -EINVAL);
	CHECK_EQ_INT(make(t, PB_PIN_COMPACT, 8, true), 0);
	CHECK_EQ_INT(plan.pu[0], plan.pu[2]); /* wraps around */
	CHECK(strstr(plan.note, "oversubscribed") != NULL);
	hwloc_topology_destroy(t);
}

static void test_list_and_none(void)
{
	hwloc_topology_t t = synthetic("pack:2 core:2 pu:1");
	unsigned list[4];
	char err[256];
	struct pb_pin_request req = { .policy = PB_PIN_LIST, .nprocs = 2, .list = list };

	CHECK_EQ_INT(pb_pin_parse_list("3,1", list, 4, err, sizeof(err)), 2);
	req.nlist = 2;
	CHECK_EQ_INT(pb_pin_plan_make(t, &req, &plan, err, sizeof(err)), 0);
	CHECK_EQ_INT(plan.pu[0], 1);
	CHECK_EQ_INT(plan.pu[1], 3);
	list[0] = 9; /* no such PU */
	CHECK_EQ_INT(pb_pin_plan_make(t, &req, &plan, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "PU 9") != NULL);
	CHECK(pb_pin_parse_list("x", list, 4, err, sizeof(err)) < 0);
	req.nprocs = 3;
	list[0] = 0;
	CHECK_EQ_INT(pb_pin_plan_make(t, &req, &plan, err, sizeof(err)), -EINVAL); /* 3 procs, 2 listed */
	CHECK_EQ_INT(make(t, PB_PIN_NONE, 3, false), 0);
	CHECK_EQ_INT(plan.pu[2], -1);
	hwloc_topology_destroy(t);
}

/* near-device without PCI locality (a software device such as rxe): compact, with a note. */
static void test_near_device_fallback(void)
{
	hwloc_topology_t t = synthetic("pack:2 core:2 pu:1");

	CHECK_EQ_INT(make(t, PB_PIN_NEAR_DEVICE, 2, false), 0);
	CHECK(strstr(plan.note, "no PCI locality") != NULL);
	CHECK_EQ_INT(pkg_of(t, plan.pu[0]), 0);
	hwloc_topology_destroy(t);
}

#ifndef PB_TOPO_2HCA
#define PB_TOPO_2HCA "topo-2numa-2hca.xml"
#endif

static hwloc_topology_t two_hca(void)
{
	hwloc_topology_t t;

	if (hwloc_topology_init(&t) || hwloc_topology_set_xml(t, PB_TOPO_2HCA) ||
	    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) || hwloc_topology_load(t)) {
		fprintf(stderr, "cannot load %s\n", PB_TOPO_2HCA);
		exit(1);
	}
	return t;
}

static int make_devs(hwloc_topology_t t, unsigned n, const char *const *busids, bool over)
{
	struct pb_pin_request req = { .policy = PB_PIN_NEAR_DEVICE, .nprocs = n, .allow_oversubscribe = over,
				      .pci_busids = busids };
	char err[256] = "";
	int rc = pb_pin_plan_make(t, &req, &plan, err, sizeof(err));

	if (rc)
		fprintf(stderr, "(expected or not) plan error: %s\n", err);
	return rc;
}

#define HCA0 "0000:03:00.0"   /* NUMA node 0 (PUs 0-3) */
#define HCA1 "0000:81:00.0"   /* NUMA node 1 (PUs 4-7) */

/*
 * Several devices: each process lands on its own device's NUMA node, on
 * distinct PUs, as the launcher lays out a loopback run of 4 pairs
 * round-robin over two devices (clients 0-3, then servers 0-3).
 */
static void test_near_devices(void)
{
	hwloc_topology_t t = two_hca();
	const char *rr[8] = { HCA0, HCA1, HCA0, HCA1, HCA0, HCA1, HCA0, HCA1 };

	CHECK_EQ_INT(make_devs(t, 8, rr, false), 0);
	for (unsigned i = 0; i < 8; i++) {
		CHECK_EQ_INT(plan.numa[i], (int)(i % 2));
		for (unsigned j = 0; j < i; j++)
			CHECK(plan.pu[i] != plan.pu[j]);
	}
	CHECK_EQ_INT(plan.note[0], 0);
	/* The same request gives the same plan (pure function). */
	int first[8];

	memcpy(first, plan.pu, sizeof(first));
	CHECK_EQ_INT(make_devs(t, 8, rr, false), 0);
	CHECK(!memcmp(first, plan.pu, sizeof(first)));
	hwloc_topology_destroy(t);
}

/* Six processes on HCA1 (4 local PUs): 4 on NUMA 1, 2 spill to NUMA 0, said in the note. */
static void test_near_devices_spill(void)
{
	hwloc_topology_t t = two_hca();
	const char *all1[6] = { HCA1, HCA1, HCA1, HCA1, HCA1, HCA1 };
	const char *mixed[2] = { NULL, HCA1 }; /* no locality (rxe) + a PCI device */
	unsigned on1 = 0;

	CHECK_EQ_INT(make_devs(t, 6, all1, false), 0);
	for (unsigned i = 0; i < 6; i++)
		on1 += plan.numa[i] == 1;
	CHECK_EQ_INT(on1, 4);
	for (unsigned i = 0; i < 4; i++)
		CHECK_EQ_INT(plan.numa[i], 1);
	CHECK(strstr(plan.note, "2 processes placed on cores remote") != NULL);
	/* 9 processes on 8 PUs: refused, then wrapped when allowed */
	const char *nine[9] = { HCA0, HCA0, HCA0, HCA0, HCA0, HCA1, HCA1, HCA1, HCA1 };

	CHECK_EQ_INT(make_devs(t, 9, nine, false), -EINVAL);
	CHECK_EQ_INT(make_devs(t, 9, nine, true), 0);
	CHECK(strstr(plan.note, "oversubscribed: 9 processes on 8 PUs") != NULL);
	CHECK_EQ_INT(make_devs(t, 2, mixed, false), 0);
	CHECK_EQ_INT(plan.numa[1], 1);
	CHECK(strstr(plan.note, "no PCI locality") != NULL);
	hwloc_topology_destroy(t);
}

/* Binding on the real machine is applied and verified. */
static void test_apply_real(void)
{
	hwloc_topology_t t;
	struct pb_pin_report rep;
	char err[256] = "";

	CHECK_EQ_INT(pb_pin_topology_load(&t, false), 0);
	CHECK_EQ_INT(make(t, PB_PIN_COMPACT, 1, false), 0);
	CHECK_EQ_INT(pb_pin_apply(t, plan.pu[0], &rep, err, sizeof(err)), 0);
	if (err[0])
		fprintf(stderr, "apply: %s\n", err);
	CHECK(rep.verified);
	CHECK_EQ_INT(rep.cpu, plan.pu[0]);
	CHECK_EQ_INT(pb_pin_apply(t, 100000, &rep, err, sizeof(err)), -EINVAL);
	hwloc_topology_destroy(t);
}

int main(void)
{
	test_compact();
	test_scatter();
	test_oversubscription();
	test_list_and_none();
	test_near_device_fallback();
	test_near_devices();
	test_near_devices_spill();
	test_apply_real();
	TEST_DONE();
}
