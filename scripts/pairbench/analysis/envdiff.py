"""What changed between two runs' environments (issue 25): compare leads with it.

A run's environment is read from its metadata.json: the fingerprint the sweep took of the
driver's host (runner/fingerprint.py) and the --env-json records of its points (what the
executables saw: the devices they used, their MTU, where each process ran; for runs over
ssh these come from the remote hosts). Each field below is a named value per place ('' for
the host, a device name, 'HOST:DEVICE' for another host's device, a point for pinning);
two runs differ in a field where both recorded a value and the values differ. A value
recorded on one side only is listed apart and is never a difference (older runs lack newer
fields).

Besides these fields (issue 37): the tuning the executables saw, i.e. every environment
variable of the MPI, PMIx, UCX, verbs-provider and NCCL families their records list (a
difference names the variable; a variable set in one run and not in the other is a
difference: "(unset)"; one whose value varies between the points of one run is per-run
identity and not compared), the Open MPI MCA parameter files in effect (per setting), the
launcher and its arguments (per point), the executables' build, and the host's own speed
(analysis/canary.py).

`--expect-change FIELD,...` turns the list into a condition: every difference must be in
an expected field and every expected field must have changed, else the comparison is
inconclusive (exit 3) with the reason. A field is one of FIELD_NAMES, a family of variables
(mpi_env, pmix_env, ucx_env, verbs_env, nccl_env; tuning_env for all), a variable by its
name, or host. A host canary that moved beyond its noise makes the comparison inconclusive
even without --expect-change, unless host is expected. Pure functions of the metadata dicts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pairbench.analysis import canary
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



def _place_of(meta: dict, rec: dict) -> str:
    """'' for the driver's host, else the host a record names."""
    host = rec.get("host")
    return "" if not host or host == _fp(meta).get("host") else str(host)


def _build(meta: dict) -> Values:
    """The executables' build per host: compiler, build type, C flags and commit, from the
    records that carry a "build" (executables from before issue 37: not recorded)."""
    out: dict[str, list[str]] = {}
    for rec in _env_records(meta):
        b = rec.get("build")
        if not isinstance(b, dict):
            continue
        text = ", ".join(x for x in (recorded_text(b.get("compiler")),
                                     recorded_text(b.get("build_type")),
                                     recorded_text(b.get("c_flags")),
                                     f"commit {b['commit']}" if b.get("commit") else None) if x)
        if text:
            vals = out.setdefault(_place_of(meta, rec), [])
            if text not in vals:
                vals.append(text)
    return {place: " | ".join(v) for place, v in out.items()}


_EXE = re.compile(r"(^|/)pairbench-(mpi|verbs)$")
_EXE_IN = re.compile(r"\S*pairbench-(mpi|verbs)\b")


def _launcher(meta: dict) -> Values:
    """Per point (its name without the repetition): the launcher's words before the
    executable in each side's command line (mpirun --map-by ... -np 4; ssh HOST and the
    remote shell's words before it; '(the executable itself)' for a side started
    directly), with the run's own directory written RUN."""
    cfg = meta.get("config") if isinstance(meta.get("config"), dict) else {}
    binaries = {str(cfg.get(k)) for k in ("binary", "remote_binary") if cfg.get(k)}
    run_dir = str(cfg.get("run_dir") or "") or None
    out: Values = {}
    for p in meta.get("points") or []:
        if not isinstance(p, dict) or not isinstance(p.get("sides"), list):
            continue
        point = _REP.sub("", str(p.get("name") or ""))
        if not point or point in out:
            continue
        words = []
        for side in p["sides"]:
            argv = side.get("argv") if isinstance(side, dict) else None
            if not isinstance(argv, list):
                continue
            at = next((i for i, a in enumerate(argv) if str(a) in binaries
                       or _EXE.search(str(a))), None)
            tail = ""
            if at is None:  # ssh: the remote command is one shell string
                at = next((i for i, a in enumerate(argv) if _EXE_IN.search(str(a))
                           or any(b in str(a) for b in binaries)), None)
                if at is None:
                    continue
                a = str(argv[at])
                m = _EXE_IN.search(a)
                cut = min([a.index(b) for b in binaries if b in a] + ([m.start()] if m else []))
                tail = a[:cut].strip()
            pre = " ".join([str(a) for a in argv[:at]] + ([tail] if tail else []))
            if run_dir:
                pre = pre.replace(run_dir, "RUN")
            words.append(pre or "(the executable itself)")
        if words:
            out[point] = " ; ".join(dict.fromkeys(words))
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
    EnvField("launcher", "launcher", _launcher),
    EnvField("build", "executable build", _build),
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
    family: str = ""             # a variable's family (mpi_env...), else ''
    text: str = ""               # the whole line, when the generic one does not fit (host)

    def line(self, max_places: int = 6) -> str:
        if self.text:
            return self.text
        where = ""
        if self.places:
            shown = ", ".join(self.places[:max_places])
            more = len(self.places) - max_places
            where = f" on {shown}" + (f" and {more} more" if more > 0 else "")
            if self.field in ("pinning", "launcher"):
                where = f" at {shown}" + (f" and {more} more" if more > 0 else "")
        return f"{self.label} {self.base} → {self.new}{where}"

    def to_json(self) -> dict:
        return {"field": self.field, "label": self.label, "base": self.base, "new": self.new,
                "places": list(self.places), "line": self.line(max_places=len(self.places)),
                **({"family": self.family} if self.family else {})}

    def matches(self, expected: list[str]) -> bool:
        """Expected by its field, its family, or (a variable) tuning_env."""
        return (self.field in expected or (bool(self.family) and self.family in expected)
                or (bool(self.family) and TUNING_ALL in expected))


