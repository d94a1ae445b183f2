"""One real sweep through mpirun on the local node with build/bin/pairbench-mpi."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO, cli
from pairbench.analysis.load import load_run

# PAIRBENCH_BIN_DIR points at another build (default build/bin).
MPI_BIN = Path(os.environ.get("PAIRBENCH_BIN_DIR", REPO / "build" / "bin")) / "pairbench-mpi"


def test_real_sweep_through_mpirun(tmp_path: Path) -> None:
    """Without --launcher, --layer mpi goes through mpirun (a singleton pairbench-mpi would
    make every point an error row)."""
    if not MPI_BIN.is_file():
        pytest.skip(f"{MPI_BIN} is not built yet")
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not installed (apt-get install openmpi-bin)")
    proc = cli("sweep", "--layer", "mpi", "--test", "latency", "--sizes", "8,1K",
               "--pairs", "1,2", "--iterations", "200", "--warmup", "20",
               "--allow-oversubscribe", "--timeout", "120", "--binary", str(MPI_BIN),
               "--results-dir", str(tmp_path), "--no-progress", timeout=600)
    run_dir = Path(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else None
    assert run_dir is not None and run_dir.is_dir(), proc.stderr
    df = load_run(run_dir)
    errors = df[df["status"] != "ok"]
    assert proc.returncode == 0, f"error rows: {errors['error'].tolist()}\n{proc.stderr}"
    agg = df[df["pair_id"] == "all"]
    assert sorted(set(zip(agg["msg_size_bytes"].astype(int), agg["pairs"].astype(int),
                          strict=True))) == [(8, 1), (8, 2), (1024, 1), (1024, 2)]
    assert (agg["layer"] == "mpi").all() and agg["lat_us_p50"].notna().all()
    meta = pd.read_json(run_dir / "metadata.json", typ="series")
    argv0 = {Path(p["sides"][0]["argv"][0]).name for p in meta["points"]}
    assert argv0 == {"mpirun"}, argv0
