/* SPDX-License-Identifier: BSD-3-Clause */
#include "pb_pin.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pb_pin_topology_load(hwloc_topology_t *topo, bool with_io)
{
	if (hwloc_topology_init(topo))
		return -errno ? -errno : -ENOMEM;
	if (with_io)
		hwloc_topology_set_io_types_filter(*topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	if (hwloc_topology_load(*topo)) {
		int rc = errno ? -errno : -EIO;

		hwloc_topology_destroy(*topo);
		return rc;
	}
	return 0;
}

unsigned pb_pin_pu_count(hwloc_topology_t topo)
{
	int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);

	return n > 0 ? (unsigned)n : 0;
}

static int pb_pin_numa_of(hwloc_obj_t pu)
{
	int node = pu->nodeset ? hwloc_bitmap_first(pu->nodeset) : -1;

	return node;
}

/* The group a core belongs to for scatter: its package or NUMA node. */
static hwloc_obj_type_t pb_pin_scatter_level(hwloc_topology_t topo)
{
	int pkgs = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
	int numas = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);

	return numas > pkgs ? HWLOC_OBJ_NUMANODE : HWLOC_OBJ_PACKAGE;
}

static unsigned pb_pin_group_of(hwloc_topology_t topo, hwloc_obj_t core, hwloc_obj_type_t level)
{
	if (level == HWLOC_OBJ_NUMANODE) {
		int n = core->nodeset ? hwloc_bitmap_first(core->nodeset) : 0;
		hwloc_obj_t numa = hwloc_get_numanode_obj_by_os_index(topo, (unsigned)(n < 0 ? 0 : n));

		return numa ? numa->logical_index : 0;
	}
	hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, core);

	return pkg ? pkg->logical_index : 0;
}

/*
 * Candidate PUs in policy order: for each SMT level, the cores in order
 * (compact: topology order; scatter: round-robin across groups).  cpuset
 * restricts cores to those intersecting it (near-device); NULL = all.
 * Returns the number of PUs written to order[].
 */
static unsigned pb_pin_order(hwloc_topology_t topo, bool scatter, hwloc_const_cpuset_t within,
			     bool exclude, hwloc_obj_t *order, unsigned max)
{
	int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
	hwloc_obj_type_t core_type = HWLOC_OBJ_CORE;
	unsigned n = 0, max_smt = 1;

	if (ncores <= 0) { /* no core level (some VMs): treat PUs as cores */
		core_type = HWLOC_OBJ_PU;
		ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
	}
	hwloc_obj_t *cores = calloc((size_t)ncores, sizeof(*cores));
	unsigned *group = calloc((size_t)ncores, sizeof(*group));
	unsigned ngroups = 1, nsel = 0;
	hwloc_obj_type_t level = pb_pin_scatter_level(topo);

	if (!cores || !group)
		goto out;
	for (int i = 0; i < ncores; i++) {
		hwloc_obj_t c = hwloc_get_obj_by_type(topo, core_type, (unsigned)i);
		bool in = !within || hwloc_bitmap_intersects(c->cpuset, within);

		if (in == exclude)
			continue;
		cores[nsel] = c;
		group[nsel] = pb_pin_group_of(topo, c, level);
		if (group[nsel] + 1 > ngroups)
			ngroups = group[nsel] + 1;
		unsigned smt = (unsigned)hwloc_bitmap_weight(c->cpuset);
		if (smt > max_smt)
			max_smt = smt;
		nsel++;
	}
	for (unsigned s = 0; s < max_smt; s++) {
		if (!scatter) {
			for (unsigned i = 0; i < nsel && n < max; i++) {
				hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(topo, cores[i]->cpuset, HWLOC_OBJ_PU, s);
				if (pu)
					order[n++] = pu;
			}
			continue;
		}
		/* scatter: k-th core of group 0, k-th of group 1, ... */
		for (unsigned k = 0; k < nsel; k++) {
			for (unsigned g = 0; g < ngroups; g++) {
				unsigned seen = 0;

				for (unsigned i = 0; i < nsel && n < max; i++) {
					if (group[i] != g || seen++ != k)
						continue;
					hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(topo, cores[i]->cpuset, HWLOC_OBJ_PU, s);
					if (pu)
						order[n++] = pu;
				}
			}
		}
	}
out:
	free(cores);
	free(group);
	return n;
}

static int pb_pin_plan_list(hwloc_topology_t topo, const struct pb_pin_request *req,
			    hwloc_obj_t *order, unsigned *n, char *err, size_t errlen)
{
	*n = 0;
	if (!req->list || !req->nlist) {
		snprintf(err, errlen, "pin policy 'list' needs --pin-list");
		return -EINVAL;
	}
	for (size_t i = 0; i < req->nlist && i < PB_PIN_MAX; i++) {
		hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(topo, req->list[i]);

		if (!pu) {
			snprintf(err, errlen, "PU %u in --pin-list does not exist on this machine (PUs: 0..%u)",
				 req->list[i], pb_pin_pu_count(topo) - 1);
			return -EINVAL;
		}
		order[(*n)++] = pu;
	}
	return 0;
}

