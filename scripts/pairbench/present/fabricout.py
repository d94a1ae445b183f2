"""The outputs of a fabric scan, from its data.csv alone: the tidy per-node-pair CSV
(fabric-links.csv), one node x node matrix per test and size (fabric-matrix-*.csv),
heatmaps (plots/fabric-*.png and .svg), the verdicts (fabric.json) and a self-contained
page (fabric.html). fabric_section(run_dir) gives the same content as a fragment for
the main report."""

from __future__ import annotations

import base64
import html
import io
import json
import math
from pathlib import Path

import pandas as pd

from pairbench.analysis.load import load_run
from pairbench.analysis.outliers import (
    DEFAULT_TOLERANCE,
    DEFAULT_Z,
    Verdict,
    analyse,
    links,
    matrix,
)
from pairbench.contract.sizes import size_label
from pairbench.io.safeio import write_output

CSS = """body{font-family:sans-serif;margin:2em;max-width:1100px}
table{border-collapse:collapse;margin:1em 0;font-size:90%}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#eee}
.bad{color:#b00;font-weight:bold}.ok{color:#070}img{max-width:100%}"""


def _stem(key: dict) -> str:
    v = f"-{key['variant']}" if key["variant"] else ""
    return f"fabric-{key['layer']}-{key['test']}{v}-{int(key['msg_size_bytes'])}"


def _unit(metric: str) -> str:
    return "Gbit/s" if metric == "bw_gbit_s" else "µs (p50)"


def verdict_record(key: dict, v: Verdict) -> dict:
    def r(x: float) -> float | None:
        return None if isinstance(x, float) and math.isnan(x) else round(x, 6)

    return {**{k: (int(x) if k == "msg_size_bytes" else x) for k, x in key.items()},
            "reference": r(v.ref), "noise": r(v.noise), "floor": r(v.floor),
            "tolerance": v.tolerance, "z": v.z, "links_measured": len(v.links),
            "links_expected": v.expected_links, "links_failed": [list(x) for x in v.failed],
            "worst_link_perf": r(v.worst_link_perf), "outliers": v.outliers,
            "suspect_nodes": v.suspect_nodes,
            "suspect_links": [list(x) for x in v.suspect_links],
            "node_links": {n: [list(x) for x in ls] for n, ls in v.node_links.items()},
            "node_perf": {n: r(p) for n, p in v.nodes.items()},
            "link_perf": {f"{a}~{b}": r(p) for (a, b), p in v.links.items()}}


def summary_line(key: dict, v: Verdict) -> str:
    head = (f"{key['layer']} {key['test']}{'[' + key['variant'] + ']' if key['variant'] else ''}"
            f" {size_label(int(key['msg_size_bytes']))}: {len(v.links)}/{v.expected_links} "
            f"node pairs, reference {v.ref:.4g} {_unit(v.metric)}, suspect below "
            f"{100 * v.floor:.0f} % of it")
    parts = [f"suspect node {n} (its {len(v.node_links.get(n, []))} slow link(s))"
             for n in v.suspect_nodes]
    parts += [f"suspect link {a}~{b} ({100 * v.links[(a, b)]:.0f} %)"
              for a, b in v.suspect_links]
    parts += [f"node pair {a}~{b} failed" for a, b in v.failed]
    return head + ": " + ("; ".join(parts) if parts else "no outliers")


def heatmap(m: pd.DataFrame, key: dict, v: Verdict) -> tuple[bytes, bytes]:
    """(png, svg) bytes of the node x node matrix, suspects outlined in red."""
    from pairbench.present.plot import _pyplot

    plt = _pyplot()
    n = len(m)
    fig, ax = plt.subplots(figsize=(1.2 + 0.7 * n, 0.9 + 0.6 * n))
    cmap = "viridis" if v.higher_is_better else "viridis_r"
    im = ax.imshow(m.to_numpy(dtype=float), cmap=cmap)
    ax.set_xticks(range(n), m.columns, rotation=45, ha="right")
    ax.set_yticks(range(n), m.index)
    for i, a in enumerate(m.index):
        for j, b in enumerate(m.columns):
            val = m.iloc[i, j]
            if not math.isnan(val):
                ax.text(j, i, f"{val:.3g}", ha="center", va="center", fontsize=8,
                        color="white")
            pair = tuple(sorted((a, b)))
            bad = pair in v.suspect_links or any(pair in v.node_links.get(x, [])
                                                 for x in v.suspect_nodes)
            if bad and a != b:
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False,
                                           edgecolor="red", linewidth=2.5))
    fig.colorbar(im, ax=ax, label=f"{v.metric} ({_unit(v.metric)})")
    ax.set_title(f"{key['test']} {size_label(int(key['msg_size_bytes']))}: node pairs"
                 + (f"\nsuspect nodes: {', '.join(v.suspect_nodes)}" if v.suspect_nodes
                    else ""), fontsize=10)
    out = []
    for ext in ("png", "svg"):
        buf = io.BytesIO()
        fig.savefig(buf, format=ext, dpi=110, bbox_inches="tight")
        out.append(buf.getvalue())
    plt.close(fig)
    return out[0], out[1]


