#!/bin/sh
# Each bad input must exit with code 2 and name the option on stderr.
bin=$1
fail=0
check() { # expected-text args...
	want=$1; shift
	err=$("$bin" "$@" 2>&1 >/dev/null); rc=$?
	if [ "$rc" -ne 2 ]; then echo "FAIL: $* -> exit $rc (want 2)"; fail=1; fi
	case "$err" in *"$want"*) ;; *) echo "FAIL: $* -> stderr '$err' lacks '$want'"; fail=1 ;; esac
	n=$(printf '%s\n' "$err" | grep -c 'error')
	if [ "$n" -ne 1 ]; then echo "FAIL: $* -> $n error lines"; fail=1; fi
}
check "--procs" --procs 1
check "--procs" --procs 2:x
check "--rounds" --rounds 5
check "--rounds" -n
check "unknown option '--bogus'" --bogus
check "--timeout" --timeout -1
"$bin" --help >/dev/null || { echo "FAIL: --help"; fail=1; }
exit $fail
