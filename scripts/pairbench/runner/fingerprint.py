"""Environment fingerprint stored in metadata.json.

Every field is read from the system (sysfs, /proc, tools if installed). What cannot be
read is recorded as null (JSON) — never guessed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import shutil
import socket
import sys
from collections.abc import Callable
from pathlib import Path

from pairbench import __version__
from pairbench.io import procutil


def _read(path: Path | str) -> str | None:
    try:
        return Path(path).read_text(errors="replace").strip()
    except OSError:
        return None


Stop = Callable[[], bool] | None


def _cmd(argv: list[str], stop: Stop = None, timeout_s: float = 10.0) -> str | None:
    """stdout of a command, or None if it is not installed / fails / does not finish within
    timeout_s / stop() turned true (it runs in its own process group, killed then)."""
    if shutil.which(argv[0]) is None:
        return None
    p = procutil.run_captured(argv, timeout_s, stop)
    if p is None:
        return None
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else None


def cpu_info(stop: Stop = None) -> dict:
    info: dict = {"model": None, "logical_cpus": os.cpu_count(), "cores": None, "sockets": None,
                  "threads_per_core": None, "smt_active": None, "governor": None, "flags": None,
                  "clocksource": None}
    cpuinfo = _read("/proc/cpuinfo") or ""
    m = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, flags=re.M)
    info["model"] = m.group(1).strip() if m else None
    m = re.search(r"^flags\s*:\s*(.+)$", cpuinfo, flags=re.M)
    if m:
        wanted = {"constant_tsc", "nonstop_tsc", "avx2", "avx512f", "hypervisor"}
        info["flags"] = sorted(wanted & set(m.group(1).split()))
    lscpu = _cmd(["lscpu", "-J"], stop)
    if lscpu:
        try:
            fields = {e["field"].rstrip(":"): e["data"] for e in json.loads(lscpu)["lscpu"]}
        except (ValueError, KeyError, TypeError):
            fields = {}
        def num(key: str) -> int | None:
            v = fields.get(key)
            return int(v) if v and str(v).isdigit() else None
        tpc, cps, sockets = num("Thread(s) per core"), num("Core(s) per socket"), num("Socket(s)")
        info["threads_per_core"] = tpc
        info["sockets"] = sockets
        info["cores"] = cps * sockets if cps and sockets else None
        info["model"] = info["model"] or fields.get("Model name")
    # The kernel's clocksource decides what one clock read costs (tsc: vDSO, tens of
    # ns; hpet/acpi_pm: a system call, about 1 us) and so what sits in each sample.
    info["clocksource"] = _read(
        "/sys/devices/system/clocksource/clocksource0/current_clocksource")
    smt = _read("/sys/devices/system/cpu/smt/active")
    info["smt_active"] = None if smt is None else smt == "1"
    govs = {}
    for g in sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")):
        govs[g.parent.parent.name] = _read(g)
    if govs:
        values = set(govs.values())
        info["governor"] = values.pop() if len(values) == 1 else govs
    return info


def numa_info(stop: Stop = None) -> dict:
    nodes = {}
    for n in sorted(Path("/sys/devices/system/node").glob("node[0-9]*")):
        nodes[n.name] = _read(n / "cpulist")
    return {"nodes": nodes or None,
            "hwloc_synthetic": _cmd(["lstopo-no-graphics", "--of", "synthetic",
                                     "--no-io"], stop)}


def pcie_control(config: bytes) -> tuple[str | None, str | None]:
    """(MaxReadReq, MaxPayload) from a PCI function's config space ('512 bytes', as lspci
    writes them), found through the capability list: the PCI Express capability (id 0x10),
    its Device Control register at +8 (bits 14:12 and 7:5, 128 << value bytes). Without
    root the kernel shows only the first 64 bytes, where the capability never lies: then
    (None, None)."""
    if len(config) < 0x40 or not config[0x06] & 0x10:  # Status: capabilities list
        return None, None
    ptr, seen = config[0x34] & 0xFC, set()
    while ptr and ptr not in seen and ptr + 10 <= len(config):
        seen.add(ptr)
        if config[ptr] == 0x10:
            ctl = int.from_bytes(config[ptr + 8:ptr + 10], "little")
            return (f"{128 << ((ctl >> 12) & 7)} bytes", f"{128 << ((ctl >> 5) & 7)} bytes")
        ptr = config[ptr + 1] & 0xFC
    return None, None


def _pci_info(dev: Path, stop: Stop = None) -> dict:
    pci = dev / "device"
    out: dict = {"pci_address": None, "pcie_link_speed": _read(pci / "current_link_speed"),
                 "pcie_link_width": _read(pci / "current_link_width"),
                 "pcie_max_link_speed": _read(pci / "max_link_speed"),
                 "pcie_max_link_width": _read(pci / "max_link_width"),
                 "max_read_req": None, "max_payload": None,
                 "numa_node": _read(pci / "numa_node")}
    if not pci.exists():  # e.g. rxe: no PCI device behind it
        return out
    try:
        out["pci_address"] = pci.resolve().name
    except OSError:
        return out
    with contextlib.suppress(OSError):
        out["max_read_req"], out["max_payload"] = pcie_control((pci / "config").read_bytes())
    if out["max_read_req"] is None:  # lspci -vv shows it to root only; else null
        lspci = _cmd(["lspci", "-vv", "-s", out["pci_address"]], stop)
        m = re.search(r"MaxReadReq (\d+ bytes)", lspci or "")
        out["max_read_req"] = m.group(1) if m else None
        m = re.search(r"DevCtl:.*?MaxPayload (\d+ bytes)", lspci or "", flags=re.S)
        out["max_payload"] = m.group(1) if m else None
    return out


IB_SYSFS = Path("/sys/class/infiniband")
# Lane signalling rate (Gb/s, as smpquery prints it) -> the InfiniBand speed name.
IB_LANE_GBPS = {2.5: "SDR", 5.0: "DDR", 10.0: "QDR", 10.3125: "FDR10", 14.0625: "FDR",
                25.78125: "EDR", 53.125: "HDR", 106.25: "NDR", 212.5: "XDR"}


def parse_ethtool(text: str | None) -> dict:
    """What an Ethernet (RoCE) port supports, from `ethtool NETDEV`: the fastest of its
    "Supported link modes" in Mb/s (speed_supported_mbps); {} when not available."""
    m = re.search(r"Supported link modes:(.*?)(?:\n\s*[A-Z][\w ]*:|\Z)", text or "", flags=re.S)
    speeds = [int(x) for x in re.findall(r"(\d+)base", m.group(1))] if m else []
    return {"speed_supported_mbps": max(speeds)} if speeds else {}


def parse_portinfo(text: str | None) -> dict:
    """What an InfiniBand port supports, from `smpquery portinfo` (a MAD query of the local
    port; it needs access to /dev/infiniband/umad*, usually root): width_supported
    (['1X', '4X']) and speed_supported (['SDR', ..., 'HDR']); {} when not available."""
    if not text:
        return {}
    out: dict = {}
    m = re.search(r"^LinkWidthSupported:\.*(.+)$", text, flags=re.M)
    if m:
        out["width_supported"] = re.findall(r"\d+X", m.group(1))
    speeds: list[str] = []
    for key in ("LinkSpeedSupported", "LinkSpeedExtSupported", "LinkSpeedExt2Supported"):
        m = re.search(rf"^{key}:\.*(.+)$", text, flags=re.M)
        for g in re.findall(r"([\d.]+) Gbps", m.group(1) if m else ""):
            name = IB_LANE_GBPS.get(float(g))
            if name and name not in speeds:
                speeds.append(name)
    if speeds:
        out["speed_supported"] = speeds
    return out


def _driver(dev: Path) -> str | None:
    """The kernel driver behind an RDMA device (mlx5_core, rdma_rxe...): the PCI device's
    driver link, else by the name of a software device (rxe*, siw*)."""
    try:
        return os.readlink(dev / "device" / "driver").rsplit("/", 1)[-1]
    except OSError:
        pass
    for prefix, drv in (("rxe", "rdma_rxe"), ("pbrxe", "rdma_rxe"), ("siw", "siw")):
        if dev.name.startswith(prefix):
            return drv
    return None


def rdma_devices(stop: Stop = None, base: Path = IB_SYSFS,
                 sys_root: Path = Path("/sys")) -> list[dict] | None:
    """Every RDMA device under base (/sys/class/infiniband): identity, firmware, driver
    (and /sys/module/DRIVER/version where the driver sets one, as MLNX_OFED's do), ports
    (link layer, rate, state, physical state) and the PCIe link it sits on."""
    if not base.is_dir():
        return None
    devs = []
    for dev in sorted(base.iterdir()):
        driver = _driver(dev)
        entry: dict = {"name": dev.name, "fw_ver": _read(dev / "fw_ver"),
                       "board_id": _read(dev / "board_id"), "hca_type": _read(dev / "hca_type"),
                       "node_type": _read(dev / "node_type"), "driver": driver,
                       "driver_version": (_read(sys_root / "module" / driver / "version")
                                          if driver else None),
                       "ports": {}}
        for port in sorted((dev / "ports").glob("*")):
            entry["ports"][port.name] = {"link_layer": _read(port / "link_layer"),
                                         "rate": _read(port / "rate"),
                                         "state": _read(port / "state"),
                                         "phys_state": _read(port / "phys_state")}
            layer = entry["ports"][port.name]["link_layer"]
            if layer == "InfiniBand" and base == IB_SYSFS:
                entry["ports"][port.name].update(parse_portinfo(_cmd(
                    ["smpquery", "-C", dev.name, "-P", port.name, "-D", "portinfo", "0"],
                    stop)))
            netdev = _read(port / "gid_attrs" / "ndevs" / "0")
            if layer == "Ethernet" and netdev and base == IB_SYSFS:
                entry["ports"][port.name].update(parse_ethtool(_cmd(["ethtool", netdev],
                                                                    stop)))
        entry.update(_pci_info(dev, stop))
        devs.append(entry)
    return devs


def package_version(pkg: str, stop: Stop = None) -> str | None:
    return _cmd(["dpkg-query", "-W", "-f", "${Version}", pkg], stop)


def mpi_info(stop: Stop = None) -> dict:
    text = _cmd(["ompi_info", "--version"], stop) or _cmd(["mpirun", "--version"], stop)
    first = text.splitlines()[0].strip() if text else None
    return {"library_version": first, "mpirun": shutil.which("mpirun"),
            "mca_param_files": mca_param_files(stop)}


def parse_mca_file(text: str) -> dict[str, str]:
    """The settings of an Open MPI MCA parameter file ('name = value' lines; '#' starts a
    comment; a later line wins, as Open MPI reads it)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if "=" in line:
            k, v = (x.strip() for x in line.split("=", 1))
            if k:
                out[k] = v
    return out


def mca_param_files(stop: Stop = None) -> list[dict] | None:
    """The MCA parameter files Open MPI reads on this host, in its order (ompi_info's value
    of mca_base_param_files: $HOME/.openmpi/mca-params.conf, the install's
    etc/openmpi-mca-params.conf, or what OMPI_MCA_mca_base_param_files says), each with
    its sha256 and settings (null for a file that does not exist). None without Open MPI."""
    text = _cmd(["ompi_info", "--param", "mca", "base", "--level", "9", "--parsable"], stop)
    m = re.search(r"^mca:mca:base:param:mca_base_param_files:value:(.*)$", text or "",
                  flags=re.M)
    if m is None:
        return None
    out = []
    for path in (p.strip() for p in re.split(r"[,:]", m.group(1))):
        if not path:
            continue
        try:
            data = Path(path).read_bytes()
        except OSError:
            out.append({"path": path, "sha256": None, "settings": None})
            continue
        out.append({"path": path, "sha256": hashlib.sha256(data).hexdigest(),
                    "settings": parse_mca_file(data.decode(errors="replace"))})
    return out


def git_info(repo: Path, stop: Stop = None) -> dict:
    commit = _cmd(["git", "-C", str(repo), "rev-parse", "HEAD"], stop)
    status = _cmd(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                  stop)
    return {"commit": commit, "dirty": None if commit is None else bool(status)}


def os_release() -> str | None:
    text = _read("/etc/os-release") or ""
    m = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', text, flags=re.M)
    return m.group(1) if m else None


# The fingerprint's fields that describe the installed software and the source tree, not the
# machine: the Soft-RoCE rig's guest runs the host's own root file system (read-only) and
# source tree, so inside it these are the host's, taken from the host's fingerprint
# (software_of()) instead of being asked again (git status over the guest's 9p mount 11 s,
# ompi_info 6 s, dpkg-query 1.4 s in the emulated guest: a third of the default run's rig part).
SOFTWARE_FIELDS = ("os", "rdma_core_version", "libibverbs_version", "mpi", "git")


def software_of(fp: dict) -> dict:
    """The software fields of a fingerprint gather() made (to hand to gather(software=))."""
    return {k: fp[k] for k in SOFTWARE_FIELDS if k in fp}


def gather(repo: Path, argv: list[str] | None = None, stop: Stop = None,
           software: dict | None = None) -> dict:
    """The fingerprint of this machine, now; its helper commands end early (as unknown)
    once stop() turns true. `software`: the SOFTWARE_FIELDS of the host whose root file
    system and source tree this machine runs (the Soft-RoCE rig's guest), taken as they are
    ("software_from": "host" says so)."""
    sw = software or {}
    have = set(SOFTWARE_FIELDS) <= set(sw)
    fp = {
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "os": sw["os"] if have else os_release(),
        "cpu": cpu_info(stop),
        "numa": numa_info(stop),
        "rdma_devices": rdma_devices(stop),
        "rdma_core_version": (sw["rdma_core_version"] if have
                              else package_version("rdma-core", stop)),
        "libibverbs_version": (sw["libibverbs_version"] if have
                               else package_version("libibverbs1", stop)),
        "mpi": sw["mpi"] if have else mpi_info(stop),
        "pairbench_version": __version__,
        "git": sw["git"] if have else git_info(repo, stop),
        "python": sys.version.split()[0],
        "command_line": list(argv if argv is not None else sys.argv),
        "rig": {k: os.environ.get(k) for k in
                ("PB_RIG_MODE", "PB_RDMA_DEVICE", "PB_RDMA_GID_INDEX", "PB_RDMA_IP")},
        "memlock_limit": _memlock(),
        "hugepages": hugepages(),
        "loadavg": loadavg(),
    }
    if have:
        fp["software_from"] = "host"
    return fp


def loadavg() -> dict | None:
    """/proc/loadavg now: 1-, 5- and 15-minute averages and runnable/total tasks. Timing is
    only meaningful on a quiet machine, so a run records it at its start (in the
    fingerprint) and at its end (metadata.json "loadavg_finished")."""
    text = _read("/proc/loadavg")
    parts = text.split() if text else []
    if len(parts) < 4:
        return None
    try:
        return {"1min": float(parts[0]), "5min": float(parts[1]), "15min": float(parts[2]),
                "tasks": parts[3]}
    except ValueError:
        return None


def _memlock() -> str | None:
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    except (ImportError, OSError, ValueError):
        return None
    return "unlimited" if soft == resource.RLIM_INFINITY else str(soft)


def hugepages(proc: Path = Path("/proc"), sys_root: Path = Path("/sys")) -> dict | None:
    """Huge pages now: the default pool (HugePages_Total, Hugepagesize from /proc/meminfo)
    and the transparent huge page mode (the bracketed word of its 'enabled' file)."""
    text = _read(proc / "meminfo")
    if text is None:
        return None
    info = dict(re.findall(r"^(HugePages_Total|Hugepagesize):\s*(\d+)", text, flags=re.M))
    thp = _read(sys_root / "kernel/mm/transparent_hugepage/enabled") or ""
    m = re.search(r"\[(\w+)\]", thp)
    return {"total": int(info["HugePages_Total"]) if "HugePages_Total" in info else None,
            "size_kb": int(info["Hugepagesize"]) if "Hugepagesize" in info else None,
            "transparent": m.group(1) if m else None}
