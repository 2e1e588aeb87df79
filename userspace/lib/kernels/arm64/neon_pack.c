// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * NEON (dotprod) matvec and matmul on weights repacked into groups of 16
 * interleaved rows (kernels/pack.c has the layout; x86/avx512_pack.c the
 * same design with vpdpbusd). A 64-byte chunk is four 16-byte vectors,
 * vector v holding 4 weights of rows 4v..4v+3, one 32-bit lane per row:
 * sdot by lane (vdotq_laneq_s32) against the 4 activation bytes the chunk
 * meets sums them into the 4 rows' lanes. Q4_0 nibbles are used as they
 * are with the accumulator starting at -8 times the activation block's
 * sum; Q8_0's stored q + 128 goes back to q with one eor (sdot is signed
 * by signed), so its accumulator starts at 0. After a block the 16 lanes
 * are the exact block sums, and d_w * d_a (exact) and one fused
 * multiply-add per row advance the chains: the canonical order, bit for
 * bit the scalar dot.
 */
#include <arm_neon.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/pack_layout.h"

#define AI __attribute__((always_inline)) static inline

/*
 * acc + sdot of @w by lane @lane of @q: the lane must be an immediate, so
 * callers pass a constant (an unrolled loop's index) and the switch folds.
 */
AI int32x4_t sdot_lane(int32x4_t acc, int8x16_t w, int8x16_t q, const int lane)
{
	switch (lane & 3) {
	case 0:
		return vdotq_laneq_s32(acc, w, q, 0);
	case 1:
		return vdotq_laneq_s32(acc, w, q, 1);
	case 2:
		return vdotq_laneq_s32(acc, w, q, 2);
	default:
		return vdotq_laneq_s32(acc, w, q, 3);
	}
}

