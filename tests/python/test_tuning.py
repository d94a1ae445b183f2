"""What changed, complete (issue 37 item 1): the tuning the executables saw (the MPI, PMIx,
UCX, verbs-provider and NCCL families of environment variables), the MCA parameter files,
the launcher and its arguments, the executables' build; compare lists every difference and
--expect-change accepts a variable by its name or its family."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import REPO, assert_clean_error, cli
from pairbench.analysis.envdiff import FAMILIES, _launcher, diff, parse_expected, tuning
from pairbench.errors import UsageError
from pairbench.runner.fingerprint import parse_mca_file

MPI_BIN = Path(os.environ.get("PAIRBENCH_BIN_DIR", REPO / "build" / "bin")) / "pairbench-mpi"
VAR = "OMPI_MCA_btl_vader_single_copy_mechanism"
# Variables of the recorded families whose names look like secrets: never their values.
SECRETS = {"UCX_IB_PASSWORD": "hunter2-pairbench", "NCCL_AUTH_TOKEN": "s3cr3t-pairbench",
           "OMPI_MCA_pml_ucx_credentials": "cr3d-pairbench"}


def _real_mpi() -> None:
    if not MPI_BIN.is_file():
        pytest.skip(f"{MPI_BIN} is not built yet")
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not installed (apt-get install openmpi-bin)")


def _mpi_sweep(results: Path, env: dict[str, str] | None = None) -> Path:
    proc = cli("sweep", "--layer", "mpi", "--test", "latency", "--sizes", "8,64",
               "--pairs", "1", "--repetitions", "2", "--iterations", "200", "--warmup", "20",
               "--launcher", "mpirun", "--timeout", "120", "--binary", str(MPI_BIN),
               "--results-dir", str(results), "--no-progress", env=env, timeout=600)
    run = Path(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else None
    assert proc.returncode == 0 and run is not None and run.is_dir(), proc.stderr
    return run


@pytest.fixture(scope="module")
def vader_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two real sweeps (pairbench-mpi through mpirun), the second with VAR=none."""
    _real_mpi()
    root = tmp_path_factory.mktemp("vader")
    env = {k: v for k, v in os.environ.items() if k != VAR}
    env.update(SECRETS)  # names of the recorded families that look like secrets (both runs)
    return {"without": _mpi_sweep(root / "a", env),
            "with": _mpi_sweep(root / "b", {**env, VAR: "none"})}


def test_real_sweeps_name_the_variable_and_both_values(vader_runs: dict[str, Path]) -> None:
    proc = cli("compare", str(vader_runs["without"]), str(vader_runs["with"]),
               "--format", "json")
    env = json.loads(proc.stdout)["environment"]
    tuned = [c for c in env["changes"] if c.get("family")]
    # only the variable: the launcher's per-run identity (ranks, job ids, URIs, session
    # directories: different in every mpirun) is no difference
    assert [(c["field"], c["base"], c["new"]) for c in tuned] == [(VAR, "(unset)", "none")]
    assert tuned[0]["family"] == "mpi_env"
    text = cli("compare", str(vader_runs["without"]), str(vader_runs["with"]))
    assert f"  {VAR} (unset) → none" in text.stdout.splitlines()
    # --expect-change accepts it by its name and by its family: no reason about it (the two
    # real runs may also differ in what this test does not control: the tree's commit, when
    # another session commits between them, or the host's speed)
    for name in (VAR, "mpi_env", "tuning_env"):
        proc = cli("compare", str(vader_runs["without"]), str(vader_runs["with"]),
                   "--expect-change", name, "--format", "json")
        env = json.loads(proc.stdout)["environment"]
        about = [r for r in env["reasons"] if VAR in r or "did not change" in r]
        assert about == [], (name, env["reasons"])
    # expecting another variable: inconclusive, naming both
    proc = cli("compare", str(vader_runs["without"]), str(vader_runs["with"]),
               "--expect-change", "UCX_TLS")
    assert proc.returncode == 3
    assert f"{VAR} (unset) → none: not expected" in proc.stdout
    assert "UCX_TLS did not change" in proc.stdout


