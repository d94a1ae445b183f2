"""accept's spec and compare's thresholds: one declarative schema (pairbench.tomlschema);
every bad key is one line, exit 2, naming the key; accept's table through rich; the
spec's tests checked against the test table."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO, assert_clean_error, cli
from pairbench.analysis.accept import AcceptSpec, load_spec
from pairbench.analysis.compare import Thresholds, ThresholdsFile, load_thresholds
from pairbench.errors import UsageError
from pairbench.io.tomlschema import load
from pairbench.present.accept import render_text

EXAMPLES = REPO / "examples"


def test_examples_parse_into_the_schemas() -> None:
    spec = load(AcceptSpec, EXAMPLES / "accept-spec.toml")
    assert spec.spec.layer == "verbs" and spec.sanity.max_link_pct == 100.0
    assert spec.min_link_pct[0].min_size_bytes == 65536
    th = load(ThresholdsFile, EXAMPLES / "compare-thresholds.toml")
    assert th.default.confidence == 0.95 and th.metric["lat_us_p99"].relative == 0.15


@pytest.mark.parametrize("text,needle", [
    # unknown keys, at every level
    ("color = 1\n", "th.toml: unknown key 'color'"),
    ("[default]\nconf = 0.9\n", "th.toml: unknown key default.conf"),
    ("[metric.bw_gbit_s]\nabsolute = 1\nmin = 2\n", "unknown key metric.bw_gbit_s.min"),
    # wrong types
    ("metrics = 'lat_us_p50'\n", "th.toml: metrics: expected a list"),
    ("metrics = ['lat_us_p50', 3]\n", "th.toml: metrics: expected a string, got 3"),
    ("[default]\nconfidence = 1.5\n", "th.toml: default.confidence: must be in (0, 1)"),
    ("[metric.bw_gbit_s]\nabsolute = -1\n", "metric.bw_gbit_s.absolute: expected a finite"),
    ("default = 3\n", "th.toml: [default] must be a table"),
    ("metrics = ['speed']\n", "unknown metric 'speed'"),
])
def test_bad_thresholds_name_the_key(text: str, needle: str, tmp_path: Path) -> None:
    p = tmp_path / "th.toml"
    p.write_text(text)
    with pytest.raises(UsageError, match=needle.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[")):
        load_thresholds(p, Thresholds())


@pytest.mark.parametrize("text,needle", [
    ("[spec]\nname='x'\nowner='me'\n", "unknown key spec.owner"),
    ("[spec]\nlayer='tcp'\n", "spec.toml: spec.layer: expected one of verbs, mpi"),
    ("[[max_latency]]\ntest='write_lat'\nmax_us=1\n", "max_latency[0]: missing key 'size_bytes'"),
    ("[[max_latency]]\ntest='write_lat'\nsize_bytes='lots'\nmax_us=1\n",
     "max_latency[0].size_bytes: bad message size 'lots'"),
    ("[[min_fairness]]\ntest='write_bw'\nmin_fairness=0.9\npairs=[0]\n",
     "min_fairness[0].pairs: expected positive integers"),
    ("max_latency = 3\n", "max_latency must be an array of tables"),
    ("[[max_worst_pair]]\ntest='write_lat'\nmax_ratio=2\n[[max_worst_pair]]\nmax_ratio=2\n",
     "max_worst_pair[1]: missing key 'test'"),
])
def test_bad_spec_names_the_key(text: str, needle: str, tmp_path: Path) -> None:
    p = tmp_path / "spec.toml"
    p.write_text(text)
    with pytest.raises(UsageError, match=needle.replace("[", r"\[").replace("(", r"\(")):
        load_spec(p)


@pytest.mark.parametrize("text,needle", [
    ("[[max_latency]]\ntest='write_latency'\nsize_bytes=8\nmax_us=1\n",
     "max_latency[0].test: unknown test 'write_latency'"),
    ("[spec]\nlayer='mpi'\n[[max_latency]]\ntest='write_lat'\nsize_bytes=8\nmax_us=1\n",
     "unknown test 'write_lat' (tests of mpi:"),
    ("[[max_latency]]\ntest='write_bw'\nsize_bytes=8\nmax_us=1\n",
     "max_latency[0].test: max_latency judges a latency, write_bw measures none"),
    ("[[min_link_pct]]\ntest='write_lat'\nmin_pct=9\n",
     "min_link_pct[0].test: min_link_pct judges bandwidth"),
    ("[[max_latency]]\ntest='atomic_lat'\nsize_bytes=8\nmax_us=1\nvariant='swap'\n",
     "max_latency[0].variant: atomic_lat has no variant 'swap' (variants: cswap, fadd)"),
])
def test_spec_tests_are_checked_against_the_table(text: str, needle: str, base_run: Path,
                                                  tmp_path: Path) -> None:
    p = tmp_path / "spec.toml"
    p.write_text(text)
    assert_clean_error(cli("accept", str(base_run), "--spec", str(p)), needle)


def test_accept_table_is_drawn_by_rich() -> None:
    rows = [{"criterion": "max_latency lat_us_p50", "test": "t", "size": "8 B", "pairs": 2,
             "value": 1.5, "limit": 2.0, "verdict": "pass", "detail": "lat_us_p50 <= 2"},
            {"criterion": "min_fairness", "test": "t", "size": "", "pairs": "",
             "value": None, "limit": 0.9, "verdict": "fail", "detail": "no data"}]
    text = render_text({"name": "demo"}, rows)
    lines = text.splitlines()
    assert lines[0] == "acceptance spec: demo"
    assert lines[1].split() == ["criterion", "test", "size", "pairs", "value", "limit",
                                "verdict", "detail"]
    # columns aligned: every cell of "verdict" starts at the same offset
    col = lines[1].index("verdict")
    assert lines[2][col:].startswith("PASS") and lines[3][col:].startswith("FAIL")
    assert lines[-1] == "verdict: FAIL (1 passed, 1 failed)"
    assert "\x1b[" not in text  # no colour unless on a terminal
    assert "\x1b[" in render_text({"name": "demo"}, rows, color=True)