/* The 4 fp16 scales at @p as floats. */
AI float32x4_t f16x4(const void *p)
{
	return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

/* Per activation block: its scale, and Q4_0's bias (-8 times its sum). */
struct act {
	float d;
	int32_t bias;
};

/* bias: @mul times the block's sum */
static void act_prep_mul(const struct edgeq_block_q8_0 *a, int64_t nblk,
			 int32_t mul, struct act *out)
{
	for (int64_t i = 0; i < nblk; i++) {
		int16x8_t s = vaddq_s16(vpaddlq_s8(vld1q_s8(a[i].qs)),
					vpaddlq_s8(vld1q_s8(a[i].qs + 16)));

		out[i].d = edgeq_fp16_to_fp32(a[i].d);
		out[i].bias = mul * vaddlvq_s16(s);
	}
}

/*
 * The chains start at -8 times the block's sum for Q4_0 (the unsigned
 * stored values back to the signed ones), at 0 for Q8_0 (its q + 128 goes
 * back by eor), IQ4_NL (its table values are signed) and Q5_0 (fifth_bit()
 * makes the signed values); the affine types keep the sum itself for
 * their min term, Q4_1's chains start at 0 and Q5_1's at 16 times it
 * (fifth_bit()'s values are 16 under the stored ones).
 */
static void act_prep(enum edgeq_type t, const struct edgeq_block_q8_0 *a,
		     int64_t nblk, struct act *out)
{
	act_prep_mul(a, nblk,
		     t == EDGEQ_TYPE_Q4_0 ? -8 :
		     edgeq_pk_affine(t)	  ? 1 :
					    0,
		     out);
}

/*
 * A 5-bit type's chunk c (c' = c / 2 of its bytes' qh byte, bit 4 (c % 2)
 * + b for byte b; the high nibbles' elements are 16 on: qh byte 2 + c')
 * of rows 4v..4v+3 (their qh words, inverted, in @qhn), as the signed
 * value nibble + 16 x bit - 16: one insert puts 0xf above the nibble
 * (-16 + nibble as int8) where the element's bit is clear and leaves the
 * nibble where it is set; only @nib's low 4 bits are read, so a low
 * nibble needs no mask first.
 */
AI uint8x16_t fifth_bit(uint8x16_t nib, uint8x16_t qhn, const int c,
			const int high)
{
	static const uint8_t at[16] = { 0, 0, 0, 0, 4,	4,  4,	4,
					8, 8, 8, 8, 12, 12, 12, 12 };
	uint8x16_t ctl =
		vaddq_u8(vld1q_u8(at), vdupq_n_u8((uint8_t)(c / 2 + 2 * high)));
	uint8x16_t bit = vreinterpretq_u8_u32(
		vdupq_n_u32(c % 2 ? 0x80402010u : 0x08040201u));

	return vsliq_n_u8(nib, vtstq_u8(vqtbl1q_u8(qhn, ctl), bit), 4);
}

/*
 * G groups of 16 rows (gsz bytes apart) against NT tokens (constants at
 * each call), blocks [i0, i1): token k's Q8_0 row at a + k * as, its
 * prepared block i at ap[k * aps + i - i0]; acc[4 * (NT * g + k) + v] are
 * rows 4v..4v+3 of group g and token k. A block's activations are loaded
 * once for the G groups: a matvec over long rows takes 2 groups at once
 * (matmul_kind), so the rows' weights evict the token's activations from
 * L1 half as often (avx512_pack.c has the measurement).
 */
AI void tile_g(enum edgeq_type t, const uint8_t *gp, size_t gsz, const int G,
	       int64_t i0, int64_t i1, const char *a, size_t as,
	       const struct act *ap, int64_t aps, const int NT,
	       float32x4_t *acc)
{
	const size_t gb = edgeq_pk_gb32(t);
	const uint8x16_t m4 = vdupq_n_u8(0x0f), x80 = vdupq_n_u8(0x80);
	const bool nib = t != EDGEQ_TYPE_Q8_0, aff = edgeq_pk_affine(t);
	const bool five = t == EDGEQ_TYPE_Q5_0 || t == EDGEQ_TYPE_Q5_1;

	for (int64_t i = i0; i < i1; i++) {
		int8x16_t q0[4], q1[4];
		int32x4_t bias[4];
		int k, v;

#pragma GCC unroll 4
		for (k = 0; k < NT; k++) {
			const int8_t *q = ((
				const struct edgeq_block_q8_0 *)(a + k * as))[i]
						  .qs;

			q0[k] = vld1q_s8(q);
			q1[k] = vld1q_s8(q + 16);
			bias[k] = vdupq_n_s32(ap[k * aps + i - i0].bias);
		}
#pragma GCC unroll 2
		for (int g = 0; g < G; g++) {
			const uint8_t *blk =
				gp + (size_t)g * gsz + (size_t)i * gb;
			float32x4_t dw[4];
			int32x4_t s[4 * 4];

			__builtin_prefetch(blk + 2048);
			__builtin_prefetch(blk + 2048 + 64);
			__builtin_prefetch(blk + 2048 + 128);
			__builtin_prefetch(blk + 2048 + 192);
			__builtin_prefetch(blk + 2048 + 256);
			for (v = 0; v < 4; v++)
				dw[v] = f16x4((const uint16_t *)blk + 4 * v);
#pragma GCC unroll 4
			for (k = 0; k < NT; k++)
				for (v = 0; v < 4; v++)
					s[4 * k + v] =
						t == EDGEQ_TYPE_Q5_1 ?
							vshlq_n_s32(bias[k],
								    4) :
						aff ? vdupq_n_s32(0) :
						      bias[k];
			if (nib) {
#pragma GCC unroll 4
				for (v = 0; v < 4; v++) {
					uint8x16_t c0 = vld1q_u8(
						blk + edgeq_pk_qs32(t) +
						16 * v);
					uint8x16_t c1 = vld1q_u8(
						blk + edgeq_pk_qs32(t) + 64 +
						16 * v);
					uint8x16_t c2 = vld1q_u8(
						blk + edgeq_pk_qs32(t) + 128 +
						16 * v);
					uint8x16_t c3 = vld1q_u8(
						blk + edgeq_pk_qs32(t) + 192 +
						16 * v);
					/* named, not an array: an array of the 8
					 * made the Q4_0 tile spill (kcount: 0.399
					 * -> 0.414 instructions per byte) */
					uint8x16_t u0 = vandq_u8(c0, m4),
						   u1 = vandq_u8(c1, m4),
						   u2 = vandq_u8(c2, m4),
						   u3 = vandq_u8(c3, m4),
						   u4 = vshrq_n_u8(c0, 4),
						   u5 = vshrq_n_u8(c1, 4),
						   u6 = vshrq_n_u8(c2, 4),
						   u7 = vshrq_n_u8(c3, 4);

					if (five) {
						uint8x16_t qhn = vmvnq_u8(vld1q_u8(
							blk +
							(t == EDGEQ_TYPE_Q5_0 ?
								 EDGEQ_PK_Q50_QH :
								 EDGEQ_PK_Q51_QH) +
							16 * v));

						u0 = fifth_bit(c0, qhn, 0, 0);
						u1 = fifth_bit(c1, qhn, 1, 0);
						u2 = fifth_bit(c2, qhn, 2, 0);
						u3 = fifth_bit(c3, qhn, 3, 0);
						u4 = fifth_bit(u4, qhn, 0, 1);
						u5 = fifth_bit(u5, qhn, 1, 1);
						u6 = fifth_bit(u6, qhn, 2, 1);
						u7 = fifth_bit(u7, qhn, 3, 1);
					}
					int8x16_t l0 = vreinterpretq_s8_u8(u0);
					int8x16_t l1 = vreinterpretq_s8_u8(u1);
					int8x16_t l2 = vreinterpretq_s8_u8(u2);
					int8x16_t l3 = vreinterpretq_s8_u8(u3);
					int8x16_t h0 = vreinterpretq_s8_u8(u4);
					int8x16_t h1 = vreinterpretq_s8_u8(u5);
					int8x16_t h2 = vreinterpretq_s8_u8(u6);
					int8x16_t h3 = vreinterpretq_s8_u8(u7);

					if (t == EDGEQ_TYPE_IQ4_NL) {
						const int8x16_t tab = vld1q_s8(
							edgeq_kvalues_iq4nl);

						l0 = vqtbl1q_s8(tab, u0);
						l1 = vqtbl1q_s8(tab, u1);
						l2 = vqtbl1q_s8(tab, u2);
						l3 = vqtbl1q_s8(tab, u3);
						h0 = vqtbl1q_s8(tab, u4);
						h1 = vqtbl1q_s8(tab, u5);
						h2 = vqtbl1q_s8(tab, u6);
						h3 = vqtbl1q_s8(tab, u7);
					}

#pragma GCC unroll 4
					for (k = 0; k < NT; k++) {
						int32x4_t x = s[4 * k + v];

						/* one chain: integer sums are exact in
						 * any order, and the 4 x NT chains of a
						 * block keep the dot pipes busy; a
						 * second chain per row costs a zeroing
						 * move and an add, ~20 % of the tile's
						 * SIMD work (tools/kcount) */
						x = vdotq_laneq_s32(x, l0,
								    q0[k], 0);
						x = vdotq_laneq_s32(x, h0,
								    q1[k], 0);
						x = vdotq_laneq_s32(x, l1,
								    q0[k], 1);
						x = vdotq_laneq_s32(x, h1,
								    q1[k], 1);
						x = vdotq_laneq_s32(x, l2,
								    q0[k], 2);
						x = vdotq_laneq_s32(x, h2,
								    q1[k], 2);
						x = vdotq_laneq_s32(x, l3,
								    q0[k], 3);
						x = vdotq_laneq_s32(x, h3,
								    q1[k], 3);
						s[4 * k + v] = x;
					}
				}
			} else {
#pragma GCC unroll 4
				for (v = 0; v < 4; v++) {
					/* each chunk's vector straight into the chains:
					 * no array of 8 to spill */
#pragma GCC unroll 8
					for (int c = 0; c < 8; c++) {
						int8x16_t w = vreinterpretq_s8_u8(
							veorq_u8(
								vld1q_u8(
									blk +
									EDGEQ_PK_Q80_QS +
									64 * c +
									16 * v),
								x80));

#pragma GCC unroll 4
						for (k = 0; k < NT; k++)
							s[4 * k + v] = sdot_lane(
								s[4 * k + v], w,
								c < 4 ? q0[k] :
									q1[k],
								c);
					}
				}
			}
#pragma GCC unroll 4
			for (k = 0; k < NT; k++) {
				float da = ap[k * aps + i - i0].d;

#pragma GCC unroll 4
				for (v = 0; v < 4; v++)
					acc[4 * (NT * g + k) + v] = vfmaq_f32(
						acc[4 * (NT * g + k) + v],
						vmulq_n_f32(dw[v], da),
						vcvtq_f32_s32(s[4 * k + v]));
				if (aff) /* + m_w * d_a * the block's sum */
#pragma GCC unroll 4
					for (v = 0; v < 4; v++)
						acc[4 * (NT * g + k) + v] = vfmaq_f32(
							acc[4 * (NT * g + k) +
							    v],
							vmulq_n_f32(
								f16x4((const uint16_t
									       *)(blk +
										  EDGEQ_PK_A_M) +
								      4 * v),
								da),
							vdupq_n_f32(
								(float)ap[k * aps +
									  i - i0]
									.bias));
			}
		}
	}
}

/* One group against NT tokens: tile_g()'s form with G = 1. */
AI void tile(enum edgeq_type t, const uint8_t *gp, int64_t i0, int64_t i1,
	     const char *a, size_t as, const struct act *ap, int64_t aps,
	     const int NT, float32x4_t *acc)
{
	tile_g(t, gp, 0, 1, i0, i1, a, as, ap, aps, NT, acc);
}

/* @F (tile or tile_mm) with a constant type and token count */
#define Q80_CASE(F, N)                                                    \
	case N:                                                           \
		if (t == EDGEQ_TYPE_Q4_0)                                 \
			F(EDGEQ_TYPE_Q4_0, gp, i0, i1, a, as, ap, aps, N, \
			  acc);                                           \
		else                                                      \
			F(EDGEQ_TYPE_Q8_0, gp, i0, i1, a, as, ap, aps, N, \
			  acc);                                           \
		return
#define Q80_SWITCH(F)           \
	switch (nt) {           \
		Q80_CASE(F, 1); \
		Q80_CASE(F, 2); \
		Q80_CASE(F, 3); \
		Q80_CASE(F, 4); \
	}

/* One group against nt tokens of the 32-column type TY (a constant). */
#define TILE_ANY(name, TY)                                            \
	static void name(const uint8_t *gp, int64_t i0, int64_t i1,   \
			 const char *a, size_t as, const void *ap,    \
			 int64_t aps, int nt, float32x4_t *acc)       \
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
		default:                                              \
			tile(TY, gp, i0, i1, a, as, ap, aps, 4, acc); \
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
		     int64_t aps, int nt, float32x4_t *acc)
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

/*
 * ---- i8mm (Armv8.6 int8 matrix multiply): Q4_0/Q8_0 prefill by token
 * pairs, on the same packed layout ----
 *
 * usmmla(acc, W, A) with W = [row a: 8 bytes | row b: 8 bytes] (unsigned)
 * and A = [token t: 8 bytes | token u: 8 bytes] (signed) adds the four dots
 * [a.t, a.u, b.t, b.u]: 32 multiply-adds an instruction where sdot by lane
 * does 16. Chunk c's lane r holds bytes 4c..4c+3 of row r, so zip1/zip2 of
 * two chunks' 32-bit lanes give rows (4v, 4v+1) and (4v+2, 4v+3) over 8
 * consecutive bytes (Q4_0: zip the raw bytes, then the low nibbles are
 * elements 8j.., the high ones 16 + 8j..); a pair's activations zip by
 * 64-bit halves. The weights stay unsigned (Q4_0's nibbles, Q8_0's stored
 * q + 128), so each chain starts at -8 or -128 times the token's block
 * sum: the exact block sums, then the same float step per row and token
 * as tile(), in lanes ordered by row pair and token pair (zipped in and
 * out of the caller's acc[4 * k + v] once per call).
 */
