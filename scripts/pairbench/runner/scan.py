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
Verbs layer through mpirun or srun: ONE launch per round, one pairbench-verbs rank per
node; each rank finds its node pair, side and peer from its rank, the round and a host file
(pairbench-verbs --scan R --scan-hosts FILE), rows labelled scan:R
(pairbench.runner.scanverbs). Verbs layer through ssh: one pairbench-verbs invocation per
node pair (server on A, client on B, as in `pairbench sweep`); the node pairs of a round
start together, the next round starts when every pair of this one ended. Their rows get
pattern = nodes:A-B (host names) from the driver: each node pair is its own point.

Planning is pure (plan_fabric) and goes through the launchers (pairbench.runner.launchers:
a job over K nodes, or a point per node pair); running reuses the sweep's
run_point/collect_point.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path

from pairbench.contract import testtable
from pairbench.contract.testtable import LAYERS
from pairbench.errors import Interrupted, UsageError
from pairbench.runner import fingerprint, launchers, scanverbs
from pairbench.runner.collect import (
    atomic_write_json,
    atomic_write_text,
    collect_point,
    failure_reason,
    rows_to_csv,
)
from pairbench.runner.exeopts import check_exe, exe_argv, exe_values
from pairbench.runner.launchers.base import Side
from pairbench.runner.options import MAX_PAIRS, check_timeout
from pairbench.runner.plan import Point, SweepConfig, plan_point
from pairbench.runner.run import PointResult, run_point
from pairbench.runner.rundir import new_run_dir, now_iso, repo_root
from pairbench.runner.scancfg import (
    MAX_DROP,
    FabricConfig,
    Job,
    ScanStopped,
    Stop,
    fmt_s,
    never,
    scan_rounds,
)
from pairbench.runner.scancfg import ranges as _ranges
from pairbench.runner.scancfg import unranges as _unranges
from pairbench.runner.scanparquet import Kept, PartWriter, rows_format
from pairbench.runner.scanrows import (
    HEADER,
    PartScan,
    error_line,
    part_lines,
    rows_header_problem,
    scan_part,
    whole_part,
    write_rows,
)
from pairbench.runner.schedule import (
    check_nodes,
    round_links,
    scan_pattern,
    total_rounds,
    tournament,
)
from pairbench.runner.sweep import StopSignals


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
    if cfg.rounds and cfg.layer == "verbs" and not launchers.get(cfg).jobs:
        raise UsageError("--plan cover runs MPI scans and verbs scans through mpirun or "
                         "srun (a launch per round), not through ssh")
    if cfg.rounds and not set(cfg.rounds) <= set(range(1, total_rounds(len(cfg.hosts)) + 1)):
        raise UsageError(f"rounds {list(cfg.rounds)[:5]}...: not rounds of this scan")
    if not 1 <= cfg.ranks_per_node <= MAX_PAIRS:
        raise UsageError(f"--ranks-per-node {cfg.ranks_per_node}: expected 1..{MAX_PAIRS} "
                         "(pairs per node pair; the executables' limit, PB_MAX_PAIRS)")
    if cfg.repetitions < 1:
        raise UsageError("--repetitions must be >= 1")
    if not cfg.tests:
        raise UsageError("no test given (--test NAME)")
    check_timeout(cfg.timeout_s, "the deadline of every round and launch")  # sweep's rule
    check_exe(cfg, cfg.layer)
    check_nodes(cfg.hosts)


def mpi_exe(cfg: FabricConfig, test: str, pattern: str, csv: str,
            env_json: str) -> list[str]:
    args = [cfg.binary, "--test", test, "--sizes", ",".join(map(str, cfg.sizes)),
            "--pattern", pattern, *exe_argv(cfg)]
    return [*args, "--timeout", f"{cfg.timeout_s:g}", "--quiet", "--output", csv,
            "--env-json", env_json, *cfg.exe_args]


