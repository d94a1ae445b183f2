"""analysis/coverplan.py: a few rounds of the tournament crossing every cable N times
(--plan cover[:N]), and localisation from only their node pairs: at K = 1,024 (32 x 32,
D-mod-K) a handful of rounds name a bad leaf-spine cable, spine port and node cable."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from conftest import HERE
from pairbench.analysis.coverplan import parse_plan, plan_cover
from pairbench.analysis.localise import Localiser
from pairbench.analysis.routes import Routing
from pairbench.errors import UsageError
from pairbench.io import fabrictopo
from pairbench.runner.schedule import round_links, total_rounds

sys.path.insert(0, str(HERE.parent / "sim"))
from fattree import write_fat_tree


@pytest.fixture(scope="module")
def k1024(tmp_path_factory: pytest.TempPathFactory) -> tuple[Routing, list[str]]:
    tmp = tmp_path_factory.mktemp("cover")
    hosts = write_fat_tree(tmp / "t.csv", 32, 32, 32)
    return Routing(fabrictopo.load(tmp / "t.csv"), "dmodk"), hosts


def plan_pairs(r: Routing, hosts: list[str], rounds: list[int]) -> tuple[np.ndarray, np.ndarray]:
    pa, pb = [], []
    for rnd in rounds:
        for x, y in round_links(len(hosts), rnd, []):
            pa.append(r.index[hosts[x]])
            pb.append(r.index[hosts[y]])
    return np.array(pa), np.array(pb)


def test_cover_crosses_every_cable_n_times_in_a_few_rounds(
        k1024: tuple[Routing, list[str]]) -> None:
    r, hosts = k1024
    p = plan_cover(r, hosts, 3)
    assert p.full_rounds == total_rounds(1024) == 1023
    assert 3 <= len(p.rounds) <= 12 and p.uncovered == []
    assert p.pairs == 512 * len(p.rounds) and p.full_pairs == 523_776
    a, b = plan_pairs(r, hosts, p.rounds)
    through = r.incidence(a, b).counts(np.ones(len(a)))
    assert through[:len(r.topo.cables)].min() >= 3  # every cable, counted independently
    assert f"{len(p.rounds)} of the full scan's 1023 rounds" in p.line()


def test_the_cover_plans_pairs_name_the_three_faults_and_nothing_else(
        k1024: tuple[Routing, list[str]]) -> None:
    r, hosts = k1024
    p = plan_cover(r, hosts, 3)
    a, b = plan_pairs(r, hosts, p.rounds)
    perf = 1 + 0.05 * (2 * np.random.default_rng(2).random(len(a)) - 1)
    inc = r.incidence(a, b)
    for fault in ("leaf3:35 <-> spine3:3", "spine7:9", "n0100"):
        perf[inc.column(r.component(fault))] /= 2
    loc = Localiser(r).localise([r.node_list[i] for i in a], [r.node_list[i] for i in b],
                                perf, 0.9)
    assert sorted(f.name for f in loc.found) == sorted(
        ["leaf3:35 <-> spine3:3", "leaf9:39 <-> spine7:9", "n0100 <-> leaf4:5"])
    assert loc.unexplained == [] and all(f.slow == f.through >= 3 for f in loc.found)


def test_parse_plan() -> None:
    assert parse_plan(None) is None and parse_plan("full") is None
    assert parse_plan("cover") == 3 and parse_plan("cover:5") == 5
    for bad in ("cover:0", "cover:x", "cover:101", "random"):
        with pytest.raises(UsageError, match="expected full, cover or cover:N"):
            parse_plan(bad)
