"""Several devices per run (issue 13): the row checker's per-device aggregates, fairness
across devices, the sweep's --devices pass-through, the report, and the rig's device count."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import rowcheck

from conftest import FAKE
from pairbench.analysis import frames as analysis
from pairbench.contract import testtable
from pairbench.errors import UsageError
from pairbench.runner import options as sweep
from pairbench.runner.launchers import softroce as rigrun

TABLES = {t.name: t for t in testtable.load_snapshot()["verbs"]}


def device_rows(tmp_path: Path, test: str, pairs: int, devices: str) -> list[dict[str, str]]:
    out = tmp_path / f"{test}-{pairs}.csv"
    env = {**os.environ, "FAKE_PB_LAYER": "verbs", "FAKE_PB_SLOW_PAIR": "1"}
    subprocess.run([sys.executable, str(FAKE), "--test", test, "--sizes", "8,4K", "--pairs",
                    str(pairs), "-d", devices, "-o", str(out)], env=env, check=True,
                   timeout=60, capture_output=True)
    return list(csv.DictReader(out.open()))


@pytest.mark.parametrize("test", ["write_lat", "read_lat", "write_bw"])
@pytest.mark.parametrize("pairs", [2, 4])
def test_device_aggregates_pass(test: str, pairs: int, tmp_path: Path) -> None:
    rows = device_rows(tmp_path, test, pairs, "devA,devB")
    devs = [r for r in rows if r["scope"] == "device"]
    assert len(devs) == 2 * 2  # two devices x two sizes
    assert {r["device"] for r in rows if r["pair_id"] != "all"} == {"devA", "devB"}
    assert rowcheck.check_rows(rows, TABLES[test], "verbs", pairs, [8, 4096]) == []


def _point(rows: list[dict[str, str]], size: str = "8") -> list[dict[str, str]]:
    return [r for r in rows if r["msg_size_bytes"] == size]


def _dev(rows: list[dict[str, str]], name: str) -> dict[str, str]:
    return next(r for r in rows if r["scope"] == "device" and r["device"] == name)


def test_a_device_aggregate_is_checked_against_its_own_pairs(tmp_path: Path) -> None:
    info = TABLES["write_bw"]
    point = _point(device_rows(tmp_path, "write_bw", 4, "devA,devB"))
    assert rowcheck.check_point(point, info, "verbs", 4, 8) == []
    # devA's aggregate given the node's bandwidth: more than its own pairs moved
    _dev(point, "devA")["bw_mbyte_s"] = next(r for r in point if r["scope"] == "all"
                                             and r["pair_id"] == "all")["bw_mbyte_s"]
    bad = rowcheck.check_point(point, info, "verbs", 4, 8)
    assert any("device devA" in m and "MB/s" in m for m in bad), bad


@pytest.mark.parametrize("edit,needle", [
    (lambda p: p.remove(_dev(p, "devB")), "device aggregates for ['devA'], expected one for"),
    (lambda p: p.append(dict(_dev(p, "devA"))), "more than one device aggregate"),
    (lambda p: _dev(p, "devA").update(iterations="1"), "aggregate iterations 1 != sum"),
    (lambda p: _dev(p, "devB").update(device="devC"), "expected one for each of"),
    (lambda p: p[0].update(device=""), "name no device"),
    (lambda p: p[0].update(scope="device"), "a pair row with scope 'device'"),
    (lambda p: _dev(p, "devA").update(scope="rack"), "an aggregate row with scope 'rack'"),
])
def test_broken_device_rows_are_caught(edit, needle: str, tmp_path: Path) -> None:
    point = _point(device_rows(tmp_path, "write_lat", 4, "devA,devB"))
    edit(point)
    bad = rowcheck.check_point(point, TABLES["write_lat"], "verbs", 4, 8)
    assert any(needle in m for m in bad), bad


def test_one_device_has_no_device_rows(tmp_path: Path) -> None:
    rows = device_rows(tmp_path, "write_lat", 2, "devA")
    assert not [r for r in rows if r["scope"] == "device"]
    point = _point(rows)
    assert rowcheck.check_point(point, TABLES["write_lat"], "verbs", 2, 8) == []
    extra = dict(next(r for r in point if r["pair_id"] == "all"), scope="device")
    bad = rowcheck.check_point([*point, extra], TABLES["write_lat"], "verbs", 2, 8)
    assert any("expected one for each of []" in m for m in bad), bad


def test_jain_and_device_fairness(tmp_path: Path) -> None:
    assert analysis.jain([1, 1, 1]) == pytest.approx(1.0)
    assert analysis.jain([1, 0]) == pytest.approx(0.5)
    df = pd.DataFrame(device_rows(tmp_path, "write_bw", 4, "devA,devB"))
    df["bw_gbit_s"] = pd.to_numeric(df["bw_gbit_s"], errors="coerce")
    fair = analysis.device_fairness(df)
    assert len(fair) == 2 and set(fair["devices"]) == {2}
    for _, f in fair.iterrows():
        dev = df[(df["scope"] == "device") & (df["msg_size_bytes"] == f["msg_size_bytes"])]
        assert f["device_fairness"] == pytest.approx(analysis.jain(list(dev["bw_gbit_s"])))
        assert 0.5 <= f["device_fairness"] <= 1
        # pair 1 (slow, FAKE_PB_SLOW_PAIR) is on devB: devB is the slower device
        assert f["min_device"] == "devB"
    # headline rows only: device rows are never counted as points
    assert analysis.is_headline(df).sum() == 2


def run_sweep(tmp_path: Path, *extra: str, log: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "scripts"),
           "FAKE_PB_LAYER": "verbs", "FAKE_PB_NOISE": "0"}
    if log:
        env["FAKE_PB_LOG"] = str(log)
    return subprocess.run([sys.executable, "-m", "pairbench", "sweep", "--layer", "verbs",
                           "--test", "write_bw", "--sizes", "8,4K", "--pairs", "2,4",
                           "--binary", str(FAKE), "--results-dir", str(tmp_path),
                           "--no-progress", *extra],
                          env=env, capture_output=True, text=True, timeout=120, check=False)


def test_sweep_passes_devices_and_reports_them(tmp_path: Path) -> None:
    log = tmp_path / "argv.log"
    res = run_sweep(tmp_path, "--devices", "devA,devB", log=log)
    assert res.returncode == 0, res.stderr
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    runs = [argv for argv in runs if "--test" in argv]
    assert len(runs) == 2  # pairs 2 and 4
    for argv in runs:
        assert argv[argv.index("--device") + 1] == "devA,devB"
    run = next(p for p in tmp_path.iterdir() if (p / "data.csv").is_file())
    df = pd.read_csv(run / "data.csv", dtype=str, keep_default_na=False)
    assert len(df[df["scope"] == "device"]) == 2 * 2 * 2  # 2 devices x 2 sizes x 2 pair counts
    from pairbench.present import report
    html = report.build_report(run, None)
    assert "<h2>Devices</h2>" in html and "fairness across devices" in html


@pytest.mark.parametrize("extra,needle", [
    (("--devices", "rxe0,rxe0"), "distinct device names"),
    (("--devices", "rxe0;x"), "distinct device names"),
    (("--rig-devices", "2"), "--rig-devices is for --launcher softroce"),
])
def test_sweep_rejects_bad_device_options(extra: tuple[str, ...], needle: str,
                                          tmp_path: Path) -> None:
    res = run_sweep(tmp_path, *extra)
    assert res.returncode == 2, res.stderr
    assert needle in res.stderr


def test_devices_only_for_verbs() -> None:
    opts = sweep.SweepOptions(layer="mpi", tests=("latency",), devices="rxe0")
    with pytest.raises(UsageError, match="--layer verbs"):
        sweep.check_devices(opts)


def test_rig_boots_as_many_devices_as_listed() -> None:
    opts = sweep.SweepOptions(layer="verbs", tests=("write_bw",), devices="rxe0,rxe1",
                              launcher="softroce")
    assert sweep.rig_device_count(opts) == 2
    argv = rigrun.softroce_argv("rig", 60, "py", "scripts", "plan.json", None,
                               sweep.rig_device_count(opts))
    assert argv[:5] == ["rig", "--timeout", "60", "--devices", "2"]
    assert "--devices" not in rigrun.softroce_argv("rig", 60, "py", "s", "p.json")
    all_opts = sweep.SweepOptions(layer="verbs", tests=("write_bw",), devices="all",
                                  launcher="softroce", rig_devices=3)
    assert sweep.rig_device_count(all_opts) == 3
