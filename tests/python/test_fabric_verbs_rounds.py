"""A verbs fabric scan through mpirun or srun: ONE launch per round (pairbench.runner.scanverbs),
each pairbench-verbs rank finding its node pair, side and peer from its rank, the round and
the host file (--scan R --scan-hosts FILE). Driven through the simulator
(tests/sim/fabric_sim.py as mpirun/srun + pairbench-verbs ranks): one launch per round,
every node pair exactly once with side A measuring, a dead node pair failed without
holding up the round, a lost node left out, --resume; the argument bound at K = 4,096; and
the real pairbench-verbs' choice of side and peer for every rank of every round."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from conftest import HERE, REPO, cli
from pairbench.runner import scanverbs
from pairbench.runner.scan import FabricConfig, plan_fabric
from pairbench.runner.schedule import total_rounds, tournament

SIM = HERE.parent / "sim" / "fabric_sim.py"
VERBS_BIN = REPO / "build" / "bin" / "pairbench-verbs"
TESTS = ("write_lat", "write_bw")


def names(k: int) -> list[str]:
    return [f"n{i:03d}" for i in range(k)]


def scan(tmp_path: Path, k: int, env: dict, *extra: str, launcher: str = "mpirun",
         code: int = 0) -> tuple[Path, list[dict], subprocess.CompletedProcess]:
    """A scan through the simulator: (run directory, the launches, the process)."""
    log = tmp_path / f"launches-{len(list(tmp_path.glob('launches-*')))}.jsonl"
    p = cli("fabric", "--plots", "none",
            "--layer", "verbs", "--launcher", launcher, "--launcher-cmd", str(SIM),
            "--binary", sys.executable, "--hosts", ",".join(names(k)),
            "--test", ",".join(TESTS), "-s", "8,64K", "--results-dir", str(tmp_path), *extra,
            env={"PB_SIM_LAUNCHES": str(log), **env}, timeout=300)
    assert p.returncode == code, p.stderr
    launches = [json.loads(x) for x in log.read_text().splitlines()] if log.is_file() else []
    return Path(p.stdout.strip().splitlines()[-1]), launches, p


def rows(run: Path) -> list[dict]:
    with open(run / "data.csv") as f:
        return list(csv.DictReader(f))


def links(rs: list[dict], test: str = "write_bw", size: str = "8") -> Counter:
    """(host, peer, round) of each node pair's row (scope=node: the client's aggregate or
    the driver's error row) of one test and size."""
    return Counter((r["host"], r["peer"], r["pattern"]) for r in rs
                   if r["test"] == test and r["msg_size_bytes"] == size and
                   r["scope"] == "node" and r["peer"])


def expected(k: int) -> set[tuple[str, str, str]]:
    """(side A, side B, scan:R) of every node pair: the tournament's."""
    return {(a, b, f"scan:{r + 1}") for r, rnd in enumerate(tournament(names(k)))
            for a, b in rnd}


def pair_links(rs: list[dict], test: str = "write_bw", size: str = "8") -> Counter:
    return Counter((r["host"], r["peer"], r["pattern"]) for r in rs
                   if r["test"] == test and r["msg_size_bytes"] == size and
                   r["scope"] == "pair")


@pytest.mark.parametrize("launcher,k", [("mpirun", 9), ("srun", 8)])
def test_one_launch_per_round_every_node_pair_once(tmp_path: Path, launcher: str,
                                                   k: int) -> None:
    # (the confirmation rounds' launches: test_confirmation_rounds_confirm_real_suspects_...)
    run, launches, _ = scan(tmp_path, k, {"PB_SIM_SLOW": "n003=3"}, "--confirm", "0",
                            launcher=launcher)
    n = total_rounds(k)
    assert len(launches) == n * len(TESTS)  # one launch per round and test, not per pair
    rounds = [re.sub(r",.*", "", a["argv"][a["argv"].index("--scan") + 1]) for a in launches]
    assert rounds == [str(r) for _ in TESTS for r in range(1, n + 1)]
    for a in launches:
        argv = a["argv"]
        hostfile = argv[argv.index("--scan-hosts") + 1]
        assert Path(hostfile).read_text().split()[::2 if launcher == "mpirun" else 1] == \
            names(k)  # line i = rank i's node
        if launcher == "srun":
            assert "--distribution=arbitrary" in argv and a["env"]["SLURM_HOSTFILE"] == \
                hostfile
        else:
            assert argv[argv.index("--mca") + 1] == "orte_abort_on_non_zero_status"
        assert "%r" in argv[argv.index("--output") + 1]
    rs = rows(run)
    assert {r["status"] for r in rs} == {"ok"}
    assert {r["pattern"] for r in rs} == {f"scan:{r}" for r in range(1, n + 1)}
    # every node pair exactly once per test and size, side A (the client) measuring, its
    # peer side B, in the tournament's round
    for test in TESTS:
        for size in ("8", "65536"):
            got = links(rs, test, size)
            assert set(got) == expected(k) and set(got.values()) == {1}
            assert set(pair_links(rs, test, size)) == expected(k)
    fab = json.loads((run / "fabric.json").read_text())["verdicts"]
    assert len(fab) == 4
    for v in fab:
        assert v["suspect_nodes"] == ["n003"], v
        assert v["links_measured"] == v["links_expected"] == k * (k - 1) // 2
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "complete" and meta["scan"]["dropped"] == []
    assert not list((run / "raw").rglob("round*.*.csv"))  # the ranks' files merged