#define I8MM __attribute__((target("+i8mm")))

/* NT tokens (a constant at each call, up to 4) as NT / 2 pairs rounded
 * up; an odd last token is paired with itself and its twin discarded.
 * More pairs a tile spill: at 8 tokens the 16 activation operands and 32
 * accumulators do not fit the 32 vector registers (kcount: Q4_0 0.305
 * instructions per byte and token against 0.287 at 4). */
I8MM AI void tile_mm(enum edgeq_type t, const uint8_t *gp, int64_t i0,
		     int64_t i1, const char *a, size_t as, const struct act *ap,
		     int64_t aps, const int NT, float32x4_t *acc)
{
	const size_t gb = t == EDGEQ_TYPE_Q4_0 ? EDGEQ_PK_GB_Q4_0 :
						 EDGEQ_PK_GB_Q8_0;
	const int NP = (NT + 1) / 2;
	const uint8x16_t m4 = vdupq_n_u8(0x0f);
	float32x4_t f[2 * 8];
	int p, v;

	/* f[8p + 2v + h]: rows 4v + 2h, 4v + 2h + 1 x tokens 2p, 2p + 1 */
	for (p = 0; p < NP; p++)
		for (v = 0; v < 4; v++) {
			float32x4_t x = acc[8 * p + v], y = acc[8 * p + 4 + v];

			f[8 * p + 2 * v] = vzip1q_f32(x, y);
			f[8 * p + 2 * v + 1] = vzip2q_f32(x, y);
		}
	for (int64_t i = i0; i < i1; i++) {
		const uint8_t *blk = gp + (size_t)i * gb;
		int8x16_t A[2][4];
		int32x4_t st[2];
		float32x4_t da[2];

		__builtin_prefetch(blk + 2048);
		__builtin_prefetch(blk + 2048 + 64);
		__builtin_prefetch(blk + 2048 + 128);
		__builtin_prefetch(blk + 2048 + 192);
		__builtin_prefetch(blk + 2048 + 256);
#pragma GCC unroll 4
		for (p = 0; p < NP; p++) {
			const int k0 = 2 * p,
				  k1 = 2 * p + 1 < NT ? 2 * p + 1 : 2 * p;
			const int8_t *y0 = ((const struct edgeq_block_q8_0
						     *)(a + k0 * as))[i]
						   .qs,
				     *y1 = ((const struct edgeq_block_q8_0
						     *)(a + k1 * as))[i]
						   .qs;
			const struct act *x0 = &ap[k0 * aps + i - i0],
					 *x1 = &ap[k1 * aps + i - i0];
			int64x2_t q0 = vreinterpretq_s64_s8(vld1q_s8(y0)),
				  q1 = vreinterpretq_s64_s8(vld1q_s8(y0 + 16)),
				  r0 = vreinterpretq_s64_s8(vld1q_s8(y1)),
				  r1 = vreinterpretq_s64_s8(vld1q_s8(y1 + 16));
			int32x2_t b = vset_lane_s32(x1->bias,
						    vdup_n_s32(x0->bias), 1);
			float32x2_t d =
				vset_lane_f32(x1->d, vdup_n_f32(x0->d), 1);

			A[p][0] = vreinterpretq_s8_s64(vzip1q_s64(q0, r0));
			A[p][1] = vreinterpretq_s8_s64(vzip2q_s64(q0, r0));
			A[p][2] = vreinterpretq_s8_s64(vzip1q_s64(q1, r1));
			A[p][3] = vreinterpretq_s8_s64(vzip2q_s64(q1, r1));
			st[p] = vcombine_s32(b, b);
			da[p] = vcombine_f32(d, d);
		}
#pragma GCC unroll 4
		for (v = 0; v < 4; v++) {
			float32x4_t d4 = f16x4((const uint16_t *)blk + 4 * v);
			float32x4_t dw[2] = { vzip1q_f32(d4, d4),
					      vzip2q_f32(d4, d4) };
			uint8x16_t W[2][4];

			if (t == EDGEQ_TYPE_Q4_0) {
				uint32x4_t c[4];

				for (int j = 0; j < 4; j++)
					c[j] = vreinterpretq_u32_u8(
						vld1q_u8(blk + EDGEQ_PK_Q80_QS +
							 64 * j + 16 * v));
#pragma GCC unroll 2
				for (int h = 0; h < 2; h++) {
					uint8x16_t z0 = vreinterpretq_u8_u32(
						h ? vzip2q_u32(c[0], c[1]) :
						    vzip1q_u32(c[0], c[1]));
					uint8x16_t z1 = vreinterpretq_u8_u32(
						h ? vzip2q_u32(c[2], c[3]) :
						    vzip1q_u32(c[2], c[3]));

					W[h][0] = vandq_u8(z0, m4);
					W[h][1] = vandq_u8(z1, m4);
					W[h][2] = vshrq_n_u8(z0, 4);
					W[h][3] = vshrq_n_u8(z1, 4);
				}
			} else {
#pragma GCC unroll 4
				for (int j = 0; j < 4; j++) {
					uint32x4_t c0 =
						vreinterpretq_u32_u8(vld1q_u8(
							blk + EDGEQ_PK_Q80_QS +
							64 * (2 * j) + 16 * v));
					uint32x4_t c1 = vreinterpretq_u32_u8(
						vld1q_u8(blk + EDGEQ_PK_Q80_QS +
							 64 * (2 * j + 1) +
							 16 * v));

					W[0][j] = vreinterpretq_u8_u32(
						vzip1q_u32(c0, c1));
					W[1][j] = vreinterpretq_u8_u32(
						vzip2q_u32(c0, c1));
				}
			}
#pragma GCC unroll 4
			for (p = 0; p < NP; p++)
#pragma GCC unroll 2
				for (int h = 0; h < 2; h++) {
					int32x4_t s = st[p];
					float32x4_t *fp = &f[8 * p + 2 * v + h];

					s = vusmmlaq_s32(s, W[h][0], A[p][0]);
					s = vusmmlaq_s32(s, W[h][1], A[p][1]);
					s = vusmmlaq_s32(s, W[h][2], A[p][2]);
					s = vusmmlaq_s32(s, W[h][3], A[p][3]);
					*fp = vfmaq_f32(*fp,
							vmulq_f32(dw[h], da[p]),
							vcvtq_f32_s32(s));
				}
		}
	}
	for (p = 0; p < NP; p++)
		for (v = 0; v < 4; v++) {
			float32x4_t x = f[8 * p + 2 * v],
				    y = f[8 * p + 2 * v + 1];

			acc[8 * p + v] = vuzp1q_f32(x, y);
			acc[8 * p + 4 + v] = vuzp2q_f32(x, y);
		}
}

static I8MM void tile_mm_any(enum edgeq_type t, const uint8_t *gp, int64_t i0,
			     int64_t i1, const char *a, size_t as,
			     const void *ap, int64_t aps, int nt,
			     float32x4_t *acc)
{
	Q80_SWITCH(tile_mm)
}
#undef Q80_SWITCH
#undef Q80_CASE

/* ---- Q4_K and Q5_K: the x86 file's design (avx512_pack.c), 4 rows per
 * vector; Q5_K adds a plane of 8 chunks whose byte holds the fifth bit of
 * the same position's weight in each of the 8 sub-blocks ---- */

