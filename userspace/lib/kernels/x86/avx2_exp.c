// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The AVX2 table's softmax and SiLU: edgeq_expf's operations on 8 lanes
 * (the range reduction, the Horner fmas, the two exact powers of two and
 * the out-of-range lanes), so every value is the scalar reference's bit for
 * bit, as x86/attn512.c does on 16. Without them the table fell back to
 * edgeq_softmax_ref and edgeq_silu_mul_ref, whose expf (compiled for
 * baseline x86-64) calls libm's fmaf nine times an element: ~23 ns per
 * softmax element where the AVX-512 table takes 0.4.
 */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>

#include "kernels/kernels.h"
#include "kernels/x86/avx2_exp.h"

/* edgeq_expf on 8 lanes: the same operations, lane by lane. */
static inline __m256 expf8(__m256 x)
{
	__m256 z = _mm256_mul_ps(x, _mm256_set1_ps(EDGEQ_EXPF_LOG2E));
	__m256 sh = _mm256_set1_ps(EDGEQ_EXPF_SHIFT);
	__m256 n = _mm256_sub_ps(_mm256_add_ps(z, sh), sh);
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(EDGEQ_EXPF_LN2_HI), x);
	__m256 p = _mm256_set1_ps(EDGEQ_EXPF_C7);
	__m256 lo, hi, nan, out;
	__m256i ni, n1, b1, b2;

	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(EDGEQ_EXPF_LN2_LO), r);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EDGEQ_EXPF_C6));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EDGEQ_EXPF_C5));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EDGEQ_EXPF_C4));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EDGEQ_EXPF_C3));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EDGEQ_EXPF_C2));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	/* out-of-range lanes: n zeroed (any value would do), the result
	 * replaced below */
	lo = _mm256_cmp_ps(x, _mm256_set1_ps(EDGEQ_EXPF_LO), _CMP_LT_OQ);
	hi = _mm256_cmp_ps(x, _mm256_set1_ps(EDGEQ_EXPF_HI), _CMP_GT_OQ);
	nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
	ni = _mm256_cvtps_epi32(
		_mm256_andnot_ps(_mm256_or_ps(_mm256_or_ps(lo, hi), nan), n));
	n1 = _mm256_srai_epi32(ni, 1);
	b1 = _mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)),
			       23);
	b2 = _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, n1),
						_mm256_set1_epi32(127)),
			       23);
	out = _mm256_mul_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(b1)),
			    _mm256_castsi256_ps(b2));
	out = _mm256_blendv_ps(out, _mm256_setzero_ps(), lo);
	out = _mm256_blendv_ps(out, _mm256_set1_ps(INFINITY), hi);
	return _mm256_blendv_ps(out, x, nan);
}

/* lanes < k of 8 set (k in 0..8) */
static inline __m256i mask8(int64_t k)
{
	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)k),
				  _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* edgeq_silu_mul_ref or, GELU, edgeq_gelu_mul_ref on 8 lanes (the tail
 * masked; attn512.c's act_mul's steps) */
static inline __attribute__((always_inline)) void
act_mul(const bool GELU, float *o, const float *x, int64_t n)
{
	const __m256 one = _mm256_set1_ps(1.0f);

	for (int64_t t = 0; t < n; t += 8) {
		__m256i k = mask8(n - t);
		__m256 g = _mm256_maskload_ps(o + t, k), z;

		if (GELU) {
			__m256 c = _mm256_mul_ps(
				_mm256_mul_ps(
					_mm256_mul_ps(_mm256_set1_ps(0.044715f),
						      g),
					g),
				g);
			__m256 u = _mm256_mul_ps(_mm256_set1_ps(0.7978845608f),
						 _mm256_add_ps(g, c));

			z = _mm256_mul_ps(_mm256_set1_ps(-2.0f), u);
		} else {
			z = _mm256_sub_ps(_mm256_setzero_ps(), g);
		}
		g = _mm256_div_ps(g, _mm256_add_ps(one, expf8(z)));
		_mm256_maskstore_ps(
			o + t, k,
			_mm256_mul_ps(g, _mm256_maskload_ps(x + t, k)));
	}
}

void edgeq_silu_mul_avx2(float *o, const float *x, int64_t n)
{
	act_mul(false, o, x, n);
}

void edgeq_gelu_mul_avx2(float *o, const float *x, int64_t n)
{
	act_mul(true, o, x, n);
}

/*
 * edgeq_softmax_ref's order: the max (a quiet NaN skipped as its
 * x[t] > mx skips it), e_t = expf(x_t - max), their sum in 16 lanes
 * (t % 16: two vectors), (l[k] + l[k+8]) then edgeq_reduce8, x_t = e_t *
 * (1 / sum).
 */
void edgeq_softmax_avx2(float *x, int64_t n)
{
	__m256 m = _mm256_set1_ps(-INFINITY), acc[2], inv;
	float mx, l[8];
	int64_t t;

	/* max_ps(x, m) = x > m ? x : m, the reference's comparison */
	for (t = 0; t + 8 <= n; t += 8)
		m = _mm256_max_ps(_mm256_loadu_ps(x + t), m);
	_mm256_storeu_ps(l, m);
	mx = l[0];
	for (int k = 1; k < 8; k++)
		if (l[k] > mx)
			mx = l[k];
	for (; t < n; t++)
		if (x[t] > mx)
			mx = x[t];
	m = _mm256_set1_ps(mx);
	acc[0] = acc[1] = _mm256_setzero_ps();
	for (t = 0; t < n; t += 8) {
		__m256i k = mask8(n - t);
		__m256 e =
			expf8(_mm256_sub_ps(_mm256_maskload_ps(x + t, k), m));

		/* lanes past the end add +0 to sums that are never -0 */
		e = _mm256_and_ps(e, _mm256_castsi256_ps(k));
		_mm256_maskstore_ps(x + t, k, e);
		acc[(t >> 3) & 1] = _mm256_add_ps(acc[(t >> 3) & 1], e);
	}
	_mm256_storeu_ps(l, _mm256_add_ps(acc[0], acc[1]));
	inv = _mm256_set1_ps(1.0f / edgeq_reduce8(l));
	for (t = 0; t + 8 <= n; t += 8)
		_mm256_storeu_ps(x + t,
				 _mm256_mul_ps(_mm256_loadu_ps(x + t), inv));
	for (; t < n; t++)
		x[t] *= _mm256_cvtss_f32(inv);
}
