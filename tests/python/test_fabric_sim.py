"""pairbench fabric through the simulated fabric (tests/sim/fabric_sim.py: a stand-in for
mpirun + pairbench-mpi): the whole driver path — planning, the job, rows per round,
collection, analysis, outputs — with planted bad nodes and links, a node lost mid-scan, a
scan killed mid-way and resumed, and --dry-run. Large K (1,024, 4,096) is benchmarked by
results/fabric-scale/ (run.sh), not here."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import HERE, REPO, cli
from pairbench.runner.scan import FabricConfig, describe_plan

SIM = HERE.parent / "sim" / "fabric_sim.py"


def hosts(k: int) -> str:
    return ",".join(f"n{i:03d}" for i in range(k))


def fabric_args(tmp_path: Path, k: int, *extra: str) -> list[str]:
    return ["fabric", "--plots", "none",
            "--launcher", "mpirun", "--launcher-cmd", str(SIM), "--binary",
            sys.executable, "--hosts", hosts(k), "--test", "latency,bw", "-s", "8,64K",
            "--results-dir", str(tmp_path), *extra]


def sim_scan(tmp_path: Path, k: int, env: dict, *extra: str, code: int = 0) -> Path:
    p = cli(*fabric_args(tmp_path, k, *extra), env=env, timeout=600)
    assert p.returncode == code, p.stderr
    return Path(p.stdout.strip().splitlines()[-1])


def verdicts(run: Path) -> list[dict]:
    return json.loads((run / "fabric.json").read_text())["verdicts"]


def test_planted_node_and_link_found_nothing_else_at_5_percent_noise(tmp_path: Path) -> None:
    env = {"PB_SIM_SLOW": "n005=3,n002~n009=2", "PB_SIM_NOISE": "0.05"}
    run = sim_scan(tmp_path, 24, env)
    vs = verdicts(run)
    assert len(vs) == 4  # two tests x two sizes
    for v in vs:
        assert v["suspect_nodes"] == ["n005"], v["suspect_nodes"]
        assert v["suspect_links"] == [["n002", "n009"]]
        assert v["links_measured"] == v["links_expected"] == 24 * 23 // 2
    # rows carry the compact label scan:R, never a round's text; every node pair once
    with open(run / "data.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["pattern"] for r in rows} == {f"scan:{i}" for i in range(1, 24)}
    pairs = {frozenset((r["host"], r["peer"])) for r in rows
             if r["scope"] == "pair" and r["test"] == "bw" and r["msg_size_bytes"] == "8"}
    assert len(pairs) == 24 * 23 // 2
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "complete"
    assert meta["schedule"] == {"kind": "round-robin tournament (docs/fabric.md)",
                                "nodes": 24, "rounds": 23}


def test_confirmation_rounds_confirm_real_suspects_not_a_disturbance(tmp_path: Path) -> None:
    """After the scan the suspects are re-measured (--confirm 2): the slow node against 3
    healthy peers, each suspect link twice; a link slow only during the scan (a transient,
    PB_SIM_TRANSIENT) is a suspect of the scan but not confirmed. Both values are kept."""
    env = {"PB_SIM_SLOW": "n005=3,n002~n009=2", "PB_SIM_TRANSIENT": "n011~n014=3"}
    run = sim_scan(tmp_path, 16, env)
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["confirm"]["repeats"] == 2
    assert set(meta["confirm"]["tests"]) == {"latency", "bw"}
    for v in verdicts(run):
        assert v["suspect_nodes"] == ["n005"]
        assert v["suspect_links"] == [["n002", "n009"], ["n011", "n014"]]
        assert sorted(v["confirmed"]) == ["n002~n009", "n005"], v["confirmation"]
        c = v["confirmation"]
        assert c["n011~n014"]["confirmed"] is False
        assert c["n011~n014"]["first"] < v["floor"] <= c["n011~n014"]["confirming"]
        assert c["node n005"]["measurements"] == 6 and len(c["node n005"]["peers"]) == 3
        assert c["n002~n009"]["measurements"] == 2
    html = (run / "fabric.html").read_text()
    assert html.index("Suspects") < html.index("heatmap not drawn")  # the page leads with them
    assert "node n005 (confirmed)" in html and "link n011~n014</td>" in html
    p = cli("fabric", "--plots", "none",
            "--hosts", "a,b", "--confirm", "-1", "--binary", sys.executable)
    assert p.returncode == 2 and "--confirm" in p.stderr


def test_a_lost_node_does_not_lose_the_scan(tmp_path: Path) -> None:
    """n007 is lost when round 5 starts: the job dies naming it (as Open MPI does), the
    scan goes on from round 5 without it, its remaining node pairs are failed rows, and
    everything else is measured and judged."""
    env = {"PB_SIM_LOSE": "n007@5", "PB_SIM_SLOW": "n003=4"}
    run = sim_scan(tmp_path, 12, env, code=1)
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["scan"]["dropped"] == ["n007"]
    parts = meta["scan"]["jobs"]["r1-latency"]["parts"]
    assert [(p["first"], p["status"]) for p in parts] == [(1, "failed"), (5, "ok")]
    assert "--pattern" in parts[1]["argv"]
    assert parts[1]["argv"][parts[1]["argv"].index("--pattern") + 1] == "scan:5-11,skip=7"
    for v in verdicts(run):
        failed = {frozenset(x) for x in v["links_failed"]}
        assert failed and all("n007" in x for x in failed)
        assert v["links_measured"] + len(failed) == v["links_expected"] == 66
        assert v["suspect_nodes"] == ["n003"]


def wait_for_rounds(csv_path: Path, n: int, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if csv_path.is_file():
            labels = set()
            for line in csv_path.read_text().splitlines()[1:]:
                labels.add(line.split(",")[4])
            if len(labels) > n:
                return
        time.sleep(0.1)
    raise AssertionError(f"{csv_path}: fewer than {n} rounds after {timeout} s")


def test_resume_after_the_scan_was_killed_gives_the_same_verdict(tmp_path: Path) -> None:
    env = {"PB_SIM_SLOW": "n004=3,n001~n010=2", "PB_SIM_SEED": "7"}
    whole = sim_scan(tmp_path / "whole", 16, env)
    pidfile = tmp_path / "sim.pid"
    (tmp_path / "cut").mkdir()
    envp = {**os.environ, **env, "PB_SIM_ROUND_S": "0.2", "PB_SIM_PIDFILE": str(pidfile),
            "PYTHONPATH": str(REPO / "scripts")}
    driver = subprocess.Popen([sys.executable, "-m", "pairbench",
                               *fabric_args(tmp_path / "cut", 16)], env=envp,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not list((tmp_path / "cut").glob("*/raw/r1-latency-scan.csv")):
            assert time.monotonic() < deadline and driver.poll() is None
            time.sleep(0.1)
        run = next((tmp_path / "cut").glob("*"))
        wait_for_rounds(run / "raw" / "r1-latency-scan.csv", 6)
    finally:
        driver.kill()  # the driver and its job, as an ended allocation would
        driver.communicate()
        if pidfile.is_file():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
    time.sleep(0.3)
    assert not (run / "fabric.json").exists()
    p = cli("fabric", "--plots", "none", "--resume", str(run), env={**env}, timeout=600)
    assert p.returncode == 0, p.stderr
    meta = json.loads((run / "metadata.json").read_text())
    parts = meta["scan"]["jobs"]["r1-latency"]["parts"]
    assert parts[0]["status"] == "interrupted" and parts[1]["first"] > 5
    assert meta["status"] == "complete" and meta["resumed"]
    strip = ("matrix", "heatmap")
    a = [{k: x for k, x in v.items() if k not in strip} for v in verdicts(whole)]
    b = [{k: x for k, x in v.items() if k not in strip} for v in verdicts(run)]
    assert a == b  # the same links, the same values, the same suspects
    assert b[0]["suspect_nodes"] == ["n004"] and b[0]["suspect_links"] == [["n001", "n010"]]


def test_a_confirmation_job_that_wrote_nothing_leaves_its_suspects_not_re_measured(
        tmp_path: Path) -> None:
    """A confirmation job whose rank crashed at start-up left an empty CSV (a timed run's
    Slurm scan did): the outputs are still written, its suspects neither confirmed nor
    cleared, the others judged by the files that have rows."""
    run = sim_scan(tmp_path, 8, {"PB_SIM_SLOW": "n005=3"})
    assert all(v["confirmed"] == ["n005"] for v in verdicts(run))
    for f in (run / "raw").glob("confirm-bw-*.csv"):
        f.write_text("")
    p = cli("fabric", "--plots", "none", "--render", str(run))
    assert p.returncode == 0, p.stderr
    for v in verdicts(run):
        assert v["suspect_nodes"] == ["n005"], v
        assert v["confirmed"] == (["n005"] if v["test"] == "latency" else []), v
        assert ("node n005" in v["confirmation"]) == (v["test"] == "latency"), v


@pytest.mark.parametrize("fails,code", [(2, 0), (3, 1)])
def test_a_job_dying_at_start_up_is_tried_three_times(tmp_path: Path, fails: int,
                                                      code: int) -> None:
    """A job whose rank dies in MPI_Init before any row (PB_SIM_START_FAILS): tried again
    until three launches in a row failed so; after two the third finishes the scan, after
    three the test's scan stops, incomplete and resumable."""
    log = tmp_path / "launches.jsonl"
    run = sim_scan(tmp_path, 8, {"PB_SIM_START_FAILS": str(fails), "PB_SIM_LAUNCHES": str(log)},
                   "--confirm", "0", code=code)
    meta = json.loads((run / "metadata.json").read_text())
    for test in ("latency", "bw"):
        parts = meta["scan"]["jobs"][f"r1-{test}"]["parts"]
        assert [p["status"] for p in parts] == ["failed"] * fails + (["ok"] if code == 0 else [])
        assert all(p["exit_codes"] == [139] for p in parts[:fails])
    assert meta["status"] == ("complete" if code == 0 else "incomplete")


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path: Path) -> None:
    p = cli(*fabric_args(tmp_path, 1024, "--dry-run"), timeout=120)
    assert p.returncode == 0, p.stderr
    assert "fabric scan of 1024 nodes: 1023 rounds of 512 node pairs" in p.stdout
    assert "estimated time" in p.stdout and "longest argument" in p.stdout
    # one job per test (latency, bw): two start-ups
    assert "starting 2 launch(es) (1 s each assumed" in p.stdout, p.stdout
    assert list(tmp_path.iterdir()) == []


