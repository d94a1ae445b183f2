#!/bin/bash
# The window issue's many-core check: pairbench-mpi msgrate/bw (peer layout) at the new default
# (one common 0.2 s window), msgrate at the old default (-n 1000 -w 100), and osu_mbw_mr -W 64,
# interleaved, 1/2/4/8 pairs, REPS repetitions, within BUDGET seconds.
set -u
B=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/bundle
. "$B/env.sh"
REPS=${REPS:-6}; BUDGET=${BUDGET:-300}; T0=$(date +%s)
W=$OUT/win; mkdir -p "$W"
{ echo "start $(date -u +%FT%TZ) load $(cat /proc/loadavg)"; nproc; } > "$W/machine.txt"
S=8,4K,64K,1M
for rep in $(seq 1 "$REPS"); do
  for P in 1 2 4 8; do
    N=$((2 * P)); M="mpirun -np $N --map-by core --bind-to core"
    (( $(date +%s) - T0 > BUDGET )) && break 2
    timeout 40 $M pairbench-mpi --test msgrate --pairs $P -s $S --buffers peer -q --timeout 30 -o "$W/mr-window-p$P-r$rep.csv" 2>>"$W/err.log"
    timeout 40 $M osu_mbw_mr -W 64 -m 8:1048576 > "$W/osu-p$P-r$rep.txt" 2>>"$W/err.log"
    timeout 40 $M pairbench-mpi --test msgrate --pairs $P -s $S --buffers peer -q --timeout 30 -n 1000 -w 100 -o "$W/mr-count-p$P-r$rep.csv" 2>>"$W/err.log"
    timeout 40 $M pairbench-mpi --test bw --pairs $P -s $S --buffers peer -q --timeout 30 -o "$W/bw-window-p$P-r$rep.csv" 2>>"$W/err.log"
  done
  echo "rep $rep done at $(( $(date +%s) - T0 )) s load $(cat /proc/loadavg)" >> "$W/machine.txt"
done
echo "end $(date -u +%FT%TZ) load $(cat /proc/loadavg)" >> "$W/machine.txt"
cp "$B/BUILDINFO.txt" "$W/" 2>/dev/null
ls "$W" | wc -l