def mpi_job(cfg: FabricConfig, rep: int, test: str, first: int, last: int,
            dropped: tuple[str, ...] = (), part: int = 1) -> Job:
    """The MPI job of rounds first..last of one (repetition, test): pairbench-mpi computes
    the rounds itself (--pattern scan:FIRST-LAST, runner/schedule.scan_pattern); the hosts
    travel in a file (the launcher's hostfile), so no argument grows with K. dropped: hosts
    that failed earlier, left out of the job (their tournament positions skipped)."""
    k = len(cfg.hosts)
    pos = {h: i for i, h in enumerate(cfg.hosts)}
    live = replace(cfg, hosts=tuple(h for h in cfg.hosts if h not in dropped))
    launcher = launchers.get(live)
    name = f"r{rep}-{test}-scan" + (f"-part{part}" if part > 1 else "")
    csv, env = f"raw/{name}.csv", f"raw/{name}.env.json"
    hostfile = f"raw/{name}.hosts"
    pattern = scan_pattern(first, last, k, [pos[h] for h in dropped])
    exe = mpi_exe(cfg, test, pattern, f"{cfg.run_dir}/{csv}", f"{cfg.run_dir}/{env}")
    side = Side("main", tuple(launcher.job_argv(exe, cfg.ranks_per_node,
                                                f"{cfg.run_dir}/{hostfile}")),
                f"raw/{name}.stdout", f"raw/{name}.stderr")
    p = Point(index=0, name=name, layer="mpi", test=test, pairs=0, repetition=rep,
              sizes=cfg.sizes, sides=(side,), timeout_s=cfg.timeout_s * (last - first + 1),
              csv=csv, env_json=env, env=launcher.env())
    return Job(point=p, subdir=".", wave=0, rounds=(first, last), dropped=dropped,
               hostfile=(hostfile, launcher.hostfile_text(cfg.ranks_per_node)))


def plan_fabric(cfg: FabricConfig) -> tuple[int, list[Job]]:
    """The number of rounds and the launches, in waves. MPI: one job per repetition and
    test running every round (the tournament is computed by pairbench-mpi: nothing of
    size K² is planned here); verbs through mpirun/srun: one launch per round
    (pairbench.runner.scanverbs), through ssh: one launch per node pair, a wave per round."""
    check_config(cfg)
    n_rounds = total_rounds(len(cfg.hosts))
    jobs: list[Job] = []
    reps = range(1, cfg.repetitions + 1)
    if cfg.layer == "mpi":  # a cover plan (cfg.rounds): a job per run of consecutive rounds
        for rep, test in itertools.product(reps, cfg.tests):
            for first, last in _ranges(set(scan_rounds(cfg))):
                j = mpi_job(cfg, rep, test, first, last)
                jobs.append(replace(j, point=replace(j.point, index=len(jobs)),
                                    wave=len(jobs)))
        return len(scan_rounds(cfg)), jobs
    if launchers.get(cfg).jobs:
        return n_rounds, scanverbs.plan_rounds(cfg)
    rounds = tournament(cfg.hosts)
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
    return n_rounds, jobs


def execute(cfg: FabricConfig, jobs: list[Job], run_dir: Path, run_id: str,
            meta: dict, stop: Stop = never) -> list[dict]:
    """Run the waves in order, every job of a wave at once; rows of every job. A stop
    signal ends the wave's launches (process groups killed): ScanStopped with the rows so
    far, data.csv and metadata.json written."""
    data: list[dict] = []
    meta["points"] = []
    grace = min(10.0, max(1.0, 0.1 * cfg.timeout_s))

    def one(j: Job) -> PointResult:
        return run_point(j.point, run_dir / j.subdir, grace, stop=stop)

    for w in sorted({j.wave for j in jobs}):
        if stop():
            raise ScanStopped(None, data)
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
        if stop():
            raise ScanStopped(f"round wave {w + 1}", data)
    return data


class RoundProgress:
    """One line per finished round (at most one every PRINT_S, and the last), with the
    rate and an ETA, read from the job's CSV as pairbench-mpi flushes it round by round."""

    PRINT_S = 2.0

    def __init__(self, label: str, part: PartScan, first: int, last: int,
                 total: int, quiet: bool = False) -> None:
        self.label, self.part = label, part
        self.first, self.last, self.total = first, last, total
        self.start = self.printed = time.monotonic()
        self.quiet = quiet
        self.last_tick = 0.0

    def tick(self, final: bool = False) -> bool:
        now = time.monotonic()
        if not final and now - self.last_tick < 1.0:
            return False
        self.last_tick = now
        new = self.part.feed()
        done = max(0, len(set(self.part.order)) - (0 if final else 1))
        if self.quiet or not (new or final) or (now - self.printed < self.PRINT_S
                                                 and not final):
            return False
        self.printed = now
        todo = self.last - self.first + 1
        el = now - self.start
        eta = (f", ETA {fmt_s(el / done * (todo - done))}" if 0 < done < todo else "")
        at = self.first - 1 + done
        print(f"fabric: {self.label}: round {at}/{self.total} "
              f"({100 * at / self.total:.1f} %), {el / done if done else 0:.2f} s/round"
              f"{eta}", file=sys.stderr, flush=True)
        return False


# Launches in a row that die without finishing a round before a test's scan stops. Open MPI
# 4.1.4's TCP BTL killed a rank inside MPI_Init under srun on a loaded machine, twice in a
# row once (results/fabric-scan/stall-2026-11-27); such a launch fails within seconds (srun
# --kill-on-bad-exit=1, mpirun's abort on a dead rank), so a third try is cheap, and a
# failure that is not transient still stops the scan after three.
STUCK_MAX = 3


