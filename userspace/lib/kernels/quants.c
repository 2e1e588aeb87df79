// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Reference quantization and dequantization of the GGUF block types, and the
 * type traits table. The quantizers follow ggml's reference algorithms
 * (quantize_row_*_ref) so files written with them look like llama.cpp's;
 * they are deterministic and never read past their input. Non-finite input
 * makes a block of zeros and an -EDOM result instead of undefined
 * float-to-int conversions.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernels/kernels.h"

#define GROUP_MAX_EPS 1e-15f

/* Round to nearest, ties to even, for |f| <= 2^22 (clamped beyond). */
static inline int nearest_int(float f)
{
	float v;
	int i;

	if (f > 4194303.f)
		f = 4194303.f;
	else if (f < -4194303.f)
		f = -4194303.f;
	v = f + 12582912.f;
	memcpy(&i, &v, sizeof(i));
	return (i & 0x007fffff) - 0x00400000;
}

static inline int imin(int a, int b)
{
	return a < b ? a : b;
}

static inline int imax(int a, int b)
{
	return a > b ? a : b;
}

/* The largest |x[i]| (returned) and the first x[i] that has it (*max). */
static float abs_max(const float *x, int n, float *max)
{
	float amax = 0;

	*max = 0;
	for (int i = 0; i < n; i++) {
		float ax = fabsf(x[i]);

		if (ax > amax) {
			amax = ax;
			*max = x[i];
		}
	}
	return amax;
}

