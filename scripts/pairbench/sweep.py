"""`pairbench sweep`: plan -> run -> collect into a new run directory.

results/<date>-<host>-<shortid>/ holds data.csv (every row of every executable plus run_id
and repetition), metadata.json (configuration, fingerprint, per-point record) and raw/
(each process's stdout, stderr, CSV and --env-json file). Files are written atomically;
nothing is overwritten.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from pairbench import autoreps, fingerprint, procutil, testtable
from pairbench.autoreps import AutoReps
from pairbench.collect import (
    Row,
    atomic_write_json,
    atomic_write_text,
    collect_point,
    error_rows,
    failure_reason,
    rows_to_csv,
)
from pairbench.errors import Interrupted, RunFailure, UsageError, one_line
from pairbench.plan import (
    DEFAULT_LAUNCHER_CMD,
    LAUNCHERS,
    LAYERS,
    Point,
    RigPlan,
    SweepConfig,
    plan_sweep,
)
from pairbench.progress import SweepProgress
from pairbench.run import PointResult, run_point
from pairbench.safeio import output_dir
from pairbench.schema import check_schema, load_run, parse_print_schema
from pairbench.sizes import SIZE_LIST_RULE, parse_int_list, parse_sizes


def repo_root() -> Path:
    """The checkout this package lives in (PAIRBENCH_ROOT overrides; else the cwd)."""
    env = os.environ.get("PAIRBENCH_ROOT")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve().parents[2]
    if (here / "core" / "pb_schema.h").is_file():
        return here
    return Path.cwd().resolve()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--layer", required=True, choices=LAYERS)
    p.add_argument("--test", action="append", required=True, metavar="NAME",
                   help="test name; repeat or comma-separate for several")
    p.add_argument("-s", "--sizes", default="1:64K",
                   help=f"message sizes: {SIZE_LIST_RULE} (default 1:64K)")
    p.add_argument("--pairs", default="1", help="pair counts, e.g. 1,2,4,8 (default 1)")
    p.add_argument("--qps", default=None, help="verbs: queue pairs per pair, e.g. 1,8,64 (a point "
                   f"per value, 1..{MAX_QPS}; default: the executable's 1)")
    p.add_argument("--repetitions", default="1", metavar="N|auto[:MAX]",
                   help="runs of every point (default 1); auto[:MAX]: 3, then more of the "
                   "undecided points until decided or MAX (default 10; docs/driver.md)")
    p.add_argument("--baseline", default=None, metavar="RUN",
                   help="with --repetitions auto: decide every point against this run (as "
                   "pairbench compare RUN NEW would)")
    p.add_argument("--detect", default=None, metavar="PCT",
                   help="with --repetitions auto and no --baseline: the change every point "
                   "must be able to show (default twice each metric's threshold)")
    p.add_argument("--thresholds", default=None, metavar="TOML",
                   help="with --repetitions auto: compare's thresholds file (metrics, "
                   "thresholds, confidence) for deciding; give the same to compare")
    p.add_argument("--launcher", choices=LAUNCHERS, default="local")
    p.add_argument("--hosts", default=None, help="comma-separated hosts (mpirun -H, srun "
                   "--nodelist, ssh: server,client)")
    p.add_argument("--timeout", type=float, default=300.0, help="per point, seconds (default 300)")
    p.add_argument("--results-dir", default=None, help="parent of the run directory "
                   "(default <repo>/results)")
    p.add_argument("--run-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--binary", default=None, help="executable (default build/bin/pairbench-LAYER)")
    p.add_argument("--remote-binary", default=None, help="ssh: executable path on the hosts")
    p.add_argument("--connect-addr", default=None, help="verbs with ssh/mpirun/srun: address "
                   "of the server's RDMA device (default: the first host)")
    p.add_argument("--devices", default=None, metavar="DEV,DEV|all",
                   help="verbs: RDMA devices of every point (pairbench-verbs -d: pairs "
                        "round-robin over them; all = every device with an ACTIVE port); "
                        "per-device aggregate rows follow (docs/verbs.md)")
    p.add_argument("--rig-devices", type=int, default=None, metavar="N",
                   help="--launcher softroce: Soft-RoCE devices the rig creates (softroce-run "
                        "--devices; default: as many as --devices names, else 1)")
    p.add_argument("--launcher-cmd", default=None,
                   help="path of mpirun/srun/ssh or of the Soft-RoCE rig to use")
    p.add_argument("--launcher-arg", action="append", default=[], metavar="ARG",
                   help="extra launcher argument (repeat; write --launcher-arg=--x)")
    p.add_argument("--exe-arg", action="append", default=[], metavar="ARG",
                   help="extra executable argument (repeat; write --exe-arg=--x)")
    p.add_argument("-n", "--iterations", type=int, default=None)
    p.add_argument("-w", "--warmup", type=int, default=None)
    p.add_argument("-D", "--duration", type=float, default=None,
                   help="every test: one common window of SEC seconds per point (latency "
                        "into a histogram); default: --bw-seconds / --lat-seconds")
    p.add_argument("--bw-seconds", type=float, default=None, metavar="SEC",
                   help="bandwidth, message rate without -n/-D: the common window of every "
                        "point (the executables' default 0.2)")
    p.add_argument("--lat-seconds", type=float, default=None, metavar="SEC",
                   help="latency without -n/-D: sample until SEC after the common start "
                        "(default 0.1) and --lat-samples, whichever is later")
    p.add_argument("--lat-samples", type=int, default=None, metavar="N",
                   help="latency without -n/-D: at least N samples per pair (default 1000)")
    p.add_argument("--pin", default=None)
    p.add_argument("--pin-list", default=None)
    p.add_argument("--allow-oversubscribe", action="store_true")
    p.add_argument("--rig-timeout", type=float, default=None,
                   help="softroce: limit for the whole rig run (default from the plan)")
    p.add_argument("--fail-fast", action="store_true", help="stop at the first failed point")
    p.add_argument("--no-progress", action="store_true")


@dataclass(frozen=True)
class SweepOptions:
    """What `pairbench sweep` is asked to do: its command-line options, typed. The CLI
    shell builds one from argparse (from_namespace); `pairbench default` builds its own.
    Lists stay as the user wrote them (sizes "1:64K", pairs "1,2"): config_from_options
    checks them with the executables' rules."""

    layer: str
    tests: tuple[str, ...]  # test names (an element may still be "a,b" as on the CLI)
    sizes: str = "1:64K"
    pairs: str = "1"
    qps: str | None = None  # verbs --qps list as written ("1,8,64"); None = not given
    repetitions: int = 1
    auto: AutoReps | None = None  # --repetitions auto[:MAX] (then repetitions = MIN_REPS)
    launcher: str = "local"
    hosts: str | None = None
    timeout_s: float = 300.0
    results_dir: str | None = None
    run_dir: str | None = None
    binary: str | None = None
    remote_binary: str | None = None
    connect_addr: str | None = None
    devices: str | None = None
    rig_devices: int | None = None
    launcher_cmd: str | None = None
    launcher_args: tuple[str, ...] = ()
    exe_args: tuple[str, ...] = ()
    iterations: int | None = None
    warmup: int | None = None
    duration_s: float | None = None
    bw_seconds: float | None = None
    lat_seconds: float | None = None
    lat_samples: int | None = None
    pin: str | None = None
    pin_list: str | None = None
    allow_oversubscribe: bool = False
    rig_timeout_s: float | None = None
    fail_fast: bool = False
    progress: bool = True

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> SweepOptions:
        """The CLI shell's half: argparse's result for `sweep` (add_arguments) as options."""
        reps, auto = autoreps.parse_repetitions(ns.repetitions)
        if auto is not None:
            auto = replace(auto, baseline=ns.baseline, thresholds=ns.thresholds,
                           detect=None if ns.detect is None
                           else _fraction(ns.detect, "--detect"))
            auto.compare_thresholds()           # a bad file: exit 2 before anything runs
        elif ns.baseline is not None or ns.detect is not None or ns.thresholds is not None:
            raise UsageError("--baseline, --detect and --thresholds go with --repetitions "
                             "auto[:MAX]")
        return cls(
            layer=ns.layer, tests=tuple(t.strip() for arg in ns.test for t in arg.split(",")
                                        if t.strip()), sizes=ns.sizes, pairs=ns.pairs, qps=ns.qps,
            repetitions=reps, auto=auto, launcher=ns.launcher, hosts=ns.hosts,
            timeout_s=ns.timeout, results_dir=ns.results_dir, run_dir=ns.run_dir,
            binary=ns.binary, remote_binary=ns.remote_binary, connect_addr=ns.connect_addr,
            devices=ns.devices, rig_devices=ns.rig_devices,
            launcher_cmd=ns.launcher_cmd, launcher_args=tuple(ns.launcher_arg),
            exe_args=tuple(ns.exe_arg), iterations=ns.iterations, warmup=ns.warmup,
            duration_s=ns.duration, bw_seconds=ns.bw_seconds, lat_seconds=ns.lat_seconds,
            lat_samples=ns.lat_samples, pin=ns.pin, pin_list=ns.pin_list,
            allow_oversubscribe=ns.allow_oversubscribe, rig_timeout_s=ns.rig_timeout,
            fail_fast=ns.fail_fast, progress=not ns.no_progress)

    def argv(self) -> list[str]:
        """The `pairbench sweep` arguments that ask for the same (options at their
        default are left out), for logs."""
        args = ["--layer", self.layer, "--test", ",".join(self.tests)]
        for opt, val, default in (
                ("--pairs", self.pairs, "1"), ("--qps", self.qps, None),
                ("--sizes", self.sizes, "1:64K"),
                ("--iterations", self.iterations, None), ("--warmup", self.warmup, None),
                ("--duration", self.duration_s, None), ("--bw-seconds", self.bw_seconds, None),
                ("--lat-seconds", self.lat_seconds, None),
                ("--lat-samples", self.lat_samples, None), ("--launcher", self.launcher, "local"),
                ("--repetitions", self.repetitions if self.auto is None
                 else f"auto:{self.auto.max_reps}", 1), ("--timeout", self.timeout_s, 300.0),
                ("--baseline", self.auto and self.auto.baseline, None),
                ("--detect", self.auto and self.auto.detect, None),
                ("--thresholds", self.auto and self.auto.thresholds, None),
                ("--hosts", self.hosts, None), ("--binary", self.binary, None),
                ("--remote-binary", self.remote_binary, None),
                ("--connect-addr", self.connect_addr, None),
                ("--devices", self.devices, None), ("--rig-devices", self.rig_devices, None),
                ("--launcher-cmd", self.launcher_cmd, None), ("--pin", self.pin, None),
                ("--pin-list", self.pin_list, None),
                ("--rig-timeout", self.rig_timeout_s, None)):
            if val is not None and val != default:
                args += [opt, f"{val:g}" if isinstance(val, float) else str(val)]
        if self.allow_oversubscribe:
            args.append("--allow-oversubscribe")
        args += [f"--launcher-arg={a}" for a in self.launcher_args]
        args += [f"--exe-arg={a}" for a in self.exe_args]
        if self.fail_fast:
            args.append("--fail-fast")
        if self.results_dir is not None:
            args += ["--results-dir", self.results_dir]
        if not self.progress:
            args.append("--no-progress")
        return args


