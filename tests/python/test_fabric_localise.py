"""pairbench fabric --cables FILE through the simulated fabric (tests/sim/fabric_sim.py with
PB_SIM_CABLES/PB_SIM_FAULTS: a 2-level fat tree, D-mod-K routes, per-component faults):
the planted components are named in fabric.json, the summary and fabric.html, nothing else;
--render with ECMP routes lists what they cannot tell apart; bad input is exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HERE, SCRIPTS, _cli_in_process, cli

sys.path.insert(0, str(HERE.parent / "sim"))
from fattree import write_fat_tree

SIM = HERE.parent / "sim" / "fabric_sim.py"
TREE: list[Path] = []  # the module's cable file (the fixture's)
RUN: list[Path] = []  # the module's scan (the first test's)
FAULTS = {"leaf2:11 <-> spine3:2": "leaf2:11~spine3:2",   # a leaf-spine cable
          "leaf6:13 <-> spine5:6": "spine5:6",            # a spine port: its cable
          "n0037 <-> leaf5:6": "n0037"}                   # a node's cable


def scan(tmp: Path, hosts: list[str], cables: Path | None, *extra: str,
         code: int = 0) -> tuple[Path, str]:
    """A bw 64K scan of hosts through the simulator run by this Python (its routes need
    numpy), the faults planted, no confirmation rounds."""
    sim = tmp / "sim.sh"
    sim.write_text(f"#!/bin/sh\nexec {sys.executable} {SIM} \"$@\"\n")
    sim.chmod(0o755)
    env = {"PB_SIM_CABLES": str(TREE[0]), "PB_SIM_FAULTS": ",".join(
        f"{w}=2" for w in FAULTS.values()), "PB_SIM_NOISE": "0.05"}
    p = cli("fabric", "--plots", "none",
            "--launcher", "mpirun", "--launcher-cmd", str(sim), "--binary",
            sys.executable, "--hosts", ",".join(hosts), "--test", "bw", "-s", "64K",
            "--confirm", "0", "--results-dir", str(tmp),
            *(["--cables", str(cables)] if cables else []), *extra, env=env, timeout=600)
    assert p.returncode == code, p.stderr
    return Path(p.stdout.strip().splitlines()[-1]), p.stderr


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    tmp = tmp_path_factory.mktemp("tree")
    hosts = write_fat_tree(tmp / "tree.csv", leaves=8, per_leaf=8, spines=8)
    TREE[:] = [tmp / "tree.csv"]
    return tmp, hosts


def test_three_planted_components_are_named_and_nothing_else(
        tree: tuple[Path, list[str]]) -> None:
    tmp, hosts = tree
    run, err = scan(tmp, hosts, tmp / "tree.csv")
    RUN[:] = [run]
    doc = json.loads((run / "fabric.json").read_text())
    assert doc["cables"] == {"file": str(tmp / "tree.csv"), "routing": "dmodk"}
    (v,) = doc["verdicts"]
    loc = v["localisation"]
    assert sorted(c["component"] for c in loc["components"]) == sorted(FAULTS)
    assert loc["unexplained"] == 0 and loc["pairs"] == 64 * 63 // 2
    for c in loc["components"]:
        assert c["slow"] == c["through"] > 0 and c["alternatives"] == []
        assert c["slow_elsewhere"] == loc["slow"] - c["slow"]
        assert f"{c['component']}: {c['slow']:,} of {c['through']:,} node pairs" in err
    page = (run / "fabric.html").read_text()
    assert "<h2>Components</h2>" in page and "leaf2:11 &lt;-&gt; spine3:2" in page
    # the drawing: the two named inter-switch cables red, the named node under its leaf
    assert "<h2>The fabric</h2>" in page and page.count("stroke='#c00'") == 2
    assert "fill='#c00'>n0037</text>" in page
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["analysis"]["cables"] == str(tmp / "tree.csv")  # for --render, --resume


def test_render_with_ecmp_routes_lists_what_they_cannot_tell_apart(
        tree: tuple[Path, list[str]]) -> None:
    """The same scan rendered with --routing ecmp (the cable file from metadata.json): a
    healthy pair clears only its node cables and leaves, so the uplinks of a leaf (and the
    spines) are alternatives of each other; the node cable is still certain."""
    run = RUN[0]
    p = early("fabric", "--render", str(run), "--routing", "ecmp")
    assert p.returncode == 0, p.stderr
    doc = json.loads((run / "fabric.json").read_text())
    assert doc["cables"]["routing"] == "ecmp"
    loc = doc["verdicts"][0]["localisation"]
    named = {c["component"]: c for c in loc["components"]}
    assert "n0037 <-> leaf5:6" in named and named["n0037 <-> leaf5:6"]["alternatives"] == []
    assert loc["unexplained"] == 0
    others = [c for n, c in named.items() if n != "n0037 <-> leaf5:6"]
    assert others and all(c["alternatives"] for c in others)
    assert "the routes cannot tell them apart" in p.stderr


def test_a_cover_plan_and_its_confirmation_name_the_same_three(
        tree: tuple[Path, list[str]], tmp_path: Path) -> None:
    """--plan cover:1 --confirm 1: one round of 63 runs (its node pairs cross every cable
    once: each named cable has alternatives its routes cannot tell apart, see
    test_localise); the confirmation rounds then measure the suspects and the node pairs
    that tell the alternatives apart, and with them the same three components are named,
    with no alternative left. No round outside the plan has a row."""
    tmp, hosts = tree
    run, err = scan(tmp_path, hosts, tmp / "tree.csv", "--plan", "cover:1", "--confirm", "1")
    meta = json.loads((run / "metadata.json").read_text())
    plan = meta["analysis"]["plan"]
    assert plan["kind"] == "cover" and plan["full_rounds"] == 63 and plan["uncovered"] == []
    rounds = meta["config"]["rounds"]
    assert len(rounds) == plan["rounds"] == 1 and plan["pairs"] == 32
    assert "cover plan: 1 of the full scan's 63 rounds (32 of 2,016 node pairs)" in err
    ran = {r for p in meta["scan"]["jobs"]["r1-bw"]["parts"] for a, b in p["complete"]
           for r in range(a, b + 1)}
    assert ran == set(rounds) and meta["status"] == "complete"
    loc = json.loads((run / "fabric.json").read_text())["verdicts"][0]["localisation"]
    assert loc["pairs"] > 32 and loc["unexplained"] == 0  # the scan's and the confirmation's
    assert sorted(c["component"] for c in loc["components"]) == sorted(FAULTS)
    assert all(c["alternatives"] == [] for c in loc["components"])
    # the scan's pairs alone left alternatives; the pairs that tell them apart were measured
    from pairbench.analysis.localise import localise_verdict, tell_apart_pairs
    from pairbench.analysis.outliers import iter_analysed
    from pairbench.analysis.scanlinks import read_scan
    from pairbench.present import fabricloc

    ((_, _, v),) = list(iter_analysed(read_scan(run), 0.10, 3.5))
    tell = tell_apart_pairs(localise_verdict(fabricloc.load(str(tmp / "tree.csv")), v))
    assert tell
    confirmed = {frozenset(p) for p in meta["confirm"]["tests"]["bw"]["pairs"]}
    assert {frozenset(p) for p in tell} <= confirmed


def test_a_verbs_cover_scan_runs_a_launch_per_planned_round(
        tree: tuple[Path, list[str]], tmp_path: Path) -> None:
    """A verbs scan through mpirun (one pairbench-verbs launch per round: the simulator's
    --scan R) with --plan cover:3 launches only the plan's rounds and names the three."""
    tmp, hosts = tree
    sim = tmp_path / "sim.sh"
    sim.write_text(f"#!/bin/sh\nexec {sys.executable} {SIM} \"$@\"\n")
    sim.chmod(0o755)
    log = tmp_path / "launches.jsonl"
    env = {"PB_SIM_CABLES": str(TREE[0]), "PB_SIM_FAULTS": ",".join(
        f"{w}=2" for w in FAULTS.values()), "PB_SIM_LAUNCHES": str(log)}
    p = cli("fabric", "--plots", "none",
            "--layer", "verbs", "--launcher", "mpirun", "--launcher-cmd", str(sim),
            "--binary", sys.executable, "--hosts", ",".join(hosts), "--test", "write_bw",
            "-s", "64K", "--confirm", "0", "--results-dir", str(tmp_path), "--cables",
            str(tmp / "tree.csv"), "--plan", "cover:3", env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    run = Path(p.stdout.strip().splitlines()[-1])
    rounds = json.loads((run / "metadata.json").read_text())["config"]["rounds"]
    launched = [json.loads(x)["argv"] for x in log.read_text().splitlines()]
    assert sorted(int(a[a.index("--scan") + 1]) for a in launched) == rounds
    loc = json.loads((run / "fabric.json").read_text())["verdicts"][0]["localisation"]
    assert sorted(c["component"] for c in loc["components"]) == sorted(FAULTS)
    assert loc["pairs"] == 32 * len(rounds) and loc["unexplained"] == 0


def test_accept_counts_the_components(tree: tuple[Path, list[str]], tmp_path: Path) -> None:
    """[[fabric_max_components]] with the scan's own cable file (metadata.json): the three
    components against a limit of 3 pass and of 0 fail, each named in the detail."""
    spec = tmp_path / "spec.toml"
    for limit, code in ((3, 0), (0, 1)):
        spec.write_text(f'[[fabric_max_components]]\ntest = "bw"\nmax_components = {limit}\n')
        p = cli("accept", str(RUN[0]), "--spec", str(spec))
        assert p.returncode == code, p.stdout + p.stderr
        (line,) = [ln for ln in p.stdout.splitlines() if "fabric_max_components" in ln]
        for name in FAULTS:
            assert f"{name} (" in line, line
        assert ("FAIL" in line.upper()) == (code == 1), line


def early(*args: str) -> subprocess.CompletedProcess:
    """A fabric command that ends before anything runs, in this process (conftest's
    in-process runner: a second Python start costs more than the check)."""
    return _cli_in_process(list(args), {**os.environ, "PYTHONPATH": str(SCRIPTS)}, None)


def test_bad_cable_file_or_routing_without_one_is_exit_2(tmp_path: Path) -> None:
    f = tmp_path / "c.csv"
    f.write_text("a,b\nn1,leaf1:1\nn2,n3\n")
    p = early("fabric", "--hosts", "n1,n2", "--cables", str(f), "--dry-run")
    assert p.returncode == 2 and f"{f}: line 3: n2 <-> n3" in p.stderr, p.stderr
    p = early("fabric", "--hosts", "n1,n2", "--routing", "ecmp", "--dry-run")
    assert p.returncode == 2 and "--routing needs --cables" in p.stderr, p.stderr
    p = early("fabric", "--hosts", "n1,n2", "--plan", "cover:2", "--dry-run")
    assert p.returncode == 2 and "--plan cover:2 needs --cables" in p.stderr, p.stderr
    # forwarding tables that miss a node of the cable file: exit 2 before anything runs
    lft = tmp_path / "lft.txt"
    lft.write_text((HERE / "data" / "fabric" / "ibroute-2level.txt").read_text().replace(
        "0x0008 034 : (Channel Adapter portguid 0x0c42a10300a1b2f0: 'node0004 mlx5_0')\n",
        "", 1))
    p = early("fabric", "--hosts", "node0001,node0004", "--cables",
            str(HERE / "data" / "fabric" / "ibnetdiscover-2level.txt"), "--lft", str(lft),
            "--dry-run")
    assert p.returncode == 2 and "leaf1 has no route to node0004" in p.stderr, p.stderr
