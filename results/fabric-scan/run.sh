#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The fabric-scan benchmark (not a test): pairbench fabric on K emulated nodes.
#   1. wall time of a scan (latency 8 B + bandwidth 64 KiB) for K = 2, 4, 6, 8
#   2. the matrix and heatmap of a 6-node scan with node4's link limited to 20 Mbit/s
# Run from the repository root as root, in one quiet window:
#   results/fabric-scan/run.sh
set -euo pipefail
out=results/fabric-scan
export PB_NETNS_PREFIX=pbq PB_NETNS_NET=10.217.0
net=scripts/netns-nodes
py=${PYTHON:-/work/main/.venv/bin/python}
export PYTHONPATH=$PWD/scripts
trap '$net down >/dev/null 2>&1 || true' EXIT
{
	echo "date: $(date -u +%FT%TZ)"
	echo "git: $(git rev-parse --short HEAD)"
	echo "loadavg before: $(cat /proc/loadavg)"
} >"$out/conditions.txt"
scan() {  # K DIR [netns options...]
	local k=$1 dir=$2; shift 2
	local hosts t0 t1
	hosts=$(seq -s, -f "$PB_NETNS_NET.%g" 1 "$k")
	$net up --nodes "$k" "$@"
	t0=$(date +%s.%N)
	"$py" -m pairbench fabric --hosts "$hosts" --pin none --test latency,bw -s 8,64K \
		-n 100 -w 5 --timeout 120 --results-dir "$out/$dir" \
		--launcher-args "$($net mca-args | tr '\n' ' ') --oversubscribe" \
		--exe-args "--window 4 --duration 0.3" >"$out/$dir.stdout" 2>"$out/$dir.stderr"
	t1=$(date +%s.%N)
	$net down
	echo "$k,$dir,${*:-none},$(echo "$t1 - $t0" | bc)" >>"$out/walltime.csv"
}
mkdir -p "$out/runs"
echo "nodes,run,netns_options,wall_s" >"$out/walltime.csv"
for k in 2 4 6 8; do scan "$k" "runs/k$k"; done
scan 6 runs/k6-degraded --degrade node4=20mbit
echo "loadavg after: $(cat /proc/loadavg)" >>"$out/conditions.txt"
