"""pairbench fabric: the outlier rule on synthetic node pairs (a bad node, a bad cable,
nothing, noise), the plan (MPI: one job per test with every round as a --pattern; verbs:
one launch per node pair, waves of disjoint node pairs), a verbs scan through a fake ssh
and the fake executable with one slow node, the outputs and fabric_section, and accept's
fabric criteria. The real scan on emulated nodes: test_fabric_netns.py."""

from __future__ import annotations

import itertools
import json
import math
import random
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import FAKE, HERE, cli
from pairbench.analysis.outliers import detect
from pairbench.errors import UsageError
from pairbench.present.fabricout import fabric_section
from pairbench.runner.scan import FabricConfig, mpi_job, plan_fabric

FAKE_SSH_LOCAL = HERE / "fake_ssh_local.py"


def synthetic(k: int, value: float = 10.0, slow: dict | None = None, noise: float = 0.02,
              seed: int = 1, higher: bool = True) -> pd.DataFrame:
    """Links of K nodes n1..nK; slow = {node or (a, b): factor}."""
    rng = random.Random(seed)
    slow = slow or {}
    rows = []
    for a, b in itertools.combinations([f"n{i + 1}" for i in range(k)], 2):
        f = slow.get(a, 1) * slow.get(b, 1) * slow.get((a, b), 1)
        v = value * (1 + noise * rng.uniform(-1, 1))
        rows.append({"node_a": a, "node_b": b, "status": "ok", "metric": "m",
                     "higher_is_better": higher, "value": v / f if higher else v * f})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("k", [4, 5, 8, 12])
@pytest.mark.parametrize("higher", [True, False])
def test_a_bad_node_is_a_node_not_its_links(k: int, higher: bool) -> None:
    v = detect(synthetic(k, slow={"n3": 5.0}, higher=higher))
    assert v.suspect_nodes == ["n3"]
    assert v.suspect_links == []
    assert {frozenset(x) for x in v.node_links["n3"]} == {
        frozenset(("n3", f"n{i + 1}")) for i in range(k) if i != 2}


@pytest.mark.parametrize("k", [4, 6, 9])
def test_a_bad_cable_is_a_link(k: int) -> None:
    v = detect(synthetic(k, slow={("n2", "n4"): 2.0}))
    assert v.suspect_nodes == []
    assert v.suspect_links == [("n2", "n4")]


@pytest.mark.parametrize("k", [3, 4, 8, 16])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_healthy_noisy_fabric_flags_nothing(k: int, seed: int) -> None:
    v = detect(synthetic(k, noise=0.05, seed=seed))
    assert (v.suspect_nodes, v.suspect_links) == ([], [])
    assert 0.7 < v.floor <= 0.9  # the tolerance, or lower by the noise of 5 %


def test_noise_raises_the_floor_so_noise_is_not_an_outlier() -> None:
    # +-60 % noise: a link at 70 % of the reference is within what healthy links do.
    lk = synthetic(8, noise=0.6, seed=4)
    v = detect(lk)
    assert v.floor < 0.5
    assert v.outliers == 0
    # ... but a node 20 times slower is still found.
    v = detect(synthetic(8, noise=0.6, seed=4, slow={"n5": 20.0}))
    assert v.suspect_nodes == ["n5"]


def test_a_failed_node_pair_is_reported() -> None:
    lk = synthetic(4)
    lk.loc[0, ["status", "value"]] = ["error", math.nan]
    v = detect(lk)
    assert v.failed == [("n1", "n2")]
    assert len(v.links) == 5 and v.expected_links == 6


