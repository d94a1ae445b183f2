"""Where each node of a fabric scan sits: its rack and, optionally, the leaf switch the rack
hangs off (`pairbench fabric --topology FILE`). The heatmap and the matrix order the nodes
by leaf, rack, then name and draw the groups' boundaries; the suspects report says which
rack (and leaf) each suspect is in, and when every suspect sits in one of them (a bad
leaf or rack switch shows as many suspect nodes in one group).

Two file formats, the same content:

TOML (checked with the project's schema, pairbench.io.tomlschema):

    [[rack]]
    name = "r01"
    leaf = "leaf1"            # optional; given for every rack or for none
    nodes = ["node0001", "node0002"]

CSV (a header naming the columns, node and rack required, leaf optional; # comments):

    node,rack,leaf
    node0001,r01,leaf1

A bad file is a UsageError (exit 2) naming the file and the key or line. Nodes of the scan
missing from the map and nodes of the map not in the scan are reported, not errors (a
map of the whole machine room serves a scan of part of it): the missing ones go last, in
a group of their own.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pairbench.errors import UsageError
from pairbench.io import tomlschema
from pairbench.io.tomlschema import ArrayOfTables, ListOf, Str, key

NOT_IN_MAP = "(not in the map)"


@dataclass(frozen=True, kw_only=True)
class Rack:
    name: str = key(Str())
    leaf: str | None = key(Str(), None)
    nodes: list[str] = key(ListOf(Str(), strict=True))


@dataclass(frozen=True)
class TopologyFile:
    rack: list[Rack] = key(ArrayOfTables(Rack))


@dataclass(frozen=True)
class Topology:
    """node -> (leaf or "", rack); levels: the levels the file gives, outermost first."""

    path: str
    where: dict[str, tuple[str, str]]
    levels: tuple[str, ...]

    def describe(self, node: str) -> str:
        """"rack r01, leaf leaf1" (or "not in the map")."""
        w = self.where.get(node)
        if w is None:
            return "not in the map"
        return f"rack {w[1]}" + (f", leaf {w[0]}" if w[0] else "")

    def group(self, node: str, level: str = "rack") -> str:
        """The node's rack or leaf (NOT_IN_MAP for a node the file does not list)."""
        w = self.where.get(node)
        return NOT_IN_MAP if w is None else (w[1] if level == "rack" else w[0])

    def order(self, names: Sequence[str]) -> np.ndarray:
        """The positions of names sorted by leaf, rack, then name; nodes the map does not
        list last (by name)."""
        keys = [(n not in self.where, *self.where.get(n, ("", "")), n) for n in names]
        return np.array(sorted(range(len(names)), key=keys.__getitem__), dtype=np.int64)

    def check(self, nodes: Sequence[str]) -> tuple[list[str], list[str]]:
        """(nodes of the scan missing from the map, nodes of the map not in the scan)."""
        have = set(nodes)
        return (sorted(have - set(self.where)), sorted(set(self.where) - have))

    def note(self, nodes: Sequence[str], show: int = 10) -> str | None:
        """One line on the map against the scan's nodes, None when they match."""
        missing, unknown = self.check(nodes)

        def some(xs: list[str]) -> str:
            return ", ".join(xs[:show]) + (f" and {len(xs) - show} more" if len(xs) > show
                                           else "")

        parts = []
        if missing:
            parts.append(f"{len(missing)} node(s) of the scan not in it ({some(missing)}): "
                         "shown last")
        if unknown:
            parts.append(f"{len(unknown)} node(s) in it not in the scan ({some(unknown)})")
        return f"topology {self.path}: " + "; ".join(parts) if parts else None

    def shared(self, nodes: Sequence[str]) -> str | None:
        """"rack r01 (leaf leaf1)" or "leaf leaf1" when every one of nodes (two or more)
        sits in it, else None: the narrowest group they share."""
        if len(set(nodes)) < 2 or any(n not in self.where for n in nodes):
            return None
        racks = {self.where[n] for n in nodes}
        if len(racks) == 1:
            leaf, rack = next(iter(racks))
            return f"rack {rack}" + (f" (leaf {leaf})" if leaf else "")
        leaves = {w[0] for w in racks}
        if len(leaves) == 1 and "" not in leaves:
            return f"leaf {next(iter(leaves))}"
        return None


def load(path: Path | str) -> Topology:
    """A topology file (.toml: TOML, else CSV); UsageError naming the file and the bad
    key or line."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"--topology {p}: no such file")
    return _load_toml(p) if p.suffix.lower() == ".toml" else _load_csv(p)


def _load_toml(p: Path) -> Topology:
    racks = tomlschema.load(TopologyFile, p).rack
    where: dict[str, tuple[str, str]] = {}
    at: dict[str, int] = {}
    with_leaf = [r.leaf is not None for r in racks]
    for i, r in enumerate(racks):
        if any(with_leaf) and r.leaf is None:
            raise UsageError(f"{p}: rack[{i}]: missing key 'leaf' (given for rack"
                             f"[{with_leaf.index(True)}]: every rack or none)")
        for what, v in (("name", r.name), ("leaf", r.leaf)):
            if v is not None and not v.strip():
                raise UsageError(f"{p}: rack[{i}].{what}: empty")
        for n in r.nodes:
            if not n.strip():
                raise UsageError(f"{p}: rack[{i}].nodes: an empty node name")
            if n in where:
                raise UsageError(f"{p}: rack[{i}].nodes: node {n!r} is already in "
                                 f"rack[{at[n]}] ({racks[at[n]].name})")
            where[n], at[n] = (r.leaf or "", r.name), i
    if not where:
        raise UsageError(f"{p}: no nodes (add [[rack]] tables with nodes = [...])")
    return Topology(str(p), where, ("leaf", "rack") if any(with_leaf) else ("rack",))


def _load_csv(p: Path) -> Topology:
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--topology {p}: unreadable ({exc})") from None
    lines = [(i + 1, ln) for i, ln in enumerate(text.splitlines())
             if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise UsageError(f"{p}: empty (expected a header node,rack[,leaf] and a line per "
                         "node)")
    rows = csv.reader([ln for _, ln in lines])
    head = [c.strip() for c in next(rows)]
    allowed = ("node", "rack", "leaf")
    bad = [c for c in head if c not in allowed]
    if bad or "node" not in head or "rack" not in head or len(set(head)) != len(head):
        raise UsageError(f"{p}: line {lines[0][0]}: the header must name the columns node, "
                         f"rack and optionally leaf, each once, got {','.join(head)!r}")
    col = {c: head.index(c) for c in head}
    where: dict[str, tuple[str, str]] = {}
    first: dict[str, int] = {}
    for (no, _), cells in zip(lines[1:], rows, strict=True):
        cells = [c.strip() for c in cells]
        if len(cells) != len(head):
            raise UsageError(f"{p}: line {no}: expected {len(head)} cells "
                             f"({','.join(head)}), got {len(cells)}")
        empty = [c for c in head if not cells[col[c]]]
        if empty:
            raise UsageError(f"{p}: line {no}: empty {empty[0]}")
        node = cells[col["node"]]
        if node in where:
            raise UsageError(f"{p}: line {no}: node {node!r} already on line {first[node]}")
        where[node] = (cells[col["leaf"]] if "leaf" in col else "", cells[col["rack"]])
        first[node] = no
    if not where:
        raise UsageError(f"{p}: no nodes after the header")
    return Topology(str(p), where, ("leaf", "rack") if "leaf" in col else ("rack",))