def config_from_options(opts: SweepOptions, run_dir: Path, root: Path) -> SweepConfig:
    tests = tuple(t.strip() for arg in opts.tests for t in arg.split(",") if t.strip())
    if not tests:
        raise UsageError("no test given (--test NAME)")
    hosts = tuple(h.strip() for h in opts.hosts.split(",") if h.strip()) if opts.hosts else ()
    if opts.hosts is not None and not hosts:
        raise UsageError("--hosts is empty")
    for name, val in (("--iterations", opts.iterations), ("--warmup", opts.warmup)):
        if val is not None and val < 0:
            raise UsageError(f"{name} must be >= 0")
    if opts.iterations and opts.duration_s:
        raise UsageError(f"-n/--iterations {opts.iterations} and -D/--duration "
                         f"{opts.duration_s:g} both given: choose a fixed count or a common "
                         "window")
    check_numbers(opts)
    if opts.pin_list is not None and opts.pin != "list":
        raise UsageError("--pin-list is used only with --pin list (add --pin list)")
    try:  # the executables' rule and range (pairbench.sizes)
        sizes = tuple(parse_sizes(opts.sizes))
    except UsageError as exc:
        raise UsageError(f"--sizes: {exc}") from None
    pairs = tuple(parse_int_list(opts.pairs, "pairs"))
    check_devices(opts)
    if pairs[-1] > MAX_PAIRS:
        raise UsageError(f"--pairs {pairs[-1]}: at most {MAX_PAIRS} pairs (the executables' "
                         "limit, PB_MAX_PAIRS)")
    qps: tuple[int, ...] = ()
    if opts.qps is not None:
        if opts.layer != "verbs":
            raise UsageError("--qps is a verbs option (queue pairs per pair)")
        qps = tuple(parse_int_list(opts.qps, "qps"))
        if qps[-1] > MAX_QPS:
            raise UsageError(f"--qps {qps[-1]}: at most {MAX_QPS} (pairbench-verbs' limit, "
                             "VB_MAX_QPS)")
    binary = opts.binary or str(root / "build" / "bin" / f"pairbench-{opts.layer}")
    return SweepConfig(
        layer=opts.layer, tests=tests, sizes=sizes,
        pairs=pairs, binary=str(Path(binary).absolute()),
        run_dir=str(run_dir), repetitions=opts.repetitions, launcher=opts.launcher,
        hosts=hosts, timeout_s=opts.timeout_s, iterations=opts.iterations,
        warmup=opts.warmup, duration_s=opts.duration_s, bw_seconds=opts.bw_seconds,
        lat_seconds=opts.lat_seconds, lat_samples=opts.lat_samples, pin=opts.pin,
        pin_list=opts.pin_list,
        allow_oversubscribe=opts.allow_oversubscribe, exe_args=opts.exe_args,
        launcher_cmd=opts.launcher_cmd, launcher_args=opts.launcher_args,
        remote_binary=opts.remote_binary, as_root=(os.geteuid() == 0),
        connect_addr=opts.connect_addr, devices=opts.devices, qps=qps)


