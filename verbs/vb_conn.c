/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every connection method (--cm) shares: the options both sides must
 * agree on and their hash, the framed header (vb_hdr.c) made and checked,
 * the worker's verbs resources (PD, one CQ shared by its --qps QPs, MRs),
 * the QP transitions from a template (struct vb_qp_tmpl), the exchange of
 * the QP table over QP 0 when rdma_cm connected only that one, and teardown.
 *
 * The methods themselves: vb_cm.c (rdma_cm, the default) and vb_cm_tcp.c
 * (a TCP socket, perftest's default style).
 */
#include "vb.h"

#include "pb_clock.h"
#include "pb_log.h"
#include "pb_opts.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The options both sides must agree on, in nibble order (at most 16). */
enum { VB_OPT_ITEMS = 15 };
static const char *const vb_opt_names[VB_OPT_ITEMS] = {
	"--test", "--variant", "--bidir", "--sizes", "--iterations", "--warmup",
	"--duration", "--pairs", "--tx-depth", "--cq-mod", "--validate", "--mtu", "--qps", "--cm",
	"--buffers",
};

static void vb_opt_item(const struct vb_params *p, unsigned i, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	switch (i) {
	case 0: snprintf(buf, len, "%s", p->c.test); break;
	case 1: snprintf(buf, len, "%s", p->variant ? p->variant : ""); break;
	case 2: snprintf(buf, len, "%d", p->bidir); break;
	case 3:
		for (size_t k = 0; k < p->c.sizes.n && off + 24 < len; k++)
			off += (size_t)snprintf(buf + off, len - off, "%s%llu", k ? "," : "",
						(unsigned long long)p->c.sizes.v[k]);
		break;
	case 4: snprintf(buf, len, "%llu", (unsigned long long)p->c.iterations); break;
	case 5: snprintf(buf, len, "%llu", (unsigned long long)p->c.warmup); break;
	case 6: snprintf(buf, len, "%g", p->c.duration_s); break;
	case 7: snprintf(buf, len, "%u", p->pairs); break;
	case 8: snprintf(buf, len, "%llu", (unsigned long long)p->tx_depth); break;
	case 9: snprintf(buf, len, "%llu", (unsigned long long)p->cq_mod); break;
	case 10: snprintf(buf, len, "%d", p->validate * 2 + p->validate_selftest); break;
	case 11: snprintf(buf, len, "%llu", (unsigned long long)p->mtu); break;
	case 12: snprintf(buf, len, "%llu", (unsigned long long)p->qps); break;
	case 13: snprintf(buf, len, "%s", p->cm == VB_CM_TCP ? "tcp" : "rdma_cm"); break;
	case 14: snprintf(buf, len, "%s", pb_buffers_names[p->buffers]); break;
	default: break;
	}
}

static uint64_t vb_fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

void vb_opts_hash(const struct vb_params *p, uint64_t *hash, uint64_t *nibbles)
{
	char item[1024];
	uint64_t h = 0xcbf29ce484222325ull;

	*nibbles = 0;
	for (unsigned i = 0; i < VB_OPT_ITEMS; i++) {
		vb_opt_item(p, i, item, sizeof(item));
		h = vb_fnv1a(vb_fnv1a(h, vb_opt_names[i]), item);
		uint64_t one = vb_fnv1a(0xcbf29ce484222325ull, item);

		*nibbles |= ((one ^ (one >> 4) ^ (one >> 8)) & 0xf) << (4 * i);
	}
	*hash = h;
}

/* Name the options whose nibbles differ, with this side's values. */
static void vb_opts_diff(const struct vb_params *p, uint64_t theirs, char *out, size_t len)
{
	uint64_t hash, mine;
	size_t off = 0;
	char item[256];

	vb_opts_hash(p, &hash, &mine);
	out[0] = 0;
	for (unsigned i = 0; i < VB_OPT_ITEMS && off + 8 < len; i++) {
		if (((mine ^ theirs) >> (4 * i)) & 0xf) {
			vb_opt_item(p, i, item, sizeof(item));
			off += (size_t)snprintf(out + off, len - off, "%s%s (server: %s)", off ? ", " : "",
						vb_opt_names[i], item);
		}
	}
	if (!out[0])
		snprintf(out, len, "options differ (which one is unknown: hash collision of the per-option check)");
}

void vb_hdr_make(const struct vb_worker *w, uint8_t out[VB_HDR_WIRE_BYTES])
{
	struct vb_hdr h = {
		.pair = (uint16_t)w->pair, .addr = (uintptr_t)w->buf, .len = (uint32_t)(2 * w->region),
		.rkey = w->mr->rkey, .ctrl_addr = (uintptr_t)w->ctrl, .ctrl_rkey = w->ctrl_mr->rkey,
	};

	vb_opts_hash(w->p, &h.opt_hash, &h.opt_nibbles);
	vb_hdr_encode(&h, out);
}

/*
 * Validate the peer's header.  Returns 0; -EBADMSG (a stranger: not
 * pairbench-verbs, or another protocol version) or -EPROTO (the other side
 * of a run with other options: pair, options, buffer size), with why in
 * w->error.
 */
int vb_hdr_check(struct vb_worker *w, const uint8_t *data, size_t len)
{
	struct vb_hdr h;
	uint64_t hash, nib;
	/* Not pairbench-verbs, or another protocol version: a stranger, not our peer. */
	if (vb_hdr_decode(data, len, &h, w->error, sizeof(w->error)))
		return -EBADMSG;
	if (h.pair != w->pair) {
		snprintf(w->error, sizeof(w->error), "peer is pair %u, this side pair %u (same --port on both sides?)",
			 h.pair, w->pair);
		return -EPROTO;
	}
	vb_opts_hash(w->p, &hash, &nib);
	if (h.opt_hash != hash) {
		vb_opts_diff(w->p, h.opt_nibbles, w->error, sizeof(w->error));
		return -EPROTO;
	}
	w->remote.addr = h.addr;
	w->remote.len = h.len;
	w->remote.rkey = h.rkey;
	w->remote.ctrl_addr = h.ctrl_addr;
	w->remote.ctrl_rkey = h.ctrl_rkey;
	if (w->remote.len != 2 * w->region) {
		snprintf(w->error, sizeof(w->error), "peer's buffer is %u B, expected %llu B", w->remote.len,
			 (unsigned long long)(2 * w->region));
		return -EPROTO;
	}
	return 0;
}

/* One RC QP on the shared CQ with the worker's queue sizes and inline size inl. */
static struct ibv_qp *vb_qp_new(struct vb_worker *w, int inl, uint32_t *granted)
{
	struct ibv_qp *qp;
	struct ibv_qp_init_attr a;

	memset(&a, 0, sizeof(a));
	a.send_cq = a.recv_cq = w->cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = (uint32_t)w->qp_cap + 4;
	a.cap.max_recv_wr = w->rx_per_qp + 4;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = (uint32_t)inl;
	if ((qp = ibv_create_qp(w->pd, &a)) && granted)
		*granted = a.cap.max_inline_data;  /* what the device granted (it may round up) */
	return qp;
}

/*
 * QP 0 with the largest inline size the device accepts (auto), or exactly -I;
 * QPs 1..N-1 (--qps) with the same caps.  A device limit is named: max_qp,
 * and the locked-memory limit (queue buffers are pinned on real adapters).
 */
static int vb_qp_create(struct vb_worker *w)
{
	static const int autos[] = { 1024, 512, 256, 128, 64, 32, 0 };
	const struct vb_probe *pr = w->dev;
	int want = w->p->inline_v, e;

	for (size_t i = 0; i < sizeof(autos) / sizeof(autos[0]); i++) {
		w->qp = vb_qp_new(w, want >= 0 ? want : autos[i], &w->max_inline);
		if (w->qp || want >= 0)
			break;
	}
	if (!w->qp) {
		if (want >= 0)
			snprintf(w->error, sizeof(w->error),
				 "ibv_create_qp with inline size %d (-I) failed: %s; try a smaller -I or -I auto",
				 want, strerror(errno));
		else
			snprintf(w->error, sizeof(w->error), "ibv_create_qp failed: %s (tx depth %llu)",
				 strerror(errno), (unsigned long long)w->p->tx_depth);
		return errno == EINVAL && want >= 0 ? -EINVAL : -EIO;
	}
	w->qps[0] = w->qp;
	for (unsigned i = 1; i < w->nqp; i++) {
		if ((w->qps[i] = vb_qp_new(w, want >= 0 ? want : (int)w->max_inline, NULL)))
			continue;
		e = errno;
		snprintf(w->error, sizeof(w->error),
			 "ibv_create_qp of QP %u of %u (--qps) failed: %s; %s has max_qp %d for every process "
			 "on it%s", i, w->nqp, strerror(e), pr->device, pr->max_qp,
			 e == ENOMEM || e == EAGAIN ? "; queue memory is pinned: raise the locked-memory "
			 "limit (ulimit -l unlimited) or use fewer --qps" : "");
		return -ENOMEM;
	}
	return 0;
}

static int vb_mr_error(struct vb_worker *w, const char *what, size_t len)
{
	int e = errno;

	if (e == ENOMEM || e == EPERM || e == EAGAIN)
		snprintf(w->error, sizeof(w->error),
			 "ibv_reg_mr of %zu B (%s) failed: %s: the locked-memory limit is too low; "
			 "raise it (ulimit -l unlimited, or memlock in /etc/security/limits.conf)",
			 len, what, strerror(e));
	else
		snprintf(w->error, sizeof(w->error), "ibv_reg_mr of %zu B (%s) failed: %s", len, what,
			 strerror(e));
	return -ENOMEM;
}

/*
 * Queue sizes of --qps N (docs/verbs.md).  *cap: requests one QP may have
 * outstanding = max(--cq-mod, ceil(--tx-depth / N)), at most --tx-depth (its
 * send queue holds 4 more for the ctrl channel).  *sig: a bandwidth stream
 * signals every sig-th request of a QP; sig = --cq-mod unless N QPs with
 * sig - 1 unsignalled requests each could fill the --tx-depth window
 * (N (sig - 1) >= depth), then (depth - 1) / N + 1, so a full window always
 * holds a signalled request.  *rx: receives per QP (send tests) = *cap.
 */
static void vb_qp_sizes(const struct vb_params *p, uint64_t *cap, uint64_t *sig, uint32_t *rx, bool sends)
{
	uint64_t n = p->qps ? p->qps : 1, depth = p->tx_depth, per = (depth + n - 1) / n;

	*cap = p->cq_mod > per ? p->cq_mod : per;
	if (*cap > depth)
		*cap = depth;
	*sig = p->cq_mod;
	if (n * (*sig - 1) >= depth)
		*sig = (depth - 1) / n + 1;
	*rx = sends ? (uint32_t)*cap : 0;
}

/* Entries of the shared CQ: the send window, every posted receive, ctrl and peek completions. */
static int vb_cq_entries(const struct vb_params *p, uint64_t rx_total)
{
	return (int)(p->tx_depth + rx_total + 16);
}

int vb_qps_check(const struct vb_params *p, const struct vb_probe *pr, unsigned members)
{
	uint64_t cap, sig, want = (uint64_t)members * p->qps;
	uint32_t rx;

	vb_qp_sizes(p, &cap, &sig, &rx, p->test_desc->op == VB_OP_SEND);
	if (pr->max_qp > 0 && want > (uint64_t)pr->max_qp) {
		pb_log_error("option --qps: %u processes here x %llu QPs = %llu QPs, above %s's max_qp (%d)",
			     members, (unsigned long long)p->qps, (unsigned long long)want, pr->device, pr->max_qp);
		return -EINVAL;
	}
	if (pr->max_cqe > 0 && vb_cq_entries(p, (uint64_t)rx * p->qps) > pr->max_cqe) {
		pb_log_error("option --qps: %llu QPs x %u receives each need a CQ of %d entries, above %s's max_cqe (%d): "
			     "use fewer --qps or a smaller --tx-depth", (unsigned long long)p->qps, rx,
			     vb_cq_entries(p, (uint64_t)rx * p->qps), pr->device, pr->max_cqe);
		return -EINVAL;
	}
	return 0;
}

int vb_res_create(struct vb_worker *w, struct ibv_context *verbs)
{
	const char *name = ibv_get_device_name(verbs->device);
	int access = vb_test_access(w->test, w->side, w->pair, w->p->bidir);
	size_t len;

	if (strcmp(name, w->dev->device)) {
		snprintf(w->error, sizeof(w->error),
			 "the address resolves to device %s, not %s (-d): use an IP address of %s",
			 name, w->dev->device, w->dev->device);
		return -EINVAL;
	}
	w->verbs = verbs;
	vb_qp_sizes(w->p, &w->qp_cap, &w->qp_sig, &w->rx_per_qp, w->test->op == VB_OP_SEND);
	w->rx_depth = w->rx_per_qp * w->nqp;
	if (!(w->pd = ibv_alloc_pd(verbs))) {
		snprintf(w->error, sizeof(w->error), "ibv_alloc_pd: %s", strerror(errno));
		return -EIO;
	}
	if (!(w->cq = ibv_create_cq(verbs, vb_cq_entries(w->p, w->rx_depth), NULL, NULL, 0))) {
		snprintf(w->error, sizeof(w->error), "ibv_create_cq of %d entries: %s (device max_cqe %d)",
			 vb_cq_entries(w->p, w->rx_depth), strerror(errno), w->dev->max_cqe);
		return -EIO;
	}
	len = 2 * w->region;
	w->ctrl_len = (VB_CTRL_TABLE_OFF + 16 * (size_t)w->nqp + 4095) / 4096 * 4096;
	if (posix_memalign((void **)&w->buf, 4096, len) ||
	    posix_memalign((void **)&w->ctrl, 4096, w->ctrl_len) ||
	    !(w->qps = calloc(w->nqp, sizeof(*w->qps))) || !(w->qp_done = calloc(w->nqp, sizeof(uint64_t)))) {
		snprintf(w->error, sizeof(w->error), "cannot allocate %zu B of buffers", len);
		return -ENOMEM;
	}
	memset(w->buf, 0, len);
	memset(w->ctrl, 0, w->ctrl_len);
	if (!(w->mr = ibv_reg_mr(w->pd, w->buf, len, access)))
		return vb_mr_error(w, "data buffer", len);
	/* Remote read: a waiting peer on another node reads our progress word (vb_watch). */
	if (!(w->ctrl_mr = ibv_reg_mr(w->pd, w->ctrl, w->ctrl_len,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)))
		return vb_mr_error(w, "ctrl words", w->ctrl_len);
	w->rsge.addr = (uintptr_t)(w->buf + w->region);
	w->rsge.length = (uint32_t)w->region;
	w->rsge.lkey = w->mr->lkey;
	w->rwr.sg_list = &w->rsge;
	w->rwr.num_sge = 1;
	return vb_qp_create(w);
}

int vb_sockaddr(struct vb_worker *w, const char *host, unsigned port, struct sockaddr_in *sa)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	char ps[16];
	int rc;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (!host || !*host) {
		sa->sin_addr.s_addr = htonl(INADDR_ANY);
		return 0;
	}
	snprintf(ps, sizeof(ps), "%u", port);
	if ((rc = getaddrinfo(host, ps, &hints, &res))) {
		char c[PB_CLIP_CHARS + 4];

		snprintf(w->error, sizeof(w->error), "cannot resolve host '%s': %s", pb_opts_clip(host, c, sizeof(c)),
			 gai_strerror(rc));
		return -EINVAL;
	}
	memcpy(sa, res->ai_addr, sizeof(*sa));
	freeaddrinfo(res);
	return 0;
}

