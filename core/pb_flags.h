/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Measurement flags that follow from the machine a run ran on, not from
 * what it measured (docs/methodology.md, "Flags"):
 *   oversubscribed     more busy-polling processes of the run on the node
 *                      than CPUs available to them: latency and bandwidth
 *                      then measure the scheduler, not the interconnect
 *   emulated_device    the RDMA device is a software one (rdma_rxe, siw)
 *   link_rate_nominal  the device reports a link rate it does not have
 *                      (an emulated device): link_pct is left empty
 *   link_rate_unknown  the device reports no link rate: link_pct is empty
 * Pure functions: the executables gather the facts, these decide.
 */
#ifndef PB_FLAGS_H
#define PB_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What one executable knows about its run on this node. */
struct pb_run_facts {
	unsigned busy_procs;     /* processes of the run busy-polling on this node */
	unsigned cpus;           /* CPUs available to them (allowed set); 0 = unknown */
	const char *driver;      /* kernel driver of the RDMA device; NULL = no device (MPI) */
	double link_gbit_s;      /* link rate the device reports, 10^9 bit/s; 0 = none */
};

/* busy_procs > cpus; false when cpus is unknown (0). */
bool pb_flags_oversubscribed(unsigned busy_procs, unsigned cpus);

/* The driver is a software RDMA device: rdma_rxe (or rxe), siw. */
bool pb_flags_emulated_driver(const char *driver);

/*
 * The driver's name: the sysfs driver link's name when there is one (PCI
 * devices: "mlx5_core"), else the name the software drivers are known by
 * from the vendor id they report (rdma_rxe 0xffffff, siw 0x626d74: they
 * have no device/driver link), else "" (unknown).
 */
const char *pb_flags_rdma_driver(const char *sysfs_driver, uint32_t vendor_id);

/*
 * The run's flags, ';'-separated, into out[0..len) ("" for none), and the
 * link rate rows may be judged against: f->link_gbit_s, or 0 (link_pct
 * empty) when the device has none or its rate is nominal.
 */
double pb_flags_run(const struct pb_run_facts *f, char *out, size_t len);

/* Append to out[0..len) every ';'-separated flag of more that out does not have yet
 * (a flag that does not fit whole is left out). */
void pb_flags_merge(char *out, size_t len, const char *more);

#endif
