"""`pairbench import` (issue 38, docs/import.md): other tools' outputs as runs. The fixtures
under data/import/ say where they come from (README.md there): real OSU 7.4 and IMB outputs
made on these machines, the others written to the tools' documented formats."""

from __future__ import annotations

import csv
import hashlib
import json
import re
from pathlib import Path

import pytest

from conftest import assert_clean_error, cli
from pairbench.analysis.load import load_run

DATA = Path(__file__).resolve().parent / "data" / "import"
OSU, PERF, IMB, NCCL = DATA / "osu", DATA / "perftest", DATA / "imb", DATA / "nccl"


def run_import(tmp_path: Path, tool: str, *args: str | Path) -> tuple[Path, list[dict], dict]:
    results = tmp_path / "results"
    proc = cli("import", "--from", tool, *map(str, args), "--results-dir", str(results))
    assert proc.returncode == 0, proc.stderr
    run = Path(proc.stdout.strip().splitlines()[-1])  # the last line names the run, as sweep's
    assert run.parent == results and run.is_dir()
    load_run(run)  # the schema's checks hold
    with open(run / "data.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return run, rows, json.loads((run / "metadata.json").read_text())


def table(path: Path) -> list[list[str]]:
    """The numeric rows of a text table, as the test reads them (not the parser)."""
    return [ln.split() for ln in path.read_text().splitlines()
            if re.match(r"^\s*\d", ln) and not ln.lstrip().startswith("#")]


def by_point(rows: list[dict], test: str, variant: str = "") -> dict[tuple, dict[int, dict]]:
    out: dict[tuple, dict[int, dict]] = {}
    for r in rows:
        if r["test"] == test and r["variant"] == variant and r["pair_id"] == "all":
            out.setdefault((int(r["msg_size_bytes"]), int(r["pairs"])), {})[
                int(r["repetition"])] = r
    return out


# --- OSU ----------------------------------------------------------------------------------

def test_osu_mbw_mr_four_files_are_one_point_with_four_repetitions(tmp_path: Path) -> None:
    files = [OSU / f"7.4-mbw_mr-r{i}.out" for i in range(1, 5)]
    _run, rows, meta = run_import(tmp_path, "osu", *files)
    points = by_point(rows, "osu_mbw_mr")
    sizes = [int(r[0]) for r in table(files[0])]
    assert sorted(s for s, _ in points) == sorted(sizes)
    for (size, pairs), reps in points.items():
        assert pairs == 1 and sorted(reps) == [1, 2, 3, 4]
        for i, f in enumerate(files, 1):
            mbs, rate = next((float(r[1]), float(r[2])) for r in table(f) if int(r[0]) == size)
            row = reps[i]
            assert float(row["bw_mbyte_s"]) == pytest.approx(mbs)
            assert float(row["bw_gbit_s"]) == pytest.approx(mbs * 8 / 1000)
            assert float(row["msg_rate_per_s"]) == pytest.approx(rate)
            assert row["layer"] == "osu" and row["status"] == "ok"
    imp = meta["imported"]
    assert meta["kind"] == "pairbench import" and imp["tool"] == "osu"
    assert [Path(f["path"]).name for f in imp["files"]] == [f.name for f in files]
    for rec, f in zip(imp["files"], files, strict=True):
        assert rec["sha256"] == hashlib.sha256(f.read_bytes()).hexdigest()
        assert rec["version"] == "7.4"
        assert rec["benchmarks"][0]["config"]["window"] == "64"
    assert meta["tests"]["layer"] == "osu"
    assert meta["tests"]["tests"][0]["same_as"] == "mpi msgrate"


def test_osu_pairs_from_the_header_make_points(tmp_path: Path) -> None:
    files = sorted(OSU.glob("7.4-16core-mbw_mr-p*-r*.out"))
    _, rows, _ = run_import(tmp_path, "osu", *files)
    points = by_point(rows, "osu_mbw_mr")
    assert {p for _, p in points} == {1, 4}
    assert all(sorted(reps) == [1, 2, 3] for reps in points.values())
    first = {int(r[0]): float(r[1]) for r in table(OSU / "7.4-16core-mbw_mr-p4-r2.out")}
    assert float(points[(1048576, 4)][2]["bw_mbyte_s"]) == pytest.approx(first[1048576])


def test_osu_latency_block_mean_and_z_percentiles(tmp_path: Path) -> None:
    _, rows, _ = run_import(tmp_path, "osu", *[OSU / f"7.4-latency-r{i}.out" for i in (1, 2, 3)])
    r = by_point(rows, "osu_latency")[(8, 1)][1]
    assert r["lat_us_mean"] and not r["lat_us_p50"] and r["flags"] == "block_timed"
    assert r["lat_kind"] == "half_rtt"
    _, rows, meta = run_import(tmp_path / "z", "osu", OSU / "7.4-latency-z.out")
    want = {int(t[0]): t for t in table(OSU / "7.4-latency-z.out")}
    for (size, _), reps in by_point(rows, "osu_latency").items():
        row, t = reps[1], want[size]
        assert [float(row[c]) for c in ("lat_us_mean", "lat_us_p50", "lat_us_p90",
                                        "lat_us_p99")] == [float(x) for x in t[1:]]
        assert row["flags"] == ""  # percentiles: not a block mean alone
    assert meta["tests"]["tests"][0]["primary_metric"] == "lat_us_p50"
    # -z95,99: P95 has no column of ours and is listed as not imported
    _, rows, meta = run_import(tmp_path / "zc", "osu", OSU / "7.4-latency-zcustom.out")
    row = by_point(rows, "osu_latency")[(1, 1)][1]
    assert float(row["lat_us_p99"]) == 0.72 and not row["lat_us_p90"]
    assert meta["imported"]["files"][0]["benchmarks"][0]["not_imported"] == ["P95 Tail Lat(us)"]


def test_osu_validation_column(tmp_path: Path) -> None:
    _, rows, _ = run_import(tmp_path, "osu", OSU / "7.4-latency-c.out", OSU / "7.4-bw-c.out")
    assert {r["status"] for r in rows} == {"ok"}
    bad = tmp_path / "fail.out"
    bad.write_text((OSU / "7.4-latency-c.out").read_text().replace(
        "0.48              Pass", "0.48              Fail", 1))
    _, rows, _ = run_import(tmp_path / "f", "osu", bad)
    err = [r for r in rows if r["status"] == "error"]
    assert len(err) == 1 and err[0]["msg_size_bytes"] == "2" and "validation" in err[0]["error"]


def test_osu_collectives_need_the_rank_count(tmp_path: Path) -> None:
    f = OSU / "7.4-allreduce-r1.out"
    proc = cli("import", "--from", "osu", str(f), "--results-dir", str(tmp_path / "r"))
    assert_clean_error(proc, f"{f}:2:", "--set pairs=N")
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())
    _, rows, meta = run_import(tmp_path, "osu", f, OSU / "7.4-allreduce-f.out", "--set",
                               "pairs=2")
    pts = by_point(rows, "osu_allreduce")
    assert all(sorted(reps) == [1, 2] and p == 2 for (_, p), reps in pts.items())
    assert pts[(4, 2)][2]["iterations"] == "200"  # -f: the iteration count
    info = meta["tests"]["tests"][0]
    assert info["kind"] == "collective" and info["aggregate_iterations"] == "shared"
    _, rows, _ = run_import(tmp_path / "m", "osu", OSU / "7.4-multi_lat.out", "--set", "pairs=1")
    assert by_point(rows, "osu_multi_lat")[(1, 1)][1]["lat_us_mean"] == "0.32"