def run_mpi_scan(cfg: FabricConfig, run_dir: Path, meta: dict, save: Callable[[], None],
                 quiet: bool = False, stop: Stop = never) -> None:
    """Every (repetition, test) job of an MPI scan, each to its last round: a job that dies
    is continued from its first unfinished round (pairbench-mpi --pattern scan:F-L); hosts
    the launcher names as lost (1 to MAX_DROP of them) are left out of the rest of the
    scan (their node pairs get error rows); a job that dies STUCK_MAX times in a row
    without finishing a round ends that test's scan (the run can be --resume'd). State in
    meta["scan"]."""
    n = total_rounds(len(cfg.hosts))
    todo = scan_rounds(cfg)
    grace = min(10.0, max(1.0, 0.1 * cfg.timeout_s))
    state = meta.setdefault("scan", {"dropped": [], "jobs": {}})
    for rep, test in itertools.product(range(1, cfg.repetitions + 1), cfg.tests):
        js = state["jobs"].setdefault(f"r{rep}-{test}", {"rep": rep, "test": test,
                                                          "parts": []})
        stuck = 0
        for part in js["parts"]:  # a part left running by a killed driver: read it back
            if part.get("status") == "running":
                _, done = scan_part(run_dir / part["csv"], False,
                                    part_scan(run_dir, part, meta, rep))
                part.update(status="interrupted", complete=_ranges(done))
                drop_csv(run_dir, part)
        while True:
            if stop():  # a stop signal: the rounds complete so far are kept
                raise ScanStopped(None)
            done = set().union(*(_unranges(p["complete"]) for p in js["parts"]))
            first = next((r for r in todo if r not in done), None)
            dropped = tuple(state["dropped"])
            if first is None or len(cfg.hosts) - len(dropped) < 2 or stuck >= STUCK_MAX:
                break
            last = next(b for a, b in _ranges(set(todo)) if a <= first <= b)
            job = mpi_job(cfg, rep, test, first, last, dropped, len(js["parts"]) + 1)
            (run_dir / "raw").mkdir(exist_ok=True)
            assert job.hostfile is not None
            (run_dir / job.hostfile[0]).write_text(job.hostfile[1])
            part = {"name": job.point.name, "csv": job.point.csv, "first": first, "last": last,
                    "dropped": list(dropped), "status": "running", "complete": [],
                    "argv": list(job.point.sides[0].argv)}
            if meta.get("rows_format") == "parquet":
                part["parquet"] = f"raw/{job.point.name}.parquet"
            js["parts"].append(part)
            save()
            ps = part_scan(run_dir, part, meta, rep)
            prog = RoundProgress(f"r{rep} {test}", ps, first, last, n, quiet)
            res = run_point(job.point, run_dir, grace,
                            stop=lambda prog=prog: prog.tick() or stop())
            prog.tick(final=True)
            ps, complete = scan_part(run_dir / str(job.point.csv), res.ok, prog.part)
            if ps.header_ok is False:  # not this driver's rows: every job would be the same
                problem = rows_header_problem(run_dir / str(job.point.csv))
                part.update(status="failed", complete=[], rows=0, reason=problem)
                save()
                print(f"fabric: r{rep} {test}: {job.point.name}'s rows are not this driver's: "
                      f"{problem}; the scan stops", file=sys.stderr)
                raise ScanStopped(job.point.name)
            if res.ok:
                complete = set(ps.order)  # exited 0: every round it ran is its final word
            part.update(status="ok" if res.ok else "failed", complete=_ranges(complete),
                        rows=ps.rows,
                        exit_codes=res.exit_codes, timed_out=res.timed_out,
                        elapsed_s=round(res.elapsed_s, 3),
                        reason=None if res.ok else failure_reason(res, run_dir))
            if res.interrupted:  # a stop signal: its process group was killed
                part.update(status="interrupted", reason="interrupted by a stop signal")
            save()
            drop_csv(run_dir, part)
            if res.interrupted:
                raise ScanStopped(job.point.name)
            if res.ok:
                if not cfg.rounds or not complete:
                    break
                continue  # a cover plan: the next run of its rounds
            err = (run_dir / job.point.sides[0].stderr).read_text(errors="replace")
            lost = [h for h in launchers.get(cfg).failed_nodes(err) if h not in dropped]
            print(f"fabric: r{rep} {test}: the job failed after round "
                  f"{max(complete, default=first - 1)}: {part['reason']}", file=sys.stderr)
            if 0 < len(lost) <= MAX_DROP:
                state["dropped"] += lost
                print(f"fabric: node(s) {', '.join(lost)} lost: the scan continues without "
                      "them (their node pairs are reported failed)", file=sys.stderr)
                stuck = 0
            else:
                stuck = stuck + 1 if not complete else 1
            save()


