/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Exact int32 horizontal sums shared by the AVX2 and AVX-512 tables (wrapping
 * adds, so any grouping gives the same value).
 */
#ifndef EDGEQ_KERNELS_X86_HSUM_H
#define EDGEQ_KERNELS_X86_HSUM_H

#include <immintrin.h>
#include <stdint.h>

static inline int32_t hsum_i32(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v),
				  _mm256_extracti128_si256(v, 1));

	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
	return _mm_cvtsi128_si32(s);
}

/* Lane j = the sum of the 8 int32 lanes of v[j] (exact, wrapping adds). */
static inline __m256i hsum_8x8(const __m256i v[8])
{
	__m256i t0 = _mm256_hadd_epi32(v[0], v[1]);
	__m256i t1 = _mm256_hadd_epi32(v[2], v[3]);
	__m256i t2 = _mm256_hadd_epi32(v[4], v[5]);
	__m256i t3 = _mm256_hadd_epi32(v[6], v[7]);
	__m256i u0 = _mm256_hadd_epi32(t0, t1);
	__m256i u1 = _mm256_hadd_epi32(t2, t3);

	return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20),
				_mm256_permute2x128_si256(u0, u1, 0x31));
}

#endif /* EDGEQ_KERNELS_X86_HSUM_H */
