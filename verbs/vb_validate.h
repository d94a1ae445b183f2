/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --validate / --validate-selftest: the non-timed data check (and its
 * corruption self-test), run instead of measuring.
 */
#ifndef VB_VALIDATE_H
#define VB_VALIDATE_H

#include "vb.h"

/* 0 or -errno (w->error set). */
int vb_validate_run(struct vb_worker *w, bool selftest);
void vb_pattern_fill(uint8_t *b, uint64_t len, unsigned pair, uint64_t iter);
int64_t vb_pattern_check(const uint8_t *b, uint64_t len, unsigned pair, uint64_t iter);

#endif
