#!/usr/bin/env python3
"""Run `pairbench ARGS` in this process and print its own peak memory (ru_maxrss of this
process: the driver, not mpirun or the ranks) and wall time on stderr at the end.
usage: PYTHONPATH=scripts .venv/bin/python results/soak-scale/driver_peak.py sweep ..."""

import resource
import sys
import time

from pairbench import cli

t0 = time.monotonic()
try:
    rc = cli.main(sys.argv[1:])
except SystemExit as exc:
    rc = exc.code if isinstance(exc.code, int) else 1
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"driver_peak: pairbench {sys.argv[1]} exit {rc}, {time.monotonic() - t0:.0f} s, "
      f"peak memory of the driver process {peak:.0f} MiB", file=sys.stderr)
sys.exit(rc)
