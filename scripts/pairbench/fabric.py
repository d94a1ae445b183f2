"""`pairbench fabric`: every node pair of K nodes measured once, in K-1 rounds (K odd:
K rounds with a bye) of disjoint node pairs (pairbench.schedule), then the node x node
matrix, a heatmap, and the suspect links and nodes (pairbench.outliers).

MPI layer: ONE job per test (mpirun -H or srun -N K) runs every round: pairbench-mpi
--pattern nodes:A-B,C-D/nodes:A-C,B-D/... pairs the ranks of each round's node pairs,
starts them together through its node barrier, and moves to the next round inside the
same job. The rounds live in the executable, not in K-1 launches, because a job start
(daemons on every node, MPI_Init's wire-up) costs seconds and would dominate a scan of
small points; one job also keeps one rank placement and clock-offset estimate for all
rounds. Nodes are numbered by MPI (lowest world rank), so the rows' host/peer columns,
not the order of --hosts, say which node pair a row measured.
Verbs layer: one pairbench-verbs invocation per node pair (server on A, client on B,
through ssh, srun or mpirun as in `pairbench sweep`); the node pairs of a round start
together, the next round starts when every pair of this one ended. Their rows get
pattern = nodes:A-B (host names) from the driver: each node pair is its own point.

Planning is pure (plan_fabric); running reuses the sweep's run_point/collect_point;
the outputs (links CSV, matrices, heatmaps, fabric.json, fabric.html) come from the
run's data.csv alone (write_outputs), so they can be rebuilt from any scan run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from pairbench import fingerprint
from pairbench.collect import atomic_write_json, atomic_write_text, collect_point, rows_to_csv
from pairbench.errors import UsageError
from pairbench.plan import (
    OMPI_ROOT_ENV,
    Point,
    Side,
    SweepConfig,
    plan_point,
)
from pairbench.run import PointResult, run_point
from pairbench.schedule import Round, round_pattern, tournament
from pairbench.sizes import parse_sizes

LAUNCHERS = ("mpirun", "srun", "ssh")
LAYERS = ("mpi", "verbs")


def default_tests(layer: str) -> tuple[str, ...]:
    """The first latency test and the first bandwidth test of the layer's test table
    (mpi: latency, bw; verbs: write_lat, write_bw)."""
    from pairbench import testtable

    table = [t for t in testtable.load_snapshot()[layer] if t.pairwise]
    lat = next(t.name for t in table if t.kind in testtable.LATENCY_KINDS)
    bw = next(t.name for t in table if t.kind in testtable.BANDWIDTH_KINDS)
    return lat, bw


@dataclass(frozen=True)
class FabricConfig:
    layer: str
    launcher: str
    hosts: tuple[str, ...]
    tests: tuple[str, ...]
    sizes: tuple[int, ...]
    binary: str
    run_dir: str
    ranks_per_node: int = 1  # pairs per node pair
    repetitions: int = 1  # whole scans; a node pair's value is the median over them
    iterations: int | None = None
    warmup: int | None = None
    timeout_s: float = 600.0
    pin: str | None = None
    launcher_cmd: str | None = None
    launcher_args: tuple[str, ...] = ()
    remote_binary: str | None = None
    as_root: bool = False
    exe_args: tuple[str, ...] = ()


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
    if cfg.launcher not in LAUNCHERS:
        raise UsageError(f"--launcher must be one of {', '.join(LAUNCHERS)}, got "
                         f"{cfg.launcher!r}")
    if cfg.layer == "mpi" and cfg.launcher == "ssh":
        raise UsageError("--layer mpi runs inside one mpirun or srun job: use --launcher "
                         "mpirun or srun")
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
    tournament(cfg.hosts)  # duplicates, too few


def mpi_exe(cfg: FabricConfig, test: str, patterns: list[str], csv: str,
            env_json: str) -> list[str]:
    args = [cfg.binary, "--test", test, "--sizes", ",".join(map(str, cfg.sizes)),
            "--pattern", "/".join(patterns)]
    if cfg.iterations is not None:
        args += ["--iterations", str(cfg.iterations)]
    if cfg.warmup is not None:
        args += ["--warmup", str(cfg.warmup)]
    if cfg.pin is not None:
        args += ["--pin", cfg.pin]
    return [*args, "--timeout", f"{cfg.timeout_s:g}", "--quiet", "--output", csv,
            "--env-json", env_json, *cfg.exe_args]


def mpi_launch(cfg: FabricConfig, exe: list[str]) -> list[str]:
    """K x R ranks, R per node, node i = the i-th host for mpirun (ranks round-robin);
    srun numbers nodes its own way (the rows' host columns say which is which)."""
    k, r = len(cfg.hosts), cfg.ranks_per_node
    if cfg.launcher == "mpirun":
        argv = [cfg.launcher_cmd or "mpirun", "-np", str(k * r), "--map-by", "node",
                "-H", ",".join(f"{h}:{r}" for h in cfg.hosts)]
    else:
        argv = [cfg.launcher_cmd or "srun", "-N", str(k), "-n", str(k * r),
                f"--ntasks-per-node={r}", "--nodelist", ",".join(cfg.hosts)]
    return argv + list(cfg.launcher_args) + exe


def plan_fabric(cfg: FabricConfig) -> tuple[list[Round], list[Job]]:
    """The schedule (by host names) and the launches, in waves."""
    check_config(cfg)
    rounds = tournament(cfg.hosts)
    jobs: list[Job] = []
    reps = range(1, cfg.repetitions + 1)
    if cfg.layer == "mpi":
        index = {h: i for i, h in enumerate(cfg.hosts)}
        patterns = [round_pattern(rnd, index) for rnd in rounds]
        for rep, test in itertools.product(reps, cfg.tests):
            name = f"r{rep}-{test}-scan"
            csv, env = f"raw/{name}.csv", f"raw/{name}.env.json"
            exe = mpi_exe(cfg, test, patterns, f"{cfg.run_dir}/{csv}", f"{cfg.run_dir}/{env}")
            side = Side("main", tuple(mpi_launch(cfg, exe)), f"raw/{name}.stdout",
                        f"raw/{name}.stderr")
            p = Point(index=len(jobs), name=name, layer="mpi", test=test, pairs=0,
                      repetition=rep, sizes=cfg.sizes, sides=(side,),
                      timeout_s=cfg.timeout_s * len(rounds), csv=csv, env_json=env,
                      env=OMPI_ROOT_ENV if cfg.as_root else ())
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
                                 iterations=cfg.iterations, warmup=cfg.warmup, pin=cfg.pin,
                                 exe_args=cfg.exe_args, launcher_cmd=cfg.launcher_cmd,
                                 launcher_args=cfg.launcher_args,
                                 remote_binary=cfg.remote_binary, as_root=cfg.as_root,
                                 connect_addr=a)
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


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--layer", default="mpi", choices=("mpi", "verbs"))
    p.add_argument("--launcher", default="mpirun", choices=LAUNCHERS,
                   help="mpi: mpirun or srun (one job per test); verbs: ssh, srun or mpirun "
                   "(one launch per node pair)")
    p.add_argument("--hosts", required=True, help="comma-separated nodes (K >= 2)")
    p.add_argument("--test", default=None, help="comma-separated tests (default: the "
                   "layer's first latency and first bandwidth test)")
    p.add_argument("-s", "--sizes", default="8,64K", help="message sizes (default 8,64K)")
    p.add_argument("--ranks-per-node", type=int, default=1,
                   help="pairs between the two nodes of a node pair (default 1)")
    p.add_argument("--repetitions", type=int, default=1, help="whole scans, one after the "
                   "other; a node pair's value is its median over them (default 1)")
    p.add_argument("-n", "--iterations", type=int, default=None)
    p.add_argument("-w", "--warmup", type=int, default=None)
    p.add_argument("--timeout", type=float, default=600.0, help="per round and launch, s")
    p.add_argument("--pin", default=None, help="passed to the executable (e.g. none)")
    p.add_argument("--binary", default=None, help="pairbench-mpi / pairbench-verbs path")
    p.add_argument("--remote-binary", default=None, help="ssh: executable path on the hosts")
    p.add_argument("--launcher-cmd", default=None, help="path of mpirun/srun/ssh")
    p.add_argument("--launcher-args", default="", help="extra launcher options, one string "
                   "(shell-style quoting), e.g. \"--mca btl tcp,self\"")
    p.add_argument("--exe-args", default="", help="extra executable options, one string")
    p.add_argument("--results-dir", default=None, help="parent of the new run directory "
                   "(default results/)")
    p.add_argument("--tolerance", type=float, default=0.10, help="a link or node is suspect "
                   "only if worse than the reference by more than this fraction (default 0.10)")
    p.add_argument("--z", type=float, default=3.5, help="...and below exp(-z x noise), noise "
                   "= 1.4826 MAD of ln(perf) over the healthy links (default 3.5)")


