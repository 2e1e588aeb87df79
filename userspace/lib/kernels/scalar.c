// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The scalar reference kernels: the definition of the canonical reduction
 * order every ISA reproduces bit for bit, and the test oracle.
 *
 *  - Float rows (F32, F16, BF16 weights; F32 activations): 32 float lanes,
 *    element j goes to lane j % 32 with acc = fmaf(w, x, acc). Lanes fold as
 *    v[k] = (l[k] + l[k+8]) + (l[k+16] + l[k+24]), then edgeq_reduce8(v).
 *  - Q8_0 and Q4_0 (x Q8_0 activations): per block i the exact integer dot
 *    isum of its 32 elements (Q4_0 weights q - 8), then one float chain in
 *    block order: acc = fmaf(d, (float)isum, acc) with d = d_w * d_a (exact:
 *    two fp16; |isum| < 2^24, so the conversion is exact too). One float
 *    step per block and output lets the SIMD tables put one output (row or
 *    token) in each vector lane and do the integer work with dot-product
 *    instructions, instead of a float step per 4 elements.
 *  - Q4_K and Q6_K (x Q8_K): per super-block an exact integer sum; one
 *    float chain over super-blocks: acc = fmaf(d_w * d_a, isum, acc) (Q4_K
 *    then acc = fmaf(-(dmin_w * d_a), summins, acc)).
 */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"

static float fold32(const float acc[32])
{
	float v[8];

	for (int k = 0; k < 8; k++)
		v[k] = (acc[k] + acc[k + 8]) + (acc[k + 16] + acc[k + 24]);
	return edgeq_reduce8(v);
}

static float dot_f32(int64_t n, const float *x, const float *y)
{
	float acc[32] = { 0 };

	for (int64_t j = 0; j < n; j++)
		acc[j % 32] = fmaf(x[j], y[j], acc[j % 32]);
	return fold32(acc);
}

static float vec_dot_f32(int64_t n, const void *w, const void *a)
{
	return dot_f32(n, w, a);
}

static float dot_f16(int64_t n, const uint16_t *k, const float *q)
{
	float acc[32] = { 0 };

	for (int64_t j = 0; j < n; j++)
		acc[j % 32] = fmaf(edgeq_fp16_to_fp32(k[j]), q[j], acc[j % 32]);
	return fold32(acc);
}

static float vec_dot_f16(int64_t n, const void *w, const void *a)
{
	return dot_f16(n, w, a);
}

static float vec_dot_bf16(int64_t n, const void *w, const void *a)
{
	const uint16_t *x = w;
	const float *y = a;
	float acc[32] = { 0 };

	for (int64_t j = 0; j < n; j++)
		acc[j % 32] = fmaf(edgeq_bf16_to_fp32(x[j]), y[j], acc[j % 32]);
	return fold32(acc);
}

static float vec_dot_q8_0(int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q8_0 *x = w, *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK8_0; i++) {
		float d =
			edgeq_fp16_to_fp32(x[i].d) * edgeq_fp16_to_fp32(y[i].d);
		int32_t isum = 0;

		for (int k = 0; k < EDGEQ_QK8_0; k++)
			isum += x[i].qs[k] * y[i].qs[k];
		acc = fmaf(d, (float)isum, acc);
	}
	return acc;
}

static float vec_dot_q4_0(int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q4_0 *x = w;
	const struct edgeq_block_q8_0 *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK4_0; i++) {
		float d =
			edgeq_fp16_to_fp32(x[i].d) * edgeq_fp16_to_fp32(y[i].d);
		int32_t isum = 0;

		for (int k = 0; k < EDGEQ_QK4_0 / 2; k++) {
			isum += ((x[i].qs[k] & 0xf) - 8) * y[i].qs[k];
			isum += ((x[i].qs[k] >> 4) - 8) * y[i].qs[k + 16];
		}
		acc = fmaf(d, (float)isum, acc);
	}
	return acc;
}

static float vec_dot_q4_K(int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q4_K *x = w;
	const struct edgeq_block_q8_K *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		const uint8_t *q4 = x[i].qs;
		const int8_t *q8 = y[i].qs;
		int32_t isum = 0, summs = 0;
		float dall = edgeq_fp16_to_fp32(x[i].d) * y[i].d;
		float dmin = edgeq_fp16_to_fp32(x[i].dmin) * y[i].d;

		for (int j = 0; j < 8; j++) {
			uint8_t sc, m;
			int32_t s = 0;

			edgeq_q4_K_scale_min(j, x[i].scales, &sc, &m);
			for (int l = 0; l < 32; l++) {
				int q = (j & 1) ? (q4[l] >> 4) : (q4[l] & 0xf);

				s += q * q8[l];
			}
			isum += sc * s;
			summs +=
				m * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
			q8 += 32;
			if (j & 1)
				q4 += 32;
		}
		acc = fmaf(dall, (float)isum, acc);
		acc = fmaf(-dmin, (float)summs, acc);
	}
	return acc;
}

