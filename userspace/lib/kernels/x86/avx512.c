// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * x86-64 AVX-512 VNNI additions to the AVX2 table (Zen 4/5, Ice Lake and
 * later): Q8_0/Q4_0 dots and prefill matmul tiles with vpdpbusd. Decode
 * matvec stays on the AVX2 row loop: a VNNI row loop was faster in cache
 * but not when streaming 0.5-1 GiB from memory on this host. The
 * canonical order's two block-parity sets of 8 lanes are exactly the two
 * 256-bit halves of one zmm accumulator: lanes 0-7 take block i, lanes 8-15
 * block i+1, each lane the exact integer dot of 4 elements; the halves add
 * (set 0 + set 1) and fold with edgeq_reduce8's tree. So this table is
 * bit-identical to scalar, AVX2 and NEON. Everything else is the AVX2 table.
 *
 * vpdpbusd multiplies unsigned by signed bytes: Q4_0 nibbles are already
 * unsigned (sum q*y, then subtract 8 * sum y); Q8_0 weights are shifted by
 * 128 (sum (w+128)*y, then subtract 128 * sum y). All sums are exact int32.
 */
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "kernels/x86/avx512_q8.h"
#include "kernels/x86/q4k_mins.h"

static inline float h2f(uint16_t h)
{
	return _cvtsh_ss(h);
}

static inline float reduce16(__m512 acc)
{
	__m256 v = _mm256_add_ps(_mm512_castps512_ps256(acc),
				 _mm512_extractf32x8_ps(acc, 1));
	__m128 t = _mm_add_ps(_mm256_castps256_ps128(v),
			      _mm256_extractf128_ps(v, 1));
	__m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));

	return _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps(u, u, 1)));
}

/* Block i of a row as 32 unsigned bytes (Q4_0: nibbles; Q8_0: w + 128). */
static inline __m256i wbytes(enum edgeq_type t, const void *row, int64_t i,
			     float *d)
{
	if (t == EDGEQ_TYPE_Q4_0) {
		const struct edgeq_block_q4_0 *b =
			(const struct edgeq_block_q4_0 *)row + i;
		__m128i q = _mm_loadu_si128((const __m128i *)b->qs);
		__m128i m = _mm_set1_epi8(0x0f);

		*d = h2f(b->d);
		return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m),
					_mm_and_si128(q, m));
	} else {
		const struct edgeq_block_q8_0 *b =
			(const struct edgeq_block_q8_0 *)row + i;

		*d = h2f(b->d);
		return _mm256_xor_si256(
			_mm256_loadu_si256((const __m256i *)b->qs),
			_mm256_set1_epi8((char)0x80));
	}
}

static inline int bias_shift(enum edgeq_type t)
{
	return t == EDGEQ_TYPE_Q4_0 ? 3 : 7; /* 8 or 128 times sum y */
}

static inline __m512 halves(float a, float b)
{
	return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(a)),
				  _mm256_set1_ps(b), 1);
}

/* Weights of blocks i, i+1 (the second absent: zeros, scale 0). */
static inline __m512i wpair(enum edgeq_type t, const void *row, int64_t i,
			    bool two, __m512 *dx)
{
	float d0, d1 = 0;
	__m256i a = wbytes(t, row, i, &d0);
	__m256i b = two ? wbytes(t, row, i + 1, &d1) : _mm256_setzero_si256();

	*dx = halves(d0, d1);
	return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
}

/* Activations of blocks i, i+1: bytes, minus the bias of the unsigned
 * weights (8 or 128 times the lane sums), scales. */
static inline __m512i ypair(const void *a, int64_t i, bool two, int shift,
			    __m512i *bias, __m512 *dy)
{
	const struct edgeq_block_q8_0 *y =
		(const struct edgeq_block_q8_0 *)a + i;
	__m256i lo = _mm256_loadu_si256((const __m256i *)y[0].qs);
	__m256i hi = two ? _mm256_loadu_si256((const __m256i *)y[1].qs) :
			   _mm256_setzero_si256();
	__m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
	__m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(),
					_mm512_set1_epi8(1), v);

	*bias = _mm512_sub_epi32(_mm512_setzero_si512(),
				 _mm512_slli_epi32(s, shift));
	*dy = halves(h2f(y[0].d), two ? h2f(y[1].d) : 0.0f);
	return v;
}

