// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Kernels: type traits, fp16/bf16 conversions, reference quantizers, and
 * every SIMD table against the scalar oracle, compared bit for bit.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/kernels.h"

/* ---- deterministic random numbers ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static float rnd_uniform(void)
{
	return (float)((rnd() >> 40) * (1.0 / (1 << 24)));
}

static float rnd_normal(void)
{
	float u1 = rnd_uniform() + 1e-7f, u2 = rnd_uniform();

	return sqrtf(-2 * logf(u1)) * cosf(6.2831853f * u2);
}

static uint32_t f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static float u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* ---- traits ---- */

#define EDGEQ_TYPE_IQ2_XXS_ID 16 /* a GGUF type edgeq does not support */

static void test_traits(void **state)
{
	static const struct {
		enum edgeq_type t;
		const char *name;
		uint32_t bs, ts;
		enum edgeq_type vdt;
	} want[] = {
		{ EDGEQ_TYPE_F32, "F32", 1, 4, EDGEQ_TYPE_F32 },
		{ EDGEQ_TYPE_F16, "F16", 1, 2, EDGEQ_TYPE_F32 },
		{ EDGEQ_TYPE_BF16, "BF16", 1, 2, EDGEQ_TYPE_F32 },
		{ EDGEQ_TYPE_Q8_0, "Q8_0", 32, 34, EDGEQ_TYPE_Q8_0 },
		{ EDGEQ_TYPE_Q4_0, "Q4_0", 32, 18, EDGEQ_TYPE_Q8_0 },
		{ EDGEQ_TYPE_Q4_K, "Q4_K", 256, 144, EDGEQ_TYPE_Q8_K },
		{ EDGEQ_TYPE_Q6_K, "Q6_K", 256, 210, EDGEQ_TYPE_Q8_K },
		{ EDGEQ_TYPE_Q8_K, "Q8_K", 256, 292, EDGEQ_TYPE_Q8_K },
		{ EDGEQ_TYPE_Q4_1, "Q4_1", 32, 20, EDGEQ_TYPE_Q8_0 },
		{ EDGEQ_TYPE_Q5_0, "Q5_0", 32, 22, EDGEQ_TYPE_Q8_0 },
		{ EDGEQ_TYPE_Q5_1, "Q5_1", 32, 24, EDGEQ_TYPE_Q8_0 },
		{ EDGEQ_TYPE_IQ4_NL, "IQ4_NL", 32, 18, EDGEQ_TYPE_Q8_0 },
		{ EDGEQ_TYPE_Q2_K, "Q2_K", 256, 84, EDGEQ_TYPE_Q8_K },
		{ EDGEQ_TYPE_Q3_K, "Q3_K", 256, 110, EDGEQ_TYPE_Q8_K },
		{ EDGEQ_TYPE_Q5_K, "Q5_K", 256, 176, EDGEQ_TYPE_Q8_K },
		{ EDGEQ_TYPE_IQ4_XS, "IQ4_XS", 256, 136, EDGEQ_TYPE_Q8_K },
	};
	enum edgeq_type t;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct edgeq_type_traits *tt =
			edgeq_type_traits(want[i].t);

		assert_non_null(tt);
		assert_string_equal(tt->name, want[i].name);
		assert_string_equal(edgeq_type_name(want[i].t), want[i].name);
		assert_int_equal(tt->blck_size, want[i].bs);
		assert_int_equal(tt->type_size, want[i].ts);
		assert_int_equal(tt->vec_dot_type, want[i].vdt);
		assert_non_null(tt->to_float);
		assert_int_equal(edgeq_type_from_name(want[i].name, &t), 0);
		assert_int_equal(t, want[i].t);
	}
	assert_int_equal(edgeq_row_size(EDGEQ_TYPE_Q4_0, 2048), 64 * 18);
	assert_int_equal(edgeq_row_size(EDGEQ_TYPE_Q4_K, 8192), 32 * 144);
	assert_int_equal(edgeq_row_size(EDGEQ_TYPE_F16, 7), 14);
	assert_int_equal(edgeq_row_size(EDGEQ_TYPE_Q4_0, 33), 0);
	assert_int_equal(edgeq_row_size(EDGEQ_TYPE_Q5_K, 512), 2 * 176);
	assert_int_equal(edgeq_row_size(EDGEQ_TYPE_IQ2_XXS_ID, 256), 0);
	assert_int_equal(edgeq_row_size(EDGEQ_TYPE_Q8_0, -32), 0);
	assert_int_equal(edgeq_row_size(EDGEQ_TYPE_F32, INT64_MAX), 0);
	/* known but unsupported types are refused by name */
	assert_null(edgeq_type_traits(EDGEQ_TYPE_IQ2_XXS_ID));
	assert_null(edgeq_type_traits(EDGEQ_TYPE_Q8_1));
	assert_null(edgeq_type_traits(1000));
	assert_string_equal(edgeq_type_name(EDGEQ_TYPE_IQ2_XXS_ID), "IQ2_XXS");
	assert_string_equal(edgeq_type_name(39), "MXFP4");
	assert_string_equal(edgeq_type_name(33), "unknown");
	assert_string_equal(edgeq_type_name(1u << 31), "unknown");
	assert_int_equal(edgeq_type_from_name("iq2_xxs", &t), -EOPNOTSUPP);
	assert_int_equal(t, EDGEQ_TYPE_IQ2_XXS_ID);
	assert_int_equal(edgeq_type_from_name("q4_k", &t), 0);
	assert_int_equal(t, EDGEQ_TYPE_Q4_K);
	assert_int_equal(edgeq_type_from_name("Q9_X", &t), -ENOENT);
}

static void test_q4_K_scales(void **state)
{
	for (int rep = 0; rep < 1000; rep++) {
		uint8_t s[12], sc[8], m[8], a, b;

		for (int i = 0; i < 12; i++)
			s[i] = (uint8_t)rnd();
		edgeq_q4_K_unpack_scales(s, sc, m);
		for (int j = 0; j < 8; j++) {
			edgeq_q4_K_scale_min(j, s, &a, &b);
			assert_int_equal(sc[j], a);
			assert_int_equal(m[j], b);
		}
	}
}

/* ---- conversions ---- */

static void test_fp16_exhaustive_roundtrip(void **state)
{
	for (uint32_t h = 0; h < 0x10000; h++) {
		float f = edgeq_fp16_to_fp32((uint16_t)h);
		uint16_t back = edgeq_fp32_to_fp16(f);

		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
			assert_true(isnan(f));
			/* NaN comes back quiet with its payload */
			assert_int_equal(back, h | 0x200);
			continue;
		}
		assert_int_equal(back, h);
	}
}

static void test_fp16_values(void **state)
{
	assert_int_equal(edgeq_fp32_to_fp16(1.0f), 0x3c00);
	assert_int_equal(edgeq_fp32_to_fp16(-2.0f), 0xc000);
	assert_int_equal(edgeq_fp32_to_fp16(65504.0f), 0x7bff);
	assert_int_equal(edgeq_fp32_to_fp16(65519.99f), 0x7bff);
	assert_int_equal(edgeq_fp32_to_fp16(65520.0f), 0x7c00);
	assert_int_equal(edgeq_fp32_to_fp16(1e10f), 0x7c00);
	assert_int_equal(edgeq_fp32_to_fp16(-INFINITY), 0xfc00);
	assert_int_equal(edgeq_fp32_to_fp16(0x1p-24f), 0x0001);
	assert_int_equal(edgeq_fp32_to_fp16(0x1p-25f),
			 0x0000); /* tie to even */
	assert_int_equal(edgeq_fp32_to_fp16(0x1.8p-25f), 0x0001);
	assert_int_equal(edgeq_fp32_to_fp16(0x3p-25f),
			 0x0002); /* 1.5 ulp: even */
	assert_int_equal(edgeq_fp32_to_fp16(-0x1p-14f), 0x8400);
	assert_int_equal(edgeq_fp32_to_fp16(0x1.ffcp-15f),
			 0x0400); /* carries to normal */
	assert_int_equal(edgeq_fp32_to_fp16(0x1.ff8p-15f), 0x03ff);
	assert_int_equal(edgeq_fp32_to_fp16(-0.0f), 0x8000);
	assert_int_equal(edgeq_fp32_to_fp16(1e-30f), 0x0000);
	assert_int_equal(edgeq_fp32_to_fp16(1.0f + 0x1p-11f),
			 0x3c00); /* tie: even */
	assert_int_equal(edgeq_fp32_to_fp16(1.0f + 0x3p-11f), 0x3c02);
	assert_true(isnan(edgeq_fp16_to_fp32(edgeq_fp32_to_fp16(NAN))));
	assert_true(edgeq_fp16_to_fp32(0x0001) == 0x1p-24f);
	assert_true(edgeq_fp16_to_fp32(0x03ff) == 0x3ffp-24f);
	assert_true(edgeq_fp16_to_fp32(0x7c00) == INFINITY);
}

/* Every float rounds to the nearest fp16 (ties to even), sampled widely. */
static void test_fp16_nearest_random(void **state)
{
	for (int i = 0; i < 1000000; i++) {
		float f = u2f((uint32_t)rnd());
		uint16_t h = edgeq_fp32_to_fp16(f);

		if (isnan(f)) {
			assert_true(isnan(edgeq_fp16_to_fp32(h)));
			continue;
		}
		if (fabsf(f) >= 65520.0f) {
			assert_int_equal(h & 0x7fff, 0x7c00);
			continue;
		}
		{
			double v = f, got = edgeq_fp16_to_fp32(h);
			double up = edgeq_fp16_to_fp32((uint16_t)(h + 1));
			double dn =
				(h & 0x7fff) ?
					edgeq_fp16_to_fp32((uint16_t)(h - 1)) :
					-got;

			/* no neighbour is strictly closer */
			assert_true(fabs(v - got) <= fabs(v - up));
			assert_true(fabs(v - got) <= fabs(v - dn));
		}
	}
}

/* The row converter (F16C on x86-64 where the CPU has it) writes the
 * scalar conversion's bits for every kind of value: random bit patterns
 * (NaNs with payloads, infinities, subnormals), halfway cases, odd tails. */
static void test_fp16_row(void **state)
{
	enum { N = 1 << 16 };
	static float x[N];
	static uint16_t y[N];

	for (int rep = 0; rep < 16; rep++) {
		for (int i = 0; i < N; i++)
			x[i] = u2f(rep & 1 ? (uint32_t)rnd() :
					     /* halfway between fp16 values */
					     ((uint32_t)rnd() & 0xffffe000u) |
						   0x1000u);
		edgeq_fp32_to_fp16_row(x, y, N - rep);
		for (int i = 0; i < N - rep; i++)
			if (y[i] != edgeq_fp32_to_fp16(x[i]))
				fail_msg("fp16 row [%d] of %a: %#x, scalar %#x",
					 i, x[i], y[i],
					 edgeq_fp32_to_fp16(x[i]));
	}
}

