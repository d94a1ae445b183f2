/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device: find it, query device and port, choose the GID index, read
 * what sysfs adds (GID types, netdev, PCI bus id, PCIe link), compute the
 * port rate; and the JSON environment record of a run.
 *
 * vb_dev_probe() runs in a short-lived probe child of the launcher (the
 * launcher itself never calls ibv_*, so forked workers start clean).
 */
#include "vb_dev.h"

#include "pb_clock.h"
#include "pb_env.h"
#include "pb_flags.h"
#include "vb_buf.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

int vb_mtu_bytes(int mtu_enum)
{
	return mtu_enum >= IBV_MTU_256 && mtu_enum <= IBV_MTU_4096 ? 128 << mtu_enum : 0;
}

int vb_mtu_enum(uint64_t bytes)
{
	for (int e = IBV_MTU_256; e <= IBV_MTU_4096; e++)
		if ((uint64_t)(128 << e) == bytes)
			return e;
	return 0;
}

/* First line of a sysfs file, without the newline; "" when unreadable. */
static void vb_sysfs_read(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "r");

	out[0] = 0;
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
}

/* Per-lane data rate (after line coding), 10^9 bit/s, and the speed's name. */
static double vb_lane_rate(uint8_t speed, double *signal, const char **name)
{
	static const struct { uint8_t v; double data, sig; const char *name; } t[] = {
		{ 1, 2.0, 2.5, "SDR" }, { 2, 4.0, 5.0, "DDR" }, { 4, 8.0, 10.0, "QDR" },
		{ 8, 10.0, 10.3125, "FDR10" }, { 16, 13.64, 14.0625, "FDR" }, { 32, 25.0, 25.78125, "EDR" },
		{ 64, 50.0, 53.125, "HDR" }, { 128, 100.0, 106.25, "NDR" }, { 0, 0, 0, NULL },
	};

	for (int i = 0; t[i].name; i++) {
		if (t[i].v == speed) {
			*signal = t[i].sig;
			*name = t[i].name;
			return t[i].data;
		}
	}
	*signal = 0;
	*name = "?";
	return 0;
}

static int vb_width_lanes(uint8_t width)
{
	switch (width) {
	case 1: return 1;
	case 2: return 4;
	case 4: return 8;
	case 8: return 12;
	case 16: return 2;
	default: return 0;
	}
}

static void vb_port_rate(struct vb_probe *pr)
{
	const char *name;
	double sig, lane = vb_lane_rate(pr->active_speed, &sig, &name);
	int lanes = vb_width_lanes(pr->active_width);

	pr->link_gbit_s = lane * lanes;
	pr->signal_gbit_s = sig * lanes;
	snprintf(pr->rate_text, sizeof(pr->rate_text), "%dx %s", lanes, name);
}

static bool vb_gid_zero(const union ibv_gid *g)
{
	for (int i = 0; i < 16; i++)
		if (g->raw[i])
			return false;
	return true;
}

static bool vb_gid_v4mapped(const union ibv_gid *g)
{
	for (int i = 0; i < 10; i++)
		if (g->raw[i])
			return false;
	return g->raw[10] == 0xff && g->raw[11] == 0xff;
}

static void vb_gid_type(const struct vb_probe *pr, unsigned port, int idx, char *out, size_t len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/gid_attrs/types/%d", pr->device,
		 port, idx);
	vb_sysfs_read(path, out, len);
	if (!out[0])
		snprintf(out, len, "%s", pr->link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE?" : "IB");
}

/* Score one valid GID for the automatic choice; remembers the best in *best. */
static void vb_gid_consider(const struct vb_params *p, struct vb_probe *pr, int idx,
			    const union ibv_gid *g, int *best, int *best_score)
{
	char type[32];
	int score;

	if (vb_gid_zero(g) || (p->gid_index_v >= 0 && idx != p->gid_index_v))
		return;
	vb_gid_type(pr, (unsigned)p->ib_port, idx, type, sizeof(type));
	score = (strstr(type, "v2") ? 2 : 0) + (vb_gid_v4mapped(g) ? 1 : 0);
	if (score > *best_score) {
		*best_score = score;
		*best = idx;
	}
}

/*
 * Automatic choice: RoCE v2 with an IPv4-mapped GID, then any RoCE v2, then the
 * first valid.  The valid entries come from one ibv_query_gid_table() call;
 * querying every index instead (rxe: 1024, nearly all empty) costs a system
 * call each.  Per-index queries remain the fallback.
 */
