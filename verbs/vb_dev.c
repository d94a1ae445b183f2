/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device: find it, query device and port, choose the GID index, read
 * what sysfs adds (GID types, netdev, PCI bus id, PCIe link), compute the
 * port rate; and the JSON environment record of a run.
 *
 * vb_dev_probe() runs in a short-lived probe child of the launcher (the
 * launcher itself never calls ibv_*, so forked workers start clean).
 */
#include "vb.h"

#include "pb_clock.h"
#include "pb_env.h"

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

int vb_dev_probe(const struct vb_params *p, struct vb_probe *pr)
{
	struct ibv_device **list;
	struct ibv_device *dev = NULL;
	struct ibv_context *ctx;
	int n = 0, rc;
	size_t off = 0;

	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		snprintf(pr->error, sizeof(pr->error), "no RDMA device found%s (load a driver, or use the Soft-RoCE rig: scripts/softroce-run)",
			 list ? "" : ": ibv_get_device_list failed");
		if (list)
			ibv_free_device_list(list);
		return pr->rc = -ENODEV;
	}
	pr->ndevices = (unsigned)n;
	for (int i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);

		if (off + strlen(name) + 2 < sizeof(pr->devices))
			off += (size_t)snprintf(pr->devices + off, sizeof(pr->devices) - off, "%s%s", i ? "," : "", name);
		if (!dev && (!p->device || !strcmp(p->device, name)))
			dev = list[i];
	}
	if (!dev) {
		snprintf(pr->error, sizeof(pr->error), "unknown device '%s' (-d); devices here: %s", p->device,
			 pr->devices);
		ibv_free_device_list(list);
		return pr->rc = -EINVAL;
	}
	snprintf(pr->device, sizeof(pr->device), "%s", ibv_get_device_name(dev));
	ctx = ibv_open_device(dev);
	if (!ctx) {
		snprintf(pr->error, sizeof(pr->error), "ibv_open_device(%s): %s", pr->device, strerror(errno));
		ibv_free_device_list(list);
		return pr->rc = -EIO;
	}
	rc = vb_dev_query(ctx, p, pr);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	if (!rc)
		vb_sysfs_extras(p, pr);
	return pr->rc = rc;
}

static void vb_json_kv(FILE *f, const char *key, const char *val, bool comma)
{
	fprintf(f, "  \"%s\": ", key);
	pb_env_str(f, val);
	fprintf(f, "%s\n", comma ? "," : "");
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
			.role = p->loopback ? (m < p->pairs ? "client" : "server") :
				p->side == VB_SERVER ? "server" : "client",
			.cpu = r->cpu, .numa_node = r->numa_node, .verified = r->verified,
		};

		pb_env_place(f, &pl, m == 0);
		fprintf(f, ", \"sgid_index\": %d, \"inline_bytes\": %d, \"path_mtu_bytes\": %d, \"note\": ",
			r->sgid_index, r->inline_bytes, r->path_mtu);
		pb_env_str(f, r->note);
		fputs("}", f);
	}
	pb_env_placement_end(f);
}

int vb_env_write(FILE *f, const struct vb_params *p, const struct vb_shared *sh,
		 unsigned workers, const char *pin_note, const struct pb_clock_info *ci)
{
	const struct vb_probe *pr = &sh->probe;
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
	fprintf(f, "  \"tx_depth\": %llu,\n  \"cq_mod\": %llu,\n  \"inline_requested\": ",
		(unsigned long long)p->tx_depth, (unsigned long long)p->cq_mod);
	pb_env_str(f, p->inline_size);
	fprintf(f, ",\n  \"mtu_requested_bytes\": %llu,\n", (unsigned long long)p->mtu);
	pb_env_clock(f, ci, -1);
	vb_json_kv(f, "pin_policy", pb_pin_policy_names[p->c.pin], true);
	vb_json_kv(f, "pin_note", pin_note, true);
	vb_env_placement(f, p, sh, workers);
	fputs("\n}\n", f);
	return fflush(f) || ferror(f) ? -(errno ? errno : EIO) : 0;
}
