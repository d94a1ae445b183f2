"""A large scan's rows as Parquet (pairbench.runner.scanparquet): a scan of
PARQUET_MIN_NODES nodes or more keeps them as data.parquet, parsed once while the job ran;
every reader of runs reads it as it reads data.csv (the same frame, links and verdicts); a
damaged file is exit 2 naming it; --resume works; a node row names its peer so the
analysis reads one row per node pair. Speed at 1,024..8,192 nodes is benchmarked by
results/fabric-scale/ (run.sh), not here."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from conftest import HERE, REPO, cli
from pairbench.analysis.load import load_run, read_parquet_text
from pairbench.analysis.scanlinks import read_links, read_scan
from pairbench.contract.columns import COLUMNS
from pairbench.runner.scanparquet import PARQUET_MIN_NODES, PartWriter, rows_schema
from pairbench.runner.scanrows import HEADER, PartScan, part_lines, scan_part
from pairbench.runner.schedule import round_links, total_rounds

SIM = HERE.parent / "sim" / "fabric_sim.py"
K = 24  # a scan whose rows are data.parquet by --rows parquet (auto: from 256 nodes on)
ENV = {"PB_SIM_SLOW": "n005=3,n002~n009=2", "PB_SIM_NOISE": "0.05"}


def fabric_args(tmp_path: Path, k: int, *extra: str) -> list[str]:
    return ["fabric", "--plots", "none",
            "--launcher", "mpirun", "--launcher-cmd", str(SIM), "--binary",
            sys.executable, "--hosts", ",".join(f"n{i:03d}" for i in range(k)),
            "--test", "latency,bw", "-s", "64K", "--results-dir", str(tmp_path), "--rows",
            "parquet", *extra]


def verdicts(run: Path) -> list[dict]:
    strip = ("matrix", "matrix_parquet", "heatmap")
    return [{k: x for k, x in v.items() if k not in strip}
            for v in json.loads((run / "fabric.json").read_text())["verdicts"]]


@pytest.fixture(scope="module")
def big_scan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("big")
    p = cli(*fabric_args(tmp, K), env=ENV, timeout=900)
    assert p.returncode == 0, p.stderr
    return Path(p.stdout.strip().splitlines()[-1])


def as_csv_run(run: Path, dst: Path) -> Path:
    """A copy of a Parquet run whose rows are data.csv (the same cells, as text)."""
    shutil.copytree(run, dst, ignore=shutil.ignore_patterns("data.parquet"))
    read_parquet_text(run / "data.parquet").to_csv(dst / "data.csv", index=False)
    return dst


def test_a_large_scan_keeps_its_rows_as_parquet_one_node_row_per_node_pair(
        big_scan: Path) -> None:
    run = big_scan
    assert (run / "data.parquet").is_dir() and not (run / "data.csv").exists()
    assert json.loads((run / "metadata.json").read_text())["rows_format"] == "parquet"
    # the parts' CSVs are gone once their rows were in their columnar copies
    assert not list((run / "raw").glob("r1-*-scan.csv"))
    assert len(list((run / "raw").glob("r1-*-scan.parquet"))) == 2
    t = pd.read_parquet(run / "data.parquet")  # one table, as any Parquet reader sees it
    assert list(t.columns) == [*COLUMNS, "run_id", "repetition"]
    n = total_rounds(K)
    assert len(t) == 2 * n * (K // 2 * 2 + 1)  # per test and round: pairs, nodes, the job
    node = t[t["scope"] == "node"]
    # every node row names its peer: the node pairs of its round, each exactly once
    assert (node["peer"] != "").all()
    for test in ("latency", "bw"):
        mine = node[node["test"] == test]
        got = sorted(zip(mine["pattern"], mine["host"], mine["peer"], strict=True))
        want = sorted((f"scan:{r}", f"n{a:03d}", f"n{b:03d}") for r in range(1, n + 1)
                      for a, b in round_links(K, r))
        assert got == want
    assert t["msg_size_bytes"].dtype == float and t["status"].eq("ok").all()
    for v in verdicts(run):
        assert v["suspect_nodes"] == ["n005"]
        assert v["suspect_links"] == [["n002", "n009"]]
        assert sorted(v["confirmed"]) == ["n002~n009", "n005"]
        assert v["links_measured"] == v["links_expected"] == K * (K - 1) // 2
    # the scan's K²-sized outputs are Parquet only
    assert (run / "fabric-links.parquet").is_file() and not (run / "fabric-links.csv").exists()
    assert len(list(run.glob("fabric-*-matrix.parquet"))) == 2
    assert not list(run.glob("fabric-*-matrix.csv"))
    m = pd.read_parquet(next(run.glob("fabric-mpi-bw-*-matrix.parquet")))
    assert len(m) == K * (K - 1) // 2 and m["suspect"].sum() == K  # n005's + n002~n009


def test_the_links_of_parquet_rows_are_those_of_the_same_rows_as_csv(
        big_scan: Path, tmp_path: Path) -> None:
    csv_run = as_csv_run(big_scan, tmp_path / "csv")

    def norm(lk: pd.DataFrame) -> pd.DataFrame:
        lk = lk.astype(str)
        return lk.sort_values(list(lk.columns)).reset_index(drop=True)

    fast = norm(read_scan(big_scan))  # the node rows' row groups only
    assert len(fast) == 2 * K * (K - 1) // 2
    assert fast.equals(norm(read_scan(csv_run)))
    # the generic path (no host list): the rows that name their peer are the links, the
    # job's aggregate on the same host is not a second value of one of them
    assert norm(read_links(big_scan / "data.parquet")).equals(fast)
    assert norm(read_links(csv_run / "data.csv")).equals(fast)
    # --render of both: the same verdicts
    for run in (big_scan, csv_run):
        p = cli("fabric", "--plots", "none", "--render", str(run), timeout=600)
        assert p.returncode == 0, p.stderr
    assert verdicts(big_scan) == verdicts(csv_run)
    spec = tmp_path / "spec.toml"
    spec.write_text('[[fabric_max_outliers]]\ntest = "bw"\nmax_outliers = 2\n'
                    '[[fabric_min_link_share]]\ntest = "latency"\nmin_share = 0.2\n'
                    '[sanity]\nmax_link_pct = 100\n')
    a = cli("accept", str(big_scan), "--spec", str(spec))
    b = cli("accept", str(csv_run), "--spec", str(spec))
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    assert a.stdout.replace(str(big_scan), "RUN") == b.stdout.replace(str(csv_run), "RUN")


def parquet_copy(run: Path, dst: Path) -> Path:
    """A copy of a sweep's run directory whose rows are a data.parquet file (the schema of
    pairbench.runner.scanparquet)."""
    shutil.copytree(run, dst, ignore=shutil.ignore_patterns("data.csv"))
    schema = rows_schema()
    t = pacsv.read_csv(run / "data.csv", convert_options=pacsv.ConvertOptions(
        column_types={f.name: f.type for f in schema}, strings_can_be_null=False))
    assert t.column_names == schema.names
    pq.write_table(t, dst / "data.parquet")
    return dst


@pytest.mark.parametrize("command", [["show"], ["compare", "{base}"], ["report"]])
def test_every_reader_of_runs_reads_parquet_rows_as_csv_rows(
        base_run: Path, same_run: Path, tmp_path: Path, command: list[str]) -> None:
    pq_run = parquet_copy(same_run, tmp_path / "pq")
    assert not (pq_run / "data.csv").exists()
    pd.testing.assert_frame_equal(load_run(pq_run), load_run(same_run))

    def out(run: Path) -> str:
        args = [a.replace("{base}", str(base_run)) for a in command[1:]]
        extra = ["--out", str(tmp_path / f"{run.name}.html")] if command[0] == "report" else []
        p = cli(command[0], *args, str(run), *extra)
        assert p.returncode == 0, p.stderr
        text = (tmp_path / f"{run.name}.html").read_text() if command[0] == "report" \
            else p.stdout
        # the run's place, the time the page was made and the pictures (titled with the
        # run's name) are the page's own
        text = re.sub(r"data:image/[a-z+]+;base64,[A-Za-z0-9+/=]+", "IMG", text)
        return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+0-9:]*", "TIME",
                      text.replace(str(run), "RUN").replace(str(same_run), "RUN")
                      .replace(run.name, "RUN").replace(same_run.name, "RUN"))

    assert out(pq_run) == out(same_run)


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_a_damaged_parquet_rows_file_is_exit_2_naming_it(big_scan: Path, tmp_path: Path,
                                                          damage: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(big_scan, run)
    bad = sorted((run / "data.parquet").iterdir())[-1]
    data = bad.read_bytes()
    bad.unlink()  # a hard link to raw/: never write through it
    bad.write_bytes(data[:len(data) // 2] if damage == "truncate" else b"\x00" * len(data))
    for args in (["show", str(run)], ["accept", str(run), "--spec",
                                     str(write_spec(tmp_path))],
                 ["fabric", "--plots", "none", "--render", str(run)]):
        p = cli(*args, timeout=600)
        assert p.returncode == 2, (args, p.stderr)
        # (errors.call elides the middle of a long path: its last 16 characters stay)
        assert f"{bad.name[-15:]}: not a readable Parquet file" in p.stderr, p.stderr
        assert "Traceback" not in p.stderr


def write_spec(tmp_path: Path) -> Path:
    spec = tmp_path / "spec.toml"
    spec.write_text('[[fabric_max_outliers]]\ntest = "bw"\nmax_outliers = 2\n')
    return spec


def test_resume_of_a_parquet_scan_killed_mid_way_gives_the_same_verdict(
        big_scan: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "sim.pid"
    (tmp_path / "cut").mkdir()
    half = total_rounds(K) // 2
    envp = {**os.environ, **ENV, "PB_SIM_ROUND_S": "0.3", "PB_SIM_PIDFILE": str(pidfile),
            "PYTHONPATH": str(REPO / "scripts")}
    driver = subprocess.Popen([sys.executable, "-m", "pairbench",
                               *fabric_args(tmp_path / "cut", K)], env=envp,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not list((tmp_path / "cut").glob("*/raw/r1-latency-scan.csv")):
            assert time.monotonic() < deadline and driver.poll() is None
            time.sleep(0.1)
        run = next((tmp_path / "cut").glob("*"))
        csv = run / "raw" / "r1-latency-scan.csv"
        while csv.read_bytes().count(b"\n") < half * (K + 1):  # about half the rounds
            assert time.monotonic() < deadline and driver.poll() is None
            time.sleep(0.1)
    finally:
        driver.kill()  # the driver and its job, as an ended allocation would
        driver.communicate()
        if pidfile.is_file():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
    time.sleep(0.3)
    assert not (run / "fabric.json").exists() and not (run / "data.parquet").exists()
    p = cli("fabric", "--plots", "none", "--resume", str(run), env=ENV, timeout=900)
    assert p.returncode == 0, p.stderr
    meta = json.loads((run / "metadata.json").read_text())
    parts = meta["scan"]["jobs"]["r1-latency"]["parts"]
    assert parts[0]["status"] == "interrupted" and parts[1]["first"] > half // 2
    assert meta["status"] == "complete" and meta["resumed"]
    # each round's rows once: the interrupted part's complete rounds copied, the rest
    # from the second part
    t = pd.read_parquet(run / "data.parquet", columns=["test", "pattern", "scope", "host"])
    lat = t[(t["test"] == "latency") & (t["scope"] == "node")]
    assert len(lat) == total_rounds(K) * K // 2
    assert not lat.duplicated().any()
    assert verdicts(run) == verdicts(big_scan)


def write_part(path: Path, rounds: int, k: int, bad: int = 0) -> list[str]:
    """A part as pairbench-mpi writes it (the simulator's rows), returned as lines."""
    hostfile = path.with_suffix(".hosts")
    hostfile.write_text("".join(f"n{i:03d}\n" for i in range(k)))
    subprocess.run([sys.executable, str(SIM), "-np", str(k), "--map-by", "node",
                    "--hostfile", str(hostfile), "x", "--test", "bw", "--sizes", "8,64K",
                    "--pattern", f"scan:1-{rounds}", "--output", str(path)], check=True)
    lines = path.read_text().splitlines()
    if bad:  # an error row in round `bad`
        i = next(i for i, ln in enumerate(lines) if f",scan:{bad}," in ln)
        lines[i] = lines[i].replace(",ok,", ",error,")
    return lines


def test_the_columnar_copy_holds_exactly_the_whole_rows_read_as_the_job_wrote(
        tmp_path: Path) -> None:
    lines = write_part(tmp_path / "src.csv", 6, 8, bad=3)
    assert lines[0] == HEADER
    text = "\n".join(lines) + "\n"
    cut = text[:-40]  # a dying job: its last row cut short
    part = tmp_path / "part.csv"
    part.write_text("")
    ps = PartScan(part)
    ps.writer = PartWriter(tmp_path / "part.parquet", "RUN", 2)
    # appended in odd pieces, as a job flushes while the driver polls
    step = len(cut) // 7 + 3
    for at in range(0, len(cut), step):
        with open(part, "a") as f:
            f.write(cut[at:at + step])
        ps.feed()
    ps, done = scan_part(part, False, ps)
    ref, ref_done = scan_part(part, False)  # the text path of a small scan
    assert (ps.order, ps.bad, done) == (ref.order, ref.bad, ref_done)
    assert done == {1, 2, 4, 5}  # 3 has an error row, 6 was cut short
    t = pq.read_table(tmp_path / "part.parquet").to_pandas()
    whole = list(part_lines(part, set(range(1, 7))))
    assert len(t) == len(whole) == ps.rows == ref.rows  # the cut row is no row
    assert (t["run_id"] == "RUN").all() and (t["repetition"] == 2).all()
    # the same cells (pair rows apart from the others: in another order), numbers as floats
    key = ["msg_size_bytes", "pattern", "pair_id", "scope", "host", "peer", "status"]
    ix = [COLUMNS.index(c) for c in key]
    got = sorted(zip(*(t[c].tolist() for c in key), t["bw_gbit_s"].tolist(), strict=True))
    want = sorted((float(c[ix[0]]), *(c[i] for i in ix[1:]),
                   float(c[COLUMNS.index("bw_gbit_s")])) for c in
                  (ln.split(",") for ln in whole))
    assert got == want
    # scope=pair rows are in row groups of their own
    f = pq.ParquetFile(tmp_path / "part.parquet")
    kinds = [set(f.read_row_group(i, columns=["scope"]).column(0).to_pylist())
             for i in range(f.num_row_groups)]
    assert all(k == {"pair"} or "pair" not in k for k in kinds)


def test_rows_auto_from_256_nodes_and_no_parquet_through_ssh(tmp_path: Path) -> None:
    """--rows auto: data.parquet from PARQUET_MIN_NODES nodes on; --rows parquet for a verbs
    scan through ssh (whose clients' files are collected as text) is exit 2, nothing made."""
    from conftest import FAKE, FAKE_SSH, assert_clean_error
    from pairbench.runner.scanparquet import rows_format

    assert PARQUET_MIN_NODES == 256
    assert rows_format(PARQUET_MIN_NODES) == "parquet"
    assert rows_format(PARQUET_MIN_NODES - 1) == "csv"
    p = cli("fabric", "--layer", "verbs", "--launcher", "ssh", "--launcher-cmd", str(FAKE_SSH),
            "--binary", str(FAKE), "--hosts", "a,b,c", "--rows", "parquet", "--results-dir",
            str(tmp_path / "res"))
    assert_clean_error(p, "--rows parquet", "through ssh")
    assert not (tmp_path / "res").exists() or not list((tmp_path / "res").iterdir())
