// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * aarch64 kernels: NEON with the dot-product extension (sdot), as on the
 * Cortex-A78AE of Jetson Orin. Each function reproduces the canonical
 * reduction order of scalar.c bit for bit: integer sums are exact (sdot per
 * 16 bytes, lanes added in any order), float steps are the same fused
 * multiply-adds (vfmaq) in the same order, and the float-row fold is the
 * same tree (lanes 0-3 in one float32x4, 4-7 in the next). Q8_0/Q4_0
 * matvec and matmul put one output (row or token) in each float lane, so
 * several fma chains run side by side.
 */
#include <arm_neon.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/arm64/neon_fold.h"
#include "kernels/arm64/neon_quants.h"
#include "kernels/q80_tiles.h"

static inline float h2f(uint16_t h)
{
	__fp16 f;

	memcpy(&f, &h, sizeof(f));
	return (float)f;
}

/* ---- float rows: 32 lanes in 8 vectors ---- */

static float fold32(const float32x4_t a[8])
{
	return edgeq_neon_reduce_t(edgeq_neon_fold_t(a));
}

/* The tail (n % 32 elements) goes through memory to lanes 0.. of acc[]. */
static float fold32_tail(const float32x4_t a[8], const float *w, const float *x,
			 int64_t m)
{
	float acc[32], v[8];

	for (int k = 0; k < 8; k++)
		vst1q_f32(acc + 4 * k, a[k]);
	for (int64_t j = 0; j < m; j++)
		acc[j] = fmaf(w[j], x[j], acc[j]);
	for (int k = 0; k < 8; k++)
		v[k] = (acc[k] + acc[k + 8]) + (acc[k + 16] + acc[k + 24]);
	return edgeq_reduce8(v);
}

/*
 * The inner loops over the 8 accumulators are unrolled by pragma: at -O2
 * GCC kept them as loops with the accumulators in memory, a load and a
 * store around every fma (tools/kcount: 1.37 instructions per F16 byte).
 */
static float dot_f32(int64_t n, const float *x, const float *y)
{
	float32x4_t a[8];
	int64_t j = 0;

	for (int k = 0; k < 8; k++)
		a[k] = vdupq_n_f32(0);
	for (; j + 32 <= n; j += 32)
#pragma GCC unroll 8
		for (int k = 0; k < 8; k++)
			a[k] = vfmaq_f32(a[k], vld1q_f32(x + j + 4 * k),
					 vld1q_f32(y + j + 4 * k));
	if (j == n)
		return fold32(a);
	return fold32_tail(a, x + j, y + j, n - j);
}

static float vec_dot_f32(int64_t n, const void *w, const void *a)
{
	return dot_f32(n, w, a);
}

static float dot_f16(int64_t n, const uint16_t *k, const float *q)
{
	float32x4_t a[8];
	float wt[32];
	int64_t j = 0;

	for (int i = 0; i < 8; i++)
		a[i] = vdupq_n_f32(0);
	for (; j + 32 <= n; j += 32)
#pragma GCC unroll 8
		for (int i = 0; i < 8; i++) {
			float32x4_t kv = vcvt_f32_f16(
				vreinterpret_f16_u16(vld1_u16(k + j + 4 * i)));

			a[i] = vfmaq_f32(a[i], kv, vld1q_f32(q + j + 4 * i));
		}
	if (j == n)
		return fold32(a);
	for (int64_t i = 0; i < n - j; i++)
		wt[i] = h2f(k[j + i]);
	return fold32_tail(a, wt, q + j, n - j);
}

static float vec_dot_f16(int64_t n, const void *w, const void *a)
{
	return dot_f16(n, w, a);
}

static float vec_dot_bf16(int64_t n, const void *w, const void *act)
{
	const uint16_t *x = w;
	const float *y = act;
	float32x4_t a[8];
	float wt[32];
	int64_t j = 0;

	for (int i = 0; i < 8; i++)
		a[i] = vdupq_n_f32(0);
	for (; j + 32 <= n; j += 32)
#pragma GCC unroll 8
		for (int i = 0; i < 8; i++) {
			float32x4_t xv = vreinterpretq_f32_u32(
				vshll_n_u16(vld1_u16(x + j + 4 * i), 16));

			a[i] = vfmaq_f32(a[i], xv, vld1q_f32(y + j + 4 * i));
		}
	if (j == n)
		return fold32(a);
	for (int64_t i = 0; i < n - j; i++)
		wt[i] = edgeq_bf16_to_fp32(x[j + i]);
	return fold32_tail(a, wt, y + j, n - j);
}

