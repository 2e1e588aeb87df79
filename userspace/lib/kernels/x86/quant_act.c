// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Activation quantization (Q8_0, Q8_K) with AVX2, bit-identical to
 * edgeq_quantize_act_ref: every step is the same IEEE operation on the same
 * operands (max of |x| is exact, x * id is one rounded multiply, Q8_0 rounds
 * half away from zero like roundf, Q8_K rounds half to even like the
 * reference's magic-number nearest_int), so the tables that use it stay
 * bit-identical to the scalar one. Blocks with a NaN or an infinity are
 * handed to the reference, which writes them and reports -EDOM.
 */
#include <immintrin.h>
#include <math.h>

#include "kernels/kernels.h"

/* All of x[0..n) finite (n a multiple of 32): no exponent all ones. */
static bool finite32(const float *x, int n)
{
	const __m256i e = _mm256_set1_epi32(0x7f800000);
	__m256i bad = _mm256_setzero_si256();

	for (int j = 0; j < n; j += 8) {
		__m256i v = _mm256_and_si256(
			_mm256_loadu_si256((const __m256i *)(x + j)), e);

		bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(v, e));
	}
	return _mm256_testz_si256(bad, bad);
}

static inline float hmax8(__m256 v)
{
	__m128 m = _mm_max_ps(_mm256_castps256_ps128(v),
			      _mm256_extractf128_ps(v, 1));

	m = _mm_max_ps(m, _mm_movehl_ps(m, m));
	m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
	return _mm_cvtss_f32(m);
}

/* roundf: truncate, then step away from zero when the dropped part is at
 * least one half (v - trunc(v) is exact). */
static inline __m256i round_away(__m256 v)
{
	const __m256 sgn = _mm256_set1_ps(-0.0f);
	__m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
	__m256 fr = _mm256_andnot_ps(sgn, _mm256_sub_ps(v, t));
	__m256 up = _mm256_cmp_ps(fr, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
	__m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, sgn));

	return _mm256_cvttps_epi32(_mm256_add_ps(t, _mm256_and_ps(up, one)));
}

/* 32 int32 lanes (4 vectors, elements in order) to 32 int8. */
static inline __m256i pack32(__m256i a, __m256i b, __m256i c, __m256i d)
{
	__m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
	__m256i v = _mm256_packs_epi16(ab, cd);

	/* packs interleave 128-bit lanes: dwords 0 4 1 5 2 6 3 7 */
	return _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2,
								6, 3, 7));
}

static int q8_0(const float *x, struct edgeq_block_q8_0 *y, int64_t n)
{
	const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	int ret = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK8_0; i++, x += EDGEQ_QK8_0) {
		__m256 v[4], m;
		__m256i q[4];
		float amax, d, id;

		if (!finite32(x, EDGEQ_QK8_0)) {
			ret = edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_0, x, &y[i],
						     EDGEQ_QK8_0);
			continue;
		}
		for (int k = 0; k < 4; k++)
			v[k] = _mm256_loadu_ps(x + 8 * k);
		m = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v[0], abs),
						_mm256_and_ps(v[1], abs)),
				  _mm256_max_ps(_mm256_and_ps(v[2], abs),
						_mm256_and_ps(v[3], abs)));
		amax = hmax8(m);
		d = amax / 127;
		y[i].d = edgeq_fp32_to_fp16(d);
		id = y[i].d ? 1.0f / d : 0.0f;
		for (int k = 0; k < 4; k++)
			q[k] = round_away(
				_mm256_mul_ps(v[k], _mm256_set1_ps(id)));
		_mm256_storeu_si256((__m256i *)y[i].qs,
				    pack32(q[0], q[1], q[2], q[3]));
	}
	return ret;
}

static int q8_K(const float *x, struct edgeq_block_q8_K *y, int64_t n)
{
	const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	int ret = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++, x += EDGEQ_QK_K) {
		__m256 m = _mm256_setzero_ps(), sc, lim;
		float amax, max = 0, iscale;

		if (!finite32(x, EDGEQ_QK_K)) {
			ret = edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_K, x, &y[i],
						     EDGEQ_QK_K);
			continue;
		}
		for (int j = 0; j < EDGEQ_QK_K; j += 8)
			m = _mm256_max_ps(
				m, _mm256_and_ps(_mm256_loadu_ps(x + j), abs));
		amax = hmax8(m);
		if (!amax) {
			edgeq_q8_K_zero(&y[i]);
			continue;
		}
		/* the reference keeps the first element of largest magnitude */
		for (int j = 0; j < EDGEQ_QK_K; j++)
			if (x[j] == amax || x[j] == -amax) {
				max = x[j];
				break;
			}
		iscale = -127.f / max;
		if (!isfinite(iscale)) {
			edgeq_q8_K_zero(&y[i]);
			continue;
		}
		sc = _mm256_set1_ps(iscale);
		lim = _mm256_set1_ps(4194303.f);
		for (int j = 0; j < EDGEQ_QK_K; j += 32) {
			__m256i q[4], b;

			for (int k = 0; k < 4; k++) {
				__m256 v = _mm256_mul_ps(
					_mm256_loadu_ps(x + j + 8 * k), sc);

				v = _mm256_max_ps(
					_mm256_min_ps(v, lim),
					_mm256_sub_ps(_mm256_setzero_ps(),
						      lim));
				q[k] = _mm256_min_epi32(
					_mm256_cvtps_epi32(_mm256_round_ps(
						v, _MM_FROUND_TO_NEAREST_INT |
							   _MM_FROUND_NO_EXC)),
					_mm256_set1_epi32(127));
			}
			b = pack32(q[0], q[1], q[2], q[3]);
			_mm256_storeu_si256((__m256i *)(y[i].qs + j), b);
			/* sums of 4 elements per dword, then 16 per half */
			{
				int32_t s[8];

				_mm256_storeu_si256(
					(__m256i *)s,
					_mm256_madd_epi16(
						_mm256_maddubs_epi16(
							_mm256_set1_epi8(1), b),
						_mm256_set1_epi16(1)));
				y[i].bsums[j / 16] =
					(int16_t)(s[0] + s[1] + s[2] + s[3]);
				y[i].bsums[j / 16 + 1] =
					(int16_t)(s[4] + s[5] + s[6] + s[7]);
			}
		}
		y[i].d = 1 / iscale;
	}
	return ret;
}

int edgeq_quantize_act_avx2(enum edgeq_type vdt, const float *x, void *y,
			    int64_t n)
{
	return edgeq_quantize_act_with(vdt, x, y, n, q8_0, q8_K);
}