static inline __m512 pair_step(__m512 acc, __m512i w, __m512 dx, __m512i y,
			       __m512i bias, __m512 dy)
{
	/* starting from -bias, the dot lands on the exact signed sum */
	__m512i p = _mm512_dpbusd_epi32(bias, w, y);

	return _mm512_fmadd_ps(_mm512_mul_ps(dx, dy), _mm512_cvtepi32_ps(p),
			       acc);
}

static inline float dot512(enum edgeq_type t, int64_t n, const void *w,
			   const void *a)
{
	int64_t nb = n / EDGEQ_QK8_0;
	__m512 acc = _mm512_setzero_ps();

	for (int64_t i = 0; i < nb; i += 2) {
		bool two = i + 1 < nb;
		__m512 dx, dy;
		__m512i bias, wv = wpair(t, w, i, two, &dx);
		__m512i yv = ypair(a, i, two, bias_shift(t), &bias, &dy);

		acc = pair_step(acc, wv, dx, yv, bias, dy);
	}
	return reduce16(acc);
}

static float vec_dot_q8_0(int64_t n, const void *w, const void *a)
{
	return dot512(EDGEQ_TYPE_Q8_0, n, w, a);
}

static float vec_dot_q4_0(int64_t n, const void *w, const void *a)
{
	return dot512(EDGEQ_TYPE_Q4_0, n, w, a);
}

/* 4 rows x 4 tokens: weight pairs prepared once for 4 tokens, activation
 * pairs (bytes, sums, scales) once for 4 rows; 16 zmm accumulators. */
#define R4 4
#define T4 4
static inline void tile512(enum edgeq_type t, int64_t nb, const char *w,
			   size_t rs, const char *a, size_t as, float *y,
			   int64_t ldy)
{
	__m512 acc[R4][T4];

	for (int r = 0; r < R4; r++)
		for (int k = 0; k < T4; k++)
			acc[r][k] = _mm512_setzero_ps();
	for (int64_t i = 0; i < nb; i += 2) {
		bool two = i + 1 < nb;
		__m512i wv[R4];
		__m512 dx[R4];

		for (int r = 0; r < R4; r++)
			wv[r] = wpair(t, w + r * rs, i, two, &dx[r]);
		for (int k = 0; k < T4; k++) {
			__m512 dy;
			__m512i bias, yv = ypair(a + k * as, i, two,
						 bias_shift(t), &bias, &dy);

			for (int r = 0; r < R4; r++)
				acc[r][k] = pair_step(acc[r][k], wv[r], dx[r],
						      yv, bias, dy);
		}
	}
	for (int r = 0; r < R4; r++)
		for (int k = 0; k < T4; k++)
			y[k * ldy + r] = reduce16(acc[r][k]);
}

#define TOK_BLK 64
/* An activation pair prepared once per token block: bytes, minus the bias,
 * scales (192 bytes, read by the tiles as memory operands). */
struct act_pair {
	__m512i y, nbias;
	__m512 dy;
};

/* The 4x4 tile over prepared activations: ap[k * np + p] is token k's
 * pair p. Same steps, same order as tile512(). */
static inline void tile512p(enum edgeq_type t, int64_t nb, const char *w,
			    size_t rs, const struct act_pair *ap, int64_t np,
			    float *y, int64_t ldy)
{
	__m512 acc[R4][T4];

	_Pragma("GCC unroll 4") for (int r = 0; r < R4; r++)
		_Pragma("GCC unroll 4") for (int k = 0; k < T4; k++)
			acc[r][k] = _mm512_setzero_ps();
	for (int64_t p = 0; p < np; p++) {
		bool two = 2 * p + 1 < nb;
		__m512i wv[R4];
		__m512 dx[R4];

		_Pragma("GCC unroll 4") for (int r = 0; r < R4; r++)
			wv[r] = wpair(t, w + r * rs, 2 * p, two, &dx[r]);
		_Pragma("GCC unroll 4") for (int k = 0; k < T4; k++)
		{
			const struct act_pair *q = &ap[k * np + p];

			_Pragma("GCC unroll 4") for (int r = 0; r < R4; r++)
				acc[r][k] = pair_step(acc[r][k], wv[r], dx[r],
						      q->y, q->nbias, q->dy);
		}
	}
	_Pragma("GCC unroll 4") for (int r = 0; r < R4; r++)
		_Pragma("GCC unroll 4") for (int k = 0; k < T4; k++)
			y[k * ldy + r] = reduce16(acc[r][k]);
}