/* ---- Q8_0 and Q4_0: an exact integer sum per block, one float chain ---- */

/* Weight block i of a Q8_0 or Q4_0 row as two 16-byte signed halves. */
static inline void wblock(enum edgeq_type t, const void *row, int64_t i,
			  int8x16_t *x0, int8x16_t *x1, float *d)
{
	if (t == EDGEQ_TYPE_Q4_0) {
		const struct edgeq_block_q4_0 *b =
			(const struct edgeq_block_q4_0 *)row + i;
		uint8x16_t q = vld1q_u8(b->qs);

		*x0 = vsubq_s8(
			vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0f))),
			vdupq_n_s8(8));
		*x1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)),
			       vdupq_n_s8(8));
		*d = h2f(b->d);
	} else {
		const struct edgeq_block_q8_0 *b =
			(const struct edgeq_block_q8_0 *)row + i;

		*x0 = vld1q_s8(b->qs);
		*x1 = vld1q_s8(b->qs + 16);
		*d = h2f(b->d);
	}
}

/* Lane l = the exact integer dot of elements 4l..4l+3 and 4l+16..4l+19. */
static inline int32x4_t block_dot(int8x16_t x0, int8x16_t x1, const int8_t *y)
{
	return vdotq_s32(vdotq_s32(vdupq_n_s32(0), x0, vld1q_s8(y)), x1,
			 vld1q_s8(y + 16));
}

/* Lane j = the sum of p[j]'s 4 lanes (exact). */
static inline int32x4_t hsum_4x4(const int32x4_t p[4])
{
	return vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3]));
}

static inline float dot_q80_like(enum edgeq_type t, int64_t n, const void *w,
				 const void *a)
{
	const struct edgeq_block_q8_0 *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK8_0; i++) {
		int8x16_t x0, x1;
		float dx;

		wblock(t, w, i, &x0, &x1, &dx);
		acc = fmaf(dx * h2f(y[i].d),
			   (float)vaddvq_s32(block_dot(x0, x1, y[i].qs)), acc);
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

/* ---- Q4_K and Q6_K: exact integer sum per super-block, one float chain ---- */

static inline int32x4_t dot32(uint8x16_t q0, uint8x16_t q1, const int8_t *y)
{
	int32x4_t p =
		vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u8(q0), vld1q_s8(y));

	return vdotq_s32(p, vreinterpretq_s8_u8(q1), vld1q_s8(y + 16));
}

static float vec_dot_q4_K(int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q4_K *x = w;
	const struct edgeq_block_q8_K *y = a;
	const uint8x16_t m4 = vdupq_n_u8(0x0f);
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		const uint8_t *q4 = x[i].qs;
		const int8_t *q8 = y[i].qs;
		uint8_t sc[8], mn[8];
		int32x4_t sumi = vdupq_n_s32(0), ms;
		int16x8_t bs, mins;
		float dall = h2f(x[i].d) * y[i].d;
		float dmin = h2f(x[i].dmin) * y[i].d;

		edgeq_q4_K_unpack_scales(x[i].scales, sc, mn);
		for (int j = 0; j < 4; j++) {
			uint8x16_t b0 = vld1q_u8(q4 + 32 * j),
				   b1 = vld1q_u8(q4 + 32 * j + 16);
			int32x4_t pl = dot32(vandq_u8(b0, m4), vandq_u8(b1, m4),
					     q8 + 64 * j);
			int32x4_t ph = dot32(vshrq_n_u8(b0, 4),
					     vshrq_n_u8(b1, 4),
					     q8 + 64 * j + 32);

			sumi = vmlaq_n_s32(sumi, pl, sc[2 * j]);
			sumi = vmlaq_n_s32(sumi, ph, sc[2 * j + 1]);
		}
		bs = vpaddq_s16(vld1q_s16(y[i].bsums),
				vld1q_s16(y[i].bsums + 8));
		mins = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn)));
		ms = vmull_s16(vget_low_s16(bs), vget_low_s16(mins));
		ms = vmlal_s16(ms, vget_high_s16(bs), vget_high_s16(mins));
		acc = fmaf(dall, (float)vaddvq_s32(sumi), acc);
		acc = fmaf(-dmin, (float)vaddvq_s32(ms), acc);
	}
	return acc;
}

