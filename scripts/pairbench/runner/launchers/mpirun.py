"""`--launcher mpirun`: Open MPI's mpirun. MPI layer: 2P ranks per point; verbs: one rank
per side (each forks its P workers), rank 0 the server. As root, Open MPI needs its two
"allow run as root" variables, which it adds."""

from __future__ import annotations

import re

from pairbench.runner.launchers.base import OMPI_ROOT_ENV, Launcher, Side, main_side


class Mpirun(Launcher):
    name = "mpirun"
    rank = 20
    program = "mpirun"
    multi_node = True
    jobs = True
    connects = True

    def sides(self, exe: list[str], pairs: int, raw: str) -> tuple[Side, ...]:
        cfg = self.cfg
        argv = [str(self.command), "--oversubscribe"]
        if cfg.layer == "mpi":
            argv += ["-np", str(2 * pairs)]
        else:
            argv += ["-np", "2", "--map-by", "node" if cfg.hosts else "slot"]
            exe = exe + self.verbs_connect()
        if cfg.hosts:
            argv += ["-H", ",".join(cfg.hosts)]
        return main_side(argv + list(cfg.launcher_args) + exe, raw)

    def job_argv(self, exe: list[str], ranks_per_node: int,
                 hostfile: str | None = None) -> list[str]:
        """K x R ranks, R per node, node i = the i-th host (ranks round-robin)."""
        hosts, r = self.cfg.hosts, ranks_per_node
        where = (["--hostfile", hostfile] if hostfile
                 else ["-H", ",".join(f"{h}:{r}" for h in hosts)])
        return [str(self.command), "-np", str(len(hosts) * r), "--map-by", "node", *where,
                *self.cfg.launcher_args, *exe]

    def rank_job(self, exe: list[str], hostfile: str) -> tuple[list[str],
                                                             tuple[tuple[str, str], ...]]:
        """-np K --map-by node over a hostfile of one slot per host: rank i on line i.
        orte_abort_on_non_zero_status 0: a pair that fails (its ranks exit 1 after writing
        their error rows) does not end the pairs of the same round."""
        return [str(self.command), "-np", str(len(self.cfg.hosts)), "--map-by", "node",
                "--hostfile", hostfile, "--mca", "orte_abort_on_non_zero_status", "0",
                *self.cfg.launcher_args, *exe], ()

    def hostfile_text(self, ranks_per_node: int) -> str:
        return "".join(f"{h} slots={ranks_per_node}\n" for h in self.cfg.hosts)

    def failed_nodes(self, text: str) -> list[str]:
        """Open MPI: "... Remote daemon: [[x,0],3] on node HOST", "... on node HOST
        exited on signal ..."."""
        named = {h.rstrip(",.;:") for h in re.findall(r"on node (\S+)", text)}
        return [h for h in self.cfg.hosts if h in named]

    def lost_nodes(self, text: str) -> list[str]:
        """Open MPI: the daemon of the node is gone ("Remote daemon: [[x,0],3] on node
        HOST"), not a process that exited (or was killed) on it."""
        named = {h.rstrip(",.;:") for h in re.findall(r"Remote daemon\s*:\s*\S+ on node (\S+)",
                                                      text)}
        return [h for h in self.cfg.hosts if h in named]

    def env(self) -> tuple[tuple[str, str], ...]:
        return OMPI_ROOT_ENV if self.cfg.as_root else ()

    def private_ompi_dirs(self) -> bool:
        return not self.cfg.hosts  # -H/--hosts: ranks on other nodes, where the folder is not


LAUNCHER = Mpirun