int vb_rd_atom(const struct vb_worker *w)
{
	const struct vb_probe *pr = w->dev;
	int rd = pr->max_qp_rd_atom < pr->max_qp_init_rd_atom ? pr->max_qp_rd_atom : pr->max_qp_init_rd_atom;

	return rd > 16 ? 16 : rd;
}

uint32_t vb_psn_random(void)
{
	return (uint32_t)lrand48() & 0xffffff;
}

int vb_qp_bringup(struct vb_worker *w, unsigned i, uint32_t dest_qpn, uint32_t rq_psn, uint32_t sq_psn)
{
	static const char *const names[] = { "INIT", "RTR", "RTS" };
	struct ibv_qp_attr a[3] = { w->tmpl.init, w->tmpl.rtr, w->tmpl.rts };
	const int mask[3] = { w->tmpl.init_mask, w->tmpl.rtr_mask, w->tmpl.rts_mask };
	int rc;

	a[1].dest_qp_num = dest_qpn;
	a[1].rq_psn = rq_psn;
	a[2].sq_psn = sq_psn;
	for (int k = 0; k < 3; k++) {
		if ((rc = ibv_modify_qp(w->qps[i], &a[k], mask[k]))) {
			snprintf(w->error, sizeof(w->error), "ibv_modify_qp of QP %u of %u to %s: %s", i, w->nqp,
				 names[k], strerror(rc));
			return -EIO;
		}
	}
	return 0;
}

