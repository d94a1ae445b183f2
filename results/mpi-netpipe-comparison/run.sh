#!/bin/bash
# pairbench-mpi vs NetPIPE (NPopenmpi) over shared memory, 1 pair, one node.
# Usage: results/mpi-netpipe-comparison/run.sh [BUILD_DIR] [RUNS]   (from the repo root)
set -euo pipefail
B=${1:-build}/bin/pairbench-mpi
R=${2:-5}
OUT=$(dirname "$0")/raw
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for r in $(seq 1 "$R"); do
	# Interleaved, so machine load hits both tools alike.
	mpirun -np 2 NPopenmpi -l 8 -u 8 -p 0 -o "$OUT/np-lat8-$r.out" >/dev/null 2>&1
	mpirun -np 2 NPopenmpi -s -l 1048576 -u 1048576 -p 0 -o "$OUT/np-stream1m-$r.out" >/dev/null 2>&1
	mpirun -np 2 NPopenmpi -l 1048576 -u 1048576 -p 0 -o "$OUT/np-pp1m-$r.out" >/dev/null 2>&1
	mpirun -np 2 "$B" --test latency -s 8,1M -n 10000 -w 1000 -q -o "$OUT/pb-lat-$r.csv" 2>/dev/null
	mpirun -np 2 "$B" --test bw -s 1M -n 2000 -w 200 --window 8 -q -o "$OUT/pb-bw1m-$r.csv" 2>/dev/null
done
python3 "$(dirname "$0")/summarize.py" "$OUT" "$R" | tee "$(dirname "$0")/summary.txt"
