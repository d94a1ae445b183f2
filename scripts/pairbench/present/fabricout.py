"""The outputs of a fabric scan, from its rows alone (data.csv, or data.parquet): the tidy
per-node-pair CSV (fabric-links.csv), one node x node matrix per test and size in long
form (fabric-*-matrix.csv: node_a, node_b, value, perf, suspect; also as Parquet when
pyarrow is importable; a scan whose rows are data.parquet writes these two as Parquet
only: fabric-links.parquet, fabric-*-matrix.parquet), heatmaps (plots/fabric-*.png and
.svg), the verdicts (fabric.json) and a self-contained page (fabric.html) that leads
with the suspects and their evidence.
fabric_section(run_dir) gives the same content as a fragment for the main report. With a
topology (pairbench.analysis.topology) the nodes are ordered and grouped by leaf and rack
and each suspect's group is said.

Sizes that scale: the matrix is never K x K text; the heatmap shows perf (1 = the
reference) on a fixed canvas, nodes ordered by name (or the topology), and beyond
MAX_PIXELS nodes each pixel is a block of node pairs showing its worst perf (a bad cable
stays visible);
suspect nodes are marked on the axes, suspect links circled. fabric.json keeps every
node's perf, the suspects' links and the WORST_LINKS worst links (every link's perf is
in the matrix CSV); the page lists the suspects first, then those worst links."""

from __future__ import annotations

import base64
import html
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from pairbench.analysis import nodeenv
from pairbench.analysis.localise import Localiser, tell_apart_pairs
from pairbench.analysis.outliers import (
    DEFAULT_TOLERANCE,
    DEFAULT_Z,
    LinkPerf,
    Verdict,
    confirm_pairs,
    iter_analysed,
    iter_judged,
)
from pairbench.analysis.scanlinks import matrix, read_scan
from pairbench.analysis.topology import Topology
from pairbench.contract.schema import find_data_csv
from pairbench.contract.sizes import size_label
from pairbench.io.safeio import write_output
from pairbench.present import fabricloc
from pairbench.runner.scanverbs import read_node_env

CSS = """body{font-family:sans-serif;margin:2em;max-width:1100px}
table{border-collapse:collapse;margin:1em 0;font-size:90%}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#eee}
.bad{color:#b00;font-weight:bold}.ok{color:#070}img{max-width:100%}"""


def _stem(key: dict) -> str:
    v = f"-{key['variant']}" if key["variant"] else ""
    return f"fabric-{key['layer']}-{key['test']}{v}-{int(key['msg_size_bytes'])}"


def _unit(metric: str) -> str:
    return "Gbit/s" if metric == "bw_gbit_s" else "µs (p50)"


PLOT_FORMATS = ("png", "svg")  # the heatmaps' files by default (fabric --plots)
MAX_PIXELS = 1024   # heatmap: at most this many rows/columns of node pairs
LABELS_UP_TO = 64   # node names on the axes up to this many nodes
VALUES_UP_TO = 16   # the value written in each cell up to this many nodes
WORST_LINKS = 50    # fabric.json and the page: the worst links beyond the suspects'


def worst_links(v: Verdict, n: int = WORST_LINKS) -> list[tuple[tuple[str, str], float]]:
    """The n links of lowest perf, worst first."""
    if isinstance(v.links, LinkPerf):
        perf = np.where(np.isnan(v.links.perf), np.inf, v.links.perf)
        if len(perf) > n:  # the n lowest (ties by position, as a stable sort of all):
            cut = np.partition(perf, n - 1)[n - 1]  # those at or below the n-th value
            low = np.flatnonzero(perf <= cut)
            idx = low[np.argsort(perf[low], kind="stable")[:n]]
        else:
            idx = np.argsort(perf, kind="stable")[:n]
        return [(v.links.name(i), float(v.links.perf[i])) for i in idx]
    return sorted(v.links.items(), key=lambda x: x[1])[:n]


def _suspect_set(v: Verdict) -> set[tuple[str, str]]:
    out = set(v.suspect_links)
    for n in v.suspect_nodes:
        out |= set(v.node_links.get(n, []))
    return out


def suspects_where(v: Verdict, topo: Topology | None) -> tuple[dict[str, str], str | None]:
    """({suspect node or link end: "rack r01, leaf leaf1"}, the group every suspect's
    nodes share when there are two or more suspects, else None)."""
    if topo is None:
        return {}, None
    ends = list(v.suspect_nodes) + [x for ab in v.suspect_links for x in ab]
    where = {n: topo.describe(n) for n in sorted(set(ends))}
    return where, (topo.shared(ends) if v.outliers >= 2 else None)


