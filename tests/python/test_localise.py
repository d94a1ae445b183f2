"""analysis/localise.py: the smallest set of components that explains the slow node pairs
and no healthy one. Node pairs' perf is made from the route model itself (a planted
component divides the perf of every pair through it) with +-5 % noise; the end-to-end
path through the driver and the simulator: test_fabric_localise.py."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import HERE
from pairbench.analysis.localise import Localiser, cover, greedy_cover
from pairbench.analysis.routes import Routing
from pairbench.io import fabrictopo

sys.path.insert(0, str(HERE.parent / "sim"))
from fattree import write_fat_tree


def fabric(tmp: Path, leaves: int, per_leaf: int, spines: int, model: str) -> Localiser:
    write_fat_tree(tmp / "t.csv", leaves, per_leaf, spines)
    return Localiser(Routing(fabrictopo.load(tmp / "t.csv"), model))


def scan(loc: Localiser, faults: dict[str, float], noise: float = 0.05,
         seed: int = 1) -> tuple[list[str], list[str], np.ndarray]:
    """Every node pair's perf: 1 +- noise, divided by each planted component's factor."""
    r = loc.r
    k = len(r.node_list)
    a, b = np.triu_indices(k, 1)
    perf = 1 + noise * (2 * np.random.default_rng(seed).random(len(a)) - 1)
    inc = loc.incidence(a, b)
    for what, f in faults.items():
        perf[inc.column(r.component(what))] /= f
    return [r.node_list[i] for i in a], [r.node_list[i] for i in b], perf


@pytest.fixture(scope="module")
def k1024(tmp_path_factory: pytest.TempPathFactory) -> Localiser:
    """32 leaves of 32 nodes, 32 spines: 1,024 nodes, 523,776 node pairs, D-mod-K."""
    return fabric(tmp_path_factory.mktemp("k1024"), 32, 32, 32, "dmodk")


@pytest.mark.parametrize("fault,named", [
    ("leaf3:35 <-> spine3:3", "leaf3:35 <-> spine3:3"),   # a bad leaf-spine cable
    ("spine7:9", "leaf9:39 <-> spine7:9"),                # a bad spine port: its cable
    ("n0100", "n0100 <-> leaf4:5"),                       # a bad node cable
])
def test_one_planted_component_is_named_and_nothing_else_at_k1024(
        k1024: Localiser, fault: str, named: str) -> None:
    a, b, perf = scan(k1024, {fault: 2.0})
    loc = k1024.localise(a, b, perf, floor=0.9)
    assert [f.name for f in loc.found] == [named]
    f = loc.found[0]
    assert f.slow == f.through == loc.slow and f.slow_elsewhere == 0
    assert f.alternatives == [] and loc.unexplained == [] and loc.solver == "milp"
    assert f.median_perf == pytest.approx(0.5, abs=0.03)
    assert f"{named}: {f.slow:,} of {f.through:,} node pairs through it slow, 0 of " \
        f"{len(a) - f.through:,} other node pairs" in loc.line()


def test_two_faults_and_a_whole_switch(k1024: Localiser) -> None:
    a, b, perf = scan(k1024, {"leaf1:40 <-> spine8:1": 3.0, "switch spine20": 2.0})
    loc = k1024.localise(a, b, perf, floor=0.9)
    # the switch, not its 32 cables (one component explains what 32 would)
    assert sorted(f.name for f in loc.found) == ["leaf1:40 <-> spine8:1", "switch spine20"]
    assert loc.unexplained == []


def test_healthy_fabric_names_nothing(k1024: Localiser) -> None:
    a, b, perf = scan(k1024, {})
    loc = k1024.localise(a, b, perf, floor=0.9)
    assert loc.found == [] and loc.slow == 0
    assert "no slow node pair" in loc.line()


def test_a_node_pairs_own_slowness_is_unexplained_not_blamed_on_a_cable(
        tmp_path: Path) -> None:
    loc = fabric(tmp_path, 4, 4, 4, "dmodk")
    a, b, perf = scan(loc, {})
    i = next(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if (x, y) == ("n0002", "n0009"))
    perf[i] = 0.4
    got = loc.localise(a, b, perf, floor=0.9)
    assert got.found == [] and got.unexplained == [("n0002", "n0009")]
    perf[i] = np.nan  # a failed node pair counts as slow
    got = loc.localise(a, b, perf, floor=0.9)
    assert got.failed == 1 and got.unexplained == [("n0002", "n0009")]


def test_ecmp_names_one_uplink_and_lists_the_others_it_cannot_tell_apart(
        tmp_path: Path) -> None:
    """Under ECMP a pair may take any spine: a bad uplink of leaf2 slows some of leaf2's
    remote pairs, and each of leaf2's uplinks (or any spine) explains them equally."""
    loc = fabric(tmp_path, 4, 4, 4, "ecmp")
    a, b, perf = scan(loc, {})
    r = loc.r
    leaf2 = {n for n in r.node_list if r.topo.leaf(n) == "leaf2"}
    hashed = [i for i, (x, y) in enumerate(zip(a, b, strict=True))
              if (x in leaf2) != (y in leaf2) and i % 3 == 0]
    perf[hashed] = 0.5
    got = loc.localise(a, b, perf, floor=0.9)
    assert len(got.found) == 1
    f = got.found[0]
    ups = {f"leaf2:{4 + s} <-> spine{s}:2" for s in range(1, 5)}
    assert f.name in ups
    alts = {x["component"] for x in f.alternatives}
    assert ups - {f.name} <= alts and alts - ups <= {f"switch spine{s}" for s in range(1, 5)}
    assert "the routes cannot tell them apart" in got.line()
    # no node pair tells two uplinks apart under ECMP: none surely crosses one of them
    assert all(x["tell_apart"] == [] for x in f.alternatives if x["component"] in ups)


def test_dmodk_alternatives_come_with_the_pairs_that_tell_them_apart(tmp_path: Path) -> None:
    """A partial scan (only the pairs of leaf1's first node): a slow uplink and the spine
    behind it explain the same pairs; unmeasured pairs through the spine's other cables
    tell them apart."""
    loc = fabric(tmp_path, 4, 4, 4, "dmodk")
    a, b, perf = scan(loc, {"leaf1:6 <-> spine2:1": 2.0})
    keep = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if "n0001" in (x, y)]
    got = loc.localise([a[i] for i in keep], [b[i] for i in keep], perf[keep], floor=0.9)
    names = {f.name for f in got.found} | {x["component"] for f in got.found
                                          for x in f.alternatives}
    assert {"leaf1:6 <-> spine2:1"} <= names
    for f in got.found:
        for x in f.alternatives:
            assert x["tell_apart"], x  # each with node pairs not measured yet
            for pa, pb in x["tell_apart"]:
                assert "n0001" not in (pa, pb)


def test_cover_is_minimal_where_greedy_is_not() -> None:
    # greedy takes 0 (meets 4 sets) and then needs 1 and 2; the optimum is {1, 2}
    sets = [(0, 1), (0, 1), (0, 2), (0, 2), (1,), (2,)]
    assert greedy_cover(sets) == [0, 1, 2]
    assert cover(sets, np.zeros(3)) == ([1, 2], "milp")
