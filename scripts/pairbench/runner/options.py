"""What `pairbench sweep` is asked to do (SweepOptions: its command line, typed; `pairbench
default` builds its own), and how that becomes a checked SweepConfig (config_from_options).
The executables' pass-through options are not listed here: SweepOptions inherits them from
the one table in pairbench.runner.exeopts."""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path

from pairbench.contract.sizes import parse_int_list, parse_sizes
from pairbench.errors import UsageError
from pairbench.runner import autoreps
from pairbench.runner.autoreps import AutoReps
from pairbench.runner.exeopts import (
    EXE_OPTIONS,
    MAX_TIMEOUT_S,
    ExeSettings,
    check_exe,
    driver_argv,
    exe_values,
)
from pairbench.runner.plan import SweepConfig

MAX_PAIRS = 256  # PB_MAX_PAIRS in core/pb_common.h
MAX_QPS = 16384  # VB_MAX_QPS in verbs/vb_hdr.h
MAX_RIG_DEVICES = 8  # softroce-run --devices 1..8


@dataclass(frozen=True)
class SweepOptions(ExeSettings):
    """What `pairbench sweep` is asked to do: its command-line options, typed. The CLI
    shell builds one from argparse (from_namespace); `pairbench default` builds its own.
    Lists stay as the user wrote them (sizes "1:64K", pairs "1,2"): config_from_options
    checks them with the executables' rules. The executables' own options (iterations,
    warmup, pin, devices, ...) are the fields of ExeSettings (pairbench.runner.exeopts)."""

    layer: str
    tests: tuple[str, ...]  # test names (an element may still be "a,b" as on the CLI)
    sizes: str = "1:64K"
    pairs: str = "1"
    qps: str | None = None  # verbs --qps list as written ("1,8,64"); None = not given
    pattern: str | None = None  # verbs: incast | fanout over --hosts (plan_pattern_point)
    repetitions: int = 1
    auto: AutoReps | None = None  # --repetitions auto[:MAX] (then repetitions = MIN_REPS)
    launcher: str = ""  # "" = the layer's default (default_launcher)
    hosts: str | None = None
    timeout_s: float = 300.0
    results_dir: str | None = None
    run_dir: str | None = None
    binary: str | None = None
    remote_binary: str | None = None
    connect_addr: str | None = None
    rig_devices: int | None = None
    launcher_cmd: str | None = None
    launcher_args: tuple[str, ...] = ()
    exe_args: tuple[str, ...] = ()
    rig_timeout_s: float | None = None
    fail_fast: bool = False
    progress: bool = True

    def __post_init__(self) -> None:
        if not self.launcher:
            object.__setattr__(self, "launcher", default_launcher(self.layer))

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> SweepOptions:
        """The CLI shell's half: argparse's result for `sweep` (add_arguments) as options."""
        reps, auto = autoreps.parse_repetitions(ns.repetitions)
        if auto is not None:
            if ns.baseline is not None and ns.detect is not None:
                raise UsageError("--detect and --baseline exclude each other: against a "
                                 "baseline the decision is compare's gate (its thresholds: "
                                 "--thresholds); --detect is for a run without one")
            auto = replace(auto, baseline=ns.baseline, thresholds=ns.thresholds,
                           detect=None if ns.detect is None
                           else _fraction(ns.detect, "--detect"))
        elif ns.baseline is not None or ns.detect is not None or ns.thresholds is not None:
            raise UsageError("--baseline, --detect and --thresholds go with --repetitions "
                             "auto[:MAX]")
        return cls(
            layer=ns.layer, tests=tuple(t.strip() for arg in ns.test for t in arg.split(",")
                                        if t.strip()), sizes=ns.sizes, pairs=ns.pairs, qps=ns.qps,
            pattern=getattr(ns, "pattern", None),
            repetitions=reps, auto=auto, launcher=ns.launcher or "", hosts=ns.hosts,
            timeout_s=ns.timeout, results_dir=ns.results_dir, run_dir=ns.run_dir,
            binary=ns.binary, remote_binary=ns.remote_binary, connect_addr=ns.connect_addr,
            rig_devices=ns.rig_devices, launcher_cmd=ns.launcher_cmd,
            launcher_args=tuple(ns.launcher_arg), exe_args=tuple(ns.exe_arg),
            rig_timeout_s=ns.rig_timeout, fail_fast=ns.fail_fast,
            progress=not ns.no_progress, **exe_values(ns))

    def argv(self) -> list[str]:
        """The `pairbench sweep` arguments that ask for the same (options at their
        default are left out), for logs."""
        args = ["--layer", self.layer, "--test", ",".join(self.tests)]
        for opt, val, default in (
                ("--pairs", self.pairs, "1"), ("--qps", self.qps, None),
                ("--pattern", self.pattern, None),
                ("--sizes", self.sizes, "1:64K")):
            if val is not None and val != default:
                args += [opt, str(val)]
        args += driver_argv(self)
        for opt, val, default in (
                ("--launcher", self.launcher, default_launcher(self.layer)),
                ("--repetitions", self.repetitions if self.auto is None
                 else f"auto:{self.auto.max_reps}", 1), ("--timeout", self.timeout_s, 300.0),
                ("--baseline", self.auto and self.auto.baseline, None),
                ("--detect", self.auto and self.auto.detect, None),
                ("--thresholds", self.auto and self.auto.thresholds, None),
                ("--hosts", self.hosts, None), ("--binary", self.binary, None),
                ("--remote-binary", self.remote_binary, None),
                ("--connect-addr", self.connect_addr, None),
                ("--rig-devices", self.rig_devices, None),
                ("--launcher-cmd", self.launcher_cmd, None),
                ("--rig-timeout", self.rig_timeout_s, None)):
            if val is not None and val != default:
                args += [opt, f"{val:g}" if isinstance(val, float) else str(val)]
        args += driver_argv(self, switches=True)
        args += [f"--launcher-arg={a}" for a in self.launcher_args]
        args += [f"--exe-arg={a}" for a in self.exe_args]
        if self.fail_fast:
            args.append("--fail-fast")
        if self.results_dir is not None:
            args += ["--results-dir", self.results_dir]
        if not self.progress:
            args.append("--no-progress")
        return args


