// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * x86-64 kernels: AVX2 + FMA + F16C. Each function reproduces the canonical
 * reduction order of scalar.c bit for bit: integer dot products are exact
 * (any grouping), every float step is the same fused multiply-add in the
 * same order, and the float-row fold is the same tree (see the comment at
 * the top of scalar.c). Q8_0/Q4_0 matvec and matmul put one output (row or
 * token) in each float lane: the 8 outputs' lane sums of a block reduce
 * with one transpose-add tree, then one fma advances 8 chains.
 * Activation Q8_0/Q8_K values are in [-127, 127] (edgeq_quantize_act_ref
 * guarantees it), which keeps maddubs from saturating.
 */
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/q80_tiles.h"
#include "kernels/x86/attn256.h"
#include "kernels/x86/avx2_exp.h"
#include "kernels/x86/avx2_quants.h"
#include "kernels/x86/hsum.h"
#include "kernels/x86/q4k_mins.h"

static inline float h2f(uint16_t h)
{
	return _cvtsh_ss(h);
}

/* edgeq_reduce8 on a vector: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)) */
static inline float reduce8(__m256 v)
{
	__m128 t = _mm_add_ps(_mm256_castps256_ps128(v),
			      _mm256_extractf128_ps(v, 1));
	__m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));

	return _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps(u, u, 1)));
}

/* ---- float rows: 32 lanes in 4 vectors ---- */

static inline float fold32_vec(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
	return reduce8(
		_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}

/* The tail (n % 32 elements) goes through memory to lanes 0.. of acc[]. */
static float fold32_tail(__m256 a[4], const float *w, const float *x, int64_t m)
{
	float acc[32], v[8];

	for (int k = 0; k < 4; k++)
		_mm256_storeu_ps(acc + 8 * k, a[k]);
	for (int64_t j = 0; j < m; j++)
		acc[j] = fmaf(w[j], x[j], acc[j]);
	for (int k = 0; k < 8; k++)
		v[k] = (acc[k] + acc[k + 8]) + (acc[k + 16] + acc[k + 24]);
	return edgeq_reduce8(v);
}

static float dot_f32(int64_t n, const float *x, const float *y)
{
	__m256 a[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(),
			_mm256_setzero_ps(), _mm256_setzero_ps() };
	int64_t j = 0, m;
	float wt[32];

	for (; j + 32 <= n; j += 32)
#pragma GCC unroll 4
		for (int k = 0; k < 4; k++)
			a[k] = _mm256_fmadd_ps(_mm256_loadu_ps(x + j + 8 * k),
					       _mm256_loadu_ps(y + j + 8 * k),
					       a[k]);
	m = n - j;
	if (!m)
		return fold32_vec(a[0], a[1], a[2], a[3]);
	memcpy(wt, x + j, m * sizeof(float));
	return fold32_tail(a, wt, y + j, m);
}

static float vec_dot_f32(int64_t n, const void *w, const void *a)
{
	return dot_f32(n, w, a);
}

static float dot_f16(int64_t n, const uint16_t *k, const float *q)
{
	__m256 a[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(),
			_mm256_setzero_ps(), _mm256_setzero_ps() };
	int64_t j = 0, m;
	float wt[32];

	for (; j + 32 <= n; j += 32)
#pragma GCC unroll 4
		for (int i = 0; i < 4; i++) {
			__m256 kv = _mm256_cvtph_ps(_mm_loadu_si128(
				(const __m128i *)(k + j + 8 * i)));

			a[i] = _mm256_fmadd_ps(
				kv, _mm256_loadu_ps(q + j + 8 * i), a[i]);
		}
	m = n - j;
	if (!m)
		return fold32_vec(a[0], a[1], a[2], a[3]);
	for (int64_t i = 0; i < m; i++)
		wt[i] = h2f(k[j + i]);
	return fold32_tail(a, wt, q + j, m);
}

static float vec_dot_f16(int64_t n, const void *w, const void *a)
{
	return dot_f16(n, w, a);
}

static inline __m256 bf16x8(const uint16_t *p)
{
	__m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));

	return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

