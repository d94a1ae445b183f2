#!/usr/bin/env bash
# results/verbs-qps: write_lat and message rate (write_bw, 8 B) vs QP count, run INSIDE
# the Soft-RoCE rig (one boot):
#   scripts/softroce-run --rwdir results/verbs-qps \
#       -- results/verbs-qps/run-in-rig.sh results/verbs-qps
# One pair in loopback on rxe0 (2 workers, each with --qps N QPs: 2N QPs on the device),
# N = 1..1024, three repetitions interleaved (rep-major) so a slow phase of the machine
# does not land on one QP count.  CSVs in OUT/raw/, the VM's load average in OUT/loadavg-vm.txt.
set -u
out=${1:?usage: run-in-rig.sh OUTDIR}
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=$repo/build/bin/pairbench-verbs
mkdir -p "$out/raw"
c=(-d "$PB_RDMA_DEVICE" --loopback --pairs 1 --allow-oversubscribe --pin compact -q --timeout 60)
echo "before $(cat /proc/loadavg)" > "$out/loadavg-vm.txt"
ibv_devinfo -v -d "$PB_RDMA_DEVICE" > "$out/ibv_devinfo.txt" 2>&1
rc=0
for rep in 1 2 3; do
    for q in 1 2 4 8 16 32 64 128 256 512 1024; do
        "$bin" "${c[@]}" --test write_lat --qps $q -s 8 -n 2000 -w 200 -o "$out/raw/r$rep-write_lat-q$q.csv" \
            2>>"$out/raw/stderr.txt" || { echo "write_lat q$q rep $rep failed" >&2; rc=1; }
        "$bin" "${c[@]}" --test write_bw --qps $q -s 8 -n 20000 -w 2000 -o "$out/raw/r$rep-write_bw-q$q.csv" \
            2>>"$out/raw/stderr.txt" || { echo "write_bw q$q rep $rep failed" >&2; rc=1; }
    done
done
echo "after  $(cat /proc/loadavg)" >> "$out/loadavg-vm.txt"
exit $rc
