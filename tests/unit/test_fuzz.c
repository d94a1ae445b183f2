/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Deterministic random-input tests (a fuzzer that fits CI: fixed seed, tens of
 * thousands of cases, run under ASan/UBSan in the sanitizer build) of the two
 * parsers that read untrusted input:
 *  - the option parser (pb_opts_parse_msg + pb_common_check): seeded mutations
 *    of valid command lines (byte flips, insertions, deletions, truncation,
 *    swapped and repeated arguments, values up to 10 KB).  Properties: returns
 *    0 or -EINVAL; an error is one non-empty line short enough that its reason
 *    is visible (the value is clipped); an accepted value is within its range.
 *  - the rdma_cm private-data header of pairbench-verbs (vb_hdr_decode):
 *    random bytes and mutations of a valid header, every length 0..80.
 *    Properties: 0, -EBADMSG or -EPROTO; 0 only with the magic, the version
 *    and a whole header, and then decode(encode(h)) == h.
 *  - the QP-info block of --cm tcp (vb_qpinfo_decode): what follows the
 *    header on the socket, from a peer we have not verified beyond it.
 *    Exact cases (each rule of the decoder, so each can be seen to fail) and
 *    mutations of valid blocks of 1..5 QPs at lengths around the exact one.
 *    Properties: 0 or -EBADMSG with a reason; 0 only at the exact length of
 *    its QP count, with 24-bit QP numbers and PSNs, and then the fields and
 *    entries round-trip.
 */
#include "pb_common.h"
#include "pb_log.h"
#include "pb_opts.h"
#include "pb_test.h"
#include "vb_hdr.h"

#include <errno.h>
#include <stdint.h>

#define OPT_CASES 40000
#define HDR_CASES 40000
#define QPI_CASES 40000

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	uint64_t x = rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545f4914f6cdd1dull;
}

static unsigned rnd(unsigned n)
{
	return n ? (unsigned)(rng() % n) : 0;
}

struct params {
	struct pb_common_params c;
	uint64_t depth;
	uint64_t port;
	const char *gid;
	bool flag;
};

static const struct pb_opt table[] = {
	PB_COMMON_OPTS(struct params, c, "write_lat", "8,4K,64K", "1000"),
	{ "tx-depth", 't', PB_OPT_U64, offsetof(struct params, depth), "128", 1, 8192, NULL, "N", "depth" },
	{ "port", 'p', PB_OPT_U64, offsetof(struct params, port), "18515", 1, 65000, NULL, "PORT", "port" },
	{ "gid-index", 'x', PB_OPT_STRING, offsetof(struct params, gid), "auto", 0, 0, NULL, "N", "gid" },
	{ "bidir", 'b', PB_OPT_FLAG, offsetof(struct params, flag), NULL, 0, 0, NULL, NULL, "flag" },
};
#define NOPTS (sizeof(table) / sizeof(table[0]))

static const char *const seeds[][10] = {
	{ "--test", "write_bw", "-s", "1:1M", "-n", "100", NULL },
	{ "--sizes=8,4K,64K", "--pairs", "4", "--pin", "list", "--pin-list", "0,1,2,3", NULL },
	{ "-D", "2.5", "--timeout", "0.5", "-q", "-o", "out.csv", NULL },
	{ "-t16", "-p", "19000", "-x", "3", "-b", "--warmup", "0", NULL },
	{ "--allow-oversubscribe", "--pin", "compact", "--env-json", "e.json", "-s", "64", NULL },
	{ "--iterations=1000000000", "--duration", "86400", "--pairs=256", NULL },
};

#define MAX_ARGS 12
#define ARG_MAX_LEN 10240