def test_osu_set_pairs_must_agree_with_the_output(tmp_path: Path) -> None:
    f = OSU / "7.4-mbw_mr-r1.out"
    proc = cli("import", "--from", "osu", str(f), "--set", "pairs=4", "--results-dir",
               str(tmp_path))
    assert_clean_error(proc, str(f), "says 1 pair(s)", "--set pairs=4")


def test_osu_mpi_messages_after_the_table(tmp_path: Path) -> None:
    f = tmp_path / "noisy.out"
    f.write_text((OSU / "7.4-bw-r1.out").read_text() + "[node1:04711] 1 more process has sent "
                 "help message help-mpi-btl-openib.txt / no active ports found\n")
    _, rows, _ = run_import(tmp_path, "osu", f)
    assert len(rows) == len(table(OSU / "7.4-bw-r1.out"))


def test_osu_5x_and_graph_outputs(tmp_path: Path) -> None:
    _, rows, meta = run_import(tmp_path, "osu", OSU / "5.6.3-latency.out", OSU / "5.6.3-bibw.out",
                               OSU / "5.6.3-mbw_mr-p2.out", OSU / "7.4-latency-G.out")
    assert {r["test"] for r in rows} == {"osu_latency", "osu_bibw", "osu_mbw_mr"}
    lat = by_point(rows, "osu_latency")
    assert lat[(0, 1)][1]["lat_us_mean"] == "1.02"  # 5.x starts at 0 bytes
    assert sorted(lat[(8, 1)]) == [1, 2]  # 5.6.3 and 7.4 of one configuration (MPI_CHAR)
    assert by_point(rows, "osu_bibw")[(65536, 1)][1]["bw_mbyte_s"] == "23104.9"
    assert set(by_point(rows, "osu_mbw_mr")) == {(1, 2), (1024, 2), (65536, 2)}
    assert sorted(meta["imported"]["versions"]) == ["5.6.3", "7.4"]
    _, rows, _ = run_import(tmp_path / "b", "osu", OSU / "5.6.3-bcast.out", "--set", "pairs=8")
    assert by_point(rows, "osu_bcast")[(1024, 8)][1]["lat_us_mean"] == "3.4"
    _, rows, meta = run_import(tmp_path / "i", "osu", OSU / "5.6.3-iallreduce.out", "--set",
                               "pairs=4")
    assert by_point(rows, "osu_iallreduce")[(8, 4)][1]["lat_us_mean"] == "5.1"  # Pure Comm.
    assert meta["imported"]["files"][0]["benchmarks"][0]["not_imported"] == [
        "Overall(us)", "Compute(us)", "Overlap(%)"]


