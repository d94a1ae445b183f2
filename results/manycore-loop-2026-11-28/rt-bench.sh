#!/bin/bash
# rt-bench.sh: the receiver versions of pairbench-mpi msgrate (old / a / b) and osu_mbw_mr -W 64 at
# 1 pair on this 2-core machine, ranks under SCHED_FIFO (chrt -f 10) so that other sessions'
# processes cannot take their cores; ONE size per process: a SCHED_FIFO process spinning longer than
# the kernel's RT budget (sched_rt_runtime_us, 0.95 s of every 1 s) is stopped for the rest of
# the second (seen: the last size of a 5-size run lost ~25 %). Order of the four shifted by one per
# size and repetition. pairbench at its defaults (one 0.2 s window), peer buffers (OSU's layout).
#   BUNDLE=<bundle with bin/pairbench-mpi-{old,a,b}> bash rt-bench.sh DIR [REPS]
set -u
: "${BUNDLE:?set BUNDLE}"
. "$BUNDLE/env.sh"
D=$1; REPS=${2:-12}; mkdir -p "$D"; B=$BUNDLE/bin
M=(timeout 60 chrt -f 10 mpirun -np 2 --map-by core --bind-to core)
{ echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"; lscpu | grep -E 'Model name|^CPU\(s\)'
  sha256sum "$B"/pairbench-mpi-* "$B/osu_mbw_mr"; } > "$D/machine.txt"
pb() { # version size rep: rows appended to VERSION-p1-rREP.csv (one header)
  local f=$D/$1-p1-r$3.csv
  "${M[@]}" "$B/pairbench-mpi-$1" --test msgrate -s "$2" --buffers peer -q -o "$D/tmp.csv" 2>>"$D/err.log" || return
  if [ -f "$f" ]; then tail -n +2 "$D/tmp.csv" >> "$f"; else cp "$D/tmp.csv" "$f"; fi; rm -f "$D/tmp.csv"; }
run() { case $1 in
  0) pb old "$2" "$3" ;; 1) pb a "$2" "$3" ;; 2) pb b "$2" "$3" ;;
  3) "${M[@]}" osu_mbw_mr -W 64 -m "$2:$2" 2>>"$D/err.log" | grep -E "^$2 " >> "$D/osu-p1-r$3.txt" ;;
  esac; }
k=0
for rep in $(seq 1 "$REPS"); do
  for s in 8 1024 4096 65536 1048576; do
    for i in 0 1 2 3; do run $(( (i + k) % 4 )) "$s" "$rep"; done; k=$((k + 1))
  done
  echo "rep $rep $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$D/machine.txt"
done
