// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * AVX2 kernels of the types added after Q4_0/Q8_0/Q4_K/Q6_K, in the
 * canonical order of scalar.c (exact integer sums, the same float chain):
 *
 *  - 32-element blocks x Q8_0: Q5_0 and IQ4_NL weights become 32 signed
 *    bytes (q - 16, or the IQ4_NL table through pshufb), Q4_1 and Q5_1 32
 *    unsigned bytes whose min term takes the activation's block sum. The
 *    decode matvec takes 8 rows per step, one row per float lane (the 8
 *    rows' lane sums reduce with one transpose-add tree); prefill runs it
 *    per token over groups of 8 rows that stay in L1.
 *  - K-quants x Q8_K: a super-block is unpacked once into 8 vectors of 32
 *    bytes in the activation's element order and 8 vectors of int16
 *    sub-block scales; each token's sum is maddubs + madd per vector.
 *    Prefill tiles take one row x 4 tokens (the AVX2 Q4_K driver).
 *
 * Activation bytes are in [-127, 127]: maddubs pair sums stay below 2^15
 * (at most 2 x 127 x 127 for the signed IQ4 values).
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/k_rows.h"
#include "kernels/more_types.h"
#include "kernels/x86/avx2_quants.h"
#include "kernels/x86/hsum.h"
#include "kernels/x86/q4k_mins.h"

static inline float h2f(uint16_t h)
{
	return _cvtsh_ss(h);
}

/* 16 nibble bytes as 32 bytes in element order (low nibbles first) */
static inline __m256i nibbles32(const uint8_t *qs)
{
	__m128i b = _mm_loadu_si128((const __m128i *)qs);
	__m128i m = _mm_set1_epi8(0x0f);

	return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m),
				_mm_and_si128(b, m));
}

/* byte e = @val where bit e of the 32-bit word is set, else 0 */
static inline __m256i bits_to_bytes(uint32_t bits, char val)
{
	const __m256i shuf =
		_mm256_set_epi64x(0x0303030303030303ll, 0x0202020202020202ll,
				  0x0101010101010101ll, 0x0000000000000000ll);
	const __m256i bit =
		_mm256_set1_epi64x((long long)0x8040201008040201ull);
	__m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), shuf);

	v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
	return _mm256_and_si256(v, _mm256_set1_epi8(val));
}

static inline __m256i iq4_table(void)
{
	__m128i t = _mm_loadu_si128((const __m128i *)edgeq_kvalues_iq4nl);

	return _mm256_set_m128i(t, t);
}

/* int32 lanes of the exact dot of 32 signed weight bytes with 32 int8 */
static inline __m256i dot_signed(__m256i q, __m256i a)
{
	return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q, q),
						      _mm256_sign_epi8(a, q)),
				 _mm256_set1_epi16(1));
}

/* ... of 32 unsigned weight bytes (at most 31) */
static inline __m256i dot_unsigned(__m256i q, __m256i a)
{
	return _mm256_madd_epi16(_mm256_maddubs_epi16(q, a),
				 _mm256_set1_epi16(1));
}

/* ---- 32-element blocks x Q8_0 ---- */

static inline bool affine(enum edgeq_type t)
{
	return t == EDGEQ_TYPE_Q4_1 || t == EDGEQ_TYPE_Q5_1;
}

/* Block i of a row as 32 bytes (signed for Q5_0/IQ4_NL, unsigned for the
 * affine types), its scale and min (0 when it has none). */
static inline __attribute__((always_inline)) __m256i
wblock(enum edgeq_type t, const void *row, int64_t i, float *d, float *m)
{
	switch (t) {
	case EDGEQ_TYPE_Q4_1: {
		const struct edgeq_block_q4_1 *b =
			(const struct edgeq_block_q4_1 *)row + i;

		*d = h2f(b->d);
		*m = h2f(b->m);
		return nibbles32(b->qs);
	}
	case EDGEQ_TYPE_Q5_0: {
		const struct edgeq_block_q5_0 *b =
			(const struct edgeq_block_q5_0 *)row + i;

		*d = h2f(b->d);
		*m = 0;
		return _mm256_sub_epi8(
			_mm256_or_si256(nibbles32(b->qs),
					bits_to_bytes(edgeq_q5_qh(b->qh), 16)),
			_mm256_set1_epi8(16));
	}
	case EDGEQ_TYPE_Q5_1: {
		const struct edgeq_block_q5_1 *b =
			(const struct edgeq_block_q5_1 *)row + i;

		*d = h2f(b->d);
		*m = h2f(b->m);
		return _mm256_or_si256(nibbles32(b->qs),
				       bits_to_bytes(edgeq_q5_qh(b->qh), 16));
	}
	default: {
		const struct edgeq_block_iq4_nl *b =
			(const struct edgeq_block_iq4_nl *)row + i;

		*d = h2f(b->d);
		*m = 0;
		return _mm256_shuffle_epi8(iq4_table(), nibbles32(b->qs));
	}
	}
}