/* Our QP table in the ctrl page: (QP number, first PSN) of each QP, big endian. */
static uint8_t *vb_table_out(struct vb_worker *w)
{
	return (uint8_t *)w->ctrl + VB_CTRL_TABLE_OFF + 8 * (size_t)w->nqp;
}

/*
 * rdma_cm connected QP 0 only (its private data holds one header).  The
 * other QPs: each side writes its table into the peer's ctrl page over QP 0,
 * a pair sync, then every QP i >= 1 goes through INIT/RTR/RTS with QP 0's
 * attributes (path, MTU, depths: rdma_cm resolved them) and the peer's QP
 * number and PSN of entry i.
 */
int vb_qps_connect_rest(struct vb_worker *w)
{
	uint8_t *out = vb_table_out(w), *in = (uint8_t *)w->ctrl + VB_CTRL_TABLE_OFF;
	int rc;

	for (unsigned i = 0; i < w->nqp; i++) {
		uint32_t v[2] = { htobe32(w->qps[i]->qp_num), htobe32(vb_psn_random()) };

		memcpy(out + 8 * i, v, 8);
	}
	if ((rc = vb_ctrl_put(w, VB_CTRL_TABLE_OFF + 8 * (size_t)w->nqp, VB_CTRL_TABLE_OFF, 8 * w->nqp)) ||
	    (rc = vb_ctrl_sync(w)))
		return rc;
	for (unsigned i = 1; i < w->nqp; i++) {
		uint32_t theirs[2], mine[2];

		memcpy(theirs, in + 8 * i, 8);
		memcpy(mine, out + 8 * i, 8);
		if ((rc = vb_qp_bringup(w, i, be32toh(theirs[0]), be32toh(theirs[1]), be32toh(mine[1]))))
			return rc;
	}
	/* Nobody sends on a QP before the peer's side of it is ready to receive. */
	return vb_ctrl_sync(w);
}

