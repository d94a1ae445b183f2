#!/usr/bin/env bash
# One timed fresh-clone run of the suite, as CI runs it: clone HEAD of this checkout into a
# temporary directory, `CI=true scripts/test-all </dev/null` there, the load average sampled
# every 30 s beside it. Writes OUT/<time>-<commit>/{machine.txt,load.txt,summary.txt,test-all.log,
# verbs-batch.junit.xml.gz}.
# usage: results/test-all-time/run.sh [OUT]   (default: results/test-all-time)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out_root=${1:-$repo/results/test-all-time}
commit=$(git -C "$repo" rev-parse --short HEAD)
out="$out_root/$(date -u +%Y%m%d-%H%M%S)-$commit"
mkdir -p "$out"
clone=$(mktemp -d /tmp/pb-timed-XXXXXX)
trap 'kill "$sampler" 2>/dev/null; rm -rf "$clone"' EXIT
git clone -q "$repo" "$clone/repo"
{
	echo "commit: $(git -C "$repo" rev-parse HEAD)"
	echo "date (UTC): $(date -u '+%F %T')"
	echo "cpus: $(nproc); model: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
	echo "kernel: $(uname -r); os: $(. /etc/os-release && echo "$PRETTY_NAME")"
	echo "other qemu processes at the start: $(pgrep -c qemu-system || true)"
	echo "load average at the start (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "command: cd <fresh clone> && CI=true scripts/test-all </dev/null"
} >"$out/machine.txt"
(while :; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 30; done) >"$out/load.txt" &
sampler=$!
# busy CPU time of the whole machine (all cores: /proc/stat, USER_HZ ticks) over the run
cpu_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
busy0=$(cpu_busy)
t0=$(date +%s)
rc=0
(cd "$clone/repo" && CI=true scripts/test-all </dev/null) >"$out/test-all.log" 2>&1 || rc=$?
wall=$(( $(date +%s) - t0 ))
echo "wall: $wall s; exit $rc" >>"$out/machine.txt"
echo "cpu busy over the run (whole machine, all processes): $(( ($(cpu_busy) - busy0) / $(getconf CLK_TCK) )) core-s of $(( wall * $(nproc) )) available" >>"$out/machine.txt"
# each verbs test's time and output, passed ones too (tests/rig/in-rig-batch)
gzip -c "$clone/repo/build/verbs-batch.junit.xml" >"$out/verbs-batch.junit.xml.gz" 2>/dev/null ||
	rm -f "$out/verbs-batch.junit.xml.gz"
sed -n '/== pairbench test summary ==/,$p' "$out/test-all.log" >"$out/summary.txt"
grep -h "host lane done\|vm run took" "$out/test-all.log" >>"$out/summary.txt" || true
cat "$out/machine.txt" "$out/summary.txt"
exit "$rc"
