/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What both sides of a pair check before they connect: the options they must
 * agree on (their hash and one 4-bit hash per option, so a mismatch names the
 * option) and the framed header (vb_hdr.h) that carries it with this worker's
 * buffer keys, made and checked.  Used by both connection methods.
 */
#ifndef VB_HANDSHAKE_H
#define VB_HANDSHAKE_H

#include "vb.h"
#include "vb_hdr.h"

/* Hash of the options both sides must agree on, and its per-option nibbles. */
void vb_opts_hash(const struct vb_params *p, uint64_t *hash, uint64_t *nibbles);
/* Our framed header (pair, option hash, data and ctrl buffer keys). */
void vb_hdr_make(const struct vb_worker *w, uint8_t out[VB_HDR_WIRE_BYTES]);
/*
 * Validate the peer's header and take its buffer keys into w->remote.
 * Returns 0; -EBADMSG (a stranger) or -EPROTO (other options), w->error set.
 */
int vb_hdr_check(struct vb_worker *w, const uint8_t *data, size_t len);

#endif
