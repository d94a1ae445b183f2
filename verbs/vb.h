/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pairbench-verbs: shared types of the launcher, the connection module and
 * the per-operation test files.
 *
 * Process model: the launcher (no ibv_* call ever) forks one probe child that
 * queries the device, then one worker per side of every pair of this node.
 * Each worker pins itself, connects through rdma_cm and owns its context,
 * PD, CQ, QP and MRs.  Workers meet through shm_sync (engine barrier and
 * result slots) and a small anonymous shared mapping (struct vb_shared:
 * probe result, per-worker report, loaded_lat stop flag).
 */
#ifndef VB_H
#define VB_H

#include "pb_common.h"
#include "pb_engine.h"
#include "shm_meet.h"
#include "vb_hdr.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define VB_MAX_PAIRS PB_MAX_PAIRS  /* = the --pairs range of the common options */
#define VB_MAX_WORKERS (2 * VB_MAX_PAIRS)
#define VB_MAX_DEVS 16              /* devices of one run (-d LIST, -d all, --pair-devices) */
#define VB_DEV_NAME 64

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
};

struct vb_worker;

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

extern const struct vb_test vb_tests[];
const struct vb_test *vb_test_find(const char *name);
/* The role of the worker on side of pair. */
const struct vb_role *vb_test_role(const struct vb_test *t, enum vb_side side, unsigned pair);
/* MR access of that worker's data buffer. */
int vb_test_access(const struct vb_test *t, enum vb_side side, unsigned pair, bool bidir);

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
	struct vb_worker_report w[VB_MAX_WORKERS];
};

/* Ctrl words of a worker (in their own MR; the peer writes them). */
struct vb_ctrl {
	/* [0] sync step, [1] peer's progress word (peek), [2] and [3] stream done words (vb_done_word) */
	volatile uint64_t in[4];
	uint64_t out[4];          /* local sources of ctrl writes; [1] our progress word, read by the peer */
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

/*
 * One wait of a worker (connect, completion, reply, pair sync, end of
 * stream).  Its deadline is --timeout after the last progress it saw: a long
 * healthy stream never trips it, a dead or stopped peer trips it --timeout
 * after its last sign of progress, and the message gives the time really
 * waited.  Progress is the caller's counter (progress: replies, completions,
 * receives); for a wait on the peer's own pace (VB_WATCH_PEER: pair sync,
 * the passive side of a stream) also the node group's progress counter
 * (pb_meet_ops.progress) and, across nodes, the peer's progress word read with
 * an 8-byte RDMA read every quarter of --timeout ("peek").
 */
struct vb_watch {
	const char *what;
	uint64_t progress;       /* the caller's counter: moves when the awaited thing advances */
	uint64_t mark;           /* progress at since_ns */
	uint64_t since_ns;       /* start of the wait or its last progress */
	uint64_t group_mark, peer_mark, next_peek_ns;
	unsigned spins;
	bool peer, peek_pending;
};
#define VB_WATCH_PEER true

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
	char error[256];
};

/* vb_main.c: the signal (SIGINT, SIGTERM, SIGHUP) that interrupts the run, 0 = none. */
extern volatile sig_atomic_t vb_interrupted;
/* Fault injection for the fault tests (PAIRBENCH_FAULT=PHASE:SIGNAL:MEMBER, docs/failure-modes.md). */
enum vb_phase { VB_PHASE_CONNECT, VB_PHASE_FINAL };
void vb_fault_point(const struct vb_worker *w, enum vb_phase phase);
/* Faults without a signal (PAIRBENCH_FAULT=latecqe|latedone; vb_main.c): is f the one asked for? */
enum vb_fault { VB_FAULT_LATE_CQE, VB_FAULT_LATE_DONE, VB_FAULT_NONE };
bool vb_fault_on(enum vb_fault f);

/*
 * vb_dev.c: run in the probe child (verbs allowed there).  Finds and queries
 * every device the run names (p->dev_names, or with p->dev_all every device
 * with an ACTIVE port -i, or the first device) into sh->dev[], sh->ndev.
 * Returns 0 or -errno with sh->probe_rc / probe_error set: -EINVAL for an
 * unknown name (the message lists the devices present), -ENODEV for none.
 */
int vb_dev_probe(const struct vb_params *p, struct vb_shared *sh);
/* Launcher: JSON environment record into f, opened by main() (ci: the launcher's clock
 * calibration).  Returns 0 or -errno. */
struct pb_clock_info;
int vb_env_write(FILE *f, const struct vb_params *p, const struct vb_shared *sh,
		 unsigned workers, const char *pin_note, const struct pb_clock_info *ci);
/* IB MTU enum <-> bytes. */
int vb_mtu_bytes(int mtu_enum);
int vb_mtu_enum(uint64_t bytes);

