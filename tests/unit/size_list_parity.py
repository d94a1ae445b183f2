#!/usr/bin/env python3
"""Parity of the two size-list parsers: the executables' (C, through size_list_cli, which
parses --sizes with the same option-table entry as pairbench-verbs and pairbench-mpi) and the
driver's (scripts/pairbench/contract/sizes.py). Every string must give the same list, or be rejected
by both; the expected outcome is stated here too, so a rule change cannot slip through both.

Usage: size_list_parity.py SIZE_LIST_CLI [BINARY --help ...]
The optional binaries' --help must state the rule with the driver's exact text.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from pairbench.contract.sizes import SIZE_LIST_RULE, parse_sizes
from pairbench.errors import UsageError

K, M, G = 1 << 10, 1 << 20, 1 << 30
# text -> expected list, or None = rejected
CASES: dict[str, list[int] | None] = {
    "8": [8],
    "8,64,1K": [8, 64, K],
    "1M,4k": [M, 4 * K],                 # order kept, lower-case suffix
    "1:16": [1, 2, 4, 8, 16],
    "1:1": [1],
    "1K:4K": [K, 2 * K, 4 * K],
    "2:8,3": [2, 4, 8, 3],               # a single size need not be a power of two
    "1G": [G],
    "1:1G": [1 << k for k in range(31)],
    "0": None,                           # sizes are >= 1
    "0:8": None,
    "-8": None,
    "-8:16": None,
    "3:20": None,                        # range ends must be powers of two
    "4:24": None,
    "16:8": None,                        # reversed range
    "8,8": None,                         # duplicates
    "4:16,8": None,
    "1K,1024": None,
    "2G": None,                          # above 1G
    "1:2G": None,
    "99999999999999999999": None,        # overflow
    "18446744073709551616": None,
    "17179869184K": None,
    "": None,                            # empty items
    ",": None,
    "8,": None,
    ",8": None,
    "8,,16": None,
    "x": None,                           # garbage
    "8KB": None,
    "1.5K": None,
    "0x10": None,
    "1T": None,
    "+8": None,
    " 8": None,
    "8 ": None,
    "8, 16": None,
    ":": None,
    "8:": None,
    ":8": None,
    "1:2:4": None,
    "\u0663": None,                      # a non-ASCII digit
    ",".join(str(i) for i in range(1, 66)): None,   # more than 64 sizes
    ",".join(str(i) for i in range(1, 65)): list(range(1, 65)),
}


def py_parse(text: str) -> list[int] | None:
    try:
        return parse_sizes(text)
    except UsageError:
        return None


def c_parse(cli: str, texts: list[str]) -> list[list[int] | None]:
    proc = subprocess.run([cli, *texts], capture_output=True, text=True, timeout=60, check=True)
    out: list[list[int] | None] = []
    for line in proc.stdout.splitlines():
        if line.startswith("ok "):
            out.append([int(x) for x in line[3:].split(",")])
        else:
            out.append(None)
    assert len(out) == len(texts), proc.stdout
    return out


def main() -> int:
    texts = list(CASES)
    fails = []
    for text, got_c in zip(texts, c_parse(sys.argv[1], texts), strict=True):
        got_py, want = py_parse(text), CASES[text]
        if not (got_c == got_py == want):
            fails.append(f"{text!r}: C {got_c}, driver {got_py}, expected {want}")
    # In a sanitizer build the MPI library's own leaks would end the process before stdout
    # is flushed: the text is what is checked here, not the library's exit.
    env = {**os.environ, "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0"}
    for binary in sys.argv[2:]:
        proc = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=60,
                              check=False, env=env)
        if SIZE_LIST_RULE not in " ".join((proc.stdout + proc.stderr).split()):
            fails.append(f"{binary} --help does not state the size-list rule verbatim")
    for f in fails:
        print("FAIL", f)
    print(f"{len(texts)} strings, {len(sys.argv) - 2} --help texts, {len(fails)} failures")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
