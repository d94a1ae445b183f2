"""Findings, flags and number formatting without a browser: the rules the report and
`pairbench show` share."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO, cli, sweep
from pairbench.analysis.flags import infer_legacy, row_flags
from pairbench.analysis.load import load_run
from pairbench.contract import testtable
from pairbench.contract.schema import load_metadata
from pairbench.present import findings, fmt

VERBS_RUN = REPO / "results" / "20261123-090116-vm-d2f610"
MPI_RUN = REPO / "results" / "20261123-090256-vm-29e824"


@pytest.mark.parametrize("v", [10.0 ** e * m for e in range(-9, 13) for m in (1, 1.234, 9.999)])
def test_numbers_never_scientific(v: float) -> None:
    for text in (fmt.num(v), fmt.num(-v), fmt.us(v), fmt.rate(v), fmt.ratio(v), fmt.pct(v)):
        assert re.search(fmt.SCI_PATTERN, text) is None, (v, text)


@pytest.mark.parametrize("v,text", [(12034.4, "12,034"), (0.001242, "0.00124"), (20.31, "20.3"),
                                    (8.0, "8"), (0, "0"), (float("nan"), ""), (None, "")])
def test_significant_digits(v: object, text: str) -> None:
    assert fmt.num(v) == text


def test_units_that_read_best() -> None:
    assert fmt.us(8012.0) == "8.01 ms" and fmt.us(41.49) == "41.5 µs"
    assert fmt.rate(15170729) == "15.2 Mmsg/s" and fmt.ratio(780.4) == "780×"


def test_legacy_run_flags_inferred_from_metadata() -> None:
    """The 09:01 verbs run (schema 2, 2 vCPUs): 1 pair = 2 processes = not oversubscribed;
    2 and 4 pairs in loopback = 4 and 8 processes = oversubscribed; rxe0 = emulated."""
    meta = load_metadata(VERBS_RUN)
    df = infer_legacy(load_run(VERBS_RUN), meta)
    fl = row_flags(df)
    over = df[fl.map(lambda s: "oversubscribed" in s)]
    assert set(over["pairs"]) == {2, 4}
    assert fl.map(lambda s: {"emulated_device", "link_rate_nominal"} <= s).all()
    assert df["link_pct"].isna().all()


def test_findings_of_the_real_runs() -> None:
    meta = load_metadata(VERBS_RUN)
    df = infer_legacy(load_run(VERBS_RUN), meta)
    f = findings.compute(df, meta, testtable.tables_for_run(meta))
    kinds = [w.kind for w in f.warnings]
    assert kinds[:3] == ["oversubscribed", "emulated_device", "link_rate_nominal"]
    assert "figures above 1 pair measure the scheduler on this machine" in f.warnings[0].text
    wl = next(t for t in f.tests if t.title == "verbs RDMA write latency")
    facts = dict(wl.facts)
    assert facts["1-pair latency p50"].startswith("10.3 µs at 8 B")
    assert "→ 4 pairs 8.01 ms (780×)" in facts["latency scaling at 8 B"]
    bw = dict(next(t for t in f.tests if t.title == "verbs RDMA write bandwidth").facts)
    assert "nominal or unknown" in bw["peak aggregate bandwidth"]
    assert " % of the link" not in bw["peak aggregate bandwidth"]
    mpi_meta = load_metadata(MPI_RUN)
    m = findings.compute(load_run(MPI_RUN), mpi_meta, testtable.tables_for_run(mpi_meta))
    assert [w.kind for w in m.warnings] == []  # schema 2 rows: flags come from infer_legacy
    m = findings.compute(infer_legacy(load_run(MPI_RUN), mpi_meta), mpi_meta)
    assert [w.kind for w in m.warnings] == ["oversubscribed"]


def test_missing_points_and_error_rows_are_warned(base_run: Path) -> None:
    meta = load_metadata(base_run)
    df = load_run(base_run)
    assert findings.compute(df, meta).warnings == []
    cut = df[~((df["test"] == "write_bw") & (df["pairs"] == 2) & (df["repetition"] == 1))].copy()
    cut.loc[cut.index[0], ["status", "error"]] = ["error", "completion error on QP 7"]
    w = {x.kind: x.text for x in findings.compute(cut, meta).warnings}
    assert "write_bw × 2 pair(s) (repetition 1)" in w["missing_points"]
    assert "completion error on QP 7" in w["error_rows"]


def test_tail_advice_follows_how_the_point_was_timed(base_run: Path, tmp_path: Path) -> None:
    """issue 37: the verbs rig's default run (window mode, no -n) had write_bw points
    flagged tail_dominated, and the findings advised "run without -n". In a common window
    the advice is stop jitter / an oversubscribed machine; -n only for a count."""
    run = tmp_path / "win"
    shutil.copytree(base_run, run)
    df = pd.read_csv(run / "data.csv", dtype=str, keep_default_na=False)
    hit = (df["test"] == "write_bw") & (df["pair_id"] == "all") & (df["pairs"] == "2")
    assert hit.any() and set(df.loc[hit, "window_method"]) == {"window"}
    df.loc[hit, "flags"] = "tail_dominated"
    df.to_csv(run / "data.csv", index=False)
    w = [x.text for x in findings.compute(load_run(run), load_metadata(run)).warnings
         if x.kind == "tail_dominated"]
    assert len(w) == 1 and "stop jitter" in w[0] and "oversubscribed" in w[0], w
    assert "run without -n" not in w[0]


def test_accept_tail_advice_follows_how_the_point_was_timed(base_run: Path,
                                                            tmp_path: Path) -> None:
    """accept's detail of a check on such a point (issue 37: it said "rerun without -n")."""
    run = tmp_path / "win"
    shutil.copytree(base_run, run)
    df = pd.read_csv(run / "data.csv", dtype=str, keep_default_na=False)
    hit = (df["test"] == "write_bw") & (df["pair_id"] == "all") & (df["pairs"] == "2")
    df.loc[hit, "flags"] = "tail_dominated"
    df.to_csv(run / "data.csv", index=False)
    spec = tmp_path / "spec.toml"
    spec.write_text('[spec]\nname = "t"\nlayer = "verbs"\n[[min_fairness]]\n'
                    'test = "write_bw"\nmin_fairness = 0.01\n')
    acc = cli("accept", str(run), "--spec", str(spec))
    out = acc.stdout + acc.stderr
    assert "aggregate tail-dominated: one common window" in out, out
    assert "without -n" not in out.replace("(no -n)", "")


