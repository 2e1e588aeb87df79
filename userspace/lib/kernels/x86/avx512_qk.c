// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * AVX-512 VNNI prefill (matmul) for Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS
 * weights x Q8_K
 * activations: one output row per 32-bit lane.
 *
 * A group of 16 rows is prepared once per call (and token block) into a
 * transposed layout: per super-block and 4-byte group one zmm whose lane r
 * holds row r's 4 unsigned values (Q4_K: the packed byte pairs, low nibble
 * sub-block 2p, high nibble 2p+1; Q5_K: its 5-bit values in element order;
 * Q6_K: q + 32 in 0..63; Q3_K, in Q6_K's layout and tile: q + 4 in 0..7,
 * offset -4; Q2_K likewise, q in 0..3 and no offset, with its mins as
 * int16 pairs; IQ4_XS the table value + 128, offset -128, each scale for
 * two groups of 16), the sub-block scales as int32 lanes, the Q4_K
 * and Q5_K mins as int16 pairs and d/dmin as floats.
 * Per super-block and token each sub-block's dot is vpdpbusd with the
 * token's 4 activation bytes broadcast from memory, weighted by the scale
 * vector (vpmulld) into the super-block sum; Q4_K's min term is vpdpwssd of
 * the mins pairs with the activation's pair sums of bsums; Q6_K's -32
 * offset starts each sub-block dot at -32 * bsums[g]. All integer sums are
 * exact, so they equal scalar's; the float chain per (row, token) is
 * vec_dot_q4_K's / vec_dot_q6_K's, lane-wise: acc = fma(dw * da, isum, acc)
 * (Q4_K then acc = fma(-(dmin * da), summins, acc), as vfnmadd). So the
 * result is bit-identical to every other table.
 */
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/x86/avx512_qk.h"

#define ROWS 16 /* output rows per group: one per 32-bit lane */
#define NT 8	/* tokens in flight */

static inline __m512i bc32(const void *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return _mm512_set1_epi32(v);
}

static inline __m512i gather(__mmask16 m, __m512i idx, const char *p)
{
	return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, idx, p,
					   1);
}

static inline __m512 half_lo(__m512i v)
{
	return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
}

/*
 * Load 64 bytes at p + r * rs for rows r < nr (zeros for the others) and
 * transpose: o[c] lane r = dword c of row r.
 */
static inline __attribute__((always_inline)) void
load_transpose(__m512i o[16], const char *p, size_t rs, int nr)
{
	__m512i r[16], t[16], u[16];

	/* masked off rows are neither read nor can they fault */
	_Pragma("GCC unroll 16") for (int i = 0; i < 16; i++)
	{
		r[i] = _mm512_maskz_loadu_epi32(i < nr ? 0xffff : 0,
						p + i * rs);
	}
	_Pragma("GCC unroll 16") for (int i = 0; i < 8; i++)
	{
		t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
		t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
	}
	/* u[4i + c], 128-bit lane L: rows 4i..4i+3 of dword 4L + c */
	_Pragma("GCC unroll 16") for (int i = 0; i < 4; i++)
	{
		u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
		u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
		u[4 * i + 2] =
			_mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
		u[4 * i + 3] =
			_mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
	}
	/* a 4x4 transpose of 128-bit lanes per c */
	_Pragma("GCC unroll 16") for (int c = 0; c < 4; c++)
	{
		__m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44);
		__m512i v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xee);
		__m512i v2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
		__m512i v3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xee);

		o[c] = _mm512_shuffle_i32x4(v0, v2, 0x88);
		o[4 + c] = _mm512_shuffle_i32x4(v0, v2, 0xdd);
		o[8 + c] = _mm512_shuffle_i32x4(v1, v3, 0x88);
		o[12 + c] = _mm512_shuffle_i32x4(v1, v3, 0xdd);
	}
}

/*
 * The scales, mins and d/dmin of 16 rows' Q4_K or Q5_K super-block at b
 * (the same 16 leading bytes), gathered and unpacked into sc/mp/d/dmin.
 */
