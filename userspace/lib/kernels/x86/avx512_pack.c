// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * AVX-512 VNNI matvec and matmul on weights repacked into groups of 16
 * interleaved rows (kernels/pack.c has the layout). Per group and block,
 * each 64-byte chunk holds 4 weights of each of the 16 rows in one 32-bit
 * lane: vpdpbusd against the token's 4 activation bytes broadcast sums
 * them into the 16 rows' lanes, starting at the bias (-8 or -128 times the
 * activation block's sum), so after the block the 16 lanes are the exact
 * signed block sums; one convert, d_w * d_a (exact: two fp16 values) and
 * one fma advance the 16 rows' chains, as the scalar dot does per block.
 * A matmul unpacks a group's block once for up to 8 tokens; prompts of
 * K-quants of 16 tokens or more take avx512_qk.c's tiles on the form
 * prepared from the packed group.
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/pack_layout.h"

#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c")

#include "kernels/x86/avx512_qk.h"
#include "kernels/x86/pack_act.h"

static inline __m512i bcast4(const int8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return _mm512_set1_epi32(v);
}

static inline __mmask16 lanes(int64_t g, int64_t row0, int64_t row1)
{
	int64_t lo = row0 - 16 * g, hi = row1 - 16 * g;
	uint32_t m = 0xffff;

	if (lo > 0)
		m &= 0xffffu << lo;
	if (hi < 16)
		m &= (1u << hi) - 1;
	return (__mmask16)m;
}

#define AI __attribute__((always_inline)) static inline
/* prefetch distance: whole blocks at their start (Q4_0, Q8_0, Q6_K decode)
 * or spread over the K super-block's sub-blocks */
#define PF_AHEAD 4096
#define PF_K 4096

/*
 * G groups of 16 rows (gsz bytes apart) against NT tokens (compile-time
 * constants at each call, so the accumulators stay in registers), blocks
 * [i0, i1): token k's Q8_0 row at a + k * as, its prepared block i at
 * ap[k * aps + i - i0]; acc[NT * g + k] are group g's rows for token k.
 * Each block's sum runs in two independent vpdpbusd chains (the low and
 * the high nibbles; Q8_0: even and odd chunks), added exactly. With G > 1
 * a token's activation words are read once per block for the G groups.
 */
AI void tile_g(enum edgeq_type t, const uint8_t *gp, size_t gsz, const int G,
	       int64_t i0, int64_t i1, const char *a, size_t as,
	       const struct act *ap, int64_t aps, const int NT, __m512 *acc)
{
	const __m512i m4 = _mm512_set1_epi8(0x0f);
	const size_t gb = edgeq_pk_gb32(t);
	const bool nib = t != EDGEQ_TYPE_Q8_0, aff = edgeq_pk_affine(t);
	const bool five = t == EDGEQ_TYPE_Q5_0 || t == EDGEQ_TYPE_Q5_1;
	/* IQ4_NL's table + 128 for vpshufb */
	const __m512i tab = _mm512_broadcast_i32x4(_mm_xor_si128(
		_mm_loadu_si128((const __m128i *)edgeq_kvalues_iq4nl),
		_mm_set1_epi8((char)0x80)));
	/* the 5-bit types: element e = 4k + b of w[k]'s byte b in a lane
	 * takes bit e of the row's qh, in qh byte k / 2 (vpshufb puts it in
	 * each of the lane's bytes) at bit 4 (k % 2) + b */
	const __m512i qh_at = _mm512_broadcast_i32x4(_mm_setr_epi8(
		0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12));
	const __m512i qh_bit[2] = { _mm512_set1_epi32(0x08040201),
				    _mm512_set1_epi32((int)0x80402010) };
	__m512 c_[8];
	int k;

#pragma GCC unroll 8
	for (k = 0; k < NT * G; k++)
		c_[k] = acc[k];
	for (int64_t i = i0; i < i1; i++) {
#pragma GCC unroll 4
		for (int g = 0; g < G; g++) {
			const uint8_t *blk =
				gp + (size_t)g * gsz + (size_t)i * gb;
			__m512 dw = _mm512_cvtph_ps(
				_mm256_loadu_si256((const __m256i *)blk));
			/* the affine types' 16 mins, once per block */
			__m512 dm =
				aff ? _mm512_cvtph_ps(_mm256_loadu_si256((
					      const __m256i *)(blk +
							       EDGEQ_PK_A_M))) :
				      _mm512_setzero_ps();
			__m512i w[8];

#pragma GCC unroll 9
			for (size_t o = 0; o < gb; o += 64)
				_mm_prefetch((const char *)blk + PF_AHEAD + o,
					     _MM_HINT_T0);
			if (nib) {
#pragma GCC unroll 4
				for (int c = 0; c < 4; c++) {
					__m512i v = _mm512_loadu_si512(
						blk + edgeq_pk_qs32(t) +
						64 * c);

					w[c] = _mm512_and_si512(v, m4);
					w[4 + c] = _mm512_and_si512(
						_mm512_srli_epi16(v, 4), m4);
				}
				if (t == EDGEQ_TYPE_IQ4_NL)
#pragma GCC unroll 8
					for (int c = 0; c < 8; c++)
						w[c] = _mm512_shuffle_epi8(
							tab, w[c]);
				if (five) {
					__m512i qh = _mm512_loadu_si512(
						blk +
						(t == EDGEQ_TYPE_Q5_0 ?
							 EDGEQ_PK_Q50_QH :
							 EDGEQ_PK_Q51_QH));

#pragma GCC unroll 8
					for (int c = 0; c < 8; c++) {
						__m512i h = _mm512_shuffle_epi8(
							qh,
							_mm512_add_epi8(
								qh_at,
								_mm512_set1_epi8((
									char)(c /
									      2))));

						w[c] = _mm512_mask_add_epi8(
							w[c],
							_mm512_test_epi8_mask(
								h,
								qh_bit[c % 2]),
							w[c],
							_mm512_set1_epi8(16));
					}
				}
			} else {
#pragma GCC unroll 8
				for (int c = 0; c < 8; c++)
					w[c] = _mm512_loadu_si512(
						blk + EDGEQ_PK_Q80_QS + 64 * c);
			}
#pragma GCC unroll 8
			for (k = 0; k < NT; k++) {
				const int8_t *q =
					((const struct edgeq_block_q8_0
						  *)(a + k * as))[i]
						.qs;
				const struct act *x = &ap[k * aps + i - i0];
				__m512i s0 = aff ? _mm512_setzero_si512() :
						   _mm512_set1_epi32(x->bias);
				__m512i s1 = _mm512_setzero_si512();

				if (nib) {
#pragma GCC unroll 4
					for (int c = 0; c < 4; c++) {
						s0 = _mm512_dpbusd_epi32(
							s0, w[c],
							bcast4(q + 4 * c));
						s1 = _mm512_dpbusd_epi32(
							s1, w[4 + c],
							bcast4(q + 16 + 4 * c));
					}
				} else {
#pragma GCC unroll 4
					for (int c = 0; c < 8; c += 2) {
						s0 = _mm512_dpbusd_epi32(
							s0, w[c],
							bcast4(q + 4 * c));
						s1 = _mm512_dpbusd_epi32(
							s1, w[c + 1],
							bcast4(q + 4 * c + 4));
					}
				}
				c_[NT * g + k] = _mm512_fmadd_ps(
					_mm512_mul_ps(dw, _mm512_set1_ps(x->d)),
					_mm512_cvtepi32_ps(
						_mm512_add_epi32(s0, s1)),
					c_[NT * g + k]);
				if (aff) /* + m_w * d_a * the block's sum */
					c_[NT * g + k] = _mm512_fmadd_ps(
						_mm512_mul_ps(
							dm,
							_mm512_set1_ps(x->d)),
						_mm512_set1_ps((float)-x->bias),
						c_[NT * g + k]);
			}
		}
	}
#pragma GCC unroll 8
	for (k = 0; k < NT * G; k++)
		acc[k] = c_[k];
}

