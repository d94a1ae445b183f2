/* SPDX-License-Identifier: BSD-3-Clause */
#include "vb_hdr.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Byte offsets of the fields on the wire. */
enum {
	VB_OFF_MAGIC = 0, VB_OFF_VERSION = 4, VB_OFF_PAIR = 6, VB_OFF_HASH = 8, VB_OFF_NIBBLES = 16,
	VB_OFF_ADDR = 24, VB_OFF_LEN = 32, VB_OFF_RKEY = 36, VB_OFF_CTRL_ADDR = 40,
	VB_OFF_CTRL_RKEY = 48,
};
_Static_assert(VB_OFF_CTRL_RKEY + 4 == VB_HDR_WIRE_BYTES, "wire layout");
_Static_assert(VB_HDR_WIRE_BYTES <= 56, "connect private data is limited to 56 bytes");

static void vb_put16(uint8_t *p, uint16_t v) { v = htobe16(v); memcpy(p, &v, 2); }
static void vb_put32(uint8_t *p, uint32_t v) { v = htobe32(v); memcpy(p, &v, 4); }
static void vb_put64(uint8_t *p, uint64_t v) { v = htobe64(v); memcpy(p, &v, 8); }
static uint16_t vb_get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return be16toh(v); }
static uint32_t vb_get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return be32toh(v); }
static uint64_t vb_get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return be64toh(v); }

void vb_hdr_encode(const struct vb_hdr *h, uint8_t out[VB_HDR_WIRE_BYTES])
{
	vb_put32(out + VB_OFF_MAGIC, VB_HDR_MAGIC);
	vb_put16(out + VB_OFF_VERSION, VB_HDR_VERSION);
	vb_put16(out + VB_OFF_PAIR, h->pair);
	vb_put64(out + VB_OFF_HASH, h->opt_hash);
	vb_put64(out + VB_OFF_NIBBLES, h->opt_nibbles);
	vb_put64(out + VB_OFF_ADDR, h->addr);
	vb_put32(out + VB_OFF_LEN, h->len);
	vb_put32(out + VB_OFF_RKEY, h->rkey);
	vb_put64(out + VB_OFF_CTRL_ADDR, h->ctrl_addr);
	vb_put32(out + VB_OFF_CTRL_RKEY, h->ctrl_rkey);
}

int vb_hdr_has_magic(const uint8_t *data, size_t len)
{
	return data && len >= 4 && vb_get32(data) == VB_HDR_MAGIC;
}

int vb_hdr_decode(const uint8_t *data, size_t len, struct vb_hdr *h, char *why, size_t whylen)
{
	memset(h, 0, sizeof(*h));
	if (!data || !len) {
		snprintf(why, whylen, "no connection data: not pairbench-verbs");
		return -EBADMSG;
	}
	if (!vb_hdr_has_magic(data, len)) {
		snprintf(why, whylen, "connection data (%zu B) without the pairbench-verbs magic", len);
		return -EBADMSG;
	}
	if (len < VB_OFF_PAIR) {
		snprintf(why, whylen, "connection data too short (%zu B)", len);
		return -EBADMSG;
	}
	h->version = vb_get16(data + VB_OFF_VERSION);
	if (h->version != VB_HDR_VERSION) {
		snprintf(why, whylen, "pairbench-verbs protocol version %u, this side speaks %u: use the same pairbench version",
			 h->version, VB_HDR_VERSION);
		return -EPROTO;
	}
	if (len < VB_HDR_WIRE_BYTES) {
		snprintf(why, whylen, "connection data too short (%zu B, header %d B)", len, VB_HDR_WIRE_BYTES);
		return -EBADMSG;
	}
	h->pair = vb_get16(data + VB_OFF_PAIR);
	h->opt_hash = vb_get64(data + VB_OFF_HASH);
	h->opt_nibbles = vb_get64(data + VB_OFF_NIBBLES);
	h->addr = vb_get64(data + VB_OFF_ADDR);
	h->len = vb_get32(data + VB_OFF_LEN);
	h->rkey = vb_get32(data + VB_OFF_RKEY);
	h->ctrl_addr = vb_get64(data + VB_OFF_CTRL_ADDR);
	h->ctrl_rkey = vb_get32(data + VB_OFF_CTRL_RKEY);
	return 0;
}

