"""A scan that measures only what localises (`--plan cover[:N]`, docs/fabric.md): a few
rounds of the full scan's tournament, chosen so that every cable — each node's and each
between switches — is crossed by at least N measured node pairs, instead of all K-1
rounds.

Why rounds of the tournament: each is a perfect matching of the nodes (every node busy,
one node pair each, the fabric loaded evenly, as in the full scan), the executables
already run any range of them (`--pattern scan:F-L`), and the rows are a scan's rows
(`scan:R`), read and judged as they are.

The choice is greedy multi-cover (Chvátal): repeatedly the round that removes the most
remaining deficit, sum over cables of min(crossings still needed, crossings by the round),
ties to the lower round number; it ends when every cable has N crossings or no round adds
one (a cable no node pair crosses: reported). Greedy is within a factor ln(max gain) of the
fewest rounds; one round already crosses every node cable once, and under D-mod-K a round
whose pairs join different leaves crosses most leaf-spine cables, so N to a few times N
rounds suffice: O(N x K) node pairs instead of K(K-1)/2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pairbench.analysis.routes import Routing
from pairbench.errors import UsageError
from pairbench.runner.schedule import round_links, total_rounds

DEFAULT_N = 3


@dataclass
class CoverPlan:
    n: int                      # crossings asked for, per cable
    rounds: list[int]           # the tournament's rounds to run (1-based, sorted)
    full_rounds: int            # the full scan's
    pairs: int                  # node pairs measured
    full_pairs: int
    min_crossings: int          # over the cables the plan's pairs may cross
    uncovered: list[str]        # cables crossed fewer than n times (none can do better)

    def line(self) -> str:
        short = (f"; {len(self.uncovered)} cable(s) crossed fewer times (no round adds one:"
                 f" {', '.join(self.uncovered[:3])})" if self.uncovered else "")
        return (f"cover plan: {len(self.rounds)} of the full scan's {self.full_rounds} "
                f"rounds ({self.pairs:,} of {self.full_pairs:,} node pairs), every cable "
                f"crossed at least {min(self.min_crossings, self.n)} times{short}")


def parse_plan(text: str | None) -> int | None:
    """--plan: None (full scan), 'full', 'cover' or 'cover:N' (N in 1..100) -> N."""
    if text is None or text == "full":
        return None
    head, _, n = text.partition(":")
    if head != "cover" or (n and not n.isdigit()) or not 1 <= int(n or DEFAULT_N) <= 100:
        raise UsageError(f"--plan {text}: expected full, cover or cover:N (N in 1..100)")
    return int(n or DEFAULT_N)


def plan_cover(routing: Routing, hosts: list[str], n: int = DEFAULT_N) -> CoverPlan:
    """The rounds of the tournament over hosts (in the scan's order) that cross every
    cable at least n times (see the module's docstring)."""
    k = len(hosts)
    missing = [h for h in hosts if h not in routing.index]
    if missing:
        raise UsageError(f"--plan cover: {len(missing)} host(s) not in "
                         f"{routing.topo.path} (e.g. {missing[0]}): a cover is planned on "
                         "the cables")
    rounds = total_rounds(k)
    pos = np.array([routing.index[h] for h in hosts])
    ra, rb, rr = [], [], []
    for r in range(1, rounds + 1):
        for a, b in round_links(k, r, []):
            ra.append(pos[a])
            rb.append(pos[b])
            rr.append(r - 1)
    a, b, rnd = np.array(ra), np.array(rb), np.array(rr)
    inc = routing.incidence(a, b)
    ncab = len(routing.topo.cables)
    from scipy.sparse import csr_matrix

    # crossings of each cable by each round's node pairs: its node cables, and its class's
    # cables (dmodk: the pair's own; ecmp: every cable its leaves' shortest paths may take)
    ones = np.ones(len(a), dtype=np.int32)
    sel = csr_matrix((ones, (rnd, np.arange(len(a)))), shape=(rounds, len(a)))
    by_cls = csr_matrix((ones, (rnd, inc.cls)), shape=(rounds, inc.cls_possible.shape[0]))
    cross = (sel @ inc.node.astype(np.int32)
             + by_cls @ inc.cls_possible.astype(np.int32))[:, :ncab].toarray()
    need = np.full(ncab, n, dtype=np.int64)
    chosen: list[int] = []
    left = np.ones(rounds, dtype=bool)
    while need.any() and left.any():
        gain = np.minimum(cross, need).sum(axis=1)
        gain[~left] = -1
        best = int(np.argmax(gain))
        if gain[best] <= 0:
            break
        chosen.append(best)
        left[best] = False
        need = np.maximum(need - cross[best], 0)
    got = cross[chosen].sum(axis=0) if chosen else np.zeros(ncab, dtype=np.int64)
    short = [routing.names[c] for c in np.flatnonzero(got < n)]
    reach = cross.sum(axis=0) > 0
    return CoverPlan(n=n, rounds=sorted(r + 1 for r in chosen), full_rounds=rounds,
                     pairs=int(np.isin(rnd, chosen).sum()), full_pairs=len(a),
                     min_crossings=int(got[reach].min()) if reach.any() else 0,
                     uncovered=short)

