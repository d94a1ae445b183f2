"""The worst pair is visible: one pair of four made 2x slower is caught by accept (the example
spec) and by compare, though the pooled aggregate barely moves; version-1 runs still read."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from conftest import REPO, cli, sweep
from pairbench.analysis.accept import evaluate, load_spec
from pairbench.analysis.load import load_run
from pairbench.contract.columns import ADDED_IN, COLUMNS, columns_of

EXAMPLE_SPEC = REPO / "examples" / "accept-spec.toml"
V1_RUNS = [REPO / "results" / "20261123-033558-vm-95e45f",
           REPO / "results" / "20261123-033727-vm-fdc886"]
TESTS = "write_lat,read_lat,write_bw"


def _run(tmp: Path, seed: str, slow: bool) -> Path:
    env = {"FAKE_PB_SEED": seed}
    if slow:
        env["FAKE_PB_SLOW_PAIR"] = "2"  # pair 2 of 0..3, 2x slower (FAKE_PB_SLOW_FACTOR)
    proc, run = sweep(tmp, env=env, tests=TESTS, sizes="8,64,4K", pairs="1,4", reps="5")
    assert proc.returncode == 0, proc.stderr
    assert run is not None
    return run


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("clean4"), "11", slow=False)


@pytest.fixture(scope="module")
def slow_pair_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("slowpair"), "12", slow=True)


def _agg(run: Path, test: str, pairs: int):
    df = load_run(run)
    return df[(df["pair_id"] == "all") & (df["test"] == test) & (df["pairs"] == pairs)]


def test_pooled_aggregate_hides_the_slow_pair_but_the_worst_pair_columns_do_not(
        clean_run: Path, slow_pair_run: Path) -> None:
    a, b = _agg(clean_run, "write_lat", 4), _agg(slow_pair_run, "write_lat", 4)
    pooled = b["lat_us_p50"].median() / a["lat_us_p50"].median()
    worst = b["worst_lat_us_p50"].median() / a["worst_lat_us_p50"].median()
    assert pooled < 1.1, pooled           # the pooled p50 moves a few per cent
    assert 1.8 < worst < 2.2, worst       # the worst pair's p50 doubles
    assert set(b["worst_lat_pair_id"]) == {2.0}
    bw = _agg(slow_pair_run, "write_bw", 4)
    assert set(bw["min_bw_pair_id"]) == {2.0}
    assert (bw["min_pair_bw_share"] < 0.6).all()
    one = _agg(slow_pair_run, "write_lat", 1)  # one pair: nothing to single out
    assert one["worst_lat_pair_id"].isna().all() and one["worst_lat_us_p50"].isna().all()


def _worst_rows(run: Path) -> list[dict]:
    rows = evaluate(load_run(run), load_spec(EXAMPLE_SPEC))
    return [r for r in rows if r["criterion"].startswith(("max_worst_pair", "min_pair_share"))]


def test_accept_example_spec_catches_the_slow_pair(clean_run: Path, slow_pair_run: Path,
                                                  tmp_path: Path) -> None:
    good = _worst_rows(clean_run)
    assert good and all(r["verdict"] == "pass" for r in good), good
    bad = [r for r in _worst_rows(slow_pair_run) if r["verdict"] == "fail"]
    assert {(r["criterion"], r["test"], r["pairs"]) for r in bad} >= {
        ("max_worst_pair lat_us_p50", "write_lat", 4), ("max_worst_pair lat_us_p50", "read_lat", 4),
        ("min_pair_share", "write_bw", 4)}
    assert all("pair 2" in r["detail"] for r in bad)
    # Through the CLI, with the example spec's worst-pair criteria alone: 0 vs 1.
    raw = tomllib.loads(EXAMPLE_SPEC.read_text())
    lines = ['[spec]\nname = "worst pair only"\nlayer = "verbs"\n']
    for sec in ("max_worst_pair", "min_pair_share"):
        for crit in raw[sec]:
            lines.append(f"[[{sec}]]\n" + "".join(
                f"{k} = {v!r}\n".replace("'", '"') for k, v in crit.items()))
    spec = tmp_path / "worst.toml"
    spec.write_text("\n".join(lines))
    ok = cli("accept", str(clean_run), "--spec", str(spec))
    assert ok.returncode == 0, ok.stdout
    fail = cli("accept", str(slow_pair_run), "--spec", str(spec))
    assert fail.returncode == 1, fail.stdout
    assert "max_worst_pair lat_us_p50" in fail.stdout and "(worst pair: pair 2)" in fail.stdout
    # And the full example spec fails the slow run on those criteria too.
    full = cli("accept", str(slow_pair_run), "--spec", str(EXAMPLE_SPEC))
    assert full.returncode == 1
    assert any("max_worst_pair" in ln and "FAIL" in ln and "4" in ln
               for ln in full.stdout.splitlines())


def test_compare_flags_the_slow_pair(clean_run: Path, slow_pair_run: Path) -> None:
    proc = cli("compare", str(clean_run), str(slow_pair_run))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    flagged = [ln.split() for ln in proc.stdout.splitlines()
               if "worst_lat_us_p50" in ln and "regression" in ln]
    assert any(f[0] == "write_lat" and "4" in f for f in flagged), proc.stdout
    assert any(f[0] == "read_lat" and "4" in f for f in flagged), proc.stdout
    # The same runs without the slow pair compare clean on the worst-pair metrics.
    same = cli("compare", str(clean_run), str(clean_run), "--metrics",
               "worst_lat_us_p50,min_pair_bw_gbit_s")
    assert same.returncode == 0, same.stdout


@pytest.mark.parametrize("run", V1_RUNS, ids=lambda p: p.name)
def test_version_1_runs_still_read(run: Path, tmp_path: Path) -> None:
    header = (run / "data.csv").read_text().splitlines()[0].split(",")
    assert header[: len(columns_of(1))] == list(columns_of(1))  # a real v1 file
    df = load_run(run)
    assert set(df["schema_version"]) == {1.0}
    for col in ADDED_IN[2]:
        assert df[col].isna().all()
    assert [c for c in COLUMNS if c not in df.columns] == []
    # Every command reads it; a worst-pair criterion says the data is not there.
    # (one repetition: compare reads it, and its gate says inconclusive, exit 3)
    assert cli("compare", str(run), str(run)).returncode == 3
    assert cli("report", str(run), "--out", str(tmp_path / "r.html")).returncode == 0
    spec = tmp_path / "s.toml"
    test = str(df["test"].iloc[0])
    spec.write_text(f'[[max_worst_pair]]\ntest = "{test}"\nmax_ratio = 1.5\n')
    proc = cli("accept", str(run), "--spec", str(spec))
    assert proc.returncode == 1
    assert "worst_lat_us_p50 / lat_us_p50 not measured (empty)" in proc.stdout


CHECK_ROWS = REPO / "tests" / "verbs" / "check_rows.py"


@pytest.mark.parametrize("test", ["write_lat", "write_bw"])
def test_row_checker_rules_hold_on_fake_rows_and_catch_a_broken_aggregate(
        test: str, tmp_path: Path) -> None:
    """tests/verbs/check_rows.py (run on real rows in the rig) checks the aggregate
    iterations rule and the worst-pair columns; the fake follows the C rules, so it passes,
    and a broken aggregate fails."""
    import csv
    import os
    import subprocess
    import sys

    from conftest import FAKE

    out = tmp_path / "rows.csv"
    env = {**os.environ, "FAKE_PB_SLOW_PAIR": "3"}
    subprocess.run([sys.executable, str(FAKE), "--test", test, "--sizes", "8,4K", "--pairs", "4",
                    "-o", str(out)], env=env, check=True, timeout=60, capture_output=True)

    def check() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(CHECK_ROWS), "--binary", str(FAKE), "--csv",
                               str(out), "--test", test, "--pairs", "4", "--sizes", "8,4096"],
                              capture_output=True, text=True, timeout=60, check=False)

    assert check().returncode == 0, check().stderr
    rows = list(csv.DictReader(out.open()))
    for col, bad in (("iterations", "3999"), ("worst_lat_pair_id" if test == "write_lat"
                                               else "min_bw_pair_id", "0")):
        broken = [dict(r) for r in rows]
        broken[4][col] = bad  # the aggregate row of the first size
        with out.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(broken)
        proc = check()
        assert proc.returncode == 1 and "FAIL" in proc.stderr, (col, proc.stderr)


def test_report_shows_the_worst_pair(slow_pair_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert cli("report", str(slow_pair_run), "--out", str(out)).returncode == 0
    text = out.read_text()
    part = text[text.index("<h2>Worst pair</h2>"):text.index("<h2>Plots</h2>")]
    bad = [ln for ln in part.splitlines() if ln.startswith('<tr class="bad">')]
    assert any("<td>write_lat</td>" in ln and "<td>2</td>" in ln for ln in bad), part
    assert any("<td>write_bw</td>" in ln for ln in bad), part


@pytest.mark.parametrize("text,needle", [
    ("[[max_worst_pair]]\ntest='write_lat'\nmax_ratio=1.5\nmetric='lat_us_p90'\n",
     "expected one of lat_us_p50, lat_us_p99"),
    ("[[max_worst_pair]]\ntest='write_lat'\n", "missing key 'max_ratio'"),
    ("[[max_worst_pair]]\ntest='write_lat'\nmax_ratio='x'\n", "expected a number"),
    ("[[min_pair_share]]\ntest='write_bw'\nmin_share=0.8\nratio=1\n", "unknown key 'ratio'"),
    ("[[min_pair_share]]\ntest='write_bw'\n", "missing key 'min_share'"),
])
def test_worst_pair_criteria_keys_are_validated(text: str, needle: str, tmp_path: Path) -> None:
    from pairbench.errors import UsageError

    spec = tmp_path / "s.toml"
    spec.write_text(text)
    with pytest.raises(UsageError, match=needle):
        load_spec(spec)
    spec = load_spec(EXAMPLE_SPEC)
    assert [c["metric"] for c in spec["max_worst_pair"]] == ["lat_us_p50", "lat_us_p99",
                                                             "lat_us_p50"]
    assert spec["min_pair_share"][0]["min_size_bytes"] == 4096


def test_driver_reads_nine_digit_numbers_in_exponent_notation(clean_run: Path,
                                                             tmp_path: Path) -> None:
    """core/pb_csv.c prints %.9g: 8.2123456e-05, not 0.000082."""
    import csv

    rows = list(csv.DictReader((clean_run / "data.csv").open()))
    rows[0]["bw_gbit_s"], rows[0]["duration_s"] = "8.2123456e-05", "7.5e-05"
    rows[0]["msg_rate_per_s"] = "1.23456789e+09"
    out = tmp_path / "data.csv"
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    df = load_run(out)
    assert df["bw_gbit_s"].iloc[0] == pytest.approx(8.2123456e-05, rel=1e-12)
    assert df["duration_s"].iloc[0] == pytest.approx(7.5e-05, rel=1e-12)
    assert df["msg_rate_per_s"].iloc[0] == pytest.approx(1.23456789e09, rel=1e-12)
