// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * AVX-512 VNNI decode matvec for Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS
 * weights x one Q8_K
 * activation vector, 16 rows at a time (one output row per 32-bit lane of
 * the float chain).
 *
 * The activation is prepared once per call: per super-block its 256 bytes
 * in the weights' lane layout (4 zmm), Q4_K's pair sums of bsums (the min
 * term) or, for Q6_K, minus the 16 group sums (the -32 offset), and d.
 *
 * Per row and super-block the weights become unsigned bytes (Q4_K nibbles,
 * Q5_K nibbles with their qh bit as bit 4, Q6_K q + 32 in 0..63, Q3_K
 * q + 4 in 0..7 with Q6_K's scale layout and a -4 offset, Q2_K q in 0..3
 * in that layout with its mins), vpmaddubsw against the activation bytes gives
 * exact int16 pair sums (|x| <= 2 * 63 * 128), and vpdpwssd weights them
 * with the sub-block scales as int16 words (vpshufb / vpermw of the row's
 * scale bytes) into one zmm of int32 lanes. Q6_K starts that zmm at
 * -32 * sum_g sc_g * bsum_g; Q4_K's (and Q5_K's, the same scale layout) min term is one vpmaddwd of the mins
 * against the bsums pair sums. A transpose-add tree turns the 16 rows'
 * zmm into one vector of 16 exact (row, super-block) sums, and the 16
 * float chains advance lane-wise exactly as scalar's vec_dot_q4_K /
 * vec_dot_q6_K: acc = fma(dw * da, isum, acc), then for Q4_K
 * acc = fma(-(dmin * da), summins, acc) (vfnmadd). So the result is
 * bit-identical to every other table.
 *
 * Rows stream one super-block at a time; the next group of 16 rows (which
 * follows in memory) is prefetched, spread over the current group's
 * super-blocks. A partial last group repeats its last row and stores with a
 * mask.
 */
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/x86/avx512_qk.h"
#include "kernels/x86/hsum512.h"

#define ROWS 16
#define ACT_STACK 32 /* super-blocks prepared on the stack: n <= 8192 */

/* One activation super-block, prepared. */
struct qk_act {
	__m512i y[4];
	__m256i bs; /* Q4_K, Q5_K: 8 bsums pair sums (low half); Q2_K,
		     * Q3_K, Q6_K: -bsums */
	float d;
} __attribute__((aligned(64)));

static void act_prep(enum edgeq_type t, const struct edgeq_block_q8_K *a,
		     int64_t nsb, struct qk_act *A)
{
	for (int64_t i = 0; i < nsb; i++) {
		const int8_t *q = a[i].qs;

		A[i].d = a[i].d;
		if (t == EDGEQ_TYPE_Q4_K || t == EDGEQ_TYPE_Q5_K) {
			/* (sub-blocks 0, 2), (1, 3), (4, 6), (5, 7) */
			for (int k = 0; k < 4; k++) {
				const int8_t *p =
					q + 128 * (k >> 1) + 32 * (k & 1);

				A[i].y[k] = _mm512_inserti64x4(
					_mm512_castsi256_si512(
						_mm256_loadu_si256(
							(const __m256i *)p)),
					_mm256_loadu_si256(
						(const __m256i *)(p + 64)),
					1);
			}
			A[i].bs = _mm256_zextsi128_si256(_mm_hadd_epi16(
				_mm_loadu_si128((const __m128i *)a[i].bsums),
				_mm_loadu_si128(
					(const __m128i *)(a[i].bsums + 8))));
		} else {
			int16_t nbs[16];

			for (int k = 0; k < 4; k++)
				A[i].y[k] = _mm512_loadu_si512(q + 64 * k);
			/* the group sums from the bytes (scalar's Q6_K dot
			 * does not read bsums) */
			for (int g = 0; g < 16; g++) {
				int s = 0;

				for (int l = 0; l < 16; l++)
					s += q[16 * g + l];
				nbs[g] = (int16_t)-s;
			}
			A[i].bs = _mm256_loadu_si256((const __m256i *)nbs);
		}
	}
}