def shared_line(v: Verdict, share: str | None) -> str:
    return (f"all {v.outliers} suspects are in {share}: look at what they share (a leaf or "
            "rack switch, its cabling) before the nodes" if share else "")


def verdict_record(key: dict, v: Verdict, topo: Topology | None = None) -> dict:
    def r(x: float) -> float | None:
        return None if isinstance(x, float) and math.isnan(x) else round(x, 6)

    shown = dict(worst_links(v))
    sus = sorted(_suspect_set(v))
    perf = (v.links.get_many(sus) if isinstance(v.links, LinkPerf)
            else [v.links[ab] for ab in sus])
    shown.update(zip(sus, (float(p) for p in perf), strict=True))

    return {**{k: (int(x) if k == "msg_size_bytes" else x) for k, x in key.items()},
            "reference": r(v.ref), "noise": r(v.noise), "floor": r(v.floor),
            "tolerance": v.tolerance, "z": v.z, "links_measured": len(v.links),
            "links_expected": v.expected_links, "links_failed": [list(x) for x in v.failed],
            "worst_link_perf": r(v.worst_link_perf), "outliers": v.outliers,
            "suspect_nodes": v.suspect_nodes,
            "suspect_links": [list(x) for x in v.suspect_links],
            "node_links": {n: [list(x) for x in ls] for n, ls in v.node_links.items()},
            "node_perf": {n: r(p) for n, p in v.nodes.items()},
            "link_perf": {f"{a}~{b}": r(p) for (a, b), p in
                          sorted(shown.items(), key=lambda x: x[1])},
            "link_perf_note": f"the suspects' links and the {WORST_LINKS} worst; every "
                              "link in the matrix CSV",
            "confirmation": v.confirmation,
            "confirmed": [k.removeprefix("node ") for k in v.confirmed],
            **_where_record(v, topo)}


def _where_record(v: Verdict, topo: Topology | None) -> dict:
    if topo is None:
        return {}
    where, share = suspects_where(v, topo)
    return {"suspect_groups": where, "suspects_share": share}


SHOWN = 20  # suspect links / failed node pairs named in a summary line, each


def summary_line(key: dict, v: Verdict, topo: Topology | None = None) -> str:
    head = (f"{key['layer']} {key['test']}{'[' + key['variant'] + ']' if key['variant'] else ''}"
            f" {size_label(int(key['msg_size_bytes']))}: {len(v.links)}/{v.expected_links} "
            f"node pairs, reference {v.ref:.4g} {_unit(v.metric)}, suspect below "
            f"{100 * v.floor:.0f} % of it")
    def said(k: str) -> str:
        c = v.confirmation.get(k)
        if c is None:
            return ""
        return (f", {'confirmed' if c['confirmed'] else 'NOT confirmed'}: "
                f"{100 * c['confirming']:.0f} % in {c['measurements']} re-measurement(s)")

    where, share = suspects_where(v, topo)

    def at(*ns: str) -> str:
        return ("in " + " ~ ".join(where[n] for n in ns) + "; ") if where else ""

    parts = [f"suspect node {n} ({at(n)}its {len(v.node_links.get(n, []))} slow link(s)"
             f"{said('node ' + n)})" for n in v.suspect_nodes]
    lp = (v.links.get_many(v.suspect_links) if isinstance(v.links, LinkPerf)
          else [v.links[ab] for ab in v.suspect_links])
    # Named one by one up to SHOWN each (the slowest links first); the rest counted: a
    # 1,024-node scan with one bad cable has ~1,900 suspect links, one ~100 KB line.
    links = sorted(zip(v.suspect_links, lp, strict=True), key=lambda t: t[1])
    parts += [f"suspect link {a}~{b} ({at(a, b)}{100 * p:.0f} %"
              f"{said(f'{a}~{b}')})" for (a, b), p in links[:SHOWN]]
    if len(links) > SHOWN:
        parts.append(f"{len(links) - SHOWN} more suspect links (every one in fabric.json)")
    parts += [f"node pair {a}~{b} failed" for a, b in v.failed[:SHOWN]]
    if len(v.failed) > SHOWN:
        parts.append(f"{len(v.failed) - SHOWN} more failed node pairs (every one in "
                     "fabric.json)")
    if share:
        parts.append(shared_line(v, share))
    return head + ": " + ("; ".join(parts) if parts else "no outliers")


