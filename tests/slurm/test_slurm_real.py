"""pairbench on a real Slurm: scripts/slurm-emulated starts munged, slurmctld and one slurmd
per emulated node (network namespaces, 4 nodes, one link degraded); `pairbench sweep` and
`pairbench fabric` with `--launcher srun` run across the Slurm nodes, and so do they with
`--launcher mpirun` inside a Slurm allocation (salloc). Their rows must be the rows of the
contract (rowcheck), with hosts = the Slurm nodes, and the same kind of rows either way.
Afterwards nothing the cluster started may be left.

Needs root (namespaces, daemons). Skips only when the Slurm/munge packages are missing
(scripts/install-deps installs them) or when not root; everything else is a failure.
Run alone (it starts daemons): `python -m pytest -q tests/slurm` (scripts/test-all does).
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
for _p in (SCRIPTS, REPO / "tests" / "support", REPO / "tests" / "mpi"):  # + mpi_env
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import rowcheck  # noqa: E402
from mpi_env import settled, shm_segments  # noqa: E402  shmid -> (creator pid, mode, nattch)

from pairbench.contract import testtable  # noqa: E402
from pairbench.contract.columns import COLUMNS  # noqa: E402

SLURM = SCRIPTS / "slurm-emulated"
BIN_DIR = Path(os.environ.get("PAIRBENCH_BIN_DIR", REPO / "build" / "bin"))
MPI_BIN = BIN_DIR / "pairbench-mpi"
# Its own names, subnet and port: never the ones of a cluster a user has up.
PREFIX, NET, PORT = "pbt", "10.215.0", "6937"
STATE = Path(f"/run/pairbench-slurm-{PREFIX}")
ENV = {"PB_NETNS_PREFIX": PREFIX, "PB_NETNS_NET": NET, "PB_SLURM_PORT": PORT}
NODES = ("node1", "node2")  # the sweeps' two nodes
FABRIC_NODES = ("node1", "node2", "node3", "node4")  # the cluster; node3's link degraded
DEGRADED = "node3"
SIZES = (8, 4096)
TESTS = ("latency", "bw")
PAIRS = (1, 2)
TABLE = testtable.load_snapshot()["mpi"]
DAEMONS = ("munged", "slurmctld", "slurmd", "slurmstepd")

missing = [p for p in ("slurmctld", "slurmd", "srun", "salloc", "munged")
           if shutil.which(p) is None]
pytestmark = [
    pytest.mark.skipif(bool(missing), reason=f"Slurm packages not installed ({', '.join(missing)}"
                       " missing; scripts/install-deps installs slurm-wlm and munge)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces, daemons)"),
]


def script(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(SLURM), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **ENV}, check=False)


def started_pids() -> dict[str, int]:
    """The daemons the script recorded (name -> PID)."""
    text = (STATE / "pids").read_text()
    return {name: int(pid) for name, pid in (ln.split() for ln in text.splitlines() if ln)}


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() != b""  # zombies have none
    except OSError:
        return False


def procs_naming_state() -> list[str]:
    """Every live process whose command line names the state directory (ours only)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(STATE) in cmd:
                found.append(f"{d.name}: {cmd}")
    return found


def namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return [ln.split()[0] for ln in out.stdout.splitlines()
            if ln.split() and ln.split()[0].startswith(f"{PREFIX}-")]


def leaked_shm(before: dict) -> list[int]:
    """New segments nobody is attached to: leaks. (A segment marked for removal vanishes at
    its last detach; one with processes attached belongs to a live process, and after
    `down` none of ours lives. Other users of this machine may create segments meanwhile.)"""
    return settled(lambda: [shmid for shmid, (_cpid, _mode, nattch) in shm_segments().items()
                            if shmid not in before and nattch == 0])


