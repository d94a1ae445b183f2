"""The driver's column list = core/pb_schema.h = the executables' --print-schema."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import FAKE, REPO
from pairbench.contract.schema import (
    COLUMNS,
    SCHEMA_VERSION,
    check_schema,
    parse_schema_header,
    read_binary_schema,
)

# PAIRBENCH_BIN_DIR points at another build (default build/bin).
BIN = Path(os.environ.get("PAIRBENCH_BIN_DIR", REPO / "build" / "bin"))


def test_driver_columns_match_pb_schema_h() -> None:
    version, names = parse_schema_header(REPO / "core" / "pb_schema.h")
    assert version == SCHEMA_VERSION
    assert tuple(names) == COLUMNS


def test_fake_executable_honours_print_schema() -> None:
    version, cols = read_binary_schema(FAKE)
    check_schema(version, cols, "fake")


@pytest.mark.parametrize("name", ["pairbench-verbs", "pairbench-mpi"])
def test_real_binary_print_schema_matches_driver(name: str) -> None:
    exe = BIN / name
    if not exe.is_file():
        pytest.skip(f"{exe} is not built yet (cmake -B build -G Ninja && cmake --build build)")
    version, cols = read_binary_schema(exe)
    assert version == SCHEMA_VERSION, f"{name} prints schema version {version}"
    assert cols == list(COLUMNS), f"{name} --print-schema differs from the driver's columns"