/* One mutation of a valid command line into args (owned buffers). */
static int make_args(char args[MAX_ARGS][ARG_MAX_LEN + 1])
{
	const char *const *seed = seeds[rnd(sizeof(seeds) / sizeof(seeds[0]))];
	int n = 0, k;

	while (seed[n] && n < MAX_ARGS) {
		snprintf(args[n], ARG_MAX_LEN + 1, "%s", seed[n]);
		n++;
	}
	for (int m = 1 + (int)rnd(4); m > 0; m--) {
		char *a = args[k = (int)rnd((unsigned)n)];
		size_t len = strlen(a);

		switch (rnd(9)) {
		case 0: /* flip a byte */
			if (len)
				a[rnd((unsigned)len)] = (char)(1 + rnd(255));
			break;
		case 1: /* truncate */
			a[rnd((unsigned)len + 1)] = 0;
			break;
		case 2: /* insert a byte */
			if (len < ARG_MAX_LEN) {
				size_t at = rnd((unsigned)len + 1);

				memmove(a + at + 1, a + at, len - at + 1);
				a[at] = "-=:,.0123456789KMGkx \xff"[rnd(22)];
			}
			break;
		case 3: /* a long value: up to 10 KB of one character */
		{
			size_t l = 1 + rnd(ARG_MAX_LEN);

			memset(a, "9a-,:K"[rnd(6)], l);
			a[l] = 0;
			break;
		}
		case 4: /* drop an argument */
			if (n > 1) {
				memmove(args[k], args[k + 1], (size_t)(n - k - 1) * sizeof(args[0]));
				n--;
			}
			break;
		case 5: /* repeat an argument */
			if (n < MAX_ARGS)
				memcpy(args[n++], a, len + 1);
			break;
		case 6: /* swap two */
		{
			char tmp[64];
			int j = (int)rnd((unsigned)n);

			if (len < sizeof(tmp) && strlen(args[j]) < sizeof(tmp)) {
				memcpy(tmp, a, len + 1);
				memcpy(a, args[j], strlen(args[j]) + 1);
				memcpy(args[j], tmp, len + 1);
			}
			break;
		}
		case 7: /* extreme numbers */
		{
			static const char *const nums[] = { "0", "-1", "18446744073709551616", "1e308", "nan", "inf",
							    "0x10", "4G", "16777216G", "1:0", "0:8", "8:1", ",", "" };

			snprintf(a, ARG_MAX_LEN + 1, "%s", nums[rnd(sizeof(nums) / sizeof(nums[0]))]);
			break;
		}
		default: /* an empty argument or a bare dash */
			snprintf(a, ARG_MAX_LEN + 1, "%s", rnd(2) ? "" : "-");
			break;
		}
	}
	return n;
}

static char fuzz_args[MAX_ARGS][ARG_MAX_LEN + 1];

static void fuzz_opts(void)
{
	unsigned accepted = 0, rejected = 0;

	for (int c = 0; c < OPT_CASES; c++) {
		char *argv[MAX_ARGS + 2], msg[768];
		struct pb_opts_result res;
		struct params p;
		int n = make_args(fuzz_args), rc;

		argv[0] = "prog";
		for (int i = 0; i < n; i++)
			argv[i + 1] = fuzz_args[i];
		argv[n + 1] = NULL;
		msg[0] = 0;
		memset(&p, 0x5a, sizeof(p));
		rc = pb_opts_parse_msg(table, NOPTS, n + 1, argv, &p, &res, msg, sizeof(msg));
		if (!rc)
			rc = pb_common_check(&p.c, msg, sizeof(msg));
		CHECK(rc == 0 || rc == -EINVAL);
		if (rc) {
			rejected++;
			/* One line whose reason fits: values are clipped, the message stays short. */
			CHECK(msg[0] != 0);
			CHECK(strlen(msg) < 400);
			CHECK(strchr(msg, '\n') == NULL);
			if (pb_test_failures) {
				fprintf(stderr, "case %d: message (%zu chars): %.500s\n", c, strlen(msg), msg);
				return;
			}
			continue;
		}
		accepted++;
		CHECK(p.c.iterations >= 1 && p.c.iterations <= 1000000000ull);
		CHECK(p.c.pairs >= 1 && p.c.pairs <= PB_MAX_PAIRS);
		CHECK(p.c.timeout_s >= 0.1 && p.c.timeout_s <= 86400);
		CHECK(p.c.duration_s >= 0 && p.c.duration_s <= 86400);
		CHECK(p.c.sizes.n >= 1 && p.c.sizes.n <= PB_LIST_MAX);
		for (size_t i = 0; i < p.c.sizes.n; i++)
			CHECK(p.c.sizes.v[i] >= 1 && p.c.sizes.v[i] <= (1ull << 30));
		CHECK(p.depth >= 1 && p.depth <= 8192);
		CHECK(p.port >= 1 && p.port <= 65000);
		CHECK(p.c.test && p.gid && *p.c.test && *p.gid);
		CHECK(!p.c.pin_list || p.c.pin == PB_PIN_LIST);
		if (pb_test_failures) {
			fprintf(stderr, "case %d accepted a bad value\n", c);
			return;
		}
	}
	fprintf(stderr, "options: %d cases, %u accepted, %u rejected\n", OPT_CASES, accepted, rejected);
	CHECK(accepted > 100 && rejected > 100); /* the mutations reach both outcomes */
}

