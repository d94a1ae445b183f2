/* SPDX-License-Identifier: BSD-3-Clause */
#include "pb_engine.h"

#include "pb_clock.h"
#include "pb_common.h"
#include "pb_flags.h"
#include "pb_log.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct pb_engine_bufs {
	uint64_t *samples_ns;
	double *samples_us;
	struct pb_hist *hist;
	struct pb_hist *merged;
	struct pb_pair_result *res;
	struct pb_row *rows;
	/* device aggregates (labels with >= 2 devices): one device's pairs, samples, rows */
	struct pb_pair_result *sub_res;
	double *sub_pooled, *pool_copy;
	struct pb_row *sub_rows;
};

unsigned pb_engine_device_groups(const struct pb_engine_params *p, unsigned *dev)
{
	unsigned n = 0;

	if (!p->labels)
		return 0;
	for (unsigned i = 0; i < p->pairs; i++) {
		const char *d = p->labels[i].device ? p->labels[i].device : "";
		unsigned j;

		for (j = 0; j < i; j++)
			if (!strcmp(d, p->labels[j].device ? p->labels[j].device : ""))
				break;
		dev[i] = j < i ? dev[j] : n++;
	}
	return n;
}

unsigned pb_engine_rows_per_point(const struct pb_engine_params *p)
{
	unsigned dev[PB_MAX_PAIRS];
	unsigned ndev = p->pairs <= PB_MAX_PAIRS ? pb_engine_device_groups(p, dev) : 0;

	return p->pairs + 1 + (ndev >= 2 ? ndev : 0);
}

static void pb_engine_label_row(struct pb_row *row, const struct pb_pair_label *l)
{
	pb_row_set_str(row, PB_COL_device, l->device);
	if (l->port)
		pb_row_set_u64(row, PB_COL_port, l->port);
	pb_row_set_str(row, PB_COL_port_addr, l->port_addr);
	pb_row_set_str(row, PB_COL_peer_device, l->peer_device);
}

/*
 * Rows of device group g: pb_result_rows() on its pairs, their pooled
 * samples (pooled holds them in pair order: iterations samples for every ok
 * latency pair; if the layout does not add up, no pooled statistics) and
 * the device's capacity.  Its pair rows replace the run's, its aggregate is
 * the device row *out.
 */
static void pb_engine_device_rows(const struct pb_engine_params *p, const struct pb_point_desc *pt,
				  struct pb_engine_bufs *b, const unsigned *dev, unsigned g,
				  const double *pooled, size_t n_pooled, struct pb_row *out)
{
	const struct pb_pair_label *first = NULL;
	struct pb_point_desc dpt = *pt;
	unsigned idx[PB_MAX_PAIRS], cnt = 0;
	size_t off = 0, m = 0;
	bool same_peer = true;

	for (unsigned i = 0; i < p->pairs; i++) {
		const struct pb_pair_result *r = &b->res[i];
		size_t ns = !r->status && r->has_lat ? (size_t)r->iterations : 0;

		if (dev[i] == g) {
			idx[cnt] = i;
			b->sub_res[cnt++] = *r;
			if (pooled && off + ns <= n_pooled) {
				memcpy(b->sub_pooled + m, pooled + off, ns * sizeof(*pooled));
				m += ns;
			}
			if (!first)
				first = &p->labels[i];
			else if (!first->peer_device || !p->labels[i].peer_device ||
				 strcmp(first->peer_device, p->labels[i].peer_device))
				same_peer = false;
		}
		off += ns;
	}
	if (off != n_pooled)
		m = 0;
	if (first->link_gbit_s > 0)
		dpt.link_gbit_s = first->link_gbit_s;
	pb_result_rows(&dpt, b->sub_res, cnt, b->sub_pooled, m, b->sub_rows);
	for (unsigned k = 0; k < cnt; k++)
		b->rows[idx[k]] = b->sub_rows[k];
	*out = b->sub_rows[cnt];
	pb_row_set_str(out, PB_COL_scope, "device");
	pb_row_set_str(out, PB_COL_device, first->device);
	if (first->port)
		pb_row_set_u64(out, PB_COL_port, first->port);
	pb_row_set_str(out, PB_COL_port_addr, first->port_addr);
	if (same_peer)
		pb_row_set_str(out, PB_COL_peer_device, first->peer_device);
}

