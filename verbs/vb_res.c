/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A worker's verbs resources (docs/verbs.md "--qps"): the PD, one CQ shared by
 * its --qps QPs, the data buffer and ctrl page with their MRs, the QPs with
 * the largest inline size the device grants, and their transitions from a
 * template; queue sizes from --tx-depth, --cq-mod and --qps.  Shared by both
 * connection methods (vb_cm.c, vb_cm_tcp.c), which fill the template.
 */
#include "vb_res.h"

#include "pb_log.h"
#include "pb_opts.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

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

void vb_res_destroy(struct vb_worker *w)
{
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
