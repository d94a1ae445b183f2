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
check "is not 'auto' or an integer" -x "$long"
check "too long" -s "$long"
check "is too large" -s "$(echo "$long" | cut -c1-900)"
check "too long" -s "1,$long"
check "unknown test" --test "$long"
check "is not a number" --timeout "$long"
check "unknown option" "--$long"
check "out of range" --pairs 257
check "is not 'auto' or an integer" -x "$(printf 'a\nb')"
mkfifo "$work/fifo"
check "FIFO with no reader" -o "$work/fifo"
[ -p "$work/fifo" ] || { echo "FAIL: the FIFO was replaced"; fail=1; }
check "Is a directory" -o "$work"
check "cannot open --output" -o "$work/missing/out.csv"
check "cannot open --env-json" --env-json "$work/missing/env.json"
err=$("$bin" --loopback 2>&1 >&-); rc=$?
case "$rc:$err" in 2:*"stdout is closed"*) ;; *) echo "FAIL: closed stdout -> exit $rc: $err"; fail=1 ;; esac
exit $fail
