"""Node pairs of a fabric scan and the outliers among them (pure functions on data frames).

links(df): one row per measured node pair (link) and point: the link's value is the
aggregate over the pairs between its two nodes — the scope=node aggregate of the
measuring node (pairbench-mpi --pattern: in a scan round every node measures towards
one peer node only), or the run's own aggregate row when one invocation measured the
node pair (verbs: one pairbench-verbs per node pair). The metric is bw_gbit_s where the
test measures bandwidth, else lat_us_p50.

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

LINK_COLUMNS = ["layer", "test", "variant", "msg_size_bytes", "metric", "higher_is_better",
                "node_a", "node_b", "host", "peer", "value", "status", "error"]
DEFAULT_TOLERANCE = 0.10
DEFAULT_Z = 3.5
MAD_TO_SIGMA = 1.4826


def _peer_host(peer: str) -> str:
    """The peer column's host: pairbench-mpi without --pattern writes host:rankN."""
    return peer.split(":rank")[0]


def links(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (point, measuring host): the node pair it measured and its value."""
    d = df.copy()
    for col in ("scope", "pattern", "variant", "host", "peer", "error", "status"):
        d[col] = d[col].fillna("").astype(str) if col in d else ""
    key = ["layer", "test", "variant", "pattern", "msg_size_bytes", "pairs"]
    key += [c for c in ("run_id", "repetition") if c in d]
    out = []
    pair_rows = d[d["pair_id"] != "all"]
    for k, g in pair_rows.groupby(key, sort=False, dropna=False):
        kd = dict(zip(key, k, strict=True))
        point = d
        for c, v in kd.items():
            point = point[point[c] == v]
        aggs = point[point["pair_id"] == "all"]
        for host, hg in g.groupby("host", sort=False):
            peers = sorted({_peer_host(p) for p in hg["peer"] if p})
            if len(peers) != 1 or peers[0] == host:
                continue  # not a scan layout (one measuring node towards one other node)
            agg = aggs[(aggs["scope"] == "node") & (aggs["host"] == host)]
            if agg.empty:
                agg = aggs[aggs["scope"].isin(["all", ""]) & (aggs["host"] == host)]
            if agg.empty:
                continue
            a = agg.iloc[0]
            bw = pd.notna(a.get("bw_gbit_s")) and a.get("bw_gbit_s") != ""
            has_bw = bw or hg["bw_gbit_s"].notna().any()
            metric = "bw_gbit_s" if has_bw else "lat_us_p50"
            value = pd.to_numeric(pd.Series([a.get(metric)]), errors="coerce").iloc[0]
            na, nb = sorted((host, peers[0]))
            out.append({"layer": kd["layer"], "test": kd["test"], "variant": kd["variant"],
                        "msg_size_bytes": int(kd["msg_size_bytes"]), "metric": metric,
                        "higher_is_better": metric == "bw_gbit_s", "node_a": na,
                        "node_b": nb, "host": host, "peer": peers[0],
                        "value": float(value) if a["status"] == "ok" else math.nan,
                        "status": a["status"], "error": a["error"]})
    return pd.DataFrame(out, columns=LINK_COLUMNS)


def matrix(lk: pd.DataFrame) -> pd.DataFrame:
    """Node x node matrix of one metric's links (symmetric; median over repeats)."""
    nodes = sorted(set(lk["node_a"]) | set(lk["node_b"]))
    m = pd.DataFrame(math.nan, index=nodes, columns=nodes)
    for (a, b), g in lk.groupby(["node_a", "node_b"]):
        v = g["value"].median()
        m.loc[a, b] = m.loc[b, a] = v
    return m


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
    links: dict[tuple[str, str], float] = field(default_factory=dict)  # link -> perf
    suspect_nodes: list[str] = field(default_factory=list)
    suspect_links: list[tuple[str, str]] = field(default_factory=list)
    node_links: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    failed: list[tuple[str, str]] = field(default_factory=list)  # measured with an error
    expected_links: int = 0

    @property
    def outliers(self) -> int:
        return len(self.suspect_nodes) + len(self.suspect_links)

    @property
    def worst_link_perf(self) -> float:
        return min(self.links.values()) if self.links else math.nan


def _perf(v: float, ref: float, higher: bool) -> float:
    if not (v > 0 and ref > 0):
        return math.nan
    return v / ref if higher else ref / v


def _median(xs: list[float]) -> float:
    s = sorted(x for x in xs if not math.isnan(x))
    if not s:
        return math.nan
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def detect(lk: pd.DataFrame, tolerance: float = DEFAULT_TOLERANCE,
           z: float = DEFAULT_Z) -> Verdict:
    """Suspect nodes and links among the links of ONE (test, size, metric)."""
    if lk.empty:
        raise ValueError("detect: no links")
    metric = str(lk["metric"].iloc[0])
    higher = bool(lk["higher_is_better"].iloc[0])
    ok = lk[lk["status"] == "ok"].dropna(subset=["value"])
    vals = {(a, b): float(g["value"].median()) for (a, b), g in ok.groupby(["node_a", "node_b"])}
    nodes = sorted(set(lk["node_a"]) | set(lk["node_b"]))
    failed = sorted({(a, b) for a, b in zip(lk["node_a"], lk["node_b"], strict=True)}
                    - set(vals))
    score = {n: _median([v for (a, b), v in vals.items() if n in (a, b)]) for n in nodes}
    ref = _median(list(score.values()))
    v = Verdict(metric=metric, higher_is_better=higher, ref=ref, noise=math.nan,
                floor=1 - tolerance, tolerance=tolerance, z=z, failed=failed,
                expected_links=len(nodes) * (len(nodes) - 1) // 2)
    v.nodes = {n: _perf(s, ref, higher) for n, s in score.items()}
    v.links = {k: _perf(x, ref, higher) for k, x in vals.items()}
    healthy = {n for n, p in v.nodes.items() if p >= 1 - tolerance}
    clean = [math.log(p) for (a, b), p in v.links.items()
             if a in healthy and b in healthy and p > 0]
    if len(clean) >= 3:
        mid = _median(clean)
        v.noise = MAD_TO_SIGMA * _median([abs(x - mid) for x in clean])
        v.floor = min(1 - tolerance, math.exp(-z * v.noise))
    v.suspect_nodes = sorted(n for n, p in v.nodes.items() if p < v.floor)
    bad = set(v.suspect_nodes)
    for (a, b), p in sorted(v.links.items()):
        if not p < v.floor:
            continue
        ends = [n for n in (a, b) if n in bad]
        if ends:
            for n in ends:
                v.node_links.setdefault(n, []).append((a, b))
        else:
            v.suspect_links.append((a, b))
    return v


def analyse(df: pd.DataFrame, tolerance: float = DEFAULT_TOLERANCE,
            z: float = DEFAULT_Z) -> list[tuple[dict, pd.DataFrame, Verdict]]:
    """detect() for every (layer, test, variant, size) of a scan: [(key, links, verdict)]."""
    lk = links(df)
    out = []
    for k, g in lk.groupby(["layer", "test", "variant", "msg_size_bytes", "metric"],
                           sort=True):
        key = dict(zip(["layer", "test", "variant", "msg_size_bytes", "metric"], k,
                       strict=True))
        out.append((key, g, detect(g, tolerance, z)))
    return out
