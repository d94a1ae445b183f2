/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --cm tcp: connection of one pair without rdma_cm (perftest's default
 * style; InfiniBand fabrics whose adapters have no IP address yet).  The two
 * sides meet on a TCP socket at any reachable address (the management
 * network; --port + pair, the server listens on every address) and exchange
 * the same framed header as rdma_cm's private data (vb_hdr.c: magic,
 * version, pair, option hash, buffer and ctrl keys) followed by the QP-info
 * block: LID, GID and GID index, active MTU, RDMA read depth, and per QP its
 * number and first PSN.  Then each side moves its QPs through INIT/RTR/RTS
 * itself: the address vector names the peer by LID on an InfiniBand link
 * layer, by GID (our GID index: -x or the automatic choice) on RoCE.  A last
 * byte each way says "my QPs are ready" before anyone posts.
 *
 * Failures look as with rdma_cm (docs/failure-modes.md): a server rejects a
 * client with other options with a magic-prefixed reason (the reject frame)
 * that the client prints; strangers (no magic, another protocol version)
 * are rejected with one log line while the server keeps waiting; a client
 * retries every 100 ms until --timeout while nobody listens; every wait is
 * a vb_watch (signals, group abort, heartbeat, deadline reset by progress).
 */
#define _GNU_SOURCE  /* accept4 */
#include "vb_cm.h"

#include "pb_clock.h"
#include "pb_log.h"
#include "vb_dev.h"
#include "vb_handshake.h"
#include "vb_qp.h"
#include "vb_res.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* A connect attempt that neither completes nor fails within this is retried. */
#define VB_TCP_CONNECT_NS 2000000000ull

/*
 * Move exactly len bytes (out: send, else receive) within the wait wt.
 * 0; -EPIPE when the peer closed first (*done bytes moved); -ETIMEDOUT,
 * -EINTR, -ECANCELED from the wait; -EIO.  Received bytes are progress.
 */
static int vb_tcp_xfer(struct vb_worker *w, int fd, uint8_t *buf, size_t len, bool out, struct vb_watch *wt,
		       const char *what, size_t *done)
{
	size_t off = 0;
	int rc;

	wt->what = what;
	while (off < len) {
		struct pollfd pfd = { .fd = fd, .events = out ? POLLOUT : POLLIN };

		if (poll(&pfd, 1, 50) > 0) {
			ssize_t n = out ? send(fd, buf + off, len - off, MSG_NOSIGNAL) : recv(fd, buf + off, len - off, 0);

			if (n > 0) {
				off += (size_t)n;
				wt->progress += (uint64_t)n;
			} else if (n == 0 || errno == ECONNRESET || errno == EPIPE) {
				*done = off;
				return -EPIPE;
			} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				*done = off;
				snprintf(w->error, sizeof(w->error), "%s while waiting for %s: %s", out ? "send" : "recv",
					 what, strerror(errno));
				return -EIO;
			}
		}
		if ((rc = vb_watch_check(w, wt))) {
			*done = off;
			return rc;
		}
	}
	*done = off;
	return 0;
}