static float vec_dot_q6_K(int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q6_K *x = w;
	const struct edgeq_block_q8_K *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		const uint8_t *ql = x[i].ql, *qh = x[i].qh;
		int8_t q6[EDGEQ_QK_K];
		int32_t isum = 0;
		float d = edgeq_fp16_to_fp32(x[i].d) * y[i].d;

		for (int k = 0; k < EDGEQ_QK_K; k += 128) {
			for (int l = 0; l < 32; l++) {
				q6[k + l + 0] =
					(int8_t)(((ql[l] & 0xF) |
						  (((qh[l] >> 0) & 3) << 4)) -
						 32);
				q6[k + l + 32] =
					(int8_t)(((ql[l + 32] & 0xF) |
						  (((qh[l] >> 2) & 3) << 4)) -
						 32);
				q6[k + l + 64] =
					(int8_t)(((ql[l] >> 4) |
						  (((qh[l] >> 4) & 3) << 4)) -
						 32);
				q6[k + l + 96] =
					(int8_t)(((ql[l + 32] >> 4) |
						  (((qh[l] >> 6) & 3) << 4)) -
						 32);
			}
			ql += 64;
			qh += 32;
		}
		for (int g = 0; g < EDGEQ_QK_K / 16; g++) {
			int32_t s = 0;

			for (int l = 0; l < 16; l++)
				s += q6[16 * g + l] * y[i].qs[16 * g + l];
			isum += x[i].scales[g] * s;
		}
		acc = fmaf(d, (float)isum, acc);
	}
	return acc;
}

/*
 * The other 32-element types (x Q8_0), one float step per block as Q4_0:
 * Q5_0 (q - 16) and IQ4_NL (table values) acc = fmaf(d_w * d_a, isum, acc);
 * the affine Q4_1 and Q5_1 then add their min times the activation's exact
 * block sum: acc = fmaf(m_w * d_a, (float)asum, acc) (m_w * d_a is exact,
 * two fp16; |asum| <= 32 * 127).
 */
static int32_t act_sum_q8_0(const struct edgeq_block_q8_0 *y)
{
	int32_t s = 0;

	for (int k = 0; k < EDGEQ_QK8_0; k++)
		s += y->qs[k];
	return s;
}

static float vec_dot_q4_1(int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q4_1 *x = w;
	const struct edgeq_block_q8_0 *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK4_1; i++) {
		float da = edgeq_fp16_to_fp32(y[i].d);
		int32_t isum = 0;

		for (int k = 0; k < 16; k++) {
			isum += (x[i].qs[k] & 0xf) * y[i].qs[k];
			isum += (x[i].qs[k] >> 4) * y[i].qs[k + 16];
		}
		acc = fmaf(edgeq_fp16_to_fp32(x[i].d) * da, (float)isum, acc);
		acc = fmaf(edgeq_fp16_to_fp32(x[i].m) * da,
			   (float)act_sum_q8_0(&y[i]), acc);
	}
	return acc;
}

static int32_t q5_isum(const uint8_t *qs, const uint8_t *qhb, int off,
		       const int8_t *a)
{
	uint32_t qh = edgeq_q5_qh(qhb);
	int32_t isum = 0;

	for (int k = 0; k < 16; k++) {
		int q0 = (qs[k] & 0xf) | (((qh >> k) & 1) << 4);
		int q1 = (qs[k] >> 4) | (((qh >> (k + 16)) & 1) << 4);

		isum += (q0 - off) * a[k] + (q1 - off) * a[k + 16];
	}
	return isum;
}

static float vec_dot_q5_0(int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q5_0 *x = w;
	const struct edgeq_block_q8_0 *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK5_0; i++)
		acc = fmaf(edgeq_fp16_to_fp32(x[i].d) *
				   edgeq_fp16_to_fp32(y[i].d),
			   (float)q5_isum(x[i].qs, x[i].qh, 16, y[i].qs), acc);
	return acc;
}

static float vec_dot_q5_1(int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q5_1 *x = w;
	const struct edgeq_block_q8_0 *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK5_1; i++) {
		float da = edgeq_fp16_to_fp32(y[i].d);

		acc = fmaf(edgeq_fp16_to_fp32(x[i].d) * da,
			   (float)q5_isum(x[i].qs, x[i].qh, 0, y[i].qs), acc);
		acc = fmaf(edgeq_fp16_to_fp32(x[i].m) * da,
			   (float)act_sum_q8_0(&y[i]), acc);
	}
	return acc;
}

