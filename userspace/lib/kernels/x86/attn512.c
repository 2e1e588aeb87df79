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
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/fold_lanes.h"
#include "kernels/x86/reduce8x8.h"

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

/*
 * Several queries against the same keys (a GQA group): each key's f16 row
 * is converted once and dotted with QB queries held in registers; every
 * query's fold is key_fold's operations on the same values, and its eight
 * keys' trees reduce8x8's, so the scores are the single-query ones bit for
 * bit. HD (64 or 128) and QB (4 or 2) are constants at each call.
 */
static inline __attribute__((always_inline)) void
scores_g(const int HD, const int QB, int64_t nk, const uint16_t *k, size_t ks,
	 const float *q, size_t qs, float scale, float *s, size_t ss)
{
	__m512 qv[4][8];
	__m256 fold[4][8];
	int64_t t = 0;

#pragma GCC unroll 8
	for (int j = 0; j < QB; j++)
#pragma GCC unroll 8
		for (int c = 0; c < HD / 16; c++)
			qv[j][c] = _mm512_loadu_ps(q + j * qs + 16 * c);
	for (; t < nk; t += 8) {
		int nkb = nk - t < 8 ? (int)(nk - t) : 8;

		for (int i = 0; i < nkb; i++) {
			const uint16_t *kr = k + (t + i) * ks;
			__m512 kv[8];

#pragma GCC unroll 8
			for (int c = 0; c < HD / 16; c++)
				kv[c] = _mm512_cvtph_ps(_mm256_loadu_si256(
					(const __m256i *)(kr + 16 * c)));
#pragma GCC unroll 8
			for (int j = 0; j < QB; j++) {
				__m512 a0 = _mm512_setzero_ps(),
				       a1 = _mm512_setzero_ps();

#pragma GCC unroll 8
				for (int c = 0; c < HD / 16; c += 2) {
					a0 = _mm512_fmadd_ps(kv[c], qv[j][c],
							     a0);
					a1 = _mm512_fmadd_ps(kv[c + 1],
							     qv[j][c + 1], a1);
				}
				fold[j][i] = _mm256_add_ps(
					_mm256_add_ps(
						_mm512_castps512_ps256(a0),
						_mm512_extractf32x8_ps(a0, 1)),
					_mm256_add_ps(
						_mm512_castps512_ps256(a1),
						_mm512_extractf32x8_ps(a1, 1)));
			}
		}
#pragma GCC unroll 8
		for (int j = 0; j < QB; j++) {
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

void edgeq_attn_scores_f16_g_avx512(int64_t hd, int64_t nk, const uint16_t *k,
				    size_t ks, int nq, const float *q,
				    size_t qs, float scale, float *s, size_t ss)
{
	int j = 0;

	if (hd == 64)
		for (; j + 4 <= nq; j += 4)
			scores_g(64, 4, nk, k, ks, q + j * qs, qs, scale,
				 s + j * ss, ss);
	if (hd == 128)
		for (; j + 2 <= nq; j += 2)
			scores_g(128, 2, nk, k, ks, q + j * qs, qs, scale,
				 s + j * ss, ss);
	for (; j < nq; j++)
		edgeq_attn_scores_f16_avx512(hd, nk, k, ks, q + j * qs, scale,
					     s + j * ss);
}

/*
 * The weighted values of QB queries: per 64 output elements, each value
 * row converted once and applied to the QB outputs in key order, one fma
 * per element, key and query, as attn_av_f16 does for one.
 */
static inline __attribute__((always_inline)) void
av_g(const int QB, int64_t hd, int64_t nk, const float *a, size_t as,
     const uint16_t *v, size_t vs, float *out, size_t os)
{
	for (int64_t j = 0; j < hd; j += 64) {
		__m512 o[4][4];

#pragma GCC unroll 8
		for (int i = 0; i < QB; i++)
#pragma GCC unroll 8
			for (int c = 0; c < 4; c++)
				o[i][c] = _mm512_setzero_ps();
		for (int64_t t = 0; t < nk; t++) {
			const uint16_t *r = v + t * vs + j;
			__m512 x[4];

#pragma GCC unroll 8
			for (int c = 0; c < 4; c++)
				x[c] = _mm512_cvtph_ps(_mm256_loadu_si256(
					(const __m256i *)(r + 16 * c)));
#pragma GCC unroll 8
			for (int i = 0; i < QB; i++) {
				__m512 w = _mm512_set1_ps(a[i * as + t]);

#pragma GCC unroll 8
				for (int c = 0; c < 4; c++)
					o[i][c] = _mm512_fmadd_ps(w, x[c],
								  o[i][c]);
			}
		}
#pragma GCC unroll 8
		for (int i = 0; i < QB; i++)
#pragma GCC unroll 8
			for (int c = 0; c < 4; c++)
				_mm512_storeu_ps(out + i * os + j + 16 * c,
						 o[i][c]);
	}
}

void edgeq_attn_av_f16_g_avx512(int64_t hd, int64_t nk, int nq, const float *a,
				size_t as, const uint16_t *v, size_t vs,
				float *out, size_t os)
{
	int i = 0;

	if (hd % 64 == 0)
		for (; i + 4 <= nq; i += 4)
			av_g(4, hd, nk, a + i * as, as, v, vs, out + i * os,
			     os);
	for (; i < nq; i++)
		edgeq_attn_av_f16_avx512(hd, nk, a + i * as, v, vs,
					 out + i * os);
}

/* edgeq_expf on 16 lanes: the same operations, lane by lane. */
static inline __m512 expf16(__m512 x)
{
	__m512 z = _mm512_mul_ps(x, _mm512_set1_ps(EDGEQ_EXPF_LOG2E));
	__m512 sh = _mm512_set1_ps(EDGEQ_EXPF_SHIFT);
	__m512 n = _mm512_sub_ps(_mm512_add_ps(z, sh), sh);
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(EDGEQ_EXPF_LN2_HI), x);
	__m512 p = _mm512_set1_ps(EDGEQ_EXPF_C7);
	__m512i ni, n1, b1, b2;
	__mmask16 lo, hi, nan;

	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(EDGEQ_EXPF_LN2_LO), r);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EDGEQ_EXPF_C6));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EDGEQ_EXPF_C5));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EDGEQ_EXPF_C4));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EDGEQ_EXPF_C3));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EDGEQ_EXPF_C2));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	/* out-of-range lanes: any n, their result is replaced below */
	lo = _mm512_cmp_ps_mask(x, _mm512_set1_ps(EDGEQ_EXPF_LO), _CMP_LT_OQ);
	hi = _mm512_cmp_ps_mask(x, _mm512_set1_ps(EDGEQ_EXPF_HI), _CMP_GT_OQ);
	nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
	ni = _mm512_cvtps_epi32(
		_mm512_maskz_mov_ps((__mmask16) ~(lo | hi | nan), n));
	n1 = _mm512_srai_epi32(ni, 1);
	b1 = _mm512_slli_epi32(_mm512_add_epi32(n1, _mm512_set1_epi32(127)),
			       23);
	b2 = _mm512_slli_epi32(_mm512_add_epi32(_mm512_sub_epi32(ni, n1),
						_mm512_set1_epi32(127)),
			       23);
	p = _mm512_mul_ps(_mm512_mul_ps(p, _mm512_castsi512_ps(b1)),
			  _mm512_castsi512_ps(b2));
	p = _mm512_mask_mov_ps(p, lo, _mm512_setzero_ps());
	p = _mm512_mask_mov_ps(p, hi, _mm512_set1_ps(INFINITY));
	return _mm512_mask_mov_ps(p, nan, x);
}

