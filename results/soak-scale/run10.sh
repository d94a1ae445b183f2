#!/bin/sh
# The 10-minute soak at 8 pairs (issue 36): pairbench-mpi bw 64 KiB, 8 pairs = 16 ranks on
# this 2-core machine (oversubscribed 8x, shared with other sessions), through mpirun on the
# local node (the local launcher starts one process: the MPI layer needs mpirun), 0.1 s buckets.
# Prints the load before and after, the series files' size while it runs, soak.parquet's size,
# and the driver's own peak memory (driver_peak.py).
# usage: results/soak-scale/run10.sh BUILD_BIN_DIR OUT_DIR [SECONDS]
set -eu
bin=$1; out=$2; secs=${3:-600}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) cpus $(nproc)"
( sleep $((secs - 30)); echo "series files at $((secs - 30)) s: $(du -cb "$out"/*/soak/*.pbsoak 2>/dev/null | tail -1 | cut -f1) bytes, $(ls "$out"/*/soak/*.pbsoak 2>/dev/null | wc -l) files; load $(cut -d' ' -f1-3 /proc/loadavg)" ) &
PYTHONPATH=scripts .venv/bin/python results/soak-scale/driver_peak.py sweep --layer mpi \
  --test bw --sizes 64K --pairs 8 --soak "$secs" --bucket 0.1 --launcher mpirun \
  --allow-oversubscribe --pin none --timeout 120 --binary "$bin/pairbench-mpi" \
  --results-dir "$out" --no-progress
wait
run=$(ls -d "$out"/*/ | tail -1)
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
ls -l "$run/soak.parquet"
