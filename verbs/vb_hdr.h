/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The framed header that travels in rdma_cm private data (connect request
 * and accept): magic, protocol version, pair index, hash of the options both
 * sides must agree on plus one 4-bit hash per option, buffer address, length
 * and rkey, ctrl words' address and rkey.  Packed, big endian, 52 bytes
 * (rdma_cm allows 56 in a connect request).
 *
 * Pure functions without any verbs call, so the parser of untrusted bytes is
 * unit-tested (and fuzzed) without a device.
 */
#ifndef VB_HDR_H
#define VB_HDR_H

#include <stddef.h>
#include <stdint.h>

#define VB_HDR_MAGIC 0x50425631u   /* "PBV1" */
/* 2: ctrl words readable by the peer (progress reads); 3: --qps and --cm in the option
 * hash, the QP table written into the ctrl page, the QP-info block of --cm tcp; 4: eight
 * ctrl words each way (the cross-node start of --pattern), --pattern in the option hash */
#define VB_HDR_VERSION 4
#define VB_HDR_WIRE_BYTES 52
/* --cm tcp: a reject frame is the magic, this value in the version field, a 16-bit text length
 * and the text (the rdma_cm reject carries the magic and the text) */
#define VB_HDR_REJECT 0xffffu
#define VB_MAX_QPS 16384u          /* --qps range; the device's max_qp is checked at run time */
#define VB_QPINFO_FIXED_BYTES 28

struct vb_hdr {
	uint16_t version;
	uint16_t pair;
	uint64_t opt_hash;
	uint64_t opt_nibbles;
	uint64_t addr;
	uint32_t len;
	uint32_t rkey;
	uint64_t ctrl_addr;
	uint32_t ctrl_rkey;
};

/* Encode h (magic and version added) into out[0..VB_HDR_WIRE_BYTES). */
void vb_hdr_encode(const struct vb_hdr *h, uint8_t out[VB_HDR_WIRE_BYTES]);

/*
 * Decode the peer's bytes.  Returns 0 with *h filled; -EBADMSG when they are
 * not a pairbench-verbs header at all (missing, too short, wrong magic: a
 * stranger such as rping or a port scan); -EPROTO for a pairbench-verbs
 * header of another protocol version.  why[0..whylen) says what was wrong.
 */
int vb_hdr_decode(const uint8_t *data, size_t len, struct vb_hdr *h, char *why, size_t whylen);

/*
 * --cm tcp: what follows the header on the socket.  Fixed part (28 B, big
 * endian): QP count, LID, link layer (1 InfiniBand, 2 Ethernet), active MTU
 * (enum ibv_mtu 1..5), RDMA read/atomic depth, GID index, 2 reserved bytes,
 * 16-byte GID; then per QP its number and its first PSN (24 bits each, 4 B each).
 */
struct vb_qpinfo {
	uint32_t nqp;
	uint16_t lid;
	uint8_t link_layer, mtu, rd_atom, gid_index;
	uint8_t gid[16];
};

/* Bytes of the QP-info block of nqp QPs. */
size_t vb_qpinfo_wire_bytes(uint32_t nqp);
/* Encode the fixed part into out[0..VB_QPINFO_FIXED_BYTES); entry i of the table with the next. */
void vb_qpinfo_encode(const struct vb_qpinfo *qi, uint8_t *out);
void vb_qpinfo_put_entry(uint8_t *block, uint32_t i, uint32_t qpn, uint32_t psn);
/* The QP count of a fixed part (len >= 4), to know how much more to read; 0 when len < 4. */
uint32_t vb_qpinfo_count(const uint8_t *data, size_t len);
/*
 * Decode a whole block: 0 with *qi filled, or -EBADMSG with why (too short,
 * a length that does not match its QP count, a count outside 1..VB_MAX_QPS,
 * an unknown link layer or MTU, a QP number or PSN wider than 24 bits).
 */
int vb_qpinfo_decode(const uint8_t *data, size_t len, struct vb_qpinfo *qi, char *why, size_t whylen);
/* Entry i of a block vb_qpinfo_decode() accepted. */
void vb_qpinfo_entry(const uint8_t *block, uint32_t i, uint32_t *qpn, uint32_t *psn);

/* True when data starts with the magic (a reject reason of pairbench-verbs follows it). */
int vb_hdr_has_magic(const uint8_t *data, size_t len);

#endif