/* One group against NT tokens: tile_g()'s form with G = 1. */
AI void tile(enum edgeq_type t, const uint8_t *gp, int64_t i0, int64_t i1,
	     const char *a, size_t as, const struct act *ap, int64_t aps,
	     const int NT, __m512 *acc)
{
	tile_g(t, gp, 0, 1, i0, i1, a, as, ap, aps, NT, acc);
}

/* One group against nt tokens of the 32-column type TY (a constant). */
#define TILE_ANY(name, TY)                                            \
	static void name(const uint8_t *gp, int64_t i0, int64_t i1,   \
			 const char *a, size_t as, const void *ap,    \
			 int64_t aps, int nt, __m512 *acc)            \
	{                                                             \
		switch (nt) {                                         \
		case 1:                                               \
			tile(TY, gp, i0, i1, a, as, ap, aps, 1, acc); \
			return;                                       \
		case 2:                                               \
			tile(TY, gp, i0, i1, a, as, ap, aps, 2, acc); \
			return;                                       \
		case 3:                                               \
			tile(TY, gp, i0, i1, a, as, ap, aps, 3, acc); \
			return;                                       \
		case 4:                                               \
			tile(TY, gp, i0, i1, a, as, ap, aps, 4, acc); \
			return;                                       \
		case 5:                                               \
			tile(TY, gp, i0, i1, a, as, ap, aps, 5, acc); \
			return;                                       \
		case 6:                                               \
			tile(TY, gp, i0, i1, a, as, ap, aps, 6, acc); \
			return;                                       \
		case 7:                                               \
			tile(TY, gp, i0, i1, a, as, ap, aps, 7, acc); \
			return;                                       \
		default:                                              \
			tile(TY, gp, i0, i1, a, as, ap, aps, 8, acc); \
			return;                                       \
		}                                                     \
	}
TILE_ANY(tile_q4_0, EDGEQ_TYPE_Q4_0)
TILE_ANY(tile_q8_0, EDGEQ_TYPE_Q8_0)
TILE_ANY(tile_q5_0, EDGEQ_TYPE_Q5_0)
TILE_ANY(tile_q4_1, EDGEQ_TYPE_Q4_1)
TILE_ANY(tile_q5_1, EDGEQ_TYPE_Q5_1)
TILE_ANY(tile_iq4_nl, EDGEQ_TYPE_IQ4_NL)
#undef TILE_ANY

static void tile_any(enum edgeq_type t, const uint8_t *gp, int64_t i0,
		     int64_t i1, const char *a, size_t as, const void *ap,
		     int64_t aps, int nt, __m512 *acc)
{
	switch (t) {
	case EDGEQ_TYPE_Q4_0:
		tile_q4_0(gp, i0, i1, a, as, ap, aps, nt, acc);
		return;
	case EDGEQ_TYPE_Q5_0:
		tile_q5_0(gp, i0, i1, a, as, ap, aps, nt, acc);
		return;
	case EDGEQ_TYPE_Q4_1:
		tile_q4_1(gp, i0, i1, a, as, ap, aps, nt, acc);
		return;
	case EDGEQ_TYPE_Q5_1:
		tile_q5_1(gp, i0, i1, a, as, ap, aps, nt, acc);
		return;
	case EDGEQ_TYPE_IQ4_NL:
		tile_iq4_nl(gp, i0, i1, a, as, ap, aps, nt, acc);
		return;
	default:
		tile_q8_0(gp, i0, i1, a, as, ap, aps, nt, acc);
		return;
	}
}

/* ---- Q4_K ---- */

/*
 * Sub-block j's weights in chunk c of the packed Q4_K/Q5_K super-block at
 * sb: the low (j even) or high nibbles of pair j / 2's chunk c; Q5_K gets
 * bit j of each qh byte as bit 4 (a 16-bit shift, then the mask keeps
 * only bits of the same byte; (m10 & h) | w = imm 0xea).
 */
AI __m512i k_weights(const uint8_t *sb, int j, int c, bool Q5)
{
	__m512i v = _mm512_loadu_si512(sb + EDGEQ_PK_K_QS + 512 * (j >> 1) +
				       64 * c);
	__m512i w = _mm512_and_si512((j & 1) ? _mm512_srli_epi16(v, 4) : v,
				     _mm512_set1_epi8(0x0f));

	if (Q5) {
		__m512i h = _mm512_loadu_si512(sb + EDGEQ_PK_GB_Q4_K + 64 * c);

		h = j <= 4 ? _mm512_slli_epi16(h, 4 - j) :
			     _mm512_srli_epi16(h, j - 4);
		w = _mm512_ternarylogic_epi32(_mm512_set1_epi8(0x10), h, w,
					      0xea);
	}
	return w;
}

/* The 16 rows' mins 2 jj and 2 jj + 1 as int16 pairs. */
AI __m512i k_mins(const uint8_t *sb, int jj)
{
	return _mm512_or_si512(
		_mm512_cvtepu8_epi32(_mm_loadu_si128(
			(const __m128i *)(sb + EDGEQ_PK_K_MIN + 32 * jj))),
		_mm512_slli_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128((
					  const __m128i *)(sb + EDGEQ_PK_K_MIN +
							   16 + 32 * jj))),
				  16));
}

/*
 * One group of 16 rows against NT Q8_K tokens, super-blocks [i0, i1):
 * per pair of sub-blocks the 8 chunks are unpacked once (low nibbles:
 * sub-block 2jj, high: 2jj+1); each token's sub-block sums (vpdpbusd, in
 * two chains) are weighted by the scales (vpmulld) into the exact isum,
 * the mins against the activation's pair sums (vpmaddwd) into summins;
 * then fma(d * d_a, isum) and fnmadd(dmin * d_a, summins) as the scalar
 * dot's two steps.
 */
AI void tile_k(const uint8_t *gp, int64_t i0, int64_t i1, const char *a,
	       size_t as, const struct actk *ap, int64_t aps, const int NT,
	       const bool Q5, __m512 *acc)
{
	const size_t GB = Q5 ? EDGEQ_PK_GB_Q5_K : EDGEQ_PK_GB_Q4_K;
	__m512 c_[8];
	int k;

#pragma GCC unroll 8
	for (k = 0; k < NT; k++)
		c_[k] = acc[k];
	for (int64_t i = i0; i < i1; i++) {
		const uint8_t *sb = gp + (size_t)i * GB;
		__m512 dw = _mm512_cvtph_ps(
			_mm256_loadu_si256((const __m256i *)sb));
		__m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256(
			(const __m256i *)(sb + EDGEQ_PK_K_DMIN)));
		__m512i isum[8], summ[8];

#pragma GCC unroll 8
		for (k = 0; k < NT; k++)
			isum[k] = _mm512_setzero_si512();
			/* sub-block j = 2jj + hf: the low (hf 0) or high nibbles of
		 * pair jj's 8 chunks, unpacked once for the NT tokens */
#pragma GCC unroll 8
		for (int j = 0; j < 8; j++) {
			/* an eighth of the super-block's lines per
			 * sub-block: a burst of all of them at once fills
			 * the miss buffers and stalls the loads behind */
#pragma GCC unroll 6
			for (size_t o = (GB / 64 * j / 8) * 64;
			     o < (GB / 64 * (j + 1) / 8) * 64; o += 64)
				_mm_prefetch((const char *)sb + PF_K + o,
					     _MM_HINT_T0);
			__m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128((
				const __m128i *)(sb + EDGEQ_PK_K_SC + 16 * j)));
			__m512i w[8];

#pragma GCC unroll 8
			for (int c = 0; c < 8; c++)
				w[c] = k_weights(sb, j, c, Q5);
#pragma GCC unroll 8
			for (k = 0; k < NT; k++) {
				const int8_t *q =
					((const struct edgeq_block_q8_K
						  *)(a + k * as))[i]
						.qs +
					32 * j;
				__m512i s0 = _mm512_setzero_si512(), s1 = s0;

#pragma GCC unroll 4
				for (int c = 0; c < 8; c += 2) {
					s0 = _mm512_dpbusd_epi32(
						s0, w[c], bcast4(q + 4 * c));
					s1 = _mm512_dpbusd_epi32(
						s1, w[c + 1],
						bcast4(q + 4 * c + 4));
				}
				isum[k] = _mm512_add_epi32(
					isum[k],
					_mm512_mullo_epi32(
						_mm512_add_epi32(s0, s1), sc));
			}
		}
		/* the mins against the activation's sub-block sums, in pairs */
