"""The rig's incast checks (tests/rig/test-incast, mode suite; issue 35's acceptance), stdlib only
(the emulated VM starts the venv's Python slowly).

usage:
  incast_check.py DIR TAG SENDERS LIMIT_BIT_S MTU_BYTES
      DIR/TAG.I.csv and DIR/TAG.I.json of the K = SENDERS + 1 node launches (node 0 the target,
      whose bridge port a tbf limits to LIMIT_BIT_S on Ethernet frames).  Holds when:
      - the target's aggregate (its scope=all row) is within 10 % of the limit, and its share of
        the limit's payload capacity is printed (a frame of one RDMA WRITE at MTU_BYTES carries
        its payload plus 74 B: Ethernet 14, IPv4 20, UDP 8, BTH 12, RETH 16, ICRC 4);
      - every flow has an ok pair row on the target with its rate, share of the mean, fairness
        and the slowest flow in the aggregate row;
      - the start spread (start_skew_us) is recorded, and a pair row is flagged
        cross_node_start exactly when its offset was over 2.5 % of the window (printed);
      - the victim probe (scope=probe, on a sender node) has its loaded p50 and p99 and its idle
        twin's, and the p99 inflation is measured (>= 100 loaded samples);
      - every node's record has the port counters of the point, the target's responder side
        included (its rcvd_pkts moved), and its network device's ethtool -S statistics.
Exit 0 when it holds, 1 otherwise, saying what was seen."""

from __future__ import annotations

import csv
import json
import sys

HEADERS = 14 + 20 + 8 + 12 + 16 + 4  # one RoCE v2 RDMA WRITE-only packet's bytes besides payload


def num(r: dict, k: str) -> float | None:
    try:
        return float(r[k])
    except (KeyError, ValueError):
        return None


def main(d: str, tag: str, senders: int, limit: float, mtu: int) -> int:
    ok = True

    def bad(msg: str) -> None:
        nonlocal ok
        ok = False
        print(f"incast_check: FAIL: {msg}")

    k = senders + 1
    with open(f"{d}/{tag}.0.csv", newline="") as f:
        target = list(csv.DictReader(f))
    agg = [r for r in target if r["scope"] == "all"]
    pairs = [r for r in target if r["scope"] == "pair"]
    if len(agg) != 1 or agg[0]["status"] != "ok":
        bad(f"the target's aggregate row: {agg}")
        return 1
    a = agg[0]
    size = int(a["msg_size_bytes"])
    gbit = num(a, "bw_gbit_s") or 0.0
    packets = -(-size // mtu)
    payload = size / (size + packets * HEADERS)
    share = gbit * 1e9 / limit
    print(f"incast_check: {senders} senders -> node0: target aggregate {gbit * 1e3:.3f} Mbit/s = "
          f"{share:.3f} of the {limit / 1e6:g} Mbit/s limit ({share / payload:.3f} of its payload "
          f"capacity, {payload:.4f} of the frames at MTU {mtu}); fairness {a['fairness']}, "
          f"slowest flow {a['min_bw_pair_id']} at {a['min_pair_bw_share']} of the mean; "
          f"start_skew_us {a['start_skew_us']} in a {a['duration_s']} s window")
    if not 0.9 <= share <= 1.1:
        bad(f"the target aggregate is {share:.3f} of the limit, not within 10 %")
    if len(pairs) != senders:
        bad(f"{len(pairs)} pair rows on the target, want one per sender ({senders})")
    peers = sorted(r["peer"] for r in pairs)
    if peers != [f"node{i}" for i in range(1, k)]:
        bad(f"the target's flows come from {peers}, want node1..node{senders}")
    mean = sum(num(r, "bw_gbit_s") or 0.0 for r in pairs) / max(1, len(pairs))
    for r in pairs:
        rate = num(r, "bw_gbit_s")
        if r["status"] != "ok" or not rate:
            bad(f"flow {r['pair_id']} from {r['peer']}: {r['status']} {r['error']}")
            continue
        skewed = "cross_node_start" in r["flags"].split(";")
        print(f"incast_check: flow {r['pair_id']} from {r['peer']}: {rate * 1e3:.3f} Mbit/s "
              f"({rate / mean:.3f} of the flows' mean){', cross_node_start' if skewed else ''}")
    for key in ("fairness", "min_pair_bw_share", "start_skew_us"):
        if num(a, key) is None:
            bad(f"the aggregate row has no {key}")
    probes = []
    for i in range(1, k):
        with open(f"{d}/{tag}.{i}.csv", newline="") as f:
            probes += [r for r in csv.DictReader(f) if r["scope"] == "probe"]
    if len(probes) != 1:
        bad(f"{len(probes)} probe rows on the sender nodes, want 1")
    for r in probes:
        print(f"incast_check: probe {r['probe_test']} from {r['host']}: loaded p50 "
              f"{r['lat_us_p50']} p99 {r['lat_us_p99']} us (n {r['iterations']}), idle p50 "
              f"{r['idle_lat_us_p50']} p99 {r['idle_lat_us_p99']} us (n {r['idle_iterations']}): "
              f"inflation p50 {r['lat_inflation_p50']}, p99 {r['lat_inflation_p99']}")
        if r["status"] != "ok":
            bad(f"the probe row: {r['error']}")
        for key in ("lat_inflation_p50", "lat_inflation_p99", "idle_lat_us_p99"):
            if num(r, key) is None:
                bad(f"the probe row has no {key} (loaded samples: {r['iterations']})")
    for i in range(k):
        with open(f"{d}/{tag}.{i}.json") as f:
            rec = json.load(f)
        cnt = [c for c in rec.get("counters", []) if c.get("deltas")]
        if not cnt:
            bad(f"node{i}'s record has no port counters")
            continue
        moved = {n: v for c in cnt for n, v in c["deltas"].items() if v}
        sources = sorted({c["source"] for c in cnt})
        print(f"incast_check: node{i} ({cnt[0]['device']}; {', '.join(sources)}) counters that "
              "moved: " + ", ".join(f"{n} {v:+d}" for n, v in sorted(moved.items())))
        if "ethtool" not in sources:  # the nodes' veths have ethtool -S statistics
            bad(f"node{i}'s record has no ethtool statistics of its network device")
        if i == 0 and not moved.get("rcvd_pkts"):
            bad("the target's responder side recorded no received packets")
    return 0 if ok else 1


if __name__ == "__main__":
    a = sys.argv
    if len(a) != 6:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(a[1], a[2], int(a[3]), float(a[4]), int(a[5])))
