"""Port counters as pairbench records them (issue 25; docs/health.md): the tidy
counters.csv of a run and the class of every counter name the devices expose.

pairbench-verbs reads /sys/class/infiniband/DEV/ports/PORT/counters/* and hw_counters/*,
and the `ethtool -S` statistics of the port's network device (source `ethtool`; per-queue
ones summed under a name with "*" for the index: verbs/vb_ethtool.h), just before and after
each point's timed window (verbs/vb_counters.c) and writes the deltas
into its --env-json record ("counters"); the driver gathers them into counters.csv, one
row per (repetition, point, device, port, counter). A counter's class says what its
movement means: `error` (the link or the transport misbehaved: symbol errors, link downs,
receive errors, discards, retransmissions, out-of-sequence packets, RNR), `congestion`
(ECN/CNP marks, pause frames), `data` (bytes and packets: cross-checked against what the
point moved) and `other` (everything else, recorded but not judged). Names the sets below do
not list are classed by their words (CONGESTION_WORDS, ERROR_WORDS, DATA_ENDINGS).
"""

from __future__ import annotations

COUNTER_COLUMNS = ("run_id", "repetition", "layer", "test", "variant", "msg_size_bytes",
                   "pairs", "qps", "host", "device", "port", "source", "counter", "class",
                   "delta")

ERROR_COUNTERS = frozenset({
    # counters/ (InfiniBand PMA PortCounters, also provided by RoCE devices)
    "symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
    "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
    "port_xmit_constraint_errors", "port_rcv_constraint_errors",
    "local_link_integrity_errors", "excessive_buffer_overrun_errors", "VL15_dropped",
    # hw_counters/ of rdma_rxe (Soft-RoCE)
    "duplicate_request", "out_of_seq_request", "rcvd_rnr_err", "send_rnr_err",
    "rcvd_seq_err", "retry_exceeded_err", "retry_rnr_exceeded_err", "completer_retry_err",
    "send_err",
    # hw_counters/ of mlx5
    "out_of_sequence", "packet_seq_err", "out_of_buffer", "local_ack_timeout_err",
    "rnr_nak_retry_err", "implied_nak_seq_err", "roce_adp_retrans", "roce_adp_retrans_to",
    "roce_slow_restart", "roce_slow_restart_trans", "req_cqe_error", "resp_cqe_error",
    "req_remote_access_errors", "req_remote_invalid_request", "resp_local_length_error",
    "resp_remote_access_errors", "rx_icrc_encapsulated", "rx_dct_connect",
    # statistics/ of the port's network device (RoCE; counters over time, source netdev)
    "rx_errors", "tx_errors", "rx_dropped", "tx_dropped", "rx_crc_errors", "rx_frame_errors",
    "rx_fifo_errors", "rx_missed_errors", "rx_over_errors", "rx_length_errors",
    "tx_aborted_errors", "tx_carrier_errors", "tx_fifo_errors", "tx_heartbeat_errors",
    "tx_window_errors", "collisions",
})
CONGESTION_COUNTERS = frozenset({
    "np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets", "rp_cnp_ignored",
    "ecn_marked_roce_packets", "cnp_sent", "cnp_handled",
})
# Byte counters count 4-byte words (PortXmitData / PortRcvData: octets / 4).
WORD_COUNTERS = frozenset({"port_xmit_data", "port_rcv_data"})
PACKET_COUNTERS = frozenset({"port_xmit_packets", "port_rcv_packets", "sent_pkts",
                             "rcvd_pkts", "unicast_xmit_packets", "unicast_rcv_packets"})
DATA_COUNTERS = WORD_COUNTERS | PACKET_COUNTERS | frozenset({
    "rdma_sends", "rdma_recvs",
    # a netdev's (counters over time, source netdev)
    "rx_bytes", "tx_bytes", "rx_packets", "tx_packets"})
# The transmit-side counters the data check reads, in order of preference.
XMIT_BYTES = "port_xmit_data"
XMIT_PACKETS = ("sent_pkts", "port_xmit_packets")


