"""The driver's layout (docs/driver-layout.md): packages by pipeline stage, each importing
only the stages below it; no import circle; no module importing a command module; pandas and
friends only in analysis/ and present/; one table of the executables' options, checked
against both binaries' --help; one launcher per file, found by the registry."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FAKE, REPO, SCRIPTS
from pairbench.contract.testtable import LAYERS
from pairbench.runner import launchers
from pairbench.runner.exeopts import EXE_OPTIONS, exe_argv
from pairbench.runner.options import SweepOptions, config_from_options
from pairbench.runner.plan import SweepConfig, plan_sweep
from pairbench.runner.run import run_point
from pairbench.runner.scan import FabricConfig

PKG = SCRIPTS / "pairbench"
# Lower stages first: a module may import its own package and those before it.
STAGES = ("errors", "io", "contract", "runner", "importers", "analysis", "present", "commands",
          "cli")
HEAVY = {"pandas", "numpy", "matplotlib", "scipy"}  # analysis/, present/ only


def module_name(path: Path) -> str:
    rel = path.relative_to(SCRIPTS).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts}


def imports_of(path: Path, mods: dict[str, Path]) -> tuple[set[str], set[str]]:
    """(pairbench modules, top-level third-party names) that `path` imports anywhere in it,
    function bodies included."""
    own: set[str] = set()
    other: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for n in names:
            if n.split(".")[0] == "pairbench":
                if n in mods:
                    own.add(n)
            else:
                other.add(n.split(".")[0])
    own.discard(module_name(path))
    return own, other


def stage(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "package"


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {m: imports_of(p, mods)[0] for m, p in mods.items()}


def test_no_import_circle() -> None:
    g = graph()
    # Tarjan's strongly connected components: any with two or more modules is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in g:
        if v not in index:
            visit(v)
    assert circles == []


def test_nothing_imports_a_command_module() -> None:
    bad = {m: sorted(d for d in deps if stage(d) == "commands")
           for m, deps in graph().items() if stage(m) != "commands"}
    assert {m: d for m, d in bad.items() if d} == {}
    # ... and no command imports another one (what two commands share lives in a package)
    cross = {m: sorted(d for d in deps if stage(d) == "commands" and d != "pairbench.commands")
             for m, deps in graph().items() if stage(m) == "commands"}
    assert {m: d for m, d in cross.items() if d} == {}


def test_each_stage_imports_only_the_stages_below() -> None:
    wrong = []
    for m, deps in graph().items():
        s = stage(m)
        if s not in STAGES:  # __init__, __main__
            continue
        for d in deps:
            ds = stage(d)
            if ds in STAGES and STAGES.index(ds) > STAGES.index(s):
                wrong.append(f"{m} -> {d}")
    assert wrong == []


def test_only_analysis_and_present_import_pandas_and_friends() -> None:
    mods = modules()
    wrong = {m: sorted(imports_of(p, mods)[1] & HEAVY) for m, p in mods.items()
             if stage(m) not in ("analysis", "present", "commands")}
    assert {m: v for m, v in wrong.items() if v} == {}


def test_the_rig_side_loads_without_pandas() -> None:
    """What runs inside the Soft-RoCE VM (the sweep loop, the launchers, the plan) imports
    none of the heavy libraries (each costs about a minute to import there)."""
    code = ("import sys, pairbench.runner.riginside, pairbench.runner.launchers as L; "
            "L.registry(); print(sorted({m.split('.')[0] for m in sys.modules} & "
            f"set({sorted(HEAVY)!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(SCRIPTS)}, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_every_package_says_what_it_may_import() -> None:
    for pkg in STAGES[1:-1]:
        doc = ast.get_docstring(ast.parse((PKG / pkg / "__init__.py").read_text())) or ""
        assert "May import" in doc, pkg


def test_row_checker_is_test_support_code() -> None:
    assert (REPO / "tests" / "support" / "rowcheck.py").is_file()
    assert not list(PKG.rglob("rowcheck.py"))


# --- one option set ------------------------------------------------------------------------

def _help_options(layer: str) -> dict[str, str]:
    """The options `pairbench-LAYER --help` lists: long name -> the line."""
    binary = REPO / "build" / "bin" / f"pairbench-{layer}"
    if not binary.is_file():
        pytest.skip(f"{binary} is not built")
    out = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = {}
    for line in out.stdout.splitlines():
        m = re.match(r"\s+(?:(-\w), )?(--[\w-]+)", line)
        if m:
            lines[m.group(2)] = line
    return lines


@pytest.mark.parametrize("layer", LAYERS)
def test_option_table_matches_the_binaries_help(layer: str) -> None:
    """Every entry of EXE_OPTIONS is an option of each binary it claims, with the same short
    spelling, a value exactly when the entry's type takes one; and an entry a layer lacks is
    really absent from that binary."""
    have = _help_options(layer)
    for o in EXE_OPTIONS:
        if layer not in o.layers:
            assert o.flag not in have, (layer, o.flag)
            continue
        assert o.flag in have, (layer, o.flag)
        line = have[o.flag]
        if o.short:
            assert line.lstrip().startswith(o.short + ","), (o.flag, line)
        takes_value = re.match(rf"\s+(?:-\w, )?{re.escape(o.flag)} \S", line) is not None
        assert takes_value == (o.kind is not bool), (o.flag, line)


def test_option_table_reaches_every_command_and_config() -> None:
    """One entry is enough: both commands offer it, the three option/config classes carry it,
    and the executable gets it."""
    from pairbench.cli import build_parser

    for command, args in (("sweep", ["--layer", "verbs", "--test", "x"]),
                          ("fabric", ["--hosts", "a,b"])):
        ns = build_parser(command).parse_args([command, *args])
        for o in EXE_OPTIONS:
            assert hasattr(ns, o.field), (command, o.field)
    for cls in (SweepOptions, SweepConfig, FabricConfig):
        fields = cls.__dataclass_fields__
        assert all(o.field in fields for o in EXE_OPTIONS), cls
    values = {o.field: (True if o.kind is bool else o.kind("1")) for o in EXE_OPTIONS}
    argv = exe_argv(SweepOptions(layer="verbs", tests=("x",), **values))
    assert [a for a in argv if a.startswith("--")] == [o.flag for o in EXE_OPTIONS]


def test_a_bad_value_names_the_option() -> None:
    from pairbench.errors import UsageError

    for field, value, needle in (("lat_samples", 0, "--lat-samples 0"),
                                 ("bw_seconds", 0.0, "--bw-seconds 0"),
                                 ("devices", "a,a", "--devices 'a,a'"),
                                 ("warmup", -1, "--warmup must be >= 0")):
        opts = SweepOptions(layer="verbs", tests=("write_bw",), **{field: value})
        with pytest.raises(UsageError, match=re.escape(needle)):
            config_from_options(opts, Path("/r/x"), Path("/r"))


# --- one launcher layer --------------------------------------------------------------------

def test_registry_is_the_launcher_files() -> None:
    files = {p.stem for p in (PKG / "runner" / "launchers").glob("*.py")} - {"__init__", "base"}
    reg = launchers.registry()
    assert {c.__module__.rsplit(".", 1)[1] for c in reg.values()} == files
    assert next(iter(reg)) == "local"
    from pairbench.cli import build_parser

    parser = build_parser("sweep")
    base = ["sweep", "--layer", "mpi", "--test", "x", "--launcher"]
    for name in reg:
        assert parser.parse_args([*base, name]).launcher == name
    with pytest.raises(SystemExit):
        parser.parse_args([*base, "pbs"])


def test_one_minimum_of_repetitions() -> None:
    """The runner's rounds start at the statistics' minimum (the runner cannot import the
    analysis, so the constant is stated twice and this holds them together)."""
    from pairbench.analysis.verdict import MIN_REPS
    from pairbench.runner import autoreps

    assert autoreps.MIN_REPS == MIN_REPS


def test_local_launcher_runs_a_point(tmp_path: Path) -> None:
    """The unit tests' launcher: a point planned through it runs the (fake) executable
    on this host, its CSV and env record where the plan says."""
    cfg = SweepConfig(layer="verbs", tests=("write_lat",), sizes=(8, 64), pairs=(2,),
                      binary=str(FAKE), run_dir=str(tmp_path), timeout_s=60.0, warmup=1)
    point = plan_sweep(cfg)[0]
    assert isinstance(launchers.get(cfg), launchers.registry()["local"])
    assert point.sides[0].argv[-1] == "--loopback"
    (tmp_path / "raw").mkdir()
    res = run_point(point, tmp_path)
    assert res.ok, (res, (tmp_path / point.sides[0].stderr).read_text())
    rows = (tmp_path / str(point.csv)).read_text().splitlines()
    assert len(rows) == 1 + 2 * (2 + 1)  # header; 2 sizes x (2 pairs + the aggregate)


def test_a_new_launcher_is_one_new_file(tmp_path: Path) -> None:
    """Drop one file into a copy of the package: `pairbench sweep --launcher NAME` accepts it
    and runs a sweep through it, with nothing else changed."""
    copy = tmp_path / "scripts"
    shutil.copytree(SCRIPTS / "pairbench", copy / "pairbench",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "pairbench" / "runner" / "launchers" / "envtag.py").write_text(
        '"""A test launcher: local, with PB_ENVTAG=1 in the environment."""\n'
        "from pairbench.runner.launchers.local import Local\n\n\n"
        "class EnvTag(Local):\n"
        '    name = "envtag"\n\n'
        "    def env(self):\n"
        '        return (("PB_ENVTAG", "1"),)\n\n\n'
        "LAUNCHER = EnvTag\n")
    env = {**os.environ, "PYTHONPATH": str(copy), "PAIRBENCH_ROOT": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "pairbench", "sweep", "--layer", "mpi",
                           "--test", "latency", "--sizes", "8", "--launcher", "envtag",
                           "--binary", str(FAKE), "--results-dir", str(tmp_path / "r"),
                           "--no-progress", "-n", "10"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    import json

    run = Path(proc.stdout.strip().splitlines()[-1])
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["config"]["launcher"] == "envtag"
    assert meta["points"][0]["env_added"] == {"PB_ENVTAG": "1"}
