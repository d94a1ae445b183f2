"""A soak's time series: the flows' buckets read, stored and judged (docs/methodology.md "Soak").

The executable writes one series file per flow and point (contract/soakfile.py) and puts each
flow's summary in its row (stalls, longest_stall_s, min_bucket_share, ...; core/pb_soak.c).
Here the same numbers are computed again from the series (flow_stats: the same rules, tested
equal to the rows on real runs), with what a row cannot hold: every stall's start and length,
and per point which stalls coincide across flows (a shared cause) and which stand alone.

Storage: `soak.parquet` in the run directory, one row per (flow, bucket): point, test,
msg_size_bytes, pairs, pattern, pair_id, bucket, messages, checked, corrupt; each flow's header
(bucket_s, start time, host, peer, partial, ...) in the file's key-value metadata
("pairbench.soak.flows", JSON). Written flow by flow in chunks of CHUNK buckets, so memory
stays bounded whatever the soak's length; the series files are removed once it is written.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from pairbench.contract import soakfile
from pairbench.contract.soakfile import SoakHeader
from pairbench.errors import UsageError

PARQUET = "soak.parquet"
CHUNK = 1 << 20  # buckets per row group (16 MiB of series, ~24 MiB in Arrow)
META_KEY = b"pairbench.soak.flows"
BUCKET_DTYPE = np.dtype([("messages", "<u8"), ("checked", "<u4"), ("corrupt", "<u4")])


@dataclass(frozen=True)
class Stall:
    start_bucket: int
    buckets: int

    def start_s(self, bucket_s: float) -> float:
        return self.start_bucket * bucket_s

    def length_s(self, bucket_s: float) -> float:
        return self.buckets * bucket_s


@dataclass(frozen=True)
class FlowStats:
    """One flow's buckets judged as core/pb_soak.c judges them (messages per bucket)."""

    buckets: int
    min_msgs: float
    p1_msgs: float   # nan when buckets < 2
    p50_msgs: float  # nan when buckets < 2
    stall_fraction: float
    stalls: tuple[Stall, ...]
    sum_msgs: int
    checked: int
    corrupt: int

    @property
    def min_share(self) -> float:
        return self.min_msgs / self.p50_msgs if self.p50_msgs > 0 else math.nan

    @property
    def longest(self) -> int:
        return max((s.buckets for s in self.stalls), default=0)


