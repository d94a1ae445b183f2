"""The fabric scan (`pairbench fabric`): every node pair of K nodes measured once, in K-1
rounds (K odd: K rounds with a bye) of disjoint node pairs (pairbench.runner.schedule); the
node x node matrix, heatmap and suspects are made from its rows afterwards
(pairbench.analysis.outliers, pairbench.present.fabricout).

MPI layer: ONE job per test (mpirun -H or srun -N K) runs every round: pairbench-mpi
--pattern nodes:A-B,C-D/nodes:A-C,B-D/... pairs the ranks of each round's node pairs,
starts them together through its node barrier, and moves to the next round inside the
same job. The rounds live in the executable, not in K-1 launches, because a job start
(daemons on every node, MPI_Init's wire-up) costs seconds and would dominate a scan of
small points; one job also keeps one rank placement and clock-offset estimate for all
rounds. Nodes are numbered by MPI (lowest world rank), so the rows' host/peer columns,
not the order of --hosts, say which node pair a row measured.
Verbs layer: one pairbench-verbs invocation per node pair (server on A, client on B,
through the launcher, as in `pairbench sweep`); the node pairs of a round start
together, the next round starts when every pair of this one ended. Their rows get
pattern = nodes:A-B (host names) from the driver: each node pair is its own point.

Planning is pure (plan_fabric) and goes through the launchers (pairbench.runner.launchers:
a job over K nodes, or a point per node pair); running reuses the sweep's
run_point/collect_point.
"""

from __future__ import annotations

import itertools
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from pairbench.contract import testtable
from pairbench.contract.testtable import LAYERS
from pairbench.errors import UsageError
from pairbench.runner import fingerprint, launchers
from pairbench.runner.collect import (
    atomic_write_json,
    atomic_write_text,
    collect_point,
    rows_to_csv,
)
from pairbench.runner.exeopts import ExeSettings, check_exe, exe_argv, exe_values
from pairbench.runner.launchers.base import Side
from pairbench.runner.plan import Point, SweepConfig, plan_point
from pairbench.runner.run import PointResult, run_point
from pairbench.runner.rundir import new_run_dir, now_iso, repo_root
from pairbench.runner.schedule import Round, round_pattern, tournament


def default_tests(layer: str) -> tuple[str, ...]:
    """The first latency test and the first bandwidth test of the layer's test table
    (mpi: latency, bw; verbs: write_lat, write_bw)."""
    table = [t for t in testtable.load_snapshot()[layer] if t.pairwise]
    lat = next(t.name for t in table if t.kind in testtable.LATENCY_KINDS)
    bw = next(t.name for t in table if t.kind in testtable.BANDWIDTH_KINDS)
    return lat, bw


def scan_launchers() -> tuple[str, ...]:
    """The launchers that can put the two ends of a node pair on two hosts."""
    return launchers.names(lambda c: c.multi_node)


@dataclass(frozen=True)
class FabricConfig(ExeSettings):
    """A fabric scan. The executables' pass-through options are ExeSettings' fields
    (pairbench.runner.exeopts), as a sweep's."""

    layer: str
    launcher: str
    hosts: tuple[str, ...]
    tests: tuple[str, ...]
    sizes: tuple[int, ...]
    binary: str
    run_dir: str
    ranks_per_node: int = 1  # pairs per node pair
    repetitions: int = 1  # whole scans; a node pair's value is the median over them
    timeout_s: float = 600.0
    launcher_cmd: str | None = None
    launcher_args: tuple[str, ...] = ()
    remote_binary: str | None = None
    as_root: bool = False
    exe_args: tuple[str, ...] = ()
    connect_addr: str | None = None  # (launchers read it; a node pair's server is its first node)


@dataclass(frozen=True)
class Job:
    """One launch: a point (its argv, files relative to run_dir/subdir) in a wave of
    launches that start together."""

    point: Point
    subdir: str
    wave: int
    node_pair: tuple[str, str] | None = None  # verbs: (A, B)


