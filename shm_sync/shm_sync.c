/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "shm_sync.h"

#include "pb_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <linux/futex.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SHM_SYNC_MAGIC 0x70627379u /* "pbsy" */
#define SHM_SYNC_LINE 64
#define SHM_SYNC_SPINS 256          /* busy polls before yielding */
#define SHM_SYNC_YIELDS 64          /* sched_yield() calls before sleeping on the futex */
#define SHM_SYNC_SLEEP_NS 1000000   /* futex sleep slice: bounds abort/deadline reaction */
#define SHM_SYNC_LIVENESS_NS 2000000 /* check dead members every 2 ms */

static inline void shm_sync_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

struct shm_sync_member {
	alignas(SHM_SYNC_LINE) _Atomic int32_t pid; /* 0 = not joined */
	_Atomic uint32_t arrived_gen;               /* generation this member last arrived for */
	_Atomic uint64_t exit_ns[2];                /* exit time, indexed by generation parity */
};

struct shm_sync_hdr {
	uint32_t magic;
	uint32_t members;
	uint64_t slot_bytes;   /* rounded up to a cache line */
	uint64_t extra_bytes;
	uint64_t total_bytes;
	alignas(SHM_SYNC_LINE) _Atomic uint32_t arrived;
	alignas(SHM_SYNC_LINE) _Atomic uint32_t generation;
	_Atomic uint32_t sleepers;  /* waiters inside futex_wait on generation */
	_Atomic uint64_t release_ns[2]; /* when the last member arrived, by generation parity */
	alignas(SHM_SYNC_LINE) _Atomic uint32_t joined;
	alignas(SHM_SYNC_LINE) _Atomic int32_t aborted;
	int32_t abort_member;
	char abort_reason[200];
	alignas(SHM_SYNC_LINE) _Atomic uint64_t progress; /* bumped by members that make progress */
	alignas(SHM_SYNC_LINE) struct shm_sync_member member[];
};

/* Shared (not private) futex: the word lives in a segment mapped by several processes. */
static void shm_sync_futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull) };

	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, expected, &ts, NULL, 0);
}

static void shm_sync_futex_wake(_Atomic uint32_t *word)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

struct shm_sync {
	int shmid;
	bool removed;
	struct shm_sync_hdr *hdr;
	void (*idle)(void *ctx);  /* this process: called while a barrier waits */
	void *idle_ctx;
};

static size_t shm_sync_round(size_t n)
{
	return (n + SHM_SYNC_LINE - 1) / SHM_SYNC_LINE * SHM_SYNC_LINE;
}

static size_t shm_sync_slots_off(unsigned members)
{
	return shm_sync_round(sizeof(struct shm_sync_hdr) + members * sizeof(struct shm_sync_member));
}

/*
 * The create window.  Between shmget and IPC_RMID the segment would outlive this
 * process, so no exit path we control may end it there.  The termination signals a
 * user or a launcher sends (mpirun forwards a Ctrl-C as SIGTERM, and SIGKILLs 1 s later)
 * are held back over the window: a handler records the first one, on whichever thread it
 * lands (a signal mask would cover the calling thread only, and MPI and the watchdog run
 * others); once the segment is marked, the old actions come back and the signal is
 * raised again.  The record is a file-scope variable because a signal handler has no
 * context argument; only the creating thread opens a window, one at a time.  SIGKILL
 * cannot be held: a kill -9 inside these few system calls is the one way left to leak.
 */
static const int shm_sync_window_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
#define SHM_SYNC_WINDOW_NSIGS (sizeof(shm_sync_window_sigs) / sizeof(shm_sync_window_sigs[0]))

static volatile sig_atomic_t shm_sync_held_sig;

struct shm_sync_window {
	struct sigaction old[SHM_SYNC_WINDOW_NSIGS];
};

static void shm_sync_hold_sig(int sig)
{
	if (!shm_sync_held_sig)
		shm_sync_held_sig = sig;
}

static void shm_sync_window_open(struct shm_sync_window *w)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = shm_sync_hold_sig;
	sigfillset(&sa.sa_mask);
	shm_sync_held_sig = 0;
	for (size_t i = 0; i < SHM_SYNC_WINDOW_NSIGS; i++)
		sigaction(shm_sync_window_sigs[i], &sa, &w->old[i]);
}

static void shm_sync_window_close(struct shm_sync_window *w)
{
	int sig;

	for (size_t i = 0; i < SHM_SYNC_WINDOW_NSIGS; i++)
		sigaction(shm_sync_window_sigs[i], &w->old[i], NULL);
	sig = shm_sync_held_sig;
	shm_sync_held_sig = 0;
	if (sig)
		raise(sig); /* its old action: the default ends the process, a handler runs */
}

