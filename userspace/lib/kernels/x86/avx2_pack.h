/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The AVX2 table's matvec and matmul on weights repacked into groups of 16
 * interleaved rows (kernels/pack.c has the layout), for the twelve types
 * the AVX-512 table packs (the 32-column types' tile first, then the
 * super-block types' from "---- Q4_K ----"). Built twice: x86/avx2_pack.c (PK_VNNI 0, any AVX2 CPU) and
 * x86/avx2_pack_vnni.c (PK_VNNI 1, AVX-VNNI: Alder Lake and later client
 * cores, Gracemont (N100), Zen 5). Each defines PK_VNNI and PK_FN(name),
 * the exported names, before including this file.
 *
 * A 64-byte chunk holds 4 weights of each of the 16 rows, one 32-bit lane
 * per row: its two 32-byte halves are rows 0-7 and 8-15, one ymm each.
 * Against the token's 4 activation bytes broadcast, a lane sums 4
 * products; after a block each lane holds its row's exact block sum, and
 * one convert, d_w * d_a (exact: two fp16) and one fma advance the 8
 * rows' float chains, the canonical order of scalar.c.
 *
 *  - AVX-VNNI: vpdpbusd on the unsigned weights (Q4_0's nibbles, Q8_0's
 *    bytes + 128, IQ4_NL's table + 128), the block's sum corrected by the
 *    bias act_prep() computes (-8 or -128 times the activation block's
 *    sum), as the AVX-512 table does.
 *  - AVX2: vpmaddubsw. Q4_0's nibbles (0..15) times bytes in [-127, 127]
 *    give pairs of at most 3810 in magnitude, so a block's 8 products per
 *    int16 lane stay below 2^15 (30480) and one vpmaddwd per block makes
 *    the int32 sums. Q8_0 (bytes back to signed) and IQ4_NL (the signed
 *    table) take the sign trick, |w| times a with w's sign (pairs of at
 *    most 2 x 128 x 127 = 32512), one vpmaddwd per chunk, no bias.
 *
 * A matmul unpacks a group's block once for up to TMAX tokens.
 */
#ifndef PK_FN
#error "define PK_VNNI and PK_FN before including avx2_pack.h"
#endif

#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/pack_layout.h"
#include "kernels/x86/pack_act.h"

#define AI __attribute__((always_inline)) static inline
/* prefetch distance in a group's stream */
#define PF_AHEAD 4096
/* tokens per tile */
#define TMAX 4
/* Bytes of a token block's activations (of a 512 KiB-2 MiB L2). */
#define ACT_L2 (256 << 10)
/* Without heap scratch, this many blocks are prepared on the stack. */
#define SEG 16

/* CALL with NT_ a constant 1..TMAX for nt tokens (so each tile's loops
 * over tokens unroll and its sums stay in registers). */
#define BY_NT(nt, CALL)               \
	switch (nt) {                 \
	case 1: {                     \
		const int NT_ = 1;    \
		CALL;                 \
		return;               \
	}                             \
	case 2: {                     \
		const int NT_ = 2;    \
		CALL;                 \
		return;               \
	}                             \
	case 3: {                     \
		const int NT_ = 3;    \
		CALL;                 \
		return;               \
	}                             \
	default: {                    \
		const int NT_ = TMAX; \
		CALL;                 \
		return;               \
	}                             \
	}
_Static_assert(TMAX == 4, "BY_NT's cases");

static inline __m256i bcast4(const int8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return _mm256_set1_epi32(v);
}

/*
 * s += w . x per 32-bit lane: unsigned @w (AVX2's signed forms: |w| in
 * @w, the signed weights in @ws), activation bytes @x; @i16: AVX2's Q4_0
 * int16 lanes.
 */
AI __m256i dp(__m256i s, __m256i w, __m256i ws, __m256i x, bool i16)
{
#if PK_VNNI
	(void)ws;
	(void)i16;
	return _mm256_dpbusd_avx_epi32(s, w, x);
#else
	if (i16)
		s = _mm256_add_epi16(s, _mm256_maddubs_epi16(w, x));
	else
		s = _mm256_add_epi32(
			s,
			_mm256_madd_epi16(_mm256_maddubs_epi16(
						  w, _mm256_sign_epi8(x, ws)),
					  _mm256_set1_epi16(1)));
	/* keep the chain a chain: reassociated into a tree, a block's
	 * products all lived at once and spilled (~2x slower) */
	__asm__("" : "+x"(s));
	return s;
#endif
}

/* How a 32-column type's block sums run on this build. */
struct form {
	bool q8;   /* Q8_0: 8 chunks of bytes, no nibbles */
	bool nl;   /* IQ4_NL: the nibbles index the table */
	bool five; /* Q5_0, Q5_1: qh's bit as bit 4 */
	bool aff;  /* Q4_1, Q5_1: the min step after the block's */
	bool i16;  /* AVX2: 4-bit unsigned sums in int16 lanes */
	bool sgn;  /* AVX2: signed weights (sign trick), no bias */
};

AI struct form form_of(enum edgeq_type t)
{
	struct form f = {
		.q8 = t == EDGEQ_TYPE_Q8_0,
		.nl = t == EDGEQ_TYPE_IQ4_NL,
		.five = t == EDGEQ_TYPE_Q5_0 || t == EDGEQ_TYPE_Q5_1,
		.aff = edgeq_pk_affine(t),
		.i16 = !PK_VNNI &&
		       (t == EDGEQ_TYPE_Q4_0 || t == EDGEQ_TYPE_Q4_1),
		.sgn = !PK_VNNI &&
		       (t == EDGEQ_TYPE_Q8_0 || t == EDGEQ_TYPE_IQ4_NL),
	};

	return f;
}

/*
 * Chunk @c of a block at @blk (both halves) against NT tokens: s[(2 ch +
 * h) * NT + k] += half h's weights . token k's bytes, in chain ch. The
 * 5-bit types' element e = 4k + b (k = c + 4p) takes bit e of its row's
 * qh, in qh byte k / 2 (vpshufb puts it in each of the lane's bytes) at
 * bit 4 (k % 2) + b. AVX2's 5-bit sums take one vpmaddwd per
 * vpmaddubsw (16 x 31 x 128 would not fit int16).
 */
AI void chunk(enum edgeq_type t, const uint8_t *blk, const int c,
	      const int8_t *const *q, const int NT, const int CH, __m256i *s,
	      __m256i tab)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	const struct form f = form_of(t);
	const uint8_t *qs = blk + edgeq_pk_qs32(t);
	const __m256i qh_at = _mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8,
					       8, 12, 12, 12, 12, 0, 0, 0, 0, 4,
					       4, 4, 4, 8, 8, 8, 8, 12, 12, 12,
					       12);
	const __m256i qh_bit =
		_mm256_set1_epi32(c % 2 ? (int)0x80402010 : 0x08040201);

	/* part p: the low then the high nibbles (Q8_0: the chunk's bytes),
	 * unpacked for both halves, then met by each token's word */
	for (int p = 0; p < (f.q8 ? 1 : 2); p++) {
		/* the chain: nibbles by part, Q8_0 by chunk */
		const int ch = CH == 1 ? 0 : f.q8 ? c % 2 : p;
		const int off = f.q8 ? 4 * c : 16 * p + 4 * c;
		__m256i w[2], ws[2];

#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i v = _mm256_loadu_si256(
				(const __m256i *)(qs + 64 * c + 32 * h));

			if (f.q8) /* AVX2: back to the signed bytes */
				w[h] = f.sgn ? _mm256_xor_si256(
						       v, _mm256_set1_epi8(
								  (char)0x80)) :
					       v;
			else
				w[h] = _mm256_and_si256(
					p ? _mm256_srli_epi16(v, 4) : v, m4);
			if (f.nl)
				w[h] = _mm256_shuffle_epi8(tab, w[h]);
			if (f.five) {
				__m256i qh = _mm256_loadu_si256(
					(const __m256i
						 *)(blk +
						    (t == EDGEQ_TYPE_Q5_0 ?
							     EDGEQ_PK_Q50_QH :
							     EDGEQ_PK_Q51_QH) +
						    32 * h));
				__m256i hb = _mm256_and_si256(
					_mm256_shuffle_epi8(
						qh,
						_mm256_add_epi8(
							qh_at,
							_mm256_set1_epi8(
								(char)((c +
									4 * p) /
								       2)))),
					qh_bit);

				w[h] = _mm256_or_si256(
					w[h],
					_mm256_and_si256(
						_mm256_cmpeq_epi8(hb, qh_bit),
						_mm256_set1_epi8(0x10)));
			}
			ws[h] = w[h];
			if (f.sgn)
				w[h] = _mm256_sign_epi8(w[h], w[h]);
		}
