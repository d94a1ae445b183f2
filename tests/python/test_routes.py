"""analysis/routes.py: the components each node pair crosses, by the D-mod-K model of
up/down routing on a fat tree and by every shortest path (ECMP), checked by hand on the
ibnetdiscover fixture (2 spines, 2 leaves, 2 nodes each) and a 4-leaf tree."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import HERE
from pairbench.analysis.routes import Routing
from pairbench.errors import UsageError
from pairbench.io import fabrictopo

sys.path.insert(0, str(HERE.parent / "sim"))
from fattree import write_fat_tree

IBND = HERE / "data" / "fabric" / "ibnetdiscover-2level.txt"


def crossed(r: Routing, a: str, b: str, certain: bool = False) -> set[str]:
    inc = r.incidence(np.array([r.index[a]]), np.array([r.index[b]]))
    return {r.names[c] for c in inc.rows(np.array([0]), certain)[0]}


def test_dmodk_routes_by_destination_index() -> None:
    r = Routing(fabrictopo.load(IBND), "dmodk")
    assert r.node_list == ["node0001", "node0002", "node0003", "node0004"]
    # same leaf: the two node cables and the leaf
    assert crossed(r, "node0001", "node0002") == {
        "node0001 <-> leaf1:1", "node0002 <-> leaf1:2", "switch leaf1"}
    # node0001 (d=0) <-> node0004 (d=3): up to spine (3 mod 2) = spine2 going to node0004,
    # spine (0 mod 2) = spine1 coming back: both spines, four inter-switch cables
    assert crossed(r, "node0001", "node0004") == {
        "node0001 <-> leaf1:1", "node0004 <-> leaf2:2", "switch leaf1", "switch leaf2",
        "leaf1:34 <-> spine2:1", "leaf2:34 <-> spine2:2", "switch spine2",
        "leaf1:33 <-> spine1:1", "leaf2:33 <-> spine1:2", "switch spine1"}
    # node0001 (d=0) <-> node0003 (d=2): spine1 both ways
    assert crossed(r, "node0001", "node0003") == {
        "node0001 <-> leaf1:1", "node0003 <-> leaf2:1", "switch leaf1", "switch leaf2",
        "leaf1:33 <-> spine1:1", "leaf2:33 <-> spine1:2", "switch spine1"}


def test_ecmp_may_cross_every_spine_but_surely_only_its_leaves() -> None:
    r = Routing(fabrictopo.load(IBND), "ecmp")
    assert len(crossed(r, "node0001", "node0003")) == 10
    assert crossed(r, "node0001", "node0003", certain=True) == {
        "node0001 <-> leaf1:1", "node0003 <-> leaf2:1", "switch leaf1", "switch leaf2"}


def test_dmodk_spreads_destinations_evenly_over_a_leafs_uplinks(tmp_path: Path) -> None:
    write_fat_tree(tmp_path / "t.csv", leaves=4, per_leaf=4, spines=4)
    r = Routing(fabrictopo.load(tmp_path / "t.csv"), "dmodk")
    a, b = np.triu_indices(16, 1)
    inc = r.incidence(a, b)
    through = inc.counts(np.ones(len(a)))
    up = [i for i, n in enumerate(r.names) if "spine" in n and "<->" in n]
    assert len(up) == 16
    # every leaf-spine cable carries the same number of node pairs: 4 sources x 3 remote
    # destinations with d mod 4 = its spine, and back: 12 + 12 - 3 counted twice
    assert {int(through[i]) for i in up} == {21}
    assert r.component("spine2:3") == r.component("leaf3:6 <-> spine2:3") \
        == r.component("leaf3:6~spine2:3")
    assert r.names[r.component("n0005")] == "n0005 <-> leaf2:2"


def test_dmodk_refuses_a_cable_between_switches_of_one_level(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("a,b\nn1,leaf1:1\nn2,leaf2:1\nleaf1:2,leaf2:2\n")
    with pytest.raises(UsageError, match="line 4: leaf1:2 <-> leaf2:2 joins two switches of "
                       "level 1: not a fat tree"):
        Routing(fabrictopo.load(f), "dmodk").incidence(np.array([0]), np.array([1]))
    r = Routing(fabrictopo.load(f), "ecmp")  # every shortest path: one here
    assert crossed(r, "n1", "n2", certain=True) == crossed(r, "n1", "n2")


def test_lft_routes_follow_the_dumped_forwarding_tables() -> None:
    """ibroute-2level.txt sends every remote destination from leaf1 up through spine2 and
    from leaf2 through spine1 (not D-mod-K): the routes are those, hop by hop."""
    from pairbench.io import lftdump

    lft = lftdump.load(HERE / "data" / "fabric" / "ibroute-2level.txt")
    assert set(lft) == {"leaf1", "leaf2", "spine1", "spine2"}
    assert lft["leaf1"] == {"node0001": 1, "node0002": 2, "node0003": 34, "node0004": 34}
    r = Routing(fabrictopo.load(IBND), lft=lft)
    assert r.model == "lft"
    assert crossed(r, "node0001", "node0003") == {
        "node0001 <-> leaf1:1", "node0003 <-> leaf2:1", "switch leaf1", "switch leaf2",
        "leaf1:34 <-> spine2:1", "leaf2:34 <-> spine2:2", "switch spine2",  # 1 -> 3
        "leaf2:33 <-> spine1:2", "leaf1:33 <-> spine1:1", "switch spine1"}  # 3 -> 1
    assert crossed(r, "node0001", "node0002") == {
        "node0001 <-> leaf1:1", "node0002 <-> leaf1:2", "switch leaf1"}


@pytest.mark.parametrize("edit,msg", [
    (("0x0007 034 : (Channel Adapter", "0x0007 035 : (Channel Adapter"),
     "leaf1 sends node0003 out of port 35, which has no cable"),
    (("0x0008 034 : (Channel Adapter portguid 0x0c42a10300a1b2f0: 'node0004 mlx5_0')\n", ""),
     "switch leaf1 has no route to node0004"),
])
def test_lft_that_does_not_reach_a_node_is_a_usage_error(tmp_path: Path, edit: tuple,
                                                         msg: str) -> None:
    from pairbench.io import lftdump

    text = (HERE / "data" / "fabric" / "ibroute-2level.txt").read_text()
    head, sep, tail = text.partition("(MF0;leaf1:MQM8700/U1):\n")  # leaf1's block only
    f = tmp_path / "lft.txt"
    f.write_text(head + sep + tail.replace(*edit, 1))
    r = Routing(fabrictopo.load(IBND), lft=lftdump.load(f))
    with pytest.raises(UsageError, match=msg):
        r.incidence(np.array([0]), np.array([3]))


def test_a_file_that_is_not_ibroute_output_names_its_line(tmp_path: Path) -> None:
    from pairbench.io import lftdump

    f = tmp_path / "lft.txt"
    f.write_text("Unicast lids [0x0-0x8] of switch Lid 3 guid 0x01 (MF0;leaf1:X):\n"
                 "0x0005 001 : (Channel Adapter portguid 0x02: 'n1 mlx5_0')\nrubbish\n")
    with pytest.raises(UsageError, match=f"{f}: line 3: neither an ibroute block header"):
        lftdump.load(f)
