"""CV across repetitions of the 1-pair aggregate bandwidth, before (fixed count) and after
(common window): python summarize.py DIR > table.txt"""
import sys
from pathlib import Path

import pandas as pd

d = Path(sys.argv[1])
recs = []
for f in sorted(d.glob("*-r*.csv")):
    v, rep = f.stem.split("-r")
    df = pd.read_csv(f, dtype=str, keep_default_na=False)
    for _, r in df[df.pair_id == "all"].iterrows():
        recs.append(dict(variant=v, rep=int(rep), size=int(r.msg_size_bytes),
                         mbyte_s=float(r.bw_mbyte_s), dur_ms=float(r.duration_s) * 1e3,
                         iterations=int(r.iterations)))
t = pd.DataFrame(recs)
g = t.groupby(["size", "variant"])
s = g.mbyte_s.agg(n="count", median="median", cv=lambda x: x.std(ddof=1) / x.mean())
s["dur_ms_median"] = g.dur_ms.median()
s["iterations_median"] = g.iterations.median()
pd.set_option("display.width", 160)
print(s.round(4).to_string())
w = s.reset_index().pivot(index="size", columns="variant", values=["median", "cv"])
w[("median_ratio", "new/old")] = w[("median", "new")] / w[("median", "old")]
w[("cv_ratio", "new/old")] = w[("cv", "new")] / w[("cv", "old")]
print()
print(w.round(4).to_string())
load = pd.read_csv(d / "load.tsv", sep="\t", header=None, names=["rep", "variant", "load"])
one = load["load"].str.split().str[0].astype(float)
print(f"\nload average (1 min) before each run: {one.min():.2f} .. {one.max():.2f}")
