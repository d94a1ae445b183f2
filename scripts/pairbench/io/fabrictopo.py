"""The fabric's shape for localisation (`pairbench fabric --cables FILE`): which node hangs
off which switch port, and which switch port is cabled to which. Three formats, one
result (FabricTopo):

- `ibnetdiscover` output (recognised by its `Switch`/`Ca` block headers): each `Switch N
  "S-GUID" # "DESCRIPTION" ...` block lists its ports, `[P] "H-GUID"[Q](...) # "DESC"`
  or `[P] "S-GUID"[Q]`; each `Ca N "H-GUID" # "DESCRIPTION"` block the switch port its
  port reaches. A switch is named by its description (a managed switch's "MF0;NAME:MODEL",
  else the first word; when that is unique among switches, else the GUID id); a node by
  the first word of its adapter's description (`node0001 mlx5_0` -> node0001: the node
  description rdma-core sets is "HOSTNAME DEVICE"), else the Ca's id.
- CSV (a header `a,b`, then one cable per line, `#` comments): an end is a node name or
  `SWITCH:PORT`, e.g. `node0001,leaf1:1` and `leaf1:33,spine1:1`.
- TOML (.toml): `cables = [["node0001", "leaf1:1"], ["leaf1:33", "spine1:1"], ...]`.

A bad file is a UsageError (exit 2) naming the file and the line: an end that is neither
a name nor SWITCH:PORT with a port >= 1, a node cabled to a node, a node or switch port
cabled twice, a block header or port line that does not parse, no node at all, a node
reachable from no other node. Nodes with several adapters are not modelled: one cable per
node (a second is an error naming both lines).
"""

from __future__ import annotations

import csv
import re
import tomllib
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from pairbench.errors import UsageError


@dataclass(frozen=True)
class Cable:
    """One cable: end a (a node, port 0, or a switch port) and end b (a switch port)."""

    a: str
    a_port: int  # 0: a node's (single) adapter port
    b: str
    b_port: int

    def label(self) -> str:
        ea = self.a if self.a_port == 0 else f"{self.a}:{self.a_port}"
        return f"{ea} <-> {self.b}:{self.b_port}"


@dataclass
class FabricTopo:
    """nodes: node -> index of its cable; cables; switches (sorted names); where each cable
    came from (file line), for messages."""

    path: str
    cables: list[Cable] = field(default_factory=list)
    nodes: dict[str, int] = field(default_factory=dict)
    switches: list[str] = field(default_factory=list)
    line_of: list[int] = field(default_factory=list)

    def leaf(self, node: str) -> str:
        return self.cables[self.nodes[node]].b


END = re.compile(r"^(?P<dev>[^\s:]+)(?::(?P<port>\d+))?$")


