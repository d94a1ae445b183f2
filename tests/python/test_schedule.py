"""The fabric scan's tournament schedule (pairbench.schedule): for K = 2..16 every node
pair exactly once, no node twice in a round, K-1 rounds (K even) or K rounds with one
bye each (K odd), and sides balanced."""

from __future__ import annotations

import itertools

import pytest

from pairbench.errors import UsageError
from pairbench.runner.schedule import (
    round_links,
    round_pattern,
    scan_pattern,
    total_rounds,
    tournament,
)


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


@pytest.mark.parametrize("k", [*range(2, 18), 33, 64])
def test_round_links_is_the_tournament_by_index(k: int) -> None:
    """The C code's computation (core/pb_scan.c, mirrored by round_links) gives the
    driver's tournament, round by round, pair by pair."""
    rounds = tournament(range(k))
    assert len(rounds) == total_rounds(k)
    for r, rnd in enumerate(rounds, 1):
        assert round_links(k, r) == list(rnd)


def test_round_links_skip_leaves_out_the_skipped_nodes_pairs() -> None:
    for r in range(1, 8):
        full = round_links(8, r)
        assert round_links(8, r, skip=(2, 5)) == [p for p in full if not {2, 5} & set(p)]


def test_scan_pattern_is_short_at_any_k() -> None:
    assert scan_pattern(1, 4095, 4096) == "scan"
    assert scan_pattern(700, 4095, 4096, skip=(17, 3)) == "scan:700-4095,skip=3,17"
    with pytest.raises(UsageError, match=r"rounds 1\.\.3"):
        scan_pattern(2, 5, 4)


def test_tournament_at_4096_nodes_is_quick_enough_to_plan() -> None:
    nodes = [f"node{i:04d}" for i in range(4096)]
    assert len(tournament(nodes)[0]) == 2048