def test_dry_run_counts_the_start_of_every_verbs_round() -> None:
    """A verbs scan through mpirun or srun is a launch per round: at 1,024 nodes and two tests
    2,046 start-ups, 34 min of the estimate, said apart from the measuring."""
    hosts = tuple(f"n{i:04d}" for i in range(1024))
    cfg = FabricConfig(layer="verbs", launcher="srun", hosts=hosts,
                       tests=("write_lat", "write_bw"),
                       sizes=(8,), binary="/opt/pairbench/bin/pairbench-verbs", run_dir="/r")
    text = describe_plan(cfg)
    assert "launches: 2046 (one per round" in text, text
    assert "+ 34 min starting 2046 launch(es) (1 s each assumed" in text, text


@pytest.mark.parametrize("bad,msg", [
    (["--resume", "/nonexistent"], "no readable metadata.json"),
    (["--hosts", "@/nonexistent/hosts"], "--hosts @/nonexistent/hosts"),
])
def test_bad_resume_and_host_file(tmp_path: Path, bad: list, msg: str) -> None:
    p = cli("fabric", *bad, timeout=60)
    assert p.returncode == 2 and msg in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("bad,msg", [
    (["--timeout", "nan"], "--timeout nan: expected seconds"),
    (["--timeout", "inf"], "--timeout inf: expected seconds"),
    (["--confirm", "1000"], "--confirm 1000: expected 0..10"),
    (["--z", "nan"], "--z must be a finite number"),
    (["--ranks-per-node", "100000"], "--ranks-per-node 100000: expected 1..256"),
])
def test_fabric_options_checked_as_strictly_as_sweep(tmp_path: Path, bad: list,
                                                    msg: str) -> None:
    """issue 37: --timeout nan was taken (exit 0, "timeout_s": NaN in metadata.json, handed
    to every job), --confirm 1000 was taken without a bound. Exit 2 before anything runs."""
    p = cli(*fabric_args(tmp_path / "res", 4, *bad), timeout=60)
    assert p.returncode == 2 and msg in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "res").exists()


