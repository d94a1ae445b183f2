"""`pairbench fabric`: every node pair of K nodes measured once, in K-1 rounds of disjoint
node pairs, then the node x node matrix, a heatmap, and the suspect links and nodes. The scan
is pairbench.runner.scan's (its docstring says how each layer runs it); the outputs are
pairbench.present.fabricout's, from the run's data.csv alone."""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
from dataclasses import replace
from pathlib import Path

from pairbench.analysis import coverplan, routes, topology
from pairbench.analysis.localise import Localiser
from pairbench.analysis.topology import Topology
from pairbench.contract.sizes import parse_sizes
from pairbench.contract.testtable import LAYERS
from pairbench.errors import UsageError
from pairbench.present import fabricloc
from pairbench.present.fabricout import suspects_to_confirm, write_outputs
from pairbench.runner.exeopts import add_exe_arguments, exe_values
from pairbench.runner.rundir import repo_root
from pairbench.runner.scan import (
    FabricConfig,
    check_confirm,
    confirm_scan,
    default_tests,
    resume_scan,
    scan_launchers,
    scan_to_dir,
)
from pairbench.runner.scancfg import read_hosts
from pairbench.runner.sweep import StopSignals


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--layer", default="mpi", choices=sorted(LAYERS))
    p.add_argument("--launcher", default="mpirun", choices=scan_launchers(),
                   help="mpi: mpirun or srun (one job per test); verbs: srun or mpirun (one "
                   "launch per round, a rank per node) or ssh (one launch per node pair)")
    p.add_argument("--hosts", default=None, help="comma-separated nodes (K >= 2), or @FILE: "
                   "one per line (an mpirun hostfile's 'n001 slots=2' gives n001)")
    p.add_argument("--resume", default=None, metavar="RUN", help="go on with the scan of "
                   "run directory RUN after its last complete round (MPI, or verbs through "
                   "mpirun/srun; its options are the run's)")
    p.add_argument("--render", default=None, metavar="RUN", help="make the outputs of the "
                   "finished scan RUN again from its rows (e.g. with another --topology); "
                   "run nothing")
    p.add_argument("--topology", default=None, metavar="FILE", help="each node's rack and "
                   "leaf (TOML [[rack]] name/leaf/nodes, or CSV node,rack[,leaf]): the "
                   "heatmap and matrix ordered by leaf, rack, then name with the groups' "
                   "boundaries, each suspect's group reported (default: by node name; a "
                   "--resume or --render uses the scan's own unless given)")
    p.add_argument("--cables", default=None, metavar="FILE", help="the fabric's cables "
                   "(ibnetdiscover output, or a cable list: CSV a,b / TOML cables = [...]: "
                   "NODE <-> SWITCH:PORT, SWITCH:PORT <-> SWITCH:PORT): name the fewest "
                   "cables, ports and switches that explain the slow node pairs "
                   "(docs/fabric.md; --resume/--render use the scan's unless given)")
    p.add_argument("--routing", default=None, choices=routes.MODELS, help="the routes "
                   "over --cables: dmodk (up/down on a fat tree, D-mod-K; default) or "
                   "ecmp (every shortest path possible: adaptive routing)")
    p.add_argument("--lft", default=None, metavar="FILE", help="the switches' forwarding "
                   "tables (ibroute output of every switch, concatenated): the routes over "
                   "--cables are then the fabric's own, not a model")
    p.add_argument("--plan", default=None, metavar="full|cover[:N]", help="cover[:N]: run "
                   "only the rounds of the full scan that cross every cable of --cables at "
                   "least N times (default 3; MPI, verbs through mpirun/srun), then "
                   "localise (docs/fabric.md); "
                   "full: every round (the default)")
    p.add_argument("--confirm", type=int, default=2, metavar="N", help="re-measure "
                   "each suspect link, and each suspect node against 3 healthy peers, N "
                   "times in extra rounds of disjoint pairs after the scan (MPI scans, and "
                   "verbs scans through mpirun or srun: one launch per round); the report "
                   "says which suspects are confirmed (0: off, at most 10; default 2)")
    p.add_argument("--dry-run", action="store_true", help="print the rounds, the launches "
                   "and an estimated time; run nothing")
    p.add_argument("--test", default=None, help="comma-separated tests (default: the "
                   "layer's first latency and first bandwidth test)")
    p.add_argument("-s", "--sizes", default="8,64K", help="message sizes (default 8,64K)")
    p.add_argument("--ranks-per-node", type=int, default=1,
                   help="pairs between the two nodes of a node pair (default 1)")
    p.add_argument("--repetitions", type=int, default=1, help="whole scans, one after the "
                   "other; a node pair's value is its median over them (default 1)")
    p.add_argument("--timeout", type=float, default=600.0, help="per round and launch, s")
    add_exe_arguments(p)
    p.add_argument("--binary", default=None, help="pairbench-mpi / pairbench-verbs path")
    p.add_argument("--remote-binary", default=None, help="ssh: executable path on the hosts")
    p.add_argument("--launcher-cmd", default=None, help="path of mpirun/srun/ssh")
    p.add_argument("--launcher-args", default="", help="extra launcher options, one string "
                   "(shell-style quoting), e.g. \"--mca btl tcp,self\"")
    p.add_argument("--exe-args", default="", help="extra executable options, one string")
    p.add_argument("--results-dir", default=None, help="parent of the new run directory "
                   "(default results/)")
    p.add_argument("--plots", default="png,svg", choices=["png,svg", "png", "none"],
                   help="the heatmaps' files: png,svg (the default), png, or none (fabric.json, "
                   "the matrices and fabric.html without pictures: drawing them is most of "
                   "the analysis's time at small K); with --render too")
    p.add_argument("--rows", default="auto", choices=["auto", "csv", "parquet"],
                   help="the rows file: auto (data.parquet from 256 nodes on, data.csv below; "
                   "the default), csv, or parquet (an MPI scan, or verbs rounds through "
                   "mpirun/srun: parsed once while each job runs, a tenth of the text's size; "
                   "docs/fabric.md 'Rows files')")
    p.add_argument("--tolerance", type=float, default=0.10, help="a link or node is suspect "
                   "only if worse than the reference by more than this fraction (default 0.10)")
    p.add_argument("--z", type=float, default=3.5, help="...and below exp(-z x noise), noise "
                   "= 1.4826 MAD of ln(perf) over the healthy links (default 3.5)")