DEVICE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,63}")
MAX_RIG_DEVICES = 8  # softroce-run --devices 1..8


def check_devices(opts: SweepOptions) -> None:
    """--devices: verbs only, 'all' or a list of distinct device names (pairbench-verbs -d's
    rule); --rig-devices: the rig's range, and only with the rig."""
    if opts.devices is not None:
        if opts.layer != "verbs":
            raise UsageError("--devices is for --layer verbs (RDMA devices of pairbench-verbs)")
        names = opts.devices.split(",")
        if opts.devices != "all" and (not all(DEVICE_NAME.fullmatch(n) for n in names)
                                      or len(set(names)) != len(names)):
            raise UsageError(f"--devices {opts.devices!r}: expected 'all' or distinct device "
                             "names separated by commas (e.g. rxe0,rxe1)")
    if opts.rig_devices is not None:
        if opts.launcher != "softroce":
            raise UsageError("--rig-devices is for --launcher softroce")
        if not 1 <= opts.rig_devices <= MAX_RIG_DEVICES:
            raise UsageError(f"--rig-devices {opts.rig_devices}: expected 1..{MAX_RIG_DEVICES}")


def rig_device_count(opts: SweepOptions) -> int:
    """Devices the rig creates: --rig-devices, else as many as --devices lists, else 1."""
    if opts.rig_devices is not None:
        return opts.rig_devices
    if opts.devices and opts.devices != "all":
        return min(MAX_RIG_DEVICES, len(opts.devices.split(",")))
    return 1


