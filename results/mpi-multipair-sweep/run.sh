#!/bin/bash
# Multi-pair sweep on one node (shared memory): pairs 1, 2; sizes 1 B .. 4 MiB; latency and bw.
# Usage: results/mpi-multipair-sweep/run.sh [BUILD_DIR]   (from the repo root)
set -euo pipefail
B=${1:-build}/bin/pairbench-mpi
D=$(dirname "$0")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for p in 1 2; do
	np=$((2 * p))
	mpirun --oversubscribe -np $np "$B" --test latency -s 1:4M -n 1000 -w 100 --pairs $p \
		--allow-oversubscribe -q -o "$D/latency-p$p.csv" --env-json "$D/latency-p$p.env.json"
	mpirun --oversubscribe -np $np "$B" --test bw -s 1:4M -n 500 -w 50 --window 8 --pairs $p \
		--allow-oversubscribe -q -o "$D/bw-p$p.csv" --env-json "$D/bw-p$p.env.json"
done
