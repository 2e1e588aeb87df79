// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * NEON (sdot) kernels of the types added after Q4_0/Q8_0/Q4_K/Q6_K, in the
 * canonical order of scalar.c: weights become signed bytes (Q5_0 q - 16,
 * the IQ4 table through vqtbl1q, Q3_K q - 4 from its mask bit, the affine
 * types their unsigned values, at most 31), sdot gives exact int32 lane
 * sums, and every float step is the scalar fmaf chain.
 *
 *  - 32-element blocks x Q8_0: decode takes 8 rows per step (two
 *    float32x4 chains, pairwise-add trees as the Q4_0 matvec); prefill
 *    tiles of 4 rows x 4 tokens unpack each block once for the 4 tokens.
 *  - K-quants x Q8_K: a super-block unpacked once into 16 vectors of 16
 *    bytes (element order) and 16 sub-block scales, then per token 16 sdot
 *    and a multiply-accumulate by the scale; prefill tiles of one row x 4
 *    tokens.
 */
#include <arm_neon.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/k_rows.h"
#include "kernels/more_types.h"
#include "kernels/arm64/neon_quants.h"

static inline float h2f(uint16_t h)
{
	__fp16 f;

	memcpy(&f, &h, sizeof(f));
	return (float)f;
}

/* ---- 32-element blocks x Q8_0 ---- */

#define AI static inline __attribute__((always_inline))

/* Every block starts with its fp16 scale d; the affine types' min m
 * follows it. */
_Static_assert(offsetof(struct edgeq_block_q4_1, m) == 2, "q4_1 min");
_Static_assert(offsetof(struct edgeq_block_q5_1, m) == 2, "q5_1 min");

static inline bool affine(enum edgeq_type t)
{
	return t == EDGEQ_TYPE_Q4_1 || t == EDGEQ_TYPE_Q5_1;
}

AI size_t bsize32(enum edgeq_type t)
{
	switch (t) {
	case EDGEQ_TYPE_Q4_1:
		return sizeof(struct edgeq_block_q4_1);
	case EDGEQ_TYPE_Q5_0:
		return sizeof(struct edgeq_block_q5_0);
	case EDGEQ_TYPE_Q5_1:
		return sizeof(struct edgeq_block_q5_1);
	default:
		return sizeof(struct edgeq_block_iq4_nl);
	}
}

AI float f16at(const char *p)
{
	uint16_t h;

	memcpy(&h, p, sizeof(h));
	return h2f(h);
}

/* The fp16 at @p and at @p + k @rs (k = 1..3) as 4 float lanes, loaded
 * into their lanes (blocks and rows have even sizes, so each is 2-byte
 * aligned). */
AI float32x4_t f16_rows4(const char *p, size_t rs)
{
	uint16x4_t v = vld1_dup_u16((const uint16_t *)p);

	v = vld1_lane_u16((const uint16_t *)(p + rs), v, 1);
	v = vld1_lane_u16((const uint16_t *)(p + 2 * rs), v, 2);
	v = vld1_lane_u16((const uint16_t *)(p + 3 * rs), v, 3);
	return vcvt_f32_f16(vreinterpret_f16_u16(v));
}

/*
 * Q5's fifth bits as byte masks: byte l of @lo is 0xff when bit l of qh is
 * set, of @hi when bit 16 + l is. The word is broadcast once and its bytes
 * spread by one table lookup per half (byte l takes qh byte l / 8), then
 * each lane tests its own bit.
 */
AI void q5_bits(const uint8_t *qhb, uint8x16_t *lo, uint8x16_t *hi)
{
	static const uint8_t idx[32] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1,
					 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2,
					 2, 2, 3, 3, 3, 3, 3, 3, 3, 3 };
	static const uint8_t bit[16] = { 1, 2, 4, 8, 16, 32, 64, 128,
					 1, 2, 4, 8, 16, 32, 64, 128 };
	uint8x16_t v = vreinterpretq_u8_u32(vdupq_n_u32(edgeq_q5_qh(qhb)));

	*lo = vtstq_u8(vqtbl1q_u8(v, vld1q_u8(idx)), vld1q_u8(bit));
	*hi = vtstq_u8(vqtbl1q_u8(v, vld1q_u8(idx + 16)), vld1q_u8(bit));
}

