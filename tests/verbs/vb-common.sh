# Sourced by the verbs test scripts (vb-test.sh, vb-multidev.sh, vb-fault.sh): what they share.
# In the software-emulated rig every process start costs a good part of a second, so the helpers
# here start as few as they can.  Needs: $work (the case's scratch directory), fail().

# stdlib-only helpers: -I -S, without the venv's site (~1 s per start in the emulated VM)
py() { python3 -I -S "$@"; }

# check_rows ARGS...: tests/verbs/check_rows.py ARGS, answered by the batch's one checker process
# (check_rows.py --serve $PB_CHECK_ROWS_FIFO, process $PB_CHECK_ROWS_PID, started by
# tests/rig/in-rig-batch) while it lives, else by a process of its own.  Its output goes to stderr; returns its exit status.
vb_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
check_rows() {
    local srv=${PB_CHECK_ROWS_FIFO:-} reply=$work/check-rows.reply line rc= req rfd sfd
    if [ -n "$srv" ] && [ -p "$srv" ] && kill -0 "${PB_CHECK_ROWS_PID:-none}" 2>/dev/null &&
        mkfifo "$reply"; then
        # Both ends opened read-write: neither open blocks, whether or not the server is alive.
        exec {rfd}<>"$reply" {sfd}<>"$srv"
        printf -v req '%s\t' "$reply" "$@"
        printf '%s\n' "${req%$'\t'}" >&"$sfd"  # one write below PIPE_BUF: never interleaved
        exec {sfd}>&-
        # The reply ends with "\x04rc N"; a server that died answers nothing within 120 s.
        while IFS= read -r -t 120 -u "$rfd" line; do
            if [ "${line#$'\x04'rc }" != "$line" ]; then rc=${line#$'\x04'rc }; break; fi
            printf '%s\n' "$line" >&2
        done
        exec {rfd}>&-
        rm -f "$reply"
        if [ -n "$rc" ]; then return "$rc"; fi
        echo "check_rows: no answer from the batch's checker ($srv) within 120 s: checking in a process of its own" >&2
    fi
    py "$vb_here/check_rows.py" "$@"
}