static float vec_dot_bf16(int64_t n, const void *w, const void *act)
{
	const uint16_t *x = w;
	const float *y = act;
	__m256 a[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(),
			_mm256_setzero_ps(), _mm256_setzero_ps() };
	int64_t j = 0, m;
	float wt[32];

	for (; j + 32 <= n; j += 32)
#pragma GCC unroll 4
		for (int i = 0; i < 4; i++)
			a[i] = _mm256_fmadd_ps(bf16x8(x + j + 8 * i),
					       _mm256_loadu_ps(y + j + 8 * i),
					       a[i]);
	m = n - j;
	if (!m)
		return fold32_vec(a[0], a[1], a[2], a[3]);
	for (int64_t i = 0; i < m; i++)
		wt[i] = edgeq_bf16_to_fp32(x[j + i]);
	return fold32_tail(a, wt, y + j, m);
}

/* ---- Q8_0 and Q4_0: an exact integer sum per block, one float chain ---- */

/* int32 lane l = sum of qx[k] * qy[k] for k in 4l..4l+3 (exact); ax is
 * |qx|, computed once per weight block and reused across tokens. */
static inline __m256i dot4_i8(__m256i qx, __m256i ax, __m256i qy)
{
	__m256i p = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(qy, qx));

	return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* Q4_0 nibbles as 32 unsigned bytes (0..15), elements in order. */
static inline __m256i q4_0_nibbles(const uint8_t *qs)
{
	__m128i b = _mm_loadu_si128((const __m128i *)qs);
	__m128i m = _mm_set1_epi8(0x0f);

	return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m),
				_mm_and_si128(b, m));
}

/* Weight block i of a Q8_0 or Q4_0 row as 32 signed bytes, and its scale. */
static inline __m256i wblock(enum edgeq_type t, const void *row, int64_t i,
			     float *d)
{
	if (t == EDGEQ_TYPE_Q4_0) {
		const struct edgeq_block_q4_0 *b =
			(const struct edgeq_block_q4_0 *)row + i;

		*d = h2f(b->d);
		return _mm256_sub_epi8(q4_0_nibbles(b->qs),
				       _mm256_set1_epi8(8));
	} else {
		const struct edgeq_block_q8_0 *b =
			(const struct edgeq_block_q8_0 *)row + i;

		*d = h2f(b->d);
		return _mm256_loadu_si256((const __m256i *)b->qs);
	}
}

static inline __m256i ablock(const void *a, int64_t i)
{
	return _mm256_loadu_si256(
		(const __m256i *)((const struct edgeq_block_q8_0 *)a)[i].qs);
}

static inline float dot_q80_like(enum edgeq_type t, int64_t n, const void *w,
				 const void *a)
{
	const struct edgeq_block_q8_0 *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK8_0; i++) {
		float dx;
		__m256i q = wblock(t, w, i, &dx);
		__m256i p = dot4_i8(q, _mm256_sign_epi8(q, q), ablock(a, i));

		acc = fmaf(dx * h2f(y[i].d), (float)hsum_i32(p), acc);
	}
	return acc;
}

static float vec_dot_q8_0(int64_t n, const void *w, const void *a)
{
	return dot_q80_like(EDGEQ_TYPE_Q8_0, n, w, a);
}

static float vec_dot_q4_0(int64_t n, const void *w, const void *a)
{
	return dot_q80_like(EDGEQ_TYPE_Q4_0, n, w, a);
}

static inline uint64_t ld16(const char *p)
{
	uint16_t h;

	memcpy(&h, p, 2);
	return h;
}

/* Scales of block i of 8 rows (rs bytes apart) as floats; packed in
 * general registers (a vector load of 8 stored words could not forward). */
static inline __m256 wscales8(enum edgeq_type t, const char *w, size_t rs,
			      int64_t i)
{
	size_t bs = t == EDGEQ_TYPE_Q4_0 ? sizeof(struct edgeq_block_q4_0) :
					   sizeof(struct edgeq_block_q8_0);
	const char *p = w + i * bs;
	uint64_t lo = ld16(p) | ld16(p + rs) << 16 | ld16(p + 2 * rs) << 32 |
		      ld16(p + 3 * rs) << 48;
	uint64_t hi = ld16(p + 4 * rs) | ld16(p + 5 * rs) << 16 |
		      ld16(p + 6 * rs) << 32 | ld16(p + 7 * rs) << 48;

	return _mm256_cvtph_ps(_mm_set_epi64x((long long)hi, (long long)lo));
}

