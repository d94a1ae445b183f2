/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The handshake's content, the same for every connection method (--cm): the
 * options both sides must agree on and their hash, our framed header, the
 * peer's header checked (a stranger, or our peer with other options: the
 * message names the options that differ).  The wire format is vb_hdr.c's.
 */
#include "vb_handshake.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The options both sides must agree on, in nibble order (at most 16). */
enum { VB_OPT_ITEMS = 16 };
static const char *const vb_opt_names[VB_OPT_ITEMS] = {
	"--test", "--variant", "--bidir", "--sizes", "--iterations", "--warmup",
	"--duration/--soak", "--pairs", "--tx-depth", "--cq-mod", "--validate", "--mtu", "--qps", "--cm",
	"--buffers", "--pattern",
};

static void vb_opt_item(const struct vb_params *p, unsigned i, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	switch (i) {
	case 0: snprintf(buf, len, "%s", p->c.test); break;
	case 1: snprintf(buf, len, "%s", p->variant ? p->variant : ""); break;
	case 2: snprintf(buf, len, "%d", p->bidir); break;
	case 3:
		for (size_t k = 0; k < p->c.sizes.n && off + 24 < len; k++)
			off += (size_t)snprintf(buf + off, len - off, "%s%llu", k ? "," : "",
						(unsigned long long)p->c.sizes.v[k]);
		break;
	case 4: snprintf(buf, len, "%llu", (unsigned long long)p->c.iterations); break;
	case 5: snprintf(buf, len, "%llu", (unsigned long long)p->c.warmup); break;
	case 6:  /* -D, --soak and --validate-live (the server fills the checked slots) */
		snprintf(buf, len, "%g/%g/%llu", p->c.duration_s, p->soak.soak_s,
			 (unsigned long long)p->soak.validate_every);
		break;
	case 7: snprintf(buf, len, "%llu", (unsigned long long)p->c.pairs); break;  /* --pattern: the slots R */
	case 8: snprintf(buf, len, "%llu", (unsigned long long)p->tx_depth); break;
	case 9: snprintf(buf, len, "%llu", (unsigned long long)p->cq_mod); break;
	case 10: snprintf(buf, len, "%d", p->validate * 2 + p->validate_selftest); break;
	case 11: snprintf(buf, len, "%llu", (unsigned long long)p->mtu); break;
	case 12: snprintf(buf, len, "%llu", (unsigned long long)p->qps); break;
	case 13: snprintf(buf, len, "%s", p->cm == VB_CM_TCP ? "tcp" : "rdma_cm"); break;
	case 14: snprintf(buf, len, "%s", pb_buffers_names[p->buffers]); break;
	case 15: snprintf(buf, len, "%s", p->pattern ? p->pat_label : ""); break;
	default: break;
	}
}

static uint64_t vb_fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

void vb_opts_hash(const struct vb_params *p, uint64_t *hash, uint64_t *nibbles)
{
	char item[1024];
	uint64_t h = 0xcbf29ce484222325ull;

	*nibbles = 0;
	for (unsigned i = 0; i < VB_OPT_ITEMS; i++) {
		vb_opt_item(p, i, item, sizeof(item));
		h = vb_fnv1a(vb_fnv1a(h, vb_opt_names[i]), item);
		uint64_t one = vb_fnv1a(0xcbf29ce484222325ull, item);

		*nibbles |= ((one ^ (one >> 4) ^ (one >> 8)) & 0xf) << (4 * i);
	}
	*hash = h;
}

/* Name the options whose nibbles differ, with this side's values. */
static void vb_opts_diff(const struct vb_params *p, uint64_t theirs, char *out, size_t len)
{
	uint64_t hash, mine;
	size_t off = 0;
	char item[256];

	vb_opts_hash(p, &hash, &mine);
	out[0] = 0;
	for (unsigned i = 0; i < VB_OPT_ITEMS && off + 8 < len; i++) {
		if (((mine ^ theirs) >> (4 * i)) & 0xf) {
			vb_opt_item(p, i, item, sizeof(item));
			off += (size_t)snprintf(out + off, len - off, "%s%s (server: %s)", off ? ", " : "",
						vb_opt_names[i], item);
		}
	}
	if (!out[0])
		snprintf(out, len, "options differ (which one is unknown: hash collision of the per-option check)");
}

void vb_hdr_make(const struct vb_worker *w, uint8_t out[VB_HDR_WIRE_BYTES])
{
	struct vb_hdr h = {
		.pair = (uint16_t)w->link, .addr = (uintptr_t)w->buf, .len = (uint32_t)(2 * w->region),
		.rkey = w->mr->rkey, .ctrl_addr = (uintptr_t)w->ctrl, .ctrl_rkey = w->ctrl_mr->rkey,
	};

	vb_opts_hash(w->p, &h.opt_hash, &h.opt_nibbles);
	vb_hdr_encode(&h, out);
}

/*
 * Validate the peer's header.  Returns 0; -EBADMSG (a stranger: not
 * pairbench-verbs, or another protocol version) or -EPROTO (the other side
 * of a run with other options: pair, options, buffer size), with why in
 * w->error.
 */
int vb_hdr_check(struct vb_worker *w, const uint8_t *data, size_t len)
{
	struct vb_hdr h;
	uint64_t hash, nib;
	/* Not pairbench-verbs, or another protocol version: a stranger, not our peer. */
	if (vb_hdr_decode(data, len, &h, w->error, sizeof(w->error)))
		return -EBADMSG;
	if (h.pair != (uint16_t)w->link) {
		snprintf(w->error, sizeof(w->error), "peer is %s %u, this side %s %u (same --port on both sides?)",
			 w->p->pattern ? "flow" : "pair", h.pair, w->p->pattern ? "flow" : "pair", w->link);
		return -EPROTO;
	}
	vb_opts_hash(w->p, &hash, &nib);
	if (h.opt_hash != hash) {
		vb_opts_diff(w->p, h.opt_nibbles, w->error, sizeof(w->error));
		return -EPROTO;
	}
	w->remote.addr = h.addr;
	w->remote.len = h.len;
	w->remote.rkey = h.rkey;
	w->remote.ctrl_addr = h.ctrl_addr;
	w->remote.ctrl_rkey = h.ctrl_rkey;
	if (w->remote.len != 2 * w->region) {
		snprintf(w->error, sizeof(w->error), "peer's buffer is %u B, expected %llu B", w->remote.len,
			 (unsigned long long)(2 * w->region));
		return -EPROTO;
	}
	return 0;
}
