// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Activation quantization (Q8_0, Q8_K) with AVX-512, bit-identical to
 * edgeq_quantize_act_ref like x86/quant_act.c, but with the per-block
 * scalar steps done 16 blocks at a time. The AVX2 form spends most of a
 * Q8_0 block's ~60 cycles on its scalar tail (a horizontal max, two
 * divisions, the fp16 rounding, a compare), one block after another; here
 * 16 blocks' maxima go into one vector, and one vdivps, one vcvtps2ph and
 * one more vdivps make their scales. Q8_K keeps one super-block at a time
 * but each 16-element vector is one of its bsums groups.
 *
 * Why the bits are the reference's: max of |x| is exact in any order; d =
 * amax / 127 and 1 / d are single correctly rounded divisions (vdivps as
 * divss); vcvtps2ph with round-to-nearest-even is edgeq_fp32_to_fp16() for
 * every finite non-negative input, subnormal halves included (it ignores
 * MXCSR.FTZ; DAZ is never set here); roundf is done as in quant_act.c.
 * Blocks holding a NaN or an infinity go to the reference, which writes
 * them and reports -EDOM.
 */
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,f16c")

#include <immintrin.h>
#include <math.h>

#include "kernels/kernels.h"

#define AI __attribute__((always_inline)) static inline

/* |v| < inf in every lane: finite (NaN compares false). */
AI __mmask16 finite16(__m512 a)
{
	return _mm512_cmp_ps_mask(a, _mm512_set1_ps(INFINITY), _CMP_LT_OQ);
}

AI __m512 abs16(__m512 v)
{
	return _mm512_castsi512_ps(_mm512_and_si512(
		_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff)));
}

/* roundf: truncate, then one step away from zero when the dropped part
 * (exact) is at least one half. */
AI __m512i round_away16(__m512 v)
{
	const __m512 sgn = _mm512_set1_ps(-0.0f);
	__m512 t =
		_mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
	__mmask16 up = _mm512_cmp_ps_mask(abs16(_mm512_sub_ps(v, t)),
					  _mm512_set1_ps(0.5f), _CMP_GE_OQ);
	__m512 one = _mm512_or_ps(_mm512_set1_ps(1.0f), _mm512_and_ps(v, sgn));

	return _mm512_cvttps_epi32(_mm512_mask_add_ps(t, up, t, one));
}

/* Blocks [0, 16) of x as Q8_0; returns a mask of the non-finite ones
 * (written by the caller with the reference). */
static __mmask16 q8_0_x16(const float *x, struct edgeq_block_q8_0 *y)
{
	_Alignas(64) float am[16];
	_Alignas(64) uint16_t h[16];
	_Alignas(64) float id[16];
	__mmask16 bad = 0;
	__m512 d, inv;

	for (int k = 0; k < 16; k++) {
		__m512 a = abs16(_mm512_loadu_ps(x + 32 * k));
		__m512 b = abs16(_mm512_loadu_ps(x + 32 * k + 16));

		if ((finite16(a) & finite16(b)) != 0xffff)
			bad |= (__mmask16)(1u << k);
		am[k] = _mm512_reduce_max_ps(_mm512_max_ps(a, b));
	}
	d = _mm512_div_ps(_mm512_load_ps(am), _mm512_set1_ps(127.0f));
	_mm256_store_si256((__m256i *)h,
			   _mm512_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT |
						      _MM_FROUND_NO_EXC));
	/* a scale that is 0 as fp16 zeroes the block: 1/d may be infinite */
	inv = _mm512_maskz_div_ps(
		_mm512_cmpneq_epi32_mask(
			_mm512_cvtepu16_epi32(_mm256_load_si256((__m256i *)h)),
			_mm512_setzero_si512()),
		_mm512_set1_ps(1.0f), d);
	_mm512_store_ps(id, inv);
	for (int k = 0; k < 16; k++) {
		__m512 s = _mm512_set1_ps(id[k]);
		__m512i q0 = round_away16(
			_mm512_mul_ps(_mm512_loadu_ps(x + 32 * k), s));
		__m512i q1 = round_away16(
			_mm512_mul_ps(_mm512_loadu_ps(x + 32 * k + 16), s));

		y[k].d = h[k];
		_mm_storeu_si128((__m128i *)y[k].qs, _mm512_cvtsepi32_epi8(q0));
		_mm_storeu_si128((__m128i *)(y[k].qs + 16),
				 _mm512_cvtsepi32_epi8(q1));
	}
	return bad;
}