MAX_PAIRS = 256  # PB_MAX_PAIRS in core/pb_common.h
MAX_QPS = 16384  # VB_MAX_QPS in verbs/vb_hdr.h
MAX_TIMEOUT_S = 86400.0  # the executables' --timeout range is 0.1..86400 s
MAX_LAT_SAMPLES = 524288  # PB_TARGET_MAX_SAMPLES in core/pb_common.h


def _fraction(text: str, opt: str) -> float:
    """'10%' or 0.1 -> 0.1 (a positive fraction)."""
    t = str(text).strip()
    try:
        v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise UsageError(f"{opt} {text!r}: expected a fraction or a percentage (10%)") from None
    if not (math.isfinite(v) and 0 < v < 10):
        raise UsageError(f"{opt} {text!r}: expected a change above 0 (e.g. 10%)")
    return v


def check_numbers(opts: SweepOptions) -> None:
    """Numbers that argparse lets through but that would disable a deadline or start an
    absurd job: nan, inf, zero or negative timeouts and counts."""
    timeout, duration, rig_timeout = opts.timeout_s, opts.duration_s, opts.rig_timeout_s
    if not (math.isfinite(timeout) and 0.1 <= timeout <= MAX_TIMEOUT_S):
        raise UsageError(f"--timeout {timeout:g}: expected seconds in 0.1..{MAX_TIMEOUT_S:g} "
                         "(the deadline of every point)")
    if opts.repetitions < 1:
        raise UsageError(f"--repetitions {opts.repetitions}: expected >= 1")
    if duration is not None and not (math.isfinite(duration) and 0 <= duration
                                     <= MAX_TIMEOUT_S):
        raise UsageError(f"--duration {duration:g}: expected seconds in 0..{MAX_TIMEOUT_S:g}")
    for name, secs in (("--bw-seconds", opts.bw_seconds), ("--lat-seconds", opts.lat_seconds)):
        if secs is not None and not (math.isfinite(secs) and 0.001 <= secs <= MAX_TIMEOUT_S):
            raise UsageError(f"{name} {secs:g}: expected seconds in 0.001..{MAX_TIMEOUT_S:g} "
                             "(the executables' range)")
    if opts.lat_samples is not None and not 1 <= opts.lat_samples <= MAX_LAT_SAMPLES:
        raise UsageError(f"--lat-samples {opts.lat_samples}: expected 1..{MAX_LAT_SAMPLES} "
                         "(PB_TARGET_MAX_SAMPLES)")
    if rig_timeout is not None and not (math.isfinite(rig_timeout) and rig_timeout > 0):
        raise UsageError(f"--rig-timeout {rig_timeout:g}: expected a finite number > 0")