static void test_bf16(void **state)
{
	assert_int_equal(edgeq_fp32_to_bf16(1.0f), 0x3f80);
	assert_int_equal(edgeq_fp32_to_bf16(u2f(0x3f808000)),
			 0x3f80); /* tie: even */
	assert_int_equal(edgeq_fp32_to_bf16(u2f(0x3f818000)), 0x3f82);
	assert_int_equal(edgeq_fp32_to_bf16(u2f(0x3f808001)), 0x3f81);
	assert_int_equal(edgeq_fp32_to_bf16(INFINITY), 0x7f80);
	assert_int_equal(edgeq_fp32_to_bf16(u2f(0x7f7fffff)),
			 0x7f80); /* rounds to inf */
	assert_int_equal(edgeq_fp32_to_bf16(u2f(0x00000001)),
			 0x0000); /* subnormal */
	assert_int_equal(edgeq_fp32_to_bf16(u2f(0x00010000)), 0x0001);
	assert_true(isnan(edgeq_bf16_to_fp32(edgeq_fp32_to_bf16(NAN))));
	assert_true(
		isnan(edgeq_bf16_to_fp32(edgeq_fp32_to_bf16(u2f(0x7f800001)))));
	for (uint32_t h = 0; h < 0x10000; h++) {
		float f = edgeq_bf16_to_fp32((uint16_t)h);

		if (isnan(f))
			continue;
		assert_int_equal(edgeq_fp32_to_bf16(f), h);
		assert_int_equal(f2u(f), h << 16);
	}
}

/* ---- quantize -> dequantize error ---- */

static double rel_rmse(const float *a, const float *b, int n)
{
	double e = 0, s = 0;

	for (int i = 0; i < n; i++) {
		e += (double)(a[i] - b[i]) * (a[i] - b[i]);
		s += (double)a[i] * a[i];
	}
	return sqrt(e / s);
}

static void test_quantize_error_bounds(void **state)
{
	static const struct {
		enum edgeq_type t;
		double bound;
	} cases[] = {
		{ EDGEQ_TYPE_F16, 0.001 },   { EDGEQ_TYPE_BF16, 0.005 },
		{ EDGEQ_TYPE_Q8_0, 0.01 },   { EDGEQ_TYPE_Q6_K, 0.03 },
		{ EDGEQ_TYPE_Q4_K, 0.12 },   { EDGEQ_TYPE_Q4_0, 0.15 },
		{ EDGEQ_TYPE_Q5_K, 0.06 },   { EDGEQ_TYPE_Q3_K, 0.25 },
		{ EDGEQ_TYPE_Q2_K, 0.45 },   { EDGEQ_TYPE_Q4_1, 0.15 },
		{ EDGEQ_TYPE_Q5_0, 0.08 },   { EDGEQ_TYPE_Q5_1, 0.08 },
		{ EDGEQ_TYPE_IQ4_NL, 0.12 }, { EDGEQ_TYPE_IQ4_XS, 0.12 },
	};
	enum { N = 4096 };
	float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
	void *q = malloc(N * 4);

	for (int i = 0; i < N; i++)
		x[i] = rnd_normal() *
		       (1 + (i / 256)); /* blocks of varying scale */
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct edgeq_type_traits *tt =
			edgeq_type_traits(cases[c].t);
		double err;

		assert_int_equal(tt->from_float(x, q, N), 0);
		tt->to_float(q, y, N);
		err = rel_rmse(x, y, N);
		if (err > cases[c].bound)
			fail_msg("%s: relative rmse %g > %g", tt->name, err,
				 cases[c].bound);
	}
	/* a zero row quantizes to zeros */
	memset(x, 0, N * sizeof(float));
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct edgeq_type_traits *tt =
			edgeq_type_traits(cases[c].t);

		assert_int_equal(tt->from_float(x, q, N), 0);
		tt->to_float(q, y, N);
		for (int i = 0; i < N; i++)
			assert_true(y[i] == 0.0f);
	}
	free(x);
	free(y);
	free(q);
}

static void test_quantize_rejects(void **state)
{
	float x[1024];
	unsigned char q[1024 * 4];
	const enum edgeq_type ts[] = {
		EDGEQ_TYPE_Q8_0, EDGEQ_TYPE_Q4_0,   EDGEQ_TYPE_Q4_K,
		EDGEQ_TYPE_Q6_K, EDGEQ_TYPE_Q4_1,   EDGEQ_TYPE_Q5_0,
		EDGEQ_TYPE_Q5_1, EDGEQ_TYPE_IQ4_NL, EDGEQ_TYPE_Q2_K,
		EDGEQ_TYPE_Q3_K, EDGEQ_TYPE_Q5_K,   EDGEQ_TYPE_IQ4_XS,
	};

	for (int i = 0; i < 1024; i++)
		x[i] = rnd_normal();
	x[300] = NAN;
	x[10] = INFINITY;
	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
		const struct edgeq_type_traits *tt = edgeq_type_traits(ts[i]);
		float y[1024];

		assert_int_equal(tt->from_float(x, q, 1024), -EDOM);
		tt->to_float(q, y, 1024);
		/* the blocks holding non-finite values are zeros, others kept */
		assert_true(y[10] == 0.0f && y[300] == 0.0f);
		{
			int nz = 0;

			for (int j = 512; j < 1024; j++)
				nz += y[j] != 0.0f;
			assert_true(nz > 256);
		}
		assert_int_equal(tt->from_float(x, q,
						tt->blck_size + 1 +
							(tt->blck_size == 1)),
				 tt->blck_size == 1 ? 0 : -EINVAL);
	}
	assert_int_equal(edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_0, x, q, 31),
			 -EINVAL);
	assert_int_equal(edgeq_quantize_act_ref(EDGEQ_TYPE_Q4_0, x, q, 32),
			 -EINVAL);
	assert_int_equal(edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_K, x, q, 512),
			 -EDOM);
	assert_int_equal(edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_0, x, q, 512),
			 -EDOM);
	assert_int_equal(edgeq_quantize_act_ref(EDGEQ_TYPE_F32, x, q, 512),
			 -EDOM);
	assert_int_equal(
		edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_0, x + 320, q, 192), 0);
}

/* The activation quantizers never produce -128 (the SIMD dots rely on it). */
static void test_quantize_act_range(void **state)
{
	float x[512];
	struct edgeq_block_q8_0 a0[16];
	struct edgeq_block_q8_K ak[2];

	for (int rep = 0; rep < 200; rep++) {
		for (int i = 0; i < 512; i++)
			x[i] = rnd_normal() * (rep % 7 ? 1.0f : 1e-30f);
		x[rnd() % 512] = (rep & 1) ? -1e4f : 1e4f;
		assert_int_equal(
			edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_0, x, a0, 512), 0);
		assert_int_equal(
			edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_K, x, ak, 512), 0);
		for (int b = 0; b < 16; b++)
			for (int j = 0; j < 32; j++)
				assert_true(a0[b].qs[j] >= -127);
		for (int b = 0; b < 2; b++) {
			for (int g = 0; g < 16; g++) {
				int s = 0;

				for (int j = 0; j < 16; j++) {
					assert_true(ak[b].qs[16 * g + j] >=
						    -127);
					s += ak[b].qs[16 * g + j];
				}
				assert_int_equal(ak[b].bsums[g], s);
			}
		}
	}
}

/* ---- SIMD tables against the scalar oracle ---- */

static const enum edgeq_type weight_types[] = {
	EDGEQ_TYPE_F32,	 EDGEQ_TYPE_F16,  EDGEQ_TYPE_BF16,   EDGEQ_TYPE_Q8_0,
	EDGEQ_TYPE_Q4_0, EDGEQ_TYPE_Q4_K, EDGEQ_TYPE_Q6_K,   EDGEQ_TYPE_Q4_1,
	EDGEQ_TYPE_Q5_0, EDGEQ_TYPE_Q5_1, EDGEQ_TYPE_IQ4_NL, EDGEQ_TYPE_Q2_K,
	EDGEQ_TYPE_Q3_K, EDGEQ_TYPE_Q5_K, EDGEQ_TYPE_IQ4_XS,
};

/* Fill a row of @type with random bytes, with finite scales of the given
 * magnitude (fp16 exponent) in each block. */
static void random_row(enum edgeq_type type, void *row, int64_t n, int mode)
{
	const struct edgeq_type_traits *tt = edgeq_type_traits(type);
	size_t rs = edgeq_row_size(type, n);
	unsigned char *p = row;
	int64_t nb = n / tt->blck_size;

	for (size_t i = 0; i < rs; i++)
		p[i] = (unsigned char)rnd();
	if (!tt->is_quantized) {
		/* float rows: finite values, or random bit patterns in mode 3 */
		for (int64_t j = 0; j < n && mode != 3; j++) {
			float v = rnd_normal() * (mode == 1 ? 1e4f :
						  mode == 2 ? 1e-6f :
							      1.0f);

			if (type == EDGEQ_TYPE_F32)
				memcpy(p + 4 * j, &v, 4);
			else {
				uint16_t h = type == EDGEQ_TYPE_F16 ?
						     edgeq_fp32_to_fp16(v) :
						     edgeq_fp32_to_bf16(v);
				memcpy(p + 2 * j, &h, 2);
			}
		}
		return;
	}
	for (int64_t b = 0; b < nb; b++) {
		unsigned char *blk = p + b * tt->type_size;
		/* mode 0: normal scales, 1: huge, 2: tiny/subnormal, 3: zero block */
		uint16_t d = mode == 1 ? (uint16_t)(0x7800 | (rnd() & 0x3ff)) :
			     mode == 2 ? (uint16_t)(rnd() & 0x3ff) :
					 (uint16_t)(0x2000 | (rnd() & 0xfff));
		uint16_t d2 = (uint16_t)(0x2000 | (rnd() & 0xfff));

		if (mode == 3) {
			memset(blk, 0, tt->type_size);
			continue;
		}
		switch (type) {
		case EDGEQ_TYPE_Q8_0:
		case EDGEQ_TYPE_Q4_0:
		case EDGEQ_TYPE_Q5_0:
		case EDGEQ_TYPE_IQ4_NL:
		case EDGEQ_TYPE_IQ4_XS:
			memcpy(blk, &d, 2);
			break;
		case EDGEQ_TYPE_Q4_K:
		case EDGEQ_TYPE_Q5_K:
		case EDGEQ_TYPE_Q4_1:
		case EDGEQ_TYPE_Q5_1:
			memcpy(blk, &d, 2);
			memcpy(blk + 2, &d2, 2);
			break;
		case EDGEQ_TYPE_Q6_K:
			memcpy(blk + 208, &d, 2);
			break;
		case EDGEQ_TYPE_Q3_K:
			memcpy(blk + 108, &d, 2);
			break;
		case EDGEQ_TYPE_Q2_K:
			memcpy(blk + 80, &d, 2);
			memcpy(blk + 82, &d2, 2);
			break;
		default:
			break;
		}
	}
}

static bool same_float(float a, float b)
{
	return (isnan(a) && isnan(b)) || f2u(a) == f2u(b);
}

