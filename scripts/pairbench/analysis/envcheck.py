"""accept's [environment] criteria (issue 25): what an HCA acceptance checks besides speed.

The values come from the run's metadata.json (pairbench.analysis.envdiff.devices: the
fingerprint of the driver's host, read from sysfs, and the points' --env-json device
records; for a verbs fabric scan also every node's record, raw/node-env.jsonl) and, for
the counters, from the run's counters.csv (docs/health.md). Each
criterion gives one check row per device it judges (the devices the run used; all with an
ACTIVE port when the points name none; or the spec's `devices`), so each passes or fails on
its own, naming the device and what it found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pairbench.analysis.envdiff import devices as run_devices
from pairbench.contract.sizes import Size
from pairbench.errors import UsageError
from pairbench.io.tomlschema import Bool, ListOf, PositiveInt, Str, key
from pairbench.runner.scanverbs import read_node_env

# Lane signalling rate (Gb/s) of each InfiniBand speed name (IBTA; ibv_query_port's
# active_speed): "highest the port supports" compares these.
IB_SPEEDS = {"SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR10": 10.3125, "FDR": 14.0625,
             "EDR": 25.78125, "HDR": 53.125, "NDR": 106.25, "XDR": 212.5}
WIDTHS = ("1X", "2X", "4X", "8X", "12X")
MTUS = (256, 512, 1024, 2048, 4096)
PCIE_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}   # GT/s per lane -> gen


class _Mtu(PositiveInt):
    def __call__(self, value: object, where: str) -> int:
        v = super().__call__(value, where)
        if v not in MTUS:
            raise UsageError(f"{where}: expected one of {', '.join(map(str, MTUS))}, got {v!r}")
        return v


@dataclass(frozen=True, kw_only=True)
class Environment:
    """[environment]: every key optional; each one present is a criterion."""
    devices: list[str] | None = key(ListOf(Str()), None)
    link_width: str | None = key(Str((*WIDTHS, "max")), None)
    link_speed: str | None = key(Str((*IB_SPEEDS, "max")), None)
    min_pcie_gen: int | None = key(PositiveInt(), None)
    min_pcie_width: int | None = key(PositiveInt(), None)
    pcie_full_link: bool | None = key(Bool(), None)
    min_max_read_req: int | None = key(Size(), None)
    mtu: int | None = key(_Mtu(), None)
    same_firmware: bool | None = key(Bool(), None)
    firmware: str | None = key(Str(), None)
    no_error_counters: bool | None = key(Bool(), None)


RATE = re.compile(r"(\d+)\s*[xX]\s*([A-Za-z0-9]+)")


def parse_rate(text: object) -> tuple[str, str] | None:
    """('4X', 'HDR') from a port rate ('200 Gb/sec (4X HDR)' in sysfs, '4x HDR' in the
    --env-json records); None when it names no width and speed."""
    m = RATE.search(str(text or ""))
    if not m or m.group(2).upper() not in IB_SPEEDS:
        return None
    return f"{m.group(1)}X", m.group(2).upper()


def pcie_gen(speed: object) -> int | None:
    """PCIe generation from a link speed ('16.0 GT/s PCIe' -> 4)."""
    m = re.match(r"\s*([\d.]+)\s*GT/s", str(speed or ""))
    return PCIE_GEN.get(float(m.group(1))) if m else None


def _int(text: object) -> int | None:
    m = re.match(r"\s*(\d+)", str(text or ""))
    return int(m.group(1)) if m else None


def judged(meta: dict, env: Environment) -> dict[str, tuple[dict, list[str]]]:
    """place -> (device record, ports judged): the spec's devices, else those the points
    used, else every device with an ACTIVE port."""
    devs = run_devices(meta)
    used: dict[str, set[str]] = {}
    for p in meta.get("points") or []:
        rec = p.get("env_record") if isinstance(p, dict) else None
        if not isinstance(rec, dict):
            continue
        for d in rec.get("devices") or ([rec] if rec.get("device") else []):
            if isinstance(d, dict) and (d.get("name") or d.get("device")):
                name = str(d.get("name") or d.get("device"))
                host = rec.get("host")
                here = (meta.get("fingerprint") or {}).get("host")
                place = name if not host or host == here else f"{host}:{name}"
                used.setdefault(place, set()).add(str(d.get("port") or rec.get("port") or 1))
    if env.devices:
        names = {n: used.get(n, set()) for n in env.devices}
    elif used:
        names = used
    else:
        names = {}
        for place, d in devs.items():
            active = {p for p, v in (d.get("ports") or {}).items()
                      if isinstance(v, dict) and "ACTIVE" in str(v.get("state") or "")}
            if active:
                names[place] = active
    out = {}
    for place, ports in names.items():
        d = devs.get(place, {"name": place})
        all_ports = sorted((d.get("ports") or {}).keys())
        out[place] = (d, sorted(ports) or all_ports or ["1"])
    return out


def _row(name: str, where: str, value: object, limit: object, ok: bool, detail: str) -> dict:
    return {"criterion": f"environment {name}", "test": where, "size": "", "pairs": "",
            "value": value, "limit": limit, "verdict": "pass" if ok else "fail",
            "detail": detail}


def _port(d: dict, port: str) -> dict:
    p = (d.get("ports") or {}).get(port)
    return p if isinstance(p, dict) else {}


def _link_rows(env: Environment, place: str, d: dict, port: str, rows: list[dict]) -> None:
    where = f"{place} port {port}"
    p = _port(d, port)
    rate = p.get("rate") or d.get("port_rate")
    active = parse_rate(rate)
    for what, want in (("link_width", env.link_width), ("link_speed", env.link_speed)):
        if want is None:
            continue
        if active is None:
            rows.append(_row(what, where, None, want, False,
                             f"port rate not recorded or not an InfiniBand width/speed "
                             f"({rate or 'none'})"))
            continue
        have = active[0] if what == "link_width" else active[1]
        if want != "max":
            rows.append(_row(what, where, have, want, have == want,
                             f"active {have} ({rate}), expected {want}"))
            continue
        if p.get("link_layer") == "Ethernet" or d.get("link_layer") == "Ethernet":
            _ethernet_max(what, where, rate, p, rows)
            continue
        sup = p.get("width_supported" if what == "link_width" else "speed_supported")
        if not sup:
            rows.append(_row(what, where, have, "max", False,
                             "the port's supported link is not recorded (fingerprint: "
                             "smpquery portinfo, which needs umad access): cannot tell the "
                             "highest it supports"))
            continue
        best = (max(sup, key=lambda w: int(w[:-1])) if what == "link_width"
                else max(sup, key=lambda s: IB_SPEEDS.get(s, 0.0)))
        rows.append(_row(what, where, have, "max", have == best,
                         f"active {have}, the port supports up to {best} "
                         f"({', '.join(sup)})"))


def _ethernet_max(what: str, where: str, rate: object, p: dict, rows: list[dict]) -> None:
    """"max" on a RoCE port: the port's rate (Gb/s) against the fastest of its netdev's
    supported link modes (ethtool); an Ethernet port has no InfiniBand width to judge."""
    if what == "link_width":
        rows.append(_row(what, where, None, "max", False,
                         "an Ethernet (RoCE) port has no InfiniBand width: judge it with "
                         "link_speed = \"max\""))
        return
    m = re.match(r"\s*([\d.]+)\s*Gb/sec", str(rate or ""))
    sup = p.get("speed_supported_mbps")
    if not m or not sup:
        rows.append(_row(what, where, None, "max", False,
                         "the port's rate or its netdev's supported link modes (ethtool) "
                         "are not recorded"))
        return
    have = float(m.group(1))
    rows.append(_row(what, where, f"{have:g} Gb/s", "max", have * 1000 >= sup,
                     f"rate {rate}, the netdev supports up to {sup / 1000:g} Gb/s"))


def _pcie_rows(env: Environment, place: str, d: dict, rows: list[dict]) -> None:
    speed, width = d.get("pcie_link_speed"), _int(d.get("pcie_link_width"))
    mspeed, mwidth = d.get("pcie_max_link_speed"), _int(d.get("pcie_max_link_width"))
    link = f"{speed or '?'} x{width if width is not None else '?'}"
    if env.min_pcie_gen is not None:
        gen = pcie_gen(speed)
        rows.append(_row("min_pcie_gen", place, gen, env.min_pcie_gen,
                         gen is not None and gen >= env.min_pcie_gen,
                         f"PCIe link {link}" if gen is not None
                         else "PCIe link speed not recorded (no PCI device?)"))
    if env.min_pcie_width is not None:
        rows.append(_row("min_pcie_width", place, width, env.min_pcie_width,
                         width is not None and width >= env.min_pcie_width,
                         f"PCIe link {link}" if width is not None
                         else "PCIe link width not recorded (no PCI device?)"))
    if env.pcie_full_link:
        if None in (speed, width, mspeed, mwidth):
            rows.append(_row("pcie_full_link", place, None, "max", False,
                             "PCIe current or maximum link not recorded (no PCI device?)"))
        else:
            full = speed == mspeed and width == mwidth
            rows.append(_row("pcie_full_link", place, f"x{width}", f"x{mwidth}", full,
                             f"PCIe link {link}, the card supports {mspeed} x{mwidth}"))
    if env.min_max_read_req is not None:
        mrr = _int(d.get("max_read_req"))
        rows.append(_row("min_max_read_req", place, mrr, env.min_max_read_req,
                         mrr is not None and mrr >= env.min_max_read_req,
                         f"MaxReadReq {mrr} bytes" if mrr is not None else
                         "MaxReadReq not recorded (PCI config space beyond 64 bytes and "
                         "lspci -vv need root)"))


def _firmware_rows(env: Environment, devs: dict[str, tuple[dict, list[str]]],
                   rows: list[dict]) -> None:
    fws = {place: str(d.get("fw_ver") or "").strip() for place, (d, _) in devs.items()}
    if env.firmware is not None:
        for place, fw in fws.items():
            rows.append(_row("firmware", place, fw or None, env.firmware, fw == env.firmware,
                             f"firmware {fw or 'not recorded'}, expected {env.firmware}"))
    if env.same_firmware:
        versions: dict[str, list[str]] = {}
        for place, fw in fws.items():
            versions.setdefault(fw or "not recorded", []).append(place)
        ok = len(versions) == 1 and "not recorded" not in versions
        detail = "; ".join(f"{v} on {_some(p)}" for v, p in
                           sorted(versions.items(), key=lambda x: (len(x[1]), x[0])))
        where = ", ".join(fws) if len(fws) <= SHOWN else f"{len(fws)} devices"
        rows.append(_row("same_firmware", where or "*", len(versions), 1, ok,
                         f"{len(versions)} firmware version(s): {detail or 'no devices'}"))


SHOWN = 10  # devices named in one check's detail (a fabric scan's nodes: thousands)


def _some(places: list[str]) -> str:
    return ", ".join(places[:SHOWN]) + (f" and {len(places) - SHOWN} more"
                                        if len(places) > SHOWN else "")


def with_nodes(meta: dict, run: Path | None) -> tuple[dict, list[str] | None]:
    """(meta with a verbs fabric scan's node records (raw/node-env.jsonl, docs/fabric.md)
    among the points' records, so that every node's device is judged as 'HOST:DEVICE';
    the scan's nodes without a record), or (meta, None) for a run that is no such scan."""
    cfg = meta.get("config") if isinstance(meta.get("config"), dict) else {}
    if (meta.get("kind") != "pairbench fabric" or cfg.get("layer") != "verbs"
            or cfg.get("launcher") not in ("mpirun", "srun") or run is None):
        return meta, None
    nodes = read_node_env(run) if Path(run).is_dir() else {}
    missing = [h for h in cfg.get("hosts") or [] if h not in nodes]
    hosts = [h for h in cfg.get("hosts") or [] if h in nodes]  # the scan's order
    return {**meta, "points": [*(meta.get("points") or []),
                               *({"env_record": nodes[h]} for h in hosts)]}, missing


def evaluate_environment(env: Environment | None, meta: dict, run: Path | None,
                         rows: list[dict]) -> None:
    """Append one check row per device and environment criterion of the spec."""
    if env is None:
        return
    meta, missing = with_nodes(meta, run)
    devs = judged(meta, env)
    wants_device = any(v is not None for k, v in env.__dict__.items()
                       if k not in ("devices", "no_error_counters"))
    if missing is not None and wants_device:  # a node without a record is not judged
        n = len((meta.get("config") or {}).get("hosts") or [])
        rows.append(_row("node_records", "*", n - len(missing), n, not missing,
                         f"{n - len(missing)} of {n} nodes recorded their environment"
                         + (f"; none from {_some(missing)}" if missing else "")))
    if not devs and wants_device:
        rows.append(_row("devices", "*", None, "", False,
                         "no RDMA device recorded in metadata.json (fingerprint or the "
                         "points' records): the environment criteria cannot be judged"))
    for place, (d, ports) in devs.items():
        for port in ports:
            _link_rows(env, place, d, port, rows)
        _pcie_rows(env, place, d, rows)
        if env.mtu is not None:
            mtu = d.get("active_mtu_bytes")
            rows.append(_row("mtu", place, mtu, env.mtu, mtu == env.mtu,
                             f"active MTU {mtu} B" if mtu else
                             "active MTU not recorded (the points' --env-json records)"))
    _firmware_rows(env, devs, rows)
    if env.no_error_counters:
        from pairbench.analysis.health import error_counter_rows

        rows.extend(error_counter_rows(run, meta))