#pragma GCC unroll 16
		for (int k = 0; k < NT; k++) {
			__m256i x = bcast4(q[k] + off);

#pragma GCC unroll 2
			for (int h = 0; h < 2; h++) {
				__m256i *d = &s[(2 * ch + h) * NT + k];

				*d = dp(*d, w[h], ws[h], x, f.i16);
			}
		}
	}
}

/*
 * One group of 16 rows of type @t (a constant at each call) against NT
 * tokens (a constant), blocks [i0, i1): token k's Q8_0 row at a + k * as,
 * its prepared block i at ap[k * aps + i - i0]; acc[2 k + h] are rows
 * 8h..8h+7 for token k. A chunk's two halves (rows 0-7 and 8-15) meet
 * each broadcast activation word; with one or two tokens each block's sum
 * runs in two chains (the low and high nibbles; Q8_0: even and odd
 * chunks) so a matvec is not one long dependency. The affine types add
 * m_w * d_a times the activation block's sum after the block's step.
 */
AI void tile(enum edgeq_type t, const uint8_t *gp, int64_t i0, int64_t i1,
	     const char *a, size_t as, const struct act *ap, int64_t aps,
	     const int NT, __m256 *acc)
{
	const size_t gb = edgeq_pk_gb32(t);
	const struct form f = form_of(t);
	const int CH = NT <= 2 ? 2 : 1;
	const __m128i kv =
		_mm_loadu_si128((const __m128i *)edgeq_kvalues_iq4nl);
	/* IQ4_NL's table: + 128 for vpdpbusd, signed for the sign trick */
	const __m256i tab = _mm256_broadcastsi128_si256(
		PK_VNNI ? _mm_xor_si128(kv, _mm_set1_epi8((char)0x80)) : kv);
	const int8_t *q[TMAX];

	for (int64_t i = i0; i < i1; i++) {
		const uint8_t *blk = gp + (size_t)i * gb;
		/* s[(2 ch + h) * NT + k]: chain ch, half h, token k */
		__m256i s[4 * TMAX];

#pragma GCC unroll 16
		for (size_t o = 0; o < gb; o += 64)
			_mm_prefetch((const char *)blk + PF_AHEAD + o,
				     _MM_HINT_T0);
#pragma GCC unroll 16
		for (int k = 0; k < NT; k++)
			q[k] = ((const struct edgeq_block_q8_0 *)(a +
								  k * as))[i]
				       .qs;
#pragma GCC unroll 16
		for (int k = 0; k < 2 * CH * NT; k++)
			s[k] = _mm256_setzero_si256();
		if (f.q8) {
#pragma GCC unroll 8
			for (int c = 0; c < 8; c++)
				chunk(t, blk, c, q, NT, CH, s, tab);
		} else {
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++)
				chunk(t, blk, c, q, NT, CH, s, tab);
		}
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(
				(const __m128i *)(blk + 16 * h)));
			__m256 dm =
				f.aff ? _mm256_cvtph_ps(_mm_loadu_si128(
						(const __m128i *)(blk +
								  EDGEQ_PK_A_M +
								  16 * h))) :
					_mm256_setzero_ps();

#pragma GCC unroll 16
			for (int k = 0; k < NT; k++) {
				const struct act *x = &ap[k * aps + i - i0];
				__m256i v = s[h * NT + k];
				__m256 da = _mm256_set1_ps(x->d);

				if (CH == 2)
					v = f.i16 ? _mm256_add_epi16(
							    v,
							    s[(2 + h) * NT + k]) :
						    _mm256_add_epi32(
							    v,
							    s[(2 + h) * NT + k]);
				if (f.i16)
					v = _mm256_madd_epi16(
						v, _mm256_set1_epi16(1));
				/* AVX2's signed forms have no bias, the
				 * affine types none either */
				if (!f.sgn && !f.aff)
					v = _mm256_add_epi32(
						v, _mm256_set1_epi32(x->bias));
				acc[2 * k + h] = _mm256_fmadd_ps(
					_mm256_mul_ps(dw, da),
					_mm256_cvtepi32_ps(v), acc[2 * k + h]);
				if (f.aff) /* + m_w * d_a * the block's sum */
					acc[2 * k + h] = _mm256_fmadd_ps(
						_mm256_mul_ps(dm, da),
						_mm256_set1_ps((float)-x->bias),
						acc[2 * k + h]);
			}
		}
	}
}

/* One group against nt tokens of the type TY (a constant). */
#define TILE_ANY(name, TY)                                                \
	static void name(const uint8_t *gp, int64_t i0, int64_t i1,       \
			 const char *a, size_t as, const struct act *ap,  \
			 int64_t aps, int nt, __m256 *acc)                \
	{                                                                 \
		BY_NT(nt, tile(TY, gp, i0, i1, a, as, ap, aps, NT_, acc)) \
	}
