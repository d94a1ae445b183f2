"""The fabric scan's tournament schedule (pairbench.schedule): for K = 2..16 every node
pair exactly once, no node twice in a round, K-1 rounds (K even) or K rounds with one
bye each (K odd), and sides balanced."""

from __future__ import annotations

import itertools

import pytest

from pairbench.errors import UsageError
from pairbench.runner.schedule import round_pattern, tournament


@pytest.mark.parametrize("k", range(2, 17))
def test_every_pair_once_no_node_twice_in_a_round(k: int) -> None:
    nodes = [f"n{i}" for i in range(k)]
    rounds = tournament(nodes)
    assert len(rounds) == (k - 1 if k % 2 == 0 else k)
    seen = [frozenset(p) for rnd in rounds for p in rnd]
    assert sorted(map(sorted, seen)) == sorted(map(sorted, itertools.combinations(nodes, 2)))
    assert len(seen) == len(set(seen)) == k * (k - 1) // 2
    for rnd in rounds:
        used = [n for p in rnd for n in p]
        assert len(used) == len(set(used)), rnd
        assert len(rnd) == k // 2
        idle = set(nodes) - set(used)
        assert len(idle) == k % 2  # odd K: exactly one bye per round
    if k % 2:
        byes = [next(iter(set(nodes) - {n for p in rnd for n in p})) for rnd in rounds]
        assert sorted(byes) == sorted(nodes)  # every node sits out exactly once
    # sides: every node measures (is A) in about half of its K-1 pairs
    a_count = {n: sum(p[0] == n for rnd in rounds for p in rnd) for n in nodes}
    assert all(abs(2 * c - (k - 1)) <= 1 for c in a_count.values()), a_count


def test_bad_node_lists() -> None:
    with pytest.raises(UsageError, match="at least 2 nodes"):
        tournament(["a"])
    with pytest.raises(UsageError, match="listed twice: a"):
        tournament(["a", "b", "a"])


def test_round_pattern_for_pairbench_mpi() -> None:
    nodes = ["a", "b", "c", "d"]
    index = {n: i for i, n in enumerate(nodes)}
    pats = [round_pattern(r, index) for r in tournament(nodes)]
    assert all(p.startswith("nodes:") for p in pats)
    assert len(pats) == 3
    assert pats[0] in ("nodes:3-0,1-2", "nodes:0-3,1-2")
