#!/usr/bin/env bash
# Block I (issue 16): the two ratios of the layouts run whose intervals exclude 1, in one boot.
#  - write_lat 4 KiB (pairbench 6-7 % slower): perftest vs pairbench before the layout work
#    (commit 78a190a, built at $BASE, default = today's peer layout) vs this build in both layouts:
#    is it the new code or the boot?
#  - read_bw 64 KiB (pairbench 7 % faster): perftest vs pairbench --cq-mod 16 (default) and
#    --cq-mod 100 (perftest's moderation at -n >= 100).
# Rotation: the tools' order moves by one place per round.  Runs inside the rig:
#   BASE=/tmp/pv-base/build/bin/pairbench-verbs scripts/softroce-run -- \
#       env BASE=/tmp/pv-base/build/bin/pairbench-verbs results/verbs-perftest-comparison/experiments/block-I.sh
# Output lines: rep test bytes variant value (p50 us or Gbit/s)
set -u
root=$(cd "$(dirname "$0")/../../.." && pwd)
bin=$root/build/bin/pairbench-verbs
base=${BASE:?path of the baseline pairbench-verbs}
dev=$PB_RDMA_DEVICE; gid=${PB_RDMA_GID_INDEX:-1}; ip=$PB_RDMA_IP
REPS=${REPS:-5}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pt() {
    local t=$1; shift
    timeout 120 "ib_$t" -d "$dev" -x "$gid" "$@" >"$tmp/s" 2>&1 & local s=$!
    for _ in $(seq 40); do sleep 0.5; timeout 60 "ib_$t" -d "$dev" -x "$gid" "$@" "$ip" >"$tmp/c" 2>&1 && break; done
    wait $s
    case $t in
    *_lat) awk '$1 ~ /^[0-9]+$/ && NF >= 6 && $2 ~ /^[0-9]+$/ { print $5 }' "$tmp/c" | tail -1;;
    *) awk '$1 ~ /^[0-9]+$/ && NF >= 5 && $2 ~ /^[0-9]+$/ { printf "%.4f\n", $4 * 1048576 * 8 / 1e9 }' "$tmp/c" | tail -1;;
    esac
}
pb() {
    local b=$1 col=$2; shift 2
    "$b" -d "$dev" --loopback -q --pin compact "$@" -o "$tmp/pb.csv" 2>"$tmp/e" || { cat "$tmp/e"; return; }
    python3 -c "import csv,sys; print([r for r in csv.DictReader(open(sys.argv[1])) if r['pair_id']=='0'][0][sys.argv[2]])" "$tmp/pb.csv" "$col"
}
run() {
    case $1 in
    w-perftest) pt write_lat -s 4096 -n 2000;;
    w-base) pb "$base" lat_us_p50 --test write_lat -s 4096 -n 2000 -w 100;;
    w-peer) pb "$bin" lat_us_p50 --test write_lat -s 4096 -n 2000 -w 100 --buffers peer;;
    w-fresh) pb "$bin" lat_us_p50 --test write_lat -s 4096 -n 2000 -w 100 --buffers fresh;;
    r-perftest) pt read_bw -s 65536 -n 1000;;
    r-cq16) pb "$bin" bw_gbit_s --test read_bw -s 64K -n 1000 -w 100 --buffers peer;;
    r-cq100) pb "$bin" bw_gbit_s --test read_bw -s 64K -n 1000 -w 100 --buffers peer --cq-mod 100;;
    esac
}
pt write_lat -s 8 -n 200 >/dev/null
pb "$bin" lat_us_p50 --test write_lat -s 8 -n 200 >/dev/null
W=(w-perftest w-base w-peer w-fresh); R=(r-perftest r-cq16 r-cq100)
for rep in $(seq "$REPS"); do
    for j in 0 1 2 3; do v=${W[$(( (j + rep) % 4 ))]}; echo "$rep write_lat 4096 $v $(run "$v")"; done
    for j in 0 1 2; do v=${R[$(( (j + rep) % 3 ))]}; echo "$rep read_bw 65536 $v $(run "$v")"; done
done
echo "guest loadavg $(cat /proc/loadavg)"
