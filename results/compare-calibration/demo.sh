#!/bin/sh
# Acceptance demo (issue 10): compare two MPI sweeps of the same configuration made back to
# back (5 repetitions each, make-runs.sh), then the same with one point's latency raised by
# 20 % in a copy of NEW's data.csv, for each latency point in turn. Prints exit codes.
# Argument: the run prefix, demo (5 repetitions, the default) or demo10 (10 repetitions).
set -u
name=${1:-demo}
cd "$(dirname "$0")/../.."
here=results/compare-calibration
py="${PYTHON:-python3}"
base=$(ls -d $here/$name-base/*/ | tail -1)
new=$(ls -d $here/$name-new/*/ | tail -1)
cmp() { PYTHONPATH=scripts "$py" -m pairbench compare "$@"; echo "exit $?"; }
echo "== A/A: $base vs $new"
cmp "$base" "$new"
for size in 8 64 512 4096 32768 65536; do
    slow=$here/$name-new-lat-x1.2-$size
    PYTHONPATH=scripts "$py" $here/plant.py "$new" "$slow" --test latency --size $size --factor 1.2
    echo "== latency at $size B raised by 20 %: $base vs $slow"
    cmp "$base" "$slow" --format markdown
done