/*
 * Fault injection (tests/mpi/mpi_faults.py createwindow, docs/failure-modes.md):
 * PAIRBENCH_FAULT=shmcreate:S holds the creator inside the window for up to S seconds,
 * less once a signal is held back, as if the signal had landed in the real window.
 */
static void shm_sync_fault_hold(void)
{
	const char *f = getenv("PAIRBENCH_FAULT");
	uint64_t end;

	if (!f || strncmp(f, "shmcreate:", 10))
		return;
	end = pb_clock_now_ns() + (uint64_t)(atof(f + 10) * 1e9);
	fprintf(stderr, "fault injection: PAIRBENCH_FAULT=%s: holding the segment's creator between shmget and IPC_RMID\n",
		f);
	while (!shm_sync_held_sig && pb_clock_now_ns() < end) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
}

/* The segment's size for members slots of slot_bytes and extra_bytes more; -EINVAL past the bounds. */
static int shm_sync_total(unsigned members, size_t slot_bytes, size_t extra_bytes, size_t *total)
{
	if (members == 0 || members > SHM_SYNC_MAX_MEMBERS || slot_bytes > (1ull << 30) ||
	    extra_bytes > (1ull << 36))
		return -EINVAL;
	*total = shm_sync_slots_off(members) + members * shm_sync_round(slot_bytes) +
		 shm_sync_round(extra_bytes);
	return 0;
}

int shm_sync_create(unsigned members, size_t slot_bytes, size_t extra_bytes, bool remove_now,
		    struct shm_sync **out)
{
	struct shm_sync *s;
	size_t total;
	struct shm_sync_window win;
	void *addr;
	int rc;

	if ((rc = shm_sync_total(members, slot_bytes, extra_bytes, &total)))
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (remove_now)
		shm_sync_window_open(&win);
	s->shmid = shmget(IPC_PRIVATE, total, IPC_CREAT | IPC_EXCL | 0600);
	if (s->shmid < 0) {
		rc = -errno;
		goto err_free;
	}
	addr = shmat(s->shmid, NULL, 0);
	if (addr == (void *)-1) {
		rc = -errno;
		goto err_rmid;
	}
	s->hdr = addr;
	/* shmget zero-fills; only the header fields need values. */
	s->hdr->magic = SHM_SYNC_MAGIC;
	s->hdr->members = members;
	s->hdr->slot_bytes = shm_sync_round(slot_bytes);
	s->hdr->extra_bytes = shm_sync_round(extra_bytes);
	s->hdr->total_bytes = total;
	s->hdr->abort_member = -1;
	atomic_thread_fence(memory_order_release);
	if (remove_now) {
		shm_sync_fault_hold();
		if ((rc = shm_sync_remove(s)))
			goto err_detach;
		shm_sync_window_close(&win);
	}
	*out = s;
	return 0;

err_detach:
	shmdt(addr);
err_rmid:
	shmctl(s->shmid, IPC_RMID, NULL);
err_free:
	if (remove_now)
		shm_sync_window_close(&win);
	free(s);
	return rc;
}

/*
 * The helper of shm_sync_create_detached: a child in a session of its own, every
 * signal blocked, that makes the segment (shmget, shmat, IPC_RMID), sends its id (or
 * -errno) on idw and keeps its attachment until the parent closes ackr (attached, or
 * gone: EOF either way).  Only async-signal-safe calls: it is the child of a clone() of
 * a threaded process.  Fault hook PAIRBENCH_FAULT=shmcreate:S holds it inside its
 * window while the parent lives (tests/mpi/mpi_faults.py createwindow).
 */
static int shm_sync_helper_run(size_t total, pid_t parent, int idw, int ackr)
{
	int32_t msg[2] = { -1, 0 }; /* shmid, -errno */
	const char *f = getenv("PAIRBENCH_FAULT");
	void *addr;
	char c;

	msg[0] = shmget(IPC_PRIVATE, total, IPC_CREAT | IPC_EXCL | 0600);
	if (msg[0] < 0) {
		msg[1] = -errno;
		goto send;
	}
	addr = shmat(msg[0], NULL, 0);
	if (addr == (void *)-1) {
		msg[1] = -errno;
		shmctl(msg[0], IPC_RMID, NULL);
		goto send;
	}
	if (f && !strncmp(f, "shmcreate:", 10)) {
		uint64_t end = pb_clock_now_ns() + (uint64_t)(atof(f + 10) * 1e9);
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		while (getppid() == parent && pb_clock_now_ns() < end)
			nanosleep(&ts, NULL);
	}
	if (shmctl(msg[0], IPC_RMID, NULL))
		msg[1] = -errno;
send:
	if (write(idw, msg, sizeof(msg)) != (ssize_t)sizeof(msg))
		return 1;
	while (read(ackr, &c, 1) < 0 && errno == EINTR)
		;
	return 0; /* _exit detaches: the segment lives on while the parent holds it */
}