static inline __attribute__((always_inline)) __m256i
block_lanes(enum edgeq_type t, __m256i q, __m256i a)
{
	return affine(t) ? dot_unsigned(q, a) : dot_signed(q, a);
}

static inline int32_t act_sum(__m256i a)
{
	return hsum_i32(
		_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), a),
				  _mm256_set1_epi16(1)));
}

static inline __m256i ablock(const void *a, int64_t i)
{
	return _mm256_loadu_si256(
		(const __m256i *)((const struct edgeq_block_q8_0 *)a)[i].qs);
}

static inline __attribute__((always_inline)) float
dot32(enum edgeq_type t, int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q8_0 *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / 32; i++) {
		float d, m, da = h2f(y[i].d);
		__m256i qa = ablock(a, i);
		__m256i q = wblock(t, w, i, &d, &m);

		acc = fmaf(d * da, (float)hsum_i32(block_lanes(t, q, qa)), acc);
		if (affine(t))
			acc = fmaf(m * da, (float)act_sum(qa), acc);
	}
	return acc;
}

float edgeq_avx2_dot_q4_1(int64_t n, const void *w, const void *a)
{
	return dot32(EDGEQ_TYPE_Q4_1, n, w, a);
}

float edgeq_avx2_dot_q5_0(int64_t n, const void *w, const void *a)
{
	return dot32(EDGEQ_TYPE_Q5_0, n, w, a);
}

float edgeq_avx2_dot_q5_1(int64_t n, const void *w, const void *a)
{
	return dot32(EDGEQ_TYPE_Q5_1, n, w, a);
}

float edgeq_avx2_dot_iq4_nl(int64_t n, const void *w, const void *a)
{
	return dot32(EDGEQ_TYPE_IQ4_NL, n, w, a);
}

/* 8 rows (rs bytes apart) x one activation row, one row per float lane;
 * the next 8 rows are prefetched over the blocks when @pf. */
static inline __attribute__((always_inline)) void
rows8_32(enum edgeq_type t, int64_t nb, const char *w, size_t rs, const void *a,
	 float *y, bool pf)
{
	const struct edgeq_block_q8_0 *ya = a;
	const int pf_lines = (int)((8 * rs / 64 + nb - 1) / nb);
	__m256 acc = _mm256_setzero_ps();

	for (int64_t i = 0; i < nb; i++) {
		__m256i qa = ablock(a, i), p[8];
		float d[8], m[8];
		__m256 da = _mm256_set1_ps(h2f(ya[i].d));

		for (int k = 0; pf && k < pf_lines; k++)
			_mm_prefetch(w + 8 * rs + (i * pf_lines + k) * 64,
				     _MM_HINT_T0);
		_Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) p[r] =
			block_lanes(t, wblock(t, w + r * rs, i, &d[r], &m[r]),
				    qa);
		acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(d), da),
				      _mm256_cvtepi32_ps(hsum_8x8(p)), acc);
		if (affine(t))
			acc = _mm256_fmadd_ps(
				_mm256_mul_ps(_mm256_loadu_ps(m), da),
				_mm256_set1_ps((float)act_sum(qa)), acc);
	}
	_mm256_storeu_ps(y, acc);
}

static inline __attribute__((always_inline)) void
matvec32(enum edgeq_type t, const void *w, int64_t n, int64_t row0,
	 int64_t row1, const void *a, float *y)
{
	size_t rs = edgeq_row_size(t, n);
	int64_t r = row0;

	for (; r + 8 <= row1; r += 8)
		rows8_32(t, n / 32, (const char *)w + r * rs, rs, a, y + r,
			 r + 16 <= row1);
	for (; r < row1; r++)
		y[r] = dot32(t, n, (const char *)w + r * rs, a);
}

/* Prefill: per group of 8 rows (in L1 after the first token) each token's
 * matvec; the rest by rows. */