/* the exact dot of 16 IQ4 nibble bytes (32 values) with 32 int8 */
static int32_t iq4_isum(const uint8_t *qs, const int8_t *a)
{
	int32_t isum = 0;

	for (int k = 0; k < 16; k++)
		isum += edgeq_kvalues_iq4nl[qs[k] & 0xf] * a[k] +
			edgeq_kvalues_iq4nl[qs[k] >> 4] * a[k + 16];
	return isum;
}

static float vec_dot_iq4_nl(int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_iq4_nl *x = w;
	const struct edgeq_block_q8_0 *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK4_NL; i++)
		acc = fmaf(edgeq_fp16_to_fp32(x[i].d) *
				   edgeq_fp16_to_fp32(y[i].d),
			   (float)iq4_isum(x[i].qs, y[i].qs), acc);
	return acc;
}

/*
 * The other K-quants (x Q8_K), one exact integer sum per super-block as
 * Q4_K/Q6_K: isum = sum over sub-blocks of scale * (exact sub-block dot);
 * Q3_K and IQ4_XS acc = fmaf(d_w * d_a, isum, acc) (their scales signed:
 * stored - 32); Q2_K and Q5_K as Q4_K, then
 * acc = fmaf(-(dmin_w * d_a), summins, acc), summins = sum of min * the
 * activation's group sums (bsums).
 */
static float vec_dot_q2_K(int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q2_K *x = w;
	const struct edgeq_block_q8_K *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		int32_t isum = 0, summs = 0;

		for (int g = 0; g < 16; g++) {
			/* g = 8 n + 2 j + h */
			const uint8_t *q =
				x[i].qs + 32 * (g / 8) + 16 * (g & 1);
			int shift = 2 * ((g / 2) & 3);
			int32_t s = 0;

			for (int l = 0; l < 16; l++)
				s += ((q[l] >> shift) & 3) *
				     y[i].qs[16 * g + l];
			isum += (x[i].scales[g] & 0xf) * s;
			summs += (x[i].scales[g] >> 4) * y[i].bsums[g];
		}
		acc = fmaf(edgeq_fp16_to_fp32(x[i].d) * y[i].d, (float)isum,
			   acc);
		acc = fmaf(-(edgeq_fp16_to_fp32(x[i].dmin) * y[i].d),
			   (float)summs, acc);
	}
	return acc;
}

static float vec_dot_q3_K(int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q3_K *x = w;
	const struct edgeq_block_q8_K *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		int8_t sc[16];
		int32_t isum = 0;

		edgeq_q3_K_scales(x[i].scales, sc);
		for (int g = 0; g < 16; g++) {
			int nn = g / 8, j = (g / 2) & 3, h = g & 1;
			const uint8_t *q = x[i].qs + 32 * nn + 16 * h;
			const uint8_t *hm = x[i].hmask + 16 * h;
			int32_t s = 0;

			for (int l = 0; l < 16; l++) {
				int v = ((q[l] >> (2 * j)) & 3) -
					((hm[l] >> (4 * nn + j)) & 1 ? 0 : 4);

				s += v * y[i].qs[16 * g + l];
			}
			isum += sc[g] * s;
		}
		acc = fmaf(edgeq_fp16_to_fp32(x[i].d) * y[i].d, (float)isum,
			   acc);
	}
	return acc;
}

static float vec_dot_q5_K(int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_q5_K *x = w;
	const struct edgeq_block_q8_K *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		int32_t isum = 0, summs = 0;

		for (int j = 0; j < 8; j++) {
			const uint8_t *q4 = x[i].qs + 32 * (j / 2);
			const int8_t *q8 = y[i].qs + 32 * j;
			uint8_t sc, m;
			int32_t s = 0;

			edgeq_q4_K_scale_min(j, x[i].scales, &sc, &m);
			for (int l = 0; l < 32; l++) {
				int q = ((j & 1) ? (q4[l] >> 4) :
						   (q4[l] & 0xf)) |
					(((x[i].qh[l] >> j) & 1) << 4);

				s += q * q8[l];
			}
			isum += sc * s;
			summs +=
				m * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
		}
		acc = fmaf(edgeq_fp16_to_fp32(x[i].d) * y[i].d, (float)isum,
			   acc);
		acc = fmaf(-(edgeq_fp16_to_fp32(x[i].dmin) * y[i].d),
			   (float)summs, acc);
	}
	return acc;
}