static int vb_gid_choose(struct ibv_context *ctx, const struct vb_params *p, struct vb_probe *pr,
			 int table_len, unsigned ports)
{
	int best = -1, best_score = -1;
	size_t max = (size_t)(table_len > 0 ? table_len : 1) * (ports ? ports : 1);
	struct ibv_gid_entry *ents = calloc(max, sizeof(*ents));
	ssize_t n = ents ? ibv_query_gid_table(ctx, ents, max, 0) : -1;
	union ibv_gid g;

	if (n >= 0) {
		for (ssize_t k = 0; k < n; k++)
			if (ents[k].port_num == p->ib_port)
				vb_gid_consider(p, pr, (int)ents[k].gid_index, &ents[k].gid, &best,
						&best_score);
	} else {
		for (int i = 0; i < table_len; i++)
			if (!ibv_query_gid(ctx, (uint8_t)p->ib_port, i, &g))
				vb_gid_consider(p, pr, i, &g, &best, &best_score);
	}
	free(ents);
	if (best < 0) {
		if (p->gid_index_v >= 0)
			snprintf(pr->error, sizeof(pr->error), "GID index %d (-x) of %s port %llu is empty or beyond the table (%d entries)",
				 p->gid_index_v, pr->device, (unsigned long long)p->ib_port, table_len);
		else
			snprintf(pr->error, sizeof(pr->error), "%s port %llu has no valid GID (no IP address on its netdev?)",
				 pr->device, (unsigned long long)p->ib_port);
		return -EINVAL;
	}
	ibv_query_gid(ctx, (uint8_t)p->ib_port, best, &g);
	pr->gid_index = best;
	vb_gid_type(pr, (unsigned)p->ib_port, best, pr->gid_type, sizeof(pr->gid_type));
	inet_ntop(AF_INET6, g.raw, pr->gid, sizeof(pr->gid));
	if (vb_gid_v4mapped(&g))
		inet_ntop(AF_INET, g.raw + 12, pr->ipv4, sizeof(pr->ipv4));
	snprintf(pr->gid_note, sizeof(pr->gid_note), "%s GID index %d (%s%s)",
		 p->gid_index_v >= 0 ? "given" : "auto:", best, pr->gid_type,
		 pr->ipv4[0] ? ", IPv4-mapped" : "");
	return 0;
}

