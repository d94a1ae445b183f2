/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pairbench-mpi internals: the run context every test file receives (who I
 * am, which node, which pair, the node's shm segment), the test table, and
 * the helpers shared by the test files.  One file per test family:
 *   mp_latency.c   latency (ping-pong, half round trip)
 *   mp_bw.c        bw, bibw, msgrate (windowed non-blocking streams)
 *   mp_loaded.c    loaded_lat (probe ping-pong while other pairs stream)
 *   mp_coll.c      barrier, bcast, reduce, allreduce, gather, scatter, allgather, alltoall
 *   mp_halo.c      halo (2-D decomposition, 4 or 8 neighbours)
 * Plumbing: mp_world.c (nodes, pairing, pinning, shm, clock offsets, env
 * record), mp_meet.c (struct pb_meet_ops over MPI), mp_watchdog.c (deadlines).
 */
#ifndef MP_H
#define MP_H

#include "pb_common.h"
#include "pb_engine.h"
#include "pb_soak.h"
#include "mp_pattern.h"
#include "shm_sync.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

enum mp_bind_mode { MP_BIND_VERIFY, MP_BIND_OVERRIDE };

struct mp_params {
	struct pb_common_params c;
	uint64_t window;
	int buffers;             /* enum pb_buffers (core/pb_test_info.h) */
	int timing;              /* enum pb_timing (core/pb_test_info.h) */
	bool ack_each_window;    /* bw, bibw: B acks every window (OSU -W / IMB Uniband loop) */
	bool back_to_back;
	bool root_rotate;
	uint64_t halo_neighbours;
	int bind_mode;           /* enum mp_bind_mode */
	const char *pattern;     /* --pattern: NULL = none; "P1/P2/..." = rounds in one job */
	double startup_timeout_s; /* --startup-timeout: MPI_Init and the wire-up (mp_startup_ns) */
	struct pb_soak_params soak; /* --soak, --bucket, --stall-fraction, --series (core/pb_soak.h) */
};

/* Tags of the point-to-point tests. */
enum { MP_TAG_DATA = 1, MP_TAG_STOP = 2, MP_TAG_ACK = 3, MP_TAG_SYNC = 4 };

/* Node-shared control block (shm extra space). */
struct mp_shared {
	_Alignas(64) uint64_t probe_done_point; /* loaded_lat: last point the probe finished (+1) */
};

struct mp_watchdog;
struct mp_rank_info;

struct mp_ctx {
	const struct mp_params *p;
	int rank, size;
	MPI_Comm node_comm;
	int node_rank, node_size;
	int node_id, n_nodes;        /* nodes numbered by their lowest world rank */
	char host[64];
	struct shm_sync *shm;
	struct mp_shared *shared;
	/* pair tests */
	enum mp_side side;
	int peer;                    /* world rank of the other side; -1 none */
	unsigned pairs;              /* engine pairs: pairs, or ranks for collectives/halo */
	unsigned pair_id;
	char peer_label[96];
	/* placement */
	int cpu, numa_node;
	int pu;                      /* PU bound by pairbench; -1 none (launcher's binding, --pin none) */
	bool pin_verified;           /* the binding read back equals the request */
	unsigned node_cpus;          /* CPUs available to this node's ranks (hwloc allowed set) */
	char binding[80];            /* "launcher {0}", "pairbench PU 1", "none" */
	uint64_t timeout_ns;
	uint64_t startup_ns;         /* the start-up deadline (mp_startup_ns) */
	struct mp_watchdog *wd;
	int64_t *clock_offset_ns;    /* rank 0 only: per rank, its clock minus rank 0's */
	double clock_offset_err_ns;  /* largest half round trip of the offset estimates */
	bool cross_node;             /* the job spans more than one node */
	bool pairs_given;            /* --pairs was on the command line */
	FILE *env_json;              /* rank 0: --env-json, opened before the run; NULL = none */
	/* --pattern: the rounds (parsed from p->pattern) and the one being run */
	struct pb_pattern *patterns;
	int n_patterns;
	int n_rounds;                /* the patterns' rounds (a scan has many), from the node count */
	const struct pb_pattern *pattern;
	struct mp_rank_info *infos;  /* every rank's node (mp_world_setup), for re-pairing */
};

/*
 * A test: what is true of it (info: printed by --list-tests --format json),
 * how its ranks are arranged and how to build its ops.  No test name appears
 * in a condition outside the tables.
 */
enum mp_kind { MP_KIND_PAIR, MP_KIND_ALL };

struct mp_test {
	struct pb_test_info info;
	enum mp_kind kind;           /* PAIR: side A measures; ALL: every rank, per-iteration max */
	/* Allocate the test context; 0 or -errno. */
	int (*create)(struct mp_ctx *ctx, const struct mp_test *t, void **tctx);
	void (*destroy)(void *tctx);
	const struct pb_test_ops *ops;
	int sub;                     /* per-family selector (e.g. which collective) */
	bool ack_choice;             /* --ack-each-window applies (bw, bibw; msgrate always acks) */
	bool pattern_ok;             /* pairs may span any two nodes (--pattern) */
};

/* Primary metric and its direction, as designated initialisers of struct pb_test_info. */
#define MP_LOWER_LAT .primary_metric = "lat_us_p50", .higher_is_worse = true
#define MP_HIGHER(col) .primary_metric = col, .higher_is_worse = false
/* The end of a table. */
#define MP_TESTS_END { .info = { .name = NULL } }

/*
 * Latency samples rank 0 gathers per point, at most (2^26 doubles, 512 MiB):
 * in target mode a large job keeps fewer per pair (never fewer than
 * --lat-samples; the pairs that fill them are flagged sample_cap).
 */
#define MP_GATHER_MAX_SAMPLES (1ull << 26)

struct mp_ctx;
struct mp_test;
/* The test can stop on a deadline: not collectives and halo (samples aligned across ranks),
 * not --timing block (no clock read to stop on). */
bool mp_time_stop(const struct mp_ctx *ctx, const struct mp_test *t);
/* Samples per pair of a target point: room, or less so that rank 0's gather stays within
 * MP_GATHER_MAX_SAMPLES (never fewer than min); other methods: room unchanged. */
uint64_t mp_sample_room(const struct mp_ctx *ctx, enum pb_window_method m, uint64_t room,
			uint64_t min);

extern const struct mp_test mp_tests_latency[];
extern const struct mp_test mp_tests_bw[];
extern const struct mp_test mp_tests_loaded[];
extern const struct mp_test mp_tests_coll[];
extern const struct mp_test mp_tests_halo[];

/* Find a test by name; NULL if unknown. */
const struct mp_test *mp_test_find(const char *name);
/* Print the test table in fmt (enum pb_list_format). */
/* -E2BIG (nothing printed) when the tables hold more than PB_TESTS_MAX tests. */
int mp_test_list(FILE *f, int fmt);

/* --- mp_world.c --- */
/*
 * Discover nodes, pair the ranks (pair tests) or number them (collectives),
 * create/attach the node's shm segment, pin.  Every rank calls it.  Returns
 * 0 or -errno; on error exactly one rank has printed why (usage: -EINVAL).
 */
int mp_world_setup(struct mp_ctx *ctx, const struct mp_test *t);
/*
 * Pair the ranks for pattern pat (NULL: the default pairing) after
 * mp_world_setup; every rank calls it (rounds of --pattern P1/P2/...).
 * 0 or -errno; on error one rank has printed why.
 */
int mp_world_pair(struct mp_ctx *ctx, const struct mp_test *t, const struct pb_pattern *pat);
/*
 * Parse --pattern "P1/P2/..." into ctx->patterns.  0, or -EINVAL with err
 * naming the bad pattern.
 */
int mp_world_patterns(struct mp_ctx *ctx, const char *text, char *err, size_t len);
/*
 * Round idx (0..n_rounds-1) of --pattern: its pattern, selected on that
 * round (a scan's round R is named scan:R); NULL past the end.
 */
struct pb_pattern *mp_world_round(struct mp_ctx *ctx, int idx);
/* Print the pairing (rank 0) and write the --env-json record (once). 0 or -errno. */
int mp_world_report(struct mp_ctx *ctx, const struct mp_test *t, int argc, char **argv);
void mp_world_teardown(struct mp_ctx *ctx);
/*
 * Agree on an error: every rank passes its rc and message; the lowest
 * failing rank prints its message (one copy).  Returns the first failing
 * rank's rc (the same on every rank), or 0.
 */
int mp_agree(struct mp_ctx *ctx, int rc, const char *msg);

/* --- mp_meet.c --- */
struct mp_meet;
/* per_iter_max: the aggregate is per-iteration max over ranks (collectives, halo). */
int mp_meet_create(struct mp_ctx *ctx, bool per_iter_max, const struct pb_engine_params *ep,
		   struct mp_meet **out);
void mp_meet_destroy(struct mp_meet *m);
extern const struct pb_meet_ops mp_meet_ops;

/* --- mp_watchdog.c --- */
/*
 * A thread that ends the job when a phase does not finish by its deadline
 * (a dead or hung peer leaves MPI calls blocked forever).  It prints the
 * phase and exits the process with status 1; mpirun then ends the job.
 */
int mp_watchdog_start(struct mp_watchdog **out, int rank);
/* The world rank, once MPI_Init told it (start with -1 before). */
void mp_watchdog_set_rank(struct mp_watchdog *wd, int rank);
/* (Re)arm: the phase must end within ns from now. phase must be a literal. */
void mp_watchdog_arm(struct mp_watchdog *wd, const char *phase, uint64_t ns);
/*
 * The same for a start-up phase (MPI_Init, the wire-up before the first point): its
 * deadline is the start-up deadline and its message says the start-up was slow, not
 * that a peer died.
 */
void mp_watchdog_arm_startup(struct mp_watchdog *wd, const char *phase, uint64_t ns);
/*
 * The start-up deadline in ns: --startup-timeout, never shorter than --timeout.  MPI_Init
 * and the job's wire-up take what the launcher and the machine take (seconds on a loaded
 * node, more at scale), unrelated to how long one wait of a test may last.
 */
uint64_t mp_startup_ns(const struct mp_params *p);
/*
 * held: an expiry waits until the hold is released (then fires at once): a window that
 * must not be cut short by the watchdog's _exit (the leader's shmget .. IPC_RMID).
 */
void mp_watchdog_hold(struct mp_watchdog *wd, bool held);
void mp_watchdog_disarm(struct mp_watchdog *wd);
void mp_watchdog_stop(struct mp_watchdog *wd);

/* --- shared loops (mp_latency.c, mp_bw.c), reused by loaded_lat --- */
/*
 * Ping-pong, side A: sends from sbuf, receives into rbuf (the same pointer = the fresh
 * layout); fills t (samples or histogram, window); the last message carries MP_TAG_STOP.
 */
int mp_pingpong_a(struct mp_ctx *ctx, void *sbuf, void *rbuf, int count, struct pb_timed *t);
/* Ping-pong, side B: answers until a message tagged MP_TAG_STOP; *done = round trips. */
int mp_pingpong_b(struct mp_ctx *ctx, void *sbuf, void *rbuf, int count, uint64_t *done);
/* Untimed ping-pong of exactly iters round trips (both sides). */
int mp_pingpong_warmup(struct mp_ctx *ctx, void *sbuf, void *rbuf, int count, uint64_t iters);

/*
 * Windowed stream from A to B (bidir: both ways).  A sends windows of at
 * most `window` messages; the last window is the one where `remaining`
 * runs out, the clock passes end_by_ns, or *stop_word >= stop_value; its
 * messages carry MP_TAG_STOP.  ack_each: B answers every window (msgrate).
 */
struct mp_stream {
	struct mp_ctx *ctx;
	void *sbuf, *rbuf;           /* rbuf: slots x size bytes (bidir / B side) */
	bool one_rbuf;               /* peer layout: every receive of a window into rbuf itself */
	int count;                   /* bytes per message */
	int window;
	bool bidir, ack_each;
	MPI_Request *req;            /* 2 x window */
	MPI_Status *st;              /* 2 x window */
	const volatile uint64_t *stop_word;
	uint64_t stop_value;
	struct pb_soak_rec *soak;    /* --soak, side A: the flow's buckets (NULL = no soak) */
	bool stopped_early;          /* soak: ended by the stop word before its deadline */
	/* --validate-live N: A sends the first message of every Nth window from cbuf, filled
	 * with pb_soak_pattern_fill; B checks it (its counts per bucket in rx) */
	uint64_t check_every;        /* 0 = off */
	void *cbuf;                  /* A: the checked message */
	unsigned pair;               /* the pattern's pair */
	struct pb_soak_rec *rx;      /* B: checked / corrupt per bucket */
	uint64_t fault_ns;           /* B: flip a byte of the first check at or after it; 0 = none */
	uint64_t checked, corrupt;   /* B: totals of the timed block; A: B's, received at the end */
	uint64_t first_corrupt_ns;   /* B: when the first corrupt message completed; A: B's, from the start */
};
int mp_stream_a(struct mp_stream *s, uint64_t messages, uint64_t end_by_ns, struct pb_timed *t);
int mp_stream_b(struct mp_stream *s, uint64_t messages, uint64_t *done);
/* Allocate the stream's request/status arrays for window; 0 or -ENOMEM. */
int mp_stream_init(struct mp_stream *s, struct mp_ctx *ctx, int window, bool bidir, bool ack_each);
void mp_stream_cleanup(struct mp_stream *s);

/*
 * Timed loop of collectives and halo: one call of op(arg, i) per iteration;
 * default: MPI_Barrier, read clock, op, read clock (sample = this rank's
 * call time); back_to_back: one barrier, then consecutive calls, sample i =
 * time between the ends of call i-1 and call i (their mean = IMB's t).
 */
typedef void (*mp_iter_fn)(void *arg, uint64_t i);
int mp_iter_timed(mp_iter_fn op, void *arg, bool back_to_back, struct pb_timed *t);
/* Untimed: iters calls, then a barrier. */
int mp_iter_warmup(mp_iter_fn op, void *arg, uint64_t iters);

/* --- helpers for test files --- */
/* Allocate a page-aligned, touched buffer; NULL on failure. */
void *mp_buf_alloc(uint64_t bytes);
/* MPI datatype count for bytes (MPI counts are int): fails above INT_MAX. */
int mp_count(uint64_t bytes, int *count);

#endif