/* t[g] chunk c lane k: part c of row 4g + k; result lane 4g + k: the sum
 * of its 4 parts. */
/* 128-bit chunk g of v in all four chunks (g constant once unrolled; the
 * switch keeps the immediate an immediate when it is not, as at -O1). */
static inline __m512i chunk_bcast(__m512i v, int g)
{
	switch (g) {
	case 0:
		return _mm512_shuffle_i32x4(v, v, 0x00);
	case 1:
		return _mm512_shuffle_i32x4(v, v, 0x55);
	case 2:
		return _mm512_shuffle_i32x4(v, v, 0xaa);
	default:
		return _mm512_shuffle_i32x4(v, v, 0xff);
	}
}

static inline __m512i hsum_chunks(const __m512i t[4])
{
	__m512i y01 = _mm512_add_epi32(_mm512_shuffle_i32x4(t[0], t[1], 0x44),
				       _mm512_shuffle_i32x4(t[0], t[1], 0xee));
	__m512i y23 = _mm512_add_epi32(_mm512_shuffle_i32x4(t[2], t[3], 0x44),
				       _mm512_shuffle_i32x4(t[2], t[3], 0xee));

	return _mm512_add_epi32(_mm512_shuffle_i32x4(y01, y23, 0x88),
				_mm512_shuffle_i32x4(y01, y23, 0xdd));
}

/* vpshufb control: words of chunks 0-1 = byte lo, of chunks 2-3 = byte hi
 * (zero-extended) */
static inline __m512i word_ctl(int lo, int hi)
{
	return _mm512_mask_blend_epi32(
		0xff00, _mm512_set1_epi32((int)(0x80008000u | lo << 16 | lo)),
		_mm512_set1_epi32((int)(0x80008000u | hi << 16 | hi)));
}

static inline __m512 half_lo(__m512i v)
{
	return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
}

/*
 * The scale and min bytes of 4 rows' Q4_K blocks (b + off[k] for the 4
 * offsets): chunk k of the result is row k's [sc0-3, sc4-7, m0-3, m4-7]
 * (see edgeq_q4_K_unpack_scales).
 */
static inline __m512i q4k_scales4(const char *b, const size_t off[4])
{
	__m512i u = _mm512_inserti32x4(
		_mm512_inserti32x4(
			_mm512_inserti32x4(
				_mm512_castsi128_si512(_mm_loadu_si128(
					(const __m128i *)(b + off[0] + 4))),
				_mm_loadu_si128(
					(const __m128i *)(b + off[1] + 4)),
				1),
			_mm_loadu_si128((const __m128i *)(b + off[2] + 4)), 2),
		_mm_loadu_si128((const __m128i *)(b + off[3] + 4)), 3);
	__m512i lo6 = _mm512_and_si512(u, _mm512_set1_epi8(0x3f));
	__m512i h2 = _mm512_and_si512(_mm512_srli_epi32(u, 2),
				      _mm512_set1_epi8(0x30));
	__m512i t = _mm512_and_si512(
		_mm512_srlv_epi32(_mm512_shuffle_epi32(u, 0xaa),
				  _mm512_set4_epi32(4, 0, 4, 0)),
		_mm512_set1_epi8(0x0f));

	return _mm512_unpacklo_epi32(lo6, _mm512_or_si512(t, h2));
}

/* Row (block b) of a Q4_K group, its scale bytes broadcast to every chunk
 * in sz: its sub-block sums weighted by the scales. */
