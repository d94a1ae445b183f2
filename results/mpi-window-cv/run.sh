#!/bin/bash
# 1-pair MPI bandwidth at the defaults, before (fixed count, -n 1000 -w 100: commit 29cda10)
# and after (one common 0.2 s window, issue 21): 10 repetitions, interleaved (the order
# alternates per repetition), sizes 8 B, 4 KiB, 64 KiB, 1 MiB; load average before each run.
#   OLD=<29cda10 build>/bin/pairbench-mpi NEW=<build>/bin/pairbench-mpi OUT=<dir> bash run.sh
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
: > "$OUT/load.tsv"
for rep in $(seq 1 10); do
  order="old new"; [ $((rep % 2)) = 0 ] && order="new old"
  for v in $order; do
    bin=$OLD; [ "$v" = new ] && bin=$NEW
    printf '%s\t%s\t%s\n' "$rep" "$v" "$(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.tsv"
    mpirun -np 2 --map-by core --bind-to core "$bin" --test bw -s 8,4K,64K,1M -q \
      -o "$OUT/$v-r$rep.csv" 2>> "$OUT/stderr.log" || echo "run $v $rep failed" >> "$OUT/stderr.log"
  done
done
