"""The rig's soak checks (tests/verbs/vb-soak.sh; results/soak-rig-2026-11-28), stdlib only (the
emulated VM starts the venv's Python slowly). The same rules as core/pb_soak.c and
scripts/pairbench/analysis/soak.py: the median bucket (nearest rank), stalls = runs strictly
below FRACTION x median.

usage:
  soak_check.py stop DIR LAUNCHER MEMBER AT FOR   SIGSTOP worker MEMBER (the launcher's
        MEMBER-th worker child by pid, the counters sampler pbv-counters left out) AT s after
        the soak's start (pair 0's series header) for FOR s; DIR/event.txt: 'stop T0 T1 cont T2 T3'
  soak_check.py flap DIR AT FOR   the device's netdev (the counters series' header) down AT s
        after the soak's start for FOR s; DIR/event.txt: 'down T0 T1 up T2 T3'
        (wall-clock s before and after each action)
  soak_check.py check-netem DIR FRACTION OTHER_DIR...   the flows in DIR (whose netdev flapped:
        DIR/event.txt, one line per flap 'down T0 T1 up T2 T3', the wall-clock s before and
        after the tc commands that began and ended it; tests/rig/test-incast netem_flaps)
        have one stall per flap and no other (stalls of >= MIN_FLAP_STALL_S counted; shorter
        dips printed; a stall that overlaps a stall or dip of an OTHER_DIR flow is a shared
        cause, printed, not counted): each begins within a bucket of the
        drop (between its tc command's start and end) and ends after the link came back and at
        most RECOVER_S after it; no flow in OTHER_DIR is stalled for OTHER_SHARE or more of a
        flap's stall (a frozen guest stalls every flow, a flap only its own); every row of the
        run ok (the flows survived: RC retransmits); a retransmission counter of DIR's node
        (completer_retry_err) moved with each flap, beside every counter that moved
  soak_check.py check-stop DIR FRACTION PAIR [AT FOR]   flow PAIR has a stall that begins within
        a bucket of the stop (event.txt, or AT s after the soak's start for FOR s: the pause
        hook) and lasts as long within two buckets; no other flow stalls with it; its row ok
  soak_check.py check-flap DIR   rows are errors (a completion error), each flow's series ends
        within a bucket of the link's down (or up to 1 s after the command returned), and
        link_downed moved in the counters' interval of the down
  soak_check.py check-corrupt DIR PAIR [-rx]   pair PAIR's row is the corruption error, the
        others ok, its series (with -rx: the receiver's checks, send_bw's server) counts a
        corrupt check, every other flow's only clean checks
Exit 0 when the check holds, 1 otherwise, saying what was seen."""

from __future__ import annotations

import csv
import glob
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

HEADER = 512
# A flow stopped by a flap resumes when its QP's next retransmission gets through: rdma_cm gives
# RC QPs on RoCE an ack timeout of 4.096 us x 2^(16 + 1) = 0.54 s (the kernel's
# CMA_IBOE_PACKET_LIFETIME + 1), and the emulated guest's timers and the tc command that ends
# the flap (1-2 s to start in the guest) lag behind: measured 1.0-1.5 s after the command
# returned in a quiet rig (results/krig-suite-2026-11-28).
RECOVER_S = 3.0
# check-netem counts stalls of at least this length: a flap (1 s of every packet dropped) stops
# its flow for 1 s + the ack timeout at least, while the starved emulated guest of a loaded
# test-all gives every flow, flapped or not, dips of one or two 0.25 s buckets at any time
# (the fresh-clone run at c2e54fa: 0.25-0.75 s dips in both flows). Shorter stalls are printed
# as dips, never counted for or against a flap.
MIN_FLAP_STALL_S = 0.75
# check-netem: a flow that was not flapped may dip while the flapped flow stalls (the starved
# guest: the fresh-clone test-all at 976c899 gave the other flow 1.5-2.25 s stalls while the
# tc command that began the flap ran 8 s, and one 0.75 s stall inside the flapped flow's 9 s),
# but stalled for this share of the flap's stall or more, the stall is not the flapped link's.
OTHER_SHARE = 0.5
TRAFFIC = ("_pkts", "_packets", "_bytes")  # counters that move with any traffic: not printed


def series(path: str) -> tuple[float, float, list[tuple[int, int, int]]]:
    """start (wall clock s), bucket (s), (messages, checked, corrupt) per bucket."""
    b = Path(path).read_bytes()
    h = struct.unpack_from("=8s8I5Qqd", b)
    n = (len(b) - HEADER) // 16
    return h[14] / 1e9, h[10] / 1e9, [struct.unpack_from("=QII", b, HEADER + 16 * i)
                                      for i in range(n)]