/* The block at @blk as two halves of 16 signed bytes (elements 0-15,
 * 16-31): Q5_0's q - 16 is the nibble less 16 where the fifth bit is
 * clear (one bic and one sub a half). */
AI void wq(enum edgeq_type t, const char *blk, int8x16_t *x0, int8x16_t *x1)
{
	const uint8x16_t m4 = vdupq_n_u8(0x0f), b4 = vdupq_n_u8(16);
	uint8x16_t v, lo, hi, l, h;

	switch (t) {
	case EDGEQ_TYPE_Q4_1:
		v = vld1q_u8((const uint8_t *)blk +
			     offsetof(struct edgeq_block_q4_1, qs));
		*x0 = vreinterpretq_s8_u8(vandq_u8(v, m4));
		*x1 = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
		return;
	case EDGEQ_TYPE_Q5_0:
	case EDGEQ_TYPE_Q5_1: {
		const bool q50 = t == EDGEQ_TYPE_Q5_0;

		v = vld1q_u8((const uint8_t *)blk +
			     (q50 ? offsetof(struct edgeq_block_q5_0, qs) :
				    offsetof(struct edgeq_block_q5_1, qs)));
		q5_bits((const uint8_t *)blk +
				(q50 ? offsetof(struct edgeq_block_q5_0, qh) :
				       offsetof(struct edgeq_block_q5_1, qh)),
			&lo, &hi);
		l = vandq_u8(v, m4);
		h = vshrq_n_u8(v, 4);
		if (q50) {
			l = vsubq_u8(l, vbicq_u8(b4, lo));
			h = vsubq_u8(h, vbicq_u8(b4, hi));
		} else {
			l = vorrq_u8(l, vandq_u8(b4, lo));
			h = vorrq_u8(h, vandq_u8(b4, hi));
		}
		*x0 = vreinterpretq_s8_u8(l);
		*x1 = vreinterpretq_s8_u8(h);
		return;
	}
	default: {
		int8x16_t tab = vld1q_s8(edgeq_kvalues_iq4nl);

		v = vld1q_u8((const uint8_t *)blk +
			     offsetof(struct edgeq_block_iq4_nl, qs));
		*x0 = vqtbl1q_s8(tab, vandq_u8(v, m4));
		*x1 = vqtbl1q_s8(tab, vshrq_n_u8(v, 4));
		return;
	}
	}
}

static inline int32x4_t block_dot(int8x16_t x0, int8x16_t x1, int8x16_t y0,
				  int8x16_t y1)
{
	return vdotq_s32(vdotq_s32(vdupq_n_s32(0), x0, y0), x1, y1);
}

/* an activation block's sum, for the affine types' min term */
static inline float act_sum(int8x16_t y0, int8x16_t y1)
{
	return (float)(vaddlvq_s8(y0) + vaddlvq_s8(y1));
}

AI float dot32(enum edgeq_type t, int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q8_0 *y = a;
	const size_t bs = bsize32(t);
	float acc = 0;

	for (int64_t i = 0; i < n / 32; i++) {
		const char *blk = (const char *)w + i * bs;
		int8x16_t x0, x1, y0 = vld1q_s8(y[i].qs),
				  y1 = vld1q_s8(y[i].qs + 16);
		float da = h2f(y[i].d);

		wq(t, blk, &x0, &x1);
		acc = fmaf(f16at(blk) * da,
			   (float)vaddvq_s32(block_dot(x0, x1, y0, y1)), acc);
		if (affine(t))
			acc = fmaf(f16at(blk + 2) * da, act_sum(y0, y1), acc);
	}
	return acc;
}

