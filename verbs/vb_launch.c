/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The launcher of one node: probe the device in a short-lived child, check
 * the run against it, plan placement, create the shm segment, fork every
 * worker (before any ibv_* call in this process), reap them with waitpid
 * and abort the group when one dies abnormally; write the environment record.
 *
 * Members of the shm group: loopback = clients of pairs 0..N-1 (member i)
 * then their servers (member N+i); --server / --connect = that side's N
 * workers.  Member 0 is the client of pair 0: the leader that writes rows.
 */
#include "vb.h"

#include "pb_clock.h"
#include "pb_log.h"
#include "pb_pin.h"
#include "pb_run.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct vb_launch {
	struct vb_params *p;
	struct vb_shared *sh;
	struct shm_sync *sync;
	hwloc_topology_t topo;
	struct pb_pin_plan plan;
	unsigned members;
	uint64_t max_samples;
	pid_t pid[VB_MAX_WORKERS];
	FILE *csv;
	struct pb_clock_info clock;
};

static void vb_on_signal(int sig)
{
	(void)sig;
	vb_interrupted = 1;
}

static void vb_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = vb_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/*
 * The launcher sleeps until a child changes state, a signal arrives or max_ms
 * passes: SIGCHLD is blocked in the launcher (vb_block_sigchld) and taken with
 * sigtimedwait, so an idle launcher does not wake up while the workers measure
 * (a 5 ms poll used to wake it 200 times a second, on a core of the node
 * under test).
 */
static sigset_t vb_sigchld_set, vb_saved_mask;

static void vb_block_sigchld(void)
{
	sigemptyset(&vb_sigchld_set);
	sigaddset(&vb_sigchld_set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &vb_sigchld_set, &vb_saved_mask);
}

/* In a forked child: the signal mask the launcher started with. */
static void vb_child_restore_mask(void)
{
	sigprocmask(SIG_SETMASK, &vb_saved_mask, NULL);
}

static void vb_wait_child_event(long max_ms)
{
	struct timespec ts = { max_ms / 1000, (max_ms % 1000) * 1000000L };

	sigtimedwait(&vb_sigchld_set, NULL, &ts); /* EAGAIN / EINTR: the caller re-checks */
}

/* Probe the device in a child process; the launcher stays free of ibv_* calls. */
static int vb_probe(struct vb_launch *L)
{
	uint64_t deadline = pb_clock_now_ns() + (uint64_t)(L->p->c.timeout_s * 1e9);
	struct vb_probe *pr = &L->sh->probe;
	int st;
	pid_t pid = fork();

	if (pid < 0) {
		pb_log_error("fork: %s", strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		vb_child_restore_mask();
		_exit(vb_dev_probe(L->p, pr) ? 1 : 0);
	}
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			break;
		if (pb_clock_now_ns() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			pb_log_error("querying the RDMA device took longer than --timeout");
			return -ETIMEDOUT;
		}
		vb_wait_child_event(100);
	}
	if (!WIFEXITED(st)) {
		pb_log_error("the device probe died (signal %d)", WTERMSIG(st));
		return -EIO;
	}
	if (pr->rc) {
		pb_log_error("%s", pr->error);
		return pr->rc;
	}
	return 0;
}

/* Checks that need the device: sizes, MTU, atomics, address, locked memory. */
static int vb_check_device(struct vb_launch *L)
{
	struct vb_params *p = L->p;
	const struct vb_probe *pr = &L->sh->probe;
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
	if (p->loopback) {
		const char *ip = getenv("PB_RDMA_IP");

		p->peer_host = ip && *ip ? ip : pr->ipv4;
		if (!p->peer_host[0]) {
			pb_log_error("--loopback: %s has no IPv4 GID; set PB_RDMA_IP to an IPv4 address of its netdev",
				     pr->device);
			return -EINVAL;
		}
	}
	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY && geteuid() != 0 &&
	    need + 65536 > rl.rlim_cur) {
		pb_log_error("each worker registers %llu KiB but the locked-memory limit is %llu KiB: raise it "
			     "(ulimit -l unlimited, or 'memlock' in /etc/security/limits.conf; in containers --ulimit memlock=-1)",
			     (unsigned long long)(need + 65536) / 1024, (unsigned long long)rl.rlim_cur / 1024);
		return -ENOMEM;
	}
	return 0;
}

