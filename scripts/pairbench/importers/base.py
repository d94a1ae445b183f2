"""What a parser returns (Parsed: a file's provenance and the benchmarks it holds; Bench:
one benchmark's table; Measure: one message size), and how it refuses a file: BadFile,
one line naming the file and line, exit 2."""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from pairbench.errors import UsageError

TOOLS = ("osu", "perftest", "imb", "nccl-tests")


class BadFile(UsageError):
    """A file that is not what --from says, truncated, mixed or unreadable: exit 2."""


def bad(path: Path | str, line: int | None, msg: str) -> BadFile:
    return BadFile(f"{path}:{line}: {msg}" if line else f"{path}: {msg}")


@dataclass
class Measure:
    """One row of a tool's table: a message size and what was measured there, in our
    columns (lat_us_mean, bw_mbyte_s, ...)."""

    size: int
    values: dict[str, float]
    line: int
    status: str = "ok"
    error: str = ""
    iterations: int | None = None
    pair_id: str = "all"
    variant: str = ""


@dataclass
class Bench:
    """One benchmark's table in one file. `config` is what the output says about how it
    ran (window, datatype, QPs, MTU, ...): files whose benchmarks agree on test, config and
    pairs are repetitions of one configuration."""

    test: str
    line: int
    kind: str  # the test table's kinds: latency, bandwidth, message_rate, collective
    label: str
    primary: str  # the metric that sums the test up (the test table's primary_metric)
    lat_kind: str | None = None
    config: dict[str, str] = field(default_factory=dict)
    pairs: int | None = None
    measures: list[Measure] = field(default_factory=list)
    flags: tuple[str, ...] = ()
    qps: str = ""
    device: str = ""
    lost: tuple[str, ...] = ()  # the tool's columns that have no place in the schema


@dataclass
class Parsed:
    """One file: where it came from and what it holds."""

    path: Path
    tool: str
    version: str = ""
    command: str = ""
    benches: list[Bench] = field(default_factory=list)
    info: dict[str, str] = field(default_factory=dict)
    sha256: str = ""
    size_bytes: int = 0


def read_text(path: Path) -> tuple[str, str]:
    """(text, sha256) of a file; BadFile when it cannot be read, is empty or is binary."""
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        raise bad(path, None, "is a directory, not a tool's output") from None
    except OSError as exc:
        raise bad(path, None, f"cannot read: {exc.strerror or exc}") from None
    if not raw.strip():
        raise bad(path, 1, "empty file")
    if b"\0" in raw:
        raise bad(path, raw[:raw.index(b"\0")].count(b"\n") + 1, "binary data (NUL byte): "
                  "not a tool's text or JSON output")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad(path, raw[:exc.start].count(b"\n") + 1,
                  f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return text, hashlib.sha256(raw).hexdigest()


_NUM = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?")


def number(tok: str, path: Path, line: int, what: str) -> float:
    """A finite, non-negative number, else BadFile naming the line."""
    if not _NUM.fullmatch(tok):
        raise bad(path, line, f"{what}: {tok!r} is not a number")
    v = float(tok)
    if not math.isfinite(v) or v < 0:
        raise bad(path, line, f"{what}: {tok!r} is not a finite non-negative number")
    return v


def integer(tok: str, path: Path, line: int, what: str) -> int:
    if not re.fullmatch(r"\d+", tok):
        raise bad(path, line, f"{what}: {tok!r} is not a whole number")
    return int(tok)


def is_number(tok: str) -> bool:
    return bool(_NUM.fullmatch(tok))


def check_sizes(path: Path, bench: Bench) -> None:
    """A table lists each size once (per pair and variant): a size twice is two outputs
    pasted into one file."""
    seen: dict[tuple[int, str, str], int] = {}
    for m in bench.measures:
        k = (m.size, m.pair_id, m.variant)
        if k in seen:
            raise bad(path, m.line, f"{bench.test}: size {m.size} again (first at line "
                      f"{seen[k]}): two outputs in one file? give each its own file")
        seen[k] = m.line
