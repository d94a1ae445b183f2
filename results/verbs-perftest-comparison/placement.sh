#!/usr/bin/env bash
# Runs INSIDE the Soft-RoCE rig: does CPU placement explain read_lat's gap to perftest?
#   scripts/softroce-run -- results/verbs-perftest-comparison/placement.sh [BIN_DIR (default: build/bin)]
# REPS alternating repetitions of ib_read_lat -s 8 -n 2000 and pairbench-verbs --test read_lat,
# each unpinned and pinned like pairbench's default in the 2-vCPU guest (client CPU 0, server CPU 1).
# Output: raw/placement.csv (rep,tool,placement,p50_us,min_us,mean_us).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/build/bin}/pairbench-verbs
raw=$root/results/verbs-perftest-comparison/raw
dev=${PB_RDMA_DEVICE:?run me inside scripts/softroce-run}
gid=${PB_RDMA_GID_INDEX:-1}
ip=${PB_RDMA_IP:?}
REPS=${REPS:-3}
mkdir -p "$raw"

# perftest server (prefix $1) in the background, client (prefix $2) here; prints "p50,min,mean".
pt() {
    local srv=$1 cli=$2
    timeout 180 $srv ib_read_lat -d "$dev" -x "$gid" -s 8 -n 2000 >/dev/null 2>&1 &
    local spid=$!
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        sleep 2
        timeout 120 $cli ib_read_lat -d "$dev" -x "$gid" -s 8 -n 2000 "$ip" >"$raw/placement-cli.txt" 2>&1 && break
    done
    wait $spid || true
    awk '$1 == 8 && NF >= 6 { print $5 "," $3 "," $6 }' "$raw/placement-cli.txt"
}
pb() {
    "$bin" -d "$dev" --loopback -q --test read_lat -s 8 -n 2000 -w 100 "$@" -o "$raw/pl.csv"
    python3 -c "import csv,sys; r=[x for x in csv.DictReader(open(sys.argv[1])) if x['pair_id']=='0'][0]; print(r['lat_us_p50'] + ',' + r['lat_us_min'] + ',' + r['lat_us_mean'])" "$raw/pl.csv"
}
{
echo "rep,tool,placement,p50_us,min_us,mean_us"
for rep in $(seq "$REPS"); do
    echo "$rep,perftest,unpinned,$(pt "" "")"
    echo "$rep,perftest,client0-server1,$(pt "taskset -c 1" "taskset -c 0")"
    echo "$rep,pairbench,unpinned,$(pb --pin none)"
    echo "$rep,pairbench,client0-server1,$(pb)"
done
} > "$raw/placement.csv"
rm -f "$raw/pl.csv" "$raw/placement-cli.txt"
cat "$raw/placement.csv"
