#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""pairbench-mpi side by side with the peer tools a user already has (issue 16).

Runs, interleaved in ROUNDS rounds whose order rotates by one job per round, every job of
JOBS below for which a binary was given: pairbench-mpi in both buffer layouts, osu_latency,
osu_bw, osu_allreduce (OSU micro-benchmarks 7.x), IMB-MPI1 PingPong / Uniband / Allreduce
(Intel MPI Benchmarks 2021.x), NPopenmpi (NetPIPE) and ucx_perftest.  Every job is one
`mpirun -np 2` (ucx_perftest: a server and a client process), so each tool gets two ranks on
two cores exactly as pairbench does.  Records, per job: the exact command line, the start
time, /proc/loadavg before and after, the exit code and the raw output (OUT/raw/); and the
tools' versions (OUT/manifest.json).  Then `summarize.py OUT` computes the ratios.

The repository holds no peer code, binary or build recipe: build or install the peers
yourself and pass their paths.  Python standard library only.

usage: run.py --pairbench BUILD/bin/pairbench-mpi [--osu-dir DIR] [--imb IMB-MPI1]
              [--netpipe NPopenmpi] [--ucx-perftest ucx_perftest]
              [--allreduce-dtype experiments/allreduce_dtype] [--only REGEX] [--rounds 7] OUT
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LAT_SIZES = (8, 4096, 65536)
BW_SIZES = (65536, 1048576)
AR_SIZES = (8, 65536)
WINDOW = 64
LAT_ITERS, LAT_WARM = 10000, 1000
BW_WINDOWS, BW_WARM_WINDOWS = 100, 10            # windows of WINDOW messages
AR_ITERS, AR_WARM = 2000, 200


def mpirun(*argv: str) -> list[str]:
    return ["mpirun", "-np", "2", "--bind-to", "core", *argv]


