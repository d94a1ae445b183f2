"""Child processes, the one way the driver and the Soft-RoCE rig handle them: a helper
command with a timeout, a whole process group killed (SIGTERM, a grace, SIGKILL), a wait
with a deadline and a stop condition, and a child's pipes copied as they arrive.

Standard library only and no other pairbench import: scripts/softroce (the rig, run on the
host and inside the VM) imports it from scripts/ without the driver's dependencies.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

POLL_S = 0.05


@dataclass(frozen=True)
class Bounded:
    """What run_bounded saw: state "exited" (result holds the exit code and output),
    "deadline" or "stopped" (the process group was killed; result holds what it had
    printed), or "cannot start" (result None, why says it)."""

    state: str
    result: subprocess.CompletedProcess[str] | None
    why: str = ""


def run_bounded(argv: list[str], timeout_s: float, stop: Callable[[], bool] | None = None,
                grace_s: float = 1.0, **kwargs: object) -> Bounded:
    """Run a helper command to completion in its own process group, stdin closed, stdout and
    stderr captured as text (through temporary files: a child it leaves behind cannot hold
    the driver on a pipe). On the deadline or when stop() turns true (checked every POLL_S)
    the whole group is ended (kill_group), the helper's own children with it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    start_new_session=True, **kwargs)  # type: ignore[call-overload]
        except OSError as exc:
            return Bounded("cannot start", None, exc.strerror or str(exc))
        state = wait(proc, time.monotonic() + timeout_s, stop)
        if state != "exited":
            kill_group(proc, grace_s)
        texts = []
        for f in (out, err):
            f.seek(0)
            texts.append(f.read().decode("utf-8", "replace"))
        return Bounded(state, subprocess.CompletedProcess(argv, proc.returncode, *texts))


def run_captured(argv: list[str], timeout_s: float = 10.0,
                 stop: Callable[[], bool] | None = None, **kwargs: object
                 ) -> subprocess.CompletedProcess[str] | None:
    """run_bounded for a helper whose failure only means "unknown": the result when it
    exited, None when it cannot start, did not finish within timeout_s or was stopped (its
    process group has then been killed)."""
    res = run_bounded(argv, timeout_s, stop, **kwargs)
    return res.result if res.state == "exited" else None


def kill_group(proc: subprocess.Popen, grace_s: float) -> None:
    """End the process group led by proc (started with start_new_session=True): SIGTERM,
    up to grace_s for the leader to exit, then SIGKILL the group, since the leader may be
    gone while children (forked workers, mpirun ranks, qemu) linger; proc is reaped."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def exit_status(returncode: int) -> int:
    """A shell-style exit status: 128+N for a child killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def wait(proc: subprocess.Popen, deadline: float, stop: Callable[[], bool] | None = None,
         poll_s: float = POLL_S) -> str:
    """Wait for proc until time.monotonic() reaches deadline or stop() turns true, checked
    every poll_s. Returns "exited", "deadline" or "stopped"; kills nothing (the caller
    decides, usually kill_group)."""
    while True:
        if proc.poll() is not None:
            return "exited"
        if stop is not None and stop():
            return "stopped"
        now = time.monotonic()
        if now >= deadline:
            return "deadline"
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.001, min(poll_s, deadline - now)))


def fd_writer(fd: int, lock: threading.Lock | None = None) -> Callable[[bytes], None]:
    """A write function for a raw descriptor: everything written, under lock if given; a
    reader that went away (EPIPE) makes the rest be dropped, never an error."""
    def write(data: bytes) -> None:
        with lock if lock is not None else contextlib.nullcontext():
            while data:
                try:
                    data = data[os.write(fd, data):]
                except BrokenPipeError:
                    return
    return write


def copy_pipe(src: IO[bytes], write: Callable[[bytes], None], by_line: bool = False,
              prefix: bytes = b"") -> None:
    """Copy a pipe to write() until EOF, as it arrives: chunks as read, or (by_line) whole
    lines only, each prefixed (a last line without a newline gets one)."""
    fd = src.fileno()
    buf = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not by_line:
            if not chunk:
                return
            write(chunk)
            continue
        buf += chunk
        lines = buf.split(b"\n")
        buf = lines.pop() if chunk else b""
        if not chunk and lines and lines[-1] == b"":
            lines.pop()  # EOF right after a newline
        if lines:
            write(b"".join(prefix + ln + b"\n" for ln in lines))
        if not chunk:
            return


def start_copy(src: IO[bytes], write: Callable[[bytes], None], by_line: bool = False,
               prefix: bytes = b"") -> threading.Thread:
    """copy_pipe in a daemon thread, started; join it after the child has exited."""
    t = threading.Thread(target=copy_pipe, args=(src, write, by_line, prefix), daemon=True)
    t.start()
    return t
