/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The victim probe of --pattern incast|fanout (vb_probe.h).  One timed iteration = one
 * iteration of the probe's latency test (write_lat or send_lat: VB_PROBE_BYTES there and
 * back, sample = half the round trip), the test's own loop (vb_lat.h), twice per point:
 *
 *   idle    in the point's quiet moment: after one all-nodes meeting (every node warmed
 *           up, nobody moves data) the probe runs for the point's window while every other
 *           worker of every node waits in the cross-node start (vb_xstart.c), which
 *           cannot complete before the probe's own pair has finished;
 *   loaded  from the node's start barrier to the node's common deadline: the window of
 *           every flow of the pattern (the same release + --bw-seconds).
 *
 * The probe is no pair of its node's engine (its node's rows and aggregates are those of
 * the pattern's flows, unchanged): its worker follows the engine's protocol itself, with
 * the same node barriers per point (quiet, start, collect), and writes its own row.
 */
#include "vb_probe.h"

#include "pb_clock.h"
#include "pb_log.h"
#include "pb_stats.h"
#include "pb_window.h"
#include "vb_qp.h"
#include "vb_xsmath.h"
#include "vb_xstart.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int vb_probe_place(struct vb_params *p, const struct pb_pattern *pat, int flows, long rank)
{
	const struct pb_test_info *t = p->probe_desc ? &p->probe_desc->info : NULL;
	struct pb_window_plan wp;
	int hub, client;

	if (!p->probe)
		return 0;
	if (!t || t->kind != PB_TK_LATENCY || !t->lat_kind || strcmp(t->lat_kind, "half_rtt")) {
		pb_log_error("--probe %.64s: the victim probe is a ping-pong latency test (write_lat or send_lat)",
			     p->probe);
		return -EINVAL;
	}
	if (pat->kind != PB_PAT_INCAST && pat->kind != PB_PAT_FANOUT) {
		pb_log_error("--probe goes into the hub of incast or fanout; --pattern %s has none", pat->name);
		return -EINVAL;
	}
	pb_window_plan(&p->c, &p->test_desc->info, true, &wp);
	if (p->test_desc->info.kind != PB_TK_BANDWIDTH && p->test_desc->info.kind != PB_TK_MESSAGE_RATE) {
		pb_log_error("--probe runs during the pattern's common window: a bandwidth or message-rate test, not --test %s",
			     p->test_desc->info.name);
		return -EINVAL;
	}
	if (wp.method != PB_WM_WINDOW) {
		pb_log_error("--probe runs during the pattern's common window (--bw-seconds): not with -n or -D");
		return -EINVAL;
	}
	hub = pat->arg;
	client = hub == 0 ? 1 : 0;  /* the lowest node other than the hub: a sender of incast */
	p->probe_flows = flows;
	if (rank != hub && rank != client)
		return 0;
	p->probe_here = true;
	p->probe_client = rank == client;
	/* port --port + R: every flow's server listens on --port + its slot < R */
	p->pat[p->pairs] = (struct vb_pat_member){
		.flow = (unsigned)flows, .port_off = (unsigned)p->c.pairs, .slot = (int)p->c.pairs,
		.peer_node = rank == hub ? client : hub, .peer_slot = (int)p->c.pairs,
	};
	pb_log_info("--probe %s: node %ld runs the victim probe's %s (flow %d, port offset %llu)", t->name, rank,
		    p->probe_client ? "client" : "server", flows, (unsigned long long)p->c.pairs);
	return 0;
}

void vb_probe_params(struct vb_params *pp)
{
	pp->test_desc = pp->probe_desc;
	pp->c.test = pp->probe_desc->info.name;
	pp->bidir = false;
	pp->pat_target = false;  /* its server receives no window: the probe's row is its client's */
	pp->variant = NULL;
}

int vb_probe_quiet(struct vb_worker *w)
{
	uint64_t start = 0;
	int rc = w->p->probe ? vb_xstart_rounds(w, &start) : 0;

	return rc ? rc : vb_xstart_before(w);
}

/* What the probe keeps across its points: both runs' samples (allocated before any loop). */
struct vb_probe_bufs {
	uint64_t room;
	uint64_t *idle_ns, *load_ns;
	double *us;
};