def test_dry_run_counts_the_confirmation_launches() -> None:
    """--dry-run says at most how much confirming the suspects adds (issue 37: it did not
    count them; --confirm 1000 at K = 8 was thousands of launches)."""
    hosts = tuple(f"n{i}" for i in range(8))
    mpi = FabricConfig(layer="mpi", launcher="mpirun", hosts=hosts, tests=("latency", "bw"),
                       sizes=(8,), binary="/b", run_dir="/r")
    assert "at most 6 more launch(es), 78 round(s)" in describe_plan(mpi, 3)
    verbs = replace(mpi, layer="verbs", tests=("write_lat", "write_bw"))
    assert "at most 78 more launch(es), 78 round(s)" in describe_plan(verbs, 3)
    assert "confirmation" not in describe_plan(mpi, 0)
    ssh = replace(verbs, launcher="ssh")
    assert "none (a verbs scan through ssh is not confirmed" in describe_plan(ssh, 2)


def test_hosts_file_takes_mpirun_hostfile_lines(tmp_path: Path) -> None:
    """`n001 slots=2` is node n001 (issue 37: the whole line was taken as the name), its
    slots said to be ignored; a line of two names is an error naming the line."""
    f = tmp_path / "hosts"
    f.write_text("# rack 1\nn001 slots=2\nn002 slots=2 max_slots=4  # spare\n\nn003\n")
    p = cli(*fabric_args(tmp_path, 2, "--dry-run"), "--hosts", f"@{f}", timeout=60)
    assert p.returncode == 0, p.stderr
    assert "fabric scan of 3 nodes" in p.stdout and "-H n001:1,n002:1,n003:1" not in p.stdout
    assert "max_slots, slots ignored" in p.stderr
    f.write_text("n001\nn002 n003\n")
    p = cli(*fabric_args(tmp_path, 2, "--dry-run"), "--hosts", f"@{f}", timeout=60)
    assert p.returncode == 2 and "line 2 'n002 n003': expected one node name" in p.stderr


