#!/usr/bin/env python3
"""Turn the rig's node launches (tests/rig/test-incast bottleneck: OUT/bottleneck/incast-pP.R.csv
and .R.json) into data.csv with the driver's own collect code (runner/collect.py: rank 0's rows
as the point's, every other rank's merged as scope flow / node / probe), as `pairbench sweep
--layer verbs --pattern incast --pairs 1,2,3 --probe write_lat` files them; then summary.txt:
per sender count, the target aggregate against the tbf limit and the payload share of it the
wire allows, every flow's share, the victim probe's idle and loaded percentiles and inflation,
and the start spread.

usage: assemble.py RIG_OUT LIMIT_MBIT [DIR]   (run from the repository root, .venv's python;
DIR: where to write, default this folder)
"""
import csv
import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from pairbench.runner.collect import collect_point
from pairbench.runner.plan import SweepConfig, plan_sweep
from pairbench.runner.run import PointResult

HERE = Path(sys.argv[3]).resolve() if len(sys.argv) > 3 else Path(__file__).resolve().parent
# RoCE v2 frame of a 4 KiB RDMA write at path MTU 1024: 4 packets, each Ethernet 14 + IPv4 20 +
# UDP 8 + BTH 12 + ICRC 4 = 58 bytes of headers, the first one also RETH 16 (tbf counts the
# frame without preamble and FCS).
PAYLOAD_SHARE = 4096 / (4096 + 4 * 58 + 16)


def main() -> int:
    rig, limit_mbit = Path(sys.argv[1]), float(sys.argv[2])
    raw = HERE / "raw"
    raw.mkdir(exist_ok=True)
    cfg = SweepConfig(layer="verbs", tests=("write_bw",), sizes=(4096,), pairs=(1, 2, 3),
                      binary="pairbench-verbs", run_dir=str(HERE), launcher="mpirun",
                      hosts=("node0", "node1", "node2", "node3"), pattern="incast",
                      launcher_cmd="mpirun")
    rows = []
    for p in plan_sweep(cfg):
        if not (rig / "bottleneck" / f"incast-p{p.pairs}.0.csv").is_file():
            continue  # a run of some sender counts only (test-incast's SENDERS)
        for r in range(p.ranks):
            for ext, dst in (("csv", f"{p.name}.{r}.csv"),
                             ("json", f"{p.name}.{r}.env.json")):
                src = rig / "bottleneck" / f"incast-p{p.pairs}.{r}.{ext}"
                if src.is_file():
                    shutil.copyfile(src, raw / dst)
        p = replace(p, sides=tuple(replace(s, stdout=f"raw/{p.name}.0.out",
                                           stderr=f"raw/{p.name}.0.err") for s in p.sides))
        rows += collect_point(PointResult(point=p, exit_codes=[0]), HERE, "rig-2026-11-28")
    cols = list(rows[0])
    with open(HERE / "data.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    lines = [f"tbf limit {limit_mbit:g} Mbit/s on the target's bridge port; payload share of a "
             f"4 KiB write's frames {PAYLOAD_SHARE:.4f} -> at most "
             f"{limit_mbit * PAYLOAD_SHARE:.3f} Mbit/s of payload"]
    for pairs in ("1", "2", "3"):
        pt = [r for r in rows if r["pairs"] == pairs and r["msg_size_bytes"] == "4096"]
        head = [r for r in pt if r["pair_id"] == "all" and r["scope"] == "all"]
        if not head or head[0]["status"] != "ok":
            lines.append(f"{pairs} sender(s): no ok target aggregate "
                         f"({head[0]['error'] if head else 'no row'})")
            continue
        h = head[0]
        agg = float(h["bw_gbit_s"]) * 1000
        flows = [r for r in pt if r["scope"] == "pair"]
        mean = sum(float(r["bw_gbit_s"]) for r in flows) / len(flows)
        shares = ", ".join(
            f"flow {r['pair_id']} from {r['peer']} {float(r['bw_gbit_s']) * 1000:.3f} Mbit/s "
            f"({float(r['bw_gbit_s']) / mean:.3f} of the mean)" for r in flows)
        of_payload = agg / (limit_mbit * PAYLOAD_SHARE)
        lines.append(f"{pairs} sender(s): target aggregate {agg:.3f} Mbit/s = "
                     f"{agg / limit_mbit:.3f} of the limit ({of_payload:.3f} of its payload "
                     f"share); Jain {h['fairness']}, slowest flow {h['min_bw_pair_id'] or '-'} "
                     f"at {h['min_pair_bw_share'] or '-'}; start spread (start_skew_us) "
                     f"{h['start_skew_us']} us; {shares}")
        for r in (r for r in pt if r["scope"] == "probe"):
            lines.append(
                f"  victim probe {r['probe_test']} ({r['host']} -> {r['peer']}): loaded p50 "
                f"{r['lat_us_p50']} p99 {r['lat_us_p99'] or '(n<100)'} us over "
                f"{r['iterations']} samples; idle p50 {r['idle_lat_us_p50']} p99 "
                f"{r['idle_lat_us_p99'] or '(n<100)'} us over {r['idle_iterations']}; "
                f"inflation p50 {r['lat_inflation_p50'] or '-'} p99 "
                f"{r['lat_inflation_p99'] or '-'} p99.9 {r['lat_inflation_p999'] or '-'}; "
                f"flags {r['flags']}")
        offs = []
        for rank in range(1, int(pairs) + 1):
            env = raw / f"r1-write_bw-p{pairs}.{rank}.env.json"
            try:
                rec = json.loads(env.read_text())
            except (OSError, ValueError):
                continue
            for wk in rec.get("placement", []):
                pat = wk.get("pattern") or {}
                if "start_offset_us" in pat:
                    tag = " (probe)" if "victim_probe" in pat else ""
                    offs.append(f"flow {pat['flow']}{tag}: {pat['start_offset_us']:.0f} us "
                                f"+- {pat['start_offset_bound_us']:.0f}")
        if offs:
            lines.append("  start offsets vs the target (--env-json): " + "; ".join(offs))
    (HERE / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    figure(limit_mbit / 1000)
    return 0


def figure(limit_gbit_s: float) -> None:
    """The incast figure of `pairbench plot` (present/patternplot.py) with the tbf limit."""
    from pairbench.present.patternplot import plot_patterns
    from pairbench.present.plot import _pyplot, _save, load_runs

    (HERE / "plots").mkdir(exist_ok=True)
    written: list[Path] = []
    plot_patterns(load_runs([str(HERE / "data.csv")], ["rig"]), HERE / "plots", written,
                  lambda f, o, stem, w: _save(f, o, stem, w, ("png",)), _pyplot, limit_gbit_s)
    print("\n".join(str(p) for p in written))


if __name__ == "__main__":
    sys.exit(main())
