"""The one row checker (pairbench.rowcheck): rows that follow the C rules pass, each
broken invariant is caught, and ctest's verbs and MPI checks use it rather than copies."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import rowcheck

from conftest import FAKE, REPO
from pairbench.contract import testtable
from pairbench.contract.columns import COLUMNS, SCHEMA_VERSION

TABLES = testtable.load_snapshot()
COLLECTIVE = next(t for t in TABLES["mpi"] if t.aggregate_iterations == "shared" and t.payload)


def fake_rows(tmp_path: Path, layer: str, test: str, pairs: int) -> list[dict[str, str]]:
    out = tmp_path / f"{layer}-{test}.csv"
    env = {**os.environ, "FAKE_PB_LAYER": layer, "FAKE_PB_SLOW_PAIR": "1"}
    subprocess.run([sys.executable, str(FAKE), "--test", test, "--sizes", "8,4K", "--pairs",
                    str(pairs), "-o", str(out)], env=env, check=True, timeout=60,
                   capture_output=True)
    return list(csv.DictReader(out.open()))


def collective_point(ranks: int = 2, n: int = 50) -> list[dict[str, str]]:
    """A valid collective point by the C rules: every rank and the aggregate ran N."""
    rows = []
    for pid in [*map(str, range(ranks)), "all"]:
        r = dict.fromkeys(COLUMNS, "")
        r.update(schema_version=str(SCHEMA_VERSION), layer="mpi", test=COLLECTIVE.name,
                 msg_size_bytes="8", pairs=str(ranks), pair_id=pid, iterations=str(n),
                 status="ok", lat_kind="op", lat_us_min="1", lat_us_p50="2", lat_us_p90="3",
                 lat_us_p99="", lat_us_p999="", lat_us_max="9", lat_us_mean="2.5",
                 duration_s="0.001", host="h")
        if pid == "all":
            r["start_skew_us"] = "0.5"
        rows.append(r)
    return rows


@pytest.mark.parametrize("layer,pairs", [("verbs", 1), ("verbs", 4), ("mpi", 2)])
def test_fake_rows_pass(layer: str, pairs: int, tmp_path: Path) -> None:
    for info in TABLES[layer]:
        if info.name not in {"write_lat", "write_bw", "read_lat", "latency", "bw"}:
            continue  # the fake implements these
        rows = fake_rows(tmp_path, layer, info.name, pairs)
        assert rowcheck.check_rows(rows, info, layer, pairs, [8, 4096]) == []


def test_a_fixed_count_that_ends_apart_must_be_flagged(tmp_path: Path) -> None:
    """-n: the fake's pairs (one slow) end apart; the aggregate carries tail_dominated, and
    a row set without it is caught."""
    out = tmp_path / "bw.csv"
    env = {**os.environ, "FAKE_PB_LAYER": "verbs", "FAKE_PB_SLOW_PAIR": "1"}
    subprocess.run([sys.executable, str(FAKE), "--test", "write_bw", "--sizes", "8,4K",
                    "--pairs", "4", "-n", "1000", "-o", str(out)], env=env, check=True,
                   timeout=60, capture_output=True)
    rows = list(csv.DictReader(out.open()))
    info = next(t for t in TABLES["verbs"] if t.name == "write_bw")
    agg = [r for r in rows if r["pair_id"] == "all"]
    assert all(r["window_method"] == "count" and "tail_dominated" in r["flags"] for r in agg)
    assert rowcheck.check_rows(rows, info, "verbs", 4, [8, 4096]) == []
    agg[0]["flags"] = ""
    bad = rowcheck.check_rows(rows, info, "verbs", 4, [8, 4096])
    assert any("tail_dominated missing" in m for m in bad), bad


def test_a_collective_point_passes_by_the_shared_rule() -> None:
    assert rowcheck.check_point(collective_point(), COLLECTIVE, "mpi", 2, 8) == []
    rows = collective_point()
    rows[-1]["iterations"] = "100"  # summed, as if pairs
    bad = rowcheck.check_point(rows, COLLECTIVE, "mpi", 2, 8)
    assert any("shared" in m for m in bad), bad


def _set(col: str, value: str, pair: str = "all") -> Callable[[list[dict]], None]:
    def edit(rows: list[dict]) -> None:
        next(r for r in rows if r["pair_id"] == pair and r["msg_size_bytes"] == "8")[col] = value
    return edit


@pytest.mark.parametrize("test,edit,needle", [
    ("write_lat", _set("lat_us_p50", "1e9", "0"), "latency not 0 < min <= p50"),
    ("write_lat", _set("iterations", "1"), "aggregate iterations 1 != sum"),
    ("write_lat", _set("worst_lat_pair_id", "0"), "worst_lat"),
    ("write_lat", _set("bw_gbit_s", "3", "1"), "bandwidth or message rate not > 0"),
    ("write_lat", _set("msg_rate_per_s", "3", "1"), "filled in a row without bandwidth"),
    ("write_lat", _set("lat_kind", "op", "1"), "lat_kind 'op'"),
    ("write_lat", _set("fairness", "1", "2"), "fairness"),
    ("write_lat", _set("start_skew_us", ""), "start_skew_us"),
    ("write_lat", _set("status", "error"), "status error"),
    ("write_lat", _set("layer", "mpi", "3"), "schema_version/layer/test/pairs"),
    ("write_bw", _set("bw_mbyte_s", "1"), "sum of bytes / window"),
    ("write_bw", _set("fairness", "1.5"), "fairness '1.5' not in (0, 1]"),
    ("write_bw", _set("min_bw_pair_id", "3"), "slowest pair"),
    ("write_bw", _set("msg_rate_per_s", "5", "2"), "msg_rate x duration"),
    ("write_bw", _set("lat_us_p50", "2", "2"), "latency not 0 < min"),
    ("write_bw", _set("lat_us_p99", "2", "2"), "filled in a row without latency"),
    ("write_bw", lambda rows: rows.pop(0), "pair_id values"),
    # how the point was timed (docs/methodology.md "Windows"; the fake runs the defaults)
    ("write_bw", _set("window_s", "0.3", "1"), "window window '0.3'"),
    ("write_bw", _set("window_method", "count"), "window_method count with window_s '0.2'"),
    ("write_bw", _set("window_method", "by_eye"), "window_method 'by_eye'"),
    ("write_bw", _set("flags", "tail_dominated"), "tail_dominated set"),
    ("write_bw", _set("end_spread_us", "1e9"), "end spread"),
    ("write_lat", _set("duration_s", "0.05", "2"), "stopped earlier without sample_cap"),
])
def test_each_broken_invariant_is_caught(test: str, edit: Callable, needle: str,
                                         tmp_path: Path) -> None:
    rows = fake_rows(tmp_path, "verbs", test, 4)
    info = TABLES["verbs"][test]
    assert rowcheck.check_rows(rows, info, "verbs", 4, [8, 4096]) == []
    edit(rows)
    bad = rowcheck.check_rows(rows, info, "verbs", 4, [8, 4096])
    assert any(needle in m for m in bad), bad


def test_one_pair_has_no_worst_pair_columns(tmp_path: Path) -> None:
    rows = fake_rows(tmp_path, "verbs", "write_bw", 1)
    rows[1]["min_pair_bw_share"] = "1"
    bad = rowcheck.check_rows(rows, TABLES["verbs"]["write_bw"], "verbs", 1)
    assert bad == ["write_bw 8 B pairs=1: slowest-pair columns filled without >= 2 bandwidth "
                   "pairs"]


def test_header_and_schema_come_from_one_parser() -> None:
    assert rowcheck.schema_columns(FAKE) == list(COLUMNS)
    assert rowcheck.check_header(list(COLUMNS)) == []
    assert rowcheck.check_header(list(COLUMNS)[:-1])
    # --print-schema is parsed in pairbench.schema only
    for path in [*(REPO / "scripts" / "pairbench").glob("*.py"),
                 REPO / "tests" / "verbs" / "check_rows.py",
                 REPO / "tests" / "mpi" / "mpi_check.py"]:
        text = path.read_text()
        if path.name != "schema.py":
            assert "pairbench-schema " not in text, path


@pytest.mark.parametrize("checker", ["tests/verbs/check_rows.py", "tests/mpi/mpi_check.py"])
def test_ctest_checkers_use_the_one_row_checker(checker: str) -> None:
    text = (REPO / checker).read_text()
    assert "import rowcheck" in text
    for copy in ("def check_worst_pair", "def check_aggregate_count", "def check_point",
                 "PAIR_TESTS", "BW_TESTS"):
        assert copy not in text, (checker, copy)


def test_checkers_run_with_the_system_python(tmp_path: Path) -> None:
    """ctest runs them with the system python3 (no venv): stdlib only."""
    py = "/usr/bin/python3"
    if not Path(py).is_file():
        pytest.skip("no /usr/bin/python3")
    rows = tmp_path / "rows.csv"
    subprocess.run([sys.executable, str(FAKE), "--test", "write_lat", "--sizes", "8",
                    "--pairs", "2", "-o", str(rows)], check=True, timeout=60)
    proc = subprocess.run([py, "-I", str(REPO / "tests" / "verbs" / "check_rows.py"),
                           "--binary", str(FAKE), "--csv", str(rows), "--test", "write_lat",
                           "--pairs", "2", "--sizes", "8"], capture_output=True, text=True,
                          timeout=60, check=False, env={"PATH": os.environ["PATH"]})
    assert proc.returncode == 0, proc.stderr
    assert "rows OK" in proc.stderr


@pytest.mark.parametrize("layer,test,value,needle", [
    ("mpi", "latency", "", "buffers '', expected one of fresh, peer"),
    ("mpi", "bw", "reuse", "buffers 'reuse', expected one of fresh, peer"),
    ("verbs", "read_lat", "fresh", "buffers 'fresh' in a test without a layout choice"),
    ("verbs", "write_lat", "reuse", "buffers 'reuse', expected one of fresh, peer"),
])
def test_rows_carry_the_layout(layer: str, test: str, value: str, needle: str,
                               tmp_path: Path) -> None:
    """Issue 16: a test with a layout choice has fresh or peer in every row, others none."""
    rows = fake_rows(tmp_path, layer, test, 2)
    info = TABLES[layer][test]
    assert rowcheck.check_rows(rows, info, layer, 2, [8, 4096]) == []
    if info.buffers:
        assert {r["buffers"] for r in rows} == {"fresh"}  # the default layout
    rows[1]["buffers"] = value
    bad = rowcheck.check_rows(rows, info, layer, 2, [8, 4096])
    assert any(needle in m for m in bad), bad


# --- node aggregates (pairbench-mpi --pattern): a real run on 4 emulated nodes ---------

PATTERN_CSV = Path(__file__).parent / "data" / "pattern-bw-4nodes.csv"


def pattern_rows() -> list[dict[str, str]]:
    """bw with --pattern incast/fanout/alltoall, 12 ranks on 4 netns nodes (3 rounds).
    The file was made before the buffers column was filled: its layout was the only one
    there was then, fresh; and before schema 4's window columns (a fixed count: empty
    cells, which the window check skips)."""
    rows = list(csv.DictReader(PATTERN_CSV.open()))
    for r in rows:
        r["buffers"] = r["buffers"] or "fresh"
        r["schema_version"] = str(SCHEMA_VERSION)
        for c in COLUMNS:
            r.setdefault(c, "")
    return rows


def bw_info() -> testtable.TestInfo:
    return next(t for t in TABLES["mpi"] if t.name == "bw")


def test_pattern_rows_with_node_aggregates_pass() -> None:
    rows = pattern_rows()
    assert {r["scope"] for r in rows} == {"pair", "all", "node"}
    assert rowcheck.check_rows(rows, bw_info(), "mpi", None, [65536]) == []


def _break(rows: list[dict[str, str]], pattern: str, host: str) -> dict[str, str]:
    return next(r for r in rows if r["pattern"] == pattern and r["scope"] == "node"
                and r["host"] == host)


@pytest.mark.parametrize("breakage,message", [
    (lambda rows: rows.remove(_break(rows, "alltoall", "node3")), "node aggregates for hosts"),
    (lambda rows: _break(rows, "alltoall", "node2").update(host="node9"),
     "node aggregates for hosts"),
    (lambda rows: _break(rows, "alltoall", "node1").update(bw_mbyte_s="99"),
     "sum of bytes / window"),
    (lambda rows: _break(rows, "alltoall", "node1").update(iterations="21"),
     "iterations"),
    (lambda rows: _break(rows, "incast", "node2").update(scope="device"), "device aggregates for"),
    (lambda rows: next(r for r in rows if r["pattern"] == "fanout").update(pattern="incast"),
     "pair_id values"),
])
def test_broken_node_aggregates_are_caught(breakage: Callable, message: str) -> None:
    rows = pattern_rows()
    breakage(rows)
    fails = rowcheck.check_rows(rows, bw_info(), "mpi", None, [65536])
    assert any(message in f for f in fails), fails


LATENCY = next(t for t in TABLES["mpi"] if t.name == "latency")


def block_point() -> list[dict[str, str]]:
    """A --timing block latency point by the C rules: the mean alone on every row, flagged,
    the aggregate the iteration-weighted mean of the pairs' means."""
    rows = []
    for pid, n, mean in (("0", 100, "2"), ("1", 300, "4"), ("all", 400, "3.5")):
        r = dict.fromkeys(COLUMNS, "")
        r.update(schema_version=str(SCHEMA_VERSION), layer="mpi", test="latency",
                 msg_size_bytes="8", pairs="2", pair_id=pid, iterations=str(n), status="ok",
                 lat_kind="half_rtt", lat_us_mean=mean, duration_s="0.001", host="h",
                 buffers="fresh", flags="block_timed",
                 scope="all" if pid == "all" else "pair")
        if pid == "all":
            r["start_skew_us"] = "0.5"
        else:
            r["peer"] = "h"
        rows.append(r)
    return rows


