"""What changed between two runs' environments (issue 25): compare leads with it.

A run's environment is read from its metadata.json: the fingerprint the sweep took of the
driver's host (runner/fingerprint.py) and the --env-json records of its points (what the
executables saw: the devices they used, their MTU, where each process ran; for runs over
ssh these come from the remote hosts). Each field below is a named value per place ('' for
the host, a device name, 'HOST:DEVICE' for another host's device, a point for pinning);
two runs differ in a field where both recorded a value and the values differ. A value
recorded on one side only is listed apart and is never a difference (older runs lack newer
fields).

`--expect-change FIELD,...` turns the list into a condition: every difference must be in
an expected field and every expected field must have changed, else the comparison is
inconclusive (exit 3) with the reason.  Pure functions of the metadata dicts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pairbench.errors import UsageError

Values = dict[str, str]          # place -> value ('' = the host)


@dataclass(frozen=True)
class EnvField:
    name: str                    # what --expect-change names
    label: str                   # the words in the list
    read: Callable[[dict], Values]


def recorded_text(v: object) -> str | None:
    """A recorded value as text; None (not recorded) for null, '' or a missing key."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, dict):
        inner = [f"{k}={recorded_text(x)}" for k, x in sorted(v.items())
                 if recorded_text(x) is not None]
        return ", ".join(inner) or None
    if isinstance(v, list):
        return ", ".join(str(x) for x in v) or None
    text = str(v).strip()
    return text or None


def _fp(meta: dict) -> dict:
    fp = meta.get("fingerprint")
    return fp if isinstance(fp, dict) else {}


def _host(meta: dict, *path: str) -> Values:
    v: object = _fp(meta)
    for k in path:
        v = v.get(k) if isinstance(v, dict) else None
    text = recorded_text(v)
    return {"": text} if text is not None else {}


def _env_records(meta: dict) -> list[dict]:
    return [p["env_record"] for p in meta.get("points") or []
            if isinstance(p, dict) and isinstance(p.get("env_record"), dict)]


def devices(meta: dict) -> dict[str, dict]:
    """Every RDMA device a run knows of, by place: the fingerprint's devices of the driver's
    host ('mlx5_0'), merged with the devices the points' --env-json records name (the MTU
    lives only there); a device of another host is 'HOST:mlx5_0'."""
    fp = _fp(meta)
    here = fp.get("host")
    out: dict[str, dict] = {}
    for d in fp.get("rdma_devices") or []:
        if isinstance(d, dict) and d.get("name"):
            out[str(d["name"])] = dict(d)
    for rec in _env_records(meta):
        host = rec.get("host")
        recs = rec.get("devices") if isinstance(rec.get("devices"), list) else []
        if not recs and rec.get("device"):  # a record from before the "devices" list
            recs = [rec]
        for d in recs:
            if not isinstance(d, dict) or not d.get("device", d.get("name")):
                continue
            name = str(d.get("name") or d.get("device"))
            place = name if host in (None, here) or not host else f"{host}:{name}"
            entry = out.setdefault(place, {"name": name})
            for k, v in d.items():
                if k in ("fw_ver", "pcie_link_speed", "pcie_link_width") and entry.get(k):
                    continue  # the fingerprint's sysfs reading stays (same device)
                entry.setdefault(k, v)
            if d.get("active_mtu_bytes"):
                entry["active_mtu_bytes"] = d["active_mtu_bytes"]
            if rec.get("driver") and "driver" not in entry:
                entry["driver"] = rec["driver"]
    return out


def _per_device(read: Callable[[dict], object]) -> Callable[[dict], Values]:
    def values(meta: dict) -> Values:
        out = {}
        for place, d in devices(meta).items():
            text = recorded_text(read(d))
            if text is not None:
                out[place] = text
        return out
    return values


def _ports(d: dict, key: str) -> object:
    ports = d.get("ports") if isinstance(d.get("ports"), dict) else {}
    vals = {p: (v or {}).get(key) for p, v in ports.items() if isinstance(v, dict)}
    vals = {p: v for p, v in vals.items() if v}
    if not vals:
        return d.get("port_rate") if key == "rate" else None
    return next(iter(vals.values())) if len(vals) == 1 else {f"port {p}": v
                                                             for p, v in vals.items()}