def write_outputs(run_dir: Path, tolerance: float = DEFAULT_TOLERANCE,
                  z: float = DEFAULT_Z) -> dict:
    """Every output file of a scan run; returns {text, verdicts}."""
    df = load_run(run_dir)
    results = analyse(df, tolerance, z)
    lk = links(df)
    write_output(run_dir / "fabric-links.csv", lk.to_csv(index=False), "fabric links")
    (run_dir / "plots").mkdir(exist_ok=True)
    verdicts, lines = [], []
    for key, g, v in results:
        stem = _stem(key)
        m = matrix(g)
        write_output(run_dir / f"{stem}-matrix.csv", m.to_csv(), "fabric matrix")
        png, svg = heatmap(m, key, v)
        write_output(run_dir / "plots" / f"{stem}.png", png, "heatmap")
        write_output(run_dir / "plots" / f"{stem}.svg", svg, "heatmap")
        verdicts.append({**verdict_record(key, v), "matrix": f"{stem}-matrix.csv",
                         "heatmap": f"plots/{stem}.png"})
        lines.append(summary_line(key, v))
    write_output(run_dir / "fabric.json",
                 json.dumps({"tolerance": tolerance, "z": z, "verdicts": verdicts},
                            indent=1) + "\n", "fabric.json")
    title, frag = _fragment(run_dir, verdicts)
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>{frag}"
            "</body></html>\n")
    write_output(run_dir / "fabric.html", page, "fabric.html")
    return {"text": "\n".join(lines) if lines else "fabric: no node pairs measured",
            "verdicts": verdicts}


def _fragment(run_dir: Path, verdicts: list[dict]) -> tuple[str, str]:
    title = f"Fabric scan {run_dir.name}"
    parts = ["<p>Every node pair measured once, in rounds of disjoint node pairs. "
             "perf = value / reference (bandwidth) or reference / value (latency); the "
             "reference is the median over nodes of each node's median link. A node or "
             "link is suspect when its perf is below the floor = min(1 &minus; tolerance, "
             "exp(&minus;z &times; noise)), noise = 1.4826 &times; MAD of ln(perf) over the "
             "links between healthy nodes (docs/fabric.md)."
             "</p>"]
    for v in verdicts:
        nodes = v["suspect_nodes"]
        links_ = [f"{a}~{b}" for a, b in v["suspect_links"]]
        cls = "bad" if nodes or links_ or v["links_failed"] else "ok"
        parts.append(f"<h2>{html.escape(v['test'])} "
                     f"{size_label(int(v['msg_size_bytes']))} ({html.escape(v['metric'])})"
                     "</h2>")
        parts.append(
            f"<p class='{cls}'>suspect nodes: {html.escape(', '.join(nodes) or 'none')}; "
            f"suspect links: {html.escape(', '.join(links_) or 'none')}; failed node pairs: "
            f"{len(v['links_failed'])}; measured {v['links_measured']}/"
            f"{v['links_expected']}</p>")
        parts.append(f"<p>reference {v['reference']} {html.escape(_unit(v['metric']))}, "
                     f"noise {v['noise']}, floor {v['floor']} (tolerance {v['tolerance']}, "
                     f"z {v['z']})</p>")
        img = run_dir / v["heatmap"]
        if img.is_file():
            b64 = base64.b64encode(img.read_bytes()).decode()
            parts.append(f"<img alt='heatmap' src='data:image/png;base64,{b64}'>")
        rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{p}</td></tr>"
                       for k, p in sorted(v["link_perf"].items(), key=lambda x: x[1] or 0))
        parts.append(f"<table><tr><th>node pair</th><th>perf</th></tr>{rows}</table>")
    return title, "\n".join(parts)


def fabric_section(run_dir: Path | str) -> tuple[str, str] | None:
    """(title, HTML fragment) of a scan run for the main report; None if the run is not a
    fabric scan (no fabric.json: run `pairbench fabric` or write_outputs first)."""
    run_dir = Path(run_dir)
    f = run_dir / "fabric.json"
    if not f.is_file():
        return None
    verdicts = json.loads(f.read_text(encoding="utf-8"))["verdicts"]
    return _fragment(run_dir, verdicts)
