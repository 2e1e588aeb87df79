/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A Q8_0 activation block prepared for the packed 32-column tiles of the
 * AVX2 and AVX-512 tables (x86/avx2_pack.h, x86/avx512_pack.c): its scale
 * and the bias an unsigned-weight block sum starts at. Built under each
 * including file's target flags (it needs AVX2 and F16C).
 */
#ifndef EDGEQ_KERNELS_X86_PACK_ACT_H
#define EDGEQ_KERNELS_X86_PACK_ACT_H

#include <immintrin.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/pack_layout.h"

/* Per activation block: its scale and bias (-8 or -128 times its sum). */
struct act {
	float d;
	int32_t bias;
};

/*
 * The bias a block's sum starts at is -(1 << shift) times the activation
 * block's sum: the unsigned weights are the values + 8 (Q4_0), + 16
 * (Q5_0) or + 128 (Q8_0, IQ4_NL's table); the affine types start at 0 and
 * take the sum itself (shift 0: -bias) for their min term.
 */
static inline void act_prep(enum edgeq_type t, const struct edgeq_block_q8_0 *a,
			    int64_t nblk, struct act *out)
{
	int shift = t == EDGEQ_TYPE_Q4_0 ? 3 :
		    t == EDGEQ_TYPE_Q5_0 ? 4 :
		    edgeq_pk_affine(t)	 ? 0 :
					   7;

	for (int64_t i = 0; i < nblk; i++) {
		__m256i q = _mm256_loadu_si256((const __m256i *)a[i].qs);
		__m256i s = _mm256_sad_epu8(
			_mm256_xor_si256(q, _mm256_set1_epi8(-128)),
			_mm256_setzero_si256());
		int64_t sum = _mm256_extract_epi64(s, 0) +
			      _mm256_extract_epi64(s, 1) +
			      _mm256_extract_epi64(s, 2) +
			      _mm256_extract_epi64(s, 3) - 32 * 128;

		out[i].d = _cvtsh_ss(a[i].d); /* F16C: the same float */
		out[i].bias = (int32_t)(-sum * ((int64_t)1 << shift));
	}
}

/* Per Q8_K super-block: its scale and the sub-block sums of its bytes in
 * pairs, bp[p] = bsum(2p) | bsum(2p + 1) << 16 (int16 each: |sum| <= 4064). */
struct actk {
	float d;
	int32_t bp[4];
};

static inline void actk_prep(const struct edgeq_block_q8_K *a, int64_t nsb,
			     struct actk *o)
{
	for (int64_t i = 0; i < nsb; i++) {
		o[i].d = a[i].d;
		for (int p = 0; p < 4; p++) {
			int b0 = a[i].bsums[4 * p] + a[i].bsums[4 * p + 1];
			int b1 = a[i].bsums[4 * p + 2] + a[i].bsums[4 * p + 3];

			o[i].bp[p] = (int32_t)((uint32_t)(uint16_t)b0 |
					       (uint32_t)(uint16_t)b1 << 16);
		}
	}
}

/* Per Q8_K super-block: its scale and -32 times each 16-byte group's sum
 * (the start value that turns the stored q + 32 back into q). */
struct act6 {
	float d;
	int32_t nb32[16];
};

static inline void act6_prep(const struct edgeq_block_q8_K *a, int64_t nsb,
			     struct act6 *o)
{
	for (int64_t i = 0; i < nsb; i++) {
		o[i].d = a[i].d;
		for (int g = 0; g < 16; g++)
			o[i].nb32[g] = -32 * a[i].bsums[g];
	}
}

/* Per Q8_K super-block: its scale and -128 times each 32-byte sub-block's
 * sum (the start value that turns the table + 128 back into the table). */
struct actx {
	float d;
	int32_t nb128[8];
};

_Static_assert(sizeof(struct actx) <= sizeof(struct act6),
	       "the stack's prepared blocks hold an actx");

static inline void actx_prep(const struct edgeq_block_q8_K *a, int64_t nsb,
			     struct actx *o)
{
	for (int64_t i = 0; i < nsb; i++) {
		o[i].d = a[i].d;
		for (int j = 0; j < 8; j++)
			o[i].nb128[j] = -128 * (a[i].bsums[2 * j] +
						a[i].bsums[2 * j + 1]);
	}
}

/* Per Q8_K super-block: its scale and each 16-byte group's sum times
 * -4 (Q3_K: its chains start there, turning q + 4 back into q) or 1
 * (Q2_K: the mins' sums). */
struct act16 {
	float d;
	int32_t b[16];
};

_Static_assert(sizeof(struct act16) <= sizeof(struct act6),
	       "the stack's prepared blocks hold an act16");

static inline void act16_prep(const struct edgeq_block_q8_K *a, int64_t nsb,
			      int32_t mul, struct act16 *o)
{
	for (int64_t i = 0; i < nsb; i++) {
		o[i].d = a[i].d;
		for (int g = 0; g < 16; g++)
			o[i].b[g] = mul * a[i].bsums[g];
	}
}

/* The preparations above, one signature for the packed drivers. */
static inline void prep_q80(enum edgeq_type t, const void *a, int64_t nblk,
			    void *out)
{
	(void)t;
	act_prep(t, a, nblk, out);
}

static inline void prep_k(enum edgeq_type t, const void *a, int64_t nblk,
			  void *out)
{
	(void)t;
	actk_prep(a, nblk, out);
}

static inline void prep_xs(enum edgeq_type t, const void *a, int64_t nblk,
			   void *out)
{
	(void)t;
	actx_prep(a, nblk, out);
}

static inline void prep_q3(enum edgeq_type t, const void *a, int64_t nblk,
			   void *out)
{
	(void)t;
	act16_prep(a, nblk, -4, out);
}

static inline void prep_q2(enum edgeq_type t, const void *a, int64_t nblk,
			   void *out)
{
	(void)t;
	act16_prep(a, nblk, 1, out);
}

static inline void prep_q6(enum edgeq_type t, const void *a, int64_t nblk,
			   void *out)
{
	(void)t;
	act6_prep(a, nblk, out);
}

#endif /* EDGEQ_KERNELS_X86_PACK_ACT_H */