/* Reject frame: magic, VB_HDR_REJECT, text length, text.  Best effort (the peer may be gone). */
static void vb_tcp_reject(int fd, const char *why)
{
	uint8_t m[8 + 200];
	uint32_t magic = htobe32(VB_HDR_MAGIC);
	uint16_t ver = htobe16(VB_HDR_REJECT), n = (uint16_t)strnlen(why, 200), nbe = htobe16(n);

	memcpy(m, &magic, 4);
	memcpy(m + 4, &ver, 2);
	memcpy(m + 6, &nbe, 2);
	memcpy(m + 8, why, n);
	if (send(fd, m, 8 + (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return;
}

/*
 * Read the peer's header and QP info: *msg (malloc'd) holds the QP-info
 * block.  0; -EBADMSG (not pairbench-verbs, or another protocol version:
 * why in w->error); -EPROTO (options differ, or a broken QP-info block);
 * -ECONNREFUSED (a reject frame: its text in w->error); -EPIPE (closed
 * before a header, *got bytes of it); errors of the wait.
 */
static int vb_tcp_read_hello(struct vb_worker *w, int fd, struct vb_watch *wt, const char *what, uint8_t **msg,
			     size_t *got)
{
	uint8_t head[VB_HDR_WIRE_BYTES], fixed[VB_QPINFO_FIXED_BYTES];
	uint16_t ver, tlen;
	uint32_t nqp;
	size_t n, len;
	struct vb_qpinfo qi;
	int rc;

	*msg = NULL;
	rc = vb_tcp_xfer(w, fd, head, 8, false, wt, what, got);
	if (rc == -EPIPE && *got) {
		vb_hdr_decode(head, *got, &(struct vb_hdr){ 0 }, w->error, sizeof(w->error));
		return -EBADMSG;
	}
	if (rc)
		return rc;
	if (!vb_hdr_has_magic(head, 8)) {
		vb_hdr_decode(head, 8, &(struct vb_hdr){ 0 }, w->error, sizeof(w->error));
		return -EBADMSG;
	}
	memcpy(&ver, head + 4, 2);
	if (be16toh(ver) == VB_HDR_REJECT) {
		char text[256];

		memcpy(&tlen, head + 6, 2);
		tlen = be16toh(tlen);
		if (tlen > sizeof(text) - 1)
			tlen = sizeof(text) - 1;
		rc = vb_tcp_xfer(w, fd, (uint8_t *)text, tlen, false, wt, what, &n);
		text[rc ? n : tlen] = 0;
		snprintf(w->error, sizeof(w->error), "%s", text);
		return -ECONNREFUSED;
	}
	if ((rc = vb_tcp_xfer(w, fd, head + 8, VB_HDR_WIRE_BYTES - 8, false, wt, what, &n))) {
		if (rc == -EPIPE) {
			vb_hdr_decode(head, 8 + n, &(struct vb_hdr){ 0 }, w->error, sizeof(w->error));
			return -EBADMSG;
		}
		return rc;
	}
	if ((rc = vb_hdr_check(w, head, VB_HDR_WIRE_BYTES)))
		return rc;
	/* A pairbench-verbs peer of our version and options: what follows must be its QP info. */
	if ((rc = vb_tcp_xfer(w, fd, fixed, sizeof(fixed), false, wt, what, &n)))
		goto broken;
	nqp = vb_qpinfo_count(fixed, sizeof(fixed));
	if (nqp < 1 || nqp > VB_MAX_QPS) {
		vb_qpinfo_decode(fixed, sizeof(fixed), &qi, w->error, sizeof(w->error));
		return -EPROTO;
	}
	len = vb_qpinfo_wire_bytes(nqp);
	if (!(*msg = malloc(len))) {
		snprintf(w->error, sizeof(w->error), "cannot allocate %zu B for the peer's QP info", len);
		return -ENOMEM;
	}
	memcpy(*msg, fixed, sizeof(fixed));
	if ((rc = vb_tcp_xfer(w, fd, *msg + sizeof(fixed), len - sizeof(fixed), false, wt, what, &n)))
		goto broken;
	if (vb_qpinfo_decode(*msg, len, &qi, w->error, sizeof(w->error)))
		return -EPROTO;
	return 0;
broken:
	if (rc == -EPIPE)
		snprintf(w->error, sizeof(w->error), "the peer closed the connection in its QP info");
	return rc == -EPIPE ? -EPROTO : rc;
}

/* Open the device the probe chose (rdma_cm would find it from the address). 0 or -errno. */
static int vb_tcp_open(struct vb_worker *w)
{
	const char *want = w->dev->device;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n = 0;

	if (!(list = ibv_get_device_list(&n))) {
		snprintf(w->error, sizeof(w->error), "ibv_get_device_list: %s", strerror(errno));
		return -ENODEV;
	}
	for (int i = 0; i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), want) && !(ctx = ibv_open_device(list[i])))
			snprintf(w->error, sizeof(w->error), "ibv_open_device(%s): %s", want, strerror(errno));
	ibv_free_device_list(list);
	if (!ctx) {
		if (!w->error[0])
			snprintf(w->error, sizeof(w->error), "device %s is gone", want);
		return -ENODEV;
	}
	w->verbs = ctx;
	w->verbs_own = true;
	return vb_res_create(w, ctx);
}

/* Our hello: header, then the QP-info block with a fresh PSN per QP.  0 or -errno. */
static int vb_tcp_local(struct vb_worker *w, uint8_t **msg, size_t *len, struct vb_qpinfo *qi)
{
	const struct vb_probe *pr = w->dev;
	uint8_t port = (uint8_t)w->p->ib_port;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int rc;

	memset(qi, 0, sizeof(*qi));
	if ((rc = ibv_query_port(w->verbs, port, &pa))) {
		snprintf(w->error, sizeof(w->error), "ibv_query_port(%s, %u): %s", pr->device, port, strerror(rc));
		return -EIO;
	}
	if (pr->gid_index > 255) {
		snprintf(w->error, sizeof(w->error), "--cm tcp: GID index %d is above 255 (use -x)", pr->gid_index);
		return -EINVAL;
	}
	if ((rc = ibv_query_gid(w->verbs, port, pr->gid_index, &gid))) {
		snprintf(w->error, sizeof(w->error), "ibv_query_gid(%s, %u, %d): %s", pr->device, port, pr->gid_index,
			 strerror(errno));
		return -EIO;
	}
	qi->nqp = w->nqp;
	qi->lid = pa.lid;
	qi->link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? 2 : 1;
	qi->mtu = (uint8_t)pa.active_mtu;
	qi->rd_atom = (uint8_t)vb_rd_atom(w);
	qi->gid_index = (uint8_t)pr->gid_index;
	memcpy(qi->gid, gid.raw, 16);
	*len = VB_HDR_WIRE_BYTES + vb_qpinfo_wire_bytes(w->nqp);
	if (!(*msg = malloc(*len))) {
		snprintf(w->error, sizeof(w->error), "cannot allocate %zu B for our QP info", *len);
		return -ENOMEM;
	}
	vb_hdr_make(w, *msg);
	vb_qpinfo_encode(qi, *msg + VB_HDR_WIRE_BYTES);
	for (unsigned i = 0; i < w->nqp; i++)
		vb_qpinfo_put_entry(*msg + VB_HDR_WIRE_BYTES, i, w->qps[i]->qp_num, vb_psn_random());
	return 0;
}

/*
 * The transitions' attributes from both QP infos: LID on InfiniBand (a GRH
 * too when -x is given), GID on RoCE; path MTU = --mtu or the smaller active
 * MTU; read depth = the smaller offer.  0 or -EPROTO (the ports do not fit).
 */
static int vb_tcp_tmpl(struct vb_worker *w, const struct vb_qpinfo *mine, const struct vb_qpinfo *peer)
{
	struct vb_qp_tmpl *t = &w->tmpl;
	struct vb_worker_report *rep = &w->shared->w[w->member];
	bool roce = mine->link_layer == 2;
	uint8_t rd = mine->rd_atom < peer->rd_atom ? mine->rd_atom : peer->rd_atom;

	if (peer->link_layer != mine->link_layer) {
		snprintf(w->error, sizeof(w->error), "the peer's port is %s, this side's %s: they cannot connect",
			 peer->link_layer == 2 ? "Ethernet (RoCE)" : "InfiniBand", roce ? "Ethernet (RoCE)" : "InfiniBand");
		return -EPROTO;
	}
	if (!roce && !peer->lid) {
		snprintf(w->error, sizeof(w->error), "the peer's InfiniBand port has LID 0 (no subnet manager yet?)");
		return -EPROTO;
	}
	memset(t, 0, sizeof(*t));
	t->init.qp_state = IBV_QPS_INIT;
	t->init.port_num = (uint8_t)w->p->ib_port;
	/* Remote read for every test: the peer's progress reads of our ctrl words. */
	t->init.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				  (w->test->op == VB_OP_ATOMIC ? IBV_ACCESS_REMOTE_ATOMIC : 0);
	t->init_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	t->rtr.qp_state = IBV_QPS_RTR;
	t->rtr.path_mtu = w->p->mtu ? (enum ibv_mtu)vb_mtu_enum(w->p->mtu) :
				      (enum ibv_mtu)(mine->mtu < peer->mtu ? mine->mtu : peer->mtu);
	t->rtr.max_dest_rd_atomic = rd;
	t->rtr.min_rnr_timer = 12;
	t->rtr.ah_attr.port_num = (uint8_t)w->p->ib_port;
	t->rtr.ah_attr.dlid = roce ? 0 : peer->lid;
	if (roce || w->p->gid_index_v >= 0) {
		t->rtr.ah_attr.is_global = 1;
		memcpy(t->rtr.ah_attr.grh.dgid.raw, peer->gid, 16);
		t->rtr.ah_attr.grh.sgid_index = mine->gid_index;
		t->rtr.ah_attr.grh.hop_limit = 64;
	}
	t->rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	t->rts.qp_state = IBV_QPS_RTS;
	t->rts.timeout = 14;
	t->rts.retry_cnt = 7;
	t->rts.rnr_retry = 7;
	t->rts.max_rd_atomic = rd;
	t->rts_mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
		      IBV_QP_MAX_QP_RD_ATOMIC;
	rep->path_mtu = vb_mtu_bytes(t->rtr.path_mtu);
	rep->sgid_index = t->rtr.ah_attr.is_global ? mine->gid_index : -1;
	return 0;
}

/* Both QP infos known: every QP to RTS, then one byte each way ("ready"). 0 or -errno. */
static int vb_tcp_finish(struct vb_worker *w, int fd, struct vb_watch *wt, const uint8_t *mine,
			 const struct vb_qpinfo *mqi, const uint8_t *theirs)
{
	struct vb_qpinfo pqi;
	uint8_t r = 'R';
	size_t n;
	int rc;

	vb_qpinfo_decode(theirs, vb_qpinfo_wire_bytes(w->nqp), &pqi, w->error, sizeof(w->error));
	if (pqi.nqp != w->nqp) {
		snprintf(w->error, sizeof(w->error), "the peer has %u QPs, this side %u (--qps)", pqi.nqp, w->nqp);
		return -EPROTO;
	}
	if ((rc = vb_tcp_tmpl(w, mqi, &pqi)))
		return rc;
	for (unsigned i = 0; i < w->nqp; i++) {
		uint32_t dqpn, rq_psn, qpn, sq_psn;

		vb_qpinfo_entry(theirs, i, &dqpn, &rq_psn);
		vb_qpinfo_entry(mine, i, &qpn, &sq_psn);
		if ((rc = vb_qp_bringup(w, i, dqpn, rq_psn, sq_psn)))
			return rc;
	}
	/* Nobody posts before the peer's QPs can receive. */
	if ((rc = vb_tcp_xfer(w, fd, &r, 1, true, wt, "the peer's ready byte", &n)) ||
	    (rc = vb_tcp_xfer(w, fd, &r, 1, false, wt, "the peer's ready byte", &n))) {
		if (rc == -EPIPE) {
			snprintf(w->error, sizeof(w->error), "the peer closed the connection before its QPs were ready");
			return -EIO;
		}
		return rc;
	}
	return 0;
}

/* One attempt of the client. 0, -EAGAIN (retry), or a fatal -errno. */
static int vb_tcp_try(struct vb_worker *w, const struct sockaddr_in *dst, struct vb_watch *wt, uint8_t *hello,
		      size_t hello_len, const struct vb_qpinfo *mqi)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), rc = -EAGAIN, err = 0;
	uint64_t until = pb_clock_now_ns() + VB_TCP_CONNECT_NS;
	socklen_t el = sizeof(err);
	uint8_t *theirs = NULL;
	size_t n;

	if (fd < 0) {
		snprintf(w->error, sizeof(w->error), "socket: %s", strerror(errno));
		return -EIO;
	}
	if (connect(fd, (const struct sockaddr *)dst, sizeof(*dst)) && errno != EINPROGRESS)
		goto out;  /* refused at once: nobody listens (yet) */
	wt->what = "the server";
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };

		if (poll(&pfd, 1, 50) > 0)
			break;
		if ((rc = vb_watch_check(w, wt)))
			goto out;
		if (pb_clock_now_ns() > until) {
			rc = -EAGAIN;
			goto out;
		}
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
		rc = -EAGAIN;
		goto out;
	}
	if ((rc = vb_tcp_xfer(w, fd, hello, hello_len, true, wt, "the server", &n)))
		goto gone;
	rc = vb_tcp_read_hello(w, fd, wt, "the server's answer", &theirs, &n);
	if (rc == -ECONNREFUSED) {
		char why[sizeof(w->error)];

		snprintf(why, sizeof(why), "%s", w->error);
		snprintf(w->error, sizeof(w->error), "server rejected the connection: %.200s", why);
		rc = -EPROTO;
	} else if (rc == -EBADMSG) {
		rc = -EPROTO;  /* something answers there, but not a pairbench-verbs server of our version */
	} else if (!rc) {
		rc = vb_tcp_finish(w, fd, wt, hello + VB_HDR_WIRE_BYTES, mqi, theirs);
	}
