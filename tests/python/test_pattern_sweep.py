"""sweep --layer verbs --pattern incast|fanout (issue 35): the planning of a pattern point
(one rank per node through mpirun or srun, the point's host file, each rank's own files, the
first host's rows kept) and what is refused before anything runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from conftest import FAKE, assert_clean_error, cli
from pairbench.contract.columns import COLUMNS, SCHEMA_VERSION
from pairbench.errors import UsageError
from pairbench.runner.plan import Point, SweepConfig, plan_sweep
from pairbench.runner.run import run_point

HOSTS = ("h0", "h1", "h2", "h3")


def config(**kw: object) -> SweepConfig:
    base = SweepConfig(layer="verbs", tests=("write_bw",), sizes=(4096,), pairs=(1, 2, 3),
                       binary="/x/pairbench-verbs", run_dir="/r", launcher="mpirun", hosts=HOSTS,
                       launcher_cmd="/bin/true", pattern="incast")
    return replace(base, **kw)


def test_a_point_per_sender_count_on_the_first_hosts() -> None:
    """--pairs P: P senders, the first P + 1 hosts (the target first), one rank each, rank i
    on line i of the point's own host file; every rank writes its own CSV and record (%r),
    the point keeps rank 0's (the target's)."""
    points = plan_sweep(config())
    assert [p.pairs for p in points] == [1, 2, 3]
    for p in points:
        argv = list(p.sides[0].argv)
        hostfile = f"raw/{p.name}.hosts"
        assert p.files == ((hostfile, "".join(f"{h} slots=1\n" for h in HOSTS[:p.pairs + 1])),)
        assert argv[:3] == ["/bin/true", "-np", str(p.pairs + 1)]
        assert argv[argv.index("--hostfile") + 1] == f"/r/{hostfile}"
        exe = argv[argv.index("/x/pairbench-verbs"):]
        assert exe[exe.index("--pattern") + 1] == "incast"
        assert exe[exe.index("--pattern-hosts") + 1] == f"/r/{hostfile}"
        assert exe[exe.index("--pairs") + 1] == str(p.pairs)
        assert exe[exe.index("--output") + 1] == f"/r/raw/{p.name}.%r.csv"
        assert exe[exe.index("--env-json") + 1] == f"/r/raw/{p.name}.%r.env.json"
        assert (p.csv, p.env_json) == (f"raw/{p.name}.0.csv", f"raw/{p.name}.0.env.json")


def test_srun_gets_the_host_file_too() -> None:
    p = plan_sweep(config(launcher="srun", pattern="fanout"))[1]
    argv = list(p.sides[0].argv)
    assert argv[:5] == ["/bin/true", "-N", "3", "-n", "3"]
    assert ("SLURM_HOSTFILE", f"/r/raw/{p.name}.hosts") in p.env
    assert "fanout" in argv


@pytest.mark.parametrize(("change", "needle"), [
    ({"launcher": "local"}, "one rank per node (mpirun, srun), not --launcher local"),
    ({"hosts": HOSTS[:3]}, "--pairs 3: needs 4 hosts"),
    ({"tests": ("loaded_lat",)}, "loaded_lat has its own roles"),
    ({"tests": ("write_lat",)}, "--test write_lat is measured by the senders"),
    ({"probe": "write_lat", "iterations": 100}, "--probe runs during the pattern's common window"),
    ({"probe": "write_lat", "pattern": None}, "--probe goes with --pattern incast|fanout"),
    ({"layer": "mpi"}, "with --layer verbs"),
    ({"pattern": "alltoall"}, "the sweep runs incast and fanout"),
])
def test_refused_before_anything_runs(change: dict, needle: str) -> None:
    with pytest.raises(UsageError) as err:
        plan_sweep(config(**change))
    assert needle in str(err.value)


def test_the_point_writes_its_host_file(tmp_path: Path) -> None:
    """run_point writes the point's files before the launch (the ranks read the host file)."""
    p = Point(index=0, name="p", layer="verbs", test="write_bw", pairs=1, repetition=1,
              sizes=(8,), sides=plan_sweep(config(launcher_cmd="/bin/cat"))[0].sides,
              timeout_s=30, csv=None, env_json=None, files=(("raw/p.hosts", "h0\nh1\n"),))
    (tmp_path / "raw").mkdir()
    run_point(p, tmp_path)
    assert (tmp_path / "raw/p.hosts").read_text() == "h0\nh1\n"


