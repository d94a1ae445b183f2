"""The round-robin tournament of a fabric scan: a pure function of the node list.

Every unordered node pair meets exactly once; within a round no node appears twice, so
a round is a set of disjoint node pairs that can run at the same time and load the
fabric evenly. Circle method (Berge): fix the first node, rotate the others one place per
round; round r pairs position i with position M-1-i. K even: K-1 rounds of K/2 pairs.
K odd: a placeholder makes M = K+1, the node paired with it sits the round out (a bye):
K rounds of (K-1)/2 pairs. The first node of each pair is side A (it measures and, in
one-way bandwidth tests, sends), chosen by a_first so every node is A in half of its
pairs (within one).

pairbench-mpi computes the same tournament itself (core/pb_scan.c, --pattern scan): the
driver passes only `scan:FIRST-LAST[,skip=...]` (scan_pattern), never the rounds' text.
round_links(k, r) is the C code's computation in Python, by node index (the simulator and
the resume logic use it; tests check it against tournament()).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pairbench.errors import UsageError

Round = list[tuple[str, str]]


def check_nodes(nodes: Sequence[str]) -> None:
    """A scan's nodes: at least 2, none listed twice (O(K); the tournament is O(K²))."""
    if len(nodes) < 2:
        raise UsageError(f"a fabric scan needs at least 2 nodes, got {len(nodes)}")
    dup = sorted(n for n, c in Counter(nodes).items() if c > 1)
    if dup:
        raise UsageError(f"node(s) listed twice: {', '.join(dup)}")


def tournament(nodes: Sequence[str]) -> list[Round]:
    """The rounds of node pairs (A, B) for `nodes` (K >= 2 distinct names)."""
    check_nodes(nodes)
    names = list(nodes)
    slots: list[str | None] = [*names, None] if len(names) % 2 else list(names)
    m, k = len(slots), len(names)
    pos = {n: i for i, n in enumerate(names)}
    rounds: list[Round] = []
    for r in range(m - 1):
        order = [slots[0], *rotate(slots[1:], r)]
        pairs: Round = []
        for i in range(m // 2):
            a, b = order[i], order[m - 1 - i]
            if a is None or b is None:
                continue  # the bye
            pairs.append((a, b) if a_first(pos[a], pos[b], k) else (b, a))
        rounds.append(pairs)
    return rounds


def a_first(ia: int, ib: int, k: int) -> bool:
    """Side A of a node pair: a -> b when b is less than half way round the circle of K
    nodes from a (d = (ib - ia) mod K, 2d < K; 2d = K: the lower index). Every node is A
    in (K-1)/2 pairs (K odd) or K/2 - 1 or K/2 pairs (K even)."""
    d = (ib - ia) % k
    return 2 * d < k or (2 * d == k and ia < ib)


def rotate(items: list, k: int) -> list:
    """items rotated right by k places."""
    if not items:
        return []
    k %= len(items)
    return items[-k:] + items[:-k] if k else list(items)


def round_pattern(rnd: Round, index: dict[str, int]) -> str:
    """One round as pairbench-mpi's pattern nodes:A-B,C-D (node numbers from 0)."""
    return "nodes:" + ",".join(f"{index[a]}-{index[b]}" for a, b in rnd)


def total_rounds(k: int) -> int:
    """Rounds of the tournament over k nodes: k-1 (k even), k (k odd: one bye each)."""
    return k if k % 2 else k - 1


def round_links(k: int, r: int, skip: Sequence[int] = ()) -> list[tuple[int, int]]:
    """Round r (1-based) of the tournament over positions 0..k-1 as (A, B) positions, in
    the tournament's order, without the pairs of the positions in skip (as pairbench-mpi
    --pattern scan:r,skip=...)."""
    m = k + k % 2
    gone = set(skip)
    out = []
    for i in range(m // 2):
        j = m - 1 - i
        x = 1 + (i - 1 - (r - 1)) % (m - 1) if i else 0
        y = 1 + (j - 1 - (r - 1)) % (m - 1)
        if x >= k or y >= k or x in gone or y in gone:
            continue
        out.append((x, y) if a_first(x, y, k) else (y, x))
    return out


def scan_pattern(first: int, last: int, k: int, skip: Sequence[int] = ()) -> str:
    """pairbench-mpi's --pattern for rounds first..last of the scan over k positions, the
    positions in skip not in the job (their nodes failed): at most a few dozen
    characters at any k."""
    if not 1 <= first <= last <= total_rounds(k):
        raise UsageError(f"rounds {first}-{last}: a scan of {k} nodes has rounds "
                         f"1..{total_rounds(k)}")
    text = "scan" if (first, last) == (1, total_rounds(k)) else f"scan:{first}-{last}"
    return text + (",skip=" + ",".join(map(str, sorted(skip))) if skip else "")