struct actk {
	float d;
	int32_t bs[8]; /* sub-block sums of the activation's bytes */
};

static void actk_prep(const struct edgeq_block_q8_K *a, int64_t nsb,
		      struct actk *o)
{
	for (int64_t i = 0; i < nsb; i++) {
		o[i].d = a[i].d;
		for (int j = 0; j < 8; j++)
			o[i].bs[j] = a[i].bsums[2 * j] + a[i].bsums[2 * j + 1];
	}
}

/* 16 bytes of one sub-block's scales (or mins) as 4 x 4 int32 lanes */
static inline void widen16(const uint8_t *p, int32x4_t o[4])
{
	uint8x16_t b = vld1q_u8(p);
	uint16x8_t l = vmovl_u8(vget_low_u8(b)), h = vmovl_u8(vget_high_u8(b));

	o[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(l)));
	o[1] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(l)));
	o[2] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(h)));
	o[3] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(h)));
}

/* One group against NT tokens, super-blocks [i0, i1); acc[4k + v]. The
 * sums stay in registers: the accumulators are copied in and out once,
 * each row group v's two dot chains start from zero per sub-block pair,
 * and the mins' term (no weights in it) is one widening multiply-add per
 * sub-block, row group and token after the quants. */
AI void tile_k(const uint8_t *gp, int64_t i0, int64_t i1, const char *a,
	       size_t as, const struct actk *ap, int64_t aps, const int NT,
	       const bool Q5, float32x4_t *accp)
{
	const uint8x16_t m4 = vdupq_n_u8(0x0f);
	const int GB = Q5 ? EDGEQ_PK_GB_Q5_K : EDGEQ_PK_GB_Q4_K;
	float32x4_t acc[2 * 4];
	int k, v;

	for (k = 0; k < 4 * NT; k++)
		acc[k] = accp[k];
	for (int64_t i = i0; i < i1; i++) {
		const uint8_t *sb = gp + (size_t)i * GB;
		int32x4_t isum[2 * 4], summ[2 * 4];

#pragma GCC unroll 64
		for (int o = 0; o < GB; o += 64)
			__builtin_prefetch(sb + 2048 + o);
#pragma GCC unroll 8
		for (k = 0; k < 4 * NT; k++)
			isum[k] = summ[k] = vdupq_n_s32(0);
#pragma GCC unroll 1
		for (int jj = 0; jj < 4; jj++) {
			const uint8_t *qp = sb + EDGEQ_PK_K_QS + 512 * jj;
			int8x16_t q[2][4];
			int32x4_t sl[4], sh[4];
			/* Q5: sub-block 2jj's bits (inverted, pack.c's bit_chunks())
			 * at bit 2jj, 2jj + 1's at the next */
			const uint8x16_t b_lo = vdupq_n_u8(
						 (uint8_t)(1 << (2 * jj))),
					 b_hi = vdupq_n_u8(
						 (uint8_t)(2 << (2 * jj)));

			widen16(sb + EDGEQ_PK_K_SC + 32 * jj, sl);
			widen16(sb + EDGEQ_PK_K_SC + 16 + 32 * jj, sh);
#pragma GCC unroll 2
			for (k = 0; k < NT; k++) {
				const struct edgeq_block_q8_K *qb =
					(const void *)(a + k * as);

				for (int j = 0; j < 4; j++)
					q[k][j] = vld1q_s8(qb[i].qs + 64 * jj +
							   16 * j);
			}
#pragma GCC unroll 4
			for (v = 0; v < 4; v++) {
				int32x4_t l[2], h[2];

				/* Q5: the chains start at 16 times the
				 * sub-block's activation sum, the signed
				 * weights being 16 under the stored ones */
#pragma GCC unroll 2
				for (k = 0; k < NT; k++) {
					const struct actk *x =
						&ap[k * aps + i - i0];

					l[k] = vdupq_n_s32(
						Q5 ? 16 * x->bs[2 * jj] : 0);
					h[k] = vdupq_n_s32(
						Q5 ? 16 * x->bs[2 * jj + 1] :
						     0);
				}
#pragma GCC unroll 8
				for (int c = 0; c < 8; c++) {
					uint8x16_t x =
						vld1q_u8(qp + 64 * c + 16 * v);
					uint8x16_t lo, hi;

					if (Q5) { /* sub-blocks 2jj, 2jj + 1 */
						uint8x16_t qh = vld1q_u8(
							sb + EDGEQ_PK_GB_Q4_K +
							64 * c + 16 * v);
						/* nibble + 16 x bit - 16 as
						 * int8: 0xf above the nibble
						 * where the bit is clear (set
						 * in the inverted qh), the
						 * nibble alone where set */
						lo = vsliq_n_u8(
							x, vtstq_u8(qh, b_lo),
							4);
						hi = vsriq_n_u8(vtstq_u8(qh,
									 b_hi),
								x, 4);
					} else {
						lo = vandq_u8(x, m4);
						hi = vshrq_n_u8(x, 4);
					}
#pragma GCC unroll 2
					for (k = 0; k < NT; k++) {
						l[k] = sdot_lane(
							l[k],
							vreinterpretq_s8_u8(lo),
							q[k][c >> 2], c);
						h[k] = sdot_lane(
							h[k],
							vreinterpretq_s8_u8(hi),
							q[k][2 + (c >> 2)], c);
					}
				}
#pragma GCC unroll 2
				for (k = 0; k < NT; k++)
					isum[4 * k + v] = vmlaq_s32(
						vmlaq_s32(isum[4 * k + v], l[k],
							  sl[v]),
						h[k], sh[v]);
			}
		}
		/* the mins: m[j][r] (6 bits) x the sub-block's activation
		 * sum (|bs| <= 32 x 128, an int16) */
#pragma GCC unroll 8
		for (int j = 0; j < 8; j++) {
			uint8x16_t mb = vld1q_u8(sb + EDGEQ_PK_K_MIN + 16 * j);
			int16x8_t m0 = vreinterpretq_s16_u16(
					  vmovl_u8(vget_low_u8(mb))),
				  m1 = vreinterpretq_s16_u16(vmovl_high_u8(mb));

#pragma GCC unroll 2
			for (k = 0; k < NT; k++) {
				int16_t b = (int16_t)ap[k * aps + i - i0].bs[j];

				summ[4 * k] = vmlal_n_s16(summ[4 * k],
							  vget_low_s16(m0), b);
				summ[4 * k + 1] = vmlal_high_n_s16(
					summ[4 * k + 1], m0, b);
				summ[4 * k + 2] = vmlal_n_s16(
					summ[4 * k + 2], vget_low_s16(m1), b);
				summ[4 * k + 3] = vmlal_high_n_s16(
					summ[4 * k + 3], m1, b);
			}
		}
#pragma GCC unroll 4
		for (v = 0; v < 4; v++) {
			float32x4_t dw = f16x4((const uint16_t *)sb + 4 * v);
			float32x4_t dm =
				f16x4((const uint16_t *)(sb + EDGEQ_PK_K_DMIN) +
				      4 * v);

#pragma GCC unroll 2
			for (k = 0; k < NT; k++) {
				float da = ap[k * aps + i - i0].d;

				acc[4 * k + v] = vfmaq_f32(
					acc[4 * k + v], vmulq_n_f32(dw, da),
					vcvtq_f32_s32(isum[4 * k + v]));
				acc[4 * k + v] = vfmsq_f32(
					acc[4 * k + v], vmulq_n_f32(dm, da),
					vcvtq_f32_s32(summ[4 * k + v]));
			}
		}
	}
	for (k = 0; k < 4 * NT; k++)
		accp[k] = acc[k];
}

