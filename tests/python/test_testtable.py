"""The test table: snapshot shape, snapshot = the binaries' --list-tests --format json,
the docs' generated lists, and no test name as a literal anywhere else in the package."""

from __future__ import annotations

import ast
import json
import os
import re
import sys
from pathlib import Path

import pytest

from conftest import FAKE, REPO
from pairbench.analysis.frames import METRICS
from pairbench.contract import testtable
from pairbench.contract.columns import COLUMNS
from pairbench.contract.testtable import TableError, TestInfo, TestTable

BIN = Path(os.environ.get("PAIRBENCH_BIN_DIR", REPO / "build" / "bin"))
PACKAGE = REPO / "scripts" / "pairbench"
BINARIES = {"verbs": "pairbench-verbs", "mpi": "pairbench-mpi"}
CONTRACT_KEYS = {"name", "label", "summary", "kind", "lat_kind", "primary_metric",
                 "higher_is_worse", "variants", "bidir", "payload", "window", "rooted",
                 "fixed_size_bytes", "min_pairs", "aggregate_iterations", "access", "buffers",
                 "timing"}


def all_names() -> set[str]:
    return {t.name for table in testtable.load_snapshot().values() for t in table}


def test_snapshot_follows_the_contract() -> None:
    raw = json.loads(testtable.SNAPSHOT.read_text())
    tables = testtable.load_snapshot()
    assert set(tables) == {"verbs", "mpi"}
    for layer, table in tables.items():
        assert table.layer == layer and table.schema_version == testtable.TABLE_FORMAT_VERSION
        for obj, info in zip(raw[layer]["tests"], table, strict=True):
            assert set(obj) >= CONTRACT_KEYS, (layer, info.name)
            assert info.primary_metric in COLUMNS and info.primary_metric in METRICS
            # The table's direction of its primary metric is the driver's.
            assert info.higher_is_worse == METRICS[info.primary_metric].higher_is_worse
            assert info.min_pairs >= 1 and info.label and info.summary
    assert len(all_names()) == 21  # loaded_lat is in both layers


def test_fields_of_testinfo_are_the_contract() -> None:
    from dataclasses import fields

    assert {f.name for f in fields(TestInfo)} == CONTRACT_KEYS


def _one(**change: object) -> dict:
    obj = json.loads(testtable.SNAPSHOT.read_text())["verbs"]
    obj["tests"] = [{**obj["tests"][0], **change}]
    return obj


@pytest.mark.parametrize("change,needle", [
    ({"kind": "speed"}, "kind 'speed'"),
    ({"min_pairs": "1"}, "key 'min_pairs' has the wrong type"),
    ({"aggregate_iterations": "max"}, "aggregate_iterations 'max'"),
    ({"lat_kind": "rtt"}, "lat_kind 'rtt'"),
])
def test_a_table_breaking_the_contract_is_rejected(change: dict, needle: str) -> None:
    with pytest.raises(TableError, match=needle):
        TestTable.from_json(_one(**change))


def test_unknown_keys_are_ignored_and_missing_keys_named() -> None:
    assert TestTable.from_json(_one(colour="red")).tests[0].name == "write_lat"
    obj = _one()
    del obj["tests"][0]["access"]
    with pytest.raises(TableError, match="missing key 'access'"):
        TestTable.from_json(obj)


def test_from_binary_parses_what_the_binary_prints(tmp_path: Path) -> None:
    exe = tmp_path / "pairbench-fake"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} \"$@\"\n")
    exe.chmod(0o755)
    assert testtable.from_binary(exe) == testtable.load_snapshot()["verbs"]
    with pytest.raises(TableError, match="cannot run"):
        testtable.from_binary(tmp_path / "nonexistent")
    bad = tmp_path / "old-binary"
    bad.write_text("#!/bin/sh\necho \"unknown option '--format'\" >&2\nexit 2\n")
    bad.chmod(0o755)
    with pytest.raises(TableError, match="exited 2: unknown option"):
        testtable.from_binary(bad)


def test_for_run_prefers_the_runs_copy() -> None:
    copy = _one(label="my label")
    assert testtable.for_run({"tests": copy}, "verbs")["write_lat"].label == "my label"
    assert testtable.for_run({}, "verbs") == testtable.load_snapshot()["verbs"]
    assert testtable.for_run({"tests": {"layer": "verbs"}}, "verbs").names()  # damaged copy


@pytest.mark.parametrize("layer", ["verbs", "mpi"])
def test_snapshot_equals_the_binaries_output(layer: str) -> None:
    exe = BIN / BINARIES[layer]
    if not exe.is_file():
        pytest.skip(f"{exe} is not built yet (cmake -B build -G Ninja && cmake --build build)")
    got = testtable.from_binary(exe)
    assert got.to_json() == json.loads(testtable.SNAPSHOT.read_text())[layer], \
        f"scripts/gen-test-tables: the snapshot differs from {exe.name}'s table"


@pytest.mark.parametrize("layer", ["verbs", "mpi"])
def test_docs_test_lists_are_generated_from_the_table(layer: str) -> None:
    text = (REPO / "docs" / f"{layer}.md").read_text()
    table = testtable.load_snapshot()[layer]
    assert testtable.docs_table(table) in text, \
        f"docs/{layer}.md's test list is stale: run scripts/gen-test-tables"
    # and the hand-written sections describe every test
    for name in table.names():
        assert text.count(f"`{name}`") >= 2 or name in text.split(testtable.DOCS_END)[1], name


def _constants(tree: ast.AST) -> list[tuple[int, str]]:
    """String constants that are not docstrings."""
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_no_test_name_literals_outside_testtable() -> None:
    """A test name written as a string (or in a comma list like "a,b") anywhere in the
    package but testtable.py: the table is the one place that knows the tests."""
    names = all_names()
    hits = []
    for path in sorted(PACKAGE.glob("*.py")):
        if path.name == "testtable.py":
            continue
        for line, value in _constants(ast.parse(path.read_text(), str(path))):
            parts = [p.strip() for p in value.split(",")]
            if all(re.fullmatch(r"\w+", p) for p in parts) and names & set(parts):
                hits.append(f"{path.name}:{line}: {value!r}")
    assert not hits, "test names outside testtable.py:\n" + "\n".join(hits)


def test_the_scan_finds_a_planted_literal() -> None:
    tree = ast.parse('"""write_lat in a docstring is fine."""\nX = ["write_lat,read_bw"]\n')
    assert [v for _l, v in _constants(tree)] == ["write_lat,read_bw"]


def test_every_module_imports() -> None:
    import importlib

    for path in sorted(PACKAGE.glob("*.py")):
        if path.stem != "__main__":  # runs the CLI
            importlib.import_module(f"pairbench.{path.stem}")