def check_config(cfg: FabricConfig) -> None:
    if cfg.layer not in LAYERS:
        raise UsageError(f"--layer must be mpi or verbs, got {cfg.layer!r}")
    usable = scan_launchers()
    if cfg.launcher not in usable:
        raise UsageError(f"--launcher must be one of {', '.join(usable)}, got "
                         f"{cfg.launcher!r}")
    if cfg.layer == "mpi" and not launchers.get(cfg).jobs:
        jobs = " or ".join(launchers.names(lambda c: c.jobs))
        raise UsageError(f"--layer mpi runs inside one {jobs} job: use --launcher {jobs}")
    if len(cfg.hosts) < 2:
        raise UsageError(f"--hosts needs at least 2 nodes, got {len(cfg.hosts)}")
    if cfg.ranks_per_node < 1:
        raise UsageError("--ranks-per-node must be >= 1")
    if cfg.repetitions < 1:
        raise UsageError("--repetitions must be >= 1")
    if not cfg.tests:
        raise UsageError("no test given (--test NAME)")
    if cfg.timeout_s <= 0:
        raise UsageError("--timeout must be > 0")
    check_exe(cfg, cfg.layer)
    tournament(cfg.hosts)  # duplicates, too few


def mpi_exe(cfg: FabricConfig, test: str, patterns: list[str], csv: str,
            env_json: str) -> list[str]:
    args = [cfg.binary, "--test", test, "--sizes", ",".join(map(str, cfg.sizes)),
            "--pattern", "/".join(patterns), *exe_argv(cfg)]
    return [*args, "--timeout", f"{cfg.timeout_s:g}", "--quiet", "--output", csv,
            "--env-json", env_json, *cfg.exe_args]


def plan_fabric(cfg: FabricConfig) -> tuple[list[Round], list[Job]]:
    """The schedule (by host names) and the launches, in waves."""
    check_config(cfg)
    rounds = tournament(cfg.hosts)
    jobs: list[Job] = []
    reps = range(1, cfg.repetitions + 1)
    if cfg.layer == "mpi":
        launcher = launchers.get(cfg)
        index = {h: i for i, h in enumerate(cfg.hosts)}
        patterns = [round_pattern(rnd, index) for rnd in rounds]
        for rep, test in itertools.product(reps, cfg.tests):
            name = f"r{rep}-{test}-scan"
            csv, env = f"raw/{name}.csv", f"raw/{name}.env.json"
            exe = mpi_exe(cfg, test, patterns, f"{cfg.run_dir}/{csv}", f"{cfg.run_dir}/{env}")
            side = Side("main", tuple(launcher.job_argv(exe, cfg.ranks_per_node)),
                        f"raw/{name}.stdout", f"raw/{name}.stderr")
            p = Point(index=len(jobs), name=name, layer="mpi", test=test, pairs=0,
                      repetition=rep, sizes=cfg.sizes, sides=(side,),
                      timeout_s=cfg.timeout_s * len(rounds), csv=csv, env_json=env,
                      env=launcher.env())
            jobs.append(Job(point=p, subdir=".", wave=len(jobs)))
        return rounds, jobs
    wave = 0
    for rep, test in itertools.product(reps, cfg.tests):
        for r, rnd in enumerate(rounds):
            for a, b in rnd:
                sub = f"pairs/r{rep}-{test}-round{r + 1}-{a}-{b}"
                sc = SweepConfig(layer="verbs", tests=(test,), sizes=cfg.sizes,
                                 pairs=(cfg.ranks_per_node,), binary=cfg.binary,
                                 run_dir=f"{cfg.run_dir}/{sub}", launcher=cfg.launcher,
                                 hosts=(a, b), timeout_s=cfg.timeout_s,
                                 exe_args=cfg.exe_args, launcher_cmd=cfg.launcher_cmd,
                                 launcher_args=cfg.launcher_args,
                                 remote_binary=cfg.remote_binary, as_root=cfg.as_root,
                                 connect_addr=a, **exe_values(cfg))
                p = plan_point(sc, len(jobs), test, cfg.ranks_per_node, rep)
                jobs.append(Job(point=replace(p, name=f"r{rep}-{test}-round{r + 1}-{a}-{b}"),
                                subdir=sub, wave=wave, node_pair=(a, b)))
            wave += 1
    return rounds, jobs