float edgeq_neon_dot_q4_1(int64_t n, const void *w, const void *a)
{
	return dot32(EDGEQ_TYPE_Q4_1, n, w, a);
}

float edgeq_neon_dot_q5_0(int64_t n, const void *w, const void *a)
{
	return dot32(EDGEQ_TYPE_Q5_0, n, w, a);
}

float edgeq_neon_dot_q5_1(int64_t n, const void *w, const void *a)
{
	return dot32(EDGEQ_TYPE_Q5_1, n, w, a);
}

float edgeq_neon_dot_iq4_nl(int64_t n, const void *w, const void *a)
{
	return dot32(EDGEQ_TYPE_IQ4_NL, n, w, a);
}

static inline int32x4_t hsum_4x4(const int32x4_t p[4])
{
	return vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3]));
}

/*
 * Rows r..r+3 x tokens 0..NT-1 (NT <= 4), one output per float lane: each
 * block of the 4 rows is unpacked once for the NT tokens; per token 8 sdot
 * and one pairwise-add tree give the rows' exact block sums, then the
 * scalar dot's fma (and the min term's) on 4 rows at once. Decode (one
 * token) takes rows8() instead, which shares the activation over 8 rows.
 */
AI void tile32(enum edgeq_type t, const int NT, int64_t nb, const char *w,
	       size_t rs, const char *a, size_t as, float *y, int64_t ldy)
{
	const size_t bs = bsize32(t);
	float32x4_t acc[4];

	for (int k = 0; k < NT; k++)
		acc[k] = vdupq_n_f32(0);
	for (int64_t i = 0; i < nb; i++) {
		const char *blk = w + i * bs;
		float32x4_t dw = f16_rows4(blk, rs), dm = vdupq_n_f32(0);
		int8x16_t x[8];

		if (affine(t))
			dm = f16_rows4(blk + 2, rs);
#pragma GCC unroll 4
		for (int r = 0; r < 4; r++)
			wq(t, blk + r * rs, &x[2 * r], &x[2 * r + 1]);
#pragma GCC unroll 4
		for (int k = 0; k < NT; k++) {
			const struct edgeq_block_q8_0 *ya =
				(const struct edgeq_block_q8_0 *)(a + k * as) +
				i;
			int8x16_t y0 = vld1q_s8(ya->qs),
				  y1 = vld1q_s8(ya->qs + 16);
			float da = h2f(ya->d);
			int32x4_t p[4];

#pragma GCC unroll 4
			for (int r = 0; r < 4; r++)
				p[r] = block_dot(x[2 * r], x[2 * r + 1], y0,
						 y1);
			acc[k] = vfmaq_f32(acc[k], vmulq_n_f32(dw, da),
					   vcvtq_f32_s32(hsum_4x4(p)));
			if (affine(t))
				acc[k] =
					vfmaq_f32(acc[k], vmulq_n_f32(dm, da),
						  vdupq_n_f32(act_sum(y0, y1)));
		}
	}
	for (int k = 0; k < NT; k++)
		vst1q_f32(y + k * ldy, acc[k]);
}

/* Decode: 8 rows at once, one row per float lane (two float32x4 chains);
 * with @pf the next 8 rows prefetched over the blocks (as rows8_neon). */
