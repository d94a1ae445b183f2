"""`pairbench sweep`: plan -> run -> collect into a new run directory.

results/<date>-<host>-<shortid>/ holds data.csv (every row of every executable plus run_id
and repetition), metadata.json (configuration, fingerprint, per-point record) and raw/
(each process's stdout, stderr, CSV and --env-json file). Files are written atomically;
nothing is overwritten.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

from pairbench.contract import testtable
from pairbench.contract.schema import check_schema, parse_print_schema
from pairbench.errors import Interrupted, RunFailure, UsageError, one_line
from pairbench.io import procutil
from pairbench.runner import autoreps, fingerprint, launchers
from pairbench.runner.collect import (
    Row,
    atomic_write_json,
    atomic_write_text,
    collect_point,
    error_rows,
    failure_reason,
    pattern_nodes,
    rank_counters,
    rows_to_csv,
    write_counters,
)
from pairbench.runner.launchers.base import Launcher
from pairbench.runner.options import SweepOptions, config_from_options
from pairbench.runner.plan import SOAK_DIR, Point, SweepConfig, check_config, plan_sweep
from pairbench.runner.progress import SweepProgress
from pairbench.runner.run import PointResult, run_point
from pairbench.runner.rundir import now_iso, prepare_run_dir, repo_root

# --repetitions auto: the run directory's rows so far -> the points still undecided (launch
# key -> why): pairbench.analysis.decide.Decider, handed in by the command.
Decide = Callable[[Path], dict]


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


def check_launch(cfg: SweepConfig, probe: StartupProbe | None = None,
                 launcher: Launcher | None = None) -> None:
    """Obviously bad input -> UsageError before anything starts (the launcher's own checks,
    then the executable); an executable that does not answer its start-up probe ->
    RunFailure (see StartupProbe)."""
    launcher = launcher or launchers.get(cfg)
    launcher.check()
    if launcher.remote_binary or not launcher.probes_binary:
        return  # the executable lives on the remote hosts, or runs inside the rig
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


# A job that died by a signal before writing any row (an MPI rank killed in MPI_Init: Open
# MPI 4.1.4's TCP BTL segfaults there now and then when a connect() is slow) is started again
# this many times, said on stderr and kept in metadata.json (the point's "start_tries"). A
# point that measured anything, failed in another way, timed out or was interrupted is not.
START_RETRIES = 1


def died_at_start(res: PointResult, run_dir: Path) -> bool:
    """Whether the point's job died by a signal (a negative exit code, or a launcher's
    128 + N) and wrote no row (its CSV, or its sides' stdout, holds at most the header)."""
    p = res.point
    if (res.ok or res.timed_out or res.interrupted or res.launch_error is not None
            or not any(c is not None and (c < 0 or c > 128) for c in res.exit_codes)):
        return False
    outs = [run_dir / p.csv] if p.csv else [run_dir / s.stdout for s in p.sides]
    for f in outs:
        try:
            with open(f, encoding="utf-8", errors="replace") as fh:
                if sum(1 for line in fh if line.strip()) > 1:
                    return False
        except OSError:
            continue
    return True


def keep_try(res: PointResult, run_dir: Path, n: int) -> dict:
    """Set a failed try's files aside (NAME.tryN) and say what it was, for start_tries."""
    p = res.point
    said = {"try": n, "reason": failure_reason(res, run_dir) or "",
            "exit_codes": list(res.exit_codes), "elapsed_s": round(res.elapsed_s, 3)}
    for rel in [p.csv, p.env_json, *(x for s in p.sides for x in (s.stdout, s.stderr))]:
        if rel and (run_dir / rel).exists():
            (run_dir / rel).replace(run_dir / f"{rel}.try{n}")
    return said


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
            "env_record": env_record,
            # a pattern point's nodes by rank, and its other nodes' counters (their whole
            # records stay in raw/)
            **({"pattern_nodes": nodes} if (nodes := pattern_nodes(p)) else {}),
            **({"rank_counters": others} if (others := rank_counters(p, run_dir)) else {})}


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
    if any(p.series for p in points):
        (run_dir / SOAK_DIR).mkdir(exist_ok=True)
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
            grace = min(10.0, max(1.0, 0.1 * p.timeout_s))
            res = run_point(p, run_dir, grace_s=grace, stop=signals.stopped,
                            tick=prog.soak_tick(label, p) if p.soak_s else None)
            tries: list[dict] = []
            while len(tries) < START_RETRIES and died_at_start(res, run_dir):
                tries.append(keep_try(res, run_dir, len(tries) + 1))
                print(f"sweep: {p.name}: the job died before writing a row "
                      f"({tries[-1]['reason']}); starting it again (try {len(tries) + 1} of "
                      f"{START_RETRIES + 1}; that try's files: *.try{len(tries)})",
                      file=sys.stderr, flush=True)
                res = run_point(p, run_dir, grace_s=grace, stop=signals.stopped)
            if res.interrupted and signals.received is not None and res.soft_stopped:
                kept = partial_soak(res, run_dir, run_id, signals.name)
                if kept is not None:  # the soak stopped early and wrote what it measured
                    data += kept
                    meta["points"].append({**point_record(res, run_dir, None),
                                           "status": "interrupted", "partial_soak": True})
                    stop_reason = interrupt(meta, signals.received, p.name)
                    atomic_write_text(run_dir / "data.csv", rows_to_csv(data))
                    atomic_write_json(run_dir / "metadata.json", meta)
                    prog.finished(label, f"interrupted by {signals.name}: partial soak kept",
                                  res.elapsed_s)
                    continue
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
            meta["points"].append({**point_record(res, run_dir, reason),
                                   **({"start_tries": tries} if tries else {})})
            atomic_write_text(run_dir / "data.csv", rows_to_csv(data))
            atomic_write_json(run_dir / "metadata.json", meta)
            prog.finished(label, "ok" if reason is None else f"error: {reason}", res.elapsed_s)
            if reason is not None and fail_fast:
                stop_reason = f"not run: --fail-fast after {p.name} failed ({reason})"
    meta["pinning"] = {r["name"]: placement_of(r.get("env_record"), cfg.layer)
                       for r in meta["points"] if "env_record" in r}
    # the host canary of every point (core/pb_canary.c; analysis/canary.py judges it)
    meta["host_canary"] = {r["name"]: r["env_record"]["host_canary"] for r in meta["points"]
                           if isinstance(r.get("env_record"), dict)
                           and isinstance(r["env_record"].get("host_canary"), dict)}
    # verbs: every device a point used, with firmware, PCIe link and NUMA node (its
    # --env-json "devices"; docs/verbs.md)
    meta["devices"] = {r["name"]: r["env_record"]["devices"] for r in meta["points"]
                       if isinstance(r.get("env_record"), dict)
                       and isinstance(r["env_record"].get("devices"), list)}
    return data


