/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Who talks to whom.  Nodes come from MPI_Comm_split_type(SHARED), never
 * from rank order or host names (emulated nodes may share a host name, and
 * a cyclic rank order would silently pair ranks of one node).  Nodes are
 * numbered by their lowest world rank, so node 0 holds rank 0 (the leader
 * that writes the rows).  Pair tests: with two nodes pair i is (i-th rank
 * of node 0, i-th rank of node 1); on one node pair i is (node rank i,
 * node rank i + P).  Side A of every pair lives on node 0 and measures, so
 * all windows are read from one clock.  --pattern (core/pb_pattern.c, mp_pattern.c) pairs
 * ranks of any two nodes: side A then lives on many nodes, and their
 * windows are moved to rank 0's clock with the measured clock offsets.
 */
#define _GNU_SOURCE
#include "mp.h"

#include "pb_clock.h"
#include "pb_log.h"
#include "pb_env.h"
#include "pb_pin.h"
#include "pb_run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What each rank knows about itself; gathered for pairing and the record. */
struct mp_rank_info {
	int32_t rank, node_leader, node_id, node_rank;
	int32_t side, peer, pair_id, cpu, numa_node, pu, verified;
	char host[64];
	char binding[80];
};

int mp_agree(struct mp_ctx *ctx, int rc, const char *msg)
{
	int mine = rc ? ctx->rank : ctx->size, first;

	MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (first == ctx->size)
		return 0;
	if (first == ctx->rank && msg && msg[0])
		pb_log_error("%s", msg);
	MPI_Bcast(&rc, 1, MPI_INT, first, MPI_COMM_WORLD);
	return rc;
}

/* Node ids and node ranks of every rank (infos[size]). */
static int mp_world_nodes(struct mp_ctx *ctx, struct mp_rank_info *infos)
{
	struct mp_rank_info me = { .rank = ctx->rank, .node_rank = ctx->node_rank, .peer = -1,
				   .pair_id = -1, .cpu = -1, .numa_node = -1 };
	int nodes = 0;

	MPI_Allreduce(&ctx->rank, &me.node_leader, 1, MPI_INT, MPI_MIN, ctx->node_comm);
	snprintf(me.host, sizeof(me.host), "%s", ctx->host);
	MPI_Allgather(&me, sizeof(me), MPI_BYTE, infos, sizeof(me), MPI_BYTE, MPI_COMM_WORLD);
	/* Node ids in order of their leaders' world ranks. */
	for (int r = 0; r < ctx->size; r++) {
		if (infos[r].node_leader != r)
			continue;
		for (int q = 0; q < ctx->size; q++) {
			if (infos[q].node_leader == r)
				infos[q].node_id = nodes;
		}
		nodes++;
	}
	ctx->n_nodes = nodes;
	ctx->node_id = infos[ctx->rank].node_id;
	ctx->cross_node = nodes > 1;
	return 0;
}

/* World rank of the node rank nr on node; -1 if none. */
static int mp_world_rank_of(const struct mp_ctx *ctx, const struct mp_rank_info *infos, int node,
			    int nr)
{
	for (int r = 0; r < ctx->size; r++) {
		if (infos[r].node_id == node && infos[r].node_rank == nr)
			return r;
	}
	return -1;
}

int mp_world_patterns(struct mp_ctx *ctx, const char *text, char *err, size_t len)
{
	char *copy = strdup(text), *save = NULL, *tok;
	int n = 1, rc = 0;

	for (const char *c = text; *c; c++)
		n += *c == '/';
	ctx->patterns = calloc((size_t)n, sizeof(*ctx->patterns));
	if (!copy || !ctx->patterns) {
		free(copy);
		snprintf(err, len, "out of memory for --pattern");
		return -ENOMEM;
	}
	ctx->n_patterns = 0;
	for (tok = strtok_r(copy, "/", &save); tok && !rc; tok = strtok_r(NULL, "/", &save))
		rc = pb_pattern_parse(tok, &ctx->patterns[ctx->n_patterns++], err, len);
	if (!rc && ctx->n_patterns != n) {
		snprintf(err, len, "--pattern '%.200s': an empty pattern between '/'", text);
		rc = -EINVAL;
	}
	free(copy);
	return rc;
}

