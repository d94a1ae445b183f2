"""Helpers of the fault suite (tests/python/test_faults_*.py): what is left after a fault —
processes, System V shared-memory segments, temporary files — and how to find them."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# PAIRBENCH_BIN_DIR points at another build (default build/bin), as in test_mpirun_real.py.
BIN_DIR = Path(os.environ.get("PAIRBENCH_BIN_DIR", REPO / "build" / "bin"))
MPI_BIN = BIN_DIR / "pairbench-mpi"


def mpi_env() -> dict[str, str]:
    env = dict(os.environ)
    if os.geteuid() == 0:  # Open MPI refuses to run as root without both
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def mpi_missing() -> str | None:
    """Why the real MPI binary cannot run here, or None."""
    if not MPI_BIN.is_file():
        return f"{MPI_BIN} is not built yet"
    if shutil.which("mpirun") is None:
        return "mpirun not installed (apt-get install openmpi-bin)"
    return None


def processes_with(marker: str) -> list[tuple[int, str]]:
    """Live (not zombie) processes whose command line contains marker: (pid, cmdline)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                "utf-8", "replace")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        state = stat.rsplit(")", 1)[-1].split()[0]
        if marker in cmd and state not in ("Z", "X"):
            found.append((int(pid), cmd.strip()))
    return found


def pid_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


# The segment list the MPI checkers use (tests/mpi/mpi_env.py: stdlib, no pytest).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mpi"))
from mpi_env import settled, shm_segments  # noqa: E402  shmid -> (creator pid, mode, nattch)


def leaked_shm(before: dict) -> list[str]:
    """Segments created since `before` whose creator is gone: leaked (ipcs -m lines), once
    mpi_env.settled's bound has passed (a just-killed rank may still be detaching)."""
    def look() -> list[str]:
        return [f"shmid {shmid} creator {cpid} nattch {nattch}"
                for shmid, (cpid, _mode, nattch) in shm_segments().items()
                if shmid not in before and not pid_alive(cpid)]
    return settled(look)


def ipcs_m() -> str:
    try:
        return subprocess.run(["ipcs", "-m"], capture_output=True, text=True, timeout=30,
                              check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def temp_files(directory: Path) -> list[str]:
    """Files the safe writer may have left next to a target (.NAME.tmp-PID-XXXX)."""
    return sorted(p.name for p in directory.iterdir() if ".tmp-" in p.name)


def stderr_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


@contextlib.contextmanager
def read_only_directory(tmp_path: Path) -> Iterator[Path]:
    """A directory nobody may write in, even root: a read-only tmpfs mounted on it (root),
    or mode 0555 (anyone else); skipped where neither is possible."""
    d = tmp_path / "ro"
    d.mkdir()
    mounted = False
    if os.geteuid() == 0:
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(d)],
                              capture_output=True, text=True, timeout=30, check=False)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a read-only tmpfs here: {proc.stderr.strip()}")
        mounted = True
    else:
        d.chmod(0o555)
    try:
        yield d
    finally:
        if mounted:
            subprocess.run(["umount", str(d)], capture_output=True, timeout=30, check=False)
        else:
            d.chmod(0o755)
