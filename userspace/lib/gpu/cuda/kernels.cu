// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The CUDA backend's kernels (userspace/lib/gpu/cuda/cuda.c), compiled by
 * nvcc into a fatbin embedded in the library and loaded through the driver
 * API, so nothing links against the CUDA runtime. Each follows the CPU
 * scalar reference's order as the Vulkan shaders do (shaders/*.glsl): the
 * same lanes and fold for F32/F16 rows, one thread per row with exact
 * integer block sums and the float chain in block order for Q8_0/Q4_0
 * (activations quantized to Q8_0 by the CPU's rule first), the double sum
 * of RMSNORM, the CPU's exp for SiLU, round-to-nearest-even F16 stores.
 * CUDA's fmaf() is fused and '/' is IEEE division by default (nvcc
 * -prec-div=true), so these are the CPU's operations, not approximations.
 */
#include <stdint.h>
#include <cuda_fp16.h>

#define QK 32

__device__ static float h2f(uint16_t h)
{
	return __half2float(__ushort_as_half(h));
}

__device__ static uint16_t f2h(float f)
{
	return __half_as_ushort(__float2half_rn(f));
}

__device__ static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

/* Activations (and STORE's Q8_0 cache rows) to Q8_0 blocks (34 bytes: f16
 * scale, 32 int8), as the CPU's quantize_act: d = amax / 127 rounded to
 * f16, q = roundf(x / d); a block with a non-finite element: NaN scale,
 * zero quants. */
extern "C" __global__ void eq_quant_q8_0(const float *x, uint8_t *q,
					 int nblocks)
{
	int b = blockIdx.x * blockDim.x + threadIdx.x;
	float amax = 0.0f, d, id;
	uint16_t dh;

	if (b >= nblocks)
		return;
	x += (size_t)b * QK;
	q += (size_t)b * 34;
	for (int j = 0; j < QK; j++) {
		if (!isfinite(x[j])) {
			q[0] = 0x00;
			q[1] = 0x7e;
			for (j = 0; j < QK; j++)
				q[2 + j] = 0;
			return;
		}
		amax = fmaxf(amax, fabsf(x[j]));
	}
	d = amax / 127.0f;
	dh = f2h(d);
	id = h2f(dh) != 0.0f ? 1.0f / d : 0.0f;
	q[0] = (uint8_t)dh;
	q[1] = (uint8_t)(dh >> 8);
	for (int j = 0; j < QK; j++)
		q[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
}

/* y = W x for Q8_0 (kind 8) or Q4_0 (kind 2) rows, one thread per row. */
extern "C" __global__ void eq_mv_q(const uint8_t *w, const uint8_t *qa,
				   float *y, int rows, int nblocks, int kind)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	size_t bsz = kind == 8 ? 34 : 18;
	const uint8_t *row;
	float acc = 0.0f;

	if (r >= rows)
		return;
	row = w + (size_t)r * nblocks * bsz;
	for (int b = 0; b < nblocks; b++) {
		const uint8_t *wb = row + (size_t)b * bsz, *ab = qa + b * 34;
		int s = 0;

		if (kind == 8) {
			for (int j = 0; j < QK; j++)
				s += (int8_t)wb[2 + j] * (int8_t)ab[2 + j];
		} else {
			for (int j = 0; j < QK / 2; j++) {
				s += ((wb[2 + j] & 0xf) - 8) * (int8_t)ab[2 + j];
				s += ((wb[2 + j] >> 4) - 8) *
				     (int8_t)ab[2 + j + QK / 2];
			}
		}
		acc = fmaf(h2f(rd16(wb)) * h2f(rd16(ab)), (float)s, acc);
	}
	y[r] = acc;
}

/* y = W x for F32 (kind 0) or F16 (kind 1) rows: a warp per row, element
 * j in lane j % 32, the lanes folded as the CPU's fold32(). */
extern "C" __global__ void eq_mv_f(const void *w, const float *x, float *y,
				   int rows, int cols, int kind)
{
	__shared__ float l[32];
	int r = blockIdx.x, t = threadIdx.x;
	float acc = 0.0f;

	if (r >= rows)
		return;
	for (int j = t; j < cols; j += 32) {
		float wv = kind == 0 ? ((const float *)w)[(size_t)r * cols + j] :
				       h2f(((const uint16_t *)w)[(size_t)r * cols + j]);

		acc = fmaf(wv, x[j], acc);
	}
	l[t] = acc;
	__syncthreads();
	if (t == 0) {
		float v[8], a0, a1, a2, a3;

		for (int k = 0; k < 8; k++)
			v[k] = (l[k] + l[k + 8]) + (l[k + 16] + l[k + 24]);
		a0 = v[0] + v[4];
		a1 = v[1] + v[5];
		a2 = v[2] + v[6];
		a3 = v[3] + v[7];
		y[r] = (a0 + a2) + (a1 + a3);
	}
}

