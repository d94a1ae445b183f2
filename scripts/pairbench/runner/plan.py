"""Planning a sweep: a pure function from a configuration to the list of points to run.

A point is one (layer, test, pairs, repetition); all message sizes go to one invocation.
Each point carries the exact argument lists of the processes to start (one for
local/mpirun/srun, two for ssh: server and client): the executable's options come from the
option table (pairbench.runner.exeopts), the launcher's part from the launcher
(pairbench.runner.launchers), and nothing else builds them.
No file system, no environment, no clock: everything comes in through SweepConfig.
A RigPlan (config + points) goes to and from plain JSON data for the Soft-RoCE rig.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from pairbench.contract import testtable
from pairbench.contract.testtable import LAYERS
from pairbench.errors import UsageError
from pairbench.runner import launchers
from pairbench.runner.exeopts import ExeSettings, exe_argv
from pairbench.runner.launchers.base import Launcher, Side, main_side


@dataclass(frozen=True)
class SweepConfig(ExeSettings):
    """A checked sweep (pairbench.runner.options.config_from_options): what every point is
    planned from. The executables' pass-through options are ExeSettings' fields."""

    layer: str
    tests: tuple[str, ...]
    sizes: tuple[int, ...]
    pairs: tuple[int, ...]
    binary: str
    run_dir: str
    repetitions: int = 1
    launcher: str = "local"
    hosts: tuple[str, ...] = ()
    timeout_s: float = 300.0
    exe_args: tuple[str, ...] = ()
    launcher_cmd: str | None = None
    launcher_args: tuple[str, ...] = ()
    remote_binary: str | None = None
    as_root: bool = False
    connect_addr: str | None = None  # verbs: address of the server's RDMA device
    qps: tuple[int, ...] = ()  # verbs --qps values, a point each; () = the executable's default (1)
    rig_devices: int = 1  # softroce: devices the rig creates
    rig_timeout_s: float | None = None  # softroce: limit of the whole rig run (None: from the plan)
    pattern: str | None = None  # verbs: incast | fanout over the hosts (plan_pattern_point)


@dataclass(frozen=True)
class Point:
    index: int
    name: str
    layer: str
    test: str
    pairs: int
    repetition: int
    sizes: tuple[int, ...]
    sides: tuple[Side, ...]
    timeout_s: float
    csv: str | None  # file the executable writes with -o (relative); None = stdout of data side
    env_json: str | None  # file written with --env-json (relative); None = not available
    env: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    qps: int | None = None  # verbs --qps of this point; None = not given (the executable's 1)
    soak_s: float = 0.0  # --soak: each size's window (0 = no soak); the point's time is soak-long
    series: str | None = None  # --soak: prefix (relative) of the flows' series files, --series
    files: tuple[tuple[str, str], ...] = ()  # (relative path, text) written before the launch
    ompi_dirs: bool = False  # Open MPI's session/backing files in a folder of the point's own
    #                          (runner/ompidirs.py): every rank on this host
    ranks: int = 0  # --pattern: the job's ranks, each writing csv/env_json with .0. -> .R.
    #                 (collect.pattern_rows merges ranks 1..ranks-1); 0 = one output

    @property
    def qps_cell(self) -> str:
        """The qps column its rows carry: verbs rows always (1 by default), mpi rows never."""
        if self.layer != "verbs":
            return ""
        return str(self.qps or 1)

    @property
    def data_side(self) -> Side:
        """The process whose output holds the CSV rows (the client for ssh)."""
        for s in self.sides:
            if s.role in ("main", "client"):
                return s
        return self.sides[0]


SWEEP_PATTERNS = ("incast", "fanout")  # sweep --pattern: node 0 (the first host) is the hub

SOAK_DIR = "soak"  # the run directory's folder of the soak series (--series prefixes)


def soak_point_s(cfg: SweepConfig) -> float:
    """How much longer than an ordinary point a soak point runs: its window at every size."""
    return (cfg.soak_s or 0.0) * len(cfg.sizes)


def exe_options(cfg: SweepConfig, test: str, pairs: int, csv: str | None,
                env_json: str | None, qps: int | None = None,
                series: str | None = None) -> list[str]:
    """The executable's own options for one point (common options of both executables)."""
    args = ["--test", test, "--sizes", ",".join(str(s) for s in cfg.sizes), "--pairs", str(pairs)]
    if qps is not None:
        args += ["--qps", str(qps)]
    args += exe_argv(cfg)
    if series is not None:
        args += ["--series", series]
    if series is not None and cfg.layer == "verbs":  # every node's counters over the soak
        args += ["--counters-series", series]        # (verbs/vb_cntseries.h)
    args += ["--timeout", f"{cfg.timeout_s:g}", "--quiet"]
    if csv is not None:
        args += ["--output", csv]
    if env_json is not None:
        args += ["--env-json", env_json]
    return args + list(cfg.exe_args)


