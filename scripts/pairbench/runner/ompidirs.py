"""Open MPI's files of one job in a folder of the job's own, removed after the job: its
session directory (`orte_tmpdir_base`: /tmp/ompi.HOST.UID/jf.* or pid.*, which singleton
runs leave behind) and the shared-memory transport's backing files (`btl_vader_backing_directory`:
/dev/shm/vader_segment.*, which a job ended by SIGKILL leaves behind, 4 MB a rank).

Only for jobs whose ranks all run on this host: on other nodes the folder would not exist,
and Open MPI would then fall back from shared memory to a network transport without a word.
A value the user set for either parameter (environment OMPI_MCA_...) is kept as it is: it is
their tuning, not ours to change. The executables' record of the tuning they saw (env json
"tuning") leaves out a variable whose value is exactly this folder (PAIRBENCH_OMPI_DIR): a
different folder at every job is no difference of tuning."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, MutableMapping

SESSION = "OMPI_MCA_orte_tmpdir_base"
BACKING = "OMPI_MCA_btl_vader_backing_directory"
VARIABLES = (SESSION, BACKING)
MARKER = "PAIRBENCH_OMPI_DIR"  # the folder, so that the env record can tell it is ours
PREFIX = "pairbench-ompi-"  # then the creating process's PID and "-": scripts/shm-leaks reads it


def _base() -> str | None:
    """/dev/shm (tmpfs: where vader's files belong; a disk-backed folder would write its pages
    back) when it is there and writable, else the temporary folder."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


@contextlib.contextmanager
def private_ompi_dirs(env: MutableMapping[str, str]) -> Iterator[str | None]:
    """Point env's Open MPI session and backing directories at a new folder for the job and
    remove the folder (everything in it) when the block ends, however it ends. Yields the
    folder, or None when the user set either variable (nothing changed)."""
    if any(v in env for v in VARIABLES):
        yield None
        return
    # The PID in the name lets scripts/shm-leaks tell the folder of a live job beside a test
    # run (not the run's) from one left behind.
    folder = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=_base())
    env[SESSION] = folder
    env[BACKING] = folder
    env[MARKER] = folder  # the executables' tuning record leaves these out (core/pb_env.c)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
