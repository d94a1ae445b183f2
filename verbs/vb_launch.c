/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The launcher of one node: probe the device in a short-lived child, check
 * the run against it, plan placement, create the shm segment, fork every
 * worker (before any ibv_* call in this process), supervise them until they
 * ended (vb_reap.c); write the environment record.
 *
 * Members of the shm group: loopback = clients of pairs 0..N-1 (member i)
 * then their servers (member N+i); --server / --connect = that side's N
 * workers.  Member 0 is the client of pair 0: the leader that writes rows.
 */
#include "vb_launch.h"

#include "pb_flags.h"
#include "pb_log.h"
#include "pb_run.h"
#include "vb_cm.h"
#include "vb_cntseries.h"
#include "vb_counters.h"
#include "vb_dev.h"
#include "vb_devmap.h"
#include "vb_fault.h"
#include "vb_probe.h"
#include "vb_qp.h"
#include "vb_res.h"
#include "vb_signal.h"
#include "vb_soak.h"
#include "vb_validate.h"
#include "vb_xstart.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * Probe the device in a child process; the launcher stays free of ibv_* calls.
 * The child is named "pbv-probe" (ps, tests: not a worker).  Its deadline is
 * --timeout but at least 30 s: a device query is no peer wait, and opening a
 * device can take seconds on a loaded machine.
 */
#define VB_PROBE_MIN_NS 30000000000ull

static int vb_probe(struct vb_launch *L)
{
	uint64_t limit = (uint64_t)(L->p->c.timeout_s * 1e9);
	uint64_t deadline = pb_clock_now_ns() + (limit = limit > VB_PROBE_MIN_NS ? limit : VB_PROBE_MIN_NS);
	int st;
	pid_t pid = fork();

	if (pid < 0) {
		pb_log_error("fork: %s", strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		vb_child_restore_mask();
		prctl(PR_SET_NAME, "pbv-probe", 0, 0, 0);
		_exit(vb_dev_probe(L->p, L->sh) ? 1 : 0);
	}
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			break;
		if (pb_clock_now_ns() > deadline || vb_interrupted) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			if (vb_interrupted)
				return -EINTR;
			pb_log_error("querying the RDMA device took longer than %.0f s", (double)limit / 1e9);
			return -ETIMEDOUT;
		}
		vb_wait_child_event(100);
	}
	if (!WIFEXITED(st)) {
		pb_log_error("the device probe died (signal %d)", WTERMSIG(st));
		return -EIO;
	}
	if (L->sh->probe_rc) {
		pb_log_error("%s", L->sh->probe_error);
		return L->sh->probe_rc;
	}
	if (!L->sh->ndev) {
		pb_log_error("the device probe found no device to use");
		return -ENODEV;
	}
	vb_devmap_assign(L->p, L->sh->ndev, L->dev_of, L->peer_of);
	return 0;
}

/*
 * Loopback: the address each device is reached at.  One device: $PB_RDMA_IP
 * or its IPv4 GID (as before); several: each device's own IPv4 GID.
 */
static int vb_loopback_ips(struct vb_launch *L)
{
	const char *ip = getenv("PB_RDMA_IP");

	for (unsigned d = 0; d < L->sh->ndev; d++) {
		const struct vb_probe *pr = &L->sh->dev[d];
		const char *a = L->sh->ndev == 1 && ip && *ip ? ip : pr->ipv4;

		/* --cm tcp needs no IP on the device: the sides meet on the host's loopback. */
		if (!a[0] && L->p->cm == VB_CM_TCP)
			a = "127.0.0.1";
		if (!a[0]) {
			pb_log_error(L->sh->ndev == 1 ?
				     "--loopback: %s has no IPv4 GID; set PB_RDMA_IP to an IPv4 address of its netdev" :
				     "--loopback: %s has no IPv4 GID (with several devices each is reached at its own IPv4 GID; give its netdev an IPv4 address)",
				     pr->device);
			return -EINVAL;
		}
		snprintf(L->loop_ip[d], sizeof(L->loop_ip[d]), "%s", a);
	}
	return 0;
}