def config_from_ns(ns: argparse.Namespace, run_dir: Path) -> FabricConfig:
    from pairbench.sweep import repo_root

    hosts = tuple(h.strip() for h in ns.hosts.split(",") if h.strip())
    tests = (tuple(t.strip() for t in ns.test.split(",") if t.strip()) if ns.test
             else default_tests(ns.layer))
    binary = ns.binary or str(repo_root() / "build" / "bin" / f"pairbench-{ns.layer}")
    try:
        largs = tuple(shlex.split(ns.launcher_args))
        eargs = tuple(shlex.split(ns.exe_args))
    except ValueError as exc:
        raise UsageError(f"--launcher-args/--exe-args: {exc}") from None
    if not 0 < ns.tolerance < 1:
        raise UsageError(f"--tolerance must be in (0, 1), got {ns.tolerance}")
    if ns.z < 0:
        raise UsageError(f"--z must be >= 0, got {ns.z}")
    return FabricConfig(layer=ns.layer, launcher=ns.launcher, hosts=hosts, tests=tests,
                        sizes=tuple(parse_sizes(ns.sizes)), binary=binary,
                        run_dir=str(run_dir), ranks_per_node=ns.ranks_per_node,
                        repetitions=ns.repetitions,
                        iterations=ns.iterations, warmup=ns.warmup, timeout_s=ns.timeout,
                        pin=ns.pin, launcher_cmd=ns.launcher_cmd, launcher_args=largs,
                        remote_binary=ns.remote_binary, as_root=os.geteuid() == 0,
                        exe_args=eargs)