/* edgeq_silu_mul_ref (o / (1 + expf(-o)) * x) or, GELU,
 * edgeq_gelu_mul_ref's tanh form (u = 0.7978845608 * (o + ((0.044715 * o)
 * * o) * o), o / (1 + expf(-2 * u)) * x) on 16 lanes: the tail masked, the
 * same operations, each rounded as there. */
static inline __attribute__((always_inline)) void
act_mul(const bool GELU, float *o, const float *x, int64_t n)
{
	const __m512 one = _mm512_set1_ps(1.0f);

	for (int64_t t = 0; t < n; t += 16) {
		__mmask16 k = n - t >= 16 ? 0xffff :
					    (__mmask16)((1u << (n - t)) - 1);
		__m512 g = _mm512_maskz_loadu_ps(k, o + t), z;

		if (GELU) {
			__m512 c = _mm512_mul_ps(
				_mm512_mul_ps(
					_mm512_mul_ps(_mm512_set1_ps(0.044715f),
						      g),
					g),
				g);
			__m512 u = _mm512_mul_ps(_mm512_set1_ps(0.7978845608f),
						 _mm512_add_ps(g, c));

			z = _mm512_mul_ps(_mm512_set1_ps(-2.0f), u);
		} else {
			z = _mm512_sub_ps(_mm512_setzero_ps(), g);
		}
		g = _mm512_div_ps(g, _mm512_add_ps(one, expf16(z)));
		_mm512_mask_storeu_ps(
			o + t, k,
			_mm512_mul_ps(g, _mm512_maskz_loadu_ps(k, x + t)));
	}
}