TILE_ANY(tile_q4_0, EDGEQ_TYPE_Q4_0)
TILE_ANY(tile_q8_0, EDGEQ_TYPE_Q8_0)
TILE_ANY(tile_iq4_nl, EDGEQ_TYPE_IQ4_NL)
TILE_ANY(tile_q5_0, EDGEQ_TYPE_Q5_0)
TILE_ANY(tile_q4_1, EDGEQ_TYPE_Q4_1)
TILE_ANY(tile_q5_1, EDGEQ_TYPE_Q5_1)
#undef TILE_ANY

static void tile_any(enum edgeq_type t, const uint8_t *gp, int64_t i0,
		     int64_t i1, const char *a, size_t as, const void *ap,
		     int64_t aps, int nt, __m256 *acc)
{
	switch (t) {
	case EDGEQ_TYPE_Q4_0:
		tile_q4_0(gp, i0, i1, a, as, ap, aps, nt, acc);
		return;
	case EDGEQ_TYPE_IQ4_NL:
		tile_iq4_nl(gp, i0, i1, a, as, ap, aps, nt, acc);
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
	default:
		tile_q8_0(gp, i0, i1, a, as, ap, aps, nt, acc);
		return;
	}
}

/*
 * The scalar dot's float step for NT tokens in half h: acc[2k + h] =
 * fma(d_w * d_a, isum[k], acc[2k + h]) (@neg: fnmadd, the mins' step), d_w
 * the rows' fp16 d (or dmin) at @dw16 (16 of them; the half's 8), d_a
 * token k's prepared scale, the float at @da + k * @stride bytes.
 */
AI void d_step(__m256 *acc, const int NT, const int h, const uint8_t *dw16,
	       const void *da, size_t stride, const __m256i *isum,
	       const bool neg)
{
	__m256 dw = _mm256_cvtph_ps(
		_mm_loadu_si128((const __m128i *)(dw16 + 16 * h)));

#pragma GCC unroll 16
	for (int k = 0; k < NT; k++) {
		float d;

		memcpy(&d, (const char *)da + (size_t)k * stride, sizeof(d));
		__m256 m = _mm256_mul_ps(dw, _mm256_set1_ps(d));
		__m256 v = _mm256_cvtepi32_ps(isum[k]);

		acc[2 * k + h] = neg ? _mm256_fnmadd_ps(m, v, acc[2 * k + h]) :
				       _mm256_fmadd_ps(m, v, acc[2 * k + h]);
	}
}

/* ---- Q4_K ---- */

/* Half h's mins of sub-blocks 2jj and 2jj + 1 as int16 pairs (for a
 * vpmaddwd with the activation's two sub-block sums) */
AI __m256i k_mins(const uint8_t *sb, int jj, int h)
{
	const uint8_t *m = sb + EDGEQ_PK_K_MIN + 32 * jj + 8 * h;

	return _mm256_or_si256(
		_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)m)),
		_mm256_slli_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64(
					  (const __m128i *)(m + 16))),
				  16));
}

/* Q5_K's bit j of each qh byte as bit 4 of the weight's byte */
AI __m256i q5_bit(__m256i hq, int j)
{
	hq = j <= 4 ? _mm256_slli_epi16(hq, 4 - j) :
		      _mm256_srli_epi16(hq, j - 4);
	return _mm256_and_si256(hq, _mm256_set1_epi8(0x10));
}

/* Half h's scales of sub-block j as k_mul() takes them: AVX-VNNI the
 * int32 scale, AVX2 the scale in both int16 halves of the lane */
AI __m256i k_scale(const uint8_t *sb, int j, int h)
{
	__m256i sc = _mm256_cvtepu8_epi32(_mm_loadl_epi64(
		(const __m128i *)(sb + EDGEQ_PK_K_SC + 16 * j + 8 * h)));

#if PK_VNNI
	return sc;
#else
	return _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16));
#endif
}

/* a sub-block's exact sums (AVX2: its int16 pair sums) times scale s */
AI __m256i k_mul(__m256i sd, __m256i s)
{
#if PK_VNNI
	return _mm256_mullo_epi32(sd, s);
#else
	return _mm256_madd_epi16(sd, s);
#endif
}

/*
 * One group of 16 rows of Q4_K against NT Q8_K tokens, super-blocks [i0,
 * i1), half h (rows 8h..8h+7) at a time: per sub-block j the 8 chunks'
 * nibbles (low for even j, high for odd) meet each token's bytes into
 * its sub-block sum, weighted by the rows' scales into the exact isum
 * (AVX-VNNI: vpdpbusd then vpmulld; AVX2: the int16 sums (at most 16 x
 * 15 x 128) times the scale in both int16 halves, one vpmaddwd); the
 * mins meet the activation's sub-block sums in pairs (vpmaddwd); then
 * fma(d * d_a, isum) and fnmadd(dmin * d_a, summins), the scalar dot's
 * two steps.
 */