def config_from_ns(ns: argparse.Namespace, run_dir: Path) -> FabricConfig:
    if not ns.hosts:
        raise UsageError("--hosts is required (or --resume RUN)")
    hosts = read_hosts(ns.hosts)
    tests = (tuple(t.strip() for t in ns.test.split(",") if t.strip()) if ns.test
             else default_tests(ns.layer))
    binary = ns.binary or str(repo_root() / "build" / "bin" / f"pairbench-{ns.layer}")
    try:
        largs = tuple(shlex.split(ns.launcher_args))
        eargs = tuple(shlex.split(ns.exe_args))
    except ValueError as exc:
        raise UsageError(f"--launcher-args/--exe-args: {exc}") from None
    check_analysis(ns)
    return FabricConfig(layer=ns.layer, launcher=ns.launcher, hosts=hosts, tests=tests,
                        sizes=tuple(parse_sizes(ns.sizes)), binary=binary,
                        run_dir=str(run_dir), ranks_per_node=ns.ranks_per_node,
                        repetitions=ns.repetitions, timeout_s=ns.timeout,
                        launcher_cmd=ns.launcher_cmd, launcher_args=largs,
                        remote_binary=ns.remote_binary, as_root=os.geteuid() == 0,
                        exe_args=eargs, **exe_values(ns))