def test_osu_device_buffers_are_configuration(tmp_path: Path) -> None:
    _, rows, meta = run_import(tmp_path, "osu", OSU / "7.4-format-cuda-latency.out",
                               OSU / "7.4-latency-r1.out")
    cfg = meta["imported"]["files"][0]["benchmarks"][0]["config"]
    assert cfg == {"flavour": "MPI-CUDA", "datatype": "MPI_CHAR", "buffers": "DEVICE-DEVICE"}
    assert {r["variant"] for r in rows} == {
        "buffers=DEVICE-DEVICE,flavour=MPI-CUDA", "buffers=none,flavour=MPI"}


def test_osu_different_configurations_become_variants(tmp_path: Path) -> None:
    f = OSU / "7.4-mbw_mr-r1.out"
    other = tmp_path / "w128.out"
    other.write_text(f.read_text().replace("window size: 64", "window size: 128"))
    _, rows, _ = run_import(tmp_path, "osu", f, OSU / "7.4-mbw_mr-r2.out", other)
    assert {r["variant"] for r in rows} == {"window=64", "window=128"}
    assert sorted(by_point(rows, "osu_mbw_mr", "window=64")[(8, 1)]) == [1, 2]
    assert sorted(by_point(rows, "osu_mbw_mr", "window=128")[(8, 1)]) == [1]


# --- perftest -----------------------------------------------------------------------------

MIB = 1048576


def test_perftest_text_repetitions_and_units(tmp_path: Path) -> None:
    files = [PERF / f"march-write_bw-r{i}.txt" for i in (1, 2, 3)]
    _, rows, meta = run_import(tmp_path, "perftest", *files)
    pts = by_point(rows, "ib_write_bw")
    assert set(pts) == {(4096, 1), (65536, 1), (1048576, 1)}
    for i, f in enumerate(files, 1):
        for t in table(f):
            row = pts[(int(t[0]), 1)][i]
            assert row["iterations"] == t[1]
            assert float(row["bw_mbyte_s"]) == pytest.approx(float(t[3]) * MIB / 1e6)
            assert float(row["msg_rate_per_s"]) == pytest.approx(float(t[4]) * 1e6)
            assert row["device"] == "mlx5_0" and row["qps"] == "1"
    cfg = meta["imported"]["files"][0]["benchmarks"][0]["config"]
    assert cfg["mtu"] == "4096" and cfg["connection"] == "RC"
    assert meta["tests"]["tests"][0]["same_as"] == "verbs write_bw"


RIG = PERF / "rig"  # real outputs: Debian perftest 4.5+0.17 on the Soft-RoCE rig (capture.sh)


