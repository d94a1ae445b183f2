"""Counters over time (issues 35 item 6 and 36 item 3; docs/health.md "Counters over time"):
every node's series file into counters_series.parquet, the counters that moved per point,
and a soak stall lined up with what moved on any node and with the data counters that stood
still. Synthetic files as pairbench-verbs writes them (verbs/vb_cntseries.h; the C writer is
tests/unit/test_cntseries.c); the rig's real run is tests/verbs/vb-soak.sh."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from pairbench.analysis import cntseries, soak
from pairbench.contract import soakfile
from pairbench.errors import UsageError
from pairbench.runner.plan import SOAK_DIR

START = 1_795_000_000 * 10**9  # the soak's common start, CLOCK_REALTIME ns
BUCKET_NS = 100_000_000


def _series(path: Path, pair: int, msgs: list[int]) -> None:
    """A finished flow's series file (core/pb_soak.h), 0.1 s buckets from START."""
    hdr = struct.pack("=8s8I5Qqd8s32s64s64s64s", soakfile.MAGIC, soakfile.VERSION,
                      soakfile.HEADER_BYTES, soakfile.BUCKET_BYTES, pair, 2, 1, 0, 0,
                      65536, BUCKET_NS, len(msgs), len(msgs), 5 * 10**9, START, 0.5,
                      b"verbs", b"write_bw", b"", b"vm", b"vm")
    b = np.zeros(len(msgs), dtype=soak.BUCKET_DTYPE)
    b["messages"] = msgs
    path.write_bytes(hdr.ljust(soakfile.HEADER_BYTES, b"\0") + b.tobytes())


def _counters(path: Path, host: str, cols: dict[str, list[int | None]], step_s: float = 0.5,
              tail: str = "") -> None:
    """A node's counters series: cumulative values, one line per sample from START."""
    n = len(next(iter(cols.values())))
    lines = ["# pairbench counters series 1",
             f"# host={host} interval_s={step_s:g} netdev:rxe0=dummy0",
             ",".join(["t_mono_ns", "t_unix_ns", *cols])]
    for k in range(n):
        t = int(k * step_s * 1e9)
        vals = ["" if v[k] is None else str(v[k]) for v in cols.values()]
        lines.append(",".join([str(10**12 + t), str(START + t), *vals]))
    path.write_text("\n".join(lines) + "\n" + tail)


def _flap_run(run: Path) -> None:
    """Two flows stalled from 2.0 s to 4.0 s (buckets 20-39 of 60); on node vm the link went
    down once in that span, sent_pkts stood still and tx_dropped grew; on node peer an error
    counter moved at 7.5 s, far from the stall."""
    (run / SOAK_DIR).mkdir(parents=True)
    for pair in (0, 1):
        msgs = [100] * 60
        msgs[20:40] = [0] * 20
        _series(run / SOAK_DIR / f"r1-write_bw-p2-65536B-pair{pair}.pbsoak", pair, msgs)
    k = range(13)  # samples at 0, 0.5, ..., 6.0 s
    sent = [1000 * min(i, 4) + 1000 * max(0, i - 8) for i in k]   # flat over 2.0-4.0 s
    _counters(run / SOAK_DIR / "r1-write_bw-p2-vm.pbcnt.csv", "vm", {
        "rxe0/1/hw_counters/sent_pkts": sent,
        "rxe0/1/hw_counters/link_downed": [0] * 5 + [1] * 8,
        "rxe0/1/netdev/tx_dropped": [0] * 5 + [7, 9, 9, 9] + [9] * 4,
        "rxe0/1/hw_counters/a_counter_nobody_listed": [5] * 13})
    k2 = range(17)
    _counters(run / SOAK_DIR / "r1-write_bw-p2-peer.pbcnt.csv", "peer", {
        "rxe0/1/hw_counters/rcvd_seq_err": [0] * 15 + [3, 3],
        "rxe0/1/hw_counters/rcvd_pkts": [None if i == 3 else 50 * i for i in k2]})


def test_series_into_parquet_keeps_every_nonzero_delta(tmp_path: Path) -> None:
    _flap_run(tmp_path)
    n = cntseries.convert(tmp_path / SOAK_DIR, tmp_path / cntseries.PARQUET)
    assert not cntseries.series_files(tmp_path / SOAK_DIR)
    df = cntseries.run_deltas(tmp_path)
    assert n == len(df)
    assert set(df["node"]) == {"vm", "peer"} and set(df["point"]) == {"r1-write_bw-p2"}
    down = df[df["counter"] == "link_downed"]
    assert len(down) == 1 and down["delta"].iloc[0] == 1 and down["class"].iloc[0] == "error"
    assert down["t_unix_ns"].iloc[0] == START + 2_500_000_000  # the interval 2.0-2.5 s
    assert down["interval_s"].iloc[0] == pytest.approx(0.5)
    # sent_pkts: 8 intervals of 1000, none while it stood still; a constant counter: no row
    assert sorted(df[df["counter"] == "sent_pkts"]["delta"]) == [1000] * 8
    assert "a_counter_nobody_listed" not in set(df["counter"])
    # the unreadable sample (empty cell) gives no delta on either side of it
    assert len(df[df["counter"] == "rcvd_pkts"]) == 14
    assert set(df[df["counter"] == "tx_dropped"]["source"]) == {"netdev"}


