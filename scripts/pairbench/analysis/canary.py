"""The host canary (issue 37): was the host itself slower during one run than the other?

Every executable measures a short probe of its host's speed that involves no adapter when
it writes its environment record (core/pb_canary.c): `cpu_loop_ns`, the time per iteration
of a fixed CPU-bound loop (median of 7 short timed runs: the CPU's speed while the process
runs), `cpu_share`, the fraction of a 30 ms spin's wall time the process ran (how much CPU
it got), and `max_gap_us`, the longest gap between consecutive clock reads in that spin. A
sweep keeps one per point and repetition (metadata.json "host_canary", and each point's
env_record). Two measures are judged alike: the loop time, and 1 / cpu_share (the wall
time per unit of CPU time); a host is slower by either.

The rule (docs/compare-and-accept.md "The host canary"), on log values:

- a repetition's canary c_r = the median of the measure over that repetition's points (all
  of them, or those the two runs share when comparing);
- the canary's own noise s = the median of |ln c_i − ln c_j| over every pair of
  repetitions of the same run, pooled over both runs, / 0.954 (a robust SD; runs of one
  repetition add nothing; with none, s is unknown and only the floor below applies);
- the host moved when the ratio of the runs' medians R = median(c_NEW) / median(c_BASE)
  is beyond its noise: |ln R| >= max(ln 1.25, 4 s). A repetition of a run is flagged slow
  when c_r >= the median of the run's other repetitions × max(1.25, e^(4 s')), s' from
  those others alone.

Pure functions of the metadata dicts.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

# The smallest change of host speed that counts, whatever the noise: 25 %.
MIN_FACTOR = 1.25
# How many of the canary's own robust standard deviations a change must exceed.
NOISE_SDS = 4.0
PAIR_TO_SD = 0.6745 * math.sqrt(2)

_REP = re.compile(r"^r(\d+)-")


@dataclass(frozen=True)
class Sample:
    point: str          # the point's name without its repetition prefix
    repetition: int
    cpu_loop_ns: float
    max_gap_us: float | None
    cpu_share: float | None = None


def samples(meta: dict) -> list[Sample]:
    """Every canary a run recorded: one per point that wrote an environment record with
    one (runs from before issue 37 have none: [])."""
    out = []
    for p in meta.get("points") or []:
        if not isinstance(p, dict):
            continue
        rec = p.get("env_record")
        hc = rec.get("host_canary") if isinstance(rec, dict) else None
        if not isinstance(hc, dict):
            continue
        loop, gap = hc.get("cpu_loop_ns"), hc.get("max_gap_us")
        if not isinstance(loop, (int, float)) or not math.isfinite(loop) or loop <= 0:
            continue
        name = str(p.get("name") or "")
        rep = p.get("repetition")
        if not isinstance(rep, int):
            m = _REP.match(name)
            rep = int(m.group(1)) if m else 1
        share = hc.get("cpu_share")
        share = float(share) if isinstance(share, (int, float)) and 0 < share <= 1 else None
        out.append(Sample(_REP.sub("", name), rep, float(loop),
                          float(gap) if isinstance(gap, (int, float)) else None, share))
    return out


@dataclass(frozen=True)
class RepCanary:
    repetition: int
    cpu_loop_ns: float          # median over the repetition's points
    max_gap_us: float | None    # the largest over them
    points: int
    cpu_share: float | None = None   # median over them; None when a point lacks it


def per_repetition(ss: list[Sample], points: set[str] | None = None) -> list[RepCanary]:
    """One canary per repetition: the median cpu_loop_ns and cpu_share of its points (those
    in points, if given) and their largest gap."""
    reps: dict[int, list[Sample]] = {}
    for s in ss:
        if points is None or s.point in points:
            reps.setdefault(s.repetition, []).append(s)
    out = []
    for r in sorted(reps):
        g = reps[r]
        gaps = [s.max_gap_us for s in g if s.max_gap_us is not None]
        shares = [s.cpu_share for s in g if s.cpu_share is not None]
        out.append(RepCanary(r, statistics.median(s.cpu_loop_ns for s in g),
                             max(gaps) if gaps else None, len(g),
                             statistics.median(shares) if len(shares) == len(g) else None))
    return out


@dataclass(frozen=True)
class Measure:
    name: str
    value: Callable[[RepCanary], float | None]   # higher = the host slower
    slower: str                                  # '3.0× slower', as words
    shown: Callable[[float], str]                # a median, as recorded


LOOP = Measure("cpu_loop", lambda r: r.cpu_loop_ns, "slower",
               lambda v: f"CPU loop {v:.3g}")
SHARE = Measure("cpu_share", lambda r: 1 / r.cpu_share if r.cpu_share else None,
                "less CPU for the benchmark", lambda v: f"CPU share {1 / v:.2f}")
MEASURES = (LOOP, SHARE)


def noise_sd(*runs: list[RepCanary], measure: Measure = LOOP) -> float | None:
    """s: the canary's own repetition-to-repetition spread, a robust SD of its log values:
    the median of |ln c_i - ln c_j| over all pairs of repetitions of the same run, pooled
    over the runs given, / 0.954 (= 0.6745 × √2, so that s estimates σ for normal noise).
    None when no run has two repetitions."""
    diffs: list[float] = []
    for reps in runs:
        logs = [math.log(measure.value(r)) for r in reps]  # type: ignore[arg-type]
        diffs += [abs(x - y) for i, x in enumerate(logs) for y in logs[i + 1:]]
    return statistics.median(diffs) / PAIR_TO_SD if diffs else None


def threshold(s: float | None) -> float:
    """The factor a host change must reach to be beyond the canary's noise."""
    return max(MIN_FACTOR, math.exp(NOISE_SDS * s)) if s is not None else MIN_FACTOR