static inline void prep_k4_scales(__m512i sc8[8], __m512i mp[4], __m512 *d,
				  __m512 *dmin, const char *b, __mmask16 m,
				  __m512i idx)
{
	const __m512i m6 = _mm512_set1_epi32(0x3f3f3f3f);
	const __m512i m4 = _mm512_set1_epi32(0x0f0f0f0f);
	const __m512i m2 = _mm512_set1_epi32(0x03030303);
	const __m512i ff = _mm512_set1_epi32(0xff);
	const __m512i ff2 = _mm512_set1_epi32(0xff0000);
	__m512i dd = gather(m, idx, b);
	__m512i u0 = gather(m, idx, b + 4), u1 = gather(m, idx, b + 8);
	__m512i u2 = gather(m, idx, b + 12);
	__m512i sa = _mm512_and_si512(u0, m6);
	__m512i mb = _mm512_and_si512(u1, m6);
	__m512i sc = _mm512_or_si512(
		_mm512_and_si512(u2, m4),
		_mm512_slli_epi32(
			_mm512_and_si512(_mm512_srli_epi32(u0, 6), m2), 4));
	__m512i me = _mm512_or_si512(
		_mm512_and_si512(_mm512_srli_epi32(u2, 4), m4),
		_mm512_slli_epi32(
			_mm512_and_si512(_mm512_srli_epi32(u1, 6), m2), 4));

	*d = half_lo(dd);
	*dmin = half_lo(_mm512_srli_epi32(dd, 16));
	for (int j = 0; j < 4; j++) {
		sc8[j] = _mm512_and_si512(_mm512_srli_epi32(sa, 8 * j), ff);
		sc8[j + 4] = _mm512_and_si512(_mm512_srli_epi32(sc, 8 * j), ff);
	}
	/* (m0, m1), (m2, m3) from mb; (m4, m5), (m6, m7) from me */
	mp[0] = _mm512_or_si512(_mm512_and_si512(mb, ff),
				_mm512_and_si512(_mm512_slli_epi32(mb, 8),
						 ff2));
	mp[1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(mb, 16), ff),
				_mm512_and_si512(_mm512_srli_epi32(mb, 8),
						 ff2));
	mp[2] = _mm512_or_si512(_mm512_and_si512(me, ff),
				_mm512_and_si512(_mm512_slli_epi32(me, 8),
						 ff2));
	mp[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(me, 16), ff),
				_mm512_and_si512(_mm512_srli_epi32(me, 8),
						 ff2));
}

static inline __m512i row_offsets(size_t rs)
{
	return _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8,
						   7, 6, 5, 4, 3, 2, 1, 0),
				  _mm512_set1_epi32((int)rs));
}

static void prep_q4_K(struct q4k_prep *P, const char *w, size_t rs, int64_t nsb,
		      int nr)
{
	const __mmask16 m = (__mmask16)((1u << nr) - 1);
	const __m512i idx = row_offsets(rs);

	for (int64_t i = 0; i < nsb; i++, P++) {
		const char *b = w + i * sizeof(struct edgeq_block_q4_K);

		prep_k4_scales(P->sc, P->mp, &P->d, &P->dmin, b, m, idx);
		load_transpose(P->qs, b + 16, rs, nr);
		load_transpose(P->qs + 16, b + 80, rs, nr);
	}
}

/*
 * Q5_K element 32 j + 4 l4 + (0..3) (sub-block j = 2 c + h): nibble h of
 * qs dword 8 c + l4 with bit j of qh dword l4 as bit 4.
 */
static void prep_q5_K(struct q5k_prep *P, const char *w, size_t rs, int64_t nsb,
		      int nr)
{
	const __mmask16 m = (__mmask16)((1u << nr) - 1);
	const __m512i idx = row_offsets(rs);
	const __m512i m4 = _mm512_set1_epi32(0x0f0f0f0f);
	const __m512i b0 = _mm512_set1_epi32(0x01010101);

	for (int64_t i = 0; i < nsb; i++, P++) {
		const char *b = w + i * sizeof(struct edgeq_block_q5_K);
		__m512i qh[16], qs[32];

		prep_k4_scales(P->sc, P->mp, &P->d, &P->dmin, b, m, idx);
		load_transpose(qh, b + 16, rs, nr); /* dwords 0-7: qh */
		load_transpose(qs, b + 48, rs, nr);
		load_transpose(qs + 16, b + 112, rs, nr);
		for (int j = 0; j < 8; j++) {
			int c = j / 2, h = j & 1;

			for (int l4 = 0; l4 < 8; l4++) {
				__m512i lo = _mm512_and_si512(
					_mm512_srli_epi32(qs[8 * c + l4],
							  4 * h),
					m4);
				__m512i hb = _mm512_and_si512(
					_mm512_srli_epi32(qh[l4], j), b0);

				P->q[8 * j + l4] = _mm512_or_si512(
					lo, _mm512_slli_epi32(hb, 4));
			}
		}
	}
}

