#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fault suite of pairbench-mpi (issue 11): inject each fault for real and check the exit
code, the one line that says why, the time to exit (a generous bound: deadline + margin, not
a benchmark) and that nothing is left: no rank or mpirun process (found by a marker path in
their argv), no System V segment whose creator is gone (ipcs -m).

  startup    a rank stopped (SIGSTOP) or killed before MPI_Init: the job ends by the start-up
             deadline (--startup-timeout)
  tinytimeout  a healthy job with --timeout 0.1 (the start-up is not bound by it)
  shm        a rank held by gdb exactly inside shm_sync_attach (after the leader's shmget,
             before it attached), then killed or kept past --timeout; a rank killed or
             stopped as soon as the segment appears, and the leader itself killed there: no
             segment left, and the segment is marked for removal before the last attach
  createwindow  the leader held inside its own shmget .. IPC_RMID window (fault hook
             PAIRBENCH_FAULT=shmcreate:S): Ctrl-C, SIGTERM to mpirun, its own watchdog
  signals    SIGTERM / SIGINT / SIGHUP to mpirun during the timed block
  output     -o /dev/full, a closed stdout, an unopenable -o / --env-json, a FIFO
  options    an invalid --pin-list while mpirun binds the ranks, --pin-list without
             --pin list, --pairs above the limit

Python standard library only.  Exit 0 = pass, 1 = fail, 77 = cannot run here.
"""
import argparse
import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # mpi_env, also under python3 -I
from mpi_env import env_for_mpi, run_in_own_ipc_namespace, settled, shm_segments

SKIP = 77
SHM_DEST = 0o1000  # mode bit of a segment marked IPC_RMID (ipcs: "dest")
MARGIN_S = 30.0    # added to every deadline: a bound that proves "no hang" on a busy machine


class Fail(Exception):
    pass


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def leaked(before: dict) -> list:
    return [f"shmid {k} (creator {v[0]}, nattch {v[2]})" for k, v in shm_segments().items()
            if k not in before and not alive(v[0])]


def with_marker(marker: str) -> list:
    """Live processes whose argv contains marker: [(pid, argv0, world rank or None)]."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if not alive(int(pid)) or not any(marker.encode() in a for a in argv):
            continue
        rank = None
        for e in env:
            if e.startswith(b"OMPI_COMM_WORLD_RANK="):
                rank = int(e.split(b"=", 1)[1])
        found.append((int(pid), argv[0].decode(errors="replace"), rank))
    return found