def plan_pattern_point(cfg: SweepConfig, index: int, test: str, pairs: int, rep: int,
                       qps: int | None, name: str) -> Point:
    """sweep --layer verbs --pattern incast|fanout: one rank per node on the first pairs + 1
    hosts (Launcher.rank_job, rank i on line i of the point's host file), pairbench-verbs
    --pattern with --pairs = pairs (one flow per other node); each rank writes its own CSV
    (%r); the point's headline rows are rank 0's: the target's incoming flows on its clock
    (incast) or the hub's outgoing flows (fanout); the other ranks' rows are merged as
    scope flow / node / probe (collect.pattern_rows)."""
    raw = f"raw/{name}"
    sub = replace(cfg, hosts=cfg.hosts[:pairs + 1])
    launcher = launchers.get(sub)
    hostfile = f"{raw}.hosts"
    series = f"{cfg.run_dir}/{SOAK_DIR}/{name}" if cfg.soak_s else None  # every node's files
    exe = [cfg.binary, *exe_options(cfg, test, pairs, f"{cfg.run_dir}/{raw}.%r.csv",
                                      f"{cfg.run_dir}/{raw}.%r.env.json", qps, series),
           "--pattern", str(cfg.pattern), "--pattern-hosts", f"{cfg.run_dir}/{hostfile}"]
    argv, env = launcher.rank_job(exe, f"{cfg.run_dir}/{hostfile}")
    return Point(index=index, name=name, layer=cfg.layer, test=test, pairs=pairs, repetition=rep,
                 sizes=cfg.sizes, sides=main_side(argv, raw), timeout_s=cfg.timeout_s,
                 csv=f"{raw}.0.csv", env_json=f"{raw}.0.env.json",
                 env=launcher.env() + env, qps=qps, files=((hostfile, launcher.hostfile_text(1)),),
                 ompi_dirs=launcher.private_ompi_dirs(), ranks=pairs + 1)


def plan_point(cfg: SweepConfig, index: int, test: str, pairs: int, rep: int,
               qps: int | None = None) -> Point:
    name = f"r{rep}-{test}-p{pairs}" + (f"-q{qps}" if qps is not None else "")
    if cfg.pattern is not None:
        return plan_pattern_point(cfg, index, test, pairs, rep, qps, name)
    raw = f"raw/{name}"
    launcher = launchers.get(cfg)
    series = f"{SOAK_DIR}/{name}" if cfg.soak_s else None
    if launcher.remote_binary:  # the executable runs elsewhere: its output comes back on stdout
        csv = env_json = series = None
        exe = exe_options(cfg, test, pairs, None, None, qps)
    else:
        csv, env_json = f"{raw}.csv", f"{raw}.env.json"
        exe = [cfg.binary, *exe_options(cfg, test, pairs, f"{cfg.run_dir}/{csv}",
                                          f"{cfg.run_dir}/{env_json}", qps,
                                          f"{cfg.run_dir}/{series}" if series else None)]
    # A soak point runs its window at every size: the deadline is the executables' --timeout
    # (every wait) on top of that.
    return Point(index=index, name=name, layer=cfg.layer, test=test, pairs=pairs, repetition=rep,
                 sizes=cfg.sizes, sides=launcher.sides(exe, pairs, raw),
                 timeout_s=cfg.timeout_s + soak_point_s(cfg), csv=csv, env_json=env_json,
                 env=launcher.env(), qps=qps, soak_s=cfg.soak_s or 0.0, series=series,
                 ompi_dirs=launcher.private_ompi_dirs())


def check_config(cfg: SweepConfig) -> None:
    """What makes a configuration unplannable, as UsageError (the launcher's own checks of
    hosts and addresses: Launcher.check, which planning also meets)."""
    if cfg.layer not in LAYERS:
        raise UsageError(f"unknown layer {cfg.layer!r} (one of {', '.join(LAYERS)})")
    launchers.get(cfg)  # an unknown launcher: UsageError naming the known ones
    if not cfg.tests:
        raise UsageError("no test given (--test NAME)")
    if cfg.repetitions < 1:
        raise UsageError("--repetitions must be >= 1")
    if cfg.timeout_s <= 0:
        raise UsageError("--timeout must be > 0")
    if cfg.qps and cfg.layer != "verbs":
        raise UsageError("--qps is a verbs option (queue pairs per pair)")
    if cfg.pattern is not None:
        check_pattern(cfg)
    elif cfg.probe:
        raise UsageError("--probe goes with --pattern incast|fanout (a victim flow into the hub)")
    if cfg.soak_s:  # the executables' rule (core/pb_soak.c), before anything runs
        for test in cfg.tests:
            info = testtable.find(test, cfg.layer)
            if info is not None and info.kind not in testtable.BANDWIDTH_KINDS:
                names = [t.name for t in testtable.load_snapshot()[cfg.layer].tests
                         if t.kind in testtable.BANDWIDTH_KINDS]
                raise UsageError(f"--soak applies to the bandwidth and message-rate tests "
                                 f"of --layer {cfg.layer} ({', '.join(names)}), not --test "
                                 f"{test}")