static void compare_tables(const struct edgeq_kernel_ops *ops)
{
	const struct edgeq_kernel_ops *ref = edgeq_kernels_scalar();
	static const int64_t sizes[] = { 256, 512, 768, 2048, 4352 };
	enum { MAXN = 4352 };
	float *x = malloc(MAXN * sizeof(float));
	void *w = malloc(MAXN * 4), *a = malloc(MAXN * 4);
	int checked = 0;

	for (size_t ti = 0; ti < sizeof(weight_types) / sizeof(weight_types[0]);
	     ti++) {
		enum edgeq_type t = weight_types[ti];
		const struct edgeq_type_traits *tt = edgeq_type_traits(t);
		enum edgeq_type vdt = tt->vec_dot_type;

		for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]);
		     si++) {
			for (int mode = 0; mode < 4; mode++) {
				for (int rep = 0; rep < 6; rep++) {
					int64_t n = sizes[si];
					float r0, r1;
					int q0;

					/* float types also get odd lengths,
					 * 32-element types odd block counts */
					if (!tt->is_quantized)
						n -= rep * 5;
					else if (tt->blck_size == 32)
						n -= rep * 32;
					random_row(t, w, n, mode);
					for (int64_t j = 0; j < n; j++)
						x[j] = rnd_normal() *
						       (rep == 5 ? 1e3f : 1.0f);
					if (rep == 4)
						memset(x, 0, n * sizeof(float));
					q0 = ref->quantize_act(vdt, x, a, n);
					assert_int_equal(q0, 0);
					r0 = ref->vec_dot[t](n, w, a);
					r1 = ops->vec_dot[t](n, w, a);
					if (!same_float(r0, r1))
						fail_msg(
							"%s %s n=%lld mode=%d rep=%d: scalar %a, %s %a",
							ops->name, tt->name,
							(long long)n, mode, rep,
							r0, ops->name, r1);
					checked++;
				}
			}
		}
		/* NaN/Inf in the activations: reported, and NaN in both */
		for (int64_t j = 0; j < 512; j++)
			x[j] = rnd_normal();
		x[77] = NAN;
		x[400] = -INFINITY;
		random_row(t, w, 512, 0);
		assert_int_equal(ref->quantize_act(vdt, x, a, 512), -EDOM);
		assert_true(isnan(ref->vec_dot[t](512, w, a)));
		assert_true(isnan(ops->vec_dot[t](512, w, a)));
	}
	assert_true(checked > 100);
	free(x);
	free(w);
	free(a);
}

static void test_attention_helpers(const struct edgeq_kernel_ops *ops)
{
	const struct edgeq_kernel_ops *ref = edgeq_kernels_scalar();
	float q[200], v[200], y0[200], y1[200];
	uint16_t h[200];
	struct edgeq_block_q8_0 kq[6];

	for (int n = 1; n <= 192; n += (n < 70 ? 1 : 31)) {
		for (int i = 0; i < n; i++) {
			q[i] = rnd_normal();
			v[i] = rnd_normal();
			h[i] = edgeq_fp32_to_fp16(rnd_normal());
			y0[i] = y1[i] = rnd_normal();
		}
		assert_true(same_float(ref->dot_f32(n, q, v),
				       ops->dot_f32(n, q, v)));
		assert_true(same_float(ref->dot_f16(n, h, q),
				       ops->dot_f16(n, h, q)));
		ref->axpy_f32(n, 0.37f, v, y0);
		ops->axpy_f32(n, 0.37f, v, y1);
		ref->axpy_f16(n, -1.5f, h, y0);
		ops->axpy_f16(n, -1.5f, h, y1);
		if (n % 32 == 0) {
			edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_0, v, kq, n);
			ref->axpy_q8_0(n, 0.01f, kq, y0);
			ops->axpy_q8_0(n, 0.01f, kq, y1);
		}
		assert_memory_equal(y0, y1, n * sizeof(float));
	}
}

/* A table's many-key attention helpers equal the per-key scalar ops: head
 * dimensions with and without a 32/64 multiple, key counts around the
 * 8-key groups, a stride wider than the head, zero and huge values. */
static void attn_many_keys_check(const struct edgeq_kernel_ops *ops)
{
	const struct edgeq_kernel_ops *ref = edgeq_kernels_scalar();
	static const int64_t hds[] = { 8, 32, 64, 96, 128, 40 };
	enum { KS = 300, NK = 37 };
	static uint16_t kv[NK * KS];
	float q[KS], a[NK], s0[NK], s1[NK], o0[KS], o1[KS];

	if (!ops->attn_scores_f16 || !ops->attn_av_f16)
		return;
	for (size_t hi = 0; hi < sizeof(hds) / sizeof(hds[0]); hi++) {
		int64_t hd = hds[hi];

		for (int nk = 1; nk <= NK; nk += (nk < 18 ? 1 : 9)) {
			for (int i = 0; i < NK * KS; i++)
				kv[i] = edgeq_fp32_to_fp16(
					rnd_normal() * (i % 97 ? 1.0f : 3e4f));
			kv[3] = 0x8000; /* -0 */
			for (int j = 0; j < hd; j++)
				q[j] = rnd_normal() * (j % 13 ? 1.0f : 0.0f);
			for (int t = 0; t < nk; t++) {
				a[t] = rnd_normal();
				s0[t] = ref->dot_f16(hd, kv + t * KS, q) *
					0.125f;
			}
			ops->attn_scores_f16(hd, nk, kv, KS, q, 0.125f, s1);
			for (int j = 0; j < hd; j++)
				o0[j] = 0;
			for (int t = 0; t < nk; t++)
				ref->axpy_f16(hd, a[t], kv + t * KS, o0);
			ops->attn_av_f16(hd, nk, a, kv, KS, o1);
			for (int t = 0; t < nk; t++)
				if (!same_float(s0[t], s1[t]))
					fail_msg(
						"%s attn_scores hd=%lld nk=%d key %d: %a, scalar %a",
						ops->name, (long long)hd, nk, t,
						s1[t], s0[t]);
			for (int j = 0; j < hd; j++)
				if (!same_float(o0[j], o1[j]))
					fail_msg(
						"%s attn_av hd=%lld nk=%d [%d]: %a, scalar %a",
						ops->name, (long long)hd, nk, j,
						o1[j], o0[j]);
		}
	}
}

/*
 * The group forms (several queries sharing the keys) against the scalar
 * per-query, per-key ops: head sizes with and without a register-blocked
 * form, 1-9 queries (blocks of 4 and 2 and their tails), 1-70 keys.
 */
static void attn_group_check(const struct edgeq_kernel_ops *ops)
{
	const struct edgeq_kernel_ops *ref = edgeq_kernels_scalar();
	static const int64_t hds[] = { 64, 128, 96, 32, 256 };
	enum { KS = 300, NK = 70, NQ = 9 };
	static uint16_t kv[NK * KS];
	static float q[NQ * KS], a[NQ * NK], s1[NQ * NK], o1[NQ * KS];
	float s0, o0[KS];
	int checked = 0;

	if (!ops->attn_scores_f16_g || !ops->attn_av_f16_g)
		return;
	for (size_t hi = 0; hi < sizeof(hds) / sizeof(hds[0]); hi++) {
		int64_t hd = hds[hi];

		for (int nq = 1; nq <= NQ; nq++) {
			int nk = (int)((nq * 37 + hi * 11) % NK) + 1;

			if (nq == 4)
				nk = NK;
			for (int i = 0; i < NK * KS; i++)
				kv[i] = edgeq_fp32_to_fp16(
					rnd_normal() * (i % 97 ? 1.0f : 3e4f));
			for (int i = 0; i < NQ * KS; i++)
				q[i] = rnd_normal() * (i % 13 ? 1.0f : 0.0f);
			for (int i = 0; i < NQ * NK; i++)
				a[i] = rnd_normal();
			ops->attn_scores_f16_g(hd, nk, kv, KS, nq, q, KS,
					       0.125f, s1, NK);
			ops->attn_av_f16_g(hd, nk, nq, a, NK, kv, KS, o1, KS);
			for (int j = 0; j < nq; j++) {
				for (int t = 0; t < nk; t++) {
					s0 = ref->dot_f16(hd, kv + t * KS,
							  q + j * KS) *
					     0.125f;
					if (!same_float(s0, s1[j * NK + t]))
						fail_msg(
							"%s attn_scores_g hd=%lld nq=%d nk=%d query %d key %d: %a, scalar %a",
							ops->name,
							(long long)hd, nq, nk,
							j, t, s1[j * NK + t],
							s0);
					checked++;
				}
				for (int e = 0; e < hd; e++)
					o0[e] = 0;
				for (int t = 0; t < nk; t++)
					ref->axpy_f16(hd, a[j * NK + t],
						      kv + t * KS, o0);
				for (int e = 0; e < hd; e++)
					if (!same_float(o0[e], o1[j * KS + e]))
						fail_msg(
							"%s attn_av_g hd=%lld nq=%d nk=%d query %d [%d]: %a, scalar %a",
							ops->name,
							(long long)hd, nq, nk,
							j, e, o1[j * KS + e],
							o0[e]);
			}
		}
	}
	assert_true(checked > 1000);
}

/* A block form's output row of query @j equals the scalar loop's @want
 * bit for bit; returns the elements compared. */
static int av_same(const struct edgeq_kernel_ops *ops, const char *what,
		   int64_t hd, int nq, int nk, int j, int64_t nkq,
		   const float *got, const float *want)
{
	for (int e = 0; e < hd; e++)
		if (!same_float(want[e], got[e]))
			fail_msg(
				"%s %s hd=%lld nq=%d nk=%d query %d of %lld keys [%d]: %a, scalar %a",
				ops->name, what, (long long)hd, nq, nk, j,
				(long long)nkq, e, got[e], want[e]);
	return (int)hd;
}

/*
 * The keys-in-lanes form (a prompt's queries over tiles of 16 keys)
 * against the scalar per-key dot: head sizes of the fast path and of the
 * fallback (40, 288), 1-64 queries (blocks of 4, 2 and 1), each query its
 * own key count (a causal block: tiles half seen, a query seeing none),
 * key counts around the 16-key tiles, zeros, -0 and huge values. Scores
 * past a query's count are not written. Then the weighted values of the
 * same queries (attn_av_f16_t: chunks of keys, blocks of queries and each
 * query's own tail) against the scalar axpy loop; none seen: zeros.
 */
