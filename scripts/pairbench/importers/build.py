"""Parsed files -> one run directory: benchmarks of one configuration (test, what the
output says about how it ran, pairs) are repetitions of one point, in the order the files
were given; different configurations of a test become different variants. data.csv is
in the schema (layer = the tool), metadata.json says where every number came from. The
directory is written under a hidden name and renamed when complete: whole or not at all."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pairbench.contract.columns import BLOCK_TIMED, COLUMNS, DRIVER_COLUMNS, SCHEMA_VERSION
from pairbench.contract.testtable import IMPORTED_SAME_AS, TABLE_FORMAT_VERSION
from pairbench.errors import UsageError
from pairbench.importers import imb, nccl, osu, perftest
from pairbench.importers.base import Bench, Parsed, bad, read_text
from pairbench.io.safeio import output_dir, write_json, write_output
from pairbench.runner.collect import rows_to_csv
from pairbench.runner.rundir import now_iso

PARSERS: Mapping[str, Callable[[Path, str, str], Parsed]] = {
    "osu": osu.parse, "perftest": perftest.parse, "imb": imb.parse, "nccl-tests": nccl.parse,
}
# What --set may add: what the outputs do not say (docs/import.md).
SETTABLE = ("pairs", "host", "peer", "device", "test")
_LAT = ("lat_us_min", "lat_us_p50", "lat_us_p90", "lat_us_p99", "lat_us_p999", "lat_us_max",
        "lat_us_mean", "lat_us_stdev")


def parse_sets(items: list[str]) -> dict[str, str]:
    """--set KEY=VALUE (repeatable) as a dict; UsageError on anything else."""
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or key not in SETTABLE or not value:
            raise UsageError(f"--set {item!r}: expected KEY=VALUE with KEY one of "
                             f"{', '.join(SETTABLE)}")
        if key == "pairs" and not re.fullmatch(r"[1-9]\d*", value):
            raise UsageError(f"--set pairs={value!r}: a positive whole number")
        if key in out and out[key] != value:
            raise UsageError(f"--set {key} given twice ({out[key]!r}, {value!r})")
        out[key] = value
    return out


@dataclass
class Item:
    parsed: Parsed
    bench: Bench
    pairs: int
    repetition: int = 0  # set by build_rows


def parse_files(tool: str, paths: list[Path], sets: Mapping[str, str]) -> list[Parsed]:
    """Every file parsed (the first bad one raises BadFile naming it and the line)."""
    if tool not in PARSERS:
        raise UsageError(f"--from {tool!r}: one of {', '.join(PARSERS)}")
    seen: dict[str, Path] = {}
    out = []
    for path in paths:
        text, sha = read_text(path)
        if sha in seen:
            raise bad(path, None, f"the same content as {seen[sha]}: one measurement given "
                      "twice is not two repetitions")
        seen[sha] = path
        parsed = PARSERS[tool](path, text, sha)
        parsed.size_bytes = len(text.encode("utf-8"))
        for b in parsed.benches:
            if not b.test:
                if "test" not in sets:
                    raise bad(path, b.line, "the output does not name its test: add "
                              "--set test=NAME (e.g. all_reduce_perf)")
                b.test = sets["test"]
        out.append(parsed)
    return out


def items_of(files: list[Parsed], sets: Mapping[str, str]) -> list[Item]:
    items = []
    for p in files:
        for b in p.benches:
            pairs = b.pairs
            if "pairs" in sets:
                want = int(sets["pairs"])
                if pairs is not None and pairs != want:
                    raise bad(p.path, b.line, f"{b.test}: the output says {pairs} pair(s), "
                              f"--set pairs={want} says otherwise")
                pairs = want
            if sets.get("device") and b.device and sets["device"] != b.device:
                raise bad(p.path, b.line, f"{b.test}: the output says device {b.device}, "
                          f"--set device={sets['device']} says otherwise")
            if pairs is None:
                what = "ranks" if b.kind == "collective" else "pairs"
                raise bad(p.path, b.line, f"{b.test}: the output does not say how many "
                          f"{what} ran: add --set pairs=N (N = {what})")
            items.append(Item(p, b, pairs))
    _refuse_twins(items)
    return items


# Text tables print a value to 2 decimals (perftest's and nccl-tests': %.2f), JSON to more;
# after the unit conversions (GB/s x 8 -> Gbit/s) a run's two outputs agree within 0.04 of the
# schema's unit, or 0.1 % of the value for large ones.
_TWIN_ABS, _TWIN_REL = 0.04, 1e-3


def _is_json(p: Parsed) -> bool:
    return p.path.suffix.lower() == ".json" or bool(p.info.get("json"))


def _refuse_twins(items: list[Item]) -> None:
    """A run's text output and its JSON output (perftest --out_json, nccl-tests -J: written by
    the same run) are one measurement: given together they would be two repetitions, and the
    gate would count the run twice. A text and a JSON benchmark of one configuration whose
    every value agrees to the text's printed precision (at least three values compared), at
    every size, are refused as such: different runs do not agree that closely at every size
    and metric (docs/import.md)."""
    def key(it: Item) -> tuple:
        return (it.bench.test, it.pairs, tuple(sorted(it.bench.config.items())),
                tuple(sorted((m.size, m.pair_id, m.variant) for m in it.bench.measures)))

    by_key: dict[tuple, list[Item]] = {}
    for it in items:
        by_key.setdefault(key(it), []).append(it)
    for group in by_key.values():
        texts = [it for it in group if not _is_json(it.parsed)]
        for js in (it for it in group if _is_json(it.parsed)):
            for tx in texts:
                if _same_values(tx.bench, js.bench):
                    raise bad(js.parsed.path, js.bench.line, f"{js.bench.test}: every value "
                              f"equals {tx.parsed.path}'s (line {tx.bench.line}) to its printed "
                              "precision: the JSON and the text output of one run? One run "
                              "given twice is not two repetitions: import one of them")


def _same_values(a: Bench, b: Bench) -> bool:
    ma = {(m.size, m.pair_id, m.variant): m.values for m in a.measures}
    compared = 0
    for m in b.measures:
        va = ma.get((m.size, m.pair_id, m.variant), {})
        for k in va.keys() & m.values.keys():
            x, y = va[k], m.values[k]
            if abs(x - y) > max(_TWIN_ABS, _TWIN_REL * max(abs(x), abs(y))):
                return False
            compared += 1
    return compared >= 3


def _variants(items: list[Item]) -> dict[int, str]:
    """id(bench) -> its variant: the config keys whose values differ between the
    configurations of one test at one pair count, as key=value (empty when it ran one way)."""
    by_test: dict[tuple[str, int], list[Item]] = {}
    for it in items:
        by_test.setdefault((it.bench.test, it.pairs), []).append(it)
    out: dict[int, str] = {}
    for group in by_test.values():
        keys = sorted({k for it in group for k in it.bench.config})
        differ = [k for k in keys if len({it.bench.config.get(k, "") for it in group}) > 1]
        for it in group:
            out[id(it.bench)] = ",".join(f"{k}={it.bench.config.get(k) or 'none'}"
                                         for k in differ)
    return out


def build_rows(items: list[Item], sets: Mapping[str, str], run_id: str) -> list[dict]:
    variants = _variants(items)
    reps: dict[tuple, int] = {}
    rows = []
    for it in items:
        b = it.bench
        key = (b.test, variants[id(b)], it.pairs, b.qps)
        reps[key] = rep = reps.get(key, 0) + 1
        it.repetition = rep
        for m in b.measures:
            variant = ",".join(v for v in (m.variant, variants[id(b)]) if v)
            row = dict.fromkeys((*COLUMNS, *DRIVER_COLUMNS), "")
            row.update(schema_version=str(SCHEMA_VERSION), layer=it.parsed.tool, test=b.test,
                       variant=variant, msg_size_bytes=str(m.size), pairs=str(it.pairs),
                       pair_id=m.pair_id, scope="all" if m.pair_id == "all" else "pair",
                       qps=b.qps, status=m.status, error=m.error, run_id=run_id,
                       repetition=str(rep), host=sets.get("host", ""),
                       peer=sets.get("peer", ""), device=sets.get("device", b.device))
            if m.iterations is not None:
                row["iterations"] = str(m.iterations)
            for col, v in m.values.items():
                row[col] = f"{v:.10g}"
            if any(c in m.values for c in _LAT):
                row["lat_kind"] = b.lat_kind or ""
                if "lat_us_p50" not in m.values and "lat_us_mean" in m.values:
                    row["flags"] = BLOCK_TIMED  # one mean over a timed block of iterations
            rows.append(row)
    return rows


def test_table(tool: str, items: list[Item], rows: list[dict]) -> dict:
    """The run's test table (metadata.json "tests"): what each imported test is."""
    tests: dict[str, dict] = {}
    for it in items:
        b = it.bench
        if b.test in tests:
            continue
        mine = [r for r in rows if r["test"] == b.test]
        primary = b.primary
        if primary == "lat_us_mean" and any(r["lat_us_p50"] for r in mine):
            primary = "lat_us_p50"
        same = IMPORTED_SAME_AS.get((tool, b.test))
        tests[b.test] = {
            "name": b.test, "label": b.label, "kind": b.kind, "lat_kind": b.lat_kind,
            "summary": f"imported from {tool}: {b.label}", "primary_metric": primary,
            "higher_is_worse": primary.startswith("lat_"),
            "variants": sorted({r["variant"] for r in mine if r["variant"]}),
            "bidir": "bibw" in b.test or "bidir" in b.label.lower(), "payload": False,
            "window": False, "rooted": False, "fixed_size_bytes": None, "min_pairs": 1,
            "aggregate_iterations": "shared" if b.kind == "collective" else "sum",
            "access": {}, "tool": tool, "same_as": " ".join(same) if same else None,
        }
    return {"layer": tool, "schema_version": TABLE_FORMAT_VERSION, "tests": list(tests.values())}


