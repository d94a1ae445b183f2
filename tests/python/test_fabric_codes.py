"""The fabric analysis on integer node codes: an MPI scan's links from its node rows alone,
each row's peer from its round and the tournament (scanlinks.partner), checked against the
pair rows; a job that numbered its nodes otherwise falls back to reading the pair rows."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import HERE, cli
from pairbench.analysis import outliers, scanlinks
from pairbench.runner.schedule import round_links, total_rounds

SIM = HERE.parent / "sim" / "fabric_sim.py"


@pytest.mark.parametrize("k", [2, 3, 4, 7, 12, 33])
def test_partner_is_the_tournaments(k: int) -> None:
    for r in range(1, total_rounds(k) + 1):
        want = dict.fromkeys(range(k), -1)
        for a, b in round_links(k, r):
            want[a], want[b] = b, a
        got = scanlinks.partner(np.arange(k), np.full(k, r), k)
        assert got.tolist() == [want[p] for p in range(k)], (k, r)


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("scan")
    hosts = ",".join(f"n{i:03d}" for i in (5, 3, 11, 0, 7, 1, 9, 2, 10, 4, 8))  # not sorted
    p = cli("fabric", "--plots", "none",
            "--launcher", "mpirun", "--launcher-cmd", str(SIM), "--binary",
            sys.executable, "--hosts", hosts, "--test", "latency,bw", "-s", "8,64K",
            "--confirm", "0", "--results-dir", str(tmp),
            env={"PB_SIM_SLOW": "n007=3,n002~n009=2"}, timeout=600)
    assert p.returncode == 0, p.stderr
    return Path(p.stdout.strip().splitlines()[-1])


def canon(lk: pd.DataFrame) -> pd.DataFrame:
    d = lk.assign(**{c: lk[c].astype(str) for c in lk.columns
                     if isinstance(lk[c].dtype, pd.CategoricalDtype)})
    return d.sort_values(["test", "msg_size_bytes", "host", "peer"]).reset_index(drop=True)


def test_node_rows_alone_give_the_links_the_pair_rows_give(scan: Path) -> None:
    fast = scanlinks.read_scan(scan)
    slow = scanlinks.read_links(scan / "data.csv")  # no host list: the pair rows read
    assert len(fast) == 4 * 11 * 10 // 2
    pd.testing.assert_frame_equal(canon(fast), canon(slow), check_dtype=False)
    # node names as codes of one sorted index, never text per link
    for c in ("node_a", "node_b", "host", "peer"):
        assert isinstance(fast[c].dtype, pd.CategoricalDtype)
        assert fast[c].cat.codes.dtype.itemsize <= 2  # int8/int16 codes
        assert list(fast[c].cat.categories) == sorted(f"n{i:03d}" for i in range(12) if i != 6)
    v = outliers.detect(fast[(fast["test"] == "bw") & (fast["msg_size_bytes"] == 8)])
    assert v.suspect_nodes == ["n007"] and v.suspect_links == [("n002", "n009")]


def test_another_node_numbering_falls_back_to_the_pair_rows(scan: Path,
                                                           tmp_path: Path) -> None:
    """A job whose nodes were numbered otherwise than the hostfile (the metadata's host
    order here reversed): the pair rows disagree with the tournament, so the peers are read
    from them; the links are still right."""
    meta = json.loads((scan / "metadata.json").read_text())
    hosts = meta["config"]["hosts"][::-1]
    with pytest.raises(scanlinks._NotDerivable):
        scanlinks._read_scan_links(scan / "data.csv", hosts, 1000)
    meta["config"]["hosts"] = hosts
    other = tmp_path / "run"
    other.mkdir()
    (other / "metadata.json").write_text(json.dumps(meta))
    (other / "data.csv").write_bytes((scan / "data.csv").read_bytes())
    got = scanlinks.read_scan(other)
    pd.testing.assert_frame_equal(canon(got), canon(scanlinks.read_scan(scan)),
                                  check_dtype=False)


def test_link_values_groups_repeats_on_codes() -> None:
    lk = pd.DataFrame({"node_a": ["b", "a", "a", "a"], "node_b": ["c", "b", "b", "c"],
                       "value": [1.0, 2.0, 4.0, 5.0], "status": ["ok", "ok", "ok", "error"]})
    lv = scanlinks.link_values(lk)
    assert lv.astype({"node_a": str, "node_b": str}).values.tolist() == [
        ["a", "b", 3.0], ["a", "c", pytest.approx(float("nan"), nan_ok=True)],
        ["b", "c", 1.0]]


def test_link_values_of_distinct_pairs_without_a_sort() -> None:
    """link_values of a scan's links (each node pair once, shuffled): the dense path
    (scanlinks._dense_order) gives what the sort gives — pairs in (node_a, node_b) order
    with their values; a repeated pair sends it to the sort (medians)."""
    rng = np.random.default_rng(7)
    names = [f"n{i:02d}" for i in range(40)]
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    pick = rng.permutation(len(pairs))[:600]  # most of the 780 pairs, shuffled
    lk = pd.DataFrame({"node_a": pd.Categorical([pairs[i][0] for i in pick], categories=names),
                       "node_b": pd.Categorical([pairs[i][1] for i in pick], categories=names),
                       "value": rng.random(len(pick)), "status": "ok"})
    a, b, n = lk["node_a"].cat.codes.to_numpy(), lk["node_b"].cat.codes.to_numpy(), len(names)
    got = scanlinks._dense_order(a.astype(np.int64) * n + b, n)
    assert got is not None
    lv = scanlinks.link_values(lk)
    want = sorted((pairs[i][0], pairs[i][1], v) for i, v in zip(pick, lk["value"], strict=True))
    assert lv.astype({"node_a": str, "node_b": str}).values.tolist() == [list(w) for w in want]
    twice = pd.concat([lk, lk.iloc[:1].assign(value=lk["value"].iloc[0] + 2.0)],
                      ignore_index=True)
    a2, b2 = twice["node_a"].cat.codes.to_numpy(), twice["node_b"].cat.codes.to_numpy()
    assert scanlinks._dense_order(a2.astype(np.int64) * n + b2, n) is None
    first = scanlinks.link_values(twice).set_index(["node_a", "node_b"])["value"]
    assert first[(pairs[pick[0]][0], pairs[pick[0]][1])] == pytest.approx(lk["value"].iloc[0] + 1.0)


def test_matrix_parquet_round_trips(scan: Path) -> None:
    """Each long-form matrix also as Parquet (pyarrow, a driver dependency): the same rows,
    values and types as the CSV beside it."""
    pytest.importorskip("pyarrow", reason="pyarrow not installed (scripts/install-deps)")
    for v in json.loads((scan / "fabric.json").read_text())["verdicts"]:
        assert v["matrix_parquet"] == v["matrix"].replace(".csv", ".parquet")
        pq = pd.read_parquet(scan / v["matrix_parquet"])
        csv = pd.read_csv(scan / v["matrix"])
        assert list(pq.columns) == ["node_a", "node_b", "value", "perf", "suspect"]
        assert len(pq) == len(csv) == 11 * 10 // 2
        assert isinstance(pq["node_a"].dtype, pd.CategoricalDtype)
        pd.testing.assert_frame_equal(pq.astype({"node_a": str, "node_b": str}),
                                      csv.astype({"node_a": str, "node_b": str}),
                                      check_exact=False, rtol=1e-12)
        assert pq["suspect"].dtype == bool and pq["suspect"].sum() >= 1


def test_without_pyarrow_only_the_csv(scan: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from pairbench.present import fabricout

    run = tmp_path / "run"
    run.mkdir()
    for f in ("data.csv", "metadata.json"):
        (run / f).write_bytes((scan / f).read_bytes())
    monkeypatch.setattr(fabricout, "has_parquet", lambda: False)
    out = fabricout.write_outputs(run)
    assert all(v["matrix_parquet"] is None for v in out["verdicts"])
    assert not list(run.glob("*.parquet")) and len(list(run.glob("*-matrix.csv"))) == 4


def test_big_csvs_by_pyarrow_read_back_as_by_pandas(tmp_path: Path) -> None:
    """write_frame's pyarrow path (the links and matrices) writes what pandas' to_csv
    writes: the same cells read back, booleans True/False, missing values empty; a cell
    that needs quotes (an error text with a comma) sends the file to pandas' writer."""
    pytest.importorskip("pyarrow", reason="pyarrow not installed (scripts/install-deps)")
    from pairbench.present.fabricout import write_frame

    df = pd.DataFrame({"node_a": pd.Categorical(["b", "a", None, "b"]),
                       "value": [85.0, float("nan"), 0.1234567, 1e-7],
                       "suspect": [True, False, False, True],
                       "n": np.array([1, 2, 3, 4], dtype=np.int64),
                       "error": pd.Categorical(["", "x", "", ""])})
    write_frame(tmp_path / "a.csv", df)
    df.to_csv(tmp_path / "p.csv", index=False)
    a, p = (tmp_path / "a.csv").read_text(), (tmp_path / "p.csv").read_text()
    assert a.splitlines()[0] == "node_a,value,suspect,n,error"
    assert a.splitlines()[1] == "b,85,True,1,"  # pandas: 85.0
    # the only differences in the text: a whole float and an exponent's zero
    assert a.replace("85,", "85.0,").replace("e-7", "e-07") == p
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "a.csv"),
                                  pd.read_csv(tmp_path / "p.csv"))
    df["error"] = pd.Categorical(["", "a, b", "", ""])
    write_frame(tmp_path / "q.csv", df)
    df.to_csv(tmp_path / "pq.csv", index=False)
    assert (tmp_path / "q.csv").read_text() == (tmp_path / "pq.csv").read_text()
    assert '"a, b"' in (tmp_path / "q.csv").read_text()


def test_a_failed_background_write_stops_the_outputs(scan: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The links and matrices are written by a second thread (fabricout._Background): a
    write that fails there is raised by write_outputs, naming its file, fabric.json is not
    written as if all went well, and no writer thread outlives the call."""
    import threading

    from pairbench.present import fabricout

    run = tmp_path / "run"
    run.mkdir()
    for f in ("data.csv", "metadata.json"):
        (run / f).write_bytes((scan / f).read_bytes())
    real = fabricout.write_parquet
    written = []

    def failing(path: Path, df: pd.DataFrame) -> None:
        if "latency-8-" in path.name:
            raise OSError(f"{path}: No space left on device")
        real(path, df)
        written.append(path.name)

    monkeypatch.setattr(fabricout, "write_parquet", failing)
    with pytest.raises(OSError, match=r"fabric-mpi-latency-8-matrix\.parquet"):
        fabricout.write_outputs(run, plots=())
    assert not (run / "fabric.json").exists()
    assert not [t for t in threading.enumerate() if t.name.startswith("fabric-out")]
    # the matrices before the failing one were written whole, in the verdicts' order
    assert written == ["fabric-mpi-bw-8-matrix.parquet", "fabric-mpi-bw-65536-matrix.parquet"]
