#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Benchmark of the driver's own work in a fabric scan through the simulated fabric
(tests/sim/fabric_sim.py stands in for mpirun + pairbench-mpi on K nodes).

    results/fabric-scale/bench.py K RESULTS_DIR [extra pairbench fabric options]

Runs `pairbench fabric` in this process and prints one JSON line: K, wall time of the
whole command, the simulated jobs' time (the parts' elapsed_s in metadata.json: what the
cluster would spend), the driver's own time (the difference: planning, progress reading,
collection, analysis, outputs), this process's peak RSS (the driver; the simulator is a
child process and not counted), the verdicts' suspects, and the load average before and
after (the machine is shared: figures taken under load are marked so)."""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

from pairbench.cli import main  # noqa: E402


def run(k: int, results: str, extra: list[str]) -> dict:
    hosts = REPO / results / f"hosts-{k}.txt" if not os.path.isabs(results) else \
        Path(results) / f"hosts-{k}.txt"
    hosts.parent.mkdir(parents=True, exist_ok=True)
    hosts.write_text("".join(f"node{i:04d}\n" for i in range(k)))
    argv = ["fabric", "--launcher", "mpirun", "--launcher-cmd",
            str(REPO / "tests" / "sim" / "fabric_sim.py"), "--binary", sys.executable,
            "--hosts", f"@{hosts}", "--test", "latency,bw", "-s", "8,64K",
            "--results-dir", str(hosts.parent), *extra]
    load0 = os.getloadavg()
    t0 = time.monotonic()
    before = set(hosts.parent.iterdir())
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    wall = time.monotonic() - t0
    run_dir = next(p for p in set(hosts.parent.iterdir()) - before if p.is_dir())
    meta = json.loads((run_dir / "metadata.json").read_text())
    jobs = sum(p.get("elapsed_s", 0) for js in meta["scan"]["jobs"].values()
               for p in js["parts"])
    fab = json.loads((run_dir / "fabric.json").read_text())["verdicts"]
    return {"k": k, "exit": code, "wall_s": round(wall, 1), "sim_jobs_s": round(jobs, 1),
            "driver_s": round(wall - jobs, 1),
            "driver_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                                         / 1024, 1),
            "data_csv_mib": round((run_dir / "data.csv").stat().st_size / 2**20, 1),
            "suspects": [[v["test"], v["msg_size_bytes"], v["suspect_nodes"],
                          v["suspect_links"], v.get("confirmed", [])] for v in fab],
            "loadavg_before": load0, "loadavg_after": os.getloadavg(),
            "run_dir": str(run_dir), "argv": argv}


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]), sys.argv[2], sys.argv[3:])))