def test_mpi_plan_is_one_job_per_test_with_every_round() -> None:
    cfg = FabricConfig(layer="mpi", launcher="mpirun", hosts=("a", "b", "c", "d", "e"),
                       tests=("latency", "bw"), sizes=(8, 65536), binary="/x/pairbench-mpi",
                       run_dir="/r", ranks_per_node=2)
    n_rounds, jobs = plan_fabric(cfg)
    assert n_rounds == 5 and len(jobs) == 2
    assert len(plan_fabric(FabricConfig(**{**cfg.__dict__, "repetitions": 3}))[1]) == 6
    argv = list(jobs[0].point.sides[0].argv)
    assert argv[:7] == ["mpirun", "-np", "10", "--map-by", "node", "--hostfile",
                        "/r/raw/r1-latency-scan.hosts"]
    assert jobs[0].hostfile == ("raw/r1-latency-scan.hosts",
                                "".join(f"{h} slots=2\n" for h in "abcde"))
    # the executable computes the rounds: the pattern is "scan", nothing of size K^2
    assert argv[argv.index("--pattern") + 1] == "scan"
    assert "--pairs" not in argv
    srun = plan_fabric(FabricConfig(**{**cfg.__dict__, "launcher": "srun"}))[1]
    assert list(srun[0].point.sides[0].argv[:8]) == [
        "srun", "-N", "5", "-n", "10", "--ntasks-per-node=2", "--nodelist",
        "/r/raw/r1-latency-scan.hosts"]
    # a rank that dies ends the MPI job at once (not the others' 60 s start-up deadline)
    assert srun[0].point.sides[0].argv[8] == "--kill-on-bad-exit=1"


@pytest.mark.parametrize("launcher", ["mpirun", "srun"])
def test_no_launch_argument_reaches_4k_at_4096_nodes(launcher: str) -> None:
    """Linux caps one argument at 128 KiB; a written-out schedule is ~4 K^2 bytes. The
    longest argument of any launch of a 4,096-node scan stays below 4 KiB, and so does
    that of a scan continued without two lost nodes."""
    hosts = tuple(f"node{i:04d}.cluster.example.org" for i in range(4096))
    cfg = FabricConfig(layer="mpi", launcher=launcher, hosts=hosts, tests=("latency", "bw"),
                       sizes=(8, 65536), binary="/opt/pairbench/bin/pairbench-mpi",
                       run_dir="/results/20261126-120000-host-abcdef", repetitions=2)
    n_rounds, jobs = plan_fabric(cfg)
    assert n_rounds == 4095 and len(jobs) == 4
    jobs.append(mpi_job(cfg, 1, "bw", 700, 4095, (hosts[17], hosts[3001]), part=2))
    longest = max(len(a) for j in jobs for s in j.point.sides for a in s.argv)
    assert longest < 4096, longest
    assert sum(len(a) + 1 for a in jobs[-1].point.sides[0].argv) < 4096
    argv = jobs[-1].point.sides[0].argv
    assert argv[argv.index("--pattern") + 1] == "scan:700-4095,skip=17,3001"


def test_verbs_plan_waves_are_disjoint_node_pairs() -> None:
    hosts = tuple(f"h{i}" for i in range(6))
    cfg = FabricConfig(layer="verbs", launcher="ssh", hosts=hosts, tests=("write_bw",),
                       sizes=(65536,), binary="/x/pairbench-verbs", run_dir="/r")
    n_rounds, jobs = plan_fabric(cfg)
    assert n_rounds == 5 and len(jobs) == 15
    for w in {j.wave for j in jobs}:
        nodes = [n for j in jobs if j.wave == w for n in j.node_pair]
        assert len(nodes) == len(set(nodes)) == 6
    j = jobs[0]
    server, client = (list(s.argv) for s in j.point.sides)
    a, b = j.node_pair
    assert a in server and b in client and "--server" in server[-1]
    assert f"--connect {a}" in client[-1]


@pytest.mark.parametrize("bad", [
    {"layer": "mpi", "launcher": "ssh"}, {"hosts": ("a",)}, {"hosts": ("a", "a", "b")},
    {"ranks_per_node": 0}, {"launcher": "pbs"},
])
def test_bad_plans_are_usage_errors(bad: dict) -> None:
    base = {"layer": "mpi", "launcher": "mpirun", "hosts": ("a", "b"), "tests": ("bw",),
            "sizes": (8,), "binary": "b", "run_dir": "/r"}
    with pytest.raises(UsageError):
        plan_fabric(FabricConfig(**{**base, **bad}))


