"""The planning step is pure: argv lists for every launcher, built from a config."""

from __future__ import annotations

import importlib.util
import shlex

import pytest

from conftest import REPO, cli
from pairbench.contract.sizes import SIZE_LIST_RULE, parse_int_list, parse_sizes, size_label
from pairbench.errors import UsageError
from pairbench.runner.plan import SweepConfig, plan_sweep


def cfg(**kw: object) -> SweepConfig:
    base = dict(layer="mpi", tests=("latency", "bw"), sizes=(8, 64, 1024), pairs=(1, 2, 4),
                binary="/opt/pb/pairbench-mpi", run_dir="/r/run1", repetitions=2,
                timeout_s=30.0)
    base.update(kw)
    return SweepConfig(**base)  # type: ignore[arg-type]


def _parity_cases() -> dict[str, list[int] | None]:
    """The cases of tests/unit/size_list_parity.py (which also runs them on the C parser)."""
    spec = importlib.util.spec_from_file_location(
        "size_list_parity", REPO / "tests" / "unit" / "size_list_parity.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.CASES


def test_sizes_parse_lists_ranges_and_suffixes() -> None:
    assert parse_sizes("8,64,1K") == [8, 64, 1024]
    assert parse_sizes("1:16") == [1, 2, 4, 8, 16]
    assert parse_sizes("1M,4k") == [1 << 20, 4096]  # the order given, as the executables run it
    assert parse_int_list("4,1,2,2", "pairs") == [1, 2, 4]
    assert size_label(65536) == "64 KiB" and size_label(100) == "100 B"
    for bad in ("", "x", "8,,a", "16:8", "1T", "3:20", "8,8", "4:16,8"):
        with pytest.raises(UsageError):
            parse_sizes(bad)
    with pytest.raises(UsageError, match="powers of two"):
        parse_sizes("3:20")
    with pytest.raises(UsageError, match="listed twice"):
        parse_sizes("4:16,8")
    with pytest.raises(UsageError):
        parse_int_list("0,1", "pairs")


def test_sizes_follow_the_parity_table() -> None:
    cases = _parity_cases()
    assert len(cases) > 40
    for text, want in cases.items():
        if want is None:
            with pytest.raises(UsageError):
                parse_sizes(text)
        else:
            assert parse_sizes(text) == want, text


def test_driver_help_states_the_size_rule() -> None:
    proc = cli("sweep", "--help")
    assert proc.returncode == 0
    assert SIZE_LIST_RULE in " ".join(proc.stdout.split())


def test_plan_points_one_invocation_per_test_pairs_repetition() -> None:
    pts = plan_sweep(cfg())
    assert len(pts) == 2 * 2 * 3
    assert [(p.repetition, p.test, p.pairs) for p in pts[:4]] == [
        (1, "latency", 1), (1, "latency", 2), (1, "latency", 4), (1, "bw", 1)]
    assert pts == plan_sweep(cfg())  # pure: same input, same plan
    argv = list(pts[0].sides[0].argv)
    assert argv[0] == "/opt/pb/pairbench-mpi"
    assert argv[argv.index("--sizes") + 1] == "8,64,1024"  # all sizes in one invocation
    assert argv[argv.index("--pairs") + 1] == "1"
    assert argv[argv.index("--output") + 1] == "/r/run1/raw/r1-latency-p1.csv"
    assert argv[argv.index("--env-json") + 1] == "/r/run1/raw/r1-latency-p1.env.json"
    assert "--quiet" in argv and "--loopback" not in argv
    assert all(isinstance(a, str) for p in pts for s in p.sides for a in s.argv)


def test_local_verbs_gets_loopback_and_options() -> None:
    c = cfg(layer="verbs", tests=("write_lat",), pairs=(2,), binary="/b/pairbench-verbs",
            iterations=100, warmup=10, pin="compact", allow_oversubscribe=True,
            exe_args=("--x", "y z"))
    argv = list(plan_sweep(c)[0].sides[0].argv)
    assert argv[-1] == "--loopback"
    for pair in (["--iterations", "100"], ["--warmup", "10"], ["--pin", "compact"]):
        i = argv.index(pair[0])
        assert argv[i:i + 2] == pair
    assert "--allow-oversubscribe" in argv and "y z" in argv


def test_verbs_qps_list_is_a_point_per_value() -> None:
    """Issue 13: --qps 1,8,64 in the sweep -> one invocation per QP count, each with --qps N;
    without it no --qps at all (the executable's default, 1); mpi has no QPs."""
    c = cfg(layer="verbs", tests=("write_bw", "write_lat"), pairs=(1, 2), repetitions=1,
            binary="/b/pairbench-verbs", qps=(1, 8, 64))
    pts = plan_sweep(c)
    assert len(pts) == 2 * 2 * 3
    assert [p.qps for p in pts[:3]] == [1, 8, 64]
    assert pts[2].name == "r1-write_bw-p1-q64" and pts[2].qps_cell == "64"
    for p in pts:
        argv = list(p.sides[0].argv)
        assert argv[argv.index("--qps") + 1] == str(p.qps)
    plain = plan_sweep(cfg(layer="verbs", tests=("write_lat",), pairs=(1,), repetitions=1))
    assert "--qps" not in plain[0].sides[0].argv and plain[0].qps_cell == "1"
    assert plan_sweep(cfg(repetitions=1))[0].qps_cell == ""
    with pytest.raises(UsageError, match="verbs option"):
        plan_sweep(cfg(qps=(2,)))


def test_sweep_qps_option_is_checked() -> None:
    from pathlib import Path

    from pairbench.runner.options import SweepOptions, config_from_options

    ok = config_from_options(SweepOptions(layer="verbs", tests=("write_lat",), qps="64,1,8"),
                             Path("/r/x"), Path("/r"))
    assert ok.qps == (1, 8, 64)
    for layer, qps, msg in (("mpi", "2", "verbs option"), ("verbs", "0,1", "bad qps"),
                            ("verbs", "16385", "at most 16384")):
        with pytest.raises(UsageError, match=msg):
            config_from_options(SweepOptions(layer=layer, tests=("x",), qps=qps), Path("/r/x"),
                                Path("/r"))


def test_mpirun_argv() -> None:
    p = plan_sweep(cfg(launcher="mpirun", as_root=True, hosts=("n1", "n2")))[2]  # pairs=4
    argv = list(p.sides[0].argv)
    assert argv[:6] == ["mpirun", "--oversubscribe", "-np", "8", "-H", "n1,n2"]
    assert argv[6] == "/opt/pb/pairbench-mpi"
    assert dict(p.env) == {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    p = plan_sweep(cfg(launcher="mpirun", as_root=False, launcher_cmd="/x/mpirun"))[0]
    assert list(p.sides[0].argv[:4]) == ["/x/mpirun", "--oversubscribe", "-np", "2"]
    assert p.env == ()
    v = plan_sweep(cfg(layer="verbs", launcher="mpirun", hosts=("a", "b")))[2]
    assert list(v.sides[0].argv[:8]) == ["mpirun", "--oversubscribe", "-np", "2", "--map-by",
                                          "node", "-H", "a,b"]
    assert list(v.sides[0].argv[-2:]) == ["--connect", "a"]  # rank 0 = server on a
    v = plan_sweep(cfg(layer="verbs", launcher="mpirun", connect_addr="10.0.0.1"))[0]
    assert list(v.sides[0].argv[-2:]) == ["--connect", "10.0.0.1"]
    with pytest.raises(UsageError, match="--connect-addr"):
        plan_sweep(cfg(layer="verbs", launcher="mpirun"))


def test_srun_argv() -> None:
    p = plan_sweep(cfg(launcher="srun", hosts=("c1", "c2")))[1]  # pairs=2
    # P tasks on each node: Slurm alone would fill the first node's CPUs (3 + 1)
    assert list(p.sides[0].argv[:8]) == ["srun", "-N2", "-n", "4", "--ntasks-per-node=2",
                                         "--nodelist", "c1,c2", "--kill-on-bad-exit=1"]
    v = plan_sweep(cfg(layer="verbs", launcher="srun", hosts=("c1", "c2")))[0]
    assert list(v.sides[0].argv[:5]) == ["srun", "-N2", "-n", "2", "--ntasks-per-node=1"]
    assert "--kill-on-bad-exit=1" not in v.sides[0].argv  # verbs: a failed side says why


def test_ssh_argv_server_and_client_quoted() -> None:
    c = cfg(layer="verbs", tests=("write_lat",), pairs=(2,), launcher="ssh",
            hosts=("hostA", "hostB"), binary="/b/pairbench-verbs",
            exe_args=("--note", "a b; rm -rf /"))
    p = plan_sweep(c)[0]
    server, client = (list(s.argv) for s in p.sides)
    assert [s.role for s in p.sides] == ["server", "client"]
    assert server[:6] == ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "hostA"]
    assert client[5] == "hostB" and server[6] == client[6] == "--"
    remote_server, remote_client = shlex.split(server[7]), shlex.split(client[7])
    assert remote_server[0] == "/b/pairbench-verbs"
    assert remote_server[-1] == "--server"
    assert "a b; rm -rf /" in remote_server  # one argument, not shell syntax
    assert remote_client[-2:] == ["--connect", "hostA"]
    assert "--output" not in remote_server  # rows come back on the client's stdout
    assert p.data_side.role == "client"


@pytest.mark.parametrize("kw", [dict(launcher="ssh", hosts=("a",)), dict(layer="tcp"),
                                dict(launcher="pbs"), dict(tests=()), dict(repetitions=0),
                                dict(timeout_s=0)])
def test_plan_rejects_bad_config(kw: dict) -> None:
    with pytest.raises(UsageError):
        plan_sweep(cfg(**kw))


def test_rig_plan_survives_json() -> None:
    """The plan the host writes for the Soft-RoCE rig reads back as the same config and
    points (tuples and all) inside the VM."""
    import json

    from pairbench.runner.plan import RigPlan, plan_from_json, plan_to_json

    for c in (cfg(), cfg(layer="verbs", tests=("write_lat",), launcher="softroce",
                         exe_args=("--loopback",), pin="list", pin_list="0,1", qps=(1, 8))):
        plan = RigPlan(config=c, points=tuple(plan_sweep(c)), meta={"run_id": "r"},
                       fail_fast=True, progress=False, command_line=("pairbench", "sweep"),
                       host_software={"git": {"commit": "abc", "dirty": False}})
        back = plan_from_json(json.loads(json.dumps(plan_to_json(plan))))
        assert back == plan
        assert isinstance(back.points[0].sides[0].argv, tuple)
    with pytest.raises(UsageError, match="version"):
        plan_from_json({"plan_version": 0})
    with pytest.raises(UsageError, match="malformed"):
        plan_from_json({**plan_to_json(plan), "config": {"layer": "mpi"}})


def test_sweep_options_are_the_command_line_typed() -> None:
    """`pairbench sweep`'s CLI shell turns argv into SweepOptions; argv() gives back a
    command line that parses to the same options (what `pairbench default` logs)."""
    import argparse

    from pairbench.commands.sweep import add_arguments
    from pairbench.runner.options import SweepOptions

    p = argparse.ArgumentParser()
    add_arguments(p)
    argv = ["--layer", "verbs", "--test", "write_lat", "--test", "read_lat,write_bw",
            "--pairs", "1,2", "--qps", "1,8", "--sizes", "8,4K", "-n", "200", "--launcher", "ssh",
            "--hosts", "a,b", "--timeout", "30", "--exe-arg=--x", "--launcher-arg=-v",
            "--pin", "list", "--pin-list", "0,1", "--rig-timeout", "99.5", "--fail-fast",
            "--no-progress", "--results-dir", "/tmp/r"]
    opts = SweepOptions.from_namespace(p.parse_args(argv))
    assert opts.tests == ("write_lat", "read_lat", "write_bw") and opts.timeout_s == 30.0
    assert not opts.progress and opts.exe_args == ("--x",) and opts.rig_timeout_s == 99.5
    assert SweepOptions.from_namespace(p.parse_args(opts.argv())) == opts
    plain = SweepOptions(layer="mpi", tests=("latency",))
    assert plain.argv() == ["--layer", "mpi", "--test", "latency"]
    assert SweepOptions.from_namespace(p.parse_args(plain.argv())) == plain