static bool all_finite(const float *x, int n)
{
	for (int i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return false;
	return true;
}

/* ---- F32, F16, BF16 ---- */

static void f32_to_float(const void *x, float *y, int64_t n)
{
	memcpy(y, x, n * sizeof(float));
}

static int f32_from_float(const float *x, void *y, int64_t n)
{
	memcpy(y, x, n * sizeof(float));
	return 0;
}

static void f16_to_float(const void *x, float *y, int64_t n)
{
	edgeq_fp16_to_fp32_row(x, y, n);
}

static int f16_from_float(const float *x, void *y, int64_t n)
{
	edgeq_fp32_to_fp16_row(x, y, n);
	return 0;
}

static void bf16_to_float(const void *x, float *y, int64_t n)
{
	const uint16_t *h = x;

	for (int64_t i = 0; i < n; i++)
		y[i] = edgeq_bf16_to_fp32(h[i]);
}

static int bf16_from_float(const float *x, void *y, int64_t n)
{
	uint16_t *h = y;

	for (int64_t i = 0; i < n; i++)
		h[i] = edgeq_fp32_to_bf16(x[i]);
	return 0;
}

/* ---- Q8_0 ---- */

static void q8_0_to_float(const void *vx, float *y, int64_t n)
{
	const struct edgeq_block_q8_0 *x = vx;

	for (int64_t i = 0; i < n / EDGEQ_QK8_0; i++) {
		float d = edgeq_fp16_to_fp32(x[i].d);

		for (int j = 0; j < EDGEQ_QK8_0; j++)
			y[i * EDGEQ_QK8_0 + j] = x[i].qs[j] * d;
	}
}

static int q8_0_from_float(const float *x, void *vy, int64_t n)
{
	struct edgeq_block_q8_0 *y = vy;
	int ret = 0;

	if (n % EDGEQ_QK8_0)
		return -EINVAL;
	for (int64_t i = 0; i < n / EDGEQ_QK8_0; i++, x += EDGEQ_QK8_0) {
		float amax = 0.0f, d, id;

		if (!all_finite(x, EDGEQ_QK8_0)) {
			memset(&y[i], 0, sizeof(y[i]));
			ret = -EDOM;
			continue;
		}
		for (int j = 0; j < EDGEQ_QK8_0; j++)
			amax = fmaxf(amax, fabsf(x[j]));
		d = amax / 127;
		id = d ? 1.0f / d : 0.0f;
		y[i].d = edgeq_fp32_to_fp16(d);
		for (int j = 0; j < EDGEQ_QK8_0; j++)
			y[i].qs[j] = (int8_t)roundf(x[j] * id);
	}
	return ret;
}

/* ---- Q4_0 ---- */

static void q4_0_to_float(const void *vx, float *y, int64_t n)
{
	const struct edgeq_block_q4_0 *x = vx;

	for (int64_t i = 0; i < n / EDGEQ_QK4_0; i++) {
		float d = edgeq_fp16_to_fp32(x[i].d);

		for (int j = 0; j < EDGEQ_QK4_0 / 2; j++) {
			y[i * EDGEQ_QK4_0 + j] = ((x[i].qs[j] & 0xf) - 8) * d;
			y[i * EDGEQ_QK4_0 + j + 16] =
				((x[i].qs[j] >> 4) - 8) * d;
		}
	}
}

static int q4_0_from_float(const float *x, void *vy, int64_t n)
{
	struct edgeq_block_q4_0 *y = vy;
	int ret = 0;

	if (n % EDGEQ_QK4_0)
		return -EINVAL;
	for (int64_t i = 0; i < n / EDGEQ_QK4_0; i++, x += EDGEQ_QK4_0) {
		float amax = 0.0f, max = 0.0f, d, id;

		if (!all_finite(x, EDGEQ_QK4_0)) {
			memset(&y[i], 0, sizeof(y[i]));
			ret = -EDOM;
			continue;
		}
		for (int j = 0; j < EDGEQ_QK4_0; j++) {
			if (amax < fabsf(x[j])) {
				amax = fabsf(x[j]);
				max = x[j];
			}
		}
		d = max / -8;
		id = d ? 1.0f / d : 0.0f;
		y[i].d = edgeq_fp32_to_fp16(d);
		for (int j = 0; j < EDGEQ_QK4_0 / 2; j++) {
			int x0 = (int8_t)(x[j] * id + 8.5f);
			int x1 = (int8_t)(x[j + 16] * id + 8.5f);

			y[i].qs[j] =
				(uint8_t)(imin(15, x0) | (imin(15, x1) << 4));
		}
	}
	return ret;
}

/* ---- Q4_K ---- */

/* ggml's make_qkx2_quants: affine fit with a min, searched scale; the
 * error is weighted squares, or absolute values with @use_mad (Q2_K). */
static float make_qkx2_quants(int n, int nmax, const float *x,
			      const float *weights, uint8_t *L, float *the_min,
			      uint8_t *Laux, float rmin, float rdelta,
			      int nstep, bool use_mad)
{
	float min = x[0], max = x[0];
	float sum_w = weights[0], sum_x = sum_w * x[0];
	float iscale, scale, best_error = 0;

	for (int i = 1; i < n; i++) {
		if (x[i] < min)
			min = x[i];
		if (x[i] > max)
			max = x[i];
		sum_w += weights[i];
		sum_x += weights[i] * x[i];
	}
	if (min > 0)
		min = 0;
	if (max == min) {
		memset(L, 0, n);
		*the_min = -min;
		return 0.f;
	}
	iscale = nmax / (max - min);
	scale = 1 / iscale;
	for (int i = 0; i < n; i++) {
		int l = nearest_int(iscale * (x[i] - min));
		float diff;

		L[i] = (uint8_t)imax(0, imin(nmax, l));
		diff = scale * L[i] + min - x[i];
		diff = use_mad ? fabsf(diff) : diff * diff;
		best_error += weights[i] * diff;
	}
	for (int is = 0; is <= nstep; is++) {
		float sum_l = 0, sum_l2 = 0, sum_xl = 0, D;

		iscale = (rmin + rdelta * is + nmax) / (max - min);
		for (int i = 0; i < n; i++) {
			int l = nearest_int(iscale * (x[i] - min));

			l = imax(0, imin(nmax, l));
			Laux[i] = (uint8_t)l;
			sum_l += weights[i] * l;
			sum_l2 += weights[i] * l * l;
			sum_xl += weights[i] * l * x[i];
		}
		D = sum_w * sum_l2 - sum_l * sum_l;
		if (D > 0) {
			float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
			float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
			float cur_error = 0;

			if (this_min > 0) {
				this_min = 0;
				this_scale = sum_xl / sum_l2;
			}
			for (int i = 0; i < n; i++) {
				float diff =
					this_scale * Laux[i] + this_min - x[i];

				diff = use_mad ? fabsf(diff) : diff * diff;
				cur_error += weights[i] * diff;
			}
			if (cur_error < best_error) {
				memcpy(L, Laux, n);
				best_error = cur_error;
				scale = this_scale;
				min = this_min;
			}
		}
	}
	*the_min = -min;
	return scale;
}

/* Q4_K/Q5_K: the 8 six-bit scales and mins packed as ggml packs them */
static void k4_pack_scales(uint8_t *s, const float *scales, const float *mins,
			   float max_scale, float max_min)
{
	float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
	float inv_min = max_min > 0 ? 63.f / max_min : 0.f;

	for (int j = 0; j < 8; j++) {
		uint8_t ls =
			(uint8_t)imin(63, nearest_int(inv_scale * scales[j]));
		uint8_t lm = (uint8_t)imin(63, nearest_int(inv_min * mins[j]));

		if (j < 4) {
			s[j] = ls;
			s[j + 4] = lm;
		} else {
			s[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4);
			s[j - 4] |= ((ls >> 4) << 6);
			s[j - 0] |= ((lm >> 4) << 6);
		}
	}
}

/*
 * The affine part of Q4_K/Q5_K quantization of one super-block (ggml's
 * quantize_row_q4_K_ref / q5_K_ref): per 32-element sub-block the searched
 * fit (nmax 15 or 31, @rmin, @nstep), the packed 6-bit scales and mins, d
 * and dmin, then every value requantized against the stored scales: L[] in
 * 0..nmax.
 */
static void k4_quantize(const float *x, int nmax, float rmin, int nstep,
			uint8_t *scales, uint16_t *d, uint16_t *dmin,
			uint8_t L[EDGEQ_QK_K])
{
	uint8_t Laux[32];
	float weights[32], mins[8], sub[8], max_scale = 0, max_min = 0;

	for (int j = 0; j < 8; j++) {
		float sum_x2 = 0, av_x;

		for (int l = 0; l < 32; l++)
			sum_x2 += x[32 * j + l] * x[32 * j + l];
		av_x = sqrtf(sum_x2 / 32);
		for (int l = 0; l < 32; l++)
			weights[l] = av_x + fabsf(x[32 * j + l]);
		sub[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights,
					  L + 32 * j, &mins[j], Laux, rmin,
					  0.1f, nstep, false);
		if (sub[j] > max_scale)
			max_scale = sub[j];
		if (mins[j] > max_min)
			max_min = mins[j];
	}
	k4_pack_scales(scales, sub, mins, max_scale, max_min);
	*d = edgeq_fp32_to_fp16(max_scale / 63.f);
	*dmin = edgeq_fp32_to_fp16(max_min / 63.f);
	for (int j = 0; j < 8; j++) {
		uint8_t sc, m;
		float dj, dm;

		edgeq_q4_K_scale_min(j, scales, &sc, &m);
		dj = edgeq_fp16_to_fp32(*d) * sc;
		if (!dj)
			continue;
		dm = edgeq_fp16_to_fp32(*dmin) * m;
		for (int ii = 0; ii < 32; ii++) {
			int l = nearest_int((x[32 * j + ii] + dm) / dj);

			L[32 * j + ii] = (uint8_t)imax(0, imin(nmax, l));
		}
	}
}

/* One Q4_K (qh NULL) or Q5_K super-block dequantized as ggml does it. */
static void k4_to_float(uint16_t d16, uint16_t dmin16, const uint8_t *scales,
			const uint8_t *q, const uint8_t *qh, float *y)
{
	float d = edgeq_fp16_to_fp32(d16), min = edgeq_fp16_to_fp32(dmin16);
	uint8_t u1 = 1, u2 = 2;

	for (int j = 0, is = 0; j < EDGEQ_QK_K; j += 64, is += 2) {
		uint8_t sc, m;
		float d1, m1, d2, m2;

		edgeq_q4_K_scale_min(is, scales, &sc, &m);
		d1 = d * sc;
		m1 = min * m;
		edgeq_q4_K_scale_min(is + 1, scales, &sc, &m);
		d2 = d * sc;
		m2 = min * m;
		for (int l = 0; l < 32; l++)
			*y++ = d1 * ((q[l] & 0xF) +
				     (qh && (qh[l] & u1) ? 16 : 0)) -
			       m1;
		for (int l = 0; l < 32; l++)
			*y++ = d2 * ((q[l] >> 4) +
				     (qh && (qh[l] & u2) ? 16 : 0)) -
			       m2;
		q += 32;
		u1 <<= 2;
		u2 <<= 2;
	}
}

static void q4_K_to_float(const void *vx, float *y, int64_t n)
{
	const struct edgeq_block_q4_K *x = vx;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++, y += EDGEQ_QK_K)
		k4_to_float(x[i].d, x[i].dmin, x[i].scales, x[i].qs, NULL, y);
}

