"""`pairbench sweep --repetitions auto[:MAX]` (issue 22): repetitions until every point is
decided — against a baseline (compare's gate) or for a detectable change (noise) — with the
fake executable; the decision itself is pure (autoreps.undecided)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import cli, sweep
from pairbench.analysis.decide import undecided
from pairbench.analysis.load import load_run
from pairbench.errors import UsageError
from pairbench.runner.autoreps import AutoReps, parse_repetitions

ENV = {"FAKE_PB_NOISE": "0.02"}


def test_parse_repetitions() -> None:
    assert parse_repetitions("4") == (4, None)
    assert parse_repetitions("auto") == (3, AutoReps(max_reps=10))
    assert parse_repetitions("auto:20") == (3, AutoReps(max_reps=20))
    for bad in ("auto:2", "auto:x", "many", "auto:1000"):
        with pytest.raises(UsageError):
            parse_repetitions(bad)


def _auto(tmp: Path, name: str, *extra: str, seed: str, scale: str = "1.0"
          ) -> tuple[subprocess.CompletedProcess, Path | None]:
    return sweep(tmp / name, *extra, env={**ENV, "FAKE_PB_SEED": seed, "FAKE_PB_SCALE": scale},
                 sizes="8,1K", reps="auto:8")


@pytest.fixture(scope="module")
def auto_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    proc, run = _auto(tmp_path_factory.mktemp("auto"), "base", seed="5")
    assert proc.returncode == 0 and run is not None, proc.stderr
    return run


def test_auto_without_baseline_runs_until_noise_allows(auto_base: Path) -> None:
    meta = json.loads((auto_base / "metadata.json").read_text())
    rec = meta["repetitions_auto"]
    assert rec["max"] == 8 and rec["rounds"][0]["after_repetition"] == 3
    df = load_run(auto_base)
    reps = df.groupby(["test", "pairs"])["repetition"].max()
    assert reps.min() >= 3 and reps.max() <= 8
    # Every round after the first ran exactly the points the previous round left undecided.
    for before, after in zip(rec["rounds"], rec["rounds"][1:], strict=False):
        assert after["points_run"] == len(before["undecided"]) > 0
    last = rec["rounds"][-1]
    assert rec["decided"] == (not last["undecided"])
    assert rec["decided"] or last["after_repetition"] == 8
    assert not undecided(df, AutoReps(8)) or not rec["decided"]


def test_auto_against_a_baseline_ends_decided(auto_base: Path, tmp_path: Path) -> None:
    """A/A against the baseline: decided, compare exits 0. A planted x1.3: exit 1."""
    for scale, code in (("1.0", 0), ("1.3", 1)):
        proc, run = _auto(tmp_path, f"new{scale}", "--baseline", str(auto_base), seed="6",
                          scale=scale)
        assert proc.returncode == 0 and run is not None, proc.stderr
        assert "repetitions auto: every point decided" in proc.stderr, proc.stderr
        res = cli("compare", str(auto_base), str(run))
        assert res.returncode == code, res.stdout + res.stderr


def test_a_baseline_without_a_shared_point_is_refused_before_measuring(
        auto_base: Path, tmp_path: Path) -> None:
    """Checked before anything runs (issue 37: three repetitions were measured, then exit 2
    without naming the baseline and a run left 'running'): exit 2 naming the baseline, no
    run directory."""
    proc, run = sweep(tmp_path / "res", "--baseline", str(auto_base), sizes="4K",
                      reps="auto:4")
    assert proc.returncode == 2, proc.stderr
    assert f"--baseline {auto_base}: shares no point" in proc.stderr, proc.stderr
    assert run is None and not (tmp_path / "res").exists()


def test_baseline_and_detect_need_auto(tmp_path: Path) -> None:
    proc, _ = sweep(tmp_path, "--detect", "10%", reps="3")
    assert proc.returncode == 2 and "--repetitions auto" in proc.stderr
    proc, _ = sweep(tmp_path, reps="auto:2")
    assert proc.returncode == 2 and "MAX must be" in proc.stderr
    proc, _ = sweep(tmp_path, "--baseline", str(tmp_path / "nothing"), reps="auto")
    assert proc.returncode == 2
    # --detect is not silently ignored beside --baseline (the usage says they exclude each
    # other; issue 37)
    proc, _ = sweep(tmp_path, "--baseline", str(tmp_path / "nothing"), "--detect", "10%",
                    reps="auto")
    assert proc.returncode == 2 and "--detect and --baseline exclude each other" in proc.stderr
    bad = tmp_path / "th.toml"
    bad.write_text("[default]\nrelativ = 0.1\n")
    proc, _ = sweep(tmp_path, "--thresholds", str(bad), reps="auto")
    assert proc.returncode == 2 and "relativ" in proc.stderr, proc.stderr
    proc, _ = sweep(tmp_path, "--thresholds", str(bad), reps="3")
    assert proc.returncode == 2 and "--repetitions auto" in proc.stderr


def test_default_takes_the_same_repetitions() -> None:
    """`pairbench default --repetitions auto[:MAX]` is checked like sweep's (the MPI part)."""
    proc = cli("default", "--skip-verbs", "--repetitions", "auto:2")
    assert proc.returncode == 2 and "MAX must be" in proc.stderr, proc.stderr
    from pairbench.commands import default

    ns = default.argparse.Namespace(results_dir=None, skip_verbs=True, skip_mpi=True,
                                    no_progress=True, repetitions="auto:6")
    assert default.run_default(ns) == 0          # nothing planned, the option accepted