#pragma GCC unroll 8
		for (k = 0; k < NT; k++)
			summ[k] = _mm512_setzero_si512();
#pragma GCC unroll 4
		for (int jj = 0; jj < 4; jj++) {
			__m512i mp = k_mins(sb, jj);

#pragma GCC unroll 8
			for (k = 0; k < NT; k++)
				summ[k] = _mm512_add_epi32(
					summ[k],
					_mm512_madd_epi16(
						mp, _mm512_set1_epi32(
							    ap[k * aps + i - i0]
								    .bp[jj])));
		}
#pragma GCC unroll 8
		for (k = 0; k < NT; k++) {
			__m512 da = _mm512_set1_ps(ap[k * aps + i - i0].d);

			c_[k] = _mm512_fmadd_ps(_mm512_mul_ps(dw, da),
						_mm512_cvtepi32_ps(isum[k]),
						c_[k]);
			c_[k] = _mm512_fnmadd_ps(_mm512_mul_ps(dm, da),
						 _mm512_cvtepi32_ps(summ[k]),
						 c_[k]);
		}
	}
#pragma GCC unroll 8
	for (k = 0; k < NT; k++)
		acc[k] = c_[k];
}

/*
 * The same for 5-8 tokens (a prompt's tiles), chunk by chunk: each unpacked
 * chunk meets every token before the next one is made, so one weight
 * vector is live instead of eight and the tokens' sums stay in registers.
 * The integer sums are exact, so the order of their adds is free; the
 * float steps per token are tile_k's.
 */
AI void tile_kw(const uint8_t *gp, int64_t i0, int64_t i1, const char *a,
		size_t as, const struct actk *ap, int64_t aps, const int NT,
		const bool Q5, __m512 *acc)
{
	const size_t GB = Q5 ? EDGEQ_PK_GB_Q5_K : EDGEQ_PK_GB_Q4_K;
	int k;

	for (int64_t i = i0; i < i1; i++) {
		const uint8_t *sb = gp + (size_t)i * GB;
		__m512i isum[8];

#pragma GCC unroll 8
		for (k = 0; k < NT; k++)
			isum[k] = _mm512_setzero_si512();
#pragma GCC unroll 8
		for (int j = 0; j < 8; j++) {
			__m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128((
				const __m128i *)(sb + EDGEQ_PK_K_SC + 16 * j)));
			__m512i sd[8];

#pragma GCC unroll 6
			for (size_t o = (GB / 64 * j / 8) * 64;
			     o < (GB / 64 * (j + 1) / 8) * 64; o += 64)
				_mm_prefetch((const char *)sb + PF_K + o,
					     _MM_HINT_T0);
#pragma GCC unroll 8
			for (int c = 0; c < 8; c++) {
				__m512i w = k_weights(sb, j, c, Q5);

#pragma GCC unroll 8
				for (k = 0; k < NT; k++)
					sd[k] = _mm512_dpbusd_epi32(
						c ? sd[k] :
						    _mm512_setzero_si512(),
						w,
						bcast4(((const struct edgeq_block_q8_K
								 *)(a +
								    k * as))[i]
							       .qs +
						       32 * j + 4 * c));
			}
#pragma GCC unroll 8
			for (k = 0; k < NT; k++)
				isum[k] = _mm512_add_epi32(
					isum[k], _mm512_mullo_epi32(sd[k], sc));
		}
		__m512i mp[4];

#pragma GCC unroll 4
		for (int jj = 0; jj < 4; jj++)
			mp[jj] = k_mins(sb, jj);
		__m512 dw = _mm512_cvtph_ps(
			_mm256_loadu_si256((const __m256i *)sb));
		__m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256(
			(const __m256i *)(sb + EDGEQ_PK_K_DMIN)));

#pragma GCC unroll 8
		for (k = 0; k < NT; k++) {
			const struct actk *ak = &ap[k * aps + i - i0];
			__m512 da = _mm512_set1_ps(ak->d);
			__m512i summ = _mm512_setzero_si512();

#pragma GCC unroll 4
			for (int jj = 0; jj < 4; jj++)
				summ = _mm512_add_epi32(
					summ,
					_mm512_madd_epi16(
						mp[jj],
						_mm512_set1_epi32(ak->bp[jj])));
			acc[k] = _mm512_fmadd_ps(_mm512_mul_ps(dw, da),
						 _mm512_cvtepi32_ps(isum[k]),
						 acc[k]);
			acc[k] = _mm512_fnmadd_ps(_mm512_mul_ps(dm, da),
						  _mm512_cvtepi32_ps(summ),
						  acc[k]);
		}
	}
}

static void tile_k_any(enum edgeq_type t, const uint8_t *gp, int64_t i0,
		       int64_t i1, const char *a, size_t as, const void *ap,
		       int64_t aps, int nt, __m512 *acc)
{
#define T(F, N)                                                       \
	case N:                                                       \
		if (t == EDGEQ_TYPE_Q5_K)                             \
			F(gp, i0, i1, a, as, ap, aps, N, true, acc);  \
		else                                                  \
			F(gp, i0, i1, a, as, ap, aps, N, false, acc); \
		return
	switch (nt) {
		T(tile_k, 1);
		T(tile_k, 2);
		T(tile_k, 3);
		T(tile_k, 4);
		T(tile_kw, 5);
		T(tile_kw, 6);
		T(tile_kw, 7);
		T(tile_kw, 8);
	}
#undef T
}

/* ---- Q6_K ---- */

/*
 * Sub-block 8 n + c4 + 2 j's weights (q + 32) in chunk c = 4 c4 + cc of
 * the packed Q6_K super-block at sb: the low (j < 2) or high nibbles of
 * ql at n (j even) or n + 32 bytes (j odd), and qh's bit pair j moved to
 * bits 4-5 (a 16-bit shift; the mask keeps the byte's own).
 */
AI __m512i q6_weights(const uint8_t *sb, int n, int c, int j)
{
	const __m512i m4 = _mm512_set1_epi8(0x0f);
	__m512i Q = _mm512_loadu_si512(sb + EDGEQ_PK_16_QS +
				       64 * (16 * n + (j & 1) * 8 + c));
	__m512i H = _mm512_loadu_si512(sb + EDGEQ_PK_Q6K_QH + 64 * (8 * n + c));
	__m512i lo = j < 2 ? _mm512_and_si512(Q, m4) :
			     _mm512_and_si512(_mm512_srli_epi16(Q, 4), m4);
	__m512i hb = j == 0 ? _mm512_slli_epi16(H, 4) :
		     j == 1 ? _mm512_slli_epi16(H, 2) :
		     j == 2 ? H :
			      _mm512_srli_epi16(H, 2);

	return _mm512_ternarylogic_epi32(_mm512_set1_epi8(0x30), hb, lo, 0xea);
}