def test_real_record_has_build_tuning_and_canary(vader_runs: dict[str, Path]) -> None:
    meta = json.loads((vader_runs["with"] / "metadata.json").read_text())
    rec = meta["points"][0]["env_record"]
    # one definition of the families: the executables' (core/pb_env.c) equals the driver's
    assert {k: tuple(v) for k, v in rec["tuning"]["families"].items()} == FAMILIES
    assert rec["tuning"]["env"][VAR] == "none"
    assert "OMPI_COMM_WORLD_RANK" in rec["tuning"]["not_recorded"]
    assert not any(k.startswith(("OMPI_COMM_WORLD_", "PMIX_SERVER_URI", "OMPI_MCA_orte_"))
                   for k in rec["tuning"]["env"])
    # "secrets never" (issue 37 item 1): listed by name, the value written nowhere in the run
    assert set(SECRETS) <= set(rec["tuning"]["not_recorded"])
    assert not set(SECRETS) & set(rec["tuning"]["env"])
    for f in vader_runs["with"].rglob("*"):
        if f.is_file():
            text = f.read_bytes()
            assert not any(v.encode() in text for v in SECRETS.values()), f
    assert set(rec["build"]) == {"compiler", "build_type", "c_flags", "commit"}
    assert rec["build"]["compiler"] and rec["build"]["c_flags"]
    hc = rec["host_canary"]
    assert hc["cpu_loop_ns"] > 0 and hc["max_gap_us"] >= 0 and len(hc["loop_ns"]) == 7
    assert 0 < hc["cpu_share"] <= 1
    assert set(meta["host_canary"]) == {p["name"] for p in meta["points"]}
    # the MCA parameter files Open MPI reads here, with their settings
    files = meta["fingerprint"]["mpi"]["mca_param_files"]
    assert isinstance(files, list) and all("path" in f for f in files)


# --- synthetic records: exact cases --------------------------------------------------------

def _edit(src: Path, dst: Path, edit) -> Path:
    shutil.copytree(src, dst)
    meta = json.loads((dst / "metadata.json").read_text())
    edit(meta)
    (dst / "metadata.json").write_text(json.dumps(meta))
    return dst


def _set_env(env: dict[str, str], varying: str | None = None):
    def edit(meta: dict) -> None:
        for i, p in enumerate(meta["points"]):
            rec = p.setdefault("env_record", {})
            e = dict(env)
            if varying:
                e[varying] = f"value-{i}"
            rec["tuning"] = {"env": e, "not_recorded": []}
    return edit


def test_variable_set_unset_and_changed(base_run: Path, tmp_path: Path) -> None:
    a = _edit(base_run, tmp_path / "a", _set_env({"UCX_TLS": "rc", "NCCL_DEBUG": "INFO"}))
    b = _edit(base_run, tmp_path / "b", _set_env({"UCX_TLS": "dc", "MLX5_SINGLE_THREADED": "1"}))
    d = diff(json.loads((a / "metadata.json").read_text()),
             json.loads((b / "metadata.json").read_text()))
    got = {(c.field, c.base, c.new, c.family) for c in d.changes}
    assert got == {("UCX_TLS", "rc", "dc", "ucx_env"),
                   ("NCCL_DEBUG", "INFO", "(unset)", "nccl_env"),
                   ("MLX5_SINGLE_THREADED", "(unset)", "1", "verbs_env")}
    proc = cli("compare", str(a), str(b), "--expect-change", "ucx_env,nccl_env,verbs_env")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = cli("compare", str(a), str(b), "--expect-change", "UCX_TLS")
    assert proc.returncode == 3
    assert "NCCL_DEBUG INFO → (unset)  [not expected]" in proc.stdout


def test_a_variable_that_varies_within_a_run_is_identity(base_run: Path, tmp_path: Path) -> None:
    """Per-run identity the executables' rule did not know (a launcher's own job id): its
    value differs between the points of one run, so it is not compared."""
    a = _edit(base_run, tmp_path / "a", _set_env({"UCX_TLS": "rc"}, varying="PMI_NEWJOBID"))
    b = _edit(base_run, tmp_path / "b", _set_env({"UCX_TLS": "rc"}, varying="PMI_NEWJOBID"))
    ma = json.loads((a / "metadata.json").read_text())
    stable, varying = tuning(ma)  # type: ignore[misc]
    assert stable[""] == {"UCX_TLS": "rc"} and varying[""] == {"PMI_NEWJOBID"}
    d = diff(ma, json.loads((b / "metadata.json").read_text()))
    assert d.changes == [] and d.varying == ["PMI_NEWJOBID"]


def test_a_run_without_tuning_records_is_not_recorded_never_a_difference(
        base_run: Path, tmp_path: Path) -> None:
    b = _edit(base_run, tmp_path / "b", _set_env({"UCX_TLS": "dc"}))
    proc = cli("compare", str(base_run), str(b), "--format", "json")
    env = json.loads(proc.stdout)["environment"]
    assert env["changes"] == []
    assert "environment variables: new only" in env["recorded_on_one_side"]
    plain = cli("compare", str(base_run), str(base_run))
    assert proc.returncode == plain.returncode


def _mca(settings: dict[str, str] | None):
    def edit(meta: dict) -> None:
        meta["fingerprint"]["mpi"]["mca_param_files"] = [
            {"path": "/home/u/.openmpi/mca-params.conf", "sha256": None, "settings": None},
            {"path": "/etc/openmpi/openmpi-mca-params.conf", "sha256": "x",
             "settings": settings}]
    return edit


