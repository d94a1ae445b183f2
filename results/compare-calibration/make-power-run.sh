#!/bin/sh
# (b) power: a latency-only MPI run with many repetitions, so that base and new halves can
# each hold the repetition count `pairbench noise` recommends for catching 10 %.
set -eu
out=results/compare-calibration
py="${PYTHON:-python3}"
echo "load before: $(cat /proc/loadavg)"
flock /tmp/pb-shared.lock env PYTHONPATH="$PWD/scripts" "$py" -m pairbench sweep \
    --layer mpi --test latency --pairs 1 --sizes 8,4K,64K -n 20000 -w 2000 --launcher mpirun \
    --timeout 120 --no-progress --results-dir "$out/power-100reps" --repetitions 100
echo "load after: $(cat /proc/loadavg)"
