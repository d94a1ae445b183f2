"""`pairbench default` (also `pairbench` with no subcommand): the embedded default run.

1. verbs multi-pair sweep through the Soft-RoCE rig (the rig uses a real device when there
   is one, else local rxe or a VM): write_lat, write_bw, read_lat; pairs 1,2; small sizes;
2. MPI multi-pair sweep on this node through mpirun: latency, bw; pairs 1,2;
3. plots and an HTML report for each, and report.png (its first screens, rendered by
   headless Chromium) when Chromium is installed; prints where everything is.
Every point runs for a time, not a count (docs/methodology.md "Windows"): bandwidth 0.2 s of
one common window, latency 0.1 s and at least 100 samples on the emulated device (tens of µs
per operation; 1,000, the executables' default, in the MPI part), so that it finishes in a
few minutes on 2 cores without RDMA hardware.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from pairbench.analysis.decide import Decider
from pairbench.contract.testtable import DEFAULT_TESTS
from pairbench.errors import UsageError
from pairbench.present import plot, report
from pairbench.runner import autoreps, sweep
from pairbench.runner.options import SweepOptions

# Pairs 1,2 (as the MPI part): on these 2-core hosts the rig is an emulated guest of 2 vCPUs,
# where a 4-pair point is 8 spinning processes that measure the guest's scheduler (write_lat
# at 4 pairs alone took 14 s, a quarter of the points' time: results/default-run); a machine
# with an adapter and cores to match is swept further with `pairbench sweep --pairs`.
VERBS = SweepOptions(layer="verbs", tests=tuple(DEFAULT_TESTS["verbs"]),
                     pairs="1,2", sizes="8,128,256,4K,64K", warmup=20, lat_samples=100,
                     launcher="softroce", timeout_s=120.0, allow_oversubscribe=True)
MPI = SweepOptions(layer="mpi", tests=tuple(DEFAULT_TESTS["mpi"]), pairs="1,2",
                   sizes="8,128,4K,64K", warmup=100, launcher="mpirun",
                   repetitions=3, timeout_s=60.0, allow_oversubscribe=True)


@dataclass(frozen=True)
class DefaultOptions:
    """What `pairbench default` is asked to do."""

    results_dir: str | None = None
    skip_verbs: bool = False
    skip_mpi: bool = False
    progress: bool = True
    repetitions: str | None = None   # N or auto[:MAX] for the MPI sweep (None: its preset)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results-dir", default=None, help="default <repo>/results")
    p.add_argument("--skip-verbs", action="store_true")
    p.add_argument("--skip-mpi", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--repetitions", default=None, metavar="N|auto[:MAX]",
                   help="the MPI sweep's repetitions (default 3); auto[:MAX] adds repetitions "
                   "until its noise can show a change of twice each threshold (as sweep "
                   "--repetitions auto); the verbs sweep through the rig keeps its own count")


def run_default(ns: argparse.Namespace) -> int:
    """The CLI shell of `pairbench default`."""
    return default_run(DefaultOptions(results_dir=ns.results_dir, skip_verbs=ns.skip_verbs,
                                      skip_mpi=ns.skip_mpi, progress=not ns.no_progress,
                                      repetitions=ns.repetitions))


def _screenshot(label: str, html: Path) -> None:
    """report.png next to report.html when Chromium is installed (else say so)."""
    from pairbench.present import screenshot

    if screenshot.find_browser() is None:
        print(f"pairbench default: {label}: no report.png: Chromium is not installed",
              file=sys.stderr)
        return
    try:
        r = screenshot.render(html, html.with_suffix(".png"))
    except UsageError as exc:
        print(f"pairbench default: {label}: no report.png: {exc}", file=sys.stderr)
        return
    for m in r.console:
        print(f"pairbench default: {label}: report console: {m}", file=sys.stderr)
    print(f"screenshot: {r.png}", file=sys.stderr)


def default_run(opts: DefaultOptions) -> int:
    plan = []
    if not opts.skip_verbs:
        plan.append(("verbs (Soft-RoCE rig)", VERBS))
    if not opts.skip_mpi:
        mpi = MPI
        if opts.repetitions is not None:
            reps, auto = autoreps.parse_repetitions(opts.repetitions)
            mpi = replace(MPI, repetitions=reps, auto=auto)
        plan.append(("MPI (mpirun, this node)", mpi))
    worst = 0
    done: list[tuple[str, Path, int]] = []
    for label, base in plan:
        sweep_opts = replace(base, results_dir=opts.results_dir, progress=opts.progress)
        print(f"== pairbench default: {label}: pairbench sweep {' '.join(sweep_opts.argv())}",
              file=sys.stderr, flush=True)
        try:
            decide = Decider(sweep_opts.auto) if sweep_opts.auto is not None else None
            rc, run_dir = sweep.sweep_to_dir(sweep_opts, decide)
        except UsageError as exc:
            print(f"pairbench default: {label} not run: {exc}", file=sys.stderr)
            worst = max(worst, exc.exit_code)
            continue
        worst = max(worst, rc)
        try:
            files = plot.plot_runs(plot.load_runs([str(run_dir)], []), run_dir / "plots")
            print(f"plot: {len(files)} files in {run_dir / 'plots'}", file=sys.stderr)
        except UsageError as exc:
            print(f"pairbench default: {label}: no plots: {exc}", file=sys.stderr)
        try:
            html = report.write_report(run_dir)
            _screenshot(label, html)
        except UsageError as exc:
            print(f"pairbench default: {label}: no report: {exc}", file=sys.stderr)
        done.append((label, run_dir, rc))
    print("\npairbench default run:")
    for label, run_dir, rc in done:
        state = "ok" if rc == 0 else "finished with error rows (see data.csv 'error' column)"
        print(f"  {label}: {state}\n    data:   {run_dir / 'data.csv'}\n"
              f"    plots:  {run_dir / 'plots'}/\n    report: {run_dir / 'report.html'}"
              + (f"\n    screenshot of the report: {run_dir / 'report.png'}"
                 if (run_dir / "report.png").is_file() else ""))
    if not done:
        print("  nothing ran (see the errors above)")
    return worst