AI void rows8_32(enum edgeq_type t, int64_t nb, const char *w, size_t rs,
		 const void *a, float *y, bool pf)
{
	const struct edgeq_block_q8_0 *ya = a;
	const size_t bs = bsize32(t);
	const int pfl = (int)((8 * bs + 63) / 64); /* lines, rounded up */
	const char *pfp = w + 8 * rs;
	float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0);

	for (int64_t i = 0; i < nb; i++, pfp += 64 * pfl) {
		const char *blk = w + i * bs;
		int8x16_t y0 = vld1q_s8(ya[i].qs), y1 = vld1q_s8(ya[i].qs + 16);
		float da = h2f(ya[i].d);
		int32x4_t p[8];

		if (pf)
			for (int k = 0; k < pfl; k++)
				__builtin_prefetch(pfp + 64 * k);

#pragma GCC unroll 8
		for (int r = 0; r < 8; r++) {
			int8x16_t x0, x1;

			wq(t, blk + r * rs, &x0, &x1);
			p[r] = block_dot(x0, x1, y0, y1);
		}
		acc0 = vfmaq_f32(acc0, vmulq_n_f32(f16_rows4(blk, rs), da),
				 vcvtq_f32_s32(hsum_4x4(p)));
		acc1 = vfmaq_f32(acc1,
				 vmulq_n_f32(f16_rows4(blk + 4 * rs, rs), da),
				 vcvtq_f32_s32(hsum_4x4(p + 4)));
		if (affine(t)) {
			float32x4_t s = vdupq_n_f32(act_sum(y0, y1));

			acc0 = vfmaq_f32(
				acc0, vmulq_n_f32(f16_rows4(blk + 2, rs), da),
				s);
			acc1 = vfmaq_f32(
				acc1,
				vmulq_n_f32(f16_rows4(blk + 2 + 4 * rs, rs),
					    da),
				s);
		}
	}
	vst1q_f32(y, acc0);
	vst1q_f32(y + 4, acc1);
}

/* Token blocks of this many keep their activations in L2 while the tiles
 * walk the rows; each tile's 4 rows stay in L1 across the block. */
#define TOK_BLK32 64

AI void matmul32(enum edgeq_type t, const void *w, int64_t n, int64_t row0,
		 int64_t row1, const char *a, size_t as, int64_t nb, float *y,
		 int64_t ldy)
{
	size_t rs = edgeq_row_size(t, n);
	int64_t nblk = n / 32, r = row0;

	if (nb == 1) {
		for (; r + 8 <= row1; r += 8)
			rows8_32(t, nblk, (const char *)w + r * rs, rs, a,
				 y + r, r + 16 <= row1);
		for (; r < row1; r++)
			y[r] = dot32(t, n, (const char *)w + r * rs, a);
		return;
	}
	for (int64_t b0 = 0; b0 < nb; b0 += TOK_BLK32) {
		int64_t b1 = b0 + TOK_BLK32 < nb ? b0 + TOK_BLK32 : nb;

		for (r = row0; r + 4 <= row1; r += 4) {
			const char *wr = (const char *)w + r * rs;
			int64_t b = b0;

			for (; b + 4 <= b1; b += 4)
				tile32(t, 4, nblk, wr, rs, a + b * as, as,
				       y + b * ldy + r, ldy);
			switch (b1 - b) {
			case 3:
				tile32(t, 3, nblk, wr, rs, a + b * as, as,
				       y + b * ldy + r, ldy);
				break;
			case 2:
				tile32(t, 2, nblk, wr, rs, a + b * as, as,
				       y + b * ldy + r, ldy);
				break;
			case 1:
				tile32(t, 1, nblk, wr, rs, a + b * as, as,
				       y + b * ldy + r, ldy);
				break;
			}
		}
		for (; r < row1; r++)
			for (int64_t b = b0; b < b1; b++)
				y[b * ldy + r] = dot32(t, n,
						       (const char *)w + r * rs,
						       a + b * as);
	}
}

/* ---- K-quants x Q8_K ---- */

/*
 * A super-block unpacked: q[k] the weights of elements 16k..16k+15 as
 * signed bytes, sc[] the sub-block scales as int32 lanes (Q2_K, Q3_K: lane
 * k % 4 of sc[k / 4] for 16-element sub-block k; Q5_K, IQ4_XS: lane j % 4
 * of sc[j / 4] for 32-element sub-block j), and the inputs of the term
 * that multiplies the activation's 16-element sums: Q2_K's mins, Q5_K's
 * mins (per 32, lanes 0-7 of m[0]), Q3_K's scales (its weights are
 * unpacked as q + 4, the -4 goes through the sums).
 */
