/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pairbench-mpi: multi-pair MPI latency/bandwidth, loaded latency,
 * collectives timed per iteration, and a halo exchange.  main() parses the
 * options (messages from rank 0 only), sets up the world (mp_world.c),
 * wraps the test's ops with watchdog deadlines and hands everything to the
 * engine, which writes the rows on rank 0.
 */
#define _GNU_SOURCE
#include "mp.h"

#include "pb_csv.h"
#include "pb_flags.h"
#include "pb_log.h"
#include "pb_pin.h"
#include "pb_run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const mp_bind_mode_names[] = { "verify", "override", NULL };

static const struct pb_opt mp_opts[] = {
	PB_COMMON_OPTS(struct mp_params, c, "latency", "1:4M", NULL),
	{ "window", 0, PB_OPT_U64, offsetof(struct mp_params, window), "64", 1, 4096, NULL, "N",
	  "outstanding non-blocking messages per pair (bw, bibw, msgrate, loaded_lat streams)" },
	{ "buffers", 0, PB_OPT_CHOICE, offsetof(struct mp_params, buffers), "fresh", 0, 0,
	  pb_buffers_names, "LAYOUT",
	  "latency, bw, bibw, msgrate: fresh = one buffer per rank (ping-pong) / a receive slot per outstanding message (streams); peer = separate send and receive buffers / one receive buffer per window, as OSU and IMB (docs/mpi.md)" },
	{ "timing", 0, PB_OPT_CHOICE, offsetof(struct mp_params, timing), "iteration", 0, 0,
	  pb_timing_names, "MODE",
	  "latency: iteration = a clock read per iteration, every statistic; block = one read at each end of the block, the mean only, flag block_timed (IMB's and NetPIPE's method; docs/methodology.md)" },
	{ "ack-each-window", 0, PB_OPT_FLAG, offsetof(struct mp_params, ack_each_window), NULL, 0,
	  0, NULL, NULL,
	  "bw, bibw: the receiver acknowledges every window, not once at the end (OSU -W / IMB Uniband loop; variant ack_each_window)" },
	{ "back-to-back", 0, PB_OPT_FLAG, offsetof(struct mp_params, back_to_back), NULL, 0, 0, NULL,
	  NULL, "collectives/halo: time N consecutive calls without a barrier between them (IMB style; can under-report, see docs/mpi.md)" },
	{ "root-rotate", 0, PB_OPT_FLAG, offsetof(struct mp_params, root_rotate), NULL, 0, 0, NULL,
	  NULL, "rooted collectives: root = iteration mod ranks (default: root 0)" },
	{ "halo-neighbours", 0, PB_OPT_U64, offsetof(struct mp_params, halo_neighbours), "4", 4, 8,
	  NULL, "4|8", "halo: exchange with 4 (edges) or 8 (edges and corners) neighbours" },
	{ "bind-mode", 0, PB_OPT_CHOICE, offsetof(struct mp_params, bind_mode), "verify", 0, 0,
	  mp_bind_mode_names, "MODE",
	  "verify: keep and record a binding made by the launcher, else apply --pin; override: always apply --pin" },
	{ "pattern", 0, PB_OPT_STRING, offsetof(struct mp_params, pattern), NULL, 0, 0, NULL, "P[/P...]",
	  "who talks to whom across nodes: pairs, shift:S, bisection, incast[:T], fanout[:T], alltoall, nodes:A-B,...; scan[:F[-L]][,skip=I,...] = rounds F..L (default all) of the fabric scan's round-robin tournament over the job's nodes, rows labelled scan:R; P1/P2/... = one after the other in this job (docs/patterns.md)" },
	{ "startup-timeout", 0, PB_OPT_DOUBLE, offsetof(struct mp_params, startup_timeout_s), "60", 1,
	  86400, NULL, "SEC",
	  "deadline of the job's start-up (MPI_Init, node split, shm segment, placement), at least --timeout; --timeout bounds every wait after it" },
	PB_SOAK_OPTS(struct mp_params, soak),
};
#define MP_N_OPTS (sizeof(mp_opts) / sizeof(mp_opts[0]))

