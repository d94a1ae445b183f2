/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine ops (struct pb_test_ops) of each operation file, for the test
 * table in vb_main.c.
 */
#ifndef VB_OPS_H
#define VB_OPS_H

#include "pb_engine.h"

/* vb_bw.c: the windowed stream of the *_bw tests (the pre-built WR carries the opcode). */
extern const struct pb_test_ops vb_bw_client, vb_bw_server;
/* Engine ops of a side with nothing to do but wait for the peer's end of stream. */
extern const struct pb_test_ops vb_passive_ops;

/* Per-operation files: the ops of each side of their latency test. */
extern const struct pb_test_ops vb_write_lat_client, vb_write_lat_server;
extern const struct pb_test_ops vb_read_lat_client;
extern const struct pb_test_ops vb_send_lat_client, vb_send_lat_server;
extern const struct pb_test_ops vb_atomic_client;   /* the variant picks fadd or cswap */

#endif