/* The cpuset a device is local to, NULL when it has none (absent, or local to every core). */
static hwloc_const_cpuset_t pb_pin_dev_cpuset(hwloc_topology_t topo, const char *busid)
{
	hwloc_obj_t dev = busid && *busid ? hwloc_get_pcidev_by_busidstring(topo, busid) : NULL;
	hwloc_obj_t anc = dev ? hwloc_get_non_io_ancestor_obj(topo, dev) : NULL;

	if (!anc || hwloc_bitmap_isequal(anc->cpuset, hwloc_topology_get_topology_cpuset(topo)))
		return NULL;
	return anc->cpuset;
}

/*
 * near-device with a device per process: process i takes the first PU, in
 * compact order, that is local to its device and used least so far; a
 * process whose device has no free local PU takes the least-used PU of the
 * whole machine (noted).  Oversubscription wraps in the same way.
 */
static int pb_pin_plan_devices(hwloc_topology_t topo, const struct pb_pin_request *req,
			       struct pb_pin_plan *plan, char *err, size_t errlen)
{
	hwloc_obj_t order[PB_PIN_MAX];
	unsigned n = pb_pin_order(topo, false, NULL, false, order, PB_PIN_MAX), remote = 0, nolocal = 0;
	unsigned used[PB_PIN_MAX] = { 0 };

	if (n == 0) {
		snprintf(err, errlen, "no PU available for placement");
		return -EINVAL;
	}
	if (req->nprocs > n && !req->allow_oversubscribe) {
		snprintf(err, errlen,
			 "%u processes to pin but only %u PUs available (machine has %u); use fewer pairs, or allow oversubscription (--allow-oversubscribe)",
			 req->nprocs, n, pb_pin_pu_count(topo));
		return -EINVAL;
	}
	for (unsigned i = 0; i < req->nprocs; i++) {
		hwloc_const_cpuset_t local = pb_pin_dev_cpuset(topo, req->pci_busids[i]);
		int best = -1, best_any = -1;

		nolocal += !local;
		for (unsigned k = 0; k < n; k++) {
			bool is_local = !local || hwloc_bitmap_intersects(order[k]->cpuset, local);

			if (is_local && (best < 0 || used[k] < used[best]))
				best = (int)k;
			if (best_any < 0 || used[k] < used[best_any])
				best_any = (int)k;
		}
		if (best < 0 || (used[best] > used[best_any])) {
			best = best_any;
			remote++;
		}
		used[best]++;
		plan->pu[i] = (int)order[best]->os_index;
		plan->numa[i] = pb_pin_numa_of(order[best]);
	}
	if (remote)
		snprintf(plan->note, sizeof(plan->note),
			 "%u processes placed on cores remote to their device (its local PUs were taken)", remote);
	if (nolocal) {
		size_t len = strlen(plan->note);

		snprintf(plan->note + len, sizeof(plan->note) - len, "%s%u processes' device has no PCI locality (any core)",
			 len ? "; " : "", nolocal);
	}
	if (req->nprocs > n) {
		size_t len = strlen(plan->note);

		snprintf(plan->note + len, sizeof(plan->note) - len, "%soversubscribed: %u processes on %u PUs",
			 len ? "; " : "", req->nprocs, n);
	}
	return 0;
}

int pb_pin_plan_make(hwloc_topology_t topo, const struct pb_pin_request *req,
		     struct pb_pin_plan *plan, char *err, size_t errlen)
{
	hwloc_obj_t order[PB_PIN_MAX];
	unsigned n = 0, npus = pb_pin_pu_count(topo);
	int rc = 0;