/*
 * Decode: 8 rows at once, one row per float lane. Per block the 8 rows'
 * lane sums reduce to one vector of exact block sums, and the 8 float
 * chains advance with one fma. Q4_0 nibbles stay unsigned and 8 x the
 * block's activation sum (prepared once per call) is subtracted after the
 * reduction: the same exact integers.
 */
static inline void rows8_q80_like(enum edgeq_type t, int64_t nb, const char *w,
				  size_t rs, const void *a, const float *dy,
				  const int32_t *ys8, float *y)
{
	const struct edgeq_block_q8_0 *ya = a;
	const __m256i ones = _mm256_set1_epi16(1);
	/* prefetch the next 8 rows (contiguous) over this group's blocks */
	const int pf_lines = (int)((8 * rs / 64 + nb - 1) / nb);
	__m256 acc = _mm256_setzero_ps();

	for (int64_t i = 0; i < nb; i++) {
		__m256i qy = _mm256_loadu_si256((const __m256i *)ya[i].qs);
		__m256i p[8], s;

		for (int k = 0; k < pf_lines; k++)
			_mm_prefetch(w + 8 * rs + (i * pf_lines + k) * 64,
				     _MM_HINT_T0);

		_Pragma("GCC unroll 8") for (int r = 0; r < 8; r++)
		{
			const char *row = w + r * rs;

			if (t == EDGEQ_TYPE_Q4_0) {
				const struct edgeq_block_q4_0 *b =
					(const struct edgeq_block_q4_0 *)row +
					i;

				p[r] = _mm256_madd_epi16(
					_mm256_maddubs_epi16(
						q4_0_nibbles(b->qs), qy),
					ones);
			} else {
				const struct edgeq_block_q8_0 *b =
					(const struct edgeq_block_q8_0 *)row +
					i;
				__m256i q = _mm256_loadu_si256(
					(const __m256i *)b->qs);

				p[r] = dot4_i8(q, _mm256_sign_epi8(q, q), qy);
			}
		}
		s = hsum_8x8(p);
		if (t == EDGEQ_TYPE_Q4_0)
			s = _mm256_sub_epi32(s, _mm256_set1_epi32(ys8[i]));
		acc = _mm256_fmadd_ps(_mm256_mul_ps(wscales8(t, w, rs, i),
						    _mm256_set1_ps(dy[i])),
				      _mm256_cvtepi32_ps(s), acc);
	}
	_mm256_storeu_ps(y, acc);
}

/* Activation scales as floats and 8 x the block sums, on the stack when
 * they fit. */
#define DY_STACK 1024
static float *act_prep(const void *a, int64_t nb, float *stack, int32_t *ys8)
{
	const struct edgeq_block_q8_0 *y = a;
	float *dy =
		nb <= DY_STACK ?
			stack :
			malloc((size_t)nb * (sizeof(float) + sizeof(int32_t)));

	if (!dy)
		return NULL;
	if (dy != stack)
		ys8 = (int32_t *)(dy + nb);
	for (int64_t i = 0; i < nb; i++) {
		__m256i s = _mm256_maddubs_epi16(
			_mm256_set1_epi8(1),
			_mm256_loadu_si256((const __m256i *)y[i].qs));

		dy[i] = h2f(y[i].d);
		ys8[i] = 8 *
			 hsum_i32(_mm256_madd_epi16(s, _mm256_set1_epi16(1)));
	}
	return dy;
}

static void matvec_q80_like(enum edgeq_type t, const void *w, int64_t n,
			    int64_t row0, int64_t row1, const void *a, float *y)
{
	size_t rs = edgeq_row_size(t, n);
	int64_t nb = n / EDGEQ_QK8_0, r = row0;
	float stack[DY_STACK], *dy;
	int32_t ys8s[DY_STACK], *ys8 = ys8s;

	dy = act_prep(a, nb, stack, ys8s);
	if (dy && dy != stack)
		ys8 = (int32_t *)(dy + nb);
	if (dy) {
		for (; r + 8 <= row1; r += 8)
			if (t == EDGEQ_TYPE_Q4_0)
				rows8_q80_like(EDGEQ_TYPE_Q4_0, nb,
					       (const char *)w + r * rs, rs, a,
					       dy, ys8, y + r);
			else
				rows8_q80_like(EDGEQ_TYPE_Q8_0, nb,
					       (const char *)w + r * rs, rs, a,
					       dy, ys8, y + r);
		if (dy != stack)
			free(dy);
	}
	for (; r < row1; r++)
		y[r] = dot_q80_like(t, n, (const char *)w + r * rs, a);
}

