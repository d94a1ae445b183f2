"""Message-size lists as the executables take them: '8,64,1K', '1:4K' (powers of two), K/M/G."""

from __future__ import annotations

import re

from pairbench.errors import UsageError

_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_ONE = re.compile(r"^\s*(\d+)\s*([KMGkmg]?)\s*$")


def parse_size(text: str) -> int:
    m = _ONE.match(text)
    if not m:
        raise UsageError(f"bad message size {text!r} (expected e.g. 8, 64K, 1M)")
    return int(m.group(1)) * _SUFFIX[m.group(2).upper()]


def parse_sizes(text: str) -> list[int]:
    """Parse a size list; ranges lo:hi expand to the powers of two in [lo, hi]."""
    sizes: list[int] = []
    if not text.strip():
        raise UsageError("empty size list")
    for part in text.split(","):
        if ":" in part:
            lo_s, _, hi_s = part.partition(":")
            lo, hi = parse_size(lo_s), parse_size(hi_s)
            if lo < 1 or hi < lo:
                raise UsageError(f"bad size range {part.strip()!r} (need 1 <= lo <= hi)")
            p = 1
            while p < lo:
                p <<= 1
            while p <= hi:
                sizes.append(p)
                p <<= 1
        else:
            sizes.append(parse_size(part))
    if any(s < 0 for s in sizes):
        raise UsageError("negative message size")
    out = sorted(set(sizes))
    if not out:
        raise UsageError(f"size list {text!r} selects no size")
    return out


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