static void attn_tiles_check(const struct edgeq_kernel_ops *ops)
{
	const struct edgeq_kernel_ops *ref = edgeq_kernels_scalar();
	static const int64_t hds[] = { 64, 128, 96, 32, 256, 40, 288 };
	static const int nqs[] = { 1, 2, 3, 4, 5, 7, 13, 32, 64 };
	enum { KS = 300, NK = 83, NQ = EDGEQ_ATTN_TQ };
	static uint16_t kv[NK * KS];
	static float q[NQ * KS], s1[NQ * (NK + 1)], o1[NQ * KS];
	float o0[KS];
	const float *qp[NQ], *ap[NQ];
	float *sp[NQ], *op[NQ];
	int64_t nkq[NQ];
	int checked = 0;

	if (!ops->attn_scores_f16_t)
		return;
	for (size_t hi = 0; hi < sizeof(hds) / sizeof(hds[0]); hi++) {
		for (size_t qi = 0; qi < sizeof(nqs) / sizeof(nqs[0]); qi++) {
			int64_t hd = hds[hi];
			int nq = nqs[qi],
			    nk = (int)((qi * 29 + hi * 7) % NK) + 1;

			for (int i = 0; i < NK * KS; i++)
				kv[i] = edgeq_fp32_to_fp16(
					rnd_normal() * (i % 97 ? 1.0f : 3e4f));
			kv[5] = 0x8000; /* -0 */
			for (int i = 0; i < NQ * KS; i++)
				q[i] = rnd_normal() * (i % 13 ? 1.0f : 0.0f);
			for (int j = 0; j < nq; j++) {
				qp[j] = q + (size_t)j * KS;
				sp[j] = s1 + (size_t)j * (NK + 1);
				/* the last query sees all, the others a
				 * causal share; query 1 none */
				nkq[j] = j == nq - 1 ? nk :
					 j == 1	     ? 0 :
						  (int64_t)(nk * (j + 1) / nq);
				sp[j][nkq[j]] = 12345.0f; /* must stay */
			}
			ops->attn_scores_f16_t(hd, nk, kv, KS, nq, qp, nkq,
					       0.125f, sp);
			for (int j = 0; j < nq; j++) {
				for (int t = 0; t < nkq[j]; t++) {
					float s0 = ref->dot_f16(hd, kv + t * KS,
								qp[j]) *
						   0.125f;

					if (!same_float(s0, sp[j][t]))
						fail_msg(
							"%s attn_scores_t hd=%lld nq=%d nk=%d query %d of %lld keys, key %d: %a, scalar %a",
							ops->name,
							(long long)hd, nq, nk,
							j, (long long)nkq[j], t,
							sp[j][t], s0);
					checked++;
				}
				if (sp[j][nkq[j]] != 12345.0f)
					fail_msg(
						"%s attn_scores_t hd=%lld nq=%d: query %d wrote past its %lld keys",
						ops->name, (long long)hd, nq, j,
						(long long)nkq[j]);
			}
			if (!ops->attn_av_f16_t)
				continue;
			/* the values: the scores' rows as weights */
			for (int j = 0; j < nq; j++) {
				ap[j] = sp[j];
				op[j] = o1 + (size_t)j * KS;
				for (int e = 0; e < hd; e++)
					op[j][e] = 777.0f; /* overwritten */
			}
			ops->attn_av_f16_t(hd, nk, kv, KS, nq, ap, nkq, op);
			for (int j = 0; j < nq; j++) {
				for (int e = 0; e < hd; e++)
					o0[e] = 0;
				for (int t = 0; t < nkq[j]; t++)
					ref->axpy_f16(hd, ap[j][t], kv + t * KS,
						      o0);
				checked += av_same(ops, "attn_av_t", hd, nq, nk,
						   j, nkq[j], op[j], o0);
			}
		}
	}
	assert_true(checked > 10000);
}

/*
 * A Q8_0 cache's weighted values (attn_av_q8_0_t: value rows converted
 * once per chunk, blocks of queries, each query's own tail) against the
 * scalar axpy_q8_0 loop: the fast head sizes and the fallback's (32, 96,
 * 256), 1-32 queries with causal key counts (one seeing none: zeros),
 * rows with zero, tiny and huge scales, weights with zeros and -0.
 */
static void attn_q8_check(const struct edgeq_kernel_ops *ops)
{
	const struct edgeq_kernel_ops *ref = edgeq_kernels_scalar();
	static const int64_t hds[] = { 64, 128, 32, 96, 256 };
	static const int nqs[] = { 1, 2, 3, 4, 5, 8, 13, 32 };
	enum { HDM = 256, NK = 150, NQ = EDGEQ_ATTN_TQ };
	/* rows of up to HDM / 32 blocks, 12 bytes of padding between (a
	 * block's fp16 scale stays 2-byte aligned, as in the cache) */
	enum { VS = HDM / 32 * 34 + 12 };
	static uint8_t v[NK * VS];
	static float w[NQ * NK], o1[NQ * HDM];
	float o0[HDM], row[HDM];
	const float *ap[NQ];
	float *op[NQ];
	int64_t nkq[NQ];
	int checked = 0;

	if (!ops->attn_av_q8_0_t)
		return;
	for (size_t hi = 0; hi < sizeof(hds) / sizeof(hds[0]); hi++) {
		for (size_t qi = 0; qi < sizeof(nqs) / sizeof(nqs[0]); qi++) {
			int64_t hd = hds[hi];
			int nq = nqs[qi],
			    nk = (int)((qi * 37 + hi * 11) % NK) + 1;

			for (int t = 0; t < NK; t++) {
				float sc = t % 17 == 0 ? 0.0f :
					   t % 17 == 1 ? 1e-30f :
					   t % 17 == 2 ? 3e4f :
							 1.0f;

				for (int e = 0; e < hd; e++)
					row[e] = rnd_normal() * sc;
				edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_0, row,
						       v + (size_t)t * VS, hd);
			}
			for (int i = 0; i < NQ * NK; i++)
				w[i] = i % 11 == 0 ? (i % 22 ? -0.0f : 0.0f) :
						     rnd_uniform();
			for (int j = 0; j < nq; j++) {
				ap[j] = w + (size_t)j * NK;
				op[j] = o1 + (size_t)j * HDM;
				nkq[j] = j == nq - 1 ? nk :
					 j == 1	     ? 0 :
						  (int64_t)(nk * (j + 1) / nq);
				for (int e = 0; e < hd; e++)
					op[j][e] = 777.0f; /* overwritten */
			}
			ops->attn_av_q8_0_t(hd, nk, v, VS, nq, ap, nkq, op);
			for (int j = 0; j < nq; j++) {
				for (int e = 0; e < hd; e++)
					o0[e] = 0;
				for (int t = 0; t < nkq[j]; t++)
					ref->axpy_q8_0(hd, ap[j][t],
						       v + (size_t)t * VS, o0);
				checked += av_same(ops, "attn_av_q8_0_t", hd,
						   nq, nk, j, nkq[j], op[j],
						   o0);
			}
		}
	}
	assert_true(checked > 10000);
}

/* edgeq_expf within 2 ulp of exp over its whole range (dense sweep and
 * random), exact at 0, 0 below the range, infinity above, NaN kept. */
static void test_expf(void **state)
{
	double worst = 0;

	for (int i = 0; i < 2000000; i++) {
		float x = i < 1000000 ?
				  -104.0f + 193.0f * (float)i / 1e6f :
				  -104.0f + 193.0f * (float)(rnd() >> 11) /
						    (float)(1u << 21);
		double e = exp((double)x), got = edgeq_expf(x), ulp;

		if (e < 0x1p-126) /* subnormal results: absolute error */
			ulp = fabs(got - e) / 0x1p-149;
		else
			ulp = fabs(got - e) / (e * 0x1p-23);
		if (e > 3e38) /* float overflow: checked below */
			continue;
		if (ulp > worst)
			worst = ulp;
		if (!(ulp <= 2.0))
			fail_msg("edgeq_expf(%a) = %a, exp %a (%.2f ulp)", x,
				 got, e, ulp);
	}
	print_message("edgeq_expf: worst %.2f ulp\n", worst);
	assert_true(edgeq_expf(0.0f) == 1.0f);
	assert_true(edgeq_expf(-200.0f) == 0.0f);
	assert_true(edgeq_expf(-INFINITY) == 0.0f);
	assert_true(isinf(edgeq_expf(100.0f)));
	assert_true(isnan(edgeq_expf(NAN)));
}

/*
 * RMSNORM's sum of squares is its documented order: lane l holds the
 * squares of the elements i % 16 == l in i order, folded in halves; the
 * lanes computed here as separate strided sums, lengths around the 16-lane
 * groups, values over a wide range. And a row whose orders differ: 2^54
 * then sixteen ones, which an element-order sum leaves at 2^54 (each +1
 * is half an ulp, rounded to even) and the lanes and fold make 2^54 + 12.
 */
static void test_sumsq(void **state)
{
	enum { N = 300 };
	static float x[N];

	for (int n = 0; n <= N; n += (n < 40 ? 1 : 23))
		for (int rep = 0; rep < 3; rep++) {
			double l[16] = { 0 }, got;

			for (int i = 0; i < n; i++)
				x[i] = rnd_normal() * (rep == 0 ? 1.0f :
						       rep == 1 ? 1e15f :
								  1e-18f);
			for (int j = 0; j < 16; j++)
				for (int i = j; i < n; i += 16)
					l[j] += (double)x[i] * (double)x[i];
			for (int w = 8; w; w /= 2)
				for (int j = 0; j < w; j++)
					l[j] += l[j + w];
			got = edgeq_sumsq_ref(x, n);
			if (memcmp(&got, &l[0], sizeof(got)))
				fail_msg("sumsq n=%d rep=%d: %a, lanes %a", n,
					 rep, got, l[0]);
		}
	x[0] = 0x1p27f;
	for (int i = 1; i <= 16; i++)
		x[i] = 1.0f;
	assert_true(edgeq_sumsq_ref(x, 17) == 0x1p54 + 12);
	assert_true(edgeq_sumsq_ref(x, 1) == 0x1p54);
}

/* A table's softmax equals edgeq_softmax_ref bit for bit: lengths around
 * the 16-lane groups, scores spread over exp's whole range, -inf, a NaN. */
static void softmax_check(const struct edgeq_kernel_ops *ops)
{
	enum { N = 600 };
	static float x0[N], x1[N];

	if (!ops->softmax)
		return;
	for (int n = 1; n <= N; n += (n < 40 ? 1 : 37)) {
		for (int rep = 0; rep < 4; rep++) {
			for (int i = 0; i < n; i++)
				x0[i] = rnd_normal() * (rep == 1 ? 40.0f :
							rep == 2 ? 1e-3f :
								   3.0f);
			if (rep == 3) {
				x0[n / 2] = -INFINITY;
				x0[n - 1] = n % 3 ? 1e30f : NAN;
			}
			memcpy(x1, x0, n * sizeof(float));
			edgeq_softmax_ref(x0, n);
			ops->softmax(x1, n);
			for (int i = 0; i < n; i++)
				if (!same_float(x0[i], x1[i]))
					fail_msg(
						"%s softmax n=%d rep=%d [%d]: %a, scalar %a",
						ops->name, n, rep, i, x1[i],
						x0[i]);
		}
	}
}

/* A table's SiLU(gate) * up (or GELU's) equals edgeq_silu_mul_ref (or
 * edgeq_gelu_mul_ref) bit for bit, tails and special values included. */
static void act_check(const struct edgeq_kernel_ops *ops, const char *name,
		      void (*ref)(float *, const float *, int64_t),
		      void (*op)(float *, const float *, int64_t))
{
	enum { N = 600 };
	static float o0[N], o1[N], x[N];
	static const float special[] = { NAN,	 INFINITY, -INFINITY, 0.0f,
					 -0.0f,	 1e-40f,   -1e-40f,   88.0f,
					 -88.0f, 104.5f,   -104.5f,   3e38f,
					 -3e38f, 20.0f,	   -20.0f };

	if (!op)
		return;
	for (int n = 1; n <= N; n += (n < 40 ? 1 : 37)) {
		for (int rep = 0; rep < 3; rep++) {
			for (int i = 0; i < n; i++) {
				o0[i] = rnd_normal() *
					(rep == 1 ? 30.0f : 3.0f);
				x[i] = rnd_normal();
				if (rep == 2)
					o0[i] = special[i %
							(sizeof(special) /
							 sizeof(special[0]))];
			}
			memcpy(o1, o0, n * sizeof(float));
			ref(o0, x, n);
			op(o1, x, n);
			for (int i = 0; i < n; i++)
				if (!same_float(o0[i], o1[i]))
					fail_msg(
						"%s %s n=%d rep=%d [%d]: %a, scalar %a",
						ops->name, name, n, rep, i,
						o1[i], o0[i]);
		}
	}
}

