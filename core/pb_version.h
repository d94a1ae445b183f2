/* SPDX-License-Identifier: BSD-3-Clause */
/* Version and git commit of the build, recorded in every environment record. */
#ifndef PB_VERSION_H
#define PB_VERSION_H

/* e.g. "0.1.0" */
const char *pb_version(void);
/* Short commit of the tree the binary was built from, "-dirty" when it had
 * uncommitted changes, "unknown" outside git.  Taken at build time. */
const char *pb_git_commit(void);

#endif