def node_order(m: pd.DataFrame, topo: Topology | None = None) -> tuple[pd.Index, np.ndarray]:
    """(the nodes of matrix m in heatmap order, each code's row: -1 for a node not in m):
    by name (the codes' order), or with a topology by leaf, rack, then name."""
    names = m["node_a"].cat.categories
    present = np.zeros(len(names), dtype=bool)
    present[m["node_a"].cat.codes.to_numpy()] = True
    present[m["node_b"].cat.codes.to_numpy()] = True
    codes = np.flatnonzero(present)
    if topo is not None:
        codes = codes[topo.order([str(x) for x in names[codes]])]
    row = np.full(len(names), -1, dtype=np.int64)
    row[codes] = np.arange(len(codes))
    return names[codes], row


def perf_grid(m: pd.DataFrame, row: np.ndarray, k: int, col: str = "perf") -> np.ndarray:
    """The K x K matrix of m[col] (NaN: not measured), symmetric; row: each node code's row
    (node_order())."""
    i = row[m["node_a"].cat.codes.to_numpy()]
    j = row[m["node_b"].cat.codes.to_numpy()]
    p = m[col].to_numpy(dtype=np.float32)
    grid = np.full((k, k), np.nan, dtype=np.float32)
    grid[i, j] = p
    grid[j, i] = p
    return grid


def downsample(grid: np.ndarray, f: int) -> np.ndarray:
    """Blocks of f x f node pairs -> the block's worst (lowest) perf."""
    k = grid.shape[0]
    pad = (-k) % f
    g = np.pad(grid, ((0, pad), (0, pad)), constant_values=np.nan)
    n = g.shape[0] // f
    blocks = g.reshape(n, f, n, f).transpose(0, 2, 1, 3).reshape(n, n, f * f)
    with np.errstate(all="ignore"):
        out = np.nanmin(np.where(np.isnan(blocks), np.inf, blocks), axis=2)
    out[np.isinf(out)] = np.nan
    return out


GROUP_LABELS_UP_TO = 40  # group names on the axes up to this many groups


def _draw_groups(ax, topo: Topology, nodes: list[str], f: int, label: bool) -> None:
    """The boundaries between racks (thin) and leaves (thick) of nodes in heatmap order
    (f nodes per pixel), and the outermost groups' names at their middles when few."""
    levels = ["rack", *(["leaf"] if "leaf" in topo.levels else [])]
    for level in levels:
        g = [topo.group(n, level) for n in nodes]
        cuts = [i for i in range(1, len(g)) if g[i] != g[i - 1]]
        for i in cuts:
            for line in (ax.axhline, ax.axvline):
                line(i / f - 0.5, color="white", linewidth=0.4 if level == "rack" else 1.2,
                     alpha=0.8)
    g = [topo.group(n, levels[-1]) for n in nodes]
    starts = [0] + [i for i in range(1, len(g)) if g[i] != g[i - 1]]
    if label and len(starts) <= GROUP_LABELS_UP_TO:
        ends = [*starts[1:], len(g)]
        mid = [((a + b) / 2) / f - 0.5 for a, b in zip(starts, ends, strict=True)]
        ax.set_xticks(mid, [g[a] for a in starts], rotation=90, fontsize=7)
        ax.set_yticks(mid, [g[a] for a in starts], fontsize=7)