static void silu_check(const struct edgeq_kernel_ops *ops)
{
	act_check(ops, "silu_mul", edgeq_silu_mul_ref, ops->silu_mul);
	act_check(ops, "gelu_mul", edgeq_gelu_mul_ref, ops->gelu_mul);
}

/* edgeq_silu_mul_ref is SiLU to a few float ulps, NaN and limits kept. */
static void test_silu_ref(void **state)
{
	float o, one = 1.0f;
	double worst = 0;

	for (int i = -20000; i <= 20000; i++) {
		float g = (float)i / 250.0f; /* -80 .. 80 */
		double want = g / (1.0 + exp(-(double)g)), err;

		o = g;
		edgeq_silu_mul_ref(&o, &one, 1);
		err = fabs(o - want) / fmax(fabs(want), 1e-30);
		if (err > worst)
			worst = err;
	}
	print_message("silu: worst relative error %.2g\n", worst);
	assert_true(worst < 4e-7); /* ~3 ulps */
	o = NAN;
	edgeq_silu_mul_ref(&o, &one, 1);
	assert_true(isnan(o));
	o = INFINITY;
	edgeq_silu_mul_ref(&o, &one, 1);
	assert_true(isinf(o) && o > 0);
	o = -INFINITY; /* -inf / inf, as ggml's x / (1 + expf(-x)) */
	edgeq_silu_mul_ref(&o, &one, 1);
	assert_true(isnan(o));
	o = -200.0f; /* e^200 overflows: -200 / inf is -0 */
	edgeq_silu_mul_ref(&o, &one, 1);
	assert_true(o == 0.0f);
}

/* matvec and matmul of a table equal the scalar dots (70 tokens span two
 * token blocks; 11 rows leave partial row tiles). */
static void matmul_check(const struct edgeq_kernel_ops *ops)
{
	const struct edgeq_kernel_ops *ref = edgeq_kernels_scalar();
	enum { N = 512, ROWS = 11, NB = 70 };

	for (size_t ti = 0; ti < sizeof(weight_types) / sizeof(weight_types[0]);
	     ti++) {
		enum edgeq_type t = weight_types[ti];
		const struct edgeq_type_traits *tt = edgeq_type_traits(t);
		size_t rs = edgeq_row_size(t, N),
		       as = edgeq_row_size(tt->vec_dot_type, N);
		unsigned char *w = malloc(rs * ROWS), *a = malloc(as * NB);
		float *x = malloc(N * sizeof(float)),
		      *ym = malloc(NB * ROWS * sizeof(float));
		float y[ROWS];

		for (int r = 0; r < ROWS; r++)
			random_row(t, w + r * rs, N, r % 3);
		for (int b = 0; b < NB; b++) {
			for (int j = 0; j < N; j++)
				x[j] = rnd_normal();
			ref->quantize_act(tt->vec_dot_type, x, a + b * as, N);
		}
		ops->matmul(t, w, N, 0, ROWS, a, as, NB, ym, ROWS);
		for (int b = 0; b < NB; b++) {
			ops->matvec(t, w, N, 0, ROWS, a + b * as, y);
			for (int r = 0; r < ROWS; r++) {
				float d = ref->vec_dot[t](N, w + r * rs,
							  a + b * as);

				if (!same_float(ym[b * ROWS + r], d) ||
				    !same_float(y[r], d))
					fail_msg(
						"%s %s matmul/matvec row %d token %d: %a %a, scalar %a",
						ops->name, tt->name, r, b,
						ym[b * ROWS + r], y[r], d);
			}
		}
		/* the few-token batches of continuous batching: every tail
		 * of a token tile, from row 1 */
		for (int nb = 1; nb <= 9; nb++) {
			ops->matmul(t, w, N, 1, ROWS, a + 5 * as, as, nb, ym,
				    ROWS);
			for (int b = 0; b < nb; b++)
				for (int r = 1; r < ROWS; r++) {
					float d = ref->vec_dot[t](
						N, w + r * rs,
						a + (5 + b) * as);

					if (!same_float(ym[b * ROWS + r], d))
						fail_msg(
							"%s %s matmul of %d tokens row %d token %d: %a, scalar %a",
							ops->name, tt->name, nb,
							r, b, ym[b * ROWS + r],
							d);
				}
		}
		free(w);
		free(a);
		free(x);
		free(ym);
	}
}

/* Every table's activation quantizer writes the reference's bytes and
 * return value: random rows, exact halves (roundf ties), +-amax twice (the
 * first wins in Q8_K), zeros, subnormals, huge values and a NaN block. */
static void quantize_act_check(const struct edgeq_kernel_ops *ops)
{
	enum { N = 1024 };
	static float x[N];
	static uint8_t a0[N * 2], a1[N * 2];
	static const enum edgeq_type vdts[] = { EDGEQ_TYPE_Q8_0,
						EDGEQ_TYPE_Q8_K };

	for (int rep = 0; rep < 64; rep++) {
		for (int i = 0; i < N; i++)
			x[i] = rnd_normal() * (rep % 5 == 1 ? 1e-41f :
					       rep % 5 == 2 ? 3e37f :
							      1.0f);
		if (rep % 4 == 0) /* values landing on .5 after scaling */
			for (int i = 0; i < N; i++)
				x[i] = (float)((int)(rnd() % 255) - 127) / 2;
		if (rep % 8 == 3) { /* +-amax in one block, both signs */
			x[5] = 1000.0f;
			x[9] = -1000.0f;
			x[300] = -1000.0f;
			x[301] = 1000.0f;
		}
		if (rep % 8 == 5)
			memset(x + 256, 0, 256 * sizeof(float));
		if (rep % 16 == 7)
			x[600] = (rep & 16) ? NAN : INFINITY;
		/* 32 Q8_0 blocks, and 29 (AVX-512 takes 16 at a time) */
		for (size_t v = 0; v < 3; v++) {
			enum edgeq_type vt = vdts[v % 2];
			int64_t n = v == 2 ? N - 96 : N;
			int r0, r1;

			memset(a0, 0x5a, sizeof(a0));
			memset(a1, 0x5a, sizeof(a1));
			r0 = edgeq_quantize_act_ref(vt, x, a0, n);
			r1 = ops->quantize_act(vt, x, a1, n);
			assert_int_equal(r0, r1);
			if (memcmp(a0, a1, edgeq_row_size(vt, n)))
				fail_msg(
					"%s quantize_act %s of %d rep %d differs",
					ops->name, edgeq_type_name(vt), (int)n,
					rep);
		}
	}
}

/* ---- Q8_0/Q4_0: the block chain order and extreme block sums ---- */

/* The exact integer dot of block i (as scalar.c defines it). */
static int32_t q80_isum(enum edgeq_type t, const void *w, int64_t i,
			const struct edgeq_block_q8_0 *y)
{
	int32_t s = 0;

	if (t == EDGEQ_TYPE_Q4_0) {
		const struct edgeq_block_q4_0 *x =
			(const struct edgeq_block_q4_0 *)w + i;

		for (int k = 0; k < 16; k++)
			s += ((x->qs[k] & 0xf) - 8) * y[i].qs[k] +
			     ((x->qs[k] >> 4) - 8) * y[i].qs[k + 16];
	} else {
		const struct edgeq_block_q8_0 *x =
			(const struct edgeq_block_q8_0 *)w + i;

		for (int k = 0; k < 32; k++)
			s += x->qs[k] * y[i].qs[k];
	}
	return s;
}

static float q80_d(enum edgeq_type t, const void *w, int64_t i,
		   const struct edgeq_block_q8_0 *y)
{
	uint16_t h;

	memcpy(&h,
	       (const char *)w + i * (t == EDGEQ_TYPE_Q4_0 ?
					      sizeof(struct edgeq_block_q4_0) :
					      sizeof(struct edgeq_block_q8_0)),
	       2);
	return edgeq_fp16_to_fp32(h) * edgeq_fp16_to_fp32(y[i].d);
}

/* order 0: canonical (one fma chain in block order); 1: reversed; 2: two
 * block-parity chains, added; 3: block order, multiply and add unfused. */
static float q80_chain(enum edgeq_type t, const void *w,
		       const struct edgeq_block_q8_0 *y, int64_t nb, int order)
{
	float acc = 0, acc2 = 0;

	for (int64_t j = 0; j < nb; j++) {
		int64_t i = order == 1 ? nb - 1 - j : j;
		float d = q80_d(t, w, i, y), s = (float)q80_isum(t, w, i, y);

		if (order == 2 && (i & 1))
			acc2 = fmaf(d, s, acc2);
		else if (order == 3)
			acc += d * s;
		else
			acc = fmaf(d, s, acc);
	}
	return order == 2 ? acc + acc2 : acc;
}

/* Every table's vec_dot, matvec (all rows, and from row 3) and matmul
 * equal scalar exactly on rows w (R rows, nb blocks) x tokens a. */
static void q80_check_tables(enum edgeq_type t, const void *w, int R,
			     int64_t nb, const void *a, int NB,
			     const char *what)
{
	static const char *const names[] = { "scalar", "avx2", "avx512", "neon",
					     "neon-i8mm" };
	const struct edgeq_kernel_ops *ref = edgeq_kernels_scalar();
	int64_t n = nb * 32;
	size_t rs = edgeq_row_size(t, n),
	       as = edgeq_row_size(EDGEQ_TYPE_Q8_0, n);
	float *y = malloc(R * sizeof(float)),
	      *ym = malloc(NB * R * sizeof(float));

	/* avx512 twice: its Q4_0 matvec without and with VBMI/GFNI */
	for (size_t ti = 0; ti <= sizeof(names) / sizeof(names[0]); ti++) {
		const struct edgeq_kernel_ops *ops = edgeq_kernels_by_name(
			ti < sizeof(names) / sizeof(names[0]) ? names[ti] :
								"avx512");

		if (!ops)
			continue;
#if defined(__x86_64__)
		if (!strcmp(ops->name, "avx512") &&
		    !edgeq_avx512_q4_0_vbmi(ti ==
					    sizeof(names) / sizeof(names[0])) &&
		    ti == sizeof(names) / sizeof(names[0]))
			continue; /* no VBMI path on this CPU */
#endif
		ops->matmul(t, w, n, 0, R, a, as, NB, ym, R);
		for (int b = 0; b < NB; b++) {
			const char *ab = (const char *)a + b * as;

			for (int r = 0; r < R; r++)
				y[r] = -1;
			ops->matvec(t, w, n, b & 1 ? 3 : 0, R, ab, y);
			for (int r = 0; r < R; r++) {
				const char *wr = (const char *)w + r * rs;
				float d = ref->vec_dot[t](n, wr, ab);
				float v = ops->vec_dot[t](n, wr, ab);

				if ((b & 1) && r < 3) {
					assert_true(y[r] == -1);
					continue;
				}
				if (!same_float(d, v) || !same_float(d, y[r]) ||
				    !same_float(d, ym[b * R + r]))
					fail_msg(
						"%s %s %s nb=%lld row %d token %d: scalar %a, dot %a, matvec %a, matmul %a",
						what, ops->name,
						edgeq_type_traits(t)->name,
						(long long)nb, r, b, d, v, y[r],
						ym[b * R + r]);
			}
		}
	}
	free(y);
	free(ym);
}

