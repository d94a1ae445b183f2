"""The verbs batch's one row checker (tests/verbs/check_rows.py --serve, client check_rows in
tests/verbs/vb-common.sh): it gives every test the verdict and the messages a process of its
own would, survives a bad request, answers clients at once each with its own reply, and the
client falls back to a process of its own when the server is gone."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FAKE, REPO

CHECK = REPO / "tests" / "verbs" / "check_rows.py"
COMMON = REPO / "tests" / "verbs" / "vb-common.sh"


@pytest.fixture
def csvs(tmp_path: Path) -> dict[str, Path]:
    good = tmp_path / "good.csv"
    subprocess.run([sys.executable, str(FAKE), "--test", "write_lat", "--sizes", "8,4K",
                    "--pairs", "2", "-o", str(good)], check=True, timeout=60,
                   capture_output=True, env={**os.environ, "FAKE_PB_LAYER": "verbs"})
    rows = list(csv.DictReader(good.open()))
    bad = tmp_path / "bad.csv"
    with bad.open("w", newline="") as f:  # pair 1's row at 8 B is gone
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(r for r in rows if not (r["pair_id"] == "1" and r["msg_size_bytes"] == "8"))
    return {"good": good, "bad": bad}


def args(csv_path: Path, *extra: str) -> list[str]:
    return ["--binary", str(FAKE), "--csv", str(csv_path), "--test", "write_lat", "--pairs", "2",
            "--sizes", "8,4096", *extra]


def direct(argv: list[str]) -> tuple[int, str]:
    p = subprocess.run([sys.executable, "-I", "-S", str(CHECK), *argv], capture_output=True,
                       text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def client(argv: list[str], env: dict[str, str], work: Path) -> subprocess.Popen:
    work.mkdir(exist_ok=True)
    script = f'work={work}; fail() {{ exit 99; }}; . {COMMON}; check_rows "$@"'
    return subprocess.Popen(["bash", "-c", script, "check", *argv], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def served(argv: list[str], env: dict[str, str], work: Path) -> tuple[int, str]:
    p = client(argv, env, work)
    out, err = p.communicate(timeout=60)
    return p.returncode, out + err


@pytest.fixture
def server(tmp_path: Path):
    fifo = tmp_path / "check-rows"
    proc = subprocess.Popen([sys.executable, "-I", "-S", str(CHECK), "--serve", str(fifo)],
                            stderr=subprocess.PIPE, text=True)
    for _ in range(200):
        if fifo.exists():
            break
        time.sleep(0.05)
    env = {**os.environ, "PB_CHECK_ROWS_FIFO": str(fifo), "PB_CHECK_ROWS_PID": str(proc.pid)}
    yield proc, env
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=10)


def test_served_verdicts_are_the_direct_ones(csvs, server, tmp_path: Path) -> None:
    proc, env = server
    cases = [args(csvs["good"]), args(csvs["bad"]), args(csvs["good"], "--qps", "8"),
             args(tmp_path / "missing.csv"), ["--pairs", "two"],  # usage error: argparse's 2
             args(csvs["good"], "--devices", "a,b"),  # --devices without --env-json
             args(csvs["good"])]  # the server outlived the bad requests
    for i, argv in enumerate(cases):
        want = direct(argv)
        got = served(argv, env, tmp_path / f"w{i}")
        assert got == want, argv
        assert "no answer" not in got[1]
    assert [direct(c)[0] for c in cases] == [0, 1, 1, 1, 2, 1, 0]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert f"answered {len(cases)} request(s), 5 failed" in err


def test_clients_at_once_each_get_their_own_answer(csvs, server, tmp_path: Path) -> None:
    _, env = server
    which = ["good", "bad"] * 4
    procs = [client(args(csvs[w]), env, tmp_path / f"c{i}") for i, w in enumerate(which)]
    results = [p.communicate(timeout=60) for p in procs]
    for w, p, (_out, err) in zip(which, procs, results, strict=True):
        assert p.returncode == (0 if w == "good" else 1)
        assert ("6 rows OK" in err) == (w == "good"), err


def test_without_a_live_server_the_client_checks_in_a_process_of_its_own(
        csvs, server, tmp_path: Path) -> None:
    proc, env = server
    proc.kill()
    proc.wait(timeout=10)
    # served() allows 60 s: the client must see the dead PID, not wait 120 s for an answer
    assert served(args(csvs["bad"]), env, tmp_path / "w") == direct(args(csvs["bad"]))
    no_fifo = {**env, "PB_CHECK_ROWS_FIFO": str(tmp_path / "none")}
    assert served(args(csvs["good"]), no_fifo, tmp_path / "w2") == direct(args(csvs["good"]))


# The server as `--serve` runs it, but every os.open of a FIFO waits 2 s first (a server the
# scheduler set aside between making its FIFO and opening it), and it pauses 1 s after each
# answer is out (set aside before it counted the answer: the client, which has it, may stop
# the server at once; the count it prints must include that answer).
SLOW_OPEN = """
import builtins, os, stat, sys, time
sys.path.insert(0, sys.argv[1])
def is_fifo(path):
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except (OSError, TypeError, ValueError):
        return False
real_open = os.open
def slow_open(path, flags, *rest):
    if is_fifo(path):
        time.sleep(2)
    return real_open(path, flags, *rest)
os.open = slow_open
real_builtin_open = builtins.open
class PausedAfterClose:
    def __init__(self, f):
        self.f = f
    def __enter__(self):
        return self.f
    def __exit__(self, *exc):
        self.f.close()
        time.sleep(1)
def reply_open(path, *a, **k):
    f = real_builtin_open(path, *a, **k)
    writes = "w" in (a[0] if a else k.get("mode", "r"))
    return PausedAfterClose(f) if writes and is_fifo(path) else f
builtins.open = reply_open
import check_rows
sys.exit(check_rows.serve(sys.argv[2]))
"""


def test_a_request_sent_as_soon_as_the_fifo_appears_is_answered(csvs, tmp_path: Path) -> None:
    # A request written to a FIFO that no reader holds open is lost when its writer closes
    # it; the client then waits 120 s.  The FIFO must not appear before the server holds it.
    fifo = tmp_path / "check-rows"
    proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", SLOW_OPEN, str(CHECK.parent),
                             str(fifo)], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not fifo.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert fifo.exists(), "the server never made its FIFO"
        env = {**os.environ, "PB_CHECK_ROWS_FIFO": str(fifo), "PB_CHECK_ROWS_PID": str(proc.pid)}
        p = client(args(csvs["good"]), env, tmp_path / "w")
        try:
            _out, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        assert p.returncode == 0, err
        assert "6 rows OK" in err
    finally:
        proc.send_signal(signal.SIGTERM)
        _, serr = proc.communicate(timeout=10)
    assert "answered 1 request(s), 0 failed" in serr  # the server answered it, not a fallback