static void prep_q6_K(struct q6k_prep *P, const char *w, size_t rs, int64_t nsb,
		      int nr)
{
	const __mmask16 m = (__mmask16)((1u << nr) - 1);
	const __m512i idx = row_offsets(rs);
	const __m512i m4 = _mm512_set1_epi32(0x0f0f0f0f);
	const __m512i m2 = _mm512_set1_epi32(0x30303030);

	for (int64_t i = 0; i < nsb; i++, P++) {
		const char *b = w + i * sizeof(struct edgeq_block_q6_K);
		__m512i ql[32], qhv[16];

		/* scales[14..15] and d: the last word inside the block */
		P->d = half_lo(_mm512_srli_epi32(gather(m, idx, b + 206), 16));
		for (int k = 0; k < 4; k++) {
			__m512i s = gather(m, idx, b + 192 + 4 * k);

			for (int l = 0; l < 4; l++)
				P->sc[4 * k + l] = _mm512_srai_epi32(
					_mm512_slli_epi32(s, 24 - 8 * l), 24);
		}
		load_transpose(ql, b, rs, nr);
		load_transpose(ql + 16, b + 64, rs, nr);
		load_transpose(qhv, b + 128, rs, nr);
		for (int h = 0; h < 2; h++)
			for (int g = 0; g < 8; g++) {
				__m512i qh = qhv[8 * h + g];
				__m512i l0 = ql[16 * h + g],
					l1 = ql[16 * h + 8 + g];
				__m512i *q = &P->q[32 * h + g];

				q[0] = _mm512_or_si512(
					_mm512_and_si512(l0, m4),
					_mm512_and_si512(
						_mm512_slli_epi32(qh, 4), m2));
				q[8] = _mm512_or_si512(
					_mm512_and_si512(l1, m4),
					_mm512_and_si512(
						_mm512_slli_epi32(qh, 2), m2));
				q[16] = _mm512_or_si512(
					_mm512_and_si512(
						_mm512_srli_epi32(l0, 4), m4),
					_mm512_and_si512(qh, m2));
				q[24] = _mm512_or_si512(
					_mm512_and_si512(
						_mm512_srli_epi32(l1, 4), m4),
					_mm512_and_si512(
						_mm512_srli_epi32(qh, 2), m2));
			}
	}
}

/*
 * Q3_K into Q6_K's layout: element 16 g + 4 k + (0..3) of sub-block
 * g = 8 n + 2 j + h is bits 2j of qs dword 8 n + 4 h + k plus 4 where bit
 * 4 n + j of hmask dword 4 h + k is set (q + 4); 16 signed scales.
 */
static void prep_q3_K(struct q6k_prep *P, const char *w, size_t rs, int64_t nsb,
		      int nr)
{
	const __mmask16 m = (__mmask16)((1u << nr) - 1);
	const __m512i idx = row_offsets(rs);
	const __m512i m4 = _mm512_set1_epi32(0x0f0f0f0f);
	const __m512i m3 = _mm512_set1_epi32(0x03030303);
	const __m512i b0 = _mm512_set1_epi32(0x01010101);

	for (int64_t i = 0; i < nsb; i++, P++) {
		const char *b = w + i * sizeof(struct edgeq_block_q3_K);
		__m512i hm[16], qs[16], sw[4];
		__m512i u0 = gather(m, idx, b + 96),
			u1 = gather(m, idx, b + 100);
		__m512i u2 = gather(m, idx, b + 104);

		/* d: the high word of the block's last dword */
		P->d = half_lo(_mm512_srli_epi32(gather(m, idx, b + 106), 16));
		sw[0] = _mm512_or_si512(
			_mm512_and_si512(u0, m4),
			_mm512_slli_epi32(_mm512_and_si512(u2, m3), 4));
		sw[1] = _mm512_or_si512(
			_mm512_and_si512(u1, m4),
			_mm512_slli_epi32(
				_mm512_and_si512(_mm512_srli_epi32(u2, 2), m3),
				4));
		sw[2] = _mm512_or_si512(
			_mm512_and_si512(_mm512_srli_epi32(u0, 4), m4),
			_mm512_slli_epi32(
				_mm512_and_si512(_mm512_srli_epi32(u2, 4), m3),
				4));
		sw[3] = _mm512_or_si512(
			_mm512_and_si512(_mm512_srli_epi32(u1, 4), m4),
			_mm512_slli_epi32(
				_mm512_and_si512(_mm512_srli_epi32(u2, 6), m3),
				4));
		for (int q = 0; q < 4; q++)
			for (int l = 0; l < 4; l++)
				P->sc[4 * q + l] = _mm512_sub_epi32(
					_mm512_and_si512(
						_mm512_srli_epi32(sw[q], 8 * l),
						_mm512_set1_epi32(0xff)),
					_mm512_set1_epi32(32));
		load_transpose(hm, b, rs, nr); /* dwords 0-7: hmask */
		load_transpose(qs, b + 32, rs, nr);
		for (int g = 0; g < 16; g++) {
			int n = g / 8, j = (g / 2) & 3, h = g & 1;

			for (int k = 0; k < 4; k++) {
				__m512i lo = _mm512_and_si512(
					_mm512_srli_epi32(qs[8 * n + 4 * h + k],
							  2 * j),
					m3);
				__m512i hb = _mm512_and_si512(
					_mm512_srli_epi32(hm[4 * h + k],
							  4 * n + j),
					b0);

				P->q[4 * g + k] = _mm512_or_si512(
					lo, _mm512_slli_epi32(hb, 2));
			}
		}
	}
}

