"""Running planned points: subprocesses from argument lists, a deadline per point, and the
whole process group killed on timeout (mpirun and forked workers included)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pairbench.io.procutil import POLL_S, kill_group
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

    @property
    def ok(self) -> bool:
        return (self.launch_error is None and not self.timed_out
                and all(c == 0 for c in self.exit_codes))


def run_point(point: Point, run_dir: Path, grace_s: float = 10.0,
              stop: Callable[[], bool] | None = None) -> PointResult:
    """Start every side of the point and wait, at most timeout + grace (the executable gets
    the same --timeout and should stop itself first). When stop() turns true (checked every
    POLL_S), the point is ended the same way (process groups killed), interrupted=True.
    Nothing here is interrupted by an exception from a signal handler: killing a process
    group must not depend on where a signal happened to land."""
    env = dict(os.environ)
    env.update(dict(point.env))
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
            if stop is not None and stop():
                result.interrupted = True
                break
            codes = [p.poll() for p in procs]
            if all(c is not None for c in codes):
                break
            now = time.monotonic()
            if any(c not in (None, 0) for c in codes) and failed_at is None:
                failed_at = now
            if now >= deadline:
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