enum {
	VB_QI_NQP = 0, VB_QI_LID = 4, VB_QI_LL = 6, VB_QI_MTU = 7, VB_QI_RD = 8, VB_QI_GIDX = 9,
	VB_QI_GID = 12,
};
_Static_assert(VB_QI_GID + 16 == VB_QPINFO_FIXED_BYTES, "QP-info layout");

size_t vb_qpinfo_wire_bytes(uint32_t nqp)
{
	return VB_QPINFO_FIXED_BYTES + 8 * (size_t)nqp;
}

void vb_qpinfo_encode(const struct vb_qpinfo *qi, uint8_t *out)
{
	memset(out, 0, VB_QPINFO_FIXED_BYTES);
	vb_put32(out + VB_QI_NQP, qi->nqp);
	vb_put16(out + VB_QI_LID, qi->lid);
	out[VB_QI_LL] = qi->link_layer;
	out[VB_QI_MTU] = qi->mtu;
	out[VB_QI_RD] = qi->rd_atom;
	out[VB_QI_GIDX] = qi->gid_index;
	memcpy(out + VB_QI_GID, qi->gid, 16);
}

void vb_qpinfo_put_entry(uint8_t *block, uint32_t i, uint32_t qpn, uint32_t psn)
{
	vb_put32(block + VB_QPINFO_FIXED_BYTES + 8 * (size_t)i, qpn);
	vb_put32(block + VB_QPINFO_FIXED_BYTES + 8 * (size_t)i + 4, psn);
}

void vb_qpinfo_entry(const uint8_t *block, uint32_t i, uint32_t *qpn, uint32_t *psn)
{
	*qpn = vb_get32(block + VB_QPINFO_FIXED_BYTES + 8 * (size_t)i);
	*psn = vb_get32(block + VB_QPINFO_FIXED_BYTES + 8 * (size_t)i + 4);
}

uint32_t vb_qpinfo_count(const uint8_t *data, size_t len)
{
	return data && len >= 4 ? vb_get32(data + VB_QI_NQP) : 0;
}

int vb_qpinfo_decode(const uint8_t *data, size_t len, struct vb_qpinfo *qi, char *why, size_t whylen)
{
	memset(qi, 0, sizeof(*qi));
	if (!data || len < VB_QPINFO_FIXED_BYTES) {
		snprintf(why, whylen, "QP info too short (%zu B, at least %d B)", data ? len : 0,
			 VB_QPINFO_FIXED_BYTES);
		return -EBADMSG;
	}
	qi->nqp = vb_get32(data + VB_QI_NQP);
	qi->lid = vb_get16(data + VB_QI_LID);
	qi->link_layer = data[VB_QI_LL];
	qi->mtu = data[VB_QI_MTU];
	qi->rd_atom = data[VB_QI_RD];
	qi->gid_index = data[VB_QI_GIDX];
	memcpy(qi->gid, data + VB_QI_GID, 16);
	if (qi->nqp < 1 || qi->nqp > VB_MAX_QPS) {
		snprintf(why, whylen, "QP info for %u QPs (1..%u)", qi->nqp, VB_MAX_QPS);
		return -EBADMSG;
	}
	if (len != vb_qpinfo_wire_bytes(qi->nqp)) {
		snprintf(why, whylen, "QP info of %zu B for %u QPs, expected %zu B", len, qi->nqp,
			 vb_qpinfo_wire_bytes(qi->nqp));
		return -EBADMSG;
	}
	if (qi->link_layer != 1 && qi->link_layer != 2) {
		snprintf(why, whylen, "QP info: unknown link layer %u", qi->link_layer);
		return -EBADMSG;
	}
	if (qi->mtu < 1 || qi->mtu > 5) {
		snprintf(why, whylen, "QP info: MTU code %u is not 1..5 (256..4096 B)", qi->mtu);
		return -EBADMSG;
	}
	for (uint32_t i = 0; i < qi->nqp; i++) {
		uint32_t qpn, psn;

		vb_qpinfo_entry(data, i, &qpn, &psn);
		if (qpn > 0xffffff || psn > 0xffffff) {
			snprintf(why, whylen, "QP info: entry %u (QP 0x%x, PSN 0x%x) is wider than 24 bits", i, qpn,
				 psn);
			return -EBADMSG;
		}
	}
	return 0;
}