/* IQ4_XS into Q6_K's layout: group g of 16 elements (sub-block g / 2,
 * nibble g & 1) of dword 4 (g / 2) + k of qs, as value + 128; the scale of
 * sub-block g / 2 for both its groups. */
static void prep_iq4_xs(struct q6k_prep *P, const char *w, size_t rs,
			int64_t nsb, int nr)
{
	const __mmask16 m = (__mmask16)((1u << nr) - 1);
	const __m512i idx = row_offsets(rs);
	const __m512i m4 = _mm512_set1_epi32(0x0f0f0f0f);
	const __m512i tab = _mm512_broadcast_i32x4(_mm_xor_si128(
		_mm_loadu_si128((const __m128i *)edgeq_kvalues_iq4nl),
		_mm_set1_epi8((char)0x80)));

	for (int64_t i = 0; i < nsb; i++, P++) {
		const char *b = w + i * sizeof(struct edgeq_block_iq4_xs);
		__m512i qs[32];
		__m512i dd = gather(m, idx, b), sl = gather(m, idx, b + 4);
		__m512i sh = _mm512_srli_epi32(dd, 16);

		P->d = half_lo(dd);
		for (int ib = 0; ib < 8; ib++) {
			__m512i ls = _mm512_or_si512(
				_mm512_and_si512(_mm512_srli_epi32(sl, 4 * ib),
						 _mm512_set1_epi32(0xf)),
				_mm512_slli_epi32(
					_mm512_and_si512(
						_mm512_srli_epi32(sh, 2 * ib),
						_mm512_set1_epi32(3)),
					4));

			P->sc[2 * ib] = P->sc[2 * ib + 1] =
				_mm512_sub_epi32(ls, _mm512_set1_epi32(32));
		}
		load_transpose(qs, b + 8, rs, nr);
		load_transpose(qs + 16, b + 72, rs, nr);
		for (int g = 0; g < 16; g++)
			for (int k = 0; k < 4; k++)
				P->q[4 * g + k] = _mm512_shuffle_epi8(
					tab,
					_mm512_and_si512(
						_mm512_srli_epi32(
							qs[4 * (g / 2) + k],
							4 * (g & 1)),
						m4));
	}
}

/* Q2_K: Q3_K's element order without the mask bit; scales and mins the
 * low and high nibbles of the first 16 bytes. */
static void prep_q2_K(struct q2k_prep *P, const char *w, size_t rs, int64_t nsb,
		      int nr)
{
	const __mmask16 m = (__mmask16)((1u << nr) - 1);
	const __m512i idx = row_offsets(rs);
	const __m512i m3 = _mm512_set1_epi32(0x03030303);
	const __m512i f = _mm512_set1_epi32(0x0f);

	for (int64_t i = 0; i < nsb; i++, P++) {
		const char *b = w + i * sizeof(struct edgeq_block_q2_K);
		__m512i qs[16], sw[4];
		__m512i dd = gather(m, idx, b + 80);

		P->d = half_lo(dd);
		P->dmin = half_lo(_mm512_srli_epi32(dd, 16));
		for (int q = 0; q < 4; q++) {
			sw[q] = gather(m, idx, b + 4 * q);
			for (int l = 0; l < 4; l++)
				P->sc[4 * q + l] = _mm512_and_si512(
					_mm512_srli_epi32(sw[q], 8 * l), f);
		}
		for (int p = 0; p < 8; p++) {
			__m512i v = _mm512_srli_epi32(sw[p / 2], 16 * (p & 1));

			P->mp[p] = _mm512_or_si512(
				_mm512_and_si512(_mm512_srli_epi32(v, 4), f),
				_mm512_slli_epi32(
					_mm512_and_si512(
						_mm512_srli_epi32(v, 12), f),
					16));
		}
		load_transpose(qs, b + 16, rs, nr);
		for (int g = 0; g < 16; g++) {
			int n = g / 8, j = (g / 2) & 3, h = g & 1;

			for (int k = 0; k < 4; k++)
				P->q[4 * g + k] = _mm512_and_si512(
					_mm512_srli_epi32(qs[8 * n + 4 * h + k],
							  2 * j),
					m3);
		}
	}
}