/*
 * Every row of one point into b->rows (pb_engine_rows_per_point() of them):
 * per-pair rows, the scope=all aggregate, then one aggregate per device.
 * pb_result_rows() sorts the pooled samples it gets: the device rows take
 * theirs from a copy made first.
 */
static unsigned pb_engine_rows(const struct pb_engine_params *p, const struct pb_point_desc *pt,
			       struct pb_engine_bufs *b, double *pooled_us, size_t n_pooled)
{
	unsigned dev[PB_MAX_PAIRS], n = p->pairs;
	unsigned ndev = n <= PB_MAX_PAIRS ? pb_engine_device_groups(p, dev) : 0;
	bool copy = ndev >= 2 && pooled_us && n_pooled && b->pool_copy;

	if (ndev < 2 || !b->sub_res || !b->sub_rows)
		ndev = 0;
	if (copy)
		memcpy(b->pool_copy, pooled_us, n_pooled * sizeof(*pooled_us));
	pb_result_rows(pt, b->res, n, pooled_us, n_pooled, b->rows);
	for (unsigned g = 0; g < ndev; g++)
		pb_engine_device_rows(p, pt, b, dev, g, copy ? b->pool_copy : NULL, copy ? n_pooled : 0,
				      &b->rows[n + 1 + g]);
	if (!p->labels)
		return n + 1;
	char devs[PB_CELL_MAX] = "";
	size_t len = 0;
	unsigned seen = 0;

	for (unsigned i = 0; i < n; i++) {
		pb_engine_label_row(&b->rows[i], &p->labels[i]);
		if (dev[i] == seen && len < sizeof(devs)) {  /* first pair of a device */
			len += (size_t)snprintf(devs + len, sizeof(devs) - len, "%s%s", seen ? "+" : "",
						p->labels[i].device ? p->labels[i].device : "");
			seen++;
		}
	}
	if (seen < 2)
		/* One device: the node aggregate is that device's (port, address, peer). */
		pb_engine_label_row(&b->rows[n], &p->labels[0]);
	else
		pb_row_set_str(&b->rows[n], PB_COL_device, devs);
	return n + 1 + ndev;
}

int pb_sink_write(struct pb_sink *sink, const struct pb_row *rows, unsigned n)
{
	if (sink->csv && !sink->header_done && pb_csv_write_header(sink->csv))
		return -EIO;
	if (sink->table && !sink->header_done)
		pb_result_print_table(sink->table, rows, 0, true);
	sink->header_done = true;
	if (sink->progress)
		*sink->progress = 1 + sink->rows_written;
	for (unsigned i = 0; i < n; i++) {
		if (sink->csv && pb_csv_write_row(sink->csv, &rows[i]))
			return -EIO;
		if (sink->progress)
			*sink->progress = 1 + sink->rows_written + i + 1;
	}
	if (sink->table)
		pb_result_print_table(sink->table, rows, n, false);
	sink->rows_written += n;
	return 0;
}

static void pb_engine_point(const struct pb_engine_params *p, uint64_t size,
			    struct pb_point_desc *pt)
{
	pt->layer = p->layer;
	pt->test = p->test;
	pt->variant = p->variant;
	pt->buffers = p->buffers;
	pt->lat_kind = p->lat_kind;
	pt->msg_size_bytes = size;
	pt->pairs = p->pairs;
	pt->link_gbit_s = p->link_gbit_s;
	pt->qps = p->qps;
	pt->shared_iterations = p->shared_iterations;
	pt->pattern = p->pattern;
	pt->block_timed = p->block_timed;
	pt->window_method = pb_window_method_names[p->method];
	pt->window_s = p->duration_s;
}

/* The run's flags (pb_flags_run) after each row's own: every row of every point carries them. */
static void pb_engine_flag_rows(const struct pb_engine_params *p, struct pb_row *rows, unsigned n)
{
	for (unsigned i = 0; p->flags && p->flags[0] && i < n; i++)
		pb_row_add_flag(&rows[i], p->flags);
}