def test_perftest_real_rig_outputs(tmp_path: Path) -> None:
    """Issue 38: real perftest outputs from the rig. Three ib_write_bw runs of one
    configuration are one point with three repetitions equal to the files' numbers; every
    other capture imports (latency -a whose t_stdev perftest prints as -nan from 2 MiB up:
    that cell empty, the rest kept); the --out_json file (not valid JSON) too."""
    files = [RIG / f"write_bw-64k-r{i}.txt" for i in (1, 2, 3)]
    _, rows, _ = run_import(tmp_path, "perftest", *files)
    pts = by_point(rows, "ib_write_bw")
    assert set(pts) == {(65536, 1)} and set(pts[(65536, 1)]) == {1, 2, 3}
    for i, f in enumerate(files, 1):
        (t,) = table(f)
        row = pts[(65536, 1)][i]
        assert row["iterations"] == t[1] and row["device"] == "rxe0"
        assert float(row["bw_mbyte_s"]) == pytest.approx(float(t[3]) * MIB / 1e6)
        assert float(row["msg_rate_per_s"]) == pytest.approx(float(t[4]) * 1e6)
    _, rows, _ = run_import(tmp_path / "lat", "perftest", RIG / "read_lat-a.txt")
    lat = {int(r["msg_size_bytes"]): r for r in rows if r["pair_id"] == "all"}
    raw = {int(t[0]): t for t in table(RIG / "read_lat-a.txt")}
    assert set(lat) == set(raw) and len(raw) == 23
    for size, t in raw.items():
        assert float(lat[size]["lat_us_p50"]) == pytest.approx(float(t[4]))
        assert lat[size]["lat_us_stdev"] == ("" if "nan" in t[6] else lat[size]["lat_us_stdev"])
        if "nan" not in t[6]:
            assert float(lat[size]["lat_us_stdev"]) == pytest.approx(float(t[6]))
    assert any("nan" in t[6] for t in raw.values())
    for name in ("write_bw-a-gbits.txt", "send_bw-4k.txt", "read_bw-64k.txt", "write_lat-8.txt",
                 "send_lat-8.txt", "write_bw-64k.json"):
        _, rows, _ = run_import(tmp_path / name, "perftest", RIG / name)
        assert rows and all(r["status"] == "ok" for r in rows), name
    # --out_json: the JSON holds what the same run's text printed; the two together are one
    # run given twice (refused), not two repetitions
    _, jrows, _ = run_import(tmp_path / "j", "perftest", RIG / "write_bw-64k.json")
    _, trows, _ = run_import(tmp_path / "t", "perftest", RIG / "write_bw-64k-json.txt")
    for col in ("bw_gbit_s", "bw_mbyte_s", "msg_rate_per_s"):
        assert float(jrows[0][col]) == pytest.approx(float(trows[0][col]), rel=1e-6), col
    _refused(tmp_path / "twins", "perftest", [RIG / "write_bw-64k-json.txt",
                                               RIG / "write_bw-64k.json"],
             "write_bw-64k.json:", "One run given twice")


def test_perftest_all_sizes_gbits_latency_bidir(tmp_path: Path) -> None:
    _, rows, _ = run_import(tmp_path, "perftest", PERF / "write_bw-a-gbits.txt")
    pts = by_point(rows, "ib_write_bw")
    assert len(pts) == 4 and pts[(65536, 1)][1]["bw_gbit_s"] == "98.69"
    assert pts[(65536, 1)][1]["qps"] == "2"
    _, rows, _ = run_import(tmp_path / "l", "perftest", PERF / "read_lat-a.txt",
                            PERF / "send_lat.txt")
    r = by_point(rows, "ib_read_lat")[(1024, 1)][1]
    assert [r[c] for c in ("lat_us_min", "lat_us_max", "lat_us_p50", "lat_us_mean",
                           "lat_us_stdev", "lat_us_p99", "lat_us_p999")] == [
        "2.43", "5.12", "2.48", "2.49", "0.06", "2.66", "5.12"]
    assert r["lat_kind"] == "full_rtt" and r["flags"] == ""
    assert by_point(rows, "ib_send_lat")[(2, 1)][1]["lat_kind"] == "half_rtt"
    _, rows, _ = run_import(tmp_path / "d", "perftest", PERF / "write_lat-D.txt")
    r = by_point(rows, "ib_write_lat")[(2, 1)][1]  # duration mode (-D): the mean only
    assert (r["lat_us_mean"], r["iterations"], r["flags"]) == ("1.06", "4713221", "block_timed")
    proc = cli("import", "--from", "perftest", str(PERF / "write_bw.txt"), "--set",
               "device=mlx5_1", "--results-dir", str(tmp_path / "x"))
    assert_clean_error(proc, "write_bw.txt:2:", "device mlx5_0", "--set device=mlx5_1")
    _, rows, meta = run_import(tmp_path / "b", "perftest", PERF / "write_bw-bidir.txt")
    assert meta["imported"]["files"][0]["benchmarks"][0]["config"]["direction"] == \
        "bidirectional"


def test_perftest_json_invalid_old_and_valid_new(tmp_path: Path) -> None:
    old = [PERF / f"json-4.5-0.17-write_bw-r{i}.json" for i in (1, 2, 3)]
    with pytest.raises(ValueError):
        json.loads(old[0].read_text())  # the fixture is the invalid form
    _, rows, meta = run_import(tmp_path, "perftest", *old)
    reps = by_point(rows, "ib_write_bw")[(65536, 1)]
    assert sorted(reps) == [1, 2, 3]
    assert float(reps[2]["bw_mbyte_s"]) == pytest.approx(11751.02 * MIB / 1e6)
    assert meta["imported"]["files"][0]["info"]["format"] == "json"
    new = [PERF / f"json-master-write_bw-r{i}.json" for i in (1, 2, 3)]
    _, rows, _ = run_import(tmp_path / "n", "perftest", *new)
    assert float(by_point(rows, "ib_write_bw")[(65536, 1)][3]["bw_mbyte_s"]) == \
        pytest.approx(10630.90 * MIB / 1e6)
    _, rows, _ = run_import(tmp_path / "l", "perftest", PERF / "json-4.5-0.17-read_lat.json")
    assert by_point(rows, "ib_read_lat")[(1024, 1)][1]["lat_us_p999"] == "5.12"
    # text and JSON of one configuration are repetitions of one point
    _, rows, _ = run_import(tmp_path / "m", "perftest", PERF / "march-write_bw-r1.txt", *old)
    assert sorted(by_point(rows, "ib_write_bw")[(65536, 1)]) == [1, 2, 3, 4]


