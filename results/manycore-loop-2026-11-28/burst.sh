#!/bin/bash
# burst.sh: is the 1 KiB / 4 KiB gap to osu_mbw_mr at 2 and 4 pairs a per-message cost or the length
# of what is timed? osu_mbw_mr -W 64 at its defaults times 100 windows (6,400 messages per pair:
# about 1-3 ms at these sizes); pairbench-mpi msgrate at its default times one 0.2 s window. Here,
# interleaved, order shifted per repetition: pairbench at its default (new), pairbench with a 5 ms
# window (-D 0.005: new5ms), osu_mbw_mr at its defaults (osu) and with -i 3000 (osuL: about as long
# as pairbench's window); RUNNERS="0 1 4": new, osu and osu_mbw_mr built outside the tree with its
# three per-window MPI_Barrier calls removed (osuNB: a diagnostic, bin/osu_mbw_mr_nobarrier). Peer layout, sizes 1 KiB and 4 KiB, 2 and 4 pairs.
#   OUT=<dir> BUNDLE=<bundle with bin/pairbench-mpi-new> bash burst.sh
set -u
: "${OUT:?set OUT}" "${BUNDLE:?set BUNDLE}"
REPS=${REPS:-40}; BUDGET=${BUDGET:-170}; T0=$(date +%s)
read -r -a RL <<< "${RUNNERS:-0 1 2 3}"   # which runners (indices of run()), order shifted per repetition
. "$BUNDLE/env.sh"
W=$(mktemp -d)/burst; mkdir -p "$W"
{ echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) nproc $(nproc)"
  sha256sum "$BUNDLE/bin/pairbench-mpi-new" "$BUNDLE/bin/osu_mbw_mr"; } > "$W/machine.txt" 2>&1
M() { timeout 60 mpirun -np $((2 * $1)) --map-by core --bind-to core "${@:2}"; }
run() { # index P rep
  case $1 in
    0) M "$2" "$BUNDLE/bin/pairbench-mpi-new" --test msgrate --pairs "$2" -s 1K,4K --buffers peer -q --timeout 30 -o "$W/new-p$2-r$3.csv" 2>>"$W/err.log" ;;
    1) M "$2" osu_mbw_mr -W 64 -m 1024:4096 > "$W/osu-p$2-r$3.txt" 2>>"$W/err.log" ;;
    2) M "$2" "$BUNDLE/bin/pairbench-mpi-new" --test msgrate --pairs "$2" -s 1K,4K --buffers peer -q --timeout 30 -D 0.005 -o "$W/new5ms-p$2-r$3.csv" 2>>"$W/err.log" ;;
    3) M "$2" osu_mbw_mr -W 64 -m 1024:4096 -i 3000 -x 300 > "$W/osuL-p$2-r$3.txt" 2>>"$W/err.log" ;;
    4) M "$2" osu_mbw_mr_nobarrier -W 64 -m 1024:4096 > "$W/osuNB-p$2-r$3.txt" 2>>"$W/err.log" ;;
  esac || echo "run $1 p$2 r$3 rc=$?" >> "$W/fail.txt"; }
for rep in $(seq 1 "$REPS"); do
  for P in 2 4; do
    (( $(date +%s) - T0 > BUDGET )) && break 2
    for i in "${!RL[@]}"; do run "${RL[$(( (i + rep) % ${#RL[@]} ))]}" "$P" "$rep"; done
  done
  echo "rep $rep done at $(( $(date +%s) - T0 )) s load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$W/machine.txt"
done
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$W/machine.txt"
tar -czf "$OUT/burst.tar.gz" -C "$(dirname "$W")" burst
tail -3 "$W/machine.txt"; head -5 "$W/fail.txt" 2>/dev/null
