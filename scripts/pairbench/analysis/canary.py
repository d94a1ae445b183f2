"""The host canary (issue 37): was the host itself slower during one run than the other?

Every executable measures a short probe of its host's speed that involves no adapter when
it writes its environment record (core/pb_canary.c): `cpu_loop_ns`, the time per iteration
of a fixed CPU-bound loop (median of 7 timed runs), and `max_gap_us`, the longest gap
between consecutive clock reads in a 10 ms spin. A sweep keeps one per point and
repetition (metadata.json "host_canary", and each point's env_record).

The rule (docs/compare-and-accept.md "The host canary"), on log values:

- a repetition's canary c_r = the median of cpu_loop_ns over that repetition's points (all
  of them, or those the two runs share when comparing);
- the canary's own noise s = 1.4826 × the median absolute deviation of ln c_r from its
  run's median, pooled over the repetitions of both runs (runs of one repetition add
  nothing; with none, s is unknown and only the floor below applies);
- the host moved when the ratio of the runs' medians R = median(c_NEW) / median(c_BASE)
  is beyond its noise: |ln R| >= max(ln 1.25, 4 s). A repetition of a run is flagged slow
  when c_r >= the reference × max(1.25, e^(4 s)) (the reference: BASE's median in a
  comparison, the run's own median alone).

Pure functions of the metadata dicts.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field

# The smallest change of host speed that counts, whatever the noise: 25 %.
MIN_FACTOR = 1.25
# How many of the canary's own robust standard deviations a change must exceed.
NOISE_SDS = 4.0
MAD_TO_SD = 1.4826

_REP = re.compile(r"^r(\d+)-")


@dataclass(frozen=True)
class Sample:
    point: str          # the point's name without its repetition prefix
    repetition: int
    cpu_loop_ns: float
    max_gap_us: float | None


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
        out.append(Sample(_REP.sub("", name), rep, float(loop),
                          float(gap) if isinstance(gap, (int, float)) else None))
    return out


@dataclass(frozen=True)
class RepCanary:
    repetition: int
    cpu_loop_ns: float          # median over the repetition's points
    max_gap_us: float | None    # the largest over them
    points: int


def per_repetition(ss: list[Sample], points: set[str] | None = None) -> list[RepCanary]:
    """One canary per repetition: the median cpu_loop_ns of its points (those in points,
    if given) and their largest gap."""
    reps: dict[int, list[Sample]] = {}
    for s in ss:
        if points is None or s.point in points:
            reps.setdefault(s.repetition, []).append(s)
    out = []
    for r in sorted(reps):
        g = reps[r]
        gaps = [s.max_gap_us for s in g if s.max_gap_us is not None]
        out.append(RepCanary(r, statistics.median(s.cpu_loop_ns for s in g),
                             max(gaps) if gaps else None, len(g)))
    return out


def noise_sd(*runs: list[RepCanary]) -> float | None:
    """s: the robust SD of ln c_r around its own run's median, pooled over the runs given;
    None when no run has two repetitions."""
    devs: list[float] = []
    for reps in runs:
        if len(reps) < 2:
            continue
        logs = [math.log(r.cpu_loop_ns) for r in reps]
        med = statistics.median(logs)
        devs += [abs(x - med) for x in logs]
    return MAD_TO_SD * statistics.median(devs) if devs else None


def threshold(s: float | None) -> float:
    """The factor a host change must reach to be beyond the canary's noise."""
    return max(MIN_FACTOR, math.exp(NOISE_SDS * s)) if s is not None else MIN_FACTOR


@dataclass(frozen=True)
class SlowRep:
    side: str                   # BASE | NEW | '' (a run on its own)
    repetition: int
    factor: float               # c_r / reference

    def line(self) -> str:
        who = f"{self.side} " if self.side else ""
        return (f"{who}repetition {self.repetition} ran while the host was "
                f"{self.factor:.1f}× slower (host canary)")


def slow_repetitions(reps: list[RepCanary], reference: float, factor: float,
                     side: str = "") -> list[SlowRep]:
    return [SlowRep(side, r.repetition, r.cpu_loop_ns / reference) for r in reps
            if r.cpu_loop_ns >= reference * factor]


@dataclass
class HostCheck:
    """The canary of two runs compared (or of one run: base_* empty)."""
    recorded: tuple[bool, bool]                  # (BASE, NEW) has a canary
    base: list[RepCanary] = field(default_factory=list)
    new: list[RepCanary] = field(default_factory=list)
    ratio: float = math.nan                      # median(NEW) / median(BASE)
    noise: float | None = None                   # s (log units)
    factor: float = MIN_FACTOR                   # the threshold in use
    moved: bool = False
    slow: list[SlowRep] = field(default_factory=list)

    def line(self) -> str:
        """'the host was 3.1× slower during NEW (host canary: CPU loop 1.35 → 4.19 ns per
        iteration, beyond its noise: 1.25×)'."""
        b = statistics.median(r.cpu_loop_ns for r in self.base)
        n = statistics.median(r.cpu_loop_ns for r in self.new)
        how = (f"{self.ratio:.1f}× slower" if self.ratio >= 1
               else f"{1 / self.ratio:.1f}× faster")
        noise = ("its own spread unknown: one repetition" if self.noise is None
                 else f"its repetitions spread {100 * (math.exp(self.noise) - 1):.0f} %")
        return (f"the host was {how} during NEW (host canary: CPU loop {b:.3g} → {n:.3g} ns "
                f"per iteration; beyond its noise from {self.factor:.2f}×, {noise})")

    def to_json(self) -> dict:
        return {"recorded": {"base": self.recorded[0], "new": self.recorded[1]},
                "base": [r.__dict__ for r in self.base], "new": [r.__dict__ for r in self.new],
                "ratio": None if not math.isfinite(self.ratio) else self.ratio,
                "noise_sd_log": self.noise, "threshold_factor": self.factor,
                "moved": self.moved, "line": self.line() if self.moved else None,
                "slow_repetitions": [s.line() for s in self.slow]}


def compare(base_meta: dict, new_meta: dict) -> HostCheck:
    """BASE's and NEW's canaries; moved only when both recorded one (a run from before the
    canary: not recorded, never a difference)."""
    sb, sn = samples(base_meta), samples(new_meta)
    out = HostCheck((bool(sb), bool(sn)))
    if not sb or not sn:
        return out
    common = {s.point for s in sb} & {s.point for s in sn}
    pts = common or None
    out.base, out.new = per_repetition(sb, pts), per_repetition(sn, pts)
    mb = statistics.median(r.cpu_loop_ns for r in out.base)
    mn = statistics.median(r.cpu_loop_ns for r in out.new)
    out.ratio = mn / mb
    out.noise = noise_sd(out.base, out.new)
    out.factor = threshold(out.noise)
    out.moved = abs(math.log(out.ratio)) >= math.log(out.factor)
    out.slow = (slow_repetitions(out.base, mb, out.factor, "BASE")
                + slow_repetitions(out.new, mb, out.factor, "NEW"))
    return out


def single(meta: dict) -> HostCheck:
    """One run's canary per repetition and its slow repetitions (against its own median)."""
    ss = samples(meta)
    out = HostCheck((False, bool(ss)))
    if not ss:
        return out
    out.new = per_repetition(ss)
    out.noise = noise_sd(out.new)
    out.factor = threshold(out.noise)
    med = statistics.median(r.cpu_loop_ns for r in out.new)
    out.slow = slow_repetitions(out.new, med, out.factor)
    return out
