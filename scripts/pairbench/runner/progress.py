"""Progress with an ETA: a rich bar on a terminal, one plain line per point otherwise
(e.g. inside the Soft-RoCE rig, where stderr is a pipe)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType

SOAK_LINE_S = 60.0  # a soak's progress line, without a terminal


class SweepProgress:
    def __init__(self, total: int, enabled: bool = True) -> None:
        self.total = total
        self.done = 0
        self.enabled = enabled
        self.start = time.monotonic()
        self._rich = None
        self._task = None
        if enabled and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._rich = Progress(TextColumn("{task.description}"), BarColumn(),
                                  MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
                                  TimeRemainingColumn(), console=Console(stderr=True))

    def __enter__(self) -> SweepProgress:
        if self._rich is not None:
            self._rich.start()
            self._task = self._rich.add_task("sweep", total=self.total)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._rich is not None:
            self._rich.stop()

    def eta_s(self) -> float | None:
        if self.done == 0:
            return None
        per_point = (time.monotonic() - self.start) / self.done
        return per_point * (self.total - self.done)

    def soak_tick(self, label: str, point: object) -> Callable[[float], None]:
        """A soak point's progress while it runs (run_point's tick): elapsed of the point's
        planned time (its window at every size) and the ETA of the whole sweep, from the
        points left at the same planned length; a line every SOAK_LINE_S without a terminal."""
        planned = float(getattr(point, "soak_s", 0.0)) * len(getattr(point, "sizes", ()))
        last = [0.0]

        def tick(elapsed: float) -> None:
            left = max(0.0, planned - elapsed) + planned * (self.total - self.done - 1)
            text = (f"{label}: soak {min(elapsed, planned):.0f} of {planned:.0f} s, "
                    f"ETA {left:.0f} s")
            if self._rich is not None and self._task is not None:
                self._rich.update(self._task, description=text)
            elif self.enabled and elapsed - last[0] >= SOAK_LINE_S:
                last[0] = elapsed
                print(text, file=sys.stderr, flush=True)
        return tick

    def starting(self, label: str) -> None:
        if self._rich is not None and self._task is not None:
            self._rich.update(self._task, description=label)

    def finished(self, label: str, status: str, elapsed_s: float) -> None:
        self.done += 1
        if not self.enabled:
            return
        if self._rich is not None and self._task is not None:
            self._rich.update(self._task, advance=1)
            if status != "ok":
                self._rich.console.print(f"{label}: {status}")
            return
        eta = self.eta_s()
        eta_s = f", ETA {eta:.0f} s" if eta is not None and self.done < self.total else ""
        print(f"[{self.done}/{self.total}] {label}: {status} ({elapsed_s:.1f} s{eta_s})",
              file=sys.stderr, flush=True)