def _pcie(d: dict) -> str | None:
    speed, width = recorded_text(d.get("pcie_link_speed")), recorded_text(d.get("pcie_link_width"))
    if speed is None and width is None:
        return None
    return " ".join(x for x in (speed, f"x{width}" if width else None) if x)


def _mtu(d: dict) -> str | None:
    return f"{d['active_mtu_bytes']} B" if d.get("active_mtu_bytes") else None


def _driver(d: dict) -> str | None:
    parts = (recorded_text(d.get("driver")), recorded_text(d.get("driver_version")))
    return " ".join(x for x in parts if x) or None


def _devices_list(meta: dict) -> Values:
    names = sorted(devices(meta))
    return {"": ", ".join(names)} if names else {}


def _commit(meta: dict) -> Values:
    git = _fp(meta).get("git") or {}
    if not isinstance(git, dict) or not git.get("commit"):
        return {}
    return {"": str(git["commit"])[:12] + (" (dirty)" if git.get("dirty") else "")}


def _smt(meta: dict) -> Values:
    cpu = _fp(meta).get("cpu") or {}
    if not isinstance(cpu, dict):
        return {}
    active, tpc = cpu.get("smt_active"), cpu.get("threads_per_core")
    parts = [f"{'on' if active else 'off'}" if active is not None else None,
             f"{tpc} thread(s) per core" if tpc else None]
    text = ", ".join(p for p in parts if p)
    return {"": text} if text else {}


def _hugepages(meta: dict) -> Values:
    h = _fp(meta).get("hugepages")
    if not isinstance(h, dict):
        return {}
    parts = [f"{h['total']} × {h['size_kb']} kB" if h.get("total") is not None
             and h.get("size_kb") else None,
             f"transparent {h['transparent']}" if h.get("transparent") else None]
    text = ", ".join(p for p in parts if p)
    return {"": text} if text else {}


_REP = re.compile(r"^r\d+-")


def _pinning(meta: dict) -> Values:
    """Per point (its name without the repetition), the CPUs its processes ran on in the
    first repetition that recorded them, with the pin policy of the configuration."""
    cfg = meta.get("config") if isinstance(meta.get("config"), dict) else {}
    out: Values = {}
    policy = recorded_text(cfg.get("pin_list")) or recorded_text(cfg.get("pin"))
    if policy:
        out[""] = f"--pin {policy}"
    for name, places in (meta.get("pinning") or {}).items():
        point = _REP.sub("", str(name))
        if point in out or not isinstance(places, list):
            continue
        cpus = [str(p.get("cpu")) for p in places if isinstance(p, dict)
                and p.get("cpu") is not None]
        if cpus:
            out[point] = "cpu " + ",".join(cpus)
    return out


FIELDS: tuple[EnvField, ...] = (
    EnvField("fw_ver", "firmware", _per_device(lambda d: d.get("fw_ver"))),
    EnvField("driver", "RDMA driver", _per_device(_driver)),
    EnvField("kernel", "kernel", lambda m: _host(m, "kernel")),
    EnvField("os", "OS", lambda m: _host(m, "os")),
    EnvField("rdma_core", "rdma-core", lambda m: _host(m, "rdma_core_version")),
    EnvField("libibverbs", "libibverbs", lambda m: _host(m, "libibverbs_version")),
    EnvField("mpi", "MPI library", lambda m: _host(m, "mpi", "library_version")),
    EnvField("pairbench_version", "pairbench version", lambda m: _host(m, "pairbench_version")),
    EnvField("pairbench_commit", "pairbench commit", _commit),
    EnvField("cpu_model", "CPU model", lambda m: _host(m, "cpu", "model")),
    EnvField("governor", "CPU frequency governor", lambda m: _host(m, "cpu", "governor")),
    EnvField("smt", "SMT", _smt),
    EnvField("clocksource", "clocksource", lambda m: _host(m, "cpu", "clocksource")),
    EnvField("hugepages", "huge pages", _hugepages),
    EnvField("memlock", "locked-memory limit", lambda m: _host(m, "memlock_limit")),
    EnvField("devices", "RDMA devices", _devices_list),
    EnvField("link", "port link", _per_device(lambda d: _ports(d, "rate"))),
    EnvField("pcie_link", "PCIe link", _per_device(_pcie)),
    EnvField("max_read_req", "PCIe MaxReadReq", _per_device(lambda d: d.get("max_read_req"))),
    EnvField("mtu", "active MTU", _per_device(_mtu)),
    EnvField("pinning", "pinning", _pinning),
)
FIELD_NAMES = tuple(f.name for f in FIELDS)