void edgeq_silu_mul_avx512(float *o, const float *x, int64_t n)
{
	act_mul(false, o, x, n);
}

void edgeq_gelu_mul_avx512(float *o, const float *x, int64_t n)
{
	act_mul(true, o, x, n);
}

void edgeq_softmax_avx512(float *x, int64_t n)
{
	__m512 m = _mm512_set1_ps(-INFINITY), acc = _mm512_setzero_ps(), inv;
	int64_t t;
	float mx;

	/* max_ps(x, m) = x > m ? x : m, the reference's comparison */
	for (t = 0; t + 16 <= n; t += 16)
		m = _mm512_max_ps(_mm512_loadu_ps(x + t), m);
	mx = _mm512_reduce_max_ps(m);
	for (; t < n; t++)
		if (x[t] > mx)
			mx = x[t];
	m = _mm512_set1_ps(mx);
	for (t = 0; t < n; t += 16) {
		__mmask16 k = n - t >= 16 ? 0xffff :
					    (__mmask16)((1u << (n - t)) - 1);
		__m512 e = expf16(
			_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + t), m));

		_mm512_mask_storeu_ps(x + t, k, e);
		acc = _mm512_mask_add_ps(acc, k, acc, e);
	}
	{
		__m256 v = _mm256_add_ps(_mm512_castps512_ps256(acc),
					 _mm512_extractf32x8_ps(acc, 1));
		float l[8];

		_mm256_storeu_ps(l, v);
		inv = _mm512_set1_ps(1.0f / edgeq_reduce8(l));
	}
	for (t = 0; t + 16 <= n; t += 16)
		_mm512_storeu_ps(x + t,
				 _mm512_mul_ps(_mm512_loadu_ps(x + t), inv));
	for (; t < n; t++)
		x[t] *= _mm512_cvtss_f32(inv);
}

/*
 * ---- keys in lanes: a prompt's queries over tiles of 16 keys ----
 *
 * dot_f16 folds a 32-lane accumulator (element j in lane j % 32) as
 * v[k] = (l[k] + l[k+8]) + (l[k+16] + l[k+24]), then edgeq_reduce8(v):
 * ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)). With 16 keys' rows
 * transposed (kt[d * 16 + i] = element d of key i), every one of those
 * steps is one vector operation over 16 keys, so no horizontal step is
 * left; the transposition is paid once per tile for all the queries.
 */

