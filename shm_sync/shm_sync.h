/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Node-local synchronisation of the processes of one run through a System V
 * shared-memory segment: a barrier, per-member result slots, an abort flag.
 *
 * The segment is created IPC_PRIVATE with mode 0600.  It is marked IPC_RMID
 * as soon as every member is attached: right after creation when members
 * are forked children (they inherit the mapping), or by the creator once all
 * members joined (shm_sync_wait_joined) when they attach by id.  After that
 * nothing can leak, even after kill -9.
 *
 * The barrier counts generations with C11 atomics; the arrival counter, the
 * generation and the abort flag sit on separate cache lines.  A waiter spins
 * briefly, then calls sched_yield() a few times, then sleeps on a futex on
 * the generation word in 1 ms slices (machines may be oversubscribed: the
 * members it waits for need the CPU).  Every wait has a deadline, counted
 * from the group's last progress (shm_sync_progress).  While waiting it watches the abort flag and whether
 * the members that have not arrived are still alive, so one failed or dead
 * member makes every other member's barrier return an error promptly.
 */
#ifndef SHM_SYNC_H
#define SHM_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SHM_SYNC_MAX_MEMBERS 1024

struct shm_sync;

/*
 * Create and attach a segment for members processes, each with a result
 * slot of slot_bytes, plus extra_bytes of shared space.  remove_now marks
 * it IPC_RMID at once (use when members are forked after this call).
 * Returns 0 or -errno (-EINVAL for bad sizes, -ENOSPC/-ENOMEM from shmget).
 */
int shm_sync_create(unsigned members, size_t slot_bytes, size_t extra_bytes, bool remove_now,
		    struct shm_sync **out);

/*
 * As shm_sync_create(..., remove_now = true), for a creator that may be killed at
 * any instant (an MPI rank: kill -9, or a launcher's SIGKILL one second after a
 * Ctrl-C): the segment is made (shmget, shmat, IPC_RMID) by a short-lived helper
 * process in a session of its own with every signal blocked, which keeps its
 * attachment until this process has attached or is gone.  So the window between
 * shmget and IPC_RMID is the helper's, and no signal to this process or its
 * process group can leave the segment behind.  Returns 0 or -errno (-EIO: the
 * helper died).
 */
int shm_sync_create_detached(unsigned members, size_t slot_bytes, size_t extra_bytes,
			     struct shm_sync **out);

/* Attach an existing segment by id (from the creator). Returns 0 or -errno. */
int shm_sync_attach(int shmid, struct shm_sync **out);

/* The segment id to pass to members that attach by id. */
int shm_sync_id(const struct shm_sync *s);

/* Number of members the segment was created for. */
unsigned shm_sync_members(const struct shm_sync *s);

/*
 * Register the calling process as member (0..members-1): records its pid
 * for liveness checks.  Returns 0, -EINVAL (bad index) or -EBUSY (taken).
 */
int shm_sync_join(struct shm_sync *s, unsigned member);

/*
 * Creator: wait until every member joined, then mark the segment IPC_RMID.
 * Removes it on timeout too.  Returns 0, -ETIMEDOUT or -ECANCELED (aborted).
 */
int shm_sync_wait_joined(struct shm_sync *s, uint64_t timeout_ns);

/* Mark the segment IPC_RMID (idempotent). Returns 0 or -errno. */
int shm_sync_remove(struct shm_sync *s);

/*
 * Wait until all members arrive.  On success stores the exit time
 * (pb_clock_now_ns) in *exit_ns when non-NULL and returns 0.  Returns
 * -ETIMEDOUT when timeout_ns passed without progress of the group (and
 * aborts the group), -ECANCELED when the group was aborted or a member died
 * (reason: shm_sync_aborted).  The deadline counts from the later of the
 * call and the last shm_sync_progress() of any member: a barrier waiting for
 * members that still work never times out, one waiting for a stopped or
 * wedged member does.
 */
int shm_sync_barrier(struct shm_sync *s, unsigned member, uint64_t timeout_ns, uint64_t *exit_ns);

/*
 * The release time of the barrier this member passed last: the
 * pb_clock_now_ns() of the last member to arrive, the same value for every
 * member (a common start: windows end at it + their length).  Stable until
 * the caller enters its next barrier; 0 before the first.
 */
uint64_t shm_sync_release_ns(const struct shm_sync *s);

/*
 * Progress of the group: a member that completed work (iterations, messages)
 * bumps the counter; waiters that see it move know someone still works.
 */
void shm_sync_progress(struct shm_sync *s);
uint64_t shm_sync_progress_count(const struct shm_sync *s);

/*
 * This process: call idle(ctx) every few ms while a barrier waits (e.g. to
 * show a heartbeat to a launcher or a remote peer).  NULL removes it.
 */
void shm_sync_set_idle(struct shm_sync *s, void (*idle)(void *ctx), void *ctx);

/* Abort the group: every current and future barrier returns -ECANCELED. */
void shm_sync_abort(struct shm_sync *s, int member, const char *reason);

/* True when aborted; copies the reason into reason[0..len) when non-NULL. */
bool shm_sync_aborted(struct shm_sync *s, char *reason, size_t len);

/*
 * Start skew: latest minus earliest member exit time, in ns, of the barrier
 * before the most recent one (pattern: barrier, timed work, barrier, then
 * ask for the skew of the first).  Exit times are kept per generation
 * parity, so the value is stable until the caller enters its next barrier.
 * Returns 0 when unknown.
 */
uint64_t shm_sync_exit_skew_ns(struct shm_sync *s);

/* Result slot of a member (cache-line aligned, zeroed at creation). */
void *shm_sync_slot(struct shm_sync *s, unsigned member);

/* Extra shared space (cache-line aligned), or NULL when none was asked for. */
void *shm_sync_extra(struct shm_sync *s);

/* Detach and free the handle; NULL is accepted. */
void shm_sync_detach(struct shm_sync *s);

#endif