static int q4_K_from_float(const float *x, void *vy, int64_t n)
{
	struct edgeq_block_q4_K *y = vy;
	uint8_t L[EDGEQ_QK_K];
	int ret = 0;

	if (n % EDGEQ_QK_K)
		return -EINVAL;
	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++, x += EDGEQ_QK_K) {
		uint8_t *q = y[i].qs;

		memset(&y[i], 0, sizeof(y[i]));
		if (!all_finite(x, EDGEQ_QK_K)) {
			ret = -EDOM;
			continue;
		}
		k4_quantize(x, 15, -1.f, 20, y[i].scales, &y[i].d, &y[i].dmin,
			    L);
		for (int j = 0; j < EDGEQ_QK_K; j += 64) {
			for (int l = 0; l < 32; l++)
				q[l] = L[j + l] | (L[j + l + 32] << 4);
			q += 32;
		}
	}
	return ret;
}

/* ---- Q6_K ---- */

/* ggml's make_qx_quants with rmse_type 1 and no importance weights. */
static float make_qx_quants(int n, int nmax, const float *x, int8_t *L)
{
	float max, amax = abs_max(x, n, &max), iscale, sumlx = 0, suml2 = 0,
		   scale, best;

	if (amax < GROUP_MAX_EPS) {
		memset(L, 0, n);
		return 0.f;
	}
	iscale = -nmax / max;
	for (int i = 0; i < n; i++) {
		int l = nearest_int(iscale * x[i]);
		float w = x[i] * x[i];

		l = imax(-nmax, imin(nmax - 1, l));
		L[i] = (int8_t)(l + nmax);
		sumlx += w * x[i] * l;
		suml2 += w * l * l;
	}
	scale = suml2 ? sumlx / suml2 : 0.0f;
	best = scale * sumlx;
	for (int is = -9; is <= 9; is++) {
		if (is == 0)
			continue;
		iscale = -(nmax + 0.1f * is) / max;
		sumlx = suml2 = 0;
		for (int i = 0; i < n; i++) {
			int l = nearest_int(iscale * x[i]);
			float w = x[i] * x[i];

			l = imax(-nmax, imin(nmax - 1, l));
			sumlx += w * x[i] * l;
			suml2 += w * l * l;
		}
		if (suml2 > 0 && sumlx * sumlx > best * suml2) {
			for (int i = 0; i < n; i++) {
				int l = nearest_int(iscale * x[i]);

				L[i] = (int8_t)(nmax +
						imax(-nmax, imin(nmax - 1, l)));
			}
			scale = sumlx / suml2;
			best = scale * sumlx;
		}
	}
	return scale;
}

static void q6_K_to_float(const void *vx, float *y, int64_t n)
{
	const struct edgeq_block_q6_K *x = vx;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		float d = edgeq_fp16_to_fp32(x[i].d);
		const uint8_t *ql = x[i].ql, *qh = x[i].qh;
		const int8_t *sc = x[i].scales;

		for (int k = 0; k < EDGEQ_QK_K; k += 128) {
			for (int l = 0; l < 32; l++) {
				int is = l / 16;
				int q1 = ((ql[l] & 0xF) |
					  (((qh[l] >> 0) & 3) << 4)) -
					 32;
				int q2 = ((ql[l + 32] & 0xF) |
					  (((qh[l] >> 2) & 3) << 4)) -
					 32;
				int q3 = ((ql[l] >> 4) |
					  (((qh[l] >> 4) & 3) << 4)) -
					 32;
				int q4 = ((ql[l + 32] >> 4) |
					  (((qh[l] >> 6) & 3) << 4)) -
					 32;

				y[l + 0] = d * sc[is + 0] * q1;
				y[l + 32] = d * sc[is + 2] * q2;
				y[l + 64] = d * sc[is + 4] * q3;
				y[l + 96] = d * sc[is + 6] * q4;
			}
			y += 128;
			ql += 64;
			qh += 32;
			sc += 8;
		}
	}
}

static int q6_K_from_float(const float *x, void *vy, int64_t n)
{
	struct edgeq_block_q6_K *y = vy;
	int8_t L[EDGEQ_QK_K];
	float scales[EDGEQ_QK_K / 16];
	int ret = 0;

	if (n % EDGEQ_QK_K)
		return -EINVAL;
	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++, x += EDGEQ_QK_K) {
		float max_scale = 0, max_abs_scale = 0, iscale;
		uint8_t *ql, *qh;

		memset(&y[i], 0, sizeof(y[i]));
		if (!all_finite(x, EDGEQ_QK_K)) {
			ret = -EDOM;
			continue;
		}
		for (int ib = 0; ib < EDGEQ_QK_K / 16; ib++) {
			float scale = make_qx_quants(16, 32, x + 16 * ib,
						     L + 16 * ib);

			scales[ib] = scale;
			if (fabsf(scale) > max_abs_scale) {
				max_abs_scale = fabsf(scale);
				max_scale = scale;
			}
		}
		if (max_abs_scale < GROUP_MAX_EPS)
			continue; /* all zero */
		iscale = -128.f / max_scale;
		y[i].d = edgeq_fp32_to_fp16(1 / iscale);
		for (int ib = 0; ib < EDGEQ_QK_K / 16; ib++)
			y[i].scales[ib] = (int8_t)imin(
				127, nearest_int(iscale * scales[ib]));
		for (int j = 0; j < EDGEQ_QK_K / 16; j++) {
			float d = edgeq_fp16_to_fp32(y[i].d) * y[i].scales[j];

			if (!d)
				continue;
			for (int ii = 0; ii < 16; ii++) {
				int l = nearest_int(x[16 * j + ii] / d);

				L[16 * j + ii] =
					(int8_t)(imax(-32, imin(31, l)) + 32);
			}
		}
		ql = y[i].ql;
		qh = y[i].qh;
		for (int j = 0; j < EDGEQ_QK_K; j += 128) {
			for (int l = 0; l < 32; l++) {
				uint8_t q1 = L[j + l + 0] & 0xF;
				uint8_t q2 = L[j + l + 32] & 0xF;
				uint8_t q3 = L[j + l + 64] & 0xF;
				uint8_t q4 = L[j + l + 96] & 0xF;

				ql[l + 0] = q1 | (q3 << 4);
				ql[l + 32] = q2 | (q4 << 4);
				qh[l] = (L[j + l] >> 4) |
					((L[j + l + 32] >> 4) << 2) |
					((L[j + l + 64] >> 4) << 4) |
					((L[j + l + 96] >> 4) << 6);
			}
			ql += 64;
			qh += 32;
		}
	}
	return ret;
}