static void vb_sysfs_extras(const struct vb_params *p, struct vb_probe *pr)
{
	char path[PATH_MAX], link[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/driver", pr->device);
	n = readlink(path, link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = 0;
	snprintf(pr->driver, sizeof(pr->driver), "%s",
		 pb_flags_rdma_driver(strrchr(link, '/') ? strrchr(link, '/') + 1 : link, pr->vendor_id));
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device", pr->device);
	n = readlink(path, link, sizeof(link) - 1);
	if (n > 0) {
		link[n] = 0;
		const char *base = strrchr(link, '/');

		base = base ? base + 1 : link;
		/* A PCI bus id looks like 0000:03:00.0 */
		if (strlen(base) == 12 && base[4] == ':' && base[7] == ':' && base[10] == '.')
			snprintf(pr->pci_busid, sizeof(pr->pci_busid), "%.12s", base);
	}
	if (pr->pci_busid[0]) {
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/current_link_speed", pr->device);
		vb_sysfs_read(path, pr->pcie_speed, sizeof(pr->pcie_speed));
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/current_link_width", pr->device);
		vb_sysfs_read(path, pr->pcie_width, sizeof(pr->pcie_width));
	}
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%llu/gid_attrs/ndevs/%d", pr->device,
		 (unsigned long long)p->ib_port, pr->gid_index);
	vb_sysfs_read(path, pr->netdev, sizeof(pr->netdev));
}

static int vb_dev_query(struct ibv_context *ctx, const struct vb_params *p, struct vb_probe *pr)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	int rc;

	if ((rc = ibv_query_device(ctx, &da))) {
		snprintf(pr->error, sizeof(pr->error), "ibv_query_device(%s): %s", pr->device, strerror(rc));
		return -EIO;
	}
	snprintf(pr->fw_ver, sizeof(pr->fw_ver), "%s", da.fw_ver);
	snprintf(pr->node_guid, sizeof(pr->node_guid), "%016llx", (unsigned long long)be64toh(da.node_guid));
	pr->vendor_id = da.vendor_id;
	pr->vendor_part_id = da.vendor_part_id;
	pr->hw_ver = da.hw_ver;
	pr->max_mr_size = da.max_mr_size;
	pr->max_qp_wr = da.max_qp_wr;
	pr->max_cqe = da.max_cqe;
	pr->max_qp = da.max_qp;      /* --qps (issue 13) */
	pr->max_cq = da.max_cq;
	pr->max_sge = da.max_sge;
	pr->max_qp_rd_atom = da.max_qp_rd_atom;
	pr->max_qp_init_rd_atom = da.max_qp_init_rd_atom;
	pr->atomic_cap = da.atomic_cap;
	if (p->ib_port < 1 || p->ib_port > da.phys_port_cnt) {
		snprintf(pr->error, sizeof(pr->error), "%s has %u port(s); -i %llu does not exist", pr->device,
			 da.phys_port_cnt, (unsigned long long)p->ib_port);
		return -EINVAL;
	}
	if ((rc = ibv_query_port(ctx, (uint8_t)p->ib_port, &pa))) {
		snprintf(pr->error, sizeof(pr->error), "ibv_query_port(%s, %llu): %s", pr->device,
			 (unsigned long long)p->ib_port, strerror(rc));
		return -EIO;
	}
	pr->port_state = pa.state;
	pr->lid = pa.lid;
	pr->active_mtu = pa.active_mtu;
	pr->max_mtu = pa.max_mtu;
	pr->link_layer = pa.link_layer;
	pr->active_width = pa.active_width;
	pr->active_speed = pa.active_speed;
	pr->max_msg_sz = pa.max_msg_sz;
	vb_port_rate(pr);
	if (pa.state != IBV_PORT_ACTIVE) {
		snprintf(pr->error, sizeof(pr->error), "%s port %llu is %s, not ACTIVE (cable, subnet manager, or netdev down?)",
			 pr->device, (unsigned long long)p->ib_port, ibv_port_state_str(pa.state));
		return -ENETDOWN;
	}
	return vb_gid_choose(ctx, p, pr, pa.gid_tbl_len, da.phys_port_cnt);
}

/* Port address as rows print it: lid:0xNNNN on InfiniBand, gid:INDEX:GID on RoCE. */
static void vb_port_addr(struct vb_probe *pr)
{
	if (pr->link_layer == IBV_LINK_LAYER_INFINIBAND)
		snprintf(pr->port_addr, sizeof(pr->port_addr), "lid:0x%04x", pr->lid);
	else
		snprintf(pr->port_addr, sizeof(pr->port_addr), "gid:%d:%s", pr->gid_index, pr->gid);
}

/* Open and query one device into *pr (name already set).  0 or -errno with pr->error. */
static int vb_dev_probe_one(const struct vb_params *p, struct ibv_device *dev, struct vb_probe *pr)
{
	struct ibv_context *ctx = ibv_open_device(dev);
	char path[PATH_MAX], text[32];
	int rc;

	if (!ctx) {
		snprintf(pr->error, sizeof(pr->error), "ibv_open_device(%s): %s", pr->device, strerror(errno));
		return pr->rc = -EIO;
	}
	rc = vb_dev_query(ctx, p, pr);
	ibv_close_device(ctx);
	if (!rc) {
		vb_sysfs_extras(p, pr);
		vb_port_addr(pr);
	}
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/numa_node", pr->device);
	vb_sysfs_read(path, text, sizeof(text));
	pr->numa_node = text[0] ? atoi(text) : -1;
	return pr->rc = rc;
}

/* Is port -i of this device ACTIVE (for -d all)?  Opens the device briefly. */
static bool vb_dev_active(const struct vb_params *p, struct ibv_device *dev)
{
	struct ibv_context *ctx = ibv_open_device(dev);
	struct ibv_port_attr pa;
	bool active;

	if (!ctx)
		return false;
	active = !ibv_query_port(ctx, (uint8_t)p->ib_port, &pa) && pa.state == IBV_PORT_ACTIVE;
	ibv_close_device(ctx);
	return active;
}