/* Checks that need the device: sizes, MTU, atomics, address, locked memory. */
static int vb_check_device(struct vb_launch *L, const struct vb_probe *pr)
{
	struct vb_params *p = L->p;
	uint64_t need = 2 * ((p->max_size + 4095) / 4096 * 4096) + 4096;
	struct rlimit rl;

	if (pr->max_msg_sz && p->max_size > pr->max_msg_sz) {
		pb_log_error("option --sizes: %llu B is larger than %s allows per message (%u B)",
			     (unsigned long long)p->max_size, pr->device, pr->max_msg_sz);
		return -EINVAL;
	}
	if (pr->max_mr_size && need > pr->max_mr_size) {
		pb_log_error("option --sizes: the buffer (%llu B) is larger than %s's max MR size (%llu B)",
			     (unsigned long long)need, pr->device, (unsigned long long)pr->max_mr_size);
		return -EINVAL;
	}
	if (p->mtu && vb_mtu_enum(p->mtu) > pr->active_mtu) {
		pb_log_error("option --mtu: %llu is above the port's active MTU (%d)", (unsigned long long)p->mtu,
			     vb_mtu_bytes(pr->active_mtu));
		return -EINVAL;
	}
	if (p->test_desc->op == VB_OP_ATOMIC && pr->atomic_cap == IBV_ATOMIC_NONE) {
		pb_log_error("%s does not support atomics: atomic_lat cannot run here", pr->device);
		return -ENOSYS;
	}
	if (p->tx_depth + 4 > (uint64_t)pr->max_qp_wr) {
		pb_log_error("option --tx-depth: %llu is above the device's max_qp_wr (%d) - 4",
			     (unsigned long long)p->tx_depth, pr->max_qp_wr);
		return -EINVAL;
	}
	/* QPs this device may have to hold: every pair's (both sides in loopback) -- an upper
	 * bound when the pairs are spread over several devices. */
	if (vb_qps_check(p, pr, p->loopback ? 2 * p->pairs : p->pairs))
		return -EINVAL;
	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY && geteuid() != 0 &&
	    need + 65536 > rl.rlim_cur) {
		pb_log_error("each worker registers %llu KiB but the locked-memory limit is %llu KiB: raise it "
			     "(ulimit -l unlimited, or 'memlock' in /etc/security/limits.conf; in containers --ulimit memlock=-1)",
			     (unsigned long long)(need + 65536) / 1024, (unsigned long long)rl.rlim_cur / 1024);
		return -ENOMEM;
	}
	return 0;
}

static int vb_check_devices(struct vb_launch *L)
{
	int rc = 0;

	for (unsigned d = 0; d < L->sh->ndev && !rc; d++)
		rc = vb_check_device(L, &L->sh->dev[d]);
	if (!rc && L->p->loopback)
		rc = vb_loopback_ips(L);
	return rc;
}

/* The device of worker member (loopback: clients 0..N-1, then servers). */
static unsigned vb_member_dev(const struct vb_launch *L, unsigned member)
{
	const struct vb_params *p = L->p;

	if (p->loopback && member >= p->pairs)
		return L->peer_of[member - p->pairs];
	return L->dev_of[member % p->pairs];
}

