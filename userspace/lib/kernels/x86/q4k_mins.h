/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The min term of a Q4_K super-block against one Q8_K activation block,
 * for the AVX2 table's dot and prefill tile (the AVX-512 kernels compute it
 * for 16 rows at once with vpdpwssd): sum over the 8 sub-blocks j of
 * mins[j] * (bsums[2j] + bsums[2j + 1]). Exact integer arithmetic, so every
 * table gets the same value.
 */
#ifndef EDGEQ_KERNELS_X86_Q4K_MINS_H
#define EDGEQ_KERNELS_X86_Q4K_MINS_H

#include <immintrin.h>
#include <stdint.h>

static inline int32_t q4k_mins_dot(const int16_t *bsums, __m128i mins16)
{
	__m128i bs =
		_mm_hadd_epi16(_mm_loadu_si128((const __m128i *)bsums),
			       _mm_loadu_si128((const __m128i *)(bsums + 8)));

	bs = _mm_madd_epi16(bs, mins16);
	bs = _mm_add_epi32(bs, _mm_shuffle_epi32(bs, _MM_SHUFFLE(1, 0, 3, 2)));
	bs = _mm_add_epi32(bs, _mm_shuffle_epi32(bs, _MM_SHUFFLE(2, 3, 0, 1)));
	return _mm_cvtsi128_si32(bs);
}

#endif /* EDGEQ_KERNELS_X86_Q4K_MINS_H */