gone:
	if (rc == -EPIPE)
		rc = -EAGAIN;  /* the server went away before it answered: as with rdma_cm, try again */
out:
	free(theirs);
	close(fd);
	return rc;
}

static int vb_tcp_client(struct vb_worker *w, uint8_t *hello, size_t hello_len, const struct vb_qpinfo *mqi)
{
	unsigned port = w->port;
	struct sockaddr_in dst;
	struct vb_watch wt;
	uint64_t deadline, t0;
	unsigned attempts = 0;
	int rc;

	if ((rc = vb_sockaddr(w, w->peer_host, port, &dst)))
		return rc;
	vb_watch_start(w, &wt, "the server", false);
	t0 = wt.since_ns;
	deadline = wt.since_ns + w->timeout_ns;
	for (;;) {
		attempts++;
		rc = vb_tcp_try(w, &dst, &wt, hello, hello_len, mqi);
		if (rc == -ETIMEDOUT) {
			snprintf(w->error, sizeof(w->error),
				 "no server answered at %s port %u within %.1f s (still waiting for %s; start the server side, or check the address)",
				 w->peer_host, port, (double)(pb_clock_now_ns() - wt.since_ns) / 1e9, wt.what);
			break;
		}
		if (rc != -EAGAIN)
			break;
		struct timespec ts = { 0, 100 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		if (pb_clock_now_ns() > deadline) {
			snprintf(w->error, sizeof(w->error),
				 "no server answered at %s port %u within %.1f s (start the server side, or check the address; start order does not matter within --timeout)",
				 w->peer_host, port, (double)(pb_clock_now_ns() - wt.since_ns) / 1e9);
			return -ETIMEDOUT;
		}
		wt.what = "the server";
		if ((rc = vb_watch_check(w, &wt)))
			return rc;
	}
	if (!rc)
		snprintf(w->peer, sizeof(w->peer), "%s", w->peer_host);
	if (!rc && pb_clock_now_ns() - t0 > VB_SLOW_CONNECT_NS)  /* as rdma_cm's client (vb_cm.c) */
		pb_log_warn("pair %u (client): connected to %s port %u only after %.1f s and %u attempt(s)",
			    w->pair, w->peer_host, port, (double)(pb_clock_now_ns() - t0) / 1e9, attempts);
	return rc;
}

static int vb_tcp_listen(struct vb_worker *w, unsigned port)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0) {
		snprintf(w->error, sizeof(w->error), "socket: %s", strerror(errno));
		return -EIO;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 8)) {
		snprintf(w->error, sizeof(w->error), "cannot listen on * port %u: %s%s", port, strerror(errno),
			 errno == EADDRINUSE ? " (another server running? use --port)" : "");
		close(fd);
		return -EIO;
	}
	return fd;
}

