"""The regression gate's answer from a comparison (issue 22; docs/compare-and-accept.md,
"The gate"): per comparison compare's `gate` column (regression / no regression /
inconclusive, from pairbench.analysis.verdict), for the run the worst of them, the exit code
(1 / 0 / 3; 2 is bad input) and the lines that lead compare's, report's and show's output:
the regressions, the inconclusive comparisons with the repetitions per side that would
decide them, and how many are proven no regression."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pairbench.analysis.verdict import (
    FAILED,
    GATE_INCONCLUSIVE,
    GATE_NO_REGRESSION,
    GATE_REGRESSION,
    MAX_REPS,
    NOT_COMPARABLE,
    REGRESSION,
    SUSPECTED_REGRESSION,
)
from pairbench.contract.sizes import size_label

EXIT_NO_REGRESSION = 0
EXIT_REGRESSION = 1
EXIT_INCONCLUSIVE = 3      # 2 is bad input (errors.UsageError); 3 means only this


def run_gate(res: pd.DataFrame) -> str:
    """The whole comparison's answer: regression if any comparison is a proven regression
    (or a point NEW failed where BASE did not), else inconclusive if any is undecided or
    none could be tested at all, else no regression (every tested comparison proven not
    worse than its threshold; rows that are not comparable are outside it)."""
    gates = set(res["gate"]) if "gate" in res.columns else set()
    if GATE_REGRESSION in gates:
        return GATE_REGRESSION
    if GATE_INCONCLUSIVE in gates or GATE_NO_REGRESSION not in gates:
        return GATE_INCONCLUSIVE  # nothing proven: not a pass
    return GATE_NO_REGRESSION


def exit_code(res: pd.DataFrame, strict: bool, allow_inconclusive: bool = False) -> int:
    """1 on a proven regression or a failed point (with strict also on a suspected
    regression or a point that cannot be compared); 3 when the gate is inconclusive (0 with
    allow_inconclusive); else 0."""
    bad = {REGRESSION, FAILED}
    if strict:
        bad |= {SUSPECTED_REGRESSION, NOT_COMPARABLE}
    if res["verdict"].isin(bad).any():
        return EXIT_REGRESSION
    if run_gate(res) == GATE_INCONCLUSIVE and not allow_inconclusive:
        return EXIT_INCONCLUSIVE
    return EXIT_NO_REGRESSION


def _where(r: pd.Series) -> str:
    variant = f" {r['variant']}" if r["variant"] else ""
    return (f"{r['test']}{variant} {size_label(int(r['msg_size_bytes']))} "
            f"{int(r['pairs'])} pair(s) {r['metric']}")


def _needs(r: pd.Series) -> str:
    """The repetitions per side that would decide a comparison ('≥' where the noise is
    unknown: then the count is only the minimum that can prove anything)."""
    n = _reps(r)
    if n is None:
        return (f"more than {MAX_REPS} repetitions per side" if math.isfinite(r["noise_cv"])
                else "more repetitions (noise unknown)")
    return (f"≈{n}" if math.isfinite(r["noise_cv"]) else f"≥ {n}") + " repetitions per side"


def _reps(r: pd.Series) -> int | None:
    n = r["reps_needed"]
    return None if n is None or (isinstance(n, float) and not math.isfinite(n)) else int(n)


def gate_lines(res: pd.DataFrame, max_listed: int = 20) -> list[str]:
    """The gate's answer first: regressions, inconclusive comparisons with the repetitions
    per side that would decide them at their estimate, and how many are proven no
    regression."""
    gate = run_gate(res)
    reg = res[res["gate"] == GATE_REGRESSION]
    inc = res[res["gate"] == GATE_INCONCLUSIVE]
    ok = int((res["gate"] == GATE_NO_REGRESSION).sum())
    tested = len(reg) + len(inc) + ok
    failed = int((reg["verdict"] == FAILED).sum())
    out = [f"gate: {gate.upper()}: {len(reg)} regression"
           f"{f' ({failed} of them failed in NEW)' if failed else ''}, {len(inc)} "
           f"inconclusive, {ok} no regression (of {tested} comparisons)"]
    for _, r in reg.iterrows():
        if r["verdict"] == FAILED:
            out.append(f"  failed: {_where(r)}: {r['evidence']}")
            continue
        out.append(f"  regression: {_where(r)}: {r['change_pct']:+.1f} % (q = "
                   f"{r['q_value']:.2g})")
    if not tested:
        out.append("  nothing could be tested: no point was measured by both runs in a way "
                   "that can be compared; no regression is proven absent")
    out += [f"  note: {n}" for n in res.attrs.get("point_notes", [])]
    for k, (_, r) in enumerate(inc.iterrows()):
        if k == max_listed:
            out.append(f"  ... and {len(inc) - max_listed} more inconclusive (see the table)")
            break
        change = f"{r['change_pct']:+.1f} %" if math.isfinite(r["change_pct"]) else "?"
        out.append(f"  inconclusive: {_where(r)}: {change}, {r['verdict']}; {_needs(r)} "
                   "would decide it")
    counts = [n for n in (_reps(r) for _, r in inc.iterrows()) if n is not None]
    if len(inc):
        approx = "≈" if bool(np.isfinite(inc["noise_cv"].astype(float)).all()) else "at least "
        most = f"{approx}{max(counts)} repetitions per side" if counts else ""
        if len(counts) < len(inc):
            rest = f"{len(inc) - len(counts)} need more than {MAX_REPS} or an unknown count"
            most = f"{most} ({rest})" if most else rest
        out.append(f"  to decide every inconclusive comparison: {most} "
                   "(pairbench sweep --repetitions auto adds them)")
    return out