static int vb_plan(struct vb_launch *L)
{
	struct pb_run_facts facts;
	unsigned list[PB_PIN_MAX];
	const char *busids[VB_MAX_WORKERS];
	struct pb_pin_request req;
	char err[256];
	int rc;

	if (L->p->c.pin == PB_PIN_LIST && !L->p->c.pin_list) {
		pb_log_error("--pin list needs --pin-list");
		return -EINVAL;
	}
	if (pb_run_pin_request(&L->p->c, L->members, list, &req, err, sizeof(err))) {
		pb_log_error("option --pin-list: %s", err);
		return -EINVAL;
	}
	req.pci_busid = L->sh->dev[0].pci_busid[0] ? L->sh->dev[0].pci_busid : NULL;
	if (L->sh->ndev > 1) {
		/* Each worker near ITS device. */
		for (unsigned m = 0; m < L->members; m++)
			busids[m] = L->sh->dev[vb_member_dev(L, m)].pci_busid;
		req.pci_busids = busids;
	}
	/*
	 * The PCI part of the topology only where a device has a PCI address to be near: a
	 * software device (rxe, siw) has none, near-device is then compact over all cores, and
	 * loading the I/O objects cost ~2 s per run in the emulated rig (a third of a default
	 * run's point there).
	 */
	bool want_io = false;

	for (unsigned d = 0; d < L->sh->ndev; d++)
		want_io |= L->sh->dev[d].pci_busid[0] != '\0';
	if ((rc = pb_pin_topology_load(&L->topo, req.policy == PB_PIN_NEAR_DEVICE && want_io))) {
		pb_log_error("hwloc topology: %s", strerror(-rc));
		return rc;
	}
	if ((rc = pb_pin_plan_make(L->topo, &req, &L->plan, err, sizeof(err)))) {
		pb_log_error("placement of %u processes: %s", L->members, err);
		return rc;
	}
	if (L->plan.note[0] && !L->p->c.quiet)
		pb_log_info("placement: %s", L->plan.note);
	/* Every worker busy-polls: more of them than CPUs measures the scheduler. */
	facts.busy_procs = L->members;
	facts.cpus = pb_pin_pu_count(L->topo);
	/* The flags of every device the run uses (one set for all rows), and per device the
	 * link rate link_pct may be judged against (0 where it is nominal or unknown). */
	L->flags[0] = 0;
	for (unsigned d = 0; d < L->sh->ndev; d++) {
		char one[sizeof(L->flags)];

		facts.driver = L->sh->dev[d].driver;
		facts.link_gbit_s = L->sh->dev[d].link_gbit_s;
		L->judged_gbit_s[d] = pb_flags_run(&facts, one, sizeof(one));
		pb_flags_merge(L->flags, sizeof(L->flags), one);
	}
	return 0;
}

/* What the rows say about each pair's device (struct pb_pair_label; strings in L->sh). */
static void vb_labels(struct vb_launch *L)
{
	const struct vb_params *p = L->p;

	for (unsigned i = 0; i < p->pairs; i++) {
		const struct vb_probe *d = &L->sh->dev[L->dev_of[i]];

		L->labels[i] = (struct pb_pair_label){
			.device = d->device, .port_addr = d->port_addr, .port = (unsigned)p->ib_port,
			.peer_device = p->loopback ? L->sh->dev[L->peer_of[i]].device : NULL,
			.link_gbit_s = L->judged_gbit_s[L->dev_of[i]] * (p->bidir ? 2 : 1),
		};
	}
}

/* "pairs on devices: rxe0 = 0,2; rxe1 = 1,3" */
static void vb_log_assignment(const struct vb_launch *L)
{
	char text[512];
	size_t len = 0;

	for (unsigned d = 0; d < L->sh->ndev && len < sizeof(text); d++) {
		bool any = false;

		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s = pairs", d ? "; " : "",
					L->sh->dev[d].device);
		for (unsigned i = 0; i < L->p->pairs && len < sizeof(text); i++) {
			if (L->dev_of[i] != d)
				continue;
			len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%u", any ? "," : " ", i);
			any = true;
		}
		if (!any && len < sizeof(text))
			len += (size_t)snprintf(text + len, sizeof(text) - len, " none");
	}
	pb_log_info("devices: %s", text);
}

static const char *vb_variant(const struct vb_params *p)
{
	if (p->variant)
		return p->variant;
	return p->bidir ? "bidir" : NULL;
}

/* While a barrier waits: heartbeat for the launcher, progress word for a remote peer. */
static void vb_worker_idle(void *ctx)
{
	struct vb_worker *w = ctx;

	atomic_fetch_add_explicit(&w->shared->w[w->member].beat, 1, memory_order_relaxed);
	if (w->ctrl)
		w->ctrl->out[1] = shm_sync_progress_count(w->sync);
}

