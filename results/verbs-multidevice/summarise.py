#!/usr/bin/env python3
"""Summarise raw/*.csv of run-bench.sh: per configuration and size, the node aggregate
(scope all) and, for two devices, each device's aggregate and Jain fairness across devices;
median, min and max over the repetitions.  Writes summary.csv, prints a Markdown table.
usage: PYTHONPATH=scripts python results/verbs-multidevice/summarise.py"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from pairbench.analysis.frames import jain

here = Path(__file__).resolve().parent
frames = []
for f in sorted((here / "raw").glob("*-r*.csv")):
    df = pd.read_csv(f, dtype=str, keep_default_na=False)
    cfg, rep = f.stem.rsplit("-r", 1)
    df["config"], df["rep"] = cfg, int(rep)
    frames.append(df)
df = pd.concat(frames)
for c in ("bw_mbyte_s", "fairness", "msg_size_bytes"):
    df[c] = pd.to_numeric(df[c], errors="coerce")
assert (df["status"] == "ok").all(), df[df["status"] != "ok"][["config", "rep", "error"]]
agg = df[df["pair_id"] == "all"].copy()
agg["what"] = agg.apply(lambda r: "node" if r["scope"] == "all" else f"device {r['device']}",
                        axis=1)
dev = agg[agg["scope"] == "device"]
fair = (dev.groupby(["config", "msg_size_bytes", "rep"])["bw_mbyte_s"]
        .apply(lambda s: jain(list(s))).rename("device_fairness").reset_index())
rows = []
for (cfg, size, what), g in agg.groupby(["config", "msg_size_bytes", "what"], sort=True):
    x = g["bw_mbyte_s"]
    f = fair[(fair["config"] == cfg) & (fair["msg_size_bytes"] == size)]["device_fairness"]
    rows.append({"config": cfg, "msg_size_bytes": int(size), "row": what, "reps": len(x),
                 "bw_mbyte_s_median": round(x.median(), 3), "bw_mbyte_s_min": round(x.min(), 3),
                 "bw_mbyte_s_max": round(x.max(), 3),
                 "pair_fairness_median": round(g["fairness"].median(), 4),
                 "device_fairness_median": round(f.median(), 4) if what == "node" and len(f)
                 else ""})
out = pd.DataFrame(rows)
out.to_csv(here / "summary.csv", index=False)
print("| config | size | row | reps | MB/s median | min | max | Jain over pairs | Jain over devices |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['config']} | {r['msg_size_bytes']} | {r['row']} | {r['reps']} | "
          f"{r['bw_mbyte_s_median']} | {r['bw_mbyte_s_min']} | {r['bw_mbyte_s_max']} | "
          f"{r['pair_fairness_median']} | {r['device_fairness_median']} |")
