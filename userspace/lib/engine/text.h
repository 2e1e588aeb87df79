/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Generated text on its way out: release only bytes that are whole UTF-8
 * and cannot be the start of a stop string; cut at the first stop string.
 */
#ifndef EDGEQ_ENGINE_TEXT_H
#define EDGEQ_ENGINE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at @s (at most @n bytes): > 0 valid,
 * 0 truncated (more bytes could complete it), -1 invalid. */
int eng_utf8_seq(const unsigned char *s, size_t n);
/* Bytes of @s (len @n) that form complete sequences from the start: a
 * trailing partial sequence is held back (invalid bytes are not). */
size_t eng_utf8_complete(const char *s, size_t n);

/*
 * How much of the pending text @p (len @n) may be released. When a stop
 * string occurs, returns the offset of the first one and sets *@stopped.
 * Otherwise, unless @final, holds back the longest suffix that is a proper
 * prefix of a stop string and a trailing partial UTF-8 sequence.
 */
size_t eng_text_release(const char *p, size_t n, const char *const *stops,
			int n_stops, bool final, bool *stopped);

#endif