def test_mca_file_settings_differ(base_run: Path, tmp_path: Path) -> None:
    a = _edit(base_run, tmp_path / "a", _mca({"btl": "^uct,openib,ofi", "pml": "^ucx"}))
    b = _edit(base_run, tmp_path / "b", _mca({"btl": "self,vader", "pml": "^ucx",
                                              "btl_vader_eager_limit": "8192"}))
    proc = cli("compare", str(a), str(b))
    lines = proc.stdout.splitlines()
    assert ("  MCA parameter btl ^uct,openib,ofi → self,vader on "
            "/etc/openmpi/openmpi-mca-params.conf") in lines
    assert ("  MCA parameter btl_vader_eager_limit (unset) → 8192 on "
            "/etc/openmpi/openmpi-mca-params.conf") in lines
    assert cli("compare", str(a), str(b), "--expect-change", "mca_files").returncode == 0


def test_parse_mca_file() -> None:
    text = "# comment\nbtl = self,vader  # trailing\n\nmtl=^ofi\nbtl = tcp,self\nnot a line\n"
    assert parse_mca_file(text) == {"btl": "tcp,self", "mtl": "^ofi"}


def test_launcher_arguments_differ(base_run: Path, tmp_path: Path) -> None:
    def launcher(extra: list[str]):
        def edit(meta: dict) -> None:
            binary = meta["config"]["binary"]
            for p in meta["points"]:
                for side in p["sides"]:
                    at = side["argv"].index(binary)
                    side["argv"] = ["mpirun", *extra, "-np", "2", *side["argv"][at:]]
        return edit
    a = _edit(base_run, tmp_path / "a", launcher([]))
    b = _edit(base_run, tmp_path / "b", launcher(["--bind-to", "core", "--map-by", "core"]))
    proc = cli("compare", str(a), str(b))
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("  launcher"))
    assert line.startswith("  launcher mpirun -np 2 → mpirun --bind-to core --map-by core "
                           "-np 2 at "), line
    assert cli("compare", str(a), str(b), "--expect-change", "launcher").returncode == 0


def test_launcher_words_of_an_ssh_side() -> None:
    """ssh hands the remote command over as one shell string: the words before the
    executable in it count; a side started directly is said so."""
    meta = {"config": {"launcher": "ssh", "binary": "/b/pairbench-verbs", "run_dir": "/r/x"},
            "points": [{"name": "r1-write_lat-p1", "sides": [
                {"argv": ["ssh", "-o", "BatchMode=yes", "node2",
                          "cd /r/x && /b/pairbench-verbs --server -o /r/x/raw/a.csv"]},
                {"argv": ["/b/pairbench-verbs", "--client"]}]}]}
    assert _launcher(meta) == {"write_lat-p1": "ssh -o BatchMode=yes node2 cd RUN && ; "
                                               "(the executable itself)"}


def test_build_differs(base_run: Path, tmp_path: Path) -> None:
    def build(flags: str):
        def edit(meta: dict) -> None:
            for p in meta["points"]:
                p.setdefault("env_record", {})["build"] = {
                    "compiler": "GNU 12.2.0", "build_type": "Release", "c_flags": flags,
                    "commit": "0123456789ab"}
        return edit
    a = _edit(base_run, tmp_path / "a", build("-O2"))
    b = _edit(base_run, tmp_path / "b", build("-O3 -march=native"))
    proc = cli("compare", str(a), str(b))
    assert ("  executable build GNU 12.2.0, Release, -O2, commit 0123456789ab → GNU 12.2.0, "
            "Release, -O3 -march=native, commit 0123456789ab") in proc.stdout.splitlines()


def test_expect_change_names() -> None:
    assert parse_expected([f"{VAR},mpi_env", "host", "mca_files,launcher,build"]) == [
        VAR, "mpi_env", "host", "mca_files", "launcher", "build"]
    with pytest.raises(UsageError, match="unknown field 'HOME_DIR'"):
        parse_expected(["HOME_DIR"])   # not a variable of the recorded families


def test_expect_change_unknown_family_variable_is_a_usage_error(base_run: Path) -> None:
    proc = cli("compare", str(base_run), str(base_run), "--expect-change", "SLURM_JOB_ID")
    assert_clean_error(proc, "--expect-change: unknown field 'SLURM_JOB_ID'")


def test_a_value_that_is_not_utf8_keeps_the_record_readable(tmp_path: Path) -> None:
    """A tuning variable holding bytes that are not UTF-8 (JSON must be): its bytes above 0x7f
    are written as \\u00XX, the record stays valid and the rest of it is kept."""
    _real_mpi()
    import subprocess

    from mpi_env import env_for_mpi

    env = {**env_for_mpi(), "UCX_NOT_UTF8": "a\udcffb", "UCX_UTF8": "café"}
    rec = tmp_path / "env.json"
    proc = subprocess.run(["mpirun", "--oversubscribe", "-np", "2", str(MPI_BIN), "--test",
                           "latency", "--sizes", "8", "-n", "50", "--quiet", "--env-json",
                           str(rec)], env=env, capture_output=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    tuned = json.loads(rec.read_bytes())["tuning"]["env"]
    assert tuned["UCX_NOT_UTF8"] == "a\u00ffb" and tuned["UCX_UTF8"] == "café"
