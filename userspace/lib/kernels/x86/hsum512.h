/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * AVX-512 helpers shared by the AVX-512 files (included after their
 * target pragma): exact int32 sums, prefetch spreading.
 */
#ifndef EDGEQ_KERNELS_X86_HSUM512_H
#define EDGEQ_KERNELS_X86_HSUM512_H

#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sums within each 128-bit chunk: chunk c of the result is
 * (a_c, b_c, c_c, d_c), each the sum of that chunk's 4 lanes. */
static inline __m512i hsum_4x4(__m512i a, __m512i b, __m512i c, __m512i d)
{
	__m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b),
				      _mm512_unpackhi_epi32(a, b));
	__m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d),
				      _mm512_unpackhi_epi32(c, d));

	return _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd),
				_mm512_unpackhi_epi64(ab, cd));
}

/* Cache lines of the next row group (8 rows of @rs bytes) to prefetch
 * per block pair of a group with @nb blocks, so the prefetches spread
 * over the whole group; 0 when not prefetching. */
static inline int prefetch_lines(size_t rs, int64_t nb, bool prefetch)
{
	if (!prefetch)
		return 0;
	return (int)((8 * rs / 64 + nb / 2) / (nb / 2 ? nb / 2 : 1));
}

#endif /* EDGEQ_KERNELS_X86_HSUM512_H */