def heatmap(m: pd.DataFrame, key: dict, v: Verdict, topo: Topology | None = None,
            formats: tuple[str, ...] = ("png", "svg")) -> list[bytes]:
    """The bytes, in each of formats, of the node x node perf matrix (m: matrix() with
    perf), suspects marked in red; readable from 4 to 4,096 nodes (see the module's
    docstring). With a topology the nodes are ordered by leaf, rack, then name, racks'
    boundaries drawn thin and leaves' thick, and the groups named on the axes when they are
    few."""
    from pairbench.present.plot import _pyplot, figure_bytes

    plt = _pyplot()
    names, row = node_order(m, topo)
    nodes = [str(x) for x in names]
    k = len(nodes)
    f = max(1, math.ceil(k / MAX_PIXELS))
    grid = perf_grid(m, row, k)
    grid = downsample(grid, f) if f > 1 else grid
    n = grid.shape[0]
    side = 1.2 + 0.7 * k if k <= VALUES_UP_TO else 9.0
    fig, ax = plt.subplots(figsize=(side + 1.5, side))
    im = ax.imshow(np.clip(grid, 0, 1.2), cmap="viridis", vmin=0, vmax=1.2,
                   interpolation="nearest")
    at = {x: i // f for i, x in enumerate(nodes)}
    if k <= LABELS_UP_TO:
        ax.set_xticks(range(k), nodes, rotation=45, ha="right", fontsize=8)
        ax.set_yticks(range(k), nodes, fontsize=8)
    else:
        block = f", {f} x {f} node pairs per pixel, worst shown" if f > 1 else ""
        by = ("leaf, rack, then name" if topo and "leaf" in topo.levels else
              "rack, then name" if topo else "name")
        ax.set_xlabel(f"node (sorted by {by}{block})")
        ax.set_ylabel("node")
    if topo is not None:
        _draw_groups(ax, topo, nodes, f, k > LABELS_UP_TO)
    if k <= VALUES_UP_TO:
        vals = perf_grid(m, row, k, "value")
        for i in range(k):
            for j in range(k):
                if not math.isnan(vals[i, j]):
                    # inside the axes: out of the tight-bbox layout, which would otherwise
                    # lay out each of the k² texts once more per format to find the border
                    ax.text(j, i, f"{vals[i, j]:.3g}", ha="center", va="center", fontsize=8,
                            color="white", in_layout=False)
    for x in v.suspect_nodes:
        ax.axhline(at[x], color="red", linewidth=0.8, alpha=0.6)
        ax.axvline(at[x], color="red", linewidth=0.8, alpha=0.6)
    pts = [(at[b], at[a]) for a, b in v.suspect_links] + [(at[a], at[b]) for a, b in
                                                          v.suspect_links]
    if pts and k <= VALUES_UP_TO:
        for x, y in pts:
            ax.add_patch(plt.Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False,
                                       edgecolor="red", linewidth=2.5))
    elif pts:
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=120, facecolors="none",
                   edgecolors="red", linewidths=1.5)
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylim(n - 0.5, -0.5)
    fig.colorbar(im, ax=ax, label="perf (1 = reference; lower is worse)", shrink=0.8)
    sus = ", ".join(v.suspect_nodes[:8]) + (" ..." if len(v.suspect_nodes) > 8 else "")
    ax.set_title(f"{key['test']} {size_label(int(key['msg_size_bytes']))}: {k} nodes, "
                 f"{len(v.links)} node pairs" + (f"\nsuspect nodes: {sus}" if sus else "")
                 + (f"\nsuspect links: {len(v.suspect_links)}" if v.suspect_links else ""),
                 fontsize=10)
    out = figure_bytes(fig, formats, dpi=110)
    plt.close(fig)
    return out


def matrix_long(g: pd.DataFrame, v: Verdict, topo: Topology | None = None) -> pd.DataFrame:
    """matrix() with each link's perf and whether it is a suspect (or a suspect node's);
    with a topology also each end's rack (and leaf), the rows in the heatmap's order."""
    # detect()'s link values (the same frame matrix(g) makes), else made here
    m = v.link_values.copy(deep=False) if v.link_values is not None else matrix(g)
    ref = v.ref
    with np.errstate(divide="ignore", invalid="ignore"):
        perf = m["value"] / ref if v.higher_is_better else ref / m["value"]
    m["perf"] = perf.round(6)
    names = m["node_a"].cat.categories
    sus = np.array(sorted(_suspect_set(v)), dtype=object).reshape(-1, 2)
    n = len(names)
    want = names.get_indexer(sus[:, 0]).astype(np.int64) * n + names.get_indexer(sus[:, 1])
    key = m["node_a"].cat.codes.to_numpy().astype(np.int64) * n + \
        m["node_b"].cat.codes.to_numpy()
    m["suspect"] = np.isin(key, want)  # on node codes: no name per link as text
    if topo is None:
        return m
    _, row = node_order(m, topo)
    ra = row[m["node_a"].cat.codes.to_numpy()]
    rb = row[m["node_b"].cat.codes.to_numpy()]
    m = m.iloc[np.lexsort((np.maximum(ra, rb), np.minimum(ra, rb)))].reset_index(drop=True)
    for level in reversed(topo.levels):
        for end in ("a", "b"):
            by_code = pd.Categorical([topo.group(str(x), level) for x in names])
            m[f"{level}_{end}"] = pd.Categorical.from_codes(
                by_code.codes[m[f"node_{end}"].cat.codes.to_numpy()], by_code.categories)
    return m


