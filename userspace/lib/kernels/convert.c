// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fp16 and bf16 <-> fp32, exact IEEE 754 conversions in plain C. They give
 * the same bits as F16C (vcvtps2ph with round-to-nearest-even, vcvtph2ps)
 * and NEON's fcvt, including subnormals, infinities and NaN payloads, so the
 * scalar oracle and the SIMD tables agree.
 */
#include <string.h>

#include "kernels/kernels.h"

static inline uint32_t f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline float bits_f32(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

float edgeq_fp16_to_fp32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t mant = h & 0x3ff;

	if (exp == 0x1f) /* inf or nan: keep the payload */
		return bits_f32(sign | 0x7f800000 | (mant << 13));
	if (exp == 0) {
		if (mant == 0)
			return bits_f32(sign);
		/* subnormal: normalise the mantissa */
		exp = 127 - 15 + 1;
		while (!(mant & 0x400)) {
			mant <<= 1;
			exp--;
		}
		mant &= 0x3ff;
		return bits_f32(sign | (exp << 23) | (mant << 13));
	}
	return bits_f32(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

uint16_t edgeq_fp32_to_fp16(float f)
{
	uint32_t u = f32_bits(f);
	uint16_t sign = (u >> 16) & 0x8000;
	uint32_t abs = u & 0x7fffffff;
	uint32_t exp, mant, shift, half, rem;
	uint16_t r;

	if (abs > 0x7f800000) /* nan: quiet it, keep the top payload bits */
		return sign | 0x7e00 | ((abs >> 13) & 0x3ff);
	if (abs >= 0x477ff000) /* rounds to >= 65520: infinity */
		return sign | 0x7c00;
	if (abs < 0x38800000) { /* below the smallest normal fp16: subnormal */
		if (abs < 0x33000000) /* below half the smallest subnormal */
			return sign;
		exp = abs >> 23;
		mant = (abs & 0x7fffff) | 0x800000;
		shift = 126 -
			exp; /* value = mant * 2^(exp - 150) = r * 2^-24 */
		r = mant >> shift;
		rem = mant & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		if (rem > half || (rem == half && (r & 1)))
			r++;
		return sign | r;
	}
	/* normal: rebias, round the 13 dropped bits to nearest even */
	r = (uint16_t)(((abs >> 13) - ((127 - 15) << 10)));
	rem = abs & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (r & 1)))
		r++; /* may carry into the exponent: still correct */
	return sign | r;
}

float edgeq_bf16_to_fp32(uint16_t h)
{
	return bits_f32((uint32_t)h << 16);
}

uint16_t edgeq_fp32_to_bf16(float f)
{
	uint32_t u = f32_bits(f);

	if ((u & 0x7fffffff) > 0x7f800000) /* nan: quiet it */
		return (uint16_t)((u >> 16) | 64);
	return (uint16_t)((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}

void edgeq_fp16_to_fp32_row(const uint16_t *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = edgeq_fp16_to_fp32(x[i]);
}

#if defined(__x86_64__)
#include <immintrin.h>

/* vcvtps2ph with round-to-nearest-even: the same bits as the C version
 * (the KV cache stores every new key and value row through here). */
__attribute__((target("avx,f16c"))) static void row_f16c(const float *x,
							 uint16_t *y, int64_t n)
{
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((__m128i *)(y + i),
				 _mm256_cvtps_ph(_mm256_loadu_ps(x + i),
						 _MM_FROUND_TO_NEAREST_INT));
	for (; i < n; i++)
		y[i] = edgeq_fp32_to_fp16(x[i]);
}
#endif

void edgeq_fp32_to_fp16_row(const float *x, uint16_t *y, int64_t n)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("f16c")) {
		row_f16c(x, y, n);
		return;
	}
#endif
	for (int64_t i = 0; i < n; i++)
		y[i] = edgeq_fp32_to_fp16(x[i]);
}
