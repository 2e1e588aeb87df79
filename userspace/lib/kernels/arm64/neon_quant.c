// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Activation quantization (Q8_0, Q8_K) with NEON, bit-identical to
 * edgeq_quantize_act_ref (the NEON tables used the reference itself: a
 * compare, a multiply, a rounding and a store per element). Every decode
 * step quantizes each matrix's input on the calling thread, so on an
 * Orin's cores this is on the token's critical path.
 *
 * Why the bits are the reference's: the maximum of |x| is exact in any
 * order; d = amax / 127 and 1 / d are the same single divisions; the fp16
 * scale is FCVT's round to nearest even, edgeq_fp32_to_fp16()'s; Q8_0's roundf(x * id) is FCVTAS (round
 * to nearest, ties away from zero) of the same product, and Q8_K's
 * nearest_int() is FCVTNS (ties to even) of the same product, whose
 * magnitude is at most 127 (|x| <= amax = |max| and iscale = -127 / max),
 * inside both forms' exact range; the int8 narrowing saturates where the
 * reference's cast would wrap, and no value in range reaches either.
 * Blocks holding a NaN or an infinity go to the reference, which writes
 * them and reports -EDOM.
 */
#include <arm_neon.h>
#include <math.h>

#include "kernels/kernels.h"

#define AI static inline __attribute__((always_inline))

/* The maximum of |x| over n (a multiple of 8) floats: NaN or infinite
 * exactly when some element is (FMAX and FMAXV return a NaN operand). */
AI float amax_of(const float *x, int n)
{
	float32x4_t m0 = vabsq_f32(vld1q_f32(x)),
		    m1 = vabsq_f32(vld1q_f32(x + 4));

	for (int j = 8; j < n; j += 8) {
		m0 = vmaxq_f32(m0, vabsq_f32(vld1q_f32(x + j)));
		m1 = vmaxq_f32(m1, vabsq_f32(vld1q_f32(x + j + 4)));
	}
	return vmaxvq_f32(vmaxq_f32(m0, m1));
}

/* 16 int32 lanes to 16 int8 (saturating), in order. */
AI int8x16_t narrow16(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d)
{
	int16x8_t lo = vqmovn_high_s32(vqmovn_s32(a), b);
	int16x8_t hi = vqmovn_high_s32(vqmovn_s32(c), d);

	return vqmovn_high_s16(vqmovn_s16(lo), hi);
}

/* roundf(x[j] * s) of 16 floats, as int8 */
AI int8x16_t round16(const float *x, float32x4_t s)
{
	return narrow16(vcvtaq_s32_f32(vmulq_f32(vld1q_f32(x), s)),
			vcvtaq_s32_f32(vmulq_f32(vld1q_f32(x + 4), s)),
			vcvtaq_s32_f32(vmulq_f32(vld1q_f32(x + 8), s)),
			vcvtaq_s32_f32(vmulq_f32(vld1q_f32(x + 12), s)));
}

/* min(127, nearest_int(x[j] * s)) of 16 floats (ties to even) */
AI int32x4_t near4(const float *x, float32x4_t s)
{
	return vminq_s32(vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x), s)),
			 vdupq_n_s32(127));
}

static int neon_q8_0(const float *x, struct edgeq_block_q8_0 *y, int64_t n)
{
	int ret = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK8_0; i++, x += EDGEQ_QK8_0) {
		float amax = amax_of(x, EDGEQ_QK8_0), d, id;
		float32x4_t s;

		if (!(amax < INFINITY)) { /* a NaN or an infinity */
			ret = edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_0, x, &y[i],
						     EDGEQ_QK8_0);
			continue;
		}
		d = amax / 127;
		/* FCVT to half rounds to nearest even (FPCR's default mode,
		 * which nothing here changes), subnormal halves included:
		 * edgeq_fp32_to_fp16() for every finite d >= 0 */
		y[i].d = vget_lane_u16(
			vreinterpret_u16_f16(vcvt_f16_f32(vdupq_n_f32(d))), 0);
		/* a scale that is 0 as fp16 zeroes the block in every dot;
		 * its 1/d may be infinite, so write zeros */
		id = y[i].d ? 1.0f / d : 0.0f;
		s = vdupq_n_f32(id);
		vst1q_s8(y[i].qs, round16(x, s));
		vst1q_s8(y[i].qs + 16, round16(x + 16, s));
	}
	return ret;
}

static int neon_q8_K(const float *x, struct edgeq_block_q8_K *y, int64_t n)
{
	int ret = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++, x += EDGEQ_QK_K) {
		float amax = amax_of(x, EDGEQ_QK_K), max = 0, iscale;
		float32x4_t s;

		if (!(amax < INFINITY)) { /* a NaN or an infinity */
			ret = edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_K, x, &y[i],
						     EDGEQ_QK_K);
			continue;
		}
		if (!amax) {
			edgeq_q8_K_zero(&y[i]);
			continue;
		}
		/* the reference keeps the first element of largest magnitude:
		 * the first 16 holding one, then the element within them */
		for (int j = 0; j < EDGEQ_QK_K && !max; j += 16) {
			const float32x4_t am = vdupq_n_f32(amax);
			uint32x4_t e =
				vceqq_f32(vabsq_f32(vld1q_f32(x + j)), am);

			for (int k = 4; k < 16; k += 4)
				e = vorrq_u32(e, vceqq_f32(vabsq_f32(vld1q_f32(
								   x + j + k)),
							   am));
			if (!vmaxvq_u32(e))
				continue;
			for (int k = j; k < j + 16; k++)
				if (x[k] == amax || x[k] == -amax) {
					max = x[k];
					break;
				}
		}
		iscale = -127.f / max;
		if (!isfinite(iscale)) {
			edgeq_q8_K_zero(&y[i]);
			continue;
		}
		s = vdupq_n_f32(iscale);
		/* each 16 elements are one bsums group */
		for (int j = 0; j < EDGEQ_QK_K; j += 16) {
			int32x4_t q0 = near4(x + j, s),
				  q1 = near4(x + j + 4, s);
			int32x4_t q2 = near4(x + j + 8, s);
			int32x4_t q3 = near4(x + j + 12, s);

			vst1q_s8(y[i].qs + j, narrow16(q0, q1, q2, q3));
			y[i].bsums[j / 16] = (int16_t)vaddvq_s32(vaddq_s32(
				vaddq_s32(q0, q1), vaddq_s32(q2, q3)));
		}
		y[i].d = 1 / iscale;
	}
	return ret;
}

int edgeq_quantize_act_neon(enum edgeq_type vdt, const float *x, void *y,
			    int64_t n)
{
	return edgeq_quantize_act_with(vdt, x, y, n, neon_q8_0, neon_q8_K);
}
