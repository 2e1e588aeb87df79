/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared inside the manifest part: hashing and the store's manifest reads. */
#ifndef EDGEQ_MANIFEST_INT_H
#define EDGEQ_MANIFEST_INT_H

#include <edgeq/edgeq.h>

/* SHA-256 of a file as 64 hex digits. */
int manifest_sha256_file(const char *path, char hex[65],
			 struct edgeq_error *err);

#endif
