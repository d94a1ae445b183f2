"""A soak's series file as pairbench-mpi writes it (core/pb_soak.h, `--series PREFIX`): one
file per flow and point, PREFIX-<size>B[-<pattern>]-pair<id>.pbsoak, a fixed header of
HEADER_BYTES then one bucket record per bucket (messages u64, checked u32, corrupt u32).
Standard library only: the sweep (runner/) finds and names them; analysis/soak.py reads the
buckets in bulk."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

from pairbench.errors import UsageError

MAGIC = b"PBSOAK01"
VERSION = 1
HEADER_BYTES = 512
BUCKET_BYTES = 16
SUFFIX = ".pbsoak"
RX_SUFFIX = "-rx"  # the receiver's checks of a flow (--validate-live), same format (core/pb_soak.h)
# struct pb_soak_header, native byte order, no padding (8 u32, 5 u64, i64, double, strings).
_HEADER = struct.Struct("=8s8I5Qqd8s32s64s64s64s")


@dataclass(frozen=True)
class SoakHeader:
    path: str
    pair_id: int
    pairs: int
    complete: bool      # the recorder finished (a killed soak leaves 0)
    partial: bool       # stopped before its planned end
    bidir: bool
    msg_size_bytes: int
    bucket_s: float
    planned_buckets: int
    buckets: int        # buckets on file (complete: as recorded; else from the file's length)
    start_ns: int       # CLOCK_MONOTONIC_RAW of the common start
    start_unix_ns: int  # the same moment on the wall clock
    stall_fraction: float
    layer: str
    test: str
    pattern: str
    host: str
    peer: str


def _text(b: bytes) -> str:
    return b.split(b"\0", 1)[0].decode("utf-8", "replace")


def read_header(path: Path) -> SoakHeader:
    """The header of a series file; UsageError naming the file when it is not one."""
    try:
        with open(path, "rb") as f:
            raw = f.read(_HEADER.size)
        size = path.stat().st_size
    except OSError as exc:
        raise UsageError(f"soak series {path}: {exc.strerror}") from None
    if len(raw) < _HEADER.size or raw[:8] != MAGIC:
        raise UsageError(f"soak series {path}: not a pairbench soak series (no {MAGIC.decode()} "
                         "header)")
    (_magic, version, header_bytes, bucket_bytes, pair_id, pairs, complete, partial, bidir,
     size_b, bucket_ns, planned, buckets, start_ns, start_unix_ns, fraction, layer, test,
     pattern, host, peer) = _HEADER.unpack(raw)
    if version != VERSION or header_bytes != HEADER_BYTES or bucket_bytes != BUCKET_BYTES:
        raise UsageError(f"soak series {path}: version {version} (header {header_bytes} B, "
                         f"bucket {bucket_bytes} B); this driver reads version {VERSION}")
    on_file = max(0, size - HEADER_BYTES) // BUCKET_BYTES
    return SoakHeader(
        path=str(path), pair_id=pair_id, pairs=pairs, complete=bool(complete),
        partial=bool(partial), bidir=bool(bidir), msg_size_bytes=size_b,
        bucket_s=bucket_ns / 1e9, planned_buckets=planned,
        buckets=min(buckets, on_file) if complete else on_file, start_ns=start_ns,
        start_unix_ns=start_unix_ns, stall_fraction=fraction, layer=_text(layer),
        test=_text(test), pattern=_text(pattern), host=_text(host), peer=_text(peer))


def series_files(folder: Path) -> list[Path]:
    """Every series file under folder, in name order."""
    return sorted(folder.glob(f"*{SUFFIX}")) if folder.is_dir() else []


_NAME = re.compile(r"^(?P<point>.*?)-(?P<size>\d+)B(?:-(?P<pattern>.*))?-pair(?P<pair>\d+)"
                   + re.escape(SUFFIX) + "$")


def point_of(path: Path) -> str:
    """The sweep point a series file belongs to: its name without the part the executable
    adds to the prefix (core/pb_soak.c pb_soak_path: -<size>B[-<pattern>]-pair<id>.pbsoak;
    runner/plan.py names the prefix soak/<point>, and no point name holds '-<digits>B')."""
    m = _NAME.match(Path(path).name)
    return m.group("point") if m else Path(path).stem
