"""plot and report produce files that open: PNG header, SVG, HTML that parses."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from conftest import REPO, cli

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.imgs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "img":
            self.imgs.append(dict(attrs).get("src") or "")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(path: Path) -> Collector:
    c = Collector()
    c.feed(path.read_text(encoding="utf-8"))
    c.close()
    return c


def test_plot_writes_png_and_svg(base_run: Path) -> None:
    proc = cli("plot", str(base_run))
    assert proc.returncode == 0, proc.stderr
    pngs = sorted((base_run / "plots").glob("*.png"))
    names = {p.stem for p in pngs}
    assert {"verbs-write_lat-lat-vs-size", "verbs-write_bw-bw-vs-size", "verbs-write_lat-vs-pairs",
            "verbs-write_bw-per-pair"} <= names
    for p in pngs:
        assert p.read_bytes()[:8] == PNG_MAGIC
        svg = p.with_suffix(".svg").read_text()
        assert "<svg" in svg and "</svg>" in svg


def test_plot_published_pair_overlay(tmp_path: Path) -> None:
    pub = REPO / "results" / "published"
    proc = cli("plot", str(pub / "paper002-infinihost3"), str(pub / "paper002-connectx"),
               "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "verbs-write_lat-lat-vs-size.png").read_bytes()[:8] == PNG_MAGIC


def test_report_is_self_contained_html(base_run: Path, slow_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    proc = cli("report", str(slow_run), str(base_run), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    c = parse(out)
    assert c.tags[0] == "html" and "table" in c.tags
    assert c.imgs and all(src.startswith("data:image/png;base64,") for src in c.imgs)
    text = " ".join(c.text)
    assert "Comparison with base" in text and "regression" in text
    assert "Environment fingerprint" in text
    assert "http" not in "".join(c.imgs)  # nothing fetched from elsewhere


def test_report_default_location(base_run: Path) -> None:
    proc = cli("report", str(base_run))
    assert proc.returncode == 0, proc.stderr
    parse(base_run / "report.html")


def test_report_on_published_figures(tmp_path: Path) -> None:
    pub = REPO / "results" / "published"
    out = tmp_path / "p.html"
    proc = cli("report", str(pub / "paper002-connectx"), str(pub / "paper002-infinihost3"),
               "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "NOT MEASURED" in " ".join(parse(out).text)
