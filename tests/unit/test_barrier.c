/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared-memory barrier with forked processes: 2..8 members x many
 * rounds (8 members on a 2-core machine must still finish: the spin turns
 * into sched_yield), no member ever passes early, a dead member or an abort
 * makes every other member's barrier return an error instead of hanging,
 * and no segment outlives the test.
 */
#define _GNU_SOURCE
#include "pb_clock.h"
#include "pb_test.h"
#include "shm_sync.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 2000
#define DEADLINE_NS (60ull * 1000000000ull)

struct slot {
	_Atomic uint64_t round; /* last round this member entered */
};

/* Exit codes of a member process. */
enum { M_OK = 0, M_EARLY = 10, M_TIMEDOUT = 11, M_CANCELED = 12, M_OTHER = 13, M_BADREASON = 14 };

static int member_code(int rc)
{
	return rc == -ETIMEDOUT ? M_TIMEDOUT : rc == -ECANCELED ? M_CANCELED : M_OTHER;
}

/* Each round: publish the round, barrier, check everyone published it. */
static int member_run(struct shm_sync *s, unsigned me, unsigned n, int die_at, int abort_at)
{
	for (uint64_t r = 1; r <= ROUNDS; r++) {
		struct slot *mine = shm_sync_slot(s, me);

		if ((int)r == die_at)
			raise(SIGKILL);
		if ((int)r == abort_at) {
			shm_sync_abort(s, (int)me, "member gave up on purpose");
			return M_OK;
		}
		atomic_store(&mine->round, r);
		int rc = shm_sync_barrier(s, me, DEADLINE_NS, NULL);

		if (rc) {
			char why[200];

			if (!shm_sync_aborted(s, why, sizeof(why)) || !why[0])
				return M_BADREASON;
			return member_code(rc);
		}
		for (unsigned m = 0; m < n; m++) {
			struct slot *other = shm_sync_slot(s, m);

			if (atomic_load(&other->round) < r)
				return M_EARLY;
		}
	}
	return M_OK;
}

static bool segment_gone(int id)
{
	struct shmid_ds ds;

	return shmctl(id, IPC_STAT, &ds) == -1 && (errno == EINVAL || errno == EIDRM);
}

/* Fork n members (index 0 included); returns their exit codes in codes[]. */
static void run_group(unsigned n, int die_member, int die_at, int abort_member, int abort_at,
		      bool attach_by_id, int *codes)
{
	struct shm_sync *s;
	pid_t pid[16];
	int id;

	CHECK_EQ_INT(shm_sync_create(n, sizeof(struct slot), 0, !attach_by_id, &s), 0);
	id = shm_sync_id(s);
	for (unsigned i = 0; i < n; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			struct shm_sync *c = s;

			if (attach_by_id && shm_sync_attach(id, &c))
				_exit(M_OTHER);
			if (shm_sync_join(c, i))
				_exit(M_OTHER);
			_exit(member_run(c, i, n, (int)i == die_member ? die_at : -1,
					 (int)i == abort_member ? abort_at : -1));
		}
	}
	if (attach_by_id)
		CHECK_EQ_INT(shm_sync_wait_joined(s, DEADLINE_NS), 0);
	/* Do not reap the killed member early: its zombie must count as dead. */
	for (unsigned i = 0; i < n; i++) {
		int st = 0;
		uint64_t start = pb_clock_now_ns();

		/* Hang guard only (not a timing assertion): far beyond the deadline. */
		while (waitpid(pid[i], &st, WNOHANG) == 0) {
			if (pb_clock_now_ns() - start > 3 * DEADLINE_NS) {
				fprintf(stderr, "member %u hangs\n", i);
				kill(pid[i], SIGKILL);
				waitpid(pid[i], &st, 0);
				pb_test_failures++;
				break;
			}
			usleep(1000);
		}
		codes[i] = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
	}
	shm_sync_detach(s);
	CHECK(segment_gone(id));
}