/*
 * Per token and super-block the activation side: Q4_K the pair sums
 * (bs[2p], bs[2p + 1]) as int16 pairs, bs[j] = bsums[2j] + bsums[2j + 1]
 * (|bs| <= 32 * 128); Q6_K -32 * bsums[g], Q3_K -4 * bsums[g]; Q2_K 16
 * zeros (Q6_K's start values) then the pairs (bsums[2p], bsums[2p + 1]) as
 * int16. APS int32 per super-block.
 */
#define APS_Q4K 4
#define APS_Q6K 16
#define APS_Q2K 24
static void prep_act(enum edgeq_type t, int32_t *ap, const char *a, size_t as,
		     int64_t nt, int64_t nsb)
{
	for (int64_t b = 0; b < nt; b++) {
		const struct edgeq_block_q8_K *y =
			(const struct edgeq_block_q8_K *)(a + b * as);

		for (int64_t i = 0; i < nsb; i++) {
			const int16_t *bs = y[i].bsums;

			if (t == EDGEQ_TYPE_Q4_K || t == EDGEQ_TYPE_Q5_K) {
				for (int p = 0; p < 4; p++) {
					uint16_t lo = (uint16_t)(bs[4 * p] +
								 bs[4 * p + 1]);
					uint16_t hi = (uint16_t)(bs[4 * p + 2] +
								 bs[4 * p + 3]);

					*ap++ = (int32_t)((uint32_t)lo |
							  (uint32_t)hi << 16);
				}
			} else if (t == EDGEQ_TYPE_Q2_K) {
				for (int g = 0; g < 16; g++)
					*ap++ = 0;
				for (int p = 0; p < 8; p++)
					*ap++ = (int32_t)((uint32_t)(uint16_t)
								  bs[2 * p] |
							  (uint32_t)(uint16_t)
									  bs[2 * p +
									     1]
								  << 16);
			} else {
				int off = t == EDGEQ_TYPE_Q3_K	 ? -4 :
					  t == EDGEQ_TYPE_IQ4_XS ? -128 :
								   -32;

				for (int g = 0; g < 16; g++)
					*ap++ = off * bs[g];
			}
		}
	}
}

/* Token t's Q8_K block i. */
static inline const struct edgeq_block_q8_K *blk8(const char *a, size_t as,
						  int t, int64_t i)
{
	return (const struct edgeq_block_q8_K *)(a + t * as) + i;
}

#define UNROLL _Pragma("GCC unroll 16")

/*
 * 16 rows x nt tokens. The loops carry unroll pragmas (GCC -O2 would keep
 * the per-token arrays in memory otherwise); within a sub-block the tokens'
 * dot chains interleave (group outer, token inner), so 8 independent
 * vpdpbusd chains hide its latency. The sub-block loop is unrolled only by
 * 2: fully unrolled, GCC spilled the dot sums of all sub-blocks to the
 * stack (Q6_K ~25 % slower).
 */
/* Q4_K (q5 false) or Q5_K (q5: P is a struct q5k_prep array, whose
 * leading fields are q4k_prep's) */