def jobs(a: argparse.Namespace, lens: dict[str, str]) -> dict[str, list[str]]:
    """name -> argv.  Only jobs whose tool was given."""
    pb = a.pairbench
    out: dict[str, list[str]] = {}
    for layout in ("peer", "fresh"):
        out[f"pb_latency_{layout}"] = mpirun(
            pb, "--test", "latency", "-s", ",".join(map(str, LAT_SIZES)), "-n", str(LAT_ITERS),
            "-w", str(LAT_WARM), "--buffers", layout, "-q")
        out[f"pb_bw_{layout}"] = mpirun(
            pb, "--test", "bw", "-s", ",".join(map(str, BW_SIZES)),
            "-n", str(BW_WINDOWS * WINDOW), "-w", str(BW_WARM_WINDOWS * WINDOW),
            "--window", str(WINDOW), "--buffers", layout, "-q")
    out["pb_bw_peer_ackwin"] = [*out["pb_bw_peer"], "--ack-each-window"]
    # IMB's and NetPIPE's timing: one clock read at each end of the block, the mean only.
    out["pb_latency_peer_block"] = [*out["pb_latency_peer"], "--timing", "block"]
    for style in ("barrier", "b2b"):
        out[f"pb_allreduce_{style}"] = mpirun(
            pb, "--test", "allreduce", "-s", ",".join(map(str, AR_SIZES)), "-n", str(AR_ITERS),
            "-w", str(AR_WARM), "-q", *(["--back-to-back"] if style == "b2b" else []))
    if a.osu_dir:
        d = Path(a.osu_dir)
        out["osu_latency"] = mpirun(str(d / "pt2pt" / "osu_latency"), "-m",
                                    f"{LAT_SIZES[0]}:{LAT_SIZES[-1]}", "-i", str(LAT_ITERS),
                                    "-x", str(LAT_WARM), "-z")
        # Without -z: OSU's mean without per-iteration timestamps (its usual number).
        out["osu_latency_noz"] = out["osu_latency"][:-1]
        out["osu_bw"] = mpirun(str(d / "pt2pt" / "osu_bw"), "-m",
                               f"{BW_SIZES[0]}:{BW_SIZES[-1]}", "-W", str(WINDOW),
                               "-i", str(BW_WINDOWS), "-x", str(BW_WARM_WINDOWS))
        out["osu_allreduce"] = mpirun(str(d / "collective" / "osu_allreduce"), "-m",
                                      f"{AR_SIZES[0]}:{AR_SIZES[-1]}", "-i", str(AR_ITERS),
                                      "-x", str(AR_WARM), "-f")
    if a.imb:
        out["imb_pingpong"] = mpirun(a.imb, "PingPong", "-msglen", lens["lat"], "-iter",
                                     str(LAT_ITERS), "-iter_policy", "off", "-time", "600")
        out["imb_uniband"] = mpirun(a.imb, "Uniband", "-msglen", lens["bw"], "-iter",
                                    str(BW_WINDOWS), "-iter_policy", "off", "-time", "600",
                                    "-window_size", str(WINDOW))
        for sync in ("on", "off"):
            out[f"imb_allreduce_sync_{sync}"] = mpirun(
                a.imb, "Allreduce", "-msglen", lens["ar"], "-iter", str(AR_ITERS),
                "-iter_policy", "off", "-time", "600", "-sync", sync)
    if a.netpipe:
        for s in LAT_SIZES:
            out[f"netpipe_{s}"] = mpirun(a.netpipe, "-l", str(s), "-u", str(s), "-p", "0",
                                         "-o", "/dev/null")
    if a.allreduce_dtype:
        out["exp_allreduce_dtype"] = mpirun(a.allreduce_dtype, str(AR_SIZES[-1]),
                                            str(AR_ITERS), "3")
    if a.ucx_perftest:
        for s in LAT_SIZES:
            out[f"ucx_tag_lat_{s}"] = [a.ucx_perftest, "127.0.0.1", "-t", "tag_lat", "-s",
                                       str(s), "-n", str(LAT_ITERS), "-w", str(LAT_WARM)]
    return out


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def run_ucx(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    """ucx_perftest: a server on core 1, then the client (argv) on core 0."""
    server = subprocess.Popen(["taskset", "-c", "1", argv[0]], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(0.5)
        return subprocess.run(["taskset", "-c", "0", *argv], capture_output=True, text=True,
                              timeout=timeout)
    finally:
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def version(argv: list[str]) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=mpi_env())
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({e})"
    return (p.stdout + p.stderr).strip()[:2000]


def mpi_env() -> dict[str, str]:
    e = dict(os.environ)
    if os.geteuid() == 0:
        e["OMPI_ALLOW_RUN_AS_ROOT"] = e["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return e


def manifest(a: argparse.Namespace, argv: dict[str, list[str]]) -> dict:
    m = {"argv": sys.argv, "rounds": a.rounds, "jobs": argv,
         "ompi_info_version": version(["ompi_info", "--version"]),
         "uname": " ".join(os.uname()), "cpu_model": cpu_model(), "nproc": os.cpu_count()}
    repo = Path(__file__).resolve().parents[2]
    m["pairbench_commit"] = version(["git", "-C", str(repo), "rev-parse", "HEAD"])
    if a.osu_dir:
        m["osu_version"] = version(mpirun(str(Path(a.osu_dir) / "pt2pt" / "osu_latency"),
                                          "-v"))
    if a.netpipe:
        m["netpipe_package"] = version(["dpkg-query", "-W", "netpipe-openmpi"])
    if a.ucx_perftest:
        # (ucx_perftest -v would start a server and wait): the package's version.
        m["ucx_perftest_package"] = version(["dpkg-query", "-W", "ucx-utils"])
    if a.imb:
        m["imb_version"] = "see the header of any raw/*imb_* file"
    return m


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairbench", required=True, help="pairbench-mpi binary")
    ap.add_argument("--osu-dir", help="OSU 7.x libexec/osu-micro-benchmarks/mpi directory")
    ap.add_argument("--imb", help="IMB-MPI1 binary (Intel MPI Benchmarks 2021.x)")
    ap.add_argument("--netpipe", help="NPopenmpi binary (Debian netpipe-openmpi)")
    ap.add_argument("--ucx-perftest", help="ucx_perftest binary (Debian ucx-utils)")
    ap.add_argument("--allreduce-dtype", help="experiments/allreduce_dtype built with mpicc")
    ap.add_argument("--only", help="run only the jobs whose name matches this regex")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--timeout", type=float, default=300, help="per job, seconds")
    ap.add_argument("out")
    a = ap.parse_args()
    for tool in (a.pairbench, a.imb, a.netpipe, a.ucx_perftest, a.allreduce_dtype):
        if tool and not shutil.which(tool):
            ap.error(f"{tool}: not an executable")
    if a.rounds < 2:
        ap.error("--rounds must be >= 2 (the ratios need a spread)")
    out = Path(a.out)
    (out / "raw").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pb-peers-") as tmp:
        lens = {}
        for name, sizes in (("lat", LAT_SIZES), ("bw", BW_SIZES), ("ar", AR_SIZES)):
            lens[name] = str(Path(tmp) / f"{name}.len")
            Path(lens[name]).write_text("".join(f"{s}\n" for s in sizes))
        argv = jobs(a, lens)
        if a.only:
            argv = {k: v for k, v in argv.items() if re.search(a.only, k)}
        names = list(argv)
        (out / "manifest.json").write_text(json.dumps(manifest(a, argv), indent=1) + "\n")
        log = []
        for rnd in range(a.rounds):
            k = rnd % len(names)
            for name in names[k:] + names[:k]:     # rotation: each job leads a round
                before, t0 = loadavg(), time.time()
                print(f"round {rnd} {name}: load {before.split()[0]}", file=sys.stderr)
                try:
                    if name.startswith("ucx_"):
                        p = run_ucx(argv[name], a.timeout)
                    else:
                        p = subprocess.run(argv[name], capture_output=True, text=True,
                                           timeout=a.timeout, env=mpi_env())
                    rc, text = p.returncode, p.stdout + "\n--- stderr ---\n" + p.stderr
                except subprocess.TimeoutExpired:
                    rc, text = -1, f"timed out after {a.timeout} s"
                (out / "raw" / f"r{rnd}-{name}.txt").write_text(text)
                log.append({"round": rnd, "job": name, "start": t0,
                            "seconds": round(time.time() - t0, 3), "rc": rc,
                            "loadavg_before": before, "loadavg_after": loadavg()})
                if rc != 0:
                    print(f"  {name}: exit {rc} (see raw/r{rnd}-{name}.txt)", file=sys.stderr)
        (out / "log.json").write_text(json.dumps(log, indent=1) + "\n")
    print(f"run.py: {a.rounds} rounds of {len(names)} jobs in {out}; now: "
          f"summarize.py {out}", file=sys.stderr)
    return 0 if all(e["rc"] == 0 for e in log) else 1


if __name__ == "__main__":
    sys.exit(main())