def execute(cfg: FabricConfig, jobs: list[Job], run_dir: Path, run_id: str,
            meta: dict) -> list[dict]:
    """Run the waves in order, every job of a wave at once; rows of every job."""
    data: list[dict] = []
    meta["points"] = []
    grace = min(10.0, max(1.0, 0.1 * cfg.timeout_s))

    def one(j: Job) -> PointResult:
        return run_point(j.point, run_dir / j.subdir, grace)

    for w in sorted({j.wave for j in jobs}):
        wave = [j for j in jobs if j.wave == w]
        for j in wave:
            (run_dir / j.subdir / "raw").mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(max_workers=len(wave)) as pool:
            results = list(pool.map(one, wave))
        for j, res in zip(wave, results, strict=True):
            rows = collect_point(res, run_dir / j.subdir, run_id)
            if j.node_pair:
                # One pairbench-verbs per node pair: the driver names the node pair in
                # the pattern column, so each node pair is its own point (POINT_KEY).
                for r in rows:
                    r["pattern"] = r.get("pattern") or "nodes:{}-{}".format(*j.node_pair)
            data += rows
            n_bad = sum(r["status"] != "ok" for r in rows)
            meta["points"].append({"name": j.point.name, "wave": w, "subdir": j.subdir,
                                   "node_pair": list(j.node_pair) if j.node_pair else None,
                                   "exit_codes": res.exit_codes, "timed_out": res.timed_out,
                                   "elapsed_s": round(res.elapsed_s, 3), "error_rows": n_bad})
            print(f"fabric: {j.point.name}: {'ok' if res.ok and not n_bad else 'FAILED'} "
                  f"({res.elapsed_s:.1f} s)", file=sys.stderr)
        atomic_write_text(run_dir / "data.csv", rows_to_csv(data))
        atomic_write_json(run_dir / "metadata.json", meta)
    return data


def scan_to_dir(probe: FabricConfig, results_dir: str | None,
                analysis: dict) -> tuple[int, Path]:
    """Plan (every bad input an error before anything exists), then run the scan into a new
    run directory; (error rows, run directory). `analysis` is recorded in metadata.json for
    the outputs that are made from it."""
    plan_fabric(probe)
    launcher = launchers.get(probe)
    if not launcher.remote_binary and not Path(probe.binary).is_file():
        raise UsageError(f"executable {probe.binary} not found (build it, or pass --binary)")
    root = repo_root()
    results = Path(results_dir).absolute() if results_dir else root / "results"
    run_dir = new_run_dir(results)
    cfg = replace(probe, run_dir=str(run_dir))
    rounds, jobs = plan_fabric(cfg)
    meta = {"run_id": run_dir.name, "kind": "pairbench fabric", "status": "running",
            "started": now_iso(), "config": asdict(cfg),
            "schedule": [[list(p) for p in rnd] for rnd in rounds], "analysis": analysis}
    meta["fingerprint"] = fingerprint.gather(root, sys.argv)
    atomic_write_json(run_dir / "metadata.json", meta)
    data = execute(cfg, jobs, run_dir, run_dir.name, meta)
    n_err = sum(r.get("status") != "ok" for r in data)
    meta.update(finished=now_iso(), rows=len(data), error_rows=n_err,
                status="complete" if n_err == 0 else "complete_with_errors")
    atomic_write_json(run_dir / "metadata.json", meta)
    return n_err, run_dir