def _nearest_rank(sorted_v: np.ndarray, num: int, den: int = 100000) -> float:
    """core/pb_stats.h's percentile: rank ceil(q n), reported only when n >= den/(den-num)."""
    n = len(sorted_v)
    if n == 0 or n * (den - num) < den:
        return math.nan
    rank = max(1, (num * n + den - 1) // den)
    return float(sorted_v[rank - 1])


def stall_runs(msgs: np.ndarray, threshold: float) -> tuple[Stall, ...]:
    """Maximal runs of buckets with messages < threshold (strictly)."""
    below = np.asarray(msgs, dtype=np.float64) < threshold
    if not below.any():
        return ()
    edges = np.diff(np.concatenate(([0], below.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return tuple(Stall(int(a), int(b - a)) for a, b in zip(starts, ends, strict=True))


def flow_stats(buckets: np.ndarray, stall_fraction: float) -> FlowStats:
    """min, p1, p50 of the messages per bucket (zero buckets included) and the stalls: runs
    below stall_fraction x p50 (none when there is no median or it is 0)."""
    msgs = np.asarray(buckets["messages"] if buckets.dtype.names else buckets, dtype=np.uint64)
    s = np.sort(msgs)
    p50 = _nearest_rank(s, 50000)
    threshold = 0.0 if math.isnan(p50) else stall_fraction * p50
    has = buckets.dtype.names is not None
    return FlowStats(
        buckets=len(msgs), min_msgs=float(s[0]) if len(s) else math.nan,
        p1_msgs=_nearest_rank(s, 1000), p50_msgs=p50, stall_fraction=stall_fraction,
        stalls=stall_runs(msgs, threshold), sum_msgs=int(msgs.sum()),
        checked=int(buckets["checked"].sum()) if has else 0,
        corrupt=int(buckets["corrupt"].sum()) if has else 0)


def read_series(h: SoakHeader, start: int = 0, count: int | None = None) -> np.ndarray:
    """Buckets [start, start + count) of a series file (all by default), with the receiver's
    checks (--validate-live: checked, corrupt per bucket) from its -rx file when there is one."""
    n = h.buckets - start if count is None else min(count, h.buckets - start)
    if n <= 0:
        return np.zeros(0, dtype=BUCKET_DTYPE)
    out = np.fromfile(h.path, dtype=BUCKET_DTYPE, count=n,
                      offset=soakfile.HEADER_BYTES + start * soakfile.BUCKET_BYTES)
    rx = Path(h.path + soakfile.RX_SUFFIX)
    if rx.is_file():
        got = np.fromfile(rx, dtype=BUCKET_DTYPE, count=len(out),
                          offset=soakfile.HEADER_BYTES + start * soakfile.BUCKET_BYTES)
        out["checked"][:len(got)] += got["checked"]
        out["corrupt"][:len(got)] += got["corrupt"]
    return out


# ---- the run's Parquet file ---------------------------------------------------------------

@dataclass
class Flow:
    """One flow of one point as stored: its header and where its buckets are."""

    point: str
    test: str
    msg_size_bytes: int
    pairs: int
    pattern: str
    pair_id: int
    bucket_s: float
    buckets: int
    start_unix_ns: int
    start_ns: int
    stall_fraction: float
    partial: bool
    complete: bool
    bidir: bool
    host: str
    peer: str
    row_groups: list[int] = field(default_factory=list)  # in soak.parquet
    series_path: str = ""  # or still in its series file (a sweep killed before the Parquet)

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.point, self.msg_size_bytes, self.pattern)


def _schema():  # pyarrow is imported here only
    import pyarrow as pa

    return pa.schema([
        ("point", pa.dictionary(pa.int32(), pa.string())),
        ("test", pa.dictionary(pa.int32(), pa.string())),
        ("msg_size_bytes", pa.int64()), ("pairs", pa.int32()),
        ("pattern", pa.dictionary(pa.int32(), pa.string())), ("pair_id", pa.int32()),
        ("bucket", pa.int64()), ("messages", pa.int64()), ("checked", pa.int32()),
        ("corrupt", pa.int32())])


def convert(folder: Path, out: Path, keep: bool = False) -> list[Flow]:
    """Every series file under folder into one Parquet file out (flow by flow, CHUNK buckets
    at a time); the series files are removed afterwards unless keep. [] when there are none."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = soakfile.series_files(folder)
    if not files:
        return []
    schema = _schema()
    flows: list[Flow] = []
    tmp = out.with_name(out.name + ".part")
    group = 0
    with pq.ParquetWriter(tmp, schema, compression="zstd",
                          use_dictionary=["point", "test", "pattern"]) as w:
        for path in files:
            h = soakfile.read_header(path)
            f = Flow(point=soakfile.point_of(path), test=h.test, msg_size_bytes=h.msg_size_bytes,
                     pairs=h.pairs, pattern=h.pattern, pair_id=h.pair_id, bucket_s=h.bucket_s,
                     buckets=h.buckets, start_unix_ns=h.start_unix_ns, start_ns=h.start_ns,
                     stall_fraction=h.stall_fraction, partial=h.partial or not h.complete,
                     complete=h.complete, bidir=h.bidir, host=h.host, peer=h.peer)
            for start in range(0, max(h.buckets, 1), CHUNK):
                b = read_series(h, start, CHUNK)
                n = len(b)
                if n == 0:
                    break
                cols = {
                    "point": pa.DictionaryArray.from_arrays(np.zeros(n, np.int32), [f.point]),
                    "test": pa.DictionaryArray.from_arrays(np.zeros(n, np.int32), [f.test]),
                    "msg_size_bytes": np.full(n, f.msg_size_bytes, np.int64),
                    "pairs": np.full(n, f.pairs, np.int32),
                    "pattern": pa.DictionaryArray.from_arrays(np.zeros(n, np.int32),
                                                              [f.pattern]),
                    "pair_id": np.full(n, f.pair_id, np.int32),
                    "bucket": np.arange(start, start + n, dtype=np.int64),
                    "messages": b["messages"].astype(np.int64),
                    "checked": b["checked"].astype(np.int32),
                    "corrupt": b["corrupt"].astype(np.int32)}
                w.write_table(pa.table(cols, schema=schema), row_group_size=n)
                f.row_groups.append(group)
                group += 1
            flows.append(f)
        w.add_key_value_metadata({META_KEY: json.dumps([asdict(f) for f in flows]).encode()})
    tmp.replace(out)
    if not keep:
        for path in files:
            path.unlink(missing_ok=True)
            Path(str(path) + soakfile.RX_SUFFIX).unlink(missing_ok=True)
    return flows


def run_flows(run: Path) -> list[Flow]:
    """The flows of a run's soak: from soak.parquet, else from its series files (a sweep that
    was killed before it wrote the Parquet file); [] when the run has no soak."""
    pq_path = run / PARQUET
    if pq_path.is_file():
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(pq_path).metadata.metadata or {}
        try:
            return [Flow(**d) for d in json.loads(meta[META_KEY])]
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"{pq_path}: no pairbench soak index ({exc})") from None
    out = []
    for path in soakfile.series_files(run / "soak"):
        h = soakfile.read_header(path)
        out.append(Flow(point=soakfile.point_of(path), test=h.test,
                        msg_size_bytes=h.msg_size_bytes, pairs=h.pairs, pattern=h.pattern,
                        pair_id=h.pair_id, bucket_s=h.bucket_s, buckets=h.buckets,
                        start_unix_ns=h.start_unix_ns, start_ns=h.start_ns,
                        stall_fraction=h.stall_fraction, partial=h.partial or not h.complete,
                        complete=h.complete, bidir=h.bidir, host=h.host, peer=h.peer,
                        series_path=str(path)))
    return out


def flow_buckets(run: Path, flow: Flow) -> np.ndarray:
    """One flow's buckets (structured: messages, checked, corrupt), from wherever they are."""
    if flow.series_path:
        return read_series(soakfile.read_header(Path(flow.series_path)))
    import pyarrow.parquet as pq

    t = pq.ParquetFile(run / PARQUET).read_row_groups(flow.row_groups,
                                                     columns=["messages", "checked", "corrupt"])
    out = np.zeros(t.num_rows, dtype=BUCKET_DTYPE)
    for name in BUCKET_DTYPE.names:
        out[name] = t.column(name).to_numpy()
    return out


# ---- a point's stability -------------------------------------------------------------------

@dataclass(frozen=True)
class FlowResult:
    flow: Flow
    stats: FlowStats

    @property
    def rate_gbit(self) -> float:
        """Bucket bandwidth per message-per-bucket, 10^9 bit/s."""
        return self.flow.msg_size_bytes * 8 / self.flow.bucket_s / 1e9


@dataclass(frozen=True)
class SharedStall:
    """Stalls of two or more flows that overlap in time: one event with a shared cause."""

    start_bucket: int
    end_bucket: int   # exclusive
    pair_ids: tuple[int, ...]


@dataclass(frozen=True)
class PointStability:
    point: str
    test: str
    msg_size_bytes: int
    pattern: str
    bucket_s: float
    flows: tuple[FlowResult, ...]
    shared: tuple[SharedStall, ...]  # events where >= 2 flows stalled at once
    alone: int                       # stalls that overlap no other flow's stall
    partial: bool

    @property
    def stalls(self) -> int:
        return sum(len(f.stats.stalls) for f in self.flows)

    @property
    def stalled_flows(self) -> int:
        return sum(1 for f in self.flows if f.stats.stalls)

    @property
    def longest_s(self) -> float:
        return max((f.stats.longest for f in self.flows), default=0) * self.bucket_s

    @property
    def min_share(self) -> float:
        v = [f.stats.min_share for f in self.flows if not math.isnan(f.stats.min_share)]
        return min(v) if v else math.nan

    @property
    def corrupt(self) -> int:
        return sum(f.stats.corrupt for f in self.flows)


def coincidences(flows: list[tuple[int, Stall]]) -> tuple[tuple[SharedStall, ...], int]:
    """Group stalls (pair_id, stall) into events: stalls chained by overlapping buckets form
    one event. Events of >= 2 distinct flows are shared; the rest count as alone."""
    ev = sorted(flows, key=lambda x: x[1].start_bucket)
    shared: list[SharedStall] = []
    alone = 0
    i = 0
    while i < len(ev):
        start, end = ev[i][1].start_bucket, ev[i][1].start_bucket + ev[i][1].buckets
        members = [ev[i]]
        j = i + 1
        while j < len(ev) and ev[j][1].start_bucket < end:
            end = max(end, ev[j][1].start_bucket + ev[j][1].buckets)
            members.append(ev[j])
            j += 1
        ids = tuple(sorted({p for p, _ in members}))
        if len(ids) >= 2:
            shared.append(SharedStall(start, end, ids))
        else:
            alone += len(members)
        i = j
    return tuple(shared), alone


def stability(run: Path) -> list[PointStability]:
    """Every soak point of a run judged from its series (one flow in memory at a time)."""
    groups: dict[tuple[str, int, str], list[Flow]] = {}
    for f in run_flows(run):
        groups.setdefault(f.key, []).append(f)
    out = []
    for (point, size, pattern), flows in sorted(groups.items()):
        results = tuple(FlowResult(f, flow_stats(flow_buckets(run, f), f.stall_fraction))
                        for f in sorted(flows, key=lambda f: f.pair_id))
        shared, alone = coincidences([(r.flow.pair_id, s) for r in results
                                      for s in r.stats.stalls])
        out.append(PointStability(point=point, test=flows[0].test, msg_size_bytes=size,
                                  pattern=pattern, bucket_s=flows[0].bucket_s, flows=results,
                                  shared=shared, alone=alone,
                                  partial=any(f.partial for f in flows)))
    return out


def downsample_min(values: np.ndarray, columns: int) -> tuple[np.ndarray, int]:
    """values cut into at most `columns` equal runs, each reduced to its minimum (a stall
    stays visible however long the soak); returns (reduced, buckets per column)."""
    n = len(values)
    per = max(1, math.ceil(n / max(1, columns)))
    pad = (-n) % per
    v = np.concatenate([values.astype(np.float64), np.full(pad, np.inf)]) if pad else \
        values.astype(np.float64)
    return v.reshape(-1, per).min(axis=1), per