static int vb_worker_init(struct vb_launch *L, unsigned member, struct vb_worker *w)
{
	struct vb_params *p = L->p;
	struct vb_worker_report *rep = &L->sh->w[member];
	struct pb_pin_report pr;
	char err[256];
	int rc;

	memset(w, 0, sizeof(*w));
	w->p = p;
	w->test = p->test_desc;
	w->shared = L->sh;
	w->member = member;
	w->side = vb_member_side(p, member);
	w->pair = member % p->pairs;
	w->link = p->pattern ? p->pat[member].flow : w->pair;
	w->port = (unsigned)p->cm_port + (p->pattern ? p->pat[member].port_off : w->pair);
	w->dev = &L->sh->dev[vb_member_dev(L, member)];
	w->peer_dev = p->loopback ? &L->sh->dev[w->side == VB_CLIENT ? L->peer_of[w->pair] : L->dev_of[w->pair]] : NULL;
	/* loopback: the server listens on, and its client connects to, the server's device */
	w->peer_host = p->loopback ? L->loop_ip[L->peer_of[w->pair]] :
		       p->pattern ? p->pat[member].peer_addr : p->peer_host;
	/* several devices, or a pattern node with its own ADDR (nodes sharing one network
	 * namespace, each with its own device: the route is chosen by the source address) */
	w->bind_src = w->side == VB_CLIENT && (L->sh->ndev > 1 || (p->pattern && p->pat_self_addr[0])) &&
		      w->dev->ipv4[0];
	rep->dev = (int32_t)vb_member_dev(L, member);
	w->measuring = w->side == VB_CLIENT || p->pat_target;
	w->role = vb_test_role(w->test, w->side, w->pair);
	w->sync = L->sync;
	w->timeout_ns = (uint64_t)(p->c.timeout_s * 1e9);
	vb_host_name(p, w->host, sizeof(w->host));
	atomic_store(&rep->pid, (int32_t)getpid());
	if ((rc = shm_sync_join(L->sync, member))) {
		pb_log_error("pair %u: joining the shm group as member %u: %s", w->pair, member, strerror(-rc));
		return rc;
	}
	rc = pb_pin_apply(L->topo, L->plan.pu[member], &pr, err, sizeof(err));
	rep->pu = pr.pu_bound;
	rep->cpu = pr.cpu;
	rep->numa_node = pr.numa_node;
	rep->verified = pr.verified;
	if (rc) {
		snprintf(rep->note, sizeof(rep->note), "%.180s", err);
		pb_log_error("pair %u (%s): pinning to PU %d: %s", w->pair, w->side == VB_CLIENT ? "client" : "server",
			     L->plan.pu[member], err);
		return rc;
	}
	shm_meet_init(&w->meet, L->sync, member, L->ep.pairs, L->max_samples, w->timeout_ns);
	shm_sync_set_idle(L->sync, vb_worker_idle, w);
	return 0;
}

/* The engine's parameters of this run (workers, and the launcher's rows of what is left). */
static struct pb_engine_params vb_engine_params(const struct vb_launch *L)
{
	const struct vb_params *p = L->p;
	struct pb_engine_params ep;

	/* --pattern: the node's clients measure (the rows' pairs); a node that only serves
	 * publishes nothing, as --server (its pairs are then its workers, for the result slots). */
	pb_run_engine_params(&p->test_desc->info, "verbs", &p->c, vb_variant(p), p->tx_depth,
			     p->pattern && p->pat_clients ? p->pat_clients : p->pairs, true, &ep);
	/* The node's capacity: every device used (once); each device's own in its label. */
	ep.link_gbit_s = 0;
	for (unsigned d = 0; d < L->sh->ndev; d++) {
		for (unsigned i = 0; i < p->pairs; i++) {
			if (L->dev_of[i] == d) {
				ep.link_gbit_s += L->judged_gbit_s[d] * (p->bidir ? 2 : 1);
				break;
			}
		}
	}
	ep.labels = L->labels;
	ep.flags = L->flags;
	ep.pattern = p->scan ? p->scan_label : p->pattern ? p->pat_label : NULL;
	ep.qps = p->qps;
	ep.buffers = p->test_desc->info.buffers ? pb_buffers_names[p->buffers] : NULL;
	if (p->soak.soak_s > 0) {
		/* A soak is one common window of --soak seconds (core/pb_soak.h). */
		ep.method = PB_WM_WINDOW;
		ep.duration_s = p->soak.soak_s;
	}
	return ep;
}

