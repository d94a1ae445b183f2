#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Runs pairbench-mpi under mpirun (one node) or scripts/two-node-netns (two
emulated nodes) and checks what came out: schema-valid rows, sane values,
the pairing, no leaked shm segment, exit codes of the error paths.

Python standard library only.  Exit 0 = pass, 1 = fail, 77 = cannot run here.
Never asserts a speed: `b2b` checks how each mode derives its figures and prints
both timings (their ordering on a slow link, the --back-to-back caveat, is a
measurement, not a test: docs/mpi.md).
"""
import argparse
import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))  # rowcheck
sys.path.insert(0, str(Path(__file__).resolve().parent))  # mpi_env, also under python3 -I

import itertools

import rowcheck
from mpi_env import env_for_mpi, run_in_own_ipc_namespace, settled, shm_segments

from pairbench.contract import testtable
from pairbench.errors import UsageError

SKIP = 77
TABLE = testtable.load_snapshot()["mpi"]
# Bandwidth tests whose -n N is N per direction (iterations = 2N): a property the
# test table does not hold (yet).
BOTH_DIRECTIONS = {"bibw"}


class Fail(Exception):
    pass


def check_no_leak(before: dict) -> None:
    """A segment created during the run whose creator is gone leaked (still there after
    mpi_env.settled's bound: a just-ended job's ranks may still be detaching)."""
    def gone_creators() -> list:
        return [(shmid, cpid) for shmid, (cpid, _mode, _nattch) in shm_segments().items()
                if shmid not in before and not os.path.exists(f"/proc/{cpid}")]
    for shmid, cpid in settled(gone_creators):
        raise Fail(f"shm segment {shmid} (creator pid {cpid}, exited) still exists: leaked")


def launcher(a, np_: int) -> list:
    if a.two_node:
        return [a.netns, "run", "--np", str(np_), "--"]
    return ["mpirun", "--oversubscribe", "-np", str(np_)]


def run(a, np_: int, args: list, timeout: float) -> subprocess.CompletedProcess:
    cmd = [*launcher(a, np_), a.bin, *args]
    print("+ " + " ".join(cmd), file=sys.stderr)
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=env_for_mpi())
    except subprocess.TimeoutExpired as e:
        raise Fail(f"timed out after {timeout} s: {' '.join(cmd)}") from e


def schema(a) -> list:
    try:
        return rowcheck.schema_columns(a.bin)
    except UsageError as e:
        raise Fail(str(e)) from e


def check_rows(a, text: str, cols: list, test: str, pairs: int, sizes: int) -> list:
    """The one row checker (tests/support/rowcheck.py), then what this run adds:
    the row count, -n N as the ranks' count, hosts and peers."""
    info = TABLE[test]
    reader = csv.DictReader(io.StringIO(text))
    bad = rowcheck.check_header(reader.fieldnames, cols)
    if bad:
        raise Fail(bad[0])
    rows = list(reader)
    if len(rows) != sizes * (pairs + 1):
        raise Fail(f"expected {sizes} x ({pairs} + 1) rows, got {len(rows)}")
    bad = rowcheck.check_rows(rows, info, "mpi", pairs)
    if bad:
        raise Fail("; ".join(bad))
    extra = getattr(a, "extra", [])
    block = any(x == "--timing" and y == "block" for x, y in itertools.pairwise(extra))
    for r in rows:
        where = f"row {r['msg_size_bytes']} B pair {r['pair_id']}"
        if block and not (rowcheck.block_timed(r) and r["lat_us_mean"] and not r["lat_us_p50"]):
            raise Fail(f"{where}: --timing block, but the row is not block-timed (flags "
                       f"{r['flags']!r}, p50 {r['lat_us_p50']!r}, mean {r['lat_us_mean']!r})")
        if r["pair_id"] != "all" and not r["host"]:
            raise Fail(f"{where}: no host")
        if r["pair_id"] != "all" and info.pairwise and not r["peer"]:
            raise Fail(f"{where}: no peer")
        check_count(a, r, info)
    return rows