def write_frame(path: Path, df: pd.DataFrame) -> None:
    """A frame as CSV, streamed to a temporary file renamed over path (readers see the old
    or the new file): millions of rows are never one string in memory. With pyarrow its
    CSV writer does it (4-6 times faster than pandas' at 2 million links, the same text
    except that floats are written in their shortest form: 85 not 85.0, 1e-7 not 1e-07 —
    the same numbers read back); a value that would need quoting
    (an error text with a comma) sends the file to pandas' writer."""
    tmp = path.with_name(path.name + ".tmp")
    if not has_parquet() or not _arrow_csv(tmp, df):
        df.to_csv(tmp, index=False, chunksize=500_000)
    os.replace(tmp, path)


ARROW_CSV_ROWS = 1_000_000  # rows converted at a time (their strings, not the frame's)


def _arrow_csv(path: Path, df: pd.DataFrame) -> bool:
    """df as CSV by pyarrow, in slices of ARROW_CSV_ROWS: cells unquoted, missing values
    empty, booleans True/False (as pandas writes them); False (and nothing written that
    stays) when a cell would need quotes."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    def column(s: pd.Series) -> pa.Array:
        if s.dtype == bool:
            return pa.array(np.where(s.to_numpy(), "True", "False"))
        if isinstance(s.dtype, pd.CategoricalDtype):
            cats = pa.array(s.cat.categories.astype(str).to_numpy(dtype=object))
            codes = s.cat.codes.to_numpy()
            return pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes == -1),
                                                  cats).cast(pa.string())
        return pa.array(s.to_numpy(), from_pandas=True)

    opts = pacsv.WriteOptions(include_header=False, quoting_style="none")
    try:
        with open(path, "wb") as f:
            f.write((",".join(map(str, df.columns)) + "\n").encode())
            for at in range(0, len(df), ARROW_CSV_ROWS):
                part = df.iloc[at:at + ARROW_CSV_ROWS]
                t = pa.table({str(c): column(part[c]) for c in df.columns})
                pacsv.write_csv(t, f, write_options=opts)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return False
    return True


def has_parquet() -> bool:
    """Whether the matrices are also written as Parquet (pyarrow importable: a dependency
    of the driver, scripts/pyproject.toml; a tree without it still gets the CSVs)."""
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


def write_parquet(path: Path, df: pd.DataFrame) -> None:
    """A frame as Parquet (pyarrow; node names as dictionary columns, so a matrix of 8.4
    million node pairs keeps each of its 4,096 names once), written to a temporary file
    renamed over path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp = path.with_name(path.name + ".tmp")
    # dictionaries for the categoricals only and no statistics: pandas' defaults also try a
    # dictionary for every float column and write min/max of each page, 3 times the CPU
    # (33 million links at 4,096 nodes: ~25 s instead of ~8 s; results/fabric-scale)
    # Slices of PARQUET_SLICE rows: the arrow copy of one slice at a time, not of the whole
    # frame (33 million links at 4,096 nodes: 0.9 GiB more at the peak)
    cats = [str(c) for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)]
    schema = pa.Schema.from_pandas(df.iloc[:0], preserve_index=False)
    with pq.ParquetWriter(tmp, schema, compression="zstd", use_dictionary=cats,
                          write_statistics=False) as w:
        for at in range(0, max(len(df), 1), PARQUET_SLICE):
            w.write_table(pa.Table.from_pandas(df.iloc[at:at + PARQUET_SLICE],
                                               schema=schema, preserve_index=False))
    os.replace(tmp, path)


PARQUET_SLICE = 1 << 22


class _Background:
    """The K²-sized files (the links, each matrix) written by one thread beside the analysis,
    at most one file in flight: pyarrow's Parquet and CSV writers release the GIL while they
    encode and compress, so on a second core they take ~10 of the ~30 s of the outputs at
    4,096 nodes out of the wall time (results/fabric-scale). A frame handed over must not
    change until wait() returns; an error of the write is raised by the next submit/wait."""

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fabric-out")
        self._pending: list = []

    def submit(self, fn, *args) -> None:
        self._pending.append(self._pool.submit(fn, *args))

    def wait(self) -> None:
        pending, self._pending = self._pending, []
        for f in pending:
            f.result()

    def close(self, quiet: bool = False) -> None:
        """Wait for every write (its error raised, unless quiet: when the analysis itself
        failed, its error is the one to report), then end the thread."""
        try:
            if not quiet:
                self.wait()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pending = []