/* A weight pair prepared once per 4-row tile and token block: unsigned
 * bytes and scales (128 bytes). */
struct w_pair {
	__m512i w;
	__m512 dx;
};

/* The 4x4 tile over prepared weights (wp[r * np + p]) and activations:
 * the same values, steps and order as tile512p(). */
static inline void tile512pp(const struct w_pair *wp, const struct act_pair *ap,
			     int64_t np, float *y, int64_t ldy)
{
	__m512 acc[R4][T4];

	_Pragma("GCC unroll 4") for (int r = 0; r < R4; r++)
		_Pragma("GCC unroll 4") for (int k = 0; k < T4; k++)
			acc[r][k] = _mm512_setzero_ps();
	for (int64_t p = 0; p < np; p++) {
		__m512i wv[R4];
		__m512 dx[R4];

		_Pragma("GCC unroll 4") for (int r = 0; r < R4; r++)
		{
			wv[r] = wp[r * np + p].w;
			dx[r] = wp[r * np + p].dx;
		}
		_Pragma("GCC unroll 4") for (int k = 0; k < T4; k++)
		{
			const struct act_pair *q = &ap[k * np + p];

			_Pragma("GCC unroll 4") for (int r = 0; r < R4; r++)
				acc[r][k] = pair_step(acc[r][k], wv[r], dx[r],
						      q->y, q->nbias, q->dy);
		}
	}
	_Pragma("GCC unroll 4") for (int r = 0; r < R4; r++)
		_Pragma("GCC unroll 4") for (int k = 0; k < T4; k++)
			y[k * ldy + r] = reduce16(acc[r][k]);
}

/* Tokens per prepared block: as many as keep their pairs (192 bytes per
 * 64 columns) within PREP_BYTES of L2, at least 16. */
#define PREP_TOK 16
#define PREP_BYTES (384 << 10)
static bool matmul512_prepared(enum edgeq_type t, const void *w, int64_t n,
			       int64_t row0, int64_t row1, const char *a,
			       size_t as, int64_t nb, float *y, int64_t ldy)
{
	size_t rs = edgeq_row_size(t, n);
	int64_t nblk = n / EDGEQ_QK8_0, np = (nblk + 1) / 2;
	/* as many tokens as fit PREP_BYTES, 16..64, a multiple of T4 */
	int64_t ptok = PREP_BYTES / ((int64_t)sizeof(struct act_pair) * np);
	struct act_pair *ap;
	struct w_pair *wp;

	ptok = ptok < PREP_TOK ? PREP_TOK : ptok > 64 ? 64 : ptok / T4 * T4;
	ap = aligned_alloc(64, sizeof(*ap) * (size_t)(ptok * np));
	wp = aligned_alloc(64, sizeof(*wp) * (size_t)(R4 * np));

	if (!ap || !wp) {
		free(ap);
		free(wp);
		return false;
	}
	for (int64_t b0 = 0; b0 + T4 <= nb; b0 += ptok) {
		int64_t b1 = b0 + ptok < nb ? b0 + ptok : nb;

		b1 = b0 + (b1 - b0) / T4 * T4; /* whole tiles; the rest below */
		for (int64_t b = b0; b < b1; b++)
			for (int64_t p = 0; p < np; p++) {
				struct act_pair *q = &ap[(b - b0) * np + p];

				q->y = ypair(a + b * as, 2 * p,
					     2 * p + 1 < nblk, bias_shift(t),
					     &q->nbias, &q->dy);
			}
		for (int64_t r = row0; r + R4 <= row1; r += R4) {
			const char *wr = (const char *)w + r * rs;

			if (b1 - b0 > T4) { /* weights prepared once */
				for (int k = 0; k < R4; k++)
					for (int64_t p = 0; p < np; p++)
						wp[k * np + p].w = wpair(
							t, wr + k * rs, 2 * p,
							2 * p + 1 < nblk,
							&wp[k * np + p].dx);
				for (int64_t b = b0; b < b1; b += T4)
					tile512pp(wp, ap + (b - b0) * np, np,
						  y + b * ldy + r, ldy);
				continue;
			}
			for (int64_t b = b0; b < b1; b += T4)
				if (t == EDGEQ_TYPE_Q4_0)
					tile512p(EDGEQ_TYPE_Q4_0, nblk, wr, rs,
						 ap + (b - b0) * np, np,
						 y + b * ldy + r, ldy);
				else
					tile512p(EDGEQ_TYPE_Q8_0, nblk, wr, rs,
						 ap + (b - b0) * np, np,
						 y + b * ldy + r, ldy);
		}
		if (b1 - b0 < ptok)
			break;
	}
	free(ap);
	free(wp);
	/* leftovers: tokens past the last whole tile, rows past the last tile */
	{
		int64_t bt = nb / T4 * T4, rt = row0 + (row1 - row0) / R4 * R4;

		for (int64_t r = row0; r < row1; r++)
			for (int64_t b = (r < rt ? bt : 0); b < nb; b++)
				y[b * ldy + r] =
					dot512(t, n, (const char *)w + r * rs,
					       a + b * as);
	}
	return true;
}

