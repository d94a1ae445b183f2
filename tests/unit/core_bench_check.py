#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""pb-core-bench runs (small) and says what it measured: the clock line (source, cost,
resolution), then one CSV row per process count asked for, each with the rounds asked for and
ordered, positive timings (p50 <= p99, skew p50 <= p99 <= max).  The numbers themselves are
not asserted (STYLE.md: never a timing in a test).

usage: core_bench_check.py PB_CORE_BENCH      Python standard library only; exit 0 = pass.
"""
import csv
import re
import subprocess
import sys

ROUNDS, PROCS = 200, (2, 8)
HEADER = ["processes", "rounds", "round_ns_p50", "round_ns_p99", "round_ns_mean",
          "skew_ns_p50", "skew_ns_p99", "skew_ns_max"]


def main() -> int:
    p = subprocess.run([sys.argv[1], "-n", str(ROUNDS), "-p", ",".join(map(str, PROCS))],
                       capture_output=True, text=True, timeout=100)
    if p.returncode != 0:
        print(f"FAIL: exit {p.returncode}: {p.stderr.strip()}")
        return 1
    lines = p.stdout.splitlines() or [""]
    clock = re.fullmatch(r"# clock source=CLOCK_\w+ kernel_clocksource=\S+ cost_ns=([\d.]+) "
                         r"resolution_ns=(\d+) min_step_ns=(\d+) online_cpus=(\d+)", lines[0])
    problems = [] if clock and float(clock[1]) > 0 else [f"no clock line: {lines[0]!r}"]
    rows = list(csv.reader(ln for ln in lines if not ln.startswith("#")))
    if not rows or rows[0] != HEADER:
        problems.append(f"header {rows[0] if rows else None}, want {HEADER}")
    body = rows[1:]
    if [r[0] for r in body] != [str(n) for n in PROCS]:
        problems.append(f"rows for processes {[r[0] for r in body]}, want {list(PROCS)}")
    for r in body:
        v = dict(zip(HEADER, r, strict=True))
        t = {k: float(x) for k, x in v.items() if k not in ("processes", "rounds")}
        if v["rounds"] != str(ROUNDS):
            problems.append(f"{v['processes']} processes: {v['rounds']} rounds, want {ROUNDS}")
        if not (0 < t["round_ns_p50"] <= t["round_ns_p99"] and t["round_ns_mean"] > 0
                and 0 <= t["skew_ns_p50"] <= t["skew_ns_p99"] <= t["skew_ns_max"]):
            problems.append(f"{v['processes']} processes: timings out of order: {r}")
    for msg in problems:
        print(f"FAIL: {msg}")
    if not problems:
        print(f"ok: clock cost {clock[1]} ns; barrier rounds and skew for {len(body)} process "
              f"counts, {ROUNDS} rounds each")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