def test_a_block_timed_point_passes() -> None:
    assert LATENCY.timing == ("iteration", "block")
    assert rowcheck.check_point(block_point(), LATENCY, "mpi", 2, 8) == []


@pytest.mark.parametrize("edit,needle", [
    (lambda rows: rows[0].update(lat_us_p50="2"), "filled in a block-timed row"),
    (lambda rows: rows[2].update(lat_us_mean="3"), "iteration-weighted mean"),
    # an unflagged row with the mean alone is a latency row with its statistics missing
    (lambda rows: rows[1].update(flags=""), "latency not 0 < min"),
    # a pair timed per iteration among block-timed ones: not one point
    (lambda rows: rows[1].update(flags="", lat_us_min="3.9", lat_us_p50="4", lat_us_max="4.1"),
     "block_timed on some latency rows"),
    (lambda rows: rows[2].update(worst_lat_pair_id="1"), "worst-latency columns filled"),
    (lambda rows: rows[0].update(lat_us_mean="0"), "not > 0"),
])
def test_broken_block_timed_rows_are_caught(edit: Callable, needle: str) -> None:
    rows = block_point()
    edit(rows)
    bad = rowcheck.check_point(rows, LATENCY, "mpi", 2, 8)
    assert any(needle in m for m in bad), bad
