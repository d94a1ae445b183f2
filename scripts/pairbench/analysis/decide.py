"""The decision of `pairbench sweep --repetitions auto[:MAX]` (the rounds themselves:
pairbench.runner.autoreps): which points are still undecided, from the run's rows so far.
A Decider is built before the sweep starts (so that a bad baseline or thresholds file is an
error before anything runs) and handed to the runner, which calls it after every round."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from pairbench.analysis.compare import Thresholds, compare_frames, load_thresholds
from pairbench.analysis.frames import aggregate_rows
from pairbench.analysis.load import load_run
from pairbench.analysis.noise import noise_frame
from pairbench.analysis.verdict import GATE_INCONCLUSIVE, MIN_REPS
from pairbench.errors import UsageError
from pairbench.runner.autoreps import CAP, AutoReps, launch_key
from pairbench.runner.plan import SweepConfig


def compare_thresholds(auto: AutoReps) -> Thresholds:
    """The thresholds the decision uses: compare's defaults or the file's."""
    th = Thresholds()
    if auto.thresholds:
        load_thresholds(Path(auto.thresholds), th)
    return th


def look_alpha(alpha: float, max_reps: int) -> float:
    """The level of each look against a baseline: alpha split over the looks (after
    repetition MIN_REPS, ..., max_reps; Bonferroni).  Stopping a point when it looks decided
    is sequential testing: at alpha per look, chance crossings pile up (simulated A/A at 20 %
    CV and 20 looks: 7.5 % of whole comparisons with a claim instead of 2.5 %).  With alpha /
    looks, a point stops on a claim that chance makes at most alpha of the time over all
    looks; the final compare at alpha is one more look (results/compare-calibration)."""
    return alpha / max(max_reps - MIN_REPS + 1, 1)


def undecided(current: pd.DataFrame, auto: AutoReps,
              baseline: pd.DataFrame | None = None) -> dict[tuple, str]:
    """Launch key -> why it is undecided (one example), for the run's rows so far."""

    th = compare_thresholds(auto)
    out: dict[tuple, str] = {}
    if baseline is not None:
        th.confidence = 1.0 - look_alpha(1.0 - th.confidence, auto.max_reps)
        res = compare_frames(baseline, current, th)
        for _, r in res[res["gate"] == GATE_INCONCLUSIVE].iterrows():
            key = launch_key(r["test"], r["pairs"], r.get("qps"))
            out.setdefault(key, f"{r['metric']} at {int(r['msg_size_bytes'])} B: "
                                f"{r['change_pct']:+.1f} % vs the baseline, {r['verdict']}")
        return out
    nf = noise_frame(current, th, detect=auto.detect)
    for _, r in nf.iterrows():
        need = r["reps_recommended"]
        known = math.isfinite(r["post_var"]) and r["post_var"] > 0
        if known and need is not None and not (isinstance(need, float) and math.isnan(need)) \
                and r["n"] >= need:
            continue
        if known and r["detect"] <= r["threshold"]:
            continue   # never decidable: --detect is within the threshold (checked earlier)
        key = launch_key(r["test"], r["pairs"], r.get("qps"))
        why = (f"needs more than {CAP}" if known and (need is None or isinstance(need, float))
               else f"needs {int(need)}" if known else "noise unknown")
        out.setdefault(key, f"{r['metric']} at {int(r['msg_size_bytes'])} B: {why} "
                            f"repetitions to catch {r['detect']:.0%}")
    return out




class Decider:
    """undecided() of a run directory's rows so far, for a sweep's AutoReps: the baseline
    and thresholds are read (and checked) once, when it is built."""

    def __init__(self, auto: AutoReps) -> None:
        self.auto = auto
        compare_thresholds(auto)  # a bad file: exit 2 before anything runs
        self.baseline = load_run(auto.baseline) if auto.baseline else None

    def check_plan(self, cfg: SweepConfig) -> None:
        """Before anything is measured: against a baseline, the sweep must share a point
        (layer, test, size, pairs) with the baseline's ok aggregate rows, else every
        comparison after the first round would fail ("no common points") with the
        repetitions spent. UsageError naming the baseline and what it holds."""
        if self.baseline is None:
            return
        agg = aggregate_rows(self.baseline)
        have = {(str(la), str(t), int(s), int(p)) for la, t, s, p in agg[
            ["layer", "test", "msg_size_bytes", "pairs"]].itertuples(index=False)}
        want = {(cfg.layer, t, s, p) for t in cfg.tests for s in cfg.sizes for p in cfg.pairs}
        if have & want:
            return
        tests = sorted({t for la, t, _, _ in have if la == cfg.layer})
        held = (f"its {cfg.layer} tests: {', '.join(tests)}" if tests else
                f"no {cfg.layer} point with status ok")
        raise UsageError(f"--baseline {self.auto.baseline}: shares no point (layer, test, "
                         f"size, pairs) with this sweep ({held}); nothing was run")

    def __call__(self, run_dir: Path) -> dict[tuple, str]:
        return undecided(load_run(run_dir), self.auto, self.baseline)