@dataclass(frozen=True)
class SlowRep:
    side: str                   # BASE | NEW | '' (a run on its own)
    repetition: int
    factor: float               # c_r / reference
    measure: str = LOOP.name

    def line(self) -> str:
        who = f"{self.side} " if self.side else ""
        how = (f"was {self.factor:.1f}× slower" if self.measure == LOOP.name
               else f"gave it {self.factor:.1f}× less CPU")
        return f"{who}repetition {self.repetition} ran while the host {how} (host canary)"


def slow_repetitions(reps: list[RepCanary], side: str = "",
                     measure: Measure = LOOP) -> list[SlowRep]:
    """The repetitions of one run beyond the noise of its other repetitions: c_r >= the
    others' median × max(1.25, e^(4 s)), s from the others alone (leave one out, so that
    the slow repetition does not widen its own yardstick; with one other, the floor)."""
    out = []
    for i, r in enumerate(reps):
        others = reps[:i] + reps[i + 1:]
        v = measure.value(r)
        if not others or v is None:
            continue
        ref = statistics.median(measure.value(o) for o in others)  # type: ignore[misc]
        if v >= ref * threshold(noise_sd(others, measure=measure)):
            out.append(SlowRep(side, r.repetition, v / ref, measure.name))
    return out


@dataclass
class Judged:
    """One measure of two runs (or of one run: base empty)."""
    measure: Measure
    base_median: float = math.nan
    new_median: float = math.nan
    ratio: float = math.nan                      # median(NEW) / median(BASE)
    noise: float | None = None                   # s (log units)
    factor: float = MIN_FACTOR                   # the threshold in use
    moved: bool = False

    def line(self) -> str:
        """'the host was 3.0× slower during NEW (host canary: CPU loop 1.31 → 3.92 ns per
        iteration; beyond its noise from 1.25×, its repetitions spread 1 %)'."""
        noise = ("its own spread unknown: one repetition" if self.noise is None
                 else f"its repetitions spread {100 * (math.exp(self.noise) - 1):.0f} %")
        m = self.measure
        if m is LOOP:
            how = (f"was {self.ratio:.1f}× slower" if self.ratio >= 1
                   else f"was {1 / self.ratio:.1f}× faster")
            what = f"CPU loop {self.base_median:.3g} → {self.new_median:.3g} ns per iteration"
        else:
            how = (f"gave the benchmark {self.ratio:.1f}× less CPU" if self.ratio >= 1
                   else f"gave the benchmark {1 / self.ratio:.1f}× more CPU")
            what = (f"CPU share {1 / self.base_median:.2f} → {1 / self.new_median:.2f} of a "
                    "30 ms spin")
        return (f"the host {how} during NEW (host canary: {what}; beyond its noise from "
                f"{self.factor:.2f}×, {noise})")

    def to_json(self) -> dict:
        return {"ratio": None if not math.isfinite(self.ratio) else self.ratio,
                "noise_sd_log": self.noise, "threshold_factor": self.factor,
                "moved": self.moved, "line": self.line() if self.moved else None}