def check_count(a, r: dict, info: testtable.TestInfo) -> None:
    """-n N is what every rank of a collective ran, and per bandwidth pair N messages per
    direction (bibw: iterations = 2N, like verbs --bidir).  Without -n (--iterations 0) the
    point ran for a time (docs/methodology.md "Windows"): bandwidth and message rate one
    common window of 0.2 s, latency the target (0.1 s and at least 1,000 samples per pair),
    collectives and halo the default count; rowcheck checked that it lasted its window."""
    n = getattr(a, "iterations", None)
    if n == 0 and "--duration" not in getattr(a, "extra", []):
        _check_default_window(r, info)
        return
    if not n or "--duration" in getattr(a, "extra", []):
        return
    where = f"row {r['msg_size_bytes']} B pair {r['pair_id']}"
    if not info.pairwise and int(r["iterations"]) != n:
        raise Fail(f"{where}: ranks ran {r['iterations']} iterations, -n was {n}")
    if info.name in BOTH_DIRECTIONS and r["pair_id"] != "all" \
            and int(r["iterations"]) != 2 * n:
        raise Fail(f"{where}: {info.name} iterations {r['iterations']}, expected 2 x -n = "
                   f"{2 * n}")


def _check_default_window(r: dict, info: testtable.TestInfo) -> None:
    where = f"row {r['msg_size_bytes']} B pair {r['pair_id']}"
    want = ("count", "") if not info.pairwise else \
        ("window", "0.2") if info.kind in testtable.BANDWIDTH_KINDS else \
        ("target", "0.2" if info.kind == testtable.LOADED_KIND else "0.1")
    if (r["window_method"], r["window_s"]) != want:
        raise Fail(f"{where}: timed by {r['window_method']} {r['window_s']!r}, expected "
                   f"{want[0]} {want[1]!r} at the defaults")
    if r["window_method"] == "count" and r["pair_id"] == "all" and int(r["iterations"]) != 1000:
        raise Fail(f"{where}: default count {r['iterations']}, expected 1000")
    if r["window_method"] == "target" and r["pair_id"] != "all" and r["lat_us_p50"] \
            and int(r["iterations"]) < 1000:
        raise Fail(f"{where}: {r['iterations']} latency samples, expected >= 1000")


def check_pairing(env: dict, test: str, pairs: int, cross: bool) -> None:
    if "Open MPI" not in env.get("mpi_library", ""):
        raise Fail(f"env record: mpi_library missing: {env.get('mpi_library')!r}")
    ranks = env.get("placement")  # contract 3 of issue 12 (records before it: "ranks")
    if not isinstance(ranks, list):
        raise Fail("env record: no placement list")
    if not TABLE[test].pairwise:
        if cross and len({r["node"] for r in ranks}) != 2:
            raise Fail("collective across nodes: ranks are not on two nodes")
        return
    a_sides = [r for r in ranks if r["role"] == "A"]
    if len(a_sides) != pairs:
        raise Fail(f"env record: {len(a_sides)} A sides, expected {pairs}")
    for r in a_sides:
        b = ranks[r["peer"]]
        if r["node"] != 0:
            raise Fail(f"pair {r['pair']}: measuring side not on node 0")
        if cross != (b["node"] != r["node"]):
            where = "cross" if cross else "intra"
            raise Fail(f"pair {r['pair']}: rank {r['rank']} node {r['node']} <-> rank "
                       f"{b['rank']} node {b['node']}: expected {where}-node")