def part_scan(run_dir: Path, part: dict, meta: dict, rep: int) -> PartScan:
    """The reader of a part's CSV: with a columnar copy (raw/NAME.parquet) when the scan's
    rows are Parquet (meta["rows_format"], pairbench.runner.scanparquet)."""
    ps = PartScan(run_dir / part["csv"])
    if part.get("parquet"):
        ps.writer = PartWriter(run_dir / part["parquet"], meta["run_id"], rep)
    return ps


def drop_csv(run_dir: Path, part: dict) -> None:
    """A part whose rows are in its columnar copy (closed: the part ended) keeps no CSV: a
    4,096-node scan's parts are 10.6 GiB of text, the copy a tenth of that."""
    if part.get("parquet") and (run_dir / part["parquet"]).is_file():
        (run_dir / part["csv"]).unlink(missing_ok=True)


def assemble_mpi(cfg: FabricConfig, run_dir: Path, meta: dict) -> int:
    """The rows file from the parts (data.csv, or data.parquet for a scan of
    scanparquet.PARQUET_MIN_NODES nodes or more), streamed: each round from the last part
    that finished it;
    a round no part finished gets an error row per size; node pairs of dropped hosts in the
    rounds run without them get error rows naming the host. Returns the error rows."""
    k = len(cfg.hosts)
    pos = {h: i for i, h in enumerate(cfg.hosts)}
    run_id = meta["run_id"]
    errors = [0]

    def err_lines(rep: int, test: str, rnd: int, pairs: list[tuple[int, int]],
                  why: str, n_pairs: int = 0) -> list[str]:
        """Error rows of round rnd: one per node pair given (its measuring host and peer;
        n_pairs: the pairs column of the round's other rows), else one per size."""
        out = []
        for size in cfg.sizes:
            if not pairs:
                out.append(error_line("mpi", test, f"scan:{rnd}", size, 0, "", "", "all", why))
            for a, b in pairs:
                out.append(error_line("mpi", test, f"scan:{rnd}", size, n_pairs,
                                      cfg.hosts[a], cfg.hosts[b], "node", why))
        errors[0] += len(out)
        return out

    def sources():
        for js in meta["scan"]["jobs"].values():
            rep, test = js["rep"], js["test"]
            owner: dict[int, int] = {}
            for i, p in enumerate(js["parts"]):
                for r in _unranges(p["complete"]):
                    owner[r] = i
            for i, p in enumerate(js["parts"]):
                mine = {r for r, o in owner.items() if o == i}
                if p.get("parquet"):  # its rows, parsed once while the job ran
                    yield Kept(run_dir / p["parquet"], mine, p.get("status") == "ok"
                               and mine == _unranges(p["complete"])), run_id, rep
                else:
                    whole = (p.get("status") == "ok" and "rows" in p
                             and mine == _unranges(p["complete"])
                             and whole_part(run_dir / p["csv"], p["rows"]))
                    yield whole or part_lines(run_dir / p["csv"], mine), run_id, rep
                drop = [pos[h] for h in p["dropped"]]
                if drop:
                    extra = []
                    for r in sorted(mine):
                        gone = [ab for ab in round_links(k, r) if set(ab) & set(drop)]
                        ran = len(round_links(k, r, drop)) * cfg.ranks_per_node
                        extra += err_lines(rep, test, r, gone,
                                           "not run: node(s) " + " ".join(p["dropped"]) +
                                           " lost earlier in the scan", ran)
                    yield extra, run_id, rep
            missing = [r for r in scan_rounds(cfg) if r not in owner]
            last = js["parts"][-1].get("reason") if js["parts"] else None
            why = "not run: the scan stopped before this round" + (f" ({last})" if last
                                                                   else "")
            yield (line for r in missing for line in err_lines(rep, test, r, [], why)), \
                run_id, rep

    write_rows(run_dir, sources(), meta.get("rows_format", "csv"))
    return errors[0]


