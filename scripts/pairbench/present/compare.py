"""How a compare result is shown: terminal text, markdown, JSON (the result itself:
pairbench.analysis.compare)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from pairbench.analysis.compare import DEFAULT_METRICS, Thresholds
from pairbench.analysis.envdiff import EnvDiff
from pairbench.analysis.frames import METRICS, point_label
from pairbench.analysis.gate import EXIT_INCONCLUSIVE, exit_code, gate_lines, run_gate
from pairbench.analysis.verdict import (
    FAILED,
    GATE_INCONCLUSIVE,
    GATE_NO_REGRESSION,
    GATE_REGRESSION,
    IMPROVEMENT,
    MIN_REPS,
    NOT_COMPARABLE,
    REGRESSION,
    SUSPECTED_IMPROVEMENT,
    SUSPECTED_REGRESSION,
)
from pairbench.contract import testtable
from pairbench.contract.sizes import size_label
from pairbench.contract.testtable import TestTable


def _factor(ratio: float, higher_is_worse: bool) -> str:
    if not math.isfinite(ratio) or ratio <= 0:
        return "not comparable"
    if abs(ratio - 1) < 0.005:
        return "unchanged"
    if ratio < 1:
        return f"{1 / ratio:.1f}× lower" if ratio <= 0.5 else f"{(1 - ratio) * 100:.0f} % lower"
    return f"{ratio:.1f}× higher" if ratio >= 2 else f"{(ratio - 1) * 100:.0f} % higher"


def summary_lines(res: pd.DataFrame,
                  tables: Mapping[str, TestTable] | None = None) -> list[str]:
    """Paper-002 style headlines: per (layer, test, variant) and its primary metric (the
    test table's; else the first compared metric), the largest pair count and the size with
    the largest change, e.g. '8-pair RDMA write latency at 128 B: 6.0× lower (11.2 → 1.86 µs)'.
    The test's label names its primary metric; another metric is named after it."""
    lines = []
    for (layer, test, variant), g in res.groupby(["layer", "test", "variant"], sort=True):
        info = testtable.find(test, layer, tables)
        compared = set(g["metric"])
        own = info.primary_metric if info else None
        primary = own if own in compared else next(
            (m for m in DEFAULT_METRICS if m in compared), g["metric"].iloc[0])
        g = g[(g["metric"] == primary) & (g["pairs"] == g["pairs"].max())]
        g = g[np.isfinite(g["ratio"]) & (g["ratio"] > 0)]
        if g.empty:
            continue
        r = g.loc[np.abs(np.log(g["ratio"])).idxmax()]
        m = METRICS[primary]
        where = point_label(test, variant, r["msg_size_bytes"], r["pairs"], layer, tables)
        lines.append(f"{where}{'' if primary == own else ' ' + m.label}"
                     f": {_factor(r['ratio'], m.higher_is_worse)} "
                     f"({r['base']:.3g} → {r['new']:.3g} {m.unit}; {r['verdict']})")
    return lines


def environment_lines(d: EnvDiff, expected: list[str], reasons: list[str]) -> list[str]:
    """What changed between the two runs' environments, before any verdict (issue 25):
    one line per difference, then the --expect-change condition's answer."""
    if d.missing and not expected:
        return []  # CSV files without metadata: nothing to say unless asked
    if d.missing:
        out = [f"what changed: unknown ({' and '.join(d.missing)} without metadata.json "
               "fingerprint)"]
    elif not d.changes:
        out = [f"what changed: nothing in the environment records ({d.compared} values "
               "compared: firmware, driver, kernel, libraries, CPU, memory, PCIe, link, MTU, "
               "pinning, launcher, build, tuning variables, MCA files, host canary)"]
    else:
        out = [f"what changed ({len(d.changes)} difference(s) in the environment records):"]
        out += [f"  {c.line()}" + ("" if not expected or c.matches(expected)
                                   else "  [not expected]") for c in d.changes]
    if d.host is not None and not d.host.moved:  # moved: the line above says it for all
        out += [f"  flagged: {s.line()}" for s in d.host.slow]
    if expected:
        if reasons:
            out.append(f"environment: INCONCLUSIVE (--expect-change {','.join(expected)}): "
                       + "; ".join(reasons))
        else:
            out.append(f"environment: only the expected change(s) ({', '.join(expected)})")
    elif reasons:
        out.append("environment: INCONCLUSIVE (exit 3): " + "; ".join(reasons))
    return out


def environment_json(d: EnvDiff, expected: list[str], reasons: list[str]) -> dict:
    return {"changes": [c.to_json() for c in d.changes], "fields_changed": d.fields,
            "recorded_on_one_side": d.one_side, "missing": d.missing,
            "values_compared": d.compared, "expected": expected,
            "not_compared_vary_within_a_run": d.varying,
            "host_canary": d.host.to_json() if d.host is not None else None,
            "inconclusive": bool(reasons), "reasons": reasons}


def _fmt(v: float) -> str:
    return "" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.4g}"


TABLE_COLS = ["test", "variant", "size", "pairs", "metric", "base", "new", "ratio", "change",
              "n", "q", "verdict", "gate", "evidence"]


def table_rows(res: pd.DataFrame) -> list[list[str]]:
    out = []
    for _, r in res.iterrows():
        out.append([r["test"], r["variant"], size_label(int(r["msg_size_bytes"])),
                    str(r["pairs"]), r["metric"], _fmt(r["base"]), _fmt(r["new"]),
                    _fmt(r["ratio"]), f"{r['change_pct']:+.1f} %"
                    if math.isfinite(r["change_pct"]) else "", f"{r['n_base']}/{r['n_new']}",
                    f"{r['q_value']:.2g}" if math.isfinite(r["q_value"]) else "",
                    r["verdict"], r["gate"], r["evidence"]])
    return out