def client_env() -> dict[str, str]:
    """`slurm-emulated env`: the client environment, parsed from its export lines."""
    proc = script("env")
    assert proc.returncode == 0, proc.stderr
    env = dict(os.environ)
    for line in proc.stdout.splitlines():
        assert line.startswith("export "), line
        for word in line.removeprefix("export ").split():
            key, _, val = word.partition("=")
            env[key] = val
    env["PYTHONPATH"] = str(SCRIPTS)
    return env


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict]:
    """An emulated 2-node Slurm cluster, brought up over the leftovers of a crashed one."""
    if not MPI_BIN.is_file():
        pytest.fail(f"{MPI_BIN} is not built (cmake --build build)")
    before = {"shm": shm_segments()}
    script("down")
    # A crashed run: up, then every daemon killed -9 and the state left behind.
    proc = script("up")
    assert proc.returncode == 0, proc.stderr
    crashed = started_pids()
    for pid in crashed.values():
        os.kill(pid, signal.SIGKILL)
    proc = script("up", "--nodes", str(len(FABRIC_NODES)), "--degrade", f"{DEGRADED}=20mbit")
    # ^ must clear the leftovers and come up again
    assert proc.returncode == 0, proc.stderr
    assert not any(alive(p) for p in crashed.values())
    before["pids"] = started_pids()
    yield {"env": client_env(), "before": before}
    script("down")  # idempotent: the last test already took it down


def test_status_and_nodes(cluster: dict) -> None:
    pids = cluster["before"]["pids"]
    assert sorted(pids) == ["munged", "slurmctld", *(f"slurmd-{n}" for n in FABRIC_NODES)]
    assert all(alive(p) for p in pids.values())
    env = cluster["env"]
    assert env["SLURM_CONF"] == str(STATE / "slurm.conf")
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True,
                         env=env, timeout=30, check=True).stdout.split()
    assert out == [w for n in FABRIC_NODES for w in (n, "idle")]
    # Each task runs on its own Slurm node: the node's namespace and host name.
    out = subprocess.run(["srun", "-N2", "-n2", "--ntasks-per-node=1", "sh", "-c",
                          'echo "$(hostname) $SLURMD_NODENAME $(ip -br -4 addr show eth0)"'],
                         capture_output=True, text=True, env=env, timeout=60, check=True)
    lines = sorted(out.stdout.splitlines())
    assert [ln.split()[:2] for ln in lines] == [["node1", "node1"], ["node2", "node2"]]
    assert f"{NET}.1/24" in lines[0] and f"{NET}.2/24" in lines[1]


def sweep(env: dict, results: Path, launcher: str, *extra: str,
          wrap: tuple[str, ...] = ()) -> Path:
    argv = [*wrap, sys.executable, "-m", "pairbench", "sweep", "--layer", "mpi",
            "--test", ",".join(TESTS), "--sizes", ",".join(map(str, SIZES)),
            "--pairs", ",".join(map(str, PAIRS)), "-n", "20", "-w", "2", "--pin", "none",
            "--timeout", "60", "--launcher", launcher, "--hosts", ",".join(NODES),
            "--binary", str(MPI_BIN), "--results-dir", str(results), "--no-progress", *extra]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600,
                          check=False)
    out = proc.stdout.strip().splitlines()
    assert out, proc.stderr
    run_dir = Path(out[-1])
    assert proc.returncode == 0, failure_text(proc, run_dir)
    return run_dir


def failure_text(proc: subprocess.CompletedProcess, run_dir: Path) -> str:
    """A failed sweep's stderr, its error rows' reasons and the end of each launch's stderr,
    as one string (pytest shortens a tuple's repr to a line)."""
    said = [f"exit {proc.returncode}; stderr:\n{proc.stderr[-2000:]}"]
    if (run_dir / "data.csv").is_file():
        with open(run_dir / "data.csv", newline="") as f:
            said += [f"error row: {r['test']} {r['msg_size_bytes']} B pairs={r['pairs']} "
                     f"{r['pair_id']}: {r['error']}" for r in csv.DictReader(f)
                     if r["status"] != "ok"]
    for err in sorted((run_dir / "raw").glob("*.stderr")):
        text = err.read_text(errors="replace").strip()
        if text:
            said.append(f"{err.name}: ...{text[-600:]}")
    return "\n".join(said)