def test_perftest_json_gbits_told_by_the_message_rate(tmp_path: Path) -> None:
    text = (PERF / "json-master-write_bw-r1.json").read_text()
    gb = 10611.22 * MIB * 8 / 1e9
    f = tmp_path / "gbits.json"
    f.write_text(re.sub(r'"BW_average": [\d.]+', f'"BW_average": {gb:.2f}', text))
    _, rows, _ = run_import(tmp_path, "perftest", f)
    assert by_point(rows, "ib_write_bw")[(65536, 1)][1]["bw_gbit_s"] == f"{gb:.2f}"


def test_perftest_json_beyond_repair(tmp_path: Path) -> None:
    lines = (PERF / "json-4.5-0.17-write_bw-r1.json").read_text().splitlines(keepends=True)
    broken = tmp_path / "broken.json"
    broken.write_text("".join([*lines[:5], "Number_of_qps 1 2\n", *lines[5:]]))
    proc = cli("import", "--from", "perftest", str(broken), "--results-dir", str(tmp_path / "r"))
    assert_clean_error(proc, f"{broken.name}:6:", "not perftest JSON")
    cut = tmp_path / "cut.json"
    cut.write_text("".join(lines[:22]))
    proc = cli("import", "--from", "perftest", str(cut), "--results-dir", str(tmp_path / "r"))
    assert_clean_error(proc, cut.name, "truncated")
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


# --- IMB ----------------------------------------------------------------------------------

def test_imb_pt2pt_repetitions(tmp_path: Path) -> None:
    files = [IMB / f"2021.9.1-src_c-pt2pt-r{i}.out" for i in (1, 2, 3)]
    _, rows, meta = run_import(tmp_path, "imb", *files)
    assert {r["test"] for r in rows} == {"PingPong", "PingPing", "Sendrecv", "Exchange"}
    pp = by_point(rows, "PingPong")
    assert all(sorted(reps) == [1, 2, 3] and p == 1 for (_, p), reps in pp.items())
    text = files[1].read_text()
    block = text[text.index("Benchmarking PingPong"):text.index("Benchmarking PingPing")]
    for ln in block.splitlines():
        t = ln.split()
        if len(t) == 4 and t[0].isdigit():
            row = pp[(int(t[0]), 1)][2]
            assert row["iterations"] == t[1]
            assert float(row["lat_us_mean"]) == float(t[2])
            assert float(row["bw_mbyte_s"]) == float(t[3])
    sr = by_point(rows, "Sendrecv")[(4096, 2)][1]  # t_avg of the ranks; 2 ranks
    assert sr["lat_us_mean"] and sr["flags"] == "block_timed"
    rec = meta["imported"]["files"][0]
    assert rec["version"] == "2018" and "IMB-MPI1 PingPong PingPing" in rec["command"]
    assert meta["tests"]["tests"][0]["same_as"] == "mpi latency"


def test_imb_2019_update_banner(tmp_path: Path) -> None:
    """IMB 2019's banner names its update ('Intel(R) MPI Benchmarks 2019 Update 6, MPI-1
    part'): real outputs of IMB-v2019.6 import, two files one point of two repetitions each,
    values equal to the files' numbers (they were refused as 'not an IMB output')."""
    files = [IMB / f"2019.6-src_cpp-pt2pt-r{i}.out" for i in (1, 2)]
    _, rows, meta = run_import(tmp_path, "imb", *files)
    assert {r["test"] for r in rows} == {"PingPong", "Sendrecv"}
    pp = by_point(rows, "PingPong")
    assert all(sorted(reps) == [1, 2] for reps in pp.values())
    text = files[0].read_text()
    block = text[text.index("Benchmarking PingPong"):text.index("Benchmarking Sendrecv")]
    n = 0
    for ln in block.splitlines():
        t = ln.split()
        if len(t) == 4 and t[0].isdigit():
            row = pp[(int(t[0]), 1)][1]
            assert float(row["lat_us_mean"]) == float(t[2])
            assert float(row["bw_mbyte_s"]) == float(t[3])
            n += 1
    assert n == 14  # 0 and 2^0..2^12 bytes
    rec = meta["imported"]["files"][0]
    assert rec["version"] == "2019 Update 6" and "IMB-MPI1 PingPong Sendrecv" in rec["command"]


