"""compare refuses to compare runs of different tools unless --across-tools (issue 38,
docs/import.md): the rows' layer names the tool that timed them."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_import_commands import DATA, imported

from conftest import assert_clean_error, cli


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("imported")
    return {
        "osu": imported(tmp, "osu", *sorted((DATA / "osu").glob("7.4-mbw_mr-r*.out"))),
        "lat": imported(tmp, "osu", *sorted((DATA / "osu").glob("7.4-latency-r*"))),
        "imb": imported(tmp, "imb", *sorted((DATA / "imb").glob("2021.9.1-src_c-pt2pt-r*"))),
        "march": imported(tmp, "perftest",
                          *sorted((DATA / "perftest").glob("march-write_bw-r*.txt"))),
        "nccl": imported(tmp, "nccl-tests", *sorted((DATA / "nccl").glob("all_reduce-J-r*"))),
    }


def test_compare_refuses_two_tools_unless_asked(runs: dict[str, Path]) -> None:
    proc = cli("compare", str(runs["osu"]), str(runs["imb"]))
    assert_clean_error(proc, "BASE was measured by osu, NEW by imb", "--across-tools")
    # across tools: OSU's 1-pair osu_mbw_mr has no IMB counterpart, IMB's PingPong none in
    # OSU's run: nothing in common, said as compare says it
    proc = cli("compare", str(runs["osu"]), str(runs["imb"]), "--across-tools")
    assert proc.returncode == 2 and "across tools" in proc.stderr
    proc = cli("compare", str(runs["lat"]), str(runs["imb"]), "--across-tools")
    assert proc.returncode in (0, 1, 3), proc.stderr
    assert "compare: warning: across tools (BASE osu, NEW imb)" in proc.stderr
    assert "compare: method: OSU:" in proc.stderr and "compare: method: IMB:" in proc.stderr
    assert "latency" in proc.stdout  # osu_latency and PingPong meet as the MPI latency
    proc = cli("compare", str(runs["march"]), str(runs["nccl"]))
    assert_clean_error(proc, "perftest", "nccl-tests", "--across-tools")


def test_a_pairbench_run_and_an_imported_one_are_two_tools(base_run: Path,
                                                            runs: dict[str, Path]) -> None:
    proc = cli("compare", str(base_run), str(runs["march"]))
    assert_clean_error(proc, "BASE was measured by pairbench, NEW by perftest", "--across-tools")
    proc = cli("compare", str(runs["march"]), str(base_run), "--across-tools")
    # ib_write_bw meets verbs write_bw; the fake run's sizes share none with March's log
    assert "compare: method: perftest:" in proc.stderr and "compare: method: pairbench:" in \
        proc.stderr


def test_two_releases_of_one_tool_are_said(tmp_path: Path) -> None:
    osu = DATA / "osu"
    old = imported(tmp_path, "osu", osu / "5.6.3-latency.out")
    new = imported(tmp_path, "osu", *sorted(osu.glob("7.4-latency-r*")))
    proc = cli("compare", str(old), str(new))
    assert "compare: warning: osu versions differ (BASE 5.6.3, NEW 7.4)" in proc.stderr
    proc = cli("compare", str(new), str(new))
    assert "versions differ" not in proc.stderr
