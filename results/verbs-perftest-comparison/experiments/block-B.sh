#!/usr/bin/env bash
set -u
bin=/work/pbbin/pairbench-verbs
dev=$PB_RDMA_DEVICE; gid=$PB_RDMA_GID_INDEX; ip=$PB_RDMA_IP
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
for rep in 1 2 3 4 5; do
  s=4096
  echo "$rep write $s perftest $(pt ib_write_lat -s $s -n 2000)"
  echo "$rep write $s pb-default $(pb --test write_lat -s $s -n 2000 -w 100)"
  echo "$rep write $s pb-I0 $(pb --test write_lat -s $s -n 2000 -w 100 -I 0)"
  echo "$rep write $s pb-t16 $(pb --test write_lat -s $s -n 2000 -w 100 -t 16 -I 0)"
  echo "$rep write $s pb-mtu4096 $(pb --test write_lat -s $s -n 2000 -w 100 --mtu 4096)"
  echo "$rep write $s perftest-m4096 $(pt ib_write_lat -s $s -n 2000 -m 4096)"
done