def cmd_run(a) -> None:
    cols = schema(a)
    pairs = a.np // 2 if TABLE[a.test].pairwise else a.np
    sizes = a.sizes.split(",") if a.sizes else ["0"]
    with tempfile.TemporaryDirectory(prefix="pb-mpi-") as d:
        out, envf = os.path.join(d, "rows.csv"), os.path.join(d, "env.json")
        count = ["-n", str(a.iterations)] if a.iterations else []  # 0: the default (a time)
        args = ["--test", a.test, *count, "-w", "5", "--timeout", "60",
                "-o", out, "--env-json", envf] + (["-s", a.sizes] if a.sizes else [])
        args += ["--pin", "none"] if a.two_node else ["--allow-oversubscribe"]
        args += a.extra
        before = shm_segments()
        p = run(a, a.np, args, a.timeout)
        sys.stderr.write(p.stderr)
        if p.returncode != 0:
            raise Fail(f"exit {p.returncode}")
        check_no_leak(before)
        with open(out) as f:
            rows = check_rows(a, f.read(), cols, a.test, pairs, len(sizes))
        with open(envf) as f:
            check_pairing(json.load(f), a.test, pairs, a.two_node)
        if TABLE[a.test].pairwise:
            want = "cross-node" if a.two_node else "intra-node"
            if p.stderr.count(want) != pairs:
                raise Fail(f"stderr shows {p.stderr.count(want)} {want} pairs, expected {pairs}")
    print(f"ok: {a.test} np={a.np} {'two nodes' if a.two_node else 'one node'}: {len(rows)} rows")


def cmd_badopt(a) -> None:
    cases = [(["--test", "latency", "-s", "0"], 2), (["--test", "nosuch"], 2),
             (["--test", "latency", "--window", "x"], 2), (["--halo-neighbours", "6"], 2),
             (["--test", "barrier", "-s", "8"], 2), (["--test", "latency", "--pairs", "3"], 2),
             (["--test", "latency", "--buffers", "reuse"], 2),
             (["--test", "allreduce", "--buffers", "peer"], 2),
             (["--test", "msgrate", "--ack-each-window"], 2),
             (["--test", "latency", "--timing", "sometimes"], 2),
             (["--test", "bw", "--timing", "block"], 2),
             (["--test", "latency", "--timing", "block", "--duration", "0.2"], 2),
             # issue 37: -n/-D with a time option of the default timing (was ignored)
             (["--test", "latency", "-n", "10", "--lat-seconds", "1"], 2),
             (["--test", "bw", "-D", "0.2", "--bw-seconds", "1"], 2),
             (["--test", "latency", "-n", "10", "--lat-samples", "50"], 2)]
    for args, want in cases:
        p = run(a, 2, args, 60)
        errs = [ln for ln in p.stderr.splitlines() if "pairbench-mpi: error:" in ln]
        if p.returncode != want or len(errs) != 1:
            raise Fail(f"{args}: exit {p.returncode} (want {want}), {len(errs)} error lines "
                       f"(want 1):\n{p.stderr}")
        print(f"ok: {args} -> exit {want}: {errs[0]}")
    p = run(a, 3, ["--test", "latency", "-s", "8", "-n", "10", "--allow-oversubscribe"], 60)
    errs = [ln for ln in p.stderr.splitlines() if "pairbench-mpi: error:" in ln]
    if p.returncode != 2 or len(errs) != 1 or "even number of ranks" not in errs[0]:
        raise Fail(f"3 ranks: exit {p.returncode}, errors {errs}")
    print(f"ok: 3 ranks -> exit 2: {errs[0]}")


def find_ranks(marker: str) -> list:
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"pairbench-mpi") and marker.encode() in argv:
            pids.append(int(pid))
    return sorted(pids)


