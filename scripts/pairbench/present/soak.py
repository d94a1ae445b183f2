"""A soak's stability as a person reads it: one line per point (show), a section with a table
and a plot per point (report; templates/stability.html.j2), the plot files (plot_point).

The plot: each flow's bucket bandwidth over time, stalls shaded; past HEATMAP_FLOWS flows a
heat map (flows x time) with the stalls marked. A long soak is drawn from at most
PLOT_COLUMNS (heat map: HEATMAP_COLUMNS) columns per flow, each the minimum of its buckets
(a stall never averages away), and read one flow at a time (analysis/soak.py: bounded memory).
"""

from __future__ import annotations

import base64
import math
import tempfile
from pathlib import Path

from pairbench.analysis import soak
from pairbench.analysis.soak import PointStability
from pairbench.contract.sizes import size_label

HEATMAP_FLOWS = 16
PLOT_COLUMNS = 2000
HEATMAP_COLUMNS = 600  # no more columns than the image has pixels: none is dropped


def _stall_text(ps: PointStability, limit: int = 6) -> str:
    items = [(r.flow.pair_id, s) for r in ps.flows for s in r.stats.stalls]
    items.sort(key=lambda x: x[1].start_bucket)
    shown = [f"pair {p} at {s.start_s(ps.bucket_s):g} s for {s.length_s(ps.bucket_s):g} s"
             for p, s in items[:limit]]
    more = f", … {len(items) - limit} more" if len(items) > limit else ""
    return "; ".join(shown) + more


def point_title(ps: PointStability) -> str:
    pat = f" {ps.pattern}" if ps.pattern else ""
    return f"{ps.point} {ps.test}{pat} {size_label(ps.msg_size_bytes)}"


def point_line(ps: PointStability) -> str:
    """One line: stalls, where, whether they coincide; the windowed minimum."""
    share = "—" if math.isnan(ps.min_share) else f"{ps.min_share:.2f}"
    head = (f"{point_title(ps)}: {len(ps.flows)} flow(s), {ps.bucket_s:g} s buckets, "
            f"min bucket / median {share}")
    if ps.partial:
        head += ", PARTIAL (stopped before its end)"
    if ps.corrupt:
        head += f", {ps.corrupt} CORRUPT message(s)"
    idle = [r.flow.pair_id for r in ps.flows if r.stats.p50_msgs == 0]
    if idle:
        head += (f", NO MEDIAN for pair(s) {idle}: half their buckets or more saw nothing "
                 "complete (bursts or a dead flow; stalls cannot be judged)")
    if not ps.stalls:
        return head + ": no stall"
    events = ", ".join(f"pairs {list(e.pair_ids)} at {e.start_bucket * ps.bucket_s:g} s"
                       for e in ps.shared[:4])
    if len(ps.flows) == 1:  # nothing to coincide with: "alone" would claim a cause
        shared = ("one flow: whether a stall had a cause shared with other flows cannot be "
                  "told (run several pairs)")
    else:
        shared = (f"{len(ps.shared)} event(s) where several flows stalled at once ({events})"
                  if ps.shared else "no two flows stalled at the same time")
        shared += f"; {ps.alone} stall(s) alone (a flow's own path or process)"
    return (f"{head}: {ps.stalls} stall(s) in {ps.stalled_flows} flow(s), longest "
            f"{ps.longest_s:g} s — {_stall_text(ps)}; {shared}")


def summary_lines(run: Path) -> list[str]:
    """show's stability panel: a line per soak point ([] when the run has no soak)."""
    return [point_line(ps) for ps in soak.stability(run)]