/*
 * IQ4_XS: one group of 16 rows against NT Q8_K tokens, super-blocks
 * [i0, i1). Per sub-block its 4 chunks' nibbles go through the table by
 * tbl (signed, as sdot wants them: no start value), the exact sub-block
 * sums of rows 4v..4v+3 are weighted by their signed scales (mla) into
 * the super-block's exact isum, then fma(d * d_a, isum): the scalar dot's
 * order.
 */
AI void tile_xs(const uint8_t *gp, int64_t i0, int64_t i1, const char *a,
		size_t as, const struct actk *ap, int64_t aps, const int NT,
		float32x4_t *acc)
{
	const uint8x16_t m4 = vdupq_n_u8(0x0f);
	const int8x16_t tab = vld1q_s8(edgeq_kvalues_iq4nl);

	for (int64_t i = i0; i < i1; i++) {
		const uint8_t *sb = gp + (size_t)i * EDGEQ_PK_GB_IQ4_XS;
		int32x4_t isum[2 * 4];
		int k, v;

		__builtin_prefetch(sb + 2048);
		__builtin_prefetch(sb + 2048 + 512);
		__builtin_prefetch(sb + 2048 + 1024);
		__builtin_prefetch(sb + 2048 + 1536);
#pragma GCC unroll 8
		for (k = 0; k < 4 * NT; k++)
			isum[k] = vdupq_n_s32(0);
#pragma GCC unroll 2
		for (int ib = 0; ib < 8; ib++) {
			int8x16_t s8 = vld1q_s8((const int8_t *)sb +
						EDGEQ_PK_XS_SC + 16 * ib);
			int16x8_t lo = vmovl_s8(vget_low_s8(s8)),
				  hi = vmovl_s8(vget_high_s8(s8));
			int32x4_t sc[4] = { vmovl_s16(vget_low_s16(lo)),
					    vmovl_s16(vget_high_s16(lo)),
					    vmovl_s16(vget_low_s16(hi)),
					    vmovl_s16(vget_high_s16(hi)) };
			int8x16_t q0[2], q1[2];

#pragma GCC unroll 2
			for (k = 0; k < NT; k++) {
				const int8_t *q =
					((const struct edgeq_block_q8_K
						  *)(a + k * as))[i]
						.qs +
					32 * ib;

				q0[k] = vld1q_s8(q);
				q1[k] = vld1q_s8(q + 16);
			}
#pragma GCC unroll 4
			for (v = 0; v < 4; v++) {
				const uint8_t *c =
					sb + EDGEQ_PK_XS_QS + 256 * ib + 16 * v;
				int8x16_t l[4], h[4];

#pragma GCC unroll 4
				for (int cc = 0; cc < 4; cc++) {
					uint8x16_t x = vld1q_u8(c + 64 * cc);

					l[cc] = vqtbl1q_s8(tab,
							   vandq_u8(x, m4));
					h[cc] = vqtbl1q_s8(tab,
							   vshrq_n_u8(x, 4));
				}
#pragma GCC unroll 2
				for (k = 0; k < NT; k++) {
					int32x4_t x = vdupq_n_s32(0);

					x = vdotq_laneq_s32(x, l[0], q0[k], 0);
					x = vdotq_laneq_s32(x, h[0], q1[k], 0);
					x = vdotq_laneq_s32(x, l[1], q0[k], 1);
					x = vdotq_laneq_s32(x, h[1], q1[k], 1);
					x = vdotq_laneq_s32(x, l[2], q0[k], 2);
					x = vdotq_laneq_s32(x, h[2], q1[k], 2);
					x = vdotq_laneq_s32(x, l[3], q0[k], 3);
					x = vdotq_laneq_s32(x, h[3], q1[k], 3);
					isum[4 * k + v] = vmlaq_s32(
						isum[4 * k + v], x, sc[v]);
				}
			}
		}
#pragma GCC unroll 2
		for (k = 0; k < NT; k++) {
			float da = ap[k * aps + i - i0].d;

#pragma GCC unroll 4
			for (v = 0; v < 4; v++)
				acc[4 * k + v] = vfmaq_f32(
					acc[4 * k + v],
					vmulq_n_f32(f16x4((const uint16_t *)sb +
							  4 * v),
						    da),
					vcvtq_f32_s32(isum[4 * k + v]));
		}
	}
}

static void tile_xs_any(enum edgeq_type t, const uint8_t *gp, int64_t i0,
			int64_t i1, const char *a, size_t as, const void *ap,
			int64_t aps, int nt, float32x4_t *acc)
{
	(void)t;
	if (nt == 2)
		tile_xs(gp, i0, i1, a, as, ap, aps, 2, acc);
	else
		tile_xs(gp, i0, i1, a, as, ap, aps, 1, acc);
}

static void tile_k_any(enum edgeq_type t, const uint8_t *gp, int64_t i0,
		       int64_t i1, const char *a, size_t as, const void *ap,
		       int64_t aps, int nt, float32x4_t *acc)
{
	const bool q5 = t == EDGEQ_TYPE_Q5_K;

	if (nt == 2 && q5)
		tile_k(gp, i0, i1, a, as, ap, aps, 2, true, acc);
	else if (nt == 2)
		tile_k(gp, i0, i1, a, as, ap, aps, 2, false, acc);
	else if (q5)
		tile_k(gp, i0, i1, a, as, ap, aps, 1, true, acc);
	else
		tile_k(gp, i0, i1, a, as, ap, aps, 1, false, acc);
}

/* ---- 16-element sub-blocks: Q6_K (as avx512_pack.c's), Q3_K and Q2_K
 * (kernels/pack.c: one frame, d at 0, scales from 32, quants from 288) ---- */

struct act16 {
	float d;
	/* per 16-byte group: Q6_K: where its chain starts (-32 times its
	 * sum, the weights being stored q + 32); Q2_K: the sum itself, for
	 * the mins; Q3_K: unused (its chains start at 0, w16()'s weights
	 * being signed) */
	int32_t nb[16];
};

static void act16_prep(enum edgeq_type t, const struct edgeq_block_q8_K *a,
		       int64_t nsb, struct act16 *o)
{
	const int32_t f = t == EDGEQ_TYPE_Q6_K ? -32 : 1;

	for (int64_t i = 0; i < nsb; i++)
		o[i].d = a[i].d;
	if (t == EDGEQ_TYPE_Q3_K) /* its chains start at 0 */
		return;
	for (int64_t i = 0; i < nsb; i++)
		for (int g = 0; g < 16; g++)
			o[i].nb[g] = f * a[i].bsums[g];
}

/*
 * Chunk @c (0-7) of half @n of a quarter's row group @v as four weight
 * vectors, element 128 n + 32 j + l in w[j]:
 * Q6_K: the two high bits (from qh) shifted in above ql's low nibble (SLI)
 * or below its high nibble (SRI), so no nibble is masked on its own;
 * Q3_K: signed, q - 4 where the mask bit is clear: the compare's 0xff
 * inserted above the two bits (0xfc | q) there, q alone where it is set;
 * Q2_K: the two bits, in place (w[1] 4 and w[2] 16 times their value:
 * one and each, no shift; tile_16 scales the sub-block scales to match).
 */
