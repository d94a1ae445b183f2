"""Measurement flags as the driver reads them: the `flags` column (';'-separated) and what
each machine-dependent flag means for a reader (core/pb_flags.h writes them).

Runs written before the executables set these flags (CSV schema versions 1 and 2) get them
inferred from metadata.json: processes per point against the logical CPUs of the
fingerprint (oversubscribed), an rxe/siw device in the fingerprint (emulated_device,
link_rate_nominal).  docs/methodology.md, "Flags".
"""

from __future__ import annotations

# Flags that say the machine, not the interconnect, limited what a row shows.  accept
# refuses to pass a criterion on rows carrying one unless the spec lists it in accept_flags.
MACHINE_FLAGS: dict[str, str] = {
    "oversubscribed": "more busy-polling processes than CPUs on the node: the figures "
                      "measure the scheduler on this machine, not the interconnect",
    "emulated_device": "the RDMA device is emulated in software (rdma_rxe / siw): "
                       "correctness only, never speed",
    "link_rate_nominal": "the device reports a nominal link rate (emulated device): "
                         "link_pct is left empty",
    "link_rate_unknown": "the device reports no link rate: link_pct is left empty",
}
# Flags a measurement sets on its own row.
MEASURED_FLAGS: dict[str, str] = {
    "above_link_rate": "bandwidth above the link rate: a measurement error",
    "tail_dominated": "the bandwidth pairs ended more than 5 % of the window apart: with a "
                      "fixed count (-n) the aggregate understates what the pairs did together "
                      "(run without -n: one common window); in a common window (no -n) it is "
                      "stop jitter: an oversubscribed or busy machine (tail_advice)",
    "sample_cap": "a latency pair filled its room for samples before the target time",
    "soak_partial": "a soak stopped before its end (Ctrl-C, the sweep's deadline: SIGUSR1): "
                    "its stall columns describe the buckets it measured, not the soak asked for",
    "soak_zero_median": "half of a soak flow's buckets or more saw no message complete: there "
                        "is no median to judge stalls against (stalls 0, min_bucket_share "
                        "empty); the flow moved in bursts or not at all",
    "soak_coarse": "a soak flow's median bucket holds fewer than 10 windows: one window more or "
                   "less moves a bucket by over 10 %, so stalls are counted in coarse steps "
                   "(longer --bucket, or a smaller --window)",
    "cross_node_start": "pairbench-verbs --pattern: this flow's node started more than 2.5 % of "
                        "the row's window before or after its peer node (measured on one clock "
                        "through the flow: docs/patterns.md); the flows did not all run together",
}
# Flags the driver sets from the port counters pairbench-verbs read around the point's
# timed window (counters.csv; docs/health.md), on the rows of the device they concern.
COUNTER_FLAGS: dict[str, str] = {
    "error_counters": "an error-class port counter (errors, discards, link downs, "
                      "retransmissions, out-of-sequence, RNR) moved during the timed window",
    "counters_disagree": "the device's data counters disagree with what the point says it "
                         "moved beyond the stated tolerance: a measurement error, traffic "
                         "from elsewhere, or (with error_counters) retransmitted packets",
}
EMULATED_PREFIXES = ("rxe", "siw")


def tail_advice(window_method: object) -> str:
    """What a tail_dominated aggregate means and what to do about it, by how its point was
    timed (its window_method; docs/methodology.md "Windows"). Only a fixed count is cured
    by dropping -n: in one common window every pair was told to stop at the same deadline,
    so pairs ending apart is stop jitter (pairs not run at their deadline: more busy
    processes than CPUs, a busy host, an emulated device), which -n would make worse."""
    if window_method == "count":
        return ("a fixed count (-n) whose pairs ended more than 5 % of the window apart: the "
                "aggregate understates what the pairs did together; run without -n for one "
                "common window")
    if window_method in ("window", "target"):
        return ("one common window (no -n) whose pairs stopped more than 5 % of it apart: "
                "stop jitter, the pairs were not run at their deadline (an oversubscribed or "
                "busy machine, an emulated device), not a fixed count's tail; -n would not "
                "help: fewer pairs than free CPUs, a quiet machine, or a longer window "
                "(--bw-seconds, -D)")
    return ("pairs that ended more than 5 % of the window apart: with -n, run without it; "
            "without -n it is stop jitter (an oversubscribed or busy machine)")


def split(cell: object) -> set[str]:
    return {f for f in str(cell or "").split(";") if f} if isinstance(cell, str) else set()


