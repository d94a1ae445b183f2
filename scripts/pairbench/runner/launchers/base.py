"""The launcher interface: what every launcher says about a launch.

A launcher is built from a sweep's or fabric scan's configuration (any object with the
fields below: layer, hosts, binary, launcher_cmd, launcher_args, remote_binary,
connect_addr, as_root) and answers:

- check(): bad input before anything starts (its program not on PATH, the wrong host count);
- sides(exe, pairs, raw): the processes of one point (argv, stdout and stderr files);
- job_argv(exe, ranks_per_node, hostfile): one job over every host (a fabric scan's MPI
  job); with hostfile (a path), the hosts are read from that file, written with
  hostfile_text(), so that no argument grows with the node count;
- rank_job(exe, hostfile): one rank on each host, rank i on the host of the file's line i
  (a verbs fabric scan's round: pairbench-verbs --scan finds its pair from its rank), a rank
  that fails ending no other; (argv, environment to add);
- failed_nodes(stderr_text): the hosts the launcher's own messages say were lost (or whose
  ranks failed); lost_nodes(stderr_text): only the hosts it says were lost (a node gone,
  not a rank that exited non-zero);
- env(): the environment it adds to those processes;
- run_plan(...): None when the sweep runs the points itself (one process group per point,
  killed on timeout or on a stop signal: pairbench.runner.run), or the exit code after it
  ran the whole plan its own way (the Soft-RoCE rig: once inside a VM);
- record(): what metadata.json keeps about it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Any, ClassVar

from pairbench.errors import UsageError

OMPI_ROOT_ENV = (("OMPI_ALLOW_RUN_AS_ROOT", "1"), ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"))


@dataclass(frozen=True)
class Side:
    """One process of a point: its argv and where its stdout/stderr go (relative to run dir)."""

    role: str  # "main" (the only process), "server" or "client" (ssh)
    argv: tuple[str, ...]
    stdout: str
    stderr: str


def main_side(argv: list[str], raw: str) -> tuple[Side, ...]:
    return (Side("main", tuple(argv), f"{raw}.stdout", f"{raw}.stderr"),)


class Launcher:
    """Starts the executables of a point (see the module's docstring)."""

    name: ClassVar[str]
    rank: ClassVar[int] = 50          # position among the --launcher choices
    program: ClassVar[str | None] = None  # default program (mpirun), found on PATH; None: none
    remote_binary: ClassVar[bool] = False  # the executable lives on the hosts (ssh)
    multi_node: ClassVar[bool] = False  # can put the two sides of a pair on two hosts (fabric)
    jobs: ClassVar[bool] = False        # can start one job over K hosts (fabric, MPI layer)
    kill_grace_s: ClassVar[float] = 3.0  # SIGTERM -> SIGKILL of its process group
    fixed_plan: ClassVar[str] = ""     # why it cannot run --repetitions auto ("": it can)
    probes_binary: ClassVar[bool] = True  # the sweep probes the executable here first
    connects: ClassVar[bool] = False   # verbs: one launch, the client told the server's address

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg

    @property
    def command(self) -> str | None:
        """The program to start (--launcher-cmd, else the default one)."""
        return self.cfg.launcher_cmd or self.program

    def check(self) -> None:
        """Bad input -> UsageError before anything starts (the server's address of a
        connecting launcher before looking for its program)."""
        if self.connects and self.cfg.layer == "verbs":
            self.verbs_connect()
        if self.program is not None and shutil.which(str(self.command)) is None:
            raise UsageError(f"launcher {self.name}: {self.command!r} not found on PATH")

    def sides(self, exe: list[str], pairs: int, raw: str) -> tuple[Side, ...]:
        raise NotImplementedError

    def job_argv(self, exe: list[str], ranks_per_node: int,
                 hostfile: str | None = None) -> list[str]:
        """One job of ranks_per_node ranks on each of cfg.hosts (read from hostfile if
        given)."""
        raise UsageError(f"launcher {self.name} cannot start one job over several nodes")

    def hostfile_text(self, ranks_per_node: int) -> str:
        """The file job_argv's hostfile names: one host per line."""
        return "".join(f"{h}\n" for h in self.cfg.hosts)

    def rank_job(self, exe: list[str], hostfile: str) -> tuple[list[str],
                                                             tuple[tuple[str, str], ...]]:
        """One rank on each of cfg.hosts, rank i on the host of hostfile's line i (written
        with hostfile_text(1)); a rank that exits non-zero does not end the others.
        (argv, environment added to env())."""
        raise UsageError(f"launcher {self.name} cannot start one rank per node")

    def failed_nodes(self, text: str) -> list[str]:
        """Hosts of cfg.hosts that the launcher's messages in text name as lost."""
        return []

    def lost_nodes(self, text: str) -> list[str]:
        """Hosts of cfg.hosts that the launcher's messages say are gone (the node, not one
        of its processes)."""
        return self.failed_nodes(text)

    def env(self) -> tuple[tuple[str, str], ...]:
        return ()

    def private_ompi_dirs(self) -> bool:
        """Whether a point's Open MPI files (session directory, shared-memory backing files)
        go to a folder of its own, removed after it (runner/ompidirs.py): only when Open MPI
        runs every rank on this host."""
        return False

    def run_plan(self, **plan: Any) -> int | None:
        """Run the whole sweep plan its own way and return the sweep's exit code, or None:
        the caller runs the points here, one by one. plan: points, run_dir, meta (the run's
        metadata so far, fingerprint included), plan_meta (the same without the
        fingerprint), fail_fast, progress, signals (the sweep's StopSignals) and finish
        (the sweep's finish(run_dir, rows, meta) -> exit code)."""
        return None

    def record(self) -> dict:
        return {"name": self.name, "command": self.command}

    def verbs_connect(self) -> list[str]:
        """Two-sided verbs launches: the client connects to the server's device address
        (--connect-addr, else the first host); rank 0 is the server, rank 1 the client."""
        cfg = self.cfg
        addr = cfg.connect_addr or (cfg.hosts[0] if cfg.hosts else None)
        if addr is None:
            raise UsageError(f"--layer verbs --launcher {self.name} needs --hosts A,B or "
                             "--connect-addr (the server's RDMA device address)")
        return ["--connect", addr]
