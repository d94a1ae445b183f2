#!/bin/bash
cd /tmp/segv
export PB_NETNS_PREFIX=pbz PB_NETNS_NET=10.214.0 PB_SLURM_PORT=6957
eval "$(/work/main/scripts/slurm-emulated env)"
ulimit -c unlimited
for i in $(seq 1 ${N:-12}); do
  t0=$(date +%s.%N)
  timeout 120 srun -N 4 -n 4 --ntasks-per-node=1 --nodelist /tmp/segv/hosts ${KOBE:-} --mpi=pmix /work/main/build/bin/pairbench-mpi --test ${T:-bw} --sizes 8,65536 --pattern scan --iterations 20 --warmup 2 --pin none --timeout 20 --startup-timeout 30 --quiet --output /tmp/segv/o$i.csv --env-json /tmp/segv/e$i.json > /tmp/segv/r$i.log 2>&1
  rc=$?
  echo "run $i rc $rc $(echo "$(date +%s.%N) - $t0" | bc | cut -c1-5) s segv=$(grep -c 'Segmentation' /tmp/segv/r$i.log) cores=$(ls /tmp/segv/core* 2>/dev/null | wc -l)"
done
