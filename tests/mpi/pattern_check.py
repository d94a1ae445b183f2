#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every traffic pattern of pairbench-mpi --pattern on K emulated nodes
(scripts/netns-nodes --nodes K): one job per group of patterns (the patterns of a
group run as rounds of one job), then for each pattern the rows' host -> peer pairs
equal the pattern's definition, computed here independently of core/pb_pattern.c, and
every point (pair rows, the scope=all aggregate, one scope=node aggregate per
measuring node) passes the row checker.

Python standard library only.  Exit 0 = pass, 1 = fail, 77 = cannot run here.
"""
import argparse
import csv
import io
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))  # rowcheck
sys.path.insert(0, str(Path(__file__).resolve().parent))

import rowcheck
from mpi_env import env_for_mpi, run_in_own_ipc_namespace

from pairbench.contract import testtable
from pairbench.runner.schedule import tournament

SKIP = 77
TABLE = testtable.load_snapshot()["mpi"]
# Namespaces of their own: runs beside the two-node tests' pbn-* without a clash.
# (PB_NETNS_PREFIX/PB_NETNS_NET in the environment override them, for runs side by side.)
NETNS_ENV = {"PB_NETNS_PREFIX": os.environ.get("PB_NETNS_PREFIX", "pbk"),
             "PB_NETNS_NET": os.environ.get("PB_NETNS_NET", "10.219.0")}


def expected(pattern: str, k: int, r: int) -> Counter:
    """(measuring host, peer host) -> number of pairs, by the definitions in
    docs/patterns.md; node i (from 0) is host node{i+1} (ranks round-robin)."""
    n = [f"node{i + 1}" for i in range(k)]
    out: Counter = Counter()
    if pattern == "pairs":
        for a in range(0, k, 2):
            out[(n[a], n[a + 1])] += r
    elif pattern.startswith("shift:"):
        s = int(pattern.split(":")[1])
        for a in range(k):
            out[(n[a], n[(a + s) % k])] += r // 2
    elif pattern == "bisection":
        for a in range(k // 2):
            out[(n[a], n[a + k // 2])] += r
    elif pattern in ("incast", "fanout"):
        for s in range(1, k):
            key = (n[s], n[0]) if pattern == "incast" else (n[0], n[s])
            out[key] += r // (k - 1)
    elif pattern == "alltoall":
        for a in range(k):
            for b in range(k):
                d = (b - a) % k
                if a != b and (2 * d < k or (2 * d == k and a < b)):
                    out[(n[a], n[b])] += 1
    elif pattern.startswith("scan:"):
        # round R of the fabric scan: the driver's tournament (runner/schedule.py)
        for a, b in tournament(n)[int(pattern.split(":")[1]) - 1]:
            out[(a, b)] += r
    else:
        raise ValueError(pattern)
    return out


def run_group(a, patterns: list, r: int, test: str) -> list:
    cmd = [a.netns, "run", "--nodes", str(a.nodes), "--np", str(a.nodes * r), "--",
           a.bin, "--test", test, "--pattern", "/".join(patterns), "--sizes", "64K",
           "--iterations", "20", "--warmup", "2", "--pin", "none", "--quiet"]
    print("+ " + " ".join(cmd), file=sys.stderr)
    env = {**env_for_mpi(), **NETNS_ENV}
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, env=env)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: exit {p.returncode}: {p.stderr.strip()[-2000:]}")
    return list(csv.DictReader(io.StringIO(p.stdout)))


def check(rows: list, pattern: str, k: int, r: int, test: str) -> list:
    mine = [x for x in rows if x["pattern"] == pattern]
    fails = rowcheck.check_rows(mine, TABLE[test], "mpi", None, [65536])
    got = Counter((x["host"], x["peer"]) for x in mine if x["scope"] == "pair")
    want = expected(pattern, k, r)
    if got != want:
        fails.append(f"{pattern}: host -> peer pairs {dict(got)}, the definition says "
                     f"{dict(want)}")
    nodes = sorted(x["host"] for x in mine if x["scope"] == "node")
    if nodes != sorted({h for h, _ in want}):
        fails.append(f"{pattern}: node aggregates for {nodes}")
    return fails


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--netns", required=True, help="scripts/netns-nodes")
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=240)
    a = ap.parse_args()
    if not shutil.which("mpirun"):
        print("skip: mpirun not found (apt-get install openmpi-bin)")
        return SKIP
    if os.geteuid() != 0 or not shutil.which("ip"):
        print("skip: emulated nodes need root and iproute2")
        return SKIP
    k = a.nodes
    # Two ranks per node for the node-to-node patterns (shift needs an even count),
    # K-1 per node for the ones where a node talks to every other node.
    # scan: the executable computes the tournament's rounds (scan:1..scan:N) itself.
    groups = [(["pairs", "shift:1", "shift:2", "bisection"], 2, "latency"),
              (["incast", "fanout", "alltoall"], k - 1, "bw"), (["scan"], 2, "latency")]
    fails = []
    for patterns, r, test in groups:
        rows = run_group(a, patterns, r, test)
        if patterns == ["scan"]:
            patterns = [f"scan:{i + 1}" for i in range(len(tournament(range(k))))]
            if {x["pattern"] for x in rows} != set(patterns):
                fails.append(f"scan: rows labelled {sorted({x['pattern'] for x in rows})}")
        for pat in patterns:
            f = check(rows, pat, k, r, test)
            fails += f
            print(f"{'FAIL' if f else 'ok'}: {pat} on {k} nodes x {r} ranks ({test}): "
                  f"{sum(x['pattern'] == pat and x['scope'] == 'pair' for x in rows)} pairs")
    for f in fails:
        print(f"FAIL: {f}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(run_in_own_ipc_namespace(main, "pattern_check"))
