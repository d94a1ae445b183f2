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
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from pairbench import fingerprint
from pairbench.collect import (
    Row,
    atomic_write_json,
    atomic_write_text,
    collect_point,
    error_rows,
    failure_reason,
    read_rows,
    rows_to_csv,
)
from pairbench.errors import UsageError
from pairbench.plan import DEFAULT_LAUNCHER_CMD, LAUNCHERS, LAYERS, Point, SweepConfig, plan_sweep
from pairbench.progress import SweepProgress
from pairbench.run import PointResult, run_point
from pairbench.safeio import output_dir
from pairbench.schema import check_schema, read_binary_schema
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
    p.add_argument("--repetitions", type=int, default=1, help="runs of every point (default 1)")
    p.add_argument("--launcher", choices=LAUNCHERS, default="local")
    p.add_argument("--hosts", default=None, help="comma-separated hosts (mpirun -H, srun "
                   "--nodelist, ssh: server,client)")
    p.add_argument("--timeout", type=float, default=300.0, help="per point, seconds (default 300)")
    p.add_argument("--results-dir", default=None, help="parent of the run directory "
                   "(default <repo>/results)")
    p.add_argument("--run-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--rig-inner", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--binary", default=None, help="executable (default build/bin/pairbench-LAYER)")
    p.add_argument("--remote-binary", default=None, help="ssh: executable path on the hosts")
    p.add_argument("--connect-addr", default=None, help="verbs with ssh/mpirun/srun: address "
                   "of the server's RDMA device (default: the first host)")
    p.add_argument("--launcher-cmd", default=None,
                   help="path of mpirun/srun/ssh or of the Soft-RoCE rig to use")
    p.add_argument("--launcher-arg", action="append", default=[], metavar="ARG",
                   help="extra launcher argument (repeat; write --launcher-arg=--x)")
    p.add_argument("--exe-arg", action="append", default=[], metavar="ARG",
                   help="extra executable argument (repeat; write --exe-arg=--x)")
    p.add_argument("-n", "--iterations", type=int, default=None)
    p.add_argument("-w", "--warmup", type=int, default=None)
    p.add_argument("-D", "--duration", type=float, default=None)
    p.add_argument("--pin", default=None)
    p.add_argument("--pin-list", default=None)
    p.add_argument("--allow-oversubscribe", action="store_true")
    p.add_argument("--rig-timeout", type=float, default=None,
                   help="softroce: limit for the whole rig run (default from the plan)")
    p.add_argument("--fail-fast", action="store_true", help="stop at the first failed point")
    p.add_argument("--no-progress", action="store_true")


def config_from_args(ns: argparse.Namespace, run_dir: Path, root: Path) -> SweepConfig:
    tests = tuple(t.strip() for arg in ns.test for t in arg.split(",") if t.strip())
    if not tests:
        raise UsageError("no test given (--test NAME)")
    hosts = tuple(h.strip() for h in ns.hosts.split(",") if h.strip()) if ns.hosts else ()
    if ns.hosts is not None and not hosts:
        raise UsageError("--hosts is empty")
    for name, val in (("--iterations", ns.iterations), ("--warmup", ns.warmup)):
        if val is not None and val < 0:
            raise UsageError(f"{name} must be >= 0")
    check_numbers(ns)
    if ns.pin_list is not None and ns.pin != "list":
        raise UsageError("--pin-list is used only with --pin list (add --pin list)")
    try:  # the executables' rule and range (pairbench.sizes)
        sizes = tuple(parse_sizes(ns.sizes))
    except UsageError as exc:
        raise UsageError(f"--sizes: {exc}") from None
    pairs = tuple(parse_int_list(ns.pairs, "pairs"))
    if pairs[-1] > MAX_PAIRS:
        raise UsageError(f"--pairs {pairs[-1]}: at most {MAX_PAIRS} pairs (the executables' "
                         "limit, PB_MAX_PAIRS)")
    binary = ns.binary or str(root / "build" / "bin" / f"pairbench-{ns.layer}")
    return SweepConfig(
        layer=ns.layer, tests=tests, sizes=sizes,
        pairs=pairs, binary=str(Path(binary).absolute()),
        run_dir=str(run_dir), repetitions=ns.repetitions, launcher=ns.launcher, hosts=hosts,
        timeout_s=ns.timeout, iterations=ns.iterations, warmup=ns.warmup,
        duration_s=ns.duration, pin=ns.pin, pin_list=ns.pin_list,
        allow_oversubscribe=ns.allow_oversubscribe, exe_args=tuple(ns.exe_arg),
        launcher_cmd=ns.launcher_cmd, launcher_args=tuple(ns.launcher_arg),
        remote_binary=ns.remote_binary, as_root=(os.geteuid() == 0),
        connect_addr=ns.connect_addr)


MAX_PAIRS = 256  # PB_MAX_PAIRS in core/pb_common.h
MAX_TIMEOUT_S = 86400.0  # the executables' --timeout range is 0.1..86400 s


def check_numbers(ns: argparse.Namespace) -> None:
    """Numbers that argparse lets through but that would disable a deadline or start an
    absurd job: nan, inf, zero or negative timeouts and counts."""
    if not (math.isfinite(ns.timeout) and 0.1 <= ns.timeout <= MAX_TIMEOUT_S):
        raise UsageError(f"--timeout {ns.timeout:g}: expected seconds in 0.1..{MAX_TIMEOUT_S:g} "
                         "(the deadline of every point)")
    if ns.repetitions < 1:
        raise UsageError(f"--repetitions {ns.repetitions}: expected >= 1")
    if ns.duration is not None and not (math.isfinite(ns.duration) and 0 <= ns.duration
                                        <= MAX_TIMEOUT_S):
        raise UsageError(f"--duration {ns.duration:g}: expected seconds in 0..{MAX_TIMEOUT_S:g}")
    if ns.rig_timeout is not None and not (math.isfinite(ns.rig_timeout) and ns.rig_timeout > 0):
        raise UsageError(f"--rig-timeout {ns.rig_timeout:g}: expected a finite number > 0")


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


def check_launch(cfg: SweepConfig) -> None:
    """Obviously bad input -> UsageError before anything starts."""
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
    version, cols = read_binary_schema(cfg.binary)
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
    return {"name": p.name, "test": p.test, "pairs": p.pairs, "repetition": p.repetition,
            "sizes": list(p.sizes), "env_added": dict(p.env),
            "sides": [{"role": s.role, "argv": list(s.argv), "exit_code": c,
                       "stdout": s.stdout, "stderr": s.stderr}
                      for s, c in zip(p.sides, res.exit_codes, strict=True)],
            "timed_out": res.timed_out, "elapsed_s": round(res.elapsed_s, 3),
            "status": "ok" if reason is None else "error", "reason": reason,
            "env_record": env_record}


PINNING_KEYS = ("pinning", "placement", "workers", "ranks")  # fake; both binaries; older records


def pinning_of(env_record: object) -> list | None:
    """Per-process placement from an --env-json record (None = not recorded)."""
    if not isinstance(env_record, dict):
        return None
    for key in PINNING_KEYS:
        if isinstance(env_record.get(key), list):
            return env_record[key]
    return None


class StopSignals:
    """SIGINT/SIGTERM/SIGHUP to the sweep (Ctrl-C, `kill PID`, timeout(1), a scheduler, a
    closed terminal): the first one is recorded and nothing else happens in the handler; the
    running point's wait loop sees it within run.POLL_S and kills the point's process group
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
            fail_fast: bool, show_progress: bool, signals: StopSignals | None = None
            ) -> list[Row]:
    """Run every point in order, writing data.csv and metadata.json after each one.
    A stop signal ends the running point (process group killed) and records the rest as
    not run; meta["interrupted"] then says which signal and which point."""
    (run_dir / "raw").mkdir(exist_ok=True)
    signals = signals or StopSignals()
    data: list[Row] = []
    meta["points"] = []
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
    meta["pinning"] = {r["name"]: pinning_of(r.get("env_record")) for r in meta["points"]
                       if "env_record" in r}
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


def prepare_run_dir(ns: argparse.Namespace, root: Path) -> Path:
    if ns.run_dir:
        d = output_dir(Path(ns.run_dir).absolute(), "--run-dir")
        if (d / "data.csv").exists():
            raise UsageError(f"{d} already holds data.csv; runs are never overwritten")
        return d
    results = Path(ns.results_dir).absolute() if ns.results_dir else root / "results"
    return new_run_dir(results)


def run_sweep(ns: argparse.Namespace) -> int:
    return sweep_to_dir(ns)[0]


def sweep_to_dir(ns: argparse.Namespace) -> tuple[int, Path]:
    """Run a sweep; return (exit code, run directory)."""
    root = repo_root()
    # Validate everything that can be validated before creating any directory.
    probe = config_from_args(ns, Path("/nonexistent-run-dir"), root)
    points_probe = plan_sweep(probe)
    if probe.launcher == "softroce" and not ns.rig_inner:
        rig = Path(ns.launcher_cmd or root / "scripts" / "softroce-run")
        if not rig.is_file():
            raise UsageError(f"Soft-RoCE rig {rig} not found (--launcher softroce)")
        if not Path(probe.binary).is_file():
            raise UsageError(f"executable {probe.binary} not found (build it, or pass --binary)")
    else:
        check_launch(probe)
    run_dir = prepare_run_dir(ns, root)
    cfg = config_from_args(ns, run_dir, root)
    points = plan_sweep(cfg)
    assert len(points) == len(points_probe)
    run_id = run_dir.name
    meta = {"run_id": run_id, "kind": "pairbench sweep", "status": "running",
            "started": now_iso(), "config": asdict(cfg),
            "fingerprint": fingerprint.gather(root)}
    atomic_write_json(run_dir / "metadata.json", meta)
    with StopSignals() as signals:
        if cfg.launcher == "softroce" and not ns.rig_inner:
            return run_softroce(ns, cfg, points, run_dir, meta, root, signals), run_dir
        data = execute(cfg, points, run_dir, run_id, meta, ns.fail_fast, not ns.no_progress,
                       signals)
        return finish(run_dir, data, meta), run_dir


def inner_args(ns: argparse.Namespace, cfg: SweepConfig) -> list[str]:
    """The same sweep for `--launcher local`, run inside the rig, into the same directory."""
    args = ["sweep", "--layer", cfg.layer, "--test", ",".join(cfg.tests),
            "--sizes", ",".join(str(s) for s in cfg.sizes),
            "--pairs", ",".join(str(p) for p in cfg.pairs),
            "--repetitions", str(cfg.repetitions), "--timeout", f"{cfg.timeout_s:g}",
            "--launcher", "softroce", "--binary", cfg.binary, "--run-dir", cfg.run_dir,
            "--rig-inner"]
    for opt, val in (("--iterations", cfg.iterations), ("--warmup", cfg.warmup),
                     ("--duration", cfg.duration_s), ("--pin", cfg.pin),
                     ("--pin-list", cfg.pin_list)):
        if val is not None:
            args += [opt, str(val)]
    if cfg.allow_oversubscribe:
        args.append("--allow-oversubscribe")
    args += [f"--exe-arg={a}" for a in cfg.exe_args]
    if ns.fail_fast:
        args.append("--fail-fast")
    return args


def softroce_argv(rig: str, rig_timeout_s: float, python: str, scripts_dir: str,
                  sweep_args: list[str], rwdir: str | None = None) -> list[str]:
    """scripts/softroce-run --timeout S [--rwdir D] -- env PYTHONPATH=scripts python -m
    pairbench ARGS. The rig persists writes under the repo root; a run directory elsewhere
    is passed with --rwdir."""
    opts = ["--timeout", f"{rig_timeout_s:g}"] + (["--rwdir", rwdir] if rwdir else [])
    return [rig, *opts, "--", "env", f"PYTHONPATH={scripts_dir}", python, "-m", "pairbench",
            *sweep_args]


def _tee(stream, sink_path: Path) -> threading.Thread:
    def pump() -> None:
        with open(sink_path, "wb") as sink:
            for line in iter(stream.readline, b""):
                sink.write(line)
                sink.flush()
                sys.stderr.buffer.write(line)
                sys.stderr.flush()
    t = threading.Thread(target=pump, daemon=True)
    t.start()
    return t


def rig_reason(stderr: Path) -> str:
    """The most telling line of the rig's stderr: the last 'error' line, else the last."""
    try:
        lines = [ln.strip() for ln in stderr.read_text(errors="replace").splitlines()
                 if ln.strip()]
    except OSError:
        return ""
    errors = [ln for ln in lines if "error" in ln.lower()]
    return (errors or lines or [""])[-1][:300]


def run_softroce(ns: argparse.Namespace, cfg: SweepConfig, points: list[Point], run_dir: Path,
                 meta: dict, root: Path, signals: StopSignals | None = None) -> int:
    """Boot the rig once and run the whole sweep inside it with the local launcher."""
    rig = str(Path(ns.launcher_cmd or root / "scripts" / "softroce-run").absolute())
    budget = ns.rig_timeout or (len(points) * (cfg.timeout_s + 15) + 600)
    rwdir = None if run_dir.resolve().is_relative_to(root) else str(run_dir)
    argv = softroce_argv(rig, budget, sys.executable, str(Path(__file__).resolve().parents[1]),
                         inner_args(ns, cfg), rwdir)
    (run_dir / "raw").mkdir(exist_ok=True)
    outer_fp = meta["fingerprint"]
    print(f"sweep: starting the Soft-RoCE rig for {len(points)} points (one VM boot)",
          file=sys.stderr, flush=True)
    start = time.monotonic()
    rig_exit: int | None = None
    rig_error: str | None = None
    signals = signals or StopSignals()
    stopped: dict | None = None
    with open(run_dir / "raw" / "rig.stdout", "wb") as out:
        try:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            rig_error = f"cannot start the Soft-RoCE rig {rig}: {exc.strerror}"
        else:
            tee = _tee(proc.stderr, run_dir / "raw" / "rig.stderr")
            from pairbench.run import POLL_S, _kill_group

            end = time.monotonic() + budget + 120
            while proc.poll() is None and time.monotonic() < end and not signals.stopped():
                time.sleep(POLL_S)
            if signals.stopped():
                _kill_group(proc)  # the rig's process group: the VM and the inner sweep
                rig_error = f"interrupted by {signals.name} (Soft-RoCE rig killed)"
                stopped = {"signal": signals.name, "point": "the Soft-RoCE rig",
                           "at": now_iso()}
            elif proc.poll() is None:
                _kill_group(proc)
                rig_error = f"Soft-RoCE rig timed out after {budget + 120:g} s (killed)"
            else:
                rig_exit = proc.returncode
            tee.join(timeout=5)
    # The inner sweep wrote data.csv and metadata.json into run_dir (persisted by the rig).
    inner_meta: dict = {}
    if (run_dir / "metadata.json").is_file():
        try:
            inner_meta = json.loads((run_dir / "metadata.json").read_text())
        except ValueError:
            inner_meta = {}
    data = read_rows(run_dir / "data.csv")
    have = {(r.get("test"), r.get("pairs"), r.get("repetition")) for r in data}
    meaning = {124: " (deadline reached)", 125: " (rig failure)", 77: " (cannot run here)"}
    why = rig_error or (f"Soft-RoCE rig exited {rig_exit}{meaning.get(rig_exit or 0, '')} "
                        f"before this point ran: {rig_reason(run_dir / 'raw' / 'rig.stderr')}")
    for p in points:
        if (p.test, str(p.pairs), str(p.repetition)) not in have:
            data += error_rows(p, list(p.sizes), why, run_dir.name)
    meta = inner_meta if inner_meta.get("points") is not None else meta
    if stopped:
        meta["interrupted"] = stopped
    meta["config"] = asdict(cfg)
    meta["rig"] = {"argv": argv, "exit_code": rig_exit, "error": rig_error,
                   "elapsed_s": round(time.monotonic() - start, 1),
                   "host_fingerprint": outer_fp}
    return finish(run_dir, data, meta)