static inline __attribute__((always_inline)) __m512i
q4k_row(const char *b, const struct qk_act *A, const __m512i ctl[4], __m512i sz)
{
	const __m512i m4 = _mm512_set1_epi8(0x0f);
	__m512i w0 = _mm512_loadu_si512(b + 16),
		w1 = _mm512_loadu_si512(b + 80);
	__m512i acc;

	acc = _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_and_si512(w0, m4),
						     A->y[0]),
				_mm512_shuffle_epi8(sz, ctl[0]));
	acc = _mm512_dpwssd_epi32(
		acc,
		_mm512_maddubs_epi16(_mm512_and_si512(_mm512_srli_epi16(w0, 4),
						      m4),
				     A->y[1]),
		_mm512_shuffle_epi8(sz, ctl[1]));
	acc = _mm512_dpwssd_epi32(
		acc, _mm512_maddubs_epi16(_mm512_and_si512(w1, m4), A->y[2]),
		_mm512_shuffle_epi8(sz, ctl[2]));
	acc = _mm512_dpwssd_epi32(
		acc,
		_mm512_maddubs_epi16(_mm512_and_si512(_mm512_srli_epi16(w1, 4),
						      m4),
				     A->y[3]),
		_mm512_shuffle_epi8(sz, ctl[3]));
	return acc;
}

/* vpsllvw / vpsrlvw counts: words of the low 256 bits by lo, high by hi */
static inline __m512i cnt2(int lo, int hi)
{
	return _mm512_inserti64x4(_mm512_set1_epi16((short)lo),
				  _mm256_set1_epi16((short)hi), 1);
}

/*
 * Row (block b) of a Q5_K group: as q4k_row, each nibble with its qh bit
 * as bit 4. Byte l of each 256-bit half pairs with qh[l]; the four vectors
 * hold sub-blocks (0, 2), (1, 3), (4, 6), (5, 7), so bit j of qh moves to
 * bit 4 with per-half shift counts, and vpternlogd takes bits 0-3 from the
 * nibble bytes and bit 4 (the rest zero) from the shifted qh.
 */
static inline __attribute__((always_inline)) __m512i
q5k_row(const char *b, const struct qk_act *A, const __m512i ctl[4], __m512i sz)
{
	const __m512i m4 = _mm512_set1_epi8(0x0f), b4 = _mm512_set1_epi8(0x10);
	__m512i w0 = _mm512_loadu_si512(b + 48),
		w1 = _mm512_loadu_si512(b + 112);
	__m512i qh = _mm512_broadcast_i64x4(
		_mm256_loadu_si256((const __m256i *)(b + 16)));
	__m512i h[4], q[4], acc;

	h[0] = _mm512_and_si512(_mm512_sllv_epi16(qh, cnt2(4, 2)), b4);
	h[1] = _mm512_and_si512(_mm512_sllv_epi16(qh, cnt2(3, 1)), b4);
	h[2] = _mm512_and_si512(_mm512_srlv_epi16(qh, cnt2(0, 2)), b4);
	h[3] = _mm512_and_si512(_mm512_srlv_epi16(qh, cnt2(1, 3)), b4);
	q[0] = _mm512_ternarylogic_epi32(w0, h[0], m4, 0xe4);
	q[1] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(w0, 4), h[1], m4,
					 0xe4);
	q[2] = _mm512_ternarylogic_epi32(w1, h[2], m4, 0xe4);
	q[3] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(w1, 4), h[3], m4,
					 0xe4);
	acc = _mm512_madd_epi16(_mm512_maddubs_epi16(q[0], A->y[0]),
				_mm512_shuffle_epi8(sz, ctl[0]));
	for (int k = 1; k < 4; k++)
		acc = _mm512_dpwssd_epi32(acc,
					  _mm512_maddubs_epi16(q[k], A->y[k]),
					  _mm512_shuffle_epi8(sz, ctl[k]));
	return acc;
}

/*
 * Row (block b) of a Q3_K group: Q6_K's layout of 16 signed scales and 4
 * vectors of 64 elements in order, so the same vpermw indices; vector k
 * holds elements 64k..64k+63, i.e. bits 2j of the 32 qs bytes of half
 * k / 2 for j = 2 (k % 2) (low 256 bits) and j + 1 (high), with mask bit
 * 4 (k / 2) + j of hmask as bit 2. The accumulator starts at
 * -4 * sum_g sc_g * bsum_g (the stored values are q + 4).
 */
