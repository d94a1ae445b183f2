#!/usr/bin/env python3
"""Check a pairbench-verbs CSV with the one row checker (tests/support/rowcheck.py):
header = --print-schema, one row per pair plus 'all' per size, and every row
invariant of the contract for the test as the binary's test table describes it.

usage: check_rows.py --binary PAIRBENCH --csv FILE --test NAME --pairs N --sizes 1,4096 [--qps Q]
                    [--buffers fresh|peer]
Every verbs row carries its QP count (--qps Q, default 1) in the qps column.
--buffers: the layout the run asked for; every row must carry it (tests without a layout
choice: empty), default: the test's default layout.
--devices A,B --env-json FILE: the run was -d all over devices A,B: every pair row names its
device round-robin, one node aggregate and one per device, --env-json lists both.
Exit 0 when every check passes, 1 with one line per failure otherwise.

check_rows.py --serve FIFO: one process checks for a whole batch (a Python start costs ~1 s in
the emulated rig, where every verbs test would pay it): it creates FIFO (replacing any file
there) and answers requests until killed.  A request is one line written to FIFO: a reply
FIFO's path, then the arguments above, tab-separated; the reply is the check's output, then a
line "\x04rc N".  The client is tests/verbs/vb-common.sh (check_rows), which falls back to a
process of its own without a server.
Standard library only (runs with the system python3 inside the rig).
"""
import argparse
import contextlib
import csv
import functools
import io
import json
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))  # rowcheck

import rowcheck

from pairbench.contract import testtable


def default_window(rows: list[dict[str, str]], info: testtable.TestInfo,
                   lat_samples: int) -> list[str]:
    """No -n/-D (docs/methodology.md "Windows"): bandwidth points ran one common 0.2 s window,
    latency points sampled 0.1 s and at least lat_samples per pair; each aggregate lasted at
    least its window (rowcheck allows 0.1 % for the barrier's exit delay; this says so
    outright)."""
    bw = info.kind in testtable.BANDWIDTH_KINDS
    want = ("window", "0.2") if bw else \
        ("target", "0.2" if info.kind == testtable.LOADED_KIND else "0.1")
    out = []
    for i, r in enumerate(rows):
        where = f"row {i + 2} (pair {r['pair_id']}, {r['msg_size_bytes']} B)"
        if (r["window_method"], r["window_s"]) != want:
            out.append(f"{where}: timed by {r['window_method']} {r['window_s']!r}, expected "
                       f"{want[0]} {want[1]!r}")
        if r["pair_id"] == "all" and r["duration_s"] and \
                float(r["duration_s"]) + float(r["start_delay_us"] or "nan") / 1e6 < \
                float(want[1]) * (1 - 1e-8):
            out.append(f"{where}: the point lasted {r['duration_s']} s from "
                       f"{r['start_delay_us']} us after the common start, its window "
                       f"{want[1]} s")
        if not bw and r["pair_id"] != "all" and r["lat_us_p50"] and \
                int(r["iterations"]) < lat_samples:
            out.append(f"{where}: {r['iterations']} latency samples, expected >= {lat_samples}")
    durs = [float(r["duration_s"]) for r in rows if r["pair_id"] == "all" and r["duration_s"]]
    if durs:
        delays = [float(r["start_delay_us"]) for r in rows
                  if r["pair_id"] == "all" and r["start_delay_us"]]
        print(f"check_rows: aggregate duration_s {min(durs):.6f} .. {max(durs):.6f} s, "
              f"start_delay_us {min(delays, default=float('nan')):.1f} .. "
              f"{max(delays, default=float('nan')):.1f} ({want[0]} {want[1]} s)",
              file=sys.stderr)
    return out


def device_columns(rows: list[dict[str, str]], env_json: str, want: list[str]) -> list[str]:
    """-d all over the devices `want` (vb-multidev.sh rows): pair p on want[p mod n], both
    sides, port 1, a GID address; one node aggregate named A+B and one aggregate per device
    at every size; --env-json lists the devices with their identity fields and places pairs
    on both."""
    bad = []
    for r in rows:
        if r["pair_id"] != "all":
            exp = want[int(r["pair_id"]) % len(want)]
            if (r["device"], r["peer_device"], r["port"]) != (exp, exp, "1") \
                    or not r["port_addr"].startswith("gid:"):
                bad.append(f"pair {r['pair_id']}: device/peer/port/addr {r['device']}/"
                           f"{r['peer_device']}/{r['port']}/{r['port_addr']}, expected {exp}")
    for size in sorted({r["msg_size_bytes"] for r in rows}):
        point = [r for r in rows if r["msg_size_bytes"] == size]
        node = [r for r in point if r["scope"] == "all"]
        per_dev = sorted(r["device"] for r in point if r["scope"] == "device")
        if len(node) != 1 or node[0]["device"] != "+".join(want):
            bad.append(f"{size} B: node aggregate {[(r['pair_id'], r['device']) for r in node]}")
        if per_dev != sorted(want):
            bad.append(f"{size} B: device aggregates for {per_dev}, expected {sorted(want)}")
    try:
        with open(env_json) as f:
            env = json.load(f)
    except (OSError, ValueError) as e:
        return [*bad, f"--env-json {env_json}: {e}"]
    names = [d["name"] for d in env.get("devices", [])]
    if names != want:
        bad.append(f"--env-json devices {names}, expected {want}")
    for d in env.get("devices", []):
        missing = [k for k in ("fw_ver", "pci_busid", "pcie_link_speed", "pcie_link_width",
                               "numa_node", "port_addr") if k not in d]
        if missing:
            bad.append(f"--env-json device {d.get('name')}: no {missing}")
    placed = sorted({p.get("device") for p in env.get("placement", [])})
    if placed != sorted(want):
        bad.append(f"--env-json placement devices {placed}, expected {sorted(want)}")
    return bad