/* r[0..15]: 16 rows of 16 floats, transposed in place. */
static inline void transpose16(__m512 r[16])
{
	__m512 t[16], u[16];

	for (int i = 0; i < 8; i++) {
		t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
		t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
	}
	/* u[4g + c], lane L: column 4L + c of rows 4g..4g+3 */
	for (int g = 0; g < 4; g++) {
		__m512d a = _mm512_castps_pd(t[4 * g]),
			b = _mm512_castps_pd(t[4 * g + 1]),
			c = _mm512_castps_pd(t[4 * g + 2]),
			d = _mm512_castps_pd(t[4 * g + 3]);

		u[4 * g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
		u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
		u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
		u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
	}
	for (int c = 0; c < 4; c++) {
		__m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88),
		       w0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88),
		       v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xdd),
		       w1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xdd);

		r[c] = _mm512_shuffle_f32x4(v0, w0, 0x88);
		r[8 + c] = _mm512_shuffle_f32x4(v0, w0, 0xdd);
		r[4 + c] = _mm512_shuffle_f32x4(v1, w1, 0x88);
		r[12 + c] = _mm512_shuffle_f32x4(v1, w1, 0xdd);
	}
}

/* kt[d * 16 + i] = key i's element d (i < n; zero for the rest) */
static void tile_transpose(int64_t hd, const uint16_t *k, size_t ks, int n,
			   float *kt)
{
	for (int64_t d0 = 0; d0 < hd; d0 += 16) {
		__m512 r[16];

		for (int i = 0; i < 16; i++)
			r[i] = i < n ? _mm512_cvtph_ps(_mm256_loadu_si256(
					       (const __m256i *)(k + i * ks +
								 d0))) :
				       _mm512_setzero_ps();
		transpose16(r);
		for (int c = 0; c < 16; c++)
			_mm512_store_ps(kt + (d0 + c) * 16, r[c]);
	}
}

/* The 16 keys' scores of QB queries: the fold's steps in its order. */
#define MULS512(a, s) _mm512_mul_ps((a), _mm512_set1_ps(s))

static inline __attribute__((always_inline)) void
tile_scores(const int QB, const int64_t hd, const float *kt,
	    const float *const *q, float scale, __m512 *res)
{
	static const int ord[8] = EDGEQ_FOLD_ORDER;
	__m512 x[4], t02[4], t1[4];

#pragma GCC unroll 8
	for (int g = 0; g < 8; g++) {
		__m512 p[4], p2[4];

#pragma GCC unroll 4
		for (int u = 0; u < 4; u++) {
			int64_t l = ord[g] + 8 * u;
			__m512 a[4];

#pragma GCC unroll 4
			for (int j = 0; j < QB; j++)
				a[j] = _mm512_setzero_ps();
			for (int64_t d = l; d < hd; d += 32) {
				__m512 kv = _mm512_load_ps(kt + d * 16);

#pragma GCC unroll 4
				for (int j = 0; j < QB; j++)
					a[j] = _mm512_fmadd_ps(
						kv, _mm512_set1_ps(q[j][d]),
						a[j]);
			}
#pragma GCC unroll 4
			for (int j = 0; j < QB; j++)
				EDGEQ_FOLD_LANE(u, a[j], p[j], p2[j],
						_mm512_add_ps);
		}
#pragma GCC unroll 4
		for (int j = 0; j < QB; j++)
			EDGEQ_FOLD_STEP(g, _mm512_add_ps(p[j], p2[j]), x[j],
					t02[j], t1[j], res[j], scale,
					_mm512_add_ps, MULS512);
	}
}