AI void w16(const enum edgeq_type T, const uint8_t *sb, int n, int c, int v,
	    int8x16_t w[4])
{
	const uint8x16_t m3 = vdupq_n_u8(3), m30 = vdupq_n_u8(0x30);

	if (T == EDGEQ_TYPE_Q6_K) {
		uint8x16_t A = vld1q_u8(sb + EDGEQ_PK_16_QS +
					64 * (16 * n + c) + 16 * v);
		uint8x16_t B = vld1q_u8(sb + EDGEQ_PK_16_QS +
					64 * (16 * n + 8 + c) + 16 * v);
		uint8x16_t H = vld1q_u8(sb + EDGEQ_PK_Q6K_QH +
					64 * (8 * n + c) + 16 * v);
		uint8x16_t H2 = vshrq_n_u8(H, 2);

		w[0] = vreinterpretq_s8_u8(vsliq_n_u8(A, vandq_u8(H, m3), 4));
		w[1] = vreinterpretq_s8_u8(vsliq_n_u8(B, vandq_u8(H2, m3), 4));
		w[2] = vreinterpretq_s8_u8(vsriq_n_u8(vandq_u8(H, m30), A, 4));
		/* H2's top two bits are 0 already: no mask */
		w[3] = vreinterpretq_s8_u8(vsriq_n_u8(H2, B, 4));
	} else {
		uint8x16_t Q = vld1q_u8(sb + EDGEQ_PK_16_QS + 64 * (8 * n + c) +
					16 * v);
		uint8x16_t l3 = vshrq_n_u8(Q, 6);

		if (T == EDGEQ_TYPE_Q3_K) {
			/* the inverted mask (pack.c's bit_chunks()): its bit 4n + j
			 * set where w[j]'s element takes 4 off */
			uint8x16_t H = vld1q_u8(sb + EDGEQ_PK_Q3K_HMASK +
						64 * c + 16 * v);

			w[0] = vreinterpretq_s8_u8(vsliq_n_u8(
				Q,
				vtstq_u8(H, vdupq_n_u8((uint8_t)(1 << 4 * n))),
				2));
			w[1] = vreinterpretq_s8_u8(vsliq_n_u8(
				vshrq_n_u8(Q, 2),
				vtstq_u8(H, vdupq_n_u8((uint8_t)(2 << 4 * n))),
				2));
			w[2] = vreinterpretq_s8_u8(vsliq_n_u8(
				vshrq_n_u8(Q, 4),
				vtstq_u8(H, vdupq_n_u8((uint8_t)(4 << 4 * n))),
				2));
			w[3] = vreinterpretq_s8_u8(vsliq_n_u8(
				l3,
				vtstq_u8(H, vdupq_n_u8((uint8_t)(8 << 4 * n))),
				2));
		} else { /* 1, 4, 16 and 1 times the two bits (tile_16) */
			w[0] = vreinterpretq_s8_u8(vandq_u8(Q, m3));
			w[1] = vreinterpretq_s8_u8(
				vandq_u8(Q, vdupq_n_u8(0x0c)));
			w[2] = vreinterpretq_s8_u8(vandq_u8(Q, m30));
			w[3] = vreinterpretq_s8_u8(l3);
		}
	}
}

/*
 * One group against NT tokens. Per quarter (half n, 16-column half c4) the
 * activation vectors and the scales are loaded once; for each row group v
 * the 4 x NT chains start at the act16 value of their 16-byte group and
 * take the four weight vectors of each chunk (w16()); then each chain
 * times its sub-block's scale goes into the super-block's exact sum, and
 * for Q2_K each min times the group's activation sum into a second one.
 */
AI void tile_16(const enum edgeq_type T, const uint8_t *gp, int64_t i0,
		int64_t i1, const char *a, size_t as, const struct act16 *ap,
		int64_t aps, const int NT, float32x4_t *accp)
{
	const int GB = T == EDGEQ_TYPE_Q6_K ? EDGEQ_PK_GB_Q6_K :
		       T == EDGEQ_TYPE_Q3_K ? EDGEQ_PK_GB_Q3_K :
					      EDGEQ_PK_GB_Q2_K;
	const bool mins = T == EDGEQ_TYPE_Q2_K;
	float32x4_t acc[2 * 4];
	int k, v;

	for (k = 0; k < 4 * NT; k++)
		acc[k] = accp[k];
	for (int64_t i = i0; i < i1; i++) {
		const uint8_t *sb = gp + (size_t)i * GB;
		int32x4_t isum[2 * 4], summ[2 * 4];

#pragma GCC unroll 64
		for (int o = 0; o < GB; o += 64)
			__builtin_prefetch(sb + 2048 + o);
#pragma GCC unroll 8
		for (k = 0; k < 4 * NT; k++)
			isum[k] = summ[k] = vdupq_n_s32(0);
#pragma GCC unroll 1
		for (int q4 = 0; q4 < 4; q4++) {
			const int n = q4 >> 1, c4 = q4 & 1;
			int8x16_t qa[2][4];
			int16x8_t sw[4][2];

#pragma GCC unroll 2
			for (k = 0; k < NT; k++) {
				const struct edgeq_block_q8_K *qb =
					(const void *)(a + k * as);

#pragma GCC unroll 4
				for (int j = 0; j < 4; j++)
					qa[k][j] = vld1q_s8(qb[i].qs + 128 * n +
							    32 * j + 16 * c4);
			}
			/* Q6_K: sub-block g's 16 rows at 32 + 16 g, kept
			 * widened for the quarter (the x86 layout) */
			for (int j = 0; T == EDGEQ_TYPE_Q6_K && j < 4; j++) {
				int8x16_t b = vld1q_s8(
					(const int8_t *)sb + EDGEQ_PK_16_SC +
					16 * (8 * n + c4 + 2 * j));

				sw[j][0] = vmovl_s8(vget_low_s8(b));
				sw[j][1] = vmovl_high_s8(b);
			}
#pragma GCC unroll 4
			for (v = 0; v < 4; v++) {
				int32x4_t s[2][4];

#pragma GCC unroll 2
				for (k = 0; k < NT; k++) {
					const struct act16 *x =
						&ap[k * aps + i - i0];

#pragma GCC unroll 4
					for (int j = 0; j < 4; j++)
						s[k]
						 [j] = T == EDGEQ_TYPE_Q6_K ?
							       vdupq_n_s32(
								       x->nb[8 * n +
									     c4 +
									     2 * j]) :
							       vdupq_n_s32(0);
				}
#pragma GCC unroll 4
				for (int cc = 0; cc < 4; cc++) {
					int8x16_t w[4];

					w16(T, sb, n, 4 * c4 + cc, v, w);
#pragma GCC unroll 2
					for (k = 0; k < NT; k++) {
						s[k][0] =
							sdot_lane(s[k][0], w[0],
								  qa[k][0], cc);
						s[k][1] =
							sdot_lane(s[k][1], w[1],
								  qa[k][1], cc);
						s[k][2] =
							sdot_lane(s[k][2], w[2],
								  qa[k][2], cc);
						s[k][3] =
							sdot_lane(s[k][3], w[3],
								  qa[k][3], cc);
					}
				}
				/* Q3_K, Q2_K: the quarter's 4 sub-blocks of
				 * rows 4v..4v+3 in one 16-byte vector (byte
				 * 4 j + r), widened here: fewer live registers
				 * than 4 x 16 rows kept for the quarter */
				int16x8_t s16[2], m16[2];

				if (T != EDGEQ_TYPE_Q6_K) {
					uint8x16_t b =
						vld1q_u8(sb + EDGEQ_PK_16_SC +
							 64 * v + 16 * q4);

					if (mins) { /* scale | min << 4 */
						/* sub-block j (bytes 4j..)
						 * times 16 / (w16's factor):
						 * the sums 16 times theirs */
						static const uint8_t f[16] = {
							16, 16, 16, 16, 4, 4,
							4,  4,	1,  1,	1, 1,
							16, 16, 16, 16
						};
						uint8x16_t sc = vmulq_u8(
							vandq_u8(b,
								 vdupq_n_u8(
									 0x0f)),
							vld1q_u8(f));
						uint8x16_t m = vshrq_n_u8(b, 4);

						s16[0] = vreinterpretq_s16_u16(
							vmovl_u8(vget_low_u8(
								sc)));
						s16[1] = vreinterpretq_s16_u16(
							vmovl_high_u8(sc));
						m16[0] = vreinterpretq_s16_u16(
							vmovl_u8(vget_low_u8(
								m)));
						m16[1] = vreinterpretq_s16_u16(
							vmovl_high_u8(m));
					} else {
						int8x16_t c =
							vreinterpretq_s8_u8(b);

						s16[0] = vmovl_s8(
							vget_low_s8(c));
						s16[1] = vmovl_high_s8(c);
					}
				}
#pragma GCC unroll 4
				for (int j = 0; j < 4; j++) {
					int16x8_t h = T == EDGEQ_TYPE_Q6_K ?
							      sw[j][v >> 1] :
							      s16[j >> 1];
					const int hi = T == EDGEQ_TYPE_Q6_K ?
							       v & 1 :
							       j & 1;
					int32x4_t sc =
						hi ? vmovl_high_s16(h) :
						     vmovl_s16(vget_low_s16(h));

#pragma GCC unroll 2
					for (k = 0; k < NT; k++) {
						/* |sum| <= 16 x 128 */
						int16_t bs;

						isum[4 * k + v] = vmlaq_s32(
							isum[4 * k + v],
							s[k][j], sc);
						if (!mins)
							continue;
						bs = (int16_t)ap[k * aps + i -
								 i0]
							     .nb[8 * n + c4 +
								 2 * j];
						summ[4 * k + v] =
							j & 1 ? vmlal_high_n_s16(
									summ[4 * k +
									     v],
									m16[j >>
									    1],
									bs) :
								vmlal_n_s16(
									summ[4 * k +
									     v],
									vget_low_s16(
										m16[j >>
										    1]),
									bs);
					}
				}
			}
		}
#pragma GCC unroll 4
		for (v = 0; v < 4; v++) {
			float32x4_t dw = f16x4((const uint16_t *)sb + 4 * v);

#pragma GCC unroll 2
			for (k = 0; k < NT; k++) {
				float da = ap[k * aps + i - i0].d;

				/* Q2_K: 16 times the sum, converted
				 * exactly 16 times its float, undone
				 * exactly */
				acc[4 * k + v] = vfmaq_f32(
					acc[4 * k + v], vmulq_n_f32(dw, da),
					mins ? vmulq_n_f32(
						       vcvtq_f32_s32(
							       isum[4 * k + v]),
						       0.0625f) :
					       vcvtq_f32_s32(isum[4 * k + v]));
				if (mins)
					acc[4 * k + v] = vfmsq_f32(
						acc[4 * k + v],
						vmulq_n_f32(
							f16x4((const uint16_t
								       *)(sb +
									  EDGEQ_PK_Q2K_DMIN) +
							      4 * v),
							da),
						vcvtq_f32_s32(summ[4 * k + v]));
			}
		}
	}
	for (k = 0; k < 4 * NT; k++)
		accp[k] = acc[k];
}