static float vec_dot_iq4_xs(int64_t n, const void *w, const void *a)
{
	const struct edgeq_block_iq4_xs *x = w;
	const struct edgeq_block_q8_K *y = a;
	float acc = 0;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		int8_t ls[8];
		int32_t isum = 0;

		edgeq_iq4_xs_scales(&x[i], ls);
		for (int ib = 0; ib < 8; ib++)
			isum += ls[ib] *
				iq4_isum(x[i].qs + 16 * ib, y[i].qs + 32 * ib);
		acc = fmaf(edgeq_fp16_to_fp32(x[i].d) * y[i].d, (float)isum,
			   acc);
	}
	return acc;
}

static void axpy_f32(int64_t n, float a, const float *v, float *y)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = fmaf(a, v[i], y[i]);
}

static void axpy_f16(int64_t n, float a, const uint16_t *v, float *y)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = fmaf(a, edgeq_fp16_to_fp32(v[i]), y[i]);
}

static void axpy_q8_0(int64_t n, float a, const void *v, float *y)
{
	const struct edgeq_block_q8_0 *x = v;

	for (int64_t i = 0; i < n / EDGEQ_QK8_0; i++) {
		float s = a * edgeq_fp16_to_fp32(x[i].d);

		for (int j = 0; j < EDGEQ_QK8_0; j++)
			y[i * EDGEQ_QK8_0 + j] = fmaf(s, (float)x[i].qs[j],
						      y[i * EDGEQ_QK8_0 + j]);
	}
}

/*
 * exp(x) with float operations only, so that every ISA (and a SIMD lane of
 * it) gets the same bits: n = rint(x / ln 2) by the 1.5 * 2^23 trick,
 * r = x - n ln 2 in two fma steps (Cody-Waite), a degree-7 Taylor
 * polynomial of e^r by Horner fmas (|r| <= 0.35: truncation < 1e-8
 * relative), then the scale 2^n applied as two exact powers of two so that
 * subnormal results round once. Within ~2 ulp of exp.
 */
float edgeq_expf(float x)
{
	float z, n, r, p, s1, s2;
	int32_t ni, n1;
	uint32_t b1, b2;

	if (isnan(x))
		return x;
	if (x < EDGEQ_EXPF_LO)
		return 0.0f;
	if (x > EDGEQ_EXPF_HI)
		return INFINITY;
	z = x * EDGEQ_EXPF_LOG2E;
	n = (z + EDGEQ_EXPF_SHIFT) - EDGEQ_EXPF_SHIFT;
	r = fmaf(-n, EDGEQ_EXPF_LN2_HI, x);
	r = fmaf(-n, EDGEQ_EXPF_LN2_LO, r);
	p = EDGEQ_EXPF_C7;
	p = fmaf(p, r, EDGEQ_EXPF_C6);
	p = fmaf(p, r, EDGEQ_EXPF_C5);
	p = fmaf(p, r, EDGEQ_EXPF_C4);
	p = fmaf(p, r, EDGEQ_EXPF_C3);
	p = fmaf(p, r, EDGEQ_EXPF_C2);
	p = fmaf(p, r, 1.0f);
	p = fmaf(p, r, 1.0f);
	ni = (int32_t)n;
	n1 = ni >> 1; /* floor(n / 2): both halves stay normal powers */
	b1 = (uint32_t)(n1 + 127) << 23;
	b2 = (uint32_t)(ni - n1 + 127) << 23;
	memcpy(&s1, &b1, sizeof(s1));
	memcpy(&s2, &b2, sizeof(s2));
	return (p * s1) * s2;
}

void edgeq_silu_mul_ref(float *o, const float *x, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		o[i] = o[i] / (1.0f + edgeq_expf(-o[i])) * x[i];
}

void edgeq_gelu_mul_ref(float *o, const float *x, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		float g = o[i];
		float u = 0.7978845608f * (g + 0.044715f * g * g * g);

		o[i] = g / (1.0f + edgeq_expf(-2.0f * u)) * x[i];
	}
}

/* RMSNORM's sum of squares in its fixed order (see kernels.h). */
double edgeq_sumsq_ref(const float *x, int64_t n)
{
	double l[16] = { 0 };
	int64_t i = 0;
	int j, w;

	for (; i + 16 <= n; i += 16)
#pragma GCC unroll 16
		for (j = 0; j < 16; j++)
			l[j] += (double)x[i + j] * x[i + j];
	for (; i < n; i++)
		l[i % 16] += (double)x[i] * x[i];
	for (w = 8; w; w /= 2)
		for (j = 0; j < w; j++)
			l[j] += l[j + w];
	return l[0];
}

