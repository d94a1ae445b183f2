"""pairbench fabric --topology FILE: the nodes' racks and leaves (TOML or CSV), bad maps
refused with exit 2 naming the file and the line or key, the heatmap and matrix ordered by
leaf, rack, then name, each suspect's group reported and a bad rack (every suspect in it)
said; nodes missing from the map and nodes of the map not in the scan reported; --render
makes the outputs again with another map and runs nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import HERE, assert_clean_error, cli
from pairbench.analysis import topology

SIM = HERE.parent / "sim" / "fabric_sim.py"
HOSTS = [f"n{i:03d}" for i in range(16)]


def rack_of(i: int) -> str:
    return f"r{i // 4}"


def write_csv(path: Path, hosts: list[str], extra: str = "") -> Path:
    # racks of 4 nodes, in an order that is not the names' (r3 first), leaves of 2 racks
    lines = ["node,rack,leaf"] + [f"{h},{rack_of(i)},L{i // 8}" for i, h in enumerate(hosts)]
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


def test_toml_and_csv_maps_are_the_same(tmp_path: Path) -> None:
    toml = tmp_path / "t.toml"
    toml.write_text("".join(f'[[rack]]\nname = "r{r}"\nleaf = "L{r // 2}"\nnodes = ['
                            + ", ".join(f'"{h}"' for h in HOSTS[4 * r:4 * r + 4]) + "]\n"
                            for r in (3, 0, 2, 1)))
    a, b = topology.load(toml), topology.load(write_csv(tmp_path / "t.csv", HOSTS))
    assert a.where == b.where and a.levels == b.levels == ("leaf", "rack")
    names = ["n013", "n001", "n005", "zz", "n000"]
    assert [names[i] for i in a.order(names)] == ["n000", "n001", "n005", "n013", "zz"]
    assert a.describe("n005") == "rack r1, leaf L0" and a.describe("zz") == "not in the map"
    assert a.shared(["n004", "n007"]) == "rack r1 (leaf L0)"
    assert a.shared(["n004", "n000"]) == "leaf L0" and a.shared(["n000", "n015"]) is None
    assert a.check(["n000", "zz"]) == (["zz"], [h for h in HOSTS if h != "n000"])


BAD = [
    ("bad.csv", "node,rack\nn000,r0\nn001\n", ["bad.csv", "line 3", "expected 2 cells"]),
    ("dup.csv", "node,rack\nn000,r0\n# c\nn000,r1\n", ["dup.csv", "line 4", "line 2"]),
    ("head.csv", "host,rack\nn000,r0\n", ["head.csv", "line 1", "header"]),
    ("empty.csv", "node,rack,leaf\nn000,,L0\n", ["empty.csv", "line 2", "empty rack"]),
    ("key.toml", '[[rack]]\nname = "r0"\nnodes = ["a"]\n[[rack]]\nname = "r1"\n'
     'switch = "s"\nnodes = ["b"]\n', ["key.toml", "rack[1]", "'switch'"]),
    ("dup.toml", '[[rack]]\nname = "r0"\nnodes = ["a"]\n[[rack]]\nname = "r1"\n'
     'nodes = ["b", "a"]\n', ["dup.toml", "rack[1].nodes", "rack[0] (r0)"]),
    ("leaf.toml", '[[rack]]\nname = "r0"\nleaf = "L"\nnodes = ["a"]\n[[rack]]\n'
     'name = "r1"\nnodes = ["b"]\n', ["leaf.toml", "rack[1]", "'leaf'"]),
    ("type.toml", '[[rack]]\nname = "r0"\nnodes = "a"\n', ["type.toml", "rack[0].nodes"]),
    ("syntax.toml", "[[rack]\n", ["syntax.toml", "invalid TOML"]),
]


@pytest.mark.parametrize(("name", "text", "needles"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_map_is_refused_before_anything_runs(tmp_path: Path, name: str, text: str,
                                                   needles: list[str]) -> None:
    f = tmp_path / name
    f.write_text(text)
    p = cli("fabric", "--plots", "none",
            "--launcher", "mpirun", "--launcher-cmd", str(SIM), "--binary",
            sys.executable, "--hosts", "a,b", "--results-dir", str(tmp_path / "res"),
            "--topology", str(f))
    assert_clean_error(p, *needles)
    assert not (tmp_path / "res").exists()


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A scan whose slow nodes are the four of rack r1 (a bad rack switch), with a map
    that misses n015 and lists a spare node."""
    tmp = tmp_path_factory.mktemp("topo")
    topo = write_csv(tmp / "map.csv", HOSTS[:15], "spare1,r9,L9\n")
    p = cli("fabric", "--plots", "none",
            "--launcher", "mpirun", "--launcher-cmd", str(SIM), "--binary",
            sys.executable, "--hosts", ",".join(HOSTS), "--test", "bw", "-s", "64K",
            "--results-dir", str(tmp), "--topology", str(topo), "--confirm", "0",
            env={"PB_SIM_SLOW": "n004=3,n005=3,n006=3,n007=3", "PB_SIM_NOISE": "0.02"},
            timeout=600)
    assert p.returncode == 0, p.stderr
    return Path(p.stdout.strip().splitlines()[-1]), tmp, p.stderr


