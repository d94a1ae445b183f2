"""plan -> run -> collect with the fake executable: tidy data, metadata, error rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from conftest import FAKE, FAKE_RIG, FAKE_SSH, SCRIPTS, assert_clean_error, cli, sweep
from pairbench.analysis.load import load_run
from pairbench.contract.schema import COLUMNS


def read(run: Path) -> pd.DataFrame:
    return pd.read_csv(run / "data.csv", dtype=str, keep_default_na=False)


def test_sweep_writes_tidy_data_metadata_and_raw(tmp_path: Path) -> None:
    proc, run = sweep(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert run is not None and run.parent == tmp_path
    df = read(run)
    assert list(df.columns) == [*COLUMNS, "run_id", "repetition"]
    # 2 tests x 2 pair counts x 2 repetitions x 3 sizes x (pairs + aggregate) rows
    assert len(df) == 2 * 2 * 3 * ((1 + 1) + (2 + 1))
    assert set(df["run_id"]) == {run.name}
    assert set(df["repetition"]) == {"1", "2"}
    assert set(df["status"]) == {"ok"}
    load_run(run)  # validates against the contract
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "complete" and meta["run_id"] == run.name
    fp = meta["fingerprint"]
    for key in ("host", "kernel", "cpu", "numa", "rdma_devices", "rdma_core_version", "mpi",
                "pairbench_version", "git", "command_line"):
        assert key in fp
    # The load average at the start (fingerprint) and at the end: timing needs a quiet machine.
    for load in (fp["loadavg"], meta["loadavg_finished"]):
        assert set(load) == {"1min", "5min", "15min", "tasks"} and load["1min"] >= 0
    assert len(meta["points"]) == 8
    first = meta["points"][0]
    assert first["sides"][0]["argv"][0] == str(FAKE) and first["sides"][0]["exit_code"] == 0
    assert first["env_record"]["placement"][0]["pair"] == 0
    assert meta["pinning"]["r1-write_lat-p2"][1]["client_cpu"] == 3
    assert (run / "raw" / "r1-write_lat-p1.csv").is_file()
    assert (run / "raw" / "r2-write_bw-p2.stderr").is_file()
    assert not list(run.glob(".*tmp*"))  # atomic writes leave no temporaries


def test_sweep_never_overwrites(tmp_path: Path) -> None:
    _, run1 = sweep(tmp_path, reps="1", pairs="1", tests="write_lat")
    _, run2 = sweep(tmp_path, reps="1", pairs="1", tests="write_lat")
    assert run1 and run2 and run1 != run2
    proc = cli("sweep", "--layer", "verbs", "--test", "write_lat", "--binary", str(FAKE),
               "--run-dir", str(run1), "--no-progress")
    assert_clean_error(proc, "never overwritten")


def test_failed_point_becomes_error_rows_and_sweep_goes_on(tmp_path: Path) -> None:
    proc, run = sweep(tmp_path, reps="1",
                      env={"FAKE_PB_MODE": "fail", "FAKE_PB_FAIL_TEST": "write_bw"})
    assert proc.returncode == 1
    assert run is not None
    df = read(run)
    err = df[df["status"] == "error"]
    assert len(err) == 2 * 3  # both pair counts of write_bw, one row per requested size
    assert set(err["test"]) == {"write_bw"} and set(err["pair_id"]) == {"all"}
    assert sorted(err["msg_size_bytes"].astype(int).unique()) == [8, 64, 1024]
    assert all("exit 1 (runtime failure)" in e and "connect to peer failed" in e
               for e in err["error"])
    assert (df[df["test"] == "write_lat"]["status"] == "ok").all()  # went on
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "complete_with_errors" and meta["error_rows"] == 6


def test_fail_fast_stops_and_records_the_rest(tmp_path: Path) -> None:
    proc, run = sweep(tmp_path, "--fail-fast", reps="1", env={"FAKE_PB_MODE": "fail"})
    assert proc.returncode == 1 and run is not None
    df = read(run)
    assert (df["status"] == "error").all()
    assert len(df) == 4 * 3  # every planned point still has its rows
    assert df["error"].str.contains("--fail-fast").sum() == 3 * 3


def test_partial_output_and_error_rows_from_executable(tmp_path: Path) -> None:
    _, run = sweep(tmp_path, reps="1", pairs="1", tests="write_lat",
                   env={"FAKE_PB_MODE": "partial"})
    df = read(run)
    agg = df[df["pair_id"] == "all"].set_index("msg_size_bytes")
    assert agg.loc["8", "status"] == "ok"
    assert agg.loc["64", "status"] == "error" and "exit 1" in agg.loc["64", "error"]
    _, run = sweep(tmp_path, reps="1", pairs="1", tests="write_bw",
                   env={"FAKE_PB_MODE": "errorrow"})
    df = read(run)
    row = df[(df["pair_id"] == "all") & (df["msg_size_bytes"] == "1024")]
    assert list(row["status"]) == ["error"] and "RETRY_EXC" in row["error"].iloc[0]


def test_timeout_kills_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    proc, run = sweep(tmp_path, "--timeout", "1", reps="1", pairs="1", tests="write_lat",
                      env={"FAKE_PB_MODE": "slow", "FAKE_PB_SLEEP": "120",
                           "FAKE_PB_PIDFILE": str(pidfile)})
    assert proc.returncode == 1 and run is not None
    df = read(run)
    assert (df["status"] == "error").all() and len(df) == 3
    assert df["error"].str.contains("timed out after 1 s").all()
    for pid in map(int, pidfile.read_text().split()):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"process {pid} survived the timeout")


def test_cannot_run_here_and_garbage_output(tmp_path: Path) -> None:
    _, run = sweep(tmp_path, reps="1", pairs="1", tests="write_lat", env={"FAKE_PB_MODE": "skip"})
    df = read(run)
    assert df["error"].str.contains("exit 77 \\(cannot run here\\): .*no RDMA device").all()
    _, run = sweep(tmp_path, reps="1", pairs="1", tests="write_lat",
                   env={"FAKE_PB_MODE": "garbage"})
    df = read(run)
    assert (df["status"] == "error").all() and df["error"].str.contains("CSV|columns").all()


def test_binary_with_other_schema_is_rejected_before_start(tmp_path: Path) -> None:
    proc, run = sweep(tmp_path, env={"FAKE_PB_MODE": "badschema"})
    assert_clean_error(proc, "schema_version 9")
    assert run is None and not list(tmp_path.iterdir())


def test_missing_binary_and_missing_launcher(tmp_path: Path) -> None:
    proc = cli("sweep", "--layer", "mpi", "--test", "latency", "--binary",
               str(tmp_path / "nope"), "--results-dir", str(tmp_path))
    assert_clean_error(proc, "not found")
    proc = cli("sweep", "--layer", "mpi", "--test", "latency", "--binary", str(FAKE),
               "--launcher", "mpirun", "--launcher-cmd", "no-such-mpirun-xyz",
               "--results-dir", str(tmp_path))
    assert_clean_error(proc, "no-such-mpirun-xyz", "not found")
    proc = cli("sweep", "--layer", "verbs", "--test", "write_lat", "--launcher", "ssh",
               "--hosts", "onlyone", "--binary", str(FAKE), "--results-dir", str(tmp_path))
    assert_clean_error(proc, "--hosts A,B")
    assert not list(tmp_path.iterdir())


def test_unreachable_host_gives_error_rows(tmp_path: Path) -> None:
    log = tmp_path / "ssh.log"
    proc, run = sweep(tmp_path, "--launcher", "ssh", "--hosts", "nodeA.invalid,nodeB.invalid",
                      "--launcher-cmd", str(FAKE_SSH), reps="1", pairs="1", tests="write_lat",
                      env={"FAKE_SSH_LOG": str(log)})
    assert proc.returncode == 1 and run is not None
    df = read(run)
    assert (df["status"] == "error").all() and len(df) == 3
    assert df["error"].str.contains("exit 255").all()
    assert df["error"].str.contains("Could not resolve hostname").all()
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    assert {c[4] for c in calls} == {"nodeA.invalid", "nodeB.invalid"}


def test_softroce_boots_the_rig_once(tmp_path: Path) -> None:
    count = tmp_path / "boots"
    root = tmp_path / "repo"
    root.mkdir()
    env = {"PAIRBENCH_ROOT": str(root), "FAKE_RIG_COUNT": str(count)}
    proc = cli("sweep", "--layer", "verbs", "--test", "write_lat,read_lat", "--sizes", "8,64",
               "--pairs", "1,2", "--launcher", "softroce", "--launcher-cmd", str(FAKE_RIG),
               "--binary", str(FAKE), "--no-progress", env=env)
    assert proc.returncode == 0, proc.stderr
    run = Path(proc.stdout.strip().splitlines()[-1])
    assert run.parent == root / "results"
    assert len(count.read_text().splitlines()) == 1  # one boot for the whole sweep
    df = read(run)
    assert (df["status"] == "ok").all() and len(df) == 2 * 2 * (2 + 3)
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["fingerprint"]["rig"]["PB_RIG_MODE"] == "fake"  # recorded inside the rig
    assert meta["rig"]["exit_code"] == 0 and meta["rig"]["plan"] == "raw/rig-plan.json"
    # The rig ran the plan the host wrote (JSON in the run directory), not a rebuilt sweep
    # command line; the points it ran are the planned ones, argv for argv.
    assert meta["rig"]["argv"][-2:] == ["pairbench.runner.riginside",
                                        str(run / "raw" / "rig-plan.json")]
    plan = json.loads((run / "raw" / "rig-plan.json").read_text())
    assert [p["sides"][0]["argv"] for p in plan["points"]] == \
        [p["sides"][0]["argv"] for p in meta["points"]]
    assert meta["config"] == plan["config"] and meta["config"]["launcher"] == "softroce"
    assert meta["started"] == plan["meta"]["started"]
    assert meta["fingerprint"]["command_line"] == plan["command_line"]  # the user's command
    assert meta["rig"]["host_fingerprint"]["rig"]["PB_RIG_MODE"] is None
    # The guest runs the host's root file system and source tree: its software fields are
    # the host's, handed over in the plan, not asked again inside the (slow, emulated) guest.
    host = meta["rig"]["host_fingerprint"]
    assert plan["host_software"] == {k: host[k] for k in
                                     ("os", "rdma_core_version", "libibverbs_version", "mpi",
                                      "git")}
    assert meta["fingerprint"]["software_from"] == "host"
    assert all(meta["fingerprint"][k] == host[k] for k in plan["host_software"])
    assert "--loopback" in meta["points"][0]["sides"][0]["argv"]
    assert meta["pinning"]["r1-write_lat-p2"][1]["client_cpu"] == 3


def test_softroce_rig_failure_gives_error_rows(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    proc = cli("sweep", "--layer", "verbs", "--test", "write_lat", "--sizes", "8,64",
               "--launcher", "softroce", "--launcher-cmd", str(FAKE_RIG), "--binary", str(FAKE),
               "--no-progress", env={"PAIRBENCH_ROOT": str(root), "FAKE_RIG_MODE": "fail"})
    assert proc.returncode == 1
    run = Path(proc.stdout.strip().splitlines()[-1])
    df = read(run)
    assert (df["status"] == "error").all() and len(df) == 2
    assert df["error"].str.contains("rig exited 77").all()
    assert df["error"].str.contains("cannot boot").all()


def test_softroce_results_outside_repo_use_rwdir(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    count = tmp_path / "boots"
    proc = cli("sweep", "--layer", "verbs", "--test", "write_lat", "--sizes", "8",
               "--launcher", "softroce", "--launcher-cmd", str(FAKE_RIG), "--binary", str(FAKE),
               "--results-dir", str(tmp_path / "elsewhere"), "--no-progress",
               env={"PAIRBENCH_ROOT": str(root), "FAKE_RIG_COUNT": str(count)})
    assert proc.returncode == 0, proc.stderr
    run = Path(proc.stdout.strip().splitlines()[-1])
    assert run.parent == tmp_path / "elsewhere"
    rig_opts = count.read_text().split(" -- ")[0].split()
    assert rig_opts[rig_opts.index("--rwdir") + 1] == str(run)


def test_placement_key_and_the_keys_of_older_records(tmp_path: Path) -> None:
    """metadata.json "pinning" comes from the env record's "placement" (issue 12, contract
    3); a record made before it has the layer's own key (verbs "workers", MPI "ranks"),
    and the other layer's key is not guessed."""
    cases = (("verbs", "write_lat", "workers", True), ("mpi", "latency", "ranks", True),
             ("verbs", "write_lat", "ranks", False), ("mpi", "latency", "pinning", False))
    for layer, test, key, found in cases:
        proc, run = sweep(tmp_path / f"{layer}-{key}", layer=layer, tests=test, pairs="2",
                          reps="1", sizes="8", env={"FAKE_PB_ENV_KEY": key})
        assert proc.returncode == 0, proc.stderr
        meta = json.loads((run / "metadata.json").read_text())
        pinning = meta["pinning"][f"r1-{test}-p2"]
        if found:
            assert pinning == meta["points"][0]["env_record"][key]
            assert pinning[1]["client_cpu"] == 3
        else:
            assert pinning is None, (layer, key)


def test_rig_plan_runs_inside_with_sweep_errors(tmp_path: Path) -> None:
    """`python -m pairbench.runner.riginside PLAN`: a bad plan is one line and exit 2, as
    sweep's."""
    proc = subprocess.run([sys.executable, "-m", "pairbench.runner.riginside"],
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(SCRIPTS)}, check=False, timeout=60)
    assert proc.returncode == 2 and "usage" in proc.stderr
    bad = tmp_path / "plan.json"
    bad.write_text(json.dumps({"plan_version": 99}))
    proc = subprocess.run([sys.executable, "-m", "pairbench.runner.riginside", str(bad)],
                          capture_output=True, text=True, check=False, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(SCRIPTS)})
    assert_clean_error(proc, "rig plan")
