"""Issue 35 item 7: an incast sweep's accept criteria ([[min_incast_share]],
[[max_probe_inflation]], [[min_fairness]] on the target's rows) and its figure (hub aggregate,
victim inflation, per-flow share vs senders), on one sweep of the fake executable through a
fake mpirun (every rank's rows merged, the probe's row from node 1)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_pattern_sweep import incast_sweep

VERDICT = re.compile(r"KiB\s+(\d+)\s+\S+\s+\S+\s+(PASS|FAIL)")


@pytest.fixture(scope="module")
def incast_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return incast_sweep(tmp_path_factory.mktemp("incast"), "1,2,3", "4096", "t0,s1,s2,s3",
                        "--probe", "write_lat")


def _accept(run: Path, tmp: Path, body: str) -> tuple[int, str]:
    """accept's evaluation in this process (the command is tested elsewhere): (1 when a check
    failed else 0, one line per check as 'criterion ... KiB PAIRS value limit VERDICT')."""
    from pairbench.analysis.accept import evaluate, load_spec
    from pairbench.analysis.load import load_run

    spec = tmp / "spec.toml"
    spec.write_text('[spec]\nname = "incast"\nlayer = "verbs"\n' + body)
    rows = evaluate(load_run(run), load_spec(spec), {}, run)
    text = "\n".join(f"{r['criterion']} {r['test']} {r['size']} {r['pairs']} {r['value']} "
                     f"{r['limit']} {r['verdict'].upper()} {r['detail']}" for r in rows)
    return int(any(r["verdict"] == "fail" for r in rows)), text


def test_incast_share_of_a_known_limit(incast_run: Path, tmp_path: Path) -> None:
    """The fake's target aggregate at 4 KiB is 9.27 / 17.5 / 25.2 Gbit/s for 1 / 2 / 3
    senders: of a 15 Gbit/s limit the 1-sender point is below 0.9, the others above."""
    rc, out = _accept(incast_run, tmp_path, '[[min_incast_share]]\ntest = "write_bw"\n'
                      'min_share = 0.9\nlink_gbit_s = 15\n')
    verdicts = dict(VERDICT.findall("\n".join(ln for ln in out.splitlines()
                                              if ln.startswith("min_incast_share"))))
    assert verdicts == {"1": "FAIL", "2": "PASS", "3": "PASS"}, out
    assert rc == 1


def test_probe_inflation_judged_on_the_probe_rows(incast_run: Path, tmp_path: Path) -> None:
    """The fake's probe rows say p99 inflation 3 (loaded 9 / idle 3): a limit of 3.5 passes
    at every sender count, 2.8 fails at every one; a metric the rows leave empty fails as
    not measured (no evidence), never passes."""
    rc, out = _accept(incast_run, tmp_path, '[[max_probe_inflation]]\ntest = "write_bw"\n'
                      'max_ratio = 3.5\n')
    assert rc == 0, out
    assert out.count("max_probe_inflation lat_inflation_p99") == 3
    rc, out = _accept(incast_run, tmp_path, '[[max_probe_inflation]]\ntest = "write_bw"\n'
                      'max_ratio = 2.8\n')
    assert rc == 1 and [v for _p, v in VERDICT.findall(out)] == ["FAIL"] * 3, out
    rc, out = _accept(incast_run, tmp_path, '[[max_probe_inflation]]\ntest = "write_bw"\n'
                      'max_ratio = 100\nmetric = "lat_inflation_p999"\n')
    assert rc == 1 and "lat_inflation_p999 not measured" in out, out


def test_the_pattern_figure_is_drawn(incast_run: Path, tmp_path: Path) -> None:
    """The figure of the point size, and nothing for a run without pattern points."""
    from pairbench.present.patternplot import plot_patterns
    from pairbench.present.plot import _pyplot, _save, load_runs

    written: list[Path] = []
    runs = load_runs([str(incast_run)], [])
    plot_patterns(runs, tmp_path, written, lambda f, o, s, w: _save(f, o, s, w, ("png",)),
                  _pyplot)
    assert written == [tmp_path / "verbs-write_bw-incast-4096-pattern.png"]
    assert written[0].stat().st_size > 0
    label, df, meta = runs[0]
    plot_patterns([(label, df.assign(pattern=""), meta)], tmp_path, written, _save, _pyplot)
    assert len(written) == 1
