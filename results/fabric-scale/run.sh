#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The driver's own work in a fabric scan at K = 1,024 .. 8,192 nodes (benchmark, not a
# test), through the simulated fabric (tests/sim/fabric_sim.py stands in for mpirun +
# pairbench-mpi): two tests (latency, bw) x two sizes (8 B, 64 KiB), planted subtle faults
# (a node 1.5x slower, a cable 1.4x slower; two of each from 4,096 nodes, three from 8,192),
# 8 % noise, confirmation rounds on (--confirm 2, the default).
#
#   results/fabric-scale/run.sh K [EXTRA pairbench fabric OPTIONS]
#
# Run from the repository root; the run directory goes to $SCALE_DIR/kK (default
# /tmp/fabric-scale; ~1.5 GB at 4,096 nodes with data.parquet, ~21 GB with data.csv), one
# JSON line to stdout (bench.py's: wall, simulated jobs, driver time, driver CPU time, peak
# RSS, machine, load). PB_BENCH_TREE=DIR measures the code of another tree (an extracted
# commit: `git archive C scripts tests/sim | tar -x -C DIR`), for "before" figures.
# K = 8,192 was run with `--test bw -s 64K` (one test, one size: the simulator alone would
# take hours on two shared cores for all four).
set -euo pipefail
k=${1:?usage: run.sh K [options]}
shift
dir=${SCALE_DIR:-/tmp/fabric-scale}
py=${PYTHON:-.venv/bin/python}
slow="node0100=1.5,node0007~node0500=1.4"
if [ "$k" -ge 4096 ]; then slow="$slow,node2222=1.5,node1234~node3999=1.4"; fi
if [ "$k" -ge 8192 ]; then slow="$slow,node5555=1.5,node4321~node8000=1.4"; fi
PB_SIM_SLOW="$slow" PB_SIM_NOISE=0.08 "$py" results/fabric-scale/bench.py "$k" "$dir/k$k" "$@"