/*
 * Leader: the scope=node aggregate rows of a point (pb_engine_params.node_aggregates):
 * the pairs grouped by the host that measured them, in order of first appearance.  When
 * every pair of a host measured towards one peer (a fabric scan's round: one node pair)
 * the row names that peer, so a reader gets the node pair from this row alone; a host
 * with pairs towards several peers (fan-out, all-to-all) leaves it empty.
 */
static int pb_engine_node_rows(const struct pb_engine_params *p, const struct pb_meet_ops *meet,
			       void *mctx, const struct pb_point_desc *pt, const struct pb_pair_result *res,
			       struct pb_sink *sink)
{
	unsigned n = p->pairs;
	struct pb_pair_result *sub = calloc(n, sizeof(*sub));
	struct pb_row *rows = calloc(n + 1, sizeof(*rows));
	bool *done = calloc(n, sizeof(*done));
	double *pool = NULL;
	int rc = sub && rows && done ? 0 : -ENOMEM;

	for (unsigned i = 0; !rc && i < n; i++) {
		unsigned k = 0;
		size_t n_pool = 0;
		bool one_peer = true;

		if (done[i])
			continue;
		for (unsigned j = i; !rc && j < n; j++) {
			const double *s = NULL;
			size_t ns = 0;

			if (done[j] || strcmp(res[j].host, res[i].host))
				continue;
			done[j] = true;
			sub[k++] = res[j];
			if (strcmp(res[j].peer, res[i].peer))
				one_peer = false;
			if (meet->pair_samples && !res[j].status)
				meet->pair_samples(mctx, res[j].pair_id, &s, &ns);
			if (!ns)
				continue;
			double *grown = realloc(pool, (n_pool + ns) * sizeof(*pool));

			if (!grown) {
				rc = -ENOMEM;
				break;
			}
			pool = grown;
			memcpy(pool + n_pool, s, ns * sizeof(*pool));
			n_pool += ns;
		}
		if (rc)
			break;
		pb_result_rows(pt, sub, k, pool, n_pool, rows);
		pb_row_set_str(&rows[k], PB_COL_scope, "node");
		pb_row_set_str(&rows[k], PB_COL_host, res[i].host);
		if (one_peer && res[i].peer[0])
			pb_row_set_str(&rows[k], PB_COL_peer, res[i].peer);
		pb_engine_flag_rows(p, &rows[k], 1);
		rc = pb_sink_write(sink, &rows[k], 1);
	}
	if (rc == -ENOMEM)
		pb_log_error("cannot allocate the node aggregates");
	free(pool);
	free(done);
	free(rows);
	free(sub);
	return rc;
}


/* Leader: error rows (one per pair and the aggregate) for a point that did not run. */
static int pb_engine_error_rows(const struct pb_engine_params *p, uint64_t size,
				const struct pb_engine_role *role, const char *why,
				struct pb_engine_bufs *b, struct pb_sink *sink)
{
	struct pb_point_desc pt;

	pb_engine_point(p, size, &pt);
	for (unsigned i = 0; i < p->pairs; i++) {
		memset(&b->res[i], 0, sizeof(b->res[i]));
		b->res[i].pair_id = i;
		b->res[i].cpu = b->res[i].numa_node = -1;
		snprintf(b->res[i].host, sizeof(b->res[i].host), "%s", role->host ? role->host : "");
		pb_result_fail(&b->res[i], -ECANCELED, "%s", why);
	}
	unsigned n = pb_engine_rows(p, &pt, b, NULL, 0);

	pb_engine_flag_rows(p, b->rows, n);
	return pb_sink_write(sink, b->rows, n);
}

static void pb_engine_fill_result(const struct pb_engine_params *p,
				  const struct pb_engine_role *role, const struct pb_timed *t,
				  uint64_t release_ns, int rc, struct pb_pair_result *r)
{
	memset(r, 0, sizeof(*r));
	r->pair_id = role->pair_id;
	r->cpu = role->cpu;
	r->numa_node = role->numa_node;
	r->iterations = t->done;
	r->warmup_iterations = p->warmup;
	r->window = p->window;
	r->bytes = t->bytes;
	r->messages = t->messages;
	r->start_ns = t->start_ns;
	r->end_ns = t->end_ns;
	r->release_ns = release_ns;
	r->has_bw = t->has_bw;
	r->soak = t->soak;
	snprintf(r->host, sizeof(r->host), "%s", role->host ? role->host : "");
	snprintf(r->peer, sizeof(r->peer), "%s", role->peer ? role->peer : "");
	snprintf(r->flags, sizeof(r->flags), "%s", t->flags);
	if (rc)
		pb_result_fail(r, rc, "%s", t->error[0] ? t->error : strerror(-rc));
}