/* Prefill: 4 rows x 2 tokens, one output per float lane (lanes 0-3: token
 * 0, rows 0-3; lanes 4-7: token 1). Weights unpacked once per block for
 * both tokens, activations loaded once for the 4 rows. */
static inline void tile_q80_like(enum edgeq_type t, int64_t nb, const char *w,
				 size_t rs, const char *a, size_t as, float *y,
				 int64_t ldy)
{
	__m256 acc = _mm256_setzero_ps();

	for (int64_t i = 0; i < nb; i++) {
		const struct edgeq_block_q8_0 *y0 =
			(const struct edgeq_block_q8_0 *)a + i;
		const struct edgeq_block_q8_0 *y1 =
			(const struct edgeq_block_q8_0 *)(a + as) + i;
		__m256i qy0 = _mm256_loadu_si256((const __m256i *)y0->qs);
		__m256i qy1 = _mm256_loadu_si256((const __m256i *)y1->qs);
		__m256i p[8];
		float dx[4];
		__m128 dw;
		__m256 d;

		_Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
		{
			__m256i qx = wblock(t, w + r * rs, i, &dx[r]);
			__m256i ax = _mm256_sign_epi8(qx, qx);

			p[r] = dot4_i8(qx, ax, qy0);
			p[4 + r] = dot4_i8(qx, ax, qy1);
		}
		dw = _mm_loadu_ps(dx);
		d = _mm256_mul_ps(_mm256_set_m128(dw, dw),
				  _mm256_set_m128(_mm_set1_ps(h2f(y1->d)),
						  _mm_set1_ps(h2f(y0->d))));
		acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(hsum_8x8(p)), acc);
	}
	_mm_storeu_ps(y, _mm256_castps256_ps128(acc));
	_mm_storeu_ps(y + ldy, _mm256_extractf128_ps(acc, 1));
}

static void matmul_q80_like(enum edgeq_type t, const void *w, int64_t n,
			    int64_t row0, int64_t row1, const char *a,
			    size_t as, int64_t nb, float *y, int64_t ldy)
{
	edgeq_matmul_q80_4x2(t, w, n, row0, row1, a, as, nb, y, ldy,
			     tile_q80_like, dot_q80_like);
}

/* ---- Q4_K and Q6_K: exact integer sum per super-block, one float chain ---- */

static float vec_dot_q4_K(int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q4_K *x = w;
	const struct edgeq_block_q8_K *y = a;
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		const uint8_t *q4 = x[i].qs;
		const int8_t *q8 = y[i].qs;
		uint8_t sc[8], mn[8];
		__m256i sumi = _mm256_setzero_si256();
		__m128i mins16;
		int32_t isum, summs;
		float dall = h2f(x[i].d) * y[i].d;
		float dmin = h2f(x[i].dmin) * y[i].d;

		edgeq_q4_K_unpack_scales(x[i].scales, sc, mn);
		for (int j = 0; j < 4; j++) {
			__m256i b = _mm256_loadu_si256(
				(const __m256i *)(q4 + 32 * j));
			__m256i lo = _mm256_and_si256(b, m4);
			__m256i hi =
				_mm256_and_si256(_mm256_srli_epi16(b, 4), m4);
			__m256i pl = _mm256_maddubs_epi16(
				lo, _mm256_loadu_si256(
					    (const __m256i *)(q8 + 64 * j)));
			__m256i ph = _mm256_maddubs_epi16(
				hi,
				_mm256_loadu_si256(
					(const __m256i *)(q8 + 64 * j + 32)));

			pl = _mm256_madd_epi16(pl,
					       _mm256_set1_epi16(sc[2 * j]));
			ph = _mm256_madd_epi16(
				ph, _mm256_set1_epi16(sc[2 * j + 1]));
			sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(pl, ph));
		}
		isum = hsum_i32(sumi);
		mins16 =
			_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)mn));
		summs = q4k_mins_dot(y[i].bsums, mins16);
		acc = fmaf(dall, (float)isum, acc);
		acc = fmaf(-dmin, (float)summs, acc);
	}
	return acc;
}

static inline __m256i scale_pair(const int8_t *sc)
{
	return _mm256_set_m128i(_mm_set1_epi16(sc[1]), _mm_set1_epi16(sc[0]));
}

