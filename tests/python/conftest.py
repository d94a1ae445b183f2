"""Shared fixtures: the fake executable, a CLI runner, and ready-made runs."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
HERE = Path(__file__).resolve().parent
FAKE = HERE / "fake_pairbench.py"
FAKE_RIG = HERE / "fake_rig.py"
FAKE_SSH = HERE / "fake_ssh.py"

# the driver; rowcheck; mpi_env (stdlib: the MPI checkers and the segment list)
for _p in (SCRIPTS, REPO / "tests" / "support", REPO / "tests" / "mpi"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from mpi_env import enter_own_ipc_namespace, settled, shm_segments  # noqa: E402

OWN_IPC = False


def pytest_configure(config: pytest.Config) -> None:
    """Each pytest process (each xdist worker) in a System V IPC namespace of its own, before
    any test: the leak checks of tests running side by side (pytest -n) then cannot see each
    other's segments, and what is left at the end is this process's tests' (see below)."""
    global OWN_IPC
    OWN_IPC = enter_own_ipc_namespace()


@pytest.fixture(scope="session", autouse=True)
def no_segment_left_in_own_ipc_namespace() -> Iterator[None]:
    """After the last test of this process: a segment still in its own namespace was left by
    one of its tests (it would vanish with the namespace, unseen by test-all's last stage)."""
    yield
    if OWN_IPC:
        left = settled(shm_segments)
        assert not left, ("System V segments left in this pytest process's own IPC namespace "
                          f"(shmid: (creator pid, mode, nattch)): {left}")


# Subcommands that only read files and write files and text: cli() runs them in this pytest
# process (pairbench.cli.main with its stdout and stderr captured, the environment and working
# directory of the call set around it), so pandas, scipy and matplotlib are imported once per
# worker instead of once per call (~1 CPU-s each, ~100 calls). The ones that start processes,
# handle signals or drive a browser (sweep, fabric, default, screenshot) run as a process, as
# do the tests of process behaviour (closed stdout, signals: they call subprocess themselves).
IN_PROCESS = frozenset({"compare", "accept", "noise", "show", "plot", "report", "import"})


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `python -m pairbench ARGS` as a user would (scripts/ on PYTHONPATH); the
    subcommands in IN_PROCESS in this process, with the same exit code and output."""
    full = dict(os.environ)
    full["PYTHONPATH"] = str(SCRIPTS)
    full.update(env or {})
    if args and args[0] in IN_PROCESS:
        return _cli_in_process(list(args), full, cwd)
    return subprocess.run([sys.executable, "-m", "pairbench", *args], capture_output=True,
                          text=True, env=full, cwd=cwd, timeout=timeout, check=False)


def _cli_in_process(args: list[str], env: dict[str, str],
                    cwd: Path | None) -> subprocess.CompletedProcess:
    """pairbench.cli.main(args) as `python -m pairbench` would run it: its return value or
    SystemExit code is the exit code, an exception escaping it is a traceback and exit 1."""
    from pairbench import cli as pb_cli

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = pb_cli.main(args)
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if not isinstance(e.code, int | None):
                    print(e.code, file=sys.stderr)
            except Exception:
                traceback.print_exc()
                rc = 1
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(["pairbench", *args], rc, out.getvalue(), err.getvalue())


def assert_clean_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    """Exit 2, exactly one line on stderr, no traceback, and the line says what is wrong."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])


def sweep(results: Path, *extra: str, env: dict[str, str] | None = None,
          layer: str = "verbs", tests: str = "write_lat,write_bw", sizes: str = "8,64,1K",
          pairs: str = "1,2", reps: str = "2") -> tuple[subprocess.CompletedProcess, Path | None]:
    """A sweep with the fake executable; returns (process, run directory or None)."""
    proc = cli("sweep", "--layer", layer, "--test", tests, "--sizes", sizes, "--pairs", pairs,
               "--repetitions", reps, "--binary", str(FAKE), "--results-dir", str(results),
               "--no-progress", *extra, env=env)
    out = proc.stdout.strip().splitlines()
    run_dir = Path(out[-1]) if out and Path(out[-1]).is_dir() else None
    return proc, run_dir


@pytest.fixture(scope="session")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    proc, run = sweep(tmp_path_factory.mktemp("base"), env={"FAKE_PB_SEED": "1"}, reps="3")
    assert proc.returncode == 0, proc.stderr
    assert run is not None
    return run


@pytest.fixture(scope="session")
def oversubscribed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Same configuration as base_run; its 2-pair points are flagged oversubscribed."""
    proc, run = sweep(tmp_path_factory.mktemp("oversub"),
                      env={"FAKE_PB_SEED": "1", "FAKE_PB_OVERSUB_PAIRS": "2"}, reps="3")
    assert proc.returncode == 0, proc.stderr
    assert run is not None
    return run


@pytest.fixture(scope="session")
def same_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Same configuration as base_run, different noise."""
    proc, run = sweep(tmp_path_factory.mktemp("same"), env={"FAKE_PB_SEED": "2"}, reps="3")
    assert proc.returncode == 0, proc.stderr
    assert run is not None
    return run


@pytest.fixture(scope="session")
def slow_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Planted regression: every latency 20 % higher (bandwidth 20 % lower)."""
    proc, run = sweep(tmp_path_factory.mktemp("slow"),
                      env={"FAKE_PB_SEED": "3", "FAKE_PB_SCALE": "1.2"}, reps="3")
    assert proc.returncode == 0, proc.stderr
    assert run is not None
    return run
