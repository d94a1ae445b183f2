"""scripts/shm-leaks, test-all's last stage (issue 26): a segment of a job running beside the
suite does not fail it; a segment the suite's own process leaves behind does; an unreadable
/proc/sysvipc/shm is an error, never "no segments".  Real SysV segments (shmget via ctypes)."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import faultlib  # noqa: F401  puts tests/mpi (mpi_env) on sys.path
import pytest
from mpi_env import shm_segments

from conftest import REPO, SCRIPTS

HERE_CONFTEST = Path(__file__).resolve().parent / "conftest.py"

SHM_LEAKS = SCRIPTS / "shm-leaks"
# A process that creates a private 4 KiB segment, prints its id, then waits for stdin to close
# (stays alive: a job's segment in use) or exits at once (its segment is left behind).
MAKE_SEGMENT = """
import ctypes, sys
shmid = ctypes.CDLL(None, use_errno=True).shmget(0, 4096, 0o1000 | 0o600)
assert shmid >= 0, ctypes.get_errno()
print(shmid, flush=True)
if sys.argv[1] == "live":
    sys.stdin.read()
"""


_EMPTY_TMP = tempfile.mkdtemp(prefix="pb-shm-leaks-test-")  # no Open MPI session dirs in it
atexit.register(shutil.rmtree, _EMPTY_TMP, True)


def env_of(run: str | None) -> dict[str, str]:
    """The checker's environment for a run marker; TMPDIR an empty folder of this module's:
    the segment tests judge segments, and another pytest worker's Open MPI singleton
    (TMPDIR/ompi.HOST.UID/jf.*, made between snapshot and check) is not theirs to count."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PB_TEST_ALL_RUN", "PB_TEST_ALL_IPCNS")}
    env["TMPDIR"] = _EMPTY_TMP
    if run is not None:
        env["PB_TEST_ALL_RUN"] = run
    return env


@pytest.fixture
def segments() -> Iterator[list[int]]:
    """Ids of the segments a test makes; removed afterwards (the suite's own check follows)."""
    made: list[int] = []
    yield made
    for shmid in made:
        subprocess.run(["ipcrm", "-m", str(shmid)], capture_output=True)


def make_segment(made: list[int], mode: str, run: str | None,
                 prefix: tuple[str, ...] = ()) -> subprocess.Popen:
    p = subprocess.Popen([*prefix, sys.executable, "-c", MAKE_SEGMENT, mode], env=env_of(run),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    made.append(int(p.stdout.readline()))
    if mode == "leak":
        p.wait(timeout=30)
    return p


def _private_dev_shm() -> tuple[subprocess.Popen | None, Path]:
    """A process in a mount namespace of its own with an empty tmpfs on /dev/shm, and that
    /dev/shm as this process reaches it (/proc/PID/root/dev/shm): the checker runs there, so
    that the /dev/shm files other pytest workers' jobs make meanwhile (vader_segment.*,
    per-job folders) are not in what it judges (the fresh-clone test-all at 5efe8f1: four
    vader files of another worker's job). Without root and unshare --mount: the real
    /dev/shm (None), as before."""
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("nsenter") is None:
        return None, Path("/dev/shm")
    holder = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                               "mount -t tmpfs -o size=4m,mode=1777 pbshm /dev/shm && "
                               "exec sleep 3600"])
    for _ in range(500):
        try:
            if Path(f"/proc/{holder.pid}/comm").read_text().strip() == "sleep":
                return holder, Path(f"/proc/{holder.pid}/root/dev/shm")
        except OSError:
            break
        if holder.poll() is not None:
            break
        time.sleep(0.01)
    holder.kill()
    holder.wait()
    return None, Path("/dev/shm")


_HOLDER: subprocess.Popen | None = None
DEV_SHM = Path("/dev/shm")


@pytest.fixture(autouse=True, scope="module")
def private_dev_shm() -> Iterator[None]:
    """The module's tests judge a /dev/shm of their own (_private_dev_shm); its holder ends
    with the module (a fixture, not at import: collection starts no process)."""
    global _HOLDER, DEV_SHM
    _HOLDER, DEV_SHM = _private_dev_shm()
    try:
        yield
    finally:
        if _HOLDER is not None:
            _HOLDER.kill()
            _HOLDER.wait()
        _HOLDER, DEV_SHM = None, Path("/dev/shm")