# Names outside the sets above (a network device's `ethtool -S` statistics, whose names each
# driver chooses: rx_prio3_pause, rx_crc_errors_phy, rx_queue_*_drops, ...) are classed by
# the words in them (a word begins with one of these; words are split at "_", "-", "." and
# spaces: ack_deferred has no error word), checked in this order.
CONGESTION_WORDS = ("pause", "pfc", "ecn", "cnp")
ERROR_WORDS = ("err", "drop", "discard", "crc", "fcs", "symbol", "timeout")
ERROR_PHRASES = ("link_down",)  # mlx5's link_down_events_phy: the flap a soak looks for
DATA_ENDINGS = ("_packets", "_bytes", "_pkts")


def counter_class(name: str) -> str:
    """error, congestion, data or other."""
    if name in ERROR_COUNTERS:
        return "error"
    if name in CONGESTION_COUNTERS:
        return "congestion"
    if name in DATA_COUNTERS:
        return "data"
    low = name.lower()
    words = low.replace("-", "_").replace(".", "_").replace(" ", "_").split("_")
    if any(w.startswith(CONGESTION_WORDS) for w in words):
        return "congestion"
    if any(w.startswith(ERROR_WORDS) for w in words) or any(x in low for x in ERROR_PHRASES):
        return "error"
    return "data" if low.endswith(DATA_ENDINGS) else "other"


# The data check (docs/health.md, "Data counters"): a device's data counters over a
# bandwidth point's window must show at least the payload its pairs say they moved, and at
# most (1 + DATA_TOLERANCE) x what that payload needs on the wire (a header per packet and
# one acknowledgement or request per message) plus DATA_SLACK_PACKETS packets (the pair
# syncs and progress reads around the window). The larger of the transmit and receive
# counters is used: in loopback a device sends and receives every packet, across nodes the
# data flows one way (RDMA read: towards the requester).
DATA_TOLERANCE = 0.10
DATA_SLACK_PACKETS = 64
# Headers and CRCs of one packet, the largest stack: RoCE v2 over IPv6 = Ethernet 14 + IPv6 40
# + UDP 8 + BTH 12 + RETH 16 + ICRC 4 + FCS 4 (InfiniBand with a GRH: LRH 8 + GRH 40 + BTH 12 +
# RETH 16 + ICRC 4 + VCRC 2 = 82).
WIRE_HEADER_BYTES = 14 + 40 + 8 + 12 + 16 + 4 + 4


def data_expectation(payload_bytes: float, messages: float, msg_size_bytes: int,
                     mtu_bytes: int) -> dict:
    """The range the data counters must fall in: packets and bytes, low and high."""
    per_msg = max(1, -(-int(msg_size_bytes) // max(1, int(mtu_bytes))))
    packets = messages * per_msg
    return {"packets_low": packets,
            "packets_high": (packets + messages) * (1 + DATA_TOLERANCE) + DATA_SLACK_PACKETS,
            "bytes_low": payload_bytes,
            "bytes_high": (payload_bytes + (packets + messages) * WIRE_HEADER_BYTES)
            * (1 + DATA_TOLERANCE) + DATA_SLACK_PACKETS * (mtu_bytes + WIRE_HEADER_BYTES)}


def data_counted(deltas: dict[str, int]) -> tuple[str, float] | None:
    """What a device's data counters say it moved: ('bytes', max(port_xmit_data,
    port_rcv_data) x 4) where the byte counters exist, else ('packets', the larger of the
    transmit and receive packet counters); None without either."""
    words = [deltas[k] for k in WORD_COUNTERS if k in deltas]
    if words:
        return "bytes", 4.0 * max(words)
    for tx, rx in (("sent_pkts", "rcvd_pkts"), ("port_xmit_packets", "port_rcv_packets")):
        if tx in deltas or rx in deltas:
            return "packets", float(max(deltas.get(tx, 0), deltas.get(rx, 0)))
    return None


def data_agrees(unit: str, counted: float, expected: dict) -> bool:
    return expected[f"{unit}_low"] <= counted <= expected[f"{unit}_high"]