@dataclass
class HostCheck:
    """The canary of two runs compared (or of one run: base empty)."""
    recorded: tuple[bool, bool]                  # (BASE, NEW) has a canary
    base: list[RepCanary] = field(default_factory=list)
    new: list[RepCanary] = field(default_factory=list)
    judged: list[Judged] = field(default_factory=list)
    slow: list[SlowRep] = field(default_factory=list)

    def _loop(self) -> Judged:
        return next((j for j in self.judged if j.measure is LOOP), Judged(LOOP))

    @property
    def moved(self) -> bool:
        return any(j.moved for j in self.judged)

    @property
    def ratio(self) -> float:
        return self._loop().ratio

    @property
    def noise(self) -> float | None:
        return self._loop().noise

    @property
    def factor(self) -> float:
        return self._loop().factor

    def line(self) -> str:
        return "; ".join(j.line() for j in self.judged if j.moved)

    def to_json(self) -> dict:
        loop = self._loop().to_json()
        return {"recorded": {"base": self.recorded[0], "new": self.recorded[1]},
                "base": [r.__dict__ for r in self.base], "new": [r.__dict__ for r in self.new],
                **loop, "moved": self.moved, "line": self.line() if self.moved else None,
                "cpu_share": next((j.to_json() for j in self.judged if j.measure is SHARE),
                                  None),
                "slow_repetitions": [s.line() for s in self.slow]}


def _usable(m: Measure, *runs: list[RepCanary]) -> bool:
    return all(m.value(r) is not None for reps in runs for r in reps)


def compare(base_meta: dict, new_meta: dict) -> HostCheck:
    """BASE's and NEW's canaries; moved only when both recorded one (a run from before the
    canary: not recorded, never a difference). cpu_share is judged when every repetition
    of both runs has it."""
    sb, sn = samples(base_meta), samples(new_meta)
    out = HostCheck((bool(sb), bool(sn)))
    if not sb or not sn:
        return out
    common = {s.point for s in sb} & {s.point for s in sn}
    pts = common or None
    out.base, out.new = per_repetition(sb, pts), per_repetition(sn, pts)
    for m in MEASURES:
        if not _usable(m, out.base, out.new):
            continue
        j = Judged(m, statistics.median(m.value(r) for r in out.base),  # type: ignore[misc]
                   statistics.median(m.value(r) for r in out.new))  # type: ignore[misc]
        j.ratio = j.new_median / j.base_median
        j.noise = noise_sd(out.base, out.new, measure=m)
        j.factor = threshold(j.noise)
        j.moved = abs(math.log(j.ratio)) >= math.log(j.factor)
        out.judged.append(j)
        out.slow += (slow_repetitions(out.base, "BASE", m)
                     + slow_repetitions(out.new, "NEW", m))
    return out


def single(meta: dict) -> HostCheck:
    """One run's canary per repetition and its slow repetitions (against its own median)."""
    ss = samples(meta)
    out = HostCheck((False, bool(ss)))
    if not ss:
        return out
    out.new = per_repetition(ss)
    for m in MEASURES:
        if not _usable(m, out.new):
            continue
        j = Judged(m, new_median=statistics.median(m.value(r) for r in out.new))  # type: ignore[misc]
        j.noise = noise_sd(out.new, measure=m)
        j.factor = threshold(j.noise)
        out.judged.append(j)
        out.slow += slow_repetitions(out.new, "", m)
    return out