static inline __attribute__((always_inline)) void
tile_k4(bool q5, int nt, const void *Pv, int64_t nsb, const char *a, size_t as,
	const int32_t *ap, float *y, int64_t ldy, __mmask16 mask)
{
	const __m512i m4 = _mm512_set1_epi8(0x0f);
	const size_t psz = q5 ? sizeof(struct q5k_prep) :
				sizeof(struct q4k_prep);
	__m512 acc[NT];

	UNROLL for (int t = 0; t < nt; t++)
	{
		acc[t] = _mm512_setzero_ps();
	}
	for (int64_t i = 0; i < nsb; i++) {
		const struct q4k_prep *P =
			(const struct q4k_prep *)((const char *)Pv + i * psz);
		const __m512i *q5v = ((const struct q5k_prep *)P)->q;
		__m512i isum[NT];

		UNROLL for (int t = 0; t < nt; t++)
		{
			isum[t] = _mm512_setzero_si512();
		}
		_Pragma("GCC unroll 2") for (int j = 0; j < 8; j++)
		{
			__m512i s[NT];

			UNROLL for (int g = 0; g < 8; g++)
			{
				__m512i wv;

				if (q5) {
					wv = q5v[8 * j + g];
				} else {
					__m512i q = P->qs[8 * (j >> 1) + g];

					wv = _mm512_and_si512(
						(j & 1) ? _mm512_srli_epi32(q,
									    4) :
							  q,
						m4);
				}

				UNROLL for (int t = 0; t < nt; t++)
				{
					__m512i y4 =
						bc32(blk8(a, as, t, i)->qs +
						     32 * j + 4 * g);

					s[t] = _mm512_dpbusd_epi32(
						g ? s[t] :
						    _mm512_setzero_si512(),
						wv, y4);
				}
			}
			UNROLL for (int t = 0; t < nt; t++)
			{
				isum[t] = _mm512_add_epi32(
					isum[t],
					_mm512_mullo_epi32(s[t], P->sc[j]));
			}
		}
		UNROLL for (int t = 0; t < nt; t++)
		{
			const int32_t *p = ap + (t * nsb + i) * APS_Q4K;
			__m512 da = _mm512_set1_ps(blk8(a, as, t, i)->d);
			__m512i ms = _mm512_setzero_si512();

			UNROLL for (int k = 0; k < 4; k++)
			{
				ms = _mm512_dpwssd_epi32(ms, P->mp[k],
							 bc32(p + k));
			}
			acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(P->d, da),
						 _mm512_cvtepi32_ps(isum[t]),
						 acc[t]);
			acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(P->dmin, da),
						  _mm512_cvtepi32_ps(ms),
						  acc[t]);
		}
	}
	UNROLL for (int t = 0; t < nt; t++)
	{
		_mm512_mask_storeu_ps(y + t * ldy, mask, acc[t]);
	}
}

/* Q6_K and Q3_K (q2 false) or Q2_K (q2: P is a struct q2k_prep array,
 * whose leading fields are q6k_prep's; then the min term as Q4_K's) */
static inline __attribute__((always_inline)) void
tile_k16(bool q2, int nt, const void *Pv, int64_t nsb, const char *a, size_t as,
	 const int32_t *ap, float *y, int64_t ldy, __mmask16 mask)
{
	const int64_t aps = q2 ? APS_Q2K : APS_Q6K;
	const size_t psz = q2 ? sizeof(struct q2k_prep) :
				sizeof(struct q6k_prep);
	__m512 acc[NT];

	UNROLL for (int t = 0; t < nt; t++)
	{
		acc[t] = _mm512_setzero_ps();
	}
	for (int64_t i = 0; i < nsb; i++) {
		const struct q6k_prep *P =
			(const struct q6k_prep *)((const char *)Pv + i * psz);
		__m512i isum[NT];

		UNROLL for (int t = 0; t < nt; t++)
		{
			isum[t] = _mm512_setzero_si512();
		}
		_Pragma("GCC unroll 2") for (int g = 0; g < 16; g++)
		{
			__m512i s[NT];

			/* start at -32 * bsums[g]: the dot of q - 32 */
			UNROLL for (int t = 0; t < nt; t++)
			{
				s[t] = q2 ? _mm512_setzero_si512() :
					    bc32(ap + (t * nsb + i) * aps + g);
			}
			UNROLL for (int k = 0; k < 4; k++)
			{
				__m512i wv = P->q[4 * g + k];

				UNROLL for (int t = 0; t < nt; t++)
				{
					s[t] = _mm512_dpbusd_epi32(
						s[t], wv,
						bc32(blk8(a, as, t, i)->qs +
						     16 * g + 4 * k));
				}
			}
			UNROLL for (int t = 0; t < nt; t++)
			{
				isum[t] = _mm512_add_epi32(
					isum[t],
					_mm512_mullo_epi32(s[t], P->sc[g]));
			}
		}
		UNROLL for (int t = 0; t < nt; t++)
		{
			__m512 da = _mm512_set1_ps(blk8(a, as, t, i)->d);

			acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(P->d, da),
						 _mm512_cvtepi32_ps(isum[t]),
						 acc[t]);
			if (q2) {
				const struct q2k_prep *P2 =
					(const struct q2k_prep *)P;
				const int32_t *p =
					ap + (t * nsb + i) * aps + 16;
				__m512i ms = _mm512_setzero_si512();

				UNROLL for (int k = 0; k < 8; k++)
				{
					ms = _mm512_dpwssd_epi32(ms, P2->mp[k],
								 bc32(p + k));
				}
				acc[t] = _mm512_fnmadd_ps(
					_mm512_mul_ps(P2->dmin, da),
					_mm512_cvtepi32_ps(ms), acc[t]);
			}
		}
	}
	UNROLL for (int t = 0; t < nt; t++)
	{
		_mm512_mask_storeu_ps(y + t * ldy, mask, acc[t]);
	}
}