/*
 * One group against NT tokens, super-blocks [i0, i1). For half n and
 * quarter c4, the 4 chunks c' = 4 c4 .. 4 c4 + 3 of ql at n, ql at n + 32
 * bytes and qh give 4 weight vectors each (q + 32, from the nibbles and
 * the 2-bit pairs, joined with vpternlogd: a 16-bit shift moves a pair
 * to bits 4-5 and the mask keeps the byte's own), for the sub-blocks
 * 8n + c4, + 2, + 4, + 6; each sub-block's sum starts at -32 * its
 * activation sum, so it is the exact signed dot, then weighted by the
 * sign-extended scale (vpmulld) into isum, and fma(d * d_a, isum).
 */
AI void tile_q6(const uint8_t *gp, int64_t i0, int64_t i1, const char *a,
		size_t as, const struct act6 *ap, int64_t aps, const int NT,
		__m512 *acc)
{
	__m512 c_[4];
	int k;

#pragma GCC unroll 4
	for (k = 0; k < NT; k++)
		c_[k] = acc[k];
	for (int64_t i = i0; i < i1; i++) {
		const uint8_t *sb = gp + (size_t)i * EDGEQ_PK_GB_Q6_K;
		__m512 dw = _mm512_cvtph_ps(
			_mm256_loadu_si256((const __m256i *)sb));
		__m512i isum[4];

#pragma GCC unroll 53
		for (size_t o = 0; o < EDGEQ_PK_GB_Q6_K; o += 64)
			_mm_prefetch((const char *)sb + PF_AHEAD + o,
				     _MM_HINT_T0);
#pragma GCC unroll 4
		for (k = 0; k < NT; k++)
			isum[k] = _mm512_setzero_si512();
#pragma GCC unroll 4
		for (int q4 = 0; q4 < 4; q4++) {
			const int n = q4 >> 1, c4 = q4 & 1;
			__m512i sc[4], s[4][4];

#pragma GCC unroll 4
			for (int j = 0; j < 4; j++)
				sc[j] = _mm512_cvtepi8_epi32(_mm_loadu_si128(
					(const __m128i *)(sb + EDGEQ_PK_16_SC +
							  16 * (8 * n + c4 +
								2 * j))));
#pragma GCC unroll 4
			for (k = 0; k < NT; k++)
#pragma GCC unroll 4
				for (int j = 0; j < 4; j++)
					s[k][j] = _mm512_set1_epi32(
						ap[k * aps + i - i0]
							.nb32[8 * n + c4 +
							      2 * j]);
#pragma GCC unroll 4
			for (int cc = 0; cc < 4; cc++) {
				const int c = 4 * c4 + cc;
				__m512i w[4];

#pragma GCC unroll 4
				for (int j = 0; j < 4; j++)
					w[j] = q6_weights(sb, n, c, j);
#pragma GCC unroll 4
				for (k = 0; k < NT; k++) {
					const int8_t *q =
						((const struct edgeq_block_q8_K
							  *)(a + k * as))[i]
							.qs +
						128 * n + 4 * c;

#pragma GCC unroll 4
					for (int j = 0; j < 4; j++)
						s[k][j] = _mm512_dpbusd_epi32(
							s[k][j], w[j],
							bcast4(q + 32 * j));
				}
			}
#pragma GCC unroll 4
			for (k = 0; k < NT; k++)
				isum[k] = _mm512_add_epi32(
					isum[k],
					_mm512_add_epi32(
						_mm512_add_epi32(
							_mm512_mullo_epi32(
								s[k][0], sc[0]),
							_mm512_mullo_epi32(
								s[k][1], sc[1])),
						_mm512_add_epi32(
							_mm512_mullo_epi32(
								s[k][2], sc[2]),
							_mm512_mullo_epi32(
								s[k][3],
								sc[3]))));
		}
#pragma GCC unroll 4
		for (k = 0; k < NT; k++)
			c_[k] = _mm512_fmadd_ps(
				_mm512_mul_ps(
					dw,
					_mm512_set1_ps(ap[k * aps + i - i0].d)),
				_mm512_cvtepi32_ps(isum[k]), c_[k]);
	}
#pragma GCC unroll 4
	for (k = 0; k < NT; k++)
		acc[k] = c_[k];
}

/*
 * The same for 5-8 tokens, one sub-block at a time: its 4 weight vectors
 * are made from their chunks (ql at n or n + 32 bytes, and qh) as each
 * meets every token, so the tokens' sums stay in registers (tile_q6 keeps
 * 4 sub-blocks per token in flight, too many for 8 tokens).
 */
AI void tile_q6w(const uint8_t *gp, int64_t i0, int64_t i1, const char *a,
		 size_t as, const struct act6 *ap, int64_t aps, const int NT,
		 __m512 *acc)
{
	int k;

	for (int64_t i = i0; i < i1; i++) {
		const uint8_t *sb = gp + (size_t)i * EDGEQ_PK_GB_Q6_K;
		__m512i isum[8];

#pragma GCC unroll 8
		for (k = 0; k < NT; k++)
			isum[k] = _mm512_setzero_si512();
#pragma GCC unroll 16
		for (int u = 0; u < 16; u++) {
			/* sub-block 8n + c4 + 2j, from quarter q4 = 2n + c4 */
			const int q4 = u >> 2, j = u & 3, n = q4 >> 1,
				  c4 = q4 & 1, g = 8 * n + c4 + 2 * j;
			__m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128(
				(const __m128i *)(sb + EDGEQ_PK_16_SC +
						  16 * g)));
			__m512i sd[8];

#pragma GCC unroll 4
			for (size_t o =
				     (EDGEQ_PK_GB_Q6_K / 64 * (size_t)u / 16) *
				     64;
			     o < (EDGEQ_PK_GB_Q6_K / 64 * (size_t)(u + 1) /
				  16) * 64;
			     o += 64)
				_mm_prefetch((const char *)sb + PF_K + o,
					     _MM_HINT_T0);
#pragma GCC unroll 8
			for (k = 0; k < NT; k++)
				sd[k] = _mm512_set1_epi32(
					ap[k * aps + i - i0].nb32[g]);
#pragma GCC unroll 4
			for (int cc = 0; cc < 4; cc++) {
				const int c = 4 * c4 + cc;
				__m512i w = q6_weights(sb, n, c, j);

#pragma GCC unroll 8
				for (k = 0; k < NT; k++)
					sd[k] = _mm512_dpbusd_epi32(
						sd[k], w,
						bcast4(((const struct edgeq_block_q8_K
								 *)(a +
								    k * as))[i]
							       .qs +
						       128 * n + 4 * c +
						       32 * j));
			}
#pragma GCC unroll 8
			for (k = 0; k < NT; k++)
				isum[k] = _mm512_add_epi32(
					isum[k], _mm512_mullo_epi32(sd[k], sc));
		}
		__m512 dw = _mm512_cvtph_ps(
			_mm256_loadu_si256((const __m256i *)sb));

#pragma GCC unroll 8
		for (k = 0; k < NT; k++)
			acc[k] = _mm512_fmadd_ps(
				_mm512_mul_ps(
					dw,
					_mm512_set1_ps(ap[k * aps + i - i0].d)),
				_mm512_cvtepi32_ps(isum[k]), acc[k]);
	}
}

static void tile_q6_any(enum edgeq_type t, const uint8_t *gp, int64_t i0,
			int64_t i1, const char *a, size_t as, const void *ap,
			int64_t aps, int nt, __m512 *acc)
{
	switch (nt) {
	case 1:
		tile_q6(gp, i0, i1, a, as, ap, aps, 1, acc);
		return;
	case 2:
		tile_q6(gp, i0, i1, a, as, ap, aps, 2, acc);
		return;
	case 3:
		tile_q6(gp, i0, i1, a, as, ap, aps, 3, acc);
		return;
	case 4:
		tile_q6(gp, i0, i1, a, as, ap, aps, 4, acc);
		return;
	case 5:
		tile_q6w(gp, i0, i1, a, as, ap, aps, 5, acc);
		return;
	case 6:
		tile_q6w(gp, i0, i1, a, as, ap, aps, 6, acc);
		return;
	case 7:
		tile_q6w(gp, i0, i1, a, as, ap, aps, 7, acc);
		return;
	default:
		tile_q6w(gp, i0, i1, a, as, ap, aps, 8, acc);
		return;
	}
}