static const char mp_summary[] =
	"MPI multi-pair micro-benchmarks: pairs start together (MPI_Barrier + node shm barrier),\n"
	"side A of every pair measures on rank 0's node; collectives and halo report per-iteration\n"
	"max over ranks.  Start with mpirun -np 2P; as root Open MPI needs\n"
	"OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.";

static const struct mp_test *const mp_families[] = { mp_tests_latency, mp_tests_bw, mp_tests_loaded,
						     mp_tests_coll, mp_tests_halo };

const struct mp_test *mp_test_find(const char *name)
{
	for (size_t f = 0; f < sizeof(mp_families) / sizeof(mp_families[0]); f++) {
		for (const struct mp_test *t = mp_families[f]; t->info.name; t++) {
			if (!strcmp(t->info.name, name))
				return t;
		}
	}
	return NULL;
}

int mp_test_list(FILE *f, int fmt)
{
	const struct pb_test_info *all[PB_TESTS_MAX];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(mp_families) / sizeof(mp_families[0]); i++) {
		for (const struct mp_test *t = mp_families[i]; t->info.name; t++) {
			if (n == PB_TESTS_MAX) {
				pb_log_error("more than %d tests: raise PB_TESTS_MAX", PB_TESTS_MAX);
				return -E2BIG;
			}
			all[n++] = &t->info;
		}
	}
	pb_test_info_print(f, (enum pb_list_format)fmt, "mpi", all, n);
	return 0;
}

/* Watchdog deadlines around the test's own phases (the meet arms its own). */
struct mp_guard {
	const struct pb_test_ops *inner;
	void *ictx;
	struct mp_ctx *ctx;
	bool idle;                   /* a rank in no pair of this pattern: meets, moves nothing */
	uint64_t window_ns;          /* the timed block's window (engine duration_s), 0 = a count */
};

static int mp_guard_prepare(void *g_, uint64_t size)
{
	struct mp_guard *g = g_;

	mp_watchdog_arm(g->ctx->wd, "set-up", g->ctx->timeout_ns);
	if (g->idle)
		return 0;
	return g->inner->prepare ? g->inner->prepare(g->ictx, size) : 0;
}

static int mp_guard_warmup(void *g_, uint64_t size, uint64_t iters)
{
	struct mp_guard *g = g_;

	mp_watchdog_arm(g->ctx->wd, "the warm-up", g->ctx->timeout_ns);
	if (g->idle)
		return 0;
	return g->inner->warmup ? g->inner->warmup(g->ictx, size, iters) : 0;
}

static int mp_guard_timed(void *g_, struct pb_timed *t)
{
	struct mp_guard *g = g_;

	mp_watchdog_arm(g->ctx->wd, "the timed block", g->ctx->timeout_ns + g->window_ns);
	if (g->idle)
		return 0;
	return g->inner->timed(g->ictx, t);
}

static int mp_guard_finish(void *g_, uint64_t size)
{
	struct mp_guard *g = g_;

	mp_watchdog_arm(g->ctx->wd, "the finish phase", g->ctx->timeout_ns);
	if (g->idle)
		return 0;
	return g->inner->finish ? g->inner->finish(g->ictx, size) : 0;
}

static const struct pb_test_ops mp_guard_ops = {
	.prepare = mp_guard_prepare,
	.warmup = mp_guard_warmup,
	.timed = mp_guard_timed,
	.finish = mp_guard_finish,
};

