"""Message-size lists, by the same rule as the executables (core/pb_opts.h, PB_SIZE_LIST_RULE).

A list is comma-separated items; an item is a size (a decimal integer with an optional binary
suffix K, M or G, any case) or a range A:B = every power of two from A to B, where A and B must
themselves be powers of two and A <= B. Every size is 1 .. 1G; at most 64 sizes; they stay in
the order given; a size listed twice (also through a range) is an error, as are empty items and
spaces. tests/unit/size_list_parity.py checks that the C parser and this one agree.
"""

from __future__ import annotations

import re
from typing import Any

from pairbench.errors import UsageError
from pairbench.io.tomlschema import Kind

# Stated identically in every --help (pairbench-verbs, pairbench-mpi, pairbench sweep).
SIZE_LIST_RULE = ("comma-separated sizes (suffix K/M/G = 2^10/2^20/2^30); A:B = every power of "
                  "two from A to B (A, B powers of two); in the order given, no size twice")
MAX_SIZE = 1 << 30          # the executables' --sizes range: 1..1073741824
MAX_SIZES = 64              # PB_LIST_MAX
_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_ONE = re.compile(r"([0-9]+)([KMGkmg]?)")


def parse_size(text: str) -> int:
    m = _ONE.fullmatch(text)
    if not m:
        raise UsageError(f"bad message size {text!r} (expected e.g. 8, 64K, 1M)")
    return int(m.group(1)) * _SUFFIX[m.group(2).upper()]


def _pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def parse_sizes(text: str) -> list[int]:
    """Parse a size list by SIZE_LIST_RULE; raise UsageError saying what is wrong."""
    sizes: list[int] = []
    if not text:
        raise UsageError("empty size list")
    for part in text.split(","):
        if not part:
            raise UsageError(f"size list {text!r} has an empty item")
        if ":" in part:
            lo_s, _, hi_s = part.partition(":")
            lo, hi = parse_size(lo_s), parse_size(hi_s)
            if not (_pow2(lo) and _pow2(hi) and lo <= hi):
                raise UsageError(f"size range {part!r}: both ends must be powers of two, "
                                 "low <= high")
            items = [lo << k for k in range((hi // lo).bit_length())]
        else:
            items = [parse_size(part)]
        for v in items:
            if not 1 <= v <= MAX_SIZE:
                raise UsageError(f"message size {v} out of range (1..{MAX_SIZE})")
            if v in sizes:
                raise UsageError(f"message size {v} is listed twice in {text!r}")
            sizes.append(v)
    if len(sizes) > MAX_SIZES:
        raise UsageError(f"size list {text!r} has more than {MAX_SIZES} sizes")
    return sizes


def parse_int_list(text: str, what: str) -> list[int]:
    """'1,2,4,8' -> [1, 2, 4, 8]; every value a positive integer."""
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"bad {what} list {text!r} (expected e.g. 1,2,4,8)") from None
    if not vals or any(v < 1 for v in vals):
        raise UsageError(f"bad {what} list {text!r} (positive integers, comma separated)")
    return sorted(set(vals))


def size_label(n: int) -> str:
    """8 -> '8 B', 4096 -> '4 KiB', 65536 -> '64 KiB'."""
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


class Size(Kind):
    """A key kind of pairbench.io.tomlschema (accept's spec): bytes, an integer or a string
    with a K/M/G binary suffix ("64K"), by the rule above."""

    def __call__(self, value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise UsageError(f"{where}: expected a size (e.g. 65536 or \"64K\"), got {value!r}")
        try:
            size = value if isinstance(value, int) else parse_size(value)
        except UsageError as exc:
            raise UsageError(f"{where}: {exc}") from None
        if size < 1:
            raise UsageError(f"{where}: expected a size >= 1 byte, got {value!r}")
        return size
