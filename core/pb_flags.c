/* SPDX-License-Identifier: BSD-3-Clause */
/* Flags that follow from the machine (pb_flags.h). */
#include "pb_flags.h"

#include <stdio.h>
#include <string.h>

/* Vendor ids the software RDMA drivers report (RXE_VENDOR_ID, SIW_VENDOR_ID in Linux). */
#define PB_RXE_VENDOR_ID 0xffffffu
#define PB_SIW_VENDOR_ID 0x626d74u

bool pb_flags_oversubscribed(unsigned busy_procs, unsigned cpus)
{
	return cpus > 0 && busy_procs > cpus;
}

bool pb_flags_emulated_driver(const char *driver)
{
	return driver && (!strcmp(driver, "rdma_rxe") || !strcmp(driver, "rxe") || !strcmp(driver, "siw"));
}

const char *pb_flags_rdma_driver(const char *sysfs_driver, uint32_t vendor_id)
{
	if (sysfs_driver && sysfs_driver[0])
		return sysfs_driver;
	if (vendor_id == PB_RXE_VENDOR_ID)
		return "rdma_rxe";
	if (vendor_id == PB_SIW_VENDOR_ID)
		return "siw";
	return "";
}

static void pb_flags_add(char *out, size_t len, const char *flag)
{
	size_t used = strlen(out);

	if (used < len)
		snprintf(out + used, len - used, "%s%s", used ? ";" : "", flag);
}

void pb_flags_merge(char *out, size_t len, const char *more)
{
	while (more && *more) {
		size_t n = strcspn(more, ";");
		const char *at = out;
		bool have = false;

		while (n && *at && !have) {
			size_t m = strcspn(at, ";");

			have = m == n && !strncmp(at, more, n);
			at += m + (at[m] == ';');
		}
		if (n && !have) {
			size_t used = strlen(out), need = (used ? 1 : 0) + n;

			/* A flag that does not fit whole is left out, never cut. */
			if (used + need < len)
				snprintf(out + used, len - used, "%s%.*s", used ? ";" : "", (int)n, more);
		}
		more += n + (more[n] == ';');
	}
}

double pb_flags_run(const struct pb_run_facts *f, char *out, size_t len)
{
	double link = f->link_gbit_s > 0 ? f->link_gbit_s : 0;

	if (len)
		out[0] = 0;
	if (pb_flags_oversubscribed(f->busy_procs, f->cpus))
		pb_flags_add(out, len, "oversubscribed");
	if (!f->driver)
		return 0;  /* no RDMA device: no link to judge against, nothing to say */
	if (pb_flags_emulated_driver(f->driver)) {
		pb_flags_add(out, len, "emulated_device");
		if (link > 0) {
			pb_flags_add(out, len, "link_rate_nominal");
			link = 0;
		}
	}
	if (!(f->link_gbit_s > 0))
		pb_flags_add(out, len, "link_rate_unknown");
	return link;
}
