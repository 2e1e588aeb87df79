/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Eight keys' score folds reduced at once (AVX2 instructions), shared by
 * the AVX2 and AVX-512 attention forms (attn256.c, attn512.c).
 */
#ifndef EDGEQ_KERNELS_X86_REDUCE8X8_H
#define EDGEQ_KERNELS_X86_REDUCE8X8_H

#include <immintrin.h>

/*
 * edgeq_reduce8 of eight keys' folds at once: lane pairs (l, l+4), then
 * (t0 + t2) and (t1 + t3), then their sum; the result's lanes hold keys
 * 0 2 4 6 1 3 5 7, put back in order by the final permute.
 */
static inline __m256 reduce8x8(const __m256 v[8])
{
	__m256 u[4], w[2], r;

	for (int i = 0; i < 4; i++)
		u[i] = _mm256_add_ps(
			_mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x20),
			_mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x31));
	/* u[i] = [t0 t1 t2 t3 of key 2i | of key 2i+1] */
	for (int i = 0; i < 2; i++)
		w[i] = _mm256_add_ps(
			_mm256_shuffle_ps(u[2 * i], u[2 * i + 1],
					  _MM_SHUFFLE(1, 0, 1, 0)),
			_mm256_shuffle_ps(u[2 * i], u[2 * i + 1],
					  _MM_SHUFFLE(3, 2, 3, 2)));
	/* w[i] = [t0+t2 t1+t3 of keys 4i, 4i+2 | of keys 4i+1, 4i+3] */
	r = _mm256_add_ps(
		_mm256_shuffle_ps(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
		_mm256_shuffle_ps(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1)));
	/* r = keys 0 2 4 6 | 1 3 5 7 */
	return _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6,
							     3, 7));
}

#endif /* EDGEQ_KERNELS_X86_REDUCE8X8_H */