AI void tile_k(const uint8_t *gp, int64_t i0, int64_t i1, const char *a,
	       size_t as, const struct actk *ap, int64_t aps, const int NT,
	       const bool Q5, __m256 *acc)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	const size_t GB = Q5 ? EDGEQ_PK_GB_Q5_K : EDGEQ_PK_GB_Q4_K;

	for (int64_t i = i0; i < i1; i++) {
		const uint8_t *sb = gp + (size_t)i * GB;
		const int8_t *q[TMAX];

#pragma GCC unroll 16
		for (size_t o = 0; o < GB; o += 64)
			_mm_prefetch((const char *)sb + PF_AHEAD + o,
				     _MM_HINT_T0);
#pragma GCC unroll 16
		for (int k = 0; k < NT; k++)
			q[k] = ((const struct edgeq_block_q8_K *)(a +
								  k * as))[i]
				       .qs;
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i isum[TMAX], summ[TMAX];

#pragma GCC unroll 16
			for (int k = 0; k < NT; k++)
				isum[k] = _mm256_setzero_si256();
				/* pairs of sub-blocks at run time, a pair's two unrolled:
			 * fully unrolled, the loads hoisted ahead spilled */
#pragma GCC unroll 1
			for (int jj = 0; jj < 4; jj++)
#pragma GCC unroll 2
				for (int j = 2 * jj; j < 2 * jj + 2; j++) {
					const __m256i sc = k_scale(sb, j, h);
					__m256i sd[TMAX];

#pragma GCC unroll 16
					for (int k = 0; k < NT; k++)
						sd[k] = _mm256_setzero_si256();
#pragma GCC unroll 8
					for (int c = 0; c < 8; c++) {
						__m256i v = _mm256_loadu_si256((
							const __m256i
								*)(sb +
								   EDGEQ_PK_K_QS +
								   512 * (j >>
									  1) +
								   64 * c +
								   32 * h));
						__m256i w = _mm256_and_si256(
							(j & 1) ?
								_mm256_srli_epi16(
									v, 4) :
								v,
							m4);

						if (Q5) { /* bit j of qh as bit 4 */
							__m256i hq = _mm256_loadu_si256(
								(const __m256i
									 *)(sb +
									    EDGEQ_PK_Q5K_QH +
									    64 * c +
									    32 * h));

							w = _mm256_or_si256(
								w,
								q5_bit(hq, j));
						}

#pragma GCC unroll 16
						for (int k = 0; k < NT; k++)
							sd[k] = dp(
								sd[k], w, w,
								bcast4(q[k] +
								       32 * j +
								       4 * c),
								!PK_VNNI);
#if !PK_VNNI
						/* Q5_K's 5-bit values: 4 chunks in
					 * int16 (at most 8 x 31 x 128) */
						if (Q5 && c == 3)
#pragma GCC unroll 16
							for (int k = 0; k < NT;
							     k++) {
								isum[k] = _mm256_add_epi32(
									isum[k],
									k_mul(sd[k],
									      sc));
								sd[k] = _mm256_setzero_si256();
							}
#endif
					}
#pragma GCC unroll 16
					for (int k = 0; k < NT; k++)
						isum[k] = _mm256_add_epi32(
							isum[k],
							k_mul(sd[k], sc));
				}
#pragma GCC unroll 16
			for (int k = 0; k < NT; k++)
				summ[k] = _mm256_setzero_si256();
#pragma GCC unroll 4
			for (int jj = 0; jj < 4; jj++) {
				__m256i mp = k_mins(sb, jj, h);

#pragma GCC unroll 16
				for (int k = 0; k < NT; k++)
					summ[k] = _mm256_add_epi32(
						summ[k],
						_mm256_madd_epi16(
							mp,
							_mm256_set1_epi32(
								ap[k * aps + i -
								   i0]
									.bp[jj])));
			}
			d_step(acc, NT, h, sb, &ap[i - i0].d,
			       (size_t)aps * sizeof(*ap), isum, false);
			d_step(acc, NT, h, sb + EDGEQ_PK_K_DMIN, &ap[i - i0].d,
			       (size_t)aps * sizeof(*ap), summ, true);
		}
	}
}

/*
 * tile_k for one token (a decode's matvec): both halves in one pass, so
 * each activation word is broadcast once for the 16 rows, and both
 * sub-blocks of a pair from one load of their chunk (its low nibbles are
 * sub-block 2jj's, its high ones 2jj + 1's): per 64-byte chunk 2 loads
 * and 2 broadcasts for 4 multiplies, where tile_k, which keeps up to 4
 * tokens' sums per half, takes 4 of each. The same exact integers and
 * the same float steps, so the same bits.
 */
AI void tile_k1(const uint8_t *gp, int64_t i0, int64_t i1, const char *a,
		const struct actk *ap, const bool Q5, __m256 *acc)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	const size_t GB = Q5 ? EDGEQ_PK_GB_Q5_K : EDGEQ_PK_GB_Q4_K;

	for (int64_t i = i0; i < i1; i++) {
		const uint8_t *sb = gp + (size_t)i * GB;
		const int8_t *q = ((const struct edgeq_block_q8_K *)a)[i].qs;
		__m256i isum[2] = { _mm256_setzero_si256(),
				    _mm256_setzero_si256() };
		__m256i summ[2];

#pragma GCC unroll 16
		for (size_t o = 0; o < GB; o += 64)
			_mm_prefetch((const char *)sb + PF_AHEAD + o,
				     _MM_HINT_T0);
#pragma GCC unroll 1
		for (int jj = 0; jj < 4; jj++) {
			/* sd[e][h]: sub-block 2jj + e, half h */
			__m256i sd[2][2] = { { _mm256_setzero_si256(),
					       _mm256_setzero_si256() },
					     { _mm256_setzero_si256(),
					       _mm256_setzero_si256() } };

#pragma GCC unroll 8
			for (int c = 0; c < 8; c++) {
				__m256i x0 = bcast4(q + 64 * jj + 4 * c);
				__m256i x1 = bcast4(q + 64 * jj + 32 + 4 * c);

#pragma GCC unroll 2
				for (int h = 0; h < 2; h++) {
					__m256i v = _mm256_loadu_si256((
						const __m256i *)(sb +
								 EDGEQ_PK_K_QS +
								 512 * jj +
								 64 * c +
								 32 * h));
					__m256i lo = _mm256_and_si256(v, m4);
					__m256i hi = _mm256_and_si256(
						_mm256_srli_epi16(v, 4), m4);

					if (Q5) {
						__m256i hq = _mm256_loadu_si256((
							const __m256i
								*)(sb +
								   EDGEQ_PK_Q5K_QH +
								   64 * c +
								   32 * h));

						lo = _mm256_or_si256(
							lo, q5_bit(hq, 2 * jj));
						hi = _mm256_or_si256(
							hi,
							q5_bit(hq, 2 * jj + 1));
					}
					sd[0][h] = dp(sd[0][h], lo, lo, x0,
						      !PK_VNNI);
					sd[1][h] = dp(sd[1][h], hi, hi, x1,
						      !PK_VNNI);
				}
#if !PK_VNNI
				/* Q5_K's 5-bit values: 4 chunks in int16
				 * (at most 8 x 31 x 128); the 4 scales are
				 * prepared again below, not held across the
				 * chunks (16 registers hold the rest) */
				if (Q5 && c == 3)
#pragma GCC unroll 2
					for (int e = 0; e < 2; e++)
#pragma GCC unroll 2
						for (int h = 0; h < 2; h++) {
							isum[h] = _mm256_add_epi32(
								isum[h],
								k_mul(sd[e][h],
								      k_scale(sb,
									      2 * jj +
										      e,
									      h)));
							sd[e][h] =
								_mm256_setzero_si256();
						}
#endif
			}
#pragma GCC unroll 2
			for (int e = 0; e < 2; e++)
#pragma GCC unroll 2
				for (int h = 0; h < 2; h++)
					isum[h] = _mm256_add_epi32(
						isum[h],
						k_mul(sd[e][h],
						      k_scale(sb, 2 * jj + e,
							      h)));
		}
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			summ[h] = _mm256_setzero_si256();
#pragma GCC unroll 4
			for (int jj = 0; jj < 4; jj++) {
				__m256i mp = k_mins(sb, jj, h);

				summ[h] = _mm256_add_epi32(
					summ[h],
					_mm256_madd_epi16(
						mp,
						_mm256_set1_epi32(
							ap[i - i0].bp[jj])));
			}
			d_step(acc, 1, h, sb, &ap[i - i0].d, sizeof(*ap),
			       &isum[h], false);
			d_step(acc, 1, h, sb + EDGEQ_PK_K_DMIN, &ap[i - i0].d,
			       sizeof(*ap), &summ[h], true);
		}
	}
}

