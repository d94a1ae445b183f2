"""The test table: what each test of each layer is (label, kind, primary metric, ...).

The executables print it (`pairbench-verbs --list-tests --format json`, likewise
pairbench-mpi; see docs/driver.md); a sweep stores that copy in the run's metadata.json
under "tests". `test_tables.json` next to this module is a snapshot of both binaries'
tables (scripts/gen-test-tables rewrites it) for runs made without a copy.

This is the only module of the package in which test names may appear as literals
(tests/python/test_testtable.py checks it): everything else asks the table.
Standard library only: the ctest checkers import it with the system python3.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any

from pairbench.io import procutil

SNAPSHOT = Path(__file__).with_name("test_tables.json")
LAYERS = ("verbs", "mpi")
# Layers of runs imported from other tools (`pairbench import`, docs/import.md): a row's
# layer names its tool, and its test table travels in the run's metadata.json only.
IMPORTED_LAYERS = ("osu", "perftest", "imb", "nccl-tests")
KINDS = frozenset({"latency", "bandwidth", "message_rate", "loaded_latency", "collective",
                   "halo"})
LAT_KINDS = frozenset({"half_rtt", "full_rtt", "op"})
AGGREGATE_ITERATIONS = frozenset({"sum", "shared"})

# Kinds whose every row (pair rows and aggregate) has a latency / a bandwidth.
LATENCY_KINDS = frozenset({"latency", "collective", "halo"})
BANDWIDTH_KINDS = frozenset({"bandwidth", "message_rate"})
LOADED_KIND = "loaded_latency"  # probe latency (pair 0) + loading pairs' bandwidth

# What `pairbench default` sweeps (a test-specific choice, so it lives here).
DEFAULT_TESTS: Mapping[str, tuple[str, ...]] = {
    "verbs": ("write_lat", "write_bw", "read_lat"),
    "mpi": ("latency", "bw"),
}


class TableError(ValueError):
    """A test table that does not follow the contract (docs/driver.md)."""


@dataclass(frozen=True)
class TestInfo:
    """One test as the binary describes it (contract 1 of issue 12; unknown keys ignored)."""

    __test__ = False  # not a pytest class

    name: str
    label: str
    summary: str
    kind: str
    lat_kind: str | None
    primary_metric: str
    higher_is_worse: bool
    variants: tuple[str, ...]
    bidir: bool
    payload: bool
    window: bool
    rooted: bool
    fixed_size_bytes: int | None
    min_pairs: int
    aggregate_iterations: str
    access: Mapping[str, str] = field(default_factory=dict, hash=False)
    # Buffer layouts --buffers chooses from, first = default (issue 16); () = no choice.
    # Optional in the JSON: tables printed before issue 16 have no such key.
    buffers: tuple[str, ...] = ()
    # Latency timings --timing chooses from, first = default; () = per iteration only.
    # Optional in the JSON: tables printed before block timing have no such key.
    timing: tuple[str, ...] = ()

    @property
    def pairwise(self) -> bool:
        """Ranks/processes form pairs (False: collectives and halo, every rank in one N)."""
        return self.aggregate_iterations == "sum"

    @property
    def has_latency(self) -> bool:
        """Some rows of the test carry a latency."""
        return self.lat_kind is not None

    @property
    def has_bandwidth(self) -> bool:
        """Some rows of the test carry a bandwidth."""
        return self.kind in BANDWIDTH_KINDS or self.kind == LOADED_KIND

    @property
    def default_buffers(self) -> str:
        """The layout a row of this test carries by default ('' = the test has no choice)."""
        return self.buffers[0] if self.buffers else ""

    @property
    def default_variant(self) -> str:
        return self.variants[0] if self.variants else ""

    @classmethod
    def from_json(cls, obj: Any, where: str) -> TestInfo:
        if not isinstance(obj, dict):
            raise TableError(f"{where}: a test must be an object, got {obj!r}")
        name = obj.get("name", "?")
        at = f"{where}: test {name!r}"
        kw: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in obj and f.name in _OPTIONAL:
                continue
            if f.name not in obj:
                raise TableError(f"{at}: missing key {f.name!r}")
            kw[f.name] = _typed(obj[f.name], f.name, at)
        info = cls(**kw)
        if info.kind not in KINDS:
            raise TableError(f"{at}: kind {info.kind!r} is not one of {', '.join(sorted(KINDS))}")
        if info.lat_kind is not None and info.lat_kind not in LAT_KINDS:
            raise TableError(f"{at}: lat_kind {info.lat_kind!r} is not one of "
                             f"{', '.join(sorted(LAT_KINDS))} or null")
        if info.aggregate_iterations not in AGGREGATE_ITERATIONS:
            raise TableError(f"{at}: aggregate_iterations {info.aggregate_iterations!r} is not "
                             "'sum' or 'shared'")
        return info


_STR = {"name", "label", "summary", "kind", "primary_metric", "aggregate_iterations"}
_OPTIONAL = {"buffers", "timing"}
_BOOL = {"higher_is_worse", "bidir", "payload", "window", "rooted"}


def _typed(v: Any, key: str, at: str) -> Any:
    ok: bool
    if key in _STR:
        ok = isinstance(v, str)
    elif key in _BOOL:
        ok = isinstance(v, bool)
    elif key == "lat_kind":
        ok = v is None or isinstance(v, str)
    elif key in ("fixed_size_bytes", "min_pairs"):
        ok = (v is None and key == "fixed_size_bytes") or (
            isinstance(v, int) and not isinstance(v, bool) and v >= 0)
    elif key in ("variants", "buffers", "timing"):
        ok = isinstance(v, list) and all(isinstance(x, str) for x in v)
        v = tuple(v) if ok else v
    elif key == "access":
        ok = isinstance(v, dict) and all(isinstance(x, str) for x in v.values())
        v = dict(v) if ok else v
    else:  # pragma: no cover - every field is listed above
        raise AssertionError(key)
    if not ok:
        raise TableError(f"{at}: key {key!r} has the wrong type: {v!r}")
    return v


# Version of the --list-tests JSON format (core/pb_test_info.h PB_TEST_TABLE_SCHEMA); it is
# not the CSV schema version and changes only when this format does.
TABLE_FORMAT_VERSION = 2


@dataclass(frozen=True)
class TestTable:
    """One layer's tests, in the binary's order."""

    __test__ = False

    layer: str
    schema_version: int
    tests: tuple[TestInfo, ...]
    raw: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False, repr=False)

    @classmethod
    def from_json(cls, obj: Any, where: str = "test table") -> TestTable:
        if not isinstance(obj, dict):
            raise TableError(f"{where}: expected a JSON object")
        layer = obj.get("layer")
        if layer not in LAYERS + IMPORTED_LAYERS:
            raise TableError(f"{where}: layer {layer!r} is not one of "
                             f"{', '.join(LAYERS + IMPORTED_LAYERS)}")
        version = obj.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise TableError(f"{where}: schema_version {version!r} is not an integer")
        tests = obj.get("tests")
        if not isinstance(tests, list) or not tests:
            raise TableError(f"{where}: 'tests' must be a non-empty list")
        infos = tuple(TestInfo.from_json(t, where) for t in tests)
        names = [t.name for t in infos]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise TableError(f"{where}: test(s) listed twice: {', '.join(dup)}")
        return cls(layer, version, infos, obj)

    def __iter__(self) -> Iterator[TestInfo]:
        return iter(self.tests)

    def __contains__(self, name: object) -> bool:
        return any(t.name == name for t in self.tests)

    def names(self) -> list[str]:
        return [t.name for t in self.tests]

    def get(self, name: str) -> TestInfo | None:
        return next((t for t in self.tests if t.name == name), None)

    def __getitem__(self, name: str) -> TestInfo:
        info = self.get(name)
        if info is None:
            raise KeyError(f"{self.layer} has no test {name!r} (tests: {', '.join(self.names())})")
        return info

    def to_json(self) -> dict[str, Any]:
        """The object the binary printed (for metadata.json)."""
        return dict(self.raw)


@cache
def _snapshot_json() -> str:
    return SNAPSHOT.read_text(encoding="utf-8")


def load_snapshot(path: Path | None = None) -> dict[str, TestTable]:
    """The committed snapshot: {"verbs": TestTable, "mpi": TestTable}."""
    text = _snapshot_json() if path is None else path.read_text(encoding="utf-8")
    where = str(path or SNAPSHOT)
    data = json.loads(text)
    if not isinstance(data, dict) or set(data) != set(LAYERS):
        raise TableError(f"{where}: expected an object with keys {', '.join(LAYERS)}")
    tables = {k: TestTable.from_json(v, f"{where}: {k}") for k, v in data.items()}
    for k, t in tables.items():
        if t.layer != k:
            raise TableError(f"{where}: {k} holds the table of layer {t.layer!r}")
    return tables


def parse_list_tests(text: str, where: str) -> TestTable:
    """Parse `--list-tests --format json` output."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TableError(f"{where}: not JSON ({exc.msg} at line {exc.lineno})") from None
    return TestTable.from_json(obj, where)