def test_a_stall_lines_up_with_what_moved_and_what_stood_still(tmp_path: Path) -> None:
    _flap_run(tmp_path)
    (sc,) = cntseries.stall_counters(tmp_path)
    assert sc.pair_ids == (0, 1) and sc.start_s == pytest.approx(2.0)
    assert sc.length_s == pytest.approx(2.0)
    names = {(m.node, m.counter): m.delta for m in sc.moved}
    # the netdev's tx_dropped is an error counter too; rcvd_seq_err at 7.5 s is far away
    assert names == {("vm", "link_downed"): 1, ("vm", "tx_dropped"): 9}
    assert ("vm", "rxe0/1 hw_counters", "sent_pkts") in sc.stopped
    assert not any(c == "rcvd_pkts" for _, _, c in sc.stopped)  # it kept moving


def test_show_and_report_say_which_counters_moved_where_and_when(tmp_path: Path) -> None:
    _flap_run(tmp_path)
    cntseries.convert(tmp_path / SOAK_DIR, tmp_path / cntseries.PARQUET)
    soak.convert(tmp_path / SOAK_DIR, tmp_path / soak.PARQUET)
    (tmp_path / "data.csv").write_text("")
    from pairbench.present import cntseries as cntout

    lines = cntout.summary_lines(tmp_path)
    assert lines[0].startswith("r1-write_bw-p2: counters of 2 node(s) (peer, vm)")
    assert "link_downed +1 (vm rxe0/1 hw_counters from 2.5 s)" in lines[0]
    assert "rcvd_seq_err +3 (peer rxe0/1 hw_counters from 7.5 s)" in lines[0]
    assert lines[1].startswith("r1-write_bw-p2 64 KiB: stall of pair(s) [0, 1] at 2 s for 2 s")
    assert "link_downed +1 (vm rxe0/1 hw_counters)" in lines[1]
    assert "sent_pkts (vm rxe0/1 hw_counters)" in lines[1]
    assert "rcvd_seq_err" not in lines[1]
    html = cntout.section_html(tmp_path)
    assert html and "link_downed +1" in html


def test_a_cut_last_line_is_dropped_and_garbage_is_named(tmp_path: Path) -> None:
    f = tmp_path / "p-n1.pbcnt.csv"
    _counters(f, "n1", {"d/1/counters/symbol_error": [0, 2, 2]}, tail="99999,12")
    t = cntseries.read_samples(f)
    assert t.num_rows == 3
    assert cntseries.read_head(f).point == "p"
    bad = tmp_path / "q-n1.pbcnt.csv"
    bad.write_text("t_mono_ns,t_unix_ns\n1,2\n")
    with pytest.raises(UsageError, match=r"q-n1\.pbcnt\.csv: not a pairbench counters series"):
        cntseries.read_head(bad)
    worse = tmp_path / "w-n1.pbcnt.csv"
    _counters(worse, "n1", {"d/1/counters/x": [0, 1]})
    worse.write_text(worse.read_text().replace(",1\n", ",one\n"))
    with pytest.raises(UsageError, match=r"w-n1\.pbcnt\.csv"):
        cntseries.read_samples(worse)


def test_sweep_passes_the_counters_series_to_verbs_soaks_only(tmp_path: Path) -> None:
    from pairbench.runner.plan import SweepConfig, plan_point

    def argv(layer: str, test: str, soak_s: float | None) -> list[str]:
        cfg = SweepConfig(layer=layer, tests=(test,), sizes=(65536,), pairs=(2,),
                          binary=f"pairbench-{layer}", run_dir=str(tmp_path), soak_s=soak_s)
        return [w for side in plan_point(cfg, 0, test, 2, 1).sides for w in side.argv]

    verbs = argv("verbs", "write_bw", 2.0)
    i = verbs.index("--counters-series")
    assert verbs[i + 1] == verbs[verbs.index("--series") + 1] == f"{tmp_path}/soak/r1-write_bw-p2"
    assert "--counters-series" not in argv("verbs", "write_bw", None)
    assert "--counters-series" not in argv("mpi", "bw", 2.0)
    # a --pattern point: every node writes its series and counters into the run's soak folder
    cfg = SweepConfig(layer="verbs", tests=("write_bw",), sizes=(4096,), pairs=(2,),
                      binary="pairbench-verbs", run_dir=str(tmp_path), launcher="mpirun",
                      hosts=("h0", "h1", "h2"), launcher_cmd="/bin/true", pattern="incast",
                      soak_s=2.0)
    words = [w for side in plan_point(cfg, 0, "write_bw", 2, 1).sides for w in side.argv]
    assert words[words.index("--series") + 1] == f"{tmp_path}/soak/r1-write_bw-p2"
    assert words[words.index("--counters-series") + 1] == f"{tmp_path}/soak/r1-write_bw-p2"