/* The helper's segment, attached here: 0 and *addr_out, or -errno. */
static int shm_sync_helper_get(size_t total, int *shmid, void **addr_out)
{
	int idp[2], ackp[2], rc = 0;
	int32_t msg[2] = { -1, -EIO };
	pid_t parent = getpid();
	size_t got = 0;
	long pid;

	if (pipe2(idp, O_CLOEXEC))
		return -errno;
	if (pipe2(ackp, O_CLOEXEC)) {
		rc = -errno;
		goto close_id;
	}
	/* A fork without the fork handlers (pthread_atfork): MPI libraries warn on fork(),
	 * and the child makes system calls only. */
	pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid < 0) {
		rc = -errno;
		goto close_ack;
	}
	if (pid == 0) {
		sigset_t all;

		sigfillset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		setsid(); /* out of the process group a launcher signals */
		close(idp[0]);
		close(ackp[1]);
		_exit(shm_sync_helper_run(total, parent, idp[1], ackp[0]));
	}
	close(idp[1]);
	idp[1] = -1;
	while (got < sizeof(msg)) {
		ssize_t n = read(idp[0], (char *)msg + got, sizeof(msg) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got < sizeof(msg))
		rc = -EIO; /* the helper died: it made no segment, or its EOF freed it */
	else if (msg[1])
		rc = msg[1];
	else if ((*addr_out = shmat(msg[0], NULL, 0)) == (void *)-1)
		rc = -errno; /* nothing to undo: the helper's exit frees the marked segment */
	else
		*shmid = msg[0];
close_ack:
	close(ackp[1]); /* the helper's ack: detach and exit */
	close(ackp[0]);
	if (pid > 0)
		while (waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR)
			;
close_id:
	close(idp[0]);
	if (idp[1] >= 0)
		close(idp[1]);
	return rc;
}

int shm_sync_create_detached(unsigned members, size_t slot_bytes, size_t extra_bytes,
			     struct shm_sync **out)
{
	struct shm_sync *s;
	size_t total;
	void *addr = NULL;
	int rc;

	if ((rc = shm_sync_total(members, slot_bytes, extra_bytes, &total)))
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if ((rc = shm_sync_helper_get(total, &s->shmid, &addr))) {
		free(s);
		return rc;
	}
	s->removed = true;
	s->hdr = addr;
	s->hdr->magic = SHM_SYNC_MAGIC;
	s->hdr->members = members;
	s->hdr->slot_bytes = shm_sync_round(slot_bytes);
	s->hdr->extra_bytes = shm_sync_round(extra_bytes);
	s->hdr->total_bytes = total;
	s->hdr->abort_member = -1;
	atomic_thread_fence(memory_order_release);
	*out = s;
	return 0;
}

int shm_sync_attach(int shmid, struct shm_sync **out)
{
	struct shm_sync *s = calloc(1, sizeof(*s));
	void *addr;

	if (!s)
		return -ENOMEM;
	addr = shmat(shmid, NULL, 0);
	if (addr == (void *)-1) {
		int rc = -errno;

		free(s);
		return rc;
	}
	s->shmid = shmid;
	s->hdr = addr;
	atomic_thread_fence(memory_order_acquire);
	if (s->hdr->magic != SHM_SYNC_MAGIC) {
		shmdt(addr);
		free(s);
		return -EINVAL;
	}
	*out = s;
	return 0;
}

int shm_sync_id(const struct shm_sync *s)
{
	return s->shmid;
}

unsigned shm_sync_members(const struct shm_sync *s)
{
	return s->hdr->members;
}

int shm_sync_join(struct shm_sync *s, unsigned member)
{
	int32_t expected = 0;

	if (member >= s->hdr->members)
		return -EINVAL;
	if (!atomic_compare_exchange_strong(&s->hdr->member[member].pid, &expected, (int32_t)getpid()))
		return -EBUSY;
	atomic_store(&s->hdr->member[member].arrived_gen, atomic_load(&s->hdr->generation));
	atomic_fetch_add(&s->hdr->joined, 1);
	return 0;
}