static void tile_q4_K(enum edgeq_type t, const uint8_t *gp, int64_t i0,
		      int64_t i1, const char *a, size_t as, const void *ap,
		      int64_t aps, int nt, __m256 *acc)
{
	const bool q5 = t == EDGEQ_TYPE_Q5_K;

	if (nt == 1) { /* a decode's matvec */
		if (q5)
			tile_k1(gp, i0, i1, a, ap, true, acc);
		else
			tile_k1(gp, i0, i1, a, ap, false, acc);
		return;
	}
	BY_NT(nt, q5 ? tile_k(gp, i0, i1, a, as, ap, aps, NT_, true, acc) :
		       tile_k(gp, i0, i1, a, as, ap, aps, NT_, false, acc))
}

/* ---- Q6_K ---- */

/*
 * Sub-block 8 n + c4 + 2 j's weights (q + 32) in half h of chunk c = 4 c4
 * + cc of the packed Q6_K super-block at sb: the low (j < 2) or high
 * nibbles of ql at n (j even) or n + 32 bytes (j odd), and qh's bit pair
 * j moved to bits 4-5 (a 16-bit shift; the mask keeps the byte's own).
 */
AI __m256i q6_weights(const uint8_t *sb, int n, int c, int j, int h)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	__m256i Q = _mm256_loadu_si256(
		(const __m256i *)(sb + EDGEQ_PK_16_QS +
				  64 * (16 * n + (j & 1) * 8 + c) + 32 * h));
	__m256i H = _mm256_loadu_si256((const __m256i *)(sb + EDGEQ_PK_Q6K_QH +
							 64 * (8 * n + c) +
							 32 * h));
	__m256i lo = j < 2 ? _mm256_and_si256(Q, m4) :
			     _mm256_and_si256(_mm256_srli_epi16(Q, 4), m4);
	__m256i hb = j == 0 ? _mm256_slli_epi16(H, 4) :
		     j == 1 ? _mm256_slli_epi16(H, 2) :
		     j == 2 ? H :
			      _mm256_srli_epi16(H, 2);

	return _mm256_or_si256(_mm256_and_si256(hb, _mm256_set1_epi8(0x30)),
			       lo);
}

/*
 * Sub-block g = 8n + c4 + 2j of quarter q4 = 2n + c4 (half h) against NT
 * tokens into isum: tile_q6()'s step.
 */
AI void q6_sub(const uint8_t *sb, const int8_t *const *q, const struct act6 *ap,
	       int64_t aps, int64_t ii, const int NT, const int q4, const int j,
	       const int h, __m256i *isum)
{
	const int n = q4 >> 1, c4 = q4 & 1, g = 8 * n + c4 + 2 * j;
	__m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64(
		(const __m128i *)(sb + EDGEQ_PK_16_SC + 16 * g + 8 * h)));
	__m256i sd[TMAX];
#if !PK_VNNI
	__m256i scp =
		_mm256_or_si256(_mm256_and_si256(sc, _mm256_set1_epi32(0xffff)),
				_mm256_slli_epi32(sc, 16));
#endif

#pragma GCC unroll 16
	for (int k = 0; k < NT; k++)
		sd[k] = PK_VNNI ? _mm256_set1_epi32(ap[k * aps + ii].nb32[g]) :
				  _mm256_setzero_si256();
#pragma GCC unroll 4
	for (int cc = 0; cc < 4; cc++) {
		const int c = 4 * c4 + cc;
		__m256i w = q6_weights(sb, n, c, j, h);

#pragma GCC unroll 16
		for (int k = 0; k < NT; k++)
			sd[k] = dp(sd[k], w, w,
				   bcast4(q[k] + 128 * n + 4 * c + 32 * j),
				   !PK_VNNI);
#if !PK_VNNI
		if (cc % 2 == 1) /* two chunks in int16 */
#pragma GCC unroll 16
			for (int k = 0; k < NT; k++) {
				isum[k] = _mm256_add_epi32(
					isum[k], _mm256_madd_epi16(sd[k], scp));
				sd[k] = _mm256_setzero_si256();
			}
#endif
	}
#pragma GCC unroll 16
	for (int k = 0; k < NT; k++)
		isum[k] = _mm256_add_epi32(isum[k],
#if PK_VNNI
					   _mm256_mullo_epi32(sd[k], sc)
#else
					   _mm256_mullo_epi32(
						   _mm256_set1_epi32(
							   ap[k * aps + ii]
								   .nb32[g]),
						   sc)
#endif
		);
}

/*
 * One group of 16 rows of Q6_K against NT Q8_K tokens, super-blocks [i0,
 * i1), half h at a time, one sub-block g = 8n + c4 + 2j at a time: its 4
 * weight vectors (q + 32, 0..63) meet each token's bytes. AVX-VNNI: the
 * sum starts at -32 times the activation's sub-block sum, so it is the
 * exact signed dot, then weighted by the sign-extended scale (vpmulld).
 * AVX2: two chunks' vpmaddubsw in int16 (at most 4 x 63 x 128), weighted
 * by the scale in both int16 halves (vpmaddwd), and the -32 term as
 * vpmulld of the scale. Then fma(d * d_a, isum) as the scalar dot.
 */
AI void tile_q6(const uint8_t *gp, int64_t i0, int64_t i1, const char *a,
		size_t as, const struct act6 *ap, int64_t aps, const int NT,
		__m256 *acc)
{
	const size_t GB = EDGEQ_PK_GB_Q6_K;

	for (int64_t i = i0; i < i1; i++) {
		const uint8_t *sb = gp + (size_t)i * GB;
		const int8_t *q[TMAX];

#pragma GCC unroll 53
		for (size_t o = 0; o < GB; o += 64)
			_mm_prefetch((const char *)sb + PF_AHEAD + o,
				     _MM_HINT_T0);
#pragma GCC unroll 16
		for (int k = 0; k < NT; k++)
			q[k] = ((const struct edgeq_block_q8_K *)(a +
								  k * as))[i]
				       .qs;
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i isum[TMAX];

#pragma GCC unroll 16
			for (int k = 0; k < NT; k++)
				isum[k] = _mm256_setzero_si256();
			/* a decode step's quarters unrolled; a prompt's at
			 * run time (unrolled, the hoisted loads spilled) */
			if (NT == 1) {
#pragma GCC unroll 4
				for (int q4 = 0; q4 < 4; q4++)
#pragma GCC unroll 4
					for (int j = 0; j < 4; j++)
						q6_sub(sb, q, ap, aps, i - i0,
						       NT, q4, j, h, isum);
			} else {
#pragma GCC unroll 1
				for (int q4 = 0; q4 < 4; q4++)
#pragma GCC unroll 4
					for (int j = 0; j < 4; j++)
						q6_sub(sb, q, ap, aps, i - i0,
						       NT, q4, j, h, isum);
			}
			d_step(acc, NT, h, sb, &ap[i - i0].d,
			       (size_t)aps * sizeof(*ap), isum, false);
		}
	}
}