/* Resolve every pattern's rounds against the job's node count (a scan's come from it). */
static int mp_world_rounds(struct mp_ctx *ctx, char *err, size_t len)
{
	ctx->n_rounds = 0;
	for (int i = 0; i < ctx->n_patterns; i++) {
		int n = pb_pattern_rounds(&ctx->patterns[i], ctx->n_nodes, err, len);

		if (n < 0)
			return n;
		ctx->n_rounds += n;
	}
	return 0;
}

struct pb_pattern *mp_world_round(struct mp_ctx *ctx, int idx)
{
	for (int i = 0; i < ctx->n_patterns; i++) {
		struct pb_pattern *p = &ctx->patterns[i];

		if (idx < p->n_rounds) {
			pb_pattern_round(p, idx);
			return p;
		}
		idx -= p->n_rounds;
	}
	return NULL;
}

/* Pairs of a --pattern: the same number of ranks on every node, node rank = slot (mp_pattern.c). */
static int mp_world_pattern_pairs(struct mp_ctx *ctx, const struct mp_test *t,
				  struct mp_rank_info *infos, char *err, size_t errlen)
{
	int *count = calloc((size_t)ctx->n_nodes, sizeof(int));
	struct mp_pattern_rank *ranks = calloc((size_t)ctx->size, sizeof(*ranks));
	int n = -ENOMEM;

	if (!count || !ranks) {
		snprintf(err, errlen, "out of memory for the pairing");
		goto out;
	}
	for (int r = 0; r < ctx->size; r++)
		count[infos[r].node_id]++;
	for (int i = 1; i < ctx->n_nodes; i++) {
		if (count[i] != count[0]) {
			snprintf(err, errlen,
				 "--pattern %.200s needs as many ranks on every node; node 0 (%s) has %d, node %d has %d (use --map-by node, -npernode or srun --ntasks-per-node)",
				 ctx->pattern->name, infos[0].host, count[0], i, count[i]);
			n = -EINVAL;
			goto out;
		}
	}
	for (int r = 0; r < ctx->size; r++)
		ranks[r] = (struct mp_pattern_rank){ .node = infos[r].node_id, .node_rank = infos[r].node_rank };
	n = mp_pattern_assign(ctx->pattern, ctx->n_nodes, count[0], ranks, ctx->size, err, errlen);
	if (n < 0)
		goto out;
	for (int r = 0; r < ctx->size; r++) {
		if (ranks[r].side == MP_SIDE_NONE)
			continue;
		infos[r].side = ranks[r].side;
		infos[r].peer = ranks[r].peer;
		infos[r].pair_id = ranks[r].pair_id;
	}
	(void)t;
	ctx->pairs = (unsigned)n;
out:
	free(count);
	free(ranks);
	return n < 0 ? n : 0;
}

