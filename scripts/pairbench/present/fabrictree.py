"""The drawing of the fabric in fabric.html (`--cables`): its switches in rows by level
(spines above leaves), every inter-switch cable a line, the components localisation named
in red (an alternative it cannot tell apart dashed orange), each leaf with its node count
and the nodes whose cable was named. Nodes are not drawn one by one: at 1,024 nodes the
drawing is 32 leaves and their uplinks, readable on one screen. Inline SVG, no script."""

from __future__ import annotations

import html

from pairbench.analysis.routes import Routing, natural

BOX_W, BOX_H, GAP_X, ROW_H, MARGIN = 22, 14, 8, 120, 30


def tree_svg(r: Routing, named: set[str], alternatives: set[str]) -> str:
    """SVG of r's switches and inter-switch cables; named/alternatives: component names."""
    levels: dict[int, list[str]] = {}
    for s in r.topo.switches:
        levels.setdefault(r.level.get(s, 0), []).append(s)
    rows = sorted(levels, reverse=True)  # the top level first
    widest = max(len(v) for v in levels.values())
    width = max(600, 2 * MARGIN + widest * (BOX_W + GAP_X))
    height = 2 * MARGIN + (len(rows) - 1) * ROW_H + BOX_H + 70
    at: dict[str, tuple[float, float]] = {}
    for i, lv in enumerate(rows):
        names = sorted(levels[lv], key=natural)
        step = (width - 2 * MARGIN) / len(names)
        for j, s in enumerate(names):
            at[s] = (MARGIN + step * (j + 0.5), MARGIN + i * ROW_H)
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' "
           f"height='{height:.0f}' font-family='sans-serif' font-size='9'>"]
    lines = []
    touched: set[str] = set()
    for i, c in enumerate(r.topo.cables):
        if not c.a_port:
            continue
        name = r.names[i]
        if name in named or name in alternatives:
            touched |= {c.a, c.b}
        (x1, y1), (x2, y2) = at[c.a], at[c.b]
        y1, y2 = (y1 + BOX_H, y2) if y1 < y2 else (y1, y2 + BOX_H)
        style = ("stroke='#c00' stroke-width='3'" if name in named else
                 "stroke='#e80' stroke-width='2' stroke-dasharray='4 3'" if name in alternatives
                 else "stroke='#bbb' stroke-width='0.5'")
        lines.append((name in named or name in alternatives,
                      f"<line x1='{x1:.1f}' y1='{y1:.1f}' x2='{x2:.1f}' y2='{y2:.1f}' "
                      f"{style}><title>{html.escape(name)}</title></line>"))
    out += [s for _, s in sorted(lines, key=lambda x: x[0])]  # the marked ones on top
    bad_nodes: dict[str, list[str]] = {}
    n_nodes: dict[str, int] = {}
    for n, ci in r.topo.nodes.items():
        leaf = r.topo.cables[ci].b
        n_nodes[leaf] = n_nodes.get(leaf, 0) + 1
        if r.names[ci] in named or r.names[ci] in alternatives:
            bad_nodes.setdefault(leaf, []).append(n)
    for s, (x, y) in at.items():
        sw = f"switch {s}"
        fill = "#f99" if sw in named else "#fd9" if sw in alternatives else "#eef"
        out.append(f"<rect x='{x - BOX_W / 2:.1f}' y='{y:.1f}' width='{BOX_W}' "
                   f"height='{BOX_H}' fill='{fill}' stroke='#446'><title>{html.escape(s)}"
                   f"</title></rect>")
        if s in touched or sw in named or sw in alternatives or len(at) <= 16:
            top = y == MARGIN
            red = s in touched or sw in named
            out.append(f"<text x='{x:.1f}' y='{y - 3 if top else y + BOX_H + 21:.1f}' "
                       f"text-anchor='middle' fill='{'#c00' if red else '#444'}'>"
                       f"{html.escape(s)}</text>")
        if s in n_nodes:
            txt = f"{n_nodes[s]}"
            out.append(f"<text x='{x:.1f}' y='{y + BOX_H + 10:.1f}' text-anchor='middle' "
                       f"fill='#666'>{txt}</text>")
            for k, n in enumerate(sorted(bad_nodes.get(s, []))[:3]):
                out.append(f"<text x='{x:.1f}' y='{y + BOX_H + 32 + 10 * k:.1f}' "
                           f"text-anchor='middle' fill='#c00'>{html.escape(n)}</text>")
    if len(rows) <= 6:
        for i, lv in enumerate(rows):
            out.append(f"<text x='2' y='{MARGIN + i * ROW_H - 4:.1f}' fill='#444'>"
                       f"level {lv}</text>")
    out.append("</svg>")
    return "".join(out)