static inline int32x4_t dot16(int8x16_t q, const int8_t *y)
{
	return vdotq_s32(vdupq_n_s32(0), q, vld1q_s8(y));
}

static float vec_dot_q6_K(int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q6_K *x = w;
	const struct edgeq_block_q8_K *y = a;
	const uint8x16_t m4 = vdupq_n_u8(0x0f), m30 = vdupq_n_u8(0x30);
	const int8x16_t s32 = vdupq_n_s8(32);
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		const uint8_t *ql = x[i].ql, *qh = x[i].qh;
		const int8_t *q8 = y[i].qs, *sc = x[i].scales;
		int32x4_t sumi = vdupq_n_s32(0);
		float d = h2f(x[i].d) * y[i].d;

		for (int k = 0; k < 2; k++) {
			for (int h = 0; h < 2; h++) {
				uint8x16_t la = vld1q_u8(ql + 16 * h);
				uint8x16_t lb = vld1q_u8(ql + 32 + 16 * h);
				uint8x16_t hb = vld1q_u8(qh + 16 * h);
				uint8x16_t u[4];

				u[0] = vorrq_u8(vandq_u8(la, m4),
						vandq_u8(vshlq_n_u8(hb, 4),
							 m30));
				u[1] = vorrq_u8(vandq_u8(lb, m4),
						vandq_u8(vshlq_n_u8(hb, 2),
							 m30));
				u[2] = vorrq_u8(vshrq_n_u8(la, 4),
						vandq_u8(hb, m30));
				u[3] = vorrq_u8(vshrq_n_u8(lb, 4),
						vandq_u8(vshrq_n_u8(hb, 2),
							 m30));
				for (int t = 0; t < 4; t++) {
					int8x16_t q = vsubq_s8(
						vreinterpretq_s8_u8(u[t]), s32);

					sumi = vmlaq_n_s32(
						sumi,
						dot16(q, q8 + 32 * t + 16 * h),
						sc[2 * t + h]);
				}
			}
			ql += 64;
			qh += 32;
			q8 += 128;
			sc += 8;
		}
		acc = fmaf(d, (float)vaddvq_s32(sumi), acc);
	}
	return acc;
}

/* ---- attention helpers ---- */

static void axpy_f32(int64_t n, float a, const float *v, float *y)
{
	int64_t i = 0;

#pragma GCC unroll 4
	for (; i + 4 <= n; i += 4)
		vst1q_f32(y + i,
			  vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(v + i), a));
	for (; i < n; i++)
		y[i] = fmaf(a, v[i], y[i]);
}

static void axpy_f16(int64_t n, float a, const uint16_t *v, float *y)
{
	int64_t i = 0;

#pragma GCC unroll 4
	for (; i + 4 <= n; i += 4) {
		float32x4_t x =
			vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(v + i)));

		vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), x, a));
	}
	for (; i < n; i++)
		y[i] = fmaf(a, h2f(v[i]), y[i]);
}

static void axpy_q8_0(int64_t n, float a, const void *v, float *y)
{
	const struct edgeq_block_q8_0 *x = v;

	for (int64_t i = 0; i < n / EDGEQ_QK8_0; i++, y += EDGEQ_QK8_0) {
		float s = a * h2f(x[i].d);

		for (int j = 0; j < EDGEQ_QK8_0; j += 8) {
			int16x8_t q = vmovl_s8(vld1_s8(x[i].qs + j));
			float32x4_t q0 =
				vcvtq_f32_s32(vmovl_s16(vget_low_s16(q)));
			float32x4_t q1 =
				vcvtq_f32_s32(vmovl_s16(vget_high_s16(q)));

			vst1q_f32(y + j, vfmaq_n_f32(vld1q_f32(y + j), q0, s));
			vst1q_f32(y + j + 4,
				  vfmaq_n_f32(vld1q_f32(y + j + 4), q1, s));
		}
	}
}

