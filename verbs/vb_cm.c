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
 *
 * rdma_cm connects QP 0 of the pair; with --qps N > 1 the other QPs follow
 * over it (vb_qps_connect_rest) with the attributes rdma_cm gave QP 0, which
 * vb_qp_modify() keeps in w->tmpl.
 */
#include "vb_cm.h"

#include "pb_clock.h"
#include "pb_log.h"
#include "pb_opts.h"
#include "vb_dev.h"
#include "vb_fault.h"
#include "vb_handshake.h"
#include "vb_qp.h"
#include "vb_res.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

struct vb_cm_ev {
	enum rdma_cm_event_type type;
	int status;
	struct rdma_cm_id *id;
	uint8_t pdata[256];
	uint8_t pdata_len;
	uint8_t initiator_depth, responder_resources;
};

/* Next rdma_cm event, within the connect wait's deadline (--timeout from its start). */
/* Is the channel's fd still the file it was opened as (not closed, not reused by another open)?
 * 0, or -EBADF with w->error saying what the fd is now. */
static int vb_cm_channel_check(struct vb_worker *w)
{
	struct stat st;
	int fd = w->ch->fd;

	if (fstat(fd, &st)) {
		snprintf(w->error, sizeof(w->error), "its rdma_cm event channel (fd %d) was closed under it (%s)", fd,
			 strerror(errno));
		return -EBADF;
	}
	if ((unsigned long)st.st_rdev != w->ch_rdev || (unsigned long)st.st_ino != w->ch_ino) {
		snprintf(w->error, sizeof(w->error),
			 "its rdma_cm event channel (fd %d) was closed under it: the fd is now another file (device %lu:%lu, inode %lu)",
			 fd, (unsigned long)major(st.st_rdev), (unsigned long)minor(st.st_rdev),
			 (unsigned long)st.st_ino);
		return -EBADF;
	}
	return 0;
}

/* The closecm fault (vb_fault.h): a server's channel fd, 1 s after it was opened while the server
 * waits for its client, closed and its number taken by /dev/null (what a double close does). */
static void vb_cm_fault_close(struct vb_worker *w)
{
	if (w->ch_fault_done || w->side != VB_SERVER || w->id || !vb_fault_on(VB_FAULT_CLOSE_CM) ||
	    pb_clock_now_ns() - w->ch_opened_ns < 1000000000ull)
		return;
	w->ch_fault_done = true;
	pb_log_warn("fault injection: pair %u (server) closes its rdma_cm channel (fd %d) and opens /dev/null",
		    w->pair, w->ch->fd);
	close(w->ch->fd);
	if (open("/dev/null", O_RDONLY) < 0) /* takes the lowest free number: the channel's */
		pb_log_warn("fault injection: open /dev/null: %s", strerror(errno));
}

/*
 * The next rdma_cm event.  A channel that fails (its fd closed or replaced under us: poll's
 * POLLNVAL, a read that is not "nothing yet", or, checked every second, an fd that is no longer
 * the file it was opened as) is -EBADF with w->error saying so: never a silent wait until the
 * deadline (a server whose listen was gone with its channel sat out --timeout without a word).
 */
