"""Planning a sweep: a pure function from a configuration to the list of points to run.

A point is one (layer, test, pairs, repetition); all message sizes go to one invocation.
Each point carries the exact argument lists of the processes to start (one for
local/mpirun/srun, two for ssh: server and client), built here and nowhere else.
No file system, no environment, no clock: everything comes in through SweepConfig.
A RigPlan (config + points) goes to and from plain JSON data for the Soft-RoCE rig.
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, field

from pairbench.errors import UsageError

LAYERS = ("verbs", "mpi")
LAUNCHERS = ("local", "softroce", "mpirun", "srun", "ssh")
DEFAULT_LAUNCHER_CMD = {"mpirun": "mpirun", "srun": "srun", "ssh": "ssh"}
OMPI_ROOT_ENV = (("OMPI_ALLOW_RUN_AS_ROOT", "1"), ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"))
SSH_OPTIONS = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=10")


@dataclass(frozen=True)
class SweepConfig:
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
    iterations: int | None = None
    warmup: int | None = None
    duration_s: float | None = None
    bw_seconds: float | None = None
    lat_seconds: float | None = None
    lat_samples: int | None = None
    pin: str | None = None
    pin_list: str | None = None
    allow_oversubscribe: bool = False
    exe_args: tuple[str, ...] = ()
    launcher_cmd: str | None = None
    launcher_args: tuple[str, ...] = ()
    remote_binary: str | None = None
    as_root: bool = False
    connect_addr: str | None = None  # verbs: address of the server's RDMA device
    devices: str | None = None  # verbs -d: "rxe0,rxe1" or "all" (pairs round-robin over them)
    qps: tuple[int, ...] = ()  # verbs --qps values, a point each; () = the executable's default (1)


@dataclass(frozen=True)
class Side:
    """One process of a point: its argv and where its stdout/stderr go (relative to run dir)."""

    role: str  # "main" (the only process), "server" or "client" (ssh)
    argv: tuple[str, ...]
    stdout: str
    stderr: str


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


def exe_options(cfg: SweepConfig, test: str, pairs: int, csv: str | None,
                env_json: str | None, qps: int | None = None) -> list[str]:
    """The executable's own options for one point (common options of both executables)."""
    args = ["--test", test, "--sizes", ",".join(str(s) for s in cfg.sizes), "--pairs", str(pairs)]
    if qps is not None:
        args += ["--qps", str(qps)]
    if cfg.iterations is not None:
        args += ["--iterations", str(cfg.iterations)]
    if cfg.warmup is not None:
        args += ["--warmup", str(cfg.warmup)]
    if cfg.duration_s is not None:
        args += ["--duration", f"{cfg.duration_s:g}"]
    for opt, secs in (("--bw-seconds", cfg.bw_seconds), ("--lat-seconds", cfg.lat_seconds)):
        if secs is not None:
            args += [opt, f"{secs:g}"]
    if cfg.lat_samples is not None:
        args += ["--lat-samples", str(cfg.lat_samples)]
    if cfg.pin is not None:
        args += ["--pin", cfg.pin]
    if cfg.pin_list is not None:
        args += ["--pin-list", cfg.pin_list]
    if cfg.allow_oversubscribe:
        args.append("--allow-oversubscribe")
    if cfg.devices is not None:
        args += ["--device", cfg.devices]
    args += ["--timeout", f"{cfg.timeout_s:g}", "--quiet"]
    if csv is not None:
        args += ["--output", csv]
    if env_json is not None:
        args += ["--env-json", env_json]
    return args + list(cfg.exe_args)


def verbs_connect(cfg: SweepConfig) -> list[str]:
    """Two-sided verbs launches: the client connects to the server's device address
    (--connect-addr, else the first host); rank 0 is the server, rank 1 the client."""
    addr = cfg.connect_addr or (cfg.hosts[0] if cfg.hosts else None)
    if addr is None:
        raise UsageError(f"--layer verbs --launcher {cfg.launcher} needs --hosts A,B or "
                         "--connect-addr (the server's RDMA device address)")
    return ["--connect", addr]


def mpirun_argv(cfg: SweepConfig, pairs: int, exe: list[str]) -> list[str]:
    """mpirun: 2P ranks for the MPI layer; for verbs one rank per side (each forks P workers)."""
    argv = [cfg.launcher_cmd or "mpirun", "--oversubscribe"]
    if cfg.layer == "mpi":
        argv += ["-np", str(2 * pairs)]
    else:
        argv += ["-np", "2", "--map-by", "node" if cfg.hosts else "slot"]
    if cfg.hosts:
        argv += ["-H", ",".join(cfg.hosts)]
    return argv + list(cfg.launcher_args) + exe


def srun_argv(cfg: SweepConfig, pairs: int, exe: list[str]) -> list[str]:
    """srun on two nodes: 2P tasks for MPI, P on each node (pairbench-mpi pairs the i-th
    rank of one node with the i-th of the other: `-N2 -n 2P` alone lets Slurm fill the
    first node's CPUs, e.g. 3 + 1 for P = 2); one task per node for verbs."""
    argv = [cfg.launcher_cmd or "srun", "-N2"]
    if cfg.layer == "mpi":
        argv += ["-n", str(2 * pairs), f"--ntasks-per-node={pairs}"]
    else:
        argv += ["-n", "2", "--ntasks-per-node=1"]
    if cfg.hosts:
        argv += ["--nodelist", ",".join(cfg.hosts)]
    return argv + list(cfg.launcher_args) + exe