static uint64_t stream_read(const void *p, size_t bytes)
{
	const uint64_t *q = p;
	uint64x2_t a = vdupq_n_u64(0), b = a, c = a, d = a;

	for (size_t i = 0; i < bytes / 8; i += 16) {
		a = veorq_u64(a, vld1q_u64(q + i));
		b = veorq_u64(b, vld1q_u64(q + i + 2));
		c = veorq_u64(c, vld1q_u64(q + i + 4));
		d = veorq_u64(d, vld1q_u64(q + i + 6));
		a = veorq_u64(a, vld1q_u64(q + i + 8));
		b = veorq_u64(b, vld1q_u64(q + i + 10));
		c = veorq_u64(c, vld1q_u64(q + i + 12));
		d = veorq_u64(d, vld1q_u64(q + i + 14));
	}
	a = veorq_u64(veorq_u64(a, b), veorq_u64(c, d));
	return vgetq_lane_u64(a, 0) ^ vgetq_lane_u64(a, 1);
}

/*
 * Decode: 8 rows at once, one row per float lane (two float32x4 chains
 * that overlap). Per block the rows' sdot lane sums reduce with pairwise
 * adds to one vector of exact block sums, then one fma per 4 rows. With
 * @pf the next 8 rows (contiguous) are prefetched over the blocks: the 8
 * interleaved streams are more than the hardware prefetcher follows.
 */
static inline void rows8_neon(enum edgeq_type t, int64_t nb, const char *w,
			      size_t rs, const void *a, float *y, bool pf)
{
	const struct edgeq_block_q8_0 *ya = a;
	/* lines a block of the 8 rows spans, rounded up (a constant) */
	const int pfl =
		t == EDGEQ_TYPE_Q4_0 ?
			(8 * sizeof(struct edgeq_block_q4_0) + 63) / 64 :
			(8 * sizeof(struct edgeq_block_q8_0) + 63) / 64;
	const char *pfp = w + 8 * rs;
	float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0);

	for (int64_t i = 0; i < nb; i++, pfp += 64 * pfl) {
		const int8_t *qy = ya[i].qs;
		float32x4_t dy = vdupq_n_f32(h2f(ya[i].d));
		int32x4_t p[8];
		float dx[8];

		if (pf)
			for (int k = 0; k < pfl; k++)
				__builtin_prefetch(pfp + 64 * k);

#pragma GCC unroll 8
		for (int r = 0; r < 8; r++) {
			int8x16_t x0, x1;

			wblock(t, w + r * rs, i, &x0, &x1, &dx[r]);
			p[r] = block_dot(x0, x1, qy);
		}
		acc0 = vfmaq_f32(acc0, vmulq_f32(vld1q_f32(dx), dy),
				 vcvtq_f32_s32(hsum_4x4(p)));
		acc1 = vfmaq_f32(acc1, vmulq_f32(vld1q_f32(dx + 4), dy),
				 vcvtq_f32_s32(hsum_4x4(p + 4)));
	}
	vst1q_f32(y, acc0);
	vst1q_f32(y + 4, acc1);
}

static void matvec_neon(enum edgeq_type type, const void *w, int64_t n,
			int64_t row0, int64_t row1, const void *a, float *y)
{
	size_t rs;
	int64_t r = row0;

	if (type != EDGEQ_TYPE_Q4_0 && type != EDGEQ_TYPE_Q8_0) {
		if (edgeq_neon_matvec_more(type, w, n, row0, row1, a, y))
			return;
		edgeq_matvec_generic(&edgeq_kernel_ops_neon, type, w, n, row0,
				     row1, a, y);
		return;
	}
	rs = edgeq_row_size(type, n);
	for (; r + 8 <= row1; r += 8)
		if (type == EDGEQ_TYPE_Q4_0)
			rows8_neon(EDGEQ_TYPE_Q4_0, n / EDGEQ_QK4_0,
				   (const char *)w + r * rs, rs, a, y + r,
				   r + 16 <= row1);
		else
			rows8_neon(EDGEQ_TYPE_Q8_0, n / EDGEQ_QK8_0,
				   (const char *)w + r * rs, rs, a, y + r,
				   r + 16 <= row1);
	for (; r < row1; r++)
		y[r] = dot_q80_like(type, n, (const char *)w + r * rs, a);
}