static inline __attribute__((always_inline)) void
matmul32(enum edgeq_type t, const void *w, int64_t n, int64_t row0,
	 int64_t row1, const char *a, size_t as, int64_t nb, float *y,
	 int64_t ldy)
{
	size_t rs = edgeq_row_size(t, n);
	int64_t r = row0;

	for (; r + 8 <= row1; r += 8)
		for (int64_t b = 0; b < nb; b++)
			rows8_32(t, n / 32, (const char *)w + r * rs, rs,
				 a + b * as, y + b * ldy + r, false);
	for (; r < row1; r++)
		for (int64_t b = 0; b < nb; b++)
			y[b * ldy + r] = dot32(t, n, (const char *)w + r * rs,
					       a + b * as);
}

/* ---- K-quants x Q8_K ---- */

/*
 * A K-quant super-block: what its 8 vectors of 32 weights (elements
 * 32k..32k+31, as bytes: IQ4_XS their magnitudes, with the signed values
 * for the sign trick) and their int16 scale pairs (16-element sub-blocks:
 * lanes 0-7 and 8-15 differ) are computed from, and the terms each token
 * adds with its bsums. kvec() makes vector k: decode uses them as made,
 * the prefill tile keeps all 8 for its tokens (struct kunp).
 */
struct kctx {
	const void *b;
	__m256i v[2], h; /* Q2_K/Q3_K qs halves; Q5_K qh, Q3_K hmask */
	__m256i m16;	 /* Q2_K: 16 mins; Q3_K: 16 scales (the -4 bias) */
	__m128i mins8;	 /* Q5_K: 8 mins */
	int8_t sc[16];	 /* Q3_K: 16 scales; IQ4_XS: 8; Q5_K: 8 (unsigned) */
	float d, dmin;
};

static inline __m256i scale_pair(int lo, int hi)
{
	return _mm256_set_m128i(_mm_set1_epi16((short)hi),
				_mm_set1_epi16((short)lo));
}

static inline __attribute__((always_inline)) void
kctx_init(enum edgeq_type t, const void *row, int64_t i, struct kctx *c)
{
	if (t == EDGEQ_TYPE_Q5_K) {
		const struct edgeq_block_q5_K *b =
			(const struct edgeq_block_q5_K *)row + i;
		uint8_t sc[8], mn[8];

		edgeq_q4_K_unpack_scales(b->scales, sc, mn);
		memcpy(c->sc, sc, 8);
		c->h = _mm256_loadu_si256((const __m256i *)b->qh);
		c->mins8 =
			_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)mn));
		c->d = h2f(b->d);
		c->dmin = h2f(b->dmin);
		c->b = b;
	} else if (t == EDGEQ_TYPE_Q2_K) {
		const struct edgeq_block_q2_K *b =
			(const struct edgeq_block_q2_K *)row + i;
		__m128i s = _mm_loadu_si128((const __m128i *)b->scales);

		c->v[0] = _mm256_loadu_si256((const __m256i *)b->qs);
		c->v[1] = _mm256_loadu_si256((const __m256i *)(b->qs + 32));
		c->m16 = _mm256_cvtepu8_epi16(_mm_and_si128(
			_mm_srli_epi16(s, 4), _mm_set1_epi8(0x0f)));
		c->d = h2f(b->d);
		c->dmin = h2f(b->dmin);
		c->b = b;
	} else if (t == EDGEQ_TYPE_Q3_K) {
		const struct edgeq_block_q3_K *b =
			(const struct edgeq_block_q3_K *)row + i;

		edgeq_q3_K_scales(b->scales, c->sc);
		c->v[0] = _mm256_loadu_si256((const __m256i *)b->qs);
		c->v[1] = _mm256_loadu_si256((const __m256i *)(b->qs + 32));
		c->h = _mm256_loadu_si256((const __m256i *)b->hmask);
		c->m16 = _mm256_cvtepi8_epi16(
			_mm_loadu_si128((const __m128i *)c->sc));
		c->d = h2f(b->d);
	} else {
		const struct edgeq_block_iq4_xs *b =
			(const struct edgeq_block_iq4_xs *)row + i;

		edgeq_iq4_xs_scales(b, c->sc);
		c->d = h2f(b->d);
		c->b = b;
	}
}