/* ---- Q4_1, Q5_0, Q5_1: ggml's quantize_row_*_ref ---- */

static void q4_1_to_float(const void *vx, float *y, int64_t n)
{
	const struct edgeq_block_q4_1 *x = vx;

	for (int64_t i = 0; i < n / EDGEQ_QK4_1; i++, y += EDGEQ_QK4_1) {
		float d = edgeq_fp16_to_fp32(x[i].d);
		float m = edgeq_fp16_to_fp32(x[i].m);

		for (int j = 0; j < EDGEQ_QK4_1 / 2; j++) {
			y[j] = (x[i].qs[j] & 0xf) * d + m;
			y[j + 16] = (x[i].qs[j] >> 4) * d + m;
		}
	}
}

/* min and max of a block (ggml's affine types) */
static void block_min_max(const float *x, int n, float *min, float *max)
{
	*min = FLT_MAX;
	*max = -FLT_MAX;
	for (int j = 0; j < n; j++) {
		if (x[j] < *min)
			*min = x[j];
		if (x[j] > *max)
			*max = x[j];
	}
}

static int q4_1_from_float(const float *x, void *vy, int64_t n)
{
	struct edgeq_block_q4_1 *y = vy;
	int ret = 0;

	if (n % EDGEQ_QK4_1)
		return -EINVAL;
	for (int64_t i = 0; i < n / EDGEQ_QK4_1; i++, x += EDGEQ_QK4_1) {
		float min, max, d, id;

		if (!all_finite(x, EDGEQ_QK4_1)) {
			memset(&y[i], 0, sizeof(y[i]));
			ret = -EDOM;
			continue;
		}
		block_min_max(x, EDGEQ_QK4_1, &min, &max);
		d = (max - min) / 15;
		id = d ? 1.0f / d : 0.0f;
		y[i].d = edgeq_fp32_to_fp16(d);
		y[i].m = edgeq_fp32_to_fp16(min);
		for (int j = 0; j < EDGEQ_QK4_1 / 2; j++) {
			int x0 = imin(15, (int8_t)((x[j] - min) * id + 0.5f));
			int x1 = imin(15,
				      (int8_t)((x[j + 16] - min) * id + 0.5f));

			y[i].qs[j] = (uint8_t)(x0 | (x1 << 4));
		}
	}
	return ret;
}

/* the 32 five-bit values of a Q5_0/Q5_1 block */
static void q5_values(const uint8_t *qs, const uint8_t *qhb, int q[32])
{
	uint32_t qh = edgeq_q5_qh(qhb);

	for (int j = 0; j < 16; j++) {
		q[j] = (qs[j] & 0xf) | (((qh >> j) << 4) & 0x10);
		q[j + 16] = (qs[j] >> 4) | ((qh >> (j + 12)) & 0x10);
	}
}

static void q5_pack(const int L[32], uint8_t *qs, uint8_t *qhb)
{
	uint32_t qh = 0;

	for (int j = 0; j < 16; j++) {
		qs[j] = (uint8_t)((L[j] & 0xf) | ((L[j + 16] & 0xf) << 4));
		qh |= (uint32_t)((L[j] & 0x10) >> 4) << j;
		qh |= (uint32_t)((L[j + 16] & 0x10) >> 4) << (j + 16);
	}
	memcpy(qhb, &qh, 4);
}

static void q5_0_to_float(const void *vx, float *y, int64_t n)
{
	const struct edgeq_block_q5_0 *x = vx;

	for (int64_t i = 0; i < n / EDGEQ_QK5_0; i++, y += EDGEQ_QK5_0) {
		float d = edgeq_fp16_to_fp32(x[i].d);
		int q[32];

		q5_values(x[i].qs, x[i].qh, q);
		for (int j = 0; j < 32; j++)
			y[j] = (q[j] - 16) * d;
	}
}

static int q5_0_from_float(const float *x, void *vy, int64_t n)
{
	struct edgeq_block_q5_0 *y = vy;
	int ret = 0;

	if (n % EDGEQ_QK5_0)
		return -EINVAL;
	for (int64_t i = 0; i < n / EDGEQ_QK5_0; i++, x += EDGEQ_QK5_0) {
		float max, d, id;
		int L[32];

		if (!all_finite(x, EDGEQ_QK5_0)) {
			memset(&y[i], 0, sizeof(y[i]));
			ret = -EDOM;
			continue;
		}
		abs_max(x, 32, &max);
		d = max / -16;
		id = d ? 1.0f / d : 0.0f;
		y[i].d = edgeq_fp32_to_fp16(d);
		for (int j = 0; j < 32; j++)
			L[j] = imin(31, (int8_t)(x[j] * id + 16.5f));
		q5_pack(L, y[i].qs, y[i].qh);
	}
	return ret;
}

static void q5_1_to_float(const void *vx, float *y, int64_t n)
{
	const struct edgeq_block_q5_1 *x = vx;

	for (int64_t i = 0; i < n / EDGEQ_QK5_1; i++, y += EDGEQ_QK5_1) {
		float d = edgeq_fp16_to_fp32(x[i].d);
		float m = edgeq_fp16_to_fp32(x[i].m);
		int q[32];

		q5_values(x[i].qs, x[i].qh, q);
		for (int j = 0; j < 32; j++)
			y[j] = q[j] * d + m;
	}
}

static int q5_1_from_float(const float *x, void *vy, int64_t n)
{
	struct edgeq_block_q5_1 *y = vy;
	int ret = 0;

	if (n % EDGEQ_QK5_1)
		return -EINVAL;
	for (int64_t i = 0; i < n / EDGEQ_QK5_1; i++, x += EDGEQ_QK5_1) {
		float min, max, d, id;
		int L[32];

		if (!all_finite(x, EDGEQ_QK5_1)) {
			memset(&y[i], 0, sizeof(y[i]));
			ret = -EDOM;
			continue;
		}
		block_min_max(x, EDGEQ_QK5_1, &min, &max);
		d = (max - min) / 31;
		id = d ? 1.0f / d : 0.0f;
		y[i].d = edgeq_fp32_to_fp16(d);
		y[i].m = edgeq_fp32_to_fp16(min);
		for (int j = 0; j < 32; j++)
			L[j] = (uint8_t)((x[j] - min) * id + 0.5f);
		q5_pack(L, y[i].qs, y[i].qh);
	}
	return ret;
}

/* ---- IQ4_NL and IQ4_XS: ggml's quantize_row_iq4_nl_impl ---- */