struct kunp {
	int8x16_t q[16];
	int32x4_t sc[4];
	int16x8_t m[2];
	float d, dmin;
};

/* The 8 bytes at @p as two int32x4 (lanes 0-3, 4-7). */
static inline __attribute__((always_inline)) void widen8(uint8x8_t b,
							 int32x4_t *o)
{
	uint16x8_t w = vmovl_u8(b);

	o[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(w)));
	o[1] = vreinterpretq_s32_u32(vmovl_high_u16(w));
}

/* bit @from of each byte of @x at bit @to, every other bit clear */
#define BIT_TO(x, from, to)                                                 \
	vandq_u8((to) > (from) ?                                            \
			 vshlq_n_u8(x, (to) > (from) ? (to) - (from) : 0) : \
		 (to) < (from) ?                                            \
			 vshrq_n_u8(x, (to) < (from) ? (from) - (to) : 1) : \
			 (x),                                               \
		 vdupq_n_u8(1u << (to)))

static inline __attribute__((always_inline)) void
unpack_q5_K(const struct edgeq_block_q5_K *b, struct kunp *u)
{
	uint8x16_t qh[2] = { vld1q_u8(b->qh), vld1q_u8(b->qh + 16) };
	uint8_t sc[8], mn[8];

	edgeq_q4_K_unpack_scales(b->scales, sc, mn);
	_Pragma("GCC unroll 8") for (int j = 0; j < 8; j++)
	{
		_Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
		{
			uint8x16_t v = vld1q_u8(b->qs + 32 * (j / 2) + 16 * h);

			/* bit j of qh under the nibble: shifted in above the
			 * low one (SLI), below the high one (SRI) */
			u->q[2 * j + h] = vreinterpretq_s8_u8(
				(j & 1) ?
					vsriq_n_u8(BIT_TO(qh[h], j, 4), v, 4) :
					vsliq_n_u8(v, BIT_TO(qh[h], j, 0), 4));
		}
	}
	widen8(vld1_u8(sc), u->sc);
	u->m[0] = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn)));
	u->d = h2f(b->d);
	u->dmin = h2f(b->dmin);
}

static inline __attribute__((always_inline)) void
unpack_q2_K(const struct edgeq_block_q2_K *b, struct kunp *u)
{
	const uint8x16_t m3 = vdupq_n_u8(3);
	uint8x16_t s = vld1q_u8(b->scales), sc = vandq_u8(s, vdupq_n_u8(0xf)),
		   mn = vshrq_n_u8(s, 4);

	_Pragma("GCC unroll 16") for (int g = 0; g < 16; g++)
	{
		uint8x16_t v = vld1q_u8(b->qs + 32 * (g / 8) + 16 * (g & 1));
		const int sh = 2 * ((g / 2) & 3);

		u->q[g] = vreinterpretq_s8_u8(
			vandq_u8(sh ? vshrq_n_u8(v, sh ? sh : 1) : v, m3));
	}
	widen8(vget_low_u8(sc), u->sc);
	widen8(vget_high_u8(sc), u->sc + 2);
	u->m[0] = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mn)));
	u->m[1] = vreinterpretq_s16_u16(vmovl_high_u8(mn));
	u->d = h2f(b->d);
	u->dmin = h2f(b->dmin);
}

