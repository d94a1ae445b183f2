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
    """shmid -> (creator pid, mode, nattch) from /proc/sysvipc/shm (what ipcs -m lists)."""
    out = {}
    try:
        with open("/proc/sysvipc/shm") as f:
            next(f)
            for line in f:
                p = line.split()
                out[int(p[1])] = (int(p[4]), int(p[2], 8), int(p[6]))
    except (OSError, StopIteration):
        pass
    return out
