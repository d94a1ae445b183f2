"""The launchers: how the executables are started, one file per launcher behind one
interface (base.Launcher), found by name in a registry built from this folder's files. A new
launcher is one new file here that defines a Launcher subclass and names it LAUNCHER; the
sweep's and the fabric scan's `--launcher` choices, the planner and the run loops pick it
up from the registry (nothing else lists the launchers).

May import: what pairbench.runner may (the standard library, errors, io, contract) and
pairbench.runner itself, but only lazily from a launcher's run_plan (the rig runs the
sweep's loop inside its VM).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from pairbench.errors import UsageError
from pairbench.runner.launchers.base import Launcher


@cache
def registry() -> dict[str, type[Launcher]]:
    """Name -> launcher class, for every module of this package but base, in the order of
    their `rank` (the order of the --launcher choices)."""
    found: list[type[Launcher]] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        cls = getattr(module, "LAUNCHER", None)
        if cls is None or not issubclass(cls, Launcher):
            raise ImportError(f"{module.__name__} defines no LAUNCHER (a Launcher subclass)")
        found.append(cls)
    return {c.name: c for c in sorted(found, key=lambda c: (c.rank, c.name))}


def names(pred: object = None) -> tuple[str, ...]:
    """The launchers' names (those for which pred(cls) is true)."""
    return tuple(n for n, c in registry().items() if pred is None or pred(c))  # type: ignore[operator]


def get(cfg: object) -> Launcher:
    """The launcher cfg.launcher names, for cfg (a SweepConfig or FabricConfig)."""
    name = getattr(cfg, "launcher", None)
    cls = registry().get(str(name))
    if cls is None:
        raise UsageError(f"unknown launcher {name!r} (one of {', '.join(registry())})")
    return cls(cfg)
