"""The fabric analysis's columnar read of a large scan's rows (issue 39 item 3): the links
of a data.parquet, read from its node row groups with the text columns as dictionaries
into arrays allocated once (scanlinks._read_parquet_links), are exactly the links of the
same rows as data.csv (the chunked CSV path), in several files and row groups, with error
rows of many distinct texts and with node rows that do not name their peer (an older
executable: read again with the pair rows); and the sorts the analysis replaced (node
pairs by two 16-bit keys, the worst links by a partition) give what the full sorts gave."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import HERE
from pairbench.analysis import scanlinks
from pairbench.analysis.outliers import LinkPerf, Verdict
from pairbench.contract.columns import COLUMNS
from pairbench.present.fabricout import worst_links
from pairbench.runner import scanparquet
from pairbench.runner.scanrows import write_rows

pytest.importorskip("pyarrow")

SIM = HERE.parent / "sim" / "fabric_sim.py"
HOSTS = [f"n{i:03d}" for i in (5, 3, 11, 0, 7, 1, 9, 2, 10, 4, 8, 6, 12)]  # not sorted
AT = {c: i for i, c in enumerate(COLUMNS)}


def sim_lines(tmp: Path, test: str) -> list[str]:
    """The rows the simulated pairbench-mpi scan writes (node rows naming their peer)."""
    hostfile = tmp / "hosts"
    hostfile.write_text("".join(f"{h}\n" for h in HOSTS))
    out = tmp / f"{test}.csv"
    env = {**os.environ, "PB_SIM_SLOW": "n007=3,n002~n009=2", "PB_SIM_NOISE": "0.05"}
    subprocess.run([sys.executable, str(SIM), "-np", str(len(HOSTS)), "--map-by", "node",
                    "--hostfile", str(hostfile), "x", "--test", test, "--sizes", "8,65536",
                    "--pattern", "scan", "--timeout", "60", "--quiet", "--output", str(out),
                    "--env-json", str(tmp / "env.json")], check=True, env=env, timeout=120)
    return out.read_text().splitlines()[1:]


def run_dir(root: Path, name: str, lines: list[str], fmt: str) -> Path:
    d = root / name
    d.mkdir()
    (d / "metadata.json").write_text(json.dumps({
        "kind": "pairbench fabric", "config": {"layer": "mpi", "hosts": HOSTS}}))
    write_rows(d, [(lines, "rid", 1)], fmt)
    return d


def edit(lines: list[str], f: Callable[[int, list[str]], None]) -> list[str]:
    out = []
    for n, line in enumerate(lines):
        cells = line.split(",")
        f(n, cells)
        out.append(",".join(cells))
    return out


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    tmp = tmp_path_factory.mktemp("sim")
    return sim_lines(tmp, "latency") + sim_lines(tmp, "bw")


def canon(lk: pd.DataFrame) -> pd.DataFrame:
    d = lk.assign(**{c: lk[c].astype(str) for c in lk.columns
                     if isinstance(lk[c].dtype, pd.CategoricalDtype)})
    return d.sort_values(["test", "msg_size_bytes", "host", "peer"]).reset_index(drop=True)


def both(tmp: Path, lines: list[str], monkeypatch: pytest.MonkeyPatch,
         ) -> tuple[pd.DataFrame, pd.DataFrame]:
    # small row groups and files: the node rows of several groups and files filled in
    monkeypatch.setattr(scanparquet, "GROUP_ROWS", 97)
    monkeypatch.setattr(scanparquet, "LINES_PER_FILE", 150)
    pq_run = run_dir(tmp, "pq", lines, "parquet")
    assert len(scanparquet.parquet_files(pq_run / "data.parquet")) > 2
    csv_run = run_dir(tmp, "csv", lines, "csv")
    return scanlinks.read_scan(pq_run), scanlinks.read_scan(csv_run)


def test_parquet_node_rows_give_the_links_of_the_csv_rows(
        rows: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = scanlinks._read_parquet_links
    monkeypatch.setattr(scanlinks, "_read_parquet_links",
                        lambda *a: calls.append(1) or real(*a))
    fast, slow = both(tmp_path, rows, monkeypatch)
    assert calls  # the columnar path read it (not the generic fallback)
    k = len(HOSTS)
    assert len(fast) == 4 * k * (k - 1) // 2
    pd.testing.assert_frame_equal(canon(fast), canon(slow))
    assert list(fast.columns) == scanlinks.LINK_COLUMNS
    for c in ("node_a", "node_b", "host", "peer"):
        assert fast[c].cat.codes.dtype.itemsize <= 2
        assert list(fast[c].cat.categories) == sorted(HOSTS)
    assert fast["msg_size_bytes"].dtype == np.int32
    assert set(fast["metric"].astype(str)) == {"lat_us_p50", "bw_gbit_s"}


def test_error_rows_of_many_texts_read_alike(
        rows: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(n: int, cells: list[str]) -> None:  # every node row of bw failed, each its own
        if cells[AT["scope"]] == "node" and cells[AT["test"]] == "bw":
            cells[AT["status"]], cells[AT["error"]] = "error", f"timeout {n}"

    lines = edit(rows, fail)
    fast, slow = both(tmp_path, lines, monkeypatch)
    bw = fast[fast["test"] == "bw"]
    assert bw["error"].nunique() == len(bw) > 127  # beyond int8 codes
    assert bw["value"].isna().all() and (bw["status"] == "error").all()
    pd.testing.assert_frame_equal(canon(fast), canon(slow))


def test_node_rows_without_their_peer_are_read_with_the_pair_rows(
        rows: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def older(n: int, cells: list[str]) -> None:  # an older pairbench-mpi: peer left empty
        if cells[AT["scope"]] == "node":
            cells[AT["peer"]] = ""

    (tmp_path / "older").mkdir()
    (tmp_path / "named").mkdir()
    fast, slow = both(tmp_path / "older", edit(rows, older), monkeypatch)
    want, _ = both(tmp_path / "named", rows, monkeypatch)
    pd.testing.assert_frame_equal(canon(fast), canon(slow))
    pd.testing.assert_frame_equal(canon(fast), canon(want))


def test_link_values_and_worst_links_are_the_full_sorts() -> None:
    rng = np.random.default_rng(7)
    names = pd.Index([f"n{i:03d}" for i in range(40)])
    a = rng.integers(0, 40, 3000)
    b = rng.integers(0, 40, 3000)
    a, b = np.minimum(a, b), np.maximum(a, b)
    value = rng.integers(1, 6, 3000).astype(float)  # ties
    lk = pd.DataFrame({"node_a": pd.Categorical.from_codes(a, categories=names),
                       "node_b": pd.Categorical.from_codes(b, categories=names),
                       "value": value, "status": np.where(rng.random(3000) < 0.1, "error",
                                                          "ok")})
    got = scanlinks.link_values(lk)
    ok = lk["value"].where(lk["status"] == "ok")
    want = ok.groupby([a, b]).median()
    assert list(zip(got["node_a"].cat.codes, got["node_b"].cat.codes, strict=True)) == \
        list(want.index)
    np.testing.assert_array_equal(got["value"].to_numpy(), want.to_numpy())
    once = lk.drop_duplicates(["node_a", "node_b"]).sample(frac=1, random_state=1)
    got = scanlinks.link_values(once)  # each pair once: no group-by, the sort alone
    want = once.assign(value=once["value"].where(once["status"] == "ok")).sort_values(
        ["node_a", "node_b"])
    assert got["node_a"].tolist() == want["node_a"].tolist()
    assert got["node_b"].tolist() == want["node_b"].tolist()
    np.testing.assert_array_equal(got["value"].to_numpy(), want["value"].to_numpy())
    for n in (1, 5, 50, 2999, 5000):
        perf = value / 3
        perf[::17] = np.nan
        v = Verdict(metric="bw_gbit_s", higher_is_better=True, ref=3.0, noise=0.0,
                    floor=0.8, tolerance=0.2, z=4.0)
        v.links = LinkPerf(a.astype(np.int32), b.astype(np.int32), perf, names)
        full = np.argsort(np.where(np.isnan(perf), np.inf, perf), kind="stable")[:n]
        assert [x for x, _ in worst_links(v, n)] == [v.links.name(i) for i in full]


def test_summary_line_names_twenty_and_counts_the_rest() -> None:
    """A verdict with 1,900 suspect links and 30 failed node pairs: its summary line names
    the 20 slowest links (slowest first) and 20 failed pairs and counts the rest (every one
    stays in fabric.json); a 1,024-node scan with one bad cable printed ~100 KB on one line."""
    from pairbench.present.fabricout import SHOWN, summary_line

    v = Verdict(metric="bw_gbit_s", higher_is_better=True, ref=10.0, noise=0.0,
                floor=0.8, tolerance=0.2, z=4.0)
    links = {(f"n{i:04d}", f"n{i + 1:04d}"): 0.7 - i * 1e-4 for i in range(1900)}
    v.links, v.suspect_links = links, list(links)
    v.failed = [(f"m{i}", f"m{i + 1}") for i in range(30)]
    line = summary_line({"layer": "mpi", "test": "bw", "variant": "", "msg_size_bytes": 65536},
                        v)
    assert line.count("suspect link ") == SHOWN == 20
    assert "1880 more suspect links (every one in fabric.json)" in line
    assert line.index("n1899~n1900") < line.index("n1880~n1881")  # the slowest first
    assert "n0000~n0001" not in line
    assert line.count("node pair m") == 20
    assert "10 more failed node pairs" in line
    assert len(line) < 5000