def cmd_fault(a) -> None:
    """kill: SIGKILL one rank; hang: SIGSTOP one rank (the watchdog must end the job)."""
    with tempfile.TemporaryDirectory(prefix="pb-mpi-") as d:
        marker = os.path.join(d, "rows.csv")
        deadline = 5.0
        # --startup-timeout too: on a loaded machine the victim can still be inside MPI_Init
        # a second after both ranks exist (CI: 4 checkers, pytest and a VM on 2 cores), where
        # only the start-up deadline (60 s by default) would end the job.
        cmd = [*launcher(a, 2), a.bin, "--test", "latency", "-s", "8", "-n", "1000000000",
               "-w", "0", "--timeout", str(deadline), "--startup-timeout", str(deadline),
               "-o", marker, "--allow-oversubscribe"]
        before = shm_segments()
        print("+ " + " ".join(cmd), file=sys.stderr)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env_for_mpi())
        pids = []
        for _ in range(100):
            pids = find_ranks(marker)
            if len(pids) == 2:
                break
            time.sleep(0.1)
        if len(pids) != 2:
            proc.kill()
            raise Fail(f"could not find the 2 ranks (found {pids})")
        time.sleep(1.0)
        victim = pids[-1]
        t0 = time.monotonic()
        os.kill(victim, signal.SIGKILL if a.mode == "kill" else signal.SIGSTOP)
        try:
            _, err = proc.communicate(timeout=deadline + 25)
        except subprocess.TimeoutExpired:
            proc.kill()
            if a.mode == "hang":
                os.kill(victim, signal.SIGKILL)
            raise Fail(f"{a.mode}: the job did not end within {deadline + 25} s") from None
        took = time.monotonic() - t0
        if a.mode == "hang" and os.path.exists(f"/proc/{victim}"):
            os.kill(victim, signal.SIGKILL)
        sys.stderr.write(err[-3000:])
        if proc.returncode == 0:
            raise Fail(f"{a.mode}: job exited 0")
        if a.mode == "hang" and not re.search(r"did not finish within (--timeout|the start-up "
                                              r"deadline)", err):
            raise Fail("hang: no watchdog message")
        time.sleep(0.5)
        check_no_leak(before)
    print(f"ok: {a.mode} of rank pid {victim}: job ended with exit {proc.returncode} "
          f"in {took:.1f} s")


def cmd_b2b(a) -> None:
    """Rotating-root bcast on two nodes, barrier-separated and back-to-back (IMB -sync off):
    the two modes differ in what they report, as docs/mpi.md defines them. Back-to-back:
    variant back_to_back, a rank's mean is exactly its total / N (mean x iterations =
    duration), and the aggregate's min / mean / max are the min / mean / max of the ranks'
    means (IMB's t_min / t_avg / t_max). Barrier-separated: no variant, the aggregate's
    sample i is the slowest rank's call i, so its max is the ranks' largest sample and its
    min is at least every rank's own min. Both timings are printed;
    which is smaller depends on the link and the load, so it is not asserted."""
    rows = {}
    for variant in ("", "--back-to-back"):
        args = ["--test", "bcast", "--root-rotate", "-s", "8", "-n", "40", "-w", "5", "--pin",
                "none", "-q", "--timeout", "60"] + ([variant] if variant else [])
        p = run(a, 4, args, a.timeout)
        if p.returncode != 0:
            raise Fail(f"bcast {variant}: exit {p.returncode}\n{p.stderr}")
        rows[variant or "barrier"] = list(csv.DictReader(io.StringIO(p.stdout)))

    def split(rs: list[dict]) -> tuple[dict, list[dict]]:
        agg = [r for r in rs if r["pair_id"] == "all" and r["scope"] == "all"]
        ranks = [r for r in rs if r["scope"] == "pair"]
        if len(agg) != 1 or len(ranks) != 4:
            raise Fail(f"expected 4 rank rows and one aggregate, got {len(ranks)} and {len(agg)}")
        return agg[0], ranks

    def close(x: float, y: float) -> bool:
        return abs(x - y) <= 1e-3 * max(abs(x), abs(y)) + 2e-3

    agg, ranks = split(rows["--back-to-back"])
    if {r["variant"] for r in [agg, *ranks]} != {"back_to_back"}:
        raise Fail("back-to-back rows do not carry variant back_to_back")
    means = [float(r["lat_us_mean"]) for r in ranks]
    for r, m in zip(ranks, means, strict=True):
        total_us = float(r["duration_s"]) * 1e6
        if not close(m * int(r["iterations"]), total_us):
            raise Fail(f"rank {r['pair_id']}: mean {m} x {r['iterations']} != total {total_us} us")
    for col, want in (("lat_us_min", min(means)), ("lat_us_max", max(means)),
                      ("lat_us_mean", sum(means) / len(means))):
        if not close(float(agg[col]), want):
            raise Fail(f"back-to-back aggregate {col} {agg[col]} is not the ranks' {want:.4f}")
    sync, sync_ranks = split(rows["barrier"])
    if sync["variant"] != "":
        raise Fail(f"barrier-separated rows carry variant {sync['variant']!r}")
    if not close(float(sync["lat_us_max"]), max(float(r["lat_us_max"]) for r in sync_ranks)):
        raise Fail("barrier-separated aggregate max is not the ranks' largest sample")
    if float(sync["lat_us_min"]) < max(float(r["lat_us_min"]) for r in sync_ranks) - 2e-3:
        raise Fail("barrier-separated aggregate min is below a rank's own min: not the "
                   "per-call max over ranks")
    print(f"bcast 8 B, 4 ranks on 2 nodes, rotating root: barrier-separated p50 "
          f"{float(sync['lat_us_p50']):.1f} us, back-to-back (IMB t_max) "
          f"{float(agg['lat_us_max']):.1f} us (not asserted: a measurement)")
    print("ok: back-to-back reports IMB's per-rank total / N; barrier-separated the per-call "
          "max over ranks")