static void tile_q6_K(enum edgeq_type t, const uint8_t *gp, int64_t i0,
		      int64_t i1, const char *a, size_t as, const void *ap,
		      int64_t aps, int nt, __m256 *acc)
{
	(void)t;
	BY_NT(nt, tile_q6(gp, i0, i1, a, as, ap, aps, NT_, acc))
}

/* ---- IQ4_XS ---- */

/*
 * One group of 16 rows of IQ4_XS against NT Q8_K tokens, super-blocks
 * [i0, i1), half h at a time: per sub-block j its 4 chunks' nibbles go
 * through the table, each token's exact sub-block sum is weighted by the
 * signed scales (vpmulld) into the exact isum, then one fma(d * d_a,
 * isum) per super-block, the scalar dot's order. AVX-VNNI: the table +
 * 128 from -128 times the activation's sub-block sum. AVX2: the signed
 * table with the sign trick on the weights' side, |a| times w with a's
 * sign (a Q8_K byte may be -128; |w| <= 127), one vpmaddwd per
 * vpmaddubsw.
 */
AI void tile_xs(const uint8_t *gp, int64_t i0, int64_t i1, const char *a,
		size_t as, const struct actx *ap, int64_t aps, const int NT,
		__m256 *acc)
{
	const size_t GB = EDGEQ_PK_GB_IQ4_XS;
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	const __m128i kv =
		_mm_loadu_si128((const __m128i *)edgeq_kvalues_iq4nl);
	const __m256i tab = _mm256_broadcastsi128_si256(
		PK_VNNI ? _mm_xor_si128(kv, _mm_set1_epi8((char)0x80)) : kv);

	for (int64_t i = i0; i < i1; i++) {
		const uint8_t *sb = gp + (size_t)i * GB;
		const int8_t *q[TMAX];

#pragma GCC unroll 35
		for (size_t o = 0; o < GB; o += 64)
			_mm_prefetch((const char *)sb + PF_AHEAD + o,
				     _MM_HINT_T0);
#pragma GCC unroll 16
		for (int k = 0; k < NT; k++)
			q[k] = ((const struct edgeq_block_q8_K *)(a +
								  k * as))[i]
				       .qs;
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i isum[TMAX];

#pragma GCC unroll 16
			for (int k = 0; k < NT; k++)
				isum[k] = _mm256_setzero_si256();
				/* sub-blocks at run time (unrolled, the hoisted loads
			 * spilled) */
#pragma GCC unroll 1
			for (int j = 0; j < 8; j++) {
				__m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64(
					(const __m128i *)(sb + EDGEQ_PK_XS_SC +
							  16 * j + 8 * h)));
				__m256i sd[TMAX];

#pragma GCC unroll 16
				for (int k = 0; k < NT; k++)
					sd[k] = PK_VNNI ?
							_mm256_set1_epi32(
								ap[k * aps + i -
								   i0]
									.nb128[j]) :
							_mm256_setzero_si256();
#pragma GCC unroll 4
				for (int c = 0; c < 4; c++) {
					__m256i v = _mm256_loadu_si256((
						const __m256i *)(sb +
								 EDGEQ_PK_XS_QS +
								 256 * j +
								 64 * c +
								 32 * h));
					__m256i w[2] = {
						_mm256_shuffle_epi8(
							tab, _mm256_and_si256(
								     v, m4)),
						_mm256_shuffle_epi8(
							tab,
							_mm256_and_si256(
								_mm256_srli_epi16(
									v, 4),
								m4)),
					};

#pragma GCC unroll 2
					for (int p = 0; p < 2; p++)
#pragma GCC unroll 16
						for (int k = 0; k < NT; k++) {
							__m256i x = bcast4(
								q[k] + 32 * j +
								16 * p + 4 * c);
#if PK_VNNI
							sd[k] = _mm256_dpbusd_avx_epi32(
								sd[k], w[p], x);
#else
							sd[k] = _mm256_add_epi32(
								sd[k],
								_mm256_madd_epi16(
									_mm256_maddubs_epi16(
										_mm256_sign_epi8(
											x,
											x),
										_mm256_sign_epi8(
											w[p],
											x)),
									_mm256_set1_epi16(
										1)));
							__asm__(""
								: "+x"(sd[k]));
#endif
						}
				}
#pragma GCC unroll 16
				for (int k = 0; k < NT; k++)
					isum[k] = _mm256_add_epi32(
						isum[k],
						_mm256_mullo_epi32(sd[k], sc));
			}
			d_step(acc, NT, h, sb, &ap[i - i0].d,
			       (size_t)aps * sizeof(*ap), isum, false);
		}
	}
}

static void tile_iq4_xs(enum edgeq_type t, const uint8_t *gp, int64_t i0,
			int64_t i1, const char *a, size_t as, const void *ap,
			int64_t aps, int nt, __m256 *acc)
{
	(void)t;
	BY_NT(nt, tile_xs(gp, i0, i1, a, as, ap, aps, NT_, acc))
}

/* ---- Q3_K, Q2_K (Q6_K's frame, the scales in kernels/pack.c's sc16
 * order) ---- */

/*
 * One group of 16 rows of Q3_K or Q2_K against NT Q8_K tokens,
 * super-blocks [i0, i1), half hh at a time. Sub-block g = 8 n + 2 j + gh
 * has its 16 elements in bits 2j..2j+1 of qs chunks 8n + 4gh .. + 3
 * (element 4c + b at byte b of chunk c); Q3_K adds 4 where bit 4n + j of
 * hmask chunk 4gh + c is set (q + 4, 0..7; its sum starts at -4 times
 * the activation group's sum). Each exact sub-block sum is weighted by
 * its scale (Q3_K's signed, Q2_K's low nibble, its high nibble the min
 * against the group's sum), then the scalar dot's float steps:
 * fma(d * d_a, isum) and, for Q2_K, fnmadd(dmin * d_a, summins). The
 * weights are shifted down to their values (at most 7: AVX2's int16
 * sums of a sub-block stay below 8 x 7 x 128).
 */