def new_run_dir(results_dir: Path) -> Path:
    """results/<date>-<host>-<shortid>/, created exclusively (never reused)."""
    output_dir(results_dir, "--results-dir")
    host = socket.gethostname().split(".")[0] or "host"
    for _ in range(10):
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        d = results_dir / f"{stamp}-{host}-{uuid.uuid4().hex[:6]}"
        try:
            d.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise UsageError(f"--results-dir {results_dir}: cannot create a run directory: "
                             f"{exc.strerror}") from None
        return d
    raise UsageError(f"cannot create a new run directory under {results_dir}")


class StartupProbe:
    """The sweep's start-up probe: the executable's `--print-schema` and `--list-tests`,
    before any run directory exists. Both share one deadline derived from the user's
    --timeout (the deadline of a point), never below MIN_S: pairbench-mpi answers after a
    singleton MPI_Init, which a tiny --timeout must not fail (its own start-up deadline has
    the same floor reason, docs/mpi.md). Each runs in its own process group, ended as a
    group on that deadline or on a stop signal (SIGINT, SIGTERM, SIGHUP) to the sweep."""

    MIN_S = 5.0

    def __init__(self, timeout_s: float, signals: StopSignals | None = None) -> None:
        self.timeout_s = max(timeout_s, self.MIN_S)
        self.deadline = time.monotonic() + self.timeout_s
        self.signals = signals

    def run(self, binary: str, *args: str) -> subprocess.CompletedProcess[str]:
        """The finished command; UsageError when it cannot start, RunFailure on the
        deadline, Interrupted on a stop signal."""
        argv = [binary, *args]
        cmd = " ".join(argv)
        signals = self.signals
        res = procutil.run_bounded(argv, max(0.0, self.deadline - time.monotonic()),
                                   signals.stopped if signals else None)
        if res.state == "stopped" and signals is not None and signals.received is not None:
            raise Interrupted(signals.received, f"interrupted by {signals.name} during the "
                              f"start-up probe ({cmd}); its process group was killed, nothing "
                              "was run")
        if res.state != "exited" or res.result is None:
            if res.state == "cannot start":
                raise UsageError(f"cannot run {cmd}: {res.why}")
            raise RunFailure(f"start-up probe: {cmd} did not answer within "
                             f"{self.timeout_s:g} s (--timeout, at least {self.MIN_S:g} s); its "
                             "process group was killed")
        return res.result