def test_a_dead_node_pair_is_failed_without_holding_up_the_others(tmp_path: Path) -> None:
    env = {"PB_SIM_DEAD": "n001~n004", "PB_SIM_DEAD_S": "0.3"}
    run, launches, p = scan(tmp_path, 8, env, "--confirm", "0", code=1)
    assert len(launches) == 7 * len(TESTS)
    rs = rows(run)
    bad = [r for r in rs if r["status"] != "ok"]
    # only that node pair, one error row per test and size, naming both nodes
    assert {frozenset((r["host"], r["peer"])) for r in bad} == {frozenset(("n001", "n004"))}
    assert len(bad) == 2 * len(TESTS)
    assert all("connect: no answer from n004" in r["error"] for r in bad), bad[0]["error"]
    for test in TESTS:
        got = links(rs, test)
        assert set(got) == expected(8) and set(got.values()) == {1}
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "complete_with_errors" and meta["scan"]["dropped"] == []
    log = [json.loads(x) for x in (run / "raw" / "rounds.jsonl").read_text().splitlines()]
    failing = [x for x in log if x["pairs_failed"]]
    assert len(failing) == len(TESTS) and all(x["pairs_ok"] == 3 for x in failing)
    assert "1 node pair(s) failed, e.g. n001-n004" in p.stderr


def test_a_lost_node_is_left_out_and_its_round_runs_again(tmp_path: Path) -> None:
    run, launches, p = scan(tmp_path, 8, {"PB_SIM_LOSE": "n005@3"}, "--confirm", "0",
                            code=1)
    assert len(launches) == 7 * len(TESTS) + 1  # round 3 of the first test twice
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["scan"]["dropped"] == ["n005"]
    later = [a["argv"] for a in launches[3:]]
    assert all(a[a.index("--scan") + 1].endswith(",skip=5") for a in later)
    rs = rows(run)
    for test in TESTS:
        got = links(rs, test)
        assert set(got) == expected(8) and set(got.values()) == {1}
    bad = {(r["host"], r["peer"], r["pattern"]) for r in rs if r["status"] != "ok"}
    assert all("n005" in ab[:2] for ab in bad)
    # n005 measured with its partners of rounds 1 and 2 only; nobody else failed
    ok5 = {r["pattern"] for r in rs if r["status"] == "ok" and "n005" in (r["host"], r["peer"])
           and r["scope"] == "node"}
    assert ok5 == {"scan:1", "scan:2"}
    assert "n005 lost in round 3" in p.stderr