void edgeq_attn_scores_f16_t_avx512(int64_t hd, int64_t nk, const uint16_t *k,
				    size_t ks, int nq, const float *const *qp,
				    const int64_t *nkq, float scale,
				    float *const *sp)
{
	float kt[256 * 16] __attribute__((aligned(64)));

	if (hd % 32 || hd > 256 || nq > EDGEQ_ATTN_TQ) {
		for (int j = 0; j < nq; j++)
			edgeq_attn_scores_f16_avx512(hd, nkq[j], k, ks, qp[j],
						     scale, sp[j]);
		return;
	}
	for (int64_t t = 0; t < nk; t += 16) {
		const float *q[EDGEQ_ATTN_TQ];
		int idx[EDGEQ_ATTN_TQ], n = 0, j = 0;

		for (int i = 0; i < nq; i++)
			if (nkq[i] > t) {
				q[n] = qp[i];
				idx[n++] = i;
			}
		if (!n)
			continue;
		tile_transpose(hd, k + t * ks, ks,
			       nk - t < 16 ? (int)(nk - t) : 16, kt);
		for (; j < n; j += 4) {
			int qb = n - j < 4 ? n - j : 4;
			__m512 res[4];

			if (qb == 4)
				tile_scores(4, hd, kt, q + j, scale, res);
			else
				for (int i = 0; i < qb; i++)
					tile_scores(1, hd, kt, q + j + i, scale,
						    res + i);
			for (int i = 0; i < qb; i++) {
				int64_t left = nkq[idx[j + i]] - t;

				_mm512_mask_storeu_ps(
					sp[idx[j + i]] + t,
					left >= 16 ?
						(__mmask16)0xffff :
						(__mmask16)((1u << left) - 1),
					res[i]);
			}
		}
	}
}

/*
 * ---- a block's weighted values: value rows converted once per chunk ----
 *
 * attn_av_f16's order per query (out = 0, then for each key in order
 * out = fma(a[t], v_t, out)), but the value rows of a chunk of keys are
 * converted to float once for all the block's queries and stay in L1
 * while QB queries at a time run over them; between chunks a query's
 * sums wait in its output row (a float store and load change no bit).
 */
#define AV_CHUNK 64

/* Elements 16c..16c+15 of the Q8_0 row at q as floats (exact): block
 * c / 2 (2 bytes of scale, 32 of integers), its half c % 2. */
static inline __m512 q8_16(const uint8_t *q, int c)
{
	const uint8_t *p = q + c / 2 * 34 + 2 + 16 * (c % 2);

	return _mm512_cvtepi32_ps(
		_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)));
}

/* QB queries over keys [t0, t1) of the chunk at vf (row t at vf + t*HD)
 * or, RAW, of the Q8_0 rows at v (@vs bytes apart);
 * with @wq (a Q8_0 cache) the weight of query j's key t in block b is
 * wq[(j * HD / 32 + b) * CH + t - c0], a[j][t] * d_tb (axpy_q8_0's
 * rounding), else a[j][t] */
static inline __attribute__((always_inline)) void
av_chunk(const int HD, const int QB, const bool RAW, const int64_t CH,
	 const float *vf, const void *v, size_t vs, const float *wq, int64_t c0,
	 int64_t t0, int64_t t1, const float *const *a, float *const *o)
{
	__m512 acc[4][8];

#pragma GCC unroll 4
	for (int j = 0; j < QB; j++)
#pragma GCC unroll 8
		for (int c = 0; c < HD / 16; c++)
			acc[j][c] = t0 ? _mm512_loadu_ps(o[j] + 16 * c) :
					 _mm512_setzero_ps();
	for (int64_t t = t0; t < t1; t++) {
		const float *r = vf + (t - c0) * HD;
		const uint8_t *q = (const uint8_t *)v + t * vs;
		__m512 x[8];

		/* RAW: a Q8_0 row's integers converted here (a block:
		 * 2 bytes of scale, 32 of integers), else the chunk's */
#pragma GCC unroll 8
		for (int c = 0; c < HD / 16; c++)
			x[c] = RAW ? q8_16(q, c) : _mm512_load_ps(r + 16 * c);
#pragma GCC unroll 4
		for (int j = 0; j < QB; j++) {
#pragma GCC unroll 8
			for (int c = 0; c < HD / 16; c++) {
				__m512 w = _mm512_set1_ps(
					wq ? wq[(j * (HD / 32) + c / 2) * CH +
						t - c0] :
					     a[j][t]);

				acc[j][c] = _mm512_fmadd_ps(w, x[c], acc[j][c]);
			}
		}
	}
#pragma GCC unroll 4
	for (int j = 0; j < QB; j++)
#pragma GCC unroll 8
		for (int c = 0; c < HD / 16; c++)
			_mm512_storeu_ps(o[j] + 16 * c, acc[j][c]);
}