static int vb_plan(struct vb_launch *L)
{
	unsigned list[PB_PIN_MAX];
	struct pb_pin_request req = {
		.policy = (enum pb_pin_policy)L->p->c.pin, .nprocs = L->members,
		.allow_oversubscribe = L->p->c.allow_oversubscribe,
		.pci_busid = L->sh->probe.pci_busid[0] ? L->sh->probe.pci_busid : NULL,
	};
	char err[256];
	int rc, n;

	if (req.policy == PB_PIN_LIST) {
		if (!L->p->c.pin_list) {
			pb_log_error("--pin list needs --pin-list");
			return -EINVAL;
		}
		if ((n = pb_pin_parse_list(L->p->c.pin_list, list, PB_PIN_MAX, err, sizeof(err))) < 0) {
			pb_log_error("option --pin-list: %s", err);
			return -EINVAL;
		}
		req.list = list;
		req.nlist = (size_t)n;
	}
	if ((rc = pb_pin_topology_load(&L->topo, req.policy == PB_PIN_NEAR_DEVICE))) {
		pb_log_error("hwloc topology: %s", strerror(-rc));
		return rc;
	}
	if ((rc = pb_pin_plan_make(L->topo, &req, &L->plan, err, sizeof(err)))) {
		pb_log_error("placement of %u processes: %s", L->members, err);
		return rc;
	}
	if (L->plan.note[0] && !L->p->c.quiet)
		pb_log_info("placement: %s", L->plan.note);
	return 0;
}

static const char *vb_variant(const struct vb_params *p)
{
	if (p->variant)
		return p->variant;
	return p->bidir ? "bidir" : NULL;
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
	w->side = p->loopback ? (member < p->pairs ? VB_CLIENT : VB_SERVER) : p->side;
	w->pair = member % p->pairs;
	w->measuring = w->side == VB_CLIENT;
	w->role = vb_test_role(w->test, w->side, w->pair);
	w->sync = L->sync;
	w->timeout_ns = (uint64_t)(p->c.timeout_s * 1e9);
	gethostname(w->host, sizeof(w->host) - 1);
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
	shm_meet_init(&w->meet, L->sync, member, p->pairs, L->max_samples, w->timeout_ns);
	return 0;
}

static int vb_worker_measure(struct vb_launch *L, struct vb_worker *w)
{
	const struct vb_params *p = L->p;
	const struct vb_worker_report *rep = &L->sh->w[w->member];
	struct pb_engine_params ep;
	struct pb_engine_role role = {
		.measuring = w->measuring, .leader = w->member == 0 && w->side == VB_CLIENT,
		.pair_id = w->pair, .cpu = rep->cpu, .numa_node = rep->numa_node, .host = w->host,
		.peer = w->peer,
	};
	struct pb_sink sink = {
		.csv = role.leader ? L->csv : NULL,
		.table = role.leader && !p->c.quiet ? stderr : NULL,
	};
	int rc;

	pb_run_engine_params(&w->test->info, "verbs", &p->c, vb_variant(p), p->tx_depth, p->pairs,
			     &ep);
	ep.link_gbit_s = L->sh->probe.link_gbit_s * (p->bidir ? 2 : 1);
	rc = pb_engine_run(&ep, &role, &shm_meet_ops, &w->meet, w->role->ops, w, &sink);

	if (role.leader && L->csv)
		fflush(L->csv);
	return rc;
}

