#!/usr/bin/env bash
# Benchmark (not a test): aggregate write_bw of 2 pairs on 2 devices vs 2 pairs on 1 device,
# in ONE Soft-RoCE boot with two devices, repetitions interleaved (A B A B ...).
# Run from the repo root, in a quiet window:
#   \
#     scripts/softroce-run --devices 2 --timeout 700 -- results/verbs-multidevice/run-bench.sh
# Writes raw/<config>-r<k>.csv and .env.json next to this script, and guest-load.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${PB_VERBS_BIN:-$here/../../build/bin/pairbench-verbs}
reps=${REPS:-4}
mkdir -p "$here/raw"
common=(--loopback --test write_bw --pairs 2 -s 4096,65536 -n 500 -w 50 --pin compact
        --allow-oversubscribe --timeout 60 -q)
echo "guest loadavg before: $(cat /proc/loadavg)" >"$here/raw/guest-load.txt"
for k in $(seq 1 "$reps"); do
    for cfg in two-devices one-device; do
        if [ $cfg = two-devices ]; then dev=(-d "$PB_RDMA_DEVICES"); else dev=(-d "${PB_RDMA_DEVICES%%,*}"); fi
        "$bin" "${common[@]}" "${dev[@]}" -o "$here/raw/$cfg-r$k.csv" --env-json "$here/raw/$cfg-r$k.env.json"
        echo "$cfg r$k done" >&2
    done
done
echo "guest loadavg after: $(cat /proc/loadavg)" >>"$here/raw/guest-load.txt"