static int mp_world_pairs(struct mp_ctx *ctx, const struct mp_test *t, struct mp_rank_info *infos,
			  bool pairs_given, char *err, size_t errlen)
{
	int count[2] = { 0, 0 };

	ctx->peer = -1;
	ctx->side = MP_SIDE_NONE;
	if (t->kind == MP_KIND_ALL) {
		if (pairs_given && 2 * ctx->p->c.pairs != (uint64_t)ctx->size) {
			snprintf(err, errlen,
				 "--test %s uses every rank; --pairs %llu means %llu ranks but the job has %d (drop --pairs or start 2 x pairs ranks)",
				 t->info.name, (unsigned long long)ctx->p->c.pairs,
				 2 * (unsigned long long)ctx->p->c.pairs, ctx->size);
			return -EINVAL;
		}
		ctx->pairs = (unsigned)ctx->size;
		ctx->pair_id = (unsigned)ctx->rank;
		return 0;
	}
	for (int r = 0; r < ctx->size; r++) {
		infos[r].side = MP_SIDE_NONE;
		infos[r].peer = infos[r].pair_id = -1;
	}
	if (ctx->pattern) {
		int rc = mp_world_pattern_pairs(ctx, t, infos, err, errlen);

		if (rc)
			return rc;
		ctx->side = infos[ctx->rank].side;
		ctx->peer = infos[ctx->rank].peer;
		ctx->pair_id = infos[ctx->rank].pair_id < 0 ? 0 : (unsigned)infos[ctx->rank].pair_id;
		/* Pattern rows: the peer column is the peer's host (node), nothing else. */
		snprintf(ctx->peer_label, sizeof(ctx->peer_label), "%.63s",
			 ctx->peer >= 0 ? infos[ctx->peer].host : "");
		return 0;
	}
	if (ctx->size % 2) {
		snprintf(err, errlen,
			 "--test %s pairs ranks and needs an even number of ranks; the job has %d (start 2 x pairs ranks, e.g. mpirun -np 2)",
			 t->info.name, ctx->size);
		return -EINVAL;
	}
	unsigned pairs = (unsigned)ctx->size / 2;

	if (pairs_given && ctx->p->c.pairs != pairs) {
		snprintf(err, errlen, "--pairs %llu needs %llu ranks but the job has %d",
			 (unsigned long long)ctx->p->c.pairs, 2 * (unsigned long long)ctx->p->c.pairs,
			 ctx->size);
		return -EINVAL;
	}
	if (ctx->n_nodes > 2) {
		snprintf(err, errlen,
			 "--test %s pairs two nodes but the ranks are on %d nodes (use -H a,b, or --pattern NAME to say who talks to whom)",
			 t->info.name, ctx->n_nodes);
		return -EINVAL;
	}
	for (int r = 0; r < ctx->size; r++)
		count[infos[r].node_id]++;
	if (ctx->n_nodes == 2 && count[0] != count[1]) {
		snprintf(err, errlen,
			 "--test %s across two nodes needs as many ranks on each node; node 0 (%s) has %d, node 1 has %d (use --map-by node or -npernode)",
			 t->info.name, infos[0].host, count[0], count[1]);
		return -EINVAL;
	}
	for (unsigned i = 0; i < pairs; i++) {
		int a, b;

		if (ctx->n_nodes == 2) {
			a = mp_world_rank_of(ctx, infos, 0, (int)i);
			b = mp_world_rank_of(ctx, infos, 1, (int)i);
		} else {
			a = mp_world_rank_of(ctx, infos, 0, (int)i);
			b = mp_world_rank_of(ctx, infos, 0, (int)(i + pairs));
		}
		infos[a].side = MP_SIDE_A;
		infos[b].side = MP_SIDE_B;
		infos[a].peer = b;
		infos[b].peer = a;
		infos[a].pair_id = infos[b].pair_id = (int)i;
	}
	ctx->pairs = pairs;
	ctx->side = infos[ctx->rank].side;
	ctx->peer = infos[ctx->rank].peer;
	ctx->pair_id = (unsigned)infos[ctx->rank].pair_id;
	snprintf(ctx->peer_label, sizeof(ctx->peer_label), "%.63s:rank%d", infos[ctx->peer].host,
		 ctx->peer);
	return 0;
}

/*
 * Node leader creates the segment, broadcasts its id; everyone attaches and
 * joins.  The leader marks it IPC_RMID at once, before anyone else attached:
 * Linux lets processes attach a segment marked for removal by id while it is
 * still attached somewhere (the leader holds it until teardown), and the
 * kernel frees it when the last process detaches or dies.  So no exit path
 * (Ctrl-C, a crashed rank, the watchdog, kill -9 of the leader) can leave it
 * behind between the shmget and the last attach.  The shmget .. IPC_RMID window
 * itself is not the leader's: a helper process of its own session makes the
 * segment and holds it until the leader attached or died
 * (shm_sync_create_detached), so not even a SIGKILL of the leader there (mpirun
 * sends one a second after a Ctrl-C; another rank's watchdog ends the job so)
 * leaves it.
 */
static int mp_world_shm(struct mp_ctx *ctx, char *err, size_t errlen)
{
	int id = -1, rc = 0;

	if (ctx->node_rank == 0) {
		/* Made by a helper process: this rank may die at any instant (issue 37). */
		rc = shm_sync_create_detached((unsigned)ctx->node_size, 64, sizeof(struct mp_shared),
					      &ctx->shm);
		if (rc)
			snprintf(err, errlen, "shm_sync_create for %d ranks on %s: %s", ctx->node_size,
				 ctx->host, strerror(-rc));
		else
			id = shm_sync_id(ctx->shm);
	}
	MPI_Bcast(&id, 1, MPI_INT, 0, ctx->node_comm);
	if (id < 0)
		return rc ? rc : -EIO;
	if (ctx->node_rank != 0) {
		rc = shm_sync_attach(id, &ctx->shm);
		if (rc) {
			snprintf(err, errlen, "shm_sync_attach(%d) on %s: %s", id, ctx->host,
				 strerror(-rc));
			ctx->shm = NULL;
		}
	}
	if (!rc) {
		rc = shm_sync_join(ctx->shm, (unsigned)ctx->node_rank);
		if (rc)
			snprintf(err, errlen, "shm_sync_join(%d): %s", ctx->node_rank, strerror(-rc));
	}
	if (!rc && ctx->node_rank == 0) {
		rc = shm_sync_wait_joined(ctx->shm, ctx->startup_ns); /* ranks start apart */
		if (rc)
			snprintf(err, errlen, "not every rank of %s attached the shm segment: %s",
				 ctx->host, strerror(-rc));
	}
	if (!rc)
		ctx->shared = shm_sync_extra(ctx->shm);
	return rc;
}

