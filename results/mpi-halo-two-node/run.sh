#!/bin/bash
# Halo exchange across two emulated nodes (scripts/two-node-netns, needs root): 4 ranks on a
# periodic 2 x 2 grid (2 per node), 4 and 8 neighbours, message size 8 B .. 256 KiB.
# Usage: results/mpi-halo-two-node/run.sh [BUILD_DIR]   (from the repo root)
set -euo pipefail
B=$(realpath "${1:-build}")/bin/pairbench-mpi
D=$(realpath "$(dirname "$0")")
for nb in 4 8; do
	scripts/two-node-netns run --np 4 -- "$B" --test halo --halo-neighbours $nb -s 8:256K \
		-n 50 -w 5 --pin none -q -o "$D/halo-nb$nb.csv" --env-json "$D/halo-nb$nb.env.json"
done
