"""accept's soak criteria (issue 36): [[max_stalls]], [[min_bucket_share]] and
[[no_corruption]] on a real soak sweep through mpirun (--validate-live); a soak criterion on a
run without a soak fails ("no soak data", "no data was checked")."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import REPO, cli

MPI_BIN = Path(os.environ.get("PAIRBENCH_BIN_DIR", REPO / "build" / "bin")) / "pairbench-mpi"


@pytest.fixture(scope="module")
def soak_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not MPI_BIN.is_file():
        pytest.skip(f"{MPI_BIN} is not built yet")
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not installed (apt-get install openmpi-bin)")
    res = tmp_path_factory.mktemp("soak")
    proc = cli("sweep", "--layer", "mpi", "--test", "bw", "--sizes", "16K", "--pairs", "2",
               "--soak", "1", "--bucket", "0.2", "--validate-live", "4", "--launcher", "mpirun",
               "--allow-oversubscribe", "--pin", "none", "--timeout", "120", "--no-progress",
               "--binary", str(MPI_BIN), "--results-dir", str(res), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return Path(proc.stdout.strip().splitlines()[-1])


def test_accept_soak_criteria(soak_run: Path, tmp_path: Path) -> None:
    spec = tmp_path / "soak.toml"
    spec.write_text('[spec]\nname = "soak"\naccept_flags = ["oversubscribed"]\n'
                    '[[max_stalls]]\ntest = "bw"\nmax_stalls = 1000\n'
                    '[[min_bucket_share]]\ntest = "bw"\nmin_share = 0.0\n')
    ok = cli("accept", str(soak_run), "--spec", str(spec))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    spec.write_text('[spec]\nname = "soak"\naccept_flags = ["oversubscribed"]\n'
                    '[[min_bucket_share]]\ntest = "bw"\nmin_share = 1.01\n')
    bad = cli("accept", str(soak_run), "--spec", str(spec))
    assert bad.returncode == 1 and "min_bucket_share" in bad.stdout, bad.stdout + bad.stderr


def test_accept_soak_criterion_without_a_soak_fails(base_run: Path, tmp_path: Path) -> None:
    spec = tmp_path / "soak.toml"
    spec.write_text('[spec]\nname = "soak"\naccept_flags = ["oversubscribed"]\n'
                    '[[max_stalls]]\ntest = "bw"\n')
    p = cli("accept", str(base_run), "--spec", str(spec))
    assert p.returncode == 1 and "no soak data" in p.stdout, p.stdout + p.stderr


def test_accept_no_corruption(soak_run: Path, base_run: Path, tmp_path: Path) -> None:
    spec = tmp_path / "nc.toml"
    spec.write_text('[spec]\nname = "nc"\naccept_flags = ["oversubscribed"]\n'
                    '[[no_corruption]]\ntest = "bw"\n')
    ok = cli("accept", str(soak_run), "--spec", str(spec))
    assert ok.returncode == 0 and "messages checked under load" in ok.stdout, ok.stdout
    none = cli("accept", str(base_run), "--spec", str(spec))
    assert none.returncode == 1 and "no data was checked" in none.stdout, none.stdout