def probe_ranges(path: str) -> dict:
    """layout_probe.c's record of one rank: {"send": {(addr, bytes)}, "recv": {...}}."""
    out: dict = {"send": set(), "recv": set()}
    with open(path) as f:
        for line in f:
            what, addr, nbytes = line.split()
            if addr == "overflow":
                raise Fail(f"{path}: more distinct {what} buffers than the probe records")
            out[what].add((int(addr, 16), int(nbytes)))
    return out


def overlaps(a: set, b: set) -> bool:
    return any(x < y + m and y < x + n for x, n in a for y, m in b)


LAYOUT_WINDOW = 8


def layout_expect(test: str, buffers: str, rank: int, r: dict) -> str | None:
    """What --buffers promises (docs/mpi.md "Buffer layouts"); None = kept, else why not.
    Rank 0 is side A (measures, sends the stream), rank 1 side B."""
    sends, recvs = r["send"], r["recv"]
    info = TABLE[test]
    if info.kind == "latency":
        if buffers == "fresh" and not (len(sends) == 1 and sends == recvs):
            return f"fresh ping-pong must send from and receive into one buffer: " \
                   f"send {sorted(sends)}, recv {sorted(recvs)}"
        if buffers == "peer" and not (len(sends) == 1 and len(recvs) == 1
                                      and not overlaps(sends, recvs)):
            return f"peer ping-pong must use one send and one separate receive buffer: " \
                   f"send {sorted(sends)}, recv {sorted(recvs)}"
        return None
    receives = rank == 1 or info.bidir or test == "bibw"
    if not receives:
        return None if not recvs else f"side A of {test} received payload: {sorted(recvs)}"
    want = LAYOUT_WINDOW if buffers == "fresh" else 1
    if len(recvs) != want:
        return f"{buffers} stream: {len(recvs)} distinct receive buffers, expected {want} " \
               f"(window {LAYOUT_WINDOW})"
    if overlaps(recvs, sends):
        return f"receive buffers overlap the send buffer: recv {sorted(recvs)}, " \
               f"send {sorted(sends)}"
    if len(recvs) > 1 and overlaps({x for x in recvs if x != min(recvs)}, {min(recvs)}):
        return "receive slots overlap"
    return None


