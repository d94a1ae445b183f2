"""pairbench fabric for real on 4 emulated nodes (scripts/netns-nodes, own prefix pbf):
MPI bandwidth of every node pair through one mpirun job per test. With node3's link
limited by tbf (--degrade node3=20mbit: a bad cable) the scan names node3 and nothing
else; with no limit it names nothing. Never asserts a speed: only which nodes and links
the rule calls suspect, with a contrast (unlimited veth vs 20 Mbit/s) far beyond the
emulation's noise (tolerance 0.9: suspect below 10 % of the reference; healthy node
pairs here scatter up to 4x with CPU placement); three repetitions, each node pair
counted with its median, so that one disturbed round is not a suspect.
Needs root, iproute2, mpirun and build/bin/pairbench-mpi."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import REPO, cli

MPI_BIN = Path(os.environ.get("PAIRBENCH_BIN_DIR", REPO / "build" / "bin")) / "pairbench-mpi"
NETNS = REPO / "scripts" / "netns-nodes"
ENV = {"PB_NETNS_PREFIX": "pbf", "PB_NETNS_NET": "10.216.0"}
HOSTS = ",".join(f"10.216.0.{i}" for i in range(1, 5))


def netns(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(NETNS), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **ENV}, check=False)


@pytest.fixture
def nodes(request: pytest.FixtureRequest) -> Iterator[None]:
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("emulated nodes need root and iproute2")
    if not shutil.which("mpirun"):
        pytest.skip("mpirun not installed (apt-get install openmpi-bin)")
    if not MPI_BIN.is_file():
        pytest.skip(f"{MPI_BIN} is not built yet")
    help_text = subprocess.run([str(MPI_BIN), "--help"], capture_output=True, text=True,
                               env={**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1",
                                    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}).stdout
    if "scan[:F[-L]]" not in help_text:  # the driver passes --pattern scan (issue 24)
        pytest.skip(f"{MPI_BIN} predates --pattern scan: rebuild it")
    up = netns("up", "--nodes", "4", *request.param)
    if up.returncode != 0:
        netns("down")
        pytest.skip(f"cannot create emulated nodes here: {up.stderr.strip()}")
    try:
        yield
    finally:
        netns("down")
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert "pbf-node" not in left


SPREAD = 10  # the most the links between healthy nodes may differ for a scan to count


def scan(tmp_path: Path, bad: str = "") -> list[dict]:
    """The scan's verdicts, from a scan whose links between healthy nodes (not touching `bad`)
    are within SPREAD of each other; one more scan if the first was not (once in 8 test-all
    runs, a starved pair: node1~node4 at 50 Mbit/s, 48x below node1~node2, so two of node1's
    and node4's three links were slow and the reference with them: no rule can tell a bad
    node at K = 4 when four of six links are slow). A verdict is asserted only on a scan the
    test's premise holds for: links between healthy nodes alike."""
    for attempt in (1, 2):
        verdicts = one_scan(tmp_path / f"try{attempt}")
        perf = [p for ab, p in verdicts[0]["link_perf"].items() if bad not in ab.split("~")]
        spread = max(perf) / min(perf)
        if spread <= SPREAD:
            return verdicts
        print(f"try {attempt}: links between healthy nodes spread {spread:.0f}x (the machine "
              f"starved a pair): {numbers(verdicts[0])}")
    pytest.fail(f"links between healthy nodes spread {spread:.0f}x in both scans, more than "
                f"the {SPREAD}x this test is built for: {numbers(verdicts[0])}")


def one_scan(tmp_path: Path) -> list[dict]:
    tmp_path.mkdir()
    mca = netns("mca-args").stdout.split()
    p = cli("fabric", "--plots", "none",
            "--hosts", HOSTS, "--binary", str(MPI_BIN), "--test", "bw", "-s", "64K",
            "--pin", "none", "-w", "2", "--timeout", "60", "--results-dir", str(tmp_path),
            # The emulated nodes share two cores: ranks must yield when they wait, or a
            # pair whose two ranks share a core streams in scheduler slices (20x slower).
            "--launcher-args", " ".join([*mca, "--oversubscribe", "--mca",
                                         "mpi_yield_when_idle", "1"]),
            # Floor at 10 % of the reference: healthy node pairs scatter up to 4x with where
            # the scheduler puts their ranks (4 nodes on 2 cores, some pairs share a core),
            # the tbf limit is ~0.2 % of an unlimited veth.
            "--tolerance", "0.9",
            # ...and kept near that 10 % when the healthy links scatter: the rule lowers its
            # floor to exp(-z x noise), noise from the MAD of the 3 links among healthy
            # nodes, and in a loaded suite (the VM lane, 4 pytest workers) those 3 scatter
            # by CPU placement, not by the fabric: 1x, 2.3x, 5.3x puts the default z's floor
            # (3.5) under node3's ~1.5 % (CI, 27 Nov: node3 not named). With z = 1 it would
            # take a 17x scatter either way; the floor never rises above 10 %, so the
            # healthy scan below is judged no more leniently.
            "--z", "1",
            "--exe-args", "--window 4 --duration 0.3", "--repetitions", "3", env=ENV,
            timeout=400)
    assert p.returncode == 0, p.stderr
    run = Path(p.stdout.strip().splitlines()[-1])
    verdicts = json.loads((run / "fabric.json").read_text())["verdicts"]
    assert len(verdicts) == 1
    assert verdicts[0]["links_measured"] == verdicts[0]["links_expected"] == 6
    return verdicts