static int mp_world_plan(struct mp_ctx *ctx, hwloc_topology_t topo, int *pu, char *err,
			 size_t errlen)
{
	struct pb_pin_request req;
	unsigned list[PB_PIN_MAX];
	struct pb_pin_plan *plan = malloc(sizeof(*plan));
	int rc;

	if (!plan)
		return -ENOMEM;
	rc = pb_run_pin_request(&ctx->p->c, (unsigned)ctx->node_size, list, &req, err, errlen);
	if (!rc)
		rc = pb_pin_plan_make(topo, &req, plan, err, errlen);
	if (!rc) {
		*pu = plan->pu[ctx->node_rank];
		if (plan->note[0] && ctx->node_rank == 0)
			pb_log_info("placement on %s: %s", ctx->host, plan->note);
	}
	free(plan);
	return rc;
}

/*
 * Pinning.  verify: when the launcher already bound this rank (its binding
 * is narrower than the machine), keep and record it; otherwise apply --pin.
 * override: always apply --pin.
 */
static int mp_world_pin(struct mp_ctx *ctx, char *err, size_t errlen)
{
	hwloc_topology_t topo;
	struct pb_pin_report rep;
	hwloc_bitmap_t cur;
	int rc = pb_pin_topology_load(&topo, false), pu = -1;
	bool launcher_bound = false;

	if (rc) {
		snprintf(err, errlen, "hwloc topology: %s", strerror(-rc));
		return rc;
	}
	cur = hwloc_bitmap_alloc();
	if (cur && hwloc_get_cpubind(topo, cur, HWLOC_CPUBIND_PROCESS) == 0 &&
	    !hwloc_bitmap_isincluded(hwloc_topology_get_allowed_cpuset(topo), cur))
		launcher_bound = true;
	if (launcher_bound && ctx->p->bind_mode == MP_BIND_VERIFY) {
		char set[64];

		/* The launcher's binding wins, but a --pin-list that could not be
		 * applied is still an error, not silently ignored. */
		if (ctx->p->c.pin == PB_PIN_LIST)
			rc = mp_world_plan(ctx, topo, &pu, err, errlen);
		hwloc_bitmap_list_snprintf(set, sizeof(set), cur);
		snprintf(ctx->binding, sizeof(ctx->binding), "launcher {%s}", set);
		if (!rc)
			rc = pb_pin_apply(topo, -1, &rep, err, errlen);
	} else if (ctx->p->c.pin == PB_PIN_NONE) {
		snprintf(ctx->binding, sizeof(ctx->binding), "none");
		rc = pb_pin_apply(topo, -1, &rep, err, errlen);
	} else {
		rc = mp_world_plan(ctx, topo, &pu, err, errlen);
		if (!rc)
			rc = pb_pin_apply(topo, pu, &rep, err, errlen);
		snprintf(ctx->binding, sizeof(ctx->binding), "pairbench PU %d%s", pu,
			 launcher_bound ? " (launcher binding overridden)" : "");
	}
	ctx->node_cpus = pb_pin_pu_count(topo);
	if (!rc) {
		ctx->cpu = rep.cpu;
		ctx->numa_node = rep.numa_node;
		ctx->pu = rep.pu_bound;
		ctx->pin_verified = rep.verified;
	}
	hwloc_bitmap_free(cur);
	hwloc_topology_destroy(topo);
	return rc;
}

/*
 * Clock offsets of every rank against rank 0 (collectives and halo across
 * nodes publish windows from every rank).  Rank 0 reads t0, asks, the rank
 * answers its clock tr, rank 0 reads t1: offset = tr - (t0 + t1) / 2, the
 * round with the smallest round trip wins; its half round trip bounds the
 * error.  On one node every offset is 0 (one clock).
 */
