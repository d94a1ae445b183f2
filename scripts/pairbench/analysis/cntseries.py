"""Counters over time (docs/health.md "Counters over time"): every node's port counters,
sampled every --counters-interval by pairbench-verbs (verbs/vb_cntseries.h), as deltas per
interval, stored beside the soak's buckets and lined up with its stalls.

The executable writes one file per node, PREFIX-<host>.pbcnt.csv: two comment lines (format,
host=, interval_s=, netdev:DEV=NETDEV), a header t_mono_ns,t_unix_ns,DEV/PORT/SOURCE/NAME...
and one line of cumulative values per sample (an empty cell: the file could not be read).

Storage: `counters_series.parquet` in the run directory, laid out as soak.parquet (one
Parquet file, dictionary-encoded text columns, zstd), one row per (node, counter, interval)
whose delta is not 0: point, node, device, port, source, counter, class, t_unix_ns (the
interval's end, CLOCK_REALTIME: the soak's start_unix_ns is on the same clock), interval_s,
delta. An interval whose row is absent moved by 0; a counter that went backwards (a reset or
a wrap) keeps its negative delta. `node` is the host as the executable names it (the rows'
host column).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pairbench.contract.counters import counter_class
from pairbench.errors import UsageError

SUFFIX = ".pbcnt.csv"
PARQUET = "counters_series.parquet"
FORMAT_LINE = "# pairbench counters series 1"
# A stall's neighbourhood: counters that moved from one interval before its start to one
# interval after its end are lined up with it (a sample's interval straddles the edges).
EDGE_INTERVALS = 1


@dataclass(frozen=True)
class SeriesFile:
    path: Path
    host: str
    interval_s: float
    netdevs: dict[str, str]

    @property
    def point(self) -> str:
        """The sweep point: the file name without -<host>.pbcnt.csv (runner/plan.py names
        the prefix soak/<point>, as the soak's series)."""
        name = self.path.name
        tail = f"-{self.host}{SUFFIX}"
        return name[:-len(tail)] if name.endswith(tail) else name[:-len(SUFFIX)]


def series_files(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"*{SUFFIX}")) if folder.is_dir() else []


def read_head(path: Path) -> SeriesFile:
    """The two comment lines of a series file; UsageError naming the file when they are not
    pairbench's."""
    with open(path, encoding="utf-8", errors="replace") as f:
        first, second = f.readline().rstrip("\n"), f.readline().rstrip("\n")
    if first != FORMAT_LINE or not second.startswith("# "):
        raise UsageError(f"{path}: not a pairbench counters series (first line {first[:60]!r})")
    words = dict(w.split("=", 1) for w in second[2:].split() if "=" in w)
    try:
        interval = float(words.get("interval_s", "nan"))
    except ValueError:
        interval = float("nan")
    nets = {k.split(":", 1)[1]: v for k, v in words.items() if k.startswith("netdev:")}
    return SeriesFile(path=Path(path), host=words.get("host", ""), interval_s=interval,
                      netdevs=nets)


