"""accept's [environment] criteria (issue 25) on fake sysfs trees: an InfiniBand port with
counters/, a degraded link width, a PCIe x8 link in an x16 card; each criterion passes and
fails on its own; unknown keys and wrong types name the key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO, assert_clean_error, cli
from pairbench.analysis.accept import load_spec
from pairbench.analysis.envcheck import Environment, evaluate_environment, parse_rate, pcie_gen
from pairbench.runner.fingerprint import hugepages, parse_ethtool, pcie_control, rdma_devices


def pcie_config(mrr: int = 4096, mps: int = 256) -> bytes:
    """256 bytes of PCI config space: a PM capability at 0x40, PCI Express at 0x60 whose
    Device Control register holds MaxReadReq and MaxPayload."""
    cfg = bytearray(256)
    cfg[0x06] = 0x10                      # Status: capabilities list
    cfg[0x34] = 0x40
    cfg[0x40], cfg[0x41] = 0x01, 0x60     # power management, next 0x60
    cfg[0x60], cfg[0x61] = 0x10, 0x00     # PCI Express, last
    ctl = ((mrr // 128).bit_length() - 1) << 12 | ((mps // 128).bit_length() - 1) << 5
    cfg[0x68:0x6A] = ctl.to_bytes(2, "little")
    return bytes(cfg)


def fake_hca(root: Path, name: str, bus: str, rate: str = "200 Gb/sec (4X HDR)",
             width: str = "16", max_width: str = "16", speed: str = "16.0 GT/s PCIe",
             fw: str = "20.41.1000", mrr: int = 4096) -> None:
    """/sys/class/infiniband/NAME under root/ib, its PCI function under root/pci/BUS."""
    pci = root / "pci" / bus
    pci.mkdir(parents=True)
    for f, v in (("current_link_speed", speed), ("current_link_width", width),
                 ("max_link_speed", "16.0 GT/s PCIe"), ("max_link_width", max_width),
                 ("numa_node", "0")):
        (pci / f).write_text(v + "\n")
    (pci / "config").write_bytes(pcie_config(mrr))
    drv = root / "drivers" / "mlx5_core"
    drv.mkdir(parents=True, exist_ok=True)
    (pci / "driver").symlink_to(drv)
    dev = root / "ib" / name
    port = dev / "ports" / "1"
    (port / "counters").mkdir(parents=True)
    (port / "hw_counters").mkdir()
    for f, v in (("rate", rate), ("state", "4: ACTIVE"), ("phys_state", "5: LinkUp"),
                 ("link_layer", "InfiniBand")):
        (port / f).write_text(v + "\n")
    for c in ("symbol_error", "link_downed", "port_rcv_errors", "port_xmit_data",
              "port_rcv_data", "port_xmit_packets"):
        (port / "counters" / c).write_text("0\n")
    (port / "hw_counters" / "out_of_sequence").write_text("0\n")
    (dev / "fw_ver").write_text(fw + "\n")
    (dev / "node_type").write_text("1: CA\n")
    (dev / "device").symlink_to(pci)


@pytest.fixture()
def sysfs(tmp_path: Path) -> Path:
    fake_hca(tmp_path, "mlx5_0", "0000:3b:00.0")
    fake_hca(tmp_path, "mlx5_1", "0000:5e:00.0", rate="50 Gb/sec (1X HDR)")      # degraded
    fake_hca(tmp_path, "mlx5_2", "0000:af:00.0", width="8", fw="20.39.1002", mrr=512)  # x8
    return tmp_path


def _meta(sysfs: Path) -> dict:
    devs = rdma_devices(base=sysfs / "ib", sys_root=sysfs)
    recs = [{"name": n, "port": 1, "active_mtu_bytes": 4096 if n != "mlx5_1" else 1024}
            for n in ("mlx5_0", "mlx5_1", "mlx5_2")]
    return {"fingerprint": {"host": "h", "rdma_devices": devs},
            "points": [{"name": "r1-write_bw-p3", "env_record": {"host": "h", "devices": recs}}]}


def _judge(meta: dict, **crit: object) -> dict[str, tuple[str, str]]:
    rows: list[dict] = []
    evaluate_environment(Environment(**crit), meta, None, rows)
    return {r["test"]: (r["verdict"], r["detail"]) for r in rows}


def test_the_fingerprint_reads_the_fake_tree(sysfs: Path) -> None:
    devs = {d["name"]: d for d in rdma_devices(base=sysfs / "ib", sys_root=sysfs)}
    d = devs["mlx5_2"]
    assert d["driver"] == "mlx5_core" and d["fw_ver"] == "20.39.1002"
    assert (d["pcie_link_width"], d["pcie_max_link_width"]) == ("8", "16")
    assert (d["max_read_req"], d["max_payload"]) == ("512 bytes", "256 bytes")
    assert d["pci_address"] == "0000:af:00.0"
    assert devs["mlx5_1"]["ports"]["1"]["rate"] == "50 Gb/sec (1X HDR)"
    assert pcie_control(pcie_config()[:64]) == (None, None)   # no root: 64 bytes only


@pytest.mark.parametrize(("crit", "good", "bad", "needle"), [
    ({"link_width": "4X"}, "mlx5_0 port 1", "mlx5_1 port 1", "active 1X (50 Gb/sec (1X HDR)), "
     "expected 4X"),
    ({"link_speed": "HDR"}, "mlx5_1 port 1", None, ""),
    ({"min_pcie_width": 16}, "mlx5_0", "mlx5_2", "PCIe link 16.0 GT/s PCIe x8"),
    ({"pcie_full_link": True}, "mlx5_0", "mlx5_2", "the card supports 16.0 GT/s PCIe x16"),
    ({"min_pcie_gen": 4}, "mlx5_2", None, ""),
    ({"min_max_read_req": 4096}, "mlx5_0", "mlx5_2", "MaxReadReq 512 bytes"),
    ({"mtu": 4096}, "mlx5_0", "mlx5_1", "active MTU 1024 B"),
    ({"firmware": "20.41.1000"}, "mlx5_1", "mlx5_2", "firmware 20.39.1002, expected 20.41.1000"),
])
def test_each_criterion_passes_and_fails_on_its_own(sysfs: Path, crit: dict, good: str,
                                                    bad: str | None, needle: str) -> None:
    got = _judge(_meta(sysfs), **crit)
    assert len(got) == 3, got      # one row per device, nothing else judged
    assert got[good][0] == "pass", got
    failed = {k for k, (v, _) in got.items() if v == "fail"}
    assert failed == ({bad} if bad else set()), got
    if bad:
        assert needle in got[bad][1], got[bad]


def test_same_firmware_names_the_odd_device(sysfs: Path) -> None:
    meta = _meta(sysfs)
    got = _judge(meta, same_firmware=True)
    (verdict, detail), = got.values()
    assert verdict == "fail"
    assert detail == ("2 firmware version(s): 20.39.1002 on mlx5_2; 20.41.1000 on mlx5_0, "
                      "mlx5_1")
    assert _judge(meta, same_firmware=True, devices=["mlx5_0", "mlx5_1"]) == {
        "mlx5_0, mlx5_1": ("pass", "1 firmware version(s): 20.41.1000 on mlx5_0, mlx5_1")}


def test_highest_supported_link(sysfs: Path) -> None:
    meta = _meta(sysfs)
    got = _judge(meta, link_width="max", devices=["mlx5_0"])
    assert got["mlx5_0 port 1"][0] == "fail"
    assert "supported link is not recorded" in got["mlx5_0 port 1"][1]
    for d in meta["fingerprint"]["rdma_devices"]:   # as smpquery portinfo reports it
        d["ports"]["1"].update(width_supported=["1X", "4X"],
                               speed_supported=["SDR", "QDR", "EDR", "HDR"])
    got = _judge(meta, link_width="max", link_speed="max", devices=["mlx5_0", "mlx5_1"])
    assert got["mlx5_0 port 1"] == ("pass", "active HDR, the port supports up to HDR "
                                            "(SDR, QDR, EDR, HDR)")
    got = _judge(meta, link_width="max", devices=["mlx5_1"])
    assert got["mlx5_1 port 1"] == ("fail", "active 1X, the port supports up to 4X (1X, 4X)")


def test_highest_supported_speed_of_a_roce_port(sysfs: Path) -> None:
    meta = _meta(sysfs)
    d = meta["fingerprint"]["rdma_devices"][0]
    d["ports"]["1"].update(link_layer="Ethernet", rate="100 Gb/sec (4X EDR)",
                           **parse_ethtool(ETHTOOL))
    assert d["ports"]["1"]["speed_supported_mbps"] == 200000
    rows: list[dict] = []
    evaluate_environment(Environment(link_speed="max", link_width="max",
                                     devices=["mlx5_0"]), meta, None, rows)
    details = sorted(r["detail"] for r in rows)
    assert details == ["an Ethernet (RoCE) port has no InfiniBand width: judge it with "
                       "link_speed = \"max\"",
                       "rate 100 Gb/sec (4X EDR), the netdev supports up to 200 Gb/s"]
    d["ports"]["1"]["rate"] = "200 Gb/sec (4X HDR)"
    rows = []
    evaluate_environment(Environment(link_speed="max", devices=["mlx5_0"]), meta, None, rows)
    assert rows[0]["verdict"] == "pass"


ETHTOOL = """Settings for ens1f0np0:
\tSupported ports: [ Backplane ]
\tSupported link modes:   1000baseKX/Full
\t                        100000baseCR4/Full
\t                        200000baseCR4/Full
\tSupported pause frame use: Symmetric
\tSpeed: 100000Mb/s
"""


def test_parsers() -> None:
    assert parse_ethtool(ETHTOOL) == {"speed_supported_mbps": 200000}
    assert parse_ethtool(None) == {}
    assert parse_rate("200 Gb/sec (4X HDR)") == ("4X", "HDR")
    assert parse_rate("1x SDR") == ("1X", "SDR")
    assert parse_rate("") is None
    assert pcie_gen("16.0 GT/s PCIe") == 4 and pcie_gen("8.0 GT/s") == 3
    assert pcie_gen(None) is None


def test_hugepages_from_fake_proc(tmp_path: Path) -> None:
    (tmp_path / "meminfo").write_text("HugePages_Total:     512\nHugepagesize:       2048 kB\n")
    thp = tmp_path / "kernel/mm/transparent_hugepage"
    thp.mkdir(parents=True)
    (thp / "enabled").write_text("always [madvise] never\n")
    assert hugepages(tmp_path, tmp_path) == {"total": 512, "size_kb": 2048,
                                             "transparent": "madvise"}


def _counters_csv(path: Path, delta: int) -> None:
    head = ("run_id,repetition,layer,test,variant,msg_size_bytes,pairs,qps,host,device,port,"
            "source,counter,class,delta\n")
    rows = [f"r,1,verbs,write_bw,,65536,1,,h,mlx5_0,1,counters,symbol_error,error,{delta}",
            "r,1,verbs,write_bw,,65536,1,,h,mlx5_0,1,counters,port_xmit_data,data,100"]
    path.write_text(head + "\n".join(rows) + "\n")


def test_accept_cli_environment_section(base_run: Path, sysfs: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(base_run, run)
    meta = json.loads((run / "metadata.json").read_text())
    meta["fingerprint"]["rdma_devices"] = _meta(sysfs)["fingerprint"]["rdma_devices"]
    (run / "metadata.json").write_text(json.dumps(meta))
    spec = tmp_path / "env.toml"
    spec.write_text('[spec]\nname = "env"\n[environment]\ndevices = ["mlx5_0"]\n'
                    'link_width = "4X"\nmin_pcie_gen = 4\npcie_full_link = true\n'
                    'same_firmware = true\nno_error_counters = true\n')
    proc = cli("accept", str(run), "--spec", str(spec))
    assert proc.returncode == 1, proc.stdout + proc.stderr   # no counters.csv yet
    assert "no counters.csv" in proc.stdout
    _counters_csv(run / "counters.csv", 0)
    proc = cli("accept", str(run), "--spec", str(spec), "--junit", str(tmp_path / "j.xml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no error counter moved (1 error counter(s) read at 1 point(s))" in proc.stdout
    _counters_csv(run / "counters.csv", 3)
    proc = cli("accept", str(run), "--spec", str(spec))
    assert proc.returncode == 1
    assert ("symbol_error moved by 3 at write_bw 64 KiB 1 pair(s), repetition 1"
            in proc.stdout)


@pytest.mark.parametrize(("text", "needle"), [
    ('[environment]\nlink_width = 4\n', "environment.link_width: expected a string"),
    ('[environment]\nlink_width = "3X"\n', "expected one of 1X, 2X, 4X, 8X, 12X, max"),
    ('[environment]\npcie_full_link = "yes"\n', "environment.pcie_full_link: expected true"),
    ('[environment]\nmtu = 1500\n', "environment.mtu: expected one of 256"),
    ('[environment]\nmin_pcie_gen = 0\n', "environment.min_pcie_gen: expected positive"),
    ('[environment]\nfirmwares = "x"\n', "unknown key environment.firmwares"),
    ('[environment]\nmin_max_read_req = "4Q"\n', "environment.min_max_read_req"),
])
def test_bad_environment_keys_are_named(text: str, needle: str, tmp_path: Path,
                                        base_run: Path) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text(text)
    assert_clean_error(cli("accept", str(base_run), "--spec", str(spec)), needle)


def test_example_spec_has_the_environment_section() -> None:
    spec = load_spec(REPO / "examples" / "accept-spec.toml")
    env = spec["environment"]
    assert env.same_firmware and env.no_error_counters and env.pcie_full_link