def scan_to_dir(probe: FabricConfig, results_dir: str | None, analysis: dict,
                dry_run: bool = False, confirm: int = 0,
                signals: StopSignals | None = None,
                rows: str = "auto") -> tuple[int, Path | None]:
    """Plan (every bad input an error before anything exists), then run the scan into a new
    run directory; (error rows, run directory). `analysis` is recorded in metadata.json for
    the outputs that are made from it. dry_run: print the plan and an estimate, run
    nothing, (0, None)."""
    plan_fabric(probe)
    if dry_run:
        print(describe_plan(probe, confirm), flush=True)
        return 0, None
    launcher = launchers.get(probe)
    if not launcher.remote_binary and not Path(probe.binary).is_file():
        raise UsageError(f"executable {probe.binary} not found (build it, or pass --binary)")
    # the rows file: data.parquet from PARQUET_MIN_NODES nodes on, or as --rows says; a verbs
    # scan through ssh collects its clients' files and writes data.csv only
    columnar = probe.layer == "mpi" or bool(launcher.jobs)
    if rows == "parquet" and not columnar:
        raise UsageError("--rows parquet: a verbs scan through ssh writes data.csv only "
                         "(Parquet rows: --layer mpi, or --launcher mpirun/srun)")
    fmt = rows if rows in ("csv", "parquet") else (
        rows_format(len(probe.hosts)) if columnar else "csv")
    root = repo_root()
    results = Path(results_dir).absolute() if results_dir else root / "results"
    run_dir = new_run_dir(results)
    cfg = replace(probe, run_dir=str(run_dir))
    meta = {"run_id": run_dir.name, "kind": "pairbench fabric", "status": "running",
            "started": now_iso(), "config": asdict(cfg),
            "schedule": {"kind": "round-robin tournament (docs/fabric.md)",
                         "nodes": len(cfg.hosts), "rounds": total_rounds(len(cfg.hosts))},
            "analysis": analysis,
            "rows_format": fmt}
    meta["fingerprint"] = fingerprint.gather(root, sys.argv,
                                             stop=signals.stopped if signals else None)
    atomic_write_json(run_dir / "metadata.json", meta)
    return continue_scan(cfg, run_dir, meta, signals), run_dir


def continue_scan(cfg: FabricConfig, run_dir: Path, meta: dict,
                  signals: StopSignals | None = None) -> int:
    """Run (or go on with) the scan of run_dir; error rows. A stop signal (signals) ends
    the running launch, keeps what is complete and raises Interrupted (stopped)."""
    def save() -> None:
        atomic_write_json(run_dir / "metadata.json", meta)

    stop = signals.stopped if signals else never
    per_round = cfg.layer == "verbs" and launchers.get(cfg).jobs
    halted: ScanStopped | None = None
    data: list[dict] = []
    try:
        if stop():  # during the fingerprint, before any launch
            raise ScanStopped(None)
        if cfg.layer == "mpi":
            run_mpi_scan(cfg, run_dir, meta, save, stop=stop)
        elif per_round:
            scanverbs.run_verbs_scan(cfg, run_dir, meta, save, stop=stop)
        else:
            _, jobs = plan_fabric(cfg)
            data = execute(cfg, jobs, run_dir, run_dir.name, meta, stop)
    except ScanStopped as e:
        halted = e
        data = e.rows or []
    if cfg.layer == "mpi":
        n_err = assemble_mpi(cfg, run_dir, meta)
    elif per_round:
        n_err = scanverbs.assemble_verbs(cfg, run_dir, meta)
    else:
        atomic_write_text(run_dir / "data.csv", rows_to_csv(data))
        n_err = sum(r.get("status") != "ok" for r in data)
    if halted is not None and signals is not None and signals.received is not None:
        meta.update(error_rows=n_err)
        stopped(run_dir, meta, signals, halted.launch,
                f"the rounds complete are kept in {run_dir}/data.csv; go on with: pairbench "
                f"fabric --resume {run_dir}" if cfg.layer == "mpi" or per_round else
                f"the node pairs measured are kept in {run_dir}/data.csv (a verbs scan "
                "through ssh cannot be resumed: run it again)")
    meta.update(finished=now_iso(), error_rows=n_err,
                status="complete" if n_err == 0 else "complete_with_errors")
    if cfg.layer == "mpi" or per_round:
        unfinished = (scanverbs.unfinished(cfg, meta) if per_round else
                      [k for k, js in meta["scan"]["jobs"].items()
                       if set(scan_rounds(cfg)) - set().union(
                           *(_unranges(p["complete"]) for p in js["parts"]))])
        if unfinished:
            meta["status"] = "incomplete"
            print(f"fabric: {', '.join(unfinished)} did not finish; go on with "
                  f"pairbench fabric --resume {run_dir}", file=sys.stderr)
    save()
    return n_err


def stopped(run_dir: Path, meta: dict, signals: StopSignals, launch: str | None,
            kept: str) -> None:
    """A stop signal ended the scan (or its confirmation): metadata.json says which signal,
    where and when (status "interrupted"), stdout the run directory, and Interrupted (exit
    128 + N) says what happened and what is kept, as the sweep does."""
    name = signals.name
    meta["interrupted"] = {"signal": name, "launch": launch, "at": now_iso()}
    meta["status"] = "interrupted"
    meta["finished"] = now_iso()
    atomic_write_json(run_dir / "metadata.json", meta)
    print(run_dir, flush=True)
    where = f" during {launch} (its process group killed)" if launch else ""
    assert signals.received is not None
    raise Interrupted(signals.received, f"interrupted by {name}{where}; {kept}")