def read_samples(path: Path):
    """The samples of a file as a pyarrow Table (t_mono_ns, t_unix_ns, then one int64 column
    per counter, null where unreadable). A last line cut short (the run was killed while it
    wrote) is dropped."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    raw = Path(path).read_bytes()
    body = raw.split(b"\n", 2)[2] if raw.count(b"\n") >= 2 else b""
    if not body.endswith(b"\n"):  # an unfinished last sample
        body = body[:body.rfind(b"\n") + 1]
    header = body.split(b"\n", 1)[0].decode("utf-8", "replace").split(",")
    if len(header) < 2 or header[:2] != ["t_mono_ns", "t_unix_ns"]:
        raise UsageError(f"{path}: no t_mono_ns,t_unix_ns header")
    try:
        return pcsv.read_csv(pa.py_buffer(body), convert_options=pcsv.ConvertOptions(
            column_types={c: pa.int64() for c in header}))
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise UsageError(f"{path}: {str(exc).splitlines()[0]}") from None


def _schema():
    import pyarrow as pa

    text = pa.dictionary(pa.int32(), pa.string())
    return pa.schema([("point", text), ("node", text), ("device", text), ("port", pa.int32()),
                      ("source", text), ("counter", text), ("class", text),
                      ("t_unix_ns", pa.int64()), ("interval_s", pa.float64()),
                      ("delta", pa.int64())])


def deltas(head: SeriesFile, samples) -> dict[str, np.ndarray]:
    """The non-zero deltas of one file as columns (see the module's storage note)."""
    t_unix = samples.column("t_unix_ns").to_numpy(zero_copy_only=False).astype(np.int64)
    t_mono = samples.column("t_mono_ns").to_numpy(zero_copy_only=False).astype(np.int64)
    cols: dict[str, list] = {k: [] for k in ("device", "port", "source", "counter", "class",
                                             "t_unix_ns", "interval_s", "delta")}
    if len(t_unix) < 2:
        return {k: np.asarray(v) for k, v in cols.items()}
    step = np.diff(t_mono) / 1e9
    for name in samples.column_names[2:]:
        parts = name.split("/", 3)
        if len(parts) != 4:
            continue
        dev, port, source, counter = parts
        v = samples.column(name).to_numpy(zero_copy_only=False)
        v = np.asarray(v, dtype=np.float64)  # null -> nan
        d = np.diff(v)
        moved = np.flatnonzero(np.isfinite(d) & (d != 0))
        if not len(moved):
            continue
        n = len(moved)
        cols["device"] += [dev] * n
        cols["port"] += [int(port)] * n
        cols["source"] += [source] * n
        cols["counter"] += [counter] * n
        cols["class"] += [counter_class(counter)] * n
        cols["t_unix_ns"] += t_unix[moved + 1].tolist()
        cols["interval_s"] += step[moved].tolist()
        cols["delta"] += d[moved].astype(np.int64).tolist()
    return {k: np.asarray(v) for k, v in cols.items()}


def convert(folder: Path, out: Path, keep: bool = False) -> int:
    """Every counters series under folder into out (one row group per file); the files are
    removed afterwards unless keep. The number of rows (0: no file, nothing written)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = series_files(folder)
    if not files:
        return 0
    schema = _schema()
    tmp = out.with_name(out.name + ".part")
    rows = 0
    with pq.ParquetWriter(tmp, schema, compression="zstd") as w:
        for path in files:
            head = read_head(path)
            d = deltas(head, read_samples(path))
            n = len(d["delta"])
            if not n:
                continue
            cols = {"point": [head.point] * n, "node": [head.host] * n, **d}
            arrays = [pa.array([str(x) for x in cols[f.name]], pa.string()).dictionary_encode()
                      if pa.types.is_dictionary(f.type) else pa.array(cols[f.name], f.type)
                      for f in schema]
            w.write_table(pa.Table.from_arrays(arrays, schema=schema))
            rows += n
    tmp.replace(out)
    if not keep:
        for path in files:
            path.unlink(missing_ok=True)
    return rows


def run_deltas(run: Path):
    """A run's counters over time as a pandas DataFrame (from counters_series.parquet, else from
    its series files); None when the run has none."""
    import pandas as pd

    pq_path = run / PARQUET
    if pq_path.is_file():
        import pyarrow.parquet as pq

        df = pq.read_table(pq_path).to_pandas()
        for c in ("point", "node", "device", "source", "counter", "class"):
            df[c] = df[c].astype(str)
        return df
    frames = []
    for path in series_files(run / "soak"):
        head = read_head(path)
        d = deltas(head, read_samples(path))
        frames.append(pd.DataFrame({"point": head.point, "node": head.host, **d}))
    return pd.concat(frames, ignore_index=True) if frames else None


@dataclass(frozen=True)
class Moved:
    """A counter that moved on a node over some span: its total and when it first moved."""

    node: str
    device: str
    port: int
    source: str
    counter: str
    cls: str
    delta: int
    first_unix_ns: int

    @property
    def where(self) -> str:
        return f"{self.node} {self.device}/{self.port} {self.source}"


def moved(df, point: str | None = None, lo_ns: int | None = None,
          hi_ns: int | None = None, classes: tuple[str, ...] | None = None) -> list[Moved]:
    """Counters that moved (sum of deltas != 0) in intervals ending within [lo_ns, hi_ns], of
    a point and of the given classes; largest |delta| first within each class order
    (error, congestion, data, other)."""
    if df is None or not len(df):
        return []
    sel = df
    if point is not None:
        sel = sel[sel["point"] == point]
    if lo_ns is not None:
        sel = sel[sel["t_unix_ns"] >= lo_ns]
    if hi_ns is not None:
        sel = sel[sel["t_unix_ns"] <= hi_ns]
    if classes is not None:
        sel = sel[sel["class"].isin(classes)]
    if not len(sel):
        return []
    g = sel.groupby(["node", "device", "port", "source", "counter", "class"], sort=False)
    agg = g.agg(delta=("delta", "sum"), first=("t_unix_ns", "min")).reset_index()
    agg = agg[agg["delta"] != 0]
    order = {"error": 0, "congestion": 1, "data": 2, "other": 3}
    agg["o"] = agg["class"].map(order).fillna(4)
    agg["a"] = -agg["delta"].abs()
    agg = agg.sort_values(["o", "a", "node", "counter"])
    return [Moved(node=r.node, device=r.device, port=int(r.port), source=r.source,
                  counter=r.counter, cls=r["class"], delta=int(r.delta),
                  first_unix_ns=int(r.first)) for _, r in agg.iterrows()]


def quiet_counters(df, point: str, lo_ns: int, hi_ns: int, interval_s: float,
                   classes: tuple[str, ...] = ("data",)) -> list[tuple[str, str, str]]:
    """(node, device/port source, counter) of the given classes that moved outside [lo_ns,
    hi_ns] (in two intervals or more) but in no interval wholly inside it: traffic that
    stopped there. Only for a span of two intervals or more (a shorter one may hold no
    sample's end)."""
    if df is None or not len(df) or not interval_s > 0 or hi_ns - lo_ns < 2 * interval_s * 1e9:
        return []
    sel = df[(df["point"] == point) & df["class"].isin(classes)]
    out = []
    for key, g in sel.groupby(["node", "device", "port", "source", "counter"], sort=True):
        # the intervals wholly inside the span: ending at least one interval after its start
        inside = g[(g["t_unix_ns"] >= lo_ns + interval_s * 1e9) & (g["t_unix_ns"] <= hi_ns)]
        if len(inside) == 0 and len(g) >= 2:
            node, dev, port, source, counter = key
            out.append((str(node), f"{dev}/{port} {source}", str(counter)))
    return out


@dataclass(frozen=True)
class StallCounters:
    """One stall event of a soak point and what moved around it."""

    point: str
    msg_size_bytes: int
    pair_ids: tuple[int, ...]
    start_s: float        # after the point's common start (the soak's bucket 0)
    length_s: float
    moved: tuple[Moved, ...]        # error and congestion counters around the stall
    stopped: tuple[tuple[str, str, str], ...]  # data counters that stood still during it


def stall_counters(run: Path, df=None) -> list[StallCounters]:
    """Every stall event of the run's soak (analysis/soak.py: a stall, or stalls of several
    flows that overlap) with the error/congestion counters that moved on any node from
    EDGE_INTERVALS interval before it to one after, and the data counters that stood still."""
    from pairbench.analysis import soak

    df = run_deltas(run) if df is None else df
    if df is None or not len(df):
        return []
    out = []
    for ps in soak.stability(run):
        flows = {r.flow.pair_id: r.flow for r in ps.flows}
        if not flows:
            continue
        start_unix = min(f.start_unix_ns for f in flows.values())
        pts = df[df["point"] == ps.point]
        step = float(pts["interval_s"].median()) if len(pts) else 0.0
        events = [(e.pair_ids, e.start_bucket, e.end_bucket - e.start_bucket) for e in ps.shared]
        for r in ps.flows:
            for st in r.stats.stalls:
                if not any(r.flow.pair_id in e.pair_ids and st.start_bucket < e.end_bucket
                           and st.start_bucket + st.buckets > e.start_bucket for e in ps.shared):
                    events.append(((r.flow.pair_id,), st.start_bucket, st.buckets))
        for ids, b0, nb in sorted(events, key=lambda e: e[1]):
            lo = start_unix + int(b0 * ps.bucket_s * 1e9)
            hi = lo + int(nb * ps.bucket_s * 1e9)
            edge = int(EDGE_INTERVALS * step * 1e9)
            out.append(StallCounters(
                point=ps.point, msg_size_bytes=ps.msg_size_bytes, pair_ids=tuple(ids),
                start_s=b0 * ps.bucket_s, length_s=nb * ps.bucket_s,
                moved=tuple(moved(pts, None, lo - edge, hi + edge, ("error", "congestion"))),
                stopped=tuple(quiet_counters(pts, ps.point, lo, hi, step))))
    return out