static inline __attribute__((always_inline)) void
unpack_q3_K(const struct edgeq_block_q3_K *b, struct kunp *u)
{
	uint8x16_t hm[2] = { vld1q_u8(b->hmask), vld1q_u8(b->hmask + 16) };
	const uint8x16_t m3 = vdupq_n_u8(3), four = vdupq_n_u8(4);
	int8_t sc[16];
	int8x16_t s;

	edgeq_q3_K_scales(b->scales, sc);
	_Pragma("GCC unroll 16") for (int g = 0; g < 16; g++)
	{
		const int nn = g / 8, j = (g / 2) & 3, h = g & 1;
		uint8x16_t v = vld1q_u8(b->qs + 32 * nn + 16 * h);

		/* q + 4: the two low bits, and the mask bit moved to bit 2
		 * and inserted there (BIT: one instruction, no copy) */
		const int bit = 4 * nn + j;
		uint8x16_t lo = j == 3 ? vshrq_n_u8(v, 6) :
				j ? vandq_u8(vshrq_n_u8(v, j ? 2 * j : 1), m3) :
				    vandq_u8(v, m3);
		uint8x16_t hb =
			bit > 2 ? vshrq_n_u8(hm[h], bit > 2 ? bit - 2 : 1) :
			bit < 2 ? vshlq_n_u8(hm[h], bit < 2 ? 2 - bit : 0) :
				  hm[h];

		u->q[g] = vreinterpretq_s8_u8(vbslq_u8(four, hb, lo));
	}
	s = vld1q_s8(sc);
	u->m[0] = vmovl_s8(vget_low_s8(s));
	u->m[1] = vmovl_high_s8(s);
	u->sc[0] = vmovl_s16(vget_low_s16(u->m[0]));
	u->sc[1] = vmovl_high_s16(u->m[0]);
	u->sc[2] = vmovl_s16(vget_low_s16(u->m[1]));
	u->sc[3] = vmovl_high_s16(u->m[1]);
	u->d = h2f(b->d);
}

static inline __attribute__((always_inline)) void
unpack_iq4_xs(const struct edgeq_block_iq4_xs *b, struct kunp *u)
{
	int8x16_t tab = vld1q_s8(edgeq_kvalues_iq4nl);
	const uint8x16_t m4 = vdupq_n_u8(0x0f);
	int8_t ls[8];
	int16x8_t l;

	edgeq_iq4_xs_scales(b, ls);
	_Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
	{
		uint8x16_t v = vld1q_u8(b->qs + 16 * k);

		u->q[2 * k] = vqtbl1q_s8(tab, vandq_u8(v, m4));
		u->q[2 * k + 1] = vqtbl1q_s8(tab, vshrq_n_u8(v, 4));
	}
	l = vmovl_s8(vld1_s8(ls));
	u->sc[0] = vmovl_s16(vget_low_s16(l));
	u->sc[1] = vmovl_high_s16(l);
	u->d = h2f(b->d);
}

static inline __attribute__((always_inline)) void
unpack_k(enum edgeq_type t, const void *row, int64_t i, struct kunp *u)
{
	if (t == EDGEQ_TYPE_Q5_K)
		unpack_q5_K((const struct edgeq_block_q5_K *)row + i, u);
	else if (t == EDGEQ_TYPE_Q2_K)
		unpack_q2_K((const struct edgeq_block_q2_K *)row + i, u);
	else if (t == EDGEQ_TYPE_Q3_K)
		unpack_q3_K((const struct edgeq_block_q3_K *)row + i, u);
	else
		unpack_iq4_xs((const struct edgeq_block_iq4_xs *)row + i, u);
}

/* sub-block sums x scale, into s: 16-element sub-blocks (one SDOT each)
 * or 32-element ones (two SDOTs in one chain) */
#define KD16(K)                                                    \
	s = vmlaq_laneq_s32(s,                                     \
			    vdotq_s32(vdupq_n_s32(0), u->q[K],     \
				      vld1q_s8(y->qs + 16 * (K))), \
			    u->sc[(K) / 4], (K) % 4)
#define KD32(J)                                                                \
	s = vmlaq_laneq_s32(s,                                                 \
			    vdotq_s32(vdotq_s32(vdupq_n_s32(0), u->q[2 * (J)], \
						vld1q_s8(y->qs + 32 * (J))),   \
				      u->q[2 * (J) + 1],                       \
				      vld1q_s8(y->qs + 32 * (J) + 16)),        \
			    u->sc[(J) / 4], (J) % 4)