def test_every_node_records_its_environment_once_and_a_different_one_is_named(
        tmp_path: Path) -> None:
    """K odd: round 1's bye records in round 2, nobody later; a node with another firmware
    is named with the majority's, a node that wrote no record is listed, nothing else
    differs (the sim's records are alike otherwise)."""
    k = 7
    run, launches, p = scan(tmp_path, k, {"PB_SIM_NODE_ENV": "n004:fw_ver=16.35.1012,n002:-"},
                            "--confirm", "0")
    with_env = [(a["argv"][a["argv"].index("--test") + 1],
                 a["argv"][a["argv"].index("--scan") + 1]) for a in launches
                if "--env-json" in a["argv"]]
    assert with_env == [(TESTS[0], "1"), (TESTS[0], "2")]
    lines = [json.loads(x) for x in (run / "raw" / "node-env.jsonl").read_text().splitlines()]
    assert sorted(x["host"] for x in lines) == [h for h in names(k) if h != "n002"]
    assert all(x["record"]["host"] == x["host"] for x in lines)
    assert not list(run.glob("raw/**/*.env.json"))  # the ranks' files, gathered and removed
    env = json.loads((run / "fabric.json").read_text())["node_env"]
    assert (env["nodes"], env["recorded"], env["missing"]) == (k, k - 1, ["n002"])
    assert env["differ"] == [{
        "field": "fw_ver", "label": "firmware", "majority": "20.41.1000", "recorded": k - 1,
        "values": [{"value": "20.41.1000", "nodes": k - 2, "hosts": []},
                   {"value": "16.35.1012", "nodes": 1, "hosts": ["n004"]}]}]
    assert ("node environment: 6 of 7 nodes recorded; differ in fw_ver: n004 16.35.1012 "
            "(5 others: 20.41.1000)") in p.stderr + p.stdout
    page = (run / "fabric.html").read_text()
    assert "Node environment" in page and "16.35.1012: n004" in page and "n002" in page


def test_accept_environment_judges_every_node_of_the_scan(tmp_path: Path) -> None:
    """accept's [environment] on a verbs scan judges each node's device from its record: one
    firmware across the nodes fails on the planted one, the MTU passes per node, and a node
    without a record fails the node_records check (it could not be judged)."""
    env = {"PB_SIM_NODE_ENV": "n004:fw_ver=16.35.1012,n002:-"}
    run, _, _ = scan(tmp_path / "a", 7, env, "--confirm", "0")
    spec = tmp_path / "env.toml"
    spec.write_text("[environment]\nsame_firmware = true\nmtu = 4096\n")
    p = cli("accept", str(run), "--spec", str(spec))
    assert p.returncode == 1, p.stdout + p.stderr
    out = p.stdout
    fw = [ln for ln in out.splitlines() if "same_firmware" in ln]
    assert len(fw) == 1 and "FAIL" in fw[0].upper(), out
    assert "2 firmware version(s): 16.35.1012 on n004:mlx5_0; 20.41.1000 on" in fw[0], fw
    mtu = [ln for ln in out.splitlines() if "environment mtu" in ln]
    assert len(mtu) == 6 and all("PASS" in ln.upper() for ln in mtu), out
    rec = [ln for ln in out.splitlines() if "node_records" in ln]
    assert len(rec) == 1 and "6 of 7 nodes recorded" in rec[0] and "none from n002" in rec[0]
    # every node recorded, one firmware: the same spec passes
    run, _, _ = scan(tmp_path / "b", 7, {}, "--confirm", "0")
    p = cli("accept", str(run), "--spec", str(spec))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 firmware version(s): 20.41.1000 on" in p.stdout and "7 of 7 nodes" in p.stdout


def test_a_node_split_without_majority_is_said_so(tmp_path: Path) -> None:
    """Two port rates on two nodes each: no value is the majority's, both are listed."""
    slow = ",".join(f"{h}:port_rate=4X EDR (100 Gbit/s)" for h in ("n000", "n001"))
    run, _, _ = scan(tmp_path, 4, {"PB_SIM_NODE_ENV": slow}, "--confirm", "0")
    env = json.loads((run / "fabric.json").read_text())["node_env"]
    assert env["recorded"] == 4 and [d["field"] for d in env["differ"]] == ["port_rate"]
    d = env["differ"][0]
    assert d["majority"] is None
    assert {g["value"]: g["hosts"] for g in d["values"]} == {
        "4X EDR (100 Gbit/s)": ["n000", "n001"], "4X HDR (200 Gbit/s)": ["n002", "n003"]}