/* A node barrier of the engine's protocol (the same count per point as its workers). */
static int vb_probe_barrier(struct vb_worker *w, const char *what, uint64_t *release_ns)
{
	int rc = shm_sync_barrier(w->sync, w->member, w->timeout_ns, NULL);

	if (rc && !w->error[0])
		snprintf(w->error, sizeof(w->error), "victim probe: %s barrier: %s", what, strerror(-rc));
	if (!rc && release_ns)
		*release_ns = shm_sync_release_ns(w->sync);
	return rc;
}

/* The idle twin: after one all-nodes meeting, the probe for the window's length; then the
 * cross-node start (every other worker waits in it until this pair joins). */
static int vb_probe_idle(struct vb_worker *w, const struct pb_test_ops *ops, double window_s, struct pb_timed *t)
{
	uint64_t start = 0;
	int rc = vb_xstart_rounds(w, &start);

	if (rc)
		return rc;
	t->end_by_ns = pb_clock_now_ns() + (uint64_t)(window_s * 1e9);
	if ((rc = ops->timed(w, t)))
		return rc;
	return vb_xstart_before(w);
}

/* One point's protocol; the client's samples in t (loaded) and idle.  0 or -errno. */
static int vb_probe_point(struct vb_worker *w, const struct pb_engine_params *ep, uint64_t size,
			  struct pb_timed *idle, struct pb_timed *load)
{
	const struct pb_test_ops *ops = w->role->ops;
	uint64_t release = 0;
	int rc;

	(void)size;
	rc = ops->prepare ? ops->prepare(w, VB_PROBE_BYTES) : 0;
	if (!rc && ops->warmup)
		rc = ops->warmup(w, VB_PROBE_BYTES, ep->warmup);
	if (!rc)
		rc = vb_probe_barrier(w, "quiet", NULL);
	if (!rc)
		rc = vb_probe_idle(w, ops, ep->duration_s, idle);
	if (!rc)
		rc = vb_probe_barrier(w, "start", &release);
	if (!rc) {
		load->end_by_ns = release + (uint64_t)(ep->duration_s * 1e9);
		w->xs_timed = ops->timed;
		rc = vb_xstart_timed(w, load);  /* the client: its start offset, cross_node_start */
	}
	if (rc && !w->error[0])
		snprintf(w->error, sizeof(w->error), "victim probe: %s", strerror(-rc));
	if (rc && rc != -ECANCELED)
		shm_sync_abort(w->sync, (int)w->member, w->error);
	/* the collect barrier: every worker of the node, after a failure too (it returns at once) */
	int crc = vb_probe_barrier(w, "collect", NULL);

	return rc ? rc : crc;
}

/* Statistics (µs) of n samples (ns); NAN percentiles where n cannot support them. */
static int vb_probe_stats(const uint64_t *ns, uint64_t n, double *us, struct pb_stats *st)
{
	for (uint64_t i = 0; i < n; i++)
		us[i] = (double)ns[i] / 1e3;
	return pb_stats_compute(us, n, st);
}

static double vb_probe_ratio(double loaded, double idle)
{
	return isnan(loaded) || isnan(idle) || idle <= 0 ? NAN : loaded / idle;
}