def check_analysis(ns: argparse.Namespace) -> None:
    if not 0 < ns.tolerance < 1:  # nan fails this too
        raise UsageError(f"--tolerance must be in (0, 1), got {ns.tolerance}")
    if not (math.isfinite(ns.z) and ns.z >= 0):
        raise UsageError(f"--z must be a finite number >= 0, got {ns.z}")


# What --resume RUN and --render RUN take besides RUN: everything else is the scan's own
# (its metadata.json), and a given value would be ignored, so it is refused instead.
KEEP_WITH = {"resume": {"resume", "topology", "confirm", "cables", "routing", "lft", "plots"},
             "render": {"render", "topology", "cables", "routing", "lft", "plots"}}


def refuse_scan_options(ns: argparse.Namespace, mode: str) -> None:
    """--resume/--render with an option that the scan's own configuration decides (--hosts,
    --layer, --launcher, --test, ...): exit 2 naming them, never ignored in silence."""
    p = argparse.ArgumentParser()
    add_arguments(p)
    given = [a.option_strings[-1] for a in p._actions if a.option_strings
             and a.dest not in KEEP_WITH[mode] and a.dest != "help"
             and getattr(ns, a.dest, a.default) != a.default]
    if given:
        keep = ", ".join(f"--{k}" for k in sorted(KEEP_WITH[mode] - {mode}))
        raise UsageError(f"--{mode} {getattr(ns, mode)}: {', '.join(given)} given, but the "
                         f"scan's own options (its metadata.json) are used: leave them out "
                         f"(with --{mode}: {keep})")


def fabric_metadata(run_dir: Path, opt: str) -> dict:
    """metadata.json of a fabric scan's run directory, else UsageError (a sweep's run
    directory, a directory without one)."""
    try:
        meta = json.loads((run_dir / "metadata.json").read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{opt} {run_dir}: no readable metadata.json ({exc})") from None
    if not isinstance(meta, dict) or meta.get("kind") != "pairbench fabric":
        kind = meta.get("kind") if isinstance(meta, dict) else None
        raise UsageError(f"{opt} {run_dir}: not a fabric scan (metadata.json kind "
                         f"{kind!r}); nothing was written")
    return meta


def _topology(ns: argparse.Namespace, run_dir: Path | None) -> Topology | None:
    """--topology FILE, else the one the scan was made with (metadata.json), else None."""
    if ns.topology:
        return topology.load(ns.topology)
    if run_dir is None:
        return None
    path = _analysis(run_dir).get("topology")
    return topology.load(path) if path else None


def _cables(ns: argparse.Namespace, run_dir: Path | None) -> Localiser | None:
    """--cables FILE (--routing), else the scan's own (metadata.json), else None."""
    saved = _analysis(run_dir) if run_dir is not None else {}
    path = ns.cables or saved.get("cables")
    if not path:
        if ns.routing or ns.lft:
            raise UsageError(f"--{'routing' if ns.routing else 'lft'} needs --cables FILE "
                             "(the routes run over the cables)")
        return None
    if ns.routing and ns.lft:
        raise UsageError("--routing and --lft exclude each other (the forwarding tables "
                         "are the routes)")
    lft = ns.lft or (saved.get("lft") if not ns.routing else None)
    return fabricloc.load(path, ns.routing or saved.get("routing") or "dmodk", lft)


def _cover(ns: argparse.Namespace, cfg: FabricConfig, cables: Localiser | None,
           analysis: dict) -> FabricConfig:
    """--plan cover[:N]: the scan's rounds cut to a cover of the cables (said on stderr and
    kept in analysis["plan"])."""
    n = coverplan.parse_plan(ns.plan)
    if n is None:
        return cfg
    if cables is None:
        raise UsageError(f"--plan {ns.plan} needs --cables FILE (the plan covers the cables)")
    plan = coverplan.plan_cover(cables.r, list(cfg.hosts), n)
    print(f"fabric: {plan.line()}", file=sys.stderr)
    analysis["plan"] = {"kind": "cover", "n": n, "rounds": len(plan.rounds),
                        "full_rounds": plan.full_rounds, "pairs": plan.pairs,
                        "full_pairs": plan.full_pairs, "uncovered": plan.uncovered[:20]}
    return replace(cfg, rounds=tuple(plan.rounds))


def _analysis(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / "metadata.json").read_text()).get("analysis", {})
    except (OSError, ValueError) as exc:
        raise UsageError(f"{run_dir}: no readable metadata.json ({exc})") from None


