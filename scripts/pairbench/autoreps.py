"""`pairbench sweep --repetitions auto[:MAX]`: repetitions until decided (issue 22).

The sweep runs every point MIN_REPS times (nothing can be proven with fewer), then, round
after round, one more repetition of each point that is still undecided, in the plan's order
(so the extra repetitions of different points interleave in time, as a fixed count's do),
until every point is decided or it has MAX repetitions:

- with `--baseline RUN`: decided = every comparison of the point against RUN has a gate
  answer, regression or no regression (pairbench compare: the same method and thresholds as
  a later `pairbench compare RUN NEW [--thresholds FILE]`, given the same `--thresholds
  FILE`), at the stricter level alpha / looks of each look (look_alpha);
- without: decided = the run's noise at the point would let compare catch a change of
  `--detect` (default: twice each metric's threshold, as `pairbench noise`) with 80 % power,
  i.e. it has at least the repetitions `pairbench noise --detect` recommends.

A point is one launch of the executable (test, pairs, qps: every size at once), so all its
sizes get the extra repetition.  The decision is pure (`undecided`); the loop that runs the
rounds is `run_rounds`, given the sweep's own point runner.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from pairbench.errors import UsageError
from pairbench.verdict import GATE_INCONCLUSIVE, MIN_REPS

if TYPE_CHECKING:
    from pairbench.compare import Thresholds

DEFAULT_MAX = 10
CAP = 100


@dataclass(frozen=True)
class AutoReps:
    """What `--repetitions auto[:MAX]` asks for."""

    max_reps: int = DEFAULT_MAX
    baseline: str | None = None      # run directory or CSV: decide against it
    detect: float | None = None      # else: the change to be detectable (fraction)
    thresholds: str | None = None    # compare's thresholds file (metrics, thresholds, level)

    def compare_thresholds(self) -> Thresholds:
        """The thresholds the decision uses: compare's defaults or the file's."""
        from pairbench.compare import Thresholds, load_thresholds

        th = Thresholds()
        if self.thresholds:
            load_thresholds(Path(self.thresholds), th)
        return th


def parse_repetitions(text: str) -> tuple[int, AutoReps | None]:
    """'N' -> (N, None); 'auto' / 'auto:MAX' -> (MIN_REPS, AutoReps(MAX))."""
    t = str(text).strip()
    if t == "auto" or t.startswith("auto:"):
        raw = t.partition(":")[2] or str(DEFAULT_MAX)
        try:
            top = int(raw)
        except ValueError:
            raise UsageError(f"--repetitions {text!r}: expected auto:MAX with an integer MAX"
                             ) from None
        if not MIN_REPS <= top <= CAP:
            raise UsageError(f"--repetitions {text!r}: MAX must be {MIN_REPS}..{CAP} (nothing "
                             f"is proven with fewer than {MIN_REPS} repetitions)")
        return MIN_REPS, AutoReps(max_reps=top)
    try:
        return int(t), None
    except ValueError:
        raise UsageError(f"--repetitions {text!r}: expected a count or auto[:MAX]") from None


def look_alpha(alpha: float, max_reps: int) -> float:
    """The level of each look against a baseline: alpha split over the looks (after
    repetition MIN_REPS, ..., max_reps; Bonferroni).  Stopping a point when it looks decided
    is sequential testing: at alpha per look, chance crossings pile up (simulated A/A at 20 %
    CV and 20 looks: 7.5 % of whole comparisons with a claim instead of 2.5 %).  With alpha /
    looks, a point stops on a claim that chance makes at most alpha of the time over all
    looks; the final compare at alpha is one more look (results/compare-calibration)."""
    return alpha / max(max_reps - MIN_REPS + 1, 1)


def launch_key(test: str, pairs: object, qps: object) -> tuple[str, int, str]:
    """A point's identity as the planner and the rows both have it."""
    q = "" if qps is None or (isinstance(qps, float) and math.isnan(qps)) or qps == "" \
        else str(int(float(qps)))
    return str(test), int(float(pairs)), q


def undecided(current: pd.DataFrame, auto: AutoReps,
              baseline: pd.DataFrame | None = None) -> dict[tuple, str]:
    """Launch key -> why it is undecided (one example), for the run's rows so far."""
    from pairbench.compare import compare_frames
    from pairbench.noise import noise_frame

    th = auto.compare_thresholds()
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


@dataclass
class Round:
    repetition: int
    ran: int
    undecided: dict[tuple, str]


def run_rounds(auto: AutoReps, plan: Callable[[int], list], execute: Callable,
               load: Callable[[], pd.DataFrame], stopped: Callable[[], bool],
               baseline: pd.DataFrame | None = None, say: Callable[[str], None] | None = None
               ) -> tuple[list, list[Round]]:
    """Run repetitions 1..MIN_REPS of every point, then one more of each undecided point
    per round until none is left or MAX.  plan(r) gives the points of a fixed-count sweep of
    r repetitions; execute(points, carry) runs them after the rows in carry and returns all
    rows; load() reads the run's rows so far; stopped() says a stop signal came."""
    say = say or (lambda s: print(s, file=sys.stderr))
    first = plan(MIN_REPS)
    data = execute(first, [])
    rounds: list[Round] = []
    rep, more = MIN_REPS, first
    while not stopped():
        todo = undecided(load(), auto, baseline)
        rounds.append(Round(rep, len(more), todo))
        if not todo:
            say(f"sweep: repetitions auto: every point decided after {rep} repetitions")
            break
        if rep >= auto.max_reps:
            say(f"sweep: repetitions auto: {len(todo)} point(s) still undecided at the maximum "
                f"of {auto.max_reps} repetitions: " + "; ".join(
                    f"{t} pairs={p}{' qps=' + q if q else ''} ({why})"
                    for (t, p, q), why in sorted(todo.items())))
            break
        rep += 1
        more = [p for p in plan(rep) if p.repetition == rep
                and launch_key(p.test, p.pairs, p.qps_cell) in todo]
        say(f"sweep: repetitions auto: repetition {rep} of {len(more)} undecided point(s), "
            f"e.g. {next(iter(todo.values()))}")
        data = execute(more, data)
    return data, rounds


def record(auto: AutoReps, rounds: list[Round]) -> dict:
    """metadata.json's "repetitions_auto": what was asked and what each round left."""
    return {"max": auto.max_reps, "baseline": auto.baseline, "detect": auto.detect,
            "thresholds": auto.thresholds,
            "rounds": [{"after_repetition": r.repetition, "points_run": r.ran,
                        "undecided": [{"test": t, "pairs": p, "qps": q, "why": why}
                                      for (t, p, q), why in sorted(r.undecided.items())]}
                       for r in rounds],
            "decided": bool(rounds) and not rounds[-1].undecided}


def with_repetitions(cfg: object, r: int) -> object:
    """The sweep config planned for r repetitions (dataclasses.replace)."""
    return replace(cfg, repetitions=r)