static void fuzz_hdr(void)
{
	struct vb_hdr h = {
		.pair = 3, .opt_hash = 0x1122334455667788ull, .opt_nibbles = 0xabcdefull, .addr = 0x7f0012345000ull,
		.len = 131072, .rkey = 0x1234, .ctrl_addr = 0x7f0099990000ull, .ctrl_rkey = 0x5678,
	};
	uint8_t valid[VB_HDR_WIRE_BYTES], buf[80];
	unsigned ok = 0, stranger = 0, version = 0;
	struct vb_hdr d;
	char why[256];

	vb_hdr_encode(&h, valid);
	CHECK_EQ_INT(vb_hdr_decode(valid, sizeof(valid), &d, why, sizeof(why)), 0);
	CHECK(d.pair == h.pair && d.opt_hash == h.opt_hash && d.addr == h.addr && d.len == h.len &&
	      d.rkey == h.rkey && d.ctrl_addr == h.ctrl_addr && d.ctrl_rkey == h.ctrl_rkey &&
	      d.opt_nibbles == h.opt_nibbles && d.version == VB_HDR_VERSION);
	CHECK_EQ_INT(vb_hdr_decode(NULL, 0, &d, why, sizeof(why)), -EBADMSG);   /* rping: no data */
	CHECK_EQ_INT(vb_hdr_decode(valid, 51, &d, why, sizeof(why)), -EBADMSG); /* short */
	for (int c = 0; c < HDR_CASES; c++) {
		size_t len = rnd(sizeof(buf) + 1);
		int rc;

		if (rnd(3)) { /* a valid header, mutated */
			memset(buf, 0, sizeof(buf));
			memcpy(buf, valid, sizeof(valid));
			for (int m = (int)rnd(4); m > 0; m--)
				buf[rnd(sizeof(valid))] ^= (uint8_t)(1u << rnd(8));
		} else {
			for (size_t i = 0; i < sizeof(buf); i++)
				buf[i] = (uint8_t)rng();
		}
		/* the decoder may read only len bytes: give it an exact-size heap copy (ASan checks) */
		uint8_t *copy = malloc(len ? len : 1);

		memcpy(copy, buf, len);
		rc = vb_hdr_decode(len ? copy : NULL, len, &d, why, sizeof(why));
		CHECK(rc == 0 || rc == -EBADMSG || rc == -EPROTO);
		CHECK(why[0] || rc == 0);
		if (rc == 0) {
			uint8_t again[VB_HDR_WIRE_BYTES];

			ok++;
			CHECK(len >= VB_HDR_WIRE_BYTES && vb_hdr_has_magic(copy, len) && d.version == VB_HDR_VERSION);
			vb_hdr_encode(&d, again);
			CHECK(!memcmp(again, copy, VB_HDR_WIRE_BYTES));
		} else {
			rc == -EPROTO ? version++ : stranger++;
		}
		free(copy);
		if (pb_test_failures) {
			fprintf(stderr, "header case %d (len %zu) failed\n", c, len);
			return;
		}
	}
	fprintf(stderr, "header: %d cases, %u accepted, %u strangers, %u other versions\n", HDR_CASES, ok,
		stranger, version);
	CHECK(ok > 100 && stranger > 100 && version > 100);
}

/* A valid QP-info block of n QPs (QP i: number 0x100 + i, PSN 0xabc00 + i) into b; its length. */
static size_t qpinfo_valid(uint8_t *b, uint32_t n, struct vb_qpinfo *qi)
{
	memset(qi, 0, sizeof(*qi));
	qi->nqp = n;
	qi->lid = 0x12;
	qi->link_layer = 2;
	qi->mtu = 3;
	qi->rd_atom = 16;
	qi->gid_index = 1;
	for (int i = 0; i < 16; i++)
		qi->gid[i] = (uint8_t)(0xf0 + i);
	vb_qpinfo_encode(qi, b);
	for (uint32_t i = 0; i < n; i++)
		vb_qpinfo_put_entry(b, i, 0x100 + i, 0xabc00 + i);
	return vb_qpinfo_wire_bytes(n);
}

