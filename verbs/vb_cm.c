/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection of one pair through librdmacm (by IP address; rdma_cm resolves
 * the GID for RoCE).  The QP is created by us (not rdma_create_qp) so we
 * choose its caps (inline size) and path MTU; rdma_init_qp_attr() gives
 * the attributes of each transition.
 *
 * Private data of the connect request (client -> server) and of the accept
 * (server -> client) is a framed header: magic, protocol version, pair
 * index, hash of the options both sides must agree on plus one 4-bit hash
 * per option (so a mismatch names the option), buffer address, length and
 * rkey, and the ctrl words' address and rkey.  A server that finds a
 * mismatch rejects with a reason text (magic-prefixed) that the client
 * prints.  Clients retry (new cm_id every 100 ms) until the deadline while
 * nobody listens, so start order does not matter.
 */
#include "vb.h"

#include "pb_clock.h"
#include "pb_log.h"
#include "pb_opts.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The options both sides must agree on, in nibble order. */
enum { VB_OPT_ITEMS = 12 };
static const char *const vb_opt_names[VB_OPT_ITEMS] = {
	"--test", "--variant", "--bidir", "--sizes", "--iterations", "--warmup",
	"--duration", "--pairs", "--tx-depth", "--cq-mod", "--validate", "--mtu",
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

struct vb_cm_ev {
	enum rdma_cm_event_type type;
	int status;
	struct rdma_cm_id *id;
	uint8_t pdata[256];
	uint8_t pdata_len;
	uint8_t initiator_depth, responder_resources;
};

/* Next rdma_cm event, within the connect wait's deadline (--timeout from its start). */
static int vb_cm_wait(struct vb_worker *w, struct vb_watch *wt, struct vb_cm_ev *ev, const char *what)
{
	struct rdma_cm_event *e;
	struct pollfd pfd = { .fd = w->ch->fd, .events = POLLIN };
	int rc;

	wt->what = what;
	for (;;) {
		if (poll(&pfd, 1, 50) > 0 && rdma_get_cm_event(w->ch, &e) == 0)
			break;
		if ((rc = vb_watch_check(w, wt)))
			return rc;
	}
	memset(ev, 0, sizeof(*ev));
	ev->type = e->event;
	ev->status = e->status;
	ev->id = e->id;
	if (e->param.conn.private_data && e->param.conn.private_data_len) {
		ev->pdata_len = e->param.conn.private_data_len;
		memcpy(ev->pdata, e->param.conn.private_data, ev->pdata_len);
	}
	ev->initiator_depth = e->param.conn.initiator_depth;
	ev->responder_resources = e->param.conn.responder_resources;
	rdma_ack_cm_event(e);
	return 0;
}

static void vb_hdr_make(const struct vb_worker *w, uint8_t out[VB_HDR_WIRE_BYTES])
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
static int vb_hdr_check(struct vb_worker *w, const uint8_t *data, size_t len)
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

/* QP with the largest inline size the device accepts (auto), or exactly -I. */
static int vb_qp_create(struct vb_worker *w)
{
	static const int autos[] = { 1024, 512, 256, 128, 64, 32, 0 };
	struct ibv_qp_init_attr a;
	int want = w->p->inline_v;

	for (size_t i = 0; i < sizeof(autos) / sizeof(autos[0]); i++) {
		memset(&a, 0, sizeof(a));
		a.send_cq = a.recv_cq = w->cq;
		a.qp_type = IBV_QPT_RC;
		a.cap.max_send_wr = (uint32_t)w->p->tx_depth + 4;
		a.cap.max_recv_wr = w->rx_depth + 4;
		a.cap.max_send_sge = a.cap.max_recv_sge = 1;
		a.cap.max_inline_data = (uint32_t)(want >= 0 ? want : autos[i]);
		w->qp = ibv_create_qp(w->pd, &a);
		if (w->qp) {
			w->max_inline = a.cap.max_inline_data;
			return 0;
		}
		if (want >= 0)
			break;
	}
	if (want >= 0)
		snprintf(w->error, sizeof(w->error),
			 "ibv_create_qp with inline size %d (-I) failed: %s; try a smaller -I or -I auto",
			 want, strerror(errno));
	else
		snprintf(w->error, sizeof(w->error), "ibv_create_qp failed: %s (tx depth %llu)",
			 strerror(errno), (unsigned long long)w->p->tx_depth);
	return errno == EINVAL && want >= 0 ? -EINVAL : -EIO;
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

static int vb_res_create(struct vb_worker *w, struct ibv_context *verbs)
{
	const char *name = ibv_get_device_name(verbs->device);
	int access = vb_test_access(w->test, w->side, w->pair, w->p->bidir);
	size_t len;

	if (strcmp(name, w->shared->probe.device)) {
		snprintf(w->error, sizeof(w->error),
			 "the address resolves to device %s, not %s (-d): use an IP address of %s",
			 name, w->shared->probe.device, w->shared->probe.device);
		return -EINVAL;
	}
	w->verbs = verbs;
	w->rx_depth = w->test->op == VB_OP_SEND ? (uint32_t)w->p->tx_depth : 0;
	if (!(w->pd = ibv_alloc_pd(verbs))) {
		snprintf(w->error, sizeof(w->error), "ibv_alloc_pd: %s", strerror(errno));
		return -EIO;
	}
	if (!(w->cq = ibv_create_cq(verbs, (int)(w->p->tx_depth + w->rx_depth + 16), NULL, NULL, 0))) {
		snprintf(w->error, sizeof(w->error), "ibv_create_cq: %s", strerror(errno));
		return -EIO;
	}
	len = 2 * w->region;
	if (posix_memalign((void **)&w->buf, 4096, len) || posix_memalign((void **)&w->ctrl, 4096, 4096)) {
		snprintf(w->error, sizeof(w->error), "cannot allocate %zu B of buffers", len);
		return -ENOMEM;
	}
	memset(w->buf, 0, len);
	memset(w->ctrl, 0, 4096);
	if (!(w->mr = ibv_reg_mr(w->pd, w->buf, len, access)))
		return vb_mr_error(w, "data buffer", len);
	/* Remote read: a waiting peer on another node reads our progress word (vb_watch). */
	if (!(w->ctrl_mr = ibv_reg_mr(w->pd, w->ctrl, 4096,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)))
		return vb_mr_error(w, "ctrl words", 4096);
	w->rsge.addr = (uintptr_t)(w->buf + w->region);
	w->rsge.length = (uint32_t)w->region;
	w->rsge.lkey = w->mr->lkey;
	w->rwr.wr_id = VB_WRID_RECV;
	w->rwr.sg_list = &w->rsge;
	w->rwr.num_sge = 1;
	return vb_qp_create(w);
}

static int vb_qp_modify(struct vb_worker *w, struct rdma_cm_id *id, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = { .qp_state = state };
	int mask = 0, rc;
	const char *const names[] = { "RESET", "INIT", "RTR", "RTS" };

	if (state == IBV_QPS_RESET) {
		mask = IBV_QP_STATE;
	} else if ((rc = rdma_init_qp_attr(id, &attr, &mask))) {
		snprintf(w->error, sizeof(w->error), "rdma_init_qp_attr(%s): %s", names[state], strerror(errno));
		return -EIO;
	}
	if (state == IBV_QPS_INIT) {
		enum vb_op op = w->test->op;

		/* Remote read for every test: the peer's progress reads of our ctrl words. */
		attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				       (op == VB_OP_ATOMIC ? IBV_ACCESS_REMOTE_ATOMIC : 0);
	}
	if (state == IBV_QPS_RTR) {
		if (w->p->mtu)
			attr.path_mtu = (enum ibv_mtu)vb_mtu_enum(w->p->mtu);
		w->shared->w[w->member].path_mtu = vb_mtu_bytes(attr.path_mtu);
		w->shared->w[w->member].sgid_index = attr.ah_attr.grh.sgid_index;
		/*
		 * rdma_cm picks the source GID from the IP address (on RoCE the index
		 * also selects v1/v2 and the VLAN): a different -x is refused, never
		 * silently replaced.
		 */
		if (w->p->gid_index_v >= 0 && attr.ah_attr.is_global &&
		    attr.ah_attr.grh.sgid_index != w->p->gid_index_v) {
			snprintf(w->error, sizeof(w->error),
				 "option -x/--gid-index: %d given, but rdma_cm resolved GID index %u for this address; "
				 "pairbench-verbs connects through rdma_cm, which picks the GID from the IP address: "
				 "use the IP of GID %d (--connect, PB_RDMA_IP) or -x auto",
				 w->p->gid_index_v, attr.ah_attr.grh.sgid_index, w->p->gid_index_v);
			return -EINVAL;
		}
	}
	if (state == IBV_QPS_RTS) {
		attr.retry_cnt = 7;
		attr.rnr_retry = 7;
		mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY;
	}
	if ((rc = ibv_modify_qp(w->qp, &attr, mask))) {
		snprintf(w->error, sizeof(w->error), "ibv_modify_qp to %s: %s", names[state], strerror(rc));
		return -EIO;
	}
	return 0;
}

static int vb_cm_channel(struct vb_worker *w)
{
	w->ch = rdma_create_event_channel();
	if (!w->ch) {
		snprintf(w->error, sizeof(w->error), "rdma_create_event_channel: %s%s", strerror(errno),
			 errno == ENODEV || errno == ENOENT ? " (rdma_ucm module not loaded?)" : "");
		return -ENODEV;
	}
	fcntl(w->ch->fd, F_SETFL, fcntl(w->ch->fd, F_GETFL) | O_NONBLOCK);
	return 0;
}

static int vb_sockaddr(struct vb_worker *w, const char *host, unsigned port, struct sockaddr_in *sa)
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

static void vb_conn_param(const struct vb_worker *w, struct rdma_conn_param *cp, void *pdata,
			  uint8_t initiator_depth, uint8_t responder_resources)
{
	const struct vb_probe *pr = &w->shared->probe;
	int rd = pr->max_qp_rd_atom < pr->max_qp_init_rd_atom ? pr->max_qp_rd_atom : pr->max_qp_init_rd_atom;

	if (rd > 16)
		rd = 16;
	memset(cp, 0, sizeof(*cp));
	cp->private_data = pdata;
	cp->private_data_len = VB_HDR_WIRE_BYTES;
	cp->initiator_depth = (uint8_t)(rd < initiator_depth ? rd : initiator_depth);
	cp->responder_resources = (uint8_t)(rd < responder_resources ? rd : responder_resources);
	cp->retry_count = 7;
	cp->rnr_retry_count = 7;
	cp->qp_num = w->qp->qp_num;
}

/* One connection attempt. Returns 0, -EAGAIN (retry), or a fatal -errno. */
static int vb_cm_try(struct vb_worker *w, const struct sockaddr_in *dst, struct vb_watch *wt)
{
	uint8_t h[VB_HDR_WIRE_BYTES];
	struct rdma_conn_param cp;
	struct vb_cm_ev ev;
	int rc;

	if (rdma_create_id(w->ch, &w->id, w, RDMA_PS_TCP)) {
		snprintf(w->error, sizeof(w->error), "rdma_create_id: %s", strerror(errno));
		return -EIO;
	}
	if (rdma_resolve_addr(w->id, NULL, (struct sockaddr *)dst, 2000))
		return -EAGAIN;
	if ((rc = vb_cm_wait(w, wt, &ev, "address resolution")))
		return rc;
	if (ev.type != RDMA_CM_EVENT_ADDR_RESOLVED)
		return -EAGAIN;
	if (rdma_resolve_route(w->id, 2000))
		return -EAGAIN;
	if ((rc = vb_cm_wait(w, wt, &ev, "route resolution")))
		return rc;
	if (ev.type != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return -EAGAIN;
	if (!w->qp && (rc = vb_res_create(w, w->id->verbs)))
		return rc;
	if ((rc = vb_qp_modify(w, w->id, IBV_QPS_RESET)) || (rc = vb_qp_modify(w, w->id, IBV_QPS_INIT)))
		return rc;
	vb_hdr_make(w, h);
	vb_conn_param(w, &cp, h, 16, 16);
	if (rdma_connect(w->id, &cp)) {
		snprintf(w->error, sizeof(w->error), "rdma_connect: %s", strerror(errno));
		return -EAGAIN;
	}
	if ((rc = vb_cm_wait(w, wt, &ev, "the server's answer")))
		return rc;
	if (ev.type == RDMA_CM_EVENT_REJECTED) {
		if (ev.pdata_len > 4 && vb_hdr_has_magic(ev.pdata, ev.pdata_len)) {
			snprintf(w->error, sizeof(w->error), "server rejected the connection: %.*s",
				 ev.pdata_len - 4, (char *)ev.pdata + 4);
			return -EPROTO;
		}
		return -EAGAIN; /* nobody listens (yet) */
	}
	if (ev.type != RDMA_CM_EVENT_CONNECT_RESPONSE)
		return -EAGAIN;
	if ((rc = vb_hdr_check(w, ev.pdata, ev.pdata_len))) {
		rdma_disconnect(w->id);
		return rc == -EBADMSG ? -EPROTO : rc;
	}
	if ((rc = vb_qp_modify(w, w->id, IBV_QPS_RTR)) || (rc = vb_qp_modify(w, w->id, IBV_QPS_RTS)))
		return rc;
	if (rdma_establish(w->id)) {
		snprintf(w->error, sizeof(w->error), "rdma_establish: %s", strerror(errno));
		return -EIO;
	}
	return 0;
}

static int vb_cm_client(struct vb_worker *w)
{
	unsigned port = (unsigned)w->p->cm_port + w->pair;
	struct sockaddr_in dst;
	struct vb_watch wt;
	uint64_t deadline;
	int rc;

	if ((rc = vb_sockaddr(w, w->p->peer_host, port, &dst)))
		return rc;
	vb_watch_start(w, &wt, "the server", false);
	deadline = wt.since_ns + w->timeout_ns;
	for (;;) {
		rc = vb_cm_try(w, &dst, &wt);
		if (rc == -ETIMEDOUT) {
			snprintf(w->error, sizeof(w->error),
				 "no server answered at %s port %u within %.1f s (no answer to %s; start the server side, or check the address)",
				 w->p->peer_host, port, (double)(pb_clock_now_ns() - wt.since_ns) / 1e9, wt.what);
			break;
		}
		if (rc != -EAGAIN)
			break;
		if (w->id) {
			rdma_destroy_id(w->id);
			w->id = NULL;
		}
		struct timespec ts = { 0, 100 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		if (pb_clock_now_ns() > deadline) {
			snprintf(w->error, sizeof(w->error),
				 "no server answered at %s port %u within %.1f s (start the server side, or check the address; start order does not matter within --timeout)",
				 w->p->peer_host, port, (double)(pb_clock_now_ns() - wt.since_ns) / 1e9);
			return -ETIMEDOUT;
		}
		wt.what = "the server";
		if ((rc = vb_watch_check(w, &wt)))
			return rc;
	}
	return rc;
}

static void vb_reject(struct rdma_cm_id *id, const char *why)
{
	uint8_t msg[148];
	uint32_t magic = htobe32(VB_HDR_MAGIC);
	size_t n = strlen(why);

	if (n > sizeof(msg) - 4)
		n = sizeof(msg) - 4;
	memcpy(msg, &magic, 4);
	memcpy(msg + 4, why, n);
	rdma_reject(id, msg, (uint8_t)(4 + n));
}

/* Reject a connection request that is not our client's and forget it (one log line). */
static void vb_reject_stranger(struct vb_worker *w, struct rdma_cm_id *id, const char *why)
{
	char from[64] = "?";
	struct sockaddr *sa = rdma_get_peer_addr(id);

	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, from, sizeof(from));
	pb_log_warn("pair %u (server): rejected a connection from %s: %s; still waiting for the client", w->pair,
		    from, why);
	vb_reject(id, why);
	rdma_destroy_id(id);
}

/* Wait for our client's connect request; strangers are rejected and the wait goes on. */
static int vb_cm_accept_wait(struct vb_worker *w, struct vb_watch *wt, struct vb_cm_ev *ev)
{
	char why[sizeof(w->error)];
	int rc;

	for (;;) {
		if ((rc = vb_cm_wait(w, wt, ev, "a client to connect")))
			return rc;
		if (ev->type != RDMA_CM_EVENT_CONNECT_REQUEST)
			continue;
		rc = vb_hdr_check(w, ev->pdata, ev->pdata_len);
		if (rc == -EBADMSG) {
			snprintf(why, sizeof(why), "%s", w->error);
			vb_reject_stranger(w, ev->id, why);
			w->error[0] = 0;
			continue;
		}
		w->id = ev->id;
		if (rc) {
			snprintf(why, sizeof(why), "%.199s", w->error);
			vb_reject(w->id, why);
			snprintf(w->error, sizeof(w->error), "rejected the client: %.199s", why);
			return -EPROTO;
		}
		return 0;
	}
}

static int vb_cm_server(struct vb_worker *w)
{
	unsigned port = (unsigned)w->p->cm_port + w->pair;
	const char *bind_ip = w->p->loopback ? w->p->peer_host : w->shared->probe.ipv4;
	uint8_t h[VB_HDR_WIRE_BYTES];
	struct rdma_conn_param cp;
	struct sockaddr_in sa;
	struct vb_watch wt;
	struct vb_cm_ev ev;
	int rc;

	if ((rc = vb_sockaddr(w, bind_ip, port, &sa)))
		return rc;
	if (rdma_create_id(w->ch, &w->listen_id, w, RDMA_PS_TCP)) {
		snprintf(w->error, sizeof(w->error), "rdma_create_id: %s", strerror(errno));
		return -EIO;
	}
	if (rdma_bind_addr(w->listen_id, (struct sockaddr *)&sa) || rdma_listen(w->listen_id, 4)) {
		snprintf(w->error, sizeof(w->error), "cannot listen on %s port %u: %s%s",
			 bind_ip && *bind_ip ? bind_ip : "*", port, strerror(errno),
			 errno == EADDRINUSE ? " (another server running? use --port)" : "");
		return -EIO;
	}
	vb_watch_start(w, &wt, "a client to connect", false);
	if ((rc = vb_cm_accept_wait(w, &wt, &ev)))
		return rc;
	if ((rc = vb_res_create(w, w->id->verbs))) {
		vb_reject(w->id, w->error);
		return rc;
	}
	if ((rc = vb_qp_modify(w, w->id, IBV_QPS_INIT)) || (rc = vb_qp_modify(w, w->id, IBV_QPS_RTR)) ||
	    (rc = vb_qp_modify(w, w->id, IBV_QPS_RTS))) {
		vb_reject(w->id, w->error);  /* the client learns why */
		return rc;
	}
	vb_hdr_make(w, h);
	vb_conn_param(w, &cp, h, ev.responder_resources, ev.initiator_depth);
	if (rdma_accept(w->id, &cp)) {
		snprintf(w->error, sizeof(w->error), "rdma_accept: %s", strerror(errno));
		return -EIO;
	}
	for (;;) {
		if ((rc = vb_cm_wait(w, &wt, &ev, "the connection to be established")))
			return rc;
		if (ev.type == RDMA_CM_EVENT_ESTABLISHED)
			break;
		if (ev.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			vb_reject(ev.id, "this pair is already connected");
			continue;
		}
		snprintf(w->error, sizeof(w->error), "connection failed: %s (status %d)",
			 rdma_event_str(ev.type), ev.status);
		return -EIO;
	}
	inet_ntop(AF_INET, &((struct sockaddr_in *)rdma_get_peer_addr(w->id))->sin_addr, w->peer,
		  sizeof(w->peer));
	return 0;
}

int vb_cm_connect(struct vb_worker *w)
{
	int rc;

	/* Both sides size their buffers alike; the header check relies on it. */
	w->region = (w->p->max_size + 4095) / 4096 * 4096;
	rc = vb_cm_channel(w);
	if (rc)
		return rc;
	rc = w->side == VB_SERVER ? vb_cm_server(w) : vb_cm_client(w);
	if (!rc && w->side == VB_CLIENT)
		snprintf(w->peer, sizeof(w->peer), "%s", w->p->peer_host);
	if (!rc)
		w->shared->w[w->member].inline_bytes = (int32_t)w->max_inline;
	return rc;
}

void vb_cm_teardown(struct vb_worker *w)
{
	if (w->id && w->qp)
		rdma_disconnect(w->id);
	if (w->qp)
		ibv_destroy_qp(w->qp);
	if (w->ctrl_mr)
		ibv_dereg_mr(w->ctrl_mr);
	if (w->mr)
		ibv_dereg_mr(w->mr);
	if (w->cq)
		ibv_destroy_cq(w->cq);
	if (w->pd)
		ibv_dealloc_pd(w->pd);
	free(w->ctrl);
	free(w->buf);
	if (w->id)
		rdma_destroy_id(w->id);
	if (w->listen_id)
		rdma_destroy_id(w->listen_id);
	if (w->ch)
		rdma_destroy_event_channel(w->ch);
	w->qp = NULL;
	w->ctrl_mr = w->mr = NULL;
	w->cq = NULL;
	w->pd = NULL;
	w->ctrl = NULL;
	w->buf = NULL;
	w->id = w->listen_id = NULL;
	w->ch = NULL;
}
