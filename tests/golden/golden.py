#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Behaviour unchanged: a fixed MPI run and a fixed verbs run compared, in every
column that is not a measurement, with the golden CSV made by the binaries of
the commit before the test descriptors (issue 12).

usage: golden.py mpi   --bin PAIRBENCH_MPI   (--check FILE | --write FILE)
       golden.py verbs --bin PAIRBENCH_VERBS (--check FILE | --write FILE)
       golden.py diff  GOLDEN CSV          (compare two normalised files; for tests)

A measured cell becomes '#' (so does the iterations count of a loading pair
and of its aggregate row; or stays '' when empty: which cells are empty
follows from the iteration count and the test, not from the machine); host,
peer, cpu and numa_node depend on the machine and are dropped; the flag
above_link_rate depends on the measurement and is dropped, and so are the flags
that follow from the machine (core/pb_flags.h: oversubscribed on a machine with
fewer CPUs than processes, emulated_device, link_rate_nominal and
link_rate_unknown on the device the run found; link_pct, which those make
empty, is compared as present wherever bandwidth is).  Rows are sorted,
so the order in which pairs finish does not matter.  Python standard library
only.  Exit 0 = same, 1 = differs or the run failed, 77 = cannot run here.
"""
import argparse
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
KEPT = ("schema_version", "layer", "test", "variant", "msg_size_bytes", "pairs", "pair_id",
        "iterations", "warmup_iterations", "window", "lat_kind", "status", "flags", "error")
MEASURED = ("lat_us_min", "lat_us_p50", "lat_us_p90", "lat_us_p99", "lat_us_p999",
            "lat_us_max", "lat_us_mean", "lat_us_stdev", "bw_gbit_s", "bw_mbyte_s",
            "msg_rate_per_s", "link_pct", "start_skew_us", "fairness", "worst_lat_pair_id",
            "worst_lat_us_p50", "worst_lat_us_p99", "min_bw_pair_id", "min_pair_bw_gbit_s",
            "min_pair_bw_share", "duration_s")
MACHINE = ("host", "peer", "cpu", "numa_node")
# Added to the schema (version 3) after the golden files were made: the behaviour they
# describe (layouts, QP counts, devices, patterns, sub-aggregates) is tested where it was
# added; the golden files keep comparing what existed before.
LATER = ("pattern", "buffers", "scope", "qps", "device", "port", "port_addr", "peer_device",
         # version 4 (issue 21): how each point was timed; the golden runs use -n (count)
         "window_method", "window_s", "start_delay_us", "overlap_s", "end_spread_us",
         # version 5 (issue 36): a soak's columns, empty without --soak (the golden runs)
         "soak_bucket_s", "soak_buckets", "bucket_gbit_s_min", "bucket_gbit_s_p1",
         "bucket_gbit_s_p50", "min_bucket_share", "stall_fraction", "stalls", "stalled_pairs",
         "longest_stall_s", "first_stall_s",
         # version 6 (issue 35): the victim probe's columns, empty without --probe
         "probe_test", "idle_iterations", "idle_lat_us_p50", "idle_lat_us_p99",
         "idle_lat_us_p999", "lat_inflation_p50", "lat_inflation_p99", "lat_inflation_p999")
# Flags that depend on what was measured (timing): tail_dominated follows the pairs' end
# times, sample_cap a latency pair's speed.
MEASURED_FLAGS = {"above_link_rate", "tail_dominated", "sample_cap"}
MACHINE_FLAGS = {"oversubscribed", "emulated_device", "link_rate_nominal", "link_rate_unknown"}

# (np, args) — one node, small -n, two sizes where the test has a size.
MPI_CASES = [
    (2, ["--test", "latency", "-s", "8,4K"]),
    (4, ["--test", "bibw", "-s", "8,4K", "--window", "8"]),
    (4, ["--test", "loaded_lat", "-s", "8,4K", "--window", "8"]),
    (4, ["--test", "allreduce", "-s", "8,4K"]),
    (4, ["--test", "bcast", "-s", "8,4K", "--root-rotate"]),
    (4, ["--test", "halo", "-s", "8,4K"]),
    (2, ["--test", "barrier"]),
]
# (pairs, args) — --loopback in the Soft-RoCE rig.
VERBS_CASES = [
    (1, ["--test", "write_lat", "-s", "1,4K"]),
    (2, ["--test", "read_lat", "-s", "1,4K"]),
    (2, ["--test", "write_bw", "-s", "1,4K", "--bidir", "-t", "16", "--cq-mod", "4"]),
    (2, ["--test", "send_bw", "-s", "1,4K"]),
    (2, ["--test", "loaded_lat", "-s", "1,4K", "-t", "16", "--cq-mod", "4"]),
    (1, ["--test", "atomic_lat", "-s", "8", "--variant", "cswap"]),
]


class Fail(Exception):
    pass


def mask_loading(rows: list[list[str]]) -> None:
    """A loading pair (a per-pair row without lat_kind in a point that measures latency) runs
    until the probe is done: its iterations, and the aggregate's sum of them, are measurements."""
    k = {c: KEPT.index(c) for c in ("test", "variant", "msg_size_bytes", "pairs", "pair_id",
                                    "lat_kind", "iterations")}

    def point(r: list[str]) -> tuple:
        return (r[k["test"]], r[k["variant"]], r[k["msg_size_bytes"]], r[k["pairs"]])

    lat = {point(r) for r in rows if r[k["lat_kind"]]}
    loaded = {point(r) for r in rows if r[k["pair_id"]] != "all" and not r[k["lat_kind"]]} & lat
    for r in rows:
        if point(r) in loaded and (r[k["pair_id"]] == "all" or not r[k["lat_kind"]]):
            r[k["iterations"]] = "#"


