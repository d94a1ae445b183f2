"""The K-node rig's checkers (tests/rig/incast_check.py, tests/verbs/soak_check.py check-netem)
on the rig's own run (results/krig-suite-2026-11-28: the suite mode of tests/rig/test-incast in
a quiet rig): they hold on it, and each fails when one thing the acceptance asks for is
planted wrong in a copy of it.  The rig runs them in its VM; this shows they can fail."""

from __future__ import annotations

import csv
import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "results" / "krig-suite-2026-11-28"
INCAST = ROOT / "tests" / "rig" / "incast_check.py"
SOAK = ROOT / "tests" / "verbs" / "soak_check.py"
HEADER = 512


def incast(d: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", "-S", str(INCAST), str(d), "incast.1", "3", "2e6",
                           "4096"], capture_output=True, text=True, timeout=60, check=False)


def netem(d: Path) -> subprocess.CompletedProcess:
    f = d / "flap.1"
    return subprocess.run([sys.executable, "-I", "-S", str(SOAK), "check-netem", str(f / "n1"),
                           "0.5", str(f / "n2"), str(f / "n0")],
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return Path(shutil.copytree(RUN, tmp_path / "run"))


def edit_csv(path: Path, fn) -> None:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    fields = list(rows[0])
    for r in rows:
        fn(r)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def test_the_rig_run_holds(run: Path) -> None:
    p = incast(run)
    assert p.returncode == 0, p.stdout
    assert "0.980 of the 2 Mbit/s limit" in p.stdout
    assert "inflation p50 340.93819, p99 11.2915638" in p.stdout
    assert ("node0 (pbrxe0; ethtool, hw_counters) counters that moved: completer_retry_err +7, "
            "duplicate_request +5") in p.stdout
    q = netem(run)
    assert q.returncode == 0, q.stdout
    assert q.stdout.count("completer_retry_err +1") == 2
    assert "stall 4.50-6.75 s" in q.stdout and "stall 10.25-12.25 s" in q.stdout


@pytest.mark.parametrize("plant, said", [
    ("slow", "not within 10 %"),
    ("lost_flow", "2 pair rows on the target"),
    ("few_probe_samples", "the probe row has no lat_inflation_p99"),
    ("no_target_counters", "node0's record has no port counters"),
    ("no_ethtool", "node2's record has no ethtool statistics"),
])
def test_incast_check_fails_on_what_is_wrong(run: Path, plant: str, said: str) -> None:
    target = run / "incast.1.0.csv"
    if plant == "slow":  # the aggregate at 0.85 of the limit
        edit_csv(target, lambda r: r.update(bw_gbit_s="0.0017") if r["scope"] == "all" else None)
    elif plant == "lost_flow":
        rows = target.read_text().splitlines()
        target.write_text("\n".join(ln for ln in rows if ",node3," not in ln) + "\n")
    elif plant == "few_probe_samples":  # fewer than 100 loaded samples: no p99, so no inflation
        def few(r: dict) -> None:
            if r["scope"] == "probe":
                r.update(iterations="61", lat_us_p99="", lat_inflation_p99="")
        edit_csv(run / "incast.1.1.csv", few)
    elif plant == "no_ethtool":
        rec = json.loads((run / "incast.1.2.json").read_text())
        rec["counters"] = [c for c in rec["counters"] if c["source"] != "ethtool"]
        (run / "incast.1.2.json").write_text(json.dumps(rec))
    else:
        rec = json.loads((run / "incast.1.0.json").read_text())
        rec["counters"] = []
        (run / "incast.1.0.json").write_text(json.dumps(rec))
    p = incast(run)
    assert p.returncode == 1
    assert said in p.stdout, p.stdout


def set_buckets(path: Path, fn) -> None:
    """Rewrite a .pbsoak series' message counts: fn(list) -> list of the same length."""
    b = bytearray(path.read_bytes())
    n = (len(b) - HEADER) // 16
    msgs = [struct.unpack_from("=Q", b, HEADER + 16 * i)[0] for i in range(n)]
    for i, m in enumerate(fn(msgs)):
        struct.pack_into("=Q", b, HEADER + 16 * i, m)
    path.write_bytes(bytes(b))


def test_check_netem_fails_on_what_is_wrong(run: Path) -> None:
    n1 = run / "flap.1" / "n1"
    flapped = n1 / "s-1024B-incast-pair0.pbsoak"
    other = run / "flap.1" / "n2" / "s-1024B-incast-pair1.pbsoak"
    keep = flapped.read_bytes(), other.read_bytes(), (n1 / "c-node1.pbcnt.csv").read_text()

    # the other flow stalls with the first flap (1.5 s of its 2.25 s stall): a shared cause,
    # not node 1's link
    set_buckets(other, lambda m: [0 if 19 <= i < 25 else x for i, x in enumerate(m)])
    p = netem(run)
    assert p.returncode == 1 and "a flow that was not flapped stalled with the flap" in p.stdout
    assert "stalled 1.50 s of the flap's stall 4.50-6.75 s (67%; limit 50%)" in p.stdout
    other.write_bytes(keep[1])

    # ... but a starved guest's 0.75 s stall of the other flow inside the flap's 2.25 s is not
    # the link's (the fresh-clone test-all at 976c899: the tc command that began a flap ran 8 s,
    # the other flow stalled 0.75 s of the flapped flow's 9 s)
    set_buckets(other, lambda m: [0 if 20 <= i < 23 else x for i, x in enumerate(m)])
    p = netem(run)
    assert p.returncode == 0, p.stdout
    assert "stalled 0.75 s of the flap's stall 4.50-6.75 s (33%; limit 50%)" in p.stdout
    other.write_bytes(keep[1])

    # the flapped flow did not stall with the second flap
    set_buckets(flapped, lambda m: [30 if 41 <= i < 51 else x for i, x in enumerate(m)])
    p = netem(run)
    assert p.returncode == 1 and "no stall begins with it" in p.stdout
    assert "1 stalls in the flapped flow, 2 flaps" in p.stdout
    flapped.write_bytes(keep[0])

    # a third stall of the flapped flow, where no flap was
    set_buckets(flapped, lambda m: [0 if 30 <= i < 34 else x for i, x in enumerate(m)])
    p = netem(run)
    assert p.returncode == 1 and "3 stalls in the flapped flow, 2 flaps" in p.stdout
    flapped.write_bytes(keep[0])

    # a stall of both flows at once where no flap was: the machine, not the link (printed as
    # shared, not counted; the loaded test-all at a90f9ad)
    set_buckets(flapped, lambda m: [0 if 30 <= i < 35 else x for i, x in enumerate(m)])
    set_buckets(other, lambda m: [0 if 33 <= i < 34 else x for i, x in enumerate(m)])
    p = netem(run)
    assert p.returncode == 0, p.stdout
    assert "stalls shared with a flow that was not flapped" in p.stdout
    assert "(the machine, not the link; not counted): 7.50 s for 1.25 s" in p.stdout
    flapped.write_bytes(keep[0])
    other.write_bytes(keep[1])

    # the shortest stall counted is 0.75 s (3 buckets of 0.25 s): one where no flap was fails
    set_buckets(flapped, lambda m: [0 if 30 <= i < 33 else x for i, x in enumerate(m)])
    p = netem(run)
    assert p.returncode == 1 and "3 stalls in the flapped flow, 2 flaps" in p.stdout
    flapped.write_bytes(keep[0])

    # a starved guest's dips of two buckets, in both flows, one during a flap: printed, not
    # counted (the loaded test-all at c2e54fa)
    set_buckets(flapped, lambda m: [0 if 30 <= i < 32 else x for i, x in enumerate(m)])
    set_buckets(other, lambda m: [0 if 19 <= i < 21 else x for i, x in enumerate(m)])
    p = netem(run)
    assert p.returncode == 0, p.stdout
    assert "shorter dips (not counted): 7.50 s for 0.50 s" in p.stdout
    assert "shorter dips (not counted): 4.75 s for 0.50 s" in p.stdout
    flapped.write_bytes(keep[0])
    other.write_bytes(keep[1])

    # no retransmission counted: the counter never moves
    lines = keep[2].splitlines()
    col = lines[2].split(",").index("pbrxe1/1/hw_counters/completer_retry_err")
    fixed = [ln.split(",") for ln in lines[3:]]
    for v in fixed:
        v[col] = fixed[0][col]
    flat = lines[:3] + [",".join(v) for v in fixed]
    (n1 / "c-node1.pbcnt.csv").write_text("\n".join(flat) + "\n")
    p = netem(run)
    assert p.returncode == 1 and "no retransmission (completer_retry_err) with the flap" in p.stdout
    (n1 / "c-node1.pbcnt.csv").write_text(keep[2])

    # a flow that did not survive the flap
    edit_csv(n1 / "rows.1.csv", lambda r: r.update(status="error", error="completion error"))
    p = netem(run)
    assert p.returncode == 1 and "rows.1.csv pair" in p.stdout