static int q8_0(const float *x, struct edgeq_block_q8_0 *y, int64_t n)
{
	int64_t nb = n / EDGEQ_QK8_0, i = 0;
	int ret = 0;

	for (; i + 16 <= nb; i += 16) {
		__mmask16 bad = q8_0_x16(x + i * 32, y + i);

		for (int k = 0; bad; k++, bad >>= 1)
			if (bad & 1)
				ret = edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_0,
							     x + (i + k) * 32,
							     &y[i + k], 32);
	}
	if (i < nb) {
		int r = edgeq_quantize_act_avx2(EDGEQ_TYPE_Q8_0, x + i * 32,
						y + i, (nb - i) * 32);

		if (r)
			ret = r;
	}
	return ret;
}

static int q8_K(const float *x, struct edgeq_block_q8_K *y, int64_t n)
{
	const __m512 lim = _mm512_set1_ps(4194303.f);
	int ret = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++, x += EDGEQ_QK_K) {
		__m512 m = _mm512_setzero_ps(), sc, amv;
		__mmask16 fin = 0xffff;
		float amax, max = 0, iscale;

		for (int j = 0; j < EDGEQ_QK_K; j += 16) {
			__m512 a = abs16(_mm512_loadu_ps(x + j));

			fin &= finite16(a);
			m = _mm512_max_ps(m, a);
		}
		if (fin != 0xffff) {
			ret = edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_K, x, &y[i],
						     EDGEQ_QK_K);
			continue;
		}
		amax = _mm512_reduce_max_ps(m);
		if (!amax) {
			edgeq_q8_K_zero(&y[i]);
			continue;
		}
		/* the reference keeps the first element of largest magnitude */
		amv = _mm512_set1_ps(amax);
		for (int j = 0; j < EDGEQ_QK_K; j += 16) {
			__mmask16 e = _mm512_cmp_ps_mask(
				abs16(_mm512_loadu_ps(x + j)), amv, _CMP_EQ_OQ);

			if (e) {
				max = x[j + __builtin_ctz(e)];
				break;
			}
		}
		iscale = -127.f / max;
		if (!isfinite(iscale)) {
			edgeq_q8_K_zero(&y[i]);
			continue;
		}
		sc = _mm512_set1_ps(iscale);
		/* each 16 elements are one bsums group */
		for (int j = 0; j < EDGEQ_QK_K; j += 16) {
			__m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + j), sc);
			__m512i q;

			v = _mm512_max_ps(_mm512_min_ps(v, lim),
					  _mm512_sub_ps(_mm512_setzero_ps(),
							lim));
			q = _mm512_min_epi32(_mm512_cvt_roundps_epi32(
						     v,
						     _MM_FROUND_TO_NEAREST_INT |
							     _MM_FROUND_NO_EXC),
					     _mm512_set1_epi32(127));
			_mm_storeu_si128((__m128i *)(y[i].qs + j),
					 _mm512_cvtsepi32_epi8(q));
			y[i].bsums[j / 16] =
				(int16_t)_mm512_reduce_add_epi32(q);
		}
		y[i].d = 1 / iscale;
	}
	return ret;
}

int edgeq_quantize_act_avx512(enum edgeq_type vdt, const float *x, void *y,
			      int64_t n)
{
	return edgeq_quantize_act_with(vdt, x, y, n, q8_0, q8_K);
}
