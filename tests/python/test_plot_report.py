"""plot and report produce files that open: PNG header, SVG, HTML that parses."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from conftest import REPO, cli
from pairbench.analysis.load import load_run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.imgs: list[str] = []
        self.text: list[str] = []
        self.fetched: list[str] = []  # what a browser would load: any src, a <link>'s href

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a.get("src") or "")
        self.fetched += [a.get("src") or "", a.get("href") or ""] if tag == "link" else \
            [a.get("src") or ""]

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
    # nothing fetched from elsewhere: every resource inline (the images' base64 text may
    # contain "http" by chance, so look at where each resource comes from, not at its bytes)
    assert not [u for u in c.fetched if u and not u.startswith("data:")], c.fetched
    assert "url(http" not in out.read_text(encoding="utf-8")


class Tables(HTMLParser):
    """Every <table>: its rows, each a list of cell texts (th and td)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None and self.tables:
            self.tables[-1][-1].append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def test_report_default_location(base_run: Path) -> None:
    """`report RUN` writes RUN/report.html: titled with the run id, the results table with one
    row per measured point (3 repetitions each), the plots inline, the fingerprint."""
    out = base_run / "report.html"
    out.unlink(missing_ok=True)
    proc = cli("report", str(base_run))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"report: {out}", proc.stdout
    html = out.read_text(encoding="utf-8")
    run_id = base_run.name
    assert f"<title>pairbench report: {run_id}</title>" in html
    assert f"<h1>pairbench report: {run_id}</h1>" in html
    c = parse(out)
    text = " ".join(c.text)
    for section in ("Findings", "Results (median over repetitions", "Worst pair", "Plots",
                    "Environment fingerprint"):
        assert section in text, section
    assert len(c.imgs) >= 4 and all(s.startswith("data:image/png;base64,") for s in c.imgs)
    tp = Tables()
    tp.feed(html)
    results = [t for t in tp.tables if t and t[0][:5] == ["layer", "test", "variant", "size",
                                                          "pairs"]]
    assert len(results) == 1, [t[0] for t in tp.tables if t]
    head, *rows = results[0]
    df = load_run(base_run)
    agg = df[df["pair_id"] == "all"]
    points = agg.groupby(["test", "msg_size_bytes", "pairs"]).ngroups
    assert len(rows) == points, (len(rows), points)
    reps = head.index("reps")
    assert {r[reps] for r in rows} == {str(agg["repetition"].nunique())} == {"3"}
    assert {r[1] for r in rows} == {"RDMA write latency", "RDMA write bandwidth"}


def test_report_on_published_figures(tmp_path: Path) -> None:
    pub = REPO / "results" / "published"
    out = tmp_path / "p.html"
    proc = cli("report", str(pub / "paper002-connectx"), str(pub / "paper002-infinihost3"),
               "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "NOT MEASURED" in " ".join(parse(out).text)