/* The point's row: the loaded probe as a pair (pb_result_rows), scope probe, the idle twin's columns. */
static int vb_probe_row(struct vb_worker *w, const struct pb_engine_params *ep, uint64_t size, int status,
			const struct pb_timed *idle, const struct pb_timed *load, struct vb_probe_bufs *b, FILE *out)
{
	const struct vb_params *p = w->p;
	struct pb_point_desc pt = {
		.layer = ep->layer, .test = ep->test, .variant = ep->variant, .lat_kind = p->probe_desc->info.lat_kind,
		.msg_size_bytes = size, .pairs = (unsigned)p->probe_flows, .buffers = ep->buffers,
		.pattern = ep->pattern, .qps = ep->qps, .window_method = pb_window_method_names[ep->method],
		.window_s = ep->duration_s,
	};
	struct pb_pair_result r = { .pair_id = (uint32_t)p->probe_flows, .cpu = -1, .numa_node = -1 };
	struct pb_stats st_idle;
	struct pb_row rows[2];
	int rc = status;

	snprintf(r.host, sizeof(r.host), "%s", w->host);
	snprintf(r.peer, sizeof(r.peer), "%s", p->pat[w->member].peer_name);
	if (!rc) {
		r.iterations = load->done;
		r.warmup_iterations = ep->warmup;
		r.start_ns = load->start_ns;
		r.end_ns = load->end_ns;
		snprintf(r.flags, sizeof(r.flags), "%s", load->flags);
		rc = vb_probe_stats(load->samples_ns, load->done, b->us, &r.lat_us);
		if (!rc)
			rc = vb_probe_stats(idle->samples_ns, idle->done, b->us, &st_idle);
		if (rc)
			snprintf(w->error, sizeof(w->error), "victim probe: no latency samples (loaded %llu, idle %llu)",
				 (unsigned long long)load->done, (unsigned long long)idle->done);
		r.has_lat = !rc;
	}
	if (rc)
		pb_result_fail(&r, rc, "%s", w->error[0] ? w->error : strerror(-rc));
	pb_result_rows(&pt, &r, 1, NULL, 0, rows);
	pb_row_set_str(&rows[0], PB_COL_scope, "probe");
	pb_row_set_str(&rows[0], PB_COL_probe_test, p->probe_desc->info.name);
	if (!rc) {
		pb_row_set_u64(&rows[0], PB_COL_idle_iterations, idle->done);
		pb_row_set_double(&rows[0], PB_COL_idle_lat_us_p50, st_idle.p50);
		pb_row_set_double(&rows[0], PB_COL_idle_lat_us_p99, st_idle.p99);
		pb_row_set_double(&rows[0], PB_COL_idle_lat_us_p999, st_idle.p999);
		pb_row_set_double(&rows[0], PB_COL_lat_inflation_p50, vb_probe_ratio(r.lat_us.p50, st_idle.p50));
		pb_row_set_double(&rows[0], PB_COL_lat_inflation_p99, vb_probe_ratio(r.lat_us.p99, st_idle.p99));
		pb_row_set_double(&rows[0], PB_COL_lat_inflation_p999, vb_probe_ratio(r.lat_us.p999, st_idle.p999));
	}
	if (ep->flags && ep->flags[0])
		pb_row_add_flag(&rows[0], ep->flags);
	if (out && (pb_csv_write_row(out, &rows[0]) || fflush(out)))
		return -EIO;
	return rc;
}

int vb_probe_run(struct vb_worker *w, const struct pb_engine_params *ep, FILE *out)
{
	struct vb_probe_bufs b = { .room = PB_TARGET_MAX_SAMPLES };
	bool client = w->side == VB_CLIENT;
	int rc = 0, wrc;
	size_t i;

	b.idle_ns = calloc(b.room, sizeof(*b.idle_ns));
	b.load_ns = calloc(b.room, sizeof(*b.load_ns));
	b.us = calloc(b.room, sizeof(*b.us));
	if (!b.idle_ns || !b.load_ns || !b.us) {
		snprintf(w->error, sizeof(w->error), "victim probe: no memory for %llu samples",
			 (unsigned long long)b.room);
		shm_sync_abort(w->sync, (int)w->member, w->error);
		rc = -ENOMEM;
	}
	for (i = 0; !rc && i < ep->n_sizes; i++) {
		struct pb_timed idle = { .msg_size_bytes = VB_PROBE_BYTES, .iterations = b.room, .samples_ns = b.idle_ns };
		struct pb_timed load = { .msg_size_bytes = VB_PROBE_BYTES, .iterations = b.room, .samples_ns = b.load_ns };

		w->error[0] = '\0';
		rc = vb_probe_point(w, ep, ep->sizes[i], &idle, &load);
		if (client && (wrc = vb_probe_row(w, ep, ep->sizes[i], rc, &idle, &load, &b, out)) && !rc)
			rc = wrc;
	}
	/* the sizes after a failure: error rows saying so (a failed point already has its row) */
	for (; rc && client && i < ep->n_sizes; i++) {
		char why[sizeof(w->error)];

		snprintf(why, sizeof(why), "%s", w->error);
		snprintf(w->error, sizeof(w->error), "not run: earlier failure (%.200s)", why);
		vb_probe_row(w, ep, ep->sizes[i], -ECANCELED, NULL, NULL, &b, out);
		snprintf(w->error, sizeof(w->error), "%s", why);
	}
	free(b.idle_ns);
	free(b.load_ns);
	free(b.us);
	return rc;
}