/* Prefill: 4 rows x 2 tokens, one output per lane (a float32x4 of 4 rows
 * per token, two chains): each weight block unpacked once for both tokens,
 * each activation block loaded once for the 4 rows. */
static inline void tile_neon(enum edgeq_type t, int64_t nb, const char *w,
			     size_t rs, const char *a, size_t as, float *y,
			     int64_t ldy)
{
	float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0);

	for (int64_t i = 0; i < nb; i++) {
		const struct edgeq_block_q8_0 *y0 =
			(const struct edgeq_block_q8_0 *)a + i;
		const struct edgeq_block_q8_0 *y1 =
			(const struct edgeq_block_q8_0 *)(a + as) + i;
		int32x4_t p0[4], p1[4];
		float dx[4];
		float32x4_t dw;

#pragma GCC unroll 4
		for (int r = 0; r < 4; r++) {
			int8x16_t x0, x1;

			wblock(t, w + r * rs, i, &x0, &x1, &dx[r]);
			p0[r] = block_dot(x0, x1, y0->qs);
			p1[r] = block_dot(x0, x1, y1->qs);
		}
		dw = vld1q_f32(dx);
		acc0 = vfmaq_f32(acc0, vmulq_n_f32(dw, h2f(y0->d)),
				 vcvtq_f32_s32(hsum_4x4(p0)));
		acc1 = vfmaq_f32(acc1, vmulq_n_f32(dw, h2f(y1->d)),
				 vcvtq_f32_s32(hsum_4x4(p1)));
	}
	vst1q_f32(y, acc0);
	vst1q_f32(y + ldy, acc1);
}

static void matmul_q80_like(enum edgeq_type t, const void *w, int64_t n,
			    int64_t row0, int64_t row1, const char *a,
			    size_t as, int64_t nb, float *y, int64_t ldy)
{
	edgeq_matmul_q80_4x2(t, w, n, row0, row1, a, as, nb, y, ldy, tile_neon,
			     dot_q80_like);
}

static void matmul_neon(enum edgeq_type type, const void *w, int64_t n,
			int64_t row0, int64_t row1, const void *a,
			size_t a_stride, int64_t nb, float *y, int64_t ldy)
{
	if (type == EDGEQ_TYPE_Q4_0 || type == EDGEQ_TYPE_Q8_0) {
		matmul_q80_like(type, w, n, row0, row1, a, a_stride, nb, y,
				ldy);
		return;
	}
	if (edgeq_neon_matmul_more(type, w, n, row0, row1, a, a_stride, nb, y,
				   ldy))
		return;
	edgeq_matmul_generic(&edgeq_kernel_ops_neon, type, w, n, row0, row1, a,
			     a_stride, nb, y, ldy);
}

/* edgeq_expf on 4 lanes: the same operations, lane by lane. */
static inline float32x4_t expf4(float32x4_t x)
{
	const float32x4_t sh = vdupq_n_f32(EDGEQ_EXPF_SHIFT);
	float32x4_t z = vmulq_f32(x, vdupq_n_f32(EDGEQ_EXPF_LOG2E));
	float32x4_t n = vsubq_f32(vaddq_f32(z, sh), sh), nn = vnegq_f32(n);
	float32x4_t r = vfmaq_f32(x, nn, vdupq_n_f32(EDGEQ_EXPF_LN2_HI));
	float32x4_t p = vdupq_n_f32(EDGEQ_EXPF_C7);
	int32x4_t ni, n1, b1, b2;
	uint32x4_t lo, hi, num;

	r = vfmaq_f32(r, nn, vdupq_n_f32(EDGEQ_EXPF_LN2_LO));
	p = vfmaq_f32(vdupq_n_f32(EDGEQ_EXPF_C6), p, r);
	p = vfmaq_f32(vdupq_n_f32(EDGEQ_EXPF_C5), p, r);
	p = vfmaq_f32(vdupq_n_f32(EDGEQ_EXPF_C4), p, r);
	p = vfmaq_f32(vdupq_n_f32(EDGEQ_EXPF_C3), p, r);
	p = vfmaq_f32(vdupq_n_f32(EDGEQ_EXPF_C2), p, r);
	p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
	p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
	lo = vcltq_f32(x, vdupq_n_f32(EDGEQ_EXPF_LO));
	hi = vcgtq_f32(x, vdupq_n_f32(EDGEQ_EXPF_HI));
	num = vceqq_f32(x, x); /* not NaN */
	/* out-of-range lanes: n is 0 there, their result is replaced */
	n = vbslq_f32(vandq_u32(num, vmvnq_u32(vorrq_u32(lo, hi))), n,
		      vdupq_n_f32(0));
	ni = vcvtq_s32_f32(n);
	n1 = vshrq_n_s32(ni, 1);
	b1 = vshlq_n_s32(vaddq_s32(n1, vdupq_n_s32(127)), 23);
	b2 = vshlq_n_s32(vaddq_s32(vsubq_s32(ni, n1), vdupq_n_s32(127)), 23);
	p = vmulq_f32(vmulq_f32(p, vreinterpretq_f32_s32(b1)),
		      vreinterpretq_f32_s32(b2));
	p = vbslq_f32(lo, vdupq_n_f32(0), p);
	p = vbslq_f32(hi, vdupq_n_f32(INFINITY), p);
	return vbslq_f32(num, p, x);
}

