"""Open MPI's files of a point in a folder of the point's own (runner/ompidirs.py, issue 37):
Open MPI really puts its session directory and shared-memory files there, and the folder is
gone after the point, after a clean end and after a job killed with its whole process group
(the SIGKILL that leaves /dev/shm/vader_segment.* behind otherwise)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from pairbench.runner import ompidirs
from pairbench.runner.launchers.base import OMPI_ROOT_ENV, main_side
from pairbench.runner.plan import Point
from pairbench.runner.run import run_point

REPO = Path(__file__).resolve().parents[2]
MPI_BIN = Path(os.environ.get("PAIRBENCH_BIN_DIR", REPO / "build" / "bin")) / "pairbench-mpi"


def test_folder_is_set_and_removed_with_what_is_in_it(monkeypatch: pytest.MonkeyPatch) -> None:
    env: dict[str, str] = {}
    with ompidirs.private_ompi_dirs(env) as folder:
        assert folder and os.path.isdir(folder)
        assert env[ompidirs.SESSION] == env[ompidirs.BACKING] == folder
        os.makedirs(os.path.join(folder, "ompi.h.0", "jf.1"))
        Path(folder, "vader_segment.h.1.0").write_bytes(b"x" * 4096)
    assert not os.path.exists(folder)


def test_folder_is_removed_when_the_block_raises() -> None:
    env: dict[str, str] = {}
    with pytest.raises(RuntimeError), ompidirs.private_ompi_dirs(env) as folder:
        raise RuntimeError("boom")
    assert folder and not os.path.exists(folder)


def test_a_users_own_setting_is_kept() -> None:
    env = {ompidirs.BACKING: "/mnt/huge"}
    with ompidirs.private_ompi_dirs(env) as folder:
        assert folder is None
        assert env == {ompidirs.BACKING: "/mnt/huge"}


def _point(tmp_path: Path, argv: list[str], ompi_dirs: bool = True) -> Point:
    (tmp_path / "raw").mkdir(exist_ok=True)
    return Point(index=0, name="p", layer="mpi", test="bw", pairs=1, repetition=1, sizes=(8,),
                 sides=main_side(argv, "raw/p"), timeout_s=60.0, csv=None, env_json=None,
                 env=OMPI_ROOT_ENV if os.geteuid() == 0 else (), ompi_dirs=ompi_dirs)


def _mpirun() -> str:
    mpirun = shutil.which("mpirun")
    if mpirun is None or not MPI_BIN.exists():
        pytest.skip("needs mpirun and build/bin/pairbench-mpi")
    return mpirun


@pytest.mark.parametrize("end", ["killed", "clean"])
def test_open_mpi_uses_the_folder_and_nothing_is_left(tmp_path: Path, end: str) -> None:
    """While the job runs, its folder holds Open MPI's session directory and vader's backing
    files (so they are not in /tmp/ompi.* or /dev/shm); after the point the folder is gone.
    'killed': the point is stopped while the job runs (its process group ends with SIGTERM,
    then SIGKILL), the case that leaves vader_segment files otherwise."""
    argv = [_mpirun(), "--oversubscribe", "-np", "2", str(MPI_BIN), "--test", "bw", "-s", "8",
            "--allow-oversubscribe", "-q", "--timeout", "30",
            "-D", "20" if end == "killed" else "0.05"]
    seen: dict[str, list[str]] = {}
    # This process's folders only (their names carry its PID): another pytest worker's sweep
    # makes its own beside this one.
    own = f"{ompidirs.PREFIX}{os.getpid()}-"
    before = {p for p in os.listdir("/dev/shm") if p.startswith(own)}

    def look() -> list[str]:
        mine = [p for p in os.listdir("/dev/shm") if p.startswith(own)
                and p not in before] if os.access("/dev/shm", os.W_OK) else []
        found = []
        for m in mine:
            for root, dirs, files in os.walk(os.path.join("/dev/shm", m)):
                found += [os.path.join(root, n) for n in dirs + files]
        return found

    def tick(_: float) -> None:
        seen["entries"] = seen.get("entries", []) + look()

    def stop() -> bool:
        entries = seen.get("entries", [])
        return end == "killed" and any("vader_segment" in e for e in entries)

    deadline = time.monotonic() + 60
    res = run_point(_point(tmp_path, argv), tmp_path, grace_s=5.0, stop=stop, tick=tick)
    assert time.monotonic() < deadline
    entries = seen.get("entries", [])
    if end == "killed":
        assert res.interrupted, (res, (tmp_path / "raw/p.stderr").read_text()[-2000:])
        assert any("vader_segment" in e for e in entries), entries
        assert any("/ompi." in e for e in entries), entries
    else:
        assert res.ok, (tmp_path / "raw/p.stderr").read_text()[-2000:]
    assert look() == [], "the point's Open MPI folder is still there"


def test_a_point_without_the_flag_gets_no_folder(tmp_path: Path) -> None:
    """Jobs with ranks on other hosts (--hosts): Open MPI's defaults stay (the folder would not
    exist there); the point's environment is not touched."""
    p = _point(tmp_path, ["/bin/sh", "-c", "echo ${OMPI_MCA_btl_vader_backing_directory:-unset}"],
               ompi_dirs=False)
    assert run_point(p, tmp_path).ok
    assert (tmp_path / "raw/p.stdout").read_text().strip() == "unset"


def test_the_env_record_leaves_the_drivers_folder_out(tmp_path: Path) -> None:
    """The executables record the tuning they saw (env json "tuning"): the driver's per-job
    folder (a different path at every job) is not tuning and must not show up as a difference
    between two runs; a user's own value of the same variable is recorded."""
    import json

    mpirun = _mpirun()

    def record(env_extra: dict[str, str]) -> dict:
        out = tmp_path / "e.json"
        argv = [mpirun, "--oversubscribe", "-np", "2", str(MPI_BIN), "--test", "latency",
                "-s", "8", "-n", "10", "-q", "--allow-oversubscribe", "--env-json", str(out)]
        env = {**os.environ, **dict(OMPI_ROOT_ENV), **env_extra}
        import subprocess

        subprocess.run(argv, env=env, check=True, capture_output=True, timeout=60)
        return json.loads(out.read_text())["tuning"]

    env: dict[str, str] = {}
    with ompidirs.private_ompi_dirs(env) as folder:
        assert folder is not None
        ours = record(env)
    assert ompidirs.BACKING not in ours["env"], ours["env"]
    assert ompidirs.BACKING in ours["not_recorded"], ours
    users = record({ompidirs.BACKING: "/dev/shm"})
    assert users["env"].get(ompidirs.BACKING) == "/dev/shm", users