/* Checks that need the test: one message, rank 0. Returns 0 or -EINVAL. */
static int mp_validate(const struct mp_params *p, const struct mp_test *t,
		       const struct pb_opts_result *res, char *err, size_t len)
{
	bool sizes_given = pb_opts_given(mp_opts, MP_N_OPTS, res, "sizes");
	unsigned list[PB_PIN_MAX];

	unsigned soak_given = (pb_opts_given(mp_opts, MP_N_OPTS, res, "bucket") ? PB_SOAK_GIVEN_BUCKET : 0) |
			      (pb_opts_given(mp_opts, MP_N_OPTS, res, "stall-fraction") ? PB_SOAK_GIVEN_FRACTION : 0) |
			      (pb_opts_given(mp_opts, MP_N_OPTS, res, "series") ? PB_SOAK_GIVEN_SERIES : 0) |
			      (pb_opts_given(mp_opts, MP_N_OPTS, res, "validate-live") ? PB_SOAK_GIVEN_VALIDATE : 0);

	if (pb_window_check(&p->c, err, len) ||
	    pb_window_check_time_opts(&p->c, mp_opts, MP_N_OPTS, res, err, len) ||
	    pb_soak_validate(&p->soak, &p->c, &t->info, soak_given, err, len))
		return -EINVAL;
	if (p->halo_neighbours != 4 && p->halo_neighbours != 8)
		snprintf(err, len, "invalid value for --halo-neighbours: %llu (accepted: 4 or 8)",
			 (unsigned long long)p->halo_neighbours);
	else if (t->kind == MP_KIND_ALL && p->c.duration_s > 0)
		snprintf(err, len,
			 "--duration is not supported by --test %s (per-iteration max over ranks needs aligned samples); use -n",
			 t->info.name);
	else if (!t->info.payload && sizes_given)
		snprintf(err, len, "--test %s moves no payload; drop -s/--sizes", t->info.name);
	else if (p->pattern && !t->pattern_ok)
		snprintf(err, len, "--pattern applies to latency, bw, bibw and msgrate, not --test %s",
			 t->info.name);
	else if (p->pattern && pb_opts_given(mp_opts, MP_N_OPTS, res, "pairs"))
		snprintf(err, len, "--pattern decides the pairs; drop --pairs");
	else if (p->back_to_back && t->kind != MP_KIND_ALL)
		snprintf(err, len, "--back-to-back applies to collectives and halo, not --test %s",
			 t->info.name);
	else if (p->buffers != PB_BUF_FRESH && !t->info.buffers)
		snprintf(err, len,
			 "--buffers %s: --test %s has no buffer layout choice (those that have one list it under \"buffers\" in --list-tests --format json)",
			 pb_buffers_names[p->buffers], t->info.name);
	else if (p->timing == PB_TIMING_BLOCK && !t->info.block_timing)
		snprintf(err, len,
			 "--timing block: --test %s is timed per iteration only (those that allow block timing list it under \"timing\" in --list-tests --format json)",
			 t->info.name);
	else if (p->timing == PB_TIMING_BLOCK && p->c.duration_s > 0)
		snprintf(err, len,
			 "--timing block needs -n/--iterations: --duration needs a clock read per iteration to know when to stop");
	else if (p->ack_each_window && !t->ack_choice)
		snprintf(err, len,
			 "--ack-each-window applies to the streaming bandwidth tests (bw, bibw), not --test %s",
			 t->info.name);
	else if (p->root_rotate && !t->info.rooted)
		snprintf(err, len, "--root-rotate applies to rooted collectives, not --test %s",
			 t->info.name);
	else if (p->c.pin_list && p->c.pin != PB_PIN_LIST)
		snprintf(err, len, "--pin-list is used only with --pin list (add --pin list)");
	else if (p->c.pin == PB_PIN_LIST && !p->c.pin_list)
		snprintf(err, len, "--pin list needs --pin-list (e.g. --pin-list 0,2)");
	else if (p->c.pin != PB_PIN_LIST ||
		 pb_pin_parse_list(p->c.pin_list, list, PB_PIN_MAX, err, len) >= 0)
		return 0;
	/* (a bad --pin-list: pb_pin_parse_list wrote err) */
	return -EINVAL;
}

/*
 * Rank 0 opens --output and --env-json before anything runs, so a bad path
 * is a usage error (exit 2) at once, not a failure after the run.  Opened
 * non-blocking: a FIFO without a reader fails (ENXIO) instead of blocking
 * for ever; then switched back to blocking writes.
 */
static int mp_open_out(const char *opt, const char *path, FILE **out)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
	int rc;

	if (fd < 0) {
		rc = -errno;
		pb_log_error("%s %s: %s", opt, path,
			     rc == -ENXIO ? "a FIFO (or device) with no reader" : strerror(-rc));
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	*out = fdopen(fd, "w");
	if (!*out) {
		rc = -errno;
		pb_log_error("%s %s: fdopen: %s", opt, path, strerror(-rc));
		close(fd);
		return rc;
	}
	/* Rows reach the file as they are made: a failing write is seen at once. */
	setvbuf(*out, NULL, _IOLBF, 0);
	return 0;
}