/* edgeq_silu_mul_ref on 4 lanes; the tail through a padded copy. */
static void silu_mul_neon(float *o, const float *x, int64_t n)
{
	const float32x4_t one = vdupq_n_f32(1.0f);

	for (int64_t t = 0; t < n; t += 4) {
		float go[4] = { 0 }, gx[4] = { 0 };
		int m = n - t >= 4 ? 4 : (int)(n - t);
		float32x4_t g, v;

		memcpy(go, o + t, (size_t)m * sizeof(float));
		memcpy(gx, x + t, (size_t)m * sizeof(float));
		g = vld1q_f32(go);
		v = vdivq_f32(g, vaddq_f32(one, expf4(vnegq_f32(g))));
		vst1q_f32(go, vmulq_f32(v, vld1q_f32(gx)));
		memcpy(o + t, go, (size_t)m * sizeof(float));
	}
}

/*
 * edgeq_softmax_ref's order: key t into lane t % 16 (4 vectors of 4). The
 * max is fmaxnm's (a quiet NaN is skipped, as the reference's x[t] > mx
 * skips it; a zero's sign may differ, which x - m does not see); whole
 * chunks of 4 straight from x, the tail through a padded copy.
 */
static void softmax_neon(float *x, int64_t n)
{
	float32x4_t acc[4], m, inv, mv = vdupq_n_f32(-INFINITY);
	float mx, l[8];
	int64_t t = 0, n4 = n & ~(int64_t)3;

	for (; t < n4; t += 4)
		mv = vmaxnmq_f32(mv, vld1q_f32(x + t));
	mx = vmaxnmvq_f32(mv);
	for (; t < n; t++)
		if (x[t] > mx)
			mx = x[t];
	m = vdupq_n_f32(mx);
	for (int j = 0; j < 4; j++)
		acc[j] = vdupq_n_f32(0);
	for (t = 0; t < n4; t += 4) {
		float32x4_t e = expf4(vsubq_f32(vld1q_f32(x + t), m));

		vst1q_f32(x + t, e);
		acc[(t >> 2) & 3] = vaddq_f32(acc[(t >> 2) & 3], e);
	}
	if (t < n) {
		float b[4] = { 0 };
		int k = (int)(n - t);
		float32x4_t e;

		memcpy(b, x + t, (size_t)k * sizeof(float));
		e = expf4(vsubq_f32(vld1q_f32(b), m));
		vst1q_f32(b, e);
		memcpy(x + t, b, (size_t)k * sizeof(float));
		for (int q = k; q < 4; q++)
			b[q] = 0; /* lanes past the end add nothing */
		acc[(t >> 2) & 3] = vaddq_f32(acc[(t >> 2) & 3], vld1q_f32(b));
	}
	vst1q_f32(l, vaddq_f32(acc[0], acc[2]));
	vst1q_f32(l + 4, vaddq_f32(acc[1], acc[3]));
	inv = vdupq_n_f32(1.0f / edgeq_reduce8(l));
	for (t = 0; t < n4; t += 4)
		vst1q_f32(x + t, vmulq_f32(vld1q_f32(x + t), inv));
	for (; t < n; t++)
		x[t] *= vgetq_lane_f32(inv, 0);
}

