"""Soak on real pairbench-mpi runs (issue 36): a receiver stopped for about a second is found
as exactly that flow's stall, at the right time and length; a healthy soak has no stall; the
executable's row columns equal the driver's analysis of the same series (one definition).

How the stop is placed, and why these settings (docs/methodology.md "Soak"):
- 2 pairs on this 2-core machine that 4 other sessions share: the flows compete for CPU with
  each other and with everything else. A healthy flow's 0.2 s buckets were seen down to 30-45 %
  of its median here (never below 10 % when the ranks run at nice -10): so --stall-fraction
  0.2, not the default 0.5, and the ranks are started at nice -10 where the test may (root).
  What the test checks is the attribution of a stall, not this machine's scheduler.
- The receiver of pair 1 is stopped (SIGSTOP) 0.05 bucket after a bucket boundary and resumed
  (SIGCONT) 0.95 bucket into the fifth bucket after: the two partial buckets then hold ~5 % of
  a bucket's traffic, below the fraction, so the stall should cover exactly the 5 buckets the
  stop touched; the test asserts only "start and length within one bucket" of the stop as
  measured (CLOCK_MONOTONIC_RAW, the executable's clock), whatever the sleeps really did.
- The soak's start comes from the series file's header, written with the first buckets
  (about a second into the soak).
- The other pair shares the node barrier (at start and end) but not the stream: its flow
  must show no stall during the stop (it may even speed up: one rank fewer runs).
"""

from __future__ import annotations

import contextlib
import csv
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, cli
from pairbench.analysis import soak
from pairbench.contract import soakfile

MPI_BIN = Path(os.environ.get("PAIRBENCH_BIN_DIR", REPO / "build" / "bin")) / "pairbench-mpi"
BUCKET = 0.2
FRACTION = 0.2
ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def _need_mpi() -> None:
    if not MPI_BIN.is_file():
        pytest.skip(f"{MPI_BIN} is not built yet")
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not installed (apt-get install openmpi-bin)")
    if "--soak" not in subprocess.run([str(MPI_BIN), "--help"], capture_output=True, text=True,
                                      env=ENV, timeout=60, check=False).stdout:
        pytest.fail(f"{MPI_BIN} has no --soak: rebuild it")


def _nice() -> None:
    with contextlib.suppress(OSError):
        os.nice(-10)


def _start(tmp: Path, soak_s: float, *extra: str, env: dict | None = None,
           bucket: float = BUCKET) -> subprocess.Popen:
    argv = ["mpirun", "--oversubscribe", "-np", "4", str(MPI_BIN), "--test", "bw", "--pairs",
            "2", "-s", "64K", "--soak", f"{soak_s:g}", "--bucket", f"{bucket:g}",
            "--stall-fraction", f"{FRACTION:g}", "--series", str(tmp / "s"), "--pin", "none",
            "--allow-oversubscribe", "--timeout", "60", "-o", str(tmp / "rows.csv"), *extra]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**ENV, **(env or {})}, start_new_session=True,
                            preexec_fn=_nice)


def _finish(proc: subprocess.Popen, timeout: float = 120, rc: int = 0) -> str:
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        pytest.fail(f"the soak did not end in {timeout} s: {err[-2000:]}")
    assert proc.returncode == rc, err[-2000:]
    return err


def _rows(tmp: Path) -> dict[str, dict]:
    with open(tmp / "rows.csv") as f:
        return {r["pair_id"]: r for r in csv.DictReader(f)}


def _rank_pid(mpirun: int, rank: int, deadline: float) -> int:
    """The PID of MPI rank `rank` started by this mpirun (its OMPI_COMM_WORLD_RANK)."""
    want = f"OMPI_COMM_WORLD_RANK={rank}".encode()
    while time.monotonic() < deadline:
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if ppid == mpirun and want in (d / "environ").read_bytes().split(b"\0"):
                    return int(d.name)
            except (OSError, ValueError, IndexError):
                continue
        time.sleep(0.05)
    pytest.fail(f"rank {rank} of mpirun {mpirun} not found")


def _header_with_start(path: Path, deadline: float) -> soakfile.SoakHeader:
    """The series header once the first buckets are on file (it then holds the start)."""
    while time.monotonic() < deadline:
        if path.is_file() and path.stat().st_size > soakfile.HEADER_BYTES:
            h = soakfile.read_header(path)
            if h.start_ns:
                return h
        time.sleep(0.01)
    pytest.fail(f"{path}: no buckets written")


def _sleep_until_raw(t_ns: int) -> None:
    while True:
        left = t_ns - time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        if left <= 0:
            return
        time.sleep(min(left / 1e9, 0.05) if left > 2e6 else 0)