/*
 * 128 Q6_K quants (64 bytes of ql, 32 of qh) as four vectors of 32 unsigned
 * 6-bit values, in the order the scales and activations pair with them.
 */
static inline void q6k_unpack(const uint8_t *ql, const uint8_t *qh, __m256i m4,
			      __m256i m30, __m256i q[4])
{
	__m256i la = _mm256_loadu_si256((const __m256i *)ql);
	__m256i lb = _mm256_loadu_si256((const __m256i *)(ql + 32));
	__m256i h = _mm256_loadu_si256((const __m256i *)qh);

	q[0] = _mm256_or_si256(_mm256_and_si256(la, m4),
			       _mm256_and_si256(_mm256_slli_epi16(h, 4), m30));
	q[1] = _mm256_or_si256(_mm256_and_si256(lb, m4),
			       _mm256_and_si256(_mm256_slli_epi16(h, 2), m30));
	q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), m4),
			       _mm256_and_si256(h, m30));
	q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), m4),
			       _mm256_and_si256(_mm256_srli_epi16(h, 2), m30));
}

static float vec_dot_q6_K(int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q6_K *x = w;
	const struct edgeq_block_q8_K *y = a;
	const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		const uint8_t *ql = x[i].ql, *qh = x[i].qh;
		const int8_t *q8 = y[i].qs, *sc = x[i].scales;
		__m256i sumi = _mm256_setzero_si256(), bsum;
		int32_t isum;
		float d = h2f(x[i].d) * y[i].d;

		for (int k = 0; k < 2; k++) {
			__m256i q[4];

			q6k_unpack(ql, qh, m4, m30, q);
			for (int t = 0; t < 4; t++) {
				__m256i p = _mm256_maddubs_epi16(
					q[t],
					_mm256_loadu_si256((
						const __m256i *)(q8 + 32 * t)));

				p = _mm256_madd_epi16(p,
						      scale_pair(sc + 2 * t));
				sumi = _mm256_add_epi32(sumi, p);
			}
			ql += 64;
			qh += 32;
			q8 += 128;
			sc += 8;
		}
		/* the stored values are q + 32: subtract 32 * sum_g sc_g * bsum_g */
		bsum = _mm256_madd_epi16(
			_mm256_loadu_si256((const __m256i *)y[i].bsums),
			_mm256_cvtepi8_epi16(
				_mm_loadu_si128((const __m128i *)x[i].scales)));
		isum = hsum_i32(sumi) - 32 * hsum_i32(bsum);
		acc = fmaf(d, (float)isum, acc);
	}
	return acc;
}

/* ---- attention helpers ---- */

static void axpy_f32(int64_t n, float a, const float *v, float *y)
{
	__m256 va = _mm256_set1_ps(a);
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i,
				 _mm256_fmadd_ps(va, _mm256_loadu_ps(v + i),
						 _mm256_loadu_ps(y + i)));
	for (; i < n; i++)
		y[i] = fmaf(a, v[i], y[i]);
}

static void axpy_f16(int64_t n, float a, const uint16_t *v, float *y)
{
	__m256 va = _mm256_set1_ps(a);
	int64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_cvtph_ps(
			_mm_loadu_si128((const __m128i *)(v + i)));

		_mm256_storeu_ps(
			y + i, _mm256_fmadd_ps(va, x, _mm256_loadu_ps(y + i)));
	}
	for (; i < n; i++)
		y[i] = fmaf(a, h2f(v[i]), y[i]);
}

static void axpy_q8_0(int64_t n, float a, const void *v, float *y)
{
	const struct edgeq_block_q8_0 *x = v;

	for (int64_t i = 0; i < n / EDGEQ_QK8_0; i++, y += EDGEQ_QK8_0) {
		__m256 s = _mm256_set1_ps(a * h2f(x[i].d));

		for (int j = 0; j < EDGEQ_QK8_0; j += 8) {
			__m128i b =
				_mm_loadl_epi64((const __m128i *)(x[i].qs + j));
			__m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));

			_mm256_storeu_ps(
				y + j,
				_mm256_fmadd_ps(s, q, _mm256_loadu_ps(y + j)));
		}
	}
}

