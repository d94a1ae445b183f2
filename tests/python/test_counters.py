"""Port counters per point (issue 25; docs/health.md): the driver gathers the "counters"
records of the points' --env-json into counters.csv, flags the rows (error_counters,
counters_disagree), and show, report and accept say which counter moved at which point."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from conftest import cli, sweep
from pairbench.contract.counters import (
    COUNTER_COLUMNS,
    counter_class,
    data_agrees,
    data_counted,
    data_expectation,
)
from pairbench.runner.collect import flag_counters


def _run(tmp_path: Path, how: str) -> Path:
    proc, run = sweep(tmp_path, env={"FAKE_PB_COUNTERS": how, "FAKE_PB_SEED": "1"},
                      tests="write_bw", sizes="8,4K", pairs="1,2", reps="1")
    assert proc.returncode == 0, proc.stderr
    assert run is not None
    return run


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_counters_csv_and_no_flag_when_nothing_moved(tmp_path: Path) -> None:
    run = _run(tmp_path, "ok")
    rows = _rows(run / "counters.csv")
    assert list(rows[0]) == list(COUNTER_COLUMNS)
    # 2 sizes x 2 pair counts x 4 counters, one repetition
    assert len(rows) == 16
    r = next(r for r in rows if r["counter"] == "out_of_seq_request")
    assert (r["class"], r["delta"], r["device"], r["source"]) == ("error", "0", "fake0",
                                                                  "hw_counters")
    assert {r["test"] for r in rows} == {"write_bw"}
    assert not any("error_counters" in r["flags"] or "counters_disagree" in r["flags"]
                   for r in _rows(run / "data.csv"))
    spec = tmp_path / "s.toml"
    spec.write_text("[environment]\nno_error_counters = true\n")
    proc = cli("accept", str(run), "--spec", str(spec))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no error counter moved (1 error counter(s) read at 4 point(s))" in proc.stdout


def test_an_error_counter_that_moved_is_flagged_found_and_fails_accept(tmp_path: Path) -> None:
    run = _run(tmp_path, "error")
    data = _rows(run / "data.csv")
    flagged = {(r["msg_size_bytes"], r["pairs"], r["pair_id"]) for r in data
               if "error_counters" in r["flags"].split(";")}
    assert flagged == {("4096", p, i) for p, ids in (("1", ("0", "all")),
                                                    ("2", ("0", "1", "all"))) for i in ids}
    spec = tmp_path / "s.toml"
    spec.write_text("[environment]\nno_error_counters = true\n")
    proc = cli("accept", str(run), "--spec", str(spec))
    assert proc.returncode == 1
    assert ("out_of_seq_request moved by 12 at write_bw 4 KiB 1 pair(s), repetition 1"
            in proc.stdout)
    assert "fake0 port 1" in proc.stdout
    show = cli("show", str(run))
    assert show.returncode == 0, show.stderr
    text = " ".join(show.stdout.replace("│", " ").split())
    assert "error counters moved during the timed window of 2 point(s)" in text
    assert "out_of_seq_request +12 on fake0 port 1 at write_bw 4 KiB 1 pair(s)" in text
    html = cli("report", str(run), "--out", str(tmp_path / "r.html"))
    assert html.returncode == 0, html.stderr
    assert "out_of_seq_request +12 on fake0 port 1" in (tmp_path / "r.html").read_text()


def test_data_counters_that_disagree_are_flagged(tmp_path: Path) -> None:
    run = _run(tmp_path, "extra")
    data = _rows(run / "data.csv")
    assert all("counters_disagree" in r["flags"].split(";") for r in data
               if r["status"] == "ok")
    show = cli("show", str(run))
    assert "data counters disagree with what 4 point(s) moved" in " ".join(
        show.stdout.replace("│", " ").split())


def test_the_tolerance_rule() -> None:
    # 100 messages of 4 KiB at a 1024 B MTU: 400 data packets, up to one ack per message
    want = data_expectation(409600, 100, 4096, 1024)
    assert want["packets_low"] == 400
    assert want["packets_high"] == pytest.approx(500 * 1.1 + 64)
    assert data_agrees("packets", 400, want) and data_agrees("packets", 614, want)
    assert not data_agrees("packets", 399, want) and not data_agrees("packets", 615, want)
    assert data_counted({"port_xmit_data": 1000, "port_rcv_data": 10}) == ("bytes", 4000.0)
    assert data_counted({"sent_pkts": 5, "rcvd_pkts": 7}) == ("packets", 7.0)
    assert data_counted({"symbol_error": 0}) is None
    assert counter_class("symbol_error") == "error"
    assert counter_class("np_cnp_sent") == "congestion"
    assert counter_class("port_xmit_data") == "data"
    assert counter_class("lifespan_x") == "other"


def test_flags_follow_the_rows_device() -> None:
    rows = [{"msg_size_bytes": "8", "pair_id": p, "device": d, "status": "ok", "flags": "",
             "bw_mbyte_s": "", "msg_rate_per_s": "", "duration_s": ""}
            for p, d in (("0", "rxe0"), ("1", "rxe1"), ("all", "rxe0+rxe1"))]
    rec = {"counters": [{"msg_size_bytes": 8, "device": "rxe1", "port": 1,
                         "source": "hw_counters", "deltas": {"rcvd_seq_err": 1}},
                        {"msg_size_bytes": 8, "device": "rxe0", "port": 1,
                         "source": "hw_counters", "deltas": {"rcvd_seq_err": 0}}]}
    flag_counters(rows, rec)
    assert [r["flags"] for r in rows] == ["", "error_counters", "error_counters"]


@pytest.mark.parametrize("name, cls", [
    # a network device's ethtool -S names (source ethtool), classed by their words
    ("rx_prio3_pause", "congestion"), ("tx_pause_ctrl_phy", "congestion"),
    ("rx_crc_errors_phy", "error"), ("rx_discards_phy", "error"),
    ("rx_queue_*_drops", "error"), ("link_down_events_phy", "error"),
    ("rx*_packets", "data"), ("tx-*.tx_bytes", "data"),
    ("peer_ifindex", "other"), ("ch*_events", "other"),
    # words, not substrings: rxe's ack_deferred is no error
    ("ack_deferred", "other"),
    # the named sets first: rdma_sends is data, np_cnp_sent congestion, send_err error
    ("rdma_sends", "data"), ("np_cnp_sent", "congestion"), ("send_err", "error"),
])
def test_counter_class_of_names_outside_the_sets(name: str, cls: str) -> None:
    assert counter_class(name) == cls