/* Q8_0 row t's block scales at df[b * CH + t - c0] */
static inline __attribute__((always_inline)) void
av_scales(const int HD, const int64_t CH, const void *v, size_t vs, int64_t t,
	  int64_t c0, float *df)
{
	const struct edgeq_block_q8_0 *x =
		(const void *)((const uint8_t *)v + t * vs);

	for (int b = 0; b < HD / 32; b++)
		df[b * CH + t - c0] = _cvtsh_ss(x[b].d);
}

/* Value row t (of the chunk from c0) as floats at vf: an F16 row, or a
 * Q8_0 row's integers (exact) with its block scales at df[b * CH + t - c0]. */
static inline __attribute__((always_inline)) void
av_convert(const int HD, const bool Q8, const int64_t CH, const void *v,
	   size_t vs, int64_t t, int64_t c0, float *vf, float *df)
{
	float *r = vf + (t - c0) * HD;

	if (!Q8) {
		const uint16_t *h = (const uint16_t *)v + t * vs;

		for (int c = 0; c < HD / 16; c++)
			_mm512_store_ps(r + 16 * c,
					_mm512_cvtph_ps(_mm256_loadu_si256((
						const __m256i *)(h + 16 * c))));
		return;
	}
	av_scales(HD, CH, v, vs, t, c0, df);
	for (int c = 0; c < HD / 16; c++)
		_mm512_store_ps(r + 16 * c,
				q8_16((const uint8_t *)v + t * vs, c));
}

/* wq for queries a[0..qb) over keys [c0, end[i]) of the chunk: each
 * weight times its row's block scale, 16 keys a multiply */
static inline __attribute__((always_inline)) void
av_weights(const int HD, const int64_t CH, int qb, const float *const *a,
	   const int64_t *end, int64_t c0, const float *df, float *wq)
{
	for (int i = 0; i < qb; i++)
		for (int64_t t = c0; t < end[i]; t += 16) {
			__mmask16 k =
				end[i] - t >= 16 ?
					(__mmask16)0xffff :
					(__mmask16)((1u << (end[i] - t)) - 1);
			__m512 w = _mm512_maskz_loadu_ps(k, a[i] + t);

			for (int b = 0; b < HD / 32; b++)
				_mm512_mask_storeu_ps(
					wq + (i * (HD / 32) + b) * CH + t - c0,
					k,
					_mm512_mul_ps(
						w, _mm512_maskz_loadu_ps(
							   k, df + b * CH + t -
								      c0)));
		}
}

