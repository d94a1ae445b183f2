"""The node pairs (links) of a fabric scan, read from its rows: the first half of
pairbench.analysis.outliers, which judges them (pure functions on data frames).

links(df): one row per measured node pair (link) and point: the link's value is the
aggregate over the pairs between its two nodes — the scope=node aggregate of the
measuring node (pairbench-mpi --pattern: in a scan round every node measures towards
one peer node only), or the run's own aggregate row when one invocation measured the
node pair (verbs: one pairbench-verbs per node pair). The metric is bw_gbit_s where the
test measures bandwidth, else lat_us_p50.

Cost: O(rows) to find the links, every step a vectorised pandas/numpy operation, never a
filter of the whole frame per point or a Python loop over links; read_links() streams
data.csv in chunks of typed columns. For an MPI scan (read_scan: the host list from
metadata.json) it keeps only the scope=node rows, each one's peer derived from its round
and the tournament (partner(), checked against every pair row); otherwise the aggregates
and one (host, peer) per point and host. Node names travel as integer codes (categoricals
of one sorted index: code order = name order) through the judging, the matrix and the
heatmap, and become text only where printed or written. Measured in results/fabric-scale/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from pairbench.analysis.load import read_chunks
from pairbench.contract.schema import find_data_csv, load_metadata

LINK_COLUMNS = ["layer", "test", "variant", "msg_size_bytes", "metric", "higher_is_better",
                "node_a", "node_b", "host", "peer", "value", "status", "error"]
READ_COLUMNS = ["layer", "test", "variant", "pattern", "msg_size_bytes", "pairs", "pair_id",
                "scope", "host", "peer", "status", "error", "bw_gbit_s", "lat_us_p50",
                "run_id", "repetition"]
TEXT = ("layer", "test", "variant", "pattern", "scope", "host", "peer", "status", "error",
        "pair_id", "run_id", "repetition", "pairs", "msg_size_bytes")


def _peer_host(peer: pd.Series) -> pd.Series:
    """The peer column's host: pairbench-mpi without --pattern writes host:rankN."""
    return peer.str.replace(r":rank\d+$", "", regex=True)


def _norm(d: pd.DataFrame) -> pd.DataFrame:
    for col in TEXT:
        if col not in d:
            d[col] = ""
        elif isinstance(d[col].dtype, pd.CategoricalDtype):
            d[col] = d[col].astype(object).fillna("").astype(str)
        else:
            d[col] = d[col].fillna("").astype(str)
    for col in ("bw_gbit_s", "lat_us_p50"):
        d[col] = pd.to_numeric(d[col], errors="coerce") if col in d else np.nan
    return d


def _key(d: pd.DataFrame) -> list[str]:
    key = ["layer", "test", "variant", "pattern", "msg_size_bytes", "pairs"]
    return key + [c for c in ("run_id", "repetition") if c in d]


GOLD = np.uint64(0x9E3779B97F4A7C15)


def _hash(d: pd.DataFrame | pd.Series) -> np.ndarray:
    """One uint64 per row of the given column(s): group keys as integers (factorizing
    several string columns of millions of rows is what made this slow)."""
    return pd.util.hash_pandas_object(d, index=False).to_numpy()