/* vb_conn.c: connect (client) or accept (server) the worker's pair with --cm. 0 or -errno, w->error set. */
int vb_cm_connect(struct vb_worker *w);
void vb_cm_teardown(struct vb_worker *w);
/* Hash of the options both sides must agree on, and its per-option nibbles. */
void vb_opts_hash(const struct vb_params *p, uint64_t *hash, uint64_t *nibbles);
/* vb_conn.c, shared by the connection methods: */
/* Context, PD, shared CQ, MRs and --qps QPs on verbs. 0 or -errno. */
int vb_res_create(struct vb_worker *w, struct ibv_context *verbs);
/* Our framed header; validate the peer's (0, -EBADMSG stranger, -EPROTO other options). */
void vb_hdr_make(const struct vb_worker *w, uint8_t out[VB_HDR_WIRE_BYTES]);
int vb_hdr_check(struct vb_worker *w, const uint8_t *data, size_t len);
/* RDMA read/atomic depth this side offers (device limits, at most 16). */
int vb_rd_atom(const struct vb_worker *w);
/* A random first PSN (24 bits). */
uint32_t vb_psn_random(void);
/* Move QP i RESET -> INIT -> RTR -> RTS with w->tmpl and the peer's QP number / PSN. 0 or -errno. */
int vb_qp_bringup(struct vb_worker *w, unsigned i, uint32_t dest_qpn, uint32_t rq_psn, uint32_t sq_psn);
/* rdma_cm, --qps > 1: after QP 0 is connected, exchange the QP table over it and bring up the rest. */
int vb_qps_connect_rest(struct vb_worker *w);
/* Resolve host (NULL or "": any) and port into *sa. 0 or -EINVAL (w->error set). */
struct sockaddr_in;
int vb_sockaddr(struct vb_worker *w, const char *host, unsigned port, struct sockaddr_in *sa);
/* vb_cm.c: rdma_cm; vb_cm_tcp.c: a TCP socket, QP transitions by us. 0 or -errno. */
int vb_cm_rdma_connect(struct vb_worker *w);
void vb_cm_rdma_disconnect(struct vb_worker *w);
void vb_cm_rdma_teardown(struct vb_worker *w);
int vb_cm_tcp_connect(struct vb_worker *w);
/* Launcher: --qps against the device's limits (max_qp, max_cqe). 0 or -errno after one error line. */
int vb_qps_check(const struct vb_params *p, const struct vb_probe *pr, unsigned members);

/* vb_qp.c: waits, ctrl channel, posting helpers. */
/* Start a wait (peer: VB_WATCH_PEER, see struct vb_watch). */
void vb_watch_start(struct vb_worker *w, struct vb_watch *wt, const char *what, bool peer);
/*
 * Check a wait: heartbeat, signal, group abort, progress, deadline.  0 while
 * waiting may go on; -EINTR (signal), -ECANCELED (group aborted), -ETIMEDOUT
 * (no progress for --timeout) or -EIO (the peek failed: peer gone), with
 * w->error set.
 */
int vb_watch_check(struct vb_worker *w, struct vb_watch *wt);
/* End a wait: reap an outstanding peek (so no stray completion reaches a stream). 0 or -errno. */
int vb_watch_end(struct vb_worker *w, struct vb_watch *wt);
/* Every 4096 empty spins: vb_watch_check() with what as the awaited thing. */
static inline int vb_watch_spin(struct vb_worker *w, struct vb_watch *wt, const char *what)
{
	if (++wt->spins % 4096)
		return 0;
	wt->what = what;
	return vb_watch_check(w, wt);
}
/* Record that this worker made progress (group counter, published progress word). */
void vb_progress(struct vb_worker *w);
int vb_wc_error(struct vb_worker *w, const struct ibv_wc *wc);
int vb_ctrl_write(struct vb_worker *w, unsigned word, uint64_t value);
/* RDMA-write len bytes of our ctrl page at off into the peer's at remote_off; wait for it. */
int vb_ctrl_put(struct vb_worker *w, size_t off, size_t remote_off, uint32_t len);
int vb_ctrl_sync(struct vb_worker *w);
/* Post n receives on QP q. 0 or -errno. */
int vb_post_recvs(struct vb_worker *w, unsigned q, uint32_t n);
/* A receive completed on QP q (its wr_id): count it in *recvd and post its replacement. 0 or -errno. */
int vb_recv_repost(struct vb_worker *w, unsigned q, uint64_t *recvd);

/*
 * Post the pre-built data work request on the next QP of the round robin
 * (--qps) and advance it.  0 or -errno (w->error set).
 */
static inline int vb_post_next(struct vb_worker *w)
{
	unsigned q = w->qp_cur;
	struct ibv_send_wr *bad;
	int rc;

	if (++w->qp_cur == w->nqp) {
		w->qp_cur = 0;
		w->qp_round++;
	}
	rc = ibv_post_send(w->qps[q], &w->wr, &bad);
	if (rc)
		snprintf(w->error, sizeof(w->error), "ibv_post_send (QP %u of %u): %s", q, w->nqp, strerror(rc));
	return -rc;
}
/* Is the next request of the round robin one to signal, with every mod-th request of a QP
 * signalled (staggered by QP index, so the signalled ones spread over the rounds)? */