static inline __attribute__((always_inline)) __m512i
q3k_row(const char *b, const struct qk_act *A, const __m512i idx[4])
{
	const __m512i m3 = _mm512_set1_epi8(3), b2 = _mm512_set1_epi8(4);
	/* the 12 scale bytes as dwords a0, a1, a2 (not past the block) */
	__m128i v = _mm_maskz_loadu_epi8(0x0fff, b + 96);
	__m128i lo = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(v, 0x44),
						  _mm_set_epi32(4, 4, 0, 0)),
				   _mm_set1_epi8(0x0f));
	__m128i hi = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(v, 0xaa),
						  _mm_set_epi32(6, 4, 2, 0)),
				   _mm_set1_epi8(0x03));
	__m128i s8 = _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi32(hi, 4)),
				  _mm_set1_epi8(32));
	__m256i sc = _mm256_cvtepi8_epi16(s8);
	__m512i scz = _mm512_castsi256_si512(sc);
	__m512i acc = _mm512_zextsi256_si512(
		_mm256_slli_epi32(_mm256_madd_epi16(sc, A->bs), 2));
	__m512i hm =
		_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)b));
	__m512i qs[2] = { _mm512_broadcast_i64x4(_mm256_loadu_si256(
				  (const __m256i *)(b + 32))),
			  _mm512_broadcast_i64x4(_mm256_loadu_si256(
				  (const __m256i *)(b + 64))) };
	__m512i h[4];

	h[0] = _mm512_sllv_epi16(hm, cnt2(2, 1));
	h[1] = _mm512_srlv_epi16(hm, cnt2(0, 1));
	h[2] = _mm512_srlv_epi16(hm, cnt2(2, 3));
	h[3] = _mm512_srlv_epi16(hm, cnt2(4, 5));
	for (int k = 0; k < 4; k++) {
		__m512i l2 = _mm512_srlv_epi16(
			qs[k >> 1], (k & 1) ? cnt2(4, 6) : cnt2(0, 2));
		__m512i q = _mm512_ternarylogic_epi32(
			l2, _mm512_and_si512(h[k], b2), m3, 0xe4);

		acc = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(q, A->y[k]),
					  _mm512_permutexvar_epi16(idx[k],
								   scz));
	}
	return acc;
}

/*
 * Row (block b) of a Q2_K group: Q3_K's element order without the mask
 * bit; the 16 scales are the low nibbles of its first 16 bytes, the mins
 * the high ones. *mn gets the row's min-term lanes against the negated
 * bsums (minus sum_g m_g * bsum_g once summed).
 */
static inline __attribute__((always_inline)) __m512i
q2k_row(const char *b, const struct qk_act *A, const __m512i idx[4],
	__m512i *mn)
{
	const __m512i m3 = _mm512_set1_epi8(3);
	__m128i v = _mm_loadu_si128((const __m128i *)b);
	__m256i sc =
		_mm256_cvtepu8_epi16(_mm_and_si128(v, _mm_set1_epi8(0x0f)));
	__m256i mi = _mm256_cvtepu8_epi16(
		_mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(0x0f)));
	__m512i scz = _mm512_castsi256_si512(sc), acc = _mm512_setzero_si512();
	__m512i qs[2] = { _mm512_broadcast_i64x4(_mm256_loadu_si256(
				  (const __m256i *)(b + 16))),
			  _mm512_broadcast_i64x4(_mm256_loadu_si256(
				  (const __m256i *)(b + 48))) };

	*mn = _mm512_zextsi256_si512(_mm256_madd_epi16(mi, A->bs));
	for (int k = 0; k < 4; k++) {
		__m512i q = _mm512_and_si512(
			_mm512_srlv_epi16(qs[k >> 1],
					  (k & 1) ? cnt2(4, 6) : cnt2(0, 2)),
			m3);

		acc = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(q, A->y[k]),
					  _mm512_permutexvar_epi16(idx[k],
								   scz));
	}
	return acc;
}

