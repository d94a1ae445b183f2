"""Name the component (docs/fabric.md, "Naming the component"): the smallest set of
components — node cables, inter-switch cables (with their two ports), whole switches —
that explains every slow or failed node pair of one test and size and no healthy one.

1. Each node pair of the scan is *slow* (perf below the verdict's floor, or failed) or
   *healthy*; pairs with a node the cable file does not list are left out (counted).
2. Routes (analysis/routes.py) give each pair the components it may cross, and those it
   surely crosses (the same under D-mod-K; under ECMP only what every shortest path takes).
3. A component is a *candidate* when a slow pair may cross it and no healthy pair surely
   does: one healthy pair through it clears it (a faulty cable slows every pair through it;
   noise does not lift a pair of a 2x slower cable above the floor).
4. The slow pairs are covered by the fewest candidates: a minimum set cover, solved exactly
   as an integer programme (scipy.optimize.milp, HiGHS) over the distinct candidate sets of
   the slow pairs (a few hundred at most: pairs through the same components share one);
   greedy cover (largest number of uncovered slow pairs first, ln(n)-optimal) if the
   solver gives no optimum in its time limit. A slow pair no candidate may cross is
   *unexplained*: not a component of this fabric (a node pair's own problem, a route the
   model does not know), reported with the scan's suspects as before.
5. Per chosen component the evidence: the slow pairs among the pairs through it and among
   all other pairs, and their median perf. Where another candidate could take its place in
   a cover of the same size (ECMP: the uplinks of one leaf; a port and the cable on it are
   one component already) it is listed as an *alternative*, with node pairs whose routes
   cross one and not the other — measuring them tells the two apart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from pairbench.analysis.outliers import LinkPerf, Verdict
from pairbench.analysis.routes import Incidence, Routing

MILP_TIME_S = 20.0
TELL_APART = 3  # node pairs shown per alternative
TELL_APART_ALTS = 8  # alternatives given such pairs (the others: null)


@dataclass
class Found:
    component: int
    name: str
    kind: str
    slow: int           # slow pairs through it
    through: int        # measured pairs through it
    slow_elsewhere: int
    elsewhere: int
    median_perf: float  # of the pairs through it (failed ones as 0)
    alternatives: list[dict] = field(default_factory=list)

    def evidence(self) -> str:
        return (f"{self.name}: {self.slow:,} of {self.through:,} node pairs through it slow, "
                f"{self.slow_elsewhere:,} of {self.elsewhere:,} other node pairs")

    def record(self) -> dict:
        mp = None if math.isnan(self.median_perf) else round(self.median_perf, 4)
        return {"component": self.name, "kind": self.kind, "slow": self.slow,
                "through": self.through, "slow_elsewhere": self.slow_elsewhere,
                "elsewhere": self.elsewhere, "median_perf": mp,
                "evidence": self.evidence(), "alternatives": self.alternatives}


@dataclass
class Localisation:
    routing: str
    cables: str
    pairs: int
    slow: int
    failed: int
    found: list[Found]
    unexplained: list[tuple[str, str]]
    not_in_map: list[str]
    solver: str

    def record(self, show: int = 20) -> dict:
        return {"routing": self.routing, "cables": self.cables, "pairs": self.pairs,
                "slow": self.slow, "failed": self.failed, "solver": self.solver,
                "components": [f.record() for f in self.found],
                "unexplained": len(self.unexplained),
                "unexplained_pairs": [list(x) for x in self.unexplained[:show]],
                "not_in_map": self.not_in_map[:show],
                "not_in_map_count": len(self.not_in_map)}

    def line(self) -> str:
        head = f"localised ({self.routing} routes, {self.slow:,} slow of {self.pairs:,} node pairs)"
        if not self.slow:
            return head + ": no slow node pair, no component"
        parts = []
        for f in self.found:
            alt = ""
            if f.alternatives:
                alt = " (or " + ", or ".join(a["component"] for a in f.alternatives[:5]) + \
                    (f" and {len(f.alternatives) - 5} more" if len(f.alternatives) > 5 else "") \
                    + ": the routes cannot tell them apart)"
            parts.append(f.evidence() + alt)
        if self.unexplained:
            parts.append(f"{len(self.unexplained):,} slow node pair(s) no component explains "
                         f"(e.g. {'~'.join(self.unexplained[0])})")
        if not parts:
            parts.append("nothing")
        return head + ": " + "; ".join(parts)


class Localiser:
    """One routing model over one cable file; the incidence of a set of node pairs is
    kept for the next (test, size) of the same scan."""

    def __init__(self, routing: Routing) -> None:
        self.r = routing
        self._inc: tuple[bytes, Incidence] | None = None

    def incidence(self, a: np.ndarray, b: np.ndarray) -> Incidence:
        key = a.tobytes() + b"|" + b.tobytes()
        if self._inc is None or self._inc[0] != key:
            self._inc = (key, self.r.incidence(a, b))
        return self._inc[1]

    def localise(self, node_a: Sequence[str], node_b: Sequence[str], perf: np.ndarray,
                 floor: float) -> Localisation:
        """node_a[i] ~ node_b[i] measured perf[i] (NaN: failed); slow below floor."""
        names = sorted(set(map(str, node_a)) | set(map(str, node_b)))
        at = {n: i for i, n in enumerate(names)}
        return self.localise_codes(np.array([at[str(x)] for x in node_a], dtype=np.int64),
                                   np.array([at[str(x)] for x in node_b], dtype=np.int64),
                                   names, perf, floor)

    def localise_codes(self, ca: np.ndarray, cb: np.ndarray, names: Sequence[str],
                       perf: np.ndarray, floor: float) -> Localisation:
        """localise() of node pairs given as codes into names (a verdict's LinkPerf)."""
        r = self.r
        lut = np.array([r.index.get(str(n), -1) for n in names] + [-1], dtype=np.int64)
        na, nb = lut[np.asarray(ca)], lut[np.asarray(cb)]
        known = (na >= 0) & (nb >= 0)
        missing = [str(names[i]) for i in np.flatnonzero(lut[:-1] < 0)]
        perf = np.asarray(perf, dtype=float)[known]
        a, b = na[known], nb[known]
        slow = ~(perf >= floor)  # NaN (failed) is slow
        inc = self.incidence(a, b)
        through = inc.counts(np.ones(len(a)))
        n_slow = inc.counts(slow)
        cleared = inc.counts(~slow, certain=True)
        cand = (n_slow > 0) & (cleared == 0)
        slow_idx = np.flatnonzero(slow)
        rows = candidate_rows(inc, slow_idx, cand)
        unexplained = [tuple(sorted((r.node_list[a[i]], r.node_list[b[i]])))
                       for i, x in zip(slow_idx, rows, strict=True) if len(x) == 0]
        sets: dict[tuple[int, ...], int] = {}
        for x in rows:
            if len(x):
                t = tuple(int(c) for c in x)
                sets[t] = sets.get(t, 0) + 1
        # among covers of one size, the one whose components are slow for the largest share
        # of the pairs through them (a leaf's uplink, not every spine that ECMP may use)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(through > 0, n_slow / through, 0.0)
        chosen, solver = cover(list(sets), share)
        found = []
        total, total_slow = len(a), int(slow.sum())
        fperf = np.where(np.isnan(perf), 0.0, perf)
        for c in chosen:
            on = inc.column(c)
            f = Found(component=c, name=r.names[c], kind=r.kinds[c], slow=int(n_slow[c]),
                      through=int(through[c]), slow_elsewhere=total_slow - int(n_slow[c]),
                      elsewhere=total - int(through[c]),
                      median_perf=float(np.median(fperf[on])) if on.any() else math.nan)
            f.alternatives = self._alternatives(c, chosen, list(sets), a, b)
            found.append(f)
        found.sort(key=lambda f: (-f.slow, f.name))
        return Localisation(routing=r.model, cables=r.topo.path, pairs=total,
                            slow=total_slow, failed=int(np.isnan(perf).sum()), found=found,
                            unexplained=unexplained, not_in_map=missing, solver=solver)

    def _alternatives(self, c: int, chosen: list[int], sets: list[tuple[int, ...]],
                      a: np.ndarray, b: np.ndarray) -> list[dict]:
        """Candidates that could replace c in the cover (each set that only c covers also
        holds them), each with node pairs that tell the two apart."""
        others = set(chosen) - {c}
        alone = [set(s) for s in sets if c in s and not others & set(s)]
        if not alone:
            return []
        alts = set.intersection(*alone) - {c}
        out = []
        for n, x in enumerate(sorted(alts, key=lambda i: self.r.names[i])):
            out.append({"component": self.r.names[x], "kind": self.r.kinds[x],
                        "tell_apart": (self._tell_apart(c, x, a, b) if n < TELL_APART_ALTS
                                       else None)})
        return out

    def _tell_apart(self, c: int, x: int, a: np.ndarray, b: np.ndarray) -> list[list[str]]:
        """Up to TELL_APART node pairs that surely cross one of c, x and cannot cross the
        other, not measured yet where such exist: among the nodes of the two components'
        leaves and one node of every other leaf."""
        r = self.r
        near = self._near(c) | self._near(x)
        for leaf in range(len(r.leaves)):
            near.add(int(np.flatnonzero(r.node_leaf == leaf)[0]))
        nodes = np.array(sorted(near))
        i, j = np.triu_indices(len(nodes), 1)
        pa, pb = nodes[i], nodes[j]
        inc = r.incidence(pa, pb)
        sure_c, may_c = inc.column(c, True), inc.column(c)
        sure_x, may_x = inc.column(x, True), inc.column(x)
        tell = (sure_c & ~may_x) | (sure_x & ~may_c)
        done = set(zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist(), strict=True))
        new = [k for k in np.flatnonzero(tell) if (int(pa[k]), int(pb[k])) not in done]
        pick = (new or list(np.flatnonzero(tell)))[:TELL_APART]
        return [[r.node_list[int(pa[k])], r.node_list[int(pb[k])]] for k in pick]

    def _near(self, comp: int) -> set[int]:
        """Node indices on the leaves a component touches (a node cable: that node's leaf;
        a switch or cable: the leaves below it; at most 64 of them)."""
        r = self.r
        nc = len(r.topo.cables)
        ends = ([r.topo.switches[comp - nc]] if comp >= nc else
                [e for e, p in ((r.topo.cables[comp].a, r.topo.cables[comp].a_port),
                                (r.topo.cables[comp].b, 1)) if p])
        leaves = {r.leaf_at[e] for e in ends if e in r.leaf_at}
        if not leaves:  # an upper switch: the leaves under it
            leaves = set(range(len(r.leaves)))
        out: set[int] = set()
        for lf in sorted(leaves):
            out |= set(np.flatnonzero(r.node_leaf == lf)[:64].tolist())
            if len(out) >= 64:
                break
        return out