static void test_qpinfo_rules(void)
{
	uint8_t b[VB_QPINFO_FIXED_BYTES + 8 * 8];
	struct vb_qpinfo qi, d;
	uint32_t qpn, psn;
	char why[256];
	size_t len = qpinfo_valid(b, 4, &qi);

	CHECK_EQ_INT((int)len, VB_QPINFO_FIXED_BYTES + 32);
	CHECK_EQ_INT(vb_qpinfo_decode(b, len, &d, why, sizeof(why)), 0);
	CHECK(d.nqp == 4 && d.lid == 0x12 && d.link_layer == 2 && d.mtu == 3 && d.rd_atom == 16 &&
	      d.gid_index == 1 && !memcmp(d.gid, qi.gid, 16));
	vb_qpinfo_entry(b, 3, &qpn, &psn);
	CHECK(qpn == 0x103 && psn == 0xabc03);
	CHECK_EQ_INT((int)vb_qpinfo_count(b, len), 4);
	CHECK_EQ_INT((int)vb_qpinfo_count(b, 3), 0);
	/* each rule */
	CHECK_EQ_INT(vb_qpinfo_decode(NULL, 0, &d, why, sizeof(why)), -EBADMSG);
	CHECK_EQ_INT(vb_qpinfo_decode(b, VB_QPINFO_FIXED_BYTES - 1, &d, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "too short") != NULL);
	CHECK_EQ_INT(vb_qpinfo_decode(b, len - 1, &d, why, sizeof(why)), -EBADMSG);  /* a table cut short */
	CHECK(strstr(why, "for 4 QPs, expected 60 B") != NULL);
	CHECK_EQ_INT(vb_qpinfo_decode(b, len + 8, &d, why, sizeof(why)), -EBADMSG);  /* one entry too many */
	len = qpinfo_valid(b, 4, &qi);
	b[3] = 0;  /* count 0 */
	CHECK_EQ_INT(vb_qpinfo_decode(b, len, &d, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "for 0 QPs") != NULL);
	qi.nqp = VB_MAX_QPS + 1;  /* a count beyond the range: never allocate what a peer asks */
	vb_qpinfo_encode(&qi, b);
	CHECK_EQ_INT(vb_qpinfo_decode(b, len, &d, why, sizeof(why)), -EBADMSG);
	len = qpinfo_valid(b, 4, &qi);
	b[6] = 3;  /* link layer */
	CHECK_EQ_INT(vb_qpinfo_decode(b, len, &d, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "link layer") != NULL);
	len = qpinfo_valid(b, 4, &qi);
	b[7] = 6;  /* MTU code */
	CHECK_EQ_INT(vb_qpinfo_decode(b, len, &d, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "MTU") != NULL);
	len = qpinfo_valid(b, 4, &qi);
	vb_qpinfo_put_entry(b, 2, 0x1000000, 5);  /* QP number of 25 bits */
	CHECK_EQ_INT(vb_qpinfo_decode(b, len, &d, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "entry 2") != NULL);
	len = qpinfo_valid(b, 4, &qi);
	vb_qpinfo_put_entry(b, 0, 5, 0x1000000);  /* PSN of 25 bits */
	CHECK_EQ_INT(vb_qpinfo_decode(b, len, &d, why, sizeof(why)), -EBADMSG);
}

static void fuzz_qpinfo(void)
{
	uint8_t valid[VB_QPINFO_FIXED_BYTES + 8 * 5], buf[sizeof(valid) + 16];
	unsigned ok = 0, bad = 0;
	struct vb_qpinfo qi, d;
	char why[256];

	test_qpinfo_rules();
	for (int c = 0; c < QPI_CASES; c++) {
		uint32_t n = 1 + (uint32_t)rnd(5);
		size_t vlen = qpinfo_valid(valid, n, &qi), len;
		int rc;

		memset(buf, 0, sizeof(buf));
		memcpy(buf, valid, vlen);
		for (int m = (int)rnd(3); m > 0; m--)
			buf[rnd(vlen)] ^= (uint8_t)(1u << rnd(8));
		len = rnd(4) ? vlen : rnd(sizeof(buf) + 1);
		uint8_t *copy = malloc(len ? len : 1);  /* exact size: ASan sees any read beyond len */

		memcpy(copy, buf, len);
		why[0] = 0;
		rc = vb_qpinfo_decode(len ? copy : NULL, len, &d, why, sizeof(why));
		CHECK(rc == 0 || rc == -EBADMSG);
		CHECK(why[0] || rc == 0);
		if (rc == 0) {
			uint8_t again[sizeof(buf)];

			ok++;
			CHECK(len == vb_qpinfo_wire_bytes(d.nqp) && d.nqp >= 1 && d.nqp <= VB_MAX_QPS);
			CHECK((d.link_layer == 1 || d.link_layer == 2) && d.mtu >= 1 && d.mtu <= 5);
			vb_qpinfo_encode(&d, again);
			for (uint32_t i = 0; i < d.nqp; i++) {
				uint32_t qpn, psn;

				vb_qpinfo_entry(copy, i, &qpn, &psn);
				CHECK(qpn <= 0xffffff && psn <= 0xffffff);
				vb_qpinfo_put_entry(again, i, qpn, psn);
			}
			/* only the reserved bytes 10..11 may differ */
			CHECK(!memcmp(again, copy, 10) && !memcmp(again + 12, copy + 12, len - 12));
		} else {
			bad++;
		}
		free(copy);
		if (pb_test_failures) {
			fprintf(stderr, "QP-info case %d (len %zu) failed\n", c, len);
			return;
		}
	}
	fprintf(stderr, "QP info: %d cases, %u accepted, %u rejected\n", QPI_CASES, ok, bad);
	CHECK(ok > 100 && bad > 100);
}

int main(void)
{
	fuzz_opts();
	fuzz_hdr();
	fuzz_qpinfo();
	TEST_DONE();
}
