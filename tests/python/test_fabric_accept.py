"""accept's fabric criteria on a simulated scan (tests/sim/fabric_sim.py): a planted bad node
that the confirmation rounds confirm counts against max_outliers, a link slow only during
the scan (a transient the rounds do not see again) is listed as unconfirmed and not
counted; the scan's rows are read by the streaming path, never as the generic frame."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import HERE, cli

SIM = HERE.parent / "sim" / "fabric_sim.py"
ENV = {"PB_SIM_SLOW": "n005=3", "PB_SIM_TRANSIENT": "n011~n014=3", "PB_SIM_NOISE": "0.03"}


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("scan")
    p = cli("fabric", "--plots", "none",
            "--launcher", "mpirun", "--launcher-cmd", str(SIM), "--binary",
            sys.executable, "--hosts", ",".join(f"n{i:03d}" for i in range(16)),
            "--test", "latency,bw", "-s", "8", "--results-dir", str(tmp), env=ENV,
            timeout=600)
    assert p.returncode == 0, p.stderr
    return Path(p.stdout.strip().splitlines()[-1])


def spec(tmp_path: Path, max_outliers: int) -> Path:
    s = tmp_path / f"spec{max_outliers}.toml"
    s.write_text('[spec]\nlayer = "mpi"\n'
                 f'[[fabric_max_outliers]]\ntest = "latency"\nmax_outliers = {max_outliers}\n'
                 '[[fabric_max_outliers]]\ntest = "bw"\nmax_outliers = 1\n')
    return s


def fabric_lines(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if "fabric_max_outliers" in ln]


def test_confirmed_suspects_count_unconfirmed_ones_are_listed(scan: Path,
                                                              tmp_path: Path) -> None:
    p = cli("accept", str(scan), "--spec", str(spec(tmp_path, 1)))
    assert p.returncode == 0, p.stdout + p.stderr
    lines = fabric_lines(p.stdout)
    assert len(lines) == 2, p.stdout
    for ln in lines:
        # the node is confirmed and named; the transient link is named as unconfirmed
        assert "confirmed: node n005" in ln, ln
        assert "unconfirmed, not counted (re-measured within the floor): link n011~n014" \
            in ln, ln
        assert "link n011~n014" not in ln.split("unconfirmed")[0], ln
    p = cli("accept", str(scan), "--spec", str(spec(tmp_path, 0)))
    assert p.returncode == 1, p.stdout + p.stderr
    bad = [ln for ln in fabric_lines(p.stdout) if "latency" in ln]
    assert len(bad) == 1 and "FAIL" in bad[0].upper() and "node n005" in bad[0], p.stdout


def test_without_confirmation_rounds_every_suspect_counts(scan: Path, tmp_path: Path) -> None:
    """A suspect nobody re-measured (the rounds' rows gone: --confirm 0) counts: only a
    re-measurement within the floor can excuse it."""
    bare = tmp_path / "bare"
    bare.mkdir()
    for f in ("data.csv", "metadata.json"):
        (bare / f).write_bytes((scan / f).read_bytes())
    p = cli("accept", str(bare), "--spec", str(spec(tmp_path, 1)))
    assert p.returncode == 1, p.stdout + p.stderr
    lat = [ln for ln in fabric_lines(p.stdout) if "latency" in ln]
    assert "suspect, not re-measured (counted): node n005, link n011~n014" in lat[0], lat


def test_fabric_criteria_stream_the_scan_not_the_generic_frame(
        scan: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pairbench.commands import accept as cmd

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("the generic frame was loaded")

    monkeypatch.setattr(cmd, "load_run", refuse)
    ns = cmd.argparse.Namespace(run=str(scan), spec=str(spec(tmp_path, 1)), junit=None)
    assert cmd.run_accept(ns) == 0