AI void tile_q32(const uint8_t *gp, int64_t i0, int64_t i1, const char *a,
		 size_t as, const struct act16 *ap, int64_t aps, const int NT,
		 const bool Q3, __m256 *acc)
{
	const size_t GB = Q3 ? EDGEQ_PK_GB_Q3_K : EDGEQ_PK_GB_Q2_K;
	const __m256i m3 = _mm256_set1_epi8(3);

	for (int64_t i = i0; i < i1; i++) {
		const uint8_t *sb = gp + (size_t)i * GB;
		const int8_t *q[TMAX];

#pragma GCC unroll 29
		for (size_t o = 0; o < GB; o += 64)
			_mm_prefetch((const char *)sb + PF_AHEAD + o,
				     _MM_HINT_T0);
#pragma GCC unroll 16
		for (int k = 0; k < NT; k++)
			q[k] = ((const struct edgeq_block_q8_K *)(a +
								  k * as))[i]
				       .qs;
#pragma GCC unroll 2
		for (int hh = 0; hh < 2; hh++) {
			__m256i isum[TMAX], summ[TMAX];

#pragma GCC unroll 16
			for (int k = 0; k < NT; k++) {
				isum[k] = _mm256_setzero_si256();
				summ[k] = _mm256_setzero_si256();
			}
			/* (n, gh) at run time, the 4 bit pairs j unrolled
			 * (fully unrolled, the hoisted loads spilled) */
#pragma GCC unroll 1
			for (int ng = 0; ng < 4; ng++)
#pragma GCC unroll 4
				for (int j = 0; j < 4; j++) {
					const int n = ng >> 1, gh = ng & 1,
						  g = 8 * n + 2 * j + gh;
					int32_t r0, r1;
					__m256i sc, mn = _mm256_setzero_si256(),
						    sd[TMAX];

					/* rows 8hh..8hh+3 and 8hh+4..8hh+7 */
					memcpy(&r0,
					       sb + edgeq_pk_sc16(g, 8 * hh),
					       4);
					memcpy(&r1,
					       sb + edgeq_pk_sc16(g,
								  8 * hh + 4),
					       4);
					if (Q3) {
						sc = _mm256_cvtepi8_epi32(
							_mm_setr_epi32(r0, r1,
								       0, 0));
					} else {
						__m256i b = _mm256_cvtepu8_epi32(
							_mm_setr_epi32(r0, r1,
								       0, 0));

						sc = _mm256_and_si256(
							b,
							_mm256_set1_epi32(15));
						mn = _mm256_srli_epi32(b, 4);
					}
#pragma GCC unroll 16
					for (int k = 0; k < NT; k++)
						sd[k] = PK_VNNI && Q3 ?
								_mm256_set1_epi32(
									ap[k * aps +
									   i -
									   i0]
										.b[g]) :
								_mm256_setzero_si256();
#pragma GCC unroll 4
					for (int c = 0; c < 4; c++) {
						__m256i v = _mm256_loadu_si256((
							const __m256i
								*)(sb +
								   EDGEQ_PK_16_QS +
								   64 * (8 * n +
									 4 * gh +
									 c) +
								   32 * hh));
						__m256i w = _mm256_and_si256(
							_mm256_srli_epi16(
								v, 2 * j),
							m3);

						if (Q3) {
							const __m256i bit = _mm256_set1_epi8(
								(char)(1
								       << (4 * n +
									   j)));
							__m256i hm = _mm256_loadu_si256((
								const __m256i
									*)(sb +
									   EDGEQ_PK_Q3K_HMASK +
									   64 * (4 * gh +
										 c) +
									   32 * hh));

							w = _mm256_or_si256(
								w,
								_mm256_and_si256(
									_mm256_cmpeq_epi8(
										_mm256_and_si256(
											hm,
											bit),
										bit),
									_mm256_set1_epi8(
										4)));
						}
#pragma GCC unroll 16
						for (int k = 0; k < NT; k++)
							sd[k] = dp(
								sd[k], w, w,
								bcast4(q[k] +
								       16 * g +
								       4 * c),
								!PK_VNNI);
					}
#pragma GCC unroll 16
					for (int k = 0; k < NT; k++) {
						int32_t bg =
							ap[k * aps + i - i0]
								.b[g];

#if PK_VNNI
						isum[k] = _mm256_add_epi32(
							isum[k],
							_mm256_mullo_epi32(
								sd[k], sc));
#else
						/* the scale in both int16 halves;
					 * Q3_K's -4 sum term by the scale */
						isum[k] = _mm256_add_epi32(
							isum[k],
							_mm256_madd_epi16(
								sd[k],
								_mm256_or_si256(
									_mm256_and_si256(
										sc,
										_mm256_set1_epi32(
											0xffff)),
									_mm256_slli_epi32(
										sc,
										16))));
						if (Q3)
							isum[k] = _mm256_add_epi32(
								isum[k],
								_mm256_mullo_epi32(
									sc,
									_mm256_set1_epi32(
										bg)));
#endif
						if (!Q3)
							summ[k] = _mm256_add_epi32(
								summ[k],
								_mm256_mullo_epi32(
									mn,
									_mm256_set1_epi32(
										bg)));
					}
				}
			d_step(acc, NT, hh, sb, &ap[i - i0].d,
			       (size_t)aps * sizeof(*ap), isum, false);
			if (!Q3) /* the mins' step */
				d_step(acc, NT, hh, sb + EDGEQ_PK_Q2K_DMIN,
				       &ap[i - i0].d, (size_t)aps * sizeof(*ap),
				       summ, true);
		}
	}
}

static void tile_q3_q2(enum edgeq_type t, const uint8_t *gp, int64_t i0,
		       int64_t i1, const char *a, size_t as, const void *ap,
		       int64_t aps, int nt, __m256 *acc)
{
	const bool q3 = t == EDGEQ_TYPE_Q3_K;

	BY_NT(nt, q3 ? tile_q32(gp, i0, i1, a, as, ap, aps, NT_, true, acc) :
		       tile_q32(gp, i0, i1, a, as, ap, aps, NT_, false, acc))
}

struct kind {
	int64_t bs;  /* columns per block */
	size_t gb;   /* packed bytes per group of 16 rows and block */
	size_t ablk; /* bytes of an activation block (Q8_0 or Q8_K) */
	size_t act;  /* bytes of a prepared activation block */
	void (*prep)(enum edgeq_type t, const void *a, int64_t nblk, void *out);
	void (*tile)(enum edgeq_type t, const uint8_t *gp, int64_t i0,
		     int64_t i1, const char *a, size_t as, const void *ap,
		     int64_t aps, int nt, __m256 *acc);
};