static void test_rounds(void)
{
	int codes[16];

	for (unsigned n = 2; n <= 8; n++) {
		run_group(n, -1, -1, -1, -1, false, codes);
		for (unsigned i = 0; i < n; i++) {
			if (codes[i] != M_OK)
				fprintf(stderr, "n=%u member %u exit %d\n", n, i, codes[i]);
			CHECK_EQ_INT(codes[i], M_OK);
		}
	}
	/* members attaching by id; the creator removes the segment once all joined */
	run_group(4, -1, -1, -1, -1, true, codes);
	for (unsigned i = 0; i < 4; i++)
		CHECK_EQ_INT(codes[i], M_OK);
}

static void test_dead_member(void)
{
	int codes[16];

	run_group(6, 3, 500, -1, -1, false, codes);
	CHECK_EQ_INT(codes[3], -SIGKILL);
	for (unsigned i = 0; i < 6; i++) {
		if (i == 3)
			continue;
		/* the survivors saw the death, not a timeout */
		if (codes[i] != M_CANCELED)
			fprintf(stderr, "member %u exit %d\n", i, codes[i]);
		CHECK_EQ_INT(codes[i], M_CANCELED);
	}
}

static void test_abort(void)
{
	int codes[16];

	run_group(4, -1, -1, 2, 100, false, codes);
	for (unsigned i = 0; i < 4; i++)
		CHECK_EQ_INT(codes[i], i == 2 ? M_OK : M_CANCELED);
}

/* A member that never arrives (but lives): the deadline fires, everybody errors. */
static void test_deadline(void)
{
	struct shm_sync *s;
	uint64_t t0;
	int id;

	CHECK_EQ_INT(shm_sync_create(2, 64, 0, true, &s), 0);
	id = shm_sync_id(s);
	CHECK_EQ_INT(shm_sync_join(s, 0), 0);
	CHECK_EQ_INT(shm_sync_join(s, 1), 0);
	CHECK_EQ_INT(shm_sync_join(s, 1), -EBUSY);
	CHECK_EQ_INT(shm_sync_join(s, 2), -EINVAL);
	t0 = pb_clock_now_ns();
	CHECK_EQ_INT(shm_sync_barrier(s, 0, 50000000ull, NULL), -ETIMEDOUT);
	CHECK(pb_clock_now_ns() - t0 >= 50000000ull); /* it did wait for the deadline */
	CHECK(shm_sync_aborted(s, NULL, 0));
	CHECK_EQ_INT(shm_sync_barrier(s, 1, 50000000ull, NULL), -ECANCELED);
	shm_sync_detach(s);
	CHECK(segment_gone(id));
	shm_sync_detach(NULL);
}

static void count_idle(void *ctx)
{
	(*(unsigned *)ctx)++;
}

/*
 * A member that works (bumps the group's progress) and arrives late: the
 * waiter's deadline counts from the last progress, so a wait four times
 * longer than the deadline succeeds; the idle hook runs while it waits.
 */
static void test_progress_deadline(void)
{
	struct shm_sync *s;
	unsigned idle = 0;
	int st;
	pid_t pid;

	CHECK_EQ_INT(shm_sync_create(2, 64, 0, true, &s), 0);
	CHECK_EQ_INT(shm_sync_join(s, 0), 0);
	pid = fork();
	if (pid == 0) {
		struct timespec ts = { 0, 1000000 };
		uint64_t until = pb_clock_now_ns() + 1200000000ull;

		shm_sync_join(s, 1);
		while (pb_clock_now_ns() < until) {
			shm_sync_progress(s);
			nanosleep(&ts, NULL);
		}
		_exit(shm_sync_barrier(s, 1, 300000000ull, NULL) ? 1 : 0);
	}
	shm_sync_set_idle(s, count_idle, &idle);
	CHECK_EQ_INT(shm_sync_barrier(s, 0, 300000000ull, NULL), 0);
	CHECK(idle > 0);
	CHECK(shm_sync_progress_count(s) > 0);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	shm_sync_detach(s);
}

int main(void)
{
	test_rounds();
	test_dead_member();
	test_abort();
	test_deadline();
	test_progress_deadline();
	TEST_DONE();
}
