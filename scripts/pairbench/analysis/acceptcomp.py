"""accept's [[fabric_max_components]] (docs/fabric.md, "Acceptance criteria"): the
components localisation names in a fabric scan (analysis/localise.py), with the scan's
cable file and routes (metadata.json's analysis: --cables, --routing, --lft) or the
criterion's own `cables`/`routing`."""

from __future__ import annotations

from pathlib import Path

from pairbench.analysis.localise import Localiser, localise_verdict
from pairbench.analysis.routes import Routing
from pairbench.contract.sizes import size_label
from pairbench.errors import UsageError
from pairbench.io import fabrictopo, lftdump


def localiser(c: dict, meta: dict, cache: dict) -> Localiser | str:
    """The criterion's localiser, or why there is none (a fail's detail)."""
    an = meta.get("analysis") or {}
    path = c.get("cables") or an.get("cables")
    if not path:
        return ("the scan has no cable file (pairbench fabric --cables FILE, or cables = "
                "FILE in the criterion)")
    routing = c.get("routing") or an.get("routing") or "dmodk"
    lft = an.get("lft") if not c.get("routing") and not c.get("cables") else None
    key = ("localiser", path, routing, lft)
    if key not in cache:
        try:
            cache[key] = Localiser(Routing(fabrictopo.load(path), routing,
                                           lft=lftdump.load(lft) if lft else None))
        except UsageError as exc:
            cache[key] = f"cable file: {exc}"
    return cache[key]


def fabric_components(results: list, meta: dict, c: dict, rows: list[dict],
                      cache: dict) -> None:
    """One check row per (test, size) of the criterion: value = components named + slow
    node pairs no component explains (each a finding), pass when <= max_components."""
    label = c["test"] + (f"[{c['variant']}]" if c["variant"] else "")
    limit = float(c["max_components"])
    name = "fabric_max_components"
    loc = localiser(c, meta, cache)
    found = False
    for pk, _lk, v in results:
        size = int(pk["msg_size_bytes"])
        if (pk["test"] != c["test"] or pk["variant"] != c["variant"]
                or size < c.get("min_size_bytes", 0) or size > c.get("max_size_bytes", size)):
            continue
        found = True
        base = {"criterion": name, "test": label, "size": size_label(size), "pairs": "",
                "limit": limit}
        if isinstance(loc, str):
            rows.append({**base, "value": None, "verdict": "fail", "detail": loc})
            continue
        got = localise_verdict(loc, v)
        n = len(got.found) + len(got.unexplained)
        # the names first (a table cell may be cut), then the evidence
        said = [f"{f.name} ({f.slow}/{f.through} slow)" for f in got.found]
        if got.unexplained:
            said.append(f"{len(got.unexplained)} slow node pair(s) no component explains "
                        f"(e.g. {'~'.join(got.unexplained[0])})")
        rows.append({**base, "value": float(n), "verdict": "pass" if n <= limit else "fail",
                     "detail": f"components <= {limit:g}: " + ("; ".join(said) or "none")
                               + f" ({got.routing} routes over {Path(got.cables).name})"})
    if not found:
        rows.append({"criterion": name, "test": label, "size": "", "pairs": "",
                     "value": None, "limit": limit, "verdict": "fail",
                     "detail": "no fabric scan data for this criterion"})