static int vb_worker_main(struct vb_launch *L, unsigned member)
{
	struct vb_worker w;
	const char *side;
	int rc;

	vb_signals();
	rc = vb_worker_init(L, member, &w);
	side = w.side == VB_CLIENT ? "client" : "server";
	if (!rc) {
		rc = vb_cm_connect(&w);
		if (rc) {
			char why[400];

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
		rc = vb_worker_measure(L, &w);
		if (rc && w.error[0] && rc != -ECANCELED)
			pb_log_error("pair %u (%s): %s", w.pair, side, w.error);
	}
	/* Both sides done with the buffers before either tears down. */
	if (!rc && (rc = vb_ctrl_sync(&w)))
		pb_log_error("pair %u (%s): final sync: %s", w.pair, side, w.error);
	vb_cm_teardown(&w);
	shm_meet_cleanup(&w.meet);
	L->sh->w[member].done = 1;
	if (rc == -EPROTO)
		return PB_EXIT_USAGE; /* mismatched options between the sides */
	return pb_exit_code(rc);
}

static const char *vb_member_side(const struct vb_launch *L, unsigned m)
{
	if (L->p->loopback)
		return m < L->p->pairs ? "client" : "server";
	return L->p->side == VB_SERVER ? "server" : "client";
}

/* Reap every worker; abort the group when one dies abnormally. Returns the exit code. */
static int vb_reap(struct vb_launch *L)
{
	unsigned left = L->members;
	int code = PB_EXIT_OK;
	uint64_t kill_at = 0;
	bool aborted = false;

	while (left) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);

		if (pid <= 0) {
			if (pid < 0 && errno == ECHILD)
				break;
			if (!kill_at && (vb_interrupted || aborted))
				kill_at = pb_clock_now_ns() + (uint64_t)((L->p->c.timeout_s + 10) * 1e9);
			if (kill_at && pb_clock_now_ns() > kill_at) {
				for (unsigned m = 0; m < L->members; m++)
					if (L->pid[m] > 0) {
						pb_log_error("worker of pair %u (%s, pid %d) did not exit: killing it",
							     m % L->p->pairs, vb_member_side(L, m), L->pid[m]);
						kill(L->pid[m], SIGKILL);
					}
				kill_at = UINT64_MAX;
			}
			vb_wait_child_event(kill_at ? 100 : 1000);
			continue;
		}
		unsigned m;

		for (m = 0; m < L->members && L->pid[m] != pid; m++)
			;
		if (m == L->members)
			continue;
		L->pid[m] = 0;
		left--;
		if (WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0 && !L->sh->w[m].done)) {
			char why[200];

			snprintf(why, sizeof(why), "worker of pair %u (%s, pid %d) died (%s %d)", m % L->p->pairs,
				 vb_member_side(L, m), pid, WIFSIGNALED(st) ? "signal" : "exit",
				 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			pb_log_error("%s", why);
			shm_sync_abort(L->sync, -1, why);
			aborted = true;
			if (code == PB_EXIT_OK)
				code = PB_EXIT_RUNTIME;
		} else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
			int c = WEXITSTATUS(st);

			/* usage (2) outranks runtime (1): it says what to fix */
			if (code == PB_EXIT_OK || (c == PB_EXIT_USAGE && code == PB_EXIT_RUNTIME))
				code = c;
		}
	}
	return code;
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

	return m < L->members && code == PB_EXIT_OK ? PB_EXIT_RUNTIME : code;
}

int vb_launch(struct vb_params *p, FILE *csv)
{
	struct vb_launch L = { .p = p, .csv = csv };
	int rc, code;

	L.members = p->loopback ? 2 * p->pairs : p->pairs;
	L.max_samples = p->c.duration_s > 0 ? 1 : p->c.iterations;
	vb_signals();
	vb_block_sigchld();
	L.sh = mmap(NULL, sizeof(*L.sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (L.sh == MAP_FAILED) {
		pb_log_error("mmap: %s", strerror(errno));
		return PB_EXIT_RUNTIME;
	}
	memset(L.sh, 0, sizeof(*L.sh));
	if ((rc = vb_probe(&L)) || (rc = vb_check_device(&L)) || (rc = vb_plan(&L)))
		goto out;
	/* Before the workers exist, so the calibration competes with nothing. */
	if ((rc = pb_run_clock(&p->c, &L.clock)))
		goto out;
	if (!p->c.quiet)
		pb_log_info("device %s port %llu (%s, %s, %.1f Gbit/s data rate), %s, %s%s",
			    L.sh->probe.device, (unsigned long long)p->ib_port,
			    L.sh->probe.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand",
			    L.sh->probe.rate_text, L.sh->probe.link_gbit_s, L.sh->probe.gid_note,
			    p->loopback ? "loopback via " : p->side == VB_SERVER ? "server" : "client of ",
			    p->loopback || p->side == VB_CLIENT ? p->peer_host : "");
	rc = shm_sync_create(L.members, 64, shm_meet_extra_bytes(p->pairs, L.max_samples), true, &L.sync);
	if (rc) {
		pb_log_error("shared-memory segment for %u processes: %s", L.members, strerror(-rc));
		goto out;
	}
	code = vb_run_workers(&L);
	if (vb_interrupted) {
		pb_log_error("interrupted: rows measured so far were written");
		if (code == PB_EXIT_OK)
			code = PB_EXIT_RUNTIME;
	}
	if (p->c.env_json && (rc = vb_env_write(p->c.env_json, p, L.sh, L.members, L.plan.note, &L.clock))) {
		pb_log_error("writing --env-json %s: %s", p->c.env_json, strerror(-rc));
		if (code == PB_EXIT_OK)
			code = PB_EXIT_RUNTIME;
	}
	shm_sync_detach(L.sync);
	hwloc_topology_destroy(L.topo);
	munmap(L.sh, sizeof(*L.sh));
	return code;
out:
	if (L.topo)
		hwloc_topology_destroy(L.topo);
	munmap(L.sh, sizeof(*L.sh));
	return pb_exit_code(rc);
}