/* A connection that is not our client's: the reason back (best effort), one log line. */
static void vb_tcp_stranger(struct vb_worker *w, int fd, const struct sockaddr_in *from, size_t got)
{
	char ip[64] = "?", why[sizeof(w->error)];

	if (!got && !w->error[0])
		snprintf(w->error, sizeof(w->error), "no connection data: not pairbench-verbs");
	snprintf(why, sizeof(why), "%s", w->error);
	inet_ntop(AF_INET, &from->sin_addr, ip, sizeof(ip));
	pb_log_warn("pair %u (server): rejected a connection from %s: %s; still waiting for the client", w->pair, ip,
		    why);
	vb_tcp_reject(fd, why);
	w->error[0] = 0;
}

static int vb_tcp_server(struct vb_worker *w, uint8_t *hello, size_t hello_len, const struct vb_qpinfo *mqi)
{
	unsigned port = w->port;
	struct sockaddr_in from;
	struct vb_watch wt;
	uint8_t *theirs = NULL;
	int lfd = vb_tcp_listen(w, port), fd = -1, rc;
	size_t n;

	if (lfd < 0)
		return lfd;
	vb_watch_start(w, &wt, "a client to connect", false);
	for (;;) {
		struct pollfd pfd = { .fd = lfd, .events = POLLIN };
		socklen_t sl = sizeof(from);

		wt.what = "a client to connect";
		if (poll(&pfd, 1, 50) <= 0 ||
		    (fd = accept4(lfd, (struct sockaddr *)&from, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC)) < 0) {
			if ((rc = vb_watch_check(w, &wt)))
				goto out;
			continue;
		}
		rc = vb_tcp_read_hello(w, fd, &wt, "the client's header", &theirs, &n);
		if (rc == -EBADMSG || rc == -EPIPE || rc == -ECONNREFUSED) {
			vb_tcp_stranger(w, fd, &from, rc == -EPIPE ? n : 1);
			close(fd);
			fd = -1;
			continue;
		}
		if (rc == -EPROTO) {
			char why[sizeof(w->error)];

			snprintf(why, sizeof(why), "%.199s", w->error);
			vb_tcp_reject(fd, why);
			snprintf(w->error, sizeof(w->error), "rejected the client: %.199s", why);
		}
		if (rc)
			goto out;
		break;
	}
	if ((rc = vb_tcp_xfer(w, fd, hello, hello_len, true, &wt, "the client", &n))) {
		if (rc == -EPIPE) {
			snprintf(w->error, sizeof(w->error), "the client closed the connection before our answer");
			rc = -EIO;
		}
		goto out;
	}
	if ((rc = vb_tcp_finish(w, fd, &wt, hello + VB_HDR_WIRE_BYTES, mqi, theirs)))
		goto out;
	inet_ntop(AF_INET, &from.sin_addr, w->peer, sizeof(w->peer));
out:
	free(theirs);
	if (fd >= 0)
		close(fd);
	close(lfd);
	return rc;
}

static int vb_cm_tcp_connect(struct vb_worker *w)
{
	struct vb_qpinfo mqi;
	uint8_t *hello = NULL;
	size_t len = 0;
	int rc;

	if (!(rc = vb_tcp_open(w)) && !(rc = vb_tcp_local(w, &hello, &len, &mqi)))
		rc = w->side == VB_SERVER ? vb_tcp_server(w, hello, len, &mqi) : vb_tcp_client(w, hello, len, &mqi);
	free(hello);
	return rc;
}

/* Nothing outlives the connection but the verbs resources (vb_res_destroy). */
const struct vb_cm_ops vb_cm_tcp_ops = { .connect = vb_cm_tcp_connect };