/* Latency statistics of this process (µs); fills b->samples_us for publishing (not with hist). */
static int pb_engine_lat_stats(const struct pb_timed *t, bool hist, struct pb_engine_bufs *b,
			       struct pb_pair_result *r)
{
	int rc;

	if (t->block) {
		/* One mean over the block; nothing else is known (docs/methodology.md). */
		r->lat_us = (struct pb_stats){ .count = t->done, .min = NAN, .max = NAN, .stdev = NAN,
					       .p50 = NAN, .p90 = NAN, .p99 = NAN, .p999 = NAN };
		if (!t->done)
			return -EINVAL;
		r->lat_us.mean = (double)t->block_lat_ns / (double)t->done / 1e3;
		pb_flags_merge(r->flags, sizeof(r->flags), "block_timed");
		r->has_lat = 1;
		return 0;
	}
	if (hist) {
		rc = pb_hist_stats(b->hist, &r->lat_us);
		pb_stats_scale(&r->lat_us, 1e-3);
		if (!rc && !strstr(r->flags, "histogram"))
			snprintf(r->flags + strlen(r->flags), sizeof(r->flags) - strlen(r->flags), "%shistogram",
				 r->flags[0] ? ";" : "");
	} else {
		for (uint64_t i = 0; i < t->done; i++)
			b->samples_us[i] = (double)t->samples_ns[i] / 1e3;
		/* Stats on a copy: the published samples stay in time order. */
		double *tmp = malloc((t->done ? t->done : 1) * sizeof(*tmp));

		if (!tmp)
			return -ENOMEM;
		memcpy(tmp, b->samples_us, t->done * sizeof(*tmp));
		rc = pb_stats_compute(tmp, t->done, &r->lat_us);
		free(tmp);
	}
	if (rc)
		return rc;
	r->has_lat = 1;
	return 0;
}

/* One point (message size) of the run: what its steps share. */
struct pb_engine_ctx {
	const struct pb_engine_params *p;
	const struct pb_engine_role *role;
	const struct pb_meet_ops *meet;
	void *mctx;
	const struct pb_test_ops *test;
	void *tctx;
	struct pb_engine_bufs *b;
	struct pb_sink *sink;
	bool hist;               /* window method with a histogram instead of samples */
	uint64_t size;           /* the point's message size */
	char why[512];           /* why the run stops (the first failure), for the abort and the rows */
};

/* Protocol: prepare and warm up (untimed), then the start barrier.  0 or -errno, t->error set. */
static int pb_engine_start(const struct pb_engine_ctx *c, struct pb_timed *t, uint64_t *release_ns)
{
	const struct pb_test_ops *test = c->test;
	int rc = 0;

	if (test->prepare)
		rc = test->prepare(c->tctx, c->size);
	if (!rc && test->warmup)
		rc = test->warmup(c->tctx, c->size, c->p->warmup);
	if (rc)
		snprintf(t->error, sizeof(t->error), "set-up/warm-up at %llu B failed: %s",
			 (unsigned long long)c->size,
			 test->error && test->error(c->tctx)[0] ? test->error(c->tctx) : strerror(-rc));
	if (!rc && test->quiet) {
		/* Everyone has warmed up: the quiet moment before the window (device counters). */
		rc = c->meet->barrier(c->mctx, release_ns);
		if (!rc)
			rc = test->quiet(c->tctx, c->size, false);
		if (rc)
			snprintf(t->error, sizeof(t->error), "quiet moment before %llu B failed: %s",
				 (unsigned long long)c->size, strerror(-rc));
	}
	if (!rc) {
		rc = c->meet->barrier(c->mctx, release_ns);
		if (rc)
			snprintf(t->error, sizeof(t->error), "start barrier at %llu B failed: %s",
				 (unsigned long long)c->size, strerror(-rc));
	}
	return rc;
}

