"""Every bad input listed in issue 6: one clear error line, exit 2, never a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import FAKE, REPO, assert_clean_error, cli


def copy_run(src: Path, dst: Path, edit=None) -> Path:
    shutil.copytree(src, dst)
    if edit is not None:
        df = pd.read_csv(dst / "data.csv", dtype=str, keep_default_na=False)
        df = edit(df)
        df.to_csv(dst / "data.csv", index=False)
    return dst


def _set(col: str, value: str):
    def f(df: pd.DataFrame) -> pd.DataFrame:
        df.loc[df.index[3], col] = value
        return df
    return f


@pytest.mark.parametrize("cmd", ["compare", "accept", "plot", "report"])
@pytest.mark.parametrize("case,edit,needle", [
    ("schema", lambda df: df.assign(schema_version="9"), "schema_version '9'"),
    ("missing", lambda df: df.drop(columns=["lat_us_p50", "status"]),
     "missing column(s) lat_us_p50, status"),
    ("nonnum", _set("lat_us_p99", "fast"), "non-numeric cell 'fast' in column lat_us_p99"),
    ("pairid", _set("pair_id", "x"), "pair_id 'x'"),
    ("empty", lambda df: df.iloc[0:0], "no data rows"),
])
def test_bad_run_data(cmd: str, case: str, edit, needle: str, base_run: Path,
                      tmp_path: Path) -> None:
    bad = copy_run(base_run, tmp_path / f"bad-{case}", edit)
    args = {"compare": [str(base_run), str(bad)], "accept": [str(bad), "--spec",
            str(Path(__file__).resolve().parents[2] / "examples" / "accept-spec.toml")],
            "plot": [str(bad), "--out", str(tmp_path / "plots")],
            "report": [str(bad), "--out", str(tmp_path / "r.html")]}[cmd]
    assert_clean_error(cli(cmd, *args), needle)


def test_empty_run_directory(tmp_path: Path, base_run: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert_clean_error(cli("compare", str(base_run), str(tmp_path / "empty")), "no data.csv")
    assert_clean_error(cli("plot", str(tmp_path / "empty")), "no data.csv")
    (tmp_path / "zero.csv").write_text("")
    assert_clean_error(cli("report", str(tmp_path / "zero.csv")), "empty CSV")
    spec = str(Path(__file__).resolve().parents[2] / "examples" / "accept-spec.toml")
    assert_clean_error(cli("accept", str(tmp_path / "nope"), "--spec", spec), "no such file")
    assert_clean_error(cli("accept", str(base_run), "--spec", str(tmp_path / "x.toml")),
                       "x.toml: No such file")


def test_no_common_points(base_run: Path, tmp_path: Path) -> None:
    other = copy_run(base_run, tmp_path / "other",
                     lambda df: df.assign(test=df["test"] + "_other"))
    assert_clean_error(cli("compare", str(base_run), str(other)), "no common points")


@pytest.mark.parametrize("spec,needle", [
    ("[[max_latency]]\ntest='write_lat'\nsize_bytes=8\nmax_us=1\nspeed=3\n", "unknown key 'speed'"),
    ("[[max_latency]]\ntest='write_lat'\nsize_bytes=8\nmax_us=[1]\n", "expected a number"),
    ("[[min_link_pct]]\ntest='write_bw'\nmin_pct=90\nmin_size_bytes=true\n", "expected a size"),
    ("[sanity]\nmax_link_pct='x'\n", "expected a number"),
])
def test_bad_spec(spec: str, needle: str, base_run: Path, tmp_path: Path) -> None:
    p = tmp_path / "spec.toml"
    p.write_text(spec)
    assert_clean_error(cli("accept", str(base_run), "--spec", str(p)), needle)


@pytest.mark.parametrize("toml,needle", [
    ("[default]\nrelative='5%'\n", "expected a number"),
    ("[metric.latency]\nrelative=0.1\n", "unknown metric 'latency'"),
    ("[metric.lat_us_p50]\nrel=0.1\n", "unknown key metric.lat_us_p50.rel"),
    ("colour = 1\n", "unknown key 'colour'"),
])
def test_bad_thresholds(toml: str, needle: str, base_run: Path, tmp_path: Path) -> None:
    p = tmp_path / "th.toml"
    p.write_text(toml)
    assert_clean_error(cli("compare", str(base_run), str(base_run), "--thresholds", str(p)),
                       needle)


@pytest.mark.parametrize("args,needle", [
    (["--sizes", "8,lots"], "bad message size 'lots'"),
    (["--pairs", "0"], "bad pairs list"),
    (["--repetitions", "0"], "--repetitions"),
    (["--layer", "tcp"], "invalid choice"),
    (["--launcher", "pbs"], "invalid choice"),
    (["--timeout", "soon"], "invalid float"),
    # issue 37: as the executables refuse it, before anything is measured
    (["-n", "10", "--lat-seconds", "1"], "--lat-seconds applies without -n/-D"),
    (["-D", "0.2", "--bw-seconds", "1"], "--bw-seconds applies without -n/-D"),
])
def test_bad_sweep_options(args: list[str], needle: str, tmp_path: Path) -> None:
    base = ["sweep", "--layer", "verbs", "--test", "write_lat", "--binary", str(FAKE),
            "--results-dir", str(tmp_path / "res")]
    assert_clean_error(cli(*base, *args), needle)
    assert not (tmp_path / "res").exists() or not list((tmp_path / "res").iterdir())


def test_bad_compare_options(base_run: Path) -> None:
    assert_clean_error(cli("compare", str(base_run), str(base_run), "--rel", "lat_us_p50"),
                       "METRIC=VALUE")
    assert_clean_error(cli("compare", str(base_run), str(base_run), "--metrics", "speed"),
                       "unknown metric 'speed'")
    assert_clean_error(cli("compare", str(base_run)), "required")
    # An empty value (a gate script's unset variable) must never turn the environment gate
    # off: refused, exit 2 (issue 37).
    for empty in ("", " ", "fw_ver,"):
        assert_clean_error(cli("compare", str(base_run), str(base_run), "--expect-change",
                               empty), "--expect-change", "empty field name")


def _rdma_devices() -> list[str]:
    try:
        return sorted(p.name for p in Path("/sys/class/infiniband").iterdir())
    except OSError:
        return []


@pytest.mark.skipif(bool(_rdma_devices()), reason="this host has an RDMA device")
def test_verbs_sweep_without_a_device_names_the_rig_and_says_why(tmp_path: Path) -> None:
    """The real pairbench-verbs on a host without an RDMA device: every point's error row and
    the sweep's own summary, progress lines off as a script runs it, name the driver's answer
    (--launcher softroce), not only a count of error rows (issue 37)."""
    binary = REPO / "build" / "bin" / "pairbench-verbs"
    if not binary.is_file():
        pytest.skip(f"{binary} not built")
    proc = cli("sweep", "--layer", "verbs", "--test", "write_lat,write_bw", "--pairs", "1,2",
               "--sizes", "8", "--binary", str(binary), "--results-dir", str(tmp_path),
               "--no-progress")
    assert proc.returncode == 1, proc.stderr
    (run,) = tmp_path.iterdir()
    df = pd.read_csv(run / "data.csv", dtype=str, keep_default_na=False)
    assert set(df["status"]) == {"error"} and len(df) == 4
    assert all("--launcher softroce" in e for e in df["error"]), df["error"].tolist()
    assert "sweep: 4 rows, 4 error rows" in proc.stderr
    assert "sweep: 4 error rows: exit 77 (cannot run here)" in proc.stderr, proc.stderr
    assert "no RDMA device found" in proc.stderr and "--launcher softroce" in proc.stderr
    assert "Traceback" not in proc.stderr
