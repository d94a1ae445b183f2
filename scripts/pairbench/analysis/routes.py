"""Which components of the fabric each node pair's traffic may cross (docs/fabric.md,
"Naming the component"): its two node cables, the switches and the inter-switch cables
of its routes, from a stated model of the routing.

Components are numbered: the cables of the topology file (pairbench.io.fabrictopo) in
its order, then the switches (sorted by name). A node pair (a, b) crosses a component
when the route a -> b or the route b -> a does (a ping-pong uses both; a bandwidth test's
acknowledgements come back the other way).

Models (`--routing`):

- "dmodk": up/down routing on a fat tree with D-mod-K port selection (Zahavi et al.:
  OpenSM's ftree routing spreads destinations so): the nodes are numbered d = 0..K-1 in
  the order of their leaf (by name) and their port on it; a packet for d climbs from its
  leaf until it reaches a switch with d's leaf below it, taking at each switch the up
  cable number (d // D) mod U (U: the switch's up cables sorted by port number; D: the
  product of the U's of the switches climbed so far, 1 at the leaf), then descends, where
  several cables lead down towards d's leaf taking number (d // D) mod their count. A
  switch's level is its distance from a node's leaf (leaves are level 1); a cable between
  two switches of one level is not a fat tree (refused: use "ecmp"). The route is one
  path: a pair crosses exactly the components of its two paths.
- "ecmp": every shortest path between the two leaves is possible (ECMP hashing, adaptive
  routing): a pair *may* cross every component on any of them, and *surely* crosses only
  those on all of them (its node cables, its leaves, and a switch or cable every shortest
  path takes). A healthy pair clears only what it surely crossed.

- "lft": the forwarding tables the fabric has (`ibroute` dumps, io/lftdump.py): from each
  leaf, the out port each switch's table gives for the destination node, hop by hop, until
  the port that holds the node's cable. The routes are the fabric's own, no model.

Cost: dmodk builds at most 2 x (2 + 2 x levels) components per node pair, vectorised
(numpy), from one route per (leaf, destination node); ecmp one component set per pair of
leaves (shortest paths counted on the switch graph), shared by the node pairs between them.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pairbench.errors import UsageError
from pairbench.io.fabrictopo import FabricTopo

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

MODELS = ("dmodk", "ecmp")  # and "lft": Routing(..., lft=io.lftdump.load(FILE))


def natural(name: str) -> tuple:
    """leaf2 before leaf10."""
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t)
                 for t in re.split(r"(\d+)", name) if t)


@dataclass
class Incidence:
    """The components node pairs cross, factored: its node cables (node: csr P x C,
    always certain), and its class (a row of cls_possible / cls_certain, G x C: dmodk one
    class per pair, ecmp one per pair of leaves)."""

    node: csr_matrix
    cls: np.ndarray
    cls_possible: csr_matrix
    cls_certain: csr_matrix

    @property
    def pairs(self) -> int:
        return len(self.cls)

    def counts(self, w: np.ndarray, certain: bool = False) -> np.ndarray:
        """Per component: the sum of w over the pairs that (surely) cross it."""
        w = np.asarray(w, dtype=float)
        g = np.bincount(self.cls, weights=w, minlength=self.cls_possible.shape[0])
        m = self.cls_certain if certain else self.cls_possible
        return np.asarray(self.node.T @ w).ravel() + np.asarray(m.T @ g).ravel()

    def column(self, c: int, certain: bool = False) -> np.ndarray:
        """Whether each pair (surely) crosses component c."""
        m = self.cls_certain if certain else self.cls_possible
        on = np.asarray(m[:, c].todense()).ravel() > 0
        return on[self.cls] | (np.asarray(self.node[:, c].todense()).ravel() > 0)

    def rows(self, idx: np.ndarray, certain: bool = False) -> list[np.ndarray]:
        """The components each of the pairs idx (surely) crosses."""
        m = self.cls_certain if certain else self.cls_possible
        out = []
        for i in np.asarray(idx):
            a = self.node.indices[self.node.indptr[i]:self.node.indptr[i + 1]]
            g = self.cls[i]
            b = m.indices[m.indptr[g]:m.indptr[g + 1]]
            out.append(np.union1d(a, b))
        return out


class Routing:
    """The components of a FabricTopo and the routes of one model over it."""

    def __init__(self, topo: FabricTopo, model: str = "dmodk",
                 lft: dict[str, dict[str, int]] | None = None) -> None:
        if lft is not None:
            model = "lft"
        elif model not in MODELS:
            raise UsageError(f"--routing {model}: expected one of {', '.join(MODELS)}")
        self.topo, self.model, self.lft = topo, model, lft
        nc = len(topo.cables)
        self.sw = {s: nc + i for i, s in enumerate(topo.switches)}
        self.n_components = nc + len(topo.switches)
        self._levels()
        self.names = [self._cable_label(i) for i in range(nc)] + \
            [f"switch {s}" for s in topo.switches]
        self.kinds = ["node cable" if c.a_port == 0 else "cable" for c in topo.cables] + \
            ["switch"] * len(topo.switches)
        leaves = sorted({topo.cables[i].b for i in topo.nodes.values()}, key=natural)
        self.leaves = leaves
        self.leaf_at = {x: i for i, x in enumerate(leaves)}
        # nodes in (leaf, port) order: the D of D-mod-K
        order = sorted(topo.nodes, key=lambda n: (self.leaf_at[topo.leaf(n)],
                                                  topo.cables[topo.nodes[n]].b_port))
        self.node_list = order
        self.index = {n: i for i, n in enumerate(order)}
        self.node_leaf = np.array([self.leaf_at[topo.leaf(n)] for n in order])
        self.node_cable = np.array([topo.nodes[n] for n in order])
        self._mid: np.ndarray | None = None
        self._ecmp: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    # -- shape --------------------------------------------------------------------------
    def _levels(self) -> None:
        t = self.topo
        self.adj: dict[str, list[tuple[int, str]]] = {s: [] for s in t.switches}
        for i, c in enumerate(t.cables):
            if c.a_port:
                self.adj[c.a].append((i, c.b))
                self.adj[c.b].append((i, c.a))
        level = {t.cables[i].b: 1 for i in t.nodes.values()}
        todo = deque(level)
        while todo:
            s = todo.popleft()
            for _, o in self.adj[s]:
                if o not in level:
                    level[o] = level[s] + 1
                    todo.append(o)
        self.level = level

    def _cable_label(self, i: int) -> str:
        c = self.topo.cables[i]
        if c.a_port and self.level.get(c.a, 0) > self.level.get(c.b, 0):
            return f"{c.b}:{c.b_port} <-> {c.a}:{c.a_port}"
        return c.label()

    def port_component(self, switch: str, port: int) -> int | None:
        """The cable on a switch port (a bad port and its cable cross the same pairs)."""
        for i, c in enumerate(self.topo.cables):
            if (c.b == switch and c.b_port == port) or (c.a == switch and c.a_port == port):
                return i
        return None

    def component(self, text: str) -> int:
        """A component by name: a cable's label or "A~B" / "A <-> B" ends, a switch port
        "SW:P" (its cable), a node (its cable), "switch S" or a switch name."""
        text = text.strip()
        if text in self.names:
            return self.names.index(text)
        if text.startswith("switch "):
            text = text[7:]
        if text in self.sw:
            return self.sw[text]
        if text in self.topo.nodes:
            return self.topo.nodes[text]
        ends = re.split(r"\s*(?:~|<->)\s*", text)
        if len(ends) == 2:
            want = {e.strip() for e in ends}
            for i, c in enumerate(self.topo.cables):
                ea = c.a if c.a_port == 0 else f"{c.a}:{c.a_port}"
                if {ea, f"{c.b}:{c.b_port}"} == want:
                    return i
        m = re.fullmatch(r"(.+):(\d+)", text)
        if m:
            got = self.port_component(m[1], int(m[2]))
            if got is not None:
                return got
        raise UsageError(f"no component {text!r} in {self.topo.path}")

    # -- D-mod-K --------------------------------------------------------------------------
    def _dmodk_tables(self) -> None:
        t = self.topo
        for i, c in enumerate(t.cables):
            if c.a_port and self.level.get(c.a) == self.level.get(c.b):
                raise UsageError(f"{t.path}: line {t.line_of[i]}: {c.label()} joins two "
                                 f"switches of level {self.level[c.a]}: not a fat tree for "
                                 "D-mod-K routing (use --routing ecmp)")
        up = {s: sorted(((self._port(i, s), i, o) for i, o in self.adj[s]
                         if self.level[o] == self.level[s] + 1)) for s in t.switches}
        down = {s: [(self._port(i, s), i, o) for i, o in self.adj[s]
                    if self.level[o] == self.level[s] - 1] for s in t.switches}
        below: dict[str, set[str]] = {}
        for s in sorted(t.switches, key=lambda x: self.level.get(x, 0)):
            below[s] = {s} if self.level.get(s) == 1 else set()
            for _, _, o in down[s]:
                below[s] |= below[o]
        width = 1 + 4 * max(self.level.values())
        nl, k = len(self.leaves), len(self.node_list)
        mid = np.full((nl, k, width), -1, dtype=np.int32)
        for li, leaf in enumerate(self.leaves):
            for d in range(k):
                dleaf = self.leaves[self.node_leaf[d]]
                path, cur, div = [self.sw[leaf]], leaf, 1
                while dleaf not in below[cur]:
                    ups = up[cur]
                    if not ups:
                        raise UsageError(f"{t.path}: no up/down route from {leaf} to "
                                         f"{dleaf}")
                    _, c, cur = ups[(d // div) % len(ups)]
                    div *= len(ups)
                    path += [c, self.sw[cur]]
                while cur != dleaf:
                    ways = sorted(w for w in down[cur] if dleaf in below[w[2]])
                    _, c, cur = ways[(d // div) % len(ways)]
                    path += [c, self.sw[cur]]
                mid[li, d, :len(path)] = path
        self._mid = mid

    def _lft_tables(self) -> None:
        """The routes the forwarding tables give (self.lft: switch -> node -> out port),
        from each leaf to each node, as _dmodk_tables' mid table."""
        t, lft = self.topo, self.lft or {}
        on: dict[tuple[str, int], int] = {}
        for i, c in enumerate(t.cables):
            on[(c.b, c.b_port)] = i
            if c.a_port:
                on[(c.a, c.a_port)] = i
        width = 1 + 2 * (len(t.switches) + 1)
        k = len(self.node_list)
        paths: list[tuple[int, int, list[int]]] = []
        for li, leaf in enumerate(self.leaves):
            for d, node in enumerate(self.node_list):
                path, cur = [self.sw[leaf]], leaf
                while True:
                    port = lft.get(cur, {}).get(node)
                    if port is None:
                        raise UsageError(f"forwarding tables: switch {cur} has no route to "
                                         f"{node} (dump every switch's LFT: ibroute)")
                    c = on.get((cur, port))
                    if c is None:
                        raise UsageError(f"forwarding tables: {cur} sends {node} out of "
                                         f"port {port}, which has no cable in {t.path}")
                    cab = t.cables[c]
                    if cab.a_port == 0:
                        if cab.a != node:
                            raise UsageError(f"forwarding tables: {cur} sends {node} to "
                                             f"{cab.a}'s port {port}")
                        break
                    cur = cab.b if cab.a == cur else cab.a
                    path += [c, self.sw[cur]]
                    if len(path) >= width:
                        raise UsageError(f"forwarding tables: the route from {leaf} to "
                                         f"{node} loops")
                paths.append((li, d, path))
        mid = np.full((len(self.leaves), k, max(len(x[2]) for x in paths)), -1, dtype=np.int32)
        for li, d, path in paths:
            mid[li, d, :len(path)] = path
        self._mid = mid

    def _port(self, cable: int, switch: str) -> int:
        c = self.topo.cables[cable]
        return c.a_port if c.a == switch else c.b_port

    # -- ECMP ---------------------------------------------------------------------------
    def _ecmp_class(self, la: int, lb: int) -> tuple[np.ndarray, np.ndarray]:
        """(components on any shortest path, on every one) between leaves la and lb."""
        key = min(la, lb) * len(self.leaves) + max(la, lb)
        if key in self._ecmp:
            return self._ecmp[key]
        src, dst = self.leaves[la], self.leaves[lb]
        d1, n1 = self._bfs(src)
        d2, n2 = self._bfs(dst)
        total, dist = n1[dst], d1[dst]
        poss, cert = [], []
        for s in self.topo.switches:
            if s in d1 and s in d2 and d1[s] + d2[s] == dist:
                poss.append(self.sw[s])
                if n1[s] * n2[s] == total:
                    cert.append(self.sw[s])
        for i, c in enumerate(self.topo.cables):
            if not c.a_port:
                continue
            n = 0
            for u, v in ((c.a, c.b), (c.b, c.a)):
                if u in d1 and v in d2 and d1[u] + 1 + d2[v] == dist:
                    n += n1[u] * n2[v]
            if n:
                poss.append(i)
                if n == total:
                    cert.append(i)
        out = (np.array(sorted(poss), dtype=np.int32), np.array(sorted(cert), dtype=np.int32))
        self._ecmp[key] = out
        return out

    def _bfs(self, src: str) -> tuple[dict[str, int], dict[str, int]]:
        """Distances and numbers of shortest paths (cables counted apart) from src."""
        dist, npath = {src: 0}, {src: 1}
        todo = deque([src])
        while todo:
            u = todo.popleft()
            for _, v in self.adj[u]:
                if v not in dist:
                    dist[v], npath[v] = dist[u] + 1, 0
                    todo.append(v)
                if dist[v] == dist[u] + 1:
                    npath[v] += npath[u]
        return dist, npath

    # -- pairs ------------------------------------------------------------------------------
    def incidence(self, a: np.ndarray, b: np.ndarray) -> Incidence:
        """The components of node pairs (a[i], b[i]) (indices into node_list)."""
        from scipy import sparse  # here: the driver's commands start without it

        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        p, nc = len(a), self.n_components
        # CSR built directly (no COO of int64 row numbers: 8.4 million pairs at 4,096 nodes)
        cols = np.sort(np.stack([self.node_cable[a], self.node_cable[b]], axis=1),
                       axis=1).ravel().astype(np.int32)
        node = sparse.csr_matrix((np.ones(2 * p, dtype=np.int8), cols,
                                  np.arange(0, 2 * p + 1, 2, dtype=np.int64)), shape=(p, nc))
        if self.model in ("dmodk", "lft"):
            if self._mid is None:
                self._lft_tables() if self.model == "lft" else self._dmodk_tables()
            assert self._mid is not None
            m = np.concatenate([self._mid[self.node_leaf[a], b],
                                self._mid[self.node_leaf[b], a]], axis=1)
            m.sort(axis=1)
            keep = m >= 0
            keep[:, 1:] &= m[:, 1:] != m[:, :-1]
            indptr = np.zeros(p + 1, dtype=np.int64)
            np.cumsum(keep.sum(axis=1), out=indptr[1:])
            idx = m[keep]  # row by row, each row sorted
            del m, keep
            cls_m = sparse.csr_matrix((np.ones(len(idx), dtype=np.int8), idx, indptr),
                                      shape=(p, nc))
            return Incidence(node, np.arange(p), cls_m, cls_m)
        nl = len(self.leaves)
        la, lb = self.node_leaf[a], self.node_leaf[b]
        key = np.minimum(la, lb) * nl + np.maximum(la, lb)
        uniq, cls = np.unique(key, return_inverse=True)
        mats = []
        for certain in (False, True):
            rr, cc = [], []
            for g, k in enumerate(uniq):
                comps = self._ecmp_class(int(k // nl), int(k % nl))[int(certain)]
                rr.append(np.full(len(comps), g))
                cc.append(comps)
            rr_a, cc_a = np.concatenate(rr), np.concatenate(cc)
            mats.append(sparse.csr_matrix((np.ones(len(rr_a), dtype=np.int8), (rr_a, cc_a)),
                                          shape=(len(uniq), nc)))
        return Incidence(node, cls.astype(np.int64), mats[0], mats[1])