static uint64_t stream_read(const void *p, size_t bytes)
{
	const __m256i *q = p;
	__m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;

	for (size_t i = 0; i < bytes / 32; i += 4) {
		a = _mm256_xor_si256(a, _mm256_load_si256(q + i));
		b = _mm256_xor_si256(b, _mm256_load_si256(q + i + 1));
		c = _mm256_xor_si256(c, _mm256_load_si256(q + i + 2));
		d = _mm256_xor_si256(d, _mm256_load_si256(q + i + 3));
	}
	a = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
	return (uint64_t)_mm256_extract_epi64(a, 0) ^
	       (uint64_t)_mm256_extract_epi64(a, 3);
}

static void matvec_avx2(enum edgeq_type type, const void *w, int64_t n,
			int64_t row0, int64_t row1, const void *a, float *y)
{
	if (type == EDGEQ_TYPE_Q4_0 || type == EDGEQ_TYPE_Q8_0) {
		matvec_q80_like(type, w, n, row0, row1, a, y);
		return;
	}
	if (edgeq_avx2_matvec_more(type, w, n, row0, row1, a, y))
		return;
	edgeq_matvec_generic(&edgeq_kernel_ops_avx2, type, w, n, row0, row1, a,
			     y);
}

/* Q4_K prefill: one weight row x 4 tokens. The nibbles and scales of each
 * super-block are unpacked once for the four tokens; each output keeps the
 * exact integer super-block sums and the float chain of vec_dot_q4_K, so
 * the results are bit-identical to it. */
#define TK4 4
static void tile_q4_K(int64_t n, const void *w, const char *a, size_t as,
		      float *y, int64_t ldy)
{
	const struct edgeq_block_q4_K *x = w;
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	float acc[TK4] = { 0 };

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		const uint8_t *q4 = x[i].qs;
		const struct edgeq_block_q8_K *yk[TK4];
		__m256i sumi[TK4];
		uint8_t sc[8], mn[8];
		__m128i mins16;
		float dx = h2f(x[i].d), dmx = h2f(x[i].dmin);

		edgeq_q4_K_unpack_scales(x[i].scales, sc, mn);
		mins16 =
			_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)mn));
		_Pragma("GCC unroll 4") for (int k = 0; k < TK4; k++)
		{
			yk[k] = (const struct edgeq_block_q8_K *)(a + k * as) +
				i;
			sumi[k] = _mm256_setzero_si256();
		}
		for (int j = 0; j < 4; j++) {
			__m256i b = _mm256_loadu_si256(
				(const __m256i *)(q4 + 32 * j));
			__m256i lo = _mm256_and_si256(b, m4);
			__m256i hi =
				_mm256_and_si256(_mm256_srli_epi16(b, 4), m4);
			__m256i s0 = _mm256_set1_epi16(sc[2 * j]);
			__m256i s1 = _mm256_set1_epi16(sc[2 * j + 1]);

			_Pragma("GCC unroll 4") for (int k = 0; k < TK4; k++)
			{
				const int8_t *q8 = yk[k]->qs;
				__m256i pl = _mm256_maddubs_epi16(
					lo,
					_mm256_loadu_si256((
						const __m256i *)(q8 + 64 * j)));
				__m256i ph = _mm256_maddubs_epi16(
					hi,
					_mm256_loadu_si256(
						(const __m256i *)(q8 + 64 * j +
								  32)));

				pl = _mm256_madd_epi16(pl, s0);
				ph = _mm256_madd_epi16(ph, s1);
				sumi[k] = _mm256_add_epi32(
					sumi[k], _mm256_add_epi32(pl, ph));
			}
		}
		_Pragma("GCC unroll 4") for (int k = 0; k < TK4; k++)
		{
			int32_t isum = hsum_i32(sumi[k]);
			int32_t summs = q4k_mins_dot(yk[k]->bsums, mins16);
			float dall = dx * yk[k]->d, dmin = dmx * yk[k]->d;

			acc[k] = fmaf(dall, (float)isum, acc[k]);
			acc[k] = fmaf(-dmin, (float)summs, acc[k]);
		}
	}
	for (int k = 0; k < TK4; k++)
		y[k * ldy] = acc[k];
}

/*
 * Prefill driver of the K-quant tiles: token blocks of EDGEQ_Q80_TOK_BLK (as
 * the Q8_0/Q4_0 driver's, q80_tiles.h), each weight
 * row against TK4 tokens at a time with @tile, the rest token by token with
 * @dot (the same sums and chain, so every output is bit-identical).
 */