def test_resume_goes_on_after_the_last_complete_round(tmp_path: Path) -> None:
    env = {"PB_SIM_SLOW": "n002=3,n000~n006=2", "PB_SIM_SEED": "5"}
    whole, _, _ = scan(tmp_path / "whole", 10, env, "--confirm", "0")
    (tmp_path / "cut").mkdir()
    run, launches, p = scan(tmp_path / "cut", 10, {**env, "PB_SIM_FAIL_FROM": "5"},
                            "--confirm", "0", code=1)
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "incomplete" and "--resume" in p.stderr
    assert meta["scan"]["jobs"]["r1-write_lat"]["complete"] == [[1, 4]]
    assert len(launches) == 2 * (4 + 2)  # rounds 1-4, then round 5 twice, per test
    p2 = cli("fabric", "--plots", "none", "--resume", str(run), "--confirm", "0",
             env={**env, "PB_SIM_LAUNCHES": str(tmp_path / "resumed.jsonl")}, timeout=300)
    assert p2.returncode == 0, p2.stderr
    resumed = [json.loads(x) for x in (tmp_path / "resumed.jsonl").read_text().splitlines()]
    first = [a["argv"][a["argv"].index("--scan") + 1] for a in resumed]
    assert first == [str(r) for _ in TESTS for r in range(5, 10)]  # rounds 5..9 only
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "complete" and meta["resumed"]
    strip = ("matrix", "heatmap")
    a = [{k: x for k, x in v.items() if k not in strip}
         for v in json.loads((whole / "fabric.json").read_text())["verdicts"]]
    b = [{k: x for k, x in v.items() if k not in strip}
         for v in json.loads((run / "fabric.json").read_text())["verdicts"]]
    assert a == b
    assert b[0]["suspect_nodes"] == ["n002"] and b[0]["suspect_links"] == [["n000", "n006"]]


def test_a_launch_where_nothing_ran_stops_the_scan_even_if_it_exits_0(tmp_path: Path) -> None:
    """mpirun without abort-on-failure exits 0 whatever its ranks did: no ok node pair is
    what says the launch failed (tried once more, then the test's scan stops)."""
    run, launches, p = scan(tmp_path, 4, {"PB_SIM_FAIL_FROM": "2", "PB_SIM_FAIL_CODE": "0"},
                            "--confirm", "0", code=1)
    assert len(launches) == len(TESTS) * (1 + 2)
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "incomplete"
    assert {k: v["complete"] for k, v in meta["scan"]["jobs"].items()} == \
        {"r1-write_lat": [[1, 1]], "r1-write_bw": [[1, 1]]}
    assert "round 2: no node pair ran" in p.stderr
    missing = [r for r in rows(run) if r["pattern"] in ("scan:2", "scan:3")]
    assert missing and all(r["error"].startswith("not run: the scan stopped") for r in missing)


@pytest.mark.parametrize("launcher", ["mpirun", "srun"])
def test_confirmation_rounds_confirm_real_suspects_not_a_disturbance(tmp_path: Path,
                                                                     launcher: str) -> None:
    """After the scan the suspects are re-measured (--confirm 2), one launch per round of
    disjoint node pairs (round 1 of the tournament over a host file ordered so that it pairs
    exactly those, side A first): the slow node against 3 healthy peers, each suspect link
    twice; a link slow only during the scan (PB_SIM_TRANSIENT) is a suspect of the scan but
    not confirmed. Both values are kept."""
    env = {"PB_SIM_SLOW": "n005=3,n002~n009=2", "PB_SIM_TRANSIENT": "n011~n014=3"}
    run, launches, _ = scan(tmp_path, 16, env, "--confirm", "2", launcher=launcher)
    scan_launches, conf = launches[:15 * len(TESTS)], launches[15 * len(TESTS):]
    assert all("/confirm-" not in a["argv"][a["argv"].index("--output") + 1]
               for a in scan_launches)
    # 5 node pairs (2 links, n005 x 3 peers) in 3 rounds of disjoint pairs, x 2 repeats x 2 tests
    want = [{("n002", "n009"), ("n011", "n014"), ("n000", "n005")}, {("n001", "n005")},
            {("n003", "n005")}]
    assert len(conf) == len(want) * 2 * len(TESTS)
    for i, a in enumerate(conf):
        argv = a["argv"]
        assert argv[argv.index("--scan") + 1] == "1"
        hosts = Path(argv[argv.index("--scan-hosts") + 1]).read_text().split()
        hosts = hosts[::2] if launcher == "mpirun" else hosts
        got = {(hosts[x], hosts[y]) for x, y in scanverbs.round_links(len(hosts), 1)}
        assert got == want[i % len(want)], (i, hosts)
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["confirm"]["repeats"] == 2 and set(meta["confirm"]["tests"]) == set(TESTS)
    with open(run / "raw" / "confirm-write_bw-1.csv") as f:
        crs = list(csv.DictReader(f))
    assert {r["pattern"] for r in crs} == {"confirm:1", "confirm:2", "confirm:3"}
    assert {r["status"] for r in crs} == {"ok"}
    assert not list((run / "raw").rglob("round1.*.csv"))  # the ranks' files merged
    fab = json.loads((run / "fabric.json").read_text())["verdicts"]
    assert len(fab) == 4
    for v in fab:
        assert v["suspect_nodes"] == ["n005"], v
        assert v["suspect_links"] == [["n002", "n009"], ["n011", "n014"]], v
        assert sorted(v["confirmed"]) == ["n002~n009", "n005"], v["confirmation"]
        c = v["confirmation"]
        assert c["n011~n014"]["confirmed"] is False
        assert c["n002~n009"]["measurements"] == 2
        assert c["node n005"]["measurements"] == 6 and len(c["node n005"]["peers"]) == 3