const int8_t edgeq_kvalues_iq4nl[16] = { -127, -104, -83, -65, -49, -35,
					 -22,  -10,  1,	  13,  25,  38,
					 53,   69,   89,  113 };

/* the index of the value nearest to x (ggml's best_index_int8) */
static int best_index_iq4(float x)
{
	const int8_t *val = edgeq_kvalues_iq4nl;
	int ml = 0, mu = 15;

	if (x <= val[0])
		return 0;
	if (x >= val[15])
		return 15;
	while (mu - ml > 1) {
		int mav = (ml + mu) / 2;

		if (x < val[mav])
			mu = mav;
		else
			ml = mav;
	}
	return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

/* the best scale of one 32-element sub-block (weights x^2, 2 ntry + 1
 * trial scales around the extreme); L gets its indices */
static float iq4_block_scale(const float *xb, uint8_t *Lb, int ntry)
{
	const int8_t *values = edgeq_kvalues_iq4nl;
	float max, amax = abs_max(xb, 32, &max), d, id, sumqx = 0, sumq2 = 0,
		   best;

	if (amax < GROUP_MAX_EPS)
		return 0;
	d = ntry > 0 ? -max / values[0] : max / values[0];
	id = 1 / d;
	for (int j = 0; j < 32; j++) {
		int l = best_index_iq4(id * xb[j]);
		float q = values[l], w = xb[j] * xb[j];

		Lb[j] = (uint8_t)l;
		sumqx += w * q * xb[j];
		sumq2 += w * q * q;
	}
	d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
	best = d * sumqx;
	for (int itry = -ntry; itry <= ntry; itry++) {
		id = (itry + values[0]) / max;
		sumqx = sumq2 = 0;
		for (int j = 0; j < 32; j++) {
			float q = values[best_index_iq4(id * xb[j])];
			float w = xb[j] * xb[j];

			sumqx += w * q * xb[j];
			sumq2 += w * q * q;
		}
		if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
			d = sumqx / sumq2;
			best = d * sumqx;
		}
	}
	return d;
}

static void iq4_pack(const uint8_t *L, uint8_t *q4, int nsub)
{
	for (int i = 0; i < nsub; i++)
		for (int j = 0; j < 16; j++)
			q4[16 * i + j] = (uint8_t)(L[32 * i + j] |
						   (L[32 * i + 16 + j] << 4));
}

#define IQ4_NTRY 7 /* llama-quantize's (quantize_iq4_nl / _xs) */

static void iq4_nl_to_float(const void *vx, float *y, int64_t n)
{
	const struct edgeq_block_iq4_nl *x = vx;

	for (int64_t i = 0; i < n / EDGEQ_QK4_NL; i++, y += EDGEQ_QK4_NL) {
		float d = edgeq_fp16_to_fp32(x[i].d);

		for (int j = 0; j < 16; j++) {
			y[j] = d * edgeq_kvalues_iq4nl[x[i].qs[j] & 0xf];
			y[j + 16] = d * edgeq_kvalues_iq4nl[x[i].qs[j] >> 4];
		}
	}
}

static int iq4_nl_from_float(const float *x, void *vy, int64_t n)
{
	struct edgeq_block_iq4_nl *y = vy;
	int ret = 0;

	if (n % EDGEQ_QK4_NL)
		return -EINVAL;
	for (int64_t i = 0; i < n / EDGEQ_QK4_NL; i++, x += EDGEQ_QK4_NL) {
		uint8_t L[32];
		float d, id;

		memset(&y[i], 0, sizeof(y[i]));
		if (!all_finite(x, EDGEQ_QK4_NL)) {
			ret = -EDOM;
			continue;
		}
		d = iq4_block_scale(x, L, IQ4_NTRY);
		y[i].d = edgeq_fp32_to_fp16(d);
		id = d ? 1 / d : 0;
		for (int j = 0; j < 32; j++)
			L[j] = (uint8_t)best_index_iq4(id * x[j]);
		iq4_pack(L, y[i].qs, 1);
	}
	return ret;
}

static void iq4_xs_to_float(const void *vx, float *y, int64_t n)
{
	const struct edgeq_block_iq4_xs *x = vx;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		float d = edgeq_fp16_to_fp32(x[i].d);
		const uint8_t *qs = x[i].qs;
		int8_t ls[8];

		edgeq_iq4_xs_scales(&x[i], ls);
		for (int ib = 0; ib < 8; ib++, y += 32, qs += 16) {
			float dl = d * ls[ib];

			for (int j = 0; j < 16; j++) {
				y[j] = dl * edgeq_kvalues_iq4nl[qs[j] & 0xf];
				y[j + 16] =
					dl * edgeq_kvalues_iq4nl[qs[j] >> 4];
			}
		}
	}
}

static int iq4_xs_from_float(const float *x, void *vy, int64_t n)
{
	struct edgeq_block_iq4_xs *y = vy;
	int ret = 0;

	if (n % EDGEQ_QK_K)
		return -EINVAL;
	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++, x += EDGEQ_QK_K) {
		float scales[8], max_scale = 0, amax_scale = 0, d, id;
		uint8_t L[EDGEQ_QK_K];

		memset(&y[i], 0, sizeof(y[i]));
		if (!all_finite(x, EDGEQ_QK_K)) {
			ret = -EDOM;
			continue;
		}
		for (int ib = 0; ib < 8; ib++) {
			scales[ib] = iq4_block_scale(x + 32 * ib, L + 32 * ib,
						     IQ4_NTRY);
			if (fabsf(scales[ib]) > amax_scale) {
				amax_scale = fabsf(scales[ib]);
				max_scale = scales[ib];
			}
		}
		d = -max_scale / 32;
		y[i].d = edgeq_fp32_to_fp16(d);
		id = d ? 1 / d : 0.f;
		for (int ib = 0; ib < 8; ib++) {
			int l = imax(-32,
				     imin(31, nearest_int(id * scales[ib])));
			float dl = d * l, idl = dl ? 1 / dl : 0.f;

			for (int j = 0; j < 32; j++)
				L[32 * ib + j] = (uint8_t)best_index_iq4(
					idl * x[32 * ib + j]);
			l += 32;
			if (ib % 2 == 0)
				y[i].scales_l[ib / 2] = (uint8_t)(l & 0xf);
			else
				y[i].scales_l[ib / 2] |=
					(uint8_t)((l & 0xf) << 4);
			y[i].scales_h |= (uint16_t)((l >> 4) << 2 * ib);
		}
		iq4_pack(L, y[i].qs, 8);
	}
	return ret;
}

