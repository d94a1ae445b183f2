/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Process placement with hwloc.  Planning is a pure function of a topology
 * and a request (testable on synthetic topologies); applying binds the
 * calling process and verifies the binding instead of assuming it.
 *
 * Policies (one PU per process, SMT siblings used only once every core has one):
 *   compact      cores in topology order, package after package
 *   scatter      round-robin over packages (or NUMA nodes when there are more)
 *   near-device  cores local to a PCI device first (then the rest, noted);
 *                a device without PCI locality falls back to compact, noted.
 *                With a device per process (pci_busids: several adapters),
 *                each process takes the first free PU local to ITS device,
 *                then the first free PU anywhere (noted); a device without
 *                locality counts as local to every core
 *   list         the given PU OS indices, ascending (e.g. "0,2,4-7")
 *   none         no binding
 * More processes than candidate PUs is an error unless oversubscription is
 * allowed, in which case the order wraps around.
 */
#ifndef PB_PIN_H
#define PB_PIN_H

#include <hwloc.h>
#include <stdbool.h>
#include <stddef.h>

#define PB_PIN_MAX 1024

enum pb_pin_policy { PB_PIN_NEAR_DEVICE, PB_PIN_COMPACT, PB_PIN_SCATTER, PB_PIN_LIST, PB_PIN_NONE };

struct pb_pin_request {
	enum pb_pin_policy policy;
	unsigned nprocs;
	bool allow_oversubscribe;
	const char *pci_busid;   /* near-device: "0000:03:00.0"; NULL = no PCI locality */
	/* near-device, several devices: busid of each process's device ([nprocs]; NULL or
	 * "" entry = no PCI locality); NULL = pci_busid for every process */
	const char *const *pci_busids;
	const unsigned *list;    /* list: PU OS indices */
	size_t nlist;
};

struct pb_pin_plan {
	unsigned n;
	int pu[PB_PIN_MAX];      /* PU OS index per process; -1 = unbound */
	int numa[PB_PIN_MAX];    /* NUMA node OS index of that PU; -1 unknown */
	char note[256];          /* why the plan differs from the plain policy, or "" */
};

struct pb_pin_report {
	int pu_bound;            /* PU OS index requested, -1 = none */
	int cpu;                 /* PU the process last ran on (hwloc_get_last_cpu_location) */
	int numa_node;
	bool verified;           /* binding read back equals the requested set */
};

/*
 * Load the topology of this machine (with PCI devices when with_io).
 * Returns 0 or -errno.
 */
int pb_pin_topology_load(hwloc_topology_t *topo, bool with_io);

/*
 * Plan the placement of req->nprocs processes.  Returns 0, or -EINVAL with
 * the reason in err (unknown PU in a list, too many processes, ...).
 */
int pb_pin_plan_make(hwloc_topology_t topo, const struct pb_pin_request *req,
		     struct pb_pin_plan *plan, char *err, size_t errlen);

/*
 * Bind the calling process to PU pu_os (-1: leave unbound, just report) and
 * verify.  Returns 0, -EINVAL for an unknown PU, -EIO when the binding read
 * back differs (err says how).
 */
int pb_pin_apply(hwloc_topology_t topo, int pu_os, struct pb_pin_report *rep, char *err,
		 size_t errlen);

/* Parse "0,2,4-7" into PU indices. Returns the count or -EINVAL. */
int pb_pin_parse_list(const char *text, unsigned *out, size_t max, char *err, size_t errlen);

/* Count of PUs of the topology. */
unsigned pb_pin_pu_count(hwloc_topology_t topo);

#endif