	memset(plan, 0, sizeof(*plan));
	if (req->nprocs == 0 || req->nprocs > PB_PIN_MAX) {
		snprintf(err, errlen, "cannot place %u processes (1..%d)", req->nprocs, PB_PIN_MAX);
		return -EINVAL;
	}
	plan->n = req->nprocs;
	if (req->policy == PB_PIN_NONE) {
		for (unsigned i = 0; i < req->nprocs; i++)
			plan->pu[i] = plan->numa[i] = -1;
		return 0;
	}
	if (req->policy == PB_PIN_NEAR_DEVICE && req->pci_busids)
		return pb_pin_plan_devices(topo, req, plan, err, errlen);
	if (req->policy == PB_PIN_LIST) {
		rc = pb_pin_plan_list(topo, req, order, &n, err, errlen);
	} else if (req->policy == PB_PIN_NEAR_DEVICE) {
		hwloc_obj_t dev = req->pci_busid ? hwloc_get_pcidev_by_busidstring(topo, req->pci_busid) : NULL;
		hwloc_obj_t anc = dev ? hwloc_get_non_io_ancestor_obj(topo, dev) : NULL;

		if (!anc || hwloc_bitmap_isequal(anc->cpuset, hwloc_topology_get_topology_cpuset(topo))) {
			snprintf(plan->note, sizeof(plan->note), "%s; near-device = compact over all cores",
				 req->pci_busid ? "device is local to every core" : "device has no PCI locality");
			n = pb_pin_order(topo, false, NULL, false, order, PB_PIN_MAX);
		} else {
			n = pb_pin_order(topo, false, anc->cpuset, false, order, PB_PIN_MAX);
			unsigned local = n;
			if (local < req->nprocs) {
				n += pb_pin_order(topo, false, anc->cpuset, true, order + n, PB_PIN_MAX - n);
				snprintf(plan->note, sizeof(plan->note),
					 "only %u PUs are local to %s; %u processes placed on remote cores",
					 local, req->pci_busid, req->nprocs - local);
			}
		}
	} else {
		n = pb_pin_order(topo, req->policy == PB_PIN_SCATTER, NULL, false, order, PB_PIN_MAX);
	}
	if (rc)
		return rc;
	if (n == 0) {
		snprintf(err, errlen, "no PU available for placement");
		return -EINVAL;
	}
	if (req->nprocs > n && !req->allow_oversubscribe) {
		snprintf(err, errlen,
			 "%u processes to pin but only %u %s (machine has %u); use fewer pairs, or allow oversubscription (--allow-oversubscribe)",
			 req->nprocs, n, req->policy == PB_PIN_LIST ? "PUs listed" : "PUs available", npus);
		return -EINVAL;
	}
	for (unsigned i = 0; i < req->nprocs; i++) {
		hwloc_obj_t pu = order[i % n];

		plan->pu[i] = (int)pu->os_index;
		plan->numa[i] = pb_pin_numa_of(pu);
	}
	if (req->nprocs > n) {
		size_t len = strlen(plan->note);

		snprintf(plan->note + len, sizeof(plan->note) - len, "%soversubscribed: %u processes on %u PUs",
			 len ? "; " : "", req->nprocs, n);
	}
	return 0;
}

int pb_pin_apply(hwloc_topology_t topo, int pu_os, struct pb_pin_report *rep, char *err,
		 size_t errlen)
{
	hwloc_bitmap_t got = hwloc_bitmap_alloc(), last = hwloc_bitmap_alloc();
	int rc = 0;

	rep->pu_bound = pu_os;
	rep->cpu = rep->numa_node = -1;
	rep->verified = false;
	if (!got || !last) {
		rc = -ENOMEM;
		goto out;
	}
	if (pu_os >= 0) {
		hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(topo, (unsigned)pu_os);

		if (!pu) {
			snprintf(err, errlen, "PU %d does not exist", pu_os);
			rc = -EINVAL;
			goto out;
		}
		if (hwloc_set_cpubind(topo, pu->cpuset, HWLOC_CPUBIND_PROCESS)) {
			snprintf(err, errlen, "binding to PU %d failed: %s", pu_os, strerror(errno));
			rc = -EIO;
			goto out;
		}
		/* Verify: read the binding back instead of assuming it. */
		if (hwloc_get_cpubind(topo, got, HWLOC_CPUBIND_PROCESS) ||
		    !hwloc_bitmap_isequal(got, pu->cpuset)) {
			char want[64], have[64];

			hwloc_bitmap_list_snprintf(want, sizeof(want), pu->cpuset);
			hwloc_bitmap_list_snprintf(have, sizeof(have), got);
			snprintf(err, errlen, "binding to PU %d not in effect: wanted {%s}, have {%s}", pu_os,
				 want, have);
			rc = -EIO;
			goto out;
		}
		rep->verified = true;
	}
	sched_yield(); /* let the scheduler move us before asking where we run */
	if (hwloc_get_last_cpu_location(topo, last, HWLOC_CPUBIND_THREAD) == 0) {
		rep->cpu = hwloc_bitmap_first(last);
		if (pu_os >= 0 && rep->cpu != pu_os) {
			snprintf(err, errlen, "process runs on PU %d, bound to PU %d", rep->cpu, pu_os);
			rc = -EIO;
			goto out;
		}
		hwloc_obj_t pu = rep->cpu >= 0 ? hwloc_get_pu_obj_by_os_index(topo, (unsigned)rep->cpu) : NULL;

		rep->numa_node = pu ? pb_pin_numa_of(pu) : -1;
	}
out:
	hwloc_bitmap_free(got);
	hwloc_bitmap_free(last);
	return rc;
}

int pb_pin_parse_list(const char *text, unsigned *out, size_t max, char *err, size_t errlen)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	int n = 0;

	if (!set)
		return -ENOMEM;
	if (!text || !*text || hwloc_bitmap_list_sscanf(set, text) || hwloc_bitmap_iszero(set) ||
	    hwloc_bitmap_weight(set) < 0) {
		snprintf(err, errlen, "'%s' is not a PU list like 0,2,4-7", text ? text : "");
		hwloc_bitmap_free(set);
		return -EINVAL;
	}
	int i;

	hwloc_bitmap_foreach_begin(i, set) {
		if ((size_t)n < max)
			out[n++] = (unsigned)i;
	}
	hwloc_bitmap_foreach_end();
	hwloc_bitmap_free(set);
	return n;
}