/* The float chain's order matters for these rows (scales spanning many
 * binades): a table that summed the blocks in another order, in two
 * chains, or without fusing would differ from scalar, and the tables
 * equal scalar. Odd block counts and 8-row groups plus a rest. */
static void test_q80_chain_order(void **state)
{
	static const enum edgeq_type ts[] = { EDGEQ_TYPE_Q8_0,
					      EDGEQ_TYPE_Q4_0 };
	static const int64_t nbs[] = { 67, 130, 3 };
	enum { R = 19, NB = 5, MAXNB = 130 };
	size_t wmax = edgeq_row_size(EDGEQ_TYPE_Q8_0, MAXNB * 32);
	unsigned char *w = malloc(R * wmax);
	struct edgeq_block_q8_0 *a = malloc(NB * MAXNB * sizeof(*a));

	rng_state = 0x2545f4914f6cdd1dull; /* the same data on every ISA */

	for (size_t ti = 0; ti < 2; ti++)
		for (size_t ni = 0; ni < 3; ni++) {
			enum edgeq_type t = ts[ti];
			int64_t nb = nbs[ni];
			size_t rs = edgeq_row_size(t, nb * 32),
			       bs = rs / (size_t)nb;
			int differ[4] = { 0 };

			for (size_t k = 0; k < R * rs; k++)
				w[k] = (unsigned char)rnd();
			for (int r = 0; r < R; r++)
				for (int64_t i = 0; i < nb; i++) {
					/* fp16 exponents 13..17: scales 2^-2..2^2 */
					uint16_t h =
						(uint16_t)(((13 + rnd() % 5)
							    << 10) |
							   (rnd() & 0x3ff) |
							   (rnd() & 1 ? 0x8000 :
									0));

					memcpy(w + r * rs + i * bs, &h, 2);
				}
			for (int64_t i = 0; i < NB * nb; i++) {
				a[i].d = (uint16_t)(((12 + rnd() % 4) << 10) |
						    (rnd() & 0x3ff));
				for (int k = 0; k < 32; k++)
					a[i].qs[k] =
						(int8_t)(rnd() % 255 - 127);
			}
			for (int r = 0; r < R && nb > 3; r++) {
				const unsigned char *wr = w + r * rs;
				float c = q80_chain(t, wr, a, nb, 0);

				assert_true(same_float(
					c, edgeq_kernels_scalar()->vec_dot[t](
						   nb * 32, wr, a)));
				for (int o = 1; o < 4; o++)
					differ[o] += !same_float(
						c, q80_chain(t, wr, a, nb, o));
			}
			/* the data tells every other order apart (on a few
			 * rows at least: 6 to 19 of 19 with this seed) */
			for (int o = 1; o < 4 && nb > 3; o++)
				if (differ[o] < 3)
					fail_msg(
						"%s nb=%lld: order %d equals the canonical one on %d of %d rows",
						edgeq_type_traits(t)->name,
						(long long)nb, o, R - differ[o],
						R);
			q80_check_tables(t, w, R, nb, a, NB, "chain");
		}
	free(w);
	free(a);
}

/* Block sums at the ends of the ranges: Q8_0 weights -128/127, Q4_0
 * nibbles 0/15, activations -127/127, all equal or alternating, with
 * the largest and the subnormal scales. */
static void test_q80_extremes(void **state)
{
	static const enum edgeq_type ts[] = { EDGEQ_TYPE_Q8_0,
					      EDGEQ_TYPE_Q4_0 };
	enum { R = 11, NB = 4, NBLK = 9 };
	unsigned char w[R * NBLK * 34];
	struct edgeq_block_q8_0 a[NB * NBLK];
	static const uint16_t scales[] = { 0x7bff, 0x0001, 0x3c00, 0xfbff,
					   0x03ff };

	for (size_t ti = 0; ti < 2; ti++) {
		enum edgeq_type t = ts[ti];
		size_t rs = edgeq_row_size(t, NBLK * 32), bs = rs / NBLK;

		for (int r = 0; r < R; r++)
			for (int i = 0; i < NBLK; i++) {
				unsigned char *b = w + r * rs + i * bs;
				int pat = (r + i) % 4;

				memcpy(b, &scales[(r + 2 * i) % 5], 2);
				for (size_t k = 2; k < bs; k++) {
					unsigned char hi = t == EDGEQ_TYPE_Q8_0 ?
								   0x7f :
								   0xff,
						      lo = t == EDGEQ_TYPE_Q8_0 ?
								   0x80 :
								   0x00;

					b[k] = pat == 0 ? hi :
					       pat == 1 ? lo :
					       pat == 2 ? (k & 1 ? hi : lo) :
							  (unsigned char)rnd();
				}
			}
		for (int b = 0; b < NB; b++)
			for (int i = 0; i < NBLK; i++) {
				struct edgeq_block_q8_0 *y = &a[b * NBLK + i];

				y->d = scales[(b + i) % 5] & 0x7fff;
				for (int k = 0; k < 32; k++)
					y->qs[k] = (b + i) % 3 == 0 ?
							   127 :
						   (b + i) % 3 == 1 ?
							   -127 :
							   (k & 1 ? 127 : -127);
			}
		q80_check_tables(t, w, R, NBLK, a, NB, "extremes");
	}
}

/* Extreme blocks: mode 0 all-max values and scales (every quant byte
 * 0xff: Q4_K nibbles and 6-bit scales/mins 15/63, Q5_K 31, Q6_K q 63 with
 * scale -128, Q3_K q 3 with scale 31, Q2_K 3 with scale 15, IQ4 113 with
 * scale 31), 1 all-zero bytes (the other end of the signed types: Q6_K q
 * -32 with scale 127, Q3_K -4 with scale -32, IQ4 -127 with scale -32;
 * Q2_K/Q4_K/Q5_K keep maximal scales and mins), with huge or normal fp16
 * scales. */
static void extreme_qk_row(enum edgeq_type t, unsigned char *row, int64_t n,
			   int mode)
{
	const struct edgeq_type_traits *tt = edgeq_type_traits(t);
	size_t ts = tt->type_size;

	for (int64_t b = 0; b < n / tt->blck_size; b++) {
		unsigned char *blk = row + b * ts;
		uint16_t d = (rnd() & 1) ? 0x7bff :
					   (uint16_t)(0x2000 | (rnd() & 0xfff));
		uint16_t dmin = (rnd() & 1) ? 0x7bff : 0x3c00;

		memset(blk, mode ? 0 : 0xff, ts);
		switch (t) {
		case EDGEQ_TYPE_Q4_K:
		case EDGEQ_TYPE_Q5_K:
			memcpy(blk, &d, 2);
			memcpy(blk + 2, &dmin, 2);
			if (mode) /* scales and mins still maximal */
				memset(blk + 4, 0xff, 12);
			break;
		case EDGEQ_TYPE_Q6_K:
			memset(blk + 192, mode ? 0x7f : 0x80, 16);
			memcpy(blk + 208, &d, 2);
			break;
		case EDGEQ_TYPE_Q2_K:
			if (mode)
				memset(blk, 0xff, 16);
			memcpy(blk + 80, &d, 2);
			memcpy(blk + 82, &dmin, 2);
			break;
		case EDGEQ_TYPE_Q3_K:
			memcpy(blk + 108, &d, 2);
			break;
		case EDGEQ_TYPE_Q4_1:
		case EDGEQ_TYPE_Q5_1:
			memcpy(blk, &d, 2);
			memcpy(blk + 2, &dmin, 2);
			break;
		default: /* d first: Q5_0, IQ4_NL, IQ4_XS */
			memcpy(blk, &d, 2);
			break;
		}
	}
}

/* A Q8_K activation row built directly: random bytes (all of -128..127,
 * or -127..127 when @no_min), or every byte -128 (-127) / 127 in modes 1 /
 * 2; exact bsums. */
static void direct_q8_K(struct edgeq_block_q8_K *y, int64_t n, int mode,
			bool no_min)
{
	int8_t lo = no_min ? -127 : -128;

	for (int64_t i = 0; i < n / EDGEQ_QK_K; i++) {
		y[i].d = mode ? 1e30f : rnd_normal() * 0.01f;
		for (int j = 0; j < EDGEQ_QK_K; j++) {
			int8_t v = mode == 1 ? lo :
				   mode == 2 ? 127 :
					       (int8_t)rnd();

			y[i].qs[j] = v < lo ? lo : v;
		}
		for (int g = 0; g < EDGEQ_QK_K / 16; g++) {
			int s = 0;

			for (int j = 0; j < 16; j++)
				s += y[i].qs[16 * g + j];
			y[i].bsums[g] = (int16_t)s;
		}
	}
}

/* A Q8_0 activation row built directly: bytes in [-127, 127] (what the
 * quantizer writes and the AVX2 sign trick needs), or all -127 / 127 in
 * modes 1 / 2, at a random or the largest fp16 scale. */
static void direct_q8_0(struct edgeq_block_q8_0 *y, int64_t n, int mode)
{
	for (int64_t i = 0; i < n / EDGEQ_QK8_0; i++) {
		y[i].d = mode ? 0x7bff : (uint16_t)(0x2000 | (rnd() & 0xfff));
		for (int j = 0; j < EDGEQ_QK8_0; j++) {
			int8_t v = (int8_t)rnd();

			y[i].qs[j] = mode == 1 ? -127 :
				     mode == 2 ? 127 :
				     v == -128 ? -127 :
						 v;
		}
	}
}

/* K-quant matmul of a table against the scalar dots over many shapes:
 * rows (and a row offset) not multiples of the tile, tokens 1..70, K up
 * to 8192, random and extreme weights and activations. */
