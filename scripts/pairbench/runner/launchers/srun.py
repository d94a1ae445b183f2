"""`--launcher srun`: Slurm's srun on two nodes (a point) or K nodes (a fabric scan's job).
MPI layer: 2P tasks, P on each node (pairbench-mpi pairs the i-th rank of one node with the
i-th of the other: `-N2 -n 2P` alone lets Slurm fill the first node's CPUs, e.g. 3 + 1 for
P = 2); verbs: one task per node."""

from __future__ import annotations

import re

from pairbench.runner.launchers.base import Launcher, Side, main_side

# An MPI job cannot go on without one of its ranks: a task that dies (Open MPI 4.1.4's TCP
# BTL segfaulted inside MPI_Init on a slow, loaded node under srun --mpi=pmix) ends the step
# at once, as mpirun does by default, instead of the others waiting out their start-up
# deadline (60 s in the Slurm fabric test). Slurm's own default (KillOnBadExit) is 0.
KILL_ON_BAD_EXIT = "--kill-on-bad-exit=1"


class Srun(Launcher):
    name = "srun"
    rank = 30
    program = "srun"
    multi_node = True
    jobs = True
    connects = True

    def sides(self, exe: list[str], pairs: int, raw: str) -> tuple[Side, ...]:
        cfg = self.cfg
        argv = [str(self.command), "-N2"]
        if cfg.layer == "mpi":
            argv += ["-n", str(2 * pairs), f"--ntasks-per-node={pairs}"]
        else:
            argv += ["-n", "2", "--ntasks-per-node=1"]
            exe = exe + self.verbs_connect()
        if cfg.hosts:
            argv += ["--nodelist", ",".join(cfg.hosts)]
        if cfg.layer == "mpi":
            argv += [KILL_ON_BAD_EXIT]
        return main_side(argv + list(cfg.launcher_args) + exe, raw)

    def job_argv(self, exe: list[str], ranks_per_node: int,
                 hostfile: str | None = None) -> list[str]:
        """K x R tasks, R per node (srun numbers the nodes its own way: the rows' host
        columns say which is which). srun reads --nodelist from a file when the value
        holds a '/'. One dead task ends the job (KILL_ON_BAD_EXIT)."""
        hosts, r = self.cfg.hosts, ranks_per_node
        return [str(self.command), "-N", str(len(hosts)), "-n", str(len(hosts) * r),
                f"--ntasks-per-node={r}", "--nodelist", hostfile or ",".join(hosts),
                KILL_ON_BAD_EXIT, *self.cfg.launcher_args, *exe]

    def rank_job(self, exe: list[str], hostfile: str) -> tuple[list[str],
                                                             tuple[tuple[str, str], ...]]:
        """K tasks, task i on line i of the hostfile (--distribution=arbitrary reads the
        layout from $SLURM_HOSTFILE); --kill-on-bad-exit=0: a pair that fails does not end
        the others."""
        k = len(self.cfg.hosts)
        return [str(self.command), "-N", str(k), "-n", str(k), "--distribution=arbitrary",
                "--kill-on-bad-exit=0", "--nodelist", hostfile, *self.cfg.launcher_args,
                *exe], (("SLURM_HOSTFILE", hostfile),)

    def lost_nodes(self, text: str) -> list[str]:
        """Slurm: "... Node failure on HOST" (not a task that exited non-zero)."""
        named = set(re.findall(r"[Nn]ode failure on (\S+)", text))
        return [h for h in self.cfg.hosts if h in named]

    def failed_nodes(self, text: str) -> list[str]:
        """Slurm: "srun: error: HOST: task 3: Exited with exit code 1", "... Node failure
        on HOST"."""
        named = set(re.findall(r"srun: error: (\S+?): task", text))
        named |= set(re.findall(r"[Nn]ode failure on (\S+)", text))
        return [h for h in self.cfg.hosts if h in named]


LAUNCHER = Srun