static const struct kind k_q4_0 = { 32,
				    EDGEQ_PK_GB_Q4_0,
				    sizeof(struct edgeq_block_q8_0),
				    sizeof(struct act),
				    prep_q80,
				    tile_any };
static const struct kind k_q8_0 = { 32,
				    EDGEQ_PK_GB_Q8_0,
				    sizeof(struct edgeq_block_q8_0),
				    sizeof(struct act),
				    prep_q80,
				    tile_any };
static const struct kind k_q5_0 = { 32,
				    EDGEQ_PK_GB_Q5_0,
				    sizeof(struct edgeq_block_q8_0),
				    sizeof(struct act),
				    prep_q80,
				    tile_any };
static const struct kind k_q4_1 = { 32,
				    EDGEQ_PK_GB_Q4_1,
				    sizeof(struct edgeq_block_q8_0),
				    sizeof(struct act),
				    prep_q80,
				    tile_any };
static const struct kind k_q5_1 = { 32,
				    EDGEQ_PK_GB_Q5_1,
				    sizeof(struct edgeq_block_q8_0),
				    sizeof(struct act),
				    prep_q80,
				    tile_any };
static const struct kind k_q4_K = { 256,
				    EDGEQ_PK_GB_Q4_K,
				    sizeof(struct edgeq_block_q8_K),
				    sizeof(struct actk),
				    prep_k,
				    tile_q4_K };
static const struct kind k_q5_K = { 256,
				    EDGEQ_PK_GB_Q5_K,
				    sizeof(struct edgeq_block_q8_K),
				    sizeof(struct actk),
				    prep_k,
				    tile_q4_K };
static const struct kind k_iq4_xs = { 256,
				      EDGEQ_PK_GB_IQ4_XS,
				      sizeof(struct edgeq_block_q8_K),
				      sizeof(struct actx),
				      prep_xs,
				      tile_iq4_xs };
static const struct kind k_q3_K = { 256,
				    EDGEQ_PK_GB_Q3_K,
				    sizeof(struct edgeq_block_q8_K),
				    sizeof(struct act16),
				    prep_q3,
				    tile_q3_q2 };
static const struct kind k_q2_K = { 256,
				    EDGEQ_PK_GB_Q2_K,
				    sizeof(struct edgeq_block_q8_K),
				    sizeof(struct act16),
				    prep_q2,
				    tile_q3_q2 };
static const struct kind k_q6_K = { 256,
				    EDGEQ_PK_GB_Q6_K,
				    sizeof(struct edgeq_block_q8_K),
				    sizeof(struct act6),
				    prep_q6,
				    tile_q6_K };

/* Group g's rows 16g.. for a token from acc[0..1], those in [row0, row1). */
static void store_rows(float *y, int64_t g, int64_t row0, int64_t row1,
		       const __m256 *acc)
{
	int64_t lo = row0 - 16 * g, hi = row1 - 16 * g;
	float v[16];

	if (lo <= 0 && hi >= 16) {
		_mm256_storeu_ps(y + 16 * g, acc[0]);
		_mm256_storeu_ps(y + 16 * g + 8, acc[1]);
		return;
	}
	_mm256_storeu_ps(v, acc[0]);
	_mm256_storeu_ps(v + 8, acc[1]);
	if (lo < 0)
		lo = 0;
	if (hi > 16)
		hi = 16;
	memcpy(y + 16 * g + lo, v + lo, (size_t)(hi - lo) * sizeof(float));
}

void PK_FN(matmul_packed)(enum edgeq_type t, const void *w, int64_t n,
			  int64_t row0, int64_t row1, const void *a,
			  size_t a_stride, int64_t nb, float *y, int64_t ldy);
void PK_FN(matmul_packed)(enum edgeq_type t, const void *w, int64_t n,
			  int64_t row0, int64_t row1, const void *a,
			  size_t a_stride, int64_t nb, float *y, int64_t ldy)
{
	const struct kind *k = t == EDGEQ_TYPE_Q6_K   ? &k_q6_K :
			       t == EDGEQ_TYPE_Q5_0   ? &k_q5_0 :
			       t == EDGEQ_TYPE_Q4_1   ? &k_q4_1 :
			       t == EDGEQ_TYPE_Q5_1   ? &k_q5_1 :
			       t == EDGEQ_TYPE_Q4_K   ? &k_q4_K :
			       t == EDGEQ_TYPE_Q5_K   ? &k_q5_K :
			       t == EDGEQ_TYPE_IQ4_XS ? &k_iq4_xs :
			       t == EDGEQ_TYPE_Q3_K   ? &k_q3_K :
			       t == EDGEQ_TYPE_Q2_K   ? &k_q2_K :
			       t == EDGEQ_TYPE_Q8_0   ? &k_q8_0 :
							&k_q4_0;
	const int64_t nblk = n / k->bs;
	const size_t gsz = (size_t)nblk * k->gb;
	char *ab = edgeq_thread_scratch((size_t)(nb * nblk) * k->act);
	_Alignas(32) char st[TMAX * SEG * sizeof(struct act6)];
	__m256 acc[2 * TMAX];
	int64_t tb;

	for (int64_t b = 0; ab && b < nb; b++)
		k->prep(t, (const char *)a + b * a_stride, nblk,
			ab + (size_t)(b * nblk) * k->act);
	/* tokens in blocks whose activations stay in L2 while every group
	 * of rows meets them */
	tb = (int64_t)(ACT_L2 / ((size_t)nblk * k->ablk)) / TMAX * TMAX;
	if (tb < TMAX)
		tb = TMAX;
	for (int64_t t0 = 0; t0 < nb; t0 += tb) {
		int64_t t1 = t0 + tb < nb ? t0 + tb : nb;

		for (int64_t g = row0 / 16; 16 * g < row1; g++) {
			const uint8_t *gp =
				(const uint8_t *)w + (size_t)g * gsz;

			for (int64_t b0 = t0; b0 < t1; b0 += TMAX) {
				int nt = t1 - b0 < TMAX ? (int)(t1 - b0) : TMAX;
				const char *ak =
					(const char *)a + b0 * a_stride;

				for (int j = 0; j < 2 * nt; j++)
					acc[j] = _mm256_setzero_ps();
				if (ab) {
					k->tile(t, gp, 0, nblk, ak, a_stride,
						ab + (size_t)(b0 * nblk) *
								k->act,
						nblk, nt, acc);
				} else { /* each segment prepared on the way */
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
				}
				for (int j = 0; j < nt; j++)
					store_rows(y + (b0 + j) * ldy, g, row0,
						   row1, acc + 2 * j);
			}
		}
	}
}
