/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small files of sysfs and procfs, for the library's parts (not exported). */
#ifndef EDGEQ_CORE_READFILE_H
#define EDGEQ_CORE_READFILE_H

#include <stddef.h>

/* Read @path (at most @len - 1 bytes) into @buf, trailing whitespace
 * trimmed. Returns 0 or -errno. */
int eq_read_trimmed(const char *path, char *buf, size_t len);

#endif
