/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A worker's verbs resources, what both connection methods build on: its
 * PD, one CQ shared by its --qps QPs, the data and ctrl MRs, the QPs and
 * their INIT/RTR/RTS transitions from a template (struct vb_qp_tmpl); the
 * peer's address; the launcher's check of --qps against the device.
 */
#ifndef VB_RES_H
#define VB_RES_H

#include "vb.h"

struct sockaddr_in;

/* Launcher: --qps against the device's limits (max_qp, max_cqe). 0 or -errno after one error line. */
int vb_qps_check(const struct vb_params *p, const struct vb_probe *pr, unsigned members);
/* Context, PD, shared CQ, MRs and --qps QPs on verbs. 0 or -errno (w->error set). */
int vb_res_create(struct vb_worker *w, struct ibv_context *verbs);
/* Destroy what vb_res_create() made (and a context opened by us, w->verbs_own); any part may be missing. */
void vb_res_destroy(struct vb_worker *w);
/* Resolve host (NULL or "": any) and port into *sa. 0 or -EINVAL (w->error set). */
int vb_sockaddr(struct vb_worker *w, const char *host, unsigned port, struct sockaddr_in *sa);
/* RDMA read/atomic depth this side offers (device limits, at most 16). */
int vb_rd_atom(const struct vb_worker *w);
/* A random first PSN (24 bits). */
uint32_t vb_psn_random(void);
/* Move QP i RESET -> INIT -> RTR -> RTS with w->tmpl and the peer's QP number / PSN. 0 or -errno. */
int vb_qp_bringup(struct vb_worker *w, unsigned i, uint32_t dest_qpn, uint32_t rq_psn, uint32_t sq_psn);

#endif