/* The probe's failure: the first one, recorded for the launcher. */
static int vb_dev_fail(struct vb_shared *sh, int rc, const char *msg)
{
	sh->probe_rc = rc;
	snprintf(sh->probe_error, sizeof(sh->probe_error), "%s", msg);
	return rc;
}

/* Which devices of list[] the run uses, in run order, into pick[]; count or -errno. */
static int vb_dev_pick(const struct vb_params *p, struct vb_shared *sh, struct ibv_device **list, int n,
		       const char *present, struct ibv_device **pick)
{
	char msg[512];
	int k = 0;

	if (p->dev_all) {
		for (int i = 0; i < n && k < VB_MAX_DEVS; i++)
			if (vb_dev_active(p, list[i]))
				pick[k++] = list[i];
		if (!k) {
			snprintf(msg, sizeof(msg), "-d all: no device has an ACTIVE port %llu (devices here: %s)",
				 (unsigned long long)p->ib_port, present);
			return vb_dev_fail(sh, -ENETDOWN, msg);
		}
		return k;
	}
	if (!p->ndev_names) {
		pick[0] = list[0];
		return 1;
	}
	for (unsigned j = 0; j < p->ndev_names; j++) {
		int i;

		for (i = 0; i < n && strcmp(p->dev_names[j], ibv_get_device_name(list[i])); i++)
			;
		if (i == n) {
			snprintf(msg, sizeof(msg), "unknown device '%s' (%s); devices here: %s", p->dev_names[j],
				 p->pair_devices ? "--pair-devices" : "-d", present);
			return vb_dev_fail(sh, -EINVAL, msg);
		}
		pick[k++] = list[i];
	}
	return k;
}

int vb_dev_probe(const struct vb_params *p, struct vb_shared *sh)
{
	struct ibv_device **list, *pick[VB_MAX_DEVS];
	char present[256] = "";
	int n = 0, k, rc = 0;
	size_t off = 0;

	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		char msg[200];

		/* The driver's own answer first: a verbs sweep runs in the rig with one option. */
		snprintf(msg, sizeof(msg),
			 "no RDMA device found%s (load a driver; without one, the Soft-RoCE rig: pairbench sweep --launcher softroce, or scripts/softroce-run -- COMMAND)",
			 list ? "" : ": ibv_get_device_list failed");
		if (list)
			ibv_free_device_list(list);
		return vb_dev_fail(sh, -ENODEV, msg);
	}
	for (int i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);

		if (off + strlen(name) + 2 < sizeof(present))
			off += (size_t)snprintf(present + off, sizeof(present) - off, "%s%s", i ? "," : "", name);
	}
	k = vb_dev_pick(p, sh, list, n, present, pick);
	for (int j = 0; j < k && !rc; j++) {
		struct vb_probe *pr = &sh->dev[j];

		pr->ndevices = (unsigned)n;
		snprintf(pr->devices, sizeof(pr->devices), "%s", present);
		snprintf(pr->device, sizeof(pr->device), "%s", ibv_get_device_name(pick[j]));
		if ((rc = vb_dev_probe_one(p, pick[j], pr)))
			vb_dev_fail(sh, rc, pr->error);
		else
			sh->ndev = (unsigned)j + 1;
	}
	ibv_free_device_list(list);
	return k < 0 ? k : rc;
}

static void vb_json_kv(FILE *f, const char *key, const char *val, bool comma)
{
	fprintf(f, "  \"%s\": ", key);
	pb_env_str(f, val);
	fprintf(f, "%s\n", comma ? "," : "");
}

/*
 * --pattern: the worker's flow, slot and peer, and (clients) the cross-node start of its
 * points (vb_xstart.c): this node's start minus the peer node's, the last point's and the
 * largest, with the clock offset's bound.
 */
static void vb_env_pattern_member(FILE *f, const struct vb_params *p, const struct vb_worker_report *r,
				  unsigned m)
{
	const struct vb_pat_member *x = &p->pat[m];

	fprintf(f, ", \"pattern\": {\"flow\": %u, \"slot\": %d, \"peer_node\": %d, \"peer_slot\": %d, \"peer\": ",
		x->flow, x->slot, x->peer_node, x->peer_slot);
	pb_env_str(f, x->peer_name);
	if (p->probe_here && m == p->pairs)
		fprintf(f, ", \"victim_probe\": \"%s\"", p->probe_desc->info.name);
	if ((m < p->pat_clients || (p->probe_here && p->probe_client && m == p->pairs)) && r->xs_points)
		fprintf(f, ", \"start_offset_us\": %.3f, \"start_offset_us_max\": %.3f, \"start_offset_bound_us\": %.3f, \"peer_clock_offset_us\": %.3f, \"points\": %d",
			(double)r->xs_offset_ns / 1e3, (double)r->xs_offset_max_ns / 1e3, (double)r->xs_bound_ns / 1e3,
			(double)r->xs_theta_ns / 1e3, r->xs_points);
	fputs("}", f);
}

