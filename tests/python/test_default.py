"""`pairbench default` through its typed API, with the fake executable and the fake rig."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from conftest import FAKE, FAKE_RIG, cli


def test_default_runs_the_verbs_sweep_plots_and_reports(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "build" / "bin").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "build" / "bin" / "pairbench-verbs").symlink_to(FAKE)
    (root / "scripts" / "softroce-run").symlink_to(FAKE_RIG)
    boots = tmp_path / "boots"
    results = tmp_path / "results"
    proc = cli("default", "--skip-mpi", "--results-dir", str(results), "--no-progress",
               env={"PAIRBENCH_ROOT": str(root), "FAKE_RIG_COUNT": str(boots)})
    assert proc.returncode == 0, proc.stderr
    # The sweep it ran, logged as the command line that asks for the same.
    assert ("== pairbench default: verbs (Soft-RoCE rig): pairbench sweep --layer verbs "
            "--test write_lat,write_bw,read_lat --pairs 1,2 --sizes 8,128,256,4K,64K "
            "--warmup 20 --lat-samples 100 --launcher softroce --timeout 120 "
            f"--allow-oversubscribe --results-dir {results} --no-progress") in proc.stderr
    assert len(boots.read_text().splitlines()) == 1
    (run,) = results.iterdir()
    df = pd.read_csv(run / "data.csv", dtype=str, keep_default_na=False)
    assert set(df["status"]) == {"ok"}
    assert set(df["test"]) == {"write_lat", "write_bw", "read_lat"}
    assert set(df["pairs"]) == {"1", "2"} and df["msg_size_bytes"].nunique() == 5
    meta = json.loads((run / "metadata.json").read_text())
    cfg = meta["config"]
    assert cfg["iterations"] is None and cfg["lat_samples"] == 100 and cfg["allow_oversubscribe"]
    assert list((run / "plots").glob("*.png")) and (run / "report.html").is_file()
    assert f"data:   {run / 'data.csv'}" in proc.stdout
    assert f"report: {run / 'report.html'}" in proc.stdout
    # report.png next to report.html when Chromium is installed, else a note saying why.
    from pairbench.present.screenshot import find_browser

    if find_browser():
        assert (run / "report.png").read_bytes()[:4] == b"\x89PNG", proc.stderr
        assert f"screenshot of the report: {run / 'report.png'}" in proc.stdout
    else:
        assert "no report.png: Chromium is not installed" in proc.stderr


def test_default_with_nothing_to_run_says_so(tmp_path: Path) -> None:
    proc = cli("default", "--skip-mpi", "--skip-verbs", "--results-dir", str(tmp_path))
    assert proc.returncode == 0
    assert "nothing ran" in proc.stdout
