#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Benchmark of the driver's own work in a fabric scan through the simulated fabric
(tests/sim/fabric_sim.py stands in for mpirun + pairbench-mpi on K nodes).

    results/fabric-scale/bench.py K RESULTS_DIR [extra pairbench fabric options]

Runs `pairbench fabric` in this process and prints one JSON line: K, wall time of the
whole command, the simulated jobs' time (the parts' elapsed_s in metadata.json: what the
cluster would spend, as the driver measured them), the driver's own time (the difference:
planning, progress reading, collection, analysis, outputs), the same from the simulator's
own account of its launches (scan and confirmation jobs; PB_SIM_TIMES: a driver busy
reading the rows notices a job's end late, which its elapsed_s counts as the job's), the
driver's CPU time (user + system of this process: the
better figure on a shared machine, where wall time includes waiting for a CPU), this
process's peak RSS (the driver; the simulator is a child process and not counted), the size
of the rows file (data.parquet or data.csv), the verdicts' suspects, the machine, and the
load average before and after (the machine is shared: figures taken under load are marked
so).

PB_BENCH_TREE=DIR runs the driver and the simulator of another tree (e.g. an extracted
older commit: `git archive C scripts tests/sim | tar -x -C DIR`), for before/after."""

from __future__ import annotations

import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

TREE = Path(os.environ.get("PB_BENCH_TREE") or Path(__file__).resolve().parents[2])
sys.path.insert(0, str(TREE / "scripts"))

from pairbench.cli import main  # noqa: E402


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def size(p: Path) -> int:
    """Bytes of a file, or of the files of a directory (data.parquet is one)."""
    return sum(f.stat().st_size for f in p.iterdir()) if p.is_dir() else p.stat().st_size


def run(k: int, results: str, extra: list[str]) -> dict:
    out = Path(results).absolute()
    out.mkdir(parents=True, exist_ok=True)
    hosts = out / f"hosts-{k}.txt"
    hosts.write_text("".join(f"node{i:04d}\n" for i in range(k)))
    argv = ["fabric", "--launcher", "mpirun", "--launcher-cmd",
            str(TREE / "tests" / "sim" / "fabric_sim.py"), "--binary", sys.executable,
            "--hosts", f"@{hosts}", "--test", "latency,bw", "-s", "8,64K",
            "--results-dir", str(out), *extra]
    times = out / f"sim-times-{k}.jsonl"  # the simulator's own start and end per launch
    times.unlink(missing_ok=True)
    os.environ["PB_SIM_TIMES"] = str(times)
    load0 = os.getloadavg()
    t0 = time.monotonic()
    before = set(out.iterdir())
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    wall = time.monotonic() - t0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    run_dir = next(p for p in set(out.iterdir()) - before if p.is_dir())
    meta = json.loads((run_dir / "metadata.json").read_text())
    jobs = sum(p.get("elapsed_s", 0) for js in meta["scan"]["jobs"].values()
               for p in js["parts"])
    fab = json.loads((run_dir / "fabric.json").read_text())["verdicts"]
    rows = next((run_dir / n for n in ("data.parquet", "data.csv")
                 if (run_dir / n).exists()), None)
    own = [json.loads(ln) for ln in times.read_text().splitlines()] if times.exists() \
        else []
    sim_s = sum(x["end"] - x["start"] for x in own)
    return {"k": k, "exit": code, "wall_s": round(wall, 1), "sim_jobs_s": round(jobs, 1),
            "driver_s": round(wall - jobs, 1),
            # the simulator's own time (every launch: scan and confirmation jobs), where it
            # says it (tests/sim/fabric_sim.py PB_SIM_TIMES); the driver's time beside it
            "sim_own_s": round(sim_s, 1) if own else None,
            "driver_after_sim_s": round(wall - sim_s, 1) if own else None,
            "driver_cpu_s": round(ru.ru_utime + ru.ru_stime, 1),
            "driver_peak_rss_mib": round(ru.ru_maxrss / 1024, 1),
            "rows_file": rows.name if rows else None,
            "rows_file_mib": round(size(rows) / 2**20, 1) if rows else None,
            "suspects": [[v["test"], v["msg_size_bytes"], v["suspect_nodes"],
                          v["suspect_links"], v.get("confirmed", [])] for v in fab],
            "machine": f"{os.cpu_count()} CPUs ({cpu_model()}), "
                       f"{os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f}"
                       f" GiB, {platform.system()} {platform.release()}, Python "
                       f"{platform.python_version()}",
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - wall)),
            "tree": str(TREE), "env": {k: v for k, v in os.environ.items()
                                        if k.startswith("PB_SIM_")},
            "loadavg_before": load0, "loadavg_after": os.getloadavg(),
            "run_dir": str(run_dir), "argv": argv}


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]), sys.argv[2], sys.argv[3:])))
