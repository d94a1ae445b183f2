#!/usr/bin/env python3
"""A fake pairbench-verbs / pairbench-mpi honouring the CSV contract, for driver tests.

Behaviour is chosen with environment variables (so the driver's argv stays realistic):
  FAKE_PB_MODE   ok (default) | fail (exit 1 after printing nothing) | partial (rows for the
                 first size only, then exit 1) | slow (sleep FAKE_PB_SLEEP s, default 60) |
                 skip (exit 77) | badschema (schema_version 9 in --print-schema and rows) |
                 garbage (non-CSV output) | errorrow (a status=error row for the largest size) |
                 truncated (rows of the first size, then half a row, then SIGKILL itself) |
                 crashstart (SIGSEGV itself before writing anything, as a rank dying in
                 MPI_Init; with FAKE_PB_CRASHES=FILE holding N, only the next N runs do)
  FAKE_PB_SCALE  multiply every latency by this and divide bandwidths (default 1.0)
  FAKE_PB_SLOW_PAIR  this pair id (when the run has it) is FAKE_PB_SLOW_FACTOR (default 2)
                 times slower: latency x factor, bandwidth / factor
Rows follow the C rules (core/pb_result.c): the aggregate latency is the statistics of
the pooled samples of all pairs (each pair's samples come from a fixed quantile shape around
its centre), the aggregate bandwidth is all bytes over the global window, and the worst-pair
columns name the pair with the highest p50 / lowest bandwidth.
  FAKE_PB_NOISE  relative noise amplitude (default 0.01), seeded by FAKE_PB_SEED + argv
  FAKE_PB_FAIL_TEST  fail only for this test name (with FAKE_PB_MODE=fail)
  FAKE_PB_SLOW_TEST  sleep only for this test name (with FAKE_PB_MODE=slow)
  FAKE_PB_OVERSUB_PAIRS  runs with at least this many pairs carry the flag oversubscribed
                 on every row, as the executables write it (core/pb_flags.h)
  FAKE_PB_COUNTERS  ok|error|extra|congestion: port counters in the --env-json record
                 (fake_counters)
  FAKE_PB_LOG    append the argv (one JSON list a line) to this file
With -d DEV,DEV (verbs), pairs go round-robin over the devices: every row names its device and
a point on two or more devices gets one scope=device aggregate per device (core/pb_engine.c).
  FAKE_PB_HOST   the host column (default: this machine's name); then the pair rows' peer
                 column is the --connect address (a fabric scan over fake_ssh_local.py)
  FAKE_PB_SLOW_HOST  a node whose every link is FAKE_PB_SLOW_FACTOR times slower (this
                 host or the --connect peer; comma-separated node pairs A~B also work)
Exit codes: 0 ok, 1 runtime failure, 2 usage, 77 cannot run here.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import random
import signal
import socket
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[2] / "scripts"))
from pairbench.contract.columns import COLUMNS, SCHEMA_VERSION  # noqa: E402  (the driver's copy of pb_schema.h)
from pairbench.contract.sizes import parse_sizes  # noqa: E402  (the same rule as the executables)
from pairbench.contract.testtable import load_snapshot  # noqa: E402
from pairbench.errors import UsageError  # noqa: E402

TESTS = {"write_lat": "lat", "read_lat": "lat", "send_lat": "lat", "write_bw": "bw",
         "read_bw": "bw", "latency": "lat", "bw": "bw"}
SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


# Sample quantile shape around a pair's centre: (quantile, multiplier), piecewise linear.
SHAPE = ((0.0, 0.9), (0.5, 1.0), (0.9, 1.1), (0.99, 1.3), (0.999, 1.6), (1.0, 2.0))
PCTS = (("p50", 50000), ("p90", 90000), ("p99", 99000), ("p999", 99900))


def pair_samples(centre: float, n: int) -> list[float]:
    out = []
    for i in range(n):
        q = (i + 0.5) / n
        for (q0, m0), (q1, m1) in itertools.pairwise(SHAPE):
            if q <= q1:
                out.append(centre * (m0 + (m1 - m0) * (q - q0) / (q1 - q0)))
                break
    return out


def lat_stats(xs: list[float]) -> dict[str, str]:
    """pb_stats_compute: nearest rank, a percentile only when n >= 1 / (1 - q)."""
    xs = sorted(xs)
    n = len(xs)
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else math.nan
    out = {"lat_us_min": g9(xs[0]), "lat_us_max": g9(xs[-1]), "lat_us_mean": g9(mean),
           "lat_us_stdev": g9(sd)}
    for name, num in PCTS:
        ok = n * (100000 - num) >= 100000
        out[f"lat_us_{name}"] = g9(xs[-(-num * n // 100000) - 1]) if ok else ""
    return out


def g9(v: float) -> str:
    """As core/pb_csv.c prints a double: 9 significant digits, empty when not finite."""
    return f"{v:.9g}" if math.isfinite(v) else ""


def layout(a: argparse.Namespace, layer: str) -> str:
    """The buffers cell: --buffers, else the test's default layout ('' = no choice)."""
    info = load_snapshot()[layer].get(a.test)
    if not info or not info.buffers:
        return ""
    return a.buffers or info.default_buffers