def ppid_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[-1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def ranks(marker: str, binary: str) -> dict:
    """world rank -> pid of the pairbench-mpi processes carrying marker (not the node
    leader's short-lived segment helper: a child of a rank, with the rank's argv)."""
    found = [(pid, a0, r) for pid, a0, r in with_marker(marker) if r is not None and a0 == binary]
    pids = {pid for pid, _, _ in found}
    return {r: pid for pid, _a0, r in found if ppid_of(pid) not in pids}


class Job:
    """One mpirun job; the marker (a path in a fresh temp dir) finds its processes."""

    def __init__(self, a, np_: int, args: list, mpirun_opts: list | None = None,
                 argv=None) -> None:
        """args: pairbench-mpi's options (@OUT@ = the marker path); argv(marker): a whole
        command line instead."""
        self.dir = tempfile.mkdtemp(prefix="pb-mpi-fault-")
        # removed at the end whatever ended the case (a pass removes it at once; a case that
        # returned early or failed left it in /tmp: 3 per test-all run)
        atexit.register(shutil.rmtree, self.dir, True)
        self.marker = os.path.join(self.dir, "rows.csv")
        self.bin = a.bin
        self.shm_before = shm_segments()
        self.cmd = argv(self.marker) if argv else (
            ["mpirun", "--oversubscribe", "-np", str(np_)] + (mpirun_opts or [])
            + [a.bin] + [x.replace("@OUT@", self.marker) for x in args])
        print("+ " + " ".join(self.cmd), file=sys.stderr)
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env_for_mpi(), start_new_session=True)
        self.err = ""
        self.took = 0.0

    def wait(self, bound_s: float, what: str) -> int:
        try:
            _, self.err = self.proc.communicate(timeout=bound_s)
        except subprocess.TimeoutExpired:
            self.kill_all()
            raise Fail(f"{what}: the job did not end within {bound_s:.0f} s") from None
        self.took = time.monotonic() - self.t0
        sys.stderr.write(self.err[-2500:])
        return self.proc.returncode

    def kill_all(self) -> None:
        for pid, _a0, _r in with_marker(self.marker):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def check_clean(self, what: str) -> None:
        """Nothing left: processes (zombies aside) and shm segments."""
        left = settled(lambda: with_marker(self.marker))
        if left:
            self.kill_all()
            raise Fail(f"{what}: processes left: {left}")
        bad = settled(lambda: leaked(self.shm_before))
        if bad:
            raise Fail(f"{what}: shm segment(s) leaked: {bad}")
        shutil.rmtree(self.dir, ignore_errors=True)

    def expect(self, what: str, code, needle: str | None, bound_s: float) -> None:
        rc = self.wait(bound_s, what)
        codes = code if isinstance(code, tuple) else (code,)
        if rc not in codes:
            raise Fail(f"{what}: exit {rc}, expected {codes}")
        if needle is not None:
            lines = [ln for ln in self.err.splitlines() if "pairbench-mpi: error:" in ln]
            if not lines or needle not in lines[0]:
                raise Fail(f"{what}: first error line {lines[:1]} lacks {needle!r}")
            if len(lines[0]) > 400:
                raise Fail(f"{what}: error line of {len(lines[0])} characters")
        self.check_clean(what)
        print(f"ok: {what}: exit {rc} in {self.took:.1f} s"
              + (f": {needle}" if needle else ""))


class NotStarted(Fail):
    """The job ended before all its ranks existed (on a loaded machine: a start-up deadline)."""


def wait_ranks(job: Job, n: int, timeout: float = 60) -> dict:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r = ranks(job.marker, job.bin)
        if len(r) == n:
            return r
        if job.proc.poll() is not None:
            break
        time.sleep(0.02)
    ended = job.proc.poll()
    job.kill_all()
    if ended is not None:
        err = job.proc.stderr.read() if job.proc.stderr else ""
        raise NotStarted(f"the job ended (exit {ended}) before its {n} ranks were seen: "
                         f"{' '.join(job.cmd)}\n{err[-1500:]}")
    raise Fail(f"could not find the {n} ranks of {' '.join(job.cmd)} within {timeout:.0f} s")


# --- cases -------------------------------------------------------------------------------

def case_startup(a) -> None:
    """A rank that never reaches MPI_Init: the job ends at the start-up deadline
    (--startup-timeout, distinct from the per-wait --timeout, issue 28.2), with a message
    that says what was slow, not which peer died."""
    deadline = 3.0
    args = ["--test", "latency", "-s", "8", "-n", "100", "--timeout", "0.5",
            "--startup-timeout", str(deadline), "-q"]
    for how, sig in (("stopped", "STOP"), ("killed", "KILL")):
        def argv(marker: str, sig: str = sig) -> list:
            # Two app contexts: rank 1 is a shell that stops (or kills) itself before it
            # would exec pairbench-mpi, i.e. before its MPI_Init.
            full = [*args, "-o", marker]
            victim = f"kill -{sig} $$; exec {a.bin} " + " ".join(full)
            return ["mpirun", "--oversubscribe", "-np", "1", a.bin, *full,
                    ":", "-np", "1", "sh", "-c", victim, marker]
        job = Job(a, 2, [], argv=argv)
        if how == "stopped":
            job.expect(f"rank 1 {how} before MPI_Init", 1,
                       f"MPI_Init (start-up of the job) did not finish within the start-up "
                       f"deadline, {deadline:.1f} s (--startup-timeout", deadline + MARGIN_S)
            if "died" in job.err:
                raise Fail("the start-up message blames a dead peer")
        else:
            job.expect(f"rank 1 {how} before MPI_Init", tuple(range(1, 256)), None,
                       deadline + MARGIN_S)