static void matmul_rows_tk4(enum edgeq_type type,
			    void (*tile)(int64_t, const void *, const char *,
					 size_t, float *, int64_t),
			    float (*dot)(int64_t, const void *, const void *),
			    const void *w, int64_t n, int64_t row0,
			    int64_t row1, const char *a, size_t as, int64_t nb,
			    float *y, int64_t ldy)
{
	size_t rs = edgeq_row_size(type, n);

	for (int64_t b0 = 0; b0 < nb; b0 += EDGEQ_Q80_TOK_BLK) {
		int64_t b1 = b0 + EDGEQ_Q80_TOK_BLK < nb ?
				     b0 + EDGEQ_Q80_TOK_BLK :
				     nb;

		for (int64_t r = row0; r < row1; r++) {
			const char *wr = (const char *)w + r * rs;
			int64_t b = b0;

			for (; b + TK4 <= b1; b += TK4)
				tile(n, wr, a + b * as, as, y + b * ldy + r,
				     ldy);
			for (; b < b1; b++)
				y[b * ldy + r] = dot(n, wr, a + b * as);
		}
	}
}

static void matmul_q4_K(const void *w, int64_t n, int64_t row0, int64_t row1,
			const char *a, size_t as, int64_t nb, float *y,
			int64_t ldy)
{
	matmul_rows_tk4(EDGEQ_TYPE_Q4_K, tile_q4_K, vec_dot_q4_K, w, n, row0,
			row1, a, as, nb, y, ldy);
}

/* Q6_K prefill: one weight row x 4 tokens, the 6-bit values and scales
 * unpacked once per super-block for the four tokens; each output keeps
 * vec_dot_q6_K's exact integer sums and float chain: bit-identical. */
static void tile_q6_K(int64_t n, const void *w, const char *a, size_t as,
		      float *y, int64_t ldy)
{
	const struct edgeq_block_q6_K *x = w;
	const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
	float acc[TK4] = { 0 };

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		const uint8_t *ql = x[i].ql, *qh = x[i].qh;
		const int8_t *sc = x[i].scales;
		const struct edgeq_block_q8_K *yk[TK4];
		__m256i sumi[TK4], scales16;
		float dx = h2f(x[i].d);

		_Pragma("GCC unroll 4") for (int k = 0; k < TK4; k++)
		{
			yk[k] = (const struct edgeq_block_q8_K *)(a + k * as) +
				i;
			sumi[k] = _mm256_setzero_si256();
		}
		for (int h2 = 0; h2 < 2; h2++) {
			__m256i q[4];

			q6k_unpack(ql, qh, m4, m30, q);
			for (int t = 0; t < 4; t++) {
				__m256i scv = scale_pair(sc + 2 * t);

				_Pragma("GCC unroll 4") for (int k = 0; k < TK4;
							     k++)
				{
					__m256i p = _mm256_maddubs_epi16(
						q[t],
						_mm256_loadu_si256(
							(const __m256i
								 *)(yk[k]->qs +
								    128 * h2 +
								    32 * t)));

					p = _mm256_madd_epi16(p, scv);
					sumi[k] = _mm256_add_epi32(sumi[k], p);
				}
			}
			ql += 64;
			qh += 32;
			sc += 8;
		}
		scales16 = _mm256_cvtepi8_epi16(
			_mm_loadu_si128((const __m128i *)x[i].scales));
		_Pragma("GCC unroll 4") for (int k = 0; k < TK4; k++)
		{
			/* the stored values are q + 32 */
			__m256i bsum = _mm256_madd_epi16(
				_mm256_loadu_si256(
					(const __m256i *)yk[k]->bsums),
				scales16);
			int32_t isum = hsum_i32(sumi[k]) - 32 * hsum_i32(bsum);
			float d = dx * yk[k]->d;

			acc[k] = fmaf(d, (float)isum, acc[k]);
		}
	}
	for (int k = 0; k < TK4; k++)
		y[k * ldy] = acc[k];
}

static void matmul_q6_K(const void *w, int64_t n, int64_t row0, int64_t row1,
			const char *a, size_t as, int64_t nb, float *y,
			int64_t ldy)
{
	matmul_rows_tk4(EDGEQ_TYPE_Q6_K, tile_q6_K, vec_dot_q6_K, w, n, row0,
			row1, a, as, nb, y, ldy);
}