#define TILE_CASES(fn, P)                               \
	switch (nt) {                                   \
	case 8:                                         \
		fn(8, P, nsb, a, as, ap, y, ldy, mask); \
		break;                                  \
	case 7:                                         \
		fn(7, P, nsb, a, as, ap, y, ldy, mask); \
		break;                                  \
	case 6:                                         \
		fn(6, P, nsb, a, as, ap, y, ldy, mask); \
		break;                                  \
	case 5:                                         \
		fn(5, P, nsb, a, as, ap, y, ldy, mask); \
		break;                                  \
	case 4:                                         \
		fn(4, P, nsb, a, as, ap, y, ldy, mask); \
		break;                                  \
	case 3:                                         \
		fn(3, P, nsb, a, as, ap, y, ldy, mask); \
		break;                                  \
	case 2:                                         \
		fn(2, P, nsb, a, as, ap, y, ldy, mask); \
		break;                                  \
	default:                                        \
		fn(1, P, nsb, a, as, ap, y, ldy, mask); \
		break;                                  \
	}

static inline __attribute__((always_inline)) void
tile_q4_K(int nt, const void *P, int64_t nsb, const char *a, size_t as,
	  const int32_t *ap, float *y, int64_t ldy, __mmask16 mask)
{
	tile_k4(false, nt, P, nsb, a, as, ap, y, ldy, mask);
}

static inline __attribute__((always_inline)) void
tile_q5_K(int nt, const void *P, int64_t nsb, const char *a, size_t as,
	  const int32_t *ap, float *y, int64_t ldy, __mmask16 mask)
{
	tile_k4(true, nt, P, nsb, a, as, ap, y, ldy, mask);
}

static void tiles_q4_K(int nt, const void *P, int64_t nsb, const char *a,
		       size_t as, const int32_t *ap, float *y, int64_t ldy,
		       __mmask16 mask)
{
	TILE_CASES(tile_q4_K, P)
}

static void tiles_q5_K(int nt, const void *P, int64_t nsb, const char *a,
		       size_t as, const int32_t *ap, float *y, int64_t ldy,
		       __mmask16 mask)
{
	TILE_CASES(tile_q5_K, P)
}

static inline __attribute__((always_inline)) void
tile_q6_K(int nt, const void *P, int64_t nsb, const char *a, size_t as,
	  const int32_t *ap, float *y, int64_t ldy, __mmask16 mask)
{
	tile_k16(false, nt, P, nsb, a, as, ap, y, ldy, mask);
}

static inline __attribute__((always_inline)) void
tile_q2_K(int nt, const void *P, int64_t nsb, const char *a, size_t as,
	  const int32_t *ap, float *y, int64_t ldy, __mmask16 mask)
{
	tile_k16(true, nt, P, nsb, a, as, ap, y, ldy, mask);
}

static void tiles_q6_K(int nt, const void *P, int64_t nsb, const char *a,
		       size_t as, const int32_t *ap, float *y, int64_t ldy,
		       __mmask16 mask)
{
	TILE_CASES(tile_q6_K, P)
}

static void tiles_q2_K(int nt, const void *P, int64_t nsb, const char *a,
		       size_t as, const int32_t *ap, float *y, int64_t ldy,
		       __mmask16 mask)
{
	TILE_CASES(tile_q2_K, P)
}

/* Tokens per block: their Q8_K activations within ACT_BYTES (of L2). */
#define ACT_BYTES (640 << 10)

/*
 * Both entry points: rows [row0, row1) in groups of 16 from @base0 (each
 * group's lanes those of its rows inside the range), tokens in blocks
 * whose activations fit ACT_BYTES; @prep prepares the group starting at
 * row r.
 */