TINY_TIMEOUT_TRIES = 3


def case_tiny_timeout(a) -> None:
    """--timeout 0.1 bounds each phase of a healthy job, not its start-up (MPI_Init alone
    takes longer here): the issue's command with 8 B messages and small counts, whose phases
    each take microseconds (4 MiB needed 64 MiB of receive slots whose set-up, on a machine
    busy with a VM beside, took more than 0.1 s: the per-phase rule of docs/mpi.md rightly
    ended it), runs to the end, every row ok (issue 28.2).

    A phase of microseconds can still lose 0.1 s on a starved machine (CI at 63099be: both
    ranks' warm-up, with the rig's VM beside them), and the per-phase rule then rightly ends
    the job: such a try is said and tried again, up to TINY_TIMEOUT_TRIES in all. The start-up
    is never tried again: it takes longer than 0.1 s at every start here, so a start-up bound
    by --timeout fails the first try, naming the start-up, as before."""
    for attempt in range(1, TINY_TIMEOUT_TRIES + 1):
        job = Job(a, 2, ["--pin", "none", "-q", "--test", "bw", "-s", "8", "-n", "20",
                         "-w", "5", "--timeout", "0.1", "-o", "@OUT@"])
        rc = job.wait(60 + MARGIN_S, "a healthy job with --timeout 0.1")
        rows = (Path(job.marker).read_text().splitlines() if os.path.exists(job.marker)
                else [])
        if rc == 0:
            break
        first = [ln for ln in job.err.splitlines() if "pairbench-mpi: error:" in ln][:1]
        job.kill_all()
        phase_only = bool(first) and "did not finish within --timeout 0.1 s" in first[0] \
            and "start-up" not in first[0]
        if not phase_only or attempt == TINY_TIMEOUT_TRIES:
            raise Fail(f"a healthy job with --timeout 0.1: exit {rc} (try {attempt} of "
                       f"{TINY_TIMEOUT_TRIES}): {first}")
        job.check_clean("a job ended by its --timeout 0.1")
        print(f"note: try {attempt}: a phase took more than 0.1 s on this machine, the job was "
              f"rightly ended ({first[0]}); trying again", file=sys.stderr)
    bad = [r for r in rows[1:] if ",ok," not in r]
    if len(rows) < 3 or bad:
        raise Fail(f"a healthy job with --timeout 0.1: {len(rows) - 1} rows, not ok: {bad[:2]}")
    job.check_clean("a healthy job with --timeout 0.1")
    print(f"ok: a healthy job with --timeout 0.1: exit 0 in {job.took:.1f} s, "
          f"{len(rows) - 1} rows ok (try {attempt})")


def shm_of(rank_pids: dict, before: dict):
    """(shmid, mode, nattch) of the node's shm_sync segment (mode 0600, created by a rank or
    its helper), or None.  Open MPI's own start-up probe (a page, mode 0700, during
    MPI_Init) is not it."""
    pids = set(rank_pids.values())
    for k, (cpid, mode, nattch) in shm_segments().items():
        # made by a rank, or by the node leader's helper (a child of it, gone once the
        # leader attached: issue 37); the check runs in an IPC namespace of its own
        if k not in before and (cpid in pids or ppid_of(cpid) in pids or not alive(cpid)) \
                and mode & 0o777 == 0o600:
            return k, mode, nattch
    return None