static void tile_16_any(enum edgeq_type t, const uint8_t *gp, int64_t i0,
			int64_t i1, const char *a, size_t as, const void *ap,
			int64_t aps, int nt, float32x4_t *acc)
{
#define T(TY, N)                                                             \
	do {                                                                 \
		if (t == EDGEQ_TYPE_##TY && nt == N) {                       \
			tile_16(EDGEQ_TYPE_##TY, gp, i0, i1, a, as, ap, aps, \
				N, acc);                                     \
			return;                                              \
		}                                                            \
	} while (0)
	T(Q6_K, 2);
	T(Q6_K, 1);
	T(Q3_K, 2);
	T(Q3_K, 1);
	T(Q2_K, 2);
	T(Q2_K, 1);
#undef T
}

/* ---- one driver for every packed type (as avx512_pack.c's) ---- */

static void prep_q80(enum edgeq_type t, const void *a, int64_t nblk, void *out)
{
	act_prep(t, a, nblk, out);
}

/* usmmla's start values: -8 (Q4_0) or -128 (Q8_0) times the block sum */
static void prep_q80_mm(enum edgeq_type t, const void *a, int64_t nblk,
			void *out)
{
	act_prep_mul(a, nblk, t == EDGEQ_TYPE_Q4_0 ? -8 : -128, out);
}

static void prep_k(enum edgeq_type t, const void *a, int64_t nblk, void *out)
{
	actk_prep(a, nblk, out);
}

static void prep_16(enum edgeq_type t, const void *a, int64_t nblk, void *out)
{
	act16_prep(t, a, nblk, out);
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
		     int64_t aps, int nt, float32x4_t *acc);
};

static const struct kind k_q4_0 = {
	32, EDGEQ_PK_GB_Q4_0, 34, sizeof(struct act), 4, prep_q80, tile_any
};
static const struct kind k_q8_0 = {
	32, EDGEQ_PK_GB_Q8_0, 34, sizeof(struct act), 4, prep_q80, tile_any
};
static const struct kind k_q5_0 = {
	32, EDGEQ_PK_GB_Q5_0, 34, sizeof(struct act), 4, prep_q80, tile_any
};
static const struct kind k_q4_1 = {
	32, EDGEQ_PK_GB_Q4_1, 34, sizeof(struct act), 4, prep_q80, tile_any
};
static const struct kind k_q5_1 = {
	32, EDGEQ_PK_GB_Q5_1, 34, sizeof(struct act), 4, prep_q80, tile_any
};
static const struct kind k_q4_0_mm = { 32,	   EDGEQ_PK_GB_Q4_0,
				       34,	   sizeof(struct act),
				       4,	   prep_q80_mm,
				       tile_mm_any };
static const struct kind k_q8_0_mm = { 32,	   EDGEQ_PK_GB_Q8_0,
				       34,	   sizeof(struct act),
				       4,	   prep_q80_mm,
				       tile_mm_any };
static const struct kind k_q4_K = {
	256, EDGEQ_PK_GB_Q4_K, 292, sizeof(struct actk), 2, prep_k, tile_k_any
};
static const struct kind k_q5_K = {
	256, EDGEQ_PK_GB_Q5_K, 292, sizeof(struct actk), 2, prep_k, tile_k_any
};
static const struct kind k_iq4_xs = { 256,	  EDGEQ_PK_GB_IQ4_XS,
				      292,	  sizeof(struct actk),
				      2,	  prep_k,
				      tile_xs_any };
static const struct kind k_q6_K = { 256,	EDGEQ_PK_GB_Q6_K,
				    292,	sizeof(struct act16),
				    2,		prep_16,
				    tile_16_any };
static const struct kind k_q3_K = { 256,	EDGEQ_PK_GB_Q3_K,
				    292,	sizeof(struct act16),
				    2,		prep_16,
				    tile_16_any };
static const struct kind k_q2_K = { 256,	EDGEQ_PK_GB_Q2_K,
				    292,	sizeof(struct act16),
				    2,		prep_16,
				    tile_16_any };

/* Without heap scratch, this many blocks are prepared on the stack. */
#define SEG 16

#define TMAX 4 /* the most tokens a kind's tile takes */

/*
 * Bytes of a token block's activations and their prepared form: half an
 * A78's 256 KiB L2, so they stay there while every group of rows meets
 * them (without blocks a long prompt's activations came from memory again
 * for each group of 16 rows: 128 times for 2048 rows).
 */
#define ACT_L2 (128 << 10)

/* Tokens b0 .. b0 + nt - 1 against the group at @gp into acc[4 * j + v],
 * their activations prepared in @ab or, without it, segment by segment in
 * @st on the way. */
static void group_tile(const struct kind *k, enum edgeq_type t,
		       const uint8_t *gp, int64_t nblk, const char *a,
		       size_t a_stride, const char *ab, char *st, int64_t b0,
		       int nt, float32x4_t *acc)
{
	const char *ak = a + b0 * a_stride;

	/* all of them: tile_mm reads an odd tile's twin */
	for (int j = 0; j < 4 * TMAX; j++)
		acc[j] = vdupq_n_f32(0);
	if (ab) {
		k->tile(t, gp, 0, nblk, ak, a_stride,
			ab + (size_t)(b0 * nblk) * k->act, nblk, nt, acc);
		return;
	}
	for (int64_t i0 = 0; i0 < nblk; i0 += SEG) {
		int64_t i1 = i0 + SEG < nblk ? i0 + SEG : nblk;

		for (int j = 0; j < nt; j++)
			k->prep(t, ak + j * a_stride + (size_t)i0 * k->ablk,
				i1 - i0, st + (size_t)j * SEG * k->act);
		k->tile(t, gp, i0, i1, ak, a_stride, st, SEG, nt, acc);
	}
}