def point_rows(a: argparse.Namespace, layer: str, host: str, size: int,
               centres: list[float]) -> list[dict[str, str]]:
    """Per-pair rows and the aggregate row of one point, by the rules of core/pb_result.c,
    timed as core/pb_window.c says: a count (-n), one common window (bandwidth: every pair
    runs exactly it), or a target (latency: -n samples, at least the target time)."""
    kind = TESTS[a.test]
    buffers = layout(a, layer)
    n = max(2, min(a.iterations, 2000))
    method, secs = ("count", 0.0) if a.count else (
        ("window", a.duration) if a.duration else
        ("target", a.lat_seconds) if kind == "lat" else ("window", a.bw_seconds))
    window_s = g9(secs) if secs else ""
    rows, pooled, gbit, dur, iters = [], [], [], [], []
    for pid, c in enumerate(centres):
        r = dict.fromkeys(COLUMNS, "")
        r.update(layer=layer, test=a.test, buffers=buffers, msg_size_bytes=str(size),
                 pairs=str(a.pairs), qps=str(a.qps) if layer == "verbs" else "",
                 pair_id=str(pid), warmup_iterations=str(a.warmup), window_method=method,
                 window_s=window_s, start_delay_us="0.5", status="ok", host=host,
                 cpu=str(pid), numa_node="0")
        if kind == "lat":
            xs = pair_samples(c, n)
            pooled += xs
            r.update(lat_kind="full_rtt" if a.test.startswith("read") else "half_rtt",
                     **lat_stats(xs))
            iters.append(a.iterations)
            dur.append(max(a.iterations * c * 1.02e-6, secs))
        else:
            g = size * 8 / (c * 1000.0)  # Gbit/s
            if method == "window":  # every pair stops at the common deadline
                iters.append(max(1, round(secs * g * 1e9 / (size * 8))))
                dur.append(secs)
                g = iters[-1] * size * 8 / (secs * 1e9)
            else:
                iters.append(a.iterations)
                dur.append(a.iterations * size * 8 / (g * 1e9))
            gbit.append(g)
            r.update(window="64", bw_gbit_s=g9(g), bw_mbyte_s=g9(g * 125),
                     msg_rate_per_s=g9(iters[-1] / dur[-1]), link_pct=g9(g))
        r["iterations"] = str(iters[-1])
        r["duration_s"] = g9(dur[-1])
        rows.append(r)
    agg = dict.fromkeys(COLUMNS, "")
    n_p = len(centres)
    spread = max(dur) - min(dur)  # every pair starts at 0
    agg.update(layer=layer, test=a.test, buffers=buffers, msg_size_bytes=str(size),
               pairs=str(a.pairs), qps=str(a.qps) if layer == "verbs" else "", pair_id="all",
               iterations=str(sum(iters)),
               warmup_iterations=str(a.warmup), status="ok", host=host, start_skew_us="0.4",
               duration_s=g9(max(dur)), window_method=method, window_s=window_s,
               start_delay_us="0.5",
               overlap_s=g9(min(dur)), end_spread_us=g9(spread * 1e6))
    if kind == "lat":
        agg.update(lat_kind=rows[0]["lat_kind"], **lat_stats(pooled))
        if n_p > 1:
            worst = max(range(n_p), key=lambda i: (float(rows[i]["lat_us_p50"]), -i))
            agg.update(worst_lat_pair_id=str(worst), worst_lat_us_p50=rows[worst]["lat_us_p50"],
                       worst_lat_us_p99=rows[worst]["lat_us_p99"])
    else:
        total = sum(gbit[i] * dur[i] for i in range(n_p))  # Gbit moved
        g = total / max(dur)
        agg.update(window="64", bw_gbit_s=g9(g), bw_mbyte_s=g9(g * 125),
                   msg_rate_per_s=g9(sum(iters) / max(dur)), link_pct=g9(g),
                   fairness=g9(sum(gbit) ** 2 / (len(gbit) * sum(x * x for x in gbit))))
        if n_p > 1:
            low = min(range(n_p), key=lambda i: (gbit[i], i))
            agg.update(min_bw_pair_id=str(low), min_pair_bw_gbit_s=g9(gbit[low]),
                       min_pair_bw_share=g9(gbit[low] / (sum(gbit) / len(gbit))))
            if spread > 0.05 * max(dur):  # PB_TAIL_FRACTION
                agg["flags"] = "tail_dominated"
    return [*rows, agg]