/*
 * Row (block b) of an IQ4_XS group. Its table values (-127..113) do not fit
 * vpmaddubsw's int16 pairs, so they go through vpdpbusd as v + 128
 * (unsigned) into int32 lanes and are weighted by the sub-block scales with
 * vpmulld; the accumulator starts at 128 * sum_j ls_j * (minus the
 * activation's sub-block sum), which removes the +128. Vector k holds
 * elements 64k..64k+63 (sub-blocks 2k, 2k + 1: Q6_K's activation layout).
 */
static inline __attribute__((always_inline)) __m512i
iq4xs_row(const char *b, const struct qk_act *A)
{
	const struct edgeq_block_iq4_xs *x = (const void *)b;
	const __m512i m4 = _mm512_set1_epi8(0x0f);
	const __m512i tab = _mm512_broadcast_i32x4(_mm_xor_si128(
		_mm_loadu_si128((const __m128i *)edgeq_kvalues_iq4nl),
		_mm_set1_epi8((char)0x80)));
	const __m128i f = _mm_set1_epi8(0x0f);
	int32_t sl;
	__m128i slv, hb, ls8;
	__m256i ls32, ls16;
	__m512i acc;

	/* ls_j: nibble j of scales_l, bits 2j..2j+1 of scales_h as bits 4-5 */
	memcpy(&sl, x->scales_l, 4);
	slv = _mm_cvtsi32_si128(sl);
	hb = _mm_and_si128(
		_mm_srlv_epi16(_mm_set1_epi16((short)x->scales_h),
			       _mm_setr_epi16(0, 2, 4, 6, 8, 10, 12, 14)),
		_mm_set1_epi16(3));
	ls8 = _mm_sub_epi8(
		_mm_or_si128(_mm_unpacklo_epi8(
				     _mm_and_si128(slv, f),
				     _mm_and_si128(_mm_srli_epi16(slv, 4), f)),
			     _mm_slli_epi16(_mm_packus_epi16(hb, hb), 4)),
		_mm_set1_epi8(32));
	ls32 = _mm256_cvtepi8_epi32(ls8);
	/* each scale twice: the 16 groups of 16 of A->bs */
	ls16 = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(ls8, ls8));
	acc = _mm512_zextsi256_si512(
		_mm256_slli_epi32(_mm256_madd_epi16(ls16, A->bs), 7));
	_Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
	{
		__m256i v =
			_mm256_loadu_si256((const __m256i *)(x->qs + 32 * k));
		__m512i nib = _mm512_inserti64x4(
			_mm512_castsi256_si512(_mm256_and_si256(
				v, _mm512_castsi512_si256(m4))),
			_mm256_and_si256(_mm256_srli_epi16(v, 4),
					 _mm512_castsi512_si256(m4)),
			1);
		/* chunks lo0, hi0, lo1, hi1: elements in order */
		__m512i u = _mm512_shuffle_epi8(
			tab, _mm512_shuffle_i32x4(nib, nib, 0xd8));
		__m512i sc = _mm512_permutexvar_epi32(
			_mm512_set_epi32(2 * k + 1, 2 * k + 1, 2 * k + 1,
					 2 * k + 1, 2 * k + 1, 2 * k + 1,
					 2 * k + 1, 2 * k + 1, 2 * k, 2 * k,
					 2 * k, 2 * k, 2 * k, 2 * k, 2 * k,
					 2 * k),
			_mm512_castsi256_si512(ls32));

		acc = _mm512_add_epi32(
			acc, _mm512_mullo_epi32(
				     _mm512_dpbusd_epi32(_mm512_setzero_si512(),
							 u, A->y[k]),
				     sc));
	}
	return acc;
}

/* Row r (block b) of a Q6_K group: its scaled sum including the -32
 * offset. */
