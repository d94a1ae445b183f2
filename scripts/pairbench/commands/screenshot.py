"""`pairbench screenshot`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pairbench.errors import UsageError
from pairbench.present.screenshot import HEIGHT, render


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("html", metavar="HTML", help="the report (e.g. RUN/report.html)")
    p.add_argument("png", metavar="PNG", nargs="?", default=None,
                   help="screenshot file (default: HTML with .png)")
    p.add_argument("--height", type=int, default=HEIGHT, help="pixels of the page captured")


def run_screenshot(ns: argparse.Namespace) -> int:
    html = Path(ns.html)
    if not html.is_file():
        raise UsageError(f"{html}: no such file")
    png = Path(ns.png) if ns.png else html.with_suffix(".png")
    r = render(html, png, height=ns.height)
    for m in r.console:
        print(f"pairbench screenshot: console: {m}", file=sys.stderr)
    print(f"screenshot: {png}")
    return 1 if r.console else 0