def check_rows(run_dir: Path) -> list[dict]:
    """The contract's rows (rowcheck) for every test and pair count, across the nodes."""
    with open(run_dir / "data.csv", newline="") as f:
        reader = csv.DictReader(f)
        assert list(reader.fieldnames or [])[:len(COLUMNS)] == list(COLUMNS)
        rows = list(reader)
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    for test in TESTS:
        for pairs in PAIRS:
            mine = [r for r in rows if r["test"] == test and r["pairs"] == str(pairs)]
            assert rowcheck.check_rows(mine, TABLE[test], "mpi", pairs, SIZES) == []
            for r in mine:
                if r["pair_id"] == "all":
                    continue
                # side A (the measuring one) on the first node, its peer on the second
                assert r["host"] == "node1", r
                assert r["peer"].split(":")[0] == "node2", r
    return rows


# Flags that follow what was measured, not the launcher: tail_dominated (the pairs' end
# times: 4 busy ranks share 2 cores here), sample_cap, above_link_rate, and
# clock_offset_corrected (set when the measured offset between two nodes' clocks is not 0: the
# emulated nodes share one clock, so it is 0 or a few ns by chance; seen on one pair row of one
# launcher's scan in a loaded run).
TIMING_FLAGS = {"tail_dominated", "sample_cap", "above_link_rate", "clock_offset_corrected"}


def _filled(r: dict, c: str) -> bool:
    if c == "flags":
        return bool(set(filter(None, r[c].split(";"))) - TIMING_FLAGS)
    return bool(r[c])


def shape(rows: list[dict]) -> list[tuple[str, ...]]:
    """What must not depend on the launcher: identity, hosts and which cells are filled."""
    return sorted((r["test"], r["pattern"], r["msg_size_bytes"], r["pairs"], r["pair_id"],
                   r["scope"],
                   r["host"], r["peer"].split(":")[0],
                   "".join("x" if _filled(r, c) else "." for c in COLUMNS)) for r in rows)


def test_sweep_srun_and_mpirun_in_allocation(cluster: dict, tmp_path: Path) -> None:
    env = cluster["env"]
    # srun direct launch: Open MPI's ranks get their PMIx from Slurm (mpi/pmix).
    srun_rows = check_rows(sweep(env, tmp_path, "srun", "--launcher-arg=--mpi=pmix"))
    # mpirun inside an allocation: it starts its daemons on the Slurm nodes with srun.
    # -w: the sweep's --hosts are these two nodes; without it Slurm may allocate two others
    # (node1 and node2 still completing the srun sweep's last job), and mpirun then finds
    # "All nodes which are allocated for this job are already filled" (a timed run's failure).
    alloc = ("salloc", "-N2", "-w", ",".join(NODES), "--ntasks-per-node=2", "--quiet")
    mpirun_rows = check_rows(sweep(env, tmp_path, "mpirun", wrap=alloc))
    assert shape(srun_rows) == shape(mpirun_rows)


FABRIC_TESTS = ("latency", "bw")
FABRIC_SIZES = (8, 65536)