def test_render_refuses_a_sweeps_run_directory(base_run: Path) -> None:
    """issue 37: --render on a sweep's run directory exited 0 and wrote fabric files into it."""
    before = sorted(x.name for x in base_run.iterdir())
    p = cli("fabric", "--plots", "none", "--render", str(base_run), timeout=60)
    assert p.returncode == 2 and "not a fabric scan" in p.stderr, p.stderr
    assert sorted(x.name for x in base_run.iterdir()) == before


@pytest.fixture(scope="module")
def small_scan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sim_scan(tmp_path_factory.mktemp("small"), 4, {})


@pytest.mark.parametrize("extra,msg", [
    (["--hosts", "a,b"], "--hosts given"),
    (["--layer", "verbs", "--launcher", "srun"], "--layer, --launcher given"),
    (["--test", "bw", "--dry-run"], "--dry-run, --test given"),
])
def test_resume_refuses_the_scans_own_options(small_scan: Path, extra: list,
                                              msg: str) -> None:
    """issue 37: --resume RUN --hosts/--layer/--launcher ignored them without a word."""
    before = (small_scan / "metadata.json").read_bytes()
    p = cli("fabric", "--plots", "none", "--resume", str(small_scan), *extra, timeout=60)
    assert p.returncode == 2 and msg in p.stderr, p.stderr
    assert (small_scan / "metadata.json").read_bytes() == before
    p = cli("fabric", "--plots", "none",
            "--render", str(small_scan), "--tolerance", "0.2", timeout=60)
    assert p.returncode == 2 and "--tolerance given" in p.stderr, p.stderr