int shm_sync_remove(struct shm_sync *s)
{
	if (s->removed)
		return 0;
	if (shmctl(s->shmid, IPC_RMID, NULL))
		return -errno;
	s->removed = true;
	return 0;
}

void shm_sync_abort(struct shm_sync *s, int member, const char *reason)
{
	int32_t expected = 0;

	/* First abort wins; its reason is the one reported. */
	if (atomic_compare_exchange_strong(&s->hdr->aborted, &expected, 2)) {
		s->hdr->abort_member = member;
		snprintf(s->hdr->abort_reason, sizeof(s->hdr->abort_reason), "%s", reason ? reason : "aborted");
		atomic_store_explicit(&s->hdr->aborted, 1, memory_order_release);
		shm_sync_futex_wake(&s->hdr->generation); /* sleepers see the abort at once */
	}
}

bool shm_sync_aborted(struct shm_sync *s, char *reason, size_t len)
{
	int32_t a = atomic_load_explicit(&s->hdr->aborted, memory_order_acquire);
	uint64_t until;

	if (!a)  /* the common case, polled from wait loops: no clock read */
		return false;
	until = pb_clock_now_ns() + 1000000; /* the writer needs ~a µs */
	/* a == 2: the aborting member is still writing its reason; wait for it, bounded. */
	while (a == 2 && pb_clock_now_ns() < until) {
		shm_sync_cpu_relax();
		a = atomic_load_explicit(&s->hdr->aborted, memory_order_acquire);
	}
	if (reason && len) {
		/* a == 2: the aborting member is still writing its reason */
		snprintf(reason, len, "%s", a == 1 ? s->hdr->abort_reason : "aborted");
	}
	return true;
}

/* A joined member that has not arrived and no longer runs: abort for it. */
static bool shm_sync_check_dead(struct shm_sync *s, uint32_t gen)
{
	for (unsigned m = 0; m < s->hdr->members; m++) {
		struct shm_sync_member *mb = &s->hdr->member[m];
		int32_t pid = atomic_load(&mb->pid);
		char path[64], state = 0;
		bool dead;

		if (pid <= 0 || atomic_load(&mb->arrived_gen) > gen)
			continue;
		dead = kill(pid, 0) && errno == ESRCH;
		if (!dead) {
			/* A zombie still answers kill(); its /proc state says Z. */
			snprintf(path, sizeof(path), "/proc/%d/stat", pid);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				char buf[256];
				ssize_t n = read(fd, buf, sizeof(buf) - 1);
				close(fd);
				if (n > 0) {
					buf[n] = '\0';
					char *rp = strrchr(buf, ')');
					if (rp && rp[1] == ' ')
						state = rp[2];
				}
			}
			dead = state == 'Z' || state == 'X';
		}
		if (dead) {
			char why[128];

			snprintf(why, sizeof(why), "member %u (pid %d) died", m, pid);
			shm_sync_abort(s, (int)m, why);
			return true;
		}
	}
	return false;
}

void shm_sync_progress(struct shm_sync *s)
{
	atomic_fetch_add_explicit(&s->hdr->progress, 1, memory_order_relaxed);
}

uint64_t shm_sync_progress_count(const struct shm_sync *s)
{
	return atomic_load_explicit(&s->hdr->progress, memory_order_relaxed);
}

void shm_sync_set_idle(struct shm_sync *s, void (*idle)(void *ctx), void *ctx)
{
	s->idle = idle;
	s->idle_ctx = ctx;
}