/* ---- Q2_K, Q3_K, Q5_K: ggml's quantize_row_*_ref ---- */

/* element order of Q2_K/Q3_K: bits 2j of qs[32 n + l'] hold elements
 * 128 n + 32 j + l' (l' < 32) */
static void q2_pack(const uint8_t *L, uint8_t *qs)
{
	for (int j = 0; j < EDGEQ_QK_K; j += 128)
		for (int l = 0; l < 32; l++)
			qs[j / 4 + l] =
				(uint8_t)(L[j + l] | (L[j + l + 32] << 2) |
					  (L[j + l + 64] << 4) |
					  (L[j + l + 96] << 6));
}

static void q2_K_to_float(const void *vx, float *y, int64_t n)
{
	const struct edgeq_block_q2_K *x = vx;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		float d = edgeq_fp16_to_fp32(x[i].d);
		float min = edgeq_fp16_to_fp32(x[i].dmin);
		const uint8_t *q = x[i].qs;
		int is = 0;

		for (int k = 0; k < EDGEQ_QK_K; k += 128, q += 32)
			for (int shift = 0; shift < 8; shift += 2)
				for (int h = 0; h < 2; h++) {
					uint8_t sc = x[i].scales[is++];
					float dl = d * (sc & 0xf),
					      ml = min * (sc >> 4);

					for (int l = 0; l < 16; l++)
						*y++ = dl * ((q[16 * h + l] >>
							      shift) &
							     3) -
						       ml;
				}
	}
}

static int q2_K_from_float(const float *x, void *vy, int64_t n)
{
	struct edgeq_block_q2_K *y = vy;
	uint8_t L[EDGEQ_QK_K], Laux[16];
	float weights[16], mins[16], scales[16];
	int ret = 0;

	if (n % EDGEQ_QK_K)
		return -EINVAL;
	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++, x += EDGEQ_QK_K) {
		float max_scale = 0, max_min = 0;

		memset(&y[i], 0, sizeof(y[i]));
		if (!all_finite(x, EDGEQ_QK_K)) {
			ret = -EDOM;
			continue;
		}
		for (int j = 0; j < 16; j++) {
			for (int l = 0; l < 16; l++)
				weights[l] = fabsf(x[16 * j + l]);
			scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights,
						     L + 16 * j, &mins[j], Laux,
						     -0.5f, 0.1f, 15, true);
			if (scales[j] > max_scale)
				max_scale = scales[j];
			if (mins[j] > max_min)
				max_min = mins[j];
		}
		if (max_scale > 0) {
			float iscale = 15.f / max_scale;

			for (int j = 0; j < 16; j++)
				y[i].scales[j] = (uint8_t)nearest_int(
					iscale * scales[j]);
			y[i].d = edgeq_fp32_to_fp16(max_scale / 15.f);
		}
		if (max_min > 0) {
			float iscale = 15.f / max_min;

			for (int j = 0; j < 16; j++)
				y[i].scales[j] |=
					(uint8_t)(nearest_int(iscale * mins[j])
						  << 4);
			y[i].dmin = edgeq_fp32_to_fp16(max_min / 15.f);
		}
		for (int j = 0; j < 16; j++) {
			float d = edgeq_fp16_to_fp32(y[i].d) *
				  (y[i].scales[j] & 0xf),
			      dm;

			if (!d)
				continue;
			dm = edgeq_fp16_to_fp32(y[i].dmin) *
			     (y[i].scales[j] >> 4);
			for (int ii = 0; ii < 16; ii++) {
				int l = nearest_int((x[16 * j + ii] + dm) / d);

				L[16 * j + ii] = (uint8_t)imax(0, imin(3, l));
			}
		}
		q2_pack(L, y[i].qs);
	}
	return ret;
}

static void q3_K_to_float(const void *vx, float *y, int64_t n)
{
	const struct edgeq_block_q3_K *x = vx;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		float d_all = edgeq_fp16_to_fp32(x[i].d);
		const uint8_t *q = x[i].qs, *hm = x[i].hmask;
		int8_t sc[16];
		uint8_t m = 1;
		int is = 0;

		edgeq_q3_K_scales(x[i].scales, sc);
		for (int k = 0; k < EDGEQ_QK_K; k += 128, q += 32)
			for (int shift = 0; shift < 8; shift += 2, m <<= 1)
				for (int h = 0; h < 2; h++) {
					float dl = d_all * sc[is++];

					for (int l = 0; l < 16; l++)
						*y++ = dl *
						       (((q[16 * h + l] >>
							  shift) &
							 3) -
							((hm[16 * h + l] & m) ?
								 0 :
								 4));
				}
	}
}

