"""show, plot, report, compare (the three-answer gate) and accept on imported runs (issue 38
item 4); compare's refusal to mix tools is in test_import_compare.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import assert_clean_error, cli

DATA = Path(__file__).resolve().parent / "data" / "import"


def imported(tmp: Path, tool: str, *files: Path | str) -> Path:
    proc = cli("import", "--from", tool, *map(str, files), "--results-dir", str(tmp))
    assert proc.returncode == 0, proc.stderr
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("imported")
    perf = DATA / "perftest"
    osu = sorted((DATA / "osu").glob("7.4-mbw_mr-r*.out"))
    return {
        "march": imported(tmp, "perftest", *sorted(perf.glob("march-write_bw-r*.txt"))),
        "today": imported(tmp, "perftest", *sorted(perf.glob("today-write_bw-r*.txt"))),
        "march_json": imported(tmp, "perftest", *sorted(perf.glob("json-4.5-0.17-write_bw-*"))),
        "today_json": imported(tmp, "perftest", *sorted(perf.glob("json-master-write_bw-*"))),
        "osu": imported(tmp, "osu", *osu),
        "osu_again": imported(tmp, "osu", *reversed(osu)),
        "imb": imported(tmp, "imb", *sorted((DATA / "imb").glob("2021.9.1-src_c-pt2pt-r*"))),
        "nccl": imported(tmp, "nccl-tests", *sorted((DATA / "nccl").glob("all_reduce-J-r*"))),
    }


def gate(proc) -> str:
    m = re.search(r"compare: gate (regression|no regression|inconclusive)", proc.stderr)
    assert m, proc.stderr
    return m.group(1)


def test_compare_gives_each_of_the_three_answers(runs: dict[str, Path]) -> None:
    # March's perftest log vs today's: 64 KiB and 4 KiB ~10 % lower, proven; 1 MiB unchanged
    proc = cli("compare", str(runs["march"]), str(runs["today"]), "--format", "json")
    assert proc.returncode == 1 and gate(proc) == "regression"
    res = json.loads(proc.stdout)
    verdicts = {(p["msg_size_bytes"], p["metric"]): p["verdict"] for p in res["points"]}
    assert verdicts[(65536, "bw_gbit_s")] == "regression"
    assert verdicts[(1048576, "bw_gbit_s")] == "no change"
    assert {p["n_base"] for p in res["points"]} == {3}
    # the same from the --out_json files (4.5-0.17's invalid JSON vs master's)
    proc = cli("compare", str(runs["march_json"]), str(runs["today_json"]))
    assert proc.returncode == 1 and gate(proc) == "regression"
    # a run against the same numbers: no regression, proven
    proc = cli("compare", str(runs["march"]), str(runs["march"]))
    assert proc.returncode == 0 and gate(proc) == "no regression"
    # four noisy real OSU repetitions against themselves reordered: too noisy to decide
    proc = cli("compare", str(runs["osu"]), str(runs["osu_again"]))
    assert proc.returncode == 3 and gate(proc) == "inconclusive"


def test_compare_and_report_imb_and_nccl_imports(runs: dict[str, Path], tmp_path: Path) -> None:
    imb_files = sorted((DATA / "imb").glob("2021.9.1-src_c-pt2pt-r*"))
    again = imported(tmp_path, "imb", *reversed(imb_files))
    proc = cli("compare", str(runs["imb"]), str(again), "--format", "json")
    res = json.loads(proc.stdout)
    assert proc.returncode == res["exit_code"] and res["gate"] == gate(proc)
    assert {p["test"] for p in res["points"]} == {"PingPong", "PingPing", "Sendrecv", "Exchange"}
    assert {p["metric"] for p in res["points"]} == {"lat_us_mean", "bw_gbit_s"}
    assert {(p["n_base"], p["n_new"]) for p in res["points"]} == {(3, 3)}
    proc = cli("compare", str(runs["nccl"]), str(runs["nccl"]))
    assert proc.returncode == 0 and gate(proc) == "no regression"
    html = tmp_path / "imb.html"
    proc = cli("report", str(again), str(runs["imb"]), "--out", str(html))
    assert proc.returncode == 0, proc.stderr
    assert "PingPong" in html.read_text()


@pytest.mark.parametrize("tool,base_files,new_files", [
    # four real osu_mbw_mr outputs against the same four in another order
    ("osu", "osu/7.4-mbw_mr-r*.out", "osu/7.4-mbw_mr-r*.out"),
    # the Soft-RoCE rig's real perftest text outputs against its --out_json and one more text
    ("perftest", "perftest/rig/write_bw-64k-r*.txt",
     "perftest/rig/write_bw-64k.json perftest/rig/write_bw-64k-r1.txt"),
    # the H200's real nccl-tests text outputs against the -J files of the same three runs
    ("nccl-tests", "nccl/2.19.6-h200-all_reduce-r*.txt", "nccl/2.19.6-h200-all_reduce-J-r*"),
])
def test_compare_and_report_of_real_imports(tool: str, base_files: str, new_files: str,
                                            tmp_path: Path) -> None:
    """Issue 38's acceptance, for each tool's real outputs: compare of two imports gives the
    three-answer gate (its exit code says which), and report renders the comparison with the
    imported provenance of the run it reports."""
    def files(spec: str) -> list[Path]:
        return [f for pat in spec.split() for f in sorted(DATA.glob(pat))]

    base = imported(tmp_path / "b", tool, *files(base_files))
    new = imported(tmp_path / "n", tool, *reversed(files(new_files)))
    proc = cli("compare", str(base), str(new), "--format", "json")
    res = json.loads(proc.stdout)
    assert res["gate"] in ("regression", "no regression", "inconclusive"), proc.stderr
    assert proc.returncode == {"regression": 1, "no regression": 0,
                               "inconclusive": 3}[res["gate"]] == res["exit_code"]
    assert res["points"] and all(p["n_base"] >= 2 for p in res["points"])
    html = tmp_path / "vs.html"
    proc = cli("report", str(new), str(base), "--out", str(html))
    assert proc.returncode == 0, proc.stderr
    text = html.read_text()
    assert "Imported numbers" in text and res["gate"].upper() in text.upper()
    for f in json.loads((new / "metadata.json").read_text())["imported"]["files"]:
        assert f["sha256"] in text


def test_show_plot_report_on_imported_runs(runs: dict[str, Path], tmp_path: Path) -> None:
    for name in ("march", "osu", "imb", "nccl"):
        proc = cli("show", str(runs[name]))
        assert proc.returncode == 0, proc.stderr
        assert "imported" in proc.stdout.splitlines()[0]
        if name == "osu":  # the report below draws every run's figures; plot's files once
            out = tmp_path / name
            proc = cli("plot", str(runs[name]), "--out", str(out))
            assert proc.returncode == 0, proc.stderr
            assert list(out.glob("*.png")) and list(out.glob("*.svg")), proc.stdout
        html = tmp_path / f"{name}.html"
        proc = cli("report", str(runs[name]), "--out", str(html))
        assert proc.returncode == 0, proc.stderr
        text = html.read_text()
        assert "imported" in text  # the title says so, and the provenance lists each file
        assert "Imported numbers" in text and "not measured by pairbench" in text
        assert "data:image/png;base64," in text  # the run's figures, drawn and embedded
        meta = json.loads((runs[name] / "metadata.json").read_text())
        for f in meta["imported"]["files"]:
            assert f["sha256"] in text and Path(f["path"]).name in text
    html = tmp_path / "vs.html"
    proc = cli("report", str(runs["today"]), str(runs["march"]), "--out", str(html))
    assert proc.returncode == 0, proc.stderr
    assert "regression" in html.read_text()


def test_accept_on_imported_runs(runs: dict[str, Path], tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text('[[min_link_pct]]\ntest = "ib_write_bw"\nmin_pct = 50\n')
    proc = cli("accept", str(runs["today"]), "--spec", str(spec))
    assert proc.returncode == 1  # no link rate in a perftest log: link_pct is empty
    assert "ib_write_bw" in proc.stdout
    spec.write_text('[[max_latency]]\ntest = "PingPong"\nsize_bytes = [1, 8]\nmax_us = 1e6\n'
                    'metric = "lat_us_mean"\n')
    proc = cli("accept", str(runs["imb"]), "--spec", str(spec))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verdict: PASS" in proc.stdout
    spec.write_text('[[max_latency]]\ntest = "PingPong"\nsize_bytes = 8\nmax_us = 0.001\n'
                    'metric = "lat_us_mean"\n')
    proc = cli("accept", str(runs["imb"]), "--spec", str(spec))
    assert proc.returncode == 1 and "verdict: FAIL" in proc.stdout
    spec.write_text('[[max_latency]]\ntest = "osu_latency"\nsize_bytes = 8\nmax_us = 1\n')
    proc = cli("accept", str(runs["imb"]), "--spec", str(spec))
    assert_clean_error(proc, "unknown test 'osu_latency'")