def check_launch(cfg: SweepConfig, probe: StartupProbe | None = None) -> None:
    """Obviously bad input -> UsageError before anything starts; an executable that does not
    answer its start-up probe -> RunFailure (see StartupProbe)."""
    if cfg.launcher in DEFAULT_LAUNCHER_CMD:
        cmd = cfg.launcher_cmd or DEFAULT_LAUNCHER_CMD[cfg.launcher]
        if shutil.which(cmd) is None:
            raise UsageError(f"launcher {cfg.launcher}: {cmd!r} not found on PATH")
    if cfg.launcher == "ssh":
        if len(cfg.hosts) != 2:
            raise UsageError("--launcher ssh needs --hosts A,B (server on A, client on B)")
        return  # the executable lives on the remote hosts
    if not Path(cfg.binary).is_file():
        raise UsageError(f"executable {cfg.binary} not found (build with `cmake -B build -G Ninja"
                         " && cmake --build build -j2`, or pass --binary)")
    if not os.access(cfg.binary, os.X_OK):
        raise UsageError(f"executable {cfg.binary} is not executable")
    proc = (probe or StartupProbe(cfg.timeout_s)).run(cfg.binary, "--print-schema")
    if proc.returncode != 0:
        raise UsageError(f"{cfg.binary} --print-schema exited {proc.returncode}: "
                         f"{proc.stderr.strip()[-200:]}")
    version, cols = parse_print_schema(proc.stdout)
    check_schema(version, cols, f"{cfg.binary} --print-schema")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def point_record(res: PointResult, run_dir: Path, reason: str | None) -> dict:
    p = res.point
    env_record = None
    if p.env_json and (run_dir / p.env_json).is_file():
        try:
            env_record = json.loads((run_dir / p.env_json).read_text())
        except ValueError:
            env_record = {"unreadable": p.env_json}
    return {"name": p.name, "test": p.test, "pairs": p.pairs, "qps": p.qps,
            "repetition": p.repetition,
            "sizes": list(p.sizes), "env_added": dict(p.env),
            "sides": [{"role": s.role, "argv": list(s.argv), "exit_code": c,
                       "stdout": s.stdout, "stderr": s.stderr}
                      for s, c in zip(p.sides, res.exit_codes, strict=True)],
            "timed_out": res.timed_out, "elapsed_s": round(res.elapsed_s, 3),
            "status": "ok" if reason is None else "error", "reason": reason,
            "env_record": env_record}


PLACEMENT_KEY = "placement"  # the --env-json record's per-process placement (both layers)
LEGACY_PLACEMENT_KEYS = {"verbs": "workers", "mpi": "ranks"}  # records made before it


def placement_of(env_record: object, layer: str) -> list | None:
    """Per-process placement from an --env-json record of `layer` (None = not recorded):
    "placement", or in a record made before that key existed the layer's own key."""
    if not isinstance(env_record, dict):
        return None
    for key in (PLACEMENT_KEY, LEGACY_PLACEMENT_KEYS.get(layer)):
        if key is not None and isinstance(env_record.get(key), list):
            return env_record[key]
    return None


