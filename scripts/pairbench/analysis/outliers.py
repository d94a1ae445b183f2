"""The outliers among a fabric scan's node pairs (pure functions on data frames); the
links themselves come from pairbench.analysis.scanlinks.

A node pair measured several times (pairbench fabric --repetitions) counts with the median
of its values: a disturbance of one round (another process taking the CPU) then does not
make its node pairs suspects.

detect(links): the rule (docs/fabric.md), robust to the outliers themselves:
  perf        = value / ref (bandwidth) or ref / value (latency): 1 = as good as the
                reference, 0.5 = half the bandwidth or twice the latency
  node score  = median of the values of the node's links
  ref         = median over nodes of the node scores (a bad node moves its own score,
                and at most one of each other node's K-1 links: with K >= 4 and fewer
                than half the nodes bad, ref is a healthy value)
  noise       = 1.4826 x MAD of ln(perf) over the links between nodes that are
                themselves within tolerance (a consistent estimate of the standard
                deviation of ln(perf): bandwidth noise is multiplicative, and in log space
                a link twice as fast counts as much as one half as fast)
  floor       = min(1 - tolerance, exp(-z x noise))
  suspect node: perf(node score) < floor            (every link of the node is slow)
  suspect link: perf(link) < floor, neither end a suspect node   (a bad cable)
Links of a suspect node below the threshold are reported under the node.

Cost: O(links) to judge them, vectorised on integer node codes (scanlinks).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from pairbench.analysis.scanlinks import (
    link_values,
    links,
    read_links,
    read_scan,
)

DEFAULT_TOLERANCE = 0.10
DEFAULT_Z = 3.5
MAD_TO_SIGMA = 1.4826


class LinkPerf(Mapping):
    """perf of every measured link, (node_a, node_b) -> perf, backed by arrays of node
    codes into `names` (a dict of 8 million tuples, or 16 million name strings, at K =
    4,096 would take gigabytes)."""

    def __init__(self, a: np.ndarray, b: np.ndarray, perf: np.ndarray,
                 names: pd.Index) -> None:
        self.a, self.b, self.perf, self.names = a, b, perf, names
        self._key: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.perf)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        n = self.names
        return ((str(n[x]), str(n[y])) for x, y in zip(self.a.tolist(), self.b.tolist(),
                                                        strict=True))

    def _index(self, keys: list[tuple[str, str]]) -> np.ndarray:
        """Positions of the given links (-1: not measured), by binary search on codes."""
        if self._key is None:
            self._key = self.a.astype(np.int64) * len(self.names) + self.b
            self._sorted = np.argsort(self._key, kind="stable")
        if not keys:
            return np.array([], dtype=np.int64)
        ka = self.names.get_indexer([str(k[0]) for k in keys])
        kb = self.names.get_indexer([str(k[1]) for k in keys])
        want = ka.astype(np.int64) * len(self.names) + kb
        sk = self._key[self._sorted]
        at = np.clip(np.searchsorted(sk, want), 0, max(len(sk) - 1, 0))
        hit = (ka >= 0) & (kb >= 0) & (len(sk) > 0)
        hit &= sk[at] == want if len(sk) else hit
        return np.where(hit, self._sorted[at] if len(sk) else -1, -1)

    def __getitem__(self, k: tuple[str, str]) -> float:
        i = int(self._index([k])[0])
        if i < 0:
            raise KeyError(k)
        return float(self.perf[i])

    def get_many(self, keys: list[tuple[str, str]]) -> np.ndarray:
        """perf of many links at once (NaN where not measured)."""
        i = self._index(keys)
        return np.where(i >= 0, self.perf[np.maximum(i, 0)] if len(self.perf) else np.nan,
                        np.nan).astype(float)

    def name(self, i: int) -> tuple[str, str]:
        return str(self.names[self.a[i]]), str(self.names[self.b[i]])

    def worst(self) -> tuple[tuple[str, str], float] | None:
        if not len(self.perf):
            return None
        i = int(np.nanargmin(self.perf)) if np.isfinite(self.perf).any() else 0
        return self.name(i), float(self.perf[i])


@dataclass
class Verdict:
    """What detect() found for one (test, size)."""

    metric: str
    higher_is_better: bool
    ref: float
    noise: float
    floor: float
    tolerance: float
    z: float
    nodes: dict[str, float] = field(default_factory=dict)        # node -> perf of score
    links: Mapping[tuple[str, str], float] = field(default_factory=dict)  # link -> perf
    suspect_nodes: list[str] = field(default_factory=list)
    suspect_links: list[tuple[str, str]] = field(default_factory=list)
    node_links: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    failed: list[tuple[str, str]] = field(default_factory=list)  # measured with an error
    expected_links: int = 0
    # confirm(): "node N" / "link A~B" -> first, confirming perf, measurements, confirmed
    confirmation: dict[str, dict] = field(default_factory=dict)
    # link_values() of the links judged (the matrix is made from it, not computed again)
    link_values: pd.DataFrame | None = field(default=None, repr=False, compare=False)

    @property
    def confirmed(self) -> list[str]:
        return [k for k, c in self.confirmation.items() if c["confirmed"]]

    @property
    def outliers(self) -> int:
        return len(self.suspect_nodes) + len(self.suspect_links)

    @property
    def worst_link_perf(self) -> float:
        if isinstance(self.links, LinkPerf):
            w = self.links.worst()
            return w[1] if w else math.nan
        return min(self.links.values()) if self.links else math.nan


def _perf(v: np.ndarray | float, ref: float, higher: bool) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = v / ref if higher else ref / v
    return np.where((v > 0) & (ref > 0), p, np.nan)


def _node_medians(a: np.ndarray, b: np.ndarray, vals: np.ndarray, n: int) -> np.ndarray:
    """The median of each node's link values (a link counts for both its ends; NaN for a
    node without one): the links ordered by each end with a stable sort of 16-bit codes
    (numpy's radix sort) and one np.median per node, instead of a group-by over twice the
    links (at 8,192 nodes 67 million values: gigabytes of hash table and sort keys)."""
    small = np.int16 if n < 2**15 else np.int32
    by_a = np.argsort(a.astype(small, copy=False), kind="stable")
    by_b = np.argsort(b.astype(small, copy=False), kind="stable")
    at_a = np.concatenate([[0], np.cumsum(np.bincount(a, minlength=n))])
    at_b = np.concatenate([[0], np.cumsum(np.bincount(b, minlength=n))])
    out = np.full(n, np.nan)
    for x in range(n):
        mine = np.concatenate([vals[by_a[at_a[x]:at_a[x + 1]]],
                               vals[by_b[at_b[x]:at_b[x + 1]]]])
        if len(mine):
            out[x] = np.median(mine)
    return out


def _median_in_place(x: np.ndarray) -> float:
    """np.median(x) of values without NaN (the same number: the middle one, or the mean of
    the middle two), by partitioning x itself instead of a copy of it."""
    k = len(x) // 2
    if len(x) % 2:
        x.partition(k)
        return float(x[k])
    x.partition([k - 1, k])
    return float(np.mean(x[k - 1:k + 1]))


def _link_arrays(lk: pd.DataFrame) -> tuple:
    """(link_values(lk), names, its node codes a and b, which measured ok, and the codes
    and values of those): int16 codes (int32 beyond 32,767 nodes), views of link_values'
    columns where every link measured ok."""
    lv = link_values(lk)
    names = lv["node_a"].cat.categories
    la = lv["node_a"].cat.codes.to_numpy()
    lb = lv["node_b"].cat.codes.to_numpy()
    lval = lv["value"].to_numpy(dtype=float)
    measured = ~np.isnan(lval)
    if measured.all():  # the common case: no copies of 8 million links' arrays
        return lv, names, la, lb, measured, la, lb, lval
    return lv, names, la, lb, measured, la[measured], lb[measured], lval[measured]


def revive(lk: pd.DataFrame, v: Verdict) -> Verdict:
    """v, a verdict detect() made of the links lk (and then dropped its links to save
    memory), with its links' perf and link values again: what detect() would give, without
    judging again (the node medians, the noise)."""
    lv, names, _, _, _, a, b, vals = _link_arrays(lk)
    v.links = LinkPerf(a, b, _perf(vals, v.ref, v.higher_is_better), names)
    v.link_values = lv
    return v


def detect(lk: pd.DataFrame, tolerance: float = DEFAULT_TOLERANCE,
           z: float = DEFAULT_Z) -> Verdict:
    """Suspect nodes and links among the links of ONE (test, size, metric)."""
    if lk.empty:
        raise ValueError("detect: no links")
    metric = str(lk["metric"].iloc[0])
    higher = bool(lk["higher_is_better"].iloc[0])
    lv, names, la, lb, measured, a, b, vals = _link_arrays(lk)
    present = np.zeros(len(names), dtype=bool)
    present[la] = present[lb] = True
    nodes = names[present]
    failed = [(str(names[x]), str(names[y])) for x, y in zip(la[~measured], lb[~measured],
                                                             strict=True)]
    # each node's median link, on codes (a node's links: those where it is a or b)
    score = _node_medians(a, b, vals, len(names))[present]
    ref = float(np.nanmedian(score)) if np.isfinite(score).any() else math.nan
    v = Verdict(metric=metric, higher_is_better=higher, ref=ref, noise=math.nan,
                floor=1 - tolerance, tolerance=tolerance, z=z, failed=failed,
                expected_links=len(nodes) * (len(nodes) - 1) // 2)
    node_perf = np.full(len(names), np.nan)
    node_perf[present] = _perf(score, ref, higher)
    v.nodes = {str(n): float(p) for n, p in zip(nodes, node_perf[present], strict=True)}
    perf = _perf(vals, ref, higher)
    v.links = LinkPerf(a, b, perf, names)
    v.link_values = lv
    healthy = node_perf >= 1 - tolerance
    clean = perf[healthy[a] & healthy[b] & (perf > 0)]
    if len(clean) >= 3:
        lg = np.log(clean)
        del clean
        lg -= _median_in_place(lg)
        v.noise = MAD_TO_SIGMA * float(_median_in_place(np.abs(lg, out=lg)))
        v.floor = min(1 - tolerance, math.exp(-z * v.noise))
    bad = node_perf < v.floor
    v.suspect_nodes = [str(n) for n in names[bad]]
    slow = np.flatnonzero(perf < v.floor)
    for i in slow[np.lexsort((b[slow], a[slow]))]:  # by (node_a, node_b): code order
        x, y = str(names[a[i]]), str(names[b[i]])
        at = [n for n, c in ((x, a[i]), (y, b[i])) if bad[c]]
        if at:
            for n in at:
                v.node_links.setdefault(n, []).append((x, y))
        else:
            v.suspect_links.append((x, y))
    return v


GROUP = ["layer", "test", "variant", "msg_size_bytes", "metric"]


def analyse_links(lk: pd.DataFrame, tolerance: float = DEFAULT_TOLERANCE,
                  z: float = DEFAULT_Z) -> list[tuple[dict, pd.DataFrame, Verdict]]:
    """detect() for every (layer, test, variant, size) of a scan's links: [(key, links of
    that group (the columns detect and matrix read), verdict)], by key."""
    return [_kept(x) for x in iter_analysed(lk, tolerance, z)]


def _kept(x: tuple[dict, pd.DataFrame, Verdict]) -> tuple[dict, pd.DataFrame, Verdict]:
    """A verdict to keep in a list of them: without its link values (the matrix's, ~100 MB
    a (test, size) at 4,096 nodes; only the outputs, one group at a time, use them)."""
    x[2].link_values = None
    return x


def iter_analysed(lk: pd.DataFrame, tolerance: float = DEFAULT_TOLERANCE,
                  z: float = DEFAULT_Z, judged: dict[tuple, Verdict] | None = None
                  ) -> Iterator[tuple[dict, pd.DataFrame, Verdict]]:
    """analyse_links() one group at a time: a caller that is done with a group before the
    next holds one group's links and verdict, not all of them (at 4,096 nodes each group
    is 8.4 million links). judged: verdicts detect() already made of these links with this
    tolerance and z, by tuple(key.values()): revive()d, not judged again, and taken out of
    judged (which would otherwise hold every group's links again)."""
    for key, g in iter_groups(lk):
        old = judged.pop(tuple(key.values()), None) if judged else None
        yield key, g, (revive(g, old) if old is not None else detect(g, tolerance, z))


def iter_groups(lk: pd.DataFrame) -> Iterator[tuple[dict, pd.DataFrame]]:
    """(key, the GROUP_READS columns of that group's links) of each group, by key: views of
    lk's columns where the group's rows are one run of them (read_scan orders its links by
    group), else a copy of the group's rows."""
    for key, idx in _groups(lk):
        if isinstance(idx, slice):
            g = pd.DataFrame({c: lk[c].array[idx] for c in GROUP_READS}, copy=False)
        else:
            g = pd.DataFrame({c: lk[c].array.take(idx) for c in GROUP_READS})
        del idx
        yield key, g


GROUP_READS = ["node_a", "node_b", "value", "status", "metric", "higher_is_better"]


def _groups(lk: pd.DataFrame) -> list[tuple[dict, np.ndarray | slice]]:
    """(key, row positions) of each GROUP of lk, sorted by key: the columns' codes
    (pd.factorize: a categorical's own) combined into one small integer per row, instead
    of a group-by over tens of millions of rows that copies every column. The positions of
    a group whose rows are one run of lk's are a slice."""
    uniques, codes = [], []
    for c in GROUP:
        if isinstance(lk[c].dtype, pd.CategoricalDtype):  # its codes: no copy per row
            cd, un = lk[c].cat.codes.to_numpy(), lk[c].cat.categories
        else:
            cd, un = pd.factorize(lk[c])
            cd = cd.astype(np.min_scalar_type(-len(un) - 1))  # (intp: 8 bytes a row)
        codes.append(cd)
        uniques.append(un)
    n_keys = int(np.prod([len(un) + 1 for un in uniques], dtype=float))
    key = np.zeros(len(lk), dtype=np.int32 if n_keys < 2**31 else np.int64)
    for cd, un in zip(codes, uniques, strict=True):
        key *= len(un) + 1
        key += cd
        key += 1
    del codes, cd
    out = []
    for kv in np.flatnonzero(np.bincount(key)) if len(key) else []:
        vals, r = {}, int(kv)
        for c, un in reversed(list(zip(GROUP, uniques, strict=True))):
            r, digit = divmod(r, len(un) + 1)
            x = un[digit - 1] if digit else ""
            vals[c] = int(x) if c == "msg_size_bytes" else str(x)
        idx = np.flatnonzero(key == kv)  # row positions as int32 where they fit: every
        if idx[-1] - idx[0] + 1 == len(idx):  # group's are held at once; a run: a slice
            idx = slice(int(idx[0]), int(idx[-1]) + 1)
        elif len(key) < 2**31:
            idx = idx.astype(np.int32)
        out.append(({c: vals[c] for c in GROUP}, idx))
    return sorted(out, key=lambda x: tuple(x[0].values()))


def analyse(df: pd.DataFrame, tolerance: float = DEFAULT_TOLERANCE,
            z: float = DEFAULT_Z) -> list[tuple[dict, pd.DataFrame, Verdict]]:
    """detect() for every (layer, test, variant, size) of a scan: [(key, links, verdict)]."""
    return analyse_links(links(df), tolerance, z)


CONFIRM_PEERS = 3  # healthy peers a suspect node is re-measured against


def confirm_pairs(verdicts: list[Verdict]) -> list[tuple[str, str]]:
    """The node pairs that re-measure the suspects of one test's verdicts (every size):
    each suspect link, and each suspect node against CONFIRM_PEERS healthy nodes (the
    first by name whose perf is within tolerance in every size)."""
    out: list[tuple[str, str]] = []
    nodes: set[str] = set()
    healthy: set[str] | None = None
    for v in verdicts:
        out += list(v.suspect_links)
        nodes |= set(v.suspect_nodes)
        ok = {n for n, p in v.nodes.items() if p >= 1 - v.tolerance}
        healthy = ok if healthy is None else healthy & ok
    peers = sorted((healthy or set()) - nodes - {x for ab in out for x in ab})
    for i, n in enumerate(sorted(nodes)):
        for j in range(CONFIRM_PEERS):
            if peers:
                p = peers[(i * CONFIRM_PEERS + j) % len(peers)]
                out.append((min(n, p), max(n, p)))
    return list(dict.fromkeys(out))


def confirm(v: Verdict, lk: pd.DataFrame) -> None:
    """Judge v's suspects by the confirmation rounds' links lk (this test and size): a
    suspect link is confirmed when the median of its confirming values is also below the
    floor (perf against the scan's reference), a suspect node when the median perf of its
    re-measured links is. Both values are kept in v.confirmation."""
    if lk.empty:
        return
    lv = link_values(lk)
    lv = lv[lv["value"].notna()]
    perf = pd.Series(_perf(lv["value"].to_numpy(), v.ref, v.higher_is_better),
                     index=pd.MultiIndex.from_arrays([lv["node_a"], lv["node_b"]]))
    counts = lk[lk["status"] == "ok"].groupby(["node_a", "node_b"], observed=True).size()
    for a, b in v.suspect_links:
        if (a, b) in perf.index:
            p = float(perf[(a, b)])
            v.confirmation[f"{a}~{b}"] = {"first": round(float(v.links[(a, b)]), 6),
                                          "confirming": round(p, 6),
                                          "measurements": int(counts.get((a, b), 0)),
                                          "confirmed": bool(p < v.floor)}
    for n in v.suspect_nodes:
        mine = [(k, float(p)) for k, p in perf.items() if n in k]
        if mine:
            p = float(np.median([x for _, x in mine]))
            v.confirmation[f"node {n}"] = {
                "first": round(v.nodes[n], 6), "confirming": round(p, 6),
                "measurements": int(sum(counts.get(k, 0) for k, _ in mine)),
                "peers": sorted(x for k, _ in mine for x in k if x != n),
                "confirmed": bool(p < v.floor)}


def judge_scan(run: Path | str, tolerance: float = DEFAULT_TOLERANCE, z: float = DEFAULT_Z,
               lk: pd.DataFrame | None = None) -> list[tuple[dict, pd.DataFrame, Verdict]]:
    """analyse_links() of a scan run's links (lk, or read_scan(run)), each verdict's
    suspects judged by the run's confirmation rounds (raw/confirm-*.csv, if any: confirm())."""
    return [_kept(x) for x in iter_judged(run, tolerance, z, lk)]


def iter_judged(run: Path | str, tolerance: float = DEFAULT_TOLERANCE, z: float = DEFAULT_Z,
                lk: pd.DataFrame | None = None, judged: dict[tuple, Verdict] | None = None
                ) -> Iterator[tuple[dict, pd.DataFrame, Verdict]]:
    """judge_scan() one group at a time (iter_analysed(), judged as there)."""
    if lk is None:
        lk = read_scan(run)
    run_dir = Path(run) if Path(run).is_dir() else Path(run).parent
    confs = [read_links(c) for c in sorted((run_dir / "raw").glob("confirm-*.csv"))]
    confs = [c for c in confs if len(c)]
    clk = pd.concat(confs, ignore_index=True) if confs else None
    for key, g, v in iter_analysed(lk, tolerance, z, judged):
        if clk is not None:
            sel = clk[(clk["test"].astype(str) == key["test"])
                      & (clk["variant"].astype(str) == key["variant"])
                      & (clk["msg_size_bytes"] == key["msg_size_bytes"])]
            confirm(v, sel)
        yield key, g, v