static void mp_world_offsets(struct mp_ctx *ctx, const struct mp_rank_info *infos)
{
	const int rounds = 20;

	if (ctx->rank == 0)
		ctx->clock_offset_ns = calloc((size_t)ctx->size, sizeof(int64_t));
	if (!ctx->cross_node)
		return;
	for (int r = 1; r < ctx->size; r++) {
		if (infos[r].node_id == 0)
			continue;
		if (ctx->rank == 0) {
			uint64_t best = UINT64_MAX, tr;
			int64_t off = 0;

			for (int i = 0; i < rounds; i++) {
				uint64_t t0 = pb_clock_now_ns();

				MPI_Send(&t0, 1, MPI_UINT64_T, r, MP_TAG_SYNC, MPI_COMM_WORLD);
				MPI_Recv(&tr, 1, MPI_UINT64_T, r, MP_TAG_SYNC, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				uint64_t t1 = pb_clock_now_ns();

				if (t1 - t0 < best) {
					best = t1 - t0;
					off = (int64_t)tr - (int64_t)(t0 + (t1 - t0) / 2);
				}
			}
			if (ctx->clock_offset_ns)
				ctx->clock_offset_ns[r] = off;
			if ((double)best / 2 > ctx->clock_offset_err_ns)
				ctx->clock_offset_err_ns = (double)best / 2;
		} else if (ctx->rank == r) {
			for (int i = 0; i < rounds; i++) {
				uint64_t t0, tr;

				MPI_Recv(&t0, 1, MPI_UINT64_T, 0, MP_TAG_SYNC, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				tr = pb_clock_now_ns();
				MPI_Send(&tr, 1, MPI_UINT64_T, 0, MP_TAG_SYNC, MPI_COMM_WORLD);
			}
		}
	}
}

int mp_world_setup(struct mp_ctx *ctx, const struct mp_test *t)
{
	char err[512] = "";
	struct mp_rank_info *infos;
	int rc, len = 0;

	MPI_Comm_rank(MPI_COMM_WORLD, &ctx->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ctx->size);
	MPI_Get_processor_name(ctx->host, &len);
	ctx->host[sizeof(ctx->host) - 1] = '\0';
	ctx->cpu = ctx->numa_node = -1;
	ctx->timeout_ns = (uint64_t)(ctx->p->c.timeout_s * 1e9);
	ctx->startup_ns = mp_startup_ns(ctx->p);
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &ctx->node_comm);
	MPI_Comm_rank(ctx->node_comm, &ctx->node_rank);
	MPI_Comm_size(ctx->node_comm, &ctx->node_size);
	infos = calloc((size_t)ctx->size, sizeof(*infos));
	rc = infos ? 0 : -ENOMEM;
	if (mp_agree(ctx, rc, "out of memory for the rank table"))
		return rc ? rc : -ENOMEM;
	mp_world_nodes(ctx, infos);
	ctx->infos = infos;
	rc = mp_world_rounds(ctx, err, sizeof(err));
	if (mp_agree(ctx, rc, err))
		return rc ? rc : -EINVAL;
	ctx->pattern = ctx->n_patterns ? mp_world_round(ctx, 0) : NULL;
	rc = mp_world_pairs(ctx, t, infos, ctx->pairs_given, err, sizeof(err));
	rc = mp_agree(ctx, rc, err);
	if (!rc) {
		rc = mp_world_shm(ctx, err, sizeof(err));
		rc = mp_agree(ctx, rc, err);
	}
	if (!rc) {
		rc = mp_world_pin(ctx, err, sizeof(err));
		rc = mp_agree(ctx, rc, err);
	}
	/* Pattern pairs measure on many nodes: their windows need the offsets too. */
	if (!rc && (t->kind == MP_KIND_ALL || ctx->n_patterns))
		mp_world_offsets(ctx, infos);
	return rc;
}

int mp_world_pair(struct mp_ctx *ctx, const struct mp_test *t, const struct pb_pattern *pat)
{
	char err[512] = "";
	int rc;

	ctx->pattern = pat;
	rc = mp_world_pairs(ctx, t, ctx->infos, ctx->pairs_given, err, sizeof(err));
	return mp_agree(ctx, rc, err);
}

static void mp_print_pairing(const struct mp_ctx *ctx, const struct mp_test *t,
			     const struct mp_rank_info *in)
{
	for (int r = 0; r < ctx->size; r++) {
		const struct mp_rank_info *a = &in[r];

		if (t->kind == MP_KIND_ALL) {
			pb_log_info("rank %d: node %d (%s), cpu %d, binding %s", r, a->node_id, a->host,
				    a->cpu, a->binding);
		} else if (a->side == MP_SIDE_A) {
			const struct mp_rank_info *b = &in[a->peer];

			pb_log_info("pair %d: rank %d (node %d %s, cpu %d) <-> rank %d (node %d %s, cpu %d)%s",
				    a->pair_id, r, a->node_id, a->host, a->cpu, a->peer, b->node_id,
				    b->host, b->cpu, a->node_id != b->node_id ? " cross-node" : " intra-node");
		}
	}
}

/* "placement": every rank (struct pb_place) plus its node, binding, side, peer, clock offset. */
static void mp_json_ranks(FILE *f, const struct mp_ctx *ctx, const struct mp_rank_info *in)
{
	pb_env_placement_begin(f);
	for (int r = 0; r < ctx->size; r++) {
		const struct mp_rank_info *a = &in[r];
		struct pb_place pl = {
			.pair = a->pair_id, .member = r, .pu = a->pu, .cpu = a->cpu,
			.numa_node = a->numa_node, .verified = a->verified,
			.role = a->side == MP_SIDE_A ? "A" : a->side == MP_SIDE_B ? "B" : "rank",
		};

		pb_env_place(f, &pl, r == 0);
		fprintf(f, ", \"rank\": %d, \"node\": %d, \"node_rank\": %d, \"host\": ", r,
			a->node_id, a->node_rank);
		pb_env_str(f, a->host);
		fputs(", \"binding\": ", f);
		pb_env_str(f, a->binding);
		fprintf(f, ", \"peer\": %d, \"clock_offset_ns\": %lld}", a->peer,
			ctx->clock_offset_ns ? (long long)ctx->clock_offset_ns[r] : 0LL);
	}
	pb_env_placement_end(f);
	fputs(",\n", f);
}

bool mp_time_stop(const struct mp_ctx *ctx, const struct mp_test *t)
{
	return t->kind != MP_KIND_ALL && ctx->p->timing != PB_TIMING_BLOCK;
}

uint64_t mp_sample_room(const struct mp_ctx *ctx, enum pb_window_method m, uint64_t room,
			uint64_t min)
{
	uint64_t fit = MP_GATHER_MAX_SAMPLES / (uint64_t)ctx->size;

	if (m != PB_WM_TARGET || room <= fit)
		return room;
	return fit > min ? fit : min;
}

static int mp_write_env(struct mp_ctx *ctx, const struct mp_test *t,
			const struct mp_rank_info *in, const struct pb_clock_info *ci,
			int argc, char **argv)
{
	char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	int len = 0, major = 0, minor = 0;
	FILE *f = ctx->env_json;     /* opened by main() before the run: a bad path fails early */

	MPI_Get_library_version(lib, &len);
	MPI_Get_version(&major, &minor);
	pb_env_head(f, "pairbench-mpi", "mpi", t->info.name, ctx->host);
	fprintf(f, "  \"mpi_library\": ");
	pb_env_str(f, lib);
	fprintf(f, ",\n  \"mpi_standard\": \"%d.%d\", \"world_size\": %d, \"nodes\": %d, \"pairs\": %u,\n",
		major, minor, ctx->size, ctx->n_nodes, ctx->pairs);
	fprintf(f, "  \"pairing\": \"%s\",\n",
		t->kind == MP_KIND_ALL ? "all ranks" : ctx->pattern ? "pattern" :
		ctx->n_nodes == 2 ? "cross-node" : "intra-node");
	if (ctx->p->pattern) {
		/* The placement below is the first round's pairing. */
		fputs("  \"pattern\": ", f);
		pb_env_str(f, ctx->p->pattern);
		fputs(",\n", f);
	}
	pb_env_clock(f, ci, ctx->clock_offset_err_ns);
	struct pb_window_plan w;

	pb_window_plan(&ctx->p->c, &t->info, mp_time_stop(ctx, t), &w);
	w.iterations = mp_sample_room(ctx, w.method, w.iterations, w.min_iterations);
	pb_env_timing(f, &w, ctx->p->c.warmup);
	/* buffers: the layout the rows carry ("" = the test has no choice), docs/mpi.md. */
	fprintf(f, "  \"buffers\": ");
	pb_env_str(f, t->info.buffers ? pb_buffers_names[ctx->p->buffers] : NULL);
	fprintf(f, ",\n  \"options\": {\"window\": %llu, \"buffers\": \"%s\", \"ack_each_window\": %s, \"back_to_back\": %s, \"root_rotate\": %s, \"halo_neighbours\": %llu, \"bind_mode\": \"%s\", \"timeout_s\": %g},\n",
		(unsigned long long)ctx->p->window, pb_buffers_names[ctx->p->buffers],
		ctx->p->ack_each_window ? "true" : "false", ctx->p->back_to_back ? "true" : "false",
		ctx->p->root_rotate ? "true" : "false", (unsigned long long)ctx->p->halo_neighbours,
		ctx->p->bind_mode == MP_BIND_VERIFY ? "verify" : "override", ctx->p->c.timeout_s);
	mp_json_ranks(f, ctx, in);
	fprintf(f, "  \"argv\": [");
	for (int i = 0; i < argc; i++) {
		pb_env_str(f, argv[i]);
		fputs(i + 1 < argc ? ", " : "", f);
	}
	fprintf(f, "]\n}\n");
	ctx->env_json = NULL;
	if (ferror(f) | fclose(f)) {
		pb_log_error("--env-json %s: %s", ctx->p->c.env_json, strerror(errno));
		return -EIO;
	}
	return 0;
}

int mp_world_report(struct mp_ctx *ctx, const struct mp_test *t, int argc, char **argv)
{
	struct mp_rank_info me = { .rank = ctx->rank, .node_id = ctx->node_id,
				   .node_rank = ctx->node_rank, .side = ctx->side, .peer = ctx->peer,
				   .pair_id = t->kind == MP_KIND_ALL || ctx->side == MP_SIDE_NONE ?
					      -1 : (int)ctx->pair_id,
				   .cpu = ctx->cpu, .numa_node = ctx->numa_node, .pu = ctx->pu,
				   .verified = ctx->pin_verified };
	struct mp_rank_info *in = NULL;
	int rc = 0;

	snprintf(me.host, sizeof(me.host), "%s", ctx->host);
	snprintf(me.binding, sizeof(me.binding), "%s", ctx->binding);
	if (ctx->rank == 0) {
		in = calloc((size_t)ctx->size, sizeof(*in));
		if (!in)
			rc = -ENOMEM;
	}
	if (mp_agree(ctx, rc, "out of memory for the rank table"))
		return -ENOMEM;
	MPI_Gather(&me, sizeof(me), MPI_BYTE, in, sizeof(me), MPI_BYTE, 0, MPI_COMM_WORLD);
	if (ctx->rank == 0) {
		struct pb_clock_info ci = { 0 };

		mp_print_pairing(ctx, t, in);
		/* Rank 0's clock stands for all: the ranks of a run share a kernel
		 * configuration (and, across nodes, the offset error is recorded). */
		rc = pb_run_clock(&ctx->p->c, &ci);
		if (!rc && ctx->env_json)
			rc = mp_write_env(ctx, t, in, &ci, argc, argv);
		free(in);
	}
	return mp_agree(ctx, rc, "");
}

void mp_world_teardown(struct mp_ctx *ctx)
{
	shm_sync_detach(ctx->shm);
	ctx->shm = NULL;
	free(ctx->clock_offset_ns);
	ctx->clock_offset_ns = NULL;
	free(ctx->infos);
	ctx->infos = NULL;
	free(ctx->patterns);
	ctx->patterns = NULL;
	if (ctx->node_comm != MPI_COMM_NULL)
		MPI_Comm_free(&ctx->node_comm);
}

void *mp_buf_alloc(uint64_t bytes)
{
	void *p = NULL;
	size_t n = bytes ? (size_t)bytes : 1;

	if (posix_memalign(&p, 4096, n))
		return NULL;
	memset(p, 0xa5, n);
	return p;
}

int mp_count(uint64_t bytes, int *count)
{
	if (bytes > (uint64_t)INT32_MAX)
		return -E2BIG;
	*count = (int)bytes;
	return 0;
}