/* Protocol: the timed block, released by the barrier at release_ns.  0 or -errno, t->error set. */
static int pb_engine_timed(const struct pb_engine_ctx *c, struct pb_timed *t, uint64_t release_ns)
{
	const struct pb_engine_params *p = c->p;
	int rc;

	/* One deadline for every pair of the node: the barrier's release + the window. */
	if (p->method != PB_WM_COUNT)
		t->end_by_ns = release_ns + (uint64_t)(p->duration_s * 1e9);
	if (c->hist) {
		pb_hist_init(c->b->hist);
		t->hist = c->b->hist;
	} else {
		t->samples_ns = c->b->samples_ns;
		t->min_iterations = p->method == PB_WM_TARGET ? p->min_iterations : 0;
		t->block = p->block_timed;
	}
	rc = c->test->timed(c->tctx, t);
	if (rc && !t->error[0] && c->test->error)
		snprintf(t->error, sizeof(t->error), "%s", c->test->error(c->tctx));
	if (!rc && t->has_lat && p->method == PB_WM_TARGET && t->done >= p->iterations)
		pb_flags_merge(t->flags, sizeof(t->flags), "sample_cap");
	return rc;
}

/* Protocol of one point: start, timed block, finish.  0 or -errno (t->error set where known). */
static int pb_engine_measure(const struct pb_engine_ctx *c, struct pb_timed *t, uint64_t *release_ns)
{
	int rc = pb_engine_start(c, t, release_ns);

	if (!rc)
		rc = pb_engine_timed(c, t, *release_ns);
	if (!rc && c->test->finish)
		rc = c->test->finish(c->tctx, c->size);
	return rc;
}

/*
 * Statistics: this process's result of the point (rc: the protocol's), with
 * its latency statistics when it measures.  Returns rc or the statistics'
 * failure; on failure mine->error and c->why say why.
 */
static int pb_engine_result(struct pb_engine_ctx *c, const struct pb_timed *t, uint64_t release_ns, int rc,
			    struct pb_pair_result *mine)
{
	pb_engine_fill_result(c->p, c->role, t, release_ns, rc, mine);
	if (!rc && t->has_lat && c->role->measuring)
		rc = pb_engine_lat_stats(t, c->hist, c->b, mine);
	if (rc) {
		if (!mine->status)
			pb_result_fail(mine, rc, "latency statistics failed: %s", strerror(-rc));
		snprintf(c->why, sizeof(c->why), "pair %u at %llu B: %s", c->role->pair_id,
			 (unsigned long long)c->size, mine->error);
	}
	return rc;
}

/* Publish our result (measuring processes), then fail the run if rc.  Returns rc or publish's failure. */
static int pb_engine_publish(struct pb_engine_ctx *c, const struct pb_timed *t, const struct pb_pair_result *mine,
			     int rc)
{
	/* Publish before failing: the leader, woken by the abort, then finds our reason. */
	if (c->role->measuring) {
		bool samples = mine->has_lat && !c->hist && !t->block;
		int crc = c->meet->publish(c->mctx, mine, samples ? c->b->samples_us : NULL, samples ? t->done : 0,
					   mine->has_lat && c->hist ? c->b->hist : NULL);

		if (crc && !rc)
			rc = crc;
	}
	if (rc)
		c->meet->fail(c->mctx, c->why);
	return rc;
}

/* Leader: the point's rows in b->rows (pairs, aggregate, device aggregates); their count. */
static unsigned pb_engine_point_rows(const struct pb_engine_ctx *c, const struct pb_point_desc *pt,
				     double *pooled, size_t n_pooled)
{
	const struct pb_engine_params *p = c->p;
	struct pb_engine_bufs *b = c->b;
	unsigned nrows;

	if (c->hist && b->merged->count && !n_pooled) {
		/* Aggregate from the merged histogram: hand it over as one "pair". */
		nrows = pb_engine_rows(p, pt, b, NULL, 0);
		struct pb_stats st;

		if (pb_hist_stats(b->merged, &st) == 0 && !strcmp(b->rows[p->pairs].cell[PB_COL_status], "ok")) {
			pb_stats_scale(&st, 1e-3);
			pb_row_set_lat_stats(&b->rows[p->pairs], &st);
			pb_row_add_flag(&b->rows[p->pairs], "histogram");
		}
	} else {
		nrows = pb_engine_rows(p, pt, b, pooled, n_pooled);
	}
	pb_engine_flag_rows(p, b->rows, nrows);
	return nrows;
}

