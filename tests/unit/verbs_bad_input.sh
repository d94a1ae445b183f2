#!/bin/sh
# pairbench-verbs: bad input is refused before any device is touched (no RDMA
# device needed): exit 2, exactly one error line, short enough that its reason
# is visible, and the output target is left as it was.
bin=$1
fail=0
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
long=$(head -c 10240 /dev/zero | tr '\0' '7')
check() { # expected-text args...
	want=$1; shift
	err=$("$bin" --loopback "$@" 2>&1 >/dev/null); rc=$?
	if [ "$rc" -ne 2 ]; then echo "FAIL: $(echo "$*" | cut -c1-80) -> exit $rc (want 2)"; fail=1; fi
	case "$err" in *"$want"*) ;; *) echo "FAIL: $(echo "$*" | cut -c1-80) -> stderr '$(echo "$err" | cut -c1-200)' lacks '$want'"; fail=1 ;; esac
	n=$(printf '%s\n' "$err" | grep -c 'error')
	if [ "$n" -ne 1 ]; then echo "FAIL: $(echo "$*" | cut -c1-80) -> $n error lines"; fail=1; fi
	if [ "${#err}" -gt 300 ]; then echo "FAIL: $(echo "$*" | cut -c1-80) -> a message of ${#err} characters"; fail=1; fi
}
check "--pin-list is used only with --pin list" --pin-list 0,1
check "--pin list needs --pin-list" --pin list
# issue 37: a time option of the default timing beside -n or -D (they would override it)
check "--lat-seconds applies without -n/-D" -n 10 --lat-seconds 1
check "--bw-seconds applies without -n/-D" --test write_bw -D 0.2 --bw-seconds 1
check "--lat-samples applies without -n/-D" -n 10 --lat-samples 50
check "is not 'auto' or an integer" -x "$long"
check "too long" -s "$long"
check "is too large" -s "$(echo "$long" | cut -c1-900)"
check "too long" -s "1,$long"
check "unknown test" --test "$long"
check "is not a number" --timeout "$long"
check "unknown option" "--$long"
check "out of range" --pairs 257
check "is not 'auto' or an integer" -x "$(printf 'a\nb')"
# several devices (-d LIST|all, --pair-devices): syntax is checked before any device is seen
check "is not a device name" -d "rxe0,,rxe1"
check "is not a device name" -d "rxe0;rm"
check "rxe0 is listed twice" -d rxe0,rxe0
check "at most 16 devices" -d a0,a1,a2,a3,a4,a5,a6,a7,a8,a9,a10,a11,a12,a13,a14,a15,a16
check "not with -d all" -d all --pair-devices 0:rxe0
check "pair 1 has no device" --pairs 2 --pair-devices 0:rxe0
check "pair 2 in '2:rxe1' does not exist" --pairs 2 --pair-devices 0:rxe0,2:rxe1
check "pair 0 is mapped twice" --pairs 2 --pair-devices 0:rxe0,0:rxe1
check "rxe1 is not one of -d rxe0" --pairs 2 -d rxe0 --pair-devices 0:rxe0,1:rxe1
check "is not PAIR:DEVICE" --pair-devices rxe0
check "is not PAIR:DEVICE" --pair-devices 0:
mkfifo "$work/fifo"
check "FIFO with no reader" -o "$work/fifo"
[ -p "$work/fifo" ] || { echo "FAIL: the FIFO was replaced"; fail=1; }
check "Is a directory" -o "$work"
check "cannot open --output" -o "$work/missing/out.csv"
check "cannot open --env-json" --env-json "$work/missing/env.json"
# --scan (one round of a fabric scan per launch): checked before any device is touched
printf 'n0\nn1\nn2 slots=1\n' >"$work/hosts"
check "no --server, --connect or --loopback" --scan 1 --scan-hosts "$work/hosts"
check "--scan-hosts goes with --scan" --scan-hosts "$work/hosts"
scheck() { # expected-text args... (a rank of a 3-node job, not --loopback)
	want=$1; shift
	err=$(OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=3 "$bin" "$@" 2>&1 >/dev/null); rc=$?
	n=$(printf '%s\n' "$err" | grep -c 'error')
	case "$rc:$n:$err" in 2:1:*"$want"*) ;; *) echo "FAIL: $* -> exit $rc, $n error lines: $err"; fail=1 ;; esac
}
scheck "needs --scan-hosts" --scan 1
scheck "one round, from 1" --scan 1-2 --scan-hosts "$work/hosts"
scheck "one round, from 1" --scan 0 --scan-hosts "$work/hosts"
scheck "has rounds 1..3" --scan 4 --scan-hosts "$work/hosts"
scheck "cannot open --scan-hosts" --scan 1 --scan-hosts "$work/missing"
scheck "cannot read --scan-hosts $work: Is a directory" --scan 1 --scan-hosts "$work"
scheck "cannot read --pattern-hosts $work: Is a directory" --pattern incast --pattern-hosts "$work" --pairs 2
scheck "put %r in it" --scan 1 --scan-hosts "$work/hosts" -o "$work/out.csv"
printf 'n0\nn1\n' >"$work/hosts2"
scheck "lists 2 nodes: one rank per node" --scan 1 --scan-hosts "$work/hosts2"
err=$(env -u OMPI_COMM_WORLD_RANK -u PMIX_RANK -u SLURM_PROCID "$bin" --scan 1 --scan-hosts "$work/hosts" 2>&1 >/dev/null); rc=$?
case "$rc:$err" in 2:*"no launcher rank"*) ;; *) echo "FAIL: --scan without a rank -> exit $rc: $err"; fail=1 ;; esac
# --pattern (issue 35: one launch per node, the flows from core/pb_pattern.c): refused before
# any device is touched; a node with no flow exits 0 without rows
check "no --scan, --server, --connect or --loopback" --pattern incast --pattern-hosts "$work/hosts"
check "--pattern-hosts goes with --pattern" --pattern-hosts "$work/hosts"
scheck "needs --pattern-hosts" --pattern incast
scheck "unknown --pattern 'ring'" --pattern ring --pattern-hosts "$work/hosts"
scheck "one pattern per launch" --pattern incast/fanout --pattern-hosts "$work/hosts" --pairs 2
scheck "needs at least 2 slots per node (--pairs)" --pattern incast --pattern-hosts "$work/hosts"
scheck "node 3 does not exist" --pattern fanout:3 --pattern-hosts "$work/hosts" --pairs 2
scheck "needs an even number of nodes; the job has 3" --pattern bisection --pattern-hosts "$work/hosts"
scheck "3 rounds; pairbench-verbs runs one round per launch" --pattern scan --pattern-hosts "$work/hosts"
scheck "loaded_lat has its own roles" --test loaded_lat --pairs 2 --pattern incast --pattern-hosts "$work/hosts"
scheck "lists 2 nodes: one rank per node" --pattern incast --pattern-hosts "$work/hosts2" --pairs 2
scheck "put %r in it" --pattern incast --pattern-hosts "$work/hosts" --pairs 2 -o "$work/out.csv"
# --probe (issue 35 item 4): a victim flow into the hub of incast/fanout, during a common window
scheck "--probe goes with --pattern incast|fanout" --probe write_lat
scheck "option --probe: unknown test 'x'" --pattern incast --pattern-hosts "$work/hosts" --pairs 2 --test write_bw --probe x
scheck "--pattern shift:1 has none" --pattern shift:1 --pattern-hosts "$work/hosts" --pairs 2 --test write_bw --probe write_lat
scheck "a ping-pong latency test (write_lat or send_lat)" --pattern incast --pattern-hosts "$work/hosts" --pairs 2 --test write_bw --probe read_lat
scheck "a bandwidth or message-rate test, not --test write_lat" --pattern incast --pattern-hosts "$work/hosts" --pairs 2 --probe write_lat
scheck "not with -n or -D" --pattern incast --pattern-hosts "$work/hosts" --pairs 2 --test write_bw -n 100 --probe write_lat
err=$(OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=3 "$bin" --pattern nodes:0-1 --pattern-hosts "$work/hosts" \
      -o "$work/idle.%r.csv" 2>&1 >/dev/null); rc=$?
case "$rc:$err" in 0:*"has no flow in this pattern"*) ;; *) echo "FAIL: --pattern, an idle node -> exit $rc: $err"; fail=1 ;; esac
[ ! -e "$work/idle.2.csv" ] || { echo "FAIL: an idle node wrote $work/idle.2.csv"; fail=1; }
err=$(env -u OMPI_COMM_WORLD_RANK -u PMIX_RANK -u SLURM_PROCID "$bin" --pattern incast --pattern-hosts "$work/hosts" 2>&1 >/dev/null); rc=$?
case "$rc:$err" in 2:*"no launcher rank"*) ;; *) echo "FAIL: --pattern without a rank -> exit $rc: $err"; fail=1 ;; esac
err=$("$bin" --loopback 2>&1 >&-); rc=$?
case "$rc:$err" in 2:*"stdout is closed"*) ;; *) echo "FAIL: closed stdout -> exit $rc: $err"; fail=1 ;; esac
exit $fail