def test_cli_refuses_with_one_line(tmp_path: Path) -> None:
    proc = cli("sweep", "--layer", "verbs", "--test", "write_bw", "--pattern", "incast",
               "--pairs", "1,2", "--binary", str(FAKE), "--results-dir", str(tmp_path),
               "--no-progress")
    assert_clean_error(proc, "--pattern needs a launcher that starts one rank per node")


FAKE_MPIRUN = '''#!/usr/bin/env python3
"""mpirun as rank_job calls it: -np K ... EXE ARGS: EXE K times at once, rank i in
OMPI_COMM_WORLD_RANK; exit code: the largest of theirs."""
import os, subprocess, sys
args = sys.argv[1:]
k = int(args[args.index("-np") + 1])
i = 0
while i < len(args) and (args[i].startswith("-") or args[i - 1] in ("-np", "--map-by",
        "--hostfile", "--mca") or (i >= 2 and args[i - 2] == "--mca")):
    i += 1
exe = args[i:]
procs = [subprocess.Popen(exe, env={**os.environ, "OMPI_COMM_WORLD_RANK": str(r),
                                    "OMPI_COMM_WORLD_SIZE": str(k)}) for r in range(k)]
sys.exit(max(p.wait() for p in procs))
'''


def incast_sweep(tmp: Path, pairs: str, sizes: str, hosts: str, *extra: str,
                 env: dict[str, str] | None = None) -> Path:
    """An incast write_bw sweep of the fake executable through a fake mpirun (FAKE_MPIRUN in
    tmp): its run directory."""
    mpirun = tmp / "mpirun"
    mpirun.write_text(FAKE_MPIRUN)
    mpirun.chmod(0o755)
    proc = cli("sweep", "--layer", "verbs", "--test", "write_bw", "--pattern", "incast",
               "--pairs", pairs, "--sizes", sizes, "--launcher", "mpirun", "--launcher-cmd",
               str(mpirun), "--hosts", hosts, "--binary", str(FAKE), "--results-dir",
               str(tmp / "res"), "--no-progress", *extra, env=env)
    assert proc.returncode == 0, proc.stderr
    return Path(proc.stdout.strip().splitlines()[-1])


def test_a_sweep_through_a_launcher_keeps_the_targets_rows(tmp_path: Path) -> None:
    """End to end with the fake executable and a fake mpirun: each point starts P + 1 ranks,
    each writes its own CSV under its node's name; data.csv holds rank 0's (the target's)
    rows as the point's (pairs = P, pattern incast) and every other rank's rows merged
    (issue 35): its pair rows as scope=flow with the flow id of its --env-json placement,
    its aggregate as scope=node, the victim probe's row (--probe, node 1) as scope=probe,
    all with pairs = P."""
    import csv

    run_dir = incast_sweep(tmp_path, "1,2", "8,64", "t0,s1,s2", "--probe", "write_lat")
    raw = sorted(p.name for p in (run_dir / "raw").glob("*.csv"))
    assert raw == ["r1-write_bw-p1.0.csv", "r1-write_bw-p1.1.csv", "r1-write_bw-p2.0.csv",
                   "r1-write_bw-p2.1.csv", "r1-write_bw-p2.2.csv"], raw
    assert (run_dir / "raw/r1-write_bw-p2.hosts").read_text().split() == [
        "t0", "slots=1", "s1", "slots=1", "s2", "slots=1"]
    with open(run_dir / "data.csv") as f:
        rows = list(csv.DictReader(f))
    assert {(r["pairs"], r["host"], r["pattern"]) for r in rows
            if r["pair_id"] == "all" and r["scope"] in ("all", "")} == {
        ("1", "t0", "incast"), ("2", "t0", "incast")}
    assert all(r["pattern"] == "incast" for r in rows)
    by = {}
    for r in rows:
        by.setdefault((r["pairs"], r["host"], r["scope"]), []).append(r)
    # the fake's sender of rank k writes --pairs P pair rows, its workers' flows 100k + i
    for pairs, ranks in (("1", ("s1",)), ("2", ("s1", "s2"))):
        for k, host in enumerate(ranks, start=1):
            flow = by[(pairs, host, "flow")]
            assert sorted({r["pair_id"] for r in flow}) == [
                str(100 * k + i) for i in range(int(pairs))], flow
            assert {r["msg_size_bytes"] for r in by[(pairs, host, "node")]} == {"8", "64"}
            assert all(r["pair_id"] == "all" for r in by[(pairs, host, "node")])
        probe = by[(pairs, "s1", "probe")]
        assert sorted(r["msg_size_bytes"] for r in probe) == ["64", "8"]
        assert all(r["probe_test"] == "write_lat" and r["lat_inflation_p50"] == "2.5"
                   for r in probe)
    assert not [k for k in by if k[1] == "t0" and k[2] in ("flow", "node", "probe")]


