"""The host canary (issue 37 item 2): a host that was slower during NEW makes compare
inconclusive (exit 3) naming the host, not the adapter, unless --expect-change host; an
A/A with the canary unchanged is unaffected; a repetition taken while the host was slow is
flagged; runs recorded before the canary compare as before. Synthetic canaries on the
fake executable's runs: nothing here times anything."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from conftest import cli
from pairbench.analysis import canary

# A canary's own repetition-to-repetition wobble (a few %), deterministic.
WOBBLE = (1.00, 1.03, 0.98, 1.02, 0.99, 1.01)


def _with_canary(src: Path, dst: Path, loop_ns: float | None,
                 slow_rep: tuple[int, float] | None = None) -> Path:
    """A copy of a run whose every point recorded a canary of about loop_ns (times the
    factor in slow_rep's repetition)."""
    shutil.copytree(src, dst)
    meta = json.loads((dst / "metadata.json").read_text())
    # the runs were made at different times of a tree others commit to: one commit for all
    meta["fingerprint"]["git"] = {"commit": "0" * 40, "dirty": False}
    for i, p in enumerate(meta["points"] if loop_ns is not None else []):
        v = loop_ns * WOBBLE[i % len(WOBBLE)]
        if slow_rep and p["repetition"] == slow_rep[0]:
            v *= slow_rep[1]
        p.setdefault("env_record", {})["host_canary"] = {"cpu_loop_ns": v, "max_gap_us": 30.0}
    (dst / "metadata.json").write_text(json.dumps(meta))
    return dst


@pytest.fixture(scope="module")
def runs(base_run: Path, same_run: Path, slow_run: Path,
         tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("canary")
    return {"old": _with_canary(base_run, root / "old", None),  # from before the canary
            "base": _with_canary(base_run, root / "base", 1.30),
            "base_3x": _with_canary(base_run, root / "base_3x", 3.90),
            "same": _with_canary(same_run, root / "same", 1.32),
            "slow": _with_canary(slow_run, root / "slow", 1.31),
            "slow_3x": _with_canary(slow_run, root / "slow_3x", 3.93),
            "slow_rep": _with_canary(same_run, root / "slow_rep", 1.30, slow_rep=(3, 3.0))}


def test_three_times_slower_host_is_inconclusive_naming_the_host(runs: dict[str, Path],
                                                                  tmp_path: Path) -> None:
    proc = cli("compare", str(runs["base"]), str(runs["base_3x"]), "--json",
               str(tmp_path / "c.json"))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "what changed (1 difference(s) in the environment records):"
    assert lines[1] == ("  the host was 3.0× slower during NEW (host canary: CPU loop 1.31 → "
                        "3.92 ns per iteration; beyond its noise from 1.25×, its repetitions "
                        "spread 1 %)"), lines[1]
    assert any(ln.startswith("environment: INCONCLUSIVE (exit 3): the host was 3.0× slower")
               and "cannot blame the adapter" in ln for ln in lines)
    assert "the host speed changed, not the adapter): exit 3" in proc.stderr
    env = json.loads((tmp_path / "c.json").read_text())["environment"]
    assert env["fields_changed"] == ["host"] and env["inconclusive"] is True
    assert env["host_canary"]["moved"] is True
    assert env["host_canary"]["ratio"] == pytest.approx(3.0, rel=0.02)
    # expected: the comparison stands on its statistics (same rows: no regression)
    ok = cli("compare", str(runs["base"]), str(runs["base_3x"]), "--expect-change", "host")
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_a_planted_regression_on_a_slow_host_is_not_blamed_on_the_adapter(
        runs: dict[str, Path]) -> None:
    control = cli("compare", str(runs["base"]), str(runs["slow"]))
    assert control.returncode == 1, control.stdout  # the regression, host unchanged
    proc = cli("compare", str(runs["base"]), str(runs["slow_3x"]))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "the host was 3.0× slower during NEW" in proc.stdout
    # told the host changed: the regression counts again
    assert cli("compare", str(runs["base"]), str(runs["slow_3x"]),
               "--expect-change", "host").returncode == 1


def test_a_a_with_the_canary_unchanged_is_unaffected(runs: dict[str, Path], base_run: Path,
                                                    same_run: Path, tmp_path: Path) -> None:
    plain = cli("compare", str(base_run), str(same_run), "--format", "json")
    with_canary = cli("compare", str(runs["base"]), str(runs["same"]), "--format", "json")
    assert with_canary.returncode == plain.returncode
    a, b = json.loads(plain.stdout), json.loads(with_canary.stdout)
    assert b["environment"]["changes"] == [] and b["environment"]["reasons"] == []
    assert b["environment"]["host_canary"]["moved"] is False
    assert [r["verdict"] for r in a["points"]] == [r["verdict"] for r in b["points"]]
    assert a["gate"] == b["gate"] and a["exit_code"] == b["exit_code"]


def test_runs_from_before_the_canary_compare_as_before(runs: dict[str, Path]) -> None:
    plain = cli("compare", str(runs["old"]), str(runs["old"]))
    proc = cli("compare", str(runs["old"]), str(runs["base_3x"]), "--format", "json")
    assert proc.returncode == plain.returncode
    env = json.loads(proc.stdout)["environment"]
    assert env["changes"] == [] and "host canary: new only" in env["recorded_on_one_side"]
    # expecting the host to change cannot be satisfied without both records
    assert cli("compare", str(runs["old"]), str(runs["base_3x"]),
               "--expect-change", "host").returncode == 3


def test_a_repetition_on_a_slow_host_is_flagged(runs: dict[str, Path], tmp_path: Path) -> None:
    proc = cli("compare", str(runs["base"]), str(runs["slow_rep"]))
    assert "  flagged: NEW repetition 3 ran while the host was 3.0× slower (host canary)" in \
        proc.stdout.splitlines(), proc.stdout
    assert "the host was" not in proc.stdout.replace("ran while the host was", "")  # median
    out = tmp_path / "r.html"
    assert cli("report", str(runs["slow_rep"]), "--out", str(out)).returncode == 0
    html = out.read_text()
    assert "Host canary" in html and "SLOW (3.0×)" in html
    out2 = tmp_path / "r2.html"
    assert cli("report", str(runs["base_3x"]), str(runs["base"]), "--out",
               str(out2)).returncode == 0
    assert "the host was 3.0× slower during NEW" in out2.read_text()


def _reps(values: list[float]) -> list[canary.RepCanary]:
    return [canary.RepCanary(i + 1, v, None, 1) for i, v in enumerate(values)]


def test_the_rule() -> None:
    # no spread: the floor (1.25x) decides
    assert canary.threshold(canary.noise_sd(_reps([1.0, 1.0, 1.0]))) == 1.25
    assert canary.threshold(None) == 1.25
    assert canary.noise_sd(_reps([1.0])) is None      # one repetition: spread unknown
    # the canary's own spread widens it: 4 robust SDs of its log values (pairwise differences)
    s = canary.noise_sd(_reps([1.0, 1.3, 0.77]))
    assert s == pytest.approx(math.log(1.3) / (0.6745 * math.sqrt(2)), rel=0.01)
    assert canary.threshold(s) == pytest.approx(math.exp(4 * s))
    # one slow repetition of three stands out of the others (leave one out)
    slow = canary.slow_repetitions(_reps([1.0, 1.02, 3.0]))
    assert [(x.repetition, round(x.factor, 1)) for x in slow] == [(3, 3.0)]
    # two repetitions: the slower one when it is 1.25x the other
    assert [x.repetition for x in canary.slow_repetitions(_reps([2.0, 1.0]))] == [1]
    assert canary.slow_repetitions(_reps([1.2, 1.0])) == []


def _with_share(src: Path, dst: Path, share: float) -> Path:
    shutil.copytree(src, dst)
    meta = json.loads((dst / "metadata.json").read_text())
    for i, p in enumerate(meta["points"]):
        p["env_record"]["host_canary"]["cpu_share"] = share * WOBBLE[i % len(WOBBLE)]
    (dst / "metadata.json").write_text(json.dumps(meta))
    return dst


def test_less_cpu_for_the_benchmark_is_a_slower_host(runs: dict[str, Path],
                                                     tmp_path: Path) -> None:
    """Same CPU speed while running, a third of the CPU (other processes, a hypervisor):
    the cpu_share measure says so."""
    base = _with_share(runs["base"], tmp_path / "base", 0.9)
    crowded = _with_share(runs["same"], tmp_path / "crowded", 0.3)
    proc = cli("compare", str(base), str(crowded))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[1].startswith(
        "  the host gave the benchmark 3.0× less CPU during NEW (host canary: CPU share "
        "0.90 → 0.30 of a 30 ms spin;"), proc.stdout
    aa = cli("compare", str(base), str(_with_share(runs["same"], tmp_path / "aa", 0.88)))
    assert "the host" not in aa.stdout