def suspects_to_confirm(run_dir: Path, tolerance: float = DEFAULT_TOLERANCE,
                        z: float = DEFAULT_Z, cables: Localiser | None = None,
                        most: int = 64, judged: dict[tuple, Verdict] | None = None
                        ) -> tuple[pd.DataFrame, dict]:
    """The scan's links (read once: pass them on to write_outputs) and, per test, the node
    pairs that would confirm its suspects (analysis.outliers.confirm_pairs); with cables,
    then the node pairs that tell named components from their alternatives (at most
    `most` pairs per test in all). judged: a dict to fill with the verdicts (without their
    links), for write_outputs, so that each (test, size) is judged once."""
    lk = read_scan(run_dir)
    by_test: dict[str, list[Verdict]] = {}
    tell: dict[str, list[tuple[str, str]]] = {}
    for key, _, v in iter_analysed(lk, tolerance, z):
        if cables is not None:
            tell.setdefault(key["test"], []).extend(
                tell_apart_pairs(fabricloc.localise_verdict(cables, v)))
        v.links = {}  # confirm_pairs needs the suspects and the nodes' perf, not every link
        v.link_values = None
        by_test.setdefault(key["test"], []).append(v)
        if judged is not None:
            judged[tuple(key.values())] = v
    pairs = {t: confirm_pairs(vs) for t, vs in by_test.items()}
    return lk, fabricloc.with_tell_apart(pairs, tell, most) if tell else pairs


def write_outputs(run_dir: Path, tolerance: float = DEFAULT_TOLERANCE,
                  z: float = DEFAULT_Z, lk: pd.DataFrame | None = None,
                  topo: Topology | None = None, cables: Localiser | None = None,
                  plots: tuple[str, ...] = PLOT_FORMATS,
                  judged: dict[tuple, Verdict] | None = None) -> dict:
    """Every output file of a scan run (lk: its links, if already read; topo: the racks and
    leaves to order and group the nodes by; cables: the fabric's cables and routes, to name
    the components behind the slow node pairs; plots: the heatmaps' formats, () for none:
    fabric --plots); returns {text, verdicts, topology: the line on nodes missing from the
    map or not in the scan, or None}. judged: suspects_to_confirm's verdicts of the same
    links, tolerance and z (not judged again)."""
    if lk is None:
        lk = read_scan(run_dir)
    # one (test, size) at a time: its links, verdict and matrix are dropped before the next
    results = iter_judged(run_dir, tolerance, z, lk, judged)
    # a scan whose rows are Parquet (scanparquet.PARQUET_MIN_NODES nodes or more) writes its
    # K²-sized files as Parquet only: 33 million links at 4,096 nodes are 2.6 GB of CSV
    big = find_data_csv(run_dir).suffix == ".parquet"
    bg = _Background()
    try:
        out = _write_outputs(run_dir, tolerance, z, lk, topo, cables, plots, results, big, bg)
    except BaseException:
        bg.close(quiet=True)
        raise
    bg.close()
    return out


def _write_outputs(run_dir: Path, tolerance: float, z: float, lk: pd.DataFrame,
                   topo: Topology | None, cables: Localiser | None, plots: tuple[str, ...],
                   results, big: bool, bg: _Background) -> dict:
    """write_outputs() with its K²-sized files handed to bg: the links (written while the
    first (test, size) is revived and drawn) and each matrix (while its heatmap is drawn;
    waited for before the next (test, size), so one matrix at a time is held)."""
    if big:
        bg.submit(write_parquet, run_dir / "fabric-links.parquet", lk)
    else:
        bg.submit(write_frame, run_dir / "fabric-links.csv", lk)
    (run_dir / "plots").mkdir(exist_ok=True)
    verdicts, lines = [], []
    note = None
    if topo is not None:
        note = topo.note(_scan_nodes(lk))
    # the confirmation rounds' links (they may hold pairs that tell components apart)
    clk = fabricloc.confirm_links(run_dir) if cables is not None else None
    for key, g, v in results:
        stem = _stem(key)
        m = matrix_long(g, v, topo)
        if not big:
            bg.submit(write_frame, run_dir / f"{stem}-matrix.csv", m)
        pq = f"{stem}-matrix.parquet" if has_parquet() else None
        if pq:
            bg.submit(write_parquet, run_dir / pq, m)
        for ext, data in zip(plots, heatmap(m, key, v, topo, plots) if plots else [],
                             strict=True):
            write_output(run_dir / "plots" / f"{stem}.{ext}", data, "heatmap")
        bg.wait()  # m is released only when written
        del m, g
        v.link_values = None
        verdicts.append({**verdict_record(key, v, topo),
                         "matrix": f"{stem}-matrix.{'parquet' if big else 'csv'}",
                         "matrix_parquet": pq,
                         "heatmap": f"plots/{stem}.png" if "png" in plots else None})
        lines.append(summary_line(key, v, topo))
        if cables is not None:
            loc = fabricloc.localise_verdict(cables, v, fabricloc.extra_pairs(clk, key, v))
            verdicts[-1]["localisation"] = loc.record()
            lines.append(f"  {loc.line()}")
        del v
    top = {"tolerance": tolerance, "z": z}
    if topo is not None:
        top["topology"] = {"file": topo.path, "levels": list(topo.levels), "note": note}
    if cables is not None:
        top["cables"] = {"file": cables.r.topo.path, "routing": cables.r.model}
    env = None
    if any(v["layer"] == "verbs" for v in verdicts):  # pairbench-mpi: one per job
        env = nodeenv.summary(read_node_env(run_dir), _scan_nodes(lk))
        top["node_env"] = env
        lines.append(nodeenv.summary_line(env))
    write_output(run_dir / "fabric.json",
                 json.dumps({**top, "verdicts": verdicts}, indent=1) + "\n", "fabric.json")
    title, frag = _fragment(run_dir, verdicts, env)
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>{frag}"
            "</body></html>\n")
    write_output(run_dir / "fabric.html", page, "fabric.html")
    if note:
        lines.append(note)
    return {"text": "\n".join(lines) if lines else "fabric: no node pairs measured",
            "verdicts": verdicts, "topology": note}