static void matmul512(enum edgeq_type t, const void *w, int64_t n, int64_t row0,
		      int64_t row1, const char *a, size_t as, int64_t nb,
		      float *y, int64_t ldy)
{
	size_t rs = edgeq_row_size(t, n);
	int64_t nblk = n / EDGEQ_QK8_0;

	for (int64_t b0 = 0; b0 < nb; b0 += TOK_BLK) {
		int64_t b1 = b0 + TOK_BLK < nb ? b0 + TOK_BLK : nb;
		int64_t r = row0;

		for (; r + R4 <= row1; r += R4) {
			const char *wr = (const char *)w + r * rs;
			int64_t b = b0;

			if (t == EDGEQ_TYPE_Q4_0)
				for (; b + T4 <= b1; b += T4)
					tile512(EDGEQ_TYPE_Q4_0, nblk, wr, rs,
						a + b * as, as, y + b * ldy + r,
						ldy);
			else
				for (; b + T4 <= b1; b += T4)
					tile512(EDGEQ_TYPE_Q8_0, nblk, wr, rs,
						a + b * as, as, y + b * ldy + r,
						ldy);
			for (; b < b1; b++)
				for (int k = 0; k < R4; k++)
					y[b * ldy + r + k] = dot512(
						t, n, wr + k * rs, a + b * as);
		}
		for (; r < row1; r++)
			for (int64_t b = b0; b < b1; b++)
				y[b * ldy + r] =
					dot512(t, n, (const char *)w + r * rs,
					       a + b * as);
	}
}

/*
 * Q4_K prefill: one weight row x NT tokens. Each 64-element half of a
 * super-block's nibbles becomes one zmm (low nibbles of 32 bytes, then the
 * high ones: elements in order), multiplied by the token's 64 bytes with
 * vpmaddubsw and weighted by the two 6-bit group scales with vpdpwssd. The
 * integer super-block sums are exact, so any grouping gives the same
 * int32; the float chain per output is vec_dot_q4_K's (dall * isum, then
 * -dmin * summs): bit-identical to every other table.
 */
static inline int32_t hsum512_i32(__m512i v)
{
	__m256i h = _mm256_add_epi32(_mm512_castsi512_si256(v),
				     _mm512_extracti64x4_epi64(v, 1));
	__m128i q = _mm_add_epi32(_mm256_castsi256_si128(h),
				  _mm256_extracti128_si256(h, 1));

	q = _mm_add_epi32(q, _mm_shuffle_epi32(q, _MM_SHUFFLE(1, 0, 3, 2)));
	q = _mm_add_epi32(q, _mm_shuffle_epi32(q, _MM_SHUFFLE(2, 3, 0, 1)));
	return _mm_cvtsi128_si32(q);
}

