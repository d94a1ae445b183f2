"""`pairbench sweep`: plan -> run -> collect into a new run directory.

results/<date>-<host>-<shortid>/ holds data.csv (every row of every executable plus run_id
and repetition), metadata.json (configuration, fingerprint, per-point record) and raw/
(each process's stdout, stderr, CSV and --env-json file). Files are written atomically;
nothing is overwritten.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
    binary = ns.binary or str(root / "build" / "bin" / f"pairbench-{ns.layer}")
    return SweepConfig(
        layer=ns.layer, tests=tests, sizes=tuple(parse_sizes(ns.sizes)),
        pairs=tuple(parse_int_list(ns.pairs, "pairs")), binary=str(Path(binary).absolute()),
        run_dir=str(run_dir), repetitions=ns.repetitions, launcher=ns.launcher, hosts=hosts,
        timeout_s=ns.timeout, iterations=ns.iterations, warmup=ns.warmup,
        duration_s=ns.duration, pin=ns.pin, pin_list=ns.pin_list,
        allow_oversubscribe=ns.allow_oversubscribe, exe_args=tuple(ns.exe_arg),
        launcher_cmd=ns.launcher_cmd, launcher_args=tuple(ns.launcher_arg),
        remote_binary=ns.remote_binary, as_root=(os.geteuid() == 0),
        connect_addr=ns.connect_addr)


def new_run_dir(results_dir: Path) -> Path:
    """results/<date>-<host>-<shortid>/, created exclusively (never reused)."""
    results_dir.mkdir(parents=True, exist_ok=True)
    host = socket.gethostname().split(".")[0] or "host"
    for _ in range(10):
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        d = results_dir / f"{stamp}-{host}-{uuid.uuid4().hex[:6]}"
        try:
            d.mkdir()
        except FileExistsError:
            continue
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


PINNING_KEYS = ("pinning", "workers", "ranks")  # fake, pairbench-verbs, pairbench-mpi


def pinning_of(env_record: object) -> list | None:
    """Per-process placement from an --env-json record (None = not recorded)."""
    if not isinstance(env_record, dict):
        return None
    for key in PINNING_KEYS:
        if isinstance(env_record.get(key), list):
            return env_record[key]
    return None


def execute(cfg: SweepConfig, points: list[Point], run_dir: Path, run_id: str, meta: dict,
            fail_fast: bool, show_progress: bool) -> list[Row]:
    """Run every point in order, writing data.csv and metadata.json after each one."""
    (run_dir / "raw").mkdir(exist_ok=True)
    data: list[Row] = []
    meta["points"] = []
    stop_reason: str | None = None
    with SweepProgress(len(points), enabled=show_progress) as prog:
        for p in points:
            label = f"{p.test} pairs={p.pairs} rep={p.repetition}"
            if stop_reason:
                data += error_rows(p, list(p.sizes), stop_reason, run_id)
                meta["points"].append({"name": p.name, "status": "error", "reason": stop_reason})
                prog.finished(label, "not run", 0.0)
                continue
            prog.starting(label)
            res = run_point(p, run_dir, grace_s=min(10.0, max(1.0, 0.1 * p.timeout_s)))
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


def finish(run_dir: Path, data: list[Row], meta: dict) -> int:
    atomic_write_text(run_dir / "data.csv", rows_to_csv(data))
    n_err = sum(r.get("status") != "ok" for r in data)
    meta["finished"] = now_iso()
    meta["status"] = "complete" if n_err == 0 else "complete_with_errors"
    meta["rows"] = len(data)
    meta["error_rows"] = n_err
    atomic_write_json(run_dir / "metadata.json", meta)
    print(f"sweep: {len(data)} rows, {n_err} error rows -> {run_dir}/data.csv", file=sys.stderr)
    print(run_dir)
    return 0 if n_err == 0 else 1


def prepare_run_dir(ns: argparse.Namespace, root: Path) -> Path:
    if ns.run_dir:
        d = Path(ns.run_dir).absolute()
        d.mkdir(parents=True, exist_ok=True)
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
    if cfg.launcher == "softroce" and not ns.rig_inner:
        return run_softroce(ns, cfg, points, run_dir, meta, root), run_dir
    data = execute(cfg, points, run_dir, run_id, meta, ns.fail_fast, not ns.no_progress)
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
                 meta: dict, root: Path) -> int:
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
    with open(run_dir / "raw" / "rig.stdout", "wb") as out:
        try:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            rig_error = f"cannot start the Soft-RoCE rig {rig}: {exc.strerror}"
        else:
            tee = _tee(proc.stderr, run_dir / "raw" / "rig.stderr")
            try:
                rig_exit = proc.wait(timeout=budget + 120)
            except subprocess.TimeoutExpired:
                from pairbench.run import _kill_group

                _kill_group(proc)
                rig_error = f"Soft-RoCE rig timed out after {budget + 120:g} s (killed)"
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
    meta["config"] = asdict(cfg)
    meta["rig"] = {"argv": argv, "exit_code": rig_exit, "error": rig_error,
                   "elapsed_s": round(time.monotonic() - start, 1),
                   "host_fingerprint": outer_fp}
    return finish(run_dir, data, meta)
