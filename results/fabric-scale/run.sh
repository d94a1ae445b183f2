#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The driver's own work in a fabric scan at K = 1,024 and 4,096 nodes (benchmark, not a
# test), through the simulated fabric (tests/sim/fabric_sim.py stands in for mpirun +
# pairbench-mpi): two tests (latency, bw) x two sizes (8 B, 64 KiB), planted bad nodes and
# cables, 5 % noise, confirmation rounds on (--confirm 2, the default).
# Run from the repository root; the run directories (~0.7 GB at 1,024, ~11 GB at 4,096)
# go to $SCALE_DIR (default /tmp/fabric-scale), one JSON line per K to bench.jsonl.
set -euo pipefail
out=results/fabric-scale
dir=${SCALE_DIR:-/tmp/fabric-scale}
py=${PYTHON:-.venv/bin/python}
{
	echo "date: $(date -u +%FT%TZ)"
	echo "git: $(git rev-parse --short HEAD)"
	echo "machine: $(nproc) CPUs, $(grep MemTotal /proc/meminfo | awk '{print $2/1048576 " GiB"}'), $(uname -sr)"
	echo "loadavg before: $(cat /proc/loadavg)"
} >"$out/conditions.txt"
: >"$out/bench.jsonl"
PB_SIM_SLOW="node0100=3,node0007~node0500=2" PB_SIM_NOISE=0.05 \
	"$py" "$out/bench.py" 1024 "$dir/k1024" >>"$out/bench.jsonl"
PB_SIM_SLOW="node0100=3,node0007~node0500=2,node2222=2,node1234~node3999=2" PB_SIM_NOISE=0.05 \
	"$py" "$out/bench.py" 4096 "$dir/k4096" >>"$out/bench.jsonl"
echo "loadavg after: $(cat /proc/loadavg)" >>"$out/conditions.txt"