def test_imb_multi_groups_are_pairs(tmp_path: Path) -> None:
    _, rows, _ = run_import(tmp_path, "imb", IMB / "2021.9.1-src_c-multi1.out")
    pp = [r for r in rows if r["test"] == "PingPong" and r["msg_size_bytes"] == "1024"]
    pair_rows = {r["pair_id"]: r for r in pp if r["pair_id"] != "all"}
    agg = next(r for r in pp if r["pair_id"] == "all")
    assert set(pair_rows) == {"0", "1"} and agg["pairs"] == "2"
    bws = {k: float(r["bw_mbyte_s"]) for k, r in pair_rows.items()}
    assert float(agg["bw_mbyte_s"]) == min(bws.values())
    assert agg["min_bw_pair_id"] == min(bws, key=bws.get)
    assert float(agg["lat_us_mean"]) == pytest.approx(
        sum(float(r["lat_us_mean"]) for r in pair_rows.values()) / 2)
    _, rows, _ = run_import(tmp_path / "z", "imb", IMB / "2021.9.1-src_c-multi0.out")
    assert {r["pair_id"] for r in rows} == {"all"} and {r["pairs"] for r in rows} == {"2"}


def test_imb_npmin_blocks_are_pair_counts_not_variants(tmp_path: Path) -> None:
    text = (IMB / "2021.9.1-src_c-coll-np2.out").read_text()
    i = text.index("#----------------------------------------------------------------\n"
                   "# Benchmarking Allreduce")
    j = text.index("# Benchmarking Bcast")
    j = text.rindex("#---", 0, j)
    f = tmp_path / "npmin.out"
    f.write_text(text[:j] + text[i:j].replace("#processes = 2", "#processes = 4") + text[j:])
    _, rows, _ = run_import(tmp_path, "imb", f)
    ar = [r for r in rows if r["test"] == "Allreduce"]
    assert {r["pairs"] for r in ar} == {"2", "4"} and {r["variant"] for r in ar} == {""}


def test_imb_collectives_and_2021_banner(tmp_path: Path) -> None:
    _, rows, _ = run_import(tmp_path, "imb", IMB / "2021.9.1-src_c-coll-np2.out",
                            IMB / "2021.3-format-pingpong.out")
    assert by_point(rows, "Barrier")[(0, 2)][1]["lat_us_mean"] == "0.61"
    assert {r["test"] for r in rows} >= {"Allreduce", "Bcast", "Reduce", "PingPong"}
    _, rows, _ = run_import(tmp_path / "u", "imb", IMB / "2021.3-format-uniband.out")
    r = by_point(rows, "Uniband")[(2048, 1)][1]
    assert (r["bw_mbyte_s"], r["msg_rate_per_s"]) == ("9302.61", "4542289")
    _, _, meta = run_import(tmp_path / "b", "imb", IMB / "2021.3-format-pingpong.out")
    assert meta["imported"]["files"][0]["version"] == "2021.3"


# --- nccl-tests ---------------------------------------------------------------------------

def test_nccl_text_and_json(tmp_path: Path) -> None:
    _, rows, meta = run_import(tmp_path, "nccl-tests", NCCL / "all_reduce-2.19.txt")
    oop = by_point(rows, "all_reduce_perf", "out_of_place")
    ip = by_point(rows, "all_reduce_perf", "in_place")
    assert set(oop) == set(ip) == {(8, 2), (1024, 2), (65536, 2), (1048576, 2)}
    r = oop[(1048576, 2)][1]
    assert (r["lat_us_mean"], float(r["bw_gbit_s"])) == ("28.33", pytest.approx(37.01 * 8))
    assert ip[(1048576, 2)][1]["lat_us_mean"] == "28.1"
    assert meta["imported"]["files"][0]["version"] == "2.19.6"
    _, rows, _ = run_import(tmp_path / "w", "nccl-tests", NCCL / "all_reduce-2.19-wrong.txt")
    bad = [r for r in rows if r["status"] == "error"]
    assert [(b["msg_size_bytes"], b["variant"]) for b in bad] == [("1048576", "out_of_place")]
    files = [NCCL / f"all_reduce-J-r{i}.json" for i in (1, 2, 3)]
    _, rows, meta = run_import(tmp_path / "j", "nccl-tests", *files)
    reps = by_point(rows, "all_reduce_perf", "in_place")[(65536, 2)]
    assert sorted(reps) == [1, 2, 3]
    doc = json.loads(files[1].read_text())
    want = next(x for x in doc["results"] if x["size"] == 65536)["in_place"]
    assert float(reps[2]["lat_us_mean"]) == pytest.approx(want["time"])
    assert float(reps[2]["bw_mbyte_s"]) == pytest.approx(want["bus_bw"] * 1000)
    assert meta["imported"]["files"][0]["command"].startswith("./build/all_reduce_perf -b 8")


