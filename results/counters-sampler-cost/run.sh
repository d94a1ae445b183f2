#!/usr/bin/env bash
# What --counters-series costs (issue 36: "the sampler's cost unmeasured"), in the Soft-RoCE
# rig: write_bw, 2 pairs, 64 KiB, one common 3 s window, without the sampler and with it
# every 1 s and every 0.1 s, interleaved (A B C A B C ...), 6 rounds. Per run: the aggregate
# bandwidth (data.csv's bw_gbit_s) and the CPU time of the whole run (launcher, workers,
# sampler: /usr/bin/time's user + sys). Run from the repository root:
#   scripts/softroce-run -- results/counters-sampler-cost/run.sh results/counters-sampler-cost/out.csv
set -u
out=${1:?usage: run.sh OUT.csv}
bin=build/bin/pairbench-verbs
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "round,mode,bw_gbit_s,cpu_s,wall_s" >"$out"
for round in 1 2 3 4 5 6; do
	for mode in none 1 0.1; do
		extra=()
		[ "$mode" = none ] || extra=(--counters-series "$work/c$round-$mode" --counters-interval "$mode")
		/usr/bin/time -f "%U %S %e" -o "$work/t" "$bin" -d "$PB_RDMA_DEVICE" --loopback --pin compact \
			--allow-oversubscribe -q --test write_bw --pairs 2 -s 65536 -D 3 -w 100 \
			-o "$work/r.csv" "${extra[@]}" 2>"$work/e" || { cat "$work/e" >&2; continue; }
		bw=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
			$c["pair_id"] == "all" && $c["scope"] == "all" { print $c["bw_gbit_s"] }' "$work/r.csv")
		read -r u s w <"$work/t"
		echo "$round,$mode,$bw,$(echo "$u + $s" | bc),$w" >>"$out"
	done
done
cat "$out"
