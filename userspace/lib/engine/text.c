// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Text release for streamed generations: stop strings may span tokens and a
 * token may end inside a UTF-8 sequence, so the tail that could still turn
 * into either is held back until the next token decides it.
 */
#include <string.h>

#include "engine/text.h"

int eng_utf8_seq(const unsigned char *s, size_t n)
{
	unsigned int c = s[0], need, i, cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		need = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 4, cp = c & 0x07;
	else
		return -1;
	for (i = 1; i < need; i++) {
		if (i >= n)
			return 0;
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((need == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (need == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return -1;
	return (int)need;
}

size_t eng_utf8_complete(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	int k;

	while (i < n) {
		k = eng_utf8_seq(u + i, n - i);
		if (k == 0)
			break; /* a partial sequence at the end: hold it */
		i += k > 0 ? (size_t)k : 1;
	}
	return i;
}

/* Longest suffix of @p (len @n) that is a proper prefix of a stop string. */
static size_t stop_holdback(const char *p, size_t n, const char *const *stops,
			    int n_stops)
{
	size_t best = 0, k, sl;
	int i;

	for (i = 0; i < n_stops; i++) {
		sl = strlen(stops[i]);
		for (k = sl - 1 < n ? sl - 1 : n; k > best; k--)
			if (!memcmp(p + n - k, stops[i], k)) {
				best = k;
				break;
			}
	}
	return best;
}

size_t eng_text_release(const char *p, size_t n, const char *const *stops,
			int n_stops, bool final, bool *stopped)
{
	size_t cut = n;
	const char *hit;
	int i;

	*stopped = false;
	if (!n) /* nothing yet (p may be NULL: no buffer) */
		return 0;
	for (i = 0; i < n_stops; i++) {
		hit = memmem(p, n, stops[i], strlen(stops[i]));
		if (hit && (size_t)(hit - p) < cut) {
			cut = (size_t)(hit - p);
			*stopped = true;
		}
	}
	if (*stopped || final)
		return cut;
	cut = n - stop_holdback(p, n, stops, n_stops);
	return eng_utf8_complete(p, cut);
}