static inline bool vb_next_signalled(const struct vb_worker *w, uint64_t mod)
{
	return (w->qp_round + 1 + w->qp_cur) % mod == 0;
}
int vb_prepare_common(struct vb_worker *w, uint64_t size);
/* The engine's error() of every test: the worker's last error text. */
const char *vb_error(void *ctx);
/* vb_prepare_common() as the engine's prepare() of every test. 0 or -errno. */
int vb_prepare(void *ctx, uint64_t size);
/* Latency loops: reap the outstanding signalled request (blocking, with deadline). 0 or -errno. */
int vb_reap_pending(struct vb_worker *w);
/*
 * Wait for the peer's "stream done" word (send: and every announced message).
 * Without sends the wait sleeps between looks, 20 us doubling up to
 * max_nap_ns (VB_NAP_TIMED_NS when the wait ends a timed window) and never
 * longer than 1/8 of the time waited so far: a stream of length T costs about
 * log2(T / 20 us) + 8 wake-ups and is noticed at most ~T/8 late.  0 or -errno.
 */
int vb_stream_done_wait(struct vb_worker *w, uint64_t *count, uint64_t *recvd, uint64_t max_nap_ns);
#define VB_NAP_TIMED_NS 20000u     /* ends a measured window: no backoff */
#define VB_NAP_PASSIVE_NS 50000000u /* untimed passive side: the pair sync waits for it */
int vb_stream_signal(struct vb_worker *w, uint64_t count);
void vb_flag(struct pb_timed *t, const char *flag);

/* vb_bw.c: the windowed stream of the *_bw tests (the pre-built WR carries the opcode). */
extern const struct pb_test_ops vb_bw_client, vb_bw_server;
/* Engine ops of a side with nothing to do but wait for the peer's end of stream. */
extern const struct pb_test_ops vb_passive_ops;
/* Passive side of a stream: wait for the peer's end of stream (send: receive it). 0 or -errno. */
int vb_passive(struct vb_worker *w);

/* vb_lat.h: the latency harness (static inline, included by the per-operation files). */

/* vb_buf.c: buffer layouts (--buffers; docs/verbs.md "Buffer layouts"). */
/* Bytes of each of the two regions (send/source, receive/target) of a worker's data buffer. */
uint64_t vb_buf_region(const struct vb_params *p);
/* After the data WR of a size is built: apply the layout to it (source address, slots). */
void vb_buf_prepare(struct vb_worker *w);
/* Environment record: buffers (requested), buffers_recorded (rows), buffer_slots, buffer_region_bytes. */
void vb_buf_env(FILE *f, const struct vb_params *p);
/* Point the data WR at slot k mod n (local and remote). */
static inline void vb_buf_slot(struct vb_worker *w, uint64_t k)
{
	uint64_t off = (k % w->slots.n) * w->slots.stride;

	w->sge.addr = w->slots.lbase + off;
	w->wr.wr.rdma.remote_addr = w->slots.rbase + off;
}
/* Point the receive WR at the next receive slot (before each ibv_post_recv). */
/* Set the next receive's address (its slot); returns its post index. */
uint64_t vb_buf_recv_next(struct vb_worker *w);
/* A receive's wr_id: its post index (slot) above bit 16, the QP it was posted on below. */
#define VB_RECV_QP(wr_id) ((unsigned)((wr_id) & 0xffffu))
#define VB_RECV_SLOT(wr_id) ((uint64_t)(wr_id) >> 16)
/* Address of receive number i (0-based, in completion order) in this worker's buffer. */
uint8_t *vb_buf_recv_addr(const struct vb_worker *w, uint64_t i);

/* vb_validate.c: the non-timed data check (and its corruption self-test). */
int vb_validate_run(struct vb_worker *w, bool selftest);
void vb_pattern_fill(uint8_t *b, uint64_t len, unsigned pair, uint64_t iter);
int64_t vb_pattern_check(const uint8_t *b, uint64_t len, unsigned pair, uint64_t iter);

/* Per-operation files: the ops of each side of their latency test. */
extern const struct pb_test_ops vb_write_lat_client, vb_write_lat_server;
extern const struct pb_test_ops vb_read_lat_client;
extern const struct pb_test_ops vb_send_lat_client, vb_send_lat_server;
extern const struct pb_test_ops vb_atomic_client;   /* the variant picks fadd or cswap */

/*
 * vb_devmap.c: -d and --pair-devices (syntax only, before any device is seen).
 * Fills p->dev_names, ndev_names, dev_all, pair_dev, pair_peer_dev.  0, or
 * -EINVAL after one message naming the option and the bad part (exit 2).
 */
int vb_devmap_parse(struct vb_params *p);
/*
 * Which of the ndev probed devices each pair uses (pure): --pair-devices, else
 * pair i -> device i % ndev; the peer side (loopback) the same unless mapped.
 * dev_of / peer_of [pairs] receive indices into sh->dev.
 */
void vb_devmap_assign(const struct vb_params *p, unsigned ndev, unsigned *dev_of, unsigned *peer_of);

/* vb_launch.c */
/* Run; rows to csv, the environment record to env (NULL: none). Returns the exit code. */
int vb_launch(struct vb_params *p, FILE *csv, FILE *env);

#endif