def _reduce(d: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(aggregate rows, one row per (point, host, peer) of the pair rows): all links() needs
    of a chunk of rows. pid = the point, ph = (point, host), as hashes."""
    key = _key(d)
    pid = _hash(d[key])
    with np.errstate(over="ignore"):
        ph = pid ^ (_hash(d["host"]) * GOLD)
    d = d.assign(pid=pid, ph=ph)
    all_rows = (d["pair_id"] == "all").to_numpy()
    agg = d[all_rows]
    pr = d[~all_rows & (d["host"] != "").to_numpy()]
    peer = _peer_host(pr["peer"])
    pr = pd.DataFrame({"ph": pr["ph"].to_numpy(), "peer": peer.to_numpy(),
                       "self": (peer == pr["host"]).to_numpy(),
                       "has_bw": pr["bw_gbit_s"].notna().to_numpy()})
    with np.errstate(over="ignore"):
        pr["pp"] = pr["ph"].to_numpy() ^ (_hash(pr["peer"]) * GOLD * GOLD)
    pr = pr.sort_values("has_bw", ascending=False, kind="stable").drop_duplicates("pp")
    return agg, pr


def _links_from(agg: pd.DataFrame, pr: pd.DataFrame) -> pd.DataFrame:
    """The links of reduced rows (see links())."""
    pr = pr.sort_values("has_bw", ascending=False, kind="stable").drop_duplicates("pp")
    n_peer = pr.groupby("ph", sort=False)["pp"].transform("size")
    # a scan layout: the host measured towards exactly one other host in this point
    one = pr[(n_peer == 1).to_numpy() & ~pr["self"].to_numpy()][["ph", "peer", "has_bw"]]
    prio = agg["scope"].astype(str).map({"node": 0, "all": 1, "": 1})
    agg = agg.assign(prio=prio)[prio.notna().to_numpy()]
    # rows that name their own peer (error rows of node pairs not run) are links as they are
    own = ((agg["scope"] == "node") & (agg["peer"] != "")).to_numpy()
    named = agg[own].assign(has_bw=False)
    # a point/host with a row naming its peer takes no other aggregate (the job's scope=all
    # row on the same host would otherwise become a second value of that host's link)
    agg = agg[~own & ~agg["ph"].isin(named["ph"]).to_numpy()].drop(columns="peer")
    agg = agg.sort_values("prio", kind="stable").drop_duplicates("ph")
    m = agg.merge(one, on="ph", how="inner")
    m = pd.concat([m, named], ignore_index=True) if len(named) else m
    if m.empty:
        return pd.DataFrame(columns=LINK_COLUMNS)
    point_bw = (m["bw_gbit_s"].notna() | m["has_bw"].fillna(False).astype(bool))
    point_bw = point_bw.groupby(m["pid"].to_numpy(), sort=False).transform("any").to_numpy()
    metric = np.where(point_bw, "bw_gbit_s", "lat_us_p50")
    value = np.where(point_bw, m["bw_gbit_s"], m["lat_us_p50"]).astype(float)
    value[(m["status"] != "ok").to_numpy()] = np.nan
    names = pd.Index(pd.concat([pd.Series(m["host"].unique()), pd.Series(m["peer"].unique())],
                               ignore_index=True).astype(str).unique()).sort_values()
    hc = pd.Categorical(m["host"].astype(str), categories=names).codes
    pc = pd.Categorical(m["peer"].astype(str), categories=names).codes
    # categorical node names (sorted categories: code order is name order): a few bytes a
    # link instead of a Python string per cell, for millions of links
    def cat(codes: np.ndarray) -> pd.Categorical:
        return pd.Categorical.from_codes(codes, categories=names)

    out = pd.DataFrame({"layer": _cat(m["layer"]), "test": _cat(m["test"]),
                        "variant": _cat(m["variant"]),
                        "msg_size_bytes": pd.to_numeric(m["msg_size_bytes"].astype(str))
                        .astype(np.int64),
                        "metric": pd.Categorical(metric),
                        "higher_is_better": metric == "bw_gbit_s",
                        "node_a": cat(np.minimum(hc, pc)), "node_b": cat(np.maximum(hc, pc)),
                        "host": cat(hc), "peer": cat(pc),
                        "value": value, "status": _cat(m["status"]),
                        "error": _cat(m["error"])})
    return out[LINK_COLUMNS].reset_index(drop=True)


def _cat(col: pd.Series) -> pd.Categorical:
    return pd.Categorical(col.astype(str))


def _compact(d: pd.DataFrame) -> pd.DataFrame:
    """Text columns as categoricals (rows of a chunk kept until every chunk is read)."""
    return d.assign(**{c: d[c].astype("category") for c in d.columns
                       if c in TEXT or c == "peer"})


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """pd.concat for _compact frames: categoricals stay categoricals (their categories
    united) instead of falling back to a Python object per cell. Empty frames are left out
    (a chunk without pair rows: its categories have no dtype to unite)."""
    frames = [f for f in frames if len(f)] or frames[:1]
    cols = {}
    for c in frames[0].columns:
        if isinstance(frames[0][c].dtype, pd.CategoricalDtype):
            cols[c] = union_categoricals([f[c] for f in frames], ignore_order=True)
        else:
            cols[c] = np.concatenate([f[c].to_numpy() for f in frames])
    return pd.DataFrame(cols)


def links(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (point, measuring host): the node pair it measured and its value."""
    d = _norm(df.copy())
    agg, pr = _reduce(d)
    return _links_from(agg, pr)


def scan_hosts(run: Path | str) -> tuple[str, ...] | None:
    """The host list of a fabric scan run (metadata.json's config.hosts, in the order of
    the job's hostfile: the tournament's positions), or None when run (a run directory or
    its data.csv) is not one. (A verbs scan through ssh labels its rows nodes:A-B, not
    scan:R: read_links then reads its pair rows.)"""
    meta = load_metadata(run)
    c = meta.get("config") or {}
    if meta.get("kind") != "pairbench fabric" or c.get("layer") not in ("mpi", "verbs"):
        return None
    return tuple(c.get("hosts") or ()) or None


def partner(pos: np.ndarray, rnd: np.ndarray, k: int) -> np.ndarray:
    """The tournament partner of position pos in round rnd (1-based) over k positions
    (runner.schedule.round_links, vectorised; core/pb_scan.c computes the same for both
    executables): -1 for the bye. The circle method: position 0 stays, the others turn
    one slot a round, slot i plays slot m-1-i."""
    m = k + k % 2
    pos, rnd = np.asarray(pos, dtype=np.int64), np.asarray(rnd, dtype=np.int64)
    slot = np.where(pos == 0, 0, 1 + (pos - 1 + rnd - 1) % (m - 1))
    other = m - 1 - slot
    q = np.where(other == 0, 0, 1 + (other - 1 - (rnd - 1)) % (m - 1))
    return np.where((q >= k) | (pos >= k) | (pos < 0) | (rnd < 1), -1, q)


class _NotDerivable(Exception):
    """A scan's rows whose peers the tournament does not give (numbered otherwise)."""


def _lut(cats: pd.Index, f) -> np.ndarray:
    """f of each category, and -1 for a missing cell (code -1 indexes the last slot)."""
    return np.array([f(str(c)) for c in cats] + [-1], dtype=np.int64)


FAST_COLUMNS = ["layer", "test", "variant", "pattern", "msg_size_bytes", "pair_id", "scope",
                "host", "peer", "status", "error", "bw_gbit_s", "lat_us_p50"]


class _PeerMissing(Exception):
    """A node row without its peer among rows read without the pair rows."""


def _scan_chunk(ch: pd.DataFrame, at: dict[str, int], k: int,
                named: bool = False, luts: dict | None = None) -> pd.DataFrame:
    """The links of a chunk of an MPI scan's rows, by tournament position: each
    scope=node row (the measuring node's value of its node pair) with the peer it names
    (pairbench-mpi names it, core/pb_engine.c) or, when empty (an older executable), its
    peer from the round number (pattern scan:R); the pair rows only check that the
    tournament gives the peer they name (else _NotDerivable: read the pair rows instead).
    named: the chunk holds no pair rows (read without them), so a node row without its peer
    raises _PeerMissing (read again with them). luts: a dict kept across the chunks of one
    read, holding each column's lookup table by its categories (a Parquet row group's
    dictionary of 4,096 host names is the same in every group: mapped once, not 120 times)."""
    def code(col: str, f) -> np.ndarray:
        c = ch[col].cat
        if luts is None:
            return _lut(c.categories, f)[c.codes.to_numpy()]
        key = (col, tuple(c.categories))
        lut = luts.get(key)
        if lut is None:
            lut = luts[key] = _lut(c.categories, f)
        return lut[c.codes.to_numpy()]

    def rnd_of(t: str) -> int:
        return int(t[5:]) if t.startswith("scan:") and t[5:].isdigit() else -1

    host = code("host", lambda t: at.get(t, -1 if t else -2))
    peer = code("peer", lambda t: at.get(re.sub(r":rank\d+$", "", t), -1 if t else -2))
    rnd = code("pattern", rnd_of)
    agg = (ch["pair_id"] == "all").to_numpy()
    pair = ~agg & (host != -2)
    if (pair & ((host < 0) | (peer < 0) | (rnd < 0))).any():
        raise _NotDerivable("a pair row outside the tournament")
    if pair.any() and (partner(host[pair], rnd[pair], k) != peer[pair]).any():
        raise _NotDerivable("the job numbered its nodes otherwise")
    node = agg & (ch["scope"] == "node").to_numpy()
    h, p, r = host[node], peer[node], rnd[node]
    if (h < 0).any() or (p == -1).any():
        raise _NotDerivable("a node row outside the host list")
    derived = p == -2  # an older executable leaves a node row's peer empty
    if named and derived.any():
        raise _PeerMissing
    if (r[derived] < 0).any():
        raise _NotDerivable("a node row without a round")
    p = np.where(derived, partner(h, r, k), p)
    if (p < 0).any():
        raise _NotDerivable("a node row in its bye")
    sub = ch.loc[node, ["layer", "test", "variant", "msg_size_bytes", "status", "error"]]
    bw = ch["bw_gbit_s"].to_numpy(dtype=float)[node]
    has_bw = ~np.isnan(bw)
    # one value per row (the bandwidth where the row has one, else the latency); which
    # metric a (test, size) uses is decided over all its rows at the end
    value = np.where(has_bw, bw, ch["lat_us_p50"].to_numpy(dtype=float)[node])
    pos = np.int16 if k < 2**15 else np.int32
    return sub.assign(value=value, has_bw=has_bw, hpos=h.astype(pos),
                      ppos=p.astype(pos)).reset_index(drop=True)


def _read_scan_links(csv_path: Path | str, hosts: Sequence[str],
                     chunksize: int) -> pd.DataFrame:
    """read_links() of an MPI scan by tournament positions: only the scope=node rows kept
    (a few bytes each: codes of categoricals), their peer derived, never a node name per
    link as text."""
    at = {h: i for i, h in enumerate(hosts)}
    k = len(hosts)
    path = Path(csv_path)
    head = _columns(path)
    missing = set(FAST_COLUMNS) - set(head)
    if missing:
        raise _NotDerivable(f"no column {sorted(missing)}")
    if path.suffix == ".parquet":
        # the node rows' row groups only (scanparquet keeps the pair rows apart): one row
        # per node pair, when they name their peers
        try:
            return _read_parquet_links(path, hosts, at)
        except _PeerMissing:
            pass
    num = ("bw_gbit_s", "lat_us_p50")
    parts = [_scan_chunk(ch, at, k) for ch in read_chunks(path, FAST_COLUMNS, num,
                                                           chunksize)]
    if not parts or not sum(map(len, parts)):
        return pd.DataFrame(columns=LINK_COLUMNS)
    d = _concat(parts)
    parts.clear()  # the chunks' rows, now in d
    cols = {c: d.pop(c).array for c in CODED}
    arrs = {"hpos": d.pop("hpos").to_numpy(), "ppos": d.pop("ppos").to_numpy(),
            "value": d.pop("value").to_numpy(), "has": d.pop("has_bw").to_numpy()}
    del d
    return _links_out(cols, arrs, hosts)


CODED = ("layer", "test", "variant", "msg_size_bytes", "status", "error")


class _Codes:
    """One categorical column filled chunk by chunk into a preallocated array of codes
    (int8, widened only when the column has more values): each chunk's own categories
    mapped onto the column's, so no text per row is ever made."""

    def __init__(self, n: int) -> None:
        self.codes = np.zeros(n, dtype=np.int8)
        self.at: dict = {}

    def put(self, lo: int, cat: pd.Categorical) -> None:
        m = np.array([self.at.setdefault(v, len(self.at)) for v in cat.categories],
                     dtype=np.int64)
        if len(self.at) > np.iinfo(self.codes.dtype).max:
            self.codes = self.codes.astype(np.int32)
        self.codes[lo:lo + len(cat)] = m[cat.codes] if len(m) else 0

    def cat(self, n: int) -> pd.Categorical:
        return pd.Categorical.from_codes(self.codes[:n], categories=list(self.at))


def _arrow_cat(col: Any) -> pd.Categorical:
    """A pyarrow column (read as a dictionary, or a number) as a pandas categorical of its
    text ('' for a missing cell), without a Python string per row: the dictionary's
    values are the categories, its indices the codes."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(col.type) and (col.num_chunks != 1 or col.null_count):
        col = col.cast(col.type.value_type)
    if not pa.types.is_dictionary(col.type):
        if col.null_count and pa.types.is_string(col.type):
            col = pc.fill_null(col, "")
        col = col.combine_chunks().dictionary_encode()
    else:
        col = col.chunk(0)
    values = col.dictionary
    if not pa.types.is_string(values.type):  # numbers: their text as the CSV's ("8")
        values = pc.fill_null(pc.cast(values, pa.string()), "")
    idx = col.indices
    cats = values.to_pylist()
    if idx.null_count:  # a missing number: the '' category
        if "" not in cats:
            cats.append("")
        idx = pc.fill_null(idx, cats.index(""))
    return pd.Categorical.from_codes(idx.to_numpy(zero_copy_only=False),
                                     categories=pd.Index(cats, dtype=object))


def _read_parquet_links(path: Path, hosts: Sequence[str], at: dict[str, int]) -> pd.DataFrame:
    """_read_scan_links() of a data.parquet whose node rows name their peers: the node row
    groups read with their text columns as dictionaries (pyarrow read_dictionary), each
    group's links written into arrays allocated once for every row of those groups (no
    per-group frames kept and concatenated: the peak is the links plus one group).
    _PeerMissing when a node row does not name its peer."""
    import pyarrow.parquet as pq

    from pairbench.runner.scanparquet import node_groups, open_rows, parquet_files, read_group

    text = [c for c in FAST_COLUMNS if c not in ("bw_gbit_s", "lat_us_p50")]
    files = []
    for p in parquet_files(path):
        open_rows(p)  # a file that is not readable: UsageError naming it
        f = pq.ParquetFile(p, read_dictionary=text)
        groups = node_groups(f)
        files.append((p, f, groups))
    n = sum(f.metadata.row_group(i).num_rows for _, f, gs in files for i in gs)
    k = len(hosts)
    pos = np.int16 if k < 2**15 else np.int32
    hpos, ppos = np.zeros(n, dtype=pos), np.zeros(n, dtype=pos)
    value, has_bw = np.zeros(n, dtype=float), np.zeros(n, dtype=bool)
    codes = {c: _Codes(n) for c in CODED}
    lo, luts = 0, {}
    for p, f, groups in files:
        for i in groups:
            t = read_group(f, p, i, FAST_COLUMNS)
            ch = pd.DataFrame({c: (_arrow_cat(t.column(c)) if c in text
                                   else t.column(c).to_numpy()) for c in FAST_COLUMNS})
            del t
            sub = _scan_chunk(ch, at, k, named=True, luts=luts)
            del ch
            m = len(sub)
            hpos[lo:lo + m], ppos[lo:lo + m] = sub["hpos"], sub["ppos"]
            value[lo:lo + m], has_bw[lo:lo + m] = sub["value"], sub["has_bw"]
            for c in CODED:
                codes[c].put(lo, sub[c].array)
            lo += m
    if not lo:
        return pd.DataFrame(columns=LINK_COLUMNS)
    arrs = {"hpos": hpos[:lo], "ppos": ppos[:lo], "value": value[:lo], "has": has_bw[:lo]}
    del hpos, ppos, value, has_bw  # (held by arrs alone: freed as _links_out uses them)
    return _links_out({c: codes.pop(c).cat(lo) for c in CODED}, arrs, hosts)


def _drop_unused(c: pd.Categorical) -> pd.Categorical:
    """c.remove_unused_categories() by counting codes (not a sort of every row's)."""
    codes = c.codes
    used = np.bincount(codes[codes >= 0], minlength=len(c.categories)) > 0
    if used.all():
        return c
    new = np.cumsum(used) - 1
    out = np.where(codes >= 0, new[np.maximum(codes, 0)], -1).astype(codes.dtype)
    return pd.Categorical.from_codes(out, categories=c.categories[used])


def _links_out(cols: dict, arrs: dict, hosts: Sequence[str]) -> pd.DataFrame:
    """The links frame (LINK_COLUMNS) of the node rows read: cols the CODED columns as
    categoricals, arrs hpos/ppos (tournament positions), value and has (whether it is a
    bandwidth); both dicts are emptied as their arrays are used (the caller's are freed
    here, not held beside their copies)."""
    names = pd.Index(sorted(hosts))
    dtype = np.int16 if len(names) < 2**15 else np.int32
    # position -> code (the index of the name in sorted order)
    to_code = np.argsort(np.argsort(np.array(hosts, dtype=object))).astype(dtype)
    hc = to_code[arrs.pop("hpos")]
    pc = to_code[arrs.pop("ppos")]
    value, has = arrs.pop("value"), arrs.pop("has")
    # bandwidth is the metric of a (layer, test, variant, size) where any row has one: the
    # group's key from the four columns' codes, any() by counting
    n_keys = int(np.prod([len(cols[c].categories) + 1 for c in
                          ("layer", "test", "variant", "msg_size_bytes")]))
    key = np.zeros(len(value), dtype=np.int32 if n_keys < 2**31 else np.int64)
    for c in ("layer", "test", "variant", "msg_size_bytes"):
        cc = cols[c]
        key *= len(cc.categories) + 1
        key += cc.codes
        key += 1
    bw = (np.bincount(key, weights=has) > 0)[key]  # key: < the product of (categories + 1)
    if not value.flags.writeable:  # (pandas may hand out a read-only view)
        value = value.copy()
    status = cols["status"]
    value[(bw & ~has) | np.asarray(status != "ok")] = np.nan
    del has
    # the links grouped by (layer, test, variant, size), in their order within a group (a
    # stable radix sort of the small group key): each (test, size) is then one slice of the
    # frame, which judging takes as views instead of copying its columns
    if n_keys < 2**15:
        order = np.argsort(key.astype(np.int16), kind="stable")
    else:
        order = np.argsort(key, kind="stable")
    del key
    if len(order) < 2**31:
        order = order.astype(np.int32)
    hc, pc, value, bw = hc[order], pc[order], value[order], bw[order]
    for c in list(cols):
        cols[c] = cols.pop(c)[order]
    del order
    status = cols["status"]

    def cat(codes: np.ndarray) -> pd.Categorical:
        return pd.Categorical.from_codes(codes, categories=names)

    size = cols["msg_size_bytes"]
    sizes = pd.to_numeric(pd.Series(size.categories.astype(str))).to_numpy(np.int64)
    if len(sizes) and sizes.max() < 2**31:
        sizes = sizes.astype(np.int32)  # 4 bytes a link, not 8: 33 million links at 4,096
    out = pd.DataFrame({"layer": _drop_unused(cols["layer"]),
                        "test": _drop_unused(cols["test"]),
                        "variant": _drop_unused(cols["variant"]),
                        "msg_size_bytes": sizes[size.codes],
                        "metric": _drop_unused(pd.Categorical.from_codes(
                            bw.astype(np.int8), categories=["lat_us_p50", "bw_gbit_s"])),
                        "higher_is_better": bw,
                        "node_a": cat(np.minimum(hc, pc)), "node_b": cat(np.maximum(hc, pc)),
                        "host": cat(hc), "peer": cat(pc), "value": value,
                        "status": _drop_unused(status),
                        "error": _drop_unused(cols["error"])}, copy=False)
    return out[LINK_COLUMNS]


def _columns(path: Path) -> list[str]:
    """The columns of a rows file (data.csv or data.parquet)."""
    if path.suffix == ".parquet":
        from pairbench.runner.scanparquet import open_rows, parquet_files

        files = parquet_files(path)
        return list(open_rows(files[0]).schema_arrow.names) if files else []
    return list(pd.read_csv(path, nrows=0).columns)


def read_links(csv_path: Path | str, chunksize: int = 250_000,
               hosts: Sequence[str] | None = None) -> pd.DataFrame:
    """links() of a run's rows file (data.csv or data.parquet), streamed: chunks of the
    needed columns (strings and two floats), each reduced to its aggregates and (point,
    host, peer) triples before the next is read, so memory follows the number of links,
    not of rows.

    hosts: an MPI scan's host list (scan_hosts()): then a node row's peer comes from its
    round and the tournament (pairbench-mpi leaves it empty; the job numbers its nodes in
    hostfile order), checked against every pair row, and only the node rows are kept;
    when a pair row disagrees (the job numbered its nodes otherwise) the pair rows are
    read as without hosts."""
    path = Path(csv_path)
    if path.suffix != ".parquet" and path.stat().st_size == 0:
        # not even a header: a job that died before its first row (a confirmation job
        # whose rank crashed at start-up did); its failure is in metadata.json
        return pd.DataFrame(columns=LINK_COLUMNS)
    if hosts:
        try:
            return _read_scan_links(csv_path, hosts, chunksize)
        except _NotDerivable:
            pass
    aggs, prs = [], []
    reader: Iterator[pd.DataFrame] = read_chunks(path, READ_COLUMNS,
                                                 ("bw_gbit_s", "lat_us_p50"), chunksize)
    keep = [c for c in (*TEXT, "bw_gbit_s", "lat_us_p50", "pid", "ph") if c not in
            ("pair_id", "pattern", "pairs", "run_id", "repetition")]
    for chunk in reader:
        a, p = _reduce(_norm(chunk))
        aggs.append(_compact(a[[c for c in keep if c in a]]))
        prs.append(_compact(p))
    if not aggs:
        return pd.DataFrame(columns=LINK_COLUMNS)
    return _links_from(_concat(aggs), _concat(prs))


def node_codes(lk: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, pd.Index]:
    """(node_a codes, node_b codes, names): each link's two nodes as integers into one
    sorted index of names (code order is name order). read_links() gives categoricals
    already; other frames (names as text) are coded here."""
    a, b = lk["node_a"], lk["node_b"]
    if (isinstance(a.dtype, pd.CategoricalDtype) and isinstance(b.dtype, pd.CategoricalDtype)
            and a.cat.categories.equals(b.cat.categories)
            and a.cat.categories.is_monotonic_increasing):
        return a.cat.codes.to_numpy(), b.cat.codes.to_numpy(), a.cat.categories
    names = pd.Index(pd.unique(np.concatenate([a.astype(str).to_numpy(dtype=object),
                                               b.astype(str).to_numpy(dtype=object)])))
    names = names.sort_values()
    return (names.get_indexer(a.astype(str)).astype(np.int32),
            names.get_indexer(b.astype(str)).astype(np.int32), names)


def _cats(codes: np.ndarray, names: pd.Index) -> pd.Categorical:
    return pd.Categorical.from_codes(codes, categories=names)


def _dense_order(key: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(the order that sorts key, key sorted) for key = a*n + b of n nodes, when every key
    is distinct and the links cover a good share of the n*n pairs (a scan: about half):
    each link's position written into a table of every pair and read back in key order —
    one scatter and one pass instead of a sort (8.4 million links at 4,096 nodes: ~0.1 s
    instead of ~0.6 s). None when it does not apply (a node pair measured more than once,
    a sparse set of pairs)."""
    if not len(key) or n * n > 4 * len(key) + (1 << 20):
        return None
    slot = np.full(n * n, -1, dtype=np.int32 if len(key) < 2**31 else np.int64)
    slot[key] = np.arange(len(key), dtype=slot.dtype)
    present = np.flatnonzero(slot >= 0).astype(key.dtype)
    if len(present) != len(key):  # fewer: a key repeated
        return None
    return slot[present], present


def link_values(lk: pd.DataFrame) -> pd.DataFrame:
    """One row per node pair of ONE (test, size, metric): node_a, node_b (categoricals of
    the node names, sorted by (node_a, node_b)) and the median of its ok values (NaN if it
    never measured ok), on integer node codes: a node pair measured once (a scan without
    repetitions) is not grouped at all."""
    a, b, names = node_codes(lk)
    ok = lk["value"].where(lk["status"] == "ok").to_numpy(dtype=float)
    # 4 bytes a key up to 46,340 nodes (8.4 million links at 4,096: 34 MB less at the peak)
    kt = np.int32 if len(names) ** 2 < 2**31 else np.int64
    key = a.astype(kt) * kt(len(names)) + b
    dense = _dense_order(key, len(names))
    if dense is not None:  # distinct keys, in order: no sort, no repeats to group
        order, key = dense
        ok = ok[order]
    else:
        if len(names) < 2**15:  # the stable order of key by two 16-bit keys: numpy's
            order = np.lexsort((b.astype(np.int16), a.astype(np.int16)))  # radix sort
        else:
            order = np.argsort(key, kind="stable")
        key, ok = key[order], ok[order]
    if dense is None and len(key) > 1 and (key[1:] == key[:-1]).any():
        med = pd.Series(ok).groupby(key, sort=True).median()
        key, ok = med.index.to_numpy(), med.to_numpy()
    n = max(len(names), 1)
    dtype = np.int16 if n < 2**15 else np.int32
    return pd.DataFrame({"node_a": _cats((key // n).astype(dtype), names),
                         "node_b": _cats((key % n).astype(dtype), names), "value": ok})


def matrix(lk: pd.DataFrame) -> pd.DataFrame:
    """The node x node matrix of one metric's links in long form: node_a, node_b (sorted),
    value (median over repeats); at 4,096 nodes 8.4 million rows, never a K x K frame."""
    return link_values(lk)


def read_scan(run: Path | str) -> pd.DataFrame:
    """The links of a scan run (a run directory or its data.csv), by the fast path of an
    MPI scan (scan_hosts) where it applies."""
    return read_links(find_data_csv(Path(run)), hosts=scan_hosts(run))