def test_nccl_real_h200_outputs(tmp_path: Path) -> None:
    text = [NCCL / f"2.19.6-h200-all_reduce-r{i}.txt" for i in (1, 2, 3)]
    js = [NCCL / f"2.19.6-h200-all_reduce-J-r{i}.json" for i in (1, 2, 3)]
    _, rows, meta = run_import(tmp_path, "nccl-tests", *text)
    pts = by_point(rows, "all_reduce_perf", "out_of_place")
    assert {p for _, p in pts} == {1} and all(sorted(r) == [1, 2, 3] for r in pts.values())
    want = {int(t[0]): t for t in table(text[0])}
    for (size, _), reps in pts.items():
        assert float(reps[1]["lat_us_mean"]) == float(want[size][5])
        assert reps[1]["bw_gbit_s"] == ""  # one rank: busbw is 0 by its formula, not measured
    # -J of the same three runs: the same point, each value the text's to its 2 decimals
    _, jrows, _ = run_import(tmp_path / "j", "nccl-tests", *js)
    jpts = by_point(jrows, "all_reduce_perf", "out_of_place")
    assert set(jpts) == set(pts)
    for k, reps in jpts.items():
        for r in (1, 2, 3):
            assert float(reps[r]["lat_us_mean"]) == pytest.approx(
                float(pts[k][r]["lat_us_mean"]), abs=0.005 + 1e-9)
    # each run's text and JSON together: one run twice, not two repetitions (refused);
    # the text of run 1 with the JSON of runs 2 and 3: three runs, three repetitions
    _refused(tmp_path / "twins", "nccl-tests", [text[0], js[0]], f"{js[0].name}:",
             f"{text[0].name}", "One run given twice")
    _, mixed, _ = run_import(tmp_path / "m", "nccl-tests", text[0], js[1], js[2])
    assert all(sorted(r) == [1, 2, 3]
               for r in by_point(mixed, "all_reduce_perf", "out_of_place").values())
    assert meta["tests"]["tests"][0]["primary_metric"] == "lat_us_mean"
    assert "busbw (0 by definition with one rank)" in \
        meta["imported"]["files"][0]["benchmarks"][0]["not_imported"]
    _, rows, _ = run_import(tmp_path / "g", "nccl-tests", NCCL / "2.19.6-h200-all_gather.txt",
                            NCCL / "2.19.6-h200-all_reduce-c0.txt")
    assert {r["test"] for r in rows} == {"all_gather_perf", "all_reduce_perf"}
    assert {r["status"] for r in rows} == {"ok"}  # -c 0: #wrong is N/A


def test_nccl_old_output_needs_its_test_name(tmp_path: Path) -> None:
    f = NCCL / "all_gather-old-noroot.txt"
    proc = cli("import", "--from", "nccl-tests", str(f), "--results-dir", str(tmp_path / "r"))
    assert_clean_error(proc, f"{f}:1:", "--set test=")
    _, rows, _ = run_import(tmp_path, "nccl-tests", f, "--set", "test=all_gather_perf")
    r = by_point(rows, "all_gather_perf", "out_of_place")[(65536, 4)][1]
    assert r["lat_us_mean"] == "21.47" and float(r["bw_gbit_s"]) == pytest.approx(2.29 * 8)


# --- bad input: exit 2, file and line, nothing written ------------------------------------

def _refused(tmp_path: Path, tool: str, files: list[Path], *needles: str) -> None:
    results = tmp_path / "results"
    proc = cli("import", "--from", tool, *map(str, files), "--results-dir", str(results))
    assert_clean_error(proc, *needles)
    assert not results.exists() or list(results.iterdir()) == []  # not even a hidden one


GOOD = {"osu": OSU / "7.4-latency-r1.out", "perftest": PERF / "write_bw.txt",
        "imb": IMB / "2021.3-format-pingpong.out", "nccl-tests": NCCL / "all_reduce-2.19.txt"}


@pytest.mark.parametrize("tool", sorted(GOOD))
def test_garbage_empty_and_binary(tmp_path: Path, tool: str) -> None:
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("hello\n1 2 3 4 5 6 7 8 9 10 11 12 13\nworld\n")
    _refused(tmp_path, tool, [garbage], garbage.name)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    _refused(tmp_path, tool, [empty], f"{empty.name}:1: empty file")
    binary = tmp_path / "bin.dat"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00")
    _refused(tmp_path, tool, [binary], f"{binary.name}:1:", "binary")


@pytest.mark.parametrize("tool", sorted(GOOD))
def test_another_tools_file(tmp_path: Path, tool: str) -> None:
    for other, f in GOOD.items():
        if other != tool:
            _refused(tmp_path, tool, [f], f.name)


