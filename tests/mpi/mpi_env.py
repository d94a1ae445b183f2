"""What the MPI checkers (mpi_check.py, mpi_faults.py, pattern_check.py, golden.py) need: the
environment mpirun runs in, the System V segments that exist, and a System V IPC namespace
of their own (stdlib only)."""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable

CLONE_NEWIPC = 0x08000000  # <sched.h>


_OMPI_DIR: list[str] = []  # this checker's folder for Open MPI's files (made once)


def ompi_dir() -> str:
    """A folder of this checker's own (on /dev/shm where possible) for Open MPI's session
    directories and shared-memory backing files, removed when the checker exits: the jobs it
    kills on purpose (SIGKILL, watchdogs) and its singleton runs leave nothing in /tmp/ompi.*
    or /dev/shm (the same rule as the driver's runner/ompidirs.py, for jobs started here)."""
    if not _OMPI_DIR:
        base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        _OMPI_DIR.append(tempfile.mkdtemp(prefix=f"pairbench-ompi-check-{os.getpid()}-",
                                           dir=base))
        atexit.register(shutil.rmtree, _OMPI_DIR[0], True)
    return _OMPI_DIR[0]


def env_for_mpi() -> dict:
    env = dict(os.environ)
    if os.geteuid() == 0:
        # Open MPI refuses to run as root without both variables.
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    for var in ("OMPI_MCA_orte_tmpdir_base", "OMPI_MCA_btl_vader_backing_directory"):
        env.setdefault(var, ompi_dir())
    return env


def shm_segments() -> dict:
    """shmid -> (creator pid, mode, nattch) from /proc/sysvipc/shm (what ipcs -m lists).
    A list that cannot be read raises (OSError, ValueError): every leak check built on it
    would pass on an empty answer."""
    out = {}
    with open("/proc/sysvipc/shm") as f:
        head = f.readline().split()
        if head[:7] != ["key", "shmid", "perms", "size", "cpid", "lpid", "nattch"]:
            raise ValueError(f"/proc/sysvipc/shm: not the kernel's header: {head}")
        for line in f:
            p = line.split()
            out[int(p[1])] = (int(p[4]), int(p[2], 8), int(p[6]))
    return out


def enter_own_ipc_namespace() -> bool:
    """Move this process (and every process it starts from now on) into a new, empty System V
    IPC namespace: unshare(CLONE_NEWIPC), which needs root. Then every segment this process
    sees is one its own jobs made, so checks that run side by side (ctest -j, pytest -n) do
    not see each other's segments. False (nothing changed) where that is not allowed."""
    if os.geteuid() != 0:
        return False
    return ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWIPC) == 0


def run_in_own_ipc_namespace(main: Callable[[], int], who: str) -> int:
    """main() in an IPC namespace of its own (where allowed); when it returns, every segment
    still there is one its jobs left behind: a leak, which fails a check that passed.
    A skip (77) stays a skip."""
    own = enter_own_ipc_namespace()
    rc = main()
    if own and rc in (0, 1):
        left = settled(shm_segments)
        for shmid, (cpid, mode, nattch) in sorted(left.items()):
            print(f"FAIL: {who}: shm segment {shmid} (creator pid {cpid}, mode {mode:o}, "
                  f"nattch {nattch}) left in the check's own IPC namespace", file=sys.stderr)
        if left:
            return 1
    return rc


def settled(look: Callable[[], dict | list], bound_s: float = 10.0) -> dict | list:
    """look() until it finds nothing, for at most bound_s: what it finds at the end. A process
    that was just killed can still be attached to its segment for a while on a loaded machine
    (the segment is marked for removal and goes when its last process has exited), so a leak
    is what is still there after the bound, not what a first look catches in passing."""
    end = time.monotonic() + bound_s
    found = look()
    while found and time.monotonic() < end:
        time.sleep(0.2)
        found = look()
    return found