def run_fabric(ns: argparse.Namespace) -> int:
    from pairbench.sweep import new_run_dir, now_iso, repo_root

    probe = config_from_ns(ns, Path("/nonexistent-run-dir"))
    plan_fabric(probe)
    if ns.launcher != "ssh" and not Path(probe.binary).is_file():
        raise UsageError(f"executable {probe.binary} not found (build it, or pass --binary)")
    root = repo_root()
    results = Path(ns.results_dir).absolute() if ns.results_dir else root / "results"
    run_dir = new_run_dir(results)
    cfg = replace(probe, run_dir=str(run_dir))
    rounds, jobs = plan_fabric(cfg)
    meta = {"run_id": run_dir.name, "kind": "pairbench fabric", "status": "running",
            "started": now_iso(), "config": asdict(cfg),
            "schedule": [[list(p) for p in rnd] for rnd in rounds],
            "analysis": {"tolerance": ns.tolerance, "z": ns.z}}
    meta["fingerprint"] = fingerprint.gather(root, sys.argv)
    atomic_write_json(run_dir / "metadata.json", meta)
    data = execute(cfg, jobs, run_dir, run_dir.name, meta)
    n_err = sum(r.get("status") != "ok" for r in data)
    meta.update(finished=now_iso(), rows=len(data), error_rows=n_err,
                status="complete" if n_err == 0 else "complete_with_errors")
    atomic_write_json(run_dir / "metadata.json", meta)
    from pairbench.fabricout import write_outputs

    summary = write_outputs(run_dir, ns.tolerance, ns.z)
    print(json.dumps(summary["verdicts"], indent=None) if os.environ.get("PB_FABRIC_JSON")
          else summary["text"], file=sys.stderr)
    print(run_dir, flush=True)
    return 0 if n_err == 0 else 1