def _check_parity(tmp: Path, rows: dict[str, dict]) -> None:
    """The executable's columns = the driver's analysis of the same series files."""
    for pid in ("0", "1"):
        h = soakfile.read_header(tmp / f"s-65536B-pair{pid}.pbsoak")
        st = soak.flow_stats(soak.read_series(h), h.stall_fraction)
        r = rows[pid]
        assert int(r["soak_buckets"]) == st.buckets
        assert int(r["stalls"]) == len(st.stalls)
        assert float(r["longest_stall_s"]) == pytest.approx(st.longest * h.bucket_s)
        if st.stalls:
            assert float(r["first_stall_s"]) == pytest.approx(st.stalls[0].start_s(h.bucket_s))
        gbit = h.msg_size_bytes * 8 / h.bucket_s / 1e9
        assert float(r["bucket_gbit_s_p50"]) == pytest.approx(st.p50_msgs * gbit, rel=1e-8)
        # the CSV's cells carry 9 significant digits: relative, and absolute for a zero bucket
        assert float(r["bucket_gbit_s_min"]) == pytest.approx(st.min_msgs * gbit, rel=1e-8,
                                                              abs=1e-9)
        assert int(r["iterations"]) == st.sum_msgs  # every message is in some bucket


class Disturbed(Exception):
    """A try whose premise failed: a flow nobody stopped stalled, so the machine (2 cores
    shared with the rest of the suite: pytest workers, the VM lane) took the CPU away — the
    soak then shows the scheduler, which no rule can tell from a stop (seen in test-all:
    pair 0 stalled 0.2 s beside pair 1's stop; a healthy 3 s soak had a 0.1-share bucket)."""


TRIES = 5  # CI: 4 pytest workers and the VM lane on 2 cores disturbed 3 tries in a row


def _tries(tmp_path: Path, attempt) -> None:
    """attempt(dir) until one try is undisturbed (its asserts then decide), at most TRIES."""
    seen = []
    for i in range(TRIES):
        d = tmp_path / f"try{i}"
        d.mkdir()
        try:
            attempt(d)
            return
        except Disturbed as exc:
            seen.append(str(exc))
            print(f"try {i + 1} disturbed, once more: {exc}", file=sys.stderr)
    pytest.fail(f"every one of {TRIES} tries was disturbed: " + " | ".join(seen))


def test_stopped_receiver_is_that_flows_stall(tmp_path: Path) -> None:
    _need_mpi()
    _tries(tmp_path, _stopped_receiver)