def resume_scan(run_dir: Path, signals: StopSignals | None = None) -> tuple[int, FabricConfig]:
    """Go on with an interrupted scan (MPI, or verbs through mpirun/srun) after its last
    complete round."""
    try:
        meta = json.loads((run_dir / "metadata.json").read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"--resume {run_dir}: no readable metadata.json ({exc})") from None
    if meta.get("kind") != "pairbench fabric" or "config" not in meta:
        raise UsageError(f"--resume {run_dir}: not a fabric scan")
    try:
        cfg = config_from(meta)
    except (TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"--resume {run_dir}: metadata.json's config is not a fabric "
                         f"scan's ({exc})") from None
    if cfg.layer != "mpi" and not launchers.get(cfg).jobs:
        raise UsageError("--resume continues MPI scans and verbs scans through mpirun or "
                         "srun (a verbs scan through ssh reruns its node pairs)")
    check_rows_files(cfg, run_dir, meta)
    meta.setdefault("resumed", []).append(now_iso())
    meta["status"] = "running"
    meta.pop("interrupted", None)
    return continue_scan(cfg, run_dir, meta, signals), cfg


def check_rows_files(cfg: FabricConfig, run_dir: Path, meta: dict) -> None:
    """Before a resume changes anything: every rows file it will read (an MPI job's part, a
    verbs round's file) is absent, empty (a job that died at start-up) or starts with the
    CSV contract's header; anything else (a file overwritten, random bytes) is not this
    scan's rows: UsageError naming it, the run directory left as it was."""
    scan = meta.get("scan") or {}
    files: list[str] = []
    for js in (scan.get("jobs") or {}).values():
        if cfg.layer == "mpi":
            files += [p["csv"] for p in js.get("parts", []) if p.get("csv")]
        else:
            files += [f"{scanverbs.round_dir(js['rep'], js['test'])}/round{r}.csv"
                      for r in sorted(_unranges(js.get("complete", [])))]
    for rel in files:
        try:
            with open(run_dir / rel, "rb") as f:
                head = f.readline(len(HEADER) + 2)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise UsageError(f"--resume {run_dir}: {rel}: {exc.strerror}") from None
        if head and head.rstrip(b"\r\n") != HEADER.encode():
            raise UsageError(f"--resume {run_dir}: {rel} is not a pairbench CSV (its first "
                             "line is not the schema's header): not this scan's rows; "
                             "nothing was run or changed")


def describe_plan(cfg: FabricConfig, confirm: int = 0) -> str:
    """--dry-run: rounds, launches (the longest argument), an estimate of the time, and at
    most how much confirming the suspects (--confirm) adds after the scan."""
    n, jobs = plan_fabric(cfg)
    k = len(cfg.hosts)
    per_point = (cfg.duration_s or 0.0) if getattr(cfg, "duration_s", None) else None
    lines = [f"fabric scan of {k} nodes: {n} rounds of {k // 2} node pairs "
             f"({n * (k // 2) if cfg.rounds else k * (k - 1) // 2} node pairs"
             f"{f'; a cover plan, the full scan: {total_rounds(k)} rounds' if cfg.rounds else ''}"
             f"), {len(cfg.tests)} test(s) x "
             f"{len(cfg.sizes)} size(s) x {cfg.repetitions} repetition(s)",
             f"launches: {len(jobs)}" + (" (one job per test and repetition; rounds run "
                                         "inside pairbench-mpi)" if cfg.layer == "mpi"
                                         else " (one per round: a pairbench-verbs rank per "
                                         "node, every node pair of the round at once)"
                                         if jobs and jobs[0].rounds else
                                         " (one per node pair)")]
    for j in jobs[:4]:
        argv = [a for s in j.point.sides for a in s.argv]
        lines.append(f"  {j.point.name}: {' '.join(argv)[:300]}")
    if len(jobs) > 4:
        lines.append(f"  ... {len(jobs) - 4} more")
    longest = max((len(a) for j in jobs for s in j.point.sides for a in s.argv), default=0)
    lines.append(f"longest argument: {longest} characters")
    est = per_point if per_point else ESTIMATE_POINT_S
    points = n * len(cfg.tests) * len(cfg.sizes) * cfg.repetitions * (est + ROUND_OVERHEAD_S)
    starts = len(jobs) * LAUNCH_S
    lines.append(f"estimated time: {fmt_s(points + starts)} = {fmt_s(points)} measuring "
                 f"({est:g} s per point"
                 f"{'' if per_point else ' assumed (pass -D/--duration to fix it)'} + "
                 f"{ROUND_OVERHEAD_S:g} s per point for barriers and rows, x {n} rounds) + "
                 f"{fmt_s(starts)} starting {len(jobs)} launch(es) ({LAUNCH_S:g} s each "
                 "assumed; a big job starts slower: the progress lines' ETA is measured)")
    c_launches, c_rounds = confirm_bound(cfg, confirm)
    if c_launches:
        c_s = c_rounds * len(cfg.sizes) * (est + ROUND_OVERHEAD_S) + c_launches * LAUNCH_S
        lines.append(f"confirmation (--confirm {confirm}, only if the scan finds suspects): "
                     f"at most {c_launches} more launch(es), {c_rounds} round(s), "
                     f"{fmt_s(c_s)}")
    elif confirm:
        lines.append(f"confirmation (--confirm {confirm}): none (a verbs scan through "
                     f"{cfg.launcher} is not confirmed: docs/fabric.md)")
    return "\n".join(lines)