static inline __attribute__((always_inline)) void
kvec(enum edgeq_type t, const struct kctx *c, int k, __m256i *q, __m256i *sgn,
     __m256i *sc)
{
	const __m256i one = _mm256_set1_epi8(1), m3 = _mm256_set1_epi8(3);
	int nn = k / 4, j = k % 4, g = 8 * nn + 2 * j;

	if (t == EDGEQ_TYPE_Q5_K) {
		const struct edgeq_block_q5_K *b = c->b;
		__m256i v = _mm256_loadu_si256(
			(const __m256i *)(b->qs + 32 * (k / 2)));

		if (k & 1)
			v = _mm256_srli_epi16(v, 4);
		*q = _mm256_or_si256(
			_mm256_and_si256(v, _mm256_set1_epi8(0x0f)),
			_mm256_slli_epi16(
				_mm256_and_si256(_mm256_srli_epi16(c->h, k),
						 one),
				4));
		*sc = _mm256_set1_epi16((uint8_t)c->sc[k]);
	} else if (t == EDGEQ_TYPE_Q2_K) {
		const struct edgeq_block_q2_K *b = c->b;

		*q = _mm256_and_si256(_mm256_srli_epi16(c->v[nn], 2 * j), m3);
		*sc = scale_pair(b->scales[g] & 0xf, b->scales[g + 1] & 0xf);
	} else if (t == EDGEQ_TYPE_Q3_K) {
		/* q + 4: the low bits plus 4 where the mask bit is set */
		__m256i h = _mm256_and_si256(
			_mm256_srli_epi16(c->h, 4 * nn + j), one);

		*q = _mm256_or_si256(
			_mm256_and_si256(_mm256_srli_epi16(c->v[nn], 2 * j),
					 m3),
			_mm256_slli_epi16(h, 2));
		*sc = scale_pair(c->sc[g], c->sc[g + 1]);
	} else {
		const struct edgeq_block_iq4_xs *b = c->b;
		__m256i v = _mm256_shuffle_epi8(iq4_table(),
						nibbles32(b->qs + 16 * k));

		*sgn = v;
		*q = _mm256_sign_epi8(v, v);
		*sc = _mm256_set1_epi16(c->sc[k]);
	}
}

/* vector k's scaled int32 lanes against the activation bytes y */
static inline __attribute__((always_inline)) __m256i
kdot(enum edgeq_type t, __m256i q, __m256i sgn, __m256i sc, const int8_t *y)
{
	__m256i a = _mm256_loadu_si256((const __m256i *)y);

	if (t == EDGEQ_TYPE_IQ4_XS)
		a = _mm256_sign_epi8(a, sgn);
	return _mm256_madd_epi16(_mm256_maddubs_epi16(q, a), sc);
}

/* the token's float steps (scalar.c's chain) from the integer lanes s */
static inline __attribute__((always_inline)) float
kfinish(enum edgeq_type t, const struct kctx *c, __m256i s,
	const struct edgeq_block_q8_K *y, float acc)
{
	int32_t isum = hsum_i32(s), summs = 0;

	if (t == EDGEQ_TYPE_Q5_K)
		summs = q4k_mins_dot(y->bsums, c->mins8);
	else if (t == EDGEQ_TYPE_Q2_K || t == EDGEQ_TYPE_Q3_K)
		summs = hsum_i32(_mm256_madd_epi16(
			_mm256_loadu_si256((const __m256i *)y->bsums), c->m16));
	if (t == EDGEQ_TYPE_Q3_K) /* the stored values are q + 4 */
		isum -= 4 * summs;
	acc = fmaf(c->d * y->d, (float)isum, acc);
	if (t == EDGEQ_TYPE_Q5_K || t == EDGEQ_TYPE_Q2_K)
		acc = fmaf(-(c->dmin * y->d), (float)summs, acc);
	return acc;
}

/* Decode: super-block i of a row against one token, vectors made and used
 * one at a time. */
static inline __attribute__((always_inline)) float
kstep(enum edgeq_type t, const void *row, int64_t i,
      const struct edgeq_block_q8_K *y, float acc)
{
	__m256i s = _mm256_setzero_si256();
	struct kctx c;

	kctx_init(t, row, i, &c);
	_Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
	{
		__m256i q, sgn = q = _mm256_setzero_si256(), sc;

		kvec(t, &c, k, &q, &sgn, &sc);
		s = _mm256_add_epi32(s, kdot(t, q, sgn, sc, y->qs + 32 * k));
	}
	return kfinish(t, &c, s, y, acc);
}

/* A super-block unpacked once for the prefill tile's tokens. */
struct kunp {
	struct kctx c;
	__m256i q[8], sgn[8], sc[8];
};

static inline __attribute__((always_inline)) void
unpack_k(enum edgeq_type t, const void *row, int64_t i, struct kunp *u)
{
	kctx_init(t, row, i, &u->c);
	_Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
	{
		u->sgn[k] = _mm256_setzero_si256();
		kvec(t, &u->c, k, &u->q[k], &u->sgn[k], &u->sc[k]);
	}
}