class StopSignals:
    """SIGINT/SIGTERM/SIGHUP to the sweep (Ctrl-C, `kill PID`, timeout(1), a scheduler, a
    closed terminal): the first one is recorded and nothing else happens in the handler; the
    running point's wait loop sees it within procutil.POLL_S and kills the point's process group
    (its processes live in their own session and never see the signal). Raising from the
    handler instead could land inside subprocess's own locking and deadlock the clean-up.
    Further signals are ignored until the sweep has written its record and exits."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.received: int | None = None
        self._old: dict[int, object] = {}

    def __enter__(self) -> StopSignals:
        for s in self.SIGNALS:
            self._old[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for s, h in self._old.items():
            signal.signal(s, h)  # type: ignore[arg-type]

    def _handle(self, signum: int, _frame: object) -> None:
        if self.received is None:
            self.received = signum

    def stopped(self) -> bool:
        return self.received is not None

    @property
    def name(self) -> str:
        return signal.Signals(self.received).name if self.received is not None else ""


def execute(cfg: SweepConfig, points: list[Point], run_dir: Path, run_id: str, meta: dict,
            fail_fast: bool, show_progress: bool, signals: StopSignals | None = None,
            carry: list[Row] | None = None) -> list[Row]:
    """Run every point in order, writing data.csv and metadata.json after each one (after
    the rows in carry and meta's points so far: a round of --repetitions auto).
    A stop signal ends the running point (process group killed) and records the rest as
    not run; meta["interrupted"] then says which signal and which point."""
    (run_dir / "raw").mkdir(exist_ok=True)
    signals = signals or StopSignals()
    data: list[Row] = list(carry or [])
    meta["points"] = meta.get("points", []) if carry else []
    stop_reason: str | None = None
    with SweepProgress(len(points), enabled=show_progress) as prog:
        for p in points:
            label = f"{p.test} pairs={p.pairs} rep={p.repetition}"
            if stop_reason is None and signals.received is not None:
                stop_reason = interrupt(meta, signals.received, None)
            if stop_reason:
                data += error_rows(p, list(p.sizes), stop_reason, run_id)
                meta["points"].append({"name": p.name, "status": "error", "reason": stop_reason})
                prog.finished(label, "not run", 0.0)
                continue
            prog.starting(label)
            res = run_point(p, run_dir, grace_s=min(10.0, max(1.0, 0.1 * p.timeout_s)),
                            stop=signals.stopped)
            if res.interrupted and signals.received is not None:
                why = (f"interrupted by {signals.name} while this point ran (process group "
                       "killed)")
                data += error_rows(p, list(p.sizes), why, run_id)
                meta["points"].append({"name": p.name, "status": "interrupted", "reason": why,
                                       "elapsed_s": round(res.elapsed_s, 3)})
                stop_reason = interrupt(meta, signals.received, p.name)
                atomic_write_text(run_dir / "data.csv", rows_to_csv(data))
                atomic_write_json(run_dir / "metadata.json", meta)
                prog.finished(label, f"interrupted by {signals.name}", res.elapsed_s)
                continue
            reason = failure_reason(res, run_dir)
            rows = collect_point(res, run_dir, run_id)
            data += rows
            n_bad = sum(r["status"] != "ok" for r in rows)
            if reason is None and n_bad:
                reason = f"{n_bad} error row(s)"
            meta["points"].append(point_record(res, run_dir, reason))
            atomic_write_text(run_dir / "data.csv", rows_to_csv(data))
            atomic_write_json(run_dir / "metadata.json", meta)
            prog.finished(label, "ok" if reason is None else f"error: {reason}", res.elapsed_s)
            if reason is not None and fail_fast:
                stop_reason = f"not run: --fail-fast after {p.name} failed ({reason})"
    meta["pinning"] = {r["name"]: placement_of(r.get("env_record"), cfg.layer)
                       for r in meta["points"] if "env_record" in r}
    # verbs: every device a point used, with firmware, PCIe link and NUMA node (its
    # --env-json "devices"; docs/verbs.md)
    meta["devices"] = {r["name"]: r["env_record"]["devices"] for r in meta["points"]
                       if isinstance(r.get("env_record"), dict)
                       and isinstance(r["env_record"].get("devices"), list)}
    return data


def interrupt(meta: dict, signum: int, point: str | None) -> str:
    """Record a stop signal in the run's metadata; the reason for the points not run."""
    name = signal.Signals(signum).name
    if "interrupted" not in meta:
        meta["interrupted"] = {"signal": name, "point": point, "at": now_iso()}
    where = f" during {meta['interrupted']['point']}" if meta["interrupted"]["point"] else ""
    return f"not run: the sweep was interrupted by {name}{where}"


def finish(run_dir: Path, data: list[Row], meta: dict) -> int:
    """Write the final data.csv and metadata.json. Exit code: 0 every row ok, 1 error rows,
    128 + signal number when a stop signal interrupted the sweep (130 SIGINT, 143 SIGTERM,
    129 SIGHUP): status "interrupted", completed rows kept."""
    atomic_write_text(run_dir / "data.csv", rows_to_csv(data))
    n_err = sum(r.get("status") != "ok" for r in data)
    meta["finished"] = now_iso()
    meta["loadavg_finished"] = fingerprint.loadavg()
    stopped = meta.get("interrupted")
    if stopped:
        meta["status"] = "interrupted"
    else:
        meta["status"] = "complete" if n_err == 0 else "complete_with_errors"
    meta["rows"] = len(data)
    meta["error_rows"] = n_err
    atomic_write_json(run_dir / "metadata.json", meta)
    print(f"sweep: {len(data)} rows, {n_err} error rows -> {run_dir}/data.csv", file=sys.stderr)
    if stopped:
        where = f" during point {stopped['point']}" if stopped.get("point") else ""
        print(f"sweep: interrupted by {stopped['signal']}{where}; completed rows kept "
              f"(status \"interrupted\" in {run_dir}/metadata.json)", file=sys.stderr)
    print(run_dir, flush=True)
    if stopped:
        return 128 + int(signal.Signals[stopped["signal"]])
    return 0 if n_err == 0 else 1


def prepare_run_dir(opts: SweepOptions, root: Path) -> Path:
    if opts.run_dir:
        d = output_dir(Path(opts.run_dir).absolute(), "--run-dir")
        if (d / "data.csv").exists():
            raise UsageError(f"{d} already holds data.csv; runs are never overwritten")
        return d
    results = Path(opts.results_dir).absolute() if opts.results_dir else root / "results"
    return new_run_dir(results)


def run_sweep(ns: argparse.Namespace) -> int:
    """The CLI shell of `pairbench sweep`."""
    return sweep_to_dir(SweepOptions.from_namespace(ns))[0]


def test_table(binary: str, probe: StartupProbe) -> dict | None:
    """The binary's test table (`--list-tests --format json`) for metadata.json's "tests"
    (issue 12, contract 2); None, with a note, when the binary cannot give it. Part of the
    start-up probe: its deadline and a stop signal end the sweep (StartupProbe.run)."""
    if not Path(binary).is_file():
        return None  # ssh: the executable lives on the remote hosts
    proc = probe.run(binary, "--list-tests", "--format", "json")
    try:
        if proc.returncode != 0:
            raise testtable.TableError(f"{binary} --list-tests exited {proc.returncode}: "
                                       f"{proc.stderr.strip()[-200:]}")
        return testtable.parse_list_tests(proc.stdout, f"{binary} --list-tests").to_json()
    except testtable.TableError as exc:  # no table, or not the contract's
        print(f"sweep: note: no test table in metadata.json: {one_line(str(exc))}",
              file=sys.stderr)
        return None


def sweep_to_dir(opts: SweepOptions) -> tuple[int, Path]:
    """Run a sweep; return (exit code, run directory)."""
    root = repo_root()
    # Validate everything that can be validated before creating any directory.
    probe = config_from_options(opts, Path("/nonexistent-run-dir"), root)
    points_probe = plan_sweep(probe)
    baseline = load_run(opts.auto.baseline) if opts.auto and opts.auto.baseline else None
    # From here on a stop signal ends whatever runs (the start-up probe, the fingerprint's
    # helpers, a point) as a process group, and the sweep with 128 + N.
    with StopSignals() as signals:
        start = StartupProbe(probe.timeout_s, signals)
        if probe.launcher == "softroce":
            if opts.auto is not None:
                raise UsageError("--repetitions auto: not with --launcher softroce (the rig "
                                 "runs a fixed plan); give a count")
            rig = Path(opts.launcher_cmd or root / "scripts" / "softroce-run")
            if not rig.is_file():
                raise UsageError(f"Soft-RoCE rig {rig} not found (--launcher softroce)")
            if not Path(probe.binary).is_file():
                raise UsageError(f"executable {probe.binary} not found (build it, or pass "
                                 "--binary)")
        else:
            check_launch(probe, start)
        tests = test_table(probe.binary, start)
        run_dir = prepare_run_dir(opts, root)
        cfg = config_from_options(opts, run_dir, root)
        points = plan_sweep(cfg)
        assert len(points) == len(points_probe)
        run_id = run_dir.name
        meta = {"run_id": run_id, "kind": "pairbench sweep", "status": "running",
                "started": now_iso(), "config": asdict(cfg)}
        if tests is not None:
            meta["tests"] = tests
        plan_meta = dict(meta)  # what the rig's inner run starts from (its own fingerprint)
        meta["fingerprint"] = fingerprint.gather(root, stop=signals.stopped)
        atomic_write_json(run_dir / "metadata.json", meta)
        if cfg.launcher == "softroce":
            plan = RigPlan(config=cfg, points=tuple(points), meta=plan_meta,
                           fail_fast=opts.fail_fast, progress=opts.progress,
                           command_line=tuple(sys.argv))
            from pairbench.rigrun import run_softroce  # rigrun builds on this module

            return run_softroce(plan, opts, run_dir, meta, root, signals), run_dir
        if opts.auto is None:
            data = execute(cfg, points, run_dir, run_id, meta, opts.fail_fast, opts.progress,
                           signals)
        else:
            data, rounds = autoreps.run_rounds(
                opts.auto, lambda r: plan_sweep(replace(cfg, repetitions=r)),
                lambda pts, carry: execute(cfg, pts, run_dir, run_id, meta, opts.fail_fast,
                                           opts.progress, signals, carry),
                lambda: load_run(run_dir), signals.stopped, baseline)
            meta["repetitions_auto"] = autoreps.record(opts.auto, rounds)
        return finish(run_dir, data, meta), run_dir