def test_a_bad_file_after_good_ones_leaves_nothing(tmp_path: Path) -> None:
    good = [OSU / f"7.4-mbw_mr-r{i}.out" for i in (1, 2)]
    _refused(tmp_path, "osu", [*good, PERF / "write_bw.txt"], str(PERF / "write_bw.txt"))
    _refused(tmp_path, "osu", [good[0], good[0]], "the same content as")
    _refused(tmp_path, "osu", [tmp_path / "absent.out"], "absent.out", "cannot read")


@pytest.mark.parametrize("tool", sorted(GOOD))
def test_truncated_tables(tmp_path: Path, tool: str) -> None:
    text = GOOD[tool].read_text()
    rows = [m.end() for m in re.finditer(r"(?m)^[ \t]*\d+[ \t]+\d+.*$", text)]
    cut = tmp_path / "row.txt"  # cut inside the last table row: no newline
    cut.write_text(text[:rows[-1] - 3])
    line = text[:rows[-1]].count("\n") + 1
    _refused(tmp_path, tool, [cut], f"{cut.name}:{line}:")
    head = tmp_path / "head.txt"  # the header, no row
    first_row_start = text.rfind("\n", 0, rows[0] - 1) + 1
    head.write_text(text[:first_row_start])
    _refused(tmp_path, tool, [head], head.name, "truncated")


def test_a_row_short_of_its_header(tmp_path: Path) -> None:
    lines = (OSU / "7.4-mbw_mr-r1.out").read_text().splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.startswith("16 "))
    lines[at] = "16                      1.26\n"  # Messages/s missing, the line complete
    f = tmp_path / "short.out"
    f.write_text("".join(lines))
    _refused(tmp_path, "osu", [f], f"short.out:{at + 1}:", "2 field(s)", "has 3")
    text = (IMB / "2021.3-format-pingpong.out").read_text().replace("1.65         2.42", "1.65")
    g = tmp_path / "imb.out"
    g.write_text(text)
    _refused(tmp_path, "imb", [g], "imb.out:", "3 field(s)", "has 4")


@pytest.mark.parametrize("tool,src", [
    ("perftest", PERF / "rig" / "write_bw-a-gbits.txt"),
    ("imb", IMB / "2019.6-src_cpp-pt2pt-r1.out"),
    ("imb", IMB / "2021.9.1-src_c-pt2pt-r1.out"),
    ("nccl-tests", NCCL / "2.19.6-h200-all_reduce-r1.txt"),
])
def test_cut_between_two_rows(tmp_path: Path, tool: str, src: Path) -> None:
    """A real output cut right after a table row (the usual way: the tools flush each row)
    looks whole row by row; the tool's own closing lines are missing, so it is refused,
    naming the last row's line (issue 38: a truncated table). OSU prints nothing after its
    table: such a cut cannot be told from a shorter run (docs/import.md)."""
    lines = src.read_text().splitlines(keepends=True)
    rows = [i for i, ln in enumerate(lines) if re.match(r"\s*\d+\s+\d+", ln)]
    keep = rows[len(rows) // 2]  # a row in the middle of the output
    cut = tmp_path / src.name
    cut.write_text("".join(lines[:keep + 1]))
    _refused(tmp_path, tool, [cut], f"{cut.name}:{keep + 1}:", "truncated")
    run_import(tmp_path / "whole", tool, src)  # the whole file imports


def test_mixed_outputs_in_one_file(tmp_path: Path) -> None:
    both = tmp_path / "both.out"
    a, b = (OSU / "7.4-latency-r1.out").read_text(), (OSU / "7.4-bw-r1.out").read_text()
    both.write_text(a + b)
    line = a.count("\n") + b.splitlines().index("# OSU MPI Bandwidth Test v7.4") + 1
    _refused(tmp_path, "osu", [both], f"{both.name}:{line}:", "two outputs in one file")
    twice = tmp_path / "twice.txt"
    twice.write_text(GOOD["perftest"].read_text() * 2)
    _refused(tmp_path, "perftest", [twice], twice.name, "two outputs")
    imb2 = tmp_path / "imb2.out"
    imb2.write_text(GOOD["imb"].read_text() * 2)
    _refused(tmp_path, "imb", [imb2], imb2.name, "two outputs")
    nc = tmp_path / "nccl2.txt"
    nc.write_text(GOOD["nccl-tests"].read_text() * 2)
    _refused(tmp_path, "nccl-tests", [nc], nc.name, "two outputs")


def test_bad_set_and_tool(tmp_path: Path) -> None:
    f = GOOD["osu"]
    for bad in ("pairs=0", "pairs=x", "color=red", "pairs"):
        proc = cli("import", "--from", "osu", str(f), "--set", bad, "--results-dir",
                   str(tmp_path))
        assert_clean_error(proc, "--set")
    proc = cli("import", "--from", "netpipe", str(f), "--results-dir", str(tmp_path))
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