int shm_sync_barrier(struct shm_sync *s, unsigned member, uint64_t timeout_ns, uint64_t *exit_ns)
{
	struct shm_sync_hdr *h = s->hdr;
	uint32_t gen = atomic_load_explicit(&h->generation, memory_order_acquire);
	uint64_t start = pb_clock_now_ns(), next_check = start + SHM_SYNC_LIVENESS_NS, now;
	uint64_t progress = atomic_load_explicit(&h->progress, memory_order_relaxed);
	unsigned spins = 0, yields = 0;

	if (member >= h->members)
		return -EINVAL;
	if (atomic_load_explicit(&h->aborted, memory_order_acquire))
		return -ECANCELED;
	atomic_store_explicit(&h->member[member].arrived_gen, gen + 1, memory_order_relaxed);
	if (atomic_fetch_add_explicit(&h->arrived, 1, memory_order_acq_rel) + 1 == h->members) {
		/* Last to arrive: reset the count, stamp the release, then open the next generation. */
		atomic_store_explicit(&h->arrived, 0, memory_order_relaxed);
		atomic_store_explicit(&h->release_ns[(gen + 1) & 1], pb_clock_now_ns(), memory_order_relaxed);
		atomic_fetch_add(&h->generation, 1); /* seq_cst: ordered before the sleepers read */
		if (atomic_load(&h->sleepers))
			shm_sync_futex_wake(&h->generation);
	} else {
		while (atomic_load_explicit(&h->generation, memory_order_acquire) == gen) {
			if (atomic_load_explicit(&h->aborted, memory_order_acquire))
				return -ECANCELED;
			if (++spins < SHM_SYNC_SPINS) {
				shm_sync_cpu_relax();
				continue;
			}
			if (++yields < SHM_SYNC_YIELDS) {
				sched_yield();
			} else {
				/*
				 * Oversubscribed and still waiting: sleep on the generation
				 * word so the members we wait for get the CPU (a yield loop
				 * can burn whole time slices on a busy machine).  The futex
				 * re-checks the word, so a wake-up cannot be lost.
				 */
				atomic_fetch_add(&h->sleepers, 1);
				shm_sync_futex_wait(&h->generation, gen, SHM_SYNC_SLEEP_NS);
				atomic_fetch_sub(&h->sleepers, 1);
			}
			now = pb_clock_now_ns();
			if (now - start > timeout_ns) {
				char why[128];

				snprintf(why, sizeof(why), "barrier: no progress for %.3f s (deadline %.3f s) at member %u",
					 (double)(now - start) / 1e9, (double)timeout_ns / 1e9, member);
				shm_sync_abort(s, (int)member, why);
				return -ETIMEDOUT;
			}
			if (now >= next_check) {
				uint64_t pg = atomic_load_explicit(&h->progress, memory_order_relaxed);

				next_check = now + SHM_SYNC_LIVENESS_NS;
				if (shm_sync_check_dead(s, gen))
					return -ECANCELED;
				/* Members still working make progress: the deadline counts from the last. */
				if (pg != progress) {
					progress = pg;
					start = now;
				}
				if (s->idle)
					s->idle(s->idle_ctx);
			}
		}
	}
	now = pb_clock_now_ns();
	atomic_store_explicit(&h->member[member].exit_ns[(gen + 1) & 1], now, memory_order_relaxed);
	if (exit_ns)
		*exit_ns = now;
	return 0;
}

uint64_t shm_sync_release_ns(const struct shm_sync *s)
{
	uint32_t gen = atomic_load_explicit(&s->hdr->generation, memory_order_acquire);

	return atomic_load_explicit(&s->hdr->release_ns[gen & 1], memory_order_relaxed);
}

int shm_sync_wait_joined(struct shm_sync *s, uint64_t timeout_ns)
{
	uint64_t start = pb_clock_now_ns();
	int rc = 0;

	while (atomic_load(&s->hdr->joined) < s->hdr->members) {
		if (atomic_load(&s->hdr->aborted)) {
			rc = -ECANCELED;
			break;
		}
		if (pb_clock_now_ns() - start > timeout_ns) {
			rc = -ETIMEDOUT;
			shm_sync_abort(s, -1, "not every member attached before the deadline");
			break;
		}
		sched_yield();
	}
	int rm = shm_sync_remove(s);

	return rc ? rc : rm;
}

uint64_t shm_sync_exit_skew_ns(struct shm_sync *s)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	/* Generation g ends barrier number g; we want the one before the latest. */
	uint32_t want = atomic_load_explicit(&s->hdr->generation, memory_order_acquire) - 1;

	for (unsigned m = 0; m < s->hdr->members; m++) {
		uint64_t t = atomic_load_explicit(&s->hdr->member[m].exit_ns[want & 1], memory_order_relaxed);

		if (!t)
			return 0;
		if (t < lo)
			lo = t;
		if (t > hi)
			hi = t;
	}
	return hi - lo;
}

void *shm_sync_slot(struct shm_sync *s, unsigned member)
{
	if (member >= s->hdr->members)
		return NULL;
	return (char *)s->hdr + shm_sync_slots_off(s->hdr->members) + member * s->hdr->slot_bytes;
}

void *shm_sync_extra(struct shm_sync *s)
{
	if (!s->hdr->extra_bytes)
		return NULL;
	return (char *)s->hdr + shm_sync_slots_off(s->hdr->members) +
	       s->hdr->members * s->hdr->slot_bytes;
}

void shm_sync_detach(struct shm_sync *s)
{
	if (!s)
		return;
	if (s->hdr)
		shmdt(s->hdr);
	free(s);
}
