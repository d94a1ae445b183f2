"""compare leads with what changed (issue 25): the environment differences of two runs from
their metadata.json, in every output, and --expect-change as a condition (exit 3)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import assert_clean_error, cli
from pairbench.analysis.envdiff import diff, environment, inconclusive_reasons, parse_expected
from pairbench.errors import UsageError


def _device(name: str, fw: str) -> dict:
    return {"name": name, "fw_ver": fw, "board_id": "MT_0000000223", "hca_type": "MT4123",
            "node_type": "1: CA", "driver": "mlx5_core", "driver_version": None,
            "ports": {"1": {"link_layer": "InfiniBand", "rate": "200 Gb/sec (4X HDR)",
                            "state": "4: ACTIVE", "phys_state": "5: LinkUp"}},
            "pci_address": "0000:3b:00.0", "pcie_link_speed": "16.0 GT/s PCIe",
            "pcie_link_width": "16", "pcie_max_link_speed": "16.0 GT/s PCIe",
            "pcie_max_link_width": "16", "max_read_req": "4096 bytes",
            "max_payload": "256 bytes", "numa_node": "0"}


def _copy_run(src: Path, dst: Path, fw: str, kernel: str = "6.1.0-26-amd64") -> Path:
    """A copy of a run (same rows) whose fingerprint names two HCAs on firmware fw."""
    shutil.copytree(src, dst)
    meta = json.loads((dst / "metadata.json").read_text())
    fp = meta["fingerprint"]
    fp["kernel"] = kernel
    fp["rdma_devices"] = [_device("mlx5_0", fw), _device("mlx5_1", fw)]
    (dst / "metadata.json").write_text(json.dumps(meta))
    return dst


@pytest.fixture(scope="module")
def fw_runs(base_run: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fw")
    return {"old": _copy_run(base_run, root / "old", "28.39.1002"),
            "new": _copy_run(base_run, root / "new", "28.41.1000"),
            "new_kernel": _copy_run(base_run, root / "newk", "28.41.1000",
                                    kernel="6.1.0-27-amd64")}


def test_only_the_firmware_differs(fw_runs: dict[str, Path], tmp_path: Path) -> None:
    proc = cli("compare", str(fw_runs["old"]), str(fw_runs["new"]), "--json",
               str(tmp_path / "c.json"), "--markdown", str(tmp_path / "c.md"))
    assert proc.returncode == 0, proc.stdout + proc.stderr   # same rows: no regression
    lines = proc.stdout.splitlines()
    assert lines[0] == "what changed (1 difference(s) in the environment records):"
    assert lines[1] == "  firmware 28.39.1002 → 28.41.1000 on mlx5_0, mlx5_1"
    assert lines[2] == ""  # then the gate
    assert lines[3].startswith("gate: NO REGRESSION")
    env = json.loads((tmp_path / "c.json").read_text())["environment"]
    assert env["fields_changed"] == ["fw_ver"]
    assert [c["line"] for c in env["changes"]] == [
        "firmware 28.39.1002 → 28.41.1000 on mlx5_0, mlx5_1"]
    assert env["inconclusive"] is False and env["reasons"] == []
    md = (tmp_path / "c.md").read_text()
    assert "## What changed\n\n- firmware 28.39.1002 → 28.41.1000 on mlx5_0, mlx5_1" in md
    # the condition: exactly the firmware changed
    proc = cli("compare", str(fw_runs["old"]), str(fw_runs["new"]), "--expect-change", "fw_ver")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "environment: only the expected change(s) (fw_ver)" in proc.stdout


def test_expected_firmware_and_an_extra_kernel_change_is_inconclusive(
        fw_runs: dict[str, Path]) -> None:
    proc = cli("compare", str(fw_runs["old"]), str(fw_runs["new_kernel"]),
               "--expect-change", "fw_ver", "--format", "json")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["exit_code"] == 3
    env = data["environment"]
    assert env["fields_changed"] == ["fw_ver", "kernel"]
    assert env["inconclusive"] is True
    assert env["reasons"] == ["kernel 6.1.0-26-amd64 → 6.1.0-27-amd64: not expected "
                              "(--expect-change fw_ver)"]
    assert "environment inconclusive: exit 3" in proc.stderr
    text = cli("compare", str(fw_runs["old"]), str(fw_runs["new_kernel"]),
               "--expect-change", "fw_ver", "--allow-inconclusive")
    assert text.returncode == 3  # statistics allowed undecided; the environment is not
    assert "  kernel 6.1.0-26-amd64 → 6.1.0-27-amd64  [not expected]" in text.stdout
    assert "environment: INCONCLUSIVE (--expect-change fw_ver): kernel" in text.stdout
    # both expected: the condition holds
    ok = cli("compare", str(fw_runs["old"]), str(fw_runs["new_kernel"]),
             "--expect-change", "fw_ver,kernel")
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_expected_change_that_did_not_happen(fw_runs: dict[str, Path]) -> None:
    proc = cli("compare", str(fw_runs["old"]), str(fw_runs["old"]), "--expect-change", "fw_ver")
    assert proc.returncode == 3
    assert "fw_ver did not change (--expect-change fw_ver)" in proc.stdout
    assert proc.stdout.startswith("what changed: nothing in the environment records")


def test_expect_change_names_an_unknown_field(fw_runs: dict[str, Path]) -> None:
    proc = cli("compare", str(fw_runs["old"]), str(fw_runs["new"]), "--expect-change", "firmware")
    assert_clean_error(proc, "--expect-change: unknown field 'firmware'", "fw_ver")


def test_report_says_what_changed(fw_runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    proc = cli("report", str(fw_runs["new_kernel"]), str(fw_runs["old"]), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    assert "What changed since the base" in html
    assert "firmware 28.39.1002 → 28.41.1000 on mlx5_0, mlx5_1" in html
    assert "kernel 6.1.0-26-amd64 → 6.1.0-27-amd64" in html


def test_show_says_what_changed(fw_runs: dict[str, Path]) -> None:
    proc = cli("show", str(fw_runs["new_kernel"]), str(fw_runs["old"]))
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.replace("│", " ").split())
    assert "WHAT CHANGED since" in text
    assert "firmware 28.39.1002 → 28.41.1000 on mlx5_0, mlx5_1" in text


def _meta(**fp: object) -> dict:
    return {"fingerprint": {"host": "a", **fp}}


def test_fields_grouped_per_place_and_one_sided_values_are_not_differences() -> None:
    base = _meta(cpu={"model": "X", "governor": "performance", "smt_active": True,
                      "threads_per_core": 2},
                 memlock_limit="unlimited", hugepages={"total": 0, "size_kb": 2048,
                                                       "transparent": "madvise"},
                 mpi={"library_version": "Open MPI v4.1.4"})
    new = _meta(cpu={"model": "X", "governor": "powersave", "smt_active": False,
                     "threads_per_core": 1},
                memlock_limit="65536", hugepages={"total": 512, "size_kb": 2048,
                                                  "transparent": "always"},
                mpi={"library_version": "Open MPI v5.0.3"}, rdma_core_version="50.0-2")
    d = diff(base, new)
    assert [c.line() for c in d.changes] == [
        "MPI library Open MPI v4.1.4 → Open MPI v5.0.3",
        "CPU frequency governor performance → powersave",
        "SMT on, 2 thread(s) per core → off, 1 thread(s) per core",
        "huge pages 0 × 2048 kB, transparent madvise → 512 × 2048 kB, transparent always",
        "locked-memory limit unlimited → 65536"]
    assert d.one_side == ["rdma_core: new only"]
    assert inconclusive_reasons(d, []) == []
    assert diff({}, new).missing == ["BASE"]
    assert "no environment record" in inconclusive_reasons(diff({}, new), ["fw_ver"])[0]


def test_mtu_pcie_and_pinning_from_the_points_records() -> None:
    def meta(mtu: int, width: str, cpus: list[int]) -> dict:
        dev = {**_device("mlx5_0", "1.0"), "pcie_link_width": width}
        rec = {"host": "a", "devices": [{"name": "mlx5_0", "fw_ver": "1.0",
                                         "active_mtu_bytes": mtu}]}
        return {"fingerprint": {"host": "a", "rdma_devices": [dev]},
                "config": {"pin": "near-device"},
                "points": [{"name": "r1-write_bw-p2", "env_record": rec}],
                "pinning": {"r1-write_bw-p2": [{"cpu": c} for c in cpus],
                            "r2-write_bw-p2": [{"cpu": 9}]}}
    d = diff(meta(4096, "16", [0, 1]), meta(1024, "8", [0, 2]))
    assert [c.line() for c in d.changes] == [
        "PCIe link 16.0 GT/s PCIe x16 → 16.0 GT/s PCIe x8 on mlx5_0",
        "active MTU 4096 B → 1024 B on mlx5_0",
        "pinning cpu 0,1 → cpu 0,2 at write_bw-p2"]
    assert environment(meta(4096, "16", [0]))["pinning"] == {"": "--pin near-device",
                                                             "write_bw-p2": "cpu 0"}


def test_parse_expected() -> None:
    assert parse_expected(["fw_ver,kernel", "fw_ver"]) == ["fw_ver", "kernel"]
    with pytest.raises(UsageError, match="unknown field 'nope'"):
        parse_expected(["nope"])
