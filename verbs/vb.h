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

#define VB_MAX_PAIRS PB_MAX_PAIRS  /* = the --pairs range of the common options */
#define VB_MAX_WORKERS (2 * VB_MAX_PAIRS)

enum vb_op { VB_OP_WRITE, VB_OP_READ, VB_OP_SEND, VB_OP_ATOMIC };
enum vb_side { VB_CLIENT, VB_SERVER };

/* Options (filled from the option table in vb_main.c). */
struct vb_params {
	struct pb_common_params c;
	const char *device;      /* NULL = first device */
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
	/* derived by vb_params_finish() */
	const struct vb_test *test_desc;
	int gid_index_v;         /* -1 = auto */
	int inline_v;            /* -1 = auto */
	enum vb_side side;       /* for --server / --connect / rank mode */
	unsigned pairs;
	uint64_t max_size;
	const char *peer_host;   /* --connect HOST, or the loopback address */
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
	char device[64];
	char fw_ver[64];
	char node_guid[32];
	uint32_t vendor_id, vendor_part_id, hw_ver;
	uint64_t max_mr_size;
	int max_qp_wr, max_cqe, max_sge, max_qp_rd_atom, max_qp_init_rd_atom;
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
	int32_t done;            /* 1 = exited normally */
	_Atomic uint64_t beat;   /* heartbeat: bumped at every wait check; the launcher's watchdog reads it */
	char note[192];
};

struct vb_shared {
	struct vb_probe probe;
	_Atomic uint32_t loaded_stop;      /* loaded_lat: probe pair finished this point (+1 per point) */
	/* The leader's CSV output (pb_sink.progress): 0 nothing, 1 header, 1 + n after n rows. */
	volatile unsigned csv_progress;
	volatile int csv_errno;            /* the leader could not write rows (reported by it) */
	struct vb_worker_report w[VB_MAX_WORKERS];
};

/* Ctrl words of a worker (in their own MR; the peer writes them). */
struct vb_ctrl {
	volatile uint64_t in[4];  /* [0] sync step, [1] peer's progress word (peek), [2] stream done word */
	uint64_t out[4];          /* local sources of ctrl writes; [1] our progress word, read by the peer */
};

#define VB_DONE_SHIFT 40
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

struct vb_worker {
	const struct vb_params *p;
	const struct vb_test *test;
	const struct vb_role *role;  /* vb_test_role() of this worker */
	struct vb_shared *shared;
	enum vb_side side;
	unsigned pair, member;
	bool measuring;           /* publishes results: client side (loaded_lat: every client) */
	char host[64], peer[64];
	/* synchronisation */
	struct shm_sync *sync;
	struct shm_meet meet;
	uint64_t timeout_ns;
	/* rdma_cm */
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id, *id;
	/* verbs */
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
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
	/* protocol state */
	uint64_t ctrl_step;
	uint64_t stream_no;
	uint64_t size;            /* current message size */
	uint32_t inline_flag;     /* IBV_SEND_INLINE when size <= max_inline (write/send) */
	uint64_t loaded_point;
	uint8_t seq;              /* ping-pong sequence byte (1..255), reset per size */
	bool sig_pending;         /* a signalled request is not reaped yet (latency loops) */
	uint64_t posts;           /* latency loops: requests posted this size */
	uint64_t atomic_value;    /* cswap: expected current value */
	char error[256];
};

/* vb_main.c: the signal (SIGINT, SIGTERM, SIGHUP) that interrupts the run, 0 = none. */
extern volatile sig_atomic_t vb_interrupted;
/* Fault injection for the fault tests (PAIRBENCH_FAULT=PHASE:SIGNAL:MEMBER, docs/failure-modes.md). */
enum vb_phase { VB_PHASE_CONNECT, VB_PHASE_FINAL };
void vb_fault_point(const struct vb_worker *w, enum vb_phase phase);

/* vb_dev.c: run in the probe child (verbs allowed there). Fills *pr; returns 0 or -errno. */
int vb_dev_probe(const struct vb_params *p, struct vb_probe *pr);
/* Launcher: JSON environment record into f, opened by main() (ci: the launcher's clock
 * calibration).  Returns 0 or -errno. */
struct pb_clock_info;
int vb_env_write(FILE *f, const struct vb_params *p, const struct vb_shared *sh,
		 unsigned workers, const char *pin_note, const struct pb_clock_info *ci);
/* IB MTU enum <-> bytes. */
int vb_mtu_bytes(int mtu_enum);
int vb_mtu_enum(uint64_t bytes);

/* vb_cm.c: connect (client) or accept (server) the worker's pair. 0 or -errno, w->error set. */
int vb_cm_connect(struct vb_worker *w);
void vb_cm_teardown(struct vb_worker *w);
/* Hash of the options both sides must agree on, and its per-option nibbles. */
void vb_opts_hash(const struct vb_params *p, uint64_t *hash, uint64_t *nibbles);

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
int vb_ctrl_sync(struct vb_worker *w);
int vb_post_recvs(struct vb_worker *w, uint32_t n);
/* A receive completed: count it in *recvd and post its replacement. 0 or -errno. */
int vb_recv_repost(struct vb_worker *w, uint64_t *recvd);
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

/* vb_validate.c: the non-timed data check (and its corruption self-test). */
int vb_validate_run(struct vb_worker *w, bool selftest);
void vb_pattern_fill(uint8_t *b, uint64_t len, unsigned pair, uint64_t iter);
int64_t vb_pattern_check(const uint8_t *b, uint64_t len, unsigned pair, uint64_t iter);

/* Per-operation files: the ops of each side of their latency test. */
extern const struct pb_test_ops vb_write_lat_client, vb_write_lat_server;
extern const struct pb_test_ops vb_read_lat_client;
extern const struct pb_test_ops vb_send_lat_client, vb_send_lat_server;
extern const struct pb_test_ops vb_atomic_client;   /* the variant picks fadd or cswap */

/* vb_launch.c */
/* Run; rows to csv, the environment record to env (NULL: none). Returns the exit code. */
int vb_launch(struct vb_params *p, FILE *csv, FILE *env);

#endif
