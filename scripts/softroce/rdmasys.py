"""RDMA device discovery and Soft-RoCE (rxe) set-up through sysfs and iproute2.

Shared by the host side of the rig (hardware / local-rxe modes) and by the
guest side (vm mode).  Standard library only.  Every function that waits takes
a deadline; failures raise StepError naming the step, never hang.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import time
from dataclasses import dataclass

# Overridable so tests can run hardware mode on a synthetic sysfs tree.
SYSFS_IB = os.environ.get("SOFTROCE_RUN_SYSFS", "/sys/class/infiniband")
# Set-up commands need sbin even when the caller's PATH lacks it.
TOOL_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class StepError(Exception):
    """A set-up step failed; str() is the message, .step names the step."""

    def __init__(self, step: str, message: str) -> None:
        super().__init__(f"{step}: {message}")
        self.step = step


@dataclass
class Device:
    name: str  # e.g. rxe0, mlx5_0
    port: int
    gid_index: int
    link_layer: str  # "Ethernet" or "InfiniBand"
    gid_type: str  # "RoCE v2", "RoCE v1", "IB" ...
    ip: str  # IPv4 address usable by rdma_cm, "" if unknown
    driver: str  # kernel driver, e.g. rdma_rxe, mlx5_core; "" if unknown

    def env(self, mode: str) -> dict[str, str]:
        return {
            "PB_RDMA_DEVICE": self.name,
            "PB_RDMA_PORT": str(self.port),
            "PB_RDMA_GID_INDEX": str(self.gid_index),
            "PB_RDMA_IP": self.ip,
            "PB_RIG_MODE": mode,
        }

    def describe(self) -> str:
        return (f"device {self.name} port {self.port} gid-index {self.gid_index} "
                f"({self.gid_type}) link-layer {self.link_layer} ip {self.ip or '-'}"
                + (f" driver {self.driver}" if self.driver else ""))


def read_text(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return ""


def _ipv4_from_gid(gid: str) -> str:
    """'0000:0000:0000:0000:0000:ffff:0a63:0001' -> '10.99.0.1', else ''."""
    try:
        addr = ipaddress.IPv6Address(gid)
    except ValueError:
        return ""
    mapped = addr.ipv4_mapped
    return str(mapped) if mapped else ""


def port_state(dev: str, port: int, root: str = SYSFS_IB) -> str:
    """'ACTIVE', 'DOWN', 'INIT', ... from '4: ACTIVE'; '' if absent."""
    state = read_text(f"{root}/{dev}/ports/{port}/state")
    return state.split(":", 1)[-1].strip()


def pick_gid(dev: str, port: int, root: str = SYSFS_IB) -> tuple[int, str, str] | None:
    """Best GID of a port: (index, type, ipv4).

    Ethernet (RoCE): prefer RoCE v2 with an IPv4-mapped address (what rdma_cm and
    perftest -x use), then RoCE v2, then anything non-zero.  InfiniBand: index 0.
    """
    pdir = f"{root}/{dev}/ports/{port}"
    if read_text(f"{pdir}/link_layer") == "InfiniBand":
        return (0, "IB", "")
    try:
        names = os.listdir(f"{pdir}/gids")
    except OSError:
        return None
    candidates = []
    for name in names:
        if not name.isdigit():
            continue
        idx = int(name)
        gid = read_text(f"{pdir}/gids/{name}")
        try:
            if ipaddress.IPv6Address(gid) == ipaddress.IPv6Address("::"):
                continue  # empty table slot
        except ValueError:
            continue
        gtype = read_text(f"{pdir}/gid_attrs/types/{name}")
        ip = _ipv4_from_gid(gid)
        rank = (0 if gtype.lower() == "roce v2" else 1, 0 if ip else 1, idx)
        candidates.append((rank, idx, gtype, ip))
    if not candidates:
        return None
    _, idx, gtype, ip = min(candidates)
    return (idx, gtype, ip)


def describe_port(dev: str, port: int, root: str = SYSFS_IB) -> Device | None:
    gid = pick_gid(dev, port, root)
    if gid is None:
        return None
    driver = os.path.basename(os.path.realpath(f"{root}/{dev}/device/driver")) \
        if os.path.exists(f"{root}/{dev}/device/driver") else ""
    if not driver and dev.startswith("rxe"):
        driver = "rdma_rxe"
    return Device(name=dev, port=port, gid_index=gid[0], gid_type=gid[1],
                  link_layer=read_text(f"{root}/{dev}/ports/{port}/link_layer") or "?",
                  ip=gid[2], driver=driver)


def find_active(root: str = SYSFS_IB) -> Device | None:
    """First device (sorted by name) with an ACTIVE port and a usable GID."""
    try:
        devs = sorted(os.listdir(root))
    except OSError:
        return None
    for dev in devs:
        try:
            ports = sorted(int(p) for p in os.listdir(f"{root}/{dev}/ports") if p.isdigit())
        except OSError:
            continue
        for port in ports:
            if port_state(dev, port, root) == "ACTIVE":
                found = describe_port(dev, port, root)
                if found:
                    return found
    return None


def find_all_active(root: str = SYSFS_IB) -> list[Device]:
    """Every device (sorted by name) with an ACTIVE port and a usable GID: its first such port."""
    try:
        devs = sorted(os.listdir(root))
    except OSError:
        return []
    found = []
    for dev in devs:
        try:
            ports = sorted(int(p) for p in os.listdir(f"{root}/{dev}/ports") if p.isdigit())
        except OSError:
            continue
        for port in ports:
            if port_state(dev, port, root) == "ACTIVE":
                d = describe_port(dev, port, root)
                if d:
                    found.append(d)
                    break
    return found


def rxe_cidr(index: int) -> str:
    """Address of the rig's index-th Soft-RoCE netdev: each device its own /24 subnet
    (10.99.0.1/24, 10.98.0.1/24, ...), so no two of them share a route."""
    if not 0 <= index < 64:
        raise ValueError(f"device index {index} out of range 0..63")
    return f"10.{99 - index}.0.1/24"


def devices_env(devs: list[Device]) -> dict[str, str]:
    """What COMMAND sees about all devices of the rig (PB_RDMA_DEVICE etc. name the first)."""
    return {"PB_RDMA_DEVICES": ",".join(d.name for d in devs),
            "PB_RDMA_IPS": ",".join(d.ip for d in devs),
            "PB_RDMA_DEVICE_COUNT": str(len(devs))}


def run_tool(step: str, argv: list[str], timeout_s: float = 30.0) -> str:
    """Run a set-up command; raise StepError with its output on failure."""
    env = dict(os.environ, PATH=TOOL_PATH)
    try:
        res = subprocess.run(argv, env=env, capture_output=True, text=True,
                             timeout=timeout_s, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise StepError(step, f"{argv[0]} not found (install rdma-core, iproute2, kmod)") from None
    except subprocess.TimeoutExpired:
        raise StepError(step, f"'{' '.join(argv)}' did not finish "
                              f"within {timeout_s:.0f} s") from None
    if res.returncode != 0:
        out = (res.stderr.strip() or res.stdout.strip() or "no output").splitlines()
        raise StepError(step, f"'{' '.join(argv)}' exited {res.returncode}: {' | '.join(out[-3:])}")
    return res.stdout


def rxe_available() -> bool:
    """Can this kernel provide rdma_rxe (already loaded, built in, or loadable)?"""
    if os.path.isdir("/sys/module/rdma_rxe"):
        return True
    try:
        run_tool("probe", ["modprobe", "-n", "-q", "rdma_rxe"], timeout_s=10)
        return True
    except StepError:
        return False


def create_rxe(rxe: str, netdev: str, cidr: str, deadline: float,
               log=lambda msg: None, fault: str = "", create_dummy: bool = True) -> Device:
    """modprobe rdma_rxe, netdev with cidr (a new dummy one unless create_dummy is
    False), rxe on it, wait for ACTIVE + GID.

    fault ("module" or "active", from $SOFTROCE_RUN_FAULT) makes that step fail on
    purpose, so tests can check that a set-up failure is reported as such.
    """
    module = "rdma_rxe_injected_fault" if fault == "module" else "rdma_rxe"
    log(f"loading kernel module {module}")
    run_tool("load module rdma_rxe", ["modprobe", module])
    if create_dummy:
        log(f"creating dummy interface {netdev} with {cidr}")
        run_tool("create dummy interface", ["ip", "link", "add", netdev, "type", "dummy"])
    else:
        log(f"configuring interface {netdev} with {cidr}")
    run_tool("assign address", ["ip", "addr", "add", cidr, "dev", netdev])
    run_tool("bring interface up", ["ip", "link", "set", netdev, "up"])
    log(f"creating Soft-RoCE device {rxe} on {netdev}")
    run_tool("create rxe device", ["rdma", "link", "add", rxe, "type", "rxe", "netdev", netdev])
    want_ip = cidr.split("/", 1)[0] if fault != "active" else "192.0.2.1 (injected fault)"
    state = ""
    while True:
        state = port_state(rxe, 1)
        if state == "ACTIVE":
            dev = describe_port(rxe, 1)
            if dev and dev.ip == want_ip:
                return dev
        if time.monotonic() >= deadline:
            raise StepError("wait for ACTIVE port",
                            f"{rxe} port 1 is '{state or 'absent'}' (need ACTIVE with an "
                            f"IPv4-mapped RoCE v2 GID for {want_ip}) at the deadline")
        time.sleep(0.2)


def remove_rxe(rxe: str, netdev: str) -> list[str]:
    """Best-effort clean-up; returns the messages of steps that failed."""
    errors = []
    for step, argv in (("delete rxe device", ["rdma", "link", "delete", rxe]),
                       ("delete dummy interface", ["ip", "link", "delete", netdev])):
        try:
            run_tool(step, argv)
        except StepError as e:
            errors.append(str(e))
    return errors


def netdev_by_mac(mac: str, deadline: float) -> str:
    """Name of the network interface with this MAC address, waiting for it to appear."""
    mac = mac.lower()
    while True:
        try:
            names = sorted(os.listdir("/sys/class/net"))
        except OSError:
            names = []
        for name in names:
            if read_text(f"/sys/class/net/{name}/address").lower() == mac:
                return name
        if time.monotonic() >= deadline:
            raise StepError("find the link's network interface",
                            f"no interface with MAC {mac} (seen: {', '.join(names) or 'none'})")
        time.sleep(0.2)
