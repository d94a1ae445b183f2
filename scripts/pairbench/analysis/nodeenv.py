"""Whether the nodes of a verbs fabric scan are alike (pure functions on records).

Every node of a scan through mpirun/srun records its environment once (pairbench-verbs
--env-json in the scan's first rounds: runner/scanverbs.py gathers the records into
raw/node-env.jsonl, one line per node). Each FIELD below is one value per node; where the
nodes that recorded it do not all agree, the field differs: the value most nodes have (the
majority, if more than half of them have it) and every node with another value are listed.
A node that differs is a lead for a suspect the scan found (a slower port rate, an older
firmware, a narrower PCIe link) and a finding of its own where the scan found nothing.
A value a node did not record (an adapter without PCI, a record that could not be read)
is never a difference. Cost: O(nodes x fields).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from pairbench.analysis.envdiff import recorded_text
from pairbench.runner.scanverbs import NODE_ENV

LISTED = 50                      # hosts listed per value; the rest counted


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    read: Callable[[dict], object]


def _get(*path: str) -> Callable[[dict], object]:
    def read(rec: dict) -> object:
        v: object = rec
        for k in path:
            v = v.get(k) if isinstance(v, dict) else None
        return v
    return read


def _adapter(rec: dict) -> object:
    parts = [rec.get("vendor_id"), rec.get("vendor_part_id"), rec.get("hw_ver")]
    return None if any(p is None for p in parts) else \
        f"vendor {parts[0]} part {parts[1]} hw {parts[2]}"


def _pairbench(rec: dict) -> object:
    v, c = rec.get("version"), rec.get("git_commit")
    return None if v is None else f"{v} ({c})" if c else v


FIELDS = (
    Field("pairbench", "pairbench-verbs version", _pairbench),
    Field("kernel", "kernel", _get("kernel")),
    Field("devices_present", "RDMA devices present", _get("devices_present")),
    Field("device", "device used", _get("device")),
    Field("adapter", "adapter (vendor, part, hardware revision)", _adapter),
    Field("driver", "driver", _get("driver")),
    Field("fw_ver", "firmware", _get("fw_ver")),
    Field("link_layer", "link layer", _get("link_layer")),
    Field("port_rate", "port rate", _get("port_rate")),
    Field("active_mtu_bytes", "active MTU", _get("active_mtu_bytes")),
    Field("gid_type", "GID type", _get("gid_type")),
    Field("pcie_link_speed", "PCIe link speed", _get("pcie_link_speed")),
    Field("pcie_link_width", "PCIe link width", _get("pcie_link_width")),
    Field("clocksource", "kernel clock source", _get("clock", "kernel_clocksource")),
)


def differences(records: dict[str, dict]) -> list[dict]:
    """The fields in which the nodes differ: [{field, label, majority (None: no value has
    more than half of the nodes that recorded the field), recorded (nodes), values: [{value,
    nodes, hosts (the majority's: none listed; others: up to LISTED)}], most nodes first}]."""
    out = []
    for fd in FIELDS:
        vals = {h: t for h, r in records.items() if (t := recorded_text(fd.read(r))) is not None}
        count = Counter(vals.values())
        if len(count) < 2:
            continue
        top, n_top = count.most_common(1)[0]
        majority = top if 2 * n_top > len(vals) else None
        groups = []
        for value, n in sorted(count.items(), key=lambda x: (-x[1], x[0])):
            hosts = [] if value == majority else sorted(h for h, t in vals.items()
                                                         if t == value)
            groups.append({"value": value, "nodes": n, "hosts": hosts[:LISTED]})
        out.append({"field": fd.name, "label": fd.label, "majority": majority,
                    "recorded": len(vals), "values": groups})
    return out


def summary(records: dict[str, dict], nodes: list[str]) -> dict:
    """fabric.json's node_env: how many of the scan's nodes recorded their environment,
    which did not (up to LISTED), the fields compared and the ones that differ."""
    missing = [n for n in nodes if n not in records]
    return {"file": NODE_ENV, "nodes": len(nodes), "recorded": len(nodes) - len(missing),
            "missing": missing[:LISTED], "fields": [f.name for f in FIELDS],
            "differ": differences({h: r for h, r in records.items() if h in set(nodes)})}


def summary_line(env: dict) -> str:
    """One line for the terminal."""
    head = f"fabric: node environment: {env['recorded']} of {env['nodes']} nodes recorded"
    if not env["recorded"]:
        return head + (" (a verbs scan's nodes record theirs in its first rounds through "
                       "mpirun or srun, not through ssh: docs/fabric.md)")
    if not env["differ"]:
        return head + f"; alike in all {len(env['fields'])} fields compared"
    said = []
    for d in env["differ"]:
        if d["majority"] is None:
            said.append(f"{d['field']} split: " + ", ".join(
                f"{g['value']} on {g['nodes']}" for g in d["values"][:4]))
            continue
        others = [(h, g["value"]) for g in d["values"] if g["value"] != d["majority"]
                  for h in g["hosts"]]
        n_other = sum(g["nodes"] for g in d["values"] if g["value"] != d["majority"])
        shown = ", ".join(f"{h} {v}" for h, v in others[:5])
        said.append(f"{d['field']}: {shown}{f' and {n_other - 5} more' if n_other > 5 else ''}"
                    f" ({d['values'][0]['nodes']} others: {d['majority']})")
    return head + "; differ in " + "; ".join(said)