def ssh_argvs(cfg: SweepConfig, exe_args: list[str]) -> tuple[list[str], list[str]]:
    """ssh: server (--server) on hosts[0], client (--connect ADDR) on hosts[1].

    ssh hands its command to the remote shell, so the remote argv is quoted with
    shlex.join: every element stays one argument whatever it contains.
    """
    if len(cfg.hosts) != 2:
        raise UsageError("--launcher ssh needs --hosts A,B (server on A, client on B)")
    server_host, client_host = cfg.hosts
    remote = [cfg.remote_binary or cfg.binary, *exe_args]
    ssh = [cfg.launcher_cmd or "ssh", *SSH_OPTIONS, *cfg.launcher_args]
    server = [*ssh, server_host, "--", shlex.join([*remote, "--server"])]
    client = [*ssh, client_host, "--", shlex.join([*remote, *verbs_connect(cfg)])]
    return server, client


def plan_point(cfg: SweepConfig, index: int, test: str, pairs: int, rep: int,
               qps: int | None = None) -> Point:
    name = f"r{rep}-{test}-p{pairs}" + (f"-q{qps}" if qps is not None else "")
    raw = f"raw/{name}"
    env: tuple[tuple[str, str], ...] = ()
    if cfg.launcher == "ssh":
        exe = exe_options(cfg, test, pairs, None, None, qps)
        server, client = ssh_argvs(cfg, exe)
        sides = (Side("server", tuple(server), f"{raw}.server.stdout", f"{raw}.server.stderr"),
                 Side("client", tuple(client), f"{raw}.client.stdout", f"{raw}.client.stderr"))
        csv = env_json = None
    else:
        csv, env_json = f"{raw}.csv", f"{raw}.env.json"
        exe = [cfg.binary, *exe_options(cfg, test, pairs, f"{cfg.run_dir}/{csv}",
                                          f"{cfg.run_dir}/{env_json}", qps)]
        if cfg.launcher in ("local", "softroce"):
            argv = exe + (["--loopback"] if cfg.layer == "verbs" else [])
        elif cfg.launcher == "mpirun":
            argv = mpirun_argv(cfg, pairs, exe + (verbs_connect(cfg) if cfg.layer == "verbs"
                                                  else []))
            env = OMPI_ROOT_ENV if cfg.as_root else ()
        elif cfg.launcher == "srun":
            argv = srun_argv(cfg, pairs, exe + (verbs_connect(cfg) if cfg.layer == "verbs"
                                                else []))
        else:
            raise UsageError(f"unknown launcher {cfg.launcher!r} (one of {', '.join(LAUNCHERS)})")
        sides = (Side("main", tuple(argv), f"{raw}.stdout", f"{raw}.stderr"),)
    return Point(index=index, name=name, layer=cfg.layer, test=test, pairs=pairs, repetition=rep,
                 sizes=cfg.sizes, sides=sides, timeout_s=cfg.timeout_s, csv=csv,
                 env_json=env_json, env=env, qps=qps)


def plan_sweep(cfg: SweepConfig) -> list[Point]:
    """All points of a sweep, repetition-major (so repetitions are spread over time)."""
    if cfg.layer not in LAYERS:
        raise UsageError(f"unknown layer {cfg.layer!r} (one of {', '.join(LAYERS)})")
    if cfg.launcher not in LAUNCHERS:
        raise UsageError(f"unknown launcher {cfg.launcher!r} (one of {', '.join(LAUNCHERS)})")
    if not cfg.tests:
        raise UsageError("no test given (--test NAME)")
    if cfg.repetitions < 1:
        raise UsageError("--repetitions must be >= 1")
    if cfg.timeout_s <= 0:
        raise UsageError("--timeout must be > 0")
    if cfg.qps and cfg.layer != "verbs":
        raise UsageError("--qps is a verbs option (queue pairs per pair)")
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
    it as JSON into the run directory (plan_to_json), `python -m pairbench.rigrun FILE`
    reads it inside the VM (plan_from_json) and runs exactly these points there."""

    config: SweepConfig
    points: tuple[Point, ...]
    meta: dict  # the run's metadata.json so far (run_id, started, config, ...), no fingerprint
    fail_fast: bool = False
    progress: bool = True
    command_line: tuple[str, ...] = ()  # the user's command, for the fingerprint


def plan_to_json(plan: RigPlan) -> dict:
    return {"plan_version": PLAN_VERSION, "config": asdict(plan.config),
            "points": [asdict(p) for p in plan.points], "meta": plan.meta,
            "fail_fast": plan.fail_fast, "progress": plan.progress,
            "command_line": list(plan.command_line)}


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
                       command_line=tuple(data["command_line"]))
    except (KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"malformed pairbench rig plan: {exc}") from None