def shm_leaks(cmd: str, snap: Path, run: str | None, prefix: tuple[str, ...] = (),
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """scripts/shm-leaks CMD SNAP, in the private /dev/shm's mount namespace (DEV_SHM) where
    there is one; prefix: an nsenter of other namespaces to add."""
    if _HOLDER is not None:
        mnt = f"--mount=/proc/{_HOLDER.pid}/ns/mnt"
        prefix = (*prefix, mnt) if prefix[:1] == ("nsenter",) else ("nsenter", mnt, *prefix)
    return subprocess.run([*prefix, sys.executable, str(SHM_LEAKS), cmd, str(snap)],
                          env=env or env_of(run), capture_output=True, text=True, timeout=60)


def test_a_job_beside_the_run_does_not_fail_it(segments: list[int], tmp_path: Path) -> None:
    snap = tmp_path / "snap.json"
    assert shm_leaks("snapshot", snap, "run-a").returncode == 0
    job = make_segment(segments, "live", None)  # another job's, still running: no marker
    try:
        p = shm_leaks("check", snap, "run-a")
    finally:
        job.communicate("")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("0 left"), p.stdout
    assert "creator gone or marked PB_TEST_ALL_RUN=run-a" in p.stdout, p.stdout


def test_a_segment_the_run_leaves_fails_it(segments: list[int], tmp_path: Path) -> None:
    snap = tmp_path / "snap.json"
    assert shm_leaks("snapshot", snap, "run-b").returncode == 0
    make_segment(segments, "leak", "run-b")  # a process of the run, gone, its segment kept
    live = make_segment(segments, "live", "run-b")  # and one of the run still running
    try:
        p = shm_leaks("check", snap, "run-b")
    finally:
        live.communicate("")
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert p.stdout.startswith("2 left"), p.stdout
    for shmid in segments:
        assert f"left behind: shmid {shmid} " in p.stderr, p.stderr


def unshare_ok(*flags: str) -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", *flags, "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not unshare_ok("--ipc"), reason="needs root and unshare --ipc")
def test_in_its_own_ipc_namespace_only_the_runs_segments_count(segments: list[int],
                                                               tmp_path: Path) -> None:
    """test-all's way where it can: the run in its own IPC namespace. A segment left outside it
    (even by a process carrying the marker) is not the run's; one left inside it is."""
    snap = tmp_path / "snap.json"
    # One namespace kept open by a process, entered by each command through nsenter.
    holder = subprocess.Popen(["unshare", "--ipc", "sleep", "300"])
    try:
        ns = ("nsenter", f"--ipc=/proc/{holder.pid}/ns/ipc")
        ns_id = os.readlink("/proc/self/ns/ipc")
        for _ in range(300):  # until unshare has entered its namespace
            ns_id = os.readlink(f"/proc/{holder.pid}/ns/ipc")
            if ns_id != os.readlink("/proc/self/ns/ipc"):
                break
            time.sleep(0.01)
        else:
            raise AssertionError("unshare --ipc did not enter a namespace")
        env = env_of("run-c") | {"PB_TEST_ALL_IPCNS": ns_id}
        assert shm_leaks("snapshot", snap, None, ns, env).returncode == 0
        make_segment(segments, "leak", "run-c")  # outside the namespace
        p = shm_leaks("check", snap, None, ns, env)
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith("0 left") and "own IPC namespace" in p.stdout, p.stdout
        make_segment([], "leak", None, ns)  # inside: no marker needed, gone with the namespace
        p = shm_leaks("check", snap, None, ns, env)
        assert p.returncode == 1, p.stdout
        assert p.stdout.startswith("1 left"), p.stdout
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.skipif(not unshare_ok("--mount"), reason="needs root and unshare --mount")
def test_unreadable_segment_list_is_an_error(tmp_path: Path) -> None:
    snap = tmp_path / "snap.json"
    assert shm_leaks("snapshot", snap, "run-d").returncode == 0
    garbage = tmp_path / "garbage"
    garbage.write_text("not the kernel's table\n")
    for over in ("/dev/null", str(garbage)):  # empty, and not what the kernel writes
        p = subprocess.run(["unshare", "--mount", "sh", "-c",
                            'mount --bind "$1" /proc/sysvipc/shm && exec "$2" "$3" check "$4"',
                            "sh", over, sys.executable, str(SHM_LEAKS), str(snap)],
                           env=env_of("run-d"), capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, (over, p.stdout, p.stderr)
        assert "cannot read the System V segments" in p.stderr, p.stderr


@pytest.mark.parametrize("content", [None, "", "garbage\n"])
def test_mpi_checkers_segment_list_fails_when_unreadable(content: str | None, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/mpi/mpi_env.py: the segment list of the MPI checkers' leak checks (and
    faultlib's) raises when /proc/sysvipc/shm is missing or not the kernel's, instead of {}."""
    import mpi_env  # on sys.path through faultlib, as the fault tests import it

    fake = tmp_path / "shm"
    if content is not None:
        fake.write_text(content)
    real_open = open
    monkeypatch.setattr(mpi_env, "open", lambda path, *a, **k: real_open(
        fake if str(path) == "/proc/sysvipc/shm" else path, *a, **k), raising=False)
    with pytest.raises((OSError, ValueError)):
        mpi_env.shm_segments()
    monkeypatch.undo()
    assert isinstance(mpi_env.shm_segments(), dict)  # the real list still reads


# A check (an MPI checker's main, a pytest process) whose job leaves a segment: the segment
# is made by a child process that exits at once, as a crashed node leader would leave it.
LEAKING_MAIN = """
import subprocess, sys
sys.path.insert(0, sys.argv[1])
import mpi_env

def main():
    if sys.argv[2] != "clean":
        subprocess.run([sys.executable, "-c", sys.argv[3], "leak"], check=True)
    return {"clean": 0, "leak": 0, "skip": 77}[sys.argv[2]]

sys.exit(mpi_env.run_in_own_ipc_namespace(main, "the check"))
"""


@pytest.mark.skipif(not unshare_ok("--ipc"), reason="needs root and unshare --ipc")
@pytest.mark.parametrize(("mode", "rc"), [("clean", 0), ("leak", 1), ("skip", 77)])
def test_mpi_checker_in_its_own_namespace_fails_on_its_own_leak(mode: str, rc: int) -> None:
    """tests/mpi's checkers run in an IPC namespace of their own (ctest -j runs them side by
    side): a segment their job leaves turns a pass into a failure naming it; a skip stays
    one; and the segment is not seen outside (it goes with the namespace)."""
    before = set(shm_segments())
    p = subprocess.run([sys.executable, "-c", LEAKING_MAIN, str(REPO / "tests" / "mpi"), mode,
                        MAKE_SEGMENT], capture_output=True, text=True, timeout=60)
    assert p.returncode == rc, (p.stdout, p.stderr)
    if mode == "leak":
        assert "FAIL: the check: shm segment" in p.stderr, p.stderr
        assert "left in the check's own IPC namespace" in p.stderr, p.stderr
    else:
        assert "FAIL" not in p.stderr, p.stderr
    assert set(shm_segments()) == before


@pytest.mark.skipif(not unshare_ok("--ipc"), reason="needs root and unshare --ipc")
def test_pytest_process_in_its_own_namespace_fails_on_a_leak(tmp_path: Path) -> None:
    """Each pytest process of the driver tests (each xdist worker) has an IPC namespace of its
    own; a segment one of its tests leaves fails the run at the end, naming it."""
    (tmp_path / "conftest.py").write_text(
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('pb_conftest', {str(HERE_CONFTEST)!r})\n"
        "mod = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(mod)\n"
        "pytest_configure = mod.pytest_configure\n"
        "no_segment_left_in_own_ipc_namespace = mod.no_segment_left_in_own_ipc_namespace\n")
    (tmp_path / "test_leaky.py").write_text(
        "import subprocess, sys\n"
        f"MAKE = {MAKE_SEGMENT!r}\n"
        "def test_clean():\n    pass\n"
        "def test_leaks():\n"
        "    subprocess.run([sys.executable, '-c', MAKE, 'leak'], check=True)\n")
    before = set(shm_segments())
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(tmp_path)], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert p.returncode == 1, p.stdout
    assert "2 passed, 1 error" in p.stdout, p.stdout
    assert "System V segments left in this pytest process's own IPC namespace" in p.stdout
    assert set(shm_segments()) == before
    (tmp_path / "test_leaky.py").write_text("def test_clean():\n    pass\n")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(tmp_path)], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stdout


def test_open_mpis_leftovers_fail_it_and_old_ones_do_not(tmp_path: Path) -> None:
    """Issue 37: an Open MPI session-directory entry (TMPDIR/ompi.HOST.UID/jf.*) or a
    /dev/shm file of Open MPI or of pairbench's per-job folders that is new since the snapshot
    fails the check, naming it; one that was there before the snapshot does not count."""
    tmp = tmp_path / "tmp"
    session = tmp / "ompi.h.0"
    (session / "jf.1").mkdir(parents=True)  # there before the run: not the run's
    env = {**env_of("run-o"), "TMPDIR": str(tmp)}
    snap = tmp_path / "snap.json"
    assert shm_leaks("snapshot", snap, None, env=env).returncode == 0
    p = shm_leaks("check", snap, None, env=env)
    assert p.returncode == 0 and "Open MPI files left: 0" in p.stdout, (p.stdout, p.stderr)
    (session / "jf.2").mkdir()
    shm_file = None
    if os.access(DEV_SHM, os.W_OK):
        shm_file = DEV_SHM / f"pairbench-ompi-test-{os.getpid()}"
        shm_file.mkdir()
    try:
        p = shm_leaks("check", snap, None, env=env)
    finally:
        if shm_file is not None:
            shm_file.rmdir()
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert f"left behind: Open MPI file {session / 'jf.2'}" in p.stderr, p.stderr
    assert str(session / "jf.1") not in p.stderr, p.stderr
    if shm_file is not None:  # as the checker sees it (in its namespace: /dev/shm)
        assert f"left behind: Open MPI file /dev/shm/{shm_file.name}" in p.stderr, p.stderr


@pytest.mark.skipif(not os.access(DEV_SHM, os.W_OK), reason="needs a writable /dev/shm")
def test_a_per_job_folder_of_a_live_job_beside_the_run_does_not_count(tmp_path: Path) -> None:
    """The driver's and the MPI checkers' per-job folders carry their creator's PID
    (pairbench-ompi-PID-*, pairbench-ompi-check-PID-*): one made during the run by a live
    process without the run's marker is a job beside the run (CI's failure at 63099be: another
    pytest worker's sweep between this module's snapshot and check); one of a live process
    with the marker, or of a process that is gone, is the run's and counts."""
    env = {**env_of("run-f"), "TMPDIR": str(tmp_path)}
    snap = tmp_path / "snap.json"
    assert shm_leaks("snapshot", snap, None, env=env).returncode == 0
    beside = subprocess.Popen(["sleep", "300"], env=env_of("another-run"))
    ours = subprocess.Popen(["sleep", "300"], env=env_of("run-f"))
    gone = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True)
    gone_pid = int(gone.stdout)
    made = [DEV_SHM / name for name in (
        f"pairbench-ompi-{beside.pid}-aaaa", f"pairbench-ompi-check-{beside.pid}-bbbb",
        f"pairbench-ompi-{ours.pid}-cccc", f"pairbench-ompi-check-{gone_pid}-dddd")]
    try:
        for d in made:
            d.mkdir()
        p = shm_leaks("check", snap, None, env=env)
    finally:
        for d in made:
            d.rmdir()
        for proc in (beside, ours):
            proc.kill()
            proc.wait()
    assert p.returncode == 1, (p.stdout, p.stderr)
    for d in made[:2]:
        assert d.name not in p.stderr, p.stderr
    for d in made[2:]:
        assert f"left behind: Open MPI file /dev/shm/{d.name}" in p.stderr, p.stderr
    assert "Open MPI files left: 2" in p.stdout, p.stdout