/* RMSNORM, a block per row (at least 16 threads): the double sum of
 * squares in edgeq_sumsq_ref()'s order (thread l sums lane l, elements
 * i % 16 == l in i order; the 16 lanes fold in halves), then
 * y = x * scale * w element-wise. */
extern "C" __global__ void eq_rmsnorm(const float *x, const float *w,
				      float *y, int n, float eps)
{
	__shared__ float scale;
	__shared__ double lanes[16];
	int t = threadIdx.x;

	x += (size_t)blockIdx.x * n;
	y += (size_t)blockIdx.x * n;

	if (t < 16) {
		double l = 0;

		for (int i = t; i < n; i += 16)
			l = __dadd_rn(l, __dmul_rn((double)x[i], (double)x[i]));
		lanes[t] = l;
	}
	__syncthreads();
	if (t == 0) {
		for (int w2 = 8; w2; w2 /= 2)
			for (int i = 0; i < w2; i++)
				lanes[i] = __dadd_rn(lanes[i], lanes[i + w2]);
		scale = (float)(1.0 / sqrt(lanes[0] / (double)n + eps));
	}
	__syncthreads();
	for (int i = t; i < n; i += blockDim.x)
		y[i] = x[i] * scale * w[i];
}

/* The CPU's exp (kernels/scalar.c edgeq_expf()), step for step. */
__device__ static float exp_ref(float x)
{
	float z, n, r, p, s1, s2;
	int ni, n1;

	if (isnan(x))
		return x;
	if (x < -104.0f)
		return 0.0f;
	if (x > 89.0f)
		return __int_as_float(0x7f800000);
	z = __fmul_rn(x, __int_as_float(0x3fb8aa3b));
	n = __fsub_rn(__fadd_rn(z, __int_as_float(0x4b400000)),
		      __int_as_float(0x4b400000));
	r = fmaf(-n, __int_as_float(0x3f317200), x);
	r = fmaf(-n, __int_as_float(0x35bfbe8e), r);
	p = __int_as_float(0x39500d01);
	p = fmaf(p, r, __int_as_float(0x3ab60b61));
	p = fmaf(p, r, __int_as_float(0x3c088889));
	p = fmaf(p, r, __int_as_float(0x3d2aaaab));
	p = fmaf(p, r, __int_as_float(0x3e2aaaab));
	p = fmaf(p, r, 0.5f);
	p = fmaf(p, r, 1.0f);
	p = fmaf(p, r, 1.0f);
	ni = (int)n;
	n1 = ni >> 1;
	s1 = __int_as_float((n1 + 127) << 23);
	s2 = __int_as_float((ni - n1 + 127) << 23);
	return __fmul_rn(__fmul_rn(p, s1), s2);
}

/* ADD (kind 0): y = a + b; SILU_MUL (kind 1): y = a / (1 + exp(-a)) * b;
 * GELU_MUL (kind 2): y = a / (1 + exp(-2 u)) * b, u as
 * edgeq_gelu_mul_ref(). */
extern "C" __global__ void eq_ew(const float *a, const float *b, float *y,
				 int n, int kind)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	if (kind == 0) {
		y[i] = __fadd_rn(a[i], b[i]);
	} else if (kind == 2) {
		float g = a[i], c, u;

		c = __fmul_rn(__fmul_rn(__fmul_rn(__int_as_float(0x3d372713),
						  g), g), g);
		u = __fmul_rn(__int_as_float(0x3f4c422a), __fadd_rn(g, c));
		y[i] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, exp_ref(__fmul_rn(
							 -2.0f, u)))),
				 b[i]);
	} else
		y[i] = __fmul_rn(__fdiv_rn(a[i], __fadd_rn(1.0f,
							  exp_ref(-a[i]))),
				 b[i]);
}

/* STORE: x into an F16 (f16 != 0) or F32 row. */
extern "C" __global__ void eq_store(const float *x, void *y, int n, int f16)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	if (f16)
		((uint16_t *)y)[i] = f2h(x[i]);
	else
		((float *)y)[i] = x[i];
}

/* RoPE in place on @heads rows of @hd by the host's cos/sin pairs @cs. */
extern "C" __global__ void eq_rope(float *x, const float *cs, int heads,
				   int hd, int n_rot, int neox)
{
	int g = blockIdx.x * blockDim.x + threadIdx.x, half = n_rot / 2;
	int h, i, a, b;
	float co, si, x0, x1;

	if (g >= heads * half)
		return;
	h = g / half;
	i = g % half;
	a = neox ? i : 2 * i;
	b = neox ? i + half : 2 * i + 1;
	co = cs[2 * i];
	si = cs[2 * i + 1];
	x0 = x[h * hd + a];
	x1 = x[h * hd + b];
	x[h * hd + a] = __fsub_rn(__fmul_rn(x0, co), __fmul_rn(x1, si));
	x[h * hd + b] = __fadd_rn(__fmul_rn(x0, si), __fmul_rn(x1, co));
}
