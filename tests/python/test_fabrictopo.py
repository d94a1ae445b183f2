"""pairbench fabric --cables FILE: the fabric's shape from ibnetdiscover output, a CSV or a
TOML cable list (pairbench.io.fabrictopo); a bad file is exit 2 naming the file and line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import HERE
from pairbench.errors import UsageError
from pairbench.io import fabrictopo

sys.path.insert(0, str(HERE.parent / "sim"))
IBND = HERE / "data" / "fabric" / "ibnetdiscover-2level.txt"

CABLES = {("node0001", 0, "leaf1", 1), ("node0002", 0, "leaf1", 2), ("node0003", 0, "leaf2", 1),
          ("node0004", 0, "leaf2", 2), ("spine1", 1, "leaf1", 33), ("spine1", 2, "leaf2", 33),
          ("spine2", 1, "leaf1", 34), ("spine2", 2, "leaf2", 34)}


def shape(t: fabrictopo.FabricTopo) -> set[tuple[str, int, str, int]]:
    return {(c.a, c.a_port, c.b, c.b_port) for c in t.cables}


def test_ibnetdiscover_output_gives_every_cable_once_named_by_descriptions() -> None:
    t = fabrictopo.load(IBND)
    assert shape(t) == CABLES  # each cable listed from both ends in the file: once here
    assert t.switches == ["leaf1", "leaf2", "spine1", "spine2"]  # "MF0;leaf1:MQM8700/U1"
    assert sorted(t.nodes) == ["node0001", "node0002", "node0003", "node0004"]
    assert t.leaf("node0003") == "leaf2"


def test_csv_and_toml_give_the_same_fabric(tmp_path: Path) -> None:
    rows = ["node0001,leaf1:1", "leaf1:2,node0002", "node0003,leaf2:1", "node0004,leaf2:2",
            "leaf1:33,spine1:1", "leaf2:33,spine1:2", "leaf1:34,spine2:1", "spine2:2,leaf2:34"]
    (tmp_path / "c.csv").write_text("# the test fabric\na,b\n" + "\n".join(rows) + "\n")
    pairs = ",\n".join("  [" + ", ".join(f'"{e}"' for e in r.split(",")) + "]" for r in rows)
    (tmp_path / "c.toml").write_text(f"cables = [\n{pairs},\n]\n")
    for f in ("c.csv", "c.toml"):
        t = fabrictopo.load(tmp_path / f)
        # a cable between switches keeps the file's order of ends; compare as sets of ends
        got = {frozenset({(c.a, c.a_port), (c.b, c.b_port)}) for c in t.cables}
        assert got == {frozenset({(a, p), (b, q)}) for a, p, b, q in CABLES}, f


@pytest.mark.parametrize("name,text,where", [
    ("c.csv", "a,b\nnode1,leaf1:1\nnode2,node3\n", "line 3: node2 <-> node3: a cable between"),
    ("c.csv", "a,b\nnode1,leaf1:1\nnode2,leaf1:1\n", "line 3: leaf1:1 already has a cable (line 2"),
    ("c.csv", "a,b\nnode1,leaf1:1\nnode1,leaf2:1\n", "line 3: node1 already has a cable"),
    ("c.csv", "a,b\nnode1,leaf1:0\n", "line 2: 'leaf1:0' is neither"),
    ("c.csv", "a,b\n\n# x\nnode1,leaf1:1,extra\n", "line 4: expected 2 cells"),
    ("c.csv", "node,leaf\nnode1,leaf1:1\n", "line 1: the header must be 'a,b'"),
    ("c.csv", "a,b\nnode1,leaf1:1\nnode2,leaf2:1\n", "line 3: node node2 cannot reach node node1"),
    ("c.toml", 'cables = [\n ["node1", "leaf1:1"],\n ["node2", "leaf 1"],\n]\n',
     "line 3: 'leaf 1' is neither"),
    ("c.toml", 'cables = [["node1", "leaf1:1"], "x"]\n', "cables[1]: expected [END, END]"),
    ("c.toml", 'cable = []\n', "expected one key 'cables'"),
    ("ibnd.txt", 'Switch 2 "S-01"  # "leaf1"\n[1] "H-02"[1](2)  # "n1 mlx5_0"\n[2] junk\n',
     "line 3: neither a block header"),
    ("ibnd.txt", 'Switch 2 "S-01"  # "leaf1"\n[1] "H-02"[1](2)  # "n1 mlx5_0"\n',
     "line 2: port 1 of S-01 reaches H-02, which has no block"),
])
def test_a_bad_file_names_itself_and_its_line(tmp_path: Path, name: str, text: str,
                                              where: str) -> None:
    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(UsageError) as e:
        fabrictopo.load(f)
    assert str(e.value).startswith(f"{f}: "), e.value
    assert where in str(e.value), e.value