def plot_point(run: Path, ps: PointStability, out: Path) -> Path:
    """The point's rate-over-time plot as PNG under out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    many = len(ps.flows) > HEATMAP_FLOWS
    fig, ax = plt.subplots(figsize=(10, 4 if not many else 2 + 0.12 * len(ps.flows)))
    rows = []
    per = 1
    for r in ps.flows:
        b = soak.flow_buckets(run, r.flow)
        cols, per = soak.downsample_min(b["messages"], HEATMAP_COLUMNS if many else PLOT_COLUMNS)
        gbit = cols * r.rate_gbit
        if many:
            rows.append(gbit)
            continue
        t = np.arange(len(gbit)) * per * ps.bucket_s
        line, = ax.step(t, gbit, where="post", lw=0.8, label=f"pair {r.flow.pair_id}")
        for s in r.stats.stalls:
            ax.axvspan(s.start_s(ps.bucket_s), s.start_s(ps.bucket_s) + s.length_s(ps.bucket_s),
                       color=line.get_color(), alpha=0.25)
        if not math.isnan(r.stats.p50_msgs):
            ax.axhline(r.stats.p50_msgs * r.stats.stall_fraction * r.rate_gbit,
                       color=line.get_color(), ls=":", lw=0.6)
    if many:
        width = max(len(g) for g in rows)
        img = np.full((len(rows), width), np.nan)
        for i, g in enumerate(rows):
            img[i, :len(g)] = g
        im = ax.imshow(img, aspect="auto", interpolation="nearest", cmap="viridis",
                       extent=(0, width * per * ps.bucket_s, len(rows) - 0.5, -0.5))
        fig.colorbar(im, ax=ax, label="Gbit/s (min per column)")
        for i, r in enumerate(ps.flows):  # a mark at every stall's start, however short
            starts = [s.start_s(ps.bucket_s) for s in r.stats.stalls]
            if starts:
                ax.scatter(starts, [i] * len(starts), marker="|", color="red", s=60, lw=1)
        ax.set_ylabel("pair")
    else:
        ax.set_ylabel("Gbit/s per bucket")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")  # off the data
        ax.set_ylim(bottom=0)
    ax.set_xlabel("seconds after the common start"
                  + (f" (a column = min of {per} buckets)" if per > 1 else ""))
    ax.set_title(f"{point_title(ps)}: {ps.stalls} stall(s) in {ps.stalled_flows} of "
                 f"{len(ps.flows)} flows (shaded / red: below {ps.flows[0].stats.stall_fraction:g}"
                 " x the flow's median)", fontsize="small")
    out.mkdir(parents=True, exist_ok=True)
    pat = f"-{ps.pattern}" if ps.pattern else ""
    name = f"soak-{ps.point}-{ps.msg_size_bytes}B{pat}.png"
    path = out / name.replace("/", "_").replace(":", "_")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def stability_html(run: Path) -> str | None:
    """The report's stability section (templates/stability.html.j2), None without a soak."""
    import jinja2

    points = soak.stability(run)
    if not points:
        return None
    rows, figures = [], []
    with tempfile.TemporaryDirectory(prefix="pairbench-soak-") as tmp:
        for ps in points:
            for r in ps.flows:
                st = r.stats
                rows.append([point_title(ps), str(r.flow.pair_id), f"{st.buckets}",
                             _num(st.min_msgs * r.rate_gbit), _num(st.p1_msgs * r.rate_gbit),
                             _num(st.p50_msgs * r.rate_gbit), _num(st.min_share, 3),
                             str(len(st.stalls)), f"{st.longest * ps.bucket_s:g}",
                             ", ".join(f"{s.start_s(ps.bucket_s):g}" for s in st.stalls[:8])
                             + (" …" if len(st.stalls) > 8 else ""),
                             str(st.corrupt) if st.checked else "—"])
            png = plot_point(run, ps, Path(tmp))
            figures.append({"name": png.stem,
                            "b64": base64.b64encode(png.read_bytes()).decode("ascii")})
    env = jinja2.Environment(loader=jinja2.PackageLoader("pairbench.present", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    return env.get_template("stability.html.j2").render(
        lines=[point_line(ps) for ps in points], rows=rows, figures=figures)


def _num(v: float, digits: int = 4) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}g}"
