#!/usr/bin/env bash
# Runs INSIDE the Soft-RoCE rig (one boot), from a fresh clone after
#   scripts/install-deps && cmake -B build -G Ninja -DPB_WERROR=ON && cmake --build build -j2:
#   scripts/softroce-run -- results/verbs-perftest-comparison/run-layouts.sh [BIN_DIR (default: build/bin)]
# Then on the host: python3 results/verbs-perftest-comparison/ratios.py layouts/layouts.csv
#
# All six perftest tools against pairbench-verbs in BOTH buffer layouts (--buffers fresh |
# peer; read_lat has no layout choice), single pair, loopback on $PB_RDMA_DEVICE:
#   ib_write_lat, ib_read_lat, ib_send_lat   at 8 B and 4 KiB, -n NLAT   (p50 = t_typical)
#   ib_write_bw, ib_read_bw, ib_send_bw      at 64 KiB (-n NBW) and 1 MiB (-n NBW1M)  (BW average)
# REPS rounds; in every round each point runs each tool once, the order rotated by one place
# per round and per point (no tool always first or last).  The guest's load average is
# recorded at the start of every round (column loadavg1).  Before the rounds, one untimed
# perftest and one pairbench run (discarded): the first run after the boot is slow.
# pairbench runs with --pin compact: the same placement as near-device on rxe (client CPU 0,
# server CPU 1) without loading the PCI topology (~2 s per run in the emulated VM).
# Environment: REPS (5), NLAT (2000), NBW (1000), NBW1M (64), POINTS (default: all; e.g.
# "send_lat:8 read_bw:65536").
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/build/bin}/pairbench-verbs
out=$root/results/verbs-perftest-comparison/layouts
dev=${PB_RDMA_DEVICE:?run me inside scripts/softroce-run}
gid=${PB_RDMA_GID_INDEX:-1}
ip=${PB_RDMA_IP:?}
REPS=${REPS:-5}
NLAT=${NLAT:-2000}
NBW=${NBW:-1000}
NBW1M=${NBW1M:-64}
POINTS=${POINTS:-"write_lat:8 write_lat:4096 read_lat:8 read_lat:4096 send_lat:8 send_lat:4096
write_bw:65536 write_bw:1048576 read_bw:65536 read_bw:1048576 send_bw:65536 send_bw:1048576"}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: > "$out/perftest.txt"
: > "$out/pairbench.csv"

iters() { case $1 in *_lat) echo "$NLAT";; *) [ "$2" -ge 1048576 ] && echo "$NBW1M" || echo "$NBW";; esac; }

# perftest server in the background, client here.  The emulated VM starts a server slowly:
# the client retries until it connects.  Prints "p50,bw_gbit_s,min,mean".
perftest() {
    local test=$1 size=$2 n args
    n=$(iters "$test" "$size")
    args=(-d "$dev" -x "$gid" -s "$size" -n "$n")
    timeout 180 "ib_$test" "${args[@]}" >"$tmp/srv.txt" 2>&1 &
    local spid=$!
    for _ in $(seq 40); do
        sleep 0.5
        timeout 120 "ib_$test" "${args[@]}" "$ip" >"$tmp/cli.txt" 2>&1 && break
    done
    wait $spid || true
    { echo "### $test $size"; cat "$tmp/cli.txt"; } >> "$out/perftest.txt"
    case $test in
    # #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
    *_lat) awk -v s="$size" '$1 == s && NF >= 6 { print $5 ",," $3 "," $6 }' "$tmp/cli.txt";;
    # #bytes #iterations BW-peak BW-average MsgRate, BW in MB/sec = 2^20 B/s (perftest's MBS)
    *_bw) awk -v s="$size" '$1 == s && NF >= 5 { printf ",%.6f,,\n", $4 * 1048576 * 8 / 1e9 }' "$tmp/cli.txt";;
    esac
}

# pairbench-verbs in layout $3 ("" = the test has no choice).  Prints "p50,bw_gbit_s,min,mean".
pairbench() {
    local test=$1 size=$2 layout=$3 n w=100 lay=()
    n=$(iters "$test" "$size")
    [ "$size" -ge 1048576 ] && w=10
    [ -n "$layout" ] && lay=(--buffers "$layout")
    "$bin" -d "$dev" --loopback -q --pin compact --test "$test" -s "$size" -n "$n" -w "$w" "${lay[@]}" \
        -o "$tmp/pb.csv"
    python3 - "$tmp/pb.csv" "$out/pairbench.csv" "$rep" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
first = not open(sys.argv[2]).read(1)
with open(sys.argv[2], "a", newline="") as f:
    w = csv.DictWriter(f, ["rep"] + list(rows[0]))
    if first:
        w.writeheader()
    for r in rows:
        w.writerow({"rep": sys.argv[3], **r})
r = [x for x in rows if x["pair_id"] == "0"][0]
print(f"{r['lat_us_p50']},{r['bw_gbit_s']},{r['lat_us_min']},{r['lat_us_mean']}")
EOF
}

rep=0
perftest write_lat 8 >/dev/null
pairbench write_lat 8 fresh >/dev/null
: > "$out/perftest.txt"
: > "$out/pairbench.csv"
{
echo "rep,slot,tool,buffers,test,bytes,p50_us,bw_gbit_s,min_us,mean_us,loadavg1"
k=0
for rep in $(seq "$REPS"); do
    load=$(cut -d' ' -f1 /proc/loadavg)
    for pt in $POINTS; do
        test=${pt%%:*}; size=${pt##*:}
        tools=(perftest fresh peer)
        [ "$test" = read_lat ] && tools=(perftest none)
        nt=${#tools[@]}
        for j in $(seq 0 $((nt - 1))); do
            tool=${tools[$(( (j + k) % nt ))]}
            case $tool in
            perftest) v=$(perftest "$test" "$size"); echo "$rep,$j,perftest,,$test,$size,$v,$load";;
            none) v=$(pairbench "$test" "$size" ""); echo "$rep,$j,pairbench,,$test,$size,$v,$load";;
            *) v=$(pairbench "$test" "$size" "$tool"); echo "$rep,$j,pairbench,$tool,$test,$size,$v,$load";;
            esac
        done
        k=$((k + 1))
    done
done
} > "$out/layouts.csv"
"$bin" -d "$dev" --loopback -q --test write_bw -s 64K -n 10 --env-json "$out/env.json" >/dev/null
{ dpkg-query -W perftest rdma-core 2>/dev/null || true; uname -r; cut -d' ' -f1-3 /proc/loadavg; } > "$out/versions.txt"
echo "done: $out/layouts.csv"