/* "placement": every worker (struct pb_place) plus its QP's GID index, inline size, MTU. */
static void vb_env_placement(FILE *f, const struct vb_params *p, const struct vb_shared *sh,
			     unsigned workers)
{
	pb_env_placement_begin(f);
	for (unsigned m = 0; m < workers; m++) {
		const struct vb_worker_report *r = &sh->w[m];
		struct pb_place pl = {
			.pair = (int)(p->loopback ? m % p->pairs : m), .member = (int)m, .pu = r->pu,
			.role = vb_member_side(p, m) == VB_SERVER ? "server" : "client",
			.cpu = r->cpu, .numa_node = r->numa_node, .verified = r->verified,
		};

		pb_env_place(f, &pl, m == 0);
		fputs(", \"device\": ", f);
		pb_env_str(f, r->dev >= 0 && (unsigned)r->dev < sh->ndev ? sh->dev[r->dev].device : "");
		fprintf(f, ", \"sgid_index\": %d, \"inline_bytes\": %d, \"path_mtu_bytes\": %d, \"note\": ",
			r->sgid_index, r->inline_bytes, r->path_mtu);
		pb_env_str(f, r->note);
		if (p->pattern)
			vb_env_pattern_member(f, p, r, m);
		fputs("}", f);
	}
	pb_env_placement_end(f);
}