@dataclass
class EnvDiff:
    changes: list[Change] = field(default_factory=list)
    one_side: list[str] = field(default_factory=list)   # 'FIELD at PLACE: base only'
    missing: list[str] = field(default_factory=list)    # sides without metadata
    compared: int = 0                                   # (field, place) pairs compared
    varying: list[str] = field(default_factory=list)    # variables not compared: vary in a run
    host: canary.HostCheck | None = None

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
    _tuning_changes(base_meta, new_meta, out)
    _mca_changes(base_meta, new_meta, out)
    _host_change(base_meta, new_meta, out)
    return out


# --- the tuning the executables saw (issue 37) -------------------------------------------

# The families of environment variables the executables record, by the name
# --expect-change accepts for a whole family: a mirror of pb_env_families in core/pb_env.c
# (tests/python/test_tuning.py holds them equal through a real record).
FAMILIES: dict[str, tuple[str, ...]] = {
    "mpi_env": ("OMPI_", "OPAL_", "PRTE_MCA_", "MPICH_", "MPIR_CVAR_", "HYDRA_", "I_MPI_",
                "MV2_", "MVP_"),
    "pmix_env": ("PMIX_", "PMI_"),
    "ucx_env": ("UCX_", "UCC_", "HCOLL_"),
    "verbs_env": ("MLX5_", "MLX4_", "RDMAV_", "IBV_", "FI_", "PSM2_", "PSM3_"),
    "nccl_env": ("NCCL_",),
}
TUNING_ALL = "tuning_env"
UNSET = "(unset)"
MCA_FIELD = "mca_files"
HOST_FIELD = "host"


EXPECTABLE = (*FIELD_NAMES, MCA_FIELD, *FAMILIES, TUNING_ALL, HOST_FIELD)
_VARIABLE = re.compile(r"^[A-Z][A-Z0-9]*_[A-Za-z0-9_]+$")


def family_of(name: str) -> str:
    return next((f for f, prefixes in FAMILIES.items() if name.startswith(prefixes)), "")


def tuning(meta: dict) -> tuple[dict[str, dict[str, str]], dict[str, set[str]]] | None:
    """The variables of the families per place: (place -> {name: value} of those with one
    value over all the run's records of that place, place -> names whose value varied
    between them (or was unset in some): per-run identity, not compared). None when no
    record has a "tuning" (a run from before issue 37)."""
    by_place: dict[str, list[dict]] = {}
    for rec in _env_records(meta):
        t = rec.get("tuning")
        if isinstance(t, dict) and isinstance(t.get("env"), dict):
            by_place.setdefault(_place_of(meta, rec), []).append(
                {str(k): str(v) for k, v in t["env"].items()})
    if not by_place:
        return None
    stable: dict[str, dict[str, str]] = {}
    varying: dict[str, set[str]] = {}
    for place, envs in by_place.items():
        names = set().union(*envs)
        stable[place] = {}
        varying[place] = set()
        for n in names:
            vals = {e.get(n) for e in envs}
            if len(vals) == 1:
                stable[place][n] = vals.pop()
            else:
                varying[place].add(n)
    return stable, varying


def _tuning_changes(base_meta: dict, new_meta: dict, out: EnvDiff) -> None:
    tb, tn = tuning(base_meta), tuning(new_meta)
    if tb is None or tn is None:
        if (tb is None) != (tn is None):
            out.one_side.append(f"environment variables: {'base' if tb else 'new'} only")
        return
    (sb, vb), (sn, vn) = tb, tn
    groups: dict[tuple[str, str, str], list[str]] = {}
    varying: set[str] = set()
    for place in sorted(sb.keys() & sn.keys(), key=lambda p: (p != "", p)):
        skip = vb[place] | vn[place]
        varying |= skip
        for name in sorted((sb[place].keys() | sn[place].keys()) - skip):
            b, n = sb[place].get(name, UNSET), sn[place].get(name, UNSET)
            out.compared += 1
            if b != n:
                groups.setdefault((name, b, n), []).append(place)
    for place in sorted(sb.keys() ^ sn.keys()):
        out.one_side.append(f"environment variables on {place or 'the host'}: "
                            f"{'base' if place in sb else 'new'} only")
    out.varying = sorted(varying)
    for (name, b, n), places in groups.items():
        out.changes.append(Change(name, name, b, n, tuple(p for p in places if p),
                                  family=family_of(name)))