def candidate_rows(inc: Incidence, idx: np.ndarray, cand: np.ndarray) -> list[np.ndarray]:
    """The candidates each of the pairs idx may cross: its node cables' and its class's,
    the class's computed once per class (ECMP: per pair of leaves)."""
    m, node = inc.cls_possible, inc.node
    per_cls: dict[int, np.ndarray] = {}
    out = []
    for i in idx:
        g = int(inc.cls[i])
        x = per_cls.get(g)
        if x is None:
            x = m.indices[m.indptr[g]:m.indptr[g + 1]]
            x = per_cls[g] = np.sort(x[cand[x]])
        y = node.indices[node.indptr[i]:node.indptr[i + 1]]
        y = y[cand[y]]
        out.append(np.union1d(x, y) if len(y) else x)
    return out


def cover(sets: list[tuple[int, ...]], share: np.ndarray) -> tuple[list[int], str]:
    """The fewest components that meet every set (each a tuple of component numbers):
    scipy.optimize.milp, ties broken towards the larger share (per component, in [0, 1]);
    a greedy cover if it finds no optimum in MILP_TIME_S."""
    if not sets:
        return [], "none"
    cols = sorted({c for s in sets for c in s})
    at = {c: i for i, c in enumerate(cols)}
    try:
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import csr_matrix

        r = np.repeat(np.arange(len(sets)), [len(s) for s in sets])
        cidx = np.array([at[c] for s in sets for c in s])
        A = csr_matrix((np.ones(len(r)), (r, cidx)), shape=(len(sets), len(cols)))
        # each component costs 1, less a tie-break below 1 / (number of components): a
        # smaller cover always wins, and of equal ones the larger summed share
        cost = 1.0 - np.asarray(share)[cols] / (len(cols) + 1.0)
        res = milp(cost, constraints=LinearConstraint(A, lb=1, ub=np.inf),
                   integrality=np.ones(len(cols)), bounds=Bounds(0, 1),
                   options={"time_limit": MILP_TIME_S})
        if res.status == 0 and res.x is not None:
            return sorted(cols[i] for i in np.flatnonzero(res.x > 0.5)), "milp"
    except ImportError:  # pragma: no cover - scipy is a dependency
        pass
    return greedy_cover(sets), "greedy"


