/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Directories for the stores (bundles, models): not exported. */
#ifndef EDGEQ_CORE_FSUTIL_H
#define EDGEQ_CORE_FSUTIL_H

/* fsync(2) the directory @dir (a rename in it becomes durable). 0/-errno. */
int eq_fsync_dir(const char *dir);
/* mkdir -p @path, mode 0755. 0 or -errno (-ENAMETOOLONG past PATH_MAX). */
int eq_mkdir_p(const char *path);

#endif