static inline __attribute__((always_inline)) __m512i
q6k_row(const char *b, const struct qk_act *A, const __m512i idx[4])
{
	const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
	/* low 256 bits: shifts for elements 0-31 (64-95), high: 32-63
	 * (96-127) of each 128-element half */
	const __m512i shl = _mm512_inserti64x4(_mm512_set1_epi16(4),
					       _mm256_set1_epi16(2), 1);
	const __m512i shr = _mm512_inserti64x4(_mm512_set1_epi16(0),
					       _mm256_set1_epi16(2), 1);
	__m256i sc = _mm256_cvtepi8_epi16(
		_mm_loadu_si128((const __m128i *)(b + 192)));
	__m512i scz = _mm512_castsi256_si512(sc);
	__m512i acc = _mm512_zextsi256_si512(
		_mm256_slli_epi32(_mm256_madd_epi16(sc, A->bs), 5));

	for (int h = 0; h < 2; h++) {
		__m512i ql = _mm512_loadu_si512(b + 64 * h);
		__m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(
			(const __m256i *)(b + 128 + 32 * h)));
		__m512i lo = _mm512_ternarylogic_epi32(
			ql, m4,
			_mm512_and_si512(_mm512_sllv_epi16(qh, shl), m30),
			0xea);
		__m512i hi = _mm512_ternarylogic_epi32(
			_mm512_srli_epi16(ql, 4), m4,
			_mm512_and_si512(_mm512_srlv_epi16(qh, shr), m30),
			0xea);

		acc = _mm512_dpwssd_epi32(
			acc, _mm512_maddubs_epi16(lo, A->y[2 * h]),
			_mm512_permutexvar_epi16(idx[2 * h], scz));
		acc = _mm512_dpwssd_epi32(
			acc, _mm512_maddubs_epi16(hi, A->y[2 * h + 1]),
			_mm512_permutexvar_epi16(idx[2 * h + 1], scz));
	}
	return acc;
}

