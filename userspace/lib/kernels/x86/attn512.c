// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * AVX-512 attention over many keys at once (F16 KV cache), for the prompt,
 * where one query meets hundreds of keys. Each key's score is computed with
 * exactly dot_f16's canonical steps (32 lanes, element j in lane j % 32,
 * fma from +0, the fold of Documentation/kernels.rst), only eight keys'
 * final reduction trees run side by side in one vector; the weighted sum of
 * values keeps the output row in registers and applies the keys in order,
 * one fma per element and key, as axpy_f16 does. So the results are the
 * per-key ops' bit for bit (tests/unit/test_kernels.c checks it).
 */
#pragma GCC target("avx512f,avx512vl,avx512dq")
#include <immintrin.h>
#include <stdint.h>

#include "kernels/kernels.h"

/* Lanes 0-7 of one key's fold: (l[k] + l[k+8]) + (l[k+16] + l[k+24]). */
static inline __m256 key_fold(int64_t hd, const uint16_t *k, const float *q)
{
	__m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();

	for (int64_t j = 0; j < hd; j += 32) {
		a0 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256(
					     (const __m256i *)(k + j))),
				     _mm512_loadu_ps(q + j), a0);
		a1 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256(
					     (const __m256i *)(k + j + 16))),
				     _mm512_loadu_ps(q + j + 16), a1);
	}
	return _mm256_add_ps(_mm256_add_ps(_mm512_castps512_ps256(a0),
					   _mm512_extractf32x8_ps(a0, 1)),
			     _mm256_add_ps(_mm512_castps512_ps256(a1),
					   _mm512_extractf32x8_ps(a1, 1)));
}

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

void edgeq_attn_scores_f16_avx512(int64_t hd, int64_t nk, const uint16_t *k,
				  size_t ks, const float *q, float scale,
				  float *s)
{
	int64_t t = 0;

	if (hd % 32) {
		for (; t < nk; t++)
			s[t] = edgeq_kernel_ops_avx2.dot_f16(hd, k + t * ks,
							     q) *
			       scale;
		return;
	}
	for (; t + 8 <= nk; t += 8) {
		__m256 v[8];

		for (int i = 0; i < 8; i++)
			v[i] = key_fold(hd, k + (t + i) * ks, q);
		_mm256_storeu_ps(s + t, _mm256_mul_ps(reduce8x8(v),
						      _mm256_set1_ps(scale)));
	}
	for (; t < nk; t++) {
		float l[8];

		_mm256_storeu_ps(l, key_fold(hd, k + t * ks, q));
		s[t] = edgeq_reduce8(l) * scale;
	}
}

void edgeq_attn_av_f16_avx512(int64_t hd, int64_t nk, const float *a,
			      const uint16_t *v, size_t vs, float *out)
{
	int64_t j = 0;

	/* 64 output elements in four registers across all keys */
	for (; j + 64 <= hd; j += 64) {
		__m512 o0 = _mm512_setzero_ps(), o1 = _mm512_setzero_ps();
		__m512 o2 = _mm512_setzero_ps(), o3 = _mm512_setzero_ps();

		for (int64_t t = 0; t < nk; t++) {
			const uint16_t *r = v + t * vs + j;
			__m512 w = _mm512_set1_ps(a[t]);

			o0 = _mm512_fmadd_ps(w,
					     _mm512_cvtph_ps(_mm256_loadu_si256(
						     (const __m256i *)r)),
					     o0);
			o1 = _mm512_fmadd_ps(
				w,
				_mm512_cvtph_ps(_mm256_loadu_si256(
					(const __m256i *)(r + 16))),
				o1);
			o2 = _mm512_fmadd_ps(
				w,
				_mm512_cvtph_ps(_mm256_loadu_si256(
					(const __m256i *)(r + 32))),
				o2);
			o3 = _mm512_fmadd_ps(
				w,
				_mm512_cvtph_ps(_mm256_loadu_si256(
					(const __m256i *)(r + 48))),
				o3);
		}
		_mm512_storeu_ps(out + j, o0);
		_mm512_storeu_ps(out + j + 16, o1);
		_mm512_storeu_ps(out + j + 32, o2);
		_mm512_storeu_ps(out + j + 48, o3);
	}
	if (j < hd) {
		for (int64_t i = j; i < hd; i++)
			out[i] = 0;
		for (int64_t t = 0; t < nk; t++)
			edgeq_kernel_ops_avx2.axpy_f16(hd - j, a[t],
						       v + t * vs + j, out + j);
	}
}