/* ---- long prompts: the file layout's prefill tiles ---- */

/*
 * A prompt of many tokens goes through avx512_qk.c's 16-row x 8-token
 * tiles (bytes ready in their prepared form, one weight vector per 4
 * bytes, no unpacking in the tile), the form prepared here from the
 * packed group, a copy and a few shifts per chunk: cheaper than from the
 * file's rows.
 */
struct grp {
	enum edgeq_type t;
	const uint8_t *w;
	size_t gsz;
};

static void prep_k4_packed(struct q4k_prep *P, const uint8_t *sb)
{
	P->d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)sb));
	P->dmin = _mm512_cvtph_ps(
		_mm256_loadu_si256((const __m256i *)(sb + EDGEQ_PK_K_DMIN)));
	for (int j = 0; j < 8; j++)
		P->sc[j] = _mm512_cvtepu8_epi32(_mm_loadu_si128(
			(const __m128i *)(sb + EDGEQ_PK_K_SC + 16 * j)));
	for (int jj = 0; jj < 4; jj++)
		P->mp[jj] = k_mins(sb, jj);
}

static void prep_q32_xs(enum edgeq_type t, void *Pv, const uint8_t *sb);

static void prep_group(void *Pv, int64_t r, int64_t nsb, const void *arg)
{
	const struct grp *G = arg;
	const uint8_t *gp = G->w + (size_t)(r / 16) * G->gsz;

	for (int64_t i = 0; i < nsb; i++) {
		if (G->t == EDGEQ_TYPE_Q3_K || G->t == EDGEQ_TYPE_IQ4_XS)
			prep_q32_xs(
				G->t, (struct q6k_prep *)Pv + i,
				gp + (size_t)i * (G->t == EDGEQ_TYPE_Q3_K ?
							  EDGEQ_PK_GB_Q3_K :
							  EDGEQ_PK_GB_IQ4_XS));
		else if (G->t == EDGEQ_TYPE_Q2_K)
			prep_q32_xs(G->t, (struct q2k_prep *)Pv + i,
				    gp + (size_t)i * EDGEQ_PK_GB_Q2_K);
		else if (G->t == EDGEQ_TYPE_Q4_K) {
			const uint8_t *sb = gp + (size_t)i * EDGEQ_PK_GB_Q4_K;
			struct q4k_prep *P = (struct q4k_prep *)Pv + i;

			prep_k4_packed(P, sb);
			for (int c = 0; c < 32; c++)
				P->qs[c] = _mm512_loadu_si512(
					sb + EDGEQ_PK_K_QS + 64 * c);
		} else if (G->t == EDGEQ_TYPE_Q5_K) {
			const uint8_t *sb = gp + (size_t)i * EDGEQ_PK_GB_Q5_K;
			struct q5k_prep *P = (struct q5k_prep *)Pv + i;

			prep_k4_packed((struct q4k_prep *)P, sb);
			for (int j = 0; j < 8; j++)
				for (int c = 0; c < 8; c++)
					P->q[8 * j + c] =
						k_weights(sb, j, c, true);
		} else {
			const uint8_t *sb = gp + (size_t)i * EDGEQ_PK_GB_Q6_K;
			struct q6k_prep *P = (struct q6k_prep *)Pv + i;

			P->d = _mm512_cvtph_ps(
				_mm256_loadu_si256((const __m256i *)sb));
			/* sub-block 8n + c4 + 2j, as tile_q6w */
			for (int u = 0; u < 16; u++) {
				const int q4 = u >> 2, j = u & 3, n = q4 >> 1,
					  c4 = q4 & 1, sg = 8 * n + c4 + 2 * j;

				P->sc[sg] = _mm512_cvtepi8_epi32(_mm_loadu_si128(
					(const __m128i *)(sb + EDGEQ_PK_16_SC +
							  16 * sg)));
				for (int cc = 0; cc < 4; cc++)
					P->q[4 * sg + cc] = q6_weights(
						sb, n, 4 * c4 + cc, j);
			}
		}
	}
}

/* Prompts of at least this many tokens take the prepared tiles. */
#define PREP_MIN_TOKENS 16

/* ---- one driver for every packed type ---- */

/* ---- IQ4_XS ---- */

/*
 * One group of 16 rows against NT Q8_K tokens, super-blocks [i0, i1): per
 * sub-block j its 4 chunks give 8 weight vectors (the nibbles through the
 * table + 128), each token's exact sub-block sum (two vpdpbusd chains from
 * -128 times its sum) is weighted by the signed scales (vpmulld) into the
 * exact isum, then one fma(d * d_a, isum) per super-block: the scalar
 * dot's order.
 */
AI void tile_xs(const uint8_t *gp, int64_t i0, int64_t i1, const char *a,
		size_t as, const struct actx *ap, int64_t aps, const int NT,
		__m512 *acc)
{
	const size_t GB = EDGEQ_PK_GB_IQ4_XS;
	const __m512i m4 = _mm512_set1_epi8(0x0f);
	const __m512i tab = _mm512_broadcast_i32x4(_mm_xor_si128(
		_mm_loadu_si128((const __m128i *)edgeq_kvalues_iq4nl),
		_mm_set1_epi8((char)0x80)));
	__m512 c_[8];
	int k;

#pragma GCC unroll 8
	for (k = 0; k < NT; k++)
		c_[k] = acc[k];
	for (int64_t i = i0; i < i1; i++) {
		const uint8_t *sb = gp + (size_t)i * GB;
		__m512i isum[8];

#pragma GCC unroll 8
		for (k = 0; k < NT; k++)
			isum[k] = _mm512_setzero_si512();
#pragma GCC unroll 8
		for (int j = 0; j < 8; j++) {
			__m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128(
				(const __m128i *)(sb + EDGEQ_PK_XS_SC +
						  16 * j)));
			__m512i w[8];

#pragma GCC unroll 6
			for (size_t o = (GB / 64 * j / 8) * 64;
			     o < (GB / 64 * (j + 1) / 8) * 64; o += 64)
				_mm_prefetch((const char *)sb + PF_K + o,
					     _MM_HINT_T0);
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++) {
				__m512i v = _mm512_loadu_si512(
					sb + EDGEQ_PK_XS_QS + 256 * j + 64 * c);

				w[c] = _mm512_shuffle_epi8(
					tab, _mm512_and_si512(v, m4));
				w[4 + c] = _mm512_shuffle_epi8(
					tab,
					_mm512_and_si512(
						_mm512_srli_epi16(v, 4), m4));
			}
#pragma GCC unroll 8
			for (k = 0; k < NT; k++) {
				const int8_t *q =
					((const struct edgeq_block_q8_K
						  *)(a + k * as))[i]
						.qs +
					32 * j;
				__m512i s0 = _mm512_set1_epi32(
						ap[k * aps + i - i0].nb128[j]),
					s1 = _mm512_setzero_si512();

#pragma GCC unroll 4
				for (int c = 0; c < 4; c++) {
					s0 = _mm512_dpbusd_epi32(
						s0, w[c], bcast4(q + 4 * c));
					s1 = _mm512_dpbusd_epi32(
						s1, w[4 + c],
						bcast4(q + 16 + 4 * c));
				}
				isum[k] = _mm512_add_epi32(
					isum[k],
					_mm512_mullo_epi32(
						_mm512_add_epi32(s0, s1), sc));
			}
		}
		__m512 dw = _mm512_cvtph_ps(
			_mm256_loadu_si256((const __m256i *)sb));

