#!/bin/bash
cd /work/main
export PB_NETNS_PREFIX=pbq PB_NETNS_NET=10.218.0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
scripts/netns-nodes up --nodes 32 --degrade node7=20mbit >/tmp/stall/up.log 2>&1 || { echo up failed; exit 1; }
for n in $(seq 1 32); do
  ns=pbq-node$n
  if [ "${FAST_ARP:-0}" = 1 ]; then
    ip netns exec $ns sysctl -q -w net.ipv4.neigh.eth0.base_reachable_time_ms=1000 net.ipv4.neigh.eth0.delay_first_probe_time=1
  fi
  ip netns exec $ns ip monitor neigh > /tmp/stall/neigh-$n.log 2>&1 &
  echo $! >> /tmp/stall/mon.pids
done
H=/tmp/stall/hosts; : > $H; for n in $(seq 1 32); do echo "10.218.0.$n slots=1" >> $H; done
for i in $(seq 1 ${N:-6}); do
  t0=$(date +%s.%N)
  timeout 200 mpirun -np 32 --map-by node --hostfile $H --mca plm_rsh_agent /run/pairbench-two-node-pbq/agent --mca btl tcp,self --mca btl_tcp_if_include 10.218.0.0/24 --mca oob_tcp_if_include 10.218.0.0/24 --mca plm_rsh_no_tree_spawn 1 --oversubscribe --mca mpi_yield_when_idle 1 build/bin/pairbench-mpi --test bw --sizes 65536 --pattern scan --warmup 2 --pin none --timeout 60 --quiet --output /tmp/stall/o3-$i.csv --window 4 --duration 0.2 > /tmp/stall/r3-$i.log 2>&1
  rc=$?
  echo "run $i rc $rc elapsed $(echo "$(date +%s.%N) - $t0" | bc) $(date +%T) rows $(($(wc -l < /tmp/stall/o3-$i.csv 2>/dev/null || echo 1)-1)) load $(cut -d' ' -f1 /proc/loadavg)"
done
kill $(cat /tmp/stall/mon.pids); rm /tmp/stall/mon.pids
scripts/netns-nodes down > /tmp/stall/down.log 2>&1