static void matmul_avx2(enum edgeq_type type, const void *w, int64_t n,
			int64_t row0, int64_t row1, const void *a,
			size_t a_stride, int64_t nb, float *y, int64_t ldy)
{
	if (type == EDGEQ_TYPE_Q4_0 || type == EDGEQ_TYPE_Q8_0) {
		matmul_q80_like(type, w, n, row0, row1, a, a_stride, nb, y,
				ldy);
		return;
	}
	if (type == EDGEQ_TYPE_Q4_K) {
		matmul_q4_K(w, n, row0, row1, a, a_stride, nb, y, ldy);
		return;
	}
	if (type == EDGEQ_TYPE_Q6_K) {
		matmul_q6_K(w, n, row0, row1, a, a_stride, nb, y, ldy);
		return;
	}
	if (edgeq_avx2_matmul_more(type, w, n, row0, row1, a, a_stride, nb, y,
				   ldy))
		return;
	edgeq_matmul_generic(&edgeq_kernel_ops_avx2, type, w, n, row0, row1, a,
			     a_stride, nb, y, ldy);
}

const struct edgeq_kernel_ops edgeq_kernel_ops_avx2 = {
	.name = "avx2",
	.vec_dot = {
		[EDGEQ_TYPE_F32] = vec_dot_f32,
		[EDGEQ_TYPE_F16] = vec_dot_f16,
		[EDGEQ_TYPE_BF16] = vec_dot_bf16,
		[EDGEQ_TYPE_Q8_0] = vec_dot_q8_0,
		[EDGEQ_TYPE_Q4_0] = vec_dot_q4_0,
		[EDGEQ_TYPE_Q4_K] = vec_dot_q4_K,
		[EDGEQ_TYPE_Q6_K] = vec_dot_q6_K,
		[EDGEQ_TYPE_Q4_1] = edgeq_avx2_dot_q4_1,
		[EDGEQ_TYPE_Q5_0] = edgeq_avx2_dot_q5_0,
		[EDGEQ_TYPE_Q5_1] = edgeq_avx2_dot_q5_1,
		[EDGEQ_TYPE_IQ4_NL] = edgeq_avx2_dot_iq4_nl,
		[EDGEQ_TYPE_Q2_K] = edgeq_avx2_dot_q2_K,
		[EDGEQ_TYPE_Q3_K] = edgeq_avx2_dot_q3_K,
		[EDGEQ_TYPE_Q5_K] = edgeq_avx2_dot_q5_K,
		[EDGEQ_TYPE_IQ4_XS] = edgeq_avx2_dot_iq4_xs,
	},
	.quantize_act = edgeq_quantize_act_avx2,
	.matvec = matvec_avx2,
	.matmul = matmul_avx2,
	.dot_f32 = dot_f32,
	.dot_f16 = dot_f16,
	.axpy_f32 = axpy_f32,
	.axpy_f16 = axpy_f16,
	.axpy_q8_0 = axpy_q8_0,
	.stream_read = stream_read,
	.softmax = edgeq_softmax_avx2,
	.silu_mul = edgeq_silu_mul_avx2,
	.gelu_mul = edgeq_gelu_mul_avx2,
	.attn_scores_f16 = edgeq_attn_scores_f16_avx2,
	.attn_av_f16 = edgeq_attn_av_f16_avx2,
	.attn_scores_f16_g = edgeq_attn_scores_f16_g_avx2,
	.attn_av_f16_g = edgeq_attn_av_f16_g_avx2,
	.attn_av_q8_0_t = edgeq_attn_av_q8_0_t_avx2,
	.pack16 = {
		[EDGEQ_TYPE_Q4_0] = true,
		[EDGEQ_TYPE_Q8_0] = true,
		[EDGEQ_TYPE_IQ4_NL] = true,
		[EDGEQ_TYPE_Q5_0] = true,
		[EDGEQ_TYPE_Q4_1] = true,
		[EDGEQ_TYPE_Q5_1] = true,
		[EDGEQ_TYPE_Q4_K] = true,
		[EDGEQ_TYPE_Q5_K] = true,
		[EDGEQ_TYPE_Q6_K] = true,
		[EDGEQ_TYPE_IQ4_XS] = true,
		[EDGEQ_TYPE_Q3_K] = true,
		[EDGEQ_TYPE_Q2_K] = true,
	},
	.matvec_packed = edgeq_avx2_matvec_packed,
	.matmul_packed = edgeq_avx2_matmul_packed,
};