def from_binary(path: Path | str, timeout_s: float = 60.0) -> TestTable:
    """Run `BINARY --list-tests --format json` and parse what it printed."""
    cmd = [str(path), "--list-tests", "--format", "json"]
    where = " ".join(cmd)
    res = procutil.run_bounded(cmd, timeout_s)  # its own process group, killed on timeout
    proc = res.result
    if res.state != "exited" or proc is None:
        why = res.why or f"no answer within {timeout_s:g} s (process group killed)"
        raise TableError(f"cannot run {where}: {why}")
    if proc.returncode != 0:
        raise TableError(f"{where} exited {proc.returncode}: {proc.stderr.strip()[-200:]}")
    return parse_list_tests(proc.stdout, where)


def for_run(metadata: Mapping[str, Any] | None, layer: str) -> TestTable:
    """The table a run was made with (metadata.json "tests"), else the snapshot's."""
    copy = (metadata or {}).get("tests")
    if isinstance(copy, dict) and copy.get("layer") == layer:
        try:
            return TestTable.from_json(copy, "metadata.json tests")
        except TableError:
            pass  # a damaged copy: the snapshot still labels the run
    return load_snapshot()[layer]


def tables_for_run(metadata: Mapping[str, Any] | None) -> dict[str, TestTable]:
    """Both layers' tables for labelling a run: its own copy where it has one."""
    tables = dict(load_snapshot())
    copy = (metadata or {}).get("tests")
    if isinstance(copy, dict) and copy.get("layer") in tables:
        tables[copy["layer"]] = for_run(metadata, copy["layer"])
    elif isinstance(copy, dict) and copy.get("layer") in IMPORTED_LAYERS:
        # an imported run's own table (pairbench import); no snapshot to fall back on
        with contextlib.suppress(TableError):
            tables[copy["layer"]] = TestTable.from_json(copy, "metadata.json tests")
    return tables


