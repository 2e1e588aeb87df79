// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The AVX2 table's attention over many keys of an F16 cache (x86/attn512.c
 * has the AVX-512 forms): a GQA group's queries share each key row's and
 * value row's conversion, and eight keys' final folds run side by side.
 * The values are the per-key ops' bit for bit:
 *
 *  - a score is dot_f16's steps: element j in lane j % 32 (four 8-lane
 *    vectors), fused multiply-adds from +0 in element order, the fold
 *    (l[k] + l[k+8]) + (l[k+16] + l[k+24]) and edgeq_reduce8, times the
 *    scale;
 *  - a weighted value is axpy_f16's: out[j] = 0, then per key in order
 *    out[j] = fmaf(a[t], v_t[j], out[j]), the output row held in
 *    registers across the keys instead of loaded and stored per key.
 *
 * Head sizes that are not a multiple of 32 take the table's dot_f16 and
 * axpy_f16 key by key.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/x86/attn256.h"
#include "kernels/x86/reduce8x8.h"

/* QB queries (two: 8 sums and 4 key vectors in the 16 registers) */
#define QB 2

static inline __attribute__((always_inline)) void
scores_g(const int NQ, int64_t hd, int64_t nk, const uint16_t *k, size_t ks,
	 const float *q, size_t qs, float scale, float *s, size_t ss)
{
	for (int64_t t = 0; t < nk; t += 8) {
		int nkb = nk - t < 8 ? (int)(nk - t) : 8;
		__m256 fold[QB][8];

		for (int i = 0; i < nkb; i++) {
			const uint16_t *kr = k + (t + i) * ks;
			__m256 a[QB][4];

#pragma GCC unroll 2
			for (int j = 0; j < NQ; j++)
#pragma GCC unroll 4
				for (int c = 0; c < 4; c++)
					a[j][c] = _mm256_setzero_ps();
			for (int64_t e = 0; e < hd; e += 32) {
				__m256 kv[4];

#pragma GCC unroll 4
				for (int c = 0; c < 4; c++)
					kv[c] = _mm256_cvtph_ps(_mm_loadu_si128(
						(const __m128i *)(kr + e +
								  8 * c)));
#pragma GCC unroll 2
				for (int j = 0; j < NQ; j++)
#pragma GCC unroll 4
					for (int c = 0; c < 4; c++)
						a[j][c] = _mm256_fmadd_ps(
							kv[c],
							_mm256_loadu_ps(
								q + j * qs + e +
								8 * c),
							a[j][c]);
			}
#pragma GCC unroll 2
			for (int j = 0; j < NQ; j++)
				fold[j][i] = _mm256_add_ps(
					_mm256_add_ps(a[j][0], a[j][1]),
					_mm256_add_ps(a[j][2], a[j][3]));
		}
#pragma GCC unroll 2
		for (int j = 0; j < NQ; j++) {
			if (nkb == 8) {
				_mm256_storeu_ps(
					s + j * ss + t,
					_mm256_mul_ps(reduce8x8(fold[j]),
						      _mm256_set1_ps(scale)));
				continue;
			}
			for (int i = 0; i < nkb; i++) {
				float l[8];

				_mm256_storeu_ps(l, fold[j][i]);
				s[j * ss + t + i] = edgeq_reduce8(l) * scale;
			}
		}
	}
}

void edgeq_attn_scores_f16_g_avx2(int64_t hd, int64_t nk, const uint16_t *k,
				  size_t ks, int nq, const float *q, size_t qs,
				  float scale, float *s, size_t ss)
{
	int j = 0;

	if (hd % 32) {
		for (; j < nq; j++)
			for (int64_t t = 0; t < nk; t++)
				s[j * ss + t] =
					edgeq_kernel_ops_avx2.dot_f16(
						hd, k + t * ks, q + j * qs) *
					scale;
		return;
	}
	for (; j + QB <= nq; j += QB)
		scores_g(QB, hd, nk, k, ks, q + j * qs, qs, scale, s + j * ss,
			 ss);
	for (; j < nq; j++)
		scores_g(1, hd, nk, k, ks, q + j * qs, qs, scale, s + j * ss,
			 ss);
}

void edgeq_attn_scores_f16_avx2(int64_t hd, int64_t nk, const uint16_t *k,
				size_t ks, const float *q, float scale,
				float *s)
{
	edgeq_attn_scores_f16_g_avx2(hd, nk, k, ks, 1, q, 0, scale, s, 0);
}

/* NQ queries' outputs, 32 elements at a time held across all the keys */
static inline __attribute__((always_inline)) void
av_g(const int NQ, int64_t hd, int64_t nk, const float *a, size_t as,
     const uint16_t *v, size_t vs, float *out, size_t os)
{
	for (int64_t e = 0; e < hd; e += 32) {
		__m256 o[QB][4];

#pragma GCC unroll 2
		for (int j = 0; j < NQ; j++)
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++)
				o[j][c] = _mm256_setzero_ps();
		for (int64_t t = 0; t < nk; t++) {
			const uint16_t *r = v + t * vs + e;
			__m256 x[4];

#pragma GCC unroll 4
			for (int c = 0; c < 4; c++)
				x[c] = _mm256_cvtph_ps(_mm_loadu_si128(
					(const __m128i *)(r + 8 * c)));
#pragma GCC unroll 2
			for (int j = 0; j < NQ; j++) {
				__m256 w = _mm256_set1_ps(a[j * as + t]);

#pragma GCC unroll 4
				for (int c = 0; c < 4; c++)
					o[j][c] = _mm256_fmadd_ps(w, x[c],
								  o[j][c]);
			}
		}
#pragma GCC unroll 2
		for (int j = 0; j < NQ; j++)
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++)
				_mm256_storeu_ps(out + j * os + e + 8 * c,
						 o[j][c]);
	}
}