const struct edgeq_kernel_ops edgeq_kernel_ops_neon = {
	.name = "neon",
	.vec_dot = {
		[EDGEQ_TYPE_F32] = vec_dot_f32,
		[EDGEQ_TYPE_F16] = vec_dot_f16,
		[EDGEQ_TYPE_BF16] = vec_dot_bf16,
		[EDGEQ_TYPE_Q8_0] = vec_dot_q8_0,
		[EDGEQ_TYPE_Q4_0] = vec_dot_q4_0,
		[EDGEQ_TYPE_Q4_K] = vec_dot_q4_K,
		[EDGEQ_TYPE_Q6_K] = vec_dot_q6_K,
		[EDGEQ_TYPE_Q4_1] = edgeq_neon_dot_q4_1,
		[EDGEQ_TYPE_Q5_0] = edgeq_neon_dot_q5_0,
		[EDGEQ_TYPE_Q5_1] = edgeq_neon_dot_q5_1,
		[EDGEQ_TYPE_IQ4_NL] = edgeq_neon_dot_iq4_nl,
		[EDGEQ_TYPE_Q2_K] = edgeq_neon_dot_q2_K,
		[EDGEQ_TYPE_Q3_K] = edgeq_neon_dot_q3_K,
		[EDGEQ_TYPE_Q5_K] = edgeq_neon_dot_q5_K,
		[EDGEQ_TYPE_IQ4_XS] = edgeq_neon_dot_iq4_xs,
	},
	.quantize_act = edgeq_quantize_act_neon,
	.matvec = matvec_neon,
	.matmul = matmul_neon,
	.pack16 = { [EDGEQ_TYPE_Q4_0] = true,
		    [EDGEQ_TYPE_Q8_0] = true,
		    [EDGEQ_TYPE_Q4_K] = true,
		    [EDGEQ_TYPE_Q5_K] = true,
		    [EDGEQ_TYPE_Q6_K] = true,
		    [EDGEQ_TYPE_Q3_K] = true,
		    [EDGEQ_TYPE_Q2_K] = true,
		    [EDGEQ_TYPE_Q5_0] = true,
		    [EDGEQ_TYPE_Q4_1] = true,
		    [EDGEQ_TYPE_Q5_1] = true,
		    [EDGEQ_TYPE_IQ4_NL] = true,
		    [EDGEQ_TYPE_IQ4_XS] = true },
	.softmax = softmax_neon,
	.silu_mul = silu_mul_neon,
	.attn_scores_f16 = edgeq_attn_scores_f16_neon,
	.attn_av_f16 = edgeq_attn_av_f16_neon,
	.attn_scores_f16_g = edgeq_attn_scores_f16_g_neon,
	.attn_scores_f16_t = edgeq_attn_scores_f16_t_neon,
	.attn_av_f16_g = edgeq_attn_av_f16_g_neon,
	.attn_av_f16_t = edgeq_attn_av_f16_t_neon,
	.attn_av_q8_0_t = edgeq_attn_av_q8_0_t_neon,
	.matvec_packed = edgeq_neon_matvec_packed,
	.matmul_packed = edgeq_neon_matmul_packed,
	.dot_f32 = dot_f32,
	.dot_f16 = dot_f16,
	.axpy_f32 = axpy_f32,
	.axpy_f16 = axpy_f16,
	.axpy_q8_0 = axpy_q8_0,
	.stream_read = stream_read,
};

static struct edgeq_kernel_ops table_i8mm;
static pthread_once_t i8mm_once = PTHREAD_ONCE_INIT;

static void i8mm_init(void)
{
	table_i8mm = edgeq_kernel_ops_neon;
	table_i8mm.name = "neon-i8mm";
	table_i8mm.matmul_packed = edgeq_neon_i8mm_matmul_packed;
}

const struct edgeq_kernel_ops *edgeq_kernel_ops_neon_i8mm(void)
{
	pthread_once(&i8mm_once, i8mm_init);
	return &table_i8mm;
}