static inline __attribute__((always_inline)) void
group(enum edgeq_type t, const char *w, size_t rs, int nr, int64_t nsb,
      const struct qk_act *A, float *y, bool prefetch)
{
	const size_t bs =
		t == EDGEQ_TYPE_Q4_K   ? sizeof(struct edgeq_block_q4_K) :
		t == EDGEQ_TYPE_Q5_K   ? sizeof(struct edgeq_block_q5_K) :
		t == EDGEQ_TYPE_Q3_K   ? sizeof(struct edgeq_block_q3_K) :
		t == EDGEQ_TYPE_Q2_K   ? sizeof(struct edgeq_block_q2_K) :
		t == EDGEQ_TYPE_IQ4_XS ? sizeof(struct edgeq_block_iq4_xs) :
					 sizeof(struct edgeq_block_q6_K);
	const bool k4 = t == EDGEQ_TYPE_Q4_K || t == EDGEQ_TYPE_Q5_K;
	const int pf_lines =
		!prefetch ? 0 : (int)((ROWS * rs / 64 + nsb - 1) / nsb);
	size_t off[ROWS];
	__m512i ctl[4], idx[4], vidx;
	/* the 8 mins as words */
	const __m512i ctlm = _mm512_broadcast_i32x4(
		_mm_set_epi8(-128, 15, -128, 14, -128, 13, -128, 12, -128, 11,
			     -128, 10, -128, 9, -128, 8));
	__m512 acc = _mm512_setzero_ps();
	int32_t io[ROWS];

	for (int r = 0; r < ROWS; r++) {
		off[r] = (size_t)(r < nr ? r : nr - 1) * rs;
		io[r] = (int32_t)off[r];
	}
	vidx = _mm512_loadu_si512(io);
	if (k4) {
		ctl[0] = word_ctl(0, 2);
		ctl[1] = word_ctl(1, 3);
		ctl[2] = word_ctl(4, 6);
		ctl[3] = word_ctl(5, 7);
	} else {
		/* chunk c of vector j: scale 4j + c */
		for (int j = 0; j < 4; j++)
			idx[j] = _mm512_add_epi16(
				_mm512_set1_epi16((short)(4 * j)),
				_mm512_srli_epi16(
					_mm512_set_epi16(
						31, 30, 29, 28, 27, 26, 25, 24,
						23, 22, 21, 20, 19, 18, 17, 16,
						15, 14, 13, 12, 11, 10, 9, 8, 7,
						6, 5, 4, 3, 2, 1, 0),
					3));
	}
	for (int64_t i = 0; i < nsb; i++) {
		const char *wb = w + i * bs;
		__m512i tv[4], sum;
		__m512 da = _mm512_set1_ps(A[i].d);

		for (int k = 0; k < pf_lines; k++)
			_mm_prefetch(w + ROWS * rs + (i * pf_lines + k) * 64,
				     _MM_HINT_T0);
		if (k4) {
			__m512i sc[4], mv[4];
			__m512i dd = _mm512_i32gather_epi32(vidx, wb, 1);
			const __m512i bsp = _mm512_broadcast_i32x4(
				_mm256_castsi256_si128(A[i].bs));

			/* sc[g] chunk c: row 4c + g; mv[g] likewise its 4
			 * min-term lanes */
			_Pragma("GCC unroll 4") for (int g = 0; g < 4; g++)
			{
				const size_t o4[4] = { off[g], off[4 + g],
						       off[8 + g],
						       off[12 + g] };

				sc[g] = q4k_scales4(wb, o4);
				mv[g] = _mm512_madd_epi16(
					_mm512_shuffle_epi8(sc[g], ctlm), bsp);
			}
			_Pragma("GCC unroll 4") for (int g = 0; g < 4; g++)
			{
				__m512i s[4];

				/* row 4g + k: chunk g of sc[k] */
				_Pragma("GCC unroll 4") for (int k = 0; k < 4;
							     k++)
				{
					s[k] = t == EDGEQ_TYPE_Q5_K ?
						       q5k_row(wb + off[4 * g +
									k],
							       &A[i], ctl,
							       chunk_bcast(sc[k],
									   g)) :
						       q4k_row(wb + off[4 * g +
									k],
							       &A[i], ctl,
							       chunk_bcast(sc[k],
									   g));
				}
				tv[g] = hsum_4x4(s[0], s[1], s[2], s[3]);
			}
			sum = hsum_chunks(tv);
			acc = _mm512_fmadd_ps(_mm512_mul_ps(half_lo(dd), da),
					      _mm512_cvtepi32_ps(sum), acc);
			acc = _mm512_fnmadd_ps(
				_mm512_mul_ps(
					half_lo(_mm512_srli_epi32(dd, 16)), da),
				_mm512_cvtepi32_ps(
					hsum_4x4(mv[0], mv[1], mv[2], mv[3])),
				acc);
		} else if (t == EDGEQ_TYPE_IQ4_XS) {
			/* d: the block's first word */
			__m512i dd = _mm512_i32gather_epi32(vidx, wb, 1);

			_Pragma("GCC unroll 4") for (int g = 0; g < 4; g++)
			{
				__m512i s[4];

				_Pragma("GCC unroll 4") for (int k = 0; k < 4;
							     k++)
				{
					s[k] = iq4xs_row(wb + off[4 * g + k],
							 &A[i]);
				}
				tv[g] = hsum_4x4(s[0], s[1], s[2], s[3]);
			}
			sum = hsum_chunks(tv);
			acc = _mm512_fmadd_ps(_mm512_mul_ps(half_lo(dd), da),
					      _mm512_cvtepi32_ps(sum), acc);
		} else if (t == EDGEQ_TYPE_Q2_K) {
			/* d and dmin: the block's last dword */
			__m512i dd = _mm512_i32gather_epi32(vidx, wb + 80, 1);
			__m512i mt[4];

			_Pragma("GCC unroll 4") for (int g = 0; g < 4; g++)
			{
				__m512i s[4], m[4];

				_Pragma("GCC unroll 4") for (int k = 0; k < 4;
							     k++)
				{
					s[k] = q2k_row(wb + off[4 * g + k],
						       &A[i], idx, &m[k]);
				}
				tv[g] = hsum_4x4(s[0], s[1], s[2], s[3]);
				mt[g] = hsum_4x4(m[0], m[1], m[2], m[3]);
			}
			sum = hsum_chunks(tv);
			acc = _mm512_fmadd_ps(_mm512_mul_ps(half_lo(dd), da),
					      _mm512_cvtepi32_ps(sum), acc);
			/* fma(dmin * da, -summins): scalar's
			 * fma(-(dmin * da), summins) bit for bit */
			acc = _mm512_fmadd_ps(
				_mm512_mul_ps(
					half_lo(_mm512_srli_epi32(dd, 16)), da),
				_mm512_cvtepi32_ps(hsum_chunks(mt)), acc);
		} else {
			/* d: the high word of the block's last dword */
			__m512i dd = _mm512_i32gather_epi32(
				vidx, wb + (t == EDGEQ_TYPE_Q3_K ? 106 : 206),
				1);

			_Pragma("GCC unroll 4") for (int g = 0; g < 4; g++)
			{
				__m512i s[4];

				_Pragma("GCC unroll 4") for (int k = 0; k < 4;
							     k++)
				{
					s[k] = t == EDGEQ_TYPE_Q3_K ?
						       q3k_row(wb + off[4 * g +
									k],
							       &A[i], idx) :
						       q6k_row(wb + off[4 * g +
									k],
							       &A[i], idx);
				}
				tv[g] = hsum_4x4(s[0], s[1], s[2], s[3]);
			}
			sum = hsum_chunks(tv);
			acc = _mm512_fmadd_ps(
				_mm512_mul_ps(
					half_lo(_mm512_srli_epi32(dd, 16)), da),
				_mm512_cvtepi32_ps(sum), acc);
		}
	}
	_mm512_mask_storeu_ps(y, (__mmask16)((1u << nr) - 1), acc);
}