/*
 * Leader, every result collected: write the point's rows and the node
 * aggregates.  Returns rc, -EIO (rows not written), the node rows' failure,
 * or, rc being 0, the first failed pair's status (c->why says which).
 */
static int pb_engine_leader_rows(struct pb_engine_ctx *c, double *pooled, size_t n_pooled, int rc)
{
	const struct pb_engine_params *p = c->p;
	struct pb_point_desc pt;
	unsigned nrows;
	int crc;

	pb_engine_point(p, c->size, &pt);
	nrows = pb_engine_point_rows(c, &pt, pooled, n_pooled);
	if (pb_sink_write(c->sink, c->b->rows, nrows))
		return -EIO;
	if (p->node_aggregates) {
		crc = pb_engine_node_rows(p, c->meet, c->mctx, &pt, c->b->res, c->sink);
		if (crc)
			return crc;
	}
	for (unsigned i = 0; !rc && i < p->pairs; i++) {
		if (c->b->res[i].status) {
			rc = c->b->res[i].status;
			snprintf(c->why, sizeof(c->why), "pair %u at %llu B: %s", i, (unsigned long long)c->size,
				 c->b->res[i].error);
		}
	}
	return rc;
}

/* Every process: collect the pairs' results; the leader writes the rows (error rows when collect failed). */
static int pb_engine_collect(struct pb_engine_ctx *c, int rc)
{
	double *pooled = NULL;
	size_t n_pooled = 0;
	int crc;

	pb_hist_init(c->b->merged);
	crc = c->meet->collect(c->mctx, c->b->res, c->p->pairs, &pooled, &n_pooled, c->b->merged);
	if (crc && !rc) {
		rc = crc;
		snprintf(c->why, sizeof(c->why), "collecting results at %llu B failed: %s",
			 (unsigned long long)c->size, strerror(-crc));
	}
	if (!crc && c->test->quiet) {
		/* Every result is in: the quiet moment after the window.  Its failure fails no row. */
		int qrc = c->test->quiet(c->tctx, c->size, true);

		if (qrc)
			pb_log_error("quiet moment after %llu B: %s", (unsigned long long)c->size,
				     strerror(-qrc));
	}
	if (!c->role->leader)
		return rc;
	if (crc)
		return pb_engine_error_rows(c->p, c->size, c->role, c->why, c->b, c->sink) ? -EIO : rc;
	return pb_engine_leader_rows(c, pooled, n_pooled, rc);
}

/* One point: protocol, statistics, publish, collect and (leader) rows.  0 or -errno, c->why set. */
static int pb_engine_one(struct pb_engine_ctx *c)
{
	struct pb_timed t = { .msg_size_bytes = c->size, .iterations = c->p->iterations };
	struct pb_pair_result mine;
	uint64_t release_ns = 0;
	int rc = pb_engine_measure(c, &t, &release_ns);

	rc = pb_engine_result(c, &t, release_ns, rc, &mine);
	rc = pb_engine_publish(c, &t, &mine, rc);
	return pb_engine_collect(c, rc);
}