static int mp_open_outputs(struct mp_ctx *ctx, FILE **csv)
{
	int rc = 0;

	if (ctx->rank == 0 && ctx->p->c.output)
		rc = mp_open_out("--output", ctx->p->c.output, csv);
	if (!rc && ctx->rank == 0 && ctx->p->c.env_json)
		rc = mp_open_out("--env-json", ctx->p->c.env_json, &ctx->env_json);
	if (ctx->rank == 0 && !ctx->p->c.output)
		setvbuf(stdout, NULL, _IOLBF, 0);
	return mp_agree(ctx, rc, "");
}

/*
 * Rank 0 could not write the rows (disk full, closed stdout, ...).  The other
 * ranks are blocked in the next point's MPI calls and cannot be told: end
 * the job now with one line naming the write, rather than leave them to the
 * watchdog, which would blame a peer.  (The node's shm segment is already
 * marked for removal: nothing is left behind.)
 */
static void mp_write_failed(const struct mp_ctx *ctx, int err)
{
	pb_log_error("rank 0: writing the rows to %s failed: %s; ending the job",
		     ctx->p->c.output ? ctx->p->c.output : "stdout",
		     err ? strerror(err) : "I/O error");
	/* As the watchdog does: mpirun ends the job when a rank exits before
	 * MPI_Finalize (MPI_Abort would add Open MPI's own error banners). */
	_exit(PB_EXIT_RUNTIME);
}

/* The row's variant: the timing style of collectives, or bw/bibw's acknowledgement. */
static const char *mp_variant(const struct mp_params *p)
{
	if (p->back_to_back)
		return "back_to_back";
	return p->ack_each_window ? "ack_each_window" : NULL;
}

/* The engine's parameters of this run (flags into flags[0..len)); pattern, if any, the caller's. */
static void mp_engine_params(const struct mp_ctx *ctx, const struct mp_test *t, unsigned pairs,
			     struct pb_engine_params *ep, char *flags, size_t len)
{
	/* Every rank of the node busy-polls; MPI has no link rate to judge. */
	struct pb_run_facts facts = { .busy_procs = (unsigned)ctx->node_size,
				      .cpus = ctx->node_cpus };

	pb_run_engine_params(&t->info, "mpi", &ctx->p->c, mp_variant(ctx->p), ctx->p->window,
			     pairs, mp_time_stop(ctx, t), ep);
	ep->iterations = mp_sample_room(ctx, ep->method, ep->iterations, ep->min_iterations);
	ep->buffers = t->info.buffers ? pb_buffers_names[ctx->p->buffers] : NULL;
	ep->block_timed = ctx->p->timing == PB_TIMING_BLOCK;
	if (ctx->p->soak.soak_s > 0) {
		/* A soak is one common window of --soak seconds (pb_soak.h). */
		ep->method = PB_WM_WINDOW;
		ep->duration_s = ctx->p->soak.soak_s;
	}
	pb_flags_run(&facts, flags, len);
	ep->flags = flags;
}

/*
 * One pattern (one round of --pattern P1/P2/...; or the whole run without
 * --pattern): the test's context for this pairing, then the engine.
 */
static int mp_run_round(struct mp_ctx *ctx, const struct mp_test *t, struct mp_meet *meet,
			struct pb_sink *sink)
{
	void *tctx = NULL;
	int rc;