def device_point_rows(a: argparse.Namespace, layer: str, host: str, size: int,
                      centres: list[float], devices: list[str]) -> list[dict[str, str]]:
    """point_rows with pair i on devices[i % len]: labelled rows, and with >= 2 devices one
    aggregate per device from that device's pairs alone (pair ids mapped back)."""
    rows = point_rows(a, layer, host, size, centres)
    dev_of = [devices[i % len(devices)] for i in range(len(centres))]
    for pid, r in enumerate(rows[:-1]):
        r.update(scope="pair", device=dev_of[pid], port="1", port_addr=f"gid:1:{dev_of[pid]}",
                 peer_device=dev_of[pid])
    used = list(dict.fromkeys(dev_of))
    rows[-1].update(scope="all", device="+".join(used) if len(used) > 1 else used[0])
    if len(used) < 2:
        return rows
    for dev in used:
        ids = [i for i in range(len(centres)) if dev_of[i] == dev]
        sub = point_rows(a, layer, host, size, [centres[i] for i in ids])[-1]
        for col in ("worst_lat_pair_id", "min_bw_pair_id"):
            if sub[col]:
                sub[col] = str(ids[int(sub[col])])
        sub.update(scope="device", device=dev, port="1", port_addr=f"gid:1:{dev}",
                   peer_device=dev)
        rows.append(sub)
    return rows


def usage(msg: str) -> int:
    print(f"fake-pairbench: {msg}", file=sys.stderr)
    return 2