static inline __attribute__((always_inline)) float
kstep(enum edgeq_type t, const struct kunp *u, const struct edgeq_block_q8_K *y,
      float acc)
{
	int32x4_t s = vdupq_n_s32(0);
	int32_t summs = 0, isum;

	if (t == EDGEQ_TYPE_Q2_K || t == EDGEQ_TYPE_Q3_K) {
		int16x8_t b0 = vld1q_s16(y->bsums),
			  b1 = vld1q_s16(y->bsums + 8);
		int32x4_t ms =
			vmull_s16(vget_low_s16(b0), vget_low_s16(u->m[0]));

		KD16(0), KD16(1), KD16(2), KD16(3), KD16(4), KD16(5);
		KD16(6), KD16(7), KD16(8), KD16(9), KD16(10), KD16(11);
		KD16(12), KD16(13), KD16(14), KD16(15);
		ms = vmlal_high_s16(ms, b0, u->m[0]);
		ms = vmlal_s16(ms, vget_low_s16(b1), vget_low_s16(u->m[1]));
		ms = vmlal_high_s16(ms, b1, u->m[1]);
		summs = vaddvq_s32(ms);
	} else {
		KD32(0), KD32(1), KD32(2), KD32(3);
		KD32(4), KD32(5), KD32(6), KD32(7);
		if (t == EDGEQ_TYPE_Q5_K) {
			int16x8_t bs = vpaddq_s16(vld1q_s16(y->bsums),
						  vld1q_s16(y->bsums + 8));
			int32x4_t ms = vmull_s16(vget_low_s16(bs),
						 vget_low_s16(u->m[0]));

			ms = vmlal_high_s16(ms, bs, u->m[0]);
			summs = vaddvq_s32(ms);
		}
	}
	isum = vaddvq_s32(s);
	if (t == EDGEQ_TYPE_Q3_K) /* the weights were q + 4 */
		isum -= 4 * summs;
	acc = fmaf(u->d * y->d, (float)isum, acc);
	if (t == EDGEQ_TYPE_Q5_K || t == EDGEQ_TYPE_Q2_K)
		acc = fmaf(-(u->dmin * y->d), (float)summs, acc);
	return acc;
}
#undef KD16
#undef KD32

static inline __attribute__((always_inline)) float
dotk(enum edgeq_type t, int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q8_K *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		struct kunp u;

		unpack_k(t, w, i, &u);
		acc = kstep(t, &u, &y[i], acc);
	}
	return acc;
}

float edgeq_neon_dot_q2_K(int64_t n, const void *w, const void *a)
{
	return dotk(EDGEQ_TYPE_Q2_K, n, w, a);
}

float edgeq_neon_dot_q3_K(int64_t n, const void *w, const void *a)
{
	return dotk(EDGEQ_TYPE_Q3_K, n, w, a);
}

float edgeq_neon_dot_q5_K(int64_t n, const void *w, const void *a)
{
	return dotk(EDGEQ_TYPE_Q5_K, n, w, a);
}

float edgeq_neon_dot_iq4_xs(int64_t n, const void *w, const void *a)
{
	return dotk(EDGEQ_TYPE_IQ4_XS, n, w, a);
}

#define KTK EDGEQ_K_TK
static inline __attribute__((always_inline)) void
tilek(enum edgeq_type t, int64_t n, const void *w, const char *a, size_t as,
      float *y, int64_t ldy)
{
	float acc[KTK] = { 0 };

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		struct kunp u;

		unpack_k(t, w, i, &u);
		for (int k = 0; k < KTK; k++)
			acc[k] = kstep(
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

/* Decode is the prefill driver with one token: 8-row groups for the
 * 32-element types, row by row for the K-quants. */
bool edgeq_neon_matvec_more(enum edgeq_type type, const void *w, int64_t n,
			    int64_t row0, int64_t row1, const void *a, float *y)
{
	return edgeq_neon_matmul_more(type, w, n, row0, row1, a, 0, 1, y, 0);
}

bool edgeq_neon_matmul_more(enum edgeq_type type, const void *w, int64_t n,
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