# The pairbench test an imported tool's test resembles (`compare --across-tools` matches
# them; docs/import.md says how their methods differ). Tools' test names as they print them.
IMPORTED_SAME_AS: Mapping[tuple[str, str], tuple[str, str]] = {
    ("osu", "osu_latency"): ("mpi", "latency"),
    ("osu", "osu_bw"): ("mpi", "bw"),
    ("osu", "osu_bibw"): ("mpi", "bibw"),
    ("osu", "osu_mbw_mr"): ("mpi", "msgrate"),
    ("osu", "osu_multi_lat"): ("mpi", "latency"),
    ("osu", "osu_barrier"): ("mpi", "barrier"),
    ("osu", "osu_bcast"): ("mpi", "bcast"),
    ("osu", "osu_reduce"): ("mpi", "reduce"),
    ("osu", "osu_allreduce"): ("mpi", "allreduce"),
    ("osu", "osu_gather"): ("mpi", "gather"),
    ("osu", "osu_scatter"): ("mpi", "scatter"),
    ("osu", "osu_allgather"): ("mpi", "allgather"),
    ("osu", "osu_alltoall"): ("mpi", "alltoall"),
    ("imb", "PingPong"): ("mpi", "latency"),
    ("imb", "Barrier"): ("mpi", "barrier"),
    ("imb", "Bcast"): ("mpi", "bcast"),
    ("imb", "Reduce"): ("mpi", "reduce"),
    ("imb", "Allreduce"): ("mpi", "allreduce"),
    ("imb", "Gather"): ("mpi", "gather"),
    ("imb", "Scatter"): ("mpi", "scatter"),
    ("imb", "Allgather"): ("mpi", "allgather"),
    ("imb", "Alltoall"): ("mpi", "alltoall"),
    ("perftest", "ib_write_lat"): ("verbs", "write_lat"),
    ("perftest", "ib_read_lat"): ("verbs", "read_lat"),
    ("perftest", "ib_send_lat"): ("verbs", "send_lat"),
    ("perftest", "ib_write_bw"): ("verbs", "write_bw"),
    ("perftest", "ib_read_bw"): ("verbs", "read_bw"),
    ("perftest", "ib_send_bw"): ("verbs", "send_bw"),
}


def find(test: str, layer: str | None = None,
         tables: Mapping[str, TestTable] | None = None) -> TestInfo | None:
    """A test by name (in `layer`, or the first layer that has it); None if unknown."""
    tabs = tables or load_snapshot()
    for lay in (layer,) if layer else LAYERS:
        tab = tabs.get(lay) if lay else None
        info = tab.get(test) if tab else None
        if info:
            return info
    return None


def label(test: str, variant: str = "", layer: str | None = None,
          tables: Mapping[str, TestTable] | None = None) -> str:
    """A human label, e.g. 'RDMA write latency [fadd]'; the name itself for unknown tests."""
    info = find(test, layer, tables)
    base = info.label if info else test
    return f"{base} [{variant}]" if variant else base


DOCS_BEGIN = "<!-- test table: generated by scripts/gen-test-tables; do not edit -->"
DOCS_END = "<!-- end of test table -->"


def docs_table(table: TestTable) -> str:
    """The Markdown test list of docs/<layer>.md (between DOCS_BEGIN and DOCS_END)."""
    head = ["test", "label", "kind", "primary metric", "variants", "min pairs",
            "aggregate `iterations`", "summary"]
    lines = [DOCS_BEGIN, "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for t in table:
        arrow = "lower is better" if t.higher_is_worse else "higher is better"
        cells = [f"`{t.name}`", t.label, t.kind, f"`{t.primary_metric}` ({arrow})",
                 ", ".join(t.variants) or "—", str(t.min_pairs),
                 "Σ over pairs" if t.aggregate_iterations == "sum" else "shared N",
                 t.summary]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines.append(DOCS_END)
    return "\n".join(lines)


def replace_docs_table(text: str, table: TestTable) -> str:
    """`text` with its generated test table replaced by the one of `table`."""
    start, end = text.find(DOCS_BEGIN), text.find(DOCS_END)
    if start < 0 or end < start:
        raise TableError("no generated test table markers in the document")
    return text[:start] + docs_table(table) + text[end + len(DOCS_END):]