def greedy_cover(sets: list[tuple[int, ...]]) -> list[int]:
    """Repeatedly the component meeting the most uncovered sets (ties: lowest number)."""
    left = [set(s) for s in sets]
    out: list[int] = []
    while left:
        count: dict[int, int] = {}
        for s in left:
            for c in s:
                count[c] = count.get(c, 0) + 1
        best = min(count, key=lambda c: (-count[c], c))
        out.append(best)
        left = [s for s in left if best not in s]
    return sorted(out)


def localise_verdict(loc: Localiser, v: Verdict,
                     extra: tuple[list[str], list[str], np.ndarray] | None = None
                     ) -> Localisation:
    """The components that explain v's node pairs below its floor (failed ones too);
    extra: more node pairs (a, b, perf against v's reference) the scan did not measure,
    e.g. the confirmation rounds' re-measurements of pairs that tell alternatives apart."""
    lp = v.links
    if isinstance(lp, LinkPerf):
        names = [str(n) for n in lp.names]
        at = {n: i for i, n in enumerate(names)}
        ca, cb, perf = lp.a.astype(np.int64), lp.b.astype(np.int64), lp.perf
    else:
        names = sorted({n for ab in lp for n in ab} | {n for ab in v.failed for n in ab})
        at = {n: i for i, n in enumerate(names)}
        ca = np.array([at[x] for x, _ in lp], dtype=np.int64)
        cb = np.array([at[y] for _, y in lp], dtype=np.int64)
        perf = np.array(list(lp.values()), dtype=float)
    ea, eb, ep = extra if extra is not None else ([], [], np.array([]))
    new = sorted(({n for ab in v.failed for n in ab} | set(ea) | set(eb)) - set(at))
    for n in new:
        at[n] = len(names)
        names.append(n)
    fa = np.array([at[x] for x, _ in v.failed] + [at[x] for x in ea], dtype=np.int64)
    fb = np.array([at[y] for _, y in v.failed] + [at[y] for y in eb], dtype=np.int64)
    fp = np.concatenate([np.full(len(v.failed), np.nan), np.asarray(ep, dtype=float)])
    return loc.localise_codes(np.concatenate([ca, fa]), np.concatenate([cb, fb]), names,
                              np.concatenate([perf, fp]), v.floor)


def tell_apart_pairs(loc: Localisation) -> list[tuple[str, str]]:
    """The node pairs that would tell each named component from its alternatives."""
    out: list[tuple[str, str]] = []
    for f in loc.found:
        for alt in f.alternatives:
            for a, b in alt.get("tell_apart") or []:
                ab = (min(a, b), max(a, b))
                if ab not in out:
                    out.append(ab)
    return out
