#!/usr/bin/env bash
# Block H (issue 16, exploration): send_bw / read_bw at 1 MiB, perftest vs pairbench-verbs with
# the window and CQ moderation perftest really uses (it caps -t at -n: "TX depth 32" at -n 32,
# CQ moderation 1).  Runs inside the rig:
#   scripts/softroce-run -- results/verbs-perftest-comparison/experiments/block-H.sh
# Output lines: rep test bytes variant gbit_s
set -u
root=$(cd "$(dirname "$0")/../../.." && pwd)
bin=$root/build/bin/pairbench-verbs
dev=$PB_RDMA_DEVICE; gid=${PB_RDMA_GID_INDEX:-1}; ip=$PB_RDMA_IP
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pt() {
    local t=$1; shift
    timeout 120 "ib_$t" -d "$dev" -x "$gid" "$@" >"$tmp/s" 2>&1 & local s=$!
    for _ in $(seq 40); do sleep 0.5; timeout 60 "ib_$t" -d "$dev" -x "$gid" "$@" "$ip" >"$tmp/c" 2>&1 && break; done
    wait $s
    awk '$1 ~ /^[0-9]+$/ && NF >= 5 && $2 ~ /^[0-9]+$/ { printf "%.4f\n", $4 * 1048576 * 8 / 1e9 }' "$tmp/c" | tail -1
}
pb() {
    "$bin" -d "$dev" --loopback -q --pin compact "$@" -o "$tmp/pb.csv" 2>"$tmp/e" || { cat "$tmp/e"; return; }
    python3 -c "import csv,sys; print([r for r in csv.DictReader(open(sys.argv[1])) if r['pair_id']=='0'][0]['bw_gbit_s'])" "$tmp/pb.csv"
}
for t in write_lat; do pt $t -s 8 -n 200 >/dev/null; done
for rep in 1 2 3; do
  for t in send_bw read_bw; do
    echo "$rep $t 1048576 perftest-n64 $(pt $t -s 1048576 -n 64)"
    echo "$rep $t 1048576 perftest-n256 $(pt $t -s 1048576 -n 256)"
    echo "$rep $t 1048576 pb-peer-n64-t64-cq1 $(pb --test $t -s 1M -n 64 -w 10 -t 64 --cq-mod 1 --buffers peer)"
    echo "$rep $t 1048576 pb-peer-n64 $(pb --test $t -s 1M -n 64 -w 10 --buffers peer)"
    echo "$rep $t 1048576 pb-peer-n256 $(pb --test $t -s 1M -n 256 -w 10 --buffers peer)"
    echo "$rep $t 1048576 pb-peer-n64-w0 $(pb --test $t -s 1M -n 64 -w 0 --buffers peer)"
  done
done
