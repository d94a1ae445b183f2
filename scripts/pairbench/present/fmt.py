"""Numbers for humans: significant digits, thousands separators, SI prefixes where they
help, never scientific notation (docs/driver.md, "How the report writes numbers").

Every table the report and `pairbench show` print goes through these functions, so one
rule decides how a value reads: 3 significant digits (4 for values of 1000 and more:
thousands separators instead of an exponent; integers stay whole), no trailing zeros
dropped below the last significant digit, '' for a missing value.
"""

from __future__ import annotations

import math

SIG = 3
# A pattern of scientific notation the report must never print (tests use it).
SCI_PATTERN = r"\d(\.\d+)?[eE][+-]\d"


def _missing(v: object) -> bool:
    return v is None or (isinstance(v, float) and not math.isfinite(v)) or v == ""


def num(v: object, sig: int = SIG) -> str:
    """12034.5 -> '12,035'; 0.001242 -> '0.00124'; 20.31 -> '20.3'; 8.0 -> '8'."""
    if _missing(v):
        return ""
    x = float(v)  # type: ignore[arg-type]
    if x == 0:
        return "0"
    mag = math.floor(math.log10(abs(x)))
    if mag >= sig - 1:
        return f"{round(x):,}"
    decimals = max(0, sig - 1 - mag)
    text = f"{x:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def integer(v: object) -> str:
    return "" if _missing(v) else f"{round(float(v)):,}"  # type: ignore[arg-type]


def rate(v: object, unit: str = "msg/s") -> str:
    """Large rates with an SI prefix: 1234567 -> '1.23 M msg/s'."""
    if _missing(v):
        return ""
    x = float(v)  # type: ignore[arg-type]
    for div, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{num(x / div)} {prefix}{unit}"
    return f"{num(x)} {unit}"


def pct(v: object) -> str:
    return "" if _missing(v) else f"{num(v)} %"


def ratio(v: object) -> str:
    """A ratio as '×': 412.3 -> '412×', 1.234 -> '1.23×'."""
    return "" if _missing(v) else f"{num(v)}×"


def us(v: object) -> str:
    """A time given in µs, with the unit that reads best: 8123 µs -> '8.12 ms'."""
    if _missing(v):
        return ""
    x = float(v)  # type: ignore[arg-type]
    if abs(x) >= 1e6:
        return f"{num(x / 1e6)} s"
    if abs(x) >= 1e3:
        return f"{num(x / 1e3)} ms"
    return f"{num(x)} µs"


def gbit(v: object) -> str:
    return "" if _missing(v) else f"{num(v)} Gbit/s"


# How a metric column is written in a table (the unit is in the header).
COLUMN_FORMAT = {
    "msg_rate_per_s": num, "link_pct": num, "fairness": lambda v: num(v, 4),
    "min_pair_bw_share": lambda v: num(v, 3),
}


def cell(metric: str, v: object) -> str:
    return COLUMN_FORMAT.get(metric, num)(v)