static void qk_matmul_shapes(const struct edgeq_kernel_ops *ops)
{
	const struct edgeq_kernel_ops *ref = edgeq_kernels_scalar();
	static const struct {
		int n, rows, nb;
	} shapes[] = {
		{ 256, 1, 1 },	  { 256, 40, 70 },  { 512, 17, 9 },
		{ 768, 33, 15 },  { 2048, 16, 8 },  { 2048, 31, 70 },
		{ 1280, 24, 64 }, { 8192, 40, 70 }, { 8192, 5, 3 },
		{ 2816, 50, 4 },  { 12288, 19, 2 }, { 4096, 64, 3 },
	};
	static const enum edgeq_type types[] = {
		EDGEQ_TYPE_Q4_K,   EDGEQ_TYPE_Q6_K, EDGEQ_TYPE_Q5_K,
		EDGEQ_TYPE_Q3_K,   EDGEQ_TYPE_Q2_K, EDGEQ_TYPE_IQ4_XS,
		EDGEQ_TYPE_Q4_1,   EDGEQ_TYPE_Q5_0, EDGEQ_TYPE_Q5_1,
		EDGEQ_TYPE_IQ4_NL,
	};
	enum { NS = sizeof(shapes) / sizeof(shapes[0]) };
	int checked = 0;

	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		enum edgeq_type t = types[ti];
		enum edgeq_type vdt = edgeq_type_traits(t)->vec_dot_type;
		/* under qemu the many-shape walk is slow: the new types take
		 * every other shape there */
		int step = getenv("EDGEQ_TEST_QEMU") && ti >= 2 ? 2 : 1;

		for (int si = (int)ti % step; si < NS + 40; si += step) {
			/* then rows 1..40 with varied tokens at K = 256, 512 */
			int n = si < NS ? shapes[si].n : 256 << (si & 1);
			int rows = si < NS ? shapes[si].rows : si - NS + 1;
			int nb = si < NS ? shapes[si].nb : (si * 37) % 70 + 1;
			int row0 = si % 3 == 1 ? 3 : 0, ldy = rows + 5;
			size_t rs = edgeq_row_size(t, n),
			       as = edgeq_row_size(vdt, n);
			unsigned char *w = malloc(rs * rows),
				      *a = malloc(as * nb);
			float *x = malloc(n * sizeof(float)),
			      *ym = malloc((size_t)nb * ldy * sizeof(float));

			if (row0 >= rows)
				row0 = 0;
			for (int r = 0; r < rows; r++) {
				int m = (r + si) % 7;

				if (m >= 4)
					extreme_qk_row(t, w + r * rs, n, m - 4);
				else
					random_row(t, w + r * rs, n, m);
			}
			for (int b = 0; b < nb; b++) {
				int m = (b + si) % 9;

				if (m >= 6 && vdt == EDGEQ_TYPE_Q8_K) {
					/* IQ4_XS's AVX2 sign trick needs >= -127 */
					direct_q8_K((void *)(a + b * as), n,
						    m - 6,
						    t == EDGEQ_TYPE_IQ4_XS);
					continue;
				}
				if (m >= 6) {
					direct_q8_0((void *)(a + b * as), n,
						    m - 6);
					continue;
				}
				for (int j = 0; j < n; j++)
					x[j] = rnd_normal();
				ref->quantize_act(vdt, x, a + b * as, n);
			}
			for (int i = 0; i < nb * ldy; i++)
				ym[i] = -7.0f;
			ops->matmul(t, w, n, row0, rows, a, as, nb, ym, ldy);
			for (int b = 0; b < nb; b++)
				for (int r = 0; r < ldy; r++) {
					float got = ym[b * ldy + r], d;

					if (r < row0 || r >= rows) {
						if (got != -7.0f)
							fail_msg(
								"%s %s n=%d rows=%d nb=%d: wrote outside row %d token %d",
								ops->name,
								edgeq_type_name(
									t),
								n, rows, nb, r,
								b);
						continue;
					}
					d = ref->vec_dot[t](n, w + r * rs,
							    a + b * as);
					if (!same_float(got, d))
						fail_msg(
							"%s %s n=%d rows=%d nb=%d row %d token %d: %a, scalar %a",
							ops->name,
							edgeq_type_name(t), n,
							rows, nb, r, b, got, d);
					checked++;
				}
			/* the decode matvec, token by token, same rows */
			for (int b = 0; b < nb; b++) {
				for (int r = 0; r < ldy; r++)
					ym[r] = -7.0f;
				ops->matvec(t, w, n, row0, rows, a + b * as,
					    ym);
				for (int r = 0; r < ldy; r++) {
					float got = ym[r], d;

					if (r < row0 || r >= rows) {
						if (got != -7.0f)
							fail_msg(
								"%s %s matvec n=%d rows=%d: wrote outside row %d token %d",
								ops->name,
								edgeq_type_name(
									t),
								n, rows, r, b);
						continue;
					}
					d = ref->vec_dot[t](n, w + r * rs,
							    a + b * as);
					if (!same_float(got, d))
						fail_msg(
							"%s %s matvec n=%d rows=%d row %d token %d: %a, scalar %a",
							ops->name,
							edgeq_type_name(t), n,
							rows, r, b, got, d);
					checked++;
				}
			}
			free(w);
			free(a);
			free(x);
			free(ym);
		}
	}
	assert_true(checked > 1000);
}

/*
 * Weights packed into 16-row groups (kernels/pack.c): the packed matvec
 * and matmul equal the scalar dot on the file layout bit for bit, for row
 * counts that leave partial groups, row ranges that begin inside a group,
 * token counts past the 8-token tile, and extreme blocks; nothing outside
 * the rows is written.
 */
static void pack16_check(const struct edgeq_kernel_ops *ops)
{
	const struct edgeq_kernel_ops *ref = edgeq_kernels_scalar();
	static const struct {
		int n, rows, nb;
	} shapes[] = {
		{ 32, 1, 1 },
		{ 64, 16, 8 },
		{ 96, 17, 9 },
		{ 2048, 33, 3 },
		{ 256, 40, 17 },
		{ 5632, 20, 2 },
		{ 160, 5, 70 },
		{ 512, 64, 1 },
		/* K tiles of 5-8 tokens, and (5632 x 90) two token blocks */
		{ 256, 21, 70 },
		{ 512, 16, 13 },
		{ 768, 18, 7 },
		{ 5632, 20, 90 },
		/* a matvec over groups taken 2 or 4 at once (long Q4_0 and
		 * Q8_0 rows), from the range's first row or its sixth, with
		 * groups left over */
		{ 5632, 75, 1 },
		{ 4608, 50, 2 },
		{ 5632, 70, 1 },
		{ 8192, 40, 1 },
	};
	static const enum edgeq_type types[] = {
		EDGEQ_TYPE_Q4_0, EDGEQ_TYPE_Q8_0,   EDGEQ_TYPE_Q4_K,
		EDGEQ_TYPE_Q5_K, EDGEQ_TYPE_Q6_K,   EDGEQ_TYPE_Q3_K,
		EDGEQ_TYPE_Q2_K, EDGEQ_TYPE_Q5_0,   EDGEQ_TYPE_Q4_1,
		EDGEQ_TYPE_Q5_1, EDGEQ_TYPE_IQ4_NL, EDGEQ_TYPE_IQ4_XS,
	};
	int checked = 0;

	if (!ops->matvec_packed)
		return;
	assert_int_equal(edgeq_pack16_size(EDGEQ_TYPE_IQ4_XS, 17, 256),
			 2 * 2208);
	assert_int_equal(edgeq_pack16_size(EDGEQ_TYPE_IQ4_XS, 16, 288), 0);
	assert_int_equal(edgeq_pack16_size(EDGEQ_TYPE_Q3_K, 17, 256), 2 * 1824);
	assert_int_equal(edgeq_pack16_size(EDGEQ_TYPE_Q2_K, 16, 512),
			 2 * 16 * 84);
	assert_int_equal(edgeq_pack16_size(EDGEQ_TYPE_Q6_K, 16, 256), 16 * 210);
	assert_int_equal(edgeq_pack16_size(EDGEQ_TYPE_Q4_0, 16, 48), 0);
	assert_int_equal(edgeq_pack16_size(EDGEQ_TYPE_Q5_0, 17, 64),
			 2 * 2 * 16 * 22);
	assert_int_equal(edgeq_pack16_size(EDGEQ_TYPE_Q5_1, 16, 32), 16 * 24);
	assert_int_equal(edgeq_pack16_size(EDGEQ_TYPE_Q4_1, 16, 32), 16 * 20);
	assert_int_equal(edgeq_pack16_size(EDGEQ_TYPE_IQ4_NL, 16, 64),
			 2 * 16 * 18);
	assert_int_equal(edgeq_pack16_size(EDGEQ_TYPE_Q4_0, 17, 64),
			 2 * 2 * (32 + 256));
	assert_int_equal(edgeq_pack16_size(EDGEQ_TYPE_Q4_K, 17, 512),
			 2 * 2 * 2368);
	assert_int_equal(edgeq_pack16_size(EDGEQ_TYPE_Q4_K, 16, 288), 0);
	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		enum edgeq_type t = types[ti];
		enum edgeq_type vdt = edgeq_type_traits(t)->vec_dot_type;

		if (!ops->pack16[t])
			continue; /* a table may pack only some types */
		for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]);
		     si++) {
			int n = shapes[si].n, rows = shapes[si].rows;
			int nb = shapes[si].nb, ldy = rows + 3;
			int row0 = si % 3 == 2 && rows > 5 ? 5 : 0;
			size_t rs, as;

			if (vdt == EDGEQ_TYPE_Q8_K) /* 256-column blocks */
				n = n < 256 ? 256 : (n + 255) / 256 * 256;
			rs = edgeq_row_size(t, n);
			as = edgeq_row_size(vdt, n);
			size_t ps = edgeq_pack16_size(t, rows, n);
			unsigned char *w = malloc(rs * rows), *pw = malloc(ps),
				      *a = malloc(as * nb);
			float *ym = malloc((size_t)nb * ldy * sizeof(float));

			assert_non_null(w);
			assert_non_null(pw);
			for (int r = 0; r < rows; r++) {
				int md = (int)(r + si) % 6;

				if (vdt == EDGEQ_TYPE_Q8_K && md >= 4)
					extreme_qk_row(t, w + r * rs, n,
						       md - 4);
				else
					random_row(t, w + r * rs, n, md % 4);
			}
			for (int b = 0; b < nb; b++) {
				if (vdt == EDGEQ_TYPE_Q8_K)
					direct_q8_K((void *)(a + b * as), n,
						    (b + (int)si) % 4, false);
				else
					direct_q8_0((void *)(a + b * as), n,
						    (b + (int)si) % 5 == 4);
			}
			edgeq_pack16(t, w, rows, n, pw);
			for (int pass = 0; pass < 2; pass++) {
				/* the matmul, then the matvec token by token */
				for (int i = 0; i < nb * ldy; i++)
					ym[i] = -7.0f;
				if (pass == 0)
					ops->matmul_packed(t, pw, n, row0, rows,
							   a, as, nb, ym, ldy);
				else
					for (int b = 0; b < nb; b++)
						ops->matvec_packed(
							t, pw, n, row0, rows,
							a + b * as,
							ym + b * ldy);
				for (int b = 0; b < nb; b++)
					for (int r = 0; r < ldy; r++) {
						float got = ym[b * ldy + r], d;

						if (r < row0 || r >= rows) {
							if (got != -7.0f)
								fail_msg(
									"%s packed %s n=%d rows=%d: wrote row %d",
									ops->name,
									edgeq_type_name(
										t),
									n, rows,
									r);
							continue;
						}
						d = ref->vec_dot[t](n,
								    w + r * rs,
								    a + b * as);
						if (!same_float(got, d))
							fail_msg(
								"%s packed %s %s n=%d rows=%d nb=%d row %d token %d: %a, scalar %a",
								ops->name,
								edgeq_type_name(
									t),
								pass ? "matvec" :
								       "matmul",
								n, rows, nb, r,
								b, got, d);
						checked++;
					}
			}
			free(w);
			free(pw);
			free(a);
			free(ym);
		}
	}
	assert_true(checked > 1000);
}