def fabric(env: dict, results: Path, launcher: str, largs: str,
           wrap: tuple[str, ...] = (), reps: int = 1) -> tuple[Path, list[dict]]:
    argv = [*wrap, sys.executable, "-m", "pairbench", "fabric", "--layer", "mpi",
            "--repetitions", str(reps),
            "--launcher", launcher, "--hosts", ",".join(FABRIC_NODES),
            "--test", ",".join(FABRIC_TESTS), "--sizes", ",".join(map(str, FABRIC_SIZES)),
            "-n", "20", "-w", "2", "--pin", "none", "--timeout", "60",
            f"--launcher-args={largs}", "--binary", str(MPI_BIN), "--results-dir", str(results)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600,
                          check=False)
    out = proc.stdout.strip().splitlines()
    assert out, proc.stderr
    run_dir = Path(out[-1])
    assert proc.returncode == 0, proc.stderr
    with open(run_dir / "data.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    for test in FABRIC_TESTS:
        mine = [r for r in rows if r["test"] == test]
        for rep in range(1, reps + 1):  # each scan is a complete run of the contract
            scan = [r for r in mine if r.get("repetition", "1") == str(rep)]
            assert rowcheck.check_rows(scan, TABLE[test], "mpi", None, FABRIC_SIZES) == []
        for size, rep in itertools.product(FABRIC_SIZES, range(1, reps + 1)):
            # every node pair exactly once per scan, between Slurm nodes
            links = sorted(tuple(sorted((r["host"], r["peer"].split(":")[0]))) for r in mine
                           if r["msg_size_bytes"] == str(size) and r["scope"] == "pair"
                           and r.get("repetition", "1") == str(rep))
            want = sorted((a, b) for i, a in enumerate(FABRIC_NODES)
                          for b in FABRIC_NODES[i + 1:])
            assert links == want, (test, size, rep, links)
    return run_dir, rows


def test_fabric_scan_srun_and_mpirun_in_allocation(cluster: dict, tmp_path: Path) -> None:
    """`pairbench fabric` over the 4 Slurm nodes: every node pair once, the contract's rows,
    the same kind of rows through srun and through mpirun inside salloc; under srun the
    degraded node's links (and only they) are the suspects of the bandwidth scan.  Three
    scans under srun: a link's value is its median over them, so one round disturbed by
    the CPU (4 busy ranks share 2 cores here) cannot hide the degraded node (it did once,
    with a build running beside: healthy links 0.66-14.9 Gbit/s, floor below the 20 Mbit/s
    node's links)."""
    env = cluster["env"]
    run_dir, srun_rows = fabric(env, tmp_path, "srun", "--mpi=pmix", reps=3)
    alloc = ("salloc", "-N", str(len(FABRIC_NODES)), "--ntasks-per-node=1", "--quiet")
    # mpirun binds each node's rank to core 0 of this one machine: all four on one core
    # (docs/slurm.md, "Binding"); srun (task/none) binds nothing.
    _, mpirun_rows = fabric(env, tmp_path, "mpirun", "--bind-to none", wrap=alloc)
    a, b = shape([r for r in srun_rows if r.get("repetition", "1") == "1"]), shape(mpirun_rows)
    flags = {(r["test"], r["msg_size_bytes"], r["host"], r["peer"].split(":")[0], r["scope"]):
             r["flags"] for r in [*srun_rows, *mpirun_rows] if r["flags"]}
    assert a == b, ("srun and mpirun rows differ in shape", sorted(set(a) ^ set(b)), flags)
    verdicts = json.loads((run_dir / "fabric.json").read_text())["verdicts"]
    bw = next(v for v in verdicts if v["test"] == "bw" and v["msg_size_bytes"] == 65536)
    suspects = [*bw["suspect_nodes"], *(n for link in bw["suspect_links"] for n in link)]
    assert suspects, bw
    assert all(DEGRADED in link for link in bw["suspect_links"]), bw
    assert set(bw["suspect_nodes"]) <= {DEGRADED}, bw


def test_srun_without_pmix_fails_as_an_error_row(cluster: dict, tmp_path: Path) -> None:
    """Debian's Open MPI has no PMI-2 support: --mpi=pmi2 fails in MPI_Init, and the sweep
    says so in error rows and its exit code, never with missing rows."""
    env = cluster["env"]
    argv = [sys.executable, "-m", "pairbench", "sweep", "--layer", "mpi", "--test", "latency",
            "--sizes", "8", "--pairs", "1", "-n", "5", "--pin", "none", "--timeout", "30",
            "--launcher", "srun", "--hosts", ",".join(NODES), "--launcher-arg=--mpi=pmi2",
            "--binary", str(MPI_BIN), "--results-dir", str(tmp_path), "--no-progress"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    assert proc.returncode == 1, proc.stderr
    data = Path(proc.stdout.split()[-1]) / "data.csv"
    rows = list(csv.DictReader(data.read_text().splitlines()))
    assert rows and all(r["status"] == "error" and r["error"] for r in rows), rows


def test_verbs_scan_round_through_srun(cluster: dict, tmp_path: Path) -> None:
    """A verbs fabric scan's round through the real srun (issue 24): the launch the driver
    builds (Srun.rank_job) puts rank i on the node of line i of the host file, whatever
    Slurm's own node order (the file lists them unsorted); each pairbench-verbs rank finds
    its side and peer of the round from SLURM_PROCID and the file (then stops: these nodes
    have no RDMA device); a failing rank ends no other. The driver's whole scan then stops
    after round 1 tried twice (no node pair ran), its rows error rows naming both nodes."""
    from pairbench.runner import launchers
    from pairbench.runner.scancfg import FabricConfig
    from pairbench.runner.schedule import tournament

    verbs = BIN_DIR / "pairbench-verbs"
    if not verbs.is_file():
        pytest.skip(f"{verbs} is not built")
    env = cluster["env"]
    order = ("node4", "node2", "node1", "node3")
    hosts = tmp_path / "hosts"
    hosts.write_text("".join(f"{h}\n" for h in order))
    cfg = FabricConfig(layer="verbs", launcher="srun", hosts=order, tests=("write_lat",),
                       sizes=(8,), binary=str(verbs), run_dir=str(tmp_path))
    probe = ["sh", "-c", 'echo "$SLURM_PROCID $(hostname)"; [ "$SLURM_PROCID" = 1 ] && '
             'exit 3; sleep 1; echo "$SLURM_PROCID still ran"']
    argv, extra = launchers.get(cfg).rank_job(probe, str(hosts))
    out = subprocess.run(argv, capture_output=True, text=True, env={**env, **dict(extra)},
                         timeout=120, check=False).stdout.split("\n")
    assert {f"{i} {h}" for i, h in enumerate(order)} <= set(out), out
    assert {"0 still ran", "2 still ran", "3 still ran"} <= set(out), out
    for r, rnd in enumerate(tournament(order), start=1):
        argv, extra = launchers.get(cfg).rank_job(
            [str(verbs), "--scan", str(r), "--scan-hosts", str(hosts), "-o",
             str(tmp_path / "r.%r.csv")], str(hosts))
        err = subprocess.run(argv, capture_output=True, text=True, env={**env, **dict(extra)},
                             timeout=120, check=False).stderr
        for a, b in rnd:
            i, j = order.index(a), order.index(b)
            assert f"node {a} (SLURM_PROCID={i}) is side A of {a}-{b}: the client" in err, err
            assert f"node {b} (SLURM_PROCID={j}) is side B of {a}-{b}: the server" in err, err
    proc = subprocess.run([sys.executable, "-m", "pairbench", "fabric", "--layer", "verbs",
                           "--launcher", "srun", "--hosts", ",".join(order), "--test",
                           "write_lat", "-s", "8", "--timeout", "20", "--confirm", "0",
                           "--binary", str(verbs), "--results-dir", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 1 and "round 1: no node pair ran" in proc.stderr, proc.stderr
    run = Path(proc.stdout.split()[-1])
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "incomplete"
    rows = list(csv.DictReader((run / "data.csv").read_text().splitlines()))
    assert rows and all(r["status"] == "error" for r in rows)


def test_run_propagates_exit_code() -> None:
    """`run` on another prefix: the command's exit code comes back, all is gone after."""
    env = {**os.environ, "PB_NETNS_PREFIX": "pbu", "PB_NETNS_NET": "10.217.0",
           "PB_SLURM_PORT": "6947"}
    proc = subprocess.run([str(SLURM), "run", "--", "sh", "-c",
                           'srun -N2 -n2 true && test -n "$SLURM_CONF" && exit 3'],
                          capture_output=True, text=True, env=env, timeout=180, check=False)
    assert proc.returncode == 3, proc.stderr
    assert not Path("/run/pairbench-slurm-pbu").exists()
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "pbu-" not in out


def test_bad_usage_exit_2() -> None:
    for args in (["up", "--nodes", "x"], ["frobnicate"], ["run", "--"]):
        proc = script(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "error:" in proc.stderr


def test_zz_down_leaves_nothing(cluster: dict) -> None:
    """Last: down stops every daemon it started and removes namespaces, files and shm."""
    pids = cluster["before"]["pids"]
    proc = script("down")
    assert proc.returncode == 0, proc.stderr
    deadline = time.monotonic() + 10
    while any(alive(p) for p in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [n for n, p in pids.items() if alive(p)] == []
    assert procs_naming_state() == []
    assert namespaces() == []
    assert not STATE.exists()
    assert not Path(f"/run/pairbench-two-node-{PREFIX}").exists()
    link = subprocess.run(["ip", "link", "show", f"{PREFIX}-br"], capture_output=True)
    assert link.returncode != 0, "bridge left behind"
    assert leaked_shm(cluster["before"]["shm"]) == []
    assert script("status").returncode == 1
    assert script("down").returncode == 0  # idempotent