def check_pattern(cfg: SweepConfig) -> None:
    """sweep --pattern: a launcher that starts one rank per node, a bandwidth or latency
    test of its own roles, and hosts for the largest --pairs (P senders + the target)."""
    if cfg.layer != "verbs" or cfg.pattern not in SWEEP_PATTERNS:
        raise UsageError(f"--pattern {cfg.pattern}: the sweep runs {' and '.join(SWEEP_PATTERNS)} "
                         "with --layer verbs (pairbench-mpi's patterns: run it under mpirun "
                         "with --pattern, docs/patterns.md)")
    if cfg.probe and (cfg.iterations or cfg.duration_s):
        raise UsageError("--probe runs during the pattern's common window (--bw-seconds): "
                         "not with -n/--iterations or -D/--duration")
    launcher = launchers.get(cfg)
    if type(launcher).rank_job is Launcher.rank_job:
        raise UsageError(f"--pattern needs a launcher that starts one rank per node (mpirun, "
                         f"srun), not --launcher {cfg.launcher}")
    need = max(cfg.pairs) + 1
    if len(cfg.hosts) < need:
        raise UsageError(f"--pattern {cfg.pattern} --pairs {max(cfg.pairs)}: needs {need} hosts "
                         f"(the target or hub, then one per other node); --hosts gives "
                         f"{len(cfg.hosts)}")
    for test in cfg.tests:
        info = testtable.find(test, cfg.layer)
        if info is not None and info.kind == testtable.LOADED_KIND:
            raise UsageError(f"--pattern: --test {test} has its own roles (a probe pair and "
                             "loading pairs)")
        if (info is not None and cfg.pattern == "incast"
                and info.kind not in testtable.BANDWIDTH_KINDS):
            raise UsageError(f"--pattern incast: --test {test} is measured by the senders, and "
                             "the sweep keeps the target's rows (its incoming flows: the "
                             "bandwidth and message-rate tests); run a latency incast with "
                             "pairbench-verbs --pattern directly (docs/patterns.md)")


def plan_sweep(cfg: SweepConfig) -> list[Point]:
    """All points of a sweep, repetition-major (so repetitions are spread over time)."""
    check_config(cfg)
    points: list[Point] = []
    qps_values: tuple[int | None, ...] = cfg.qps or (None,)
    for rep in range(1, cfg.repetitions + 1):
        for test in cfg.tests:
            for pairs in cfg.pairs:
                for qps in qps_values:
                    points.append(plan_point(cfg, len(points), test, pairs, rep, qps))
    return points


PLAN_VERSION = 1


@dataclass(frozen=True)
class RigPlan:
    """A sweep planned on the host and run inside the Soft-RoCE rig's VM: the host writes
    it as JSON into the run directory (plan_to_json), `python -m pairbench.runner.riginside
    FILE` reads it inside the VM (plan_from_json) and runs exactly these points there."""

    config: SweepConfig
    points: tuple[Point, ...]
    meta: dict  # the run's metadata.json so far (run_id, started, config, ...), no fingerprint
    fail_fast: bool = False
    progress: bool = True
    command_line: tuple[str, ...] = ()  # the user's command, for the fingerprint
    # the host fingerprint's software fields (fingerprint.software_of): the guest runs the
    # host's root file system and source tree, so its fingerprint takes them as they are
    host_software: dict = field(default_factory=dict)


def plan_to_json(plan: RigPlan) -> dict:
    return {"plan_version": PLAN_VERSION, "config": asdict(plan.config),
            "points": [asdict(p) for p in plan.points], "meta": plan.meta,
            "fail_fast": plan.fail_fast, "progress": plan.progress,
            "command_line": list(plan.command_line), "host_software": plan.host_software}


def _tuples(value: object) -> object:
    """JSON lists back to the tuples the frozen dataclasses hold."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def plan_from_json(data: dict) -> RigPlan:
    """The plan plan_to_json wrote; UsageError when it is not one (another version)."""
    if not isinstance(data, dict) or data.get("plan_version") != PLAN_VERSION:
        raise UsageError(f"not a pairbench rig plan of version {PLAN_VERSION}")
    try:
        cfg = SweepConfig(**{k: _tuples(v) for k, v in data["config"].items()})
        points = tuple(
            Point(**{**{k: _tuples(v) for k, v in p.items()},
                     "sides": tuple(Side(**{k: _tuples(v) for k, v in s.items()})
                                    for s in p["sides"])})
            for p in data["points"])
        return RigPlan(config=cfg, points=points, meta=dict(data["meta"]),
                       fail_fast=bool(data["fail_fast"]), progress=bool(data["progress"]),
                       command_line=tuple(data["command_line"]),
                       host_software=dict(data.get("host_software") or {}))
    except (KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"malformed pairbench rig plan: {exc}") from None