def test_every_nodes_counters_reach_counters_csv(tmp_path: Path) -> None:
    """counters.csv holds the port counters of every node of a pattern point, not only the
    target's (issue 35: the senders' records stayed in their raw --env-json files): with the
    fake's counters on, each host of each point has its rows, and metadata.json keeps the
    other nodes' counter records per point (rank_counters)."""
    import csv
    import json

    run_dir = incast_sweep(tmp_path, "1,2", "8,64", "t0,s1,s2",
                           env={"FAKE_PB_COUNTERS": "ok"})
    with open(run_dir / "counters.csv") as f:
        rows = list(csv.DictReader(f))
    hosts = {}
    for r in rows:
        hosts.setdefault(r["pairs"], set()).add(r["host"])
    assert hosts == {"1": {"t0", "s1"}, "2": {"t0", "s1", "s2"}}, hosts
    # each node's rows are its own record's, at every size
    for host in ("t0", "s1", "s2"):
        mine = [r for r in rows if r["host"] == host and r["pairs"] == "2"]
        assert {r["msg_size_bytes"] for r in mine} == {"8", "64"}, host
    meta = json.loads((run_dir / "metadata.json").read_text())
    p2 = next(p for p in meta["points"] if p["pairs"] == 2)
    assert [(c["rank"], c["host"]) for c in p2["rank_counters"]] == [(1, "s1"), (2, "s2")]
    assert p2["pattern_nodes"] == ["t0", "s1", "s2"]
    assert [c["node"] for c in p2["rank_counters"]] == ["s1", "s2"]


def test_counters_csv_names_a_pattern_node_not_the_machine() -> None:
    """Nodes that share one machine (the rig's K nodes in one VM: every record's host is the
    VM's name) stay apart in counters.csv: its host is the rank's name in the point's host
    file, as the rows name it; a point without one keeps the record's host."""
    from pairbench.runner.collect import counter_rows

    rec = {"host": "virtme-ng", "layer": "verbs", "test": "write_bw",
           "counters": [{"msg_size_bytes": 4096, "device": "pbrxe0", "port": 1,
                         "source": "hw_counters", "deltas": {"duplicate_request": 5}}]}
    other = {**rec, "counters": [{**rec["counters"][0], "device": "pbrxe1"}]}
    point = {"name": "p", "pairs": 1, "repetition": 1, "env_record": rec,
             "pattern_nodes": ["node0", "node1"],
             "rank_counters": [{**other, "rank": 1, "node": "node1"}]}
    rows = counter_rows({"points": [point]}, "run")
    assert [(r["host"], r["device"]) for r in rows] == [("node0", "pbrxe0"), ("node1", "pbrxe1")]
    plain = {k: v for k, v in point.items() if k not in ("pattern_nodes", "rank_counters")}
    assert [r["host"] for r in counter_rows({"points": [plain]}, "run")] == ["virtme-ng"]