def stalls(msgs: list[int], fraction: float) -> list[tuple[int, int]]:
    s = sorted(msgs)
    p50 = s[max(1, (50000 * len(s) + 99999) // 100000) - 1]
    out, start = [], None
    for i, m in enumerate([*msgs, None]):
        low = m is not None and m < fraction * p50
        if low and start is None:
            start = i
        elif not low and start is not None:
            out.append((start, i - start))
            start = None
    return out


def soak_start(d: str) -> float:
    deadline = time.time() + 120
    while time.time() < deadline:
        for path in glob.glob(f"{d}/s-*B-pair0.pbsoak"):
            b = Path(path).read_bytes()[:HEADER]
            if len(b) >= 88 and struct.unpack_from("=q", b, 80)[0]:
                return struct.unpack_from("=q", b, 80)[0] / 1e9
        time.sleep(0.02)
    return 0.0


def rows(d: str) -> list[dict]:
    with open(f"{d}/rows.csv", newline="") as f:
        return [r for r in csv.DictReader(f) if r["pair_id"] != "all"]


def procs() -> dict[int, tuple[int, str]]:
    """pid -> (ppid, comm) of every process."""
    out = {}
    for st in glob.glob("/proc/[0-9]*/stat"):
        try:
            text = Path(st).read_text()
        except OSError:
            continue
        rest = text[text.rindex(")") + 2:].split()
        out[int(st.split("/")[2])] = (int(rest[1]), text[text.index("(") + 1:text.rindex(")")])
    return out


def stop(d: str, launcher: int, member: int, at_s: float, for_s: float) -> int:
    start = soak_start(d)
    ps = procs()
    # the launcher's worker children by pid (fork order = member order), the sampler left out;
    # launcher 0: the children of any pairbench-verbs process
    def kids_of(ours) -> list[int]:
        return sorted(p for p, (pp, comm) in ps.items() if comm != "pbv-counters" and ours(pp))

    kids = kids_of(lambda pp: launcher and pp == launcher) or kids_of(
        lambda pp: pp in ps and ps[pp][1].startswith("pairbench-verb"))
    if not start or len(kids) <= member:
        print(f"soak_check: FAIL: no soak start ({start}) or no worker {member} in {kids}; "
              f"launcher {launcher}: " + ", ".join(f"{p} ppid {pp} {c}" for p, (pp, c)
                                                   in ps.items() if "pairbench" in c or
                                                   "pbv" in c or p == launcher))
        return 1
    if time.time() > start + at_s + 1.0:
        print(f"soak_check: FAIL: too late to stop at {at_s:g} s: the soak's start was seen "
              f"{time.time() - start:.1f} s after it (the machine is too slow for this check)")
        return 1
    time.sleep(max(0.0, start + at_s - time.time()))
    t0 = time.time()
    os.kill(kids[member], signal.SIGSTOP)
    t1 = time.time()
    time.sleep(max(0.0, t0 + for_s - time.time()))
    t2 = time.time()
    os.kill(kids[member], signal.SIGCONT)
    t3 = time.time()
    Path(f"{d}/event.txt").write_text(f"stop {t0:.6f} {t1:.6f} cont {t2:.6f} {t3:.6f}\n")
    print(f"soak_check: worker {member} (pid {kids[member]}) stopped {t0 - start:.2f} s "
          f"after the soak's start for {t2 - t0:.2f} s")
    return 0


def flap(d: str, at_s: float, for_s: float) -> int:
    start = soak_start(d)
    netdev = ""
    for path in glob.glob(f"{d}/c-*.pbcnt.csv"):
        for w in Path(path).read_text().split("\n", 2)[1].split():
            if w.startswith("netdev:"):
                netdev = w.split("=", 1)[1]
    if not start or not netdev:
        print(f"soak_check: FAIL: no soak start ({start}) or netdev ({netdev!r}) within 120 s")
        return 1
    time.sleep(max(0.0, start + at_s - time.time()))
    t0 = time.time()
    subprocess.run(["ip", "link", "set", netdev, "down"], check=True, timeout=30)
    t1 = time.time()
    time.sleep(max(0.0, t0 + for_s - time.time()))
    t2 = time.time()
    subprocess.run(["ip", "link", "set", netdev, "up"], check=True, timeout=30)
    t3 = time.time()
    Path(f"{d}/event.txt").write_text(f"down {t0:.6f} {t1:.6f} up {t2:.6f} {t3:.6f}\n")
    print(f"soak_check: {netdev} down {t0 - start:.2f}-{t1 - start:.2f} s, up "
          f"{t2 - start:.2f}-{t3 - start:.2f} s after the soak's start")
    return 0


def counter_moves(path: str) -> tuple[float, list[tuple[float, float, dict[str, int]]]]:
    """(sample interval, [(from, to, {counter: delta}) per interval]) of a counters series."""
    lines = Path(path).read_text().splitlines()[2:]
    hdr, vals = lines[0].split(","), [ln.split(",") for ln in lines[1:]]
    t = [int(v[1]) / 1e9 for v in vals]
    out = []
    for k in range(1, len(vals)):
        moved = {}
        for c in range(2, len(hdr)):
            try:
                dv = int(vals[k][c]) - int(vals[k - 1][c])
            except ValueError:
                continue
            if dv:
                moved[hdr[c].rsplit("/", 1)[-1]] = dv
        out.append((t[k - 1], t[k], moved))
    return (t[-1] - t[0]) / max(1, len(t) - 1), out


def check_netem(d: str, fraction: float, others: list[str]) -> int:
    flaps = [[float(x) for x in ln.split()[1:3] + ln.split()[4:6]]
             for ln in Path(f"{d}/event.txt").read_text().splitlines()]
    ok = True
    # each flap's stall (wall clock): the flapped flow's, once found
    spans: list[tuple[float, float]] = [(t0, t3 + RECOVER_S) for t0, _, _, t3 in flaps]
    base: float | None = None  # the flapped flow's start: times are printed from it

    def long_stalls(name: str, b: float, buckets: list) -> list[tuple[int, int]]:
        st = stalls([m for m, _, _ in buckets], fraction)
        long = [(a, n) for a, n in st if n * b >= MIN_FLAP_STALL_S - 1e-9]
        dips = [(a, n) for a, n in st if (a, n) not in long]
        print(f"soak_check: {name}: {len(buckets)} buckets of {b:g} s; stalls of "
              f">= {MIN_FLAP_STALL_S:g} s: "
              + (", ".join(f"{a * b:.2f} s for {n * b:.2f} s" for a, n in long) or "none")
              + "; shorter dips (not counted): "
              + (", ".join(f"{a * b:.2f} s for {n * b:.2f} s" for a, n in dips) or "none"))
        return long

    # every stall and dip of the other flows (wall clock): a stall of the flapped flow that
    # overlaps one is a shared cause — the starved guest, not node 1's link — and is printed,
    # not counted (the fresh-clone test-all at a90f9ad: both flows stalled 36.5-39.5 s into
    # the soak, 17 s after the last flap)
    shared_with: list[tuple[float, float]] = []
    for od in others:
        for path in sorted(glob.glob(f"{od}/s-*.pbsoak")):
            start, b, buckets = series(path)
            shared_with += [(start + a * b, start + (a + n) * b)
                            for a, n in stalls([m for m, _, _ in buckets], fraction)]
    for path in sorted(glob.glob(f"{d}/s-*.pbsoak")):
        start, b, buckets = series(path)
        base = start if base is None else base
        st = long_stalls(f"{Path(path).name} (flapped)", b, buckets)
        hits: list[tuple[int, int]] = []
        for i, (t0, t1, t2, t3) in enumerate(flaps):
            hit = [(a, n) for a, n in st if t0 - start - b - 1e-9 <= a * b <= t1 - start + b + 1e-9
                   and t2 - start <= (a + n) * b <= t3 - start + RECOVER_S + b]
            print(f"soak_check:   flap: dropping from {t0 - start:.2f}-{t1 - start:.2f} s, back "
                  f"{t2 - start:.2f}-{t3 - start:.2f} s: "
                  + (f"stall {hit[0][0] * b:.2f}-{(hit[0][0] + hit[0][1]) * b:.2f} s" if hit
                     else "FAIL: no stall begins with it and ends after it"))
            if hit:
                spans[i] = (start + hit[0][0] * b, start + (hit[0][0] + hit[0][1]) * b)
                hits.append(hit[0])
            ok = ok and bool(hit)
        shared = [(a, n) for a, n in st if (a, n) not in hits and any(
            start + a * b < z and start + (a + n) * b > w for w, z in shared_with)]
        if shared:
            print("soak_check:   stalls shared with a flow that was not flapped (the machine, "
                  "not the link; not counted): "
                  + ", ".join(f"{a * b:.2f} s for {n * b:.2f} s" for a, n in shared))
        st = [x for x in st if x not in shared]
        if len(st) != len(flaps):
            print(f"soak_check: FAIL: {len(st)} stalls in the flapped flow, {len(flaps)} flaps")
            ok = False
    for od in others:
        for path in sorted(glob.glob(f"{od}/s-*.pbsoak")):
            start, b, buckets = series(path)
            long_stalls(f"{Path(path).name} (not flapped)", b, buckets)
            every = stalls([m for m, _, _ in buckets], fraction)  # dips too
            for w, z in spans:
                both = sum(max(0.0, min(z, start + (a + n) * b) - max(w, start + a * b))
                           for a, n in every)
                share = both / (z - w) if z > w else 1.0
                t = start if base is None else base
                print(f"soak_check:   {Path(path).name} (not flapped) stalled {both:.2f} s of "
                      f"the flap's stall {w - t:.2f}-{z - t:.2f} s ({share:.0%}; "
                      f"limit {OTHER_SHARE:.0%})")
                if share >= OTHER_SHARE:
                    print("soak_check: FAIL: a flow that was not flapped stalled with the flap")
                    ok = False
    for rd in [d, *others]:
        for path in glob.glob(f"{rd}/rows*.csv"):
            with open(path, newline="") as f:
                for r in csv.DictReader(f):
                    if r["status"] != "ok":
                        print(f"soak_check: FAIL: {Path(path).name} pair {r['pair_id']}: "
                              f"{r['error']}")
                        ok = False
    for path in glob.glob(f"{d}/c-*.pbcnt.csv"):
        step, moves = counter_moves(path)
        for (t0, _, _, _), (_, end) in zip(flaps, spans, strict=True):
            near = [(a, z, m) for a, z, m in moves if z > t0 and a < end + step]
            moved: dict[str, int] = {}
            for _, _, m in near:
                for n, v in m.items():
                    moved[n] = moved.get(n, 0) + v
            print(f"soak_check:   counters of {Path(path).name} from the drop to the stall's end "
                  f"(+{step:g} s): " + ", ".join(f"{n} {v:+d}" for n, v in sorted(moved.items())
                                                 if not n.endswith(TRAFFIC)))
            if not moved.get("completer_retry_err"):
                print("soak_check: FAIL: no retransmission (completer_retry_err) with the flap")
                ok = False
    return 0 if ok else 1


def check_stop(d: str, fraction: float, pair: int, at: float | None = None,
               length_s: float | None = None) -> int:
    """at, length_s: the stop's time after the soak's start and its length (the pause hook);
    None: from DIR/event.txt (the stopper)."""
    if at is None or length_s is None:
        w = Path(f"{d}/event.txt").read_text().split()
        t0, t2 = float(w[1]), float(w[4])
    else:
        start0 = series(sorted(glob.glob(f"{d}/s-*B-pair*.pbsoak"))[0])[0]
        t0, t2 = start0 + at, start0 + at + length_s
    ok, hit_span = True, None
    found: dict[int, list[tuple[int, int]]] = {}
    for path in sorted(glob.glob(f"{d}/s-*B-pair*.pbsoak")):
        p = int(path.rsplit("pair", 1)[1].split(".")[0])
        start, b, buckets = series(path)
        st = stalls([m for m, _, _ in buckets], fraction)
        found[p] = st
        lo, length = t0 - start, t2 - t0
        print(f"soak_check: pair {p}: {len(buckets)} buckets of {b:g} s; stopped at {lo:.2f} s "
              f"for {length:.2f} s; stalls: "
              + (", ".join(f"{a * b:.1f} s for {n * b:.1f} s" for a, n in st) or "none"))
        if p == pair:
            hit = [(a, n) for a, n in st if abs(a * b - lo) <= b + 1e-9
                   and abs(n * b - length) <= 2 * b + 1e-9]
            if not hit:
                print("soak_check: FAIL: the stopped flow has no stall at the stop")
                ok = False
            else:
                hit_span = (hit[0][0] * b, (hit[0][0] + hit[0][1]) * b)
    for p, st in found.items():
        if p != pair and hit_span:
            b = series(glob.glob(f"{d}/s-*B-pair{p}.pbsoak")[0])[1]
            if any(a * b < hit_span[1] and (a + n) * b > hit_span[0] for a, n in st):
                print(f"soak_check: FAIL: pair {p} stalled with the stopped flow")
                ok = False
    for r in rows(d):
        if (int(r["pair_id"]) == pair and r["status"] != "ok"
                and not r["error"].startswith("no result from pair")):  # another pair's abort
            print(f"soak_check: FAIL: pair {r['pair_id']}: {r['error']}")
            ok = False
    return 0 if ok else 1


def check_flap(d: str) -> int:
    w = Path(f"{d}/event.txt").read_text().split()
    t0, t1 = float(w[1]), float(w[2])
    ok = True
    for r in rows(d):
        if r["status"] != "error" or "completion error" not in r["error"]:
            print(f"soak_check: FAIL: pair {r['pair_id']} row {r['status']}: {r['error']}")
            ok = False
    for path in sorted(glob.glob(f"{d}/s-*B-pair*.pbsoak")):
        start, b, buckets = series(path)
        last = max((i for i, (m, _, _) in enumerate(buckets) if m), default=-1)
        end = (last + 1) * b
        print(f"soak_check: {Path(path).name}: traffic until {end:.2f} s; the link went down "
              f"between {t0 - start:.2f} and {t1 - start:.2f} s")
        if not t0 - start - b <= end <= t1 - start + 1.0:
            print("soak_check: FAIL: the flow did not stop at the link's down")
            ok = False
    for path in glob.glob(f"{d}/c-*.pbcnt.csv"):
        lines = Path(path).read_text().splitlines()[2:]
        hdr, vals = lines[0].split(","), [ln.split(",") for ln in lines[1:]]
        col = next(i for i, h in enumerate(hdr) if h.endswith("/hw_counters/link_downed"))
        t = [int(v[1]) / 1e9 for v in vals]
        moved = [t[k] for k in range(1, len(vals)) if vals[k][col] != vals[k - 1][col]]
        step = (t[-1] - t[0]) / max(1, len(t) - 1)
        print(f"soak_check: link_downed moved in intervals ending at "
              f"{[round(x - t0, 2) for x in moved]} s after the down command")
        if not any(t0 <= x <= t1 + 2 * step for x in moved):
            print("soak_check: FAIL: link_downed did not move with the down")
            ok = False
    return 0 if ok else 1


def check_corrupt(d: str, pair: int, suffix: str = "") -> int:
    """suffix "-rx": the checks are the receiver's series (send_bw: its server's)."""
    ok = True
    for r in rows(d):
        bad = int(r["pair_id"]) == pair
        if bad and (r["status"] != "error" or "DATA CORRUPTED" not in r["error"]):
            print(f"soak_check: FAIL: pair {pair}'s row does not say the corruption: {r['error']}")
            ok = False
        # another pair: ok, or without a result because the corruption stopped the group
        # (the engine's abort: "no result from pair N (pair M ...: DATA CORRUPTED ...)"; or,
        # send_bw, a client still waiting for its server's totals: "aborted while waiting for
        # the peer's data checks (--validate-live): pair M at ...: DATA CORRUPTED ...")
        aborted = (r["error"].startswith("aborted while waiting")
                   and f"pair {pair} at " in r["error"] and "DATA CORRUPTED" in r["error"])
        if (not bad and r["status"] != "ok" and not r["error"].startswith("no result from pair")
                and not aborted):
            print(f"soak_check: FAIL: pair {r['pair_id']}: {r['error']}")
            ok = False
    found = sorted(glob.glob(f"{d}/s-*B-pair*.pbsoak{suffix}"))
    if not found:
        print(f"soak_check: FAIL: no series s-*B-pair*.pbsoak{suffix} in {d}")
        ok = False
    for path in found:
        p = int(path.rsplit("pair", 1)[1].split(".")[0])
        buckets = series(path)[2]
        checked = sum(c for _, c, _ in buckets)
        corrupt = [(i, x) for i, (_, _, x) in enumerate(buckets) if x]
        print(f"soak_check: pair {p}: {checked} checked, corrupt (bucket, n): {corrupt}")
        if not checked or bool(corrupt) != (p == pair):
            print("soak_check: FAIL: checks or corruptions not where they should be")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    a = sys.argv
    cmds = {"stop": lambda: stop(a[2], int(a[3]), int(a[4]), float(a[5]), float(a[6])),
            "flap": lambda: flap(a[2], float(a[3]), float(a[4])),
            "check-stop": lambda: check_stop(a[2], float(a[3]), int(a[4]),
                                             *(float(x) for x in a[5:7])),
            "check-flap": lambda: check_flap(a[2]),
            "check-netem": lambda: check_netem(a[2], float(a[3]), a[4:]),
            "check-corrupt": lambda: check_corrupt(a[2], int(a[3]), *a[4:5])}
    sys.exit(cmds[a[1]]())