void edgeq_attn_av_f16_g_avx2(int64_t hd, int64_t nk, int nq, const float *a,
			      size_t as, const uint16_t *v, size_t vs,
			      float *out, size_t os)
{
	int j = 0;

	if (hd % 32) {
		for (; j < nq; j++) {
			memset(out + j * os, 0, (size_t)hd * sizeof(float));
			for (int64_t t = 0; t < nk; t++)
				edgeq_kernel_ops_avx2.axpy_f16(hd,
							       a[j * as + t],
							       v + t * vs,
							       out + j * os);
		}
		return;
	}
	for (; j + QB <= nq; j += QB)
		av_g(QB, hd, nk, a + j * as, as, v, vs, out + j * os, os);
	for (; j < nq; j++)
		av_g(1, hd, nk, a + j * as, as, v, vs, out + j * os, os);
}

void edgeq_attn_av_f16_avx2(int64_t hd, int64_t nk, const float *a,
			    const uint16_t *v, size_t vs, float *out)
{
	edgeq_attn_av_f16_g_avx2(hd, nk, 1, a, 0, v, vs, out, 0);
}

/*
 * A Q8_0 cache's weighted values (attn_av_q8_0_t): per query axpy_q8_0's
 * steps (out = 0, then per key in order and block b, out = fmaf(a[t] *
 * d_tb, (float)q_tb, out)); two queries at a time share each block's
 * integers converted in registers, their 32 sums of the block held across
 * the keys, together up to the nearer query's end, then each on to its
 * own.
 */
static inline __attribute__((always_inline)) void
avq_block(const int NQ, int b, int64_t t0, int64_t t1, const void *v, size_t vs,
	  const float *const *a, float *const *o)
{
	__m256 acc[QB][4];

#pragma GCC unroll 2
	for (int j = 0; j < NQ; j++)
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++)
			acc[j][c] =
				t0 ? _mm256_loadu_ps(o[j] + 32 * b + 8 * c) :
				     _mm256_setzero_ps();
	for (int64_t t = t0; t < t1; t++) {
		const struct edgeq_block_q8_0 *x =
			(const struct edgeq_block_q8_0 *)((const uint8_t *)v +
							  t * vs) +
			b;
		float d = _cvtsh_ss(x->d);
		__m256 q[4];

#pragma GCC unroll 4
		for (int c = 0; c < 4; c++)
			q[c] = _mm256_cvtepi32_ps(
				_mm256_cvtepi8_epi32(_mm_loadl_epi64(
					(const __m128i *)(x->qs + 8 * c))));
#pragma GCC unroll 2
		for (int j = 0; j < NQ; j++) {
			__m256 w = _mm256_set1_ps(a[j][t] * d);

#pragma GCC unroll 4
			for (int c = 0; c < 4; c++)
				acc[j][c] = _mm256_fmadd_ps(w, q[c], acc[j][c]);
		}
	}
#pragma GCC unroll 2
	for (int j = 0; j < NQ; j++)
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++)
			_mm256_storeu_ps(o[j] + 32 * b + 8 * c, acc[j][c]);
}

void edgeq_attn_av_q8_0_t_avx2(int64_t hd, int64_t nk, const void *v, size_t vs,
			       int nq, const float *const *ap,
			       const int64_t *nkq, float *const *op)
{
	(void)nk;
	for (int j = 0; j < nq; j++)
		if (nkq[j] <= 0)
			memset(op[j], 0, (size_t)hd * sizeof(float));
	if (hd % 32) {
		for (int j = 0; j < nq; j++) {
			if (nkq[j] <= 0)
				continue;
			memset(op[j], 0, (size_t)hd * sizeof(float));
			for (int64_t t = 0; t < nkq[j]; t++)
				edgeq_kernel_ops_avx2.axpy_q8_0(
					hd, ap[j][t],
					(const uint8_t *)v + t * vs, op[j]);
		}
		return;
	}
	for (int j = 0; j < nq; j += QB) {
		int qb = nq - j < QB ? 1 : QB;
		int64_t lo = nkq[j], e[QB];

		for (int i = 0; i < qb; i++) {
			e[i] = nkq[j + i] > 0 ? nkq[j + i] : 0;
			if (e[i] < lo)
				lo = e[i];
		}
		if (lo < 0)
			lo = 0;
		for (int b = 0; b < hd / 32; b++) {
			if (lo > 0 && qb == QB)
				avq_block(QB, b, 0, lo, v, vs, ap + j, op + j);
			else if (lo > 0)
				avq_block(1, b, 0, lo, v, vs, ap + j, op + j);
			for (int i = 0; i < qb; i++)
				if (e[i] > lo)
					avq_block(1, b, lo, e[i], v, vs,
						  ap + j + i, op + j + i);
		}
	}
}
