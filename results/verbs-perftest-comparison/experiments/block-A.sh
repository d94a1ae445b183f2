#!/usr/bin/env bash
# A/B inside one rig boot: perftest vs pairbench variants, write_lat/read_lat 4 KiB and 8 B.
set -u
bin=/work/main/build/bin/pairbench-verbs
dev=$PB_RDMA_DEVICE; gid=$PB_RDMA_GID_INDEX; ip=$PB_RDMA_IP
REPS=${REPS:-4}
pt() {
    local tool=$1; shift
    timeout 180 "$tool" -d "$dev" -x "$gid" "$@" >/tmp/srv.txt 2>&1 &
    local spid=$!
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        sleep 2
        timeout 120 "$tool" -d "$dev" -x "$gid" "$@" "$ip" >/tmp/cli.txt 2>&1 && break
    done
    wait $spid
    awk '$1 ~ /^[0-9]+$/ && NF >= 6 { print $5, $3, $6 }' /tmp/cli.txt
}
pb() {
    "$bin" -d "$dev" --loopback -q "$@" -o /tmp/pb.csv >/dev/null 2>&1 &&
    python3 -c "import csv; r=[x for x in csv.DictReader(open('/tmp/pb.csv')) if x['pair_id']=='0'][0]; print(r['lat_us_p50'], r['lat_us_min'], r['lat_us_mean'])"
}
for rep in $(seq $REPS); do
  for t in write read; do
    for s in ${SIZES:-4096}; do
      echo "$rep $t $s perftest $(pt ib_${t}_lat -s $s -n 2000)"
      echo "$rep $t $s pb-default $(pb --test ${t}_lat -s $s -n 2000 -w 100)"
      echo "$rep $t $s pb-cqmod100 $(pb --test ${t}_lat -s $s -n 2000 -w 100 -t 128 --cq-mod 100)"
      echo "$rep $t $s pb-pin-none $(pb --test ${t}_lat -s $s -n 2000 -w 100 --pin none)"
      echo "$rep $t $s pb-perftest-cm $(pt ib_${t}_lat -s $s -n 2000 -R)"
    done
  done
done