/* The attention softmax's fixed order (see kernels.h). */
void edgeq_softmax_ref(float *x, int64_t n)
{
	float mx = -INFINITY, acc[16] = { 0 }, v[8], inv;

	for (int64_t t = 0; t < n; t++)
		if (x[t] > mx)
			mx = x[t];
	for (int64_t t = 0; t < n; t++) {
		x[t] = edgeq_expf(x[t] - mx);
		acc[t % 16] += x[t];
	}
	for (int k = 0; k < 8; k++)
		v[k] = acc[k] + acc[k + 8];
	inv = 1.0f / edgeq_reduce8(v);
	for (int64_t t = 0; t < n; t++)
		x[t] *= inv;
}

uint64_t edgeq_stream_read_generic(const void *p, size_t bytes)
{
	const uint64_t *q = p;
	uint64_t a = 0, b = 0, c = 0, d = 0;

	for (size_t i = 0; i < bytes / 8; i += 4) {
		a ^= q[i];
		b ^= q[i + 1];
		c ^= q[i + 2];
		d ^= q[i + 3];
	}
	return a ^ b ^ c ^ d;
}

void edgeq_matvec_generic(const struct edgeq_kernel_ops *ops,
			  enum edgeq_type type, const void *w, int64_t n,
			  int64_t row0, int64_t row1, const void *a, float *y)
{
	size_t rs = edgeq_row_size(type, n);
	edgeq_vec_dot_fn dot = ops->vec_dot[type];

	for (int64_t r = row0; r < row1; r++)
		y[r] = dot(n, (const char *)w + r * rs, a);
}

void edgeq_matmul_generic(const struct edgeq_kernel_ops *ops,
			  enum edgeq_type type, const void *w, int64_t n,
			  int64_t row0, int64_t row1, const void *a,
			  size_t a_stride, int64_t nb, float *y, int64_t ldy)
{
	size_t rs = edgeq_row_size(type, n);
	edgeq_vec_dot_fn dot = ops->vec_dot[type];

	for (int64_t r = row0; r < row1; r++)
		for (int64_t b = 0; b < nb; b++)
			y[b * ldy + r] = dot(n, (const char *)w + r * rs,
					     (const char *)a + b * a_stride);
}

static void matvec_scalar(enum edgeq_type type, const void *w, int64_t n,
			  int64_t row0, int64_t row1, const void *a, float *y)
{
	edgeq_matvec_generic(&edgeq_kernel_ops_scalar, type, w, n, row0, row1,
			     a, y);
}

static void matmul_scalar(enum edgeq_type type, const void *w, int64_t n,
			  int64_t row0, int64_t row1, const void *a,
			  size_t a_stride, int64_t nb, float *y, int64_t ldy)
{
	edgeq_matmul_generic(&edgeq_kernel_ops_scalar, type, w, n, row0, row1,
			     a, a_stride, nb, y, ldy);
}

const struct edgeq_kernel_ops edgeq_kernel_ops_scalar = {
	.name = "scalar",
	.vec_dot = {
		[EDGEQ_TYPE_F32] = vec_dot_f32,
		[EDGEQ_TYPE_F16] = vec_dot_f16,
		[EDGEQ_TYPE_BF16] = vec_dot_bf16,
		[EDGEQ_TYPE_Q8_0] = vec_dot_q8_0,
		[EDGEQ_TYPE_Q4_0] = vec_dot_q4_0,
		[EDGEQ_TYPE_Q4_K] = vec_dot_q4_K,
		[EDGEQ_TYPE_Q6_K] = vec_dot_q6_K,
		[EDGEQ_TYPE_Q4_1] = vec_dot_q4_1,
		[EDGEQ_TYPE_Q5_0] = vec_dot_q5_0,
		[EDGEQ_TYPE_Q5_1] = vec_dot_q5_1,
		[EDGEQ_TYPE_IQ4_NL] = vec_dot_iq4_nl,
		[EDGEQ_TYPE_Q2_K] = vec_dot_q2_K,
		[EDGEQ_TYPE_Q3_K] = vec_dot_q3_K,
		[EDGEQ_TYPE_Q5_K] = vec_dot_q5_K,
		[EDGEQ_TYPE_IQ4_XS] = vec_dot_iq4_xs,
	},
	.quantize_act = edgeq_quantize_act_ref,
	.matvec = matvec_scalar,
	.matmul = matmul_scalar,
	.dot_f32 = dot_f32,
	.dot_f16 = dot_f16,
	.axpy_f32 = axpy_f32,
	.axpy_f16 = axpy_f16,
	.axpy_q8_0 = axpy_q8_0,
	.stream_read = edgeq_stream_read_generic,
};
