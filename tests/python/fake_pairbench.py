#!/usr/bin/env python3
"""A fake pairbench-verbs / pairbench-mpi honouring the CSV contract, for driver tests.

Behaviour is chosen with environment variables (so the driver's argv stays realistic):
  FAKE_PB_MODE   ok (default) | fail (exit 1 after printing nothing) | partial (rows for the
                 first size only, then exit 1) | slow (sleep FAKE_PB_SLEEP s, default 60) |
                 skip (exit 77) | badschema (schema_version 9 in --print-schema and rows) |
                 garbage (non-CSV output) | errorrow (a status=error row for the largest size) |
                 truncated (rows of the first size, then half a row, then SIGKILL itself)
  FAKE_PB_SCALE  multiply every latency by this and divide bandwidths (default 1.0)
  FAKE_PB_NOISE  relative noise amplitude (default 0.01), seeded by FAKE_PB_SEED + argv
  FAKE_PB_FAIL_TEST  fail only for this test name (with FAKE_PB_MODE=fail)
  FAKE_PB_SLOW_TEST  sleep only for this test name (with FAKE_PB_MODE=slow)
  FAKE_PB_LOG    append the argv (one JSON list a line) to this file
Exit codes: 0 ok, 1 runtime failure, 2 usage, 77 cannot run here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import socket
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[2] / "scripts"))
from pairbench.columns import COLUMNS  # noqa: E402  (the driver's copy of core/pb_schema.h)

TESTS = {"write_lat": "lat", "read_lat": "lat", "send_lat": "lat", "write_bw": "bw",
         "read_bw": "bw", "latency": "lat", "bw": "bw"}
SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_sizes(text: str) -> list[int]:
    out: list[int] = []

    def one(t: str) -> int:
        t = t.strip()
        suf = t[-1].upper() if t and t[-1].isalpha() else ""
        return int(t[: len(t) - len(suf)]) * SUFFIX[suf]

    for part in text.split(","):
        if ":" in part:
            lo, hi = (one(x) for x in part.split(":"))
            p = 1
            while p <= hi:
                if p >= lo:
                    out.append(p)
                p <<= 1
        else:
            out.append(one(part))
    return sorted(set(out))


def usage(msg: str) -> int:
    print(f"fake-pairbench: {msg}", file=sys.stderr)
    return 2


def main() -> int:
    mode = os.environ.get("FAKE_PB_MODE", "ok")
    layer = "mpi" if "mpi" in HERE.name or os.environ.get("FAKE_PB_LAYER") == "mpi" else "verbs"
    layer = os.environ.get("FAKE_PB_LAYER", layer)
    if os.environ.get("FAKE_PB_LOG"):
        with open(os.environ["FAKE_PB_LOG"], "a") as f:
            f.write(json.dumps(sys.argv[1:]) + "\n")
    if "--print-schema" in sys.argv[1:]:
        print(f"pairbench-schema {9 if mode == 'badschema' else 1}")
        for c in COLUMNS:
            print(f"{c}\tfake description")
        return 0
    ap = argparse.ArgumentParser(prog="fake-pairbench", add_help=True)
    ap.add_argument("--test")
    ap.add_argument("-s", "--sizes", default="8")
    ap.add_argument("-n", "--iterations", type=int, default=1000)
    ap.add_argument("-w", "--warmup", type=int, default=100)
    ap.add_argument("-D", "--duration", type=float)
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--pin", default="compact")
    ap.add_argument("--pin-list")
    ap.add_argument("--allow-oversubscribe", action="store_true")
    ap.add_argument("-o", "--output")
    ap.add_argument("--env-json")
    ap.add_argument("--timeout", type=float)
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--list-tests", action="store_true")
    ap.add_argument("--loopback", action="store_true")
    ap.add_argument("--connect")
    ap.add_argument("--server", action="store_true")
    try:
        a = ap.parse_args()
    except SystemExit as exc:
        return 2 if exc.code else 0
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
    if mode == "slow" and os.environ.get("FAKE_PB_SLOW_TEST", a.test) == a.test:
        time.sleep(float(os.environ.get("FAKE_PB_SLEEP", "60")))
    if mode == "fail" and os.environ.get("FAKE_PB_FAIL_TEST", a.test) == a.test:
        print(f"fake-pairbench: pair 0: connect to peer failed (test {a.test})", file=sys.stderr)
        return 1
    sizes = parse_sizes(a.sizes)
    if mode == "partial":
        sizes = sizes[:1]
    scale = float(os.environ.get("FAKE_PB_SCALE", "1.0"))
    noise = float(os.environ.get("FAKE_PB_NOISE", "0.01"))
    seed = os.environ.get("FAKE_PB_SEED", "0") + " ".join(sys.argv[1:])
    rng = random.Random(hashlib.sha256(seed.encode()).hexdigest())
    host = socket.gethostname()
    rows = []
    kind = TESTS[a.test]
    for size in sizes:
        base = (1.5 + size / 2000.0) * (1 + 0.05 * (a.pairs - 1)) * scale
        per_pair_bw = []
        for pid in [*range(a.pairs), "all"]:
            lat = base * (1 + noise * rng.uniform(-1, 1))
            bw = size * 8 / (lat * 1000.0)  # Gbit/s
            r = dict.fromkeys(COLUMNS, "")
            r.update(schema_version="1", layer=layer, test=a.test, msg_size_bytes=str(size),
                     pairs=str(a.pairs), pair_id=str(pid), iterations=str(a.iterations),
                     warmup_iterations=str(a.warmup), status="ok", host=host,
                     start_skew_us="0.4" if pid == "all" else "", duration_s="0.01")
            if kind == "lat":
                r.update(lat_kind="full_rtt" if a.test.startswith("read") else "half_rtt",
                         lat_us_min=f"{lat * 0.9:.4f}", lat_us_p50=f"{lat:.4f}",
                         lat_us_p90=f"{lat * 1.1:.4f}", lat_us_p99=f"{lat * 1.3:.4f}",
                         lat_us_p999=f"{lat * 1.6:.4f}", lat_us_max=f"{lat * 2:.4f}",
                         lat_us_mean=f"{lat * 1.02:.4f}", lat_us_stdev=f"{lat * 0.05:.4f}")
            if pid != "all":
                r.update(cpu=str(pid), numa_node="0")
                per_pair_bw.append(bw)
            if kind == "bw":
                if pid == "all":
                    bw = sum(per_pair_bw)
                    s = sum(per_pair_bw)
                    jain = s * s / (len(per_pair_bw) * sum(x * x for x in per_pair_bw))
                    r["fairness"] = f"{jain:.4f}"
                r.update(window="64", bw_gbit_s=f"{bw:.4f}", bw_mbyte_s=f"{bw * 125:.3f}",
                         msg_rate_per_s=f"{bw * 1e9 / 8 / max(size, 1):.1f}",
                         link_pct=f"{bw:.3f}")
            rows.append(r)
    if mode == "errorrow":
        for r in rows:
            if r["msg_size_bytes"] == str(sizes[-1]):
                r.update(status="error", error="completion error IBV_WC_RETRY_EXC_ERR on pair 0")
                for c in COLUMNS:
                    if c.startswith(("lat_us", "bw_", "msg_rate", "link_pct")):
                        r[c] = ""
    if a.env_json:
        env = {"host": host, "layer": layer, "test": a.test, "pinning": [
            {"pair": i, "server_cpu": 2 * i, "client_cpu": 2 * i + 1} for i in range(a.pairs)]}
        Path(a.env_json).write_text(json.dumps(env))
    if mode == "garbage":
        text = "this is not,a\ncsv \"file\n"
    else:
        ver = "9" if mode == "badschema" else "1"
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