/* pb_test_ops.quiet of every verbs worker: the cross-node start (--pattern), then the node
 * leader reads its devices' counters (nobody moves data at either). */
static int vb_worker_quiet(void *tctx, uint64_t msg_size_bytes, bool after)
{
	struct vb_worker *w = tctx;
	int rc = !after && w->p->pattern ? vb_probe_quiet(w) : 0;

	if (rc)
		return rc;
	return w->counters ? vb_counters_edge(w->counters, msg_size_bytes, after) : 0;
}

static int vb_worker_measure(struct vb_launch *L, struct vb_worker *w)
{
	const struct vb_params *p = L->p;
	const struct vb_worker_report *rep = &L->sh->w[w->member];
	struct pb_engine_params ep = L->ep;
	struct pb_engine_role role = {
		.measuring = w->measuring, .leader = w->member == 0 && w->measuring,
		.pair_id = w->pair, .cpu = rep->cpu, .numa_node = rep->numa_node, .host = w->host,
		/* a scan's and a pattern's rows name the peer's node */
		.peer = p->scan ? p->peer_name : p->pattern ? p->pat[w->member].peer_name : w->peer,
	};
	struct pb_sink sink = {
		.csv = role.leader ? L->csv : NULL,
		.table = role.leader && !p->c.quiet ? stderr : NULL,
		.progress = role.leader ? &L->sh->csv_progress : NULL,
	};
	struct pb_test_ops ops = *w->role->ops;
	struct vb_counters counters;
	int rc;

	/* Every process takes part in the quiet moments (their barriers); the leader reads counters. */
	ops.quiet = L->counters || p->pattern ? vb_worker_quiet : NULL;
	if (p->pattern) {
		/* one call around the test's timed op (outside its loop): the row's start flag */
		w->xs_timed = ops.timed;
		ops.timed = vb_xstart_timed;
	}
	/* Member 0 reads the node's counters: the leader, or the first server of a node that
	 * only serves (--server, a --pattern node without clients): both ends of every flow. */
	if (w->member == 0 && L->counters) {
		const char *names[VB_MAX_DEVS], *nets[VB_MAX_DEVS];

		for (unsigned d = 0; d < L->sh->ndev; d++) {
			names[d] = L->sh->dev[d].device;
			nets[d] = L->sh->dev[d].netdev;
		}
		if (!vb_counters_init(&counters, names, nets, L->sh->ndev, (unsigned)p->ib_port, NULL,
				      L->counters))
			w->counters = &counters;
	}
	rc = vb_soak_create(w);
	if (rc)
		snprintf(w->error, sizeof(w->error), "--soak: no memory for the recorder");
	else
		rc = pb_engine_run(&ep, &role, &shm_meet_ops, &w->meet, &ops, w, &sink);
	vb_soak_destroy(w);
	vb_counters_free(w->counters);
	w->counters = NULL;

	if (role.leader && L->csv && (fflush(L->csv) || ferror(L->csv))) {
		/* Said once, here; the launcher does not try the same output again. */
		int e = errno ? errno : EIO;

		L->sh->csv_errno = e;
		snprintf(w->error, sizeof(w->error), "writing the CSV rows to %s failed: %s", vb_output_name(p),
			 strerror(e));
		if (!rc || rc == -EIO)
			rc = -EIO;
	}
	return rc;
}