def environment(meta: dict) -> dict[str, Values]:
    """Every field's values of one run (field name -> place -> value)."""
    return {f.name: f.read(meta) for f in FIELDS}


@dataclass(frozen=True)
class Change:
    field: str
    label: str
    base: str
    new: str
    places: tuple[str, ...]      # () = the host

    def line(self, max_places: int = 6) -> str:
        where = ""
        if self.places:
            shown = ", ".join(self.places[:max_places])
            more = len(self.places) - max_places
            where = f" on {shown}" + (f" and {more} more" if more > 0 else "")
            if self.field == "pinning":
                where = f" at {shown}" + (f" and {more} more" if more > 0 else "")
        return f"{self.label} {self.base} → {self.new}{where}"

    def to_json(self) -> dict:
        return {"field": self.field, "label": self.label, "base": self.base, "new": self.new,
                "places": list(self.places), "line": self.line(max_places=len(self.places))}


@dataclass
class EnvDiff:
    changes: list[Change] = field(default_factory=list)
    one_side: list[str] = field(default_factory=list)   # 'FIELD at PLACE: base only'
    missing: list[str] = field(default_factory=list)    # sides without metadata
    compared: int = 0                                   # (field, place) pairs compared

    @property
    def fields(self) -> list[str]:
        return list(dict.fromkeys(c.field for c in self.changes))


def diff(base_meta: dict, new_meta: dict) -> EnvDiff:
    """The differences between two runs' environments, grouped: one Change per (field,
    base value, new value) with the places it holds for."""
    out = EnvDiff()
    for side, meta in (("BASE", base_meta), ("NEW", new_meta)):
        if not _fp(meta):
            out.missing.append(side)
    if out.missing:
        return out
    eb, en = environment(base_meta), environment(new_meta)
    for f in FIELDS:
        b, n = eb[f.name], en[f.name]
        groups: dict[tuple[str, str], list[str]] = {}
        for place in sorted(b.keys() | n.keys(), key=lambda p: (p != "", p)):
            vb, vn = b.get(place), n.get(place)
            if vb is None or vn is None:
                if f.name not in ("pinning", "devices"):
                    out.one_side.append(f"{f.name}{' on ' + place if place else ''}: "
                                        f"{'base' if vb is not None else 'new'} only")
                continue
            out.compared += 1
            if vb != vn:
                groups.setdefault((vb, vn), []).append(place)
        for (vb, vn), places in groups.items():
            out.changes.append(Change(f.name, f.label, vb, vn,
                                      tuple(p for p in places if p)))
    return out


def parse_expected(items: list[str] | None) -> list[str]:
    """--expect-change FIELD[,FIELD] (repeatable) -> field names; unknown -> UsageError."""
    names: list[str] = []
    for item in items or []:
        for name in (x.strip() for x in item.split(",")):
            if not name:
                continue
            if name not in FIELD_NAMES:
                raise UsageError(f"--expect-change: unknown field {name!r} (one of "
                                 f"{', '.join(FIELD_NAMES)})")
            names.append(name)
    return list(dict.fromkeys(names))


def inconclusive_reasons(d: EnvDiff, expected: list[str]) -> list[str]:
    """Why a comparison that expects exactly these changes cannot be read as their effect:
    an environment not recorded, a difference in another field, an expected field that did
    not change. [] when nothing is expected (the list is then information only)."""
    if not expected:
        return []
    if d.missing:
        return [f"{' and '.join(d.missing)} has no environment record (metadata.json with a "
                "fingerprint): what changed cannot be checked"]
    reasons = [f"{c.line()}: not expected (--expect-change {','.join(expected)})"
               for c in d.changes if c.field not in expected]
    changed = set(d.fields)
    reasons += [f"{name} did not change (--expect-change {name})"
                for name in expected if name not in changed]
    return reasons
