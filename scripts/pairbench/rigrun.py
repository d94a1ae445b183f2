"""`python -m pairbench.rigrun PLAN`: inside the Soft-RoCE rig, run the sweep plan the host
wrote (`pairbench sweep --launcher softroce`, see sweep.run_softroce). Not a subcommand:
only the host's sweep starts it. Errors and exit codes as `pairbench sweep`'s."""

from __future__ import annotations

import sys
from pathlib import Path

from pairbench.cli import call


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m pairbench.rigrun PLAN.json", file=sys.stderr)
        return 2
    from pairbench.sweep import run_rig_plan  # after the usage check: it imports a lot

    return call("sweep", lambda: run_rig_plan(Path(args[0])))


if __name__ == "__main__":
    sys.exit(main())