def plot_formats(ns: argparse.Namespace) -> tuple[str, ...]:
    """fabric --plots as the formats to draw: () for none."""
    return () if ns.plots == "none" else tuple(ns.plots.split(","))


def run_fabric(ns: argparse.Namespace) -> int:
    check_confirm(ns.confirm)
    if ns.render and ns.resume:
        raise UsageError("--render and --resume exclude each other")
    if ns.render:
        refuse_scan_options(ns, "render")
        run_dir = Path(ns.render).absolute()
        analysis = fabric_metadata(run_dir, "--render").get("analysis", {})
        summary = write_outputs(run_dir, analysis.get("tolerance", ns.tolerance),
                                analysis.get("z", ns.z), topo=_topology(ns, run_dir),
                                cables=_cables(ns, run_dir), plots=plot_formats(ns))
        print(summary["text"], file=sys.stderr)
        print(run_dir, flush=True)
        return 0
    topo = _topology(ns, None)  # a bad map is an error before anything runs
    cables = _cables(ns, None)  # so is a bad cable file
    # From here a stop signal (SIGINT, SIGTERM, SIGHUP) ends the running launch as a process
    # group, keeps what is complete and says so: exit 128 + N (as sweep).
    with StopSignals() as signals:
        return _scan_and_report(ns, topo, signals, cables)


def _scan_and_report(ns: argparse.Namespace, topo: Topology | None,
                     signals: StopSignals, cables: Localiser | None = None) -> int:
    if ns.resume:
        refuse_scan_options(ns, "resume")
        run_dir = Path(ns.resume).absolute()
        n_err, _ = resume_scan(run_dir, signals)
        analysis = _analysis(run_dir)
        tol, z = analysis.get("tolerance", ns.tolerance), analysis.get("z", ns.z)
        topo = topo or _topology(ns, run_dir)
        cables = cables or _cables(ns, run_dir)
    else:
        probe = config_from_ns(ns, Path("/nonexistent-run-dir"))
        analysis = {"tolerance": ns.tolerance, "z": ns.z}
        probe = _cover(ns, probe, cables, analysis)
        if topo is not None:
            analysis["topology"] = str(Path(topo.path).absolute())
        if cables is not None:
            analysis["cables"] = str(Path(cables.r.topo.path).absolute())
            analysis["routing"] = cables.r.model
            if ns.lft:
                analysis["lft"] = str(Path(ns.lft).absolute())
        n_err, new_dir = scan_to_dir(probe, ns.results_dir, analysis, ns.dry_run,
                                     ns.confirm, signals, rows=ns.rows)
        if new_dir is None:
            return 0
        run_dir, tol, z = new_dir, ns.tolerance, ns.z
    judged: dict = {}  # each (test, size) judged once: its verdict kept for the outputs
    lk, pairs = suspects_to_confirm(run_dir, tol, z, cables if ns.confirm > 0 else None,
                                    judged=judged)
    if ns.confirm > 0 and any(pairs.values()):
        confirm_scan(run_dir, pairs, ns.confirm, signals)
    summary = write_outputs(run_dir, tol, z, lk, topo, cables, plot_formats(ns), judged)
    print(json.dumps(summary["verdicts"], indent=None) if os.environ.get("PB_FABRIC_JSON")
          else summary["text"], file=sys.stderr)
    print(run_dir, flush=True)
    return 0 if n_err == 0 else 1
