"""The report as a person sees it: rendered by headless Chromium (Debian `chromium`).

Checked on the committed default runs (a real oversubscribed verbs run on Soft-RoCE, an MPI
run compared with an earlier one) and on small fake runs (clean, and oversubscribed at 2
pairs): a screenshot is taken, the page logs nothing to the console, the findings section
comes before any table, the warnings box is there exactly when a machine flag is, and no
table cell is written in scientific notation.  `pairbench show` states the same findings.
Skipped (with the reason) only when no Chromium is installed; CI installs it
(scripts/deps/driver.apt).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import REPO, cli
from pairbench.analysis.flags import infer_legacy
from pairbench.analysis.load import load_run
from pairbench.contract import testtable
from pairbench.contract.schema import load_metadata
from pairbench.present import findings
from pairbench.present.fmt import SCI_PATTERN
from pairbench.present.screenshot import find_browser, render

pytestmark = pytest.mark.skipif(find_browser() is None,
                                reason="no Chromium (Debian package chromium) installed")

VERBS_RUN = REPO / "results" / "20261123-090116-vm-d2f610"
MPI_RUN = REPO / "results" / "20261123-090256-vm-29e824"
MPI_BASE = REPO / "results" / "20261123-033727-vm-fdc886"
V1_RUN = REPO / "results" / "20261123-033558-vm-95e45f"  # CSV schema version 1
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class Dom(HTMLParser):
    """Order of the landmarks and the text of every table cell of the rendered DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[str] = []
        self.cells: list[str] = []
        self._cell: list[str] | None = None
        self.warnings: list[str] = []
        self._in_warning = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self.order.append("table")
        if a.get("id") in ("findings", "warnings", "verdict"):
            self.order.append(str(a["id"]))
        if tag in ("td", "th"):
            self._cell = []
        if tag == "li" and a.get("data-kind"):
            self.warnings.append(str(a["data-kind"]))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.cells.append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def rendered(run: Path, tmp: Path, *base: Path) -> tuple[Dom, Path]:
    html = tmp / f"{run.name}.html"
    proc = cli("report", str(run), *map(str, base), "--out", str(html))
    assert proc.returncode == 0, proc.stderr
    r = render(html, tmp / f"{run.name}.png")
    assert r.png.read_bytes()[:8] == PNG_MAGIC and r.png.stat().st_size > 10_000
    assert r.console == [], r.console
    dom = Dom()
    dom.feed(r.dom)
    assert "findings" in dom.order and "table" in dom.order, dom.order
    assert dom.order.index("findings") < dom.order.index("table"), dom.order
    sci = [c for c in dom.cells if re.search(SCI_PATTERN, c)]
    assert sci == [], sci[:5]
    return dom, r.png


@pytest.mark.parametrize("run", [VERBS_RUN, V1_RUN], ids=["schema2", "schema1"])
def test_real_oversubscribed_run(run: Path, tmp_path: Path) -> None:
    dom, _png = rendered(run, tmp_path)
    assert dom.order[:2] == ["findings", "warnings"], dom.order
    assert {"oversubscribed", "emulated_device", "link_rate_nominal"} <= set(dom.warnings)


def test_real_comparison(tmp_path: Path) -> None:
    dom, _png = rendered(MPI_RUN, tmp_path, MPI_BASE)
    assert "verdict" in dom.order and dom.order.index("verdict") < dom.order.index("table")
    assert "oversubscribed" in dom.warnings


def test_clean_run_has_no_warnings_box(base_run: Path, tmp_path: Path) -> None:
    dom, _png = rendered(base_run, tmp_path)
    assert "warnings" not in dom.order and dom.warnings == []


def test_oversubscribed_fake_run_has_the_box(oversubscribed_run: Path, tmp_path: Path) -> None:
    dom, _png = rendered(oversubscribed_run, tmp_path)
    assert dom.warnings == ["oversubscribed"]


def test_screenshot_command_fails_on_console_messages(tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><p>x</p><script>nosuch();</script></body></html>")
    proc = cli("screenshot", str(bad))
    assert proc.returncode == 1 and "nosuch" in proc.stderr, proc.stderr
    assert (tmp_path / "bad.png").is_file()


@pytest.mark.parametrize("run,base", [(VERBS_RUN, None), (MPI_RUN, MPI_BASE)])
def test_show_states_the_same_findings(run: Path, base: Path | None) -> None:
    proc = cli("show", str(run), *([str(base)] if base else []), "--width", "400")
    assert proc.returncode == 0, proc.stderr
    meta = load_metadata(run)
    df = infer_legacy(load_run(run), meta)
    res = None
    if base:
        from pairbench.analysis.compare import Thresholds, compare_frames

        bm = load_metadata(base)
        res = compare_frames(infer_legacy(load_run(base), bm), df, Thresholds())
    f = findings.compute(df, meta, testtable.tables_for_run(meta), res)
    out = " ".join(proc.stdout.split())
    for w in f.warnings:
        assert " ".join(w.text.split()) in out, w.text
    for t in f.tests:
        assert t.title in out
        for what, value in t.facts:
            assert what in out and value in out, (what, value)
    for line in f.verdict:
        assert line in out, line
    assert re.search(SCI_PATTERN, proc.stdout) is None