def test_a_tail_dominated_fixed_count_is_said_everywhere(base_run: Path,
                                                         tmp_path: Path) -> None:
    """-n with unequal pairs: the aggregate is flagged tail_dominated (docs/methodology.md,
    "Windows"); the findings, `show`, the report and `accept` say so and the report's table
    says how each point was timed. The default run (a time) says none of it."""
    proc, run = sweep(tmp_path / "n", "-n", "1000", env={"FAKE_PB_SLOW_PAIR": "1"},
                      tests="write_bw", sizes="8,4K", pairs="1,2", reps="1")
    assert proc.returncode == 0 and run is not None, proc.stderr
    w = {x.kind: x.text for x in findings.compute(load_run(run), load_metadata(run)).warnings}
    assert "aggregate of 2 point(s) is tail-dominated" in w["tail_dominated"]
    assert "write_bw 8 B x 2 pairs" in w["tail_dominated"]
    show = cli("show", str(run), "--width", "200")
    assert show.returncode == 0 and "tail-dominated" in show.stdout, show.stdout
    rep = cli("report", str(run), "--out", str(tmp_path / "r.html"))
    assert rep.returncode == 0, rep.stderr
    html = (tmp_path / "r.html").read_text()
    assert "timed by" in html and "tail-dominated" in html
    assert ">count<" in html and "window 0.2 s" not in html
    spec = tmp_path / "spec.toml"
    spec.write_text('[spec]\nname = "t"\nlayer = "verbs"\n[[min_fairness]]\n'
                    'test = "write_bw"\nmin_fairness = 0.01\n')
    acc = cli("accept", str(run), "--spec", str(spec))
    assert "aggregate tail-dominated" in acc.stdout + acc.stderr, acc.stdout
    assert "run without -n" in acc.stdout + acc.stderr  # a count: -n is the cause
    assert "run without -n" in w["tail_dominated"]
    base = findings.compute(load_run(base_run), load_metadata(base_run)).warnings
    assert "tail_dominated" not in {x.kind for x in base}
    rep = cli("report", str(base_run), "--out", str(tmp_path / "b.html"))
    assert rep.returncode == 0 and "window 0.2 s" in (tmp_path / "b.html").read_text()