def numbers(v: dict) -> str:
    """What the rule saw, for a failing assertion (pytest shortens a dict's repr)."""
    return "; ".join(f"{k} {v[k]}" for k in ("reference", "noise", "floor", "suspect_nodes",
                                               "suspect_links", "node_perf", "link_perf"))


@pytest.mark.parametrize("nodes", [("--degrade", "node3=20mbit")], indirect=True)
def test_degraded_node_is_named_and_nothing_else(nodes: None, tmp_path: Path) -> None:
    v = scan(tmp_path, bad="node3")[0]
    assert v["suspect_nodes"] == ["node3"], numbers(v)
    assert v["suspect_links"] == [], numbers(v)
    assert sorted(map(sorted, v["node_links"]["node3"])) == [
        ["node1", "node3"], ["node2", "node3"], ["node3", "node4"]]


@pytest.mark.parametrize("nodes", [()], indirect=True)
def test_healthy_fabric_flags_nothing(nodes: None, tmp_path: Path) -> None:
    v = scan(tmp_path)[0]
    assert (v["suspect_nodes"], v["suspect_links"]) == ([], []), numbers(v)


@pytest.mark.parametrize("nodes", [()], indirect=True)
def test_no_address_resolution_on_the_emulated_fabric(nodes: None) -> None:
    """Every node knows every other node's and the bridge's MAC for good, and the bridge
    every node's: an ARP answered late by a starved kernel left entries FAILED, a TCP
    connect() made then failed and Open MPI's TCP BTL hung the scan (netns-nodes)."""
    def entries(*where: str) -> dict[str, str]:
        out = subprocess.run(["ip", *where], capture_output=True, text=True, check=True).stdout
        return {line.split()[0]: line for line in out.splitlines()}
    every = {f"10.216.0.{j}" for j in range(1, 5)}
    for i in range(1, 5):
        got = entries("-n", f"pbf-node{i}", "neigh", "show", "dev", "eth0")
        assert set(got) == every - {f"10.216.0.{i}"} | {"10.216.0.254"}, got
        assert all(line.split()[-1] == "PERMANENT" for line in got.values()), got
    got = entries("neigh", "show", "dev", "pbf-br")
    assert set(got) == every and all(line.split()[-1] == "PERMANENT" for line in got.values()), got


VERBS_BIN = MPI_BIN.with_name("pairbench-verbs")


@pytest.mark.parametrize("nodes", [()], indirect=True)
def test_verbs_scan_round_placement_through_mpirun(nodes: None, tmp_path: Path) -> None:
    """A verbs fabric scan's round through the real mpirun across the emulated nodes (issue
    24): the launch the driver builds (Mpirun.rank_job) puts rank i on the node of line i of
    the host file (listed unsorted), a failing rank ends no other
    (orte_abort_on_non_zero_status 0), and each pairbench-verbs rank finds its side and peer
    of the round from OMPI_COMM_WORLD_RANK and the file (then stops: no RDMA device)."""
    from pairbench.runner import launchers
    from pairbench.runner.scancfg import FabricConfig
    from pairbench.runner.schedule import tournament

    if not VERBS_BIN.is_file():
        pytest.skip(f"{VERBS_BIN} is not built yet")
    order = tuple(f"10.216.0.{i}" for i in (3, 1, 4, 2))
    cfg = FabricConfig(layer="verbs", launcher="mpirun", hosts=order, tests=("write_lat",),
                       sizes=(8,), binary=str(VERBS_BIN), run_dir=str(tmp_path),
                       launcher_args=tuple(netns("mca-args").stdout.split()), as_root=True)
    launcher = launchers.get(cfg)
    hosts = tmp_path / "hosts"
    hosts.write_text(launcher.hostfile_text(1))
    env = {**os.environ, **dict(launcher.env())}
    probe = ["sh", "-c", 'echo "$OMPI_COMM_WORLD_RANK $(ip -4 -o addr | grep -o '
             '"10\\.216\\.0\\.[0-9]*" | head -1)"; [ "$OMPI_COMM_WORLD_RANK" = 1 ] && exit 3; '
             'sleep 1; echo "$OMPI_COMM_WORLD_RANK still ran"']
    argv, extra = launcher.rank_job(probe, str(hosts))
    out = subprocess.run(argv, capture_output=True, text=True, env={**env, **dict(extra)},
                         timeout=120, check=False).stdout.split("\n")
    assert {f"{i} {h}" for i, h in enumerate(order)} <= set(out), out
    assert {"0 still ran", "2 still ran", "3 still ran"} <= set(out), out
    r, rnd = 2, tournament(order)[1]
    argv, extra = launcher.rank_job([str(VERBS_BIN), "--scan", str(r), "--scan-hosts",
                                     str(hosts), "-o", str(tmp_path / "r.%r.csv")],
                                    str(hosts))
    err = subprocess.run(argv, capture_output=True, text=True, env={**env, **dict(extra)},
                         timeout=120, check=False).stderr
    for a, b in rnd:
        i, j = order.index(a), order.index(b)
        assert f"node {a} (OMPI_COMM_WORLD_RANK={i}) is side A of {a}-{b}: the client" in err
        assert f"node {b} (OMPI_COMM_WORLD_RANK={j}) is side B of {a}-{b}: the server" in err