def _scan_nodes(lk: pd.DataFrame) -> list[str]:
    """The nodes of a scan's links (scanlinks' categories: in their order)."""
    if isinstance(lk["node_a"].dtype, pd.CategoricalDtype):
        return [str(n) for n in lk["node_a"].cat.categories]
    return sorted(set(lk["node_a"].astype(str)) | set(lk["node_b"].astype(str)))


def _env_section(env: dict | None, verdicts: list[dict]) -> str:
    """The page's node environment: the fields in which the nodes differ, the value of most
    nodes and every other node's (suspects marked), or that they are alike."""
    if env is None:
        return ""
    head = (f"<h2>Node environment</h2><p>{env['recorded']} of {env['nodes']} nodes "
            f"recorded theirs ({html.escape(env['file'])})")
    if env["missing"]:
        head += "; none from " + html.escape(", ".join(env["missing"]))
    if not env["differ"]:
        return head + (f"; alike in all {len(env['fields'])} fields compared: "
                       f"{html.escape(', '.join(env['fields']))}.</p>"
                       if env["recorded"] else ".</p>")
    suspects = {n for v in verdicts for n in v["suspect_nodes"]} | {
        n for v in verdicts for ab in v["suspect_links"] for n in ab}
    rows = []
    for d in env["differ"]:
        cells = []
        for g in d["values"]:
            if g["value"] == d["majority"]:
                continue
            hosts = ", ".join(f"{h} (suspect)" if h in suspects else h for h in g["hosts"])
            more = g["nodes"] - len(g["hosts"])
            cells.append(f"{html.escape(g['value'])}: {html.escape(hosts)}"
                         f"{f' and {more} more' if more > 0 else ''}")
        most = (f"{html.escape(d['majority'])} ({d['values'][0]['nodes']} nodes)"
                if d["majority"] is not None else "no majority")
        rows.append(f"<tr><td>{html.escape(d['label'])}</td><td>{most}</td>"
                    f"<td class='bad'>{'<br>'.join(cells)}</td></tr>")
    return (head + "; they differ in these fields (a node that differs is a lead for "
            "its suspects, and a finding where the scan found none):</p>"
            "<table><tr><th>field</th><th>most nodes</th><th>other nodes</th></tr>"
            f"{''.join(rows)}</table>")


