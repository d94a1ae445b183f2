"""`--launcher softroce`: the sweep through the Soft-RoCE rig (scripts/softroce-run): the rig
is booted once, and the whole plan runs inside it with the local launcher
(`python -m pairbench.runner.riginside PLAN`, the plan written as JSON into the run
directory); back on the host, the rig's record and error rows for the points it never ran
are added. A plan, not one launch per point: a VM boot costs a minute."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pairbench.errors import UsageError
from pairbench.io import procutil
from pairbench.runner import fingerprint
from pairbench.runner.collect import (
    atomic_write_json,
    error_rows,
    point_key,
    read_rows,
    row_key,
)
from pairbench.runner.launchers.local import Local
from pairbench.runner.plan import RigPlan, plan_to_json
from pairbench.runner.rundir import now_iso, repo_root

RIG_PLAN = "raw/rig-plan.json"  # in the run directory: the plan the rig runs
RIG_MODULE = "pairbench.runner.riginside"


class Softroce(Local):
    name = "softroce"
    rank = 10
    fixed_plan = "the rig runs a fixed plan"   # --repetitions auto is refused, with this reason
    probes_binary = False  # the binary runs inside the rig, whose own sweep probes it there

    @property
    def rig(self) -> Path:
        return Path(self.cfg.launcher_cmd or repo_root() / "scripts" / "softroce-run")

    def check(self) -> None:
        if not self.rig.is_file():
            raise UsageError(f"Soft-RoCE rig {self.rig} not found (--launcher softroce)")
        if not Path(self.cfg.binary).is_file():
            raise UsageError(f"executable {self.cfg.binary} not found (build it, or pass "
                             "--binary)")


    def run_plan(self, **plan: Any) -> int | None:
        rig_plan = RigPlan(config=self.cfg, points=tuple(plan["points"]),
                           meta=plan["plan_meta"], fail_fast=plan["fail_fast"],
                           progress=plan["progress"], command_line=tuple(sys.argv),
                           host_software=fingerprint.software_of(
                               plan["meta"].get("fingerprint") or {}))
        return run_softroce(rig_plan, plan["run_dir"], plan["meta"],
                            str(self.rig.absolute()), plan["signals"], plan["finish"])

    def record(self) -> dict:
        return {"name": self.name, "command": str(self.rig)}


def softroce_argv(rig: str, rig_timeout_s: float, python: str, scripts_dir: str,
                  plan_file: str, rwdir: str | None = None, devices: int = 1) -> list[str]:
    """scripts/softroce-run --timeout S [--rwdir D] [--devices N] -- env PYTHONPATH=scripts
    python -m
    pairbench.runner.riginside PLAN. The rig persists writes under the repo root; a run
    directory elsewhere is passed with --rwdir."""
    opts = ["--timeout", f"{rig_timeout_s:g}"] + (["--rwdir", rwdir] if rwdir else [])
    if devices > 1:
        opts += ["--devices", str(devices)]
    return [rig, *opts, "--", "env", f"PYTHONPATH={scripts_dir}", python, "-m",
            RIG_MODULE, plan_file]


def rig_reason(stderr: Path) -> str:
    """The most telling line of the rig's stderr: the last 'error' line, else the last."""
    try:
        lines = [ln.strip() for ln in stderr.read_text(errors="replace").splitlines()
                 if ln.strip()]
    except OSError:
        return ""
    errors = [ln for ln in lines if "error" in ln.lower()]
    return (errors or lines or [""])[-1][:300]


RIG_KILL_GRACE_S = 3.0  # the rig: SIGTERM, then SIGKILL of its process group


def run_softroce(plan: RigPlan, run_dir: Path, meta: dict, rig: str,
                 signals: Any, finish: Callable[[Path, list, dict], int]) -> int:
    """Boot the rig once and run the plan's points inside it with the local launcher; then
    add the rig's own record (and error rows for points it never ran) to what ran."""
    cfg, points = plan.config, plan.points
    root = repo_root()
    budget = cfg.rig_timeout_s or (len(points) * (cfg.timeout_s + 15) + 600)
    rwdir = None if run_dir.resolve().is_relative_to(root) else str(run_dir)
    (run_dir / "raw").mkdir(exist_ok=True)
    plan_file = run_dir / RIG_PLAN
    atomic_write_json(plan_file, plan_to_json(plan))
    argv = softroce_argv(rig, budget, sys.executable, str(Path(__file__).resolve().parents[3]),
                         str(plan_file), rwdir, cfg.rig_devices)
    outer_fp = meta["fingerprint"]
    print(f"sweep: starting the Soft-RoCE rig for {len(points)} points (one VM boot)",
          file=sys.stderr, flush=True)
    start = time.monotonic()
    rig_exit: int | None = None
    rig_error: str | None = None
    stopped: dict | None = None
    with open(run_dir / "raw" / "rig.stdout", "wb") as out, \
            open(run_dir / "raw" / "rig.stderr", "wb") as err_file:
        try:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            rig_error = f"cannot start the Soft-RoCE rig {rig}: {exc.strerror}"
        else:
            def tee(line: bytes) -> None:  # the rig's stderr to raw/rig.stderr and ours
                err_file.write(line)
                err_file.flush()
                sys.stderr.buffer.write(line)
                sys.stderr.flush()

            copier = procutil.start_copy(proc.stderr, tee, by_line=True)
            state = procutil.wait(proc, time.monotonic() + budget + 120, signals.stopped)
            if state == "stopped":
                procutil.kill_group(proc, RIG_KILL_GRACE_S)  # the VM and the sweep inside
                rig_error = f"interrupted by {signals.name} (Soft-RoCE rig killed)"
                stopped = {"signal": signals.name, "point": "the Soft-RoCE rig",
                           "at": now_iso()}
            elif state == "deadline":
                procutil.kill_group(proc, RIG_KILL_GRACE_S)
                rig_error = f"Soft-RoCE rig timed out after {budget + 120:g} s (killed)"
            else:
                rig_exit = proc.returncode
            copier.join(timeout=5)
    # The plan ran inside the rig: its data.csv and metadata.json are in run_dir
    # (persisted by the rig); what never ran becomes error rows here.
    ran: dict = {}
    if (run_dir / "metadata.json").is_file():
        try:
            ran = json.loads((run_dir / "metadata.json").read_text())
        except ValueError:
            ran = {}
    data = read_rows(run_dir / "data.csv")
    have = {row_key(r) for r in data}
    meaning = {124: " (deadline reached)", 125: " (rig failure)", 77: " (cannot run here)"}
    why = rig_error or (f"Soft-RoCE rig exited {rig_exit}{meaning.get(rig_exit or 0, '')} "
                        f"before this point ran: {rig_reason(run_dir / 'raw' / 'rig.stderr')}")
    for p in points:
        if point_key(p) not in have:
            data += error_rows(p, list(p.sizes), why, run_dir.name)
    meta = ran if ran.get("points") is not None else meta
    if stopped:
        meta["interrupted"] = stopped
    meta["rig"] = {"argv": argv, "plan": RIG_PLAN, "exit_code": rig_exit, "error": rig_error,
                   "elapsed_s": round(time.monotonic() - start, 1),
                   "host_fingerprint": outer_fp}
    return finish(run_dir, data, meta)



LAUNCHER = Softroce
