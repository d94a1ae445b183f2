#!/bin/bash
# Real perftest outputs from the Soft-RoCE rig (Debian perftest 4.5+0.17, rxe0, both sides in one
# VM), for the import fixtures (issue 38: "perftest text and JSON, from the rig"). Run inside the rig:
#   scripts/softroce-run -- tests/python/data/import/perftest/rig/capture.sh
# Writes NAME.txt (the client's standard output) and, for --out_json, NAME.json beside this script.
set -u
d=$(cd "$(dirname "$0")" && pwd)
dev=${PB_RDMA_DEVICE:?} gid=${PB_RDMA_GID_INDEX:?} ip=${PB_RDMA_IP:?}
port=18600
pair() { # name tool args...
  local name=$1 tool=$2; shift 2
  port=$((port + 1))
  timeout 120 "$tool" -d "$dev" -x "$gid" -p "$port" "$@" >/dev/null 2>&1 &
  local spid=$!
  sleep 1
  timeout 120 "$tool" -d "$dev" -x "$gid" -p "$port" "$@" "$ip" > "$d/$name.txt" 2> "$d/$name.err"
  echo "$name: client exit $?"
  wait "$spid"; [ -s "$d/$name.err" ] || rm -f "$d/$name.err"
}
for r in 1 2 3; do pair "write_bw-64k-r$r" ib_write_bw -s 65536 -n 200; done
pair write_bw-a-gbits ib_write_bw -a -n 20 --report_gbits
pair send_bw-4k ib_send_bw -s 4096 -n 200
pair read_bw-64k ib_read_bw -s 65536 -n 100
pair write_lat-8 ib_write_lat -s 8 -n 500
pair read_lat-a ib_read_lat -a -n 20
pair send_lat-8 ib_send_lat -s 8 -n 500
# --out_json: the client's file (Debian 4.5+0.17 writes JSON that is not valid: DESIGN.md facts)
port=$((port + 1))
timeout 120 ib_write_bw -d "$dev" -x "$gid" -p "$port" -s 65536 -n 200 >/dev/null 2>&1 &
spid=$!; sleep 1
timeout 120 ib_write_bw -d "$dev" -x "$gid" -p "$port" -s 65536 -n 200 --out_json --out_json_file="$d/write_bw-64k.json" "$ip" > "$d/write_bw-64k-json.txt" 2>&1
echo "json: client exit $?"; wait "$spid"
ls -la "$d"