ESTIMATE_POINT_S = 0.25  # a point of the executables' default time-target mode, about
ROUND_OVERHEAD_S = 0.05
# The start-up of one launch (an mpirun or srun job, or a node pair's two ssh): ~0.5-1 s for a
# few nodes here; thousands of nodes take longer. A verbs scan is a launch per round.
LAUNCH_S = 1.0


CONFIRM_MAX_PAIRS = 64  # per test; more suspects than this is a fabric-wide problem
# --confirm N: each suspect re-measured N times. Ten settle a suspect many times over; more is
# an absurd job (a verbs scan of 8 nodes at --confirm 1000: up to 10,000 launches).
CONFIRM_MAX_REPEATS = 10


def check_confirm(repeats: int) -> None:
    if not 0 <= repeats <= CONFIRM_MAX_REPEATS:
        raise UsageError(f"--confirm {repeats}: expected 0..{CONFIRM_MAX_REPEATS} (the times "
                         "each suspect is re-measured after the scan; 0: off)")


def confirm_bound(cfg: FabricConfig, repeats: int) -> tuple[int, int]:
    """At most (launches, rounds) that confirming the suspects adds after the scan (which
    suspects there are is known only then): per test and repeat, the greedy rounds of
    disjoint pairs over at most CONFIRM_MAX_PAIRS node pairs (fewer than 2K - 2: a greedy
    edge colouring); MPI runs them in one job, verbs through mpirun/srun a launch each;
    (0, 0) where the scan cannot be confirmed (verbs through ssh) or repeats is 0."""
    if repeats <= 0 or not can_confirm(cfg):
        return 0, 0
    k = len(cfg.hosts)
    per = min(CONFIRM_MAX_PAIRS, max(1, 2 * k - 3), k * (k - 1) // 2)
    rounds = repeats * len(cfg.tests) * per
    return (repeats * len(cfg.tests) if cfg.layer == "mpi" else rounds), rounds


def confirm_rounds(pairs: list[tuple[str, str]], repeats: int) -> list[list[tuple[str, str]]]:
    """Rounds of disjoint node pairs that measure each pair `repeats` times (greedy: a pair
    goes into the first round where neither node is busy and it is not measured yet)."""
    rounds: list[list[tuple[str, str]]] = []
    for _ in range(repeats):
        todo = list(dict.fromkeys(pairs))
        while todo:
            busy: set[str] = set()
            rnd, rest = [], []
            for a, b in todo:
                if a in busy or b in busy:
                    rest.append((a, b))
                else:
                    rnd.append((a, b))
                    busy |= {a, b}
            rounds.append(rnd)
            todo = rest
    return rounds


def confirm_job(cfg: FabricConfig, test: str, pairs: list[tuple[str, str]],
                repeat: int) -> Job:
    """One MPI job re-measuring `pairs` (node pairs by host, A first) once, in rounds of
    disjoint pairs: the hosts involved, in sorted order, are the job's nodes 0..n-1
    (mpirun --map-by node numbers them in hostfile order; under srun this assumes Slurm
    numbers them in sorted host-file order: docs/fabric.md), each round a --pattern
    nodes:A-B,...; rows go to raw/confirm-TEST-REPEAT.csv, apart from the scan's (one job
    per repeat: the same round twice in one job would give rows of the same point)."""
    hosts = tuple(sorted({h for ab in pairs for h in ab}))
    at = {h: i for i, h in enumerate(hosts)}
    patterns = ["nodes:" + ",".join(f"{at[a]}-{at[b]}" for a, b in rnd)
                for rnd in confirm_rounds(pairs, 1)]
    sub = replace(cfg, hosts=hosts)
    launcher = launchers.get(sub)
    name = f"confirm-{test}-{repeat}"
    csv, env, hostfile = f"raw/{name}.csv", f"raw/{name}.env.json", f"raw/{name}.hosts"
    exe = mpi_exe(cfg, test, "/".join(patterns), f"{cfg.run_dir}/{csv}",
                  f"{cfg.run_dir}/{env}")
    side = Side("main", tuple(launcher.job_argv(exe, cfg.ranks_per_node,
                                                f"{cfg.run_dir}/{hostfile}")),
                f"raw/{name}.stdout", f"raw/{name}.stderr")
    p = Point(index=0, name=name, layer="mpi", test=test, pairs=0, repetition=1,
              sizes=cfg.sizes, sides=(side,), timeout_s=cfg.timeout_s * len(patterns),
              csv=csv, env_json=env, env=launcher.env())
    return Job(point=p, subdir=".", wave=0,
               hostfile=(hostfile, launcher.hostfile_text(cfg.ranks_per_node)))


def config_from(meta: dict) -> FabricConfig:
    """The scan's configuration as its metadata.json keeps it."""
    return FabricConfig(**{k: tuple(v) if isinstance(v, list) else v
                           for k, v in meta["config"].items()})


def can_confirm(cfg: FabricConfig) -> bool:
    """Whether the scan's suspects can be re-measured: MPI scans, and verbs scans through a
    launcher that starts a round at once (mpirun, srun: scanverbs.confirm_verbs); a verbs
    scan through ssh (one launch per node pair) is not (docs/fabric.md)."""
    return cfg.layer == "mpi" or bool(launchers.get(cfg).jobs)


def confirm_scan(run_dir: Path, pairs: dict[str, list[tuple[str, str]]],
                 repeats: int, signals: StopSignals | None = None) -> dict:
    """Re-measure the suspects' node pairs of each test (pairs: test -> node pairs, at most
    CONFIRM_MAX_PAIRS each) `repeats` times; rows in raw/confirm-TEST-REPEAT.csv, what ran
    in metadata.json["confirm"]. Returns that record ({} and nothing run where the scan
    cannot be confirmed: can_confirm). MPI: one job per repeat; verbs (mpirun, srun): one
    launch per round of disjoint pairs (scanverbs.confirm_verbs)."""
    meta = json.loads((run_dir / "metadata.json").read_text())
    cfg = config_from(meta)
    if not can_confirm(cfg):
        return {}
    rec: dict = {"repeats": repeats, "tests": {}}
    grace = min(10.0, max(1.0, 0.1 * cfg.timeout_s))
    stop = signals.stopped if signals else never
    try:
        _confirm_tests(cfg, run_dir, pairs, repeats, rec, grace, stop)
    except ScanStopped as e:
        assert signals is not None
        meta["confirm"] = {**rec, "interrupted": True}
        stopped(run_dir, meta, signals, e.launch, "the scan itself is complete; pairbench "
                f"fabric --render {run_dir} makes its outputs without the confirmation")
    meta["confirm"] = rec
    atomic_write_json(run_dir / "metadata.json", meta)
    return rec


def _confirm_tests(cfg: FabricConfig, run_dir: Path, pairs: dict[str, list[tuple[str, str]]],
                   repeats: int, rec: dict, grace: float, stop: Stop) -> None:
    """confirm_scan's launches, recorded in rec; ScanStopped on a stop signal."""
    for test, ps in pairs.items():
        ps = list(dict.fromkeys(ps))
        if not ps:
            continue
        skipped = len(ps) - CONFIRM_MAX_PAIRS
        print(f"fabric: confirming {min(len(ps), CONFIRM_MAX_PAIRS)} node pair(s) of {test} "
              f"x {repeats}", file=sys.stderr)
        jobs = []
        for i in range(1, repeats + 1):
            if cfg.layer == "verbs":  # one launch per round of disjoint pairs
                jobs += scanverbs.confirm_verbs(cfg, test, confirm_rounds(
                    ps[:CONFIRM_MAX_PAIRS], 1), i, run_dir, grace, stop)
                continue
            job = confirm_job(cfg, test, ps[:CONFIRM_MAX_PAIRS], i)
            assert job.hostfile is not None
            (run_dir / job.hostfile[0]).write_text(job.hostfile[1])
            if stop():
                raise ScanStopped(None)
            res = run_point(job.point, run_dir, grace, stop=stop)
            if res.interrupted:
                raise ScanStopped(job.point.name)
            jobs.append({"csv": job.point.csv, "argv": list(job.point.sides[0].argv),
                         "exit_codes": res.exit_codes, "elapsed_s": round(res.elapsed_s, 3),
                         "reason": None if res.ok else failure_reason(res, run_dir)})
        rec["tests"][test] = {"pairs": [list(p) for p in ps],
                              "not_confirmed_too_many": max(0, skipped), "jobs": jobs}
