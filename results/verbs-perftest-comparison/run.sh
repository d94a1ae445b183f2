#!/usr/bin/env bash
# Runs INSIDE the Soft-RoCE rig (one boot for both data sets), from a fresh clone after
#   scripts/install-deps && cmake -B build -G Ninja -DPB_WERROR=ON && cmake --build build -j2:
#   scripts/softroce-run -- results/verbs-perftest-comparison/run.sh [BIN_DIR (default: build/bin)]
# REPS (default 3), NLAT, NBW and SWEEP=0 (skip part 2) come from the environment.
# 1. perftest vs pairbench-verbs, single pair, loopback on $PB_RDMA_DEVICE, REPS alternating
#    repetitions: ib_write_lat / ib_read_lat at 8 B and 4 KiB (p50), ib_write_bw at 64 KiB.
# 2. the multi-pair sweep (pairs 1, 2, 4; sizes 1 B .. 1 MiB) into ../verbs-multipair-sweep/.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/build/bin}/pairbench-verbs
out=$root/results/verbs-perftest-comparison
sweep=$root/results/verbs-multipair-sweep
dev=${PB_RDMA_DEVICE:?run me inside scripts/softroce-run}
gid=${PB_RDMA_GID_INDEX:-1}
ip=${PB_RDMA_IP:?}
NLAT=${NLAT:-2000}
NBW=${NBW:-2000}
REPS=${REPS:-3}
SWEEP=${SWEEP:-1}
raw=$out/raw; mkdir -p "$raw"
: > "$raw/perftest.txt"

# perftest server in the background, client here; prints the client's output.
# The emulated VM starts a perftest server slowly: the client retries until it connects.
pt() {
    local tool=$1; shift
    timeout 180 "$tool" -d "$dev" -x "$gid" "$@" >"$raw/srv.txt" 2>&1 &
    local spid=$!
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        sleep 2
        timeout 120 "$tool" -d "$dev" -x "$gid" "$@" "$ip" >"$raw/cli.txt" 2>&1 && break
    done
    cat "$raw/cli.txt" | tee -a "$raw/perftest.txt"
    wait $spid || true
}

{
echo "rep,tool,test,bytes,p50_us,bw_gbit_s,min_us,mean_us"
for rep in $(seq "$REPS"); do
    for s in 8 4096; do
        for t in write read; do
            # perftest columns: #bytes #iterations t_min t_max t_typical(median) t_avg ...
            v=$(pt ib_${t}_lat -s $s -n $NLAT | awk -v s=$s '$1 == s && NF >= 6 { print $5 ",," $3 "," $6 }')
            echo "$rep,perftest,${t}_lat,$s,$v"
            pb=$("$bin" -d "$dev" --loopback -q --test ${t}_lat -s $s -n $NLAT -w 100 \
                 -o "$raw/pb_${t}_lat_${s}_$rep.csv" && \
                 python3 -c "import csv,sys; r=[x for x in csv.DictReader(open(sys.argv[1])) if x['pair_id']=='0'][0]; print(r['lat_us_p50'] + ',,' + r['lat_us_min'] + ',' + r['lat_us_mean'])" \
                 "$raw/pb_${t}_lat_${s}_$rep.csv")
            echo "$rep,pairbench,${t}_lat,$s,$pb"
        done
    done
    v=$(pt ib_write_bw -s 65536 -n $NBW --report_gbits | awk '$1 == 65536 && NF >= 4 { print $4 }')
    echo "$rep,perftest,write_bw,65536,,$v,,"
    "$bin" -d "$dev" --loopback -q --test write_bw -s 64K -n $NBW -w 100 -o "$raw/pb_write_bw_$rep.csv"
    pb=$(python3 -c "import csv,sys; r=[x for x in csv.DictReader(open(sys.argv[1])) if x['pair_id']=='0']; print(r[0]['bw_gbit_s'])" "$raw/pb_write_bw_$rep.csv")
    echo "$rep,pairbench,write_bw,65536,,$pb,,"
done
} > "$out/comparison.csv"
"$bin" -d "$dev" --loopback -q --test write_lat -s 8 -n 10 --env-json "$out/env.json" >/dev/null
ibv_devinfo -v -d "$dev" > "$raw/ibv_devinfo.txt" 2>&1 || true
dpkg-query -W perftest rdma-core > "$raw/versions.txt" 2>/dev/null || true

[ "$SWEEP" = 1 ] || { echo "done: $out/comparison.csv (sweep skipped)"; exit 0; }
# Multi-pair sweep: duration mode, 0.5 s per point.
mkdir -p "$sweep"
rm -f "$sweep/sweep.csv"
for t in write_lat read_lat write_bw; do
    for p in 1 2 4; do
        "$bin" -d "$dev" --loopback -q --allow-oversubscribe --test $t --pairs $p -s 1:1M -D 0.5 -w 20 \
            -o "$sweep/part.csv"
        if [ -f "$sweep/sweep.csv" ]; then tail -n +2 "$sweep/part.csv" >> "$sweep/sweep.csv"; else mv "$sweep/part.csv" "$sweep/sweep.csv"; fi
        rm -f "$sweep/part.csv"
    done
done
for p in 2 4; do
    "$bin" -d "$dev" --loopback -q --allow-oversubscribe --test loaded_lat --pairs $p -s 1:1M -D 0.5 -w 20 \
        -o "$sweep/part.csv"
    tail -n +2 "$sweep/part.csv" >> "$sweep/sweep.csv"; rm -f "$sweep/part.csv"
done
"$bin" -d "$dev" --loopback -q --allow-oversubscribe --test write_bw --pairs 4 -s 8 -n 10 --env-json "$sweep/env.json" >/dev/null
echo "done: $out/comparison.csv $sweep/sweep.csv"
