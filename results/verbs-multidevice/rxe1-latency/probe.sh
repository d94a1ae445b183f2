#!/usr/bin/env bash
# exploratory: inside the rig with --devices 2
cd "$(dirname "$0")/../../.."
B=build/bin/pairbench-verbs
echo "== env"; env | grep ^PB_ | sort
echo "== rdma link"; rdma link show
echo "== ip"; ip -br addr; ip route; ip -6 route 2>/dev/null | head
for d in dummy0 dummy1; do echo "== $d mtu $(cat /sys/class/net/$d/mtu) features"; ethtool -k $d 2>/dev/null | grep -i -E "checksum|scatter|segmentation" | head -6; done
for r in rxe0 rxe1; do echo "== $r gids"; for i in 0 1 2 3; do echo "$i $(cat /sys/class/infiniband/$r/ports/1/gids/$i 2>/dev/null) $(cat /sys/class/infiniband/$r/ports/1/gid_attrs/types/$i 2>/dev/null) $(cat /sys/class/infiniband/$r/ports/1/gid_attrs/ndevs/$i 2>/dev/null)"; done; cat /sys/class/infiniband/$r/ports/1/state; done
echo "== cpus $(nproc); load $(cat /proc/loadavg)"
for r in rxe0 rxe1 rxe0 rxe1; do
  ip=$( [ $r = rxe0 ] && echo 10.99.0.1 || echo 10.98.0.1 )
  echo "== write_lat on $r alone"
  PB_RDMA_IP=$ip timeout 120 $B -d $r --loopback --test write_lat -s 8,4096 -n 2000 -w 100 --pin compact --allow-oversubscribe -q -o /tmp/wl-$r.csv --timeout 30; echo "exit $?"
  python3 -c "import csv; [print(r['device'],r['msg_size_bytes'],r['pair_id'],r['lat_us_p50'],r['lat_us_p99'],r['port_addr']) for r in csv.DictReader(open('/tmp/wl-$r.csv'))]"
done
echo "== write_lat -d all 2 pairs"
timeout 120 $B -d all --loopback --test write_lat --pairs 2 -s 8 -n 2000 -w 100 --pin compact --allow-oversubscribe -o /tmp/wl-all.csv --timeout 30; echo "exit $?"
python3 -c "import csv; [print(r['device'],r['scope'],r['pair_id'],r['lat_us_p50'],r['lat_us_p99']) for r in csv.DictReader(open('/tmp/wl-all.csv'))]"
echo "== ctest multidev"
ctest --test-dir build -R multidev --output-on-failure 2>&1 | tail -40
echo "== load $(cat /proc/loadavg)"
