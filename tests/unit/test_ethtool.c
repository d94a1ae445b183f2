/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs/vb_ethtool.c: the names recorded (a queue's or channel's index as "*", never a
 * priority's or a port's) and the devices without statistics (loopback) or absent.  The
 * statistics of a real device are read in the Soft-RoCE rig's K-node suite (veth).
 */
#include "pb_test.h"
#include "vb_ethtool.h"

#include <errno.h>

static void name_is(const char *raw, const char *want, bool queue)
{
	char out[VB_ETH_NAME];
	bool q = vb_ethtool_name(raw, out);

	CHECK_STR(out, want);
	CHECK(q == queue);
}

int main(void)
{
	struct vb_ethtool e;

	/* per queue / channel: summed under one name */
	name_is("rx0_packets", "rx*_packets", true);          /* mlx5 */
	name_is("tx15_xmit_more", "tx*_xmit_more", true);
	name_is("ch3_events", "ch*_events", true);
	name_is("rx_queue_0_drops", "rx_queue_*_drops", true); /* veth, virtio */
	name_is("tx_queue_12_xdp_xmit", "tx_queue_*_xdp_xmit", true);
	name_is("tx-2.tx_bytes", "tx-*.tx_bytes", true);       /* i40e */
	name_is("[3]: rx_ucast_packets", "[*]: rx_ucast_packets", true); /* bnxt */
	name_is("rx_xdp0_redirect", "rx_xdp*_redirect", true);
	/* kept as they are: priorities, PHY lanes, ports, plain names */
	name_is("rx_prio3_pause", "rx_prio3_pause", false);
	name_is("tx_prio7_pause_duration", "tx_prio7_pause_duration", false);
	name_is("rx_crc_errors_phy", "rx_crc_errors_phy", false);
	name_is("rx_discards_phy", "rx_discards_phy", false);
	name_is("np_cnp_sent", "np_cnp_sent", false);
	name_is("peer_ifindex", "peer_ifindex", false);
	name_is("rx_64_bytes_phy", "rx_64_bytes_phy", false);
	name_is("link_down_events_phy", "link_down_events_phy", false);
	name_is("tx2rx", "tx2rx", false);                      /* not a token of its own */
	name_is("rx_\"odd\",name/x", "rx__odd__name_x", false);  /* CSV and JSON safe */

	/* the loopback device has no ethtool statistics: nothing to record, not an error */
	CHECK_EQ_INT(vb_ethtool_open(&e, "lo"), 0);
	CHECK_EQ_INT((int)e.n, 0);
	CHECK_EQ_INT(vb_ethtool_read(&e, NULL), 0);
	vb_ethtool_close(&e);
	CHECK_EQ_INT(vb_ethtool_open(&e, "pb-no-such-dev"), -ENODEV);
	CHECK_EQ_INT(vb_ethtool_open(&e, ""), -ENODEV);
	vb_ethtool_close(&e);
	TEST_DONE();
}
