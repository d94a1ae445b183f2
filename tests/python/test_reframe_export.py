"""`pairbench reframe RUN`: a run's medians as ReFrame performance values and as a ReFrame
reference table (integrations/reframe reads both; tests/integrations/test-reframe runs
ReFrame itself). The values are the medians over repetitions of the headline aggregate
rows with status ok — what accept judges — and the tolerances are compare's thresholds on
the worse side only."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from conftest import assert_clean_error, cli
from pairbench.commands.reframe import bounds, size_token, variable_name
from pairbench.contract.columns import COLUMNS, DRIVER_COLUMNS, SCHEMA_VERSION


def _row(test: str, size: int, pairs: int, rep: int, pair_id: str = "all", **cells) -> dict:
    row = dict.fromkeys((*COLUMNS, *DRIVER_COLUMNS), "")
    row.update(schema_version=str(SCHEMA_VERSION), layer="mpi", test=test, buffers="fresh",
               msg_size_bytes=str(size), pairs=str(pairs), pair_id=pair_id,
               scope="all" if pair_id == "all" else "pair", iterations="100", status="ok",
               host="n1", run_id="r", repetition=str(rep))
    row.update({k: str(v) for k, v in cells.items()})
    return row


@pytest.fixture
def run(tmp_path: Path) -> Path:
    rows = []
    for rep, (lat, bw) in enumerate([(1.0, 10.0), (2.0, 30.0), (10.0, 20.0)], start=1):
        rows += [_row("latency", 1024, 1, rep, lat_kind="half_rtt", lat_us_p50=lat,
                      lat_us_p99=lat * 2, lat_us_min=lat / 2),
                 _row("latency", 1024, 1, rep, pair_id="0", lat_kind="half_rtt",
                      lat_us_p50=99, lat_us_p99=99, lat_us_min=99),
                 _row("bw", 65536, 2, rep, bw_gbit_s=bw, min_pair_bw_gbit_s=bw / 2),
                 # a point that failed: no variable, and no median over its error rows
                 _row("bw", 8, 2, rep, status="error", error="rank 1 died")]
    run = tmp_path / "run"
    run.mkdir()
    with open(run / "data.csv", "w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return run


def test_values_are_the_medians_of_the_aggregate_rows(run: Path) -> None:
    proc = cli("reframe", str(run), "--format", "values")
    assert proc.returncode == 0, proc.stderr
    got = {ln.split()[0]: (float(ln.split()[1]), ln.split()[2])
           for ln in proc.stdout.splitlines()}
    assert got == {"latency_1K_1p_lat_us_p50": (2.0, "us"),
                   "latency_1K_1p_lat_us_p99": (4.0, "us"),
                   "bw_64K_2p_bw_gbit_s": (20.0, "Gbit/s"),
                   "bw_64K_2p_min_pair_bw_gbit_s": (10.0, "Gbit/s")}


def test_reference_has_compare_thresholds_on_the_worse_side(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "ref.json"
    proc = cli("reframe", str(run), "--metrics", "lat_us_p50,lat_us_min,bw_gbit_s",
               "--rel", "bw_gbit_s=10%", "--system", "cluster:gpu", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    table = json.loads(out.read_text())
    ref = table["reference"]["cluster:gpu"]
    assert ref["latency_1K_1p_lat_us_p50"] == [2.0, None, 0.05, "us"]  # compare's default 5 %
    assert ref["latency_1K_1p_lat_us_min"] == [1.0, None, 0.05, "us"]
    lo = ref["bw_64K_2p_bw_gbit_s"][1]
    assert ref["bw_64K_2p_bw_gbit_s"][0] == 20.0 and ref["bw_64K_2p_bw_gbit_s"][2] is None
    assert math.isclose(20.0 * (1 + lo), 20.0 / 1.1, rel_tol=1e-5)  # base / (1 + t)
    assert table["variables"]["bw_64K_2p_bw_gbit_s"]["pairs"] == 2
    assert not any(n.startswith("bw_8_") for n in ref)


def test_bounds_absolute_threshold_and_direction() -> None:
    assert bounds("lat_us_p50", 2.0, 0.05, 0.5) == (None, 0.25)  # abs/base wins
    lo, hi = bounds("msg_rate_per_s", 100.0, 0.25, 0.0)
    assert hi is None and math.isclose(lo, -0.2)
    assert size_token(8) == "8" and size_token(4096) == "4K" and size_token(1536) == "1536"
    assert size_token(1 << 20) == "1M"
    point = {"test": "bw", "variant": "ack_each_window", "pattern": "shift:1",
             "buffers": "peer", "qps": "", "msg_size_bytes": 4096, "pairs": 4}
    assert variable_name(point, "bw_gbit_s") == "bw+ack_each_window+shift-1+peer_4K_4p_bw_gbit_s"


def test_a_run_without_values_is_a_usage_error(run: Path, tmp_path: Path) -> None:
    assert_clean_error(cli("reframe", str(run), "--metrics", "fairness"), "no ok aggregate row")
    assert_clean_error(cli("reframe", str(tmp_path / "missing")), "missing")
