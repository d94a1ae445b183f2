"""The incast / fan-out figure of `pairbench plot` (issue 35 item 7): one figure per (layer,
test, pattern, size) of a run's pattern points, three panels against the number of senders
(the rows' pairs: P senders into the hub, or P receivers of it):

  target aggregate   the headline row's bw_gbit_s (the hub's aggregate over its flows on its
                     own clock, docs/patterns.md), median over repetitions, with the link
                     rate where the rows know it (bw_gbit_s / link_pct x 100)
  victim inflation   the probe row's lat_inflation_p50 / p99 / p999 (scope=probe: loaded /
                     idle twin), median over repetitions; 1 = not slowed
  per-flow share     every flow's bw_gbit_s / the mean of its point's flows (the hub's pair
                     rows, scope=pair), one dot per flow and repetition; Jain's fairness
                     (the headline row's) written above each sender count
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pairbench.analysis.frames import is_headline
from pairbench.contract.sizes import size_label

INFLATION = (("lat_inflation_p50", "p50"), ("lat_inflation_p99", "p99"),
             ("lat_inflation_p999", "p99.9"))


def pattern_points(df: pd.DataFrame) -> pd.DataFrame:
    """The headline rows of pattern points (a pattern column that names one)."""
    if "pattern" not in df.columns:
        return df.iloc[0:0]
    pat = df["pattern"].fillna("").astype(str)
    return df[is_headline(df) & pat.str.match(r"^(incast|fanout)(:\d+)?$")]


def _median(d: pd.DataFrame, col: str) -> pd.Series:
    return d.dropna(subset=[col]).groupby("pairs")[col].median()


def plot_patterns(runs: list[tuple[str, pd.DataFrame, dict]], out: Path, written: list[Path],
                  save, pyplot, limit_gbit_s: float | None = None) -> None:
    """Write the pattern figures of every run (save, pyplot: present.plot's helpers);
    limit_gbit_s: a known limit of the hub's port drawn on the aggregate panel (e.g. a
    rate-limited port, which the rows' link rate does not know)."""
    keys: set[tuple] = set()
    for _label, df, _meta in runs:
        heads = pattern_points(df)
        keys |= {tuple(k) for k in heads[["layer", "test", "pattern", "msg_size_bytes"]]
                 .drop_duplicates().itertuples(index=False)}
    for layer, test, pattern, size in sorted(keys):
        plt = pyplot()
        fig, axes = plt.subplots(1, 3, figsize=(17, 4.6))
        fig.subplots_adjust(wspace=0.32)
        for label, df, _meta in runs:
            pt = df[(df["layer"] == layer) & (df["test"] == test) & (df["pattern"] == pattern)
                    & (df["msg_size_bytes"] == size) & (df["status"] == "ok")]
            _aggregate(axes[0], pt, label, len(runs) > 1)
            _inflation(axes[1], pt, label, len(runs) > 1)
            _shares(axes[2], pt, label, len(runs) > 1)
        if limit_gbit_s:
            axes[0].axhline(limit_gbit_s, color="black", linestyle="--",
                            label=f"known limit {limit_gbit_s:g} Gbit/s")
            axes[0].set_ylim(0, max(axes[0].get_ylim()[1], limit_gbit_s * 1.08))
        senders = sorted({int(p) for _l, df, _m in runs for p in
                          df.loc[(df["pattern"] == pattern), "pairs"].dropna().unique()})
        for ax in axes:
            ax.set_xticks(senders)
            ax.set_xlabel("senders into the hub" if pattern.startswith("incast")
                          else "receivers of the hub")
            ax.grid(True, alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8)
        fig.suptitle(f"{layer} {test} --pattern {pattern} at {size_label(int(size))}",
                     fontsize=10)
        save(fig, out, f"{layer}-{test}-{pattern.replace(':', '_')}-{int(size)}-pattern",
             written)


def _aggregate(ax, pt: pd.DataFrame, label: str, multi: bool) -> None:
    heads = pt[is_headline(pt)]
    med = _median(heads, "bw_gbit_s")
    if med.empty:
        return
    ax.plot(list(med.index), list(med.values), marker="o",
            label=f"{label}: target aggregate" if multi else "target aggregate")
    with_link = heads[(heads["link_pct"] > 0) & (heads["bw_gbit_s"] > 0)]
    if len(with_link):
        rate = float((with_link["bw_gbit_s"] / with_link["link_pct"] * 100).median())
        ax.axhline(rate, color="red", linestyle=":", label=f"link rate {rate:g} Gbit/s")
    ax.set_ylim(bottom=0)
    ax.set_ylabel("hub aggregate bandwidth (Gbit/s)")


def _inflation(ax, pt: pd.DataFrame, label: str, multi: bool) -> None:
    probe = pt[pt["scope"] == "probe"] if "scope" in pt.columns else pt.iloc[0:0]
    for col, name in INFLATION:
        if col not in probe.columns:
            continue
        med = _median(probe, col)
        if not med.empty:
            ax.plot(list(med.index), list(med.values), marker="o",
                    label=f"{label}: {name}" if multi else name)
    if len(probe):
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=0.8)
        ax.set_yscale("log")
    ax.set_ylabel("victim probe latency, loaded / idle")


def _shares(ax, pt: pd.DataFrame, label: str, multi: bool) -> None:
    flows = pt[(pt["pair_id"] != "all") & (pt["scope"].fillna("").isin(["pair", ""]))
               & pt["bw_gbit_s"].notna()]
    if flows.empty:
        return
    key = ["pairs", "repetition"] if "repetition" in flows.columns else ["pairs"]
    share = flows["bw_gbit_s"] / flows.groupby(key)["bw_gbit_s"].transform("mean")
    ax.scatter(flows["pairs"], share, s=18, alpha=0.7,
               label=f"{label}: a flow" if multi else "a flow (one dot per flow, repetition)")
    heads = pt[is_headline(pt)]
    for p, jain in _median(heads, "fairness").items():
        ax.annotate(f"Jain {jain:.3f}", (p, 0.03), xycoords=("data", "axes fraction"),
                    ha="center", va="bottom", fontsize=8)
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=0.8)
    ax.set_ylabel("flow bandwidth / mean of the point's flows")
