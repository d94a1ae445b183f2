#!/usr/bin/env python3
"""Which skipped pytest tests were allowed to skip (scripts/test-all under CI=true).

Usage: ci_skips.py JUNIT_XML ALLOWED_FILE. Prints every skipped test with its reason; exit 1
when one of them is not matched by a pattern of ALLOWED_FILE (fnmatch patterns on the test
id `path::name`, one per line, '#' comments): on our CI machines root is there and
scripts/install-deps installs MPI, Slurm, Chromium and iproute2, so a skip there means a
test that silently did not run. Standard library only.
"""

from __future__ import annotations

import fnmatch
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def skipped(junit: Path) -> list[tuple[str, str]]:
    out = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        skip = case.find("skipped")
        if skip is not None:
            path = case.get("classname", "").replace(".", "/")
            out.append((f"{path}.py::{case.get('name', '')}", skip.get("message", "")))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: ci_skips.py JUNIT_XML ALLOWED_FILE", file=sys.stderr)
        return 2
    allowed = [ln.split("#")[0].strip() for ln in Path(argv[2]).read_text().splitlines()]
    allowed = [a for a in allowed if a]
    bad = 0
    for test, why in skipped(Path(argv[1])):
        ok = any(fnmatch.fnmatch(test, pat) for pat in allowed)
        print(f"test-all: skipped{'' if ok else ' (NOT ALLOWED under CI)'}: {test}: {why}",
              file=sys.stderr)
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