def _suspects_table(verdicts: list[dict]) -> str:
    """The page's lead: every suspect node and link with its evidence in each test and size
    (perf, and for a node how many of its links are below the floor)."""
    nodes = sorted({n for v in verdicts for n in v["suspect_nodes"]})
    links_ = sorted({f"{a}~{b}" for v in verdicts for a, b in v["suspect_links"]})
    confirmed = {c for v in verdicts for c in v.get("confirmed", [])}
    if not nodes and not links_:
        return "<p class='ok'>No suspect node or link in any test and size.</p>"
    head = "".join(f"<th>{html.escape(v['test'])} {size_label(int(v['msg_size_bytes']))}</th>"
                   for v in verdicts)
    groups = {n: w for v in verdicts for n, w in v.get("suspect_groups", {}).items()}

    def where(ns: list[str]) -> str:
        return (f"<td>{html.escape(' ~ '.join(groups.get(n, '?') for n in ns))}</td>"
                if groups else "")

    rows = []
    for n in nodes:
        cells = []
        for v in verdicts:
            p = v["node_perf"].get(n)
            k = len(v["node_links"].get(n, []))
            flag = "bad" if n in v["suspect_nodes"] else ""
            cells.append(f"<td class='{flag}'>{'' if p is None else f'{p:.2f}'}"
                         f"{f' ({k} slow links)' if k else ''}</td>")
        conf = " (confirmed)" if n in confirmed else ""
        rows.append(f"<tr><td>node {html.escape(n)}{conf}</td>{where([n])}"
                    f"{''.join(cells)}</tr>")
    for ab in links_:
        cells = []
        for v in verdicts:
            p = v["link_perf"].get(ab)
            flag = "bad" if ab.split("~") in v["suspect_links"] else ""
            cells.append(f"<td class='{flag}'>{'' if p is None else f'{p:.2f}'}</td>")
        conf = " (confirmed)" if ab in confirmed else ""
        rows.append(f"<tr><td>link {html.escape(ab)}{conf}</td>{where(ab.split('~'))}"
                    f"{''.join(cells)}</tr>")
    shares = sorted({v["suspects_share"] for v in verdicts if v.get("suspects_share")})
    said = "".join(f"<p class='bad'>In {html.escape(v['test'])} "
                   f"{size_label(int(v['msg_size_bytes']))} all {v['outliers']} suspects are "
                   f"in {html.escape(v['suspects_share'])}: look at what they share (a leaf "
                   "or rack switch, its cabling) before the nodes.</p>"
                   for v in verdicts if v.get("suspects_share")) if shares else ""
    return ("<h2>Suspects</h2><p>perf of the node's median link (nodes) or of the link, "
            "1 = the reference; red: below that test's floor.</p>"
            f"<table><tr><th>suspect</th>{'<th>where</th>' if groups else ''}{head}</tr>"
            f"{''.join(rows)}</table>{said}")


def _fragment(run_dir: Path, verdicts: list[dict],
              env: dict | None = None) -> tuple[str, str]:
    title = f"Fabric scan {run_dir.name}"
    parts = [_suspects_table(verdicts), fabricloc.html_section(verdicts, run_dir),
             _env_section(env, verdicts),
             "<p>Every node pair measured once, in rounds of disjoint node pairs. "
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
        shown_nodes = ", ".join(nodes[:50]) + (f" and {len(nodes) - 50} more"
                                               if len(nodes) > 50 else "")
        shown_links = ", ".join(links_[:50]) + (f" and {len(links_) - 50} more"
                                                if len(links_) > 50 else "")
        parts.append(
            f"<p class='{cls}'>suspect nodes: {html.escape(shown_nodes or 'none')}; "
            f"suspect links: {html.escape(shown_links or 'none')}; failed node pairs: "
            f"{len(v['links_failed'])}; measured {v['links_measured']}/"
            f"{v['links_expected']}</p>")
        parts.append(f"<p>reference {v['reference']} {html.escape(_unit(v['metric']))}, "
                     f"noise {v['noise']}, floor {v['floor']} (tolerance {v['tolerance']}, "
                     f"z {v['z']})</p>")
        img = run_dir / v["heatmap"] if v["heatmap"] else None
        if img is None:
            parts.append("<p>heatmap not drawn (fabric --plots none)</p>")
        elif img.is_file():
            b64 = base64.b64encode(img.read_bytes()).decode()
            parts.append(f"<img alt='heatmap' src='data:image/png;base64,{b64}'>")
        rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{p}</td></tr>"
                       for k, p in list(v["link_perf"].items())[:WORST_LINKS])
        parts.append(f"<details><summary>the {min(WORST_LINKS, len(v['link_perf']))} "
                     f"worst node pairs (every one: {html.escape(v['matrix'])})</summary>"
                     f"<table><tr><th>node pair</th><th>perf</th></tr>{rows}</table>"
                     "</details>")
    return title, "\n".join(parts)


def fabric_section(run_dir: Path | str) -> tuple[str, str] | None:
    """(title, HTML fragment) of a scan run for the main report; None if the run is not a
    fabric scan (no fabric.json: run `pairbench fabric` or write_outputs first)."""
    run_dir = Path(run_dir)
    f = run_dir / "fabric.json"
    if not f.is_file():
        return None
    doc = json.loads(f.read_text(encoding="utf-8"))
    return _fragment(run_dir, doc["verdicts"], doc.get("node_env"))