#pragma GCC unroll 8
		for (k = 0; k < NT; k++)
			c_[k] = _mm512_fmadd_ps(
				_mm512_mul_ps(
					dw,
					_mm512_set1_ps(ap[k * aps + i - i0].d)),
				_mm512_cvtepi32_ps(isum[k]), c_[k]);
	}
#pragma GCC unroll 8
	for (k = 0; k < NT; k++)
		acc[k] = c_[k];
}

static void tile_xs_any(enum edgeq_type t, const uint8_t *gp, int64_t i0,
			int64_t i1, const char *a, size_t as, const void *ap,
			int64_t aps, int nt, __m512 *acc)
{
	(void)t;
	switch (nt) {
	case 1:
		tile_xs(gp, i0, i1, a, as, ap, aps, 1, acc);
		return;
	case 2:
		tile_xs(gp, i0, i1, a, as, ap, aps, 2, acc);
		return;
	case 3:
		tile_xs(gp, i0, i1, a, as, ap, aps, 3, acc);
		return;
	case 4:
		tile_xs(gp, i0, i1, a, as, ap, aps, 4, acc);
		return;
	case 5:
		tile_xs(gp, i0, i1, a, as, ap, aps, 5, acc);
		return;
	case 6:
		tile_xs(gp, i0, i1, a, as, ap, aps, 6, acc);
		return;
	case 7:
		tile_xs(gp, i0, i1, a, as, ap, aps, 7, acc);
		return;
	default:
		tile_xs(gp, i0, i1, a, as, ap, aps, 8, acc);
		return;
	}
}

/* ---- Q3_K, Q2_K (Q6_K's frame, the scales in kernels/pack.c's sc16
 * order) ---- */

/* Sub-block g's scale bytes of the 16 rows, row r in lane r: rows
 * 4v..4v+3 lie at 64 v of the sc16 order's offset for g. */
AI __m128i sc16_rows(const uint8_t *sb, const int g)
{
	const uint8_t *p = sb + edgeq_pk_sc16(g, 0);
	int32_t r0, r1, r2, r3;

	/* four dword inserts: a 16-byte load of four 4-byte stores would
	 * miss store forwarding */
	memcpy(&r0, p, 4);
	memcpy(&r1, p + 64, 4);
	memcpy(&r2, p + 128, 4);
	memcpy(&r3, p + 192, 4);
	return _mm_setr_epi32(r0, r1, r2, r3);
}

/*
 * One group of 16 rows against NT Q8_K tokens, super-blocks [i0, i1).
 * Sub-block g = 8 n + 2 j + h has its 16 elements in bits 2j..2j+1 of
 * qs chunks 8n + 4h .. + 3 (element 4c' + b at byte b of chunk c'); Q3_K
 * adds 4 where bit 4n + j of hmask chunk 4h + c' is set (q + 4, 0..7:
 * the chain starts at -4 times the activation group's sum). Each exact
 * sub-block sum is weighted by its scale (vpmulld; Q3_K's signed, Q2_K's
 * low nibble, its high nibble the min against the group's sum), then the
 * scalar dot's float steps per super-block: fma(d * d_a, isum) and, for
 * Q2_K, fnmadd(dmin * d_a, summins).
 */
AI void tile_q32(const uint8_t *gp, int64_t i0, int64_t i1, const char *a,
		 size_t as, const struct act16 *ap, int64_t aps, const int NT,
		 const bool Q3, __m512 *acc)
{
	const size_t GB = Q3 ? EDGEQ_PK_GB_Q3_K : EDGEQ_PK_GB_Q2_K;
	const __m512i m3 = _mm512_set1_epi8(3);
	__m512 c_[8];
	int k;

#pragma GCC unroll 8
	for (k = 0; k < NT; k++)
		c_[k] = acc[k];
	for (int64_t i = i0; i < i1; i++) {
		const uint8_t *sb = gp + (size_t)i * GB;
		__m512i isum[8], summ[8];

#pragma GCC unroll 8
		for (k = 0; k < NT; k++) {
			isum[k] = _mm512_setzero_si512();
			summ[k] = _mm512_setzero_si512();
		}
#pragma GCC unroll 16
		for (int g = 0; g < 16; g++) {
			const int n = g / 8, j = (g / 2) % 4, h = g % 2;
			/* the weights are 1 << ws times their value (the
			 * bits where they lie, but Q3_K's top pair, whose
			 * + 4 would not fit a byte there); the scale 1 << sh
			 * times, so each sum is 16 (Q3_K) or 64 (Q2_K)
			 * times the canonical one */
			const int ws = Q3 && j == 3 ? 0 : 2 * j;
			const int sh = (Q3 ? 4 : 6) - ws;
			__m512i sc, mn = _mm512_setzero_si512(), w[4];

			if (g % 2 == 0)
#pragma GCC unroll 4
				for (size_t o = (GB / 64 * g / 16) * 64;
				     o < (GB / 64 * (g + 2) / 16) * 64; o += 64)
					_mm_prefetch((const char *)sb + PF_K +
							     o,
						     _MM_HINT_T0);
			if (Q3) {
				sc = _mm512_slli_epi32(
					_mm512_cvtepi8_epi32(sc16_rows(sb, g)),
					sh);
			} else {
				__m512i b =
					_mm512_cvtepu8_epi32(sc16_rows(sb, g));

				sc = _mm512_slli_epi32(
					_mm512_and_si512(b,
							 _mm512_set1_epi32(15)),
					sh);
				mn = _mm512_srli_epi32(b, 4);
			}
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++) {
				__m512i v = _mm512_loadu_si512(
					sb + EDGEQ_PK_16_QS +
					64 * (8 * n + 4 * h + c));

				w[c] = ws == 2 * j ?
					       _mm512_and_si512(
						       v,
						       _mm512_set1_epi8(
							       (char)(3
								      << ws))) :
					       _mm512_and_si512(
						       _mm512_srli_epi16(v, 6),
						       m3);
				if (Q3)
					w[c] = _mm512_mask_add_epi8(
						w[c],
						_mm512_test_epi8_mask(
							_mm512_loadu_si512(
								sb +
								EDGEQ_PK_Q3K_HMASK +
								64 * (4 * h +
								      c)),
							_mm512_set1_epi8((
								char)(1
								      << (4 * n +
									  j)))),
						w[c],
						_mm512_set1_epi8(
							(char)(4 << ws)));
			}
#pragma GCC unroll 8
			for (k = 0; k < NT; k++) {
				const int8_t *q =
					((const struct edgeq_block_q8_K
						  *)(a + k * as))[i]
						.qs +
					16 * g;
				int32_t bg = ap[k * aps + i - i0].b[g];
				/* Q3_K's chain start: -4 times the group's
				 * sum, times the weights' 1 << ws */
				__m512i s0 = Q3 ? _mm512_set1_epi32(bg *
								    (1 << ws)) :
						  _mm512_setzero_si512(),
					s1 = _mm512_setzero_si512();

				s0 = _mm512_dpbusd_epi32(s0, w[0], bcast4(q));
				s1 = _mm512_dpbusd_epi32(s1, w[1],
							 bcast4(q + 4));
				s0 = _mm512_dpbusd_epi32(s0, w[2],
							 bcast4(q + 8));
				s1 = _mm512_dpbusd_epi32(s1, w[3],
							 bcast4(q + 12));
				isum[k] = _mm512_add_epi32(
					isum[k],
					_mm512_mullo_epi32(
						_mm512_add_epi32(s0, s1), sc));
				if (!Q3)
					summ[k] = _mm512_add_epi32(
						summ[k],
						_mm512_mullo_epi32(
							mn,
							_mm512_set1_epi32(bg)));
			}
		}
		__m512 dw = _mm512_cvtph_ps(
			_mm256_loadu_si256((const __m256i *)sb));

#pragma GCC unroll 8
		for (k = 0; k < NT; k++) {
			__m512 da = _mm512_set1_ps(ap[k * aps + i - i0].d);

			/* isum is 16 (Q3_K) or 64 (Q2_K) times the exact
			 * sum: its float that times the canonical float,
			 * undone exactly */
			c_[k] = _mm512_fmadd_ps(
				_mm512_mul_ps(dw, da),
				_mm512_mul_ps(_mm512_cvtepi32_ps(isum[k]),
					      _mm512_set1_ps(Q3 ? 0.0625f :
								  0.015625f)),
				c_[k]);
			if (!Q3)
				c_[k] = _mm512_fnmadd_ps(
					_mm512_mul_ps(
						_mm512_cvtph_ps(_mm256_loadu_si256((
							const __m256i
								*)(sb +
								   EDGEQ_PK_Q2K_DMIN))),
						da),
					_mm512_cvtepi32_ps(summ[k]), c_[k]);
		}
	}
