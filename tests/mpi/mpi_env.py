"""What the MPI checkers (mpi_check.py, mpi_faults.py) both need: the environment
mpirun runs in, and the System V segments that exist (stdlib only)."""

from __future__ import annotations

import os


def env_for_mpi() -> dict:
    env = dict(os.environ)
    if os.geteuid() == 0:
        # Open MPI refuses to run as root without both variables.
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
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