def metadata(tool: str, files: list[Parsed], items: list[Item], rows: list[dict],
             sets: Mapping[str, str], run_id: str, argv: list[str]) -> dict:
    versions = sorted({p.version for p in files if p.version})
    label = f"{tool} {'/'.join(versions)}".strip() + f" (imported, {len(files)} file(s))"
    recs = []
    for p in files:
        benches = [{"test": it.bench.test, "pairs": it.pairs, "repetition": it.repetition,
                    "config": dict(it.bench.config),
                    "sizes": len(it.bench.measures), "not_imported": list(it.bench.lost)}
                   for it in items if it.parsed is p]
        recs.append({"path": str(p.path.absolute()), "sha256": p.sha256, "bytes": p.size_bytes,
                     "tool": tool, "version": p.version or None, "command": p.command or None,
                     "info": p.info, "benchmarks": benches})
    n_err = sum(r["status"] == "error" for r in rows)
    return {"run_id": run_id, "kind": "pairbench import", "status": "complete",
            "started": now_iso(), "finished": now_iso(), "label": label,
            "config": {"layer": tool},
            "imported": {"tool": tool, "versions": versions, "set": dict(sets),
                         "command": argv, "files": recs},
            "tests": test_table(tool, items, rows), "rows": len(rows), "error_rows": n_err}


def write_run(results_dir: Path, tool: str, rows: list[dict], meta_of: Callable[[str], dict]
              ) -> Path:
    """data.csv and metadata.json into a new directory under results_dir, complete or not
    at all (written under a hidden name, renamed when both are there)."""
    output_dir(results_dir, "--results-dir")
    host = socket.gethostname().split(".")[0] or "host"
    name = f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-{host}-{tool}-import-{uuid.uuid4().hex[:6]}"
    tmp = results_dir / f".{name}.partial"
    try:
        tmp.mkdir()
    except OSError as exc:
        raise UsageError(f"--results-dir {results_dir}: cannot create a run directory: "
                         f"{exc.strerror}") from None
    try:
        for r in rows:
            r["run_id"] = name
        write_output(tmp / "data.csv", rows_to_csv(rows), "data.csv")
        write_json(tmp / "metadata.json", meta_of(name), "metadata.json")
        final = results_dir / name
        os.rename(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
        raise
    return final