int pb_engine_rest_rows(const struct pb_engine_params *p, const char *host, unsigned progress,
			const char *why, struct pb_sink *sink)
{
	unsigned per_point = pb_engine_rows_per_point(p), done = progress ? progress - 1 : 0;
	struct pb_engine_bufs b = { 0 };
	char notrun[600];
	int rc = 0;

	b.res = calloc(p->pairs, sizeof(*b.res));
	b.rows = calloc(per_point, sizeof(*b.rows));
	b.sub_res = calloc(p->pairs, sizeof(*b.sub_res));
	b.sub_rows = calloc(p->pairs + 1, sizeof(*b.sub_rows));
	if (!b.res || !b.rows || !b.sub_res || !b.sub_rows) {
		rc = -ENOMEM;
		goto out;
	}
	sink->header_done = progress > 0;
	snprintf(notrun, sizeof(notrun), "not run: earlier failure (%s)", why);
	for (size_t i = done / per_point; !rc && i < p->n_sizes; i++) {
		struct pb_point_desc pt;
		unsigned skip = i == done / per_point ? done % per_point : 0;

		pb_engine_point(p, p->sizes[i], &pt);
		for (unsigned k = 0; k < p->pairs; k++) {
			memset(&b.res[k], 0, sizeof(b.res[k]));
			b.res[k].pair_id = k;
			b.res[k].cpu = b.res[k].numa_node = -1;
			snprintf(b.res[k].host, sizeof(b.res[k].host), "%s", host ? host : "");
			pb_result_fail(&b.res[k], -ECANCELED, "%s", i == done / per_point ? why : notrun);
		}
		pb_engine_rows(p, &pt, &b, NULL, 0);
		pb_engine_flag_rows(p, b.rows, per_point);
		rc = pb_sink_write(sink, b.rows + skip, per_point - skip);
	}
out:
	free(b.res);
	free(b.rows);
	free(b.sub_res);
	free(b.sub_rows);
	return rc;
}

static void pb_engine_bufs_free(struct pb_engine_bufs *b)
{
	free(b->samples_ns);
	free(b->samples_us);
	free(b->hist);
	free(b->merged);
	free(b->res);
	free(b->rows);
	free(b->sub_res);
	free(b->sub_pooled);
	free(b->pool_copy);
	free(b->sub_rows);
}

int pb_engine_run(const struct pb_engine_params *p, const struct pb_engine_role *role,
		  const struct pb_meet_ops *meet, void *mctx, const struct pb_test_ops *test,
		  void *tctx, struct pb_sink *sink)
{
	struct pb_engine_bufs b = { 0 };
	struct pb_engine_ctx c = {
		.p = p, .role = role, .meet = meet, .mctx = mctx, .test = test, .tctx = tctx, .b = &b,
		.sink = sink, .hist = p->method == PB_WM_WINDOW && p->histogram,
	};
	uint64_t nsamp = p->method == PB_WM_WINDOW ? 1 : p->iterations;
	int rc = 0;
	size_t i;

	if (!p->pairs || !p->n_sizes || !nsamp)
		return -EINVAL;
	/* Everything the timed loop touches is allocated here, before it. */
	b.samples_ns = calloc(nsamp, sizeof(*b.samples_ns));
	b.samples_us = calloc(nsamp, sizeof(*b.samples_us));
	b.hist = malloc(sizeof(*b.hist));
	b.merged = malloc(sizeof(*b.merged));
	b.res = calloc(p->pairs, sizeof(*b.res));
	b.rows = calloc(pb_engine_rows_per_point(p), sizeof(*b.rows));
	b.sub_res = calloc(p->pairs, sizeof(*b.sub_res));
	b.sub_rows = calloc(p->pairs + 1, sizeof(*b.sub_rows));
	if (pb_engine_rows_per_point(p) > p->pairs + 1) {
		b.sub_pooled = calloc(nsamp * p->pairs, sizeof(*b.sub_pooled));
		b.pool_copy = calloc(nsamp * p->pairs, sizeof(*b.pool_copy));
	}
	if (!b.samples_ns || !b.samples_us || !b.hist || !b.merged || !b.res || !b.rows || !b.sub_res ||
	    !b.sub_rows || (pb_engine_rows_per_point(p) > p->pairs + 1 && (!b.sub_pooled || !b.pool_copy))) {
		pb_engine_bufs_free(&b);
		pb_log_error("cannot allocate buffers for %llu samples", (unsigned long long)nsamp);
		return -ENOMEM;
	}
	for (i = 0; i < p->n_sizes && !rc; i++) {
		c.size = p->sizes[i];
		rc = pb_engine_one(&c);
	}
	if (rc && role->leader) {
		char notrun[600];

		snprintf(notrun, sizeof(notrun), "not run: earlier failure (%s)", c.why);
		for (; i < p->n_sizes; i++)
			pb_engine_error_rows(p, p->sizes[i], role, notrun, &b, sink);
	}
	pb_engine_bufs_free(&b);
	return rc;
}
