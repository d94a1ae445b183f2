"""Table of loop.sh / rt-bench.sh / burst.sh: message rate of each pairbench-mpi version (old, new,
a, b; new5ms = a 5 ms window) and of osu_mbw_mr (osu; osuL = -i 3000) per (pairs, size): median over repetitions, CV across
repetitions (stdev/mean, ddof=1), ratio of medians to osu, and the paired ratio (each
repetition's rate / osu's in the same repetition: both ran back to back) as a median with a 95 %
bootstrap interval (scipy.stats.bootstrap, percentile method, 9,999 resamples, seed 1).
Usage: python summarize.py DIR > table.txt   (DIR holds {old,a,b}-pP-rR.csv and osu*-pP-rR.txt)"""

import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

SIZES = (8, 1024, 4096, 65536, 1048576)


def load(d: Path) -> pd.DataFrame:
    recs = []
    for f in sorted(d.glob("*-p*-r*.csv")):
        m = re.fullmatch(r"(\w+)-p(\d+)-r(\d+)\.csv", f.name)
        df = pd.read_csv(f, dtype=str, keep_default_na=False)
        for _, r in df[(df.pair_id == "all") & (df.status == "ok")].iterrows():
            recs.append(dict(tool=m[1], pairs=int(m[2]), rep=int(m[3]),
                             size=int(r.msg_size_bytes), rate=float(r.msg_rate_per_s)))
    for f in sorted(d.glob("osu*-p*-r*.txt")):
        m = re.fullmatch(r"(osu\w*)-p(\d+)-r(\d+)\.txt", f.name)
        for line in f.read_text(errors="replace").splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0].isdigit() and int(parts[0]) in SIZES:
                recs.append(dict(tool=m[1], pairs=int(m[2]), rep=int(m[3]),
                                 size=int(parts[0]), rate=float(parts[2])))
    return pd.DataFrame(recs)


def paired(d: pd.DataFrame, tool: str, ref: str = "osu") -> pd.DataFrame:
    a = d[d.tool == tool].set_index(["pairs", "size", "rep"]).rate
    b = d[d.tool == ref].set_index(["pairs", "size", "rep"]).rate
    r = (a / b).dropna().reset_index(name="ratio")
    out = []
    for (p, s), g in r.groupby(["pairs", "size"]):
        x = g.ratio.to_numpy()
        lo = hi = np.nan
        if len(x) >= 4:
            ci = stats.bootstrap((x,), np.median, confidence_level=0.95, n_resamples=9999,
                                 method="percentile", random_state=1).confidence_interval
            lo, hi = ci.low, ci.high
        out.append(dict(pairs=p, size=s, tool=tool, n_paired=len(x), paired_median=np.median(x),
                        ci_low=lo, ci_high=hi))
    return pd.DataFrame(out)


def main(d: Path) -> None:
    data = load(d)
    g = data.groupby(["tool", "pairs", "size"]).rate
    t = g.agg(median="median", cv=lambda x: x.std(ddof=1) / x.mean(), n="count").reset_index()
    wide = t.pivot_table(index=["pairs", "size"], columns="tool", values=["median", "cv", "n"])
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 40)
    print("message rate (messages/s), aggregate; median and CV (stdev/mean) across repetitions")
    print(wide.to_string(float_format=lambda v: f"{v:.4g}"))
    order = ("new", "old", "a", "b", "new5ms", "osuL")
    tools = [x for x in order if x in set(data.tool)] + sorted(set(data.tool) - set(order) - {"osu"})
    pr = pd.concat([paired(data, x) for x in tools])
    print("\npaired ratio to osu_mbw_mr (same repetition): median [95 % bootstrap interval]")
    for (p, s), grp in pr.groupby(["pairs", "size"]):
        cells = [f"{r.tool}: {r.paired_median:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] n={r.n_paired}"
                 for r in grp.itertuples()]
        print(f"  {p} pair(s) {s:>8} B   " + "   ".join(cells))
    if {"old", "b"} <= set(data.tool):
        print("\npaired ratio b / old (same repetition): median [95 % bootstrap interval]")
        pb = paired(data, "b", ref="old")
        for r in pb.itertuples():
            print(f"  {r.pairs} pair(s) {r.size:>8} B   {r.paired_median:.3f} "
                  f"[{r.ci_low:.3f}, {r.ci_high:.3f}] n={r.n_paired}")
    t.to_csv(d / "table.csv", index=False)
    pr.to_csv(d / "paired.csv", index=False)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