/* ggml's make_q3_quants with do_rmse: L in 0..2 nmax - 1 */
static float make_q3_quants(int n, int nmax, const float *x, int8_t *L)
{
	float max, amax = abs_max(x, n, &max), iscale, sumlx = 0, suml2 = 0;

	if (amax < GROUP_MAX_EPS) {
		memset(L, 0, n);
		return 0.f;
	}
	iscale = -nmax / max;
	for (int i = 0; i < n; i++) {
		int l = imax(-nmax, imin(nmax - 1, nearest_int(iscale * x[i])));
		float w = x[i] * x[i];

		L[i] = (int8_t)l;
		sumlx += w * x[i] * l;
		suml2 += w * l * l;
	}
	for (int itry = 0; itry < 5; itry++) {
		int n_changed = 0;

		for (int i = 0; i < n; i++) {
			float w = x[i] * x[i];
			float slx = sumlx - w * x[i] * L[i];

			if (slx > 0) {
				float sl2 = suml2 - w * L[i] * L[i];
				int new_l = nearest_int(x[i] * sl2 / slx);

				new_l = imax(-nmax, imin(nmax - 1, new_l));
				if (new_l != L[i]) {
					slx += w * x[i] * new_l;
					sl2 += w * new_l * new_l;
					if (sl2 > 0 &&
					    slx * slx * suml2 >
						    sumlx * sumlx * sl2) {
						L[i] = (int8_t)new_l;
						sumlx = slx;
						suml2 = sl2;
						n_changed++;
					}
				}
			}
		}
		if (!n_changed)
			break;
	}
	for (int i = 0; i < n; i++)
		L[i] = (int8_t)(L[i] + nmax);
	return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

static int q3_K_from_float(const float *x, void *vy, int64_t n)
{
	struct edgeq_block_q3_K *y = vy;
	int8_t L[EDGEQ_QK_K];
	float scales[16];
	int ret = 0;

	if (n % EDGEQ_QK_K)
		return -EINVAL;
	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++, x += EDGEQ_QK_K) {
		float max_scale = 0, amax = 0;
		int8_t sc[16];
		uint8_t hm = 1;
		int m = 0;

		memset(&y[i], 0, sizeof(y[i]));
		if (!all_finite(x, EDGEQ_QK_K)) {
			ret = -EDOM;
			continue;
		}
		for (int j = 0; j < 16; j++) {
			scales[j] =
				make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
			if (fabsf(scales[j]) > amax) {
				amax = fabsf(scales[j]);
				max_scale = scales[j];
			}
		}
		if (max_scale) {
			float iscale = -32.f / max_scale;

			for (int j = 0; j < 16; j++) {
				int l = imax(-32,
					     imin(31, (int8_t)nearest_int(
							      iscale *
							      scales[j]))) +
					32;

				if (j < 8)
					y[i].scales[j] = (uint8_t)(l & 0xf);
				else
					y[i].scales[j - 8] |=
						(uint8_t)((l & 0xf) << 4);
				y[i].scales[j % 4 + 8] |=
					(uint8_t)((l >> 4) << (2 * (j / 4)));
			}
			y[i].d = edgeq_fp32_to_fp16(1 / iscale);
		}
		edgeq_q3_K_scales(y[i].scales, sc);
		for (int j = 0; j < 16; j++) {
			float d = edgeq_fp16_to_fp32(y[i].d) * sc[j];

			if (!d)
				continue;
			for (int ii = 0; ii < 16; ii++) {
				int l = nearest_int(x[16 * j + ii] / d);

				L[16 * j + ii] =
					(int8_t)(imax(-4, imin(3, l)) + 4);
			}
		}
		for (int j = 0; j < EDGEQ_QK_K; j++) {
			if (L[j] > 3) {
				y[i].hmask[m] |= hm;
				L[j] -= 4;
			}
			if (++m == EDGEQ_QK_K / 8) {
				m = 0;
				hm <<= 1;
			}
		}
		q2_pack((const uint8_t *)L, y[i].qs);
	}
	return ret;
}

static void q5_K_to_float(const void *vx, float *y, int64_t n)
{
	const struct edgeq_block_q5_K *x = vx;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++, y += EDGEQ_QK_K)
		k4_to_float(x[i].d, x[i].dmin, x[i].scales, x[i].qs, x[i].qh,
			    y);
}

static int q5_K_from_float(const float *x, void *vy, int64_t n)
{
	struct edgeq_block_q5_K *y = vy;
	uint8_t L[EDGEQ_QK_K];
	int ret = 0;

	if (n % EDGEQ_QK_K)
		return -EINVAL;
	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++, x += EDGEQ_QK_K) {
		uint8_t *ql = y[i].qs, m1 = 1, m2 = 2;

		memset(&y[i], 0, sizeof(y[i]));
		if (!all_finite(x, EDGEQ_QK_K)) {
			ret = -EDOM;
			continue;
		}
		k4_quantize(x, 31, -0.5f, 15, y[i].scales, &y[i].d, &y[i].dmin,
			    L);
		for (int k = 0; k < EDGEQ_QK_K; k += 64) {
			for (int j = 0; j < 32; j++) {
				int l1 = L[k + j], l2 = L[k + j + 32];

				if (l1 > 15) {
					l1 -= 16;
					y[i].qh[j] |= m1;
				}
				if (l2 > 15) {
					l2 -= 16;
					y[i].qh[j] |= m2;
				}
				ql[j] = (uint8_t)(l1 | (l2 << 4));
			}
			m1 <<= 2;
			m2 <<= 2;
			ql += 32;
		}
	}
	return ret;
}

/* ---- Q8_K (activations only) ---- */

static void q8_K_to_float(const void *vx, float *y, int64_t n)
{
	const struct edgeq_block_q8_K *x = vx;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++)
		for (int j = 0; j < EDGEQ_QK_K; j++)
			y[i * EDGEQ_QK_K + j] = x[i].d * x[i].qs[j];
}

/* ---- activation quantization, shared by every ops table ---- */

static int quantize_act_q8_0(const float *x, struct edgeq_block_q8_0 *y,
			     int64_t n)
{
	int ret = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK8_0; i++, x += EDGEQ_QK8_0) {
		float amax = 0.0f, d, id;

		if (!all_finite(x, EDGEQ_QK8_0)) {
			y[i].d = 0x7e00; /* NaN: the dots it feeds give NaN */
			memset(y[i].qs, 0, sizeof(y[i].qs));
			ret = -EDOM;
			continue;
		}
		for (int j = 0; j < EDGEQ_QK8_0; j++)
			amax = fmaxf(amax, fabsf(x[j]));
		d = amax / 127;
		y[i].d = edgeq_fp32_to_fp16(d);
		/* a scale that is 0 as fp16 zeroes the block in every dot;
		 * its 1/d may be infinite, so write zeros */
		id = y[i].d ? 1.0f / d : 0.0f;
		for (int j = 0; j < EDGEQ_QK8_0; j++)
			y[i].qs[j] = (int8_t)roundf(x[j] * id);
	}
	return ret;
}

static int quantize_act_q8_K(const float *x, struct edgeq_block_q8_K *y,
			     int64_t n)
{
	int ret = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++, x += EDGEQ_QK_K) {
		float max = 0, amax = 0, iscale;

		memset(y[i].qs, 0, sizeof(y[i].qs));
		memset(y[i].bsums, 0, sizeof(y[i].bsums));
		if (!all_finite(x, EDGEQ_QK_K)) {
			y[i].d = NAN;
			ret = -EDOM;
			continue;
		}
		for (int j = 0; j < EDGEQ_QK_K; j++) {
			if (fabsf(x[j]) > amax) {
				amax = fabsf(x[j]);
				max = x[j];
			}
		}
		if (!amax) {
			y[i].d = 0;
			continue;
		}
		iscale = -127.f / max;
		if (!isfinite(iscale)) { /* |max| < 2^-120: d = 0 */
			y[i].d = 0;
			continue;
		}
		for (int j = 0; j < EDGEQ_QK_K; j++)
			y[i].qs[j] =
				(int8_t)imin(127, nearest_int(iscale * x[j]));
		for (int j = 0; j < EDGEQ_QK_K / 16; j++) {
			int sum = 0;

			for (int ii = 0; ii < 16; ii++)
				sum += y[i].qs[j * 16 + ii];
			y[i].bsums[j] = (int16_t)sum;
		}
		y[i].d = 1 / iscale;
	}
	return ret;
}

