"""pairbench fabric --cables for real on a two-level emulated fabric (issue 40): 8 emulated
nodes (scripts/netns-nodes, own prefix pbt) in 4 leaf bridges of 2, each leaf bridge joined
to the spine bridge by one veth pair, leaf2's uplink limited by tbf (--degrade-uplink
leaf2=20mbit: a slow leaf-spine cable). pairbench-mpi's bandwidth scan through the real
mpirun, the cable file from `netns-nodes cables`: localisation names leaf2's uplink and
nothing else — not node3 or node4, the nodes whose every remote pair crosses it (their
own cables are cleared by the pair between them). Never asserts a speed.
Needs root, iproute2, mpirun and build/bin/pairbench-mpi (skips otherwise)."""

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
ENV = {"PB_NETNS_PREFIX": "pbt", "PB_NETNS_NET": "10.217.0"}
HOSTS = ",".join(f"10.217.0.{i}" for i in range(1, 9))


def netns(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(NETNS), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **ENV}, check=False)


@pytest.fixture
def tree() -> Iterator[str]:
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("emulated nodes need root and iproute2")
    if not shutil.which("mpirun"):
        pytest.skip("mpirun not installed (apt-get install openmpi-bin)")
    if not MPI_BIN.is_file():
        pytest.skip(f"{MPI_BIN} is not built yet")
    up = netns("up", "--nodes", "8", "--leaves", "4", "--degrade-uplink", "leaf2=20mbit")
    if up.returncode != 0:
        netns("down")
        pytest.skip(f"cannot create emulated nodes here: {up.stderr.strip()}")
    try:
        cables = netns("cables")
        assert cables.returncode == 0, cables.stderr
        yield cables.stdout
    finally:
        netns("down")
        left = subprocess.run(["ip", "-o", "link", "show"], capture_output=True,
                              text=True).stdout
        assert "pbt-" not in left


def test_slow_uplink_is_named_and_nothing_else(tree: str, tmp_path: Path) -> None:
    assert "leaf2:100,spine1:2" in tree.splitlines()
    cables = tmp_path / "cables.csv"
    cables.write_text(tree)
    mca = netns("mca-args").stdout.split()
    p = cli("fabric", "--plots", "none",
            "--hosts", HOSTS, "--binary", str(MPI_BIN), "--test", "bw", "-s", "64K",
            "--pin", "none", "-w", "2", "--timeout", "60", "--results-dir", str(tmp_path),
            "--launcher-args", " ".join([*mca, "--oversubscribe", "--mca",
                                         "mpi_yield_when_idle", "1"]),
            # as test_fabric_netns: healthy pairs scatter by CPU placement on 2 cores; the
            # tbf limit is ~0.2 % of an unlimited veth
            "--tolerance", "0.9", "--z", "1", "--confirm", "0",
            "--exe-args", "--window 4 --duration 0.3", "--repetitions", "3",
            "--cables", str(cables), env=ENV, timeout=600)
    assert p.returncode == 0, p.stderr
    run = Path(p.stdout.strip().splitlines()[-1])
    (v,) = json.loads((run / "fabric.json").read_text())["verdicts"]
    assert v["links_measured"] == v["links_expected"] == 28
    loc = v["localisation"]
    got = [(c["component"], c["slow"], c["through"]) for c in loc["components"]]
    # leaf2's 2 nodes x the 6 others: 12 node pairs cross its uplink
    assert got == [("leaf2:100 <-> spine1:2", 12, 12)], (got, loc, v["link_perf"])
    assert loc["unexplained"] == 0 and loc["not_in_map"] == [], loc