#pragma GCC unroll 8
	for (k = 0; k < NT; k++)
		acc[k] = c_[k];
}

#define TILE_Q32(name, Q3)                                                     \
	static void name(enum edgeq_type t, const uint8_t *gp, int64_t i0,     \
			 int64_t i1, const char *a, size_t as, const void *ap, \
			 int64_t aps, int nt, __m512 *acc)                     \
	{                                                                      \
		(void)t;                                                       \
		switch (nt) {                                                  \
		case 1:                                                        \
			tile_q32(gp, i0, i1, a, as, ap, aps, 1, Q3, acc);      \
			return;                                                \
		case 2:                                                        \
			tile_q32(gp, i0, i1, a, as, ap, aps, 2, Q3, acc);      \
			return;                                                \
		case 3:                                                        \
			tile_q32(gp, i0, i1, a, as, ap, aps, 3, Q3, acc);      \
			return;                                                \
		default:                                                       \
			tile_q32(gp, i0, i1, a, as, ap, aps, 4, Q3, acc);      \
			return;                                                \
		}                                                              \
	}
TILE_Q32(tile_q3_any, true)
TILE_Q32(tile_q2_any, false)
#undef TILE_Q32

/*
 * The prefill tiles' prepared form (avx512_qk.h) of one packed Q3_K,
 * Q2_K or IQ4_XS super-block: the packed chunks are already the
 * transposed dwords avx512_qk.c's preparation makes from the file's rows,
 * so each type's values are made from them the same way (Q3_K q + 4,
 * IQ4_XS the table + 128, Q2_K q and its mins in int16 pairs).
 */
static void prep_q32_xs(enum edgeq_type t, void *Pv, const uint8_t *sb)
{
	const __m512i m3 = _mm512_set1_epi8(3), m4 = _mm512_set1_epi8(0x0f);

	if (t == EDGEQ_TYPE_IQ4_XS) {
		const __m512i tab = _mm512_broadcast_i32x4(_mm_xor_si128(
			_mm_loadu_si128((const __m128i *)edgeq_kvalues_iq4nl),
			_mm_set1_epi8((char)0x80)));
		struct q6k_prep *P = Pv;

		P->d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)sb));
		for (int ib = 0; ib < 8; ib++) {
			P->sc[2 * ib] = P->sc[2 * ib + 1] =
				_mm512_cvtepi8_epi32(_mm_loadu_si128(
					(const __m128i *)(sb + EDGEQ_PK_XS_SC +
							  16 * ib)));
			for (int k = 0; k < 4; k++) {
				__m512i v =
					_mm512_loadu_si512(sb + EDGEQ_PK_XS_QS +
							   64 * (4 * ib + k));

				P->q[4 * (2 * ib) + k] = _mm512_shuffle_epi8(
					tab, _mm512_and_si512(v, m4));
				P->q[4 * (2 * ib + 1) + k] = _mm512_shuffle_epi8(
					tab,
					_mm512_and_si512(
						_mm512_srli_epi16(v, 4), m4));
			}
		}
		return;
	}
	for (int g = 0; g < 16; g++) {
		const int n = g / 8, j = (g / 2) % 4, h = g % 2;
		__m512i *q = t == EDGEQ_TYPE_Q3_K ? ((struct q6k_prep *)Pv)->q :
						    ((struct q2k_prep *)Pv)->q;

		for (int c = 0; c < 4; c++) {
			__m512i w = _mm512_and_si512(
				_mm512_srli_epi16(
					_mm512_loadu_si512(
						sb + EDGEQ_PK_16_QS +
						64 * (8 * n + 4 * h + c)),
					2 * j),
				m3);

			if (t == EDGEQ_TYPE_Q3_K)
				w = _mm512_mask_add_epi8(
					w,
					_mm512_test_epi8_mask(
						_mm512_loadu_si512(
							sb +
							EDGEQ_PK_Q3K_HMASK +
							64 * (4 * h + c)),
						_mm512_set1_epi8((
							char)(1
							      << (4 * n + j)))),
					w, _mm512_set1_epi8(4));
			q[4 * g + c] = w;
		}
	}
	if (t == EDGEQ_TYPE_Q3_K) {
		struct q6k_prep *P = Pv;

		P->d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)sb));
		for (int g = 0; g < 16; g++)
			P->sc[g] = _mm512_cvtepi8_epi32(sc16_rows(sb, g));
	} else {
		struct q2k_prep *P = Pv;
		__m512i b[16];

		P->d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)sb));
		P->dmin = _mm512_cvtph_ps(_mm256_loadu_si256(
			(const __m256i *)(sb + EDGEQ_PK_Q2K_DMIN)));
		for (int g = 0; g < 16; g++) {
			b[g] = _mm512_cvtepu8_epi32(sc16_rows(sb, g));
			P->sc[g] =
				_mm512_and_si512(b[g], _mm512_set1_epi32(15));
		}
		for (int p = 0; p < 8; p++)
			P->mp[p] = _mm512_or_si512(
				_mm512_srli_epi32(b[2 * p], 4),
				_mm512_slli_epi32(
					_mm512_srli_epi32(b[2 * p + 1], 4),
					16));
	}
}

struct kind {
	int64_t bs;  /* columns per block */
	size_t gb;   /* packed bytes per group of 16 rows and block */
	size_t ablk; /* bytes of an activation block (Q8_0 or Q8_K) */
	size_t act;  /* bytes of a prepared activation block */
	int tmax;    /* tokens per tile */
	void (*prep)(enum edgeq_type t, const void *a, int64_t nblk, void *out);
	void (*tile)(enum edgeq_type t, const uint8_t *gp, int64_t i0,
		     int64_t i1, const char *a, size_t as, const void *ap,
		     int64_t aps, int nt, __m512 *acc);
};

static const struct kind k_q4_0 = {
	32, EDGEQ_PK_GB_Q4_0, 34, sizeof(struct act), 8, prep_q80, tile_any
};
static const struct kind k_q8_0 = {
	32, EDGEQ_PK_GB_Q8_0, 34, sizeof(struct act), 8, prep_q80, tile_any
};
static const struct kind k_q5_0 = {
	32, EDGEQ_PK_GB_Q5_0, 34, sizeof(struct act), 8, prep_q80, tile_any
};
static const struct kind k_q4_1 = {
	32, EDGEQ_PK_GB_Q4_1, 34, sizeof(struct act), 8, prep_q80, tile_any
};
static const struct kind k_q5_1 = {
	32, EDGEQ_PK_GB_Q5_1, 34, sizeof(struct act), 8, prep_q80, tile_any
};
static const struct kind k_q4_K = {
	256, EDGEQ_PK_GB_Q4_K, 292, sizeof(struct actk), 8, prep_k, tile_k_any
};
static const struct kind k_q5_K = {
	256, EDGEQ_PK_GB_Q5_K, 292, sizeof(struct actk), 8, prep_k, tile_k_any
};
static const struct kind k_iq4_xs = { 256,	  EDGEQ_PK_GB_IQ4_XS,
				      292,	  sizeof(struct actx),
				      8,	  prep_xs,
				      tile_xs_any };
