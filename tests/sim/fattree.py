# SPDX-License-Identifier: BSD-3-Clause
"""A two-level fat tree as a cable list (pairbench fabric --cables, CSV): `leaves` leaf
switches of `per_leaf` nodes each (ports 1..per_leaf), every leaf cabled once to each of
`spines` spine switches (leaf port per_leaf + s, spine port = the leaf's number)."""

from __future__ import annotations

from pathlib import Path


def node_name(i: int, width: int = 4) -> str:
    return f"n{i:0{width}d}"


def fat_tree_lines(leaves: int, per_leaf: int, spines: int, width: int = 4) -> list[str]:
    out = ["a,b"]
    for li in range(leaves):
        for p in range(per_leaf):
            out.append(f"{node_name(li * per_leaf + p, width)},leaf{li + 1}:{p + 1}")
    for li in range(leaves):
        for s in range(spines):
            out.append(f"leaf{li + 1}:{per_leaf + s + 1},spine{s + 1}:{li + 1}")
    return out


def write_fat_tree(path: Path, leaves: int, per_leaf: int, spines: int,
                   width: int = 4) -> list[str]:
    """Writes the file; returns the node names in order."""
    Path(path).write_text("\n".join(fat_tree_lines(leaves, per_leaf, spines, width)) + "\n")
    return [node_name(i, width) for i in range(leaves * per_leaf)]
