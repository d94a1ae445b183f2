#!/usr/bin/env bash
set -u
dev=$PB_RDMA_DEVICE; gid=$PB_RDMA_GID_INDEX; ip=$PB_RDMA_IP
bin=/work/main/build/bin/pairbench-verbs
pt() {  # $1 = client cpu, $2 = server cpu
    local cc=$1 sc=$2; shift 2
    local tool=$1; shift
    timeout 180 taskset -c $sc "$tool" -d "$dev" -x "$gid" "$@" >/tmp/srv.txt 2>&1 &
    local spid=$!
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        sleep 2
        timeout 120 taskset -c $cc "$tool" -d "$dev" -x "$gid" "$@" "$ip" >/tmp/cli.txt 2>&1 && break
    done
    wait $spid
    awk '$1 ~ /^[0-9]+$/ && NF >= 6 { print $5, $3, $6 }' /tmp/cli.txt
}
pb() {
    "$bin" -d "$dev" --loopback -q "$@" -o /tmp/pb.csv >/dev/null 2>&1 &&
    python3 -c "import csv; r=[x for x in csv.DictReader(open('/tmp/pb.csv')) if x['pair_id']=='0'][0]; print(r['lat_us_p50'], r['lat_us_min'], r['lat_us_mean'])"
}
for rep in 1 2 3 4 5; do
  for ts in "write 4096" "write 8"; do
    set -- $ts; t=$1; s=$2
    echo "$rep $t $s perftest-c0s1 $(pt 0 1 ib_${t}_lat -s $s -n 2000)"
    echo "$rep $t $s pb-cqmod16 $(pb --test ${t}_lat -s $s -n 2000 -w 100)"
    echo "$rep $t $s pb-cqmod1 $(pb --test ${t}_lat -s $s -n 2000 -w 100 --cq-mod 1)"
  done
done