static inline __attribute__((always_inline)) void
tile_q4_K(int nt, int64_t n, const void *w, const char *a, size_t as, float *y,
	  int64_t ldy)
{
	const struct edgeq_block_q4_K *x = w;
	const __m512i m4 = _mm512_set1_epi8(0x0f);
	float acc[8] = { 0 };

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		const uint8_t *q4 = x[i].qs;
		const struct edgeq_block_q8_K *yk[8];
		__m512i sumi[8];
		uint8_t sc[8], mn[8];
		__m128i mins16;
		float dx = h2f(x[i].d), dmx = h2f(x[i].dmin);

		edgeq_q4_K_unpack_scales(x[i].scales, sc, mn);
		mins16 =
			_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)mn));
		_Pragma("GCC unroll 8") for (int k = 0; k < nt; k++)
		{
			yk[k] = (const struct edgeq_block_q8_K *)(a + k * as) +
				i;
			sumi[k] = _mm512_setzero_si512();
		}
		for (int j = 0; j < 4; j++) {
			__m256i b = _mm256_loadu_si256(
				(const __m256i *)(q4 + 32 * j));
			__m512i wv = _mm512_and_si512(
				_mm512_inserti64x4(_mm512_castsi256_si512(b),
						   _mm256_srli_epi16(b, 4), 1),
				m4);
			__m512i scv = _mm512_inserti64x4(
				_mm512_castsi256_si512(
					_mm256_set1_epi16(sc[2 * j])),
				_mm256_set1_epi16(sc[2 * j + 1]), 1);

			_Pragma("GCC unroll 8") for (int k = 0; k < nt; k++)
			{
				__m512i p = _mm512_maddubs_epi16(
					wv,
					_mm512_loadu_si512(yk[k]->qs + 64 * j));

				sumi[k] = _mm512_dpwssd_epi32(sumi[k], p, scv);
			}
		}
		_Pragma("GCC unroll 8") for (int k = 0; k < nt; k++)
		{
			int32_t isum = hsum512_i32(sumi[k]);
			int32_t summs = q4k_mins_dot(yk[k]->bsums, mins16);
			float dall = dx * yk[k]->d, dmin = dmx * yk[k]->d;

			acc[k] = fmaf(dall, (float)isum, acc[k]);
			acc[k] = fmaf(-dmin, (float)summs, acc[k]);
		}
	}
	for (int k = 0; k < nt; k++)
		y[k * ldy] = acc[k];
}

static void matmul_q4_K(const void *w, int64_t n, int64_t row0, int64_t row1,
			const char *a, size_t as, int64_t nb, float *y,
			int64_t ldy)
{
	size_t rs = edgeq_row_size(EDGEQ_TYPE_Q4_K, n);

	for (int64_t b0 = 0; b0 < nb; b0 += TOK_BLK) {
		int64_t b1 = b0 + TOK_BLK < nb ? b0 + TOK_BLK : nb;

		for (int64_t r = row0; r < row1; r++) {
			const char *wr = (const char *)w + r * rs;
			int64_t b = b0;

			for (; b + 8 <= b1; b += 8)
				tile_q4_K(8, n, wr, a + b * as, as,
					  y + b * ldy + r, ldy);
			for (; b + 4 <= b1; b += 4)
				tile_q4_K(4, n, wr, a + b * as, as,
					  y + b * ldy + r, ldy);
			for (; b < b1; b++)
				tile_q4_K(1, n, wr, a + b * as, as,
					  y + b * ldy + r, ldy);
		}
	}
}

static void matmul_avx512(enum edgeq_type type, const void *w, int64_t n,
			  int64_t row0, int64_t row1, const void *a,
			  size_t a_stride, int64_t nb, float *y, int64_t ldy)
{
	if (type == EDGEQ_TYPE_Q4_0 || type == EDGEQ_TYPE_Q8_0) {
		/* the old-order tiles stay until canon-tables removes them */
		(void)matmul512_prepared;
		(void)matmul512;
		edgeq_avx512_q8_matmul(type, w, n, row0, row1, a, a_stride, nb,
				       y, ldy);
		return;
	}
	if (type == EDGEQ_TYPE_Q4_K) {
		matmul_q4_K(w, n, row0, row1, a, a_stride, nb, y, ldy);
		return;
	}
	edgeq_kernel_ops_avx2.matmul(type, w, n, row0, row1, a, a_stride, nb, y,
				     ldy);
}

static struct edgeq_kernel_ops table;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	table = edgeq_kernel_ops_avx2;
	table.name = "avx512";
	table.vec_dot[EDGEQ_TYPE_Q8_0] = vec_dot_q8_0;
	table.vec_dot[EDGEQ_TYPE_Q4_0] = vec_dot_q4_0;
	table.matmul = matmul_avx512;
}

const struct edgeq_kernel_ops *edgeq_kernel_ops_avx512(void)
{
	pthread_once(&table_once, table_init);
	return &table;
}