def mca_settings(meta: dict) -> dict[str, dict[str, str]] | None:
    """The MCA parameter files in effect on the driver's host (fingerprint
    mpi.mca_param_files): path -> {parameter: value}; a file listed but absent has none.
    None when not recorded."""
    mpi = _fp(meta).get("mpi")
    files = mpi.get("mca_param_files") if isinstance(mpi, dict) else None
    if not isinstance(files, list):
        return None
    out: dict[str, dict[str, str]] = {}
    for f in files:
        if isinstance(f, dict) and f.get("path"):
            st = f.get("settings") if isinstance(f.get("settings"), dict) else {}
            out[str(f["path"])] = {str(k): str(v) for k, v in st.items()}
    return out


def _mca_changes(base_meta: dict, new_meta: dict, out: EnvDiff) -> None:
    mb, mn = mca_settings(base_meta), mca_settings(new_meta)
    if mb is None or mn is None:
        if (mb is None) != (mn is None):
            out.one_side.append(f"MCA parameter files: {'base' if mb is not None else 'new'} "
                                "only")
        return
    if list(mb) != list(mn):
        out.changes.append(Change(MCA_FIELD, "MCA parameter files",
                                  ", ".join(mb) or "none", ", ".join(mn) or "none", ()))
    for path in dict.fromkeys([*mb, *mn]):
        b, n = mb.get(path, {}), mn.get(path, {})
        for key in sorted(b.keys() | n.keys()):
            out.compared += 1
            if b.get(key, UNSET) != n.get(key, UNSET):
                out.changes.append(Change(MCA_FIELD, f"MCA parameter {key}", b.get(key, UNSET),
                                          n.get(key, UNSET), (path,)))


def _host_change(base_meta: dict, new_meta: dict, out: EnvDiff) -> None:
    h = canary.compare(base_meta, new_meta)
    out.host = h
    if h.recorded[0] != h.recorded[1]:
        out.one_side.append(f"host canary: {'base' if h.recorded[0] else 'new'} only")
    if not (h.recorded[0] and h.recorded[1]):
        return
    out.compared += 1
    if h.moved:
        b = sorted(r.cpu_loop_ns for r in h.base)[len(h.base) // 2]
        n = sorted(r.cpu_loop_ns for r in h.new)[len(h.new) // 2]
        out.changes.append(Change(HOST_FIELD, "host speed", f"{b:.3g} ns", f"{n:.3g} ns", (),
                                  text=h.line()))


def parse_expected(items: list[str] | None) -> list[str]:
    """--expect-change FIELD[,FIELD] (repeatable) -> field names; unknown -> UsageError."""
    names: list[str] = []
    for item in items or []:
        for name in (x.strip() for x in item.split(",")):
            if not name:
                continue
            if name not in EXPECTABLE and not (_VARIABLE.match(name) and family_of(name)):
                raise UsageError(f"--expect-change: unknown field {name!r} (one of "
                                 f"{', '.join(EXPECTABLE)}, or a variable of those "
                                 "families by its name, e.g. "
                                 "OMPI_MCA_btl_vader_single_copy_mechanism)")
            names.append(name)
    return list(dict.fromkeys(names))


def host_reasons(d: EnvDiff, expected: list[str]) -> list[str]:
    """The host canary moved beyond its noise and nobody expected it: whatever the verdicts
    say, they may be the host's, not the adapter's."""
    if HOST_FIELD in expected:
        return []
    return [f"{c.line()}: the gate cannot blame the adapter for what the host did "
            "(--expect-change host to compare anyway)"
            for c in d.changes if c.field == HOST_FIELD]


def inconclusive_reasons(d: EnvDiff, expected: list[str]) -> list[str]:
    """Why a comparison that expects exactly these changes cannot be read as their effect:
    an environment not recorded, a difference in another field, an expected field that did
    not change; and, expected or not, a host canary that moved. Without --expect-change
    only the host counts (the list is otherwise information only)."""
    if not expected:
        return host_reasons(d, expected)
    if d.missing:
        return [f"{' and '.join(d.missing)} has no environment record (metadata.json with a "
                "fingerprint): what changed cannot be checked"]
    reasons = host_reasons(d, expected)
    reasons += [f"{c.line()}: not expected (--expect-change {','.join(expected)})"
                for c in d.changes if c.field != HOST_FIELD and not c.matches(expected)]
    reasons += [f"{name} did not change (--expect-change {name})"
                for name in expected if not any(c.field == name or c.family == name
                                                 or (name == TUNING_ALL and c.family)
                                                 for c in d.changes)]
    return reasons
