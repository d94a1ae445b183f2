#!/usr/bin/env bash
# pairbench-verbs on several devices (issue 13); run by ctest (label verbs) inside the
# Soft-RoCE rig booted with two devices:
#   scripts/softroce-run --devices 2 -- ctest --test-dir build -L verbs
# usage: vb-multidev.sh CASE BINARY [ARGS...]
#   rows TEST PAIRS   -d all: rows naming both devices, one aggregate per device and the node's,
#                     each consistent with its pair rows (rowcheck); --env-json lists both
#   validate          --validate and --validate-selftest over -d all (pairs on both devices)
#   pairdev           --pair-devices maps pairs explicitly (pair 0 on the second device)
#   baddev            unknown names in -d lists and --pair-devices: exit 2, the name and the
#                     devices present in the message
# Exit: 0 pass, 1 fail, 77 skip (fewer than two RDMA devices: not the two-device rig).
set -u
case_=$1; bin=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
me="vb-multidev $case_"
fail() { echo "$me: FAIL: $*" >&2; exit 1; }
work=$(mktemp -d) || fail "mktemp"
# py, check_rows (one checker process for the whole batch)
. "$(dirname "$0")/vb-common.sh"
trap 'rm -rf "$work"' EXIT

IFS=, read -r -a devs <<<"${PB_RDMA_DEVICES:-}"
if [ "${#devs[@]}" -lt 2 ]; then
    echo "$me: SKIP: needs two RDMA devices (PB_RDMA_DEVICES='${PB_RDMA_DEVICES:-}'): run inside scripts/softroce-run --devices 2" >&2
    exit 77
fi
# --pin compact: Soft-RoCE has no PCI locality (placement near a device list: tests/unit/test_pin.c)
common=(--timeout 30 --allow-oversubscribe --pin compact --loopback)

case $case_ in
rows)
    test=$1; pairs=$2
    n=20; [ "$pairs" -ge 4 ] && n=10
    sizes=1,4096,65536
    timeout 240 "$bin" "${common[@]}" -q -d all --test "$test" --pairs "$pairs" -s $sizes -n $n -w 3 \
        -o "$work/rows.csv" --env-json "$work/env.json" || fail "$test pairs=$pairs -d all exited $?"
    # rows (rowcheck), then the device columns: pair p on device p mod 2, a node aggregate and one
    # per device at every size, --env-json listing both (check_rows.py --devices)
    check_rows --binary "$bin" --csv "$work/rows.csv" --test "$test" --pairs "$pairs" \
        --sizes $sizes --devices "${PB_RDMA_DEVICES}" --env-json "$work/env.json" ||
        fail "rows or device columns of $test pairs=$pairs"
    echo "$me: $test pairs=$pairs on ${PB_RDMA_DEVICES}: rows, device aggregates and env record OK" >&2
    ;;
validate)
    for t in write_lat read_lat write_bw; do
        for mode in --validate --validate-selftest; do
            timeout 120 "$bin" "${common[@]}" -d all --test $t --pairs 2 -s 1,4K,64K -n 8 $mode \
                2>"$work/v.err" || { rc=$?; cat "$work/v.err" >&2; fail "$mode $t -d all exited $rc"; }
            grep -q "devices: ${devs[0]} = pairs 0; ${devs[1]} = pairs 1" "$work/v.err" \
                || { cat "$work/v.err" >&2; fail "$mode $t: pairs not on ${devs[0]} and ${devs[1]}"; }
            for p in 0 1; do
                grep -q "validate: pair $p $t.*\(data OK\|self-test OK\)" "$work/v.err" \
                    || { cat "$work/v.err" >&2; fail "$mode $t: no verdict for pair $p"; }
            done
        done
    done
    ;;
pairdev)
    timeout 120 "$bin" "${common[@]}" -q --test write_lat --pairs 2 -s 8 -n 10 \
        --pair-devices "0:${devs[1]},1:${devs[0]}" -o "$work/p.csv" || fail "--pair-devices exited $?"
    got=$(py -c 'import csv,sys; print(" ".join(r["pair_id"]+"="+r["device"]+":"+r["scope"] for r in csv.DictReader(open(sys.argv[1]))))' "$work/p.csv")
    want="0=${devs[1]}:pair 1=${devs[0]}:pair all=${devs[1]}+${devs[0]}:all all=${devs[1]}:device all=${devs[0]}:device"
    [ "$got" = "$want" ] || fail "rows '$got', expected '$want'"
    ;;
baddev)
    check() { # expected-text args...
        want=$1; shift
        timeout 60 "$bin" "${common[@]}" --test write_lat "$@" 2>"$work/e"; rc=$?
        [ $rc -eq 2 ] || { cat "$work/e" >&2; fail "$* -> exit $rc, expected 2"; }
        grep -q "$want" "$work/e" || { cat "$work/e" >&2; fail "$* -> message lacks '$want'"; }
        grep -q "devices here: ${PB_RDMA_DEVICES}" "$work/e" || { cat "$work/e" >&2; fail "$* -> devices present not listed"; }
    }
    check "unknown device 'no_such_dev9' (-d)" -d "${devs[0]},no_such_dev9"
    check "unknown device 'no_such_dev9' (--pair-devices)" --pairs 2 --pair-devices "0:${devs[0]},1:no_such_dev9"
    ;;
*)
    fail "unknown case $case_"
    ;;
esac
exit 0