static void test_simd_tables(void **state)
{
	static const char *const names[] = { "avx2", "avx512", "neon",
					     "neon-i8mm" };
	int tested = 0;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct edgeq_kernel_ops *ops =
			edgeq_kernels_by_name(names[i]);

		if (!ops)
			continue;
		compare_tables(ops);
		test_attention_helpers(ops);
		attn_many_keys_check(ops);
		attn_group_check(ops);
		attn_tiles_check(ops);
		attn_q8_check(ops);
		softmax_check(ops);
		silu_check(ops);
		quantize_act_check(ops);
		matmul_check(ops);
		qk_matmul_shapes(ops);
		pack16_check(ops);
#if defined(__x86_64__)
		/* the avx512 Q4_0 matvec without VBMI/GFNI, then with */
		if (!strcmp(names[i], "avx512")) {
			edgeq_avx512_q4_0_vbmi(false);
			matmul_check(ops);
			if (edgeq_avx512_q4_0_vbmi(true))
				print_message(
					"avx512 Q4_0 matvec: VBMI/GFNI\n");
		}
		/* the avx2 packed forms with vpmaddubsw, then AVX-VNNI */
		if (!strcmp(names[i], "avx2")) {
			assert_false(edgeq_avx2_pack_vnni(false));
			pack16_check(ops);
			if (edgeq_avx2_pack_vnni(true))
				print_message("avx2 packed: AVX-VNNI\n");
			else
				print_message(
					"avx2 packed: no AVX-VNNI on this CPU, vpmaddubsw only\n");
		}
#endif
		tested++;
	}
	/* the scalar table against itself still runs the whole path */
	compare_tables(edgeq_kernels_scalar());
	test_attention_helpers(edgeq_kernels_scalar());
	if (!tested)
		print_message("no SIMD table on this CPU: scalar only\n");
}

/* A Q8_0 activation row: random bytes, random finite fp16 scales of any
 * sign and magnitude; extreme rows (mode 1) are all -128 at scale -65504. */
static void random_act_q8_0(void *row, int64_t n, int mode)
{
	struct edgeq_block_q8_0 *b = row;

	for (int64_t i = 0; i < n / EDGEQ_QK8_0; i++) {
		uint16_t e = (uint16_t)(rnd() % 31),
			 m = (uint16_t)(rnd() & 0x3ff);

		b[i].d = mode == 1 ?
				 0xfbff :
				 (uint16_t)((rnd() & 0x8000) | (e << 10) | m);
		for (int k = 0; k < EDGEQ_QK8_0; k++)
			b[i].qs[k] = mode == 1 ? -128 : (int8_t)rnd();
	}
}

/*
 * The AVX-512 prefill kernel for Q4_0/Q8_0 (16 rows per vector, 8 tokens
 * per tile) equals the scalar dots on many shapes: row ranges not a
 * multiple of 16 and not starting at 0, token counts not a multiple of 8,
 * 1..256 blocks incl. odd counts, extreme scales and bytes (0 and -128
 * weights, -128 activations), padded activation rows and output rows.
 * Outputs outside the range stay untouched.
 */
static void test_avx512_q8_matmul(void **state)
{
	const struct edgeq_kernel_ops *ops = edgeq_kernels_by_name("avx512");
	const struct edgeq_kernel_ops *ref = edgeq_kernels_scalar();
	static const enum edgeq_type types[] = { EDGEQ_TYPE_Q4_0,
						 EDGEQ_TYPE_Q8_0 };
	static const int64_t ks[] = { 32, 96, 160, 544, 2048, 8192 };
	static const struct {
		int row0, row1, nb;
	} shapes[] = {
		{ 0, 1, 1 },   { 0, 16, 8 },  { 0, 40, 70 }, { 3, 40, 9 },
		{ 0, 17, 7 },  { 5, 20, 16 }, { 1, 33, 1 },  { 24, 39, 17 },
		{ 0, 15, 65 }, { 7, 8, 70 },  { 0, 32, 2 },  { 9, 40, 33 },
	};
	enum { ROWS = 40, NB = 70, LDY = ROWS + 3, PAD = 6 };
	const float sentinel = -12345.0f;

	if (!ops) {
		print_message("no avx512 table on this CPU: skipped\n");
		return;
	}
	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		enum edgeq_type t = types[ti];

		for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++) {
			int64_t n = ks[ki];
			size_t rs = edgeq_row_size(t, n),
			       as = edgeq_row_size(EDGEQ_TYPE_Q8_0, n) + PAD;
			unsigned char *w = malloc(rs * ROWS),
				      *a = malloc(as * NB);
			float *y = malloc(sizeof(float) * NB * LDY);
			float *want = malloc(sizeof(float) * NB * ROWS);

			for (int r = 0; r < ROWS; r++) {
				random_row(t, w + r * rs, n, r % 4);
				if (r == 13) { /* all -8 or -128, scale 65504 */
					for (int64_t i = 0; i < n / 32; i++) {
						unsigned char *blk =
							w + r * rs +
							i * edgeq_type_traits(t)
									->type_size;

						memset(blk + 2,
						       t == EDGEQ_TYPE_Q4_0 ?
							       0x00 :
							       0x80,
						       t == EDGEQ_TYPE_Q4_0 ?
							       16 :
							       32);
						blk[0] = 0xff;
						blk[1] = 0x7b;
					}
				}
			}
			for (int b = 0; b < NB; b++)
				random_act_q8_0(a + b * as, n, b == 5);
			for (int b = 0; b < NB; b++)
				for (int r = 0; r < ROWS; r++)
					want[b * ROWS + r] = ref->vec_dot[t](
						n, w + r * rs, a + b * as);
			for (size_t si = 0;
			     si < sizeof(shapes) / sizeof(shapes[0]); si++) {
				int r0 = shapes[si].row0, r1 = shapes[si].row1,
				    nb = shapes[si].nb;

				for (int i = 0; i < NB * LDY; i++)
					y[i] = sentinel;
				ops->matmul(t, w, n, r0, r1, a, as, nb, y, LDY);
				for (int b = 0; b < NB; b++)
					for (int r = 0; r < LDY; r++) {
						bool in = b < nb && r >= r0 &&
							  r < r1;
						float got = y[b * LDY + r];
						float exp =
							in ? want[b * ROWS + r] :
							     sentinel;

						if (!same_float(got, exp))
							fail_msg(
								"%s n %d rows [%d,%d) nb %d: row %d token %d: %a, want %a",
								edgeq_type_name(
									t),
								(int)n, r0, r1,
								nb, r, b, got,
								exp);
					}
			}
			free(w);
			free(a);
			free(y);
			free(want);
		}
	}
}

/* Dots agree with the float dot of the dequantized rows within the
 * activation quantization error. */
static void test_dot_accuracy(void **state)
{
	const struct edgeq_kernel_ops *ops = edgeq_kernels_select();
	enum { N = 2048 };
	float *x = malloc(N * sizeof(float)), *wf = malloc(N * sizeof(float));
	float *wd = malloc(N * sizeof(float));
	void *w = malloc(N * 4), *a = malloc(N * 4);

	for (size_t ti = 0; ti < sizeof(weight_types) / sizeof(weight_types[0]);
	     ti++) {
		enum edgeq_type t = weight_types[ti];
		const struct edgeq_type_traits *tt = edgeq_type_traits(t);
		double exact = 0, norm = 0;
		float got;

		for (int j = 0; j < N; j++) {
			wf[j] = rnd_normal();
			x[j] = rnd_normal();
		}
		assert_int_equal(tt->from_float(wf, w, N), 0);
		tt->to_float(w, wd, N);
		for (int j = 0; j < N; j++) {
			exact += (double)wd[j] * x[j];
			norm += fabs((double)wd[j] * x[j]);
		}
		assert_int_equal(ops->quantize_act(tt->vec_dot_type, x, a, N),
				 0);
		got = ops->vec_dot[t](N, w, a);
		if (fabs(got - exact) > (tt->is_quantized ? 0.01 : 1e-5) * norm)
			fail_msg("%s: dot %g, exact %g (norm %g)", tt->name,
				 got, exact, norm);
	}
	free(x);
	free(wf);
	free(wd);
	free(w);
	free(a);
}

static void test_matvec_matmul(void **state)
{
	const struct edgeq_kernel_ops *ops = edgeq_kernels_select();
	enum { N = 512, ROWS = 37, NB = 5 };

	for (size_t ti = 0; ti < sizeof(weight_types) / sizeof(weight_types[0]);
	     ti++) {
		enum edgeq_type t = weight_types[ti];
		const struct edgeq_type_traits *tt = edgeq_type_traits(t);
		size_t rs = edgeq_row_size(t, N),
		       as = edgeq_row_size(tt->vec_dot_type, N);
		unsigned char *w = malloc(rs * ROWS), *a = malloc(as * NB);
		float x[N], y[ROWS], ym[NB * ROWS];

		for (int r = 0; r < ROWS; r++)
			random_row(t, w + r * rs, N, 0);
		for (int b = 0; b < NB; b++) {
			for (int j = 0; j < N; j++)
				x[j] = rnd_normal();
			ops->quantize_act(tt->vec_dot_type, x, a + b * as, N);
		}
		for (int r = 0; r < ROWS; r++)
			ym[r] = -1;
		ops->matmul(t, w, N, 3, ROWS, a, as, NB, ym, ROWS);
		for (int b = 0; b < NB; b++) {
			memset(y, 0, sizeof(y));
			ops->matvec(t, w, N, 3, ROWS, a + b * as, y);
			for (int r = 3; r < ROWS; r++) {
				float d = ops->vec_dot[t](N, w + r * rs,
							  a + b * as);

				assert_true(same_float(y[r], d));
				assert_true(same_float(ym[b * ROWS + r], d));
			}
			assert_true(y[0] == 0 &&
				    y[2] == 0); /* rows outside untouched */
		}
		free(w);
		free(a);
	}
}

static void test_select(void **state)
{
	const struct edgeq_kernel_ops *ops = edgeq_kernels_select();

	assert_non_null(ops);
	assert_ptr_equal(ops, edgeq_kernels_select());
	assert_ptr_equal(edgeq_kernels_by_name("scalar"),
			 edgeq_kernels_scalar());
	assert_null(edgeq_kernels_by_name("sse9"));
	for (size_t t = 0; t < sizeof(weight_types) / sizeof(weight_types[0]);
	     t++)
		assert_non_null(ops->vec_dot[weight_types[t]]);
	print_message("selected kernels: %s\n", ops->name);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_traits),
		cmocka_unit_test(test_q4_K_scales),
		cmocka_unit_test(test_fp16_exhaustive_roundtrip),
		cmocka_unit_test(test_fp16_values),
		cmocka_unit_test(test_fp16_nearest_random),
		cmocka_unit_test(test_fp16_row),
		cmocka_unit_test(test_expf),
		cmocka_unit_test(test_sumsq),
		cmocka_unit_test(test_bf16),
		cmocka_unit_test(test_quantize_error_bounds),
		cmocka_unit_test(test_quantize_rejects),
		cmocka_unit_test(test_quantize_act_range),
		cmocka_unit_test(test_simd_tables),
		cmocka_unit_test(test_silu_ref),
		cmocka_unit_test(test_q80_chain_order),
		cmocka_unit_test(test_q80_extremes),
		cmocka_unit_test(test_avx512_q8_matmul),
		cmocka_unit_test(test_dot_accuracy),
		cmocka_unit_test(test_matvec_matmul),
		cmocka_unit_test(test_select),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
