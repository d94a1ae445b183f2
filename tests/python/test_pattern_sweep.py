"""sweep --layer verbs --pattern incast|fanout (issue 35): the planning of a pattern point
(one rank per node through mpirun or srun, the point's host file, each rank's own files, the
first host's rows kept) and what is refused before anything runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from conftest import FAKE, assert_clean_error, cli
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
