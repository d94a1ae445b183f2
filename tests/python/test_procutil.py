"""pairbench.procutil: the one place child processes are killed, waited for and copied."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from pairbench.io import procutil


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_kill_group_ends_children_the_leader_leaves_behind() -> None:
    """A leader that ignores nothing but has a child ignoring SIGTERM: after kill_group
    the whole group is gone (SIGKILL after the grace), the leader reaped."""
    code = ("import os, signal, subprocess, sys, time\n"
            "c = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
            "signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); "
            "time.sleep(600)'], stdout=subprocess.PIPE)\n"
            "c.stdout.readline()\nprint(c.pid, flush=True)\ntime.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    assert _alive(child)
    assert procutil.wait(proc, time.monotonic() + 0.2) == "deadline"
    procutil.kill_group(proc, grace_s=1.0)
    assert proc.returncode is not None
    for _ in range(200):  # the child is reparented; init reaps it once killed
        if not _alive(child):
            break
        time.sleep(0.05)
    assert not _alive(child)
    proc.stdout.close()


def test_wait_reports_exit_and_stop() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    assert procutil.wait(proc, time.monotonic() + 60) == "exited"
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                            start_new_session=True)
    assert procutil.wait(proc, time.monotonic() + 60, stop=lambda: True) == "stopped"
    procutil.kill_group(proc, grace_s=1.0)
    assert procutil.exit_status(proc.returncode) == 128 + 15


def test_copy_pipe_whole_lines_with_prefix_and_chunks() -> None:
    r, w = os.pipe()
    os.write(w, b"one\ntw")
    got: list[bytes] = []
    with os.fdopen(r, "rb") as src:
        t = procutil.start_copy(src, got.append, by_line=True, prefix=b"[n0] ")
        time.sleep(0.1)
        os.write(w, b"o\nthree")
        os.close(w)
        t.join(timeout=10)
    assert b"".join(got) == b"[n0] one\n[n0] two\n[n0] three\n"
    assert all(chunk.endswith(b"\n") for chunk in got)  # never half a line

    r, w = os.pipe()
    out_r, out_w = os.pipe()
    with os.fdopen(r, "rb") as src:
        lock = threading.Lock()
        t = procutil.start_copy(src, procutil.fd_writer(out_w, lock))
        os.write(w, b"raw bytes, no newline")
        os.close(w)
        t.join(timeout=10)
    os.close(out_w)
    with os.fdopen(out_r, "rb") as out:
        assert out.read() == b"raw bytes, no newline"


def test_run_captured_times_out_and_reports_missing() -> None:
    assert procutil.run_captured(["/nonexistent/cmd"]) is None
    assert procutil.run_captured([sys.executable, "-c", "import time; time.sleep(60)"],
                                 timeout_s=0.5) is None
    res = procutil.run_captured([sys.executable, "-c", "print('hi')"])
    assert res is not None and res.returncode == 0 and res.stdout == "hi\n"