def partial_soak(res: PointResult, run_dir: Path, run_id: str, signame: str) -> list[Row] | None:
    """The rows of a soak point stopped early (run_point's soft stop), when it wrote them:
    every row ok (flagged soak_partial by the executable); None otherwise (the caller then
    records the point as interrupted, and its series files stay for show/report)."""
    if res.timed_out or any(c != 0 for c in res.exit_codes):
        return None
    rows = collect_point(res, run_dir, run_id)
    if not rows or any(r["status"] != "ok" for r in rows):
        return None
    print(f"sweep: {res.point.name}: soak stopped by {signame} after {res.elapsed_s:.0f} s; "
          "its rows say what was measured (flag soak_partial)", file=sys.stderr, flush=True)
    return rows


def interrupt(meta: dict, signum: int, point: str | None) -> str:
    """Record a stop signal in the run's metadata; the reason for the points not run."""
    name = signal.Signals(signum).name
    if "interrupted" not in meta:
        meta["interrupted"] = {"signal": name, "point": point, "at": now_iso()}
    where = f" during {meta['interrupted']['point']}" if meta["interrupted"]["point"] else ""
    return f"not run: the sweep was interrupted by {name}{where}"


def error_reasons(data: list[Row], most: int = 3) -> list[str]:
    """The error rows' reasons, most frequent first ('N rows: REASON'), at most `most` of them
    and a line for the rest: a sweep run without progress lines (--no-progress, a script) still
    says why its points failed, not only how many did."""
    counts: dict[str, int] = {}
    for r in data:
        if r.get("status") != "ok":
            why = str(r.get("error") or "no reason recorded")
            counts[why] = counts.get(why, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    lines = [f"{n} error row{'s' if n != 1 else ''}: {why}" for why, n in ranked[:most]]
    if len(ranked) > most:
        rest = sum(n for _, n in ranked[most:])
        lines.append(f"{rest} more error rows with {len(ranked) - most} other reasons "
                     "(data.csv, column 'error')")
    return lines


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
    meta["counter_rows"] = write_counters(run_dir, meta)  # counters.csv (docs/health.md)
    atomic_write_json(run_dir / "metadata.json", meta)
    print(f"sweep: {len(data)} rows, {n_err} error rows -> {run_dir}/data.csv", file=sys.stderr)
    for line in error_reasons(data):
        print(f"sweep: {line}", file=sys.stderr)
    if stopped:
        where = f" during point {stopped['point']}" if stopped.get("point") else ""
        print(f"sweep: interrupted by {stopped['signal']}{where}; completed rows kept "
              f"(status \"interrupted\" in {run_dir}/metadata.json)", file=sys.stderr)
    print(run_dir, flush=True)
    if stopped:
        return 128 + int(signal.Signals[stopped["signal"]])
    return 0 if n_err == 0 else 1


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


def sweep_to_dir(opts: SweepOptions, decide: Decide | None = None) -> tuple[int, Path]:
    """Run a sweep; return (exit code, run directory). With --repetitions auto, decide(rows
    so far, baseline run or None) says which points are still undecided (the caller hands in
    pairbench.analysis.decide's: the runner itself never judges rows)."""
    root = repo_root()
    # Everything that can be checked is checked before any directory exists: the options,
    # the configuration, the launcher's hosts and program, the executable (start-up probe).
    probe = config_from_options(opts, Path("/nonexistent-run-dir"), root)
    check_config(probe)
    launcher = launchers.get(probe)
    if opts.auto is not None:
        if launcher.fixed_plan:
            raise UsageError(f"--repetitions auto: not with --launcher {launcher.name} "
                             f"({launcher.fixed_plan}); give a count")
        if decide is None:
            raise UsageError("--repetitions auto: no decision function given")
    # From here on a stop signal ends whatever runs (the start-up probe, the fingerprint's
    # helpers, a point) as a process group, and the sweep with 128 + N.
    with StopSignals() as signals:
        start = StartupProbe(probe.timeout_s, signals)
        check_launch(probe, start, launcher)
        tests = test_table(probe.binary, start)
        run_dir = prepare_run_dir(opts.run_dir, opts.results_dir, root)
        cfg = replace(probe, run_dir=str(run_dir))
        launcher = launchers.get(cfg)
        points = plan_sweep(cfg)  # the one plan: checked above, so it cannot fail here
        run_id = run_dir.name
        meta = {"run_id": run_id, "kind": "pairbench sweep", "status": "running",
                "started": now_iso(), "config": asdict(cfg)}
        if tests is not None:
            meta["tests"] = tests
        plan_meta = dict(meta)  # what a launcher that runs the plan elsewhere starts from
        meta["fingerprint"] = fingerprint.gather(root, stop=signals.stopped)
        atomic_write_json(run_dir / "metadata.json", meta)
        rc = launcher.run_plan(points=points, run_dir=run_dir, meta=meta, plan_meta=plan_meta,
                               fail_fast=opts.fail_fast, progress=opts.progress,
                               signals=signals, finish=finish)
        if rc is not None:
            return rc, run_dir
        if opts.auto is None:
            data = execute(cfg, points, run_dir, run_id, meta, opts.fail_fast, opts.progress,
                           signals)
        else:
            assert decide is not None
            data, rounds = autoreps.run_rounds(
                opts.auto, lambda r: plan_sweep(replace(cfg, repetitions=r)),
                lambda pts, carry: execute(cfg, pts, run_dir, run_id, meta, opts.fail_fast,
                                           opts.progress, signals, carry),
                lambda: decide(run_dir), signals.stopped)
            meta["repetitions_auto"] = autoreps.record(opts.auto, rounds)
        return finish(run_dir, data, meta), run_dir
