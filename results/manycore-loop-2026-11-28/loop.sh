#!/bin/bash
# loop.sh: versions of pairbench-mpi's stream receiver beside osu_mbw_mr -W 64, on a many-core
# node: old (9cac33e: receives posted after the ack), new (the tree's HEAD as built for the run:
# the same receiver, slots without a division), b (two windows of receives posted at all times:
# two-windows-receiver.patch); osu = osu_mbw_mr -W 64 at its
# defaults (8 B..1 MiB), osuL = the same with -i 3000 -x 300 (8 B..4 KiB: a window about as long as
# pairbench's). pairbench-mpi --test msgrate at its defaults (one common 0.2 s window per point),
# peer buffer layout (OSU's), sizes 8 B, 1 KiB, 4 KiB, 64 KiB, 1 MiB, at 1, 2, 4, 8 pairs. Per
# repetition and pair count the five run back to back, their order shifted by one every repetition.
# Stops after REPS repetitions or BUDGET seconds, whichever comes first. Raw outputs, load per
# repetition and the binaries' sha256 go into $OUT/loop.tar.gz.
#   OUT=<dir> BUNDLE=<bundle with bin/pairbench-mpi-{old,new,b}> bash loop.sh
set -u
: "${OUT:?set OUT}" "${BUNDLE:?set BUNDLE}"
REPS=${REPS:-24}; BUDGET=${BUDGET:-420}; PAIRS=${PAIRS:-1 2 4 8}; T0=$(date +%s)
. "$BUNDLE/env.sh"
W=$(mktemp -d)/loop; mkdir -p "$W"
NC=$(nproc)
{ echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) nproc $NC"
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Socket|NUMA node\(s\)|MHz'
  sha256sum "$BUNDLE"/bin/pairbench-mpi-* "$BUNDLE/bin/osu_mbw_mr"
  cat "$BUNDLE/BUILDINFO.txt" | head -8; } > "$W/machine.txt" 2>&1
# CMA single copy check (as the kit's preflight): fall back to two copies if the syscall is refused
if ! mpirun -np 2 --map-by core --bind-to core osu_bw -m 65536:65536 -i 10 -x 2 > "$W/pre-cma.txt" 2>&1 \
   || grep -qiE 'errno|process_vm|vader_single_copy' "$W/pre-cma.txt"; then
  export OMPI_MCA_btl_vader_single_copy_mechanism=none; echo "single copy: none (CMA failed)" >> "$W/machine.txt"
else echo "single copy: cma" >> "$W/machine.txt"; fi
S=8,1K,4K,64K,1M
run_pb() { # exe tag P rep
  timeout 60 mpirun -np $((2 * $3)) --map-by core --bind-to core "$1" --test msgrate --pairs "$3" -s $S \
    --buffers peer -q --timeout 30 -o "$W/$2-p$3-r$4.csv" 2>>"$W/err-$2.log" || echo "$2 p$3 r$4 rc=$?" >> "$W/fail.txt"; }
run_osu() { # tag P rep osu-options...
  local tag=$1 p=$2 r=$3; shift 3
  timeout 60 mpirun -np $((2 * p)) --map-by core --bind-to core osu_mbw_mr -W 64 "$@" \
    > "$W/$tag-p$p-r$r.txt" 2>>"$W/err-$tag.log" || echo "$tag p$p r$r rc=$?" >> "$W/fail.txt"; }
runner() { # index P rep
  case $1 in
    0) run_pb "$BUNDLE/bin/pairbench-mpi-old" old "$2" "$3" ;;
    1) run_osu osu "$2" "$3" -m 8:1048576 ;;
    2) run_pb "$BUNDLE/bin/pairbench-mpi-b" b "$2" "$3" ;;
    3) run_osu osuL "$2" "$3" -m 8:4096 -i 3000 -x 300 ;;
    4) run_pb "$BUNDLE/bin/pairbench-mpi-new" new "$2" "$3" ;;
  esac; }
for rep in $(seq 1 "$REPS"); do
  for P in $PAIRS; do
    (( $(date +%s) - T0 > BUDGET )) && break 2
    for i in 0 1 2 3 4; do runner $(( (i + rep) % 5 )) "$P" "$rep"; done
  done
  echo "rep $rep done at $(( $(date +%s) - T0 )) s load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$W/machine.txt"
done
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$W/machine.txt"
tar -czf "$OUT/loop.tar.gz" -C "$(dirname "$W")" loop
tail -3 "$W/machine.txt"; cat "$W/fail.txt" 2>/dev/null | head; ls "$W" | wc -l