	rc = t->create(ctx, t, &tctx);
	rc = mp_agree(ctx, rc, rc ? "cannot allocate the test's buffers" : "");
	if (!rc) {
		struct pb_engine_params ep;
		struct pb_engine_role role = {
			.measuring = t->kind == MP_KIND_ALL || ctx->side == MP_SIDE_A,
			.leader = ctx->rank == 0, .pair_id = ctx->pair_id,
			.cpu = ctx->cpu, .numa_node = ctx->numa_node,
			.host = ctx->host, .peer = ctx->peer_label,
		};
		struct mp_guard g = { .inner = t->ops, .ictx = tctx, .ctx = ctx,
				      .idle = t->kind == MP_KIND_PAIR && ctx->side == MP_SIDE_NONE };
		char flags[96];

		mp_engine_params(ctx, t, ctx->pairs, &ep, flags, sizeof(flags));
		g.window_ns = (uint64_t)(ep.duration_s * 1e9);
		if (ctx->pattern) {
			ep.pattern = ctx->pattern->name;
			ep.node_aggregates = true;
		}
		if (ctx->pairs < t->info.min_pairs && ctx->rank == 0)
			pb_log_warn("%s with 1 pair has no load: the row is flagged no_load",
				    t->info.name);
		errno = 0;
		rc = pb_engine_run(&ep, &role, &mp_meet_ops, meet, &mp_guard_ops, &g, sink);
		if (sink->csv && ferror(sink->csv))
			mp_write_failed(ctx, errno);
		mp_watchdog_arm(ctx->wd, "the final barrier", ctx->timeout_ns);
		rc = mp_agree(ctx, rc, "");
	}
	if (tctx)
		t->destroy(tctx);
	return rc;
}

/* Rank 0: "not run" error rows for the rounds after a failed one (never missing rows). */
static void mp_rest_rounds(struct mp_ctx *ctx, const struct mp_test *t, int from,
			   struct pb_sink *sink)
{
	for (int i = from; ctx->rank == 0 && i < ctx->n_rounds; i++) {
		struct pb_engine_params ep;
		char flags[96];

		mp_engine_params(ctx, t, ctx->pairs ? ctx->pairs : 1, &ep, flags, sizeof(flags));
		ep.pattern = mp_world_round(ctx, i)->name;
		pb_engine_rest_rows(&ep, ctx->host, sink->header_done ? 1 : 0,
				    "not run: an earlier round failed", sink);
	}
}

static int mp_run(struct mp_ctx *ctx, const struct mp_test *t, int argc, char **argv)
{
	struct mp_meet *meet = NULL;
	FILE *csv = NULL;
	int rc, round = 0;

	rc = mp_open_outputs(ctx, &csv);
	if (!rc)
		rc = mp_world_setup(ctx, t);
	if (!rc)
		rc = mp_world_report(ctx, t, argc, argv);
	if (!rc) {
		struct pb_engine_params ep;
		char flags[96];

		mp_engine_params(ctx, t, ctx->pairs ? ctx->pairs : 1, &ep, flags, sizeof(flags));
		rc = mp_meet_create(ctx, t->kind == MP_KIND_ALL, &ep, &meet);
		rc = mp_agree(ctx, rc, rc ? "cannot allocate the result buffers" : "");
	}
	if (!rc) {
		struct pb_sink sink = { .csv = ctx->rank == 0 ? (csv ? csv : stdout) : NULL,
					.table = ctx->rank == 0 && !ctx->p->c.quiet ? stderr : NULL };

		rc = mp_run_round(ctx, t, meet, &sink);
		for (round = 1; !rc && round < ctx->n_rounds; round++) {
			rc = mp_world_pair(ctx, t, mp_world_round(ctx, round));
			if (!rc)
				rc = mp_world_report(ctx, t, argc, argv);
			if (!rc)
				rc = mp_run_round(ctx, t, meet, &sink);
		}
		if (rc && ctx->n_patterns)
			mp_rest_rounds(ctx, t, round, &sink);
	}
	if (ctx->rank == 0 && (csv ? ferror(csv) | fclose(csv) : fflush(stdout) | ferror(stdout))) {
		pb_log_error("rank 0: writing the rows to %s failed: %s",
			     ctx->p->c.output ? ctx->p->c.output : "stdout", strerror(errno));
		rc = rc ? rc : -EIO;
	}
	if (ctx->env_json)
		fclose(ctx->env_json);
	mp_meet_destroy(meet);
	mp_world_teardown(ctx);
	return rc;
}

