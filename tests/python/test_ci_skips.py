"""scripts/test-all under CI=true: a pytest skip not listed in tests/ci-may-skip.txt fails
its stage (tests/support/ci_skips.py reads pytest's JUnit XML)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import REPO

CHECK = REPO / "tests" / "support" / "ci_skips.py"


def _junit(tmp_path: Path) -> Path:
    (tmp_path / "test_s.py").write_text(
        "import pytest\n\ndef test_runs():\n    pass\n\n"
        "def test_skips():\n    pytest.skip('no widget here')\n")
    xml = tmp_path / "j.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    f"--junitxml={xml}", "test_s.py"], cwd=tmp_path, capture_output=True,
                   check=True, timeout=120)
    return xml


def _check(xml: Path, allowed: str, tmp_path: Path) -> subprocess.CompletedProcess:
    allow = tmp_path / "allow.txt"
    allow.write_text(allowed)
    return subprocess.run([sys.executable, str(CHECK), str(xml), str(allow)],
                          capture_output=True, text=True, timeout=60)


def test_an_unlisted_skip_fails_and_names_the_test(tmp_path: Path) -> None:
    res = _check(_junit(tmp_path), "# none\n", tmp_path)
    assert res.returncode == 1
    assert "NOT ALLOWED under CI): test_s.py::test_skips: no widget here" in res.stderr
    assert "test_runs" not in res.stderr


def test_a_listed_skip_passes_and_is_still_printed(tmp_path: Path) -> None:
    res = _check(_junit(tmp_path), "test_s.py::test_sk*  # a pattern\n", tmp_path)
    assert res.returncode == 0
    assert "skipped: test_s.py::test_skips: no widget here" in res.stderr


def test_our_list_allows_no_skip_today() -> None:
    lines = [ln.split("#")[0].strip() for ln in
             (REPO / "tests" / "ci-may-skip.txt").read_text().splitlines()]
    assert [ln for ln in lines if ln] == []