/* --probe: this node's probe worker (member pairs) runs the probe's test with its own params. */
static int vb_probe_worker(struct vb_launch *L, struct vb_worker *w)
{
	struct vb_params *pp = malloc(sizeof(*pp));

	if (!pp) {
		pb_log_error("victim probe: no memory for its parameters");
		shm_sync_abort(L->sync, (int)w->member, "victim probe: no memory");
		return -ENOMEM;
	}
	*pp = *L->p;
	vb_probe_params(pp);
	w->p = pp;
	w->test = pp->test_desc;
	w->role = vb_test_role(w->test, w->side, 0);
	return 0;
}

/* --probe: the probe client's rows (a file of their own while the workers run) after the node's. */
static void vb_probe_rows_append(struct vb_launch *L)
{
	char buf[4096];
	size_t n;

	if (!L->probe_rows || !L->csv)
		return;
	if (!L->sh->csv_progress && pb_csv_write_header(L->csv))
		return;
	rewind(L->probe_rows);
	while ((n = fread(buf, 1, sizeof(buf), L->probe_rows)) > 0)
		if (fwrite(buf, 1, n, L->csv) != n)
			break;
	fflush(L->csv);
}

static int vb_worker_main(struct vb_launch *L, unsigned member)
{
	struct vb_worker w;
	char who[128];
	const char *side;
	int rc;

	bool probe = L->p->probe_here && member == L->p->pairs;

	vb_signals_install();
	rc = vb_worker_init(L, member, &w);
	if (!rc && probe)
		rc = vb_probe_worker(L, &w);
	/* --pattern: messages name the flow and the peer node (a node that died is named) */
	if (L->p->pattern)
		snprintf(who, sizeof(who), "%s%s of flow %u, peer node %d %s", probe ? "victim probe " : "",
			 w.side == VB_CLIENT ? "client" : "server",
			 L->p->pat[member].flow, L->p->pat[member].peer_node, L->p->pat[member].peer_name);
	else
		snprintf(who, sizeof(who), "%s", w.side == VB_CLIENT ? "client" : "server");
	side = who;
	if (!rc) {
		(void)vb_fault_point(&w, VB_PHASE_CONNECT);  /* an ABORT here: connect's wait says it */
		rc = vb_cm_connect(&w);
		if (rc) {
			char why[560];

			snprintf(why, sizeof(why), "pair %u (%s): connect: %s", w.pair, side, w.error);
			pb_log_error("%s", why);
			shm_meet_ops.fail(&w.meet, why);
		}
	} else {
		shm_sync_abort(L->sync, (int)member, "worker set-up failed");
	}
	if (!rc && L->p->validate) {
		rc = vb_validate_run(&w, L->p->validate_selftest);
		if (rc) {
			pb_log_error("pair %u (%s): validate: %s", w.pair, side, w.error);
			shm_meet_ops.fail(&w.meet, w.error);
		}
	} else if (!rc) {
		rc = probe ? vb_probe_run(&w, &L->ep, L->probe_rows) : vb_worker_measure(L, &w);
		/* A failure the engine found (a barrier, the statistics, a pair's result at collect)
		 * leaves w.error empty; its reason is the group's first, also in the error rows. */
		if (rc && !w.error[0] && rc != -ECANCELED && rc != -EINTR &&
		    !shm_sync_aborted(L->sync, w.error, sizeof(w.error)))
			snprintf(w.error, sizeof(w.error), "%s (the error rows say where)", strerror(-rc));
		if (rc && w.error[0] && rc != -ECANCELED && rc != -EINTR)
			pb_log_error("pair %u (%s): %s", w.pair, side, w.error);
		/* Our own failure: the others stop now instead of waiting for us until --timeout. */
		if (rc && rc != -ECANCELED)
			shm_meet_ops.fail(&w.meet, w.error[0] ? w.error : "a worker failed");
	}
	/* Both sides done with the buffers before either tears down. */
	if (!rc) {
		rc = vb_fault_point(&w, VB_PHASE_FINAL);
		w.closing = true;
		if (!rc && (rc = vb_ctrl_sync(&w)) && rc != -ECANCELED && rc != -EINTR)
			pb_log_error("pair %u (%s): final sync: %s", w.pair, side, w.error);
	}
	vb_cm_teardown(&w);
	shm_meet_cleanup(&w.meet);
	L->sh->w[member].done = 1;
	if (rc == -EPROTO)
		return PB_EXIT_USAGE; /* mismatched options between the sides */
	return pb_exit_code(rc);
}


