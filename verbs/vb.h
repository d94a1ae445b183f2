/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pairbench-verbs: the types every part shares (options, test table entry,
 * probe result, shared mapping, worker).  Functions are declared in the
 * header of the file that defines them.
 *
 * Process model: the launcher (no ibv_* call ever) forks one probe child that
 * queries the device, then one worker per side of every pair of this node.
 * Each worker pins itself, connects (--cm: rdma_cm or TCP) and owns its context,
 * PD, CQ, QP and MRs.  Workers meet through shm_sync (engine barrier and
 * result slots) and a small anonymous shared mapping (struct vb_shared:
 * probe result, per-worker report, loaded_lat stop flag).
 *
 * Layers: a file calls only files of lower levels (and core/, shm_sync/),
 * never up or sideways, so there is no cycle (checked by comparing each
 * object's undefined vb_* symbols with the object that defines them).  The
 * connection methods are reached through their ops tables (struct
 * vb_cm_ops, vb_cm.h), which only vb_conn.c reads.  Each file declares its
 * functions in its own header (vb_X.c: vb_X.h; vb_conn.c: vb_cm.h; vb_reap.c:
 * vb_launch.h; the operation files: vb_ops.h); everything else is static.
 *
 *   5  vb_main.c       options, the test table, main()
 *      vb_scan.c       --scan: this rank's node pair and side in one round of a fabric scan
 *      vb_patrole.c    --pattern: this rank's node and its flows (clients, servers, peers)
 *   4  vb_launch.c     probe child, placement, fork, a worker's life
 *   3  vb_cntseries.c  --counters-series: the node's sampler of its ports' counters over time
 *   3  vb_reap.c       supervision of the workers (launcher)
 *      vb_probe.c      --pattern --probe: the victim latency flow, idle and loaded
 *      vb_conn.c       vb_cm_connect / vb_cm_teardown: the --cm method's table
 *   2  vb_cm.c, vb_cm_tcp.c   the connection methods (rdma_cm, TCP socket)
 *      vb_xstart.c     --pattern: the cross-node start and its measured offsets
 *      vb_bw.c, vb_write.c, vb_read.c, vb_send.c, vb_atomic.c   engine ops (vb_lat.h)
 *      vb_validate.c   --validate
 *   1  vb_qp.c         waits, ctrl channel, per-size preparation
 *      vb_soak.c       --soak: a bandwidth stream's recorder (core/pb_soak.h)
 *      vb_res.c        PD, CQ, MRs, QPs and their transitions (both methods)
 *      vb_handshake.c  option hash, our header, the peer's checked (both methods)
 *      vb_dev.c        device queries (probe child), environment record, MTUs
 *      vb_devmap.c     which device each pair uses
 *   0  vb_buf.c        buffer layouts
 *      vb_nodes.c      launcher rank, host file, %r paths (--scan, --pattern)
 *      vb_pattern.c    one node's workers of a pattern's flows (pure; core/pb_pattern.c)
 *      vb_hdr.c        wire format of the header and the QP info (pure)
 *      vb_fault.c      fault injection (PAIRBENCH_FAULT)
 *      vb_signal.c     the signal that interrupts the run; the launcher's SIGCHLD wait
 */
#ifndef VB_H
#define VB_H

#include "pb_common.h"
#include "pb_engine.h"
#include "pb_soak.h"
#include "shm_meet.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define VB_MAX_PAIRS PB_MAX_PAIRS  /* = the --pairs range of the common options */
#define VB_MAX_WORKERS (2 * VB_MAX_PAIRS)
#define VB_MAX_DEVS 16              /* devices of one run (-d LIST, -d all, --pair-devices) */
#define VB_DEV_NAME 64
#define VB_HOST_NAME_MAX 64         /* a node's name in --scan-hosts / --pattern-hosts, with its NUL */

enum vb_op { VB_OP_WRITE, VB_OP_READ, VB_OP_SEND, VB_OP_ATOMIC };
enum vb_side { VB_CLIENT, VB_SERVER };
enum vb_cm { VB_CM_RDMA, VB_CM_TCP };  /* --cm: rdma_cm (vb_cm.c) | tcp (vb_cm_tcp.c) */

/* Options (filled from the option table in vb_main.c). */
struct vb_params {
	struct pb_common_params c;
	const char *device;      /* -d: NULL = first device; a comma-separated list; "all" */
	const char *pair_devices;  /* --pair-devices PAIR:DEV[:PEERDEV],... */
	uint64_t ib_port;
	const char *gid_index;   /* "auto" or an index */
	const char *inline_size; /* "auto" or bytes */
	uint64_t tx_depth;
	uint64_t cq_mod;
	uint64_t mtu;            /* 0 = path MTU chosen by rdma_cm */
	bool server, loopback, bidir, validate, validate_selftest, all_sizes;
	const char *connect;
	uint64_t cm_port;
	const char *variant;     /* atomic_lat: fadd | cswap */
	/* issue 13 (qpscm): QPs per pair, connection method */
	uint64_t qps;            /* --qps: the pair's work round-robin over this many QPs */
	int cm;                  /* enum vb_cm */
	int buffers;             /* enum pb_buffers: --buffers fresh | peer (vb_buf.c) */
	struct pb_soak_params soak;  /* --soak, --bucket, --stall-fraction, --series (core/pb_soak.h, vb_soak.c) */
	const char *cnt_series;  /* --counters-series PREFIX: counters over time (vb_cntseries.h); NULL = none */
	double cnt_interval_s;   /* --counters-interval */
	/* derived by vb_params_finish() */
	const struct vb_test *test_desc;
	int gid_index_v;         /* -1 = auto */
	int inline_v;            /* -1 = auto */
	enum vb_side side;       /* for --server / --connect / rank mode */
	unsigned pairs;
	uint64_t max_size;
	const char *peer_host;   /* --connect HOST (loopback: each worker's w->peer_host) */
	/* devices (vb_devmap.c): the names asked for, in order; dev_all: -d all (names
	 * then come from the probe); pair_dev / pair_peer_dev: index into the names
	 * per pair from --pair-devices, -1 = round-robin / the pair's own device */
	unsigned ndev_names;
	char dev_names[VB_MAX_DEVS][VB_DEV_NAME];
	bool dev_all;
	int pair_dev[VB_MAX_PAIRS], pair_peer_dev[VB_MAX_PAIRS];
	/* --scan R[,skip=...] --scan-hosts FILE: one round of a fabric scan (vb_scan.c) */
	const char *scan;
	const char *scan_hosts;
	bool scan_bye;           /* this rank's node sits the round out: nothing to run */
	char scan_label[32];     /* rows' pattern column: scan:R */
	char host_name[VB_HOST_NAME_MAX];  /* rows' host column in a scan: this node's line of the file */
	char peer_name[VB_HOST_NAME_MAX];  /* ... and its peer's (the rows' peer column) */
	char peer_addr[256];     /* the peer's address (second word of its line, else its name) */
	char scan_output[4096], scan_env_json[4096];  /* --output / --env-json, %r expanded */
	/*
	 * --pattern P --pattern-hosts FILE: this node's flows of a pattern (vb_patrole.c).  The
	 * node's workers are members 0..pairs-1 (pairs is then their number, --pairs R the
	 * slots): the clients of its flows first (members 0..pat_clients-1: they measure, the
	 * rows' pairs), then the servers.  host_name is this node's line of the file.
	 */
	const char *pattern;
	const char *pattern_hosts;
	unsigned pat_clients;
	bool pat_target;         /* every worker a server, a bandwidth test: the node writes the rows of
				  * its incoming flows, their windows moved to its clock (vb_xstart.c) */
	int pat_meet_rounds;     /* cross-node start: rounds of (pair sync, node barrier) (pb_pattern_meet_rounds) */
	bool pat_one_group;      /* the flows join every node of the pattern (else groups start apart) */
	char pat_label[256];     /* rows' pattern column: the pattern's canonical name */
	char pat_self_addr[256]; /* this node's ADDR in the file, "" when its line has none: servers listen there */
	struct vb_pat_member {
		unsigned flow;           /* the pattern's flow id: the header's pair, both sides */
		unsigned port_off;       /* rdma_cm / tcp port = --port + this (the server's slot) */
		int slot, peer_node, peer_slot;
		char peer_name[VB_HOST_NAME_MAX];  /* the rows' peer column */
		char peer_addr[256];     /* where the client connects */
	} pat[VB_MAX_PAIRS + 1];     /* [pairs]: this node's probe worker, when it has one (vb_probe.h) */
	/* --probe TEST (vb_probe.h): a latency flow into the pattern's hub, loaded and idle */
	const char *probe;
	const struct vb_test *probe_desc;
	bool probe_here;         /* this node runs the probe's client or server: member pairs */
	bool probe_client;       /* it is the probe's client (else its server) */
	int probe_flows;         /* the pattern's flows (the probe's flow id; its rows' pairs) */
};

/* The side of worker `member` of this launch (loopback: clients then servers; --pattern:
 * the node's clients then its servers; otherwise every worker is on p->side). */
static inline enum vb_side vb_member_side(const struct vb_params *p, unsigned member)
{
	if (p->loopback)
		return member < p->pairs ? VB_CLIENT : VB_SERVER;
	if (p->pattern && p->probe_here && member == p->pairs)
		return p->probe_client ? VB_CLIENT : VB_SERVER;
	if (p->pattern)
		return member < p->pat_clients ? VB_CLIENT : VB_SERVER;
	return p->side;
}

struct vb_worker;
struct vb_counters;
struct vb_soak;

/*
 * What one worker of a test runs: the engine's ops and the MR access its data
 * buffer needs.  probe: its end of a point stops the load; until_probe: its
 * stream runs until the probe is done.
 */
struct vb_role {
	const struct pb_test_ops *ops;
	int access;              /* IBV_ACCESS_*; with --bidir each side has both sides' access */
	bool probe, until_probe;
};

/*
 * One entry of the test table: everything that is true of a test (info is
 * printed by --list-tests --format json).  No test name or kind appears in a
 * condition outside the table (vb_main.c); the rules that read it are below.
 */
struct vb_test {
	struct pb_test_info info;
	enum vb_op op;
	struct vb_role client, server;           /* every pair; with load roles: pair 0 */
	struct vb_role load_client, load_server; /* pairs 1..N-1; ops NULL = the test has no load */
};

/* The role of the worker on side of pair. */
static inline const struct vb_role *vb_test_role(const struct vb_test *t, enum vb_side side, unsigned pair)
{
	bool load = pair > 0 && t->load_client.ops;

	if (side == VB_CLIENT)
		return load ? &t->load_client : &t->client;
	return load ? &t->load_server : &t->server;
}

/* MR access of that worker's data buffer. */
static inline int vb_test_access(const struct vb_test *t, enum vb_side side, unsigned pair, bool bidir)
{
	bool load = pair > 0 && t->load_client.ops;
	const struct vb_role *c = load ? &t->load_client : &t->client;
	const struct vb_role *s = load ? &t->load_server : &t->server;

	/* Both directions at once: each side is source and target. */
	if (bidir)
		return c->access | s->access;
	return side == VB_CLIENT ? c->access : s->access;
}

/* What the probe child learnt about the device (written into struct vb_shared). */
struct vb_probe {
	int rc;                  /* 0 or -errno */
	char error[512];
	unsigned ndevices;
	char devices[256];       /* names, comma-separated */
	char device[VB_DEV_NAME];
	int numa_node;           /* sysfs device/numa_node; -1 unknown or none */
	char port_addr[80];      /* lid:0xNNNN (InfiniBand) or gid:INDEX:GID (RoCE) */
	uint16_t lid;
	char fw_ver[64];
	char node_guid[32];
	uint32_t vendor_id, vendor_part_id, hw_ver;
	uint64_t max_mr_size;
	int max_qp_wr, max_cqe, max_sge, max_qp_rd_atom, max_qp_init_rd_atom;
	int max_qp, max_cq;      /* device limits that --qps must respect */
	int atomic_cap;          /* enum ibv_atomic_cap */
	int port_state, active_mtu, max_mtu;  /* enums */
	int link_layer;
	uint8_t active_width, active_speed;
	uint32_t max_msg_sz;
	double link_gbit_s;      /* data rate, 10^9 bit/s; 0 unknown */
	double signal_gbit_s;
	char rate_text[64];      /* e.g. "4x EDR" */
	int gid_index;           /* chosen */
	char gid_type[32];
	char gid[64];
	char gid_note[128];
	char ipv4[32];           /* IPv4 of the chosen GID, "" when none */
	char netdev[32];
	char pci_busid[32];      /* "" = no PCI device (rxe) */
	char driver[32];         /* kernel driver (pb_flags_rdma_driver); "" unknown */
	char pcie_speed[64], pcie_width[16];
};

/* What each worker reports back to the launcher. */
struct vb_worker_report {
	_Atomic int32_t pid;
	int32_t pu, cpu, numa_node;
	int32_t verified;
	int32_t sgid_index;      /* GID index the QP really uses */
	int32_t inline_bytes;    /* effective max_inline_data */
	int32_t path_mtu;        /* bytes */
	int32_t dev;             /* index into vb_shared.dev of its device */
	int32_t done;            /* 1 = exited normally */
	/* --pattern, clients: the cross-node start of the last point and the largest over the
	 * points (vb_xstart.c): this node's start minus the peer node's, ns, and its bound */
	int64_t xs_offset_ns, xs_offset_max_ns;
	int64_t xs_bound_ns, xs_theta_ns;    /* the bound; the peer's clock minus ours */
	int32_t xs_points;
	_Atomic uint64_t beat;   /* heartbeat: bumped at every wait check; the launcher's watchdog reads it */
	char note[192];
};

struct vb_shared {
	/* The devices of the run (vb_dev_probe): dev[0..ndev); probe_rc/probe_error: the first failure. */
	struct vb_probe dev[VB_MAX_DEVS];
	unsigned ndev;
	int probe_rc;
	char probe_error[512];
	_Atomic uint32_t loaded_stop;      /* loaded_lat: probe pair finished this point (+1 per point) */
	/* The leader's CSV output (pb_sink.progress): 0 nothing, 1 header, 1 + n after n rows. */
	volatile unsigned csv_progress;
	volatile int csv_errno;            /* the leader could not write rows (reported by it) */
	_Atomic unsigned errors_logged;    /* error lines of the launcher and its workers (pb_log_count_errors) */
	struct vb_worker_report w[VB_MAX_WORKERS];
};

/* Ctrl words of a worker (in their own MR; the peer writes them). */
struct vb_ctrl {
	/* [0] sync step, [1] peer's progress word (peek), [2] and [3] stream done words (vb_done_word);
	 * --pattern (vb_xstart.c): [4] clock ping, [5] clock pong, [7] its ping's number, [6] the server's start,
	 * [8..12] the client's window on the server's clock, [13] its sequence number;
	 * send_bw --validate-live (vb_soak.h): [14] the server's checks, [15] its corruptions */
	volatile uint64_t in[16];
	uint64_t out[16];         /* local sources of ctrl writes; [1] our progress word, read by the peer */
};

#define VB_DONE_SHIFT 40

/*
 * The ctrl word that says "stream s is done" ((s << VB_DONE_SHIFT) | count): streams
 * alternate between two words.  Between two pair syncs a side runs two streams (warm-up,
 * timed), and across nodes nothing holds the initiator back between them: it may end
 * stream s + 1 before the target has seen the end of s, and with one word it would
 * overwrite it (the target then waits for it until --timeout).
 */
static inline unsigned vb_done_index(uint64_t stream)
{
	return 2 + (unsigned)(stream & 1);
}
#define VB_WRID_CTRL (~0ull)
#define VB_WRID_RECV (~0ull - 1)
#define VB_WRID_PEEK (~0ull - 2)


/* The received framed header of the peer. */
struct vb_remote {
	uint64_t addr;
	uint32_t len, rkey;
	uint64_t ctrl_addr;
	uint32_t ctrl_rkey;
};

/* Attributes of the INIT, RTR and RTS transitions of QP 0 (rdma_cm) or built from the peer's
 * QP info (--cm tcp); the other QPs take them with their own QP numbers and PSNs. */
struct vb_qp_tmpl {
	struct ibv_qp_attr init, rtr, rts;
	int init_mask, rtr_mask, rts_mask;
};

/* Ctrl page: struct vb_ctrl, then the QP table the peer writes (rdma_cm, --qps > 1), then ours. */
#define VB_CTRL_TABLE_OFF 4096u

/*
 * Where the data of a stream goes (--buffers, vb_buf.c): n slots of stride
 * bytes from local base lbase (source of writes and sends, landing zone of
 * reads) and remote base rbase.  n == 1: every message at the same address.
 * slotted: streams address slot k mod n for message k (fresh layout, window test).
 */
struct vb_slots {
	bool slotted;
	uint32_t n;
	uint64_t stride;
	uintptr_t lbase;
	uint64_t rbase;
	uint64_t recv_next;       /* receives posted so far (receive i goes into slot i mod n) */
};

struct vb_worker {
	const struct vb_params *p;
	const struct vb_test *test;
	const struct vb_role *role;  /* vb_test_role() of this worker */
	struct vb_shared *shared;
	enum vb_side side;
	unsigned pair, member;
	unsigned link;            /* the pair number both sides agree on (header): pair; --pattern: the flow id */
	unsigned port;            /* rdma_cm / tcp port: --port + pair; --pattern: + the server's slot */
	bool measuring;           /* publishes results: client side (loaded_lat: every client) */
	char host[64], peer[64];
	/* this worker's device, its peer's (loopback; NULL across nodes), the address to reach */
	const struct vb_probe *dev, *peer_dev;
	const char *peer_host;
	bool bind_src;            /* client: resolve from dev's own IPv4 (several devices) */
	/* synchronisation */
	struct shm_sync *sync;
	struct shm_meet meet;
	uint64_t timeout_ns;
	/* rdma_cm */
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id, *id;
	unsigned long ch_rdev, ch_ino;  /* the channel's file when opened: is its fd still it? */
	uint64_t ch_opened_ns, ch_checked_ns;
	bool ch_fault_done;             /* PAIRBENCH_FAULT=closecm done (vb_fault.h) */
	/* verbs */
	struct ibv_context *verbs;
	bool verbs_own;          /* opened by us (--cm tcp), not rdma_cm's */
	struct ibv_pd *pd;
	struct ibv_cq *cq;       /* shared by every QP of the worker (docs/verbs.md: --qps) */
	struct ibv_qp *qp;       /* qps[0]: also the ctrl channel (pair sync, stream done, peeks) */
	struct ibv_qp **qps;     /* --qps of them, data requests round-robin */
	unsigned nqp;
	unsigned qp_cur;         /* the QP of the next data request */
	uint64_t qp_round;       /* rounds over all QPs completed this size */
	uint64_t qp_sig;         /* bandwidth streams: signal every qp_sig-th request of a QP */
	uint64_t qp_cap;         /* requests a QP may have outstanding (its send queue minus ctrl room) */
	uint64_t *qp_done;       /* bandwidth streams: requests of each QP retired */
	uint32_t rx_per_qp;      /* send tests: receives kept posted on each QP */
	struct vb_qp_tmpl tmpl;
	size_t ctrl_len;         /* bytes of the ctrl page (VB_CTRL_TABLE_OFF + 2 QP tables) */
	uint8_t *buf;             /* [0, region) tx region, [region, 2 region) rx region */
	uint64_t region;
	struct ibv_mr *mr;
	struct vb_ctrl *ctrl;
	struct ibv_mr *ctrl_mr;
	struct vb_remote remote;
	uint32_t max_inline;
	uint32_t rx_depth;
	struct ibv_send_wr wr;    /* pre-built data WR of the current size */
	struct ibv_sge sge;
	struct ibv_recv_wr rwr;
	struct ibv_sge rsge;
	uint32_t recvs_posted;
	uint64_t stray_recvs;     /* receives reaped while waiting for a ctrl write (vb_ctrl_reap) */
	uint64_t stray_wr_id;     /* the wr_id (slot, QP) of the last of them */
	bool closing;             /* in the final pair sync: no message follows it */
	/* --pattern: the cross-node start (vb_xstart.c) */
	uint64_t xs_seq;          /* clock pings so far (both sides count alike) */
	uint64_t xs_points;       /* windows sent / received so far (both sides count alike) */
	int64_t xs_offset_ns;     /* client: this node's start minus the peer node's (this point) */
	int64_t xs_bound_ns;      /* its error bound: half the best ping's round trip */
	int64_t xs_theta_ns;      /* the peer's clock minus ours (best ping) */
	int (*xs_timed)(void *tctx, struct pb_timed *t);  /* the test's own timed op */
	/* protocol state */
	uint64_t ctrl_step;
	uint64_t stream_no;
	uint64_t size;            /* current message size */
	uint32_t inline_flag;     /* IBV_SEND_INLINE when size <= max_inline (write/send) */
	uint64_t loaded_point;
	uint8_t seq;              /* ping-pong sequence byte (1..127; answers carry it | 0x80), reset per size */
	bool sig_pending;         /* a signalled request is not reaped yet (latency loops) */
	uint64_t posts;           /* latency loops: requests posted this size */
	uint64_t atomic_value;    /* cswap: expected current value */
	struct vb_slots slots;    /* buffer layout of the current size (vb_buf.c) */
	struct vb_counters *counters; /* the node leader: port counters around each window; else NULL */
	struct vb_soak *soak;         /* --soak, a measuring bandwidth worker: its buckets, checks (vb_soak.h); else NULL */
	char error[256];
};

#endif