def test_the_congestion_section_names_the_counters_per_point_and_node(tmp_path: Path) -> None:
    """show's CONGESTION AND ERROR COUNTERS panel and report's section (issue 35 item 6): per
    point of the incast curve, every node whose congestion or error counters moved, with the
    counters (hw_counters' and the network device's ethtool statistics) and their deltas; a
    run where none moved says so."""
    (tmp_path / "c").mkdir()
    (tmp_path / "q").mkdir()
    run_dir = incast_sweep(tmp_path / "c", "1,2", "8", "t0,s1,s2",
                           env={"FAKE_PB_COUNTERS": "congestion"})
    show = cli("show", str(run_dir), "--width", "200")
    assert show.returncode == 0, show.stderr
    text = " ".join(show.stdout.split())
    assert "CONGESTION AND ERROR COUNTERS" in show.stdout
    assert "2 point(s) with port counters: a congestion counter moved at 2, an error counter at 0" \
        in text
    # the target's pair rows (P of them) and each sender's: np_cnp_sent 5 per row
    assert "write_bw 8 B 2 pair(s): t0 fake0/1: congestion np_cnp_sent +10, rx_prio3_pause +7" \
        in text, text
    assert "write_bw 8 B 2 pair(s): s2 fake0/1: congestion" in text
    assert "write_bw 8 B 1 pair(s): s1 fake0/1" in text
    assert "rx_crc_errors_phy" not in text  # did not move
    rep = cli("report", str(run_dir), "--out", str(tmp_path / "r.html"))
    assert rep.returncode == 0, rep.stderr
    html = (tmp_path / "r.html").read_text()
    assert "Congestion and error counters" in html
    assert "np_cnp_sent +10, rx_prio3_pause +7" in html

    quiet = incast_sweep(tmp_path / "q", "1", "8", "t0,s1", env={"FAKE_PB_COUNTERS": "ok"})
    rep = cli("report", str(quiet), "--out", str(tmp_path / "q.html"))
    assert rep.returncode == 0, rep.stderr
    assert "No congestion or error counter moved at any point." in (tmp_path / "q.html").read_text()
    show = cli("show", str(quiet), "--width", "200")
    assert "a congestion counter moved at 0, an error counter at 0" in " ".join(show.stdout.split())


def test_the_incast_figure_has_all_three_panels(tmp_path: Path) -> None:
    """The incast curve's figure (present/patternplot.py, as `pairbench plot` and `report`
    draw it, no known limit): the target aggregate, the victim's inflation and every flow's
    share, each panel with the run's points (the last two were drawn only when a known limit
    was given: empty in every plot the driver made)."""
    from pairbench.analysis.load import load_run
    from pairbench.present.patternplot import plot_patterns
    from pairbench.present.plot import _pyplot

    run_dir = incast_sweep(tmp_path, "1,2,3", "4096", "t0,s1,s2,s3", "--probe", "write_lat")
    figs = []
    plot_patterns([("run", load_run(run_dir), {})], tmp_path, [],
                  lambda fig, out, name, written: figs.append((name, fig)), _pyplot)
    assert [n for n, _ in figs] == ["verbs-write_bw-incast-4096-pattern"]
    agg, infl, share = figs[0][1].axes
    assert list(agg.lines[0].get_xdata()) == [1, 2, 3]
    p50 = [ln for ln in infl.lines if ln.get_label() == "p50"]
    assert len(p50) == 1 and list(p50[0].get_xdata()) == [1, 2, 3]
    dots = share.collections[0].get_offsets()
    assert sorted(int(x) for x, _ in dots) == [1, 2, 2, 3, 3, 3]  # one dot per flow


def test_a_rank_without_output_adds_nothing(tmp_path: Path) -> None:
    """pattern_rows: a rank whose CSV is missing (its node died) adds no row and no error
    (the point's failure reason says why); a rank whose record is missing keeps its ids."""
    from pairbench.runner.collect import pattern_rows

    p = plan_sweep(config(run_dir=str(tmp_path)))[2]
    (tmp_path / "raw").mkdir()
    assert pattern_rows(p, tmp_path, "run") == []
    header = ",".join(COLUMNS)
    cells = dict.fromkeys(header.split(","), "")
    cells.update(schema_version=str(SCHEMA_VERSION), layer="verbs", test="write_bw",
                 msg_size_bytes="4096", pairs="1", pair_id="0", scope="pair", status="ok",
                 host="h2")
    (tmp_path / f"raw/{p.name}.2.csv").write_text(
        header + "\n" + ",".join(cells.values()) + "\n")
    got = pattern_rows(p, tmp_path, "run")
    assert [(r["host"], r["scope"], r["pair_id"], r["pairs"]) for r in got] == [
        ("h2", "flow", "0", "3")]