/* World rank from the launcher's environment, before MPI_Init can tell; -1 if unknown. */
static int mp_env_rank(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
					    "SLURM_PROCID" };

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);

		if (v && *v)
			return atoi(v);
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct mp_params p;
	struct pb_opts_result res;
	struct mp_ctx ctx = { .p = &p, .node_comm = MPI_COMM_NULL };
	const struct mp_test *t = NULL;
	char err[768] = "";
	int rc, wrc;

	/*
	 * Parse before MPI_Init (messages wait until the rank is known) so that
	 * the start-up deadline (--startup-timeout) bounds MPI_Init too: a peer stopped or killed during start-up
	 * must not hold this rank there for ever.
	 */
	rc = pb_opts_parse_msg(mp_opts, MP_N_OPTS, argc, argv, &p, &res, err, sizeof(err));
	/*
	 * --help, --print-schema, --list-tests started by hand (no launcher's rank): answered
	 * without MPI_Init.  A singleton's start-up has nothing to add to them and can fail —
	 * under load (a test-all at a90f9ad: "Local abort before MPI_INIT completed"), or where a
	 * site allows no singletons.  Under a launcher every rank still initialises (rank 0 prints).
	 */
	if (!rc && (p.c.help || p.c.print_schema || p.c.list_tests) && mp_env_rank() < 0) {
		if (p.c.help)
			pb_opts_print_help(stdout, "pairbench-mpi", mp_summary, mp_opts, MP_N_OPTS);
		else if (p.c.print_schema)
			pb_schema_print(stdout);
		else
			rc = mp_test_list(stdout, p.c.list_format);
		return pb_exit_code(rc);
	}
	/* A soak ends early on SIGUSR1 and keeps what it measured (from the start: a signal
	 * before the handler would end the rank). */
	if (!rc && p.soak.soak_s > 0)
		rc = pb_soak_stop_on(SIGUSR1);
	wrc = mp_watchdog_start(&ctx.wd, mp_env_rank());
	if (!wrc)
		mp_watchdog_arm_startup(ctx.wd, "MPI_Init (start-up of the job)",
					rc ? 60000000000ull : mp_startup_ns(&p));
	MPI_Init(&argc, &argv);
	mp_watchdog_disarm(ctx.wd);
	MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);
	mp_watchdog_set_rank(ctx.wd, ctx.rank);
	if (!rc && !p.c.help && !p.c.print_schema && !p.c.list_tests) {
		t = mp_test_find(p.c.test);
		if (!t) {
			char clip[PB_CLIP_CHARS + 1];

			snprintf(err, sizeof(err), "unknown --test '%s' (see --list-tests)",
				 pb_opts_clip(p.c.test, clip, sizeof(clip)));
			rc = -EINVAL;
		} else {
			rc = mp_validate(&p, t, &res, err, sizeof(err));
		}
	}
	if (rc && ctx.rank == 0)
		pb_log_error("%s", err);
	if (rc || wrc) {
		mp_watchdog_stop(ctx.wd);
		MPI_Finalize();
		return rc ? PB_EXIT_USAGE : pb_exit_code(wrc);
	}
	if (p.c.help || p.c.print_schema || p.c.list_tests) {
		if (ctx.rank == 0 && p.c.help)
			pb_opts_print_help(stdout, "pairbench-mpi", mp_summary, mp_opts, MP_N_OPTS);
		else if (ctx.rank == 0 && p.c.print_schema)
			pb_schema_print(stdout);
		else if (ctx.rank == 0)
			rc = mp_test_list(stdout, p.c.list_format);
		mp_watchdog_stop(ctx.wd);
		MPI_Finalize();
		return pb_exit_code(rc);
	}
	ctx.pairs_given = pb_opts_given(mp_opts, MP_N_OPTS, &res, "pairs");
	if (p.pattern) {
		rc = mp_world_patterns(&ctx, p.pattern, err, sizeof(err));
		if (rc) {
			if (ctx.rank == 0)
				pb_log_error("%s", err);
			free(ctx.patterns);
			mp_watchdog_stop(ctx.wd);
			MPI_Finalize();
			return PB_EXIT_USAGE;
		}
	}
	mp_watchdog_arm_startup(ctx.wd, "the start-up", mp_startup_ns(&p));
	rc = mp_run(&ctx, t, argc, argv);
	mp_watchdog_stop(ctx.wd);
	MPI_Finalize();
	return pb_exit_code(rc);
}
