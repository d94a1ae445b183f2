"""Running planned points: subprocesses from argument lists, a deadline per point, and the
whole process group killed on timeout (mpirun and forked workers included)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pairbench.io.procutil import POLL_S, kill_group
from pairbench.runner.ompidirs import private_ompi_dirs
from pairbench.runner.plan import Point

KILL_GRACE_S = 3.0  # SIGTERM -> SIGKILL
PEER_GRACE_S = 5.0  # ssh: how long the other side may run on after one side failed


@dataclass
class PointResult:
    point: Point
    exit_codes: list[int | None]  # per side; None = never started
    timed_out: bool = False
    launch_error: str | None = None
    elapsed_s: float = 0.0
    interrupted: bool = False  # stopped by the caller (a signal to the sweep)
    soft_stopped: bool = False  # a soak point asked to stop early (SIGUSR1) and given time to
    #                             write what it measured (rows flagged soak_partial)

    @property
    def ok(self) -> bool:
        return (self.launch_error is None and not self.timed_out
                and all(c == 0 for c in self.exit_codes))


SOFT_STOP_SIGNAL = signal.SIGUSR1  # pairbench-mpi --soak: end the soak now, keep what it measured
SOFT_STOP_GRACE_S = 60.0  # how long a soak point may take to write its rows after it


def _soft_stop(procs: list[subprocess.Popen]) -> None:
    """Ask a soak point to end now: SIGUSR1 to every process group (mpirun forwards it to
    its ranks; the ranks of the local launcher get it directly too). The soak stops at its
    next window, analyses what it measured and writes rows flagged soak_partial."""
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, SOFT_STOP_SIGNAL)


def run_point(point: Point, run_dir: Path, grace_s: float = 10.0,
              stop: Callable[[], bool] | None = None,
              tick: Callable[[float], None] | None = None) -> PointResult:
    """Start every side of the point and wait, at most timeout + grace (the executable gets
    the same --timeout and should stop itself first). When stop() turns true (checked every
    POLL_S), the point is ended the same way (process groups killed), interrupted=True.
    A soak point (point.soak_s) is first asked to stop (SIGUSR1, soft_stopped=True) and
    given SOFT_STOP_GRACE_S to write the rows of what it measured, at a stop and at its
    deadline alike; only then is it killed. tick(elapsed_s) is called at every poll.
    Nothing here is interrupted by an exception from a signal handler: killing a process
    group must not depend on where a signal happened to land."""
    env = dict(os.environ)
    env.update(dict(point.env))
    for rel, text in point.files:  # e.g. a pattern point's host file (rank i = line i)
        (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / rel).write_text(text)
    with contextlib.ExitStack() as job:
        if point.ompi_dirs:
            job.enter_context(private_ompi_dirs(env))
        return _run_point(point, run_dir, env, grace_s, stop, tick)


def _run_point(point: Point, run_dir: Path, env: dict[str, str], grace_s: float,
               stop: Callable[[], bool] | None,
               tick: Callable[[float], None] | None) -> PointResult:
    procs: list[subprocess.Popen] = []
    files = []
    result = PointResult(point=point, exit_codes=[None] * len(point.sides))
    start = time.monotonic()
    try:
        for side in point.sides:
            out = open(run_dir / side.stdout, "wb")  # noqa: SIM115 (closed below)
            err = open(run_dir / side.stderr, "wb")  # noqa: SIM115
            files += [out, err]
            try:
                procs.append(subprocess.Popen(list(side.argv), stdout=out, stderr=err,
                                              stdin=subprocess.DEVNULL, env=env,
                                              start_new_session=True))
            except OSError as exc:
                what = "not found" if isinstance(exc, FileNotFoundError) else exc.strerror
                result.launch_error = f"cannot start {side.argv[0]}: {what}"
                break
        deadline = start + point.timeout_s + grace_s
        failed_at: float | None = None
        while procs and result.launch_error is None:
            if stop is not None and stop() and not result.interrupted:
                result.interrupted = True
                if not point.soak_s:
                    break
                _soft_stop(procs)
                result.soft_stopped = True
                deadline = time.monotonic() + SOFT_STOP_GRACE_S
            codes = [p.poll() for p in procs]
            if all(c is not None for c in codes):
                break
            now = time.monotonic()
            if tick is not None:
                tick(now - start)
            if any(c not in (None, 0) for c in codes) and failed_at is None:
                failed_at = now
            if now >= deadline:
                if point.soak_s and not result.soft_stopped:
                    _soft_stop(procs)
                    result.soft_stopped = True
                    deadline = now + SOFT_STOP_GRACE_S
                    continue
                result.timed_out = True
                break
            if failed_at is not None and now - failed_at > PEER_GRACE_S:
                break  # one side failed; do not wait for the other to time out
            time.sleep(POLL_S)
    finally:
        for p in procs:
            kill_group(p, KILL_GRACE_S)
        for f in files:
            f.close()
    for i, p in enumerate(procs):
        result.exit_codes[i] = p.returncode
    result.elapsed_s = time.monotonic() - start
    return result