static bool run_groups(enum edgeq_type type, int64_t n, int64_t base0,
		       int64_t row0, int64_t row1, const void *a, size_t as,
		       int64_t nb, float *y, int64_t ldy,
		       void (*prep)(void *P, int64_t r, int64_t nsb,
				    const void *arg),
		       const void *arg)
{
	bool q4 = type == EDGEQ_TYPE_Q4_K || type == EDGEQ_TYPE_Q5_K;
	int64_t nsb = n / EDGEQ_QK_K, aps = q4			    ? APS_Q4K :
					    type == EDGEQ_TYPE_Q2_K ? APS_Q2K :
								      APS_Q6K;
	size_t psz = type == EDGEQ_TYPE_Q4_K ? sizeof(struct q4k_prep) :
		     type == EDGEQ_TYPE_Q5_K ? sizeof(struct q5k_prep) :
		     type == EDGEQ_TYPE_Q2_K ? sizeof(struct q2k_prep) :
					       sizeof(struct q6k_prep);
	int64_t cap = (int64_t)(ACT_BYTES / as) / NT * NT, tb = nb;
	void *wp;
	int32_t *ap;

	if (nb <= 0 || row1 <= row0)
		return true;
	if (cap < NT)
		cap = NT;
	if (nb > cap) { /* equal blocks, multiples of NT */
		int64_t nblk = (nb + cap - 1) / cap;

		tb = ((nb + nblk - 1) / nblk + NT - 1) / NT * NT;
	}
	wp = aligned_alloc(64, psz * (size_t)nsb);
	/* aligned_alloc wants a multiple of the alignment */
	ap = aligned_alloc(64, (sizeof(int32_t) * (size_t)(tb * nsb * aps) +
				63) & ~(size_t)63);
	if (!wp || !ap) {
		free(wp);
		free(ap);
		return false;
	}
	for (int64_t b0 = 0; b0 < nb; b0 += tb) {
		int64_t b1 = b0 + tb < nb ? b0 + tb : nb;

		prep_act(type, ap, (const char *)a + b0 * as, as, b1 - b0, nsb);
		for (int64_t r = base0; r < row1; r += ROWS) {
			int64_t lo = row0 - r, hi = row1 - r;
			uint32_t m = 0xffff;

			if (lo > 0)
				m &= 0xffffu << lo;
			if (hi < ROWS)
				m &= (1u << hi) - 1;
			prep(wp, r, nsb, arg);
			for (int64_t b = b0; b < b1; b += NT) {
				int nt = b1 - b < NT ? (int)(b1 - b) : NT;
				const int32_t *apb = ap + (b - b0) * nsb * aps;
				const char *at = (const char *)a + b * as;
				float *yt = y + b * ldy + r;
				__mmask16 mask = (__mmask16)m;

				if (type == EDGEQ_TYPE_Q4_K)
					tiles_q4_K(nt, wp, nsb, at, as, apb, yt,
						   ldy, mask);
				else if (type == EDGEQ_TYPE_Q5_K)
					tiles_q5_K(nt, wp, nsb, at, as, apb, yt,
						   ldy, mask);
				else if (type == EDGEQ_TYPE_Q2_K)
					tiles_q2_K(nt, wp, nsb, at, as, apb, yt,
						   ldy, mask);
				else
					tiles_q6_K(nt, wp, nsb, at, as, apb, yt,
						   ldy, mask);
			}
		}
	}
	free(wp);
	free(ap);
	return true;
}

/* The file's rows: the group at row r from the matrix at w. */
struct file_rows {
	enum edgeq_type type;
	const char *w;
	size_t rs;
	int64_t row1;
};

static void prep_file(void *wp, int64_t r, int64_t nsb, const void *arg)
{
	const struct file_rows *f = arg;
	int nr = (int)(f->row1 - r < ROWS ? f->row1 - r : ROWS);
	const char *wr = f->w + r * f->rs;

	if (f->type == EDGEQ_TYPE_Q4_K)
		prep_q4_K(wp, wr, f->rs, nsb, nr);
	else if (f->type == EDGEQ_TYPE_Q5_K)
		prep_q5_K(wp, wr, f->rs, nsb, nr);
	else if (f->type == EDGEQ_TYPE_Q3_K)
		prep_q3_K(wp, wr, f->rs, nsb, nr);
	else if (f->type == EDGEQ_TYPE_Q2_K)
		prep_q2_K(wp, wr, f->rs, nsb, nr);
	else if (f->type == EDGEQ_TYPE_IQ4_XS)
		prep_iq4_xs(wp, wr, f->rs, nsb, nr);
	else
		prep_q6_K(wp, wr, f->rs, nsb, nr);
}

bool edgeq_avx512_matmul_qk(enum edgeq_type type, const void *w, int64_t n,
			    int64_t row0, int64_t row1, const void *a,
			    size_t as, int64_t nb, float *y, int64_t ldy)
{
	const struct file_rows f = { type, w, edgeq_row_size(type, n), row1 };

	return run_groups(type, n, row0, row0, row1, a, as, nb, y, ldy,
			  prep_file, &f);
}

bool edgeq_avx512_matmul_qk_groups(enum edgeq_type type, int64_t n,
				   int64_t row0, int64_t row1, const void *a,
				   size_t as, int64_t nb, float *y, int64_t ldy,
				   void (*prep)(void *P, int64_t r, int64_t nsb,
						const void *arg),
				   const void *arg)
{
	return run_groups(type, n, row0 / ROWS * ROWS, row0, row1, a, as, nb, y,
			  ldy, prep, arg);
}