/* @vs: elements (F16) or bytes (Q8_0) from one value row to the next */
static inline __attribute__((always_inline)) void
av_tiles(const int HD, const bool Q8, int64_t nk, const void *v, size_t vs,
	 int nq, const float *const *ap, const int64_t *nkq, float *const *op)
{
	const int QB = 256 / HD;	       /* 16 accumulators */
	const int64_t CH = AV_CHUNK * 64 / HD; /* 16 KiB of rows */
	float vf[AV_CHUNK * 64] __attribute__((aligned(64)));
	float df[AV_CHUNK * 64 / 32];
	float wq[AV_CHUNK * 64 / 32 * 4]; /* QB * HD / 32 * CH */

#define AV_CHUNK_CALL(QBN, W, T0, T1, A, O)                                  \
	(raw ? av_chunk(HD, QBN, true, CH, vf, v, vs, W, c0, T0, T1, A, O) : \
	       av_chunk(HD, QBN, false, CH, vf, v, vs, W, c0, T0, T1, A, O))

	for (int64_t c0 = 0; c0 < nk; c0 += CH) {
		int64_t c1 = nk - c0 < CH ? nk : c0 + CH;
		const float *a[EDGEQ_ATTN_TQ];
		float *o[EDGEQ_ATTN_TQ];
		int64_t end[EDGEQ_ATTN_TQ];
		const float *w = Q8 ? wq : NULL;
		int n = 0;
		bool raw;

		for (int j = 0; j < nq; j++)
			if (nkq[j] > c0) {
				a[n] = ap[j];
				o[n] = op[j];
				end[n++] = nkq[j] < c1 ? nkq[j] : c1;
			}
		/* a decode step's few queries (one pass over the rows):
		 * a Q8_0 row's integers converted in registers, not
		 * through the chunk */
		raw = Q8 && n <= QB;
		for (int64_t t = c0; t < c1; t++) {
			/* the rows are a cache row apart (all KV heads'):
			 * ask for the one 8 ahead; raw: only the scales
			 * here, av_chunk converts the integers */
			if (t + 8 < nk)
				edgeq_prefetch_row(
					(const char *)v + (size_t)(t + 8) * vs *
								  (Q8 ? 1 : 2),
					Q8 ? HD / 32 * 34 : HD * 2);
			if (raw)
				av_scales(HD, CH, v, vs, t, c0, df);
			else
				av_convert(HD, Q8, CH, v, vs, t, c0, vf, df);
		}
		for (int j = 0; j < n; j += QB) {
			int qb = n - j < QB ? n - j : QB;
			int64_t e = c1;

			if (Q8)
				av_weights(HD, CH, qb, a + j, end + j, c0, df,
					   wq);
			for (int i = 0; i < qb; i++)
				if (end[j + i] < e)
					e = end[j + i];
			/* together up to the first query's end, then each
			 * query on to its own (its weights wq's row i) */
			if (qb == QB)
				AV_CHUNK_CALL(QB, w, c0, e, a + j, o + j);
			else
				for (int i = 0; i < qb; i++)
					AV_CHUNK_CALL(
						1,
						w ? w + i * (HD / 32) * CH :
						    NULL,
						c0, e, a + j + i, o + j + i);
			for (int i = 0; i < qb; i++)
				if (end[j + i] > e)
					AV_CHUNK_CALL(
						1,
						w ? w + i * (HD / 32) * CH :
						    NULL,
						e, end[j + i], a + j + i,
						o + j + i);
		}
	}
#undef AV_CHUNK_CALL
}

/* The outputs of queries that see no key zeroed, then the tiles where
 * the head size has them; false: the caller goes key by key. */
static inline __attribute__((always_inline)) bool
av_tiled(const bool Q8, int64_t hd, int64_t nk, const void *v, size_t vs,
	 int nq, const float *const *ap, const int64_t *nkq, float *const *op)
{
	for (int j = 0; j < nq; j++)
		if (nkq[j] <= 0)
			memset(op[j], 0, (size_t)hd * sizeof(float));
	if (nq > EDGEQ_ATTN_TQ)
		return false;
	if (hd == 64)
		av_tiles(64, Q8, nk, v, vs, nq, ap, nkq, op);
	else if (hd == 128)
		av_tiles(128, Q8, nk, v, vs, nq, ap, nkq, op);
	else
		return false;
	return true;
}

void edgeq_attn_av_f16_t_avx512(int64_t hd, int64_t nk, const uint16_t *v,
				size_t vs, int nq, const float *const *ap,
				const int64_t *nkq, float *const *op)
{
	if (av_tiled(false, hd, nk, v, vs, nq, ap, nkq, op))
		return;
	for (int j = 0; j < nq; j++)
		edgeq_attn_av_f16_avx512(hd, nkq[j], ap[j], v, vs, op[j]);
}

void edgeq_attn_av_q8_0_t_avx512(int64_t hd, int64_t nk, const void *v,
				 size_t vs, int nq, const float *const *ap,
				 const int64_t *nkq, float *const *op)
{
	if (av_tiled(true, hd, nk, v, vs, nq, ap, nkq, op))
		return;
	/* other sizes: axpy_q8_0's steps key by key (this table's) */
	for (int j = 0; j < nq; j++) {
		if (nkq[j] <= 0)
			continue;
		memset(op[j], 0, (size_t)hd * sizeof(float));
		for (int64_t t = 0; t < nkq[j]; t++)
			edgeq_kernel_ops_avx2.axpy_q8_0(
				hd, ap[j][t], (const uint8_t *)v + t * vs,
				op[j]);
	}
}
