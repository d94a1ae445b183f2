"""compare: planted 20 % regression flagged, identical runs pass; accept pass/fail; JUnit."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import REPO, cli, sweep
from pairbench.analysis.accept import load_spec
from pairbench.analysis.compare import Thresholds, compare_frames, load_thresholds
from pairbench.analysis.load import load_run, read_csv_text
from pairbench.contract.testtable import label
from pairbench.errors import UsageError

EXAMPLES = REPO / "examples"
PUBLISHED = REPO / "results" / "published"


def test_compare_flags_planted_20_percent_regression(base_run: Path, slow_run: Path,
                                                     tmp_path: Path) -> None:
    proc = cli("compare", str(base_run), str(slow_run), "--json", str(tmp_path / "c.json"),
               "--markdown", str(tmp_path / "c.md"))
    assert proc.returncode == 1, proc.stderr
    assert "regression" in proc.stdout
    data = json.loads((tmp_path / "c.json").read_text())
    verdicts = {p["verdict"] for p in data["points"]}
    assert verdicts == {"regression"}  # every metric is 17-20 % worse
    lat = [p for p in data["points"] if p["metric"] == "lat_us_p50"]
    assert all(1.15 < p["ratio"] < 1.25 and p["ci_low"] > 1 for p in lat)
    assert "| verdict |" in (tmp_path / "c.md").read_text()
    assert any("write latency" in s and "higher" in s for s in data["summary"])


def test_compare_identical_configuration_passes(base_run: Path, same_run: Path) -> None:
    proc = cli("compare", str(base_run), str(same_run))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = cli("compare", str(base_run), str(base_run), "--format", "json")
    assert proc.returncode == 0
    assert {p["verdict"] for p in json.loads(proc.stdout)["points"]} == {"no change"}


def test_a_point_that_failed_in_new_fails_the_gate(base_run: Path, same_run: Path,
                                                    tmp_path: Path) -> None:
    """A firmware upgrade that breaks the largest message size: NEW's rows there are
    status=error.  The statistics compare measured rows only; the gate must still fail it,
    naming the point and the reason, and judge the rest as before."""
    proc, broken = sweep(tmp_path, env={"FAKE_PB_SEED": "2", "FAKE_PB_MODE": "errorrow"},
                         reps="3")
    assert broken is not None, proc.stderr
    p = cli("compare", str(base_run), str(broken), "--format", "json")
    assert p.returncode == 1, p.stderr
    data = json.loads(p.stdout)
    assert data["gate"] == "regression" and data["failed"] > 0
    failed = [x for x in data["points"] if x["verdict"] == "failed"]
    assert {x["msg_size_bytes"] for x in failed} == {1024}  # the largest size, every test
    assert {(x["test"], x["pairs"]) for x in failed} == {(t, n) for t in ("write_lat", "write_bw")
                                                         for n in (1, 2)}
    assert all(x["gate"] == "regression" and x["n_new"] == 0 and x["n_base"] == 3
               and "NEW failed in 3 of 3 repetition(s), BASE in none of 3" in x["evidence"]
               and "IBV_WC_RETRY_EXC_ERR" in x["evidence"] for x in failed)
    assert any(line.startswith("  failed: write_lat 1 KiB") for line in data["gate_lines"])
    # The other points: as base vs same_run (the same seed), not flagged.
    rest = {(x["test"], x["msg_size_bytes"], x["pairs"], x["metric"]): x["verdict"]
            for x in data["points"] if x["verdict"] != "failed"}
    same = json.loads(cli("compare", str(base_run), str(same_run), "--format",
                          "json").stdout)["points"]
    assert rest == {(x["test"], x["msg_size_bytes"], x["pairs"], x["metric"]): x["verdict"]
                    for x in same if x["msg_size_bytes"] != 1024}
    # A point failed on both sides is not a new failure: said, not judged.
    both = cli("compare", str(broken), str(broken), "--format", "json")
    assert both.returncode == 0, both.stderr
    notes = json.loads(both.stdout)["point_notes"]
    assert notes == [n for n in notes if "failed in both runs" in n] and len(notes) == 1
    assert "4 point(s) failed in both runs" in notes[0]


def test_points_in_one_run_only_are_said(base_run: Path, tmp_path: Path) -> None:
    proc, fewer = sweep(tmp_path, env={"FAKE_PB_SEED": "2"}, reps="3", sizes="8,64")
    assert fewer is not None, proc.stderr
    data = json.loads(cli("compare", str(base_run), str(fewer), "--format", "json").stdout)
    assert data["point_notes"] == [
        "4 point(s) only in BASE, not compared: verbs write_bw at 1 KiB, 1 pair(s), verbs "
        "write_bw at 1 KiB, 2 pair(s), verbs write_lat at 1 KiB, 1 pair(s), verbs write_lat at "
        "1 KiB, 2 pair(s)"]
    assert any(line.startswith("  note: 4 point(s) only in BASE") for line in data["gate_lines"])


def test_improvement_is_not_a_regression(base_run: Path, slow_run: Path) -> None:
    proc = cli("compare", str(slow_run), str(base_run), "--format", "markdown")
    assert proc.returncode == 0 and "improvement" in proc.stdout


def test_single_repetition_is_only_suspected(tmp_path: Path, base_run: Path) -> None:
    """One repetition on a side can never prove a change, nor its absence: a 20 % worse
    latency is a 'suspected regression', the gate is inconclusive (exit 3; 0 with
    --allow-inconclusive), and --strict makes it fail the gate (exit 1)."""
    df = load_run(base_run)
    one = df[df["repetition"] == 1]
    worse = one.copy()
    worse["lat_us_p50"] = worse["lat_us_p50"] * 1.2
    res = compare_frames(one, worse, Thresholds(), ["lat_us_p50"])
    assert set(res["verdict"]) == {"suspected regression"}
    assert res["evidence"].str.contains("insufficient repetitions").all()
    assert res["n_base"].max() == 1
    raw = read_csv_text(base_run / "data.csv")
    raw = raw[raw["repetition"] == "1"]
    raw.to_csv(tmp_path / "one.csv", index=False)
    lat = raw["lat_us_p50"] != ""
    raw.loc[lat, "lat_us_p50"] = [f"{float(v) * 1.2:.6g}" for v in raw.loc[lat, "lat_us_p50"]]
    raw.to_csv(tmp_path / "worse.csv", index=False)
    args = ("compare", str(tmp_path / "one.csv"), str(tmp_path / "worse.csv"),
            "--metrics", "lat_us_p50")
    proc = cli(*args)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "no significance can be claimed" in proc.stdout
    assert cli(*args, "--allow-inconclusive").returncode == 0
    assert cli(*args, "--strict").returncode == 1


def test_thresholds_from_toml_and_options(base_run: Path, slow_run: Path) -> None:
    th = Thresholds()
    load_thresholds(EXAMPLES / "compare-thresholds.toml", th)
    assert th.rel("lat_us_p99") == 0.15 and th.abs("bw_gbit_s") == 0.1
    # A 25 % relative threshold lets the planted 20 % change through.
    proc = cli("compare", str(base_run), str(slow_run), "--rel", "all=25%")
    assert proc.returncode == 0, proc.stdout
    proc = cli("compare", str(base_run), str(slow_run), "--metrics", "lat_us_p50",
               "--abs", "lat_us_p50=100")
    assert proc.returncode == 0, proc.stdout


def test_published_paper002_comparison() -> None:
    proc = cli("compare", str(PUBLISHED / "paper002-infinihost3"),
               str(PUBLISHED / "paper002-connectx"))
    assert proc.returncode == 3, proc.stderr   # one repetition per side: inconclusive
    # The headline names the test by the table's label and its primary metric.
    assert f"8-pair {label('write_lat', layer='verbs')} at 128 B: 6.0× lower" in proc.stdout
    assert f"1-pair {label('read_lat', layer='verbs')} at 1 B: 3.3× lower" in proc.stdout
    assert "no significance can be claimed" in proc.stdout


def test_published_csv_matches_run_directories() -> None:
    import pandas as pd

    combined = load_run(REPO / "results" / "paper002-published.csv")
    parts = pd.concat([load_run(PUBLISHED / d) for d in ("paper002-connectx",
                                                        "paper002-infinihost3")])
    assert combined.reset_index(drop=True).equals(parts.reset_index(drop=True))
    assert combined["flags"].str.contains("published").all()
    for d in ("paper002-connectx", "paper002-infinihost3"):
        meta = json.loads((PUBLISHED / d / "metadata.json").read_text())
        assert "NOT MEASURED" in meta["source"] and meta["measured_by_pairbench"] is False


def write_spec(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "spec.toml"
    p.write_text(text)
    return p


GOOD_SPEC = """
[spec]
name = "fake adapter"
[[max_latency]]
test = "write_lat"
size_bytes = [8, 64]
metric = "lat_us_p50"
max_us = 1.75
[[max_pair_scaling]]
test = "write_lat"
max_ratio = 1.08
[[min_fairness]]
test = "write_bw"
min_fairness = 0.99
[[min_link_pct]]
test = "write_bw"
min_size_bytes = "1K"
min_pct = 3.0
[sanity]
max_link_pct = 100
"""


def test_accept_passes_good_run_and_writes_junit(base_run: Path, tmp_path: Path) -> None:
    junit = tmp_path / "accept.xml"
    proc = cli("accept", str(base_run), "--spec", str(write_spec(tmp_path, GOOD_SPEC)),
               "--junit", str(junit))
    assert proc.returncode == 0, proc.stdout
    assert "verdict: PASS" in proc.stdout
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite" and suite.get("failures") == "0"
    assert int(suite.get("tests")) == len(suite.findall("testcase")) > 5


def test_accept_fails_slow_run(slow_run: Path, tmp_path: Path) -> None:
    junit = tmp_path / "accept.xml"
    proc = cli("accept", str(slow_run), "--spec", str(write_spec(tmp_path, GOOD_SPEC)),
               "--junit", str(junit))
    assert proc.returncode == 1
    assert "verdict: FAIL" in proc.stdout and "max_latency" in proc.stdout
    suite = ET.parse(junit).getroot()
    assert int(suite.get("failures")) >= 1
    assert suite.find("testcase/failure") is not None


def test_accept_fails_without_data_and_above_link_rate(base_run: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, '[[max_latency]]\ntest = "read_lat"\nsize_bytes = 8\n'
                                'max_us = 9.0\n[sanity]\nmax_link_pct = 1.0\n')
    proc = cli("accept", str(base_run), "--spec", str(spec))
    assert proc.returncode == 1
    assert "no data for this criterion" in proc.stdout
    assert "above the link rate" in proc.stdout


def test_accept_refuses_flagged_rows_unless_spec_accepts(oversubscribed_run: Path,
                                                         tmp_path: Path) -> None:
    """The same passing figures, measured oversubscribed at 2 pairs: the 2-pair checks fail
    and name the flag; the 1-pair checks still pass; with accept_flags the spec passes."""
    proc = cli("accept", str(oversubscribed_run), "--spec",
               str(write_spec(tmp_path, GOOD_SPEC)))
    assert proc.returncode == 1, proc.stdout
    fails = [ln for ln in proc.stdout.splitlines()
             if " FAIL " in ln and not ln.startswith("verdict")]
    assert fails and all("flagged oversubscribed: not accepted" in ln for ln in fails), fails
    assert all(re.search(r"(B|KiB)\s+2\s", ln) for ln in fails), fails  # 2-pair points only
    assert any(" PASS " in ln and "max_latency" in ln for ln in proc.stdout.splitlines())
    accepting = GOOD_SPEC.replace('name = "fake adapter"',
                                  'name = "fake adapter"\naccept_flags = ["oversubscribed"]')
    proc = cli("accept", str(oversubscribed_run), "--spec",
               str(write_spec(tmp_path, accepting)))
    assert proc.returncode == 0, proc.stdout
    assert "verdict: PASS" in proc.stdout


def test_accept_flags_key_is_checked(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="accept_flags"):
        load_spec(write_spec(tmp_path, '[spec]\naccept_flags = ["fast"]\n'
                                       '[[max_latency]]\ntest="x"\nsize_bytes=8\nmax_us=1\n'))


def test_example_spec_is_valid() -> None:
    spec = load_spec(EXAMPLES / "accept-spec.toml")
    assert spec["min_link_pct"][0]["min_size_bytes"] == 65536
    assert len(spec["max_latency"]) == 3


@pytest.mark.parametrize("text,needle", [
    ("[[max_latency]]\ntest='x'\nsize_bytes=8\nmax_us=1\ncolour='red'\n", "unknown key 'colour'"),
    ("[[max_latency]]\ntest='x'\nsize_bytes=8\nmax_us='fast'\n", "expected a number"),
    ("[[max_latency]]\ntest='x'\nmax_us=1\n", "missing key 'size_bytes'"),
    ("[limits]\nx=1\n", "unknown key 'limits'"),
    ("[[min_fairness]]\ntest=1\nmin_fairness=0.9\n", "expected a string"),
    ("[spec]\nname='x'\n", "no criteria"),
    ("[[max_latency]\n", "invalid TOML"),
])
def test_bad_spec_is_rejected(text: str, needle: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=needle.replace("[", r"\[")):
        load_spec(write_spec(tmp_path, text))


def _mpi_rows(tmp_path: Path, name: str, *args: str) -> Path:
    """One fake pairbench-mpi run of latency at 8 B and 4 KiB written as a CSV."""
    import os
    import subprocess
    import sys

    from conftest import FAKE

    out = tmp_path / f"{name}.csv"
    subprocess.run([sys.executable, str(FAKE), "--test", "latency", "--sizes", "8,4K", "-o",
                    str(out), *args], check=True, timeout=60, capture_output=True,
                   env={**os.environ, "FAKE_PB_LAYER": "mpi"})
    return out


def test_compare_says_when_only_the_buffer_layout_differs(tmp_path: Path) -> None:
    """Issue 16: base fresh, new peer: the points do not match on POINT_KEY; compare must
    say why (a warning and a not-comparable row with the reason), never pass silently."""
    fresh = _mpi_rows(tmp_path, "fresh")
    peer = _mpi_rows(tmp_path, "peer", "--buffers", "peer")
    proc = cli("compare", str(fresh), str(peer), "--format", "json")
    # Not a regression, and not a pass either: nothing could be tested.
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.count("compare: warning: latency") == 2  # ...but said, per point
    assert "buffer layouts differ (base fresh, new peer)" in proc.stderr
    data = json.loads(proc.stdout)
    assert data["gate"] == "inconclusive" and data["exit_code"] == 3
    assert any("nothing could be tested" in line for line in data["gate_lines"])
    assert cli("compare", str(fresh), str(peer), "--allow-inconclusive").returncode == 0
    points = data["points"]
    assert points and {p["verdict"] for p in points} == {"not comparable"}
    assert all("buffer layouts differ" in p["evidence"] and p["buffers"] == "fresh|peer"
               for p in points)
    assert cli("compare", str(fresh), str(peer), "--strict").returncode == 1
    # The same layout on both sides: compared as usual, no warning.
    same = cli("compare", str(peer), str(peer), "--format", "json")
    assert same.returncode == 3 and "warning" not in same.stderr  # 1 repetition: undecided
    assert {p["verdict"] for p in json.loads(same.stdout)["points"]} != {"not comparable"}


def test_layout_mismatch_beside_comparable_points(tmp_path: Path) -> None:
    """Rows of one run in both layouts vs the other in one: the shared layout is compared,
    nothing is flagged (the other layout is simply absent from the new run)."""
    fresh = _mpi_rows(tmp_path, "fresh")
    both = tmp_path / "both.csv"
    peer = _mpi_rows(tmp_path, "peer", "--buffers", "peer").read_text().splitlines()
    both.write_text(fresh.read_text() + "\n".join(peer[1:]) + "\n")
    res = compare_frames(load_run(both), load_run(fresh), Thresholds())
    assert set(res["buffers"]) == {"fresh"}
    assert "not comparable" not in set(res["verdict"])
    assert res.attrs["layout_mismatches"] == []
