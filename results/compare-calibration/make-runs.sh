#!/bin/sh
# The real MPI runs behind results/compare-calibration (one node, shared memory).
# Run from the repository root after building (cmake ... && cmake --build build).
# Each sweep takes the shared-machine lock so that no other timing run overlaps it.
set -eu
out=results/compare-calibration
py="${PYTHON:-python3}"
sweep() {
    flock /tmp/pb-shared.lock env PYTHONPATH="$PWD/scripts" "$py" -m pairbench sweep \
        --layer mpi --test latency,bw --pairs 1 --sizes 8,64,512,4K,32K,64K -n 20000 -w 2000 --launcher mpirun \
        --timeout 120 --no-progress --results-dir "$out/$1" --repetitions "$2"
}
echo "load before: $(cat /proc/loadavg)"
if [ "${1:-all}" = demo10 ]; then   # the second demo: 10 repetitions per side
    sweep demo10-base 10
    sweep demo10-new 10
    echo "load after: $(cat /proc/loadavg)"
    exit 0
fi
sweep aa-10reps 10       # (a) A/A splits and (b) the planted 10 % regression
echo "load: $(cat /proc/loadavg)"
sweep demo-base 5       # acceptance demo: two sweeps made back to back
sweep demo-new 5
echo "load after: $(cat /proc/loadavg)"