int vb_cm_connect(struct vb_worker *w)
{
	int rc;

	/* Both sides size their buffers alike; the header check relies on it. */
	w->region = vb_buf_region(w->p);
	w->nqp = (unsigned)w->p->qps;
	srand48((long)(getpid() ^ pb_clock_now_ns()));
	rc = w->p->cm == VB_CM_TCP ? vb_cm_tcp_connect(w) : vb_cm_rdma_connect(w);
	if (!rc)
		w->shared->w[w->member].inline_bytes = (int32_t)w->max_inline;
	return rc;
}

void vb_cm_teardown(struct vb_worker *w)
{
	if (w->p->cm == VB_CM_RDMA)
		vb_cm_rdma_disconnect(w);
	for (unsigned i = w->nqp; i-- > 0;)
		if (w->qps && w->qps[i])
			ibv_destroy_qp(w->qps[i]);
	if (w->ctrl_mr)
		ibv_dereg_mr(w->ctrl_mr);
	if (w->mr)
		ibv_dereg_mr(w->mr);
	if (w->cq)
		ibv_destroy_cq(w->cq);
	if (w->pd)
		ibv_dealloc_pd(w->pd);
	if (w->verbs && w->verbs_own)
		ibv_close_device(w->verbs);
	free(w->qp_done);
	free(w->qps);
	free(w->ctrl);
	free(w->buf);
	if (w->p->cm == VB_CM_RDMA)
		vb_cm_rdma_teardown(w);
	w->qp = NULL;
	w->qps = NULL;
	w->qp_done = NULL;
	w->ctrl_mr = w->mr = NULL;
	w->cq = NULL;
	w->pd = NULL;
	w->verbs = NULL;
	w->ctrl = NULL;
	w->buf = NULL;
}