def _stopped_receiver(tmp_path: Path) -> None:
    proc = _start(tmp_path, 5.0)
    try:
        deadline = time.monotonic() + 90
        h = _header_with_start(tmp_path / "s-65536B-pair1.pbsoak", deadline)
        victim = _rank_pid(proc.pid, 3, deadline)  # pair 1 = rank 1 <-> rank 3 (its receiver)
        b_ns = int(BUCKET * 1e9)
        now = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        k = (now - h.start_ns) // b_ns + 2  # a boundary at least one bucket ahead
        assert k + 6 < 5.0 / BUCKET, "the soak's first buckets came too late to stop it inside"
        _sleep_until_raw(h.start_ns + k * b_ns + b_ns // 20)
        t_stop = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        os.kill(victim, signal.SIGSTOP)
        _sleep_until_raw(h.start_ns + (k + 4) * b_ns + 19 * b_ns // 20)
        os.kill(victim, signal.SIGCONT)
        t_cont = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    err = _finish(proc)
    assert "pair 1: rank 1" in err and "<-> rank 3" in err, err[-2000:]
    rows = _rows(tmp_path)
    stop_s, stop_len = (t_stop - h.start_ns) / 1e9, (t_cont - t_stop) / 1e9
    h1 = soakfile.read_header(tmp_path / "s-65536B-pair1.pbsoak")
    st1 = soak.flow_stats(soak.read_series(h1), FRACTION)
    h0 = soakfile.read_header(tmp_path / "s-65536B-pair0.pbsoak")
    st0 = soak.flow_stats(soak.read_series(h0), FRACTION)
    what = (f"stop at {stop_s:.3f} s for {stop_len:.3f} s; pair 1 stalls "
            f"{[(s.start_s(BUCKET), s.length_s(BUCKET)) for s in st1.stalls]}, pair 0 stalls "
            f"{[(s.start_s(BUCKET), s.length_s(BUCKET)) for s in st0.stalls]}; pair 1 buckets "
            f"{soak.read_series(h1)['messages'].tolist()}")
    print(what, file=sys.stderr)
    stop_buckets = (stop_s - BUCKET, stop_s + stop_len + BUCKET)
    away = [x for x in st1.stalls if x.start_s(BUCKET) + x.length_s(BUCKET) <= stop_buckets[0]
            or x.start_s(BUCKET) >= stop_buckets[1]]
    if st0.stalls or away:  # a flow stalled that nobody stopped, or pair 1 away from its stop
        raise Disturbed(what)
    # exactly one stall in the stopped flow, where and as long as the stop
    assert len(st1.stalls) == 1, what
    s = st1.stalls[0]
    assert abs(s.start_s(BUCKET) - stop_s) <= BUCKET, what
    assert abs(s.length_s(BUCKET) - stop_len) <= BUCKET, what
    # the rows say the same
    assert int(rows["1"]["stalls"]) == 1
    assert float(rows["1"]["first_stall_s"]) == pytest.approx(s.start_s(BUCKET))
    assert float(rows["1"]["longest_stall_s"]) == pytest.approx(s.length_s(BUCKET))
    assert float(rows["1"]["min_bucket_share"]) < FRACTION
    # the other flow did not stall while the receiver of pair 1 was stopped
    for o in st0.stalls:
        assert o.start_s(BUCKET) >= stop_s + stop_len or \
            o.start_s(BUCKET) + o.length_s(BUCKET) <= stop_s, what
    assert int(rows["all"]["stalled_pairs"]) == 1 + (len(st0.stalls) > 0)
    _check_parity(tmp_path, rows)


# The healthy soak's buckets: 0.5 s. With 0.2 s buckets the fresh-clone test-all at a90f9ad
# (4 pytest workers and the VM lane on 2 cores) disturbed all 5 tries: the 4 ranks lost the CPU
# for 0.13-0.2 s at a time (min_bucket_share 0-0.36). A bucket of 0.5 s falls below the 0.2
# fraction only when its flow got no CPU for over 0.4 s of it; the code's rule is the same.
HEALTHY_BUCKET = 0.5
HEALTHY_SOAK = 5.0


def test_healthy_soak_has_no_stall(tmp_path: Path) -> None:
    """A stall here is either the code (every try stalls) or the machine (a try now and then):
    five tries, any one without a stall passes; the other checks hold on every try."""
    _need_mpi()
    _tries(tmp_path, _healthy)


def _healthy(tmp_path: Path) -> None:
    proc = _start(tmp_path, HEALTHY_SOAK, bucket=HEALTHY_BUCKET)
    _finish(proc)
    rows = _rows(tmp_path)
    shares = {p: rows[p]["min_bucket_share"] for p in ("0", "1")}
    n = int(HEALTHY_SOAK / HEALTHY_BUCKET)
    assert int(rows["all"]["soak_buckets"]) == n
    if rows["all"]["stalls"] != "0":
        raise Disturbed(f"stalls in a healthy soak; min_bucket_share {shares}")
    assert rows["all"]["stalls"] == "0", f"stalls in a healthy soak; min_bucket_share {shares}"
    assert rows["all"]["stalled_pairs"] == "0"
    assert "soak_partial" not in rows["all"]["flags"]
    _check_parity(tmp_path, rows)


def test_soft_stop_keeps_a_partial_soak(tmp_path: Path) -> None:
    """SIGUSR1 (what the driver sends on Ctrl-C or at its deadline) ends the soak at its next
    window; the rows are written, flagged soak_partial, over the buckets measured."""
    _need_mpi()
    proc = _start(tmp_path, 60.0)
    try:
        _header_with_start(tmp_path / "s-65536B-pair0.pbsoak", time.monotonic() + 90)
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGUSR1)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    _finish(proc, timeout=60)
    rows = _rows(tmp_path)
    assert all("soak_partial" in r["flags"].split(";") for r in rows.values())
    assert 5 <= int(rows["all"]["soak_buckets"]) < int(60 / BUCKET)
    h = soakfile.read_header(tmp_path / "s-65536B-pair0.pbsoak")
    assert h.complete and h.partial


def test_live_validation_checks_every_window_without_a_fault(tmp_path: Path) -> None:
    _need_mpi()
    _finish(_start(tmp_path, 1.0, "--validate-live", "1"))
    rows = _rows(tmp_path)
    assert all(r["status"] == "ok" for r in rows.values())
    for pid in ("0", "1"):
        h = soakfile.read_header(tmp_path / f"s-65536B-pair{pid}.pbsoak")
        b = soak.read_series(h)
        assert b["checked"].sum() > 0 and b["corrupt"].sum() == 0


def test_planted_corruption_is_found_in_its_flow_and_bucket(tmp_path: Path) -> None:
    """PAIRBENCH_SOAK_FAULT flips one byte of pair 1's first checked message at or after
    1.0 s: that pair's row is an error that says so (exit 1), the bucket of the series that
    holds it counts exactly one corrupt message, and pair 0 has none."""
    _need_mpi()
    err = _finish(_start(tmp_path, 2.0, "--validate-live", "1",
                         env={"PAIRBENCH_SOAK_FAULT": "flip:1:1.0"}), rc=1)
    assert "DATA CORRUPTED under load" in err, err[-2000:]
    rows = _rows(tmp_path)
    assert rows["0"]["status"] == "ok"
    assert rows["1"]["status"] == "error" and "DATA CORRUPTED" in rows["1"]["error"]
    assert "1 of " in rows["1"]["error"]
    b1 = soak.read_series(soakfile.read_header(tmp_path / "s-65536B-pair1.pbsoak"))
    b0 = soak.read_series(soakfile.read_header(tmp_path / "s-65536B-pair0.pbsoak"))
    assert b0["corrupt"].sum() == 0 and b0["checked"].sum() > 0
    (where,) = np.flatnonzero(b1["corrupt"])
    assert b1["corrupt"].sum() == 1
    # the flip happens at the first check at or after 1.0 s: in bucket 5 (1.0-1.2 s) or, on
    # a busy machine, a little later; never before
    assert where >= int(1.0 / BUCKET), b1["corrupt"].tolist()
    assert f"(bucket {where};" in rows["1"]["error"]


def test_soak_usage_errors() -> None:
    _need_mpi()
    for args, needle in ((["--test", "latency", "--soak", "1"], "bandwidth and message-rate"),
                         (["--test", "bw", "--soak", "1.05"], "whole number"),
                         (["--test", "bw", "--bucket", "0.5"], "add --soak"),
                         (["--test", "bw", "--soak", "2", "-n", "100"], "drop -n"),
                         (["--test", "bw", "--validate-live", "4"], "add --soak")):
        p = subprocess.run(["mpirun", "-np", "2", str(MPI_BIN), *args], capture_output=True,
                           text=True, env=ENV, timeout=120, check=False)
        assert p.returncode == 2, (args, p.stderr[-1000:])
        assert needle in p.stderr, (args, p.stderr[-1000:])


def test_driver_soak_usage_errors(tmp_path: Path) -> None:
    for args, needle in ((["--soak", "2", "--bucket", "0.3"], "whole number"),
                         (["--bucket", "0.5"], "add --soak"),
                         (["--soak", "2", "-n", "10"], "drop -n"),
                         (["--layer", "verbs", "--test", "write_lat", "--soak", "2"],
                          "tests of --layer verbs (write_bw, read_bw, send_bw), not --test "
                          "write_lat"),
                         (["--soak", "2", "--test", "latency"], "not --test latency")):
        layer = [] if "--layer" in args else ["--layer", "mpi"]
        test = [] if "--test" in args else ["--test", "bw"]
        p = cli("sweep", *layer, *test, *args, "--results-dir", str(tmp_path),
                "--no-progress")
        assert p.returncode == 2, (args, p.stderr[-1000:])
        assert needle in p.stderr and "Traceback" not in p.stderr, (args, p.stderr[-1000:])


def test_verbs_validate_live_usage_errors() -> None:
    """pairbench-verbs checks data under load where the receiver of the data has a completion
    that says it landed (read_bw's client, send_bw's server: verbs/vb_soak.h); the rest exits
    2 naming why, before any device is opened."""
    vb = MPI_BIN.with_name("pairbench-verbs")
    if not vb.is_file():
        pytest.skip(f"{vb} is not built yet")
    for args, needle in (
            (["--test", "write_bw"], "write_bw's receiver sees no completion"),
            (["--test", "send_bw", "--buffers", "peer"], "with --buffers fresh"),
            (["--test", "send_bw", "--pattern", "incast", "--pattern-hosts", "/dev/null"],
             "--validate-live with send_bw: pairs on a node or two nodes only"),
            (["--test", "read_bw", "--bidir"], "--soak with --bidir")):
        p = subprocess.run([str(vb), *args, "--soak", "1", "--validate-live", "1"],
                           capture_output=True, text=True, timeout=60, check=False)
        assert p.returncode == 2, (args, p.stderr[-1000:])
        assert needle in p.stderr, (args, p.stderr[-1000:])
