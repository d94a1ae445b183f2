"""`--launcher local`: the executable on this host, started directly (verbs: both sides of
every pair through --loopback). The launcher the unit tests run points with."""

from __future__ import annotations

from pairbench.runner.launchers.base import Launcher, Side, main_side


class Local(Launcher):
    name = "local"
    rank = 0

    def sides(self, exe: list[str], pairs: int, raw: str) -> tuple[Side, ...]:
        return main_side(exe + (["--loopback"] if self.cfg.layer == "verbs" else []), raw)


LAUNCHER = Local