static int vb_run_workers(struct vb_launch *L)
{
	unsigned m;

	for (m = 0; m < L->members; m++) {
		pid_t pid = fork();

		if (pid < 0) {
			pb_log_error("fork of worker %u: %s", m, strerror(errno));
			shm_sync_abort(L->sync, -1, "fork failed");
			break;
		}
		if (pid == 0) {
			int code;

			vb_child_restore_mask();
			code = vb_worker_main(L, m);

			if (L->csv)
				fflush(L->csv);
			fflush(stderr);
			_exit(code);
		}
		L->pid[m] = pid;
	}
	int code = vb_reap(L);

	vb_complete_rows(L);
	vb_probe_rows_append(L);
	return m < L->members && code == PB_EXIT_OK ? PB_EXIT_RUNTIME : code;
}

/*
 * The last word of a failed run when nobody said why (no error line from the launcher or
 * any worker: a worker ended by the group's abort returns quietly, trusting whoever
 * aborted to have said so): the group's abort reason, else that no reason is known.  A
 * non-zero exit is never silent.
 */
static void vb_unexplained(struct vb_launch *L, int code)
{
	char why[256];

	if (code == PB_EXIT_OK || vb_interrupted || atomic_load(&L->sh->errors_logged))
		return;
	if (L->sync && shm_sync_aborted(L->sync, why, sizeof(why)))
		pb_log_error("the run failed (exit %d): the group was stopped: %s", code, why);
	else
		pb_log_error("the run failed (exit %d) and no process said why (a pairbench-verbs defect: "
			     "please report it with the command line)", code);
}

/* --counters-series: this node's sampler of its devices' counters (vb_cntseries.h); 0 = none. */
static pid_t vb_launch_cntseries(struct vb_launch *L)
{
	const char *devs[VB_MAX_DEVS], *nets[VB_MAX_DEVS];
	char host[64], path[4096];
	struct vb_cntseries_cfg cfg = { .path = path, .host = host, .ndev = L->sh->ndev, .devices = devs,
					.netdevs = nets, .port = (unsigned)L->p->ib_port,
					.interval_s = L->p->cnt_interval_s };
	pid_t pid;

	if (!L->p->cnt_series)
		return 0;
	vb_host_name(L->p, host, sizeof(host));
	snprintf(path, sizeof(path), "%s-%s%s", L->p->cnt_series, host, VB_CNTSERIES_SUFFIX);
	for (unsigned d = 0; d < L->sh->ndev; d++) {
		devs[d] = L->sh->dev[d].device;
		nets[d] = L->sh->dev[d].netdev;
	}
	pid = vb_cntseries_start(&cfg);
	if (pid < 0)
		pb_log_warn("--counters-series: fork of the sampler: %s (no counters over time)", strerror((int)-pid));
	return pid < 0 ? 0 : pid;
}

