"""`pairbench sweep`: plan -> run -> collect into a new run directory.

results/<date>-<host>-<shortid>/ holds data.csv (every row of every executable plus run_id
and repetition), metadata.json (configuration, fingerprint, per-point record) and raw/
(each process's stdout, stderr, CSV and --env-json file). Files are written atomically;
nothing is overwritten. The work is pairbench.runner.sweep's; with --repetitions auto the
decision is pairbench.analysis.decide's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pairbench.contract.sizes import SIZE_LIST_RULE
from pairbench.contract.testtable import LAYERS
from pairbench.errors import UsageError
from pairbench.runner import launchers
from pairbench.runner.exeopts import add_exe_arguments
from pairbench.runner.options import MAX_QPS, SweepOptions, config_from_options
from pairbench.runner.plan import SOAK_DIR, SWEEP_PATTERNS
from pairbench.runner.rundir import repo_root
from pairbench.runner.sweep import sweep_to_dir


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--layer", required=True, choices=LAYERS)
    p.add_argument("--test", action="append", required=True, metavar="NAME",
                   help="test name; repeat or comma-separate for several")
    p.add_argument("-s", "--sizes", default="1:64K",
                   help=f"message sizes: {SIZE_LIST_RULE} (default 1:64K)")
    p.add_argument("--pairs", default="1", help="pair counts, e.g. 1,2,4,8 (default 1)")
    p.add_argument("--qps", default=None, help="verbs: queue pairs per pair, e.g. 1,8,64 (a point "
                   f"per value, 1..{MAX_QPS}; default: the executable's 1)")
    p.add_argument("--pattern", default=None, choices=SWEEP_PATTERNS,
                   help="verbs: incast or fanout over --hosts, one launch per point through "
                   "mpirun or srun (one rank per node); --pairs P = the senders (incast) or "
                   "receivers (fanout): the first P+1 hosts, the first the target or hub, whose "
                   "rows the point keeps (docs/patterns.md)")
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
    p.add_argument("--launcher", choices=launchers.names(), default=None,
                   help="how each point starts (default: mpirun for --layer mpi, local for "
                   "--layer verbs; docs/driver.md \"Launchers\")")
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
    p.add_argument("--rig-devices", type=int, default=None, metavar="N",
                   help="--launcher softroce: Soft-RoCE devices the rig creates (softroce-run "
                        "--devices; default: as many as --devices names, else 1)")
    p.add_argument("--launcher-cmd", default=None,
                   help="path of mpirun/srun/ssh or of the Soft-RoCE rig to use")
    p.add_argument("--launcher-arg", action="append", default=[], metavar="ARG",
                   help="extra launcher argument (repeat; write --launcher-arg=--x)")
    p.add_argument("--exe-arg", action="append", default=[], metavar="ARG",
                   help="extra executable argument (repeat; write --exe-arg=--x)")
    add_exe_arguments(p)
    p.add_argument("--rig-timeout", type=float, default=None,
                   help="softroce: limit for the whole rig run (default from the plan)")
    p.add_argument("--fail-fast", action="store_true", help="stop at the first failed point")
    p.add_argument("--no-progress", action="store_true")


def run_sweep(ns: argparse.Namespace) -> int:
    """The CLI shell of `pairbench sweep`."""
    opts = SweepOptions.from_namespace(ns)
    decide = None
    if opts.auto is not None:  # bad files: exit 2 now. Imported here: the statistics (scipy)
        from pairbench.analysis.decide import Decider  # cost ~1 s of CPU per sweep otherwise

        decide = Decider(opts.auto)
        # a baseline that shares no point with the sweep: exit 2 now, not after a round
        decide.check_plan(config_from_options(opts, Path("/nonexistent-run-dir"),
                                              repo_root()))
    rc, run_dir = sweep_to_dir(opts, decide)
    if opts.soak_s and run_dir is not None and (run_dir / SOAK_DIR).is_dir():
        rc = _store_soak(run_dir, rc)
    return rc


def _store_counters(run_dir: Path, rc: int) -> int:
    """Every node's counters over time (pairbench-verbs --counters-series) into the run's
    counters_series.parquet (analysis/cntseries.py)."""
    from pairbench.analysis import cntseries

    try:
        n = cntseries.convert(run_dir / SOAK_DIR, run_dir / cntseries.PARQUET)
    except (OSError, UsageError) as exc:  # the files stay for show/report
        print(f"sweep: the counters series stay in {run_dir / SOAK_DIR}: {exc}", file=sys.stderr)
        return rc or 1
    if n:
        print(f"sweep: counters over time: {n} non-zero delta(s) -> "
              f"{run_dir / cntseries.PARQUET}", file=sys.stderr)
    return rc


def _store_soak(run_dir: Path, rc: int) -> int:
    """A soak's series files into the run's soak.parquet, and its stalls in one line each
    (imported here: pyarrow and numpy cost ~1 s of CPU, only a soak needs them)."""
    from pairbench.analysis import soak

    try:
        flows = soak.convert(run_dir / SOAK_DIR, run_dir / soak.PARQUET)
    except (OSError, UsageError) as exc:  # the series files stay for show/report
        print(f"sweep: the soak's series stay in {run_dir / SOAK_DIR}: {exc}", file=sys.stderr)
        return rc or 1
    rc = _store_counters(run_dir, rc)
    if flows:
        print(f"sweep: soak series of {len(flows)} flow(s) -> {run_dir / soak.PARQUET}",
              file=sys.stderr)
        for ps in soak.stability(run_dir):
            print(f"sweep: soak {ps.point} {ps.msg_size_bytes} B: {ps.stalls} stall(s) in "
                  f"{ps.stalled_flows} of {len(ps.flows)} flow(s), longest {ps.longest_s:g} s"
                  + (", partial" if ps.partial else ""), file=sys.stderr)
    return rc