@pytest.mark.parametrize("launcher", ["mpirun", "srun"])
def test_longest_argument_below_4_kib_at_4096_nodes(launcher: str) -> None:
    hosts = tuple(f"node{i:05d}.cluster.example.org" for i in range(4096))
    cfg = FabricConfig(layer="verbs", launcher=launcher, hosts=hosts, tests=TESTS,
                       sizes=(8, 65536), binary="/opt/pairbench/bin/pairbench-verbs",
                       run_dir="/scratch/results/20261126-000000-x", launcher_cmd="/bin/true")
    n, jobs = plan_fabric(cfg)
    assert n == 4095 and len(jobs) == 4095 * len(TESTS)
    worst = [scanverbs.round_job(cfg, 1, "write_bw", 4095, hosts[:3])]  # with nodes left out
    longest = max(len(a) for j in [*jobs, *worst] for a in j.point.sides[0].argv)
    assert longest < 4096, longest
    total = max(sum(len(a) + 1 for a in j.point.sides[0].argv) for j in jobs)
    assert total < 4096, total  # the whole command line, too


def role_lines(k: int, rnd: int, skip: tuple[int, ...], tmp: Path) -> list[str]:
    """The real pairbench-verbs' role line of every rank of round rnd."""
    job = [h for i, h in enumerate(names(k)) if i not in skip]
    hf = tmp / f"hosts-{k}"
    hf.write_text("".join(f"{h} slots=1\n" for h in job))
    spec = str(rnd) + (",skip=" + ",".join(map(str, skip)) if skip else "")
    out = []
    for rank in range(len(job)):
        env = {**os.environ, "OMPI_COMM_WORLD_RANK": str(rank),
               "OMPI_COMM_WORLD_SIZE": str(len(job))}
        p = subprocess.run([str(VERBS_BIN), "--scan", spec, "--scan-hosts", str(hf),
                            "-d", "nodevice-for-this-test", "-o", str(tmp / "o.%r.csv")],
                           env=env, capture_output=True, text=True, timeout=30, check=False)
        line = next((x for x in p.stderr.splitlines() if "scan:" in x), p.stderr)
        out.append(line)
    return out


@pytest.mark.skipif(not VERBS_BIN.is_file(), reason="pairbench-verbs not built")
@pytest.mark.parametrize("k,skip", [(7, ()), (8, ()), (10, (2, 7))])
def test_real_pairbench_verbs_finds_its_side_and_peer(tmp_path: Path, k: int,
                                                      skip: tuple[int, ...]) -> None:
    """Every rank of every round: side A (the client) and its peer as the tournament says,
    the bye sitting out; a dropped node's pairs left out (skip)."""
    help_text = subprocess.run([str(VERBS_BIN), "--help"], capture_output=True, text=True,
                               check=False).stdout
    if "--scan" not in help_text:
        pytest.skip(f"{VERBS_BIN} predates --scan: rebuild it")
    gone = {names(k)[i] for i in skip}
    for r, rnd in enumerate(tournament(names(k)), start=1):
        want = {}
        for a, b in rnd:
            if a in gone or b in gone:
                continue
            want[a] = f"node {a} (OMPI_COMM_WORLD_RANK=" , f"is side A of {a}-{b}: the client"
            want[b] = f"node {b} (OMPI_COMM_WORLD_RANK=", f"is side B of {a}-{b}: the server"
        job = [h for h in names(k) if h not in gone]
        for h, line in zip(job, role_lines(k, r, skip, tmp_path), strict=True):
            if h in want:
                assert want[h][0] in line and want[h][1] in line, (r, h, line)
            else:
                assert f"scan:{r}: node {h} sits this round out" in line, (r, h, line)
