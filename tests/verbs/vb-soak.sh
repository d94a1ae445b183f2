#!/usr/bin/env bash
# The verbs soak in the rig (issue 36), one run of 2 pairs through the rig's device: read_bw,
# 5 s soak, --validate-live 1, every node's counters over time (--counters-series), and two
# faults planted in different flows:
#  stall    pair 1's client stops polling 1.5 s into the soak for 1 s
#           (PAIRBENCH_SOAK_PAUSE=1:1.5:1, verbs/vb_soak.h): pair 1 has a stall that begins
#           within a bucket of the pause and lasts as long within two buckets, pair 0 no stall
#           with it (stalls below 0.2 x the median: the emulated device is bursty), pair 1's row
#           ok and its checks clean;
#  corrupt  one byte of pair 0's data flipped 0.5 s into the soak
#           (PAIRBENCH_SOAK_FAULT=flip:0:0.5): an error line "DATA CORRUPTED", pair 0's row the
#           corruption error, its series counting the corrupt check; the run exits 1;
#  send     a second run, send_bw: the server checks what it receives; pair 1's byte flipped
#           0.5 s in: pair 1's row the corruption error, the server's -rx series counting it.
# Nothing may be left behind.  A link taken down (results/soak-rig-2026-11-28) is not run here:
# rxe fails the QPs and its GID does not come back, so every later test of the batch would fail.
# usage: vb-soak.sh BINARY      Exit: 0 pass, 1 fail, 77 skip (no RDMA device).
set -u
bin=$1
me="vb-soak"
fail() { echo "$me: FAIL: $*" >&2; exit 1; }
dev=${PB_RDMA_DEVICE:-}
[ -n "$dev" ] || { echo "$me: SKIP: no RDMA device (PB_RDMA_DEVICE unset): run inside scripts/softroce-run" >&2; exit 77; }
work=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$work"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
chk() { python3 -I -S "$here/soak_check.py" "$@"; }
shm0=$(ipcs -m | grep -c '^0x' || true)
# 1 KiB, 16 outstanding, every completion signalled: the emulated device completes a few
# hundred messages a second, so a 0.2 s bucket holds tens of them (not soak_coarse).
PAIRBENCH_SOAK_PAUSE=1:1.5:1 PAIRBENCH_SOAK_FAULT=flip:0:0.5 "$bin" -d "$dev" --loopback \
    --pairs 2 --allow-oversubscribe --pin compact -q -s 1024 -w 10 --tx-depth 16 --cq-mod 1 \
    --test read_bw --soak 5 --bucket 0.2 --stall-fraction 0.2 --validate-live 1 --timeout 30 \
    --series "$work/s" --counters-series "$work/c" --counters-interval 0.5 -o "$work/rows.csv" \
    2>"$work/err"
rc=$?
[ $rc -eq 1 ] || { cat "$work/err" "$work/rows.csv" >&2; fail "pairbench-verbs exited $rc, expected 1 (the corruption)"; }
grep -q "PAIRBENCH_SOAK_PAUSE: not polling" "$work/err" || fail "the pause did not happen"
grep -q "DATA CORRUPTED" "$work/err" || fail "no error line says DATA CORRUPTED"
chk check-corrupt "$work" 0 >&2 || fail "the planted corruption was not found where it should be"
chk check-stop "$work" 0.2 1 1.5 1 >&2 || fail "the stall was not found where it should be"
ls "$work/"c-*.pbcnt.csv >/dev/null 2>&1 || fail "no counters series"
# send_bw: the server receives the data and checks it (--validate-live, verbs/vb_soak.h); one
# byte of pair 1's data flipped 0.5 s into a 3 s soak: the server says it, pair 1's row (the
# client's) is the corruption error, the server's series (-rx) counts the corrupt check, pair
# 0's checks clean.
mkdir -p "$work/send"
PAIRBENCH_SOAK_FAULT=flip:1:0.5 "$bin" -d "$dev" --loopback --pairs 2 --allow-oversubscribe \
    --pin compact -q -s 1024 -w 10 --tx-depth 16 --cq-mod 1 --test send_bw --soak 3 \
    --bucket 0.2 --validate-live 1 --timeout 30 --series "$work/send/s" \
    -o "$work/send/rows.csv" 2>"$work/send/err"
rc=$?
[ $rc -eq 1 ] || { cat "$work/send/err" "$work/send/rows.csv" >&2; fail "send_bw: pairbench-verbs exited $rc, expected 1 (the corruption)"; }
grep -q "DATA CORRUPTED under load (--validate-live, send_bw's receiver)" "$work/send/err" ||
    { cat "$work/send/err" >&2; fail "send_bw: the server did not say DATA CORRUPTED"; }
chk check-corrupt "$work/send" 1 -rx >&2 || fail "send_bw: the planted corruption was not found where it should be"
sleep 0.5
pgrep -x pairbench-verbs >/dev/null && fail "pairbench-verbs processes left behind"
[ "$(ipcs -m | grep -c '^0x' || true)" -le "$shm0" ] || fail "shared-memory segments left behind"
echo "$me: ok" >&2