@pytest.mark.parametrize("interrupted", [False, True])
def test_resume_of_random_bytes_is_a_clear_error(small_scan: Path, tmp_path: Path,
                                                 interrupted: bool) -> None:
    """issue 37: a part's CSV of random bytes gave a 39-line traceback (csv.Error) and left
    metadata.json 'running'; a finished scan's lost its rows in silence. Now: exit 2 naming
    the file, metadata.json untouched."""
    run = tmp_path / "run"
    shutil.copytree(small_scan, run)
    rng = random.Random(3)
    (run / "raw" / "r1-latency-scan.csv").write_bytes(bytes(rng.randrange(256)
                                                            for _ in range(20000)))
    if interrupted:  # as a killed driver leaves it
        meta = json.loads((run / "metadata.json").read_text())
        for js in meta["scan"]["jobs"].values():
            for part in js["parts"]:
                part.update(status="running", complete=[])
        meta["status"] = "running"
        (run / "metadata.json").write_text(json.dumps(meta))
    before = (run / "metadata.json").read_bytes()
    p = cli("fabric", "--plots", "none", "--resume", str(run), timeout=60)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "raw/r1-latency-scan.csv is not a pairbench CSV" in p.stderr
    assert (run / "metadata.json").read_bytes() == before


def test_sigterm_during_a_scan_says_what_happened_and_resumes(tmp_path: Path) -> None:
    """issue 37: SIGTERM to the driver during a scan exited 143 with nothing said (and the
    job's process group ran on). As sweep: the launch's process group is killed, the rounds
    complete are kept, metadata.json says "interrupted" (signal, launch), one error line
    says so and how to go on; exit 128 + 15; --resume then finishes the scan."""
    pidfile = tmp_path / "sim.pid"
    (tmp_path / "cut").mkdir()
    envp = {**os.environ, "PB_SIM_ROUND_S": "0.2", "PB_SIM_PIDFILE": str(pidfile),
            "PYTHONPATH": str(REPO / "scripts")}
    driver = subprocess.Popen([sys.executable, "-m", "pairbench",
                               *fabric_args(tmp_path / "cut", 12)], env=envp,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list((tmp_path / "cut").glob("*/raw/r1-latency-scan.csv")):
            assert time.monotonic() < deadline and driver.poll() is None
            time.sleep(0.1)
        wait_for_rounds(next((tmp_path / "cut").glob("*/raw/r1-latency-scan.csv")), 3)
        driver.send_signal(signal.SIGTERM)
        out, err = driver.communicate(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.communicate()
    assert driver.returncode == 128 + signal.SIGTERM, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("pairbench fabric: error: interrupted by SIGTERM during "
                           "r1-latency-scan (its process group killed)"), err
    assert "go on with: pairbench fabric --resume" in last and "Traceback" not in err
    run = Path(out.strip().splitlines()[-1])
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "interrupted"
    assert meta["interrupted"]["signal"] == "SIGTERM"
    assert meta["interrupted"]["launch"] == "r1-latency-scan"
    assert meta["scan"]["jobs"]["r1-latency"]["parts"][0]["status"] == "interrupted"
    time.sleep(0.5)
    sim_pid = int(pidfile.read_text())
    assert not Path(f"/proc/{sim_pid}").exists() or \
        Path(f"/proc/{sim_pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    assert (run / "data.csv").is_file() and not (run / "fabric.json").exists()
    p = cli("fabric", "--plots", "none", "--resume", str(run), timeout=600)
    assert p.returncode == 0, p.stderr
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "complete" and "interrupted" not in meta


def test_a_stale_build_is_named_not_no_node_pairs(tmp_path: Path) -> None:
    """An executable built from another pairbench (its CSV header 8 columns short, as a stale
    build/ after a schema change): the scan stops at its first job and says what differs and
    to rebuild; it ended with 'no node pairs measured' and no word on why (noticed by the
    localisation helper with a stale build: 63 columns against the driver's 71)."""
    p = cli(*fabric_args(tmp_path, 6), env={"PB_SIM_OLD_SCHEMA": "8"}, timeout=300)
    assert p.returncode != 0, p.stderr
    assert "rows are not this driver's: its CSV header has" in p.stderr, p.stderr
    assert "Rebuild it (cmake --build build)" in p.stderr
    assert "the scan stops" in p.stderr and "Traceback" not in p.stderr
    assert p.stderr.count("rows are not this driver's") == 1  # not once per job

