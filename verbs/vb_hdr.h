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
#define VB_HDR_VERSION 2  /* 2: ctrl words readable by the peer (progress reads) */
#define VB_HDR_WIRE_BYTES 52

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

/* True when data starts with the magic (a reject reason of pairbench-verbs follows it). */
int vb_hdr_has_magic(const uint8_t *data, size_t len);

#endif
