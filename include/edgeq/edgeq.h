/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libedgeq: the public interface of edgeq's userspace engine.
 *
 * Conventions: functions that do something return 0 or a negative errno;
 * predicates return bool. The library never prints and never exits. Where a
 * caller needs to say more than an errno, functions take a struct edgeq_error
 * that receives a specific message (the field, the offset, what to do).
 * Each part of the engine has its own header in include/edgeq/; this one
 * holds what all of them share.
 */
#ifndef EDGEQ_EDGEQ_H
#define EDGEQ_EDGEQ_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A specific error message for the caller to print. code is a positive errno. */
struct edgeq_error {
	int code;
	char msg[512];
};

/* The library's version string ("0.1.0") and the commit it was built from. */
const char *edgeq_version(void);
const char *edgeq_commit(void);

/*
 * Record an error: fills @err (which may be NULL) with the formatted message
 * and @code (a positive errno), and returns -@code so callers can write
 * `return edgeq_error_set(err, EINVAL, "...")`.
 */
int edgeq_error_set(struct edgeq_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int edgeq_error_vset(struct edgeq_error *err, int code, const char *fmt,
		     va_list ap);
/* Clear @err (may be NULL). */
void edgeq_error_clear(struct edgeq_error *err);

/* Monotonic clock in nanoseconds. */
uint64_t edgeq_now_ns(void);

/*
 * Parse a size such as "512", "64K", "1.5G", "2GiB" into bytes. When @total is
 * non-zero, "NN%" is accepted and means that share of @total.
 * Returns 0 or -EINVAL / -ERANGE.
 */
int edgeq_parse_size(const char *s, uint64_t total, uint64_t *out);

/* Peak resident set size of this process in bytes (VmHWM), 0 if unknown. */
uint64_t edgeq_peak_rss(void);

#ifdef __cplusplus
}
#endif
#endif /* EDGEQ_EDGEQ_H */