static inline __attribute__((always_inline)) float
kstep_unp(enum edgeq_type t, const struct kunp *u,
	  const struct edgeq_block_q8_K *y, float acc)
{
	__m256i s = _mm256_setzero_si256();

	_Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
		s = _mm256_add_epi32(s, kdot(t, u->q[k], u->sgn[k], u->sc[k],
					     y->qs + 32 * k));
	return kfinish(t, &u->c, s, y, acc);
}

static inline __attribute__((always_inline)) float
dotk(enum edgeq_type t, int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q8_K *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++)
		acc = kstep(t, w, i, &y[i], acc);
	return acc;
}

float edgeq_avx2_dot_q2_K(int64_t n, const void *w, const void *a)
{
	return dotk(EDGEQ_TYPE_Q2_K, n, w, a);
}

float edgeq_avx2_dot_q3_K(int64_t n, const void *w, const void *a)
{
	return dotk(EDGEQ_TYPE_Q3_K, n, w, a);
}

float edgeq_avx2_dot_q5_K(int64_t n, const void *w, const void *a)
{
	return dotk(EDGEQ_TYPE_Q5_K, n, w, a);
}

float edgeq_avx2_dot_iq4_xs(int64_t n, const void *w, const void *a)
{
	return dotk(EDGEQ_TYPE_IQ4_XS, n, w, a);
}

/* Decode: row by row, the next row prefetched over the super-blocks. */
static inline __attribute__((always_inline)) void
matveck(enum edgeq_type t, const void *w, int64_t n, int64_t row0, int64_t row1,
	const void *a, float *y)
{
	size_t rs = edgeq_row_size(t, n);
	int64_t nsb = n / EDGEQ_QK_K;
	int pf_lines = (int)((rs / 64 + nsb - 1) / nsb);

	for (int64_t r = row0; r < row1; r++) {
		const char *row = (const char *)w + r * rs;
		const struct edgeq_block_q8_K *ya = a;
		bool pf = r + 1 < row1;
		float acc = 0;

		for (int64_t i = 0; i < nsb; i++) {
			for (int k = 0; pf && k < pf_lines; k++)
				_mm_prefetch(row + rs + (i * pf_lines + k) * 64,
					     _MM_HINT_T0);
			acc = kstep(t, row, i, &ya[i], acc);
		}
		y[r] = acc;
	}
}

/* Prefill: one row x 4 tokens, the super-block unpacked once. */
#define KTK EDGEQ_K_TK
static inline __attribute__((always_inline)) void
tilek(enum edgeq_type t, int64_t n, const void *w, const char *a, size_t as,
      float *y, int64_t ldy)
{
	float acc[KTK] = { 0 };

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		struct kunp u;

		unpack_k(t, w, i, &u);
		_Pragma("GCC unroll 4") for (int k = 0; k < KTK; k++)
			acc[k] = kstep_unp(
				t, &u,
				(const struct edgeq_block_q8_K *)(a + k * as) +
					i,
				acc[k]);
	}
	for (int k = 0; k < KTK; k++)
		y[k * ldy] = acc[k];
}

static inline __attribute__((always_inline)) void
matmulk(enum edgeq_type t, const void *w, int64_t n, int64_t row0, int64_t row1,
	const char *a, size_t as, int64_t nb, float *y, int64_t ldy)
{
	edgeq_matmul_k_rows(t, w, n, row0, row1, a, as, nb, y, ldy, tilek,
			    dotk);
}

bool edgeq_avx2_matvec_more(enum edgeq_type type, const void *w, int64_t n,
			    int64_t row0, int64_t row1, const void *a, float *y)
{
#define MV32(T)                                      \
	case T:                                      \
		matvec32(T, w, n, row0, row1, a, y); \
		return true;
#define MVK(T)                                      \
	case T:                                     \
		matveck(T, w, n, row0, row1, a, y); \
		return true;
	switch (type) {
		EDGEQ_FOR_MORE_TYPES(MV32, MVK)
	default:
		return false;
	}
#undef MV32
#undef MVK
}

bool edgeq_avx2_matmul_more(enum edgeq_type type, const void *w, int64_t n,
			    int64_t row0, int64_t row1, const void *a,
			    size_t as, int64_t nb, float *y, int64_t ldy)
{
#define MM32(T)                                                   \
	case T:                                                   \
		matmul32(T, w, n, row0, row1, a, as, nb, y, ldy); \
		return true;
#define MMK(T)                                                   \
	case T:                                                  \
		matmulk(T, w, n, row0, row1, a, as, nb, y, ldy); \
		return true;
	switch (type) {
		EDGEQ_FOR_MORE_TYPES(MM32, MMK)
	default:
		return false;
	}
#undef MM32
#undef MMK
}
