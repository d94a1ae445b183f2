#!/bin/bash
# loop the K=32 real scan; dump stacks when one runs long
cd /work/main
export PB_NETNS_PREFIX=pbq PB_NETNS_NET=10.218.0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
scripts/netns-nodes up --nodes 32 --degrade node7=20mbit >/tmp/stall/up.log 2>&1 || { echo up failed; exit 1; }
for i in $(seq 1 ${N:-12}); do
  H=/tmp/stall/hosts; : > $H; for n in $(seq 1 32); do echo "10.218.0.$n slots=1" >> $H; done
  t0=$(date +%s.%N)
  mpirun -np 32 --map-by node --hostfile $H --mca plm_rsh_agent /run/pairbench-two-node-pbq/agent --mca btl tcp,self --mca btl_tcp_if_include 10.218.0.0/24 --mca oob_tcp_if_include 10.218.0.0/24 --mca plm_rsh_no_tree_spawn 1 --oversubscribe --mca mpi_yield_when_idle 1 build/bin/pairbench-mpi --test bw --sizes 65536 --pattern scan --warmup 2 --pin none --timeout 60 --quiet --output /tmp/stall/out$i.csv --window 4 --duration 0.2 > /tmp/stall/run$i.log 2>&1 &
  mp=$!
  dumped=0
  while kill -0 $mp 2>/dev/null; do
    sleep 2
    el=$(echo "$(date +%s.%N) - $t0" | bc)
    if [ $dumped = 0 ] && [ ${el%.*} -gt 80 ]; then
      dumped=1
      for p in $(pgrep -x pairbench-mpi); do echo "== pid $p $(tr '\0' ' ' </proc/$p/environ | grep -o 'OMPI_COMM_WORLD_RANK=[0-9]*') state $(awk '{print $3}' /proc/$p/stat)"; gdb -p $p -batch -ex 'thread apply all bt 12' 2>/dev/null | grep -E '^#|^Thread'; done > /tmp/stall/stacks$i.txt
    fi
  done
  wait $mp; rc=$?
  echo "run $i rc $rc elapsed $(echo "$(date +%s.%N) - $t0" | bc) rows $(($(wc -l < /tmp/stall/out$i.csv 2>/dev/null || echo 1)-1)) load $(cut -d' ' -f1 /proc/loadavg)"
done
scripts/netns-nodes down > /tmp/stall/down.log 2>&1
