"""`pairbench screenshot HTML [PNG]`: render a report in headless Chromium (Debian package
`chromium`), write a PNG of its first screens, and fail when the page logs anything to the
console (the report has no script: any console message is an error).

Used by scripts/default-run (report.png next to report.html) and by the browser test.
Exit 0 = rendered cleanly, 1 = console messages or Chromium failed, 77 = no Chromium.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pairbench.errors import UsageError
from pairbench.io import procutil

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
CONSOLE = re.compile(r":CONSOLE[:(]\d*\)?\]? ?(.*)")
WIDTH, HEIGHT = 1280, 1800
EXIT_NO_BROWSER = 77


@dataclass
class Rendered:
    png: Path
    dom: str
    console: list[str]


def _runtime(msg: str) -> UsageError:
    err = UsageError(msg)
    err.exit_code = 1
    return err


def find_browser() -> str | None:
    env = os.environ.get("PAIRBENCH_CHROMIUM")
    if env:
        return env if shutil.which(env) else None
    return next((b for b in BROWSERS if shutil.which(b)), None)


def _run(browser: str, args: list[str], profile: str, timeout_s: float) -> tuple[str, str]:
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
           "--enable-logging=stderr", "--v=0", *args]
    res = procutil.run_bounded(cmd, timeout_s)  # Chromium's helpers die with its group
    p = res.result
    if res.state == "cannot start" or p is None:
        raise _runtime(f"cannot run {browser}: {res.why}")
    if res.state != "exited":
        raise _runtime(f"{browser} did not finish within {timeout_s:g} s")
    if p.returncode != 0:
        raise _runtime(f"{browser} exited {p.returncode}: {p.stderr.strip()[-300:]}")
    return p.stdout, p.stderr


def render(html: Path, png: Path, width: int = WIDTH, height: int = HEIGHT,
           timeout_s: float = 120.0) -> Rendered:
    """Screenshot of html into png, the rendered DOM and the console messages."""
    browser = find_browser()
    if browser is None:
        err = UsageError("no Chromium found (install the Debian package chromium)")
        err.exit_code = EXIT_NO_BROWSER
        raise err
    url = html.resolve().as_uri()
    with tempfile.TemporaryDirectory(prefix="pairbench-chromium-") as profile:
        _o, err1 = _run(browser, [f"--window-size={width},{height}",
                                  f"--screenshot={png.resolve()}", url], profile, timeout_s)
        dom, err2 = _run(browser, ["--dump-dom", url], profile, timeout_s)
    console = [m.group(1) for line in (err1 + err2).splitlines()
               if (m := CONSOLE.search(line))]
    if not png.is_file() or png.stat().st_size == 0:
        raise _runtime(f"{browser} wrote no screenshot {png}")
    return Rendered(png, dom, console)


