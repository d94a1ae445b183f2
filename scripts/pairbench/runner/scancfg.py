"""What a fabric scan is planned from and planned into: its configuration (FabricConfig), a
launch (Job), and small helpers the scan's runners share (pairbench.runner.scan: MPI jobs and
verbs through ssh; pairbench.runner.scanverbs: verbs through mpirun/srun, one launch per
round)."""

from __future__ import annotations

from dataclasses import dataclass

from pairbench.runner.exeopts import ExeSettings
from pairbench.runner.plan import Point

MAX_DROP = 3  # more hosts named at once is a job-wide failure, not a node's


@dataclass(frozen=True)
class FabricConfig(ExeSettings):
    """A fabric scan. The executables' pass-through options are ExeSettings' fields
    (pairbench.runner.exeopts), as a sweep's."""

    layer: str
    launcher: str
    hosts: tuple[str, ...]
    tests: tuple[str, ...]
    sizes: tuple[int, ...]
    binary: str
    run_dir: str
    ranks_per_node: int = 1  # pairs per node pair
    repetitions: int = 1  # whole scans; a node pair's value is the median over them
    timeout_s: float = 600.0
    launcher_cmd: str | None = None
    launcher_args: tuple[str, ...] = ()
    remote_binary: str | None = None
    as_root: bool = False
    exe_args: tuple[str, ...] = ()
    connect_addr: str | None = None  # (launchers read it; a node pair's server is its first node)


@dataclass(frozen=True)
class Job:
    """One launch: a point (its argv, files relative to run_dir/subdir) in a wave of
    launches that start together."""

    point: Point
    subdir: str
    wave: int
    node_pair: tuple[str, str] | None = None  # verbs: (A, B)
    rounds: tuple[int, int] | None = None  # mpi: the scan's rounds first..last
    dropped: tuple[str, ...] = ()  # mpi: hosts left out (failed earlier in the scan)
    hostfile: tuple[str, str] | None = None  # mpi: (path in the run dir, its text)


def ranges(rounds: set[int]) -> list[list[int]]:
    """Sorted rounds as [first, last] runs (compact in metadata.json at any K)."""
    out: list[list[int]] = []
    for r in sorted(rounds):
        if out and out[-1][1] == r - 1:
            out[-1][1] = r
        else:
            out.append([r, r])
    return out


def unranges(runs: list[list[int]]) -> set[int]:
    return {r for a, b in runs for r in range(a, b + 1)}


def fmt_s(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else (f"{s / 60:.0f} min" if s < 7200 else
                                         f"{s / 3600:.1f} h")
