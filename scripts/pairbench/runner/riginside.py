"""Inside the Soft-RoCE rig: `python -m pairbench.runner.riginside PLAN` runs the points of the
plan the host wrote (pairbench.runner.launchers.softroce), with the local launcher, into the
plan's run directory (data.csv and metadata.json, as any sweep). Not a subcommand: only the
softroce launcher starts it. Errors and exit codes as `pairbench sweep`'s."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pairbench.errors import UsageError, call
from pairbench.runner import fingerprint
from pairbench.runner.launchers.local import Local
from pairbench.runner.plan import plan_from_json
from pairbench.runner.rundir import repo_root
from pairbench.runner.sweep import StopSignals, check_launch, execute, finish


def run_rig_plan(plan_file: Path) -> int:
    try:
        data = json.loads(plan_file.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{plan_file}: cannot read the rig plan: {exc}") from None
    plan = plan_from_json(data)
    cfg = plan.config
    run_dir = Path(cfg.run_dir)
    if (run_dir / "data.csv").exists():
        raise UsageError(f"{run_dir} already holds data.csv; runs are never overwritten")
    check_launch(cfg, launcher=Local(cfg))  # the points were planned for the local launcher
    meta = dict(plan.meta)
    meta["fingerprint"] = fingerprint.gather(repo_root(), list(plan.command_line),
                                             software=plan.host_software)
    with StopSignals() as signals:
        rows = execute(cfg, list(plan.points), run_dir, meta["run_id"], meta, plan.fail_fast,
                       plan.progress, signals)
        return finish(run_dir, rows, meta)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m pairbench.runner.riginside PLAN.json", file=sys.stderr)
        return 2
    return call("sweep", lambda: run_rig_plan(Path(args[0])))


if __name__ == "__main__":
    sys.exit(main())