static void groups(enum edgeq_type t, const char *w, size_t rs, int64_t nsb,
		   int64_t nrows, const struct qk_act *A, float *y)
{
	for (int64_t r = 0; r < nrows; r += ROWS) {
		int nr = nrows - r < ROWS ? (int)(nrows - r) : ROWS;

		if (t == EDGEQ_TYPE_Q4_K)
			group(EDGEQ_TYPE_Q4_K, w + r * rs, rs, nr, nsb, A,
			      y + r, r + ROWS < nrows);
		else if (t == EDGEQ_TYPE_Q5_K)
			group(EDGEQ_TYPE_Q5_K, w + r * rs, rs, nr, nsb, A,
			      y + r, r + ROWS < nrows);
		else if (t == EDGEQ_TYPE_Q3_K)
			group(EDGEQ_TYPE_Q3_K, w + r * rs, rs, nr, nsb, A,
			      y + r, r + ROWS < nrows);
		else if (t == EDGEQ_TYPE_Q2_K)
			group(EDGEQ_TYPE_Q2_K, w + r * rs, rs, nr, nsb, A,
			      y + r, r + ROWS < nrows);
		else if (t == EDGEQ_TYPE_IQ4_XS)
			group(EDGEQ_TYPE_IQ4_XS, w + r * rs, rs, nr, nsb, A,
			      y + r, r + ROWS < nrows);
		else
			group(EDGEQ_TYPE_Q6_K, w + r * rs, rs, nr, nsb, A,
			      y + r, r + ROWS < nrows);
	}
}

bool edgeq_avx512_matvec_qk(enum edgeq_type type, const void *w, int64_t n,
			    int64_t row0, int64_t row1, const void *a, float *y)
{
	struct qk_act stack[ACT_STACK], *A = stack;
	int64_t nsb = n / EDGEQ_QK_K;
	size_t rs = edgeq_row_size(type, n);

	if (row1 <= row0 || nsb <= 0)
		return true;
	if (nsb > ACT_STACK) {
		A = aligned_alloc(64, sizeof(*A) * (size_t)nsb);
		if (!A)
			return false;
	}
	act_prep(type, a, nsb, A);
	groups(type, (const char *)w + row0 * rs, rs, nsb, row1 - row0, A,
	       y + row0);
	if (A != stack)
		free(A);
	return true;
}
