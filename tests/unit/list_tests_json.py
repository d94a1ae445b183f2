#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""`--list-tests --format json` of each binary given: the test table as data
(contract 1 of issue 12, docs/adding-a-test.md).  Checks every required key
and its type and allowed values, that the human list names the same tests in
the same order, and that --format tsv has one line per test.

usage: list_tests_json.py BINARY...      Python standard library only; exit 0 = pass.
"""
import json
import os
import subprocess
import sys

KINDS = {"latency", "bandwidth", "message_rate", "loaded_latency", "collective", "halo"}
LAT_KINDS = {"half_rtt", "full_rtt", "op", None}
METRICS = {"lat_us_p50", "bw_gbit_s", "msg_rate_per_s"}
REQUIRED = {"name": str, "label": str, "summary": str, "kind": str, "primary_metric": str,
            "higher_is_worse": bool, "variants": list, "buffers": list, "bidir": bool,
            "payload": bool,
            "window": bool, "rooted": bool, "min_pairs": int, "aggregate_iterations": str,
            "access": dict}


def env() -> dict:
    e = dict(os.environ)
    e["OMPI_ALLOW_RUN_AS_ROOT"] = e["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    # Open MPI's own start-up allocations are reported as leaks by a sanitizer build.
    e["ASAN_OPTIONS"] = e.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    return e


def run(binary: str, *args: str) -> str:
    p = subprocess.run([binary, "--list-tests", *args], capture_output=True, text=True,
                       timeout=60, env=env())
    if p.returncode != 0:
        raise SystemExit(f"{binary} --list-tests {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p.stdout


def check_test(t: dict) -> list[str]:
    bad = [f"{k}: missing or not {ty.__name__}" for k, ty in REQUIRED.items()
           if not isinstance(t.get(k), ty)]
    if "lat_kind" not in t or t["lat_kind"] not in LAT_KINDS:
        bad.append(f"lat_kind {t.get('lat_kind')!r}")
    if t.get("kind") not in KINDS:
        bad.append(f"kind {t.get('kind')!r}")
    if t.get("primary_metric") not in METRICS:
        bad.append(f"primary_metric {t.get('primary_metric')!r}")
    if t.get("primary_metric") == "lat_us_p50" and t.get("higher_is_worse") is not True:
        bad.append("a latency metric must be higher_is_worse")
    if t.get("aggregate_iterations") not in ("sum", "shared"):
        bad.append(f"aggregate_iterations {t.get('aggregate_iterations')!r}")
    fixed = t.get("fixed_size_bytes", "missing")
    if fixed is not None and (not isinstance(fixed, int) or isinstance(fixed, bool)):
        bad.append(f"fixed_size_bytes {fixed!r}")
    if isinstance(t.get("min_pairs"), int) and t["min_pairs"] < 1:
        bad.append("min_pairs < 1")
    if not all(isinstance(v, str) for v in t.get("variants", [])):
        bad.append("variants not strings")
    if t.get("buffers") not in ([], ["fresh", "peer"]):
        bad.append(f"buffers {t.get('buffers')!r}: [] (no choice) or ['fresh', 'peer']")
    if not all(isinstance(v, str) for v in t.get("access", {}).values()):
        bad.append("access values not strings")
    return [f"{t.get('name')}: {b}" for b in bad]


def check(binary: str) -> list[str]:
    table = json.loads(run(binary, "--format", "json"))
    bad = []
    if table.get("layer") not in ("verbs", "mpi") or table.get("schema_version") != 2:
        bad.append(f"layer/schema_version: {table.get('layer')!r} {table.get('schema_version')!r}")
    tests = table.get("tests", [])
    if not tests:
        bad.append("no tests")
    for t in tests:
        bad += check_test(t)
    names = [t.get("name") for t in tests]
    human = [line.split()[0] for line in run(binary).splitlines() if line.strip()]
    if human != names:
        bad.append(f"human list {human} != json names {names}")
    if len(set(names)) != len(names):
        bad.append("a name twice")
    tsv = run(binary, "--format", "tsv").splitlines()
    if len(tsv) != len(names) + 1 or [ln.split("\t")[0] for ln in tsv[1:]] != names:
        bad.append("tsv: not a header plus one line per test")
    return [f"{os.path.basename(binary)}: {b}" for b in bad]


def main() -> int:
    bad = [b for binary in sys.argv[1:] for b in check(binary)]
    print("\n".join(bad) or f"ok: {len(sys.argv) - 1} test tables")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
