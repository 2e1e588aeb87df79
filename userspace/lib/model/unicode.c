// SPDX-License-Identifier: LGPL-2.1-or-later
/* Look-ups in the generated Unicode tables (unicode_table.c). */
#include "model/unicode.h"

uint8_t ucd_flags(uint32_t cp)
{
	unsigned int lo = 0, hi = ucd_n_ranges;

	if (cp < 0x80)
		return ucd_ascii[cp];
	if (cp >= 0x110000)
		return 0;
	/* the last run whose first code point is <= cp */
	while (hi - lo > 1) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (ucd_ranges[mid] >> 8 <= cp)
			lo = mid;
		else
			hi = mid;
	}
	return (uint8_t)ucd_ranges[lo];
}

uint32_t ucd_tolower(uint32_t cp)
{
	unsigned int lo = 0, hi = ucd_n_lower;

	if (cp < 0x80)
		return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (ucd_lower[mid][0] == cp)
			return ucd_lower[mid][1];
		if (ucd_lower[mid][0] < cp)
			lo = mid + 1;
		else
			hi = mid;
	}
	return cp;
}
