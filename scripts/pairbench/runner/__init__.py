"""What runs the executables: the executable's option table (options), the pure planner
(plan), the launchers (launchers/: one file per launcher behind one interface), running a
point as a process group (run), turning its output into rows (collect), the run directory
(rundir), the sweep and fabric-scan loops (sweep, scan), progress, the machine's
fingerprint, the fabric schedule (schedule) and the rounds of `--repetitions auto`
(autoreps: the decision itself is handed in by the caller, from analysis/).

May import: the standard library, `pairbench.errors`, `pairbench.io`, `pairbench.contract`.
Never pandas or matplotlib, never analysis/ or present/: the runner runs inside the
Soft-RoCE rig's VM, where importing pandas alone costs about a minute
(tests/python/test_layout.py enforces it).
"""