def method_lines(res: pd.DataFrame) -> list[str]:
    """What the verdicts rest on: the test, the family, the noise each metric showed."""
    fdr = res.attrs.get("fdr", math.nan)
    out = [f"method: moderated t on 20 %-trimmed log values against each threshold "
           "(regression) and its one-sided twin (no regression), Benjamini-Hochberg over "
           f"{res.attrs.get('family', 0)} tested comparisons at FDR {fdr:.0%} "
           "(docs/compare-and-accept.md)"]
    for metric, pr in sorted(res.attrs.get("priors", {}).items()):
        if pr["df"] > 0:
            out.append(f"noise: {metric}: typical run-to-run CV {pr['noise_cv']:.2%} "
                       f"(prior fitted on {pr['features']} points, d0 = {pr['df']:.3g} degrees "
                       "of freedom)")
        else:
            out.append(f"noise: {metric}: too few points with >= 2 repetitions to borrow "
                       "strength; each point's own repetitions only")
    if min(res["n_base"].min(), res["n_new"].min()) < MIN_REPS:
        out.append(f"note: fewer than {MIN_REPS} repetitions on a side: no significance can "
                   "be claimed there; a change beyond the threshold is only 'suspected'")
    return out


def _style(verdict: str) -> str:
    return {REGRESSION: "bold red", FAILED: "bold red", SUSPECTED_REGRESSION: "red",
            IMPROVEMENT: "bold green", SUSPECTED_IMPROVEMENT: "green",
            NOT_COMPARABLE: "yellow"}.get(verdict, "")


def render_text(res: pd.DataFrame, summary: list[str], color: bool = False,
                env: list[str] | None = None) -> str:
    """What changed (env: environment_lines), the gate, the terminal table (rich), then how
    the verdicts were reached and the headlines."""
    import io

    from rich.console import Console
    from rich.table import Table

    table = Table(*TABLE_COLS, box=None, header_style="bold", pad_edge=False)
    for row, verdict in zip(table_rows(res), res["verdict"], strict=True):
        table.add_row(*row, style=_style(verdict) if color else "")
    buf = io.StringIO()
    Console(file=buf, width=220, force_terminal=color, no_color=not color,
            highlight=False, soft_wrap=False).print(table)
    table_text = "\n".join(line.rstrip() for line in buf.getvalue().splitlines())
    lead = "\n".join(env) + "\n\n" if env else ""
    return (lead + "\n".join(gate_lines(res)) + "\n\n" + table_text + "\n\n"
            + "\n".join([*method_lines(res), *summary]) + "\n")


def render_markdown(res: pd.DataFrame, summary: list[str], base: str, new: str,
                    env: list[str] | None = None) -> str:
    out = [f"# pairbench compare\n\nBASE `{base}` vs NEW `{new}` (ratio = NEW / BASE)\n"]
    if env:
        out.append("## What changed\n")
        out += [f"- {line.strip()}" for line in env[1:] if line.startswith("  ")]
        out += [f"{line}  " for line in env if not line.startswith("  ")]
        out.append("")
    out += [f"**{line}**  " if k == 0 else f"{line}  "
            for k, line in enumerate(gate_lines(res))]
    out.append("")
    out += [f"- {s}" for s in summary]
    out.append("")
    out.append("| " + " | ".join(TABLE_COLS) + " |")
    out.append("|" + "---|" * len(TABLE_COLS))
    for r in table_rows(res):
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    out.append("")
    out += [f"{line}  " for line in method_lines(res)]
    return "\n".join(out) + "\n"


def count_verdict(res: pd.DataFrame, verdict: str) -> int:
    return int((res["verdict"] == verdict).sum())


def to_json(res: pd.DataFrame, summary: list[str], base: str, new: str, th: Thresholds,
            strict: bool = False, allow_inconclusive: bool = False,
            env: dict | None = None) -> dict:
    recs = json.loads(res.to_json(orient="records", double_precision=15))
    gates = res["gate"]
    return {"base": base, "new": new, "ratio": "new / base", "environment": env,
            "summary": summary,
            "gate": run_gate(res), "gate_lines": gate_lines(res, max_listed=len(res)),
            "gate_regressions": int((gates == GATE_REGRESSION).sum()),
            "gate_inconclusive": int((gates == GATE_INCONCLUSIVE).sum()),
            "gate_no_regression": int((gates == GATE_NO_REGRESSION).sum()),
            "allow_inconclusive": allow_inconclusive,
            "regressions": count_verdict(res, REGRESSION),
            "improvements": count_verdict(res, IMPROVEMENT),
            "suspected_regressions": count_verdict(res, SUSPECTED_REGRESSION),
            "suspected_improvements": count_verdict(res, SUSPECTED_IMPROVEMENT),
            "not_comparable": count_verdict(res, NOT_COMPARABLE),
            "failed": count_verdict(res, FAILED),
            "point_notes": res.attrs.get("point_notes", []),
            "strict": strict,
            "exit_code": (EXIT_INCONCLUSIVE if env and env.get("inconclusive")
                          else exit_code(res, strict, allow_inconclusive)),
            "method": {"test": "moderated t (empirical Bayes, limma) on log values, against "
                               "the threshold (TREAT), 20 % trimmed means (Yuen); no "
                               "regression: the one-sided non-inferiority test",
                       "multiple_testing": "Benjamini-Hochberg",
                       "fdr": res.attrs.get("fdr"), "family": res.attrs.get("family"),
                       "priors": res.attrs.get("priors", {})},
            "thresholds": {"default_relative": th.default_relative,
                           "default_absolute": th.default_absolute,
                           "relative": th.relative, "absolute": th.absolute,
                           "confidence": th.confidence},
            "points": recs}