static int vb_cm_wait(struct vb_worker *w, struct vb_watch *wt, struct vb_cm_ev *ev, const char *what)
{
	struct rdma_cm_event *e;
	struct pollfd pfd = { .fd = w->ch->fd, .events = POLLIN };
	int rc;

	wt->what = what;
	for (;;) {
		vb_cm_fault_close(w);
		int n = poll(&pfd, 1, 50);
		uint64_t now;

		if (n > 0 && (pfd.revents & POLLNVAL)) {
			if (!vb_cm_channel_check(w))
				snprintf(w->error, sizeof(w->error),
					 "its rdma_cm event channel (fd %d) is not open (poll: POLLNVAL)", pfd.fd);
			return -EBADF;
		}
		if (n > 0) {
			if (rdma_get_cm_event(w->ch, &e) == 0)
				break;
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				int err = errno;

				if ((rc = vb_cm_channel_check(w)))
					return rc;
				snprintf(w->error, sizeof(w->error), "rdma_get_cm_event on its channel (fd %d): %s",
					 pfd.fd, strerror(err));
				return -EBADF;
			}
		}
		now = pb_clock_now_ns();
		if (now - w->ch_checked_ns >= 1000000000ull) {
			w->ch_checked_ns = now;
			if ((rc = vb_cm_channel_check(w)))
				return rc;
		}
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
	/* The other QPs of --qps take the same attributes (their own QP numbers and PSNs). */
	if (state == IBV_QPS_INIT) {
		w->tmpl.init = attr;
		w->tmpl.init_mask = mask | IBV_QP_ACCESS_FLAGS;
	} else if (state == IBV_QPS_RTR) {
		w->tmpl.rtr = attr;
		w->tmpl.rtr_mask = mask;
	} else if (state == IBV_QPS_RTS) {
		w->tmpl.rts = attr;
		w->tmpl.rts_mask = mask;
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
	struct stat st;

	if (fstat(w->ch->fd, &st)) {
		snprintf(w->error, sizeof(w->error), "fstat of the rdma_cm channel: %s", strerror(errno));
		return -EIO;
	}
	w->ch_rdev = (unsigned long)st.st_rdev;
	w->ch_ino = (unsigned long)st.st_ino;
	w->ch_opened_ns = w->ch_checked_ns = pb_clock_now_ns();
	return 0;
}

static void vb_conn_param(const struct vb_worker *w, struct rdma_conn_param *cp, void *pdata,
			  uint8_t initiator_depth, uint8_t responder_resources)
{
	int rd = vb_rd_atom(w);

	memset(cp, 0, sizeof(*cp));
	cp->private_data = pdata;
	cp->private_data_len = VB_HDR_WIRE_BYTES;
	cp->initiator_depth = (uint8_t)(rd < initiator_depth ? rd : initiator_depth);
	cp->responder_resources = (uint8_t)(rd < responder_resources ? rd : responder_resources);
	cp->retry_count = 7;
	cp->rnr_retry_count = 7;
	cp->qp_num = w->qp->qp_num;
}

/* The outcome of an attempt that will be retried, for the message when none succeeded. */
static int vb_cm_again(char *last, size_t len, const char *step, const struct vb_cm_ev *ev)
{
	if (ev)
		snprintf(last, len, "%s: %s (status %d)", step, rdma_event_str(ev->type), ev->status);
	else
		snprintf(last, len, "%s: %s", step, strerror(errno));
	return -EAGAIN;
}

/* One connection attempt. Returns 0, -EAGAIN (retry; `last` says why), or a fatal -errno. */
static int vb_cm_try(struct vb_worker *w, const struct sockaddr_in *dst, struct vb_watch *wt, char *last,
		     size_t len)
{
	uint8_t h[VB_HDR_WIRE_BYTES];
	struct rdma_conn_param cp;
	struct vb_cm_ev ev;
	int rc;

	if (rdma_create_id(w->ch, &w->id, w, RDMA_PS_TCP)) {
		snprintf(w->error, sizeof(w->error), "rdma_create_id: %s", strerror(errno));
		return -EIO;
	}
	/* Several devices: resolve from this worker's own device (its IPv4 GID), not by routing. */
	struct sockaddr_in src = { .sin_family = AF_INET };

	if (w->bind_src && inet_pton(AF_INET, w->dev->ipv4, &src.sin_addr) != 1)
		w->bind_src = false;
	if (rdma_resolve_addr(w->id, w->bind_src ? (struct sockaddr *)&src : NULL, (struct sockaddr *)dst, 2000))
		return vb_cm_again(last, len, "rdma_resolve_addr", NULL);
	if ((rc = vb_cm_wait(w, wt, &ev, "address resolution")))
		return rc;
	if (ev.type != RDMA_CM_EVENT_ADDR_RESOLVED)
		return vb_cm_again(last, len, "address resolution", &ev);
	if (rdma_resolve_route(w->id, 2000))
		return vb_cm_again(last, len, "rdma_resolve_route", NULL);
	if ((rc = vb_cm_wait(w, wt, &ev, "route resolution")))
		return rc;
	if (ev.type != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return vb_cm_again(last, len, "route resolution", &ev);
	if (!w->qp && (rc = vb_res_create(w, w->id->verbs)))
		return rc;
	if ((rc = vb_qp_modify(w, w->id, IBV_QPS_RESET)) || (rc = vb_qp_modify(w, w->id, IBV_QPS_INIT)))
		return rc;
	vb_hdr_make(w, h);
	vb_conn_param(w, &cp, h, 16, 16);
	if (rdma_connect(w->id, &cp)) {
		snprintf(w->error, sizeof(w->error), "rdma_connect: %s", strerror(errno));
		return vb_cm_again(last, len, "rdma_connect", NULL);
	}
	if ((rc = vb_cm_wait(w, wt, &ev, "the server's answer")))
		return rc;
	if (ev.type == RDMA_CM_EVENT_REJECTED) {
		if (ev.pdata_len > 4 && vb_hdr_has_magic(ev.pdata, ev.pdata_len)) {
			snprintf(w->error, sizeof(w->error), "server rejected the connection: %.*s",
				 ev.pdata_len - 4, (char *)ev.pdata + 4);
			return -EPROTO;
		}
		return vb_cm_again(last, len, "connect", &ev); /* nobody listens (yet) */
	}
	if (ev.type != RDMA_CM_EVENT_CONNECT_RESPONSE)
		return vb_cm_again(last, len, "connect", &ev);
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
	unsigned port = w->port;
	struct sockaddr_in dst;
	struct vb_watch wt;
	uint64_t deadline, t0;
	char last[64] = "none finished";
	unsigned attempts = 0;
	int rc;

	if ((rc = vb_sockaddr(w, w->peer_host, port, &dst)))
		return rc;
	vb_watch_start(w, &wt, "the server", false);
	t0 = wt.since_ns;
	deadline = wt.since_ns + w->timeout_ns;
	for (;;) {
		attempts++;
		rc = vb_cm_try(w, &dst, &wt, last, sizeof(last));
		if (rc == -ETIMEDOUT) {
			snprintf(w->error, sizeof(w->error),
				 "no server answered at %s port %u within %.1f s (still waiting for %s; start the server side, or check the address)",
				 w->peer_host, port, (double)(pb_clock_now_ns() - wt.since_ns) / 1e9, wt.what);
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
				 "no server answered at %s port %u within %.1f s (start the server side, or check the address; start order does not matter within --timeout; last attempt: %.60s)",
				 w->peer_host, port, (double)(pb_clock_now_ns() - wt.since_ns) / 1e9, last);
			return -ETIMEDOUT;
		}
		wt.what = "the server";
		if ((rc = vb_watch_check(w, &wt)))
			return rc;
	}
	/* Late (VB_SLOW_CONNECT_NS): say so, with what the failed attempts met. */
	if (!rc && pb_clock_now_ns() - t0 > VB_SLOW_CONNECT_NS)
		pb_log_warn("pair %u (client): connected to %s port %u only after %.1f s and %u attempt(s) (%s%.60s)",
			    w->pair, w->peer_host, port, (double)(pb_clock_now_ns() - t0) / 1e9, attempts,
			    attempts > 1 ? "the last failed one: " : "", attempts > 1 ? last : "the one attempt waited");
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

/* A listening id on sa, on the worker's channel; 0 or -EIO with w->error. */
static int vb_cm_listen(struct vb_worker *w, const struct sockaddr_in *sa, const char *bind_ip)
{
	if (rdma_create_id(w->ch, &w->listen_id, w, RDMA_PS_TCP)) {
		snprintf(w->error, sizeof(w->error), "rdma_create_id: %s", strerror(errno));
		return -EIO;
	}
	if (rdma_bind_addr(w->listen_id, (struct sockaddr *)sa) || rdma_listen(w->listen_id, 4)) {
		snprintf(w->error, sizeof(w->error), "cannot listen on %.64s port %u: %s%s",
			 bind_ip && *bind_ip ? bind_ip : "*", ntohs(sa->sin_port), strerror(errno),
			 errno == EADDRINUSE ? " (another server running? use --port)" : "");
		return -EIO;
	}
	return 0;
}

/*
 * The channel failed under a waiting server (vb_cm_wait: -EBADF): its listen went with it (the
 * kernel drops a channel's ids when its file is closed; clients get REJECTED, status 8, "no
 * listener"). Said, then a new channel and listen on the same address. The old channel and ids
 * are abandoned, not closed or destroyed: their fd number may belong to another file now.
 */
static int vb_cm_relisten(struct vb_worker *w, const struct sockaddr_in *sa, const char *bind_ip)
{
	int rc;

	pb_log_warn("pair %u (server): while waiting for a client, %s: its listen on port %u is gone; "
		    "listening again on a new channel", w->pair, w->error, ntohs(sa->sin_port));
	w->error[0] = 0;
	w->ch = NULL;
	w->listen_id = NULL;
	if ((rc = vb_cm_channel(w)))
		return rc;
	return vb_cm_listen(w, sa, bind_ip);
}

/* Wait for our client's connect request; strangers are rejected and the wait goes on; a failed
 * channel is said and replaced (vb_cm_relisten). */
static int vb_cm_accept_wait(struct vb_worker *w, struct vb_watch *wt, struct vb_cm_ev *ev,
			     const struct sockaddr_in *sa, const char *bind_ip)
{
	char why[sizeof(w->error)];
	int rc;

	for (;;) {
		rc = vb_cm_wait(w, wt, ev, "a client to connect");
		if (rc == -EBADF && !(rc = vb_cm_relisten(w, sa, bind_ip)))
			continue;
		if (rc)
			return rc;
		if (ev->type == RDMA_CM_EVENT_DEVICE_REMOVAL && ev->id == w->listen_id) {
			snprintf(w->error, sizeof(w->error),
				 "the device was removed while waiting for a client (RDMA_CM_EVENT_DEVICE_REMOVAL)");
			return -EIO;  /* a failed run (1), not "no device here" (-ENODEV: 77) */
		}
		if (ev->type != RDMA_CM_EVENT_CONNECT_REQUEST) {
			/* Nothing else is expected here: said, not skipped in silence (a server whose
			 * listen vanished after a stranger's rejection left no trace of why). */
			pb_log_warn("pair %u (server): while waiting for a client: %s (status %d) on %s; "
				    "still waiting",
				    w->pair, rdma_event_str(ev->type), ev->status,
				    ev->id == w->listen_id ? "the listening id" : "another connection's id");
			continue;
		}
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
	unsigned port = w->port;
	const char *bind_ip = w->p->loopback ? w->peer_host :
			      w->p->pattern && w->p->pat_self_addr[0] ? w->p->pat_self_addr : w->dev->ipv4;
	uint8_t h[VB_HDR_WIRE_BYTES];
	struct rdma_conn_param cp;
	struct sockaddr_in sa;
	struct vb_watch wt;
	struct vb_cm_ev ev;
	int rc;

	if ((rc = vb_sockaddr(w, bind_ip, port, &sa)) || (rc = vb_cm_listen(w, &sa, bind_ip)))
		return rc;
	vb_watch_start(w, &wt, "a client to connect", false);
	if ((rc = vb_cm_accept_wait(w, &wt, &ev, &sa, bind_ip)))
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
static int vb_qps_connect_rest(struct vb_worker *w)
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

static int vb_cm_rdma_connect(struct vb_worker *w)
{
	int rc = vb_cm_channel(w);

	if (rc)
		return rc;
	rc = w->side == VB_SERVER ? vb_cm_server(w) : vb_cm_client(w);
	if (!rc && w->side == VB_CLIENT)
		snprintf(w->peer, sizeof(w->peer), "%s", w->peer_host);
	if (!rc && w->nqp > 1)
		rc = vb_qps_connect_rest(w);
	return rc;
}

static void vb_cm_rdma_disconnect(struct vb_worker *w)
{
	if (w->id && w->qp)
		rdma_disconnect(w->id);
}

static void vb_cm_rdma_close(struct vb_worker *w)
{
	if (w->id)
		rdma_destroy_id(w->id);
	if (w->listen_id)
		rdma_destroy_id(w->listen_id);
	if (w->ch)
		rdma_destroy_event_channel(w->ch);
	w->id = w->listen_id = NULL;
	w->ch = NULL;
}

const struct vb_cm_ops vb_cm_rdma_ops = {
	.connect = vb_cm_rdma_connect,
	.disconnect = vb_cm_rdma_disconnect,
	.close = vb_cm_rdma_close,
};