def load(path: Path | str) -> FabricTopo:
    """The fabric of FILE (ibnetdiscover output, .toml, else CSV); UsageError naming the
    file and line of what is wrong."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--cables {p}: unreadable ({exc})") from None
    if re.search(r"^\s*(Switch|Ca)\s+\d+\s+\"", text, re.M):
        cables = _ibnetdiscover(p, text)
    elif p.suffix.lower() == ".toml":
        cables = _toml(p, text)
    else:
        cables = _csv(p, text)
    return _build(p, cables)


def _end(p: Path, no: int, text: str) -> tuple[str, int]:
    m = END.match(text.strip())
    if not m or (m["port"] is not None and int(m["port"]) < 1):
        raise UsageError(f"{p}: line {no}: {text.strip()!r} is neither a node name nor "
                         "SWITCH:PORT (port >= 1)")
    return m["dev"], int(m["port"] or 0)


def _csv(p: Path, text: str) -> list[tuple[int, tuple[str, int], tuple[str, int]]]:
    lines = [(i + 1, ln) for i, ln in enumerate(text.splitlines())
             if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise UsageError(f"{p}: empty (expected a header a,b and a line per cable)")
    head = [c.strip() for c in next(csv.reader([lines[0][1]]))]
    if head != ["a", "b"]:
        raise UsageError(f"{p}: line {lines[0][0]}: the header must be 'a,b' (one cable "
                         f"per line: NODE,SWITCH:PORT or SWITCH:PORT,SWITCH:PORT), got "
                         f"{','.join(head)!r}")
    out = []
    for no, ln in lines[1:]:
        cells = next(csv.reader([ln]))
        if len(cells) != 2:
            raise UsageError(f"{p}: line {no}: expected 2 cells (a,b), got {len(cells)}")
        out.append((no, _end(p, no, cells[0]), _end(p, no, cells[1])))
    return out


def _toml(p: Path, text: str) -> list[tuple[int, tuple[str, int], tuple[str, int]]]:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{p}: invalid TOML ({exc})") from None
    extra = sorted(set(raw) - {"cables"})
    if extra or "cables" not in raw:
        raise UsageError(f"{p}: expected one key 'cables' (a list of [END, END]), got "
                         f"{', '.join(map(repr, raw)) or 'none'}")
    lines = text.splitlines()
    at = 0  # cables are listed in file order: search each one's line from the last

    def line_of(s: str) -> int:
        nonlocal at
        for i in range(at, len(lines)):
            if f'"{s}"' in lines[i] or f"'{s}'" in lines[i]:
                at = i
                return i + 1
        return at + 1

    out = []
    for i, c in enumerate(raw["cables"] if isinstance(raw["cables"], list) else [None]):
        if (not isinstance(c, list) or len(c) != 2
                or not all(isinstance(x, str) for x in c)):
            raise UsageError(f"{p}: cables[{i}]: expected [END, END] (two strings), "
                             f"got {c!r}")
        no = line_of(c[0])
        out.append((no, _end(p, no, c[0]), _end(p, no, c[1])))
    return out


BLOCK = re.compile(r'^\s*(?P<kind>Switch|Ca|Rt)\s+(?P<n>\d+)\s+"(?P<id>[^"]+)"'
                   r'(?:\s+#\s*"(?P<desc>[^"]*)")?')
PORT = re.compile(r'^\s*\[(?P<p>\d+)\](?:\([0-9a-fA-Fx]+\))?(?:\[ext \d+\])?\s+'
                  r'"(?P<id>[^"]+)"\[(?P<q>\d+)\](?:\([0-9a-fA-Fx]+\))?(?:\[ext \d+\])?'
                  r'(?:\s+#\s*"(?P<desc>[^"]*)")?')
HEADER_LINE = re.compile(r"^\s*(#|$|vendid=|devid=|sysimgguid=|switchguid=|caguid=|"
                         r"rtguid=)")


def _ibnetdiscover(p: Path, text: str) -> list[tuple[int, tuple[str, int], tuple[str, int]]]:
    """The cables of ibnetdiscover's output: every port line of every block, each cable
    seen from both ends once."""
    kind: dict[str, str] = {}   # id -> Switch | Ca
    desc: dict[str, str] = {}
    links: list[tuple[int, str, int, str, int]] = []
    cur = None
    for no, ln in enumerate(text.splitlines(), 1):
        m = BLOCK.match(ln)
        if m:
            cur = m["id"]
            if cur in kind:
                raise UsageError(f"{p}: line {no}: {cur} is listed twice")
            kind[cur] = m["kind"]
            desc[cur] = (m["desc"] or "").strip()
            continue
        if HEADER_LINE.match(ln):
            continue
        m = PORT.match(ln)
        if not m or cur is None:
            raise UsageError(f"{p}: line {no}: neither a block header (Switch/Ca) nor a "
                             f"port line ([P] \"ID\"[Q]) of one: {ln.strip()[:60]!r}")
        links.append((no, cur, int(m["p"]), m["id"], int(m["q"])))
    switches = [i for i, k in kind.items() if k == "Switch"]
    if not switches:
        raise UsageError(f"{p}: no Switch block")
    names = {}
    first = [switch_name(desc[s]) for s in switches]
    for s, f in zip(switches, first, strict=True):
        names[s] = f if f and first.count(f) == 1 and ":" not in f else s
    hosts = {}
    for i, k in kind.items():
        if k != "Switch":
            w = desc[i].split()
            hosts[i] = w[0] if w and ":" not in w[0] else i
    seen: dict[tuple[str, int], tuple[str, int]] = {}
    out = []
    for no, dev, port, peer, pport in links:
        if peer not in kind:
            raise UsageError(f"{p}: line {no}: port {port} of {dev} reaches {peer}, which "
                             "has no block of its own")
        back = seen.get((peer, pport))
        if back is not None:
            if back != (dev, port):
                raise UsageError(f"{p}: line {no}: {dev}[{port}] -> {peer}[{pport}], but "
                                 f"{peer}[{pport}] -> {back[0]}[{back[1]}]")
            continue  # the cable from its other end
        seen[(dev, port)] = (peer, pport)
        ends = []
        for d, q in ((dev, port), (peer, pport)):
            ends.append((names[d], q) if kind[d] == "Switch" else (hosts[d], 0))
        ends.sort(key=lambda e: e[1] != 0)  # a node end first
        out.append((no, ends[0], ends[1]))
    return out


MANAGED = re.compile(r"^[^;\s]+;(?P<name>[^:;\s]+):")  # "MF0;leaf1:MQM8700/U1" -> leaf1


def switch_name(desc: str) -> str:
    """A switch's name from its description: the NAME of a managed switch's
    "MF0;NAME:MODEL/U1", else the first word ("" when it has a colon: not a name)."""
    m = MANAGED.match(desc)
    if m:
        return m["name"]
    w = desc.split()
    return w[0] if w and ":" not in w[0] and ";" not in w[0] else ""


def _build(p: Path, cables: list[tuple[int, tuple[str, int], tuple[str, int]]]) -> FabricTopo:
    topo = FabricTopo(str(p))
    used: dict[tuple[str, int], int] = {}
    switches: set[str] = set()
    for no, a, b in cables:
        if a[1] != 0 and b[1] == 0:
            a, b = b, a
        if b[1] == 0:
            raise UsageError(f"{p}: line {no}: {a[0]} <-> {b[0]}: a cable between two "
                             "nodes (an end on a switch is SWITCH:PORT)")
        if a == b:
            raise UsageError(f"{p}: line {no}: {a[0]}:{a[1]} is cabled to itself")
        for e in (a, b):
            if e in used:
                what = e[0] if e[1] == 0 else f"{e[0]}:{e[1]}"
                raise UsageError(f"{p}: line {no}: {what} already has a cable (line "
                                 f"{topo.line_of[used[e]]}; one adapter per node, one "
                                 "cable per port)")
        for e in (a, b):
            used[e] = len(topo.cables)
        if a[1] == 0:
            if a[0] in switches:
                raise UsageError(f"{p}: line {no}: {a[0]} is a switch elsewhere")
            topo.nodes[a[0]] = len(topo.cables)
        else:
            switches.add(a[0])
        switches.add(b[0])
        topo.cables.append(Cable(a[0], a[1], b[0], b[1]))
        topo.line_of.append(no)
    clash = sorted(switches & set(topo.nodes))
    if clash:
        raise UsageError(f"{p}: line {topo.line_of[topo.nodes[clash[0]]]}: {clash[0]} is "
                         "both a node and a switch")
    if not topo.nodes:
        raise UsageError(f"{p}: no node (a cable NODE <-> SWITCH:PORT)")
    topo.switches = sorted(switches)
    _check_connected(p, topo)
    return topo


def _check_connected(p: Path, topo: FabricTopo) -> None:
    adj: dict[str, list[str]] = {}
    for c in topo.cables:
        adj.setdefault(c.a, []).append(c.b)
        adj.setdefault(c.b, []).append(c.a)
    start = next(iter(topo.nodes))
    seen, todo = {start}, deque([start])
    while todo:
        for n in adj[todo.popleft()]:
            if n not in seen:
                seen.add(n)
                todo.append(n)
    cut = [n for n in topo.nodes if n not in seen]
    if cut:
        raise UsageError(f"{p}: line {topo.line_of[topo.nodes[cut[0]]]}: node {cut[0]} "
                         f"cannot reach node {start} (the fabric is in pieces: "
                         f"{len(cut)} node(s) apart)")