/*
 * A Q4_0/Q8_0 matvec whose groups are longer than the A78's whole 64 KiB
 * L1 (Q8_0 at 5632 columns: 95 KiB; Q4_0 from 7296) takes its groups in
 * pairs (tile_g()), the last one of an odd count alone. Counted, not
 * timed (no arm64 board here): the pair form is within 1 % of the single
 * group's instructions per byte for Q8_0 and 2 % above for Q4_0
 * (tools/kcount -b 1 -c 5632), which a group that fits L1 need not pay.
 */
#define GROUPS_MIN_BYTES (64u << 10)

static void matvec_pairs(enum edgeq_type t, const void *w, size_t gsz,
			 int64_t nblk, int64_t row0, int64_t row1,
			 const void *a, const char *ab, float *y)
{
	const struct act *ap = (const struct act *)ab;

	for (int64_t g = row0 / 16; 16 * g < row1; g += 2) {
		const uint8_t *gp = (const uint8_t *)w + (size_t)g * gsz;
		int ng = row1 - 16 * g > 16 ? 2 : 1;
		float32x4_t acc[8];
		float out[32];
		int64_t r0 = row0 > 16 * g ? row0 - 16 * g : 0;
		int64_t r1 = row1 - 16 * g < 16 * ng ? row1 - 16 * g : 16 * ng;

		for (int j = 0; j < 8; j++)
			acc[j] = vdupq_n_f32(0);
		if (ng == 2)
			switch (t) {
#define PAIR(TY)                                                         \
	case TY:                                                         \
		tile_g(TY, gp, gsz, 2, 0, nblk, a, 0, ap, nblk, 1, acc); \
		break
				PAIR(EDGEQ_TYPE_Q4_0);
				PAIR(EDGEQ_TYPE_Q5_0);
				PAIR(EDGEQ_TYPE_Q4_1);
				PAIR(EDGEQ_TYPE_Q5_1);
				PAIR(EDGEQ_TYPE_IQ4_NL);
#undef PAIR
			default:
				tile_g(EDGEQ_TYPE_Q8_0, gp, gsz, 2, 0, nblk, a,
				       0, ap, nblk, 1, acc);
				break;
			}
		else
			tile_any(t, gp, 0, nblk, a, 0, ap, nblk, 1, acc);
		for (int v = 0; v < 4 * ng; v++)
			vst1q_f32(out + 4 * v, acc[v]);
		memcpy(y + 16 * g + r0, out + r0,
		       (size_t)(r1 - r0) * sizeof(float));
	}
}

static void matmul_kind(const struct kind *k, enum edgeq_type t, const void *w,
			int64_t n, int64_t row0, int64_t row1, const void *a,
			size_t a_stride, int64_t nb, float *y, int64_t ldy)
{
	int64_t nblk = n / k->bs, g, b0, t0, tb;
	size_t gsz = (size_t)nblk * k->gb;
	char *ab = edgeq_thread_scratch((size_t)(nb * nblk) * k->act);
	_Alignas(16) char st[TMAX * SEG * sizeof(struct act16)];
	float32x4_t acc[4 * TMAX];
	float out[16];

	for (b0 = 0; ab && b0 < nb; b0++)
		k->prep(t, (const char *)a + b0 * a_stride, nblk,
			ab + (size_t)(b0 * nblk) * k->act);
	if (nb == 1 && ab && gsz > GROUPS_MIN_BYTES && k->bs == 32) {
		matvec_pairs(t, w, gsz, nblk, row0, row1, a, ab, y);
		return;
	}
	tb = (int64_t)(ACT_L2 / ((size_t)nblk * (k->ablk + k->act))) / k->tmax *
	     k->tmax;
	if (tb < k->tmax)
		tb = k->tmax;
	for (t0 = 0; t0 < nb; t0 += tb) {
		int64_t t1 = t0 + tb < nb ? t0 + tb : nb;

		for (g = row0 / 16; 16 * g < row1; g++) {
			const uint8_t *gp =
				(const uint8_t *)w + (size_t)g * gsz;
			int64_t r0 = row0 > 16 * g ? row0 - 16 * g : 0;
			int64_t r1 = row1 - 16 * g < 16 ? row1 - 16 * g : 16;

			for (b0 = t0; b0 < t1; b0 += k->tmax) {
				int nt = t1 - b0 < k->tmax ? (int)(t1 - b0) :
							     k->tmax;

				group_tile(k, t, gp, nblk, a, a_stride, ab, st,
					   b0, nt, acc);
				for (int j = 0; j < nt; j++) {
					for (int v = 0; v < 4; v++)
						vst1q_f32(out + 4 * v,
							  acc[4 * j + v]);
					memcpy(y + (b0 + j) * ldy + 16 * g + r0,
					       out + r0,
					       (size_t)(r1 - r0) *
						       sizeof(float));
				}
			}
		}
	}
}

static const struct kind *kind_of(enum edgeq_type t)
{
	return t == EDGEQ_TYPE_Q4_0   ? &k_q4_0 :
	       t == EDGEQ_TYPE_IQ4_NL ? &k_q4_0 :
	       t == EDGEQ_TYPE_Q5_0   ? &k_q5_0 :
	       t == EDGEQ_TYPE_Q4_1   ? &k_q4_1 :
	       t == EDGEQ_TYPE_Q5_1   ? &k_q5_1 :
	       t == EDGEQ_TYPE_Q8_0   ? &k_q8_0 :
	       t == EDGEQ_TYPE_Q4_K   ? &k_q4_K :
	       t == EDGEQ_TYPE_Q5_K   ? &k_q5_K :
	       t == EDGEQ_TYPE_Q3_K   ? &k_q3_K :
	       t == EDGEQ_TYPE_Q2_K   ? &k_q2_K :
	       t == EDGEQ_TYPE_IQ4_XS ? &k_iq4_xs :
					&k_q6_K;
}

void edgeq_neon_matmul_packed(enum edgeq_type t, const void *w, int64_t n,
			      int64_t row0, int64_t row1, const void *a,
			      size_t a_stride, int64_t nb, float *y,
			      int64_t ldy)
{
	matmul_kind(kind_of(t), t, w, n, row0, row1, a, a_stride, nb, y, ldy);
}

/* The i8mm table's: Q4_0/Q8_0 prompts by token pairs (a single token,
 * decode's matvec, stays with sdot: a pair would do twice its work). */
void edgeq_neon_i8mm_matmul_packed(enum edgeq_type t, const void *w, int64_t n,
				   int64_t row0, int64_t row1, const void *a,
				   size_t a_stride, int64_t nb, float *y,
				   int64_t ldy)
{
	const struct kind *k = kind_of(t);

	if (nb > 1 && t == EDGEQ_TYPE_Q4_0)
		k = &k_q4_0_mm;
	else if (nb > 1 && t == EDGEQ_TYPE_Q8_0)
		k = &k_q8_0_mm;
	matmul_kind(k, t, w, n, row0, row1, a, a_stride, nb, y, ldy);
}

void edgeq_neon_matvec_packed(enum edgeq_type t, const void *w, int64_t n,
			      int64_t row0, int64_t row1, const void *a,
			      float *y)
{
	edgeq_neon_matmul_packed(t, w, n, row0, row1, a, 0, 1, y, 0);
}