def fake_counters(rows: list[dict], sizes: list[int]) -> list[dict]:
    """FAKE_PB_COUNTERS=ok|error|extra|congestion: the "counters" records pairbench-verbs
    writes (docs/health.md), rxe's names on device fake0: packets as the pairs' rows say they
    moved (1024 B MTU); error: out_of_seq_request moves at the last size; extra: 10x the
    packets; congestion: np_cnp_sent 5 per pair row and, from the ethtool source,
    rx_prio3_pause 7 and rx_crc_errors_phy 0."""
    how = os.environ["FAKE_PB_COUNTERS"]
    out = []
    for size in sizes:
        msgs = sum(float(r["msg_rate_per_s"] or 0) * float(r["duration_s"] or 0)
                   for r in rows if r["msg_size_bytes"] == str(size) and r["pair_id"] != "all")
        pkts = int(msgs * max(1, -(-size // 1024))) * (10 if how == "extra" else 1)
        err = 12 if how == "error" and size == sizes[-1] else 0
        deltas = {"sent_pkts": pkts, "rcvd_pkts": pkts, "out_of_seq_request": err,
                  "rdma_sends": 0}
        if how == "congestion":
            deltas["np_cnp_sent"] = 5 * sum(1 for r in rows if r["msg_size_bytes"] == str(size)
                                            and r["pair_id"] != "all")
        out.append({"msg_size_bytes": size, "device": "fake0", "port": 1,
                    "source": "hw_counters", "deltas": deltas})
        if how == "congestion":
            out.append({"msg_size_bytes": size, "device": "fake0", "port": 1,
                        "source": "ethtool",
                        "deltas": {"rx_prio3_pause": 7, "rx_crc_errors_phy": 0}})
    return out


def fake_pattern_node(a: argparse.Namespace) -> int | None:
    """--pattern: the node of line RANK of --pattern-hosts (the launcher's rank variable),
    %r in -o/--env-json replaced by it, the rows' host that node's name and pattern the
    pattern; a rank beyond the file is refused (exit 2) as the real one does."""
    rank = os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("SLURM_PROCID")
    if rank is None or not a.pattern_hosts:
        return usage("--pattern needs a launcher rank and --pattern-hosts")
    names = [ln.split()[0] for ln in Path(a.pattern_hosts).read_text().splitlines() if ln.split()]
    if int(rank) >= len(names):
        return usage(f"--pattern: rank {rank}, --pattern-hosts lists {len(names)} nodes")
    os.environ["FAKE_PB_HOST"] = names[int(rank)]
    a.output = a.output.replace("%r", rank) if a.output else None
    a.env_json = a.env_json.replace("%r", rank) if a.env_json else None
    return None


def main() -> int:
    mode = os.environ.get("FAKE_PB_MODE", "ok")
    layer = "mpi" if "mpi" in HERE.name or os.environ.get("FAKE_PB_LAYER") == "mpi" else "verbs"
    layer = os.environ.get("FAKE_PB_LAYER", layer)
    if os.environ.get("FAKE_PB_LOG"):
        with open(os.environ["FAKE_PB_LOG"], "a") as f:
            f.write(json.dumps(sys.argv[1:]) + "\n")
    if "--print-schema" in sys.argv[1:]:
        print(f"pairbench-schema {9 if mode == 'badschema' else SCHEMA_VERSION}")
        for c in COLUMNS:
            print(f"{c}\tfake description")
        return 0
    ap = argparse.ArgumentParser(prog="fake-pairbench", add_help=True)
    ap.add_argument("--test")
    ap.add_argument("-s", "--sizes", default="8")
    ap.add_argument("-n", "--iterations", type=int)  # not given: a time (the fake counts 1000)
    ap.add_argument("-w", "--warmup", type=int, default=100)
    ap.add_argument("-D", "--duration", type=float)
    ap.add_argument("--bw-seconds", type=float, default=0.2)
    ap.add_argument("--lat-seconds", type=float, default=0.1)
    ap.add_argument("--lat-samples", type=int, default=1000)
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--buffers", choices=["fresh", "peer"])
    ap.add_argument("--qps", type=int, default=1)  # verbs: every row says its QP count (mpi: empty)
    ap.add_argument("--pin", default="compact")
    ap.add_argument("--pin-list")
    ap.add_argument("--allow-oversubscribe", action="store_true")
    ap.add_argument("-o", "--output")
    ap.add_argument("--env-json")
    ap.add_argument("--timeout", type=float)
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--list-tests", action="store_true")
    ap.add_argument("--format", choices=["text", "json"], default="text")
    ap.add_argument("--loopback", action="store_true")
    ap.add_argument("--connect")
    ap.add_argument("--server", action="store_true")
    ap.add_argument("-d", "--device")
    ap.add_argument("--pattern")  # pairbench-verbs --pattern: one rank per node (issue 35)
    ap.add_argument("--pattern-hosts")
    ap.add_argument("--probe")  # pairbench-verbs --pattern --probe: node 1's scope=probe rows
    try:
        a = ap.parse_args()
    except SystemExit as exc:
        return 2 if exc.code else 0
    if a.pattern is not None:
        rc = fake_pattern_node(a)
        if rc is not None:
            return rc
    a.count = a.iterations is not None
    if not a.count:
        a.iterations = 1000
    if a.list_tests and a.format == "json":  # the real table of the layer (the snapshot's)
        tables = json.loads((HERE.parents[2] / "scripts" / "pairbench" / "contract" /
                             "test_tables.json").read_text())
        print(json.dumps(tables[layer]))
        return 0
    if a.list_tests:
        print("\n".join(TESTS))
        return 0
    if a.test not in TESTS:
        return usage(f"unknown test {a.test!r}")
    if mode == "skip":
        print("fake-pairbench: no RDMA device found (set PB_RDMA_DEVICE)", file=sys.stderr)
        return 77
    if os.environ.get("FAKE_PB_PIDFILE"):
        with open(os.environ["FAKE_PB_PIDFILE"], "a") as f:
            f.write(f"{os.getpid()}\n")
    if mode == "crashstart":
        left = Path(os.environ["FAKE_PB_CRASHES"]) if os.environ.get("FAKE_PB_CRASHES") else None
        n = int(left.read_text()) if left else 1
        if n > 0:
            if left:
                left.write_text(str(n - 1))
            print("fake-pairbench: [node1] *** Process received signal *** (in MPI_Init)",
                  file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "slow" and os.environ.get("FAKE_PB_SLOW_TEST", a.test) == a.test:
        time.sleep(float(os.environ.get("FAKE_PB_SLEEP", "60")))
    if mode == "fail" and os.environ.get("FAKE_PB_FAIL_TEST", a.test) == a.test:
        print(f"fake-pairbench: pair 0: connect to peer failed (test {a.test})", file=sys.stderr)
        return 1
    try:
        sizes = parse_sizes(a.sizes)
    except UsageError as exc:
        return usage(f"option --sizes: {exc}")
    if mode == "partial":
        sizes = sizes[:1]
    scale = float(os.environ.get("FAKE_PB_SCALE", "1.0"))
    noise = float(os.environ.get("FAKE_PB_NOISE", "0.01"))
    seed = os.environ.get("FAKE_PB_SEED", "0") + " ".join(sys.argv[1:])
    rng = random.Random(hashlib.sha256(seed.encode()).hexdigest())
    host = os.environ.get("FAKE_PB_HOST") or socket.gethostname()
    slow = int(os.environ.get("FAKE_PB_SLOW_PAIR", "-1"))
    factor = float(os.environ.get("FAKE_PB_SLOW_FACTOR", "2"))
    slow_links = {x.strip() for x in os.environ.get("FAKE_PB_SLOW_HOST", "").split(",")
                  if x.strip()}
    peer = a.connect if os.environ.get("FAKE_PB_HOST") and a.connect else ""
    if peer and (host in slow_links or peer in slow_links
                 or "~".join(sorted((host, peer))) in slow_links):
        scale *= factor
    rows = []
    for size in sizes:
        base = (1.5 + size / 2000.0) * (1 + 0.05 * (a.pairs - 1)) * scale
        centres = [base * (1 + noise * rng.uniform(-1, 1)) * (factor if pid == slow else 1.0)
                   for pid in range(a.pairs)]
        if a.device and layer == "verbs":
            rows += device_point_rows(a, layer, host, size, centres, a.device.split(","))
        else:
            rows += point_rows(a, layer, host, size, centres)
    oversub = int(os.environ.get("FAKE_PB_OVERSUB_PAIRS", "0"))
    if oversub and a.pairs >= oversub:
        for r in rows:
            r["flags"] = ";".join(f for f in (r["flags"], "oversubscribed") if f)
    rank = os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("SLURM_PROCID")
    if a.probe and rank == "1":  # the victim probe's client node (vb_probe.c): a row per size
        for size in sizes:
            r = dict.fromkeys(COLUMNS, "")
            r.update(layer=layer, test=a.test, msg_size_bytes=str(size), pairs=str(a.pairs),
                     pair_id=str(a.pairs), scope="probe", probe_test=a.probe, status="ok",
                     host=host, lat_kind="half_rtt", iterations="500", idle_iterations="2000",
                     idle_lat_us_p50="2", idle_lat_us_p99="3", lat_us_p50="5",
                     lat_us_p99="9", lat_inflation_p50="2.5", lat_inflation_p99="3",
                     qps=str(a.qps))
            rows.append(r)
    for r in rows:
        if peer and r["pair_id"] != "all":
            r["peer"] = peer
        if a.pattern is not None:
            r["pattern"] = a.pattern
    if mode == "errorrow":
        for r in rows:
            if r["msg_size_bytes"] == str(sizes[-1]):
                r.update(status="error", error="completion error IBV_WC_RETRY_EXC_ERR on pair 0")
                for c in COLUMNS:
                    if c.startswith(("lat_us", "bw_", "msg_rate", "link_pct")):
                        r[c] = ""
    if a.env_json:
        # "placement" as both binaries write it (issue 12, contract 3); FAKE_PB_ENV_KEY
        # gives a record of before (verbs "workers", MPI "ranks").
        key = os.environ.get("FAKE_PB_ENV_KEY", "placement")
        env = {"host": host, "layer": layer, "test": a.test, key: [
            {"pair": i, "server_cpu": 2 * i, "client_cpu": 2 * i + 1} for i in range(a.pairs)]}
        if a.pattern is not None:  # each worker's flow (vb_dev.c): a made-up numbering
            for i, w in enumerate(env[key]):
                w["pattern"] = {"flow": 100 * int(rank or 0) + i, "slot": i}
        if os.environ.get("FAKE_PB_COUNTERS"):
            env.update(device="fake0", counters=fake_counters(rows, sizes))
        Path(a.env_json).write_text(json.dumps(env))
    if mode == "garbage":
        text = "this is not,a\ncsv \"file\n"
    else:
        ver = "9" if mode == "badschema" else str(SCHEMA_VERSION)
        lines = [",".join(COLUMNS)]
        for r in rows:
            r["schema_version"] = ver
            lines.append(",".join(r[c] for c in COLUMNS))
        text = "\n".join(lines) + "\n"
    if mode == "truncated":  # die in the middle of the first row of the second size
        lines = text.splitlines(keepends=True)
        n_first = 1 + a.pairs + 1
        cut = "".join(lines[:n_first]) + lines[n_first][: len(lines[n_first]) // 2]
        with open(a.output or "/dev/stdout", "w") as f:
            f.write(cut)
        os.kill(os.getpid(), 9)
    if a.output:
        Path(a.output).write_text(text)
    else:
        sys.stdout.write(text)
    if not a.quiet:
        print(f"fake-pairbench: {len(rows)} rows", file=sys.stderr)
    return 1 if mode in ("partial", "errorrow") else 0


if __name__ == "__main__":
    sys.exit(main())
