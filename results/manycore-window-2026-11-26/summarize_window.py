"""Table of the window issue's many-core check (build-manycore/win.sh, see README.md):
pairbench-mpi msgrate and bw (peer layout) at the default common window, msgrate at the old
default fixed count (-n 1000), and osu_mbw_mr -W 64; medians and CVs (stdev/mean, ddof=1)
across repetitions of each (pairs, size), ratio of medians to osu_mbw_mr.
Usage: python summarize_window.py WIN_DIR > window_table.txt (writes window_table.csv too)."""

import re
import sys
from pathlib import Path

import pandas as pd

SIZES = (8, 4096, 65536, 1048576)


def main(win: Path) -> None:
    recs = []
    for f in sorted(win.glob("*.csv")):
        m = re.fullmatch(r"(mr|bw)-(window|count)-p(\d+)-r(\d+)\.csv", f.name)
        if not m:
            continue
        df = pd.read_csv(f, dtype=str, keep_default_na=False)
        for _, r in df[df.pair_id == "all"].iterrows():
            recs.append(dict(method=f"pb_{m[1]}_{m[2]}", pairs=int(m[3]), rep=int(m[4]),
                             size=int(r.msg_size_bytes), mbyte_s=float(r.bw_mbyte_s),
                             dur_s=float(r.duration_s), spread_us=float(r.end_spread_us),
                             flags=r["flags"], wm=r["window_method"]))
    for f in sorted(win.glob("osu-p*-r*.txt")):
        m = re.fullmatch(r"osu-p(\d+)-r(\d+)\.txt", f.name)
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0].isdigit() and int(parts[0]) in SIZES:
                recs.append(dict(method="osu_mbw_mr", pairs=int(m[1]), rep=int(m[2]),
                                 size=int(parts[0]), mbyte_s=float(parts[1])))
    d = pd.DataFrame(recs)
    g = d.groupby(["method", "pairs", "size"])
    t = g.mbyte_s.agg(median="median", cv=lambda x: x.std(ddof=1) / x.mean(), n="count")
    t["max_spread_ms"] = g.spread_us.max() / 1e3
    t["max_dur_ms"] = g.dur_s.max() * 1e3
    t["tail_flags"] = g.flags.apply(lambda x: int(sum("tail_dominated" in str(v) for v in x)))
    t = t.reset_index()
    osu = t[t.method == "osu_mbw_mr"].set_index(["pairs", "size"])
    t["ratio_osu"] = [r["median"] / osu.loc[(r.pairs, r["size"]), "median"]
                      for _, r in t.iterrows()]
    t["osu_cv"] = [osu.loc[(r.pairs, r["size"]), "cv"] for _, r in t.iterrows()]
    t.to_csv("window_table.csv", index=False)
    wide = t.pivot_table(index=["pairs", "size"], columns="method",
                         values=["median", "cv", "ratio_osu"])
    pd.set_option("display.width", 200)
    print("MB/s (1e6 B/s), aggregate row; cv = stdev/mean across repetitions; "
          "ratio_osu = median / osu_mbw_mr median")
    print(wide.round(3).to_string())
    print()
    print("fixed count (pb_mr_count): largest end spread and window per point; "
          "tail_dominated = repetitions flagged")
    c = t[t.method == "pb_mr_count"][["pairs", "size", "max_spread_ms", "max_dur_ms",
                                       "tail_flags", "n"]]
    print(c.round(3).to_string(index=False))
    w = t[t.method == "pb_mr_window"][["pairs", "size", "max_spread_ms", "max_dur_ms",
                                        "tail_flags", "n"]]
    print("\ncommon window (pb_mr_window): largest stop jitter (end spread) and window")
    print(w.round(3).to_string(index=False))
    inside = t[(t.method == "pb_mr_window")]
    print(f"\npb_mr_window ratio to osu_mbw_mr: {inside.ratio_osu.min():.3f} .. "
          f"{inside.ratio_osu.max():.3f}; points within [0.9, 1.1]: "
          f"{int(((inside.ratio_osu >= 0.9) & (inside.ratio_osu <= 1.1)).sum())}/{len(inside)}; "
          f"cv <= osu cv: {int((inside.cv <= inside.osu_cv).sum())}/{len(inside)}")
    cnt = t[(t.method == "pb_mr_count")]
    print(f"pb_mr_count  ratio to osu_mbw_mr: {cnt.ratio_osu.min():.3f} .. "
          f"{cnt.ratio_osu.max():.3f}; points within [0.9, 1.1]: "
          f"{int(((cnt.ratio_osu >= 0.9) & (cnt.ratio_osu <= 1.1)).sum())}/{len(cnt)}; "
          f"cv <= osu cv: {int((cnt.cv <= cnt.osu_cv).sum())}/{len(cnt)}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
