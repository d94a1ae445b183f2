"""Fault suite, the driver (issue 11, classes 4, 7, 9, 10 and 11): signals to the main PID of
`pairbench sweep`, a point that dies in the middle of a row, run directories that cannot be
created, mpirun's banner in the error column, values that must be refused.

Signals are sent for real to the sweep's PID (what `kill PID`, timeout(1) and schedulers do)
while a point runs, with the fake executable and with the real pairbench-mpi under mpirun;
each case checks the exit code, the record in metadata.json, the time to exit (a generous
bound, not a benchmark) and that no process of the point and no shm segment is left."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from faultlib import (
    MPI_BIN,
    leaked_shm,
    mpi_env,
    mpi_missing,
    pid_alive,
    processes_with,
    read_only_directory,
    shm_segments,
    stderr_lines,
)

from conftest import FAKE, REPO, SCRIPTS, assert_clean_error, cli, sweep
from pairbench.analysis.load import load_run
from pairbench.runner.collect import last_line

SPEC = REPO / "examples" / "accept-spec.toml"
EXIT_BOUND_S = 30.0  # kill grace (3 s) + start-up of Python; generous on a loaded machine


def start_sweep(results: Path, *args: str, env: dict[str, str] | None = None,
                ) -> subprocess.Popen:
    full = dict(os.environ)
    full["PYTHONPATH"] = str(SCRIPTS)
    full.update(env or {})
    return subprocess.Popen([sys.executable, "-m", "pairbench", "sweep", "--results-dir",
                             str(results), "--no-progress", *args], env=full,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(cond, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def run_dir_of(results: Path) -> Path:
    dirs = [d for d in results.iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_to_sweep_kills_the_point_and_records_interrupted(sig: signal.Signals,
                                                                  tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    results = tmp_path / "res"
    proc = start_sweep(results, "--layer", "verbs", "--test", "write_lat,write_bw",
                       "--sizes", "8,64", "--pairs", "1", "--binary", str(FAKE),
                       "--timeout", "120",
                       env={"FAKE_PB_MODE": "slow", "FAKE_PB_SLOW_TEST": "write_bw",
                            "FAKE_PB_SLEEP": "300", "FAKE_PB_PIDFILE": str(pidfile)})
    try:
        # The first point (write_lat) completes; the second (write_bw) sleeps.
        wait_for(lambda: pidfile.exists() and len(pidfile.read_text().split()) == 2, 60,
                 "the slow point to start")
        slow_pid = int(pidfile.read_text().split()[1])
        t0 = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=EXIT_BOUND_S + 30)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, err
    assert took < EXIT_BOUND_S, f"{took:.1f} s to exit"
    assert not pid_alive(slow_pid), "the running point's process survived"
    assert "Traceback" not in err and f"interrupted by {sig.name}" in err
    run = Path(out.strip().splitlines()[-1])
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "interrupted"
    assert meta["interrupted"]["signal"] == sig.name
    assert "write_bw" in meta["interrupted"]["point"]
    df = load_run(run)
    done = df[df["test"] == "write_lat"]
    assert len(done) and (done["status"] == "ok").all()  # completed rows kept
    cut = df[df["test"] == "write_bw"]
    assert (cut["status"] == "error").all() and sorted(cut["msg_size_bytes"]) == [8, 64]
    assert cut["error"].str.contains(f"interrupted by {sig.name}").all()
    assert processes_with(str(tmp_path)) == []


def test_signal_before_later_points_marks_them_not_run(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    results = tmp_path / "res"
    proc = start_sweep(results, "--layer", "verbs", "--test", "write_lat,write_bw,read_lat",
                       "--sizes", "8", "--pairs", "1,2", "--binary", str(FAKE),
                       env={"FAKE_PB_MODE": "slow", "FAKE_PB_SLOW_TEST": "write_bw",
                            "FAKE_PB_SLEEP": "300", "FAKE_PB_PIDFILE": str(pidfile)})
    try:
        wait_for(lambda: pidfile.exists() and len(pidfile.read_text().split()) == 3, 60,
                 "the slow point to start")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=EXIT_BOUND_S + 30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    df = load_run(Path(out.strip().splitlines()[-1]))
    later = df[df["test"] == "read_lat"]
    assert len(later) == 2 and later["error"].str.contains("not run: the sweep was "
                                                           "interrupted by SIGTERM").all()


def test_signal_to_sweep_with_real_mpirun(tmp_path: Path) -> None:
    why = mpi_missing()
    if why:
        pytest.skip(why)
    results = tmp_path / "res"
    shm_before = shm_segments()
    proc = start_sweep(results, "--layer", "mpi", "--test", "latency", "--sizes", "8",
                       "--pairs", "2", "--duration", "60", "--timeout", "120",
                       "--launcher", "mpirun", "--allow-oversubscribe",
                       "--binary", str(MPI_BIN), env=mpi_env())
    try:
        # The ranks carry the run directory in their argv (--output ...).
        wait_for(lambda: len([p for p in processes_with(str(results))
                              if "pairbench-mpi " in p[1] and "mpirun" not in p[1]]) >= 4,
                 120, "the 4 ranks to start")
        time.sleep(2.0)  # into the timed block
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=EXIT_BOUND_S + 30)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert took < EXIT_BOUND_S
    wait_for(lambda: processes_with(str(results)) == [], 10, "mpirun and the ranks to end")
    assert leaked_shm(shm_before) == []
    run = Path(out.strip().splitlines()[-1])
    assert json.loads((run / "metadata.json").read_text())["status"] == "interrupted"


def test_mpirun_banner_is_not_the_error(tmp_path: Path) -> None:
    """The error column carries pairbench's own first line, not mpirun's '-----' banner."""
    why = mpi_missing()
    if why:
        pytest.skip(why)
    proc = cli("sweep", "--layer", "mpi", "--test", "halo", "--sizes", "8", "--pairs", "1",
               "--launcher", "mpirun", "--allow-oversubscribe", "--binary", str(MPI_BIN),
               "--exe-arg=--halo-neighbours=6", "--results-dir", str(tmp_path),
               "--no-progress", env=mpi_env(), timeout=300)
    assert proc.returncode == 1, proc.stderr
    df = load_run(run_dir_of(tmp_path))
    err = df["error"].iloc[0]
    assert "exit 2 (invalid input): pairbench-mpi: error: invalid value for --halo-neighbours" \
        in err, err
    assert "---" not in err


def test_last_line_prefers_own_error_and_keeps_the_reason(tmp_path: Path) -> None:
    f = tmp_path / "stderr"
    huge = "A" * 10240
    f.write_text(f"pairbench-mpi: placement on vm\npairbench-mpi: error: invalid value for "
                 f"--pin-list: '{huge}' is not a PU list like 0,2,4-7\n" + "-" * 74 + "\n"
                 "Primary job  terminated normally, but 1 process returned\n" + "-" * 74 + "\n")
    line = last_line(f)
    assert line.startswith("pairbench-mpi: error: invalid value for --pin-list")
    assert line.endswith("is not a PU list like 0,2,4-7") and len(line) <= 300
    f.write_text("some tool said why\n" + "-" * 74 + "\n")
    assert last_line(f) == "some tool said why"


def test_a_job_dying_before_its_first_row_is_started_once_more(tmp_path: Path) -> None:
    """A job killed by a signal before it wrote a row (Open MPI 4.1.4's TCP BTL segfaults in
    MPI_Init now and then: twice in the Slurm sweep of test-all) is started again once, said
    on stderr, its first try kept (files and start_tries); the sweep then passes."""
    crashes = tmp_path / "crashes"
    crashes.write_text("1")
    proc, run = sweep(tmp_path, env={"FAKE_PB_MODE": "crashstart", "FAKE_PB_CRASHES":
                                     str(crashes)}, tests="write_lat", pairs="1", reps="1")
    assert proc.returncode == 0, proc.stderr
    assert run is not None
    assert "died before writing a row (killed by signal 11: " in proc.stderr
    assert "starting it again (try 2 of 2" in proc.stderr
    pts = json.loads((run / "metadata.json").read_text())["points"]
    assert [p["status"] for p in pts] == ["ok"]
    (first,) = pts[0]["start_tries"]
    assert first["try"] == 1 and first["exit_codes"] == [-11]
    assert "Process received signal" in first["reason"]
    assert list(run.glob("raw/*.stderr.try1")), list(run.glob("raw/*"))
    assert (load_run(run)["status"] == "ok").all()


def test_a_job_that_dies_before_its_first_row_again_gives_error_rows(tmp_path: Path) -> None:
    """Dying at start twice: error rows naming the signal, both tries in the record; a job
    that dies after writing rows (truncated, below) is never started again."""
    proc, run = sweep(tmp_path, env={"FAKE_PB_MODE": "crashstart"}, tests="write_lat",
                      sizes="8,64", pairs="1", reps="1")
    assert proc.returncode == 1 and run is not None, proc.stderr
    assert proc.stderr.count("starting it again") == 1
    df = load_run(run)
    assert (df["status"] == "error").all() and df["error"].str.contains("signal 11").all()
    pt = json.loads((run / "metadata.json").read_text())["points"][0]
    assert pt["status"] == "error" and len(pt["start_tries"]) == 1


def test_truncated_row_becomes_error_rows_and_the_run_stays_usable(tmp_path: Path) -> None:
    proc, run = sweep(tmp_path, env={"FAKE_PB_MODE": "truncated"}, tests="write_lat",
                      sizes="8,64,1K", pairs="1", reps="1")
    assert proc.returncode == 1, proc.stderr
    assert run is not None
    df = load_run(run)
    agg = df[df["pair_id"] == "all"].set_index("msg_size_bytes")
    assert agg.loc[8, "status"] == "ok"
    for size in (64, 1024):
        assert agg.loc[size, "status"] == "error"
        assert "killed by signal 9" in agg.loc[size, "error"]
        assert "truncated row" in agg.loc[size, "error"]
    assert (df["status"].isin(["ok", "error"])).all()
    # Each command's own answer on such a run: accept fails (error points fail their
    # criteria), compare is inconclusive (one repetition proves nothing: exit 3), report works.
    for args, code, says in (
            (["accept", str(run), "--spec", str(SPEC)], 1, "verdict: FAIL"),
            (["compare", str(run), str(run)], 3, "gate: INCONCLUSIVE"),
            (["report", str(run), "--out", str(tmp_path / "r.html")], 0, "report: ")):
        p = cli(*args)
        assert p.returncode == code, (args, p.returncode, p.stdout, p.stderr)
        assert says in p.stdout, (args, p.stdout)
        assert "Traceback" not in p.stderr
    assert "truncated row" in (tmp_path / "r.html").read_text()


def cut_last_row(src: Path, dst: Path, keep: float = 0.5) -> Path:
    """data.csv itself cut in its last row (the driver's run_id/repetition lost too)."""
    shutil.copytree(src, dst)
    text = (dst / "data.csv").read_text()
    lines = text.splitlines(keepends=True)
    last = lines[-1]
    (dst / "data.csv").write_text("".join(lines[:-1]) + last[: int(len(last) * keep)])
    return dst


def partial_row_from_old_driver(src: Path, dst: Path, line: int) -> Path:
    """What drivers before issue 11 wrote for a point that died mid-row: the executable's
    partial row (every cell from lat_us_p90 on empty, status too) with run_id and repetition
    filled in by the driver."""
    shutil.copytree(src, dst)
    df = pd.read_csv(dst / "data.csv", dtype=str, keep_default_na=False)
    cols = list(df.columns)
    cut = cols[cols.index("lat_us_p90"):cols.index("run_id")]
    df.loc[df.index[line], cut] = ""
    df.to_csv(dst / "data.csv", index=False)
    return dst


def test_truncated_row_on_disk_loads_as_error_row_with_warning(base_run: Path,
                                                               tmp_path: Path) -> None:
    n = len(load_run(base_run))
    run = partial_row_from_old_driver(base_run, tmp_path / "cut", n - 1)
    # accept: 1 as on base_run itself (the spec is not met by the fake's numbers); compare: 1,
    # the cut point failed in one repetition of the new run where the base never failed.
    for args, code, says in (
            (["accept", str(run), "--spec", str(SPEC)], 1, "verdict: FAIL"),
            (["compare", str(base_run), str(run)], 1, "NEW failed in 1 of 3 repetition(s)"),
            (["report", str(run), "--out", str(tmp_path / "r.html")], 0, "report: "),
            (["plot", str(run), "--out", str(tmp_path / "plots")], 0, "plot: ")):
        p = cli(*args)
        assert p.returncode == code, (args, p.returncode, p.stdout, p.stderr)
        assert says in p.stdout, (args, p.stdout)
        assert "truncated row" in p.stderr and "warning" in p.stderr
    df = load_run(run)
    assert len(df) == n and df["status"].iloc[-1] == "error"
    assert "truncated row" in df["error"].iloc[-1]


@pytest.mark.parametrize("keep", [0.02, 0.5, 0.9])
def test_file_cut_in_a_row_drops_that_row(keep: float, base_run: Path, tmp_path: Path) -> None:
    run = cut_last_row(base_run, tmp_path / "cut", keep=keep)
    p = cli("accept", str(run), "--spec", str(SPEC))
    assert "1 dropped" in p.stderr, p.stderr
    want = cli("accept", str(base_run), "--spec", str(SPEC))  # the same verdict, one row less
    assert p.returncode == want.returncode == 1, (p.returncode, want.returncode, p.stderr)
    assert len(load_run(run)) == len(load_run(base_run)) - 1


def test_genuinely_invalid_rows_are_still_rejected(base_run: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(base_run, bad)
    df = pd.read_csv(bad / "data.csv", dtype=str, keep_default_na=False)
    df.loc[df.index[2], "status"] = "bogus"
    df.to_csv(bad / "data.csv", index=False)
    assert_clean_error(cli("accept", str(bad), "--spec", str(SPEC)), "status 'bogus'")


def edited_copy(src: Path, dst: Path, edit) -> Path:
    shutil.copytree(src, dst)
    df = pd.read_csv(dst / "data.csv", dtype=str, keep_default_na=False)
    edit(df).to_csv(dst / "data.csv", index=False)
    return dst


def test_duplicated_rows_are_not_repetitions(base_run: Path, tmp_path: Path) -> None:
    dup = edited_copy(base_run, tmp_path / "dup",
                      lambda df: pd.concat([df, df.iloc[[5]]], ignore_index=True))
    assert_clean_error(cli("compare", str(base_run), str(dup)), "duplicated rows",
                       f"repeats line {5 + 2}")


@pytest.mark.parametrize("col", ["lat_us_p50", "bw_gbit_s"])
def test_negative_measurements_are_invalid(col: str, base_run: Path, tmp_path: Path) -> None:
    def neg(df: pd.DataFrame) -> pd.DataFrame:
        i = df.index[df[col] != ""][0]
        df.loc[i, col] = "-" + df.loc[i, col]
        return df
    bad = edited_copy(base_run, tmp_path / "neg", neg)
    assert_clean_error(cli("compare", str(base_run), str(bad)), "negative value", col)


def test_results_dir_that_is_a_file(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("keep")
    proc = cli("sweep", "--layer", "verbs", "--test", "write_lat", "--sizes", "8",
               "--binary", str(FAKE), "--results-dir", str(f), "--no-progress")
    assert_clean_error(proc, "--results-dir", "not a directory")
    assert f.read_text() == "keep"
    proc = cli("sweep", "--layer", "verbs", "--test", "write_lat", "--sizes", "8",
               "--binary", str(FAKE), "--results-dir", str(f / "sub"), "--no-progress")
    assert_clean_error(proc, "--results-dir")


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    with read_only_directory(tmp_path) as d:
        yield d


def test_results_dir_read_only(read_only_dir: Path) -> None:
    proc = cli("sweep", "--layer", "verbs", "--test", "write_lat", "--sizes", "8",
               "--binary", str(FAKE), "--results-dir", str(read_only_dir), "--no-progress")
    assert_clean_error(proc, "--results-dir", str(read_only_dir))
    proc = cli("sweep", "--layer", "verbs", "--test", "write_lat", "--sizes", "8",
               "--binary", str(FAKE), "--results-dir", str(read_only_dir / "sub"),
               "--no-progress")
    assert_clean_error(proc, "--results-dir", "Read-only file system"
                       if os.geteuid() == 0 else "Permission denied")


@pytest.mark.parametrize("args,needle", [
    (["--timeout", "nan"], "--timeout nan"),
    (["--timeout", "inf"], "--timeout inf"),
    (["--timeout", "0"], "--timeout 0"),
    (["--timeout", "-5"], "--timeout -5"),
    (["--sizes", "0"], "--sizes: message size 0 out of range"),
    (["--sizes", "8,2G"], "out of range"),
    (["--pairs", "100000"], "at most 256 pairs"),
    (["--duration", "nan"], "--duration nan"),
    (["--pin-list", "0,1"], "--pin-list is used only with --pin list"),
])
def test_bad_numbers_are_refused_before_anything_starts(args: list[str], needle: str,
                                                        tmp_path: Path) -> None:
    log = tmp_path / "argv.log"
    proc = cli("sweep", "--layer", "verbs", "--test", "write_lat", "--binary", str(FAKE),
               "--results-dir", str(tmp_path / "res"), "--no-progress", *args,
               env={"FAKE_PB_LOG": str(log)})
    assert_clean_error(proc, needle)
    assert not (tmp_path / "res").exists()
    assert not log.exists()  # nothing was started
    assert len(stderr_lines(proc.stderr)) == 1


def hanging_binary(tmp_path: Path, hang_on: str) -> Path:
    """An executable that never answers `hang_on` (--print-schema or --list-tests) and leaves
    a child of its own behind while it waits (the case of a wrapper script, or mpirun); any
    other option goes to the fake executable. Both pids land in tmp_path/hang.pids."""
    exe = tmp_path / "never-answers"
    exe.write_text(f"""#!/bin/sh
case " $* " in
*" {hang_on} "*)
	sleep 600 &
	echo $$ $! >"{tmp_path}/hang.pids"
	wait
	exit 0 ;;
esac
exec "{sys.executable}" "{FAKE}" "$@"
""")
    exe.chmod(0o755)
    return exe


def hang_pids(tmp_path: Path) -> list[int]:
    f = tmp_path / "hang.pids"
    return [int(x) for x in f.read_text().split()] if f.exists() else []


@pytest.mark.parametrize("hang_on", ["--print-schema", "--list-tests"])
def test_start_up_probe_is_bounded_by_timeout_and_leaves_no_process(hang_on: str,
                                                                    tmp_path: Path) -> None:
    """Issue 28.1: the probe of the executable (--print-schema, --list-tests) before the first
    point obeys --timeout and ends the probe's whole process group."""
    exe = hanging_binary(tmp_path, hang_on)
    t0 = time.monotonic()
    proc = cli("sweep", "--layer", "mpi", "--test", "latency", "-s", "8", "--binary", str(exe),
               "--timeout", "3", "--results-dir", str(tmp_path / "res"), "--no-progress",
               timeout=120)
    took = time.monotonic() - t0
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "start-up probe" in lines[0] and hang_on in lines[0], lines[0]
    assert "within 5 s" in lines[0], lines[0]  # --timeout 3, the probe's floor 5 s
    # Bounded, not fast: without the bound the hanging probe runs to this test's 120 s
    # deadline; on a loaded CI machine the 5 s probe and the sweep's start took 10.5 s.
    assert took < 60, took
    pids = hang_pids(tmp_path)
    assert len(pids) == 2
    wait_for(lambda: not any(pid_alive(p) for p in pids), 5, "the probe's processes to end")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_during_start_up_probe_ends_its_group(sig: signal.Signals,
                                                     tmp_path: Path) -> None:
    """Issue 28.1: a stop signal to the sweep while it probes the executable ends the probe's
    process group at once: exit 128+N, one line naming the probe, nothing left."""
    exe = hanging_binary(tmp_path, "--list-tests")
    proc = start_sweep(tmp_path / "res", "--layer", "mpi", "--test", "latency", "-s", "8",
                       "--binary", str(exe), "--timeout", "120")
    try:
        wait_for(lambda: len(hang_pids(tmp_path)) == 2, 60, "the probe to start")
        t0 = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=EXIT_BOUND_S + 30)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, err
    assert took < EXIT_BOUND_S
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"interrupted by {sig.name}" in lines[0], err
    assert "start-up probe" in lines[0], lines[0]
    pids = hang_pids(tmp_path)
    wait_for(lambda: not any(pid_alive(p) for p in pids), 5, "the probe's processes to end")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_during_fingerprint_ends_its_helper(sig: signal.Signals, tmp_path: Path) -> None:
    """Issue 26: the other start-up child before the first point, a fingerprint helper (here an
    lscpu that never answers), ends with the sweep on a stop signal: exit 128+N, the helper
    gone, the planned point recorded as not run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pidfile = tmp_path / "lscpu.pid"
    (bin_dir / "lscpu").write_text(f'#!/bin/sh\necho $$ > "{pidfile}"\nexec sleep 300\n')
    (bin_dir / "lscpu").chmod(0o755)
    results = tmp_path / "res"
    proc = start_sweep(results, "--layer", "verbs", "--test", "write_lat", "--sizes", "8",
                       "--pairs", "1", "--binary", str(FAKE), "--timeout", "120",
                       env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    try:
        wait_for(lambda: pidfile.exists() and pidfile.read_text().strip() != "", 60,
                 "the fingerprint's lscpu to start")
        helper = int(pidfile.read_text())
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=EXIT_BOUND_S + 30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err and f"interrupted by {sig.name}" in err, err
    wait_for(lambda: not pid_alive(helper), 5, "the fingerprint's helper to end")
    meta = json.loads((run_dir_of(results) / "metadata.json").read_text())
    assert meta["interrupted"]["signal"] == sig.name, meta.get("interrupted")
    df = load_run(run_dir_of(results))  # the planned point, recorded as not run
    assert (df["status"] == "error").all(), df[["status", "error"]]
    assert df["error"].str.contains(f"not run: the sweep was interrupted by {sig.name}").all()
