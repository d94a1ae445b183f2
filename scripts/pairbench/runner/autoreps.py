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
sizes get the extra repetition.  The loop that runs the rounds is here (`run_rounds`, given
the sweep's own point runner); the decision is pure and judges rows, so it lives with the
analysis (pairbench.analysis.decide) and is handed in: the runner never imports pandas.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pairbench.errors import UsageError

if TYPE_CHECKING:
    pass

MIN_REPS = 3  # pairbench.analysis.verdict.MIN_REPS (a test checks they agree)
DEFAULT_MAX = 10
CAP = 100


@dataclass(frozen=True)
class AutoReps:
    """What `--repetitions auto[:MAX]` asks for."""

    max_reps: int = DEFAULT_MAX
    baseline: str | None = None      # run directory or CSV: decide against it
    detect: float | None = None      # else: the change to be detectable (fraction)
    thresholds: str | None = None    # compare's thresholds file (metrics, thresholds, level)



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


def launch_key(test: str, pairs: object, qps: object) -> tuple[str, int, str]:
    """A point's identity as the planner and the rows both have it."""
    q = "" if qps is None or (isinstance(qps, float) and math.isnan(qps)) or qps == "" \
        else str(int(float(qps)))
    return str(test), int(float(pairs)), q


@dataclass
class Round:
    repetition: int
    ran: int
    undecided: dict[tuple, str]


def run_rounds(auto: AutoReps, plan: Callable[[int], list], execute: Callable,
               undecided: Callable[[], dict[tuple, str]], stopped: Callable[[], bool],
               say: Callable[[str], None] | None = None) -> tuple[list, list[Round]]:
    """Run repetitions 1..MIN_REPS of every point, then one more of each undecided point
    per round until none is left or MAX.  plan(r) gives the points of a fixed-count sweep of
    r repetitions; execute(points, carry) runs them after the rows in carry and returns all
    rows; undecided() judges the run's rows so far (launch key -> why it is undecided:
    pairbench.analysis.decide); stopped() says a stop signal came."""
    say = say or (lambda s: print(s, file=sys.stderr))
    first = plan(MIN_REPS)
    data = execute(first, [])
    rounds: list[Round] = []
    rep, more = MIN_REPS, first
    while not stopped():
        todo = undecided()
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
