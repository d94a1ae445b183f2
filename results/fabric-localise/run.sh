#!/bin/sh
# K = 1,024 through the simulator: a 2-level fat tree (32 leaves x 32 nodes, 32 spines),
# D-mod-K routes, a bad leaf-spine cable, a bad spine port and a bad node cable planted at
# once (each 2x slower); a full scan or a cover plan (bw 64K, no confirmation rounds),
# then localisation.
# Usage: results/fabric-localise/run.sh OUTDIR [PLAN]   (from the repository root;
# PLAN e.g. cover:3, default the full scan)
set -eu
out=${1:?OUTDIR}
plan=${2:-full}
mkdir -p "$out"
repo=$(pwd)
py="$repo/.venv/bin/python"
"$py" -c "import sys; sys.path.insert(0, 'tests/sim'); from fattree import write_fat_tree; \
write_fat_tree('$out/tree.csv', 32, 32, 32)"
printf '#!/bin/sh\nexec %s %s "$@"\n' "$py" "$repo/tests/sim/fabric_sim.py" > "$out/sim.sh"
chmod +x "$out/sim.sh"
hosts=$(seq -f 'n%04g' 0 1023 | paste -sd,)
export PB_SIM_CABLES="$out/tree.csv" PB_SIM_NOISE=0.05
export PB_SIM_FAULTS="leaf3:35~spine3:3=2,spine7:9=2,n0100=2"
/usr/bin/time -v "$py" -m pairbench fabric --launcher mpirun --launcher-cmd "$out/sim.sh" \
  --binary "$py" --hosts "$hosts" --test bw -s 64K --confirm 0 --results-dir "$out" \
  --cables "$out/tree.csv" --plan "$plan" > "$out/stdout.txt" 2> "$out/stderr.txt"