int edgeq_quantize_act_ref(enum edgeq_type vdt, const float *x, void *y,
			   int64_t n)
{
	switch (vdt) {
	case EDGEQ_TYPE_F32:
		memcpy(y, x, n * sizeof(float));
		for (int64_t i = 0; i < n; i++)
			if (!isfinite(x[i]))
				return -EDOM;
		return 0;
	case EDGEQ_TYPE_Q8_0:
		if (n % EDGEQ_QK8_0)
			return -EINVAL;
		return quantize_act_q8_0(x, y, n);
	case EDGEQ_TYPE_Q8_K:
		if (n % EDGEQ_QK_K)
			return -EINVAL;
		return quantize_act_q8_K(x, y, n);
	default:
		return -EINVAL;
	}
}

int edgeq_quantize_act_with(
	enum edgeq_type vdt, const float *x, void *y, int64_t n,
	int (*q8_0)(const float *x, struct edgeq_block_q8_0 *y, int64_t n),
	int (*q8_K)(const float *x, struct edgeq_block_q8_K *y, int64_t n))
{
	if (vdt == EDGEQ_TYPE_Q8_0 && n % EDGEQ_QK8_0 == 0)
		return q8_0(x, y, n);
	if (vdt == EDGEQ_TYPE_Q8_K && n % EDGEQ_QK_K == 0)
		return q8_K(x, y, n);
	return edgeq_quantize_act_ref(vdt, x, y, n);
}

static int q8_K_from_float(const float *x, void *y, int64_t n)
{
	return edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_K, x, y, n);
}

/* ---- traits ---- */

#define TRAITS(t, bs, ts, vdt, q, w, tof, fromf)               \
	[EDGEQ_TYPE_##t] = { .name = #t,                       \
			     .type = EDGEQ_TYPE_##t,           \
			     .blck_size = bs,                  \
			     .type_size = ts,                  \
			     .vec_dot_type = EDGEQ_TYPE_##vdt, \
			     .is_quantized = q,                \
			     .weight = w,                      \
			     .to_float = tof,                  \
			     .from_float = fromf }

static const struct edgeq_type_traits traits[EDGEQ_TYPE_COUNT] = {
	TRAITS(F32, 1, 4, F32, false, true, f32_to_float, f32_from_float),
	TRAITS(F16, 1, 2, F32, false, true, f16_to_float, f16_from_float),
	TRAITS(BF16, 1, 2, F32, false, true, bf16_to_float, bf16_from_float),
	TRAITS(Q8_0, 32, 34, Q8_0, true, true, q8_0_to_float, q8_0_from_float),
	TRAITS(Q4_0, 32, 18, Q8_0, true, true, q4_0_to_float, q4_0_from_float),
	TRAITS(Q4_K, 256, 144, Q8_K, true, true, q4_K_to_float,
	       q4_K_from_float),
	TRAITS(Q6_K, 256, 210, Q8_K, true, true, q6_K_to_float,
	       q6_K_from_float),
	TRAITS(Q4_1, 32, 20, Q8_0, true, true, q4_1_to_float, q4_1_from_float),
	TRAITS(Q5_0, 32, 22, Q8_0, true, true, q5_0_to_float, q5_0_from_float),
	TRAITS(Q5_1, 32, 24, Q8_0, true, true, q5_1_to_float, q5_1_from_float),
	TRAITS(IQ4_NL, 32, 18, Q8_0, true, true, iq4_nl_to_float,
	       iq4_nl_from_float),
	TRAITS(Q2_K, 256, 84, Q8_K, true, true, q2_K_to_float, q2_K_from_float),
	TRAITS(Q3_K, 256, 110, Q8_K, true, true, q3_K_to_float,
	       q3_K_from_float),
	TRAITS(Q5_K, 256, 176, Q8_K, true, true, q5_K_to_float,
	       q5_K_from_float),
	TRAITS(IQ4_XS, 256, 136, Q8_K, true, true, iq4_xs_to_float,
	       iq4_xs_from_float),
	TRAITS(Q8_K, 256, 292, Q8_K, true, false, q8_K_to_float,
	       q8_K_from_float),
};

/* Every GGUF type id up to the ones edgeq knows, for refusal messages. */
static const char *const gguf_names[] = {
	[0] = "F32",	  [1] = "F16",	   [2] = "Q4_0",     [3] = "Q4_1",
	[6] = "Q5_0",	  [7] = "Q5_1",	   [8] = "Q8_0",     [9] = "Q8_1",
	[10] = "Q2_K",	  [11] = "Q3_K",   [12] = "Q4_K",    [13] = "Q5_K",
	[14] = "Q6_K",	  [15] = "Q8_K",   [16] = "IQ2_XXS", [17] = "IQ2_XS",
	[18] = "IQ3_XXS", [19] = "IQ1_S",  [20] = "IQ4_NL",  [21] = "IQ3_S",
	[22] = "IQ2_S",	  [23] = "IQ4_XS", [24] = "I8",	     [25] = "I16",
	[26] = "I32",	  [27] = "I64",	   [28] = "F64",     [29] = "IQ1_M",
	[30] = "BF16",	  [34] = "TQ1_0",  [35] = "TQ2_0",   [39] = "MXFP4",
};

const struct edgeq_type_traits *edgeq_type_traits(uint32_t type)
{
	if (type >= EDGEQ_TYPE_COUNT || !traits[type].name)
		return NULL;
	return &traits[type];
}

const char *edgeq_type_name(uint32_t type)
{
	if (type < sizeof(gguf_names) / sizeof(gguf_names[0]) &&
	    gguf_names[type])
		return gguf_names[type];
	return "unknown";
}

int edgeq_type_from_name(const char *name, enum edgeq_type *type)
{
	for (uint32_t t = 0; t < sizeof(gguf_names) / sizeof(gguf_names[0]);
	     t++) {
		if (!gguf_names[t] || strcasecmp(gguf_names[t], name))
			continue;
		*type = (enum edgeq_type)t;
		return edgeq_type_traits(t) ? 0 : -EOPNOTSUPP;
	}
	return -ENOENT;
}

size_t edgeq_row_size(uint32_t type, int64_t n)
{
	const struct edgeq_type_traits *tt = edgeq_type_traits(type);

	if (!tt || n < 0 || n % tt->blck_size)
		return 0;
	if ((uint64_t)(n / tt->blck_size) > SIZE_MAX / tt->type_size)
		return 0;
	return (size_t)(n / tt->blck_size) * tt->type_size;
}