static const struct kind k_q3_K = { 256,	EDGEQ_PK_GB_Q3_K,
				    292,	sizeof(struct act16),
				    4,		prep_q3,
				    tile_q3_any };
static const struct kind k_q2_K = { 256,	EDGEQ_PK_GB_Q2_K,
				    292,	sizeof(struct act16),
				    4,		prep_q2,
				    tile_q2_any };
static const struct kind k_q6_K = {
	256, EDGEQ_PK_GB_Q6_K, 292, sizeof(struct act6), 8, prep_q6, tile_q6_any
};

/* Bytes of a token block's activations (of a 1 MiB L2). */
#define ACT_L2 (512 << 10)

/*
 * A Q4_0/Q8_0 matvec whose groups of 16 rows are longer than this (of a
 * 48 KiB L1) takes 2 (Q4_0) or 4 (Q8_0) groups at once (tile_g()).
 * One group at a time, a 5632-column row's 50 KiB (Q4_0) evicted the
 * token's activations from L1 before the next group came back to them:
 * ffn_down streamed at 21 GB/s, the other matrices at 28-29 (`edgeq bench
 * --profile`, Zen 5, one thread); kbench at 2048 x 5632: +23 % (Q4_0)
 * and +24 % (Q8_0) at one thread, +28 % and +27 % at two.
 */
#define GROUPS_MIN_BYTES (40u << 10)

/* A whole row's blocks of G groups (2, Q8_0: 4) against one token. */
static void tile_groups(enum edgeq_type t, const uint8_t *gp, size_t gsz,
			const char *a, const struct act *ap, int64_t nblk,
			__m512 *acc)
{
#define TG(TY, G)                                                        \
	case TY:                                                         \
		tile_g(TY, gp, gsz, G, 0, nblk, a, 0, ap, nblk, 1, acc); \
		return
	switch (t) {
		TG(EDGEQ_TYPE_Q4_0, 2);
		TG(EDGEQ_TYPE_Q5_0, 2);
		TG(EDGEQ_TYPE_Q4_1, 2);
		TG(EDGEQ_TYPE_Q5_1, 2);
		TG(EDGEQ_TYPE_IQ4_NL, 2);
	default:
		tile_g(EDGEQ_TYPE_Q8_0, gp, gsz, 4, 0, nblk, a, 0, ap, nblk, 1,
		       acc);
		return;
	}
#undef TG
}

/* Without heap scratch, this many blocks are prepared on the stack. */
#define SEG 16

void edgeq_avx512_matmul_packed(enum edgeq_type t, const void *w, int64_t n,
				int64_t row0, int64_t row1, const void *a,
				size_t a_stride, int64_t nb, float *y,
				int64_t ldy)
{
	const struct kind *k = t == EDGEQ_TYPE_Q4_0   ? &k_q4_0 :
			       t == EDGEQ_TYPE_IQ4_NL ? &k_q4_0 :
			       t == EDGEQ_TYPE_Q5_0   ? &k_q5_0 :
			       t == EDGEQ_TYPE_Q4_1   ? &k_q4_1 :
			       t == EDGEQ_TYPE_Q5_1   ? &k_q5_1 :
			       t == EDGEQ_TYPE_Q8_0   ? &k_q8_0 :
			       t == EDGEQ_TYPE_Q4_K   ? &k_q4_K :
			       t == EDGEQ_TYPE_Q5_K   ? &k_q5_K :
			       t == EDGEQ_TYPE_IQ4_XS ? &k_iq4_xs :
			       t == EDGEQ_TYPE_Q3_K   ? &k_q3_K :
			       t == EDGEQ_TYPE_Q2_K   ? &k_q2_K :
							&k_q6_K;
	int64_t nblk = n / k->bs, g, b0, t0, tb;
	size_t gsz = (size_t)nblk * k->gb;
	char *ab = edgeq_thread_scratch((size_t)(nb * nblk) * k->act);
	_Alignas(64) char st[8 * SEG * sizeof(struct act6)];
	__m512 acc[8];

	if (k->bs == 256 && nb >= PREP_MIN_TOKENS) {
		const struct grp G = { t, w, gsz };

		if (edgeq_avx512_matmul_qk_groups(t, n, row0, row1, a, a_stride,
						  nb, y, ldy, prep_group, &G))
			return;
	}
	for (b0 = 0; ab && b0 < nb; b0++)
		k->prep(t, (const char *)a + b0 * a_stride, nblk,
			ab + (size_t)(b0 * nblk) * k->act);
	/* tokens in blocks whose activations stay in L2 while every group
	 * of rows meets them */
	tb = (int64_t)(ACT_L2 / ((size_t)nblk * k->ablk)) / k->tmax * k->tmax;
	if (tb < k->tmax)
		tb = k->tmax;
	if (nb == 1 && ab && gsz > GROUPS_MIN_BYTES && k->bs == 32) {
		const int G = t == EDGEQ_TYPE_Q8_0 ? 4 : 2;

		for (g = row0 / 16; 16 * g < row1; g += G) {
			int ng = (int)((row1 - 16 * g + 15) / 16);
			const uint8_t *gp =
				(const uint8_t *)w + (size_t)g * gsz;

			if (ng > G)
				ng = G;
			for (int j = 0; j < ng; j++)
				acc[j] = _mm512_setzero_ps();
			if (ng < G) /* the last groups of the range */
				for (int j = 0; j < ng; j++)
					k->tile(t, gp + (size_t)j * gsz, 0,
						nblk, a, 0, ab, nblk, 1,
						acc + j);
			else
				tile_groups(t, gp, gsz, a,
					    (const struct act *)ab, nblk, acc);
			for (int j = 0; j < ng; j++)
				_mm512_mask_storeu_ps(y + 16 * (g + j),
						      lanes(g + j, row0, row1),
						      acc[j]);
		}
		return;
	}
	for (t0 = 0; t0 < nb; t0 += tb)
		for (g = row0 / 16; 16 * g < row1; g++) {
			const uint8_t *gp =
				(const uint8_t *)w + (size_t)g * gsz;
			__mmask16 m = lanes(g, row0, row1);
			int64_t t1 = t0 + tb < nb ? t0 + tb : nb;

			for (b0 = t0; b0 < t1; b0 += k->tmax) {
				int nt = t1 - b0 < k->tmax ? (int)(t1 - b0) :
							     k->tmax;
				const char *ak =
					(const char *)a + b0 * a_stride;

				for (int j = 0; j < nt; j++)
					acc[j] = _mm512_setzero_ps();
				if (ab)
					k->tile(t, gp, 0, nblk, ak, a_stride,
						ab + (size_t)(b0 * nblk) *
								k->act,
						nblk, nt, acc);
				else /* each segment's blocks prepared on the way */
					for (int64_t i0 = 0; i0 < nblk;
					     i0 += SEG) {
						int64_t i1 = i0 + SEG < nblk ?
								     i0 + SEG :
								     nblk;

						for (int j = 0; j < nt; j++)
							k->prep(t,
								ak + j * a_stride +
									(size_t)i0 *
										k->ablk,
								i1 - i0,
								st + (size_t)j *
										SEG *
										k->act);
						k->tile(t, gp, i0, i1, ak,
							a_stride, st, SEG, nt,
							acc);
					}
				for (int j = 0; j < nt; j++)
					_mm512_mask_storeu_ps(
						y + (b0 + j) * ldy + 16 * g, m,
						acc[j]);
			}
		}
}

void edgeq_avx512_matvec_packed(enum edgeq_type t, const void *w, int64_t n,
				int64_t row0, int64_t row1, const void *a,
				float *y)
{
	edgeq_avx512_matmul_packed(t, w, n, row0, row1, a, 0, 1, y, 0);
}
