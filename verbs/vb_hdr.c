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
