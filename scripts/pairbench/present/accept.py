"""How a accept result is shown: terminal text, markdown, JSON (the result itself:
pairbench.analysis.accept)."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

import pandas as pd


def junit_xml(spec: dict, rows: list[dict]) -> str:
    fails = sum(r["verdict"] != "pass" for r in rows)
    suite = ET.Element("testsuite", name=f"pairbench accept: {spec['name']}",
                       tests=str(len(rows)), failures=str(fails), errors="0")
    for r in rows:
        name = " ".join(str(x) for x in (r["test"], r["size"],
                                         f"{r['pairs']} pairs" if r["pairs"] != "" else "") if x)
        case = ET.SubElement(suite, "testcase", classname=r["criterion"], name=name)
        if r["verdict"] != "pass":
            f = ET.SubElement(case, "failure", message=f"{_v(r['value'])} vs limit "
                              f"{_lim(r['limit'])}: {r['detail']}")
            f.text = r["detail"]
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def _v(x: object) -> str:
    if isinstance(x, str):  # environment checks: '4X', 'x8'
        return x
    return "n/a" if x is None or (isinstance(x, float) and pd.isna(x)) else f"{x:.4g}"


def _lim(x: object) -> str:
    return x if isinstance(x, str) else f"{x:g}"


def render_text(spec: dict, rows: list[dict], color: bool = False) -> str:
    """The check table (rich; failed rows red when color), then the verdict line."""
    from rich.console import Console
    from rich.table import Table as RichTable

    head = ["criterion", "test", "size", "pairs", "value", "limit", "verdict", "detail"]
    table = RichTable(*head, box=None, header_style="bold", pad_edge=False)
    for r in rows:
        table.add_row(r["criterion"], r["test"], r["size"], str(r["pairs"]), _v(r["value"]),
                      _lim(r["limit"]), r["verdict"].upper(), r["detail"],
                      style=("red" if r["verdict"] != "pass" else "") if color else "")
    buf = io.StringIO()
    Console(file=buf, width=220, force_terminal=color, no_color=not color, highlight=False,
            soft_wrap=False).print(table)
    n_fail = sum(r["verdict"] != "pass" for r in rows)
    lines = [f"acceptance spec: {spec['name']}",
             *(line.rstrip() for line in buf.getvalue().splitlines()),
             f"verdict: {'PASS' if n_fail == 0 else 'FAIL'} "
             f"({len(rows) - n_fail} passed, {n_fail} failed)"]
    return "\n".join(lines) + "\n"