def test_suspects_in_one_rack_are_said_and_the_map_checked(scan: tuple) -> None:
    run, _, err = scan
    (v,) = json.loads((run / "fabric.json").read_text())["verdicts"]
    assert v["suspect_nodes"] == ["n004", "n005", "n006", "n007"]
    assert v["suspect_groups"]["n005"] == "rack r1, leaf L0"
    assert v["suspects_share"] == "rack r1 (leaf L0)"
    assert "suspect node n004 (in rack r1, leaf L0; its" in err
    assert "all 4 suspects are in rack r1 (leaf L0)" in err
    assert "1 node(s) of the scan not in it (n015): shown last" in err
    assert "1 node(s) in it not in the scan (spare1)" in err
    meta = json.loads((run / "fabric.json").read_text())["topology"]
    assert meta["levels"] == ["leaf", "rack"] and "n015" in meta["note"]
    html = (run / "fabric.html").read_text()
    assert "<th>where</th>" in html and "all 4 suspects are" in html


def test_matrix_in_map_order_with_groups(scan: tuple) -> None:
    run, _, _ = scan
    m = pd.read_csv(next(run.glob("fabric-*-matrix.csv")))
    assert list(m.columns) == ["node_a", "node_b", "value", "perf", "suspect", "rack_a",
                               "rack_b", "leaf_a", "leaf_b"]
    assert len(m) == 16 * 15 // 2
    # rows go by the map's order (rack, then name), n015 (not in the map) last
    firsts = list(dict.fromkeys(m["node_a"]))
    assert firsts[:3] == ["n000", "n001", "n002"] and m["node_b"].iloc[-1] == "n015"
    assert (m.loc[m["node_b"] == "n015", "rack_b"] == topology.NOT_IN_MAP).all()
    assert m.loc[(m["node_a"] == "n004") & (m["node_b"] == "n009"), "rack_a"].item() == "r1"


def test_render_with_another_map_and_default_by_name(scan: tuple, tmp_path: Path) -> None:
    run, _, _ = scan
    stat = (run / "data.csv").stat().st_mtime_ns
    other = tmp_path / "other.toml"
    other.write_text("".join(f'[[rack]]\nname = "x{r}"\nnodes = ['
                             + ", ".join(f'"{h}"' for h in HOSTS[8 * r:8 * r + 8]) + "]\n"
                             for r in (0, 1)))
    p = cli("fabric", "--plots", "none", "--render", str(run), "--topology", str(other))
    assert p.returncode == 0, p.stderr
    assert "all 4 suspects are in rack x0" in p.stderr
    assert (run / "data.csv").stat().st_mtime_ns == stat  # nothing ran
    m = pd.read_csv(next(run.glob("fabric-*-matrix.csv")))
    assert "rack_a" in m and "leaf_a" not in m
    # without any map (a run scanned without one): by name, no group columns
    meta = json.loads((run / "metadata.json").read_text())
    meta["analysis"].pop("topology")
    (run / "metadata.json").write_text(json.dumps(meta))
    p = cli("fabric", "--plots", "none", "--render", str(run))
    assert p.returncode == 0, p.stderr
    m = pd.read_csv(next(run.glob("fabric-*-matrix.csv")))
    assert list(m.columns) == ["node_a", "node_b", "value", "perf", "suspect"]
    assert list(m["node_a"]) == sorted(m["node_a"]) and "suspects are in" not in p.stderr
