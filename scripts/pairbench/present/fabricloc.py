"""The components a fabric scan's slow node pairs name (`pairbench fabric --cables FILE`):
analysis/localise.py run on each (test, size) verdict, for fabric.json, the summary and
fabric.html (docs/fabric.md, "Naming the component")."""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pandas as pd

from pairbench.analysis.localise import Localiser, localise_verdict
from pairbench.analysis.outliers import LinkPerf, Verdict
from pairbench.analysis.routes import Routing
from pairbench.errors import UsageError
from pairbench.io import fabrictopo, lftdump
from pairbench.present import fabrictree

__all__ = ["html_section", "load", "localise_verdict"]


def load(path: str, routing: str = "dmodk", lft: str | None = None) -> Localiser:
    """The localiser of a cable file (UsageError naming its line when bad), with the
    routes of a routing model, or of forwarding tables (lft: an ibroute dump)."""
    tables = lftdump.load(lft) if lft else None
    loc = Localiser(Routing(fabrictopo.load(path), routing, lft=tables))
    if tables is not None:
        loc.r.incidence(np.array([0]), np.array([0]))  # a table that misses a node: now
    return loc


def html_section(verdicts: list[dict], run_dir: Path | None = None) -> str:
    """The page's "Components" section: per test and size the components named, with
    their evidence and the alternatives the routes cannot tell apart; and the drawing of
    the fabric (fabrictree) with them marked, when run_dir's fabric.json names its cable
    file and that is readable."""
    rows = []
    named: set[str] = set()
    alts: set[str] = set()
    for v in verdicts:
        loc = v.get("localisation")
        if not loc:
            continue
        what = f"{v['test']} {v['msg_size_bytes']} B"
        for c in loc["components"]:
            named.add(c["component"])
            alts |= {a["component"] for a in c["alternatives"]}
            alt = ", ".join(a["component"] for a in c["alternatives"][:10])
            rows.append(f"<tr><td>{html.escape(what)}</td><td class='bad'>"
                        f"{html.escape(c['component'])}</td><td>{html.escape(c['kind'])}</td>"
                        f"<td>{c['slow']:,} of {c['through']:,}</td>"
                        f"<td>{c['slow_elsewhere']:,} of {c['elsewhere']:,}</td>"
                        f"<td>{html.escape(alt) or '-'}</td></tr>")
        if loc["unexplained"]:
            rows.append(f"<tr><td>{html.escape(what)}</td><td colspan='5'>"
                        f"{loc['unexplained']:,} slow node pair(s) no component explains"
                        "</td></tr>")
    if not rows:
        return ""
    drawing = _drawing(run_dir, named, alts - named)
    return drawing + ("<h2>Components</h2><p>The fewest cables, ports and switches whose routes "
            "explain every slow node pair and no healthy one (docs/fabric.md).</p><table>"
            "<tr><th>test, size</th><th>component</th><th>kind</th><th>slow pairs through "
            "it</th><th>slow pairs elsewhere</th><th>or (cannot be told apart)</th></tr>"
            f"{''.join(rows)}</table>")


def _drawing(run_dir: Path | None, named: set[str], alts: set[str]) -> str:
    """The fabric drawn (fabrictree.tree_svg), or "" without a readable cable file."""
    if run_dir is None:
        return ""
    try:
        top = json.loads((run_dir / "fabric.json").read_text(encoding="utf-8"))
        c = top.get("cables") or {}
        r = Routing(fabrictopo.load(c["file"]), "ecmp")  # (the drawing needs no routes)
    except (OSError, ValueError, KeyError, UsageError):
        return ""
    return ("<h2>The fabric</h2><p>Switches by level (spines above leaves; under each leaf "
            "its node count), every inter-switch cable a line: red the components named, "
            "dashed orange what they cannot be told apart from, red names the nodes whose "
            "cable was named. Hover for names.</p>" + fabrictree.tree_svg(r, named, alts))


def with_tell_apart(pairs: dict[str, list[tuple[str, str]]],
                    extra: dict[str, list[tuple[str, str]]],
                    most: int) -> dict[str, list[tuple[str, str]]]:
    """The confirmation rounds' node pairs per test: the suspects' (pairs), then the pairs
    that tell named components from their alternatives (extra), at most `most` in all."""
    out = {}
    for t in sorted(set(pairs) | set(extra)):
        have = list(pairs.get(t, []))
        seen = {frozenset(ab) for ab in have}
        for ab in extra.get(t, []):
            if len(have) >= most:
                break
            if frozenset(ab) not in seen:
                have.append(ab)
                seen.add(frozenset(ab))
        out[t] = have
    return out


def confirm_links(run_dir: Path) -> pd.DataFrame | None:
    """The links the confirmation rounds measured (raw/confirm-*.csv), or None."""
    from pairbench.analysis.scanlinks import read_links

    confs = [read_links(c) for c in sorted((run_dir / "raw").glob("confirm-*.csv"))]
    confs = [c for c in confs if len(c)]
    return pd.concat(confs, ignore_index=True) if confs else None


def extra_pairs(clk: pd.DataFrame | None, key: dict, v: Verdict
                ) -> tuple[list[str], list[str], np.ndarray] | None:
    """The node pairs of key's (test, variant, size) the confirmation rounds measured and
    the scan did not: (node_a, node_b, perf against v's reference, median over repeats)."""
    if clk is None:
        return None
    sel = clk[(clk["test"].astype(str) == key["test"])
              & (clk["variant"].astype(str) == key["variant"])
              & (clk["msg_size_bytes"] == key["msg_size_bytes"])
              & (clk["status"].astype(str) == "ok")]
    if sel.empty:
        return None
    a, b = sel["node_a"].astype(str).to_numpy(), sel["node_b"].astype(str).to_numpy()
    med = pd.Series(sel["value"].to_numpy(dtype=float)).groupby([a, b]).median()
    scan = v.links
    keys = [(x, y) for x, y in med.index]
    known = (scan.get_many(keys) if isinstance(scan, LinkPerf)
             else np.array([scan.get(k, np.nan) for k in keys]))
    failed = {frozenset(ab) for ab in v.failed}
    keep = np.isnan(known) & np.array([frozenset(k) not in failed for k in keys], dtype=bool)
    vals = med.to_numpy()[keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        perf = vals / v.ref if v.higher_is_better else v.ref / vals
    kept = [k for k, m in zip(keys, keep, strict=True) if m]
    return [x for x, _ in kept], [y for _, y in kept], perf