def cmd_layout(a) -> None:
    """--buffers fresh|peer: the buffers the ranks really pass to MPI (PMPI probe), and the
    layout in every row and in the env record."""
    cols = schema(a)
    for buffers in ("fresh", "peer"):
        with tempfile.TemporaryDirectory(prefix="pb-mpi-layout-") as d:
            out, envf = os.path.join(d, "rows.csv"), os.path.join(d, "env.json")
            args = ["--test", a.test, "-s", "4K", "-n", "64", "-w", "8", "--window",
                    str(LAYOUT_WINDOW), "--timeout", "60", "--allow-oversubscribe", "-q",
                    "-o", out, "--env-json", envf]
            args += [] if buffers == "fresh" else ["--buffers", buffers]  # fresh = default
            cmd = ["mpirun", "--oversubscribe", "-np", "2", "-x", f"LD_PRELOAD={a.probe}",
                   "-x", f"PB_LAYOUT_PROBE_DIR={d}", a.bin, *args]
            print("+ " + " ".join(cmd), file=sys.stderr)
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout,
                               env=env_for_mpi())
            if p.returncode != 0:
                raise Fail(f"{buffers}: exit {p.returncode}\n{p.stderr}")
            with open(out) as f:
                rows = check_rows(a, f.read(), cols, a.test, 1, 1)
            bad = [r for r in rows if r["buffers"] != buffers]
            if bad:
                raise Fail(f"--buffers {buffers}: rows carry buffers={bad[0]['buffers']!r}")
            with open(envf) as f:
                env = json.load(f)
            if env.get("buffers") != buffers or env["options"].get("buffers") != buffers:
                raise Fail(f"--buffers {buffers}: env record says {env.get('buffers')!r} / "
                           f"{env['options'].get('buffers')!r}")
            for rank in (0, 1):
                why = layout_expect(a.test, buffers, rank,
                                    probe_ranges(os.path.join(d, f"rank-{rank}.txt")))
                if why:
                    raise Fail(f"{a.test} --buffers {buffers}, rank {rank}: {why}")
        print(f"ok: {a.test} --buffers {buffers}: rows, env record and the buffers passed to "
              f"MPI agree")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--netns", required=True, help="scripts/two-node-netns")
    ap.add_argument("--two-node", action="store_true")
    ap.add_argument("--timeout", type=float, default=120)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--np", type=int, required=True)
    r.add_argument("--test", required=True)
    r.add_argument("--sizes", default="8,4K")
    r.add_argument("--iterations", type=int, default=50,
                   help="-n N; 0 = no -n (the default: a time)")
    r.add_argument("extra", nargs="*")
    sub.add_parser("badopt")
    f = sub.add_parser("fault")
    f.add_argument("mode", choices=["kill", "hang"])
    sub.add_parser("b2b")
    lay = sub.add_parser("layout")
    lay.add_argument("--probe", required=True, help="the layout_probe shared library")
    lay.add_argument("--test", required=True)
    a = ap.parse_args()
    if not shutil.which("mpirun"):
        print("skip: mpirun not found (apt-get install openmpi-bin)")
        return SKIP
    if a.two_node:
        if os.geteuid() != 0 or not shutil.which("ip"):
            print("skip: two emulated nodes need root and iproute2")
            return SKIP
        probe = subprocess.run([a.netns, "status"], capture_output=True, text=True)
        if probe.returncode != 0:  # not up: check that this machine can create namespaces
            up = subprocess.run([a.netns, "up"], capture_output=True, text=True, timeout=60)
            subprocess.run([a.netns, "down"], capture_output=True, timeout=60)
            if up.returncode != 0:
                print(f"skip: cannot create the emulated nodes here: {up.stderr.strip()}")
                return SKIP
    try:
        {"run": cmd_run, "badopt": cmd_badopt, "fault": cmd_fault, "b2b": cmd_b2b,
         "layout": cmd_layout}[a.cmd](a)
    except Fail as e:
        print(f"FAIL: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(run_in_own_ipc_namespace(main, "mpi_check"))