def default_launcher(layer: str) -> str:
    """The launcher of a sweep that names none: mpirun for the MPI layer (pairbench-mpi's
    tests need 2 ranks per pair: run alone it is a singleton and every point would be an
    error row), local for verbs (both sides on this host)."""
    return "mpirun" if layer == "mpi" else "local"


def config_from_options(opts: SweepOptions, run_dir: Path, root: Path) -> SweepConfig:
    tests = tuple(t.strip() for arg in opts.tests for t in arg.split(",") if t.strip())
    if not tests:
        raise UsageError("no test given (--test NAME)")
    hosts = tuple(h.strip() for h in opts.hosts.split(",") if h.strip()) if opts.hosts else ()
    if opts.hosts is not None and not hosts:
        raise UsageError("--hosts is empty")
    check_numbers(opts)
    check_exe(opts, opts.layer)  # the executables' options: layers, ranges, rules
    try:  # the executables' rule and range (pairbench.contract.sizes)
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
        hosts=hosts, timeout_s=opts.timeout_s, exe_args=opts.exe_args,
        launcher_cmd=opts.launcher_cmd, launcher_args=opts.launcher_args,
        remote_binary=opts.remote_binary, as_root=(os.geteuid() == 0),
        connect_addr=opts.connect_addr, qps=qps, rig_devices=rig_device_count(opts),
        pattern=opts.pattern,
        rig_timeout_s=opts.rig_timeout_s, **exe_values(opts))


def check_devices(opts: SweepOptions) -> None:
    """--devices: verbs only, 'all' or a list of distinct device names (pairbench-verbs -d's
    rule, from the option table); --rig-devices: the rig's range, and only with the rig."""
    if opts.devices is not None:
        device = next(o for o in EXE_OPTIONS if o.field == "devices")
        if opts.layer not in device.layers:
            raise UsageError(device.layer_hint)
        device.check(device.driver_flag, opts.devices)
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


def check_timeout(timeout: float, what: str = "the deadline of every point") -> None:
    """--timeout of sweep and fabric: finite seconds in 0.1..MAX_TIMEOUT_S (argparse lets
    nan and inf through; either would disable the deadline, and nan is not even JSON)."""
    if not (math.isfinite(timeout) and 0.1 <= timeout <= MAX_TIMEOUT_S):
        raise UsageError(f"--timeout {timeout:g}: expected seconds in 0.1..{MAX_TIMEOUT_S:g} "
                         f"({what})")


def check_numbers(opts: SweepOptions) -> None:
    """The sweep's own numbers that argparse lets through but that would disable a deadline
    or start an absurd job (the executables' options: check_exe)."""
    rig_timeout = opts.rig_timeout_s
    check_timeout(opts.timeout_s)
    if opts.repetitions < 1:
        raise UsageError(f"--repetitions {opts.repetitions}: expected >= 1")
    if rig_timeout is not None and not (math.isfinite(rig_timeout) and rig_timeout > 0):
        raise UsageError(f"--rig-timeout {rig_timeout:g}: expected a finite number > 0")