def normalise(text: str) -> list[list[str]]:
    """CSV text -> header plus sorted rows of the kept columns and measured-cell markers."""
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows:
        raise Fail("no rows")
    missing = [c for c in KEPT + MEASURED + MACHINE if c not in rows[0]]
    if missing:
        raise Fail(f"columns missing: {missing}")
    unknown = [c for c in rows[0] if c not in KEPT + MEASURED + MACHINE + LATER]
    if unknown:
        raise Fail(f"columns this script does not classify: {unknown}")
    out = []
    for r in rows:
        ignored = MEASURED_FLAGS | MACHINE_FLAGS
        flags = ";".join(f for f in r["flags"].split(";") if f and f not in ignored)
        kept = [flags if c == "flags" else r[c] for c in KEPT]
        # link_pct is empty where the device's link rate is nominal or unknown (flags
        # link_rate_nominal/_unknown, a property of the machine): there it reads as present
        # wherever bandwidth is, as on a device with a real link rate.
        judged = not ({"link_rate_nominal", "link_rate_unknown"} & set(r["flags"].split(";")))
        out.append(kept + ["#" if (r[c] != "" if c != "link_pct" or judged
                                   else r["bw_gbit_s"] != "") else ""
                           for c in MEASURED])
    mask_loading(out)
    out.sort()
    return [list(KEPT + MEASURED), *out]


def render(table: list[list[str]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(table)
    return buf.getvalue()


def diff(golden: str, got: str) -> list[str]:
    """Differences between two normalised CSV texts, one line each."""
    g, n = list(csv.reader(io.StringIO(golden))), list(csv.reader(io.StringIO(got)))
    if g[:1] != n[:1]:
        return [f"header differs: {g[:1]} vs {n[:1]}"]
    out = []
    if len(g) != len(n):
        out.append(f"{len(g) - 1} golden rows, {len(n) - 1} now")
    for i, (a, b) in enumerate(zip(g[1:], n[1:], strict=False), start=1):
        for col, x, y in zip(g[0], a, b, strict=False):
            if x != y:
                out.append(f"row {i} ({' '.join(a[2:7])}): {col} golden {x!r}, now {y!r}")
    return out


def mpi_env() -> dict:
    env = dict(os.environ)
    if os.geteuid() == 0:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def run_cases(cmds: list[list[str]], env: dict, d: str) -> str:
    """Run each command with -o FILE; the CSVs joined under one header."""
    header, body = None, []
    for i, cmd in enumerate(cmds):
        out = os.path.join(d, f"{i}.csv")
        print("+ " + " ".join([*cmd, "-o", out]), file=sys.stderr)
        try:
            p = subprocess.run([*cmd, "-o", out], capture_output=True, text=True, timeout=240,
                               env=env)
        except subprocess.TimeoutExpired as e:
            raise Fail(f"timed out: {' '.join(cmd)}") from e
        if p.returncode != 0:
            raise Fail(f"exit {p.returncode}: {' '.join(cmd)}\n{p.stderr[-2000:]}")
        with open(out) as f:
            lines = f.read().splitlines()
        header = header or lines[0]
        if lines[0] != header:
            raise Fail("CSV headers differ between runs")
        body += lines[1:]
    return "\n".join([header, *body]) + "\n"


def mpi_cmds(binary: str) -> list[list[str]]:
    common = ["-n", "20", "-w", "2", "--timeout", "60", "--allow-oversubscribe", "-q"]
    return [["mpirun", "--oversubscribe", "-np", str(np_), binary, *common, *args]
            for np_, args in MPI_CASES]


def verbs_cmds(binary: str) -> list[list[str]]:
    dev = os.environ.get("PB_RDMA_DEVICE", "")
    common = ["-d", dev, "--timeout", "30", "--allow-oversubscribe", "--pin", "compact", "-q",
              "--loopback", "-n", "20", "-w", "3"]
    return [[binary, *common, "--pairs", str(p), *args] for p, args in VERBS_CASES]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("layer", choices=["mpi", "verbs", "diff"])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--bin")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--check")
    g.add_argument("--write")
    a = ap.parse_args()
    try:
        if a.layer == "diff":
            with open(a.files[0]) as f1, open(a.files[1]) as f2:
                bad = diff(f1.read(), render(normalise(f2.read())))
            print("\n".join(bad) or "same")
            return 1 if bad else 0
        if a.layer == "mpi" and not shutil.which("mpirun"):
            print("skip: mpirun not found")
            return SKIP
        if a.layer == "verbs" and not os.environ.get("PB_RDMA_DEVICE"):
            print("skip: no RDMA device (PB_RDMA_DEVICE unset): run inside scripts/softroce-run")
            return SKIP
        cmds = mpi_cmds(a.bin) if a.layer == "mpi" else verbs_cmds(a.bin)
        with tempfile.TemporaryDirectory(prefix="pb-golden-") as d:
            got = render(normalise(run_cases(cmds, mpi_env(), d)))
        if a.write:
            with open(a.write, "w") as f:
                f.write(got)
            print(f"wrote {a.write}")
            return 0
        with open(a.check) as f:
            bad = diff(f.read(), got)
        for line in bad:
            print(f"golden {a.layer}: {line}", file=sys.stderr)
        print(f"golden {a.layer}: {'DIFFERS' if bad else 'same'} ({got.count(chr(10)) - 1} rows)")
        return 1 if bad else 0
    except Fail as e:
        print(f"golden {a.layer}: FAIL: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