@functools.cache
def _schema(binary: str, mtime_ns: int) -> tuple[str, ...]:
    """--print-schema once per binary (and build of it) for a whole --serve batch."""
    return tuple(rowcheck.schema_columns(binary))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--pairs", type=int, required=True)
    ap.add_argument("--sizes", required=True)
    ap.add_argument("--qps", type=int, default=1)
    ap.add_argument("--buffers", choices=["fresh", "peer"])
    ap.add_argument("--defaults", action="store_true",
                    help="the run had no -n/-D: every row timed by the default window "
                         "(bandwidth: window 0.2 s; latency: target 0.1 s, >= --lat-samples)")
    ap.add_argument("--lat-samples", type=int, default=1000)
    ap.add_argument("--devices", help="-d all over these devices (comma-separated): "
                    "the device columns and aggregates, with --env-json")
    ap.add_argument("--env-json", help="the run's --env-json file (with --devices)")
    a = ap.parse_args(argv)
    if bool(a.devices) != bool(a.env_json):
        print("check_rows: --devices and --env-json go together", file=sys.stderr)
        return 1
    info = testtable.load_snapshot()["verbs"].get(a.test)
    if info is None:
        print(f"check_rows: unknown verbs test {a.test!r}", file=sys.stderr)
        return 1
    cols = list(_schema(a.binary, os.stat(a.binary).st_mtime_ns))
    if not os.path.isfile(a.csv) or os.path.getsize(a.csv) == 0:
        print(f"{a.csv}: missing or empty (the run wrote no rows)", file=sys.stderr)
        return 1
    with open(a.csv, newline="") as f:
        reader = csv.DictReader(f)
        failures = rowcheck.check_header(reader.fieldnames, cols)
        rows = list(reader) if not failures else []
    if not failures:
        sizes = [int(s) for s in a.sizes.split(",")]
        failures = rowcheck.check_rows(rows, info, "verbs", a.pairs, sizes)
        failures += [f"row {i + 2} (pair {r['pair_id']}, {r['msg_size_bytes']} B): "
                     f"qps {r.get('qps')!r}, expected '{a.qps}'"
                     for i, r in enumerate(rows) if r.get("qps") != str(a.qps)]
        want = (a.buffers or info.default_buffers) if info.buffers else ""
        failures += [f"row {i + 2}: buffers {r['buffers']!r}, the run asked for {want!r}"
                     for i, r in enumerate(rows) if r["buffers"] != want]
        if a.defaults:
            failures += default_window(rows, info, a.lat_samples)
        if a.devices:
            failures += device_columns(rows, a.env_json, a.devices.split(","))
    for msg in failures:
        print(f"check_rows: FAIL: {msg}", file=sys.stderr)
    if not failures:
        print(f"check_rows: {a.test} pairs={a.pairs} sizes={a.sizes} qps={a.qps}: "
              f"{len(rows)} rows OK",
              file=sys.stderr)
    return 1 if failures else 0


def serve(fifo: str) -> int:
    """Answer check requests on `fifo` until killed (module docstring)."""
    # Made under a name of its own, opened, then renamed into place: a client finds FIFO only
    # once this process holds it open.  A request written to a FIFO nobody holds open is lost
    # when its writer closes it, and that client would wait 120 s for an answer.
    staging = f"{fifo}.{os.getpid()}"
    os.mkfifo(staging)
    requests_fd = os.open(staging, os.O_RDWR)  # never blocks; never sees end-of-file
    os.rename(staging, fifo)
    answered = failed = 0

    def stop(signum: int, _frame: object) -> None:
        print(f"check_rows --serve: answered {answered} request(s), {failed} failed",
              file=sys.stderr)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    with open(requests_fd, encoding="utf-8", newline="\n") as requests:
        for line in requests:
            reply, *argv = line.rstrip("\n").split("\t")
            out = io.StringIO()
            with contextlib.redirect_stderr(out), contextlib.redirect_stdout(out):
                try:
                    rc = main([x for x in argv if x])
                except SystemExit as e:  # argparse: the usage error is in `out`
                    rc = e.code if isinstance(e.code, int) else 1
                except Exception as e:  # one bad request must not end the batch's server
                    print(f"check_rows: error: {type(e).__name__}: {e}")
                    rc = 1
            # Counted before the answer goes out: a client that has it may stop us at once
            # (SIGTERM), and the count we print then must include it.
            answered += 1
            failed += rc != 0
            try:
                with open(reply, "w", encoding="utf-8") as f:
                    text = out.getvalue()
                    f.write(text + ("\n" if text and not text.endswith("\n") else "")
                            + f"\x04rc {rc}\n")
            except OSError as e:
                answered -= 1
                failed -= rc != 0
                print(f"check_rows --serve: cannot answer {reply}: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        sys.exit(serve(sys.argv[2]))
    sys.exit(main())
