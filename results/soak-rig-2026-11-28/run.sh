#!/bin/bash
# In the rig (one boot): (1) tests/verbs/vb-soak.sh, timed (the batch's case);
# (2) the results run: write_bw soak of 2 pairs, rxe0's netdev down 3 s into a 10 s soak for 2 s.
REPO=${REPO:-$(cd "$(dirname "$0")/../.." && pwd)}; SRC=$REPO
B=$REPO/build/bin/pairbench-verbs
OUT=$1
mkdir -p $OUT/exp
{ uname -r; nproc; cat /proc/loadavg; } > $OUT/machine.txt
t0=$EPOCHREALTIME
PB_RDMA_DEVICE=rxe0 $SRC/tests/verbs/vb-soak.sh $B > $OUT/batch.log 2>&1
echo "vb-soak rc=$? wall $t0 $EPOCHREALTIME" >> $OUT/batch.log
cat /proc/loadavg >> $OUT/machine.txt
t0=$EPOCHREALTIME
$B -d rxe0 --test write_bw --loopback --pairs 2 --allow-oversubscribe --pin compact -s 1024 -w 10 --tx-depth 16 --cq-mod 1 --soak 10 --bucket 0.2 --series $OUT/exp/s --timeout 30 --counters-series $OUT/exp/c --counters-interval 0.5 -o $OUT/exp/rows.csv 2> $OUT/exp/err.txt &
L=$!
python3 -I -S $SRC/tests/verbs/soak_check.py flap $OUT/exp 3 2 > $OUT/exp/flap.log 2>&1
wait $L; echo "rc=$? wall $t0 $EPOCHREALTIME" > $OUT/exp/rc.txt
python3 -I -S $SRC/tests/verbs/soak_check.py check-flap $OUT/exp > $OUT/exp/check.txt 2>&1; echo "check rc=$?" >> $OUT/exp/rc.txt
cat /proc/loadavg >> $OUT/machine.txt
sleep 5
{ cat /sys/class/infiniband/rxe0/ports/1/state; cat /sys/class/infiniband/rxe0/ports/1/gids/1; ip -br addr show dummy0; } > $OUT/exp/after.txt 2>&1