int vb_launch(struct vb_params *p, FILE *csv, FILE *env)
{
	struct vb_launch L = { .p = p, .csv = csv };
	pid_t cnt_pid = 0;
	int rc, code;

	L.members = (p->loopback ? 2 * p->pairs : p->pairs) + p->probe_here;
	/* Room in each shm result slot: the samples of a count or a target (pb_window.h). */
	struct pb_window_plan w;

	pb_window_plan(&p->c, &p->test_desc->info, true, &w);
	L.max_samples = w.method == PB_WM_WINDOW ? 1 : w.iterations;
	vb_signals_install();
	/* --soak: SIGUSR1 ends the soak at the next poll and keeps it (the workers inherit it). */
	if (p->soak.soak_s > 0 && (rc = pb_soak_stop_on(SIGUSR1))) {
		pb_log_error("--soak: sigaction(SIGUSR1): %s", strerror(-rc));
		return PB_EXIT_RUNTIME;
	}
	vb_block_sigchld();
	L.sh = mmap(NULL, sizeof(*L.sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (L.sh == MAP_FAILED) {
		pb_log_error("mmap: %s", strerror(errno));
		return PB_EXIT_RUNTIME;
	}
	memset(L.sh, 0, sizeof(*L.sh));
	pb_log_count_errors(&L.sh->errors_logged);
	if ((rc = vb_probe(&L)) || (rc = vb_check_devices(&L)) || (rc = vb_plan(&L)))
		goto out;
	vb_labels(&L);
	L.ep = vb_engine_params(&L);
	/* Before the workers exist, so the calibration competes with nothing. */
	if ((rc = pb_run_clock(&p->c, &L.clock)))
		goto out;
	if (p->probe_here && p->probe_client && !(L.probe_rows = tmpfile())) {
		rc = -errno;
		pb_log_error("victim probe: a temporary file for its rows: %s", strerror(errno));
		goto out;
	}
	for (unsigned d = 0; d < L.sh->ndev && !p->c.quiet; d++)
		pb_log_info("device %s port %llu (%s, %s, %.1f Gbit/s data rate), %s, %s%s",
			    L.sh->dev[d].device, (unsigned long long)p->ib_port,
			    L.sh->dev[d].link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand",
			    L.sh->dev[d].rate_text, L.sh->dev[d].link_gbit_s, L.sh->dev[d].gid_note,
			    p->loopback ? "loopback via " : p->pattern ? "pattern " :
			    p->side == VB_SERVER ? "server" : "client of ",
			    p->loopback ? L.loop_ip[d] : p->pattern ? p->pat_label :
			    p->side == VB_CLIENT ? p->peer_host : "");
	if (L.sh->ndev > 1 && !p->c.quiet)
		vb_log_assignment(&L);
	/*
	 * Made by shm_sync's helper process, as pairbench-mpi's node segment: a SIGKILL of the
	 * launcher (a scheduler ending the job, kill -9) between shmget and IPC_RMID cannot
	 * leave the segment behind.
	 */
	rc = shm_sync_create_detached(L.members, 64, shm_meet_extra_bytes(L.ep.pairs, L.max_samples),
				      &L.sync);
	if (rc) {
		pb_log_error("shared-memory segment for %u processes: %s", L.members, strerror(-rc));
		goto out;
	}
	cnt_pid = vb_launch_cntseries(&L);
	/* Before the fork: the leader appends its counter records, the launcher copies them into --env-json. */
	if (env && !(L.counters = tmpfile()))
		pb_log_warn("no port counters in --env-json: temporary file: %s", strerror(errno));
	code = vb_run_workers(&L);
	vb_cntseries_stop(cnt_pid);
	if (vb_interrupted) {
		/* 128 + signal, the shell's convention: callers can tell an interruption from a failure. */
		pb_log_error("interrupted by %s: rows measured so far were written, error rows for the rest",
			     vb_sig_name(vb_interrupted));
		code = 128 + vb_interrupted;
	}
	if (env && (rc = vb_env_write(env, p, L.sh, L.members, L.plan.note, &L.clock, L.counters))) {
		pb_log_error("writing --env-json %s: %s", p->c.env_json, strerror(-rc));
		if (code == PB_EXIT_OK)
			code = PB_EXIT_RUNTIME;
	}
	if (L.counters)
		fclose(L.counters);
	if (L.probe_rows)
		fclose(L.probe_rows);
	vb_unexplained(&L, code);
	shm_sync_detach(L.sync);
	hwloc_topology_destroy(L.topo);
	pb_log_count_errors(NULL);
	munmap(L.sh, sizeof(*L.sh));
	return code;
out:
	if (L.topo)
		hwloc_topology_destroy(L.topo);
	vb_unexplained(&L, pb_exit_code(rc));
	pb_log_count_errors(NULL);
	munmap(L.sh, sizeof(*L.sh));
	if (vb_interrupted) {
		pb_log_error("interrupted by %s before the workers started", vb_sig_name(vb_interrupted));
		return 128 + vb_interrupted;
	}
	return pb_exit_code(rc);
}
