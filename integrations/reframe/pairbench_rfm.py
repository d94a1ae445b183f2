# SPDX-License-Identifier: BSD-3-Clause
# ReFrame's idiom: checks declare lists (valid_systems, tags, keep_files) as class attributes.
# ruff: noqa: RUF012
"""pairbench as ReFrame checks: the test library (docs/integrations.md).

ReFrame runs the pairbench executables itself, through the partition's scheduler (local,
Slurm, ...) and launcher (mpirun, srun, ...): pairbench's own launcher layer is not used.
One check = one job: every test × repetition of one pair count, one launch each, with the
launcher's own command line (`job.launcher.run_command`). The job writes a pairbench run
directory (`pairbench-run/`: raw CSVs, then `data.csv` + `metadata.json`), which the check
keeps as an output, so `pairbench compare/accept/report` read it like any sweep.

- Sanity: every launch exited 0; no `status=error` row (its reason is the message); every
  variable of the reference was measured; with `accept_spec`, `pairbench accept` passed.
- Performance: one variable per (point, metric), the median over repetitions of the
  point's aggregate rows (what `pairbench accept` judges), read from
  `pairbench reframe RUN --format values` — the driver computes them, not this file.
- Reference: `reference_file`, written by `pairbench reframe BASELINE_RUN` (the baseline's
  medians; compare's thresholds as tolerances, on the worse side only).

Needs `pairbench-mpi` (`pairbench_bin`, default: PATH) on the compute nodes and the
`pairbench` driver (`pairbench_cmd`) where ReFrame runs. Stdlib + ReFrame only here.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import subprocess

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.backends import getlauncher
from reframe.core.builtins import run_after, run_before, sanity_function, variable

RUN_DIR = "pairbench-run"
EXIT_CODES = f"{RUN_DIR}/raw/exit-codes"
VALUES = f"{RUN_DIR}/reframe-values.txt"
ACCEPT_OUT = f"{RUN_DIR}/accept.txt"
DRIVER_COLUMNS = ("run_id", "repetition")  # scripts/pairbench/contract/columns.py


def _quote(words: list[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)


class PairbenchBase(rfm.RunOnlyRegressionTest):
    """What every pairbench check shares: the launches, the run directory, sanity and
    performance from its rows. Subclasses set `num_tasks`/`num_tasks_per_node` and
    `pb_args()` (the arguments of one launch of one test)."""

    #: directory of pairbench-mpi / pairbench-verbs ('' = found on PATH)
    pairbench_bin = variable(str, value=os.environ.get("PAIRBENCH_BIN_DIR", ""))
    #: the driver command (computes the medians; runs `accept`)
    pairbench_cmd = variable(str, value=os.environ.get("PAIRBENCH_CMD", "pairbench"))
    layer = variable(str, value="mpi")
    pb_tests = variable(typ.List[str], value=["latency", "bw"])
    sizes = variable(str, value="8,4K,64K")
    #: 0: the executable's time windows (its default); N: a fixed count of N iterations
    iterations = variable(int, value=0)
    repetitions = variable(int, value=3)
    pin = variable(str, value="near-device")
    extra_args = variable(typ.List[str], value=[])
    #: metrics exported as performance variables (pairbench reframe --metrics); '' = its default
    metrics = variable(str, value="")
    #: a reference table from `pairbench reframe BASELINE` ('' = no reference: values logged)
    reference_file = variable(str, value="")
    #: an acceptance spec: sanity also requires `pairbench accept RUN --spec FILE` to pass
    accept_spec = variable(str, value="")

    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    pb_reference_names: set[str] = set()
    keep_files = [RUN_DIR]

    def pb_exe(self) -> str:
        name = f"pairbench-{self.layer}"
        return os.path.join(self.pairbench_bin, name) if self.pairbench_bin else name

    def pb_args(self, test: str) -> list[str]:
        args = ["--test", test, "-s", self.sizes, "--pin", self.pin, "-q"]
        if self.iterations:
            args += ["-n", str(self.iterations)]
        return args + list(self.extra_args)

    @run_after("setup")
    def load_reference(self):
        if self.reference_file:
            with open(self.reference_file) as f:
                table = json.load(f)
            self.reference = {sysname: {name: tuple(v) for name, v in refs.items()}
                              for sysname, refs in table["reference"].items()}
            self.pb_reference_names = {n for refs in table["reference"].values() for n in refs}

    @run_before("run")
    def write_launches(self):
        """One launch per (repetition, test), each through the partition's launcher; an
        exit code is recorded, never the end of the job (a failed launch is a sanity
        failure naming it, and the others still run)."""
        opts = self.current_partition.extras.get("pairbench_launcher_options", [])
        self.job.launcher.options += [o for o in opts if o not in self.job.launcher.options]
        # run() copies these into the job only after this hook: the command needs them now
        self.job.num_tasks = self.num_tasks
        self.job.num_tasks_per_node = self.num_tasks_per_node
        launch = self.job.launcher.run_command(self.job)
        cmds = [f"mkdir -p {RUN_DIR}/raw", f": > {EXIT_CODES}"]
        for rep in range(1, self.repetitions + 1):
            for test in self.pb_tests:
                out = f"{RUN_DIR}/raw/{test}.r{rep}.csv"
                cmds.append(f"{launch} {_quote([self.pb_exe(), *self.pb_args(test)])} "
                            f"-o {out}; echo \"{test} {rep} $?\" >> {EXIT_CODES}")
        self.prerun_cmds = cmds + list(self.prerun_cmds)
        # The launches are above; the job's own executable only says it is done.
        self.executable = "echo"
        self.executable_opts = [f"pairbench: {self.repetitions} x {len(self.pb_tests)} launches"]
        self.job.launcher = getlauncher("local")()

    def _path(self, rel: str) -> str:
        return os.path.join(self.stagedir, rel)

    def _assemble(self) -> list[str]:
        """raw CSVs -> data.csv (+ run_id, repetition) and metadata.json; the problems."""
        problems, rows, header = [], [], None
        try:
            with open(self._path(EXIT_CODES)) as f:
                codes = [ln.split() for ln in f if ln.strip()]
        except OSError:
            return ["the job wrote no exit codes (it did not run its launches)"]
        for test, rep, rc in codes:
            if rc != "0":
                problems.append(f"{test} repetition {rep}: {self.pb_exe()} exited {rc}")
            try:
                with open(self._path(f"{RUN_DIR}/raw/{test}.r{rep}.csv"), newline="") as f:
                    rd = csv.DictReader(f)
                    if not rd.fieldnames:
                        problems.append(f"{test} repetition {rep}: empty CSV")
                        continue
                    header = header or [*rd.fieldnames, *DRIVER_COLUMNS]
                    rows += [{**r, "run_id": self.unique_name, "repetition": rep} for r in rd]
            except OSError:
                problems.append(f"{test} repetition {rep}: no CSV")
        for r in rows:
            if r.get("status") != "ok":
                problems.append(f"error row: {r.get('test')} {r.get('msg_size_bytes')} B, "
                                f"{r.get('pairs')} pair(s): {r.get('error')}")
        if header:
            with open(self._path(f"{RUN_DIR}/data.csv"), "w", newline="") as f:
                w = csv.DictWriter(f, header)
                w.writeheader()
                w.writerows(rows)
        meta = {"kind": "pairbench reframe", "check": self.unique_name,
                "system": self.current_system.name, "partition": self.current_partition.name,
                "environ": self.current_environ.name, "job_id": self.job.jobid,
                "nodes": list(self.job.nodelist or []),
                "config": {"layer": self.layer, "tests": list(self.pb_tests),
                           "sizes": self.sizes, "repetitions": self.repetitions},
                "commands": [c for c in self.prerun_cmds if self.pb_exe() in c]}
        with open(self._path(f"{RUN_DIR}/metadata.json"), "w") as f:
            json.dump(meta, f, indent=1)
        return problems

    def _driver(self, *args: str, out: str) -> int:
        cmd = [*shlex.split(self.pairbench_cmd), *args]
        with open(self._path(out), "w") as f:
            return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=self.stagedir,
                                  timeout=600, check=False).returncode

    @run_before("sanity")
    def read_run(self):
        self.pb_problems = self._assemble()
        run = self._path(RUN_DIR)
        if not self.pb_problems:
            extra = ["--metrics", self.metrics] if self.metrics else []
            if self._driver("reframe", run, "--format", "values", *extra, out=VALUES):
                self.pb_problems.append(f"pairbench reframe failed: see {VALUES}")
        if not self.pb_problems and self.accept_spec and \
                self._driver("accept", run, "--spec", self.accept_spec, out=ACCEPT_OUT):
            self.pb_problems.append(f"pairbench accept failed: see {ACCEPT_OUT}")
        self.pb_values = {}
        if os.path.exists(self._path(VALUES)):
            with open(self._path(VALUES)) as f:
                for ln in f:
                    name, value, unit = ln.split()
                    self.pb_values[name] = (float(value), "" if unit == "-" else unit)
        if not self.pb_problems:
            missing = sorted(self.pb_reference_names - set(self.pb_values))
            if missing:
                self.pb_problems.append("not measured, but in the reference: "
                                        + ", ".join(missing))

    @sanity_function
    def pb_sanity(self):
        return sn.assert_true(not self.pb_problems, msg="; ".join(self.pb_problems[:5]))

    @run_before("performance")
    def set_perf_variables(self):
        values = self._path(VALUES)
        self.perf_variables = {
            name: sn.make_performance_function(
                sn.extractsingle(rf"^{re.escape(name)} (\S+) ", values, 1, float), unit)
            for name, (_v, unit) in self.pb_values.items()}


class PairbenchMpi(PairbenchBase):
    """MPI layer: `pairs` pairs = 2·pairs ranks, on one node or across two (pair i = the
    i-th rank of each node; pairbench-mpi checks the placement)."""

    pairs = variable(int, value=1)
    #: 1: both sides of every pair on one node; 2: side A on the first node, B on the second
    num_nodes = variable(int, value=1)

    @run_before("setup")
    def set_tasks(self):
        self.num_tasks = 2 * self.pairs
        self.num_tasks_per_node = self.num_tasks // self.num_nodes

    def pb_args(self, test: str) -> list[str]:
        return [*super().pb_args(test), "--pairs", str(self.pairs)]


class PairbenchFabricScan(PairbenchBase):
    """A fabric scan of the job's nodes: every node pair once, in rounds of disjoint pairs,
    in ONE launch per test (`pairbench-mpi --pattern scan`, docs/fabric.md); rows are
    labelled scan:R. `pairbench fabric RUN`'s analysis reads the kept run directory."""

    num_nodes = variable(int, value=2)
    ranks_per_node = variable(int, value=1)
    pb_tests = ["bw"]

    @run_before("setup")
    def set_tasks(self):
        self.num_tasks = self.num_nodes * self.ranks_per_node
        self.num_tasks_per_node = self.ranks_per_node

    def pb_args(self, test: str) -> list[str]:
        return [*super().pb_args(test), "--pattern", "scan"]  # the pattern decides the pairs