/* One entry of "devices": what identifies a device and where it sits (firmware, PCIe, NUMA). */
static void vb_env_device(FILE *f, const struct vb_params *p, const struct vb_probe *pr, bool first)
{
	fprintf(f, "%s\n    {\"name\": ", first ? "" : ",");
	pb_env_str(f, pr->device);
	fputs(", \"fw_ver\": ", f);
	pb_env_str(f, pr->fw_ver);
	fputs(", \"node_guid\": ", f);
	pb_env_str(f, pr->node_guid);
	fprintf(f, ", \"vendor_id\": \"0x%x\", \"vendor_part_id\": %u, \"port\": %llu, \"link_layer\": \"%s\", \"port_addr\": ",
		pr->vendor_id, pr->vendor_part_id, (unsigned long long)p->ib_port,
		pr->link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
	pb_env_str(f, pr->port_addr);
	fputs(", \"netdev\": ", f);
	pb_env_str(f, pr->netdev);
	fputs(", \"port_rate\": ", f);
	pb_env_str(f, pr->rate_text);
	fprintf(f, ", \"port_rate_data_gbit_s\": %.4f, \"active_mtu_bytes\": %d, \"pci_busid\": ", pr->link_gbit_s,
		vb_mtu_bytes(pr->active_mtu));
	pb_env_str(f, pr->pci_busid);
	fputs(", \"pcie_link_speed\": ", f);
	pb_env_str(f, pr->pcie_speed);
	fputs(", \"pcie_link_width\": ", f);
	pb_env_str(f, pr->pcie_width);
	fprintf(f, ", \"numa_node\": %d}", pr->numa_node);
}

/* "counters": the records the node leader wrote around each point's window (docs/health.md). */
static void vb_env_counters(FILE *f, FILE *counters)
{
	char buf[4096];
	size_t n;

	fputs("  \"counters\": [", f);
	if (counters && !fflush(counters) && fseek(counters, 0, SEEK_SET) == 0)
		while ((n = fread(buf, 1, sizeof(buf), counters)) > 0)
			fwrite(buf, 1, n, f);
	fputs("\n  ],\n", f);
}

int vb_env_write(FILE *f, const struct vb_params *p, const struct vb_shared *sh,
		 unsigned workers, const char *pin_note, const struct pb_clock_info *ci, FILE *counters)
{
	const struct vb_probe *pr = &sh->dev[0];
	struct utsname un;
	char host[256] = "", buf[512];

	gethostname(host, sizeof(host) - 1);
	uname(&un);
	pb_env_head(f, "pairbench-verbs", "verbs", p->c.test, host);
	snprintf(buf, sizeof(buf), "%s %s %s", un.sysname, un.release, un.machine);
	vb_json_kv(f, "kernel", buf, true);
	vb_json_kv(f, "role", p->loopback ? "loopback" : p->side == VB_SERVER ? "server" : "client", true);
	vb_json_kv(f, "device", pr->device, true);
	vb_json_kv(f, "devices_present", pr->devices, true);
	vb_json_kv(f, "driver", pr->driver, true);
	vb_json_kv(f, "fw_ver", pr->fw_ver, true);
	vb_json_kv(f, "node_guid", pr->node_guid, true);
	fprintf(f, "  \"vendor_id\": \"0x%x\",\n  \"vendor_part_id\": %u,\n  \"hw_ver\": \"0x%x\",\n",
		pr->vendor_id, pr->vendor_part_id, pr->hw_ver);
	fprintf(f, "  \"port\": %llu,\n", (unsigned long long)p->ib_port);
	vb_json_kv(f, "link_layer", pr->link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand", true);
	fprintf(f, "  \"active_mtu_bytes\": %d,\n  \"max_mtu_bytes\": %d,\n", vb_mtu_bytes(pr->active_mtu),
		vb_mtu_bytes(pr->max_mtu));
	fprintf(f, "  \"gid_index\": %d,\n", pr->gid_index);
	vb_json_kv(f, "gid_type", pr->gid_type, true);
	vb_json_kv(f, "gid", pr->gid, true);
	vb_json_kv(f, "gid_choice", pr->gid_note, true);
	vb_json_kv(f, "netdev", pr->netdev, true);
	vb_json_kv(f, "port_rate", pr->rate_text, true);
	fprintf(f, "  \"port_rate_data_gbit_s\": %.4f,\n  \"port_rate_signal_gbit_s\": %.4f,\n",
		pr->link_gbit_s, pr->signal_gbit_s);
	vb_json_kv(f, "pci_busid", pr->pci_busid, true);
	vb_json_kv(f, "pcie_link_speed", pr->pcie_speed, true);
	vb_json_kv(f, "pcie_link_width", pr->pcie_width, true);
	fprintf(f, "  \"max_qp_rd_atom\": %d,\n  \"atomic_cap\": %d,\n  \"max_msg_sz\": %u,\n",
		pr->max_qp_rd_atom, pr->atomic_cap, pr->max_msg_sz);
	/* issue 13 (qpscm): QPs per pair, connection method, the limits --qps is checked against */
	fprintf(f, "  \"qps\": %llu,\n  \"cm\": \"%s\",\n  \"max_qp\": %d,\n  \"max_cq\": %d,\n  \"max_cqe\": %d,\n  \"max_qp_wr\": %d,\n",
		(unsigned long long)p->qps, p->cm == VB_CM_TCP ? "tcp" : "rdma_cm", pr->max_qp, pr->max_cq,
		pr->max_cqe, pr->max_qp_wr);
	fprintf(f, "  \"tx_depth\": %llu,\n  \"cq_mod\": %llu,\n  \"inline_requested\": ",
		(unsigned long long)p->tx_depth, (unsigned long long)p->cq_mod);
	pb_env_str(f, p->inline_size);
	fprintf(f, ",\n  \"mtu_requested_bytes\": %llu,\n", (unsigned long long)p->mtu);
	vb_buf_env(f, p);
	pb_env_clock(f, ci, -1);
	struct pb_window_plan w;

	pb_window_plan(&p->c, &p->test_desc->info, true, &w);
	pb_env_timing(f, &w, p->c.warmup);
	fputs("  \"devices\": [", f);
	for (unsigned d = 0; d < sh->ndev; d++)
		vb_env_device(f, p, &sh->dev[d], d == 0);
	fputs("\n  ],\n", f);
	vb_env_counters(f, counters);
	vb_json_kv(f, "pin_policy", pb_pin_policy_names[p->c.pin], true);
	vb_json_kv(f, "pin_note", pin_note, true);
	vb_env_placement(f, p, sh, workers);
	fputs("\n}\n", f);
	return fflush(f) || ferror(f) ? -(errno ? errno : EIO) : 0;
}
