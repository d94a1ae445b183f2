"""What a fabric scan is planned from and planned into: its configuration (FabricConfig), a
launch (Job), and small helpers the scan's runners share (pairbench.runner.scan: MPI jobs and
verbs through ssh; pairbench.runner.scanverbs: verbs through mpirun/srun, one launch per
round)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pairbench.errors import UsageError
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
    # the tournament's rounds to run (--plan cover, analysis/coverplan.py); () = all of them
    rounds: tuple[int, ...] = ()


def scan_rounds(cfg: FabricConfig) -> list[int]:
    """The rounds the scan runs: a cover plan's (cfg.rounds), else every round."""
    from pairbench.runner.schedule import total_rounds

    return sorted(cfg.rounds) if cfg.rounds else list(range(1, total_rounds(len(cfg.hosts))
                                                            + 1))


# mpirun hostfile words after the node name (Open MPI: slots=N, max_slots=N, max-slots=N)
_HOSTFILE_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*=\S*$")


def read_hosts(text: str, opt: str = "--hosts") -> tuple[str, ...]:
    """--hosts a,b,c or @FILE: one node per line, # comments; an mpirun hostfile line
    (`n001 slots=2`) gives its node name, its key=value words are said to be ignored (the
    ranks per node are --ranks-per-node's); anything else after a name is an error."""
    if not text.startswith("@"):
        return tuple(h.strip() for h in text.split(",") if h.strip())
    try:
        lines = Path(text[1:]).read_text().splitlines()
    except OSError as exc:
        raise UsageError(f"{opt} {text}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{opt} {text}: not a text file") from None
    hosts: list[str] = []
    ignored: set[str] = set()
    for i, line in enumerate(lines, 1):
        words = line.split("#")[0].split()
        if not words:
            continue
        extra = words[1:]
        if any(not _HOSTFILE_WORD.match(w) for w in extra) or "=" in words[0]:
            raise UsageError(f"{opt} {text}: line {i} {line.strip()!r}: expected one node "
                             "name per line (optionally an mpirun hostfile's key=value "
                             "words, e.g. 'n001 slots=2')")
        hosts.append(words[0])
        ignored.update(w.split("=")[0] for w in extra)
    if ignored:
        print(f"fabric: note: {opt} {text}: {', '.join(sorted(ignored))} ignored (the "
              "ranks per node are --ranks-per-node's)", file=sys.stderr)
    return tuple(hosts)


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


class ScanStopped(Exception):
    """A stop signal (SIGINT, SIGTERM, SIGHUP) to the driver ended the running launch (its
    process group killed, as the sweep does: pairbench.runner.sweep.StopSignals); raised by
    the scan's loops after the launch's record is saved, never from a signal handler."""

    def __init__(self, launch: str | None, rows: list | None = None) -> None:
        super().__init__(launch or "")
        self.launch = launch
        self.rows = rows  # the ssh scan's rows so far (its data.csv is written from them)


Stop = Callable[[], bool]


def never() -> bool:
    return False


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