def fake_scan(tmp_path: Path, hosts: str, slow: str = "", extra: tuple = ("--repetitions",
                                                                            "2")) -> Path:
    env = {"FAKE_PB_LAYER": "verbs", "FAKE_PB_SLOW_HOST": slow, "FAKE_PB_SLOW_FACTOR": "3",
           "FAKE_PB_NOISE": "0.02"}
    p = cli("fabric", "--layer", "verbs", "--launcher", "ssh", "--hosts", hosts,
            "--launcher-cmd", str(FAKE_SSH_LOCAL), "--binary", str(FAKE), "--test",
            "write_lat,write_bw", "-s", "8,64K", "-n", "200", "--results-dir", str(tmp_path),
            *extra, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    return Path(p.stdout.strip().splitlines()[-1])


def test_verbs_scan_through_ssh_finds_the_slow_node(tmp_path: Path) -> None:
    run = fake_scan(tmp_path, "n1,n2,n3,n4,n5", slow="n4")
    res = json.loads((run / "fabric.json").read_text())["verdicts"]
    assert {(v["test"], v["msg_size_bytes"]) for v in res} == {
        (t, s) for t in ("write_lat", "write_bw") for s in (8, 65536)}
    for v in res:
        assert v["links_measured"] == v["links_expected"] == 10
        assert v["suspect_nodes"] == ["n4"], v
        assert v["suspect_links"] == []
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["schedule"]["rounds"] == 5  # K odd: K rounds with a bye
    lk = pd.read_csv(run / "fabric-links.csv")
    assert len(lk) == 2 * 4 * 10  # 2 repetitions x (2 tests x 2 sizes) x 10 node pairs
    m = pd.read_csv(run / "fabric-verbs-write_bw-65536-matrix.csv")  # long form
    assert list(m.columns) == ["node_a", "node_b", "value", "perf", "suspect"]
    assert len(m) == 10 and set(m["node_a"]) | set(m["node_b"]) == {"n1", "n2", "n3", "n4",
                                                                    "n5"}
    sus = m[m["suspect"]]
    assert len(sus) == 4 and all("n4" in (a, b) for a, b in zip(sus.node_a, sus.node_b,
                                                                strict=True))
    assert (run / "plots" / "fabric-verbs-write_bw-65536.svg").is_file()
    html = (run / "fabric.html").read_text()
    assert "suspect nodes: n4" in html and "data:image/png;base64" in html
    title, frag = fabric_section(run)
    assert "Fabric scan" in title and "suspect nodes: n4" in frag
    assert fabric_section(tmp_path) is None


def test_verbs_scan_slow_cable_and_accept(tmp_path: Path) -> None:
    run = fake_scan(tmp_path, "n1,n2,n3,n4", slow="n1~n3")
    for v in json.loads((run / "fabric.json").read_text())["verdicts"]:
        assert v["suspect_links"] == [["n1", "n3"]] and v["suspect_nodes"] == []
    spec = tmp_path / "spec.toml"
    spec.write_text('[spec]\nlayer = "verbs"\n'
                    '[[fabric_min_link_share]]\ntest = "write_bw"\nmin_share = 0.9\n'
                    '[[fabric_max_outliers]]\ntest = "write_lat"\nmax_outliers = 0\n')
    p = cli("accept", str(run), "--spec", str(spec))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "worst node pair n1~n3" in p.stdout \
        and "suspect, not re-measured (counted): link n1~n3" in p.stdout
    healthy = fake_scan(tmp_path, "n1,n2,n3,n4")
    p = cli("accept", str(healthy), "--spec", str(spec))
    assert p.returncode == 0, p.stdout + p.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('[[fabric_max_outliers]]\ntest = "write_lat"\nmax_outliers = -1\n')
    p = cli("accept", str(healthy), "--spec", str(bad))
    assert p.returncode == 2 and "max_outliers" in p.stderr


def test_fabric_bad_usage(tmp_path: Path) -> None:
    p = cli("fabric", "--hosts", "a", "--binary", str(FAKE), "--results-dir", str(tmp_path))
    assert p.returncode == 2 and "at least 2" in p.stderr
    p = cli("fabric", "--hosts", "a,b", "--binary", str(tmp_path / "nope"))
    assert p.returncode == 2 and "not found" in p.stderr
    assert shutil.which("sh")
