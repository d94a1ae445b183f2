#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A simulated K-node fabric: a stand-in for `mpirun` + `pairbench-mpi` that writes what
pairbench-mpi --pattern scan would write for a fabric with planted bad nodes and links and
a noise level, so that the whole driver path (`pairbench fabric --launcher mpirun
--launcher-cmd tests/sim/fabric_sim.py`) runs at K = 1,024 or 4,096 on one machine.

It is called as mpirun is by the driver's mpirun launcher:

    fabric_sim.py -np N --map-by node (--hostfile FILE | -H h1:R,h2:R,...) [launcher args]
                  BINARY --test T --sizes S1,S2 --pattern P ... --output CSV --env-json E

The BINARY is not run. P is `scan[:F[-L]][,skip=I,...]` (core/pb_scan.c's tournament, via
pairbench.runner.schedule.round_links, which the tests check against the C code's) or
`nodes:A-B,...` (a confirmation round; job node numbers). Rows: per round and size one
row per pair (scope=pair), one per measuring node (scope=node, the node pair's value,
naming its peer node as pairbench-mpi does) and the job's aggregate (scope=all), the CSV
contract's columns; CSV flushed after each round as pairbench-mpi does.

Verbs rounds (the driver's --layer verbs through mpirun or srun): called as the launcher's
rank_job starts one pairbench-verbs rank per node,

    fabric_sim.py -np K --map-by node --hostfile FILE ... BINARY --test T ... --pairs P
                  --scan R[,skip=...] --scan-hosts FILE --output DIR/roundR.%r.csv
    fabric_sim.py -N K -n K --distribution=arbitrary ... --nodelist FILE BINARY ...

it writes what each rank of pairbench-verbs would: rank i (line i of the host file) finds
its node pair in round R (the tournament, as pb_scan.c), the client (side A) writes its
rows (a pair row per pair and the scope=all aggregate, host A, peer B, pattern scan:R) to
--output with %r = its rank, the server an empty file, the bye nothing; with --env-json
(%r too) every rank but the bye writes a pairbench-verbs record of its node (device,
firmware, port rate, PCIe link, kernel: the same on every node but what PB_SIM_NODE_ENV
plants). More variables:
  PB_SIM_NODE_ENV  "HOST:KEY=VALUE,...": that node's --env-json record has VALUE for KEY (a
                   top-level field); "HOST:-" writes none for it
  PB_SIM_DEAD      "HOSTA~HOSTB,...": that node pair cannot connect: its client writes error
                   rows after PB_SIM_DEAD_S seconds (default 0.5, at most --timeout) and the
                   launch exits 1; the round's other pairs are not held up
  PB_SIM_LAUNCHES  append one JSON line per launch there: {"argv": [...], "env": {...}}
  PB_SIM_FAIL_FROM R: launches of rounds >= R fail before any rank starts (no rows: the
                   allocation ended), exit PB_SIM_FAIL_CODE (default 1; 0 as mpirun
                   without abort-on-failure)

The fabric (environment):
  PB_SIM_SLOW      "HOST=F,HOSTA~HOSTB=F,...": a node F times slower on every link (latency
                   x F, bandwidth / F), or one link (a bad cable)
  PB_SIM_TRANSIENT like PB_SIM_SLOW, but only during the scan's rounds (a disturbance
                   that confirmation rounds do not see again; a verbs confirmation launch
                   is one whose --output lies in a raw/confirm-* folder)
  PB_SIM_CABLES    a cable list or ibnetdiscover output (pairbench fabric --cables): with
                   PB_SIM_FAULTS, the fabric's shape and D-mod-K routes
                   (pairbench.analysis.routes: the analysis's own model)
  PB_SIM_FAULTS    "COMPONENT=F,...": a component F times slower for every node pair whose
                   routes cross it — a cable ("leaf3:35~spine3:3"), a switch port (its
                   cable: "spine7:9"), a node's cable (its name), a switch ("switch S")
  PB_SIM_NOISE     relative noise, uniform in [1 - n, 1 + n] per node pair, size and round
                   (default 0.05)
  PB_SIM_SEED      the noise's seed (default 1): values depend only on (seed, test, size,
                   node pair, round), so a round run again gives the same numbers
  PB_SIM_ROUND_S   seconds each round takes (default 0)
  PB_SIM_LOSE      "HOST@R": the node is lost when round R starts (if it is in the job):
                   the job dies half-way through round R with Open MPI's message naming it
  PB_SIM_DIE_AT    R: the job dies half-way through round R, naming no node
  PB_SIM_START_FAILS N: an MPI job's first N launches of each test (counted in
                   PB_SIM_LAUNCHES) die before their first row, a rank killed by SIGSEGV in
                   MPI_Init (as Open MPI 4.1.4's TCP BTL did under srun): exit 139
  PB_SIM_OLD_SCHEMA N: an MPI scan job writes a header without the schema's last N columns
                   (an executable built from an older pairbench: a stale build/)
  PB_SIM_PIDFILE   write this process's id there (tests that kill the scan)
  PB_SIM_TIMES     append {"start", "end", "pattern"} of each launch there (benchmarks)
"""

from __future__ import annotations

import json
import os
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from pairbench.contract.columns import COLUMNS, SCHEMA_VERSION
from pairbench.runner.schedule import round_links, total_rounds

BW_TESTS = {"bw", "bibw", "msgrate"}
IDX = {c: i for i, c in enumerate(COLUMNS)}
MASK = (1 << 64) - 1


def mix(x: int) -> int:
    """splitmix64: a well-spread hash of an integer key."""
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def parse_args(argv: list[str]) -> tuple[list[str], int, dict[str, str]]:
    """(job hosts, ranks per node, the executable's options)."""
    if "--test" not in argv:
        raise SystemExit("fabric_sim: no --test in the command line")
    i = argv.index("--test")
    launcher, exe = argv[:i - 1], argv[i:]
    hosts: list[str] = []
    slots = 1
    for j, a in enumerate(launcher):
        if a == "--hostfile":
            for line in Path(launcher[j + 1]).read_text().splitlines():
                if line.strip():
                    hosts.append(line.split()[0])
                    if "slots=" in line:
                        slots = int(line.split("slots=")[1])
        elif a == "--nodelist" and "/" in launcher[j + 1]:  # srun: a file
            hosts += [ln.split()[0] for ln in Path(launcher[j + 1]).read_text().splitlines()
                      if ln.strip()]
        elif a == "-H":
            for h in launcher[j + 1].split(","):
                name, _, r = h.partition(":")
                hosts.append(name)
                slots = int(r or 1)
    opts: dict[str, str] = {}
    j = 0
    while j < len(exe):
        if exe[j].startswith("--") and j + 1 < len(exe) and not exe[j + 1].startswith("--"):
            opts[exe[j]] = exe[j + 1]
            j += 2
        else:
            opts[exe[j]] = ""
            j += 1
    return hosts, slots, opts


def parse_sizes(text: str) -> list[int]:
    out = []
    for s in text.split(","):
        mult = {"K": 1024, "M": 1024 ** 2}.get(s[-1:].upper(), 1)
        out.append(int(s[:-1] if mult > 1 else s) * mult)
    return out


def rounds_of(pattern: str, nodes: int) -> tuple[list[tuple[str, list[tuple[int, int]]]], int,
                                                 list[int]]:
    """[(label, [(A, B) job node numbers])], the scan's K, its skipped positions."""
    if pattern.startswith("nodes:"):  # P1/P2/...: rounds one after the other
        out = [(p, [tuple(int(x) for x in ab.split("-")) for ab in p[6:].split(",")])
               for p in pattern.split("/")]
        return out, nodes, []  # type: ignore[return-value]
    head, _, skip_text = pattern.partition(",skip=")
    skip = sorted(int(x) for x in skip_text.split(",")) if skip_text else []
    k = nodes + len(skip)
    first, last = 1, total_rounds(k)
    if head.startswith("scan:"):
        f, _, lst = head[5:].partition("-")
        first, last = int(f), int(lst or f)
    live = [p for p in range(k) if p not in set(skip)]
    job = {p: j for j, p in enumerate(live)}
    # one round at a time (8,191 rounds of 4,096 pairs would be 2 GB of tuples at once)
    out = ((f"scan:{r}", [(job[a], job[b]) for a, b in round_links(k, r, skip)])
           for r in range(first, last + 1))
    return out, k, skip  # type: ignore[return-value]


class Fabric:
    def __init__(self, hosts: list[str]) -> None:
        self.noise = float(os.environ.get("PB_SIM_NOISE", "0.05"))
        self.seed = int(os.environ.get("PB_SIM_SEED", "1"))
        self.node: dict[str, float] = {}
        self.link: dict[frozenset, float] = {}
        self.transient: dict[frozenset, float] = {}
        for var, links in (("PB_SIM_SLOW", self.link), ("PB_SIM_TRANSIENT", self.transient)):
            for item in filter(None, os.environ.get(var, "").split(",")):
                what, _, f = item.partition("=")
                if "~" in what:
                    links[frozenset(what.split("~"))] = float(f)
                else:
                    self.node[what] = float(f)
        self.routed = routed_faults(hosts)

    def factor(self, a: str, b: str, key: int, scan: bool = True) -> float:
        f = 1.0
        if self.node:
            f = self.node.get(a, 1.0) * self.node.get(b, 1.0)
        if self.link:
            f *= self.link.get(frozenset((a, b)), 1.0)
        if self.routed:
            f *= self.routed.get(frozenset((a, b)), 1.0)
        if scan and self.transient:
            f *= self.transient.get(frozenset((a, b)), 1.0)
        u = mix(key) / MASK  # [0, 1]
        return f * (1 + self.noise * (2 * u - 1))


def routed_faults(hosts: list[str]) -> dict[frozenset, float]:
    """{node pair: factor} of PB_SIM_FAULTS over PB_SIM_CABLES (the pairs of hosts whose
    D-mod-K routes cross each faulty component)."""
    if not os.environ.get("PB_SIM_FAULTS") or not os.environ.get("PB_SIM_CABLES"):
        return {}
    try:
        import numpy as np
    except ImportError:
        raise SystemExit("fabric_sim: PB_SIM_FAULTS needs the driver's Python (numpy, "
                         "scipy): run this file with it") from None

    from pairbench.analysis.routes import Routing
    from pairbench.io.fabrictopo import load

    r = Routing(load(os.environ["PB_SIM_CABLES"]), "dmodk")
    idx = np.array(sorted(r.index[h] for h in hosts if h in r.index))
    i, j = np.triu_indices(len(idx), 1)
    a, b = idx[i], idx[j]
    inc = r.incidence(a, b)
    out: dict[frozenset, float] = {}
    for item in filter(None, os.environ["PB_SIM_FAULTS"].split(",")):
        what, _, f = item.rpartition("=")
        for k in np.flatnonzero(inc.column(r.component(what))):
            key = frozenset((r.node_list[a[k]], r.node_list[b[k]]))
            out[key] = out.get(key, 1.0) * float(f)
    return out


def base_value(test: str, size: int) -> float:
    if test in BW_TESTS:
        return 100.0 * size / (size + 8192)        # Gbit/s: 100 Gbit/s links
    return 1.2 + size / 12500.0                    # µs: 1.2 µs + the wire time


def row(cells: dict[str, str]) -> str:
    out = [""] * len(COLUMNS)
    for k, v in cells.items():
        out[IDX[k]] = f'"{v}"' if "," in v else v  # as pb_csv quotes a cell with a comma
    return ",".join(out)


METRIC_COLUMNS = ("bw_gbit_s", "bw_mbyte_s", "lat_us_min", "lat_us_p50", "lat_us_p90",
                  "lat_us_p99", "lat_us_mean", "lat_us_max")


def write_round(out, test: str, label: str, rnd: int, sizes: list[int],
                pairs: list[tuple[int, int]], hosts: list[str], k: int, r: int,
                fab: Fabric, until: int | None = None) -> None:
    """One round's rows; until: stop after that many node pairs (a dying job). The node
    row names its peer node, as pairbench-mpi's does when all of a node's pairs measured
    towards one peer (core/pb_engine.c). One list of cells per size, filled in per pair
    (a 4,096-node scan writes 67 million rows: no dict per row)."""
    bw = test in BW_TESTS
    tkey = sum(map(ord, test))
    i_host, i_peer, i_pid, i_scope = IDX["host"], IDX["peer"], IDX["pair_id"], IDX["scope"]
    i_m = [IDX[c] for c in METRIC_COLUMNS]
    for size in sizes:
        base = base_value(test, size)
        common = {"schema_version": str(SCHEMA_VERSION), "layer": "mpi", "test": test,
                  "pattern": label, "buffers": "fresh", "msg_size_bytes": str(size),
                  "pairs": str(len(pairs) * r), "iterations": "1000",
                  "warmup_iterations": "100", "status": "ok"}
        if not bw:
            common["lat_kind"] = "half_rtt"
        cells = [""] * len(COLUMNS)
        for c, v in common.items():
            cells[IDX[c]] = f'"{v}"' if "," in v else v  # as row()
        sk = mix(fab.seed) ^ mix(tkey * 1_000_003 + size)
        lines, vals = [], []
        for n, (a, b) in enumerate(pairs):
            if until is not None and n >= until:
                out.write("\n".join(lines) + "\n")
                out.flush()
                return
            ha, hb = hosts[a], hosts[b]
            link = zlib.crc32(f"{min(ha, hb)}~{max(ha, hb)}".encode())
            f = fab.factor(ha, hb, sk ^ mix((link << 20) ^ rnd),
                           scan=label.startswith("scan:"))
            v = base / f if bw else base * f
            vals.append(v)
            metric = ((f"{v:.6g}", f"{v * 125:.6g}", "", "", "", "", "", "") if bw else
                      ("", "", f"{0.95 * v:.6g}", f"{v:.6g}", f"{1.05 * v:.6g}",
                       f"{1.2 * v:.6g}", f"{1.01 * v:.6g}", f"{2 * v:.6g}"))
            for i, m in zip(i_m, metric, strict=True):
                cells[i] = m
            cells[i_host], cells[i_peer], cells[i_scope] = ha, hb, "pair"
            for j in range(r):
                cells[i_pid] = str(n * r + j)
                lines.append(",".join(cells))
            cells[i_pid], cells[i_scope] = "all", "node"
            lines.append(",".join(cells))
        agg = sorted(vals)[len(vals) // 2] if vals else 0.0
        lines.append(row({**common, "pair_id": "all", "scope": "all", "host": hosts[0],
                          **({"bw_gbit_s": f"{agg * len(vals):.6g}"} if bw else
                             {"lat_us_p50": f"{agg:.6g}"})}))
        out.write("\n".join(lines) + "\n")
    out.flush()


def verbs_rows(test: str, label: str, rnd: int, sizes: list[int], pairs: int, ha: str,
               hb: str, fab: Fabric, dead: bool, scan: bool = True) -> list[str]:
    """What pairbench-verbs --scan's client on ha (peer hb) writes for one round."""
    bw = test.endswith("_bw")
    link = zlib.crc32(f"{min(ha, hb)}~{max(ha, hb)}".encode())
    out = []
    for size in sizes:
        common = {"schema_version": str(SCHEMA_VERSION), "layer": "verbs", "test": test,
                  "pattern": label, "buffers": "fresh", "msg_size_bytes": str(size),
                  "pairs": str(pairs), "qps": "1", "iterations": "1000",
                  "warmup_iterations": "100", "host": ha}
        if dead:
            why = f"pair 0 (client): connect: no answer from {hb} (timed out)"
            for j in [*map(str, range(pairs)), "all"]:
                out.append(row({**common, "pair_id": j, "scope": "pair" if j != "all" else
                                "all", "status": "error", "error": why}))
            continue
        key = mix(fab.seed) ^ mix(sum(map(ord, test)) * 1_000_003 + size) ^ mix((link << 20) ^ rnd)
        base = 100.0 * size / (size + 8192) if bw else 1.2 + size / 12500.0
        f = fab.factor(ha, hb, key, scan)
        v = base / f if bw else base * f
        metric = ({"bw_gbit_s": f"{v:.6g}", "bw_mbyte_s": f"{v * 125:.6g}"} if bw else
                  {"lat_kind": "half_rtt", "lat_us_min": f"{0.95 * v:.6g}",
                   "lat_us_p50": f"{v:.6g}", "lat_us_p99": f"{1.2 * v:.6g}"})
        for j in range(pairs):
            out.append(row({**common, **metric, "pair_id": str(j), "scope": "pair",
                            "peer": hb, "status": "ok"}))
        out.append(row({**common, **metric, "pair_id": "all", "scope": "all",
                        "status": "ok"}))
    return out


def verbs_env(host: str, role: str, opts: dict[str, str]) -> dict | None:
    """The --env-json record of a pairbench-verbs rank on host (None: it writes none)."""
    rec: dict = {"tool": "pairbench-verbs", "version": "0.1.0", "git_commit": "fabricsim",
                 "layer": "verbs", "test": opts["--test"], "host": host,
                 "kernel": "Linux 6.1.0-28-amd64 x86_64", "role": role, "device": "mlx5_0",
                 "devices_present": "mlx5_0", "driver": "mlx5_core", "fw_ver": "20.41.1000",
                 "vendor_id": "0x2c9", "vendor_part_id": 4123, "hw_ver": "0x0",
                 "link_layer": "InfiniBand", "port_rate": "4X HDR (200 Gbit/s)",
                 "active_mtu_bytes": 4096, "gid_type": "IB", "pcie_link_speed": "16.0 GT/s PCIe",
                 "pcie_link_width": "16", "clock": {"kernel_clocksource": "tsc"}}
    for item in filter(None, os.environ.get("PB_SIM_NODE_ENV", "").split(",")):
        h, _, kv = item.partition(":")
        if h != host:
            continue
        if kv == "-":
            return None
        k, _, v = kv.partition("=")
        rec[k] = v
    # the "devices" list, as pairbench-verbs writes it: the device's own fields again
    rec["devices"] = [{"name": rec["device"], "port": 1, **{
        k: rec[k] for k in ("fw_ver", "vendor_id", "vendor_part_id", "link_layer",
                            "port_rate", "active_mtu_bytes", "pcie_link_speed",
                            "pcie_link_width")}}]
    return rec


def verbs_round(hosts: list[str], opts: dict[str, str]) -> int:
    """One launch of a verbs scan round (see the module's docstring)."""
    rounds, _, _ = rounds_of("scan:" + opts["--scan"], len(hosts))
    label, pairs = next(iter(rounds))
    rnd = int(label[5:])
    fail_from = int(os.environ.get("PB_SIM_FAIL_FROM", "0") or 0)
    if fail_from and rnd >= fail_from:
        print("srun: error: Unable to create step for job 4711: Job/step already completing "
              "or completed", file=sys.stderr)
        return int(os.environ.get("PB_SIM_FAIL_CODE", "1"))
    test, sizes = opts["--test"], parse_sizes(opts.get("--sizes", "8"))
    listed = [ln.split()[0] for ln in Path(opts["--scan-hosts"]).read_text().splitlines()
              if ln.strip()]
    if listed != hosts:
        print("fabric_sim: --scan-hosts differs from the launcher's hosts", file=sys.stderr)
        return 2
    fab = Fabric(hosts)
    out = opts["--output"]
    dead_links = {frozenset(x.split("~")) for x in
                  filter(None, os.environ.get("PB_SIM_DEAD", "").split(","))}
    lose_host, _, lose_at = os.environ.get("PB_SIM_LOSE", "").partition("@")
    lost = lose_host in hosts and lose_at and rnd >= int(lose_at)
    dead, code = [], 0
    for n, (a, b) in enumerate(pairs):
        ha, hb = hosts[a], hosts[b]
        if lost and n >= len(pairs) // 2:
            break  # the launcher ends the job when it loses a node: the rest never ran
        for rank, role in ((a, "client"), (b, "server")):
            rec = verbs_env(hosts[rank], role, opts) if opts.get("--env-json") else None
            if rec is not None:
                Path(opts["--env-json"].replace("%r", str(rank))).write_text(
                    json.dumps(rec, indent=1) + "\n")
        Path(out.replace("%r", str(b))).write_text(",".join(COLUMNS) + "\n")
        if frozenset((ha, hb)) in dead_links or (lost and lose_host in (ha, hb)):
            dead.append((a, ha, hb))
            continue
        lines = verbs_rows(test, label, rnd, sizes, int(opts.get("--pairs", "1")), ha, hb,
                           fab, False, scan="/confirm-" not in out)
        Path(out.replace("%r", str(a))).write_text(",".join(COLUMNS) + "\n" +
                                                   "".join(f"{ln}\n" for ln in lines))
    if dead and not lost:
        time.sleep(min(float(os.environ.get("PB_SIM_DEAD_S", "0.5")),
                       float(opts.get("--timeout", "600"))))
        for a, ha, hb in dead:
            lines = verbs_rows(test, label, rnd, sizes, int(opts.get("--pairs", "1")), ha,
                               hb, fab, True)
            Path(out.replace("%r", str(a))).write_text(",".join(COLUMNS) + "\n" +
                                                       "".join(f"{ln}\n" for ln in lines))
            print(f"pairbench-verbs: error: pair 0 (client): connect: no answer from {hb}",
                  file=sys.stderr)
        code = 1
    if lost:
        print("ORTE has lost communication with a remote daemon.\n\n"
              "  HNP daemon   : [[4711,0],0] on node simhead\n"
              f"  Remote daemon: [[4711,0],{hosts.index(lose_host) + 1}] on node "
              f"{lose_host}\n", file=sys.stderr)
        code = 1
    return code


def timed_main(argv: list[str]) -> int:
    """main(), and with PB_SIM_TIMES=FILE one JSON line appended there per launch: its
    start and end (time.time()) and pattern: the simulated cluster's own time, for the
    benchmark (results/fabric-scale/bench.py)."""
    t0 = time.time()
    try:
        return main(argv)
    finally:
        if os.environ.get("PB_SIM_TIMES"):
            pat = argv[argv.index("--pattern") + 1] if "--pattern" in argv else ""
            with open(os.environ["PB_SIM_TIMES"], "a") as f:
                f.write(json.dumps({"start": t0, "end": time.time(),
                                    "pattern": pat[:40]}) + "\n")


def main(argv: list[str]) -> int:
    if os.environ.get("PB_SIM_PIDFILE"):
        Path(os.environ["PB_SIM_PIDFILE"]).write_text(str(os.getpid()))
    if os.environ.get("PB_SIM_LAUNCHES"):
        with open(os.environ["PB_SIM_LAUNCHES"], "a") as f:
            f.write(json.dumps({"argv": argv, "env": {k: v for k, v in os.environ.items()
                                                      if k.startswith("SLURM_")}}) + "\n")
    hosts, r, opts = parse_args(argv)
    if "--scan" in opts:
        return verbs_round(hosts, opts)
    test, sizes = opts["--test"], parse_sizes(opts.get("--sizes", "8"))
    start_fails = int(os.environ.get("PB_SIM_START_FAILS", "0") or 0)
    if start_fails and os.environ.get("PB_SIM_LAUNCHES"):
        mine = 0  # launches of this test so far, this one included
        for line in Path(os.environ["PB_SIM_LAUNCHES"]).read_text().splitlines():
            a = json.loads(line)["argv"]
            mine += "--test" in a and a[a.index("--test") + 1] == test
        if mine <= start_fails:
            Path(opts["--output"]).write_text("")
            print(f"srun: error: {hosts[-1]}: task {len(hosts) - 1}: Segmentation fault",
                  file=sys.stderr)
            return 139
    rounds, k, _ = rounds_of(opts["--pattern"], len(hosts))
    fab = Fabric(hosts)
    pause = float(os.environ.get("PB_SIM_ROUND_S", "0"))
    lose_host, _, lose_at = os.environ.get("PB_SIM_LOSE", "").partition("@")
    die_at = int(os.environ.get("PB_SIM_DIE_AT", "0") or 0)
    if opts.get("--env-json"):
        Path(opts["--env-json"]).write_text(json.dumps(
            {"tool": "fabric_sim (simulated pairbench-mpi)", "nodes": len(hosts),
             "world_size": len(hosts) * r, "pattern": opts["--pattern"]}) + "\n")
    old = int(os.environ.get("PB_SIM_OLD_SCHEMA", "0") or 0)
    with open(opts["--output"], "w", encoding="utf-8") as out:
        out.write(",".join(COLUMNS[:len(COLUMNS) - old]) + "\n")
        out.flush()
        for label, pairs in rounds:
            rnd = int(label[5:]) if label.startswith("scan:") else 0
            lost = lose_host in hosts and lose_at and rnd >= int(lose_at)
            if lost or (die_at and rnd == die_at):
                write_round(out, test, label, rnd, sizes, pairs, hosts, k, r, fab,
                            until=len(pairs) // 2)
                if lost:
                    print("--------------------------------------------------------------\n"
                          "ORTE has lost communication with a remote daemon.\n\n"
                          "  HNP daemon   : [[4711,0],0] on node simhead\n"
                          f"  Remote daemon: [[4711,0],{hosts.index(lose_host) + 1}] on node "
                          f"{lose_host}\n\nThis is usually due to either a failure of the "
                          "TCP network\nconnection to the node, or possibly an internal "
                          "failure of\nthe daemon itself.", file=sys.stderr)
                else:
                    print(f"pairbench-mpi: error: round {rnd}: the job was ended",
                          file=sys.stderr)
                return 1
            write_round(out, test, label, rnd, sizes, pairs, hosts, k, r, fab)
            if pause:
                time.sleep(pause)
    return 0


if __name__ == "__main__":
    sys.exit(timed_main(sys.argv[1:]))
