#!/bin/sh
# Issue 22: `sweep --repetitions auto` on real MPI runs (one node, shared memory), then the
# gate. From the repository root, after building into BUILD (default /tmp/build-gate):
#   base: peer layout, repetitions until its noise can show a change of twice the threshold;
#   aa:   the same configuration, repetitions until every point is decided against base;
#   aa-p50: the same, deciding (and comparing) p50 latency only (auto-demo-p50.toml);
#   fresh: --buffers fresh (a real difference: fresh 1.49x peer at 4 KiB, docs/mpi.md)
#          against base relabelled 'fresh' (compare refuses to compare layouts; the
#          relabelling is what makes it a planted change of the same point).
# Every sweep takes the shared-machine lock. Prints each compare's exit code.
set -u
here=results/compare-calibration/auto-demo
py="${PYTHON:-.venv/bin/python}"
bin="${BUILD:-/tmp/build-gate}/bin/pairbench-mpi"
sweep() {
    out=$1; shift
    echo "== load $(cat /proc/loadavg)"
    flock /tmp/pb-shared.lock env PYTHONPATH="$PWD/scripts" "$py" -m pairbench sweep \
        --layer mpi --test latency --pairs 1 --sizes 8,4K --launcher mpirun --binary "$bin" \
        --timeout 60 --no-progress --results-dir "$here/$out" "$@" 2>&1 | grep -v '^/'
}
cmp() { PYTHONPATH=scripts "$py" -m pairbench compare "$@"; echo "exit $?"; }
mkdir -p "$here"
sweep base --exe-arg=--buffers=peer --repetitions auto:10
base=$(ls -d $here/base/*/ | tail -1)
sweep aa --exe-arg=--buffers=peer --repetitions auto:20 --baseline "$base"
echo "== A/A: compare $base $(ls -d $here/aa/*/ | tail -1)"
cmp "$base" "$(ls -d $here/aa/*/ | tail -1)"
th=results/compare-calibration/auto-demo-p50.toml
sweep aa-p50 --exe-arg=--buffers=peer --repetitions auto:20 --baseline "$base" --thresholds $th
echo "== A/A, p50 gate: compare $base $(ls -d $here/aa-p50/*/ | tail -1) --thresholds $th"
cmp "$base" "$(ls -d $here/aa-p50/*/ | tail -1)" --thresholds $th
PYTHONPATH=scripts "$py" - "$base" "$here/base-relabeled-fresh.csv" <<'PY'
import sys
from pathlib import Path
from pairbench.schema import read_csv_text
raw = read_csv_text(Path(sys.argv[1]) / "data.csv")
raw["buffers"] = raw["buffers"].replace("peer", "fresh")
raw.to_csv(sys.argv[2], index=False)
PY
sweep fresh --exe-arg=--buffers=fresh --repetitions auto:20 --baseline "$here/base-relabeled-fresh.csv"
echo "== planted: compare base (relabelled) $(ls -d $here/fresh/*/ | tail -1)"
cmp "$here/base-relabeled-fresh.csv" "$(ls -d $here/fresh/*/ | tail -1)"
echo "== load $(cat /proc/loadavg)"