def case_shm(a) -> None:
    """Hit the window between the leader's shmget and the last attach: watch for the new
    segment and strike at once.  Which exact instant is hit varies from run to run; what
    must never vary is the outcome: no segment left, and the segment marked for removal."""
    deadline = 4.0
    np_ = 4
    for victim, sig in (("last", signal.SIGKILL), ("last", signal.SIGSTOP),
                        ("leader", signal.SIGKILL)):
        job = Job(a, np_, ["--test", "latency", "-s", "8", "-D", "8", "-w", "0", "--pairs",
                           str(np_ // 2), "--allow-oversubscribe", "--timeout", str(deadline),
                           "--startup-timeout", str(deadline),
                           "-q", "-o", "@OUT@"])
        rk = wait_ranks(job, np_)
        seg = None
        end = time.monotonic() + 60
        while seg is None and time.monotonic() < end and job.proc.poll() is None:
            seg = shm_of(rk, job.shm_before)
        if seg is None:
            job.kill_all()
            raise Fail("the node leader's segment never appeared")
        pid = rk[np_ - 1] if victim == "last" else rk[0]
        os.kill(pid, sig)
        shmid, mode, nattch = seg
        time.sleep(0.2)
        now = shm_segments().get(shmid)
        marked = (now[1] if now else mode | SHM_DEST) & SHM_DEST
        what = (f"{signal.Signals(sig).name} of the {victim} rank right after shmget "
                f"(segment seen with nattch {nattch} of {np_})")
        try:
            job.expect(what, tuple(range(1, 256)), None, deadline + MARGIN_S)
        finally:
            if sig == signal.SIGSTOP and alive(pid):
                os.kill(pid, signal.SIGKILL)
        if not marked:
            raise Fail(f"{what}: segment {shmid} existed without being marked for removal")


def case_signals(a) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        job = Job(a, 4, ["--test", "latency", "-s", "8", "-D", "60", "-w", "0", "--pairs", "2",
                         "--allow-oversubscribe", "--timeout", "30", "-q", "-o", "@OUT@"])
        wait_ranks(job, 4)
        time.sleep(2.0)  # into the timed block
        job.t0 = time.monotonic()
        job.proc.send_signal(sig)
        job.expect(f"{sig.name} to mpirun during the run", tuple(range(1, 256)), None,
                   MARGIN_S)


def case_output(a) -> None:
    # @OUT@ in every argv: the marker that finds what is left of the job.
    base = ["--test", "latency", "-s", "8,64,1K", "-n", "2000", "--timeout", "60", "-q"]
    job = Job(a, 2, [*base, "-o", "/dev/full", "--env-json", "@OUT@"])
    # Well before --timeout 60: the write error itself ends the job, not the watchdog.
    job.expect("-o /dev/full", 1, "rank 0: writing the rows to /dev/full failed: No space left "
               "on device", 60 - 15)
    job = Job(a, 2, [*base, "-o", "/nonexistent-dir/x.csv", "--env-json", "@OUT@"])
    job.expect("unopenable -o", 2, "--output /nonexistent-dir/x.csv: No such file", MARGIN_S)
    job = Job(a, 2, [*base, "-o", "@OUT@", "--env-json", "/nonexistent-dir/e.json"])
    job.expect("unopenable --env-json", 2, "--env-json /nonexistent-dir/e.json", MARGIN_S)
    with tempfile.TemporaryDirectory(prefix="pb-mpi-fifo-") as d:
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        job = Job(a, 2, [*base, "-o", fifo, "--env-json", "@OUT@"])
        job.expect("-o FIFO without a reader", 2, "a FIFO (or device) with no reader", MARGIN_S)
    # A closed stdout: run as a singleton (under mpirun stdout belongs to mpirun, which
    # forwards it; the ranks cannot see its stdout closed: pass -o FILE there).
    job = Job(a, 1, [], argv=lambda marker: [
        "sh", "-c", f'exec "$0" --test allreduce -s 8 -n 100 -q --env-json {marker} >&-',
        a.bin])
    job.expect("closed stdout (singleton)", 1, "writing the rows to stdout failed: Bad file "
               "descriptor", MARGIN_S)


def case_options(a) -> None:
    base = ["--test", "latency", "-s", "8", "-n", "10", "-q", "-o", "@OUT@"]
    job = Job(a, 2, [*base, "--pin", "list", "--pin-list", "0,4095"], ["--bind-to", "core"])
    job.expect("--pin-list of a PU that does not exist, ranks bound by mpirun", 2,
               "PU 4095 in --pin-list does not exist", MARGIN_S)
    job = Job(a, 2, [*base, "--pin", "list", "--pin-list", "x" * 10240], ["--bind-to", "core"])
    job.expect("--pin-list 10 KB of garbage", 2, None, MARGIN_S)
    job = Job(a, 2, [*base, "--pin-list", "0,1"])
    job.expect("--pin-list without --pin list", 2, "--pin-list is used only with --pin list",
               MARGIN_S)
    job = Job(a, 2, [*base, "--pairs", "300"])
    job.expect("--pairs above the limit", 2, "(accepted: 1..256)", MARGIN_S)


GDB_HOLD = """set pagination off
handle SIGSTOP nostop noprint nopass
break shm_sync_attach
commands 1
shell touch {flag}
shell sleep {hold}
end
continue
"""


def case_shm_window(a) -> None:
    """The exact window, forced: gdb attaches to the last rank during MPI_Init and holds it at
    the entry of shm_sync_attach, i.e. after the node leader's shmget and the broadcast of the
    id, before this rank attached.  Then the rank is killed (a crashed rank), or held until
    the leader's watchdog ends the job (a rank slow to join)."""
    gdb = shutil.which("gdb")
    if gdb is None:
        print("note: gdb not installed: the shm window is not forced (apt-get install gdb)")
        return
    deadline, np_ = 4.0, 4
    for how in ("killed", "held past --timeout"):
        for attempt in range(1, 4):
            if _shm_window_try(a, gdb, how, deadline, np_):
                break
            print(f"note: {how}: try {attempt} of 3 did not force the window")
        else:
            print(f"note: {how}: the window was not forced in 3 tries (a loaded machine: the "
                  "rank attached before gdb was ready, or the job's start-up ended it)")


def _shm_window_try(a, gdb: str, how: str, deadline: float, np_: int) -> bool:
    """One job for case_shm_window: False when the window was not reached (nothing checked);
    a Fail when it was reached and the outcome is wrong."""
    job = Job(a, np_, ["--test", "latency", "-s", "8", "-D", "5", "-w", "0", "--pairs",
                       str(np_ // 2), "--allow-oversubscribe", "--timeout", str(deadline),
                       "--startup-timeout", str(deadline),
                       "-q", "-o", "@OUT@"])
    try:
        victim = wait_ranks(job, np_)[np_ - 1]
    except NotStarted as e:
        print(f"note: {e}", file=sys.stderr)
        return False
    flag = os.path.join(job.dir, "at-attach")
    script = os.path.join(job.dir, "gdb.cmd")
    with open(script, "w") as f:
        f.write(GDB_HOLD.format(flag=flag, hold=int(deadline + MARGIN_S)))
    g = subprocess.Popen([gdb, "-p", str(victim), "-batch", "-x", script],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 60
        while not os.path.exists(flag) and time.monotonic() < end and job.proc.poll() is None:
            time.sleep(0.02)
        if not os.path.exists(flag):
            job.kill_all()
            print(f"note: rank {np_ - 1} passed shm_sync_attach before gdb was ready; "
                  "window not forced this time")
            return False
        seg = shm_of(ranks(job.marker, job.bin), job.shm_before)
        if seg is None or seg[2] >= np_:
            job.kill_all()
            raise Fail(f"held at shm_sync_attach but the segment is {seg}")
        shmid, mode, nattch = seg
        if not mode & SHM_DEST:
            job.kill_all()
            raise Fail(f"segment {shmid} not marked for removal while rank {np_ - 1} "
                       f"had not attached (nattch {nattch} of {np_}): it could leak")
        if how == "killed":
            os.kill(victim, signal.SIGKILL)
            job.expect(f"rank {np_ - 1} killed inside shm_sync_attach (nattch {nattch} of "
                       f"{np_}, segment already marked for removal)", tuple(range(1, 256)),
                       None, MARGIN_S)
        else:
            job.expect(f"rank {np_ - 1} held inside shm_sync_attach past --timeout "
                       f"(nattch {nattch} of {np_})", 1,
                       "did not finish within the start-up deadline",
                       deadline + MARGIN_S)
    finally:
        if g.poll() is None:
            g.kill()
        g.wait()
        if alive(victim):
            os.kill(victim, signal.SIGKILL)
    return True


def case_create_window(a) -> None:
    """The node leader held inside its own create window (shmget .. IPC_RMID, where the
    segment would outlive it) by the fault hook PAIRBENCH_FAULT=shmcreate:S: the leader holds
    there up to S seconds, less once a termination signal is held back (a signal arriving at
    any instant of the real, microsecond window).  A Ctrl-C to mpirun, a kill of the job and
    the leader's own start-up watchdog must not leave the segment (issue 28.3)."""
    hold = 20.0
    kill9 = "SIGKILL to the leader"
    cases = (("SIGINT to mpirun (Ctrl-C) while the leader is inside its create window", 2,
              "latency", signal.SIGINT),
             ("SIGTERM to mpirun (a kill of the job) while the leader is inside its create "
              "window", 2, "latency", signal.SIGTERM),
             ("kill -9 of the node leader inside its create window (issue 37)", 2, "latency",
              kill9),
             ("the leader's start-up watchdog firing inside its create window", 1, "allreduce",
              None),
             ("another rank's start-up watchdog ending the job (its SIGKILL to the leader) "
              "inside the leader's create window (issue 37)", 2, "latency", None))
    # mpirun ends a job with SIGCONT, SIGTERM after odls_base_sigkill_timeout seconds,
    # SIGKILL after as many again (orte/mca/odls/base/odls_base_default_fns.c, 4.1.4): Open
    # MPI's default of 1 s, kept here. The window (shmget .. IPC_RMID) is a helper process's
    # (shm_sync_create_detached), which the job's end does not reach: held for seconds here,
    # it must still leave nothing once the leader is gone, whatever killed it.
    for what, np_, test, sig in cases:
        startup = 60.0 if sig else 2.0
        job = Job(a, np_, ["--test", test, "-s", "8", "-n", "10", "--timeout", "2",
                           "--startup-timeout", f"{startup:g}", "-q", "-o", "@OUT@"],
                  mpirun_opts=["-x", f"PAIRBENCH_FAULT=shmcreate:{hold:g}"])
        rk = wait_ranks(job, np_)
        seg = None
        end = time.monotonic() + 30
        while time.monotonic() < end and job.proc.poll() is None:
            seg = shm_of(rk, job.shm_before)
            if seg is not None:
                break
            time.sleep(0.01)
        if seg is None or seg[1] & SHM_DEST:
            job.kill_all()
            raise Fail(f"{what}: the leader was not seen inside its create window (segment "
                       f"{seg}): no fault hook PAIRBENCH_FAULT=shmcreate?")
        if sig == kill9:
            os.kill(rk[0], signal.SIGKILL)
            job.expect(what, tuple(range(1, 256)), None, MARGIN_S)
        elif sig is not None:
            os.kill(job.proc.pid, sig)
            job.expect(what, tuple(range(1, 256)), None, MARGIN_S)
        elif np_ == 2:  # rank 1 waits for the segment's id: its watchdog ends the job
            job.expect(what, tuple(range(1, 256)), "did not finish within the start-up "
                       "deadline", MARGIN_S)
        else:
            job.expect(what, 1, "did not finish within the start-up deadline",
                       hold + MARGIN_S)


def case_shm_all(a) -> None:
    case_shm_window(a)
    case_shm(a)


CASES = {"startup": case_startup, "tinytimeout": case_tiny_timeout, "shm": case_shm_all,
         "createwindow": case_create_window, "signals": case_signals,
         "output": case_output, "options": case_options}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    a.bin = os.path.abspath(a.bin)
    if not shutil.which("mpirun"):
        print("skip: mpirun not found (apt-get install openmpi-bin)")
        return SKIP
    try:
        CASES[a.case](a)
    except Fail as e:
        print(f"FAIL: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(run_in_own_ipc_namespace(main, "mpi_faults"))
