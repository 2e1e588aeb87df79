// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * x86-64 AVX-512 VNNI additions to the AVX2 table (Zen 4/5, Ice Lake and
 * later): Q8_0/Q4_0 dots and the decode matvec with vpdpbusd; the prefill
 * matmul is in avx512_q8.c (Q4_0/Q8_0) and avx512_qk.c (Q4_K/Q6_K). The
 * canonical order (scalar.c) is an exact integer sum per 32-element block
 * and one float chain per output in block order,
 * acc = fmaf(d_w * d_a, (float)isum, acc): integer work may go in any
 * order, so this table is bit-identical to scalar, AVX2 and NEON.
 * Everything else is the AVX2 table.
 *
 * vpdpbusd multiplies unsigned by signed bytes: Q4_0 nibbles are already
 * unsigned (sum q*y, then subtract 8 * sum y); Q8_0 weights are shifted by
 * 128 (sum (w+128)*y, then subtract 128 * sum y). The subtraction is the
 * accumulator's start value, per 4-element lane. All sums are exact int32.
 *
 * The matvec takes 8 rows at a time: per block pair one zmm of lane sums
 * per row, a transpose-add tree turns the 8 zmm into one vector of the 16
 * (row, block) sums, and the 8 rows' float chains advance with two fmas.
 */
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/x86/hsum.h"
#include "kernels/x86/hsum512.h"
#include "kernels/x86/avx512_q8.h"
#include "kernels/x86/avx512_qk.h"

static inline float h2f(uint16_t h)
{
	return _cvtsh_ss(h);
}

static inline int bias_shift(enum edgeq_type t)
{
	return t == EDGEQ_TYPE_Q4_0 ? 3 : 7; /* 8 or 128 times sum y */
}

/*
 * Lane layouts of a block pair (blocks 2p, 2p+1) in one zmm, 4 elements
 * per int32 lane, by 128-bit chunk:
 *  - Q4_0: block 2p elements 0-15, block 2p+1 elements 0-15, block 2p
 *    elements 16-31, block 2p+1 elements 16-31 (the low nibbles of both
 *    blocks, then the high ones);
 *  - Q8_0: block 2p (chunks 0, 1), then block 2p+1 (chunks 2, 3).
 * Weights as unsigned bytes (Q4_0 nibbles, Q8_0 w + 128).
 */
static inline __m512i wpair_q4_0(const struct edgeq_block_q4_0 *b)
{
	__m256i v = _mm256_inserti128_si256(
		_mm256_castsi128_si256(
			_mm_loadu_si128((const __m128i *)b[0].qs)),
		_mm_loadu_si128((const __m128i *)b[1].qs), 1);

	return _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(v),
						   _mm256_srli_epi16(v, 4), 1),
				_mm512_set1_epi8(0x0f));
}

static inline __m512i wpair_q8_0(const struct edgeq_block_q8_0 *b)
{
	__m512i v = _mm512_inserti64x4(
		_mm512_castsi256_si512(
			_mm256_loadu_si256((const __m256i *)b[0].qs)),
		_mm256_loadu_si256((const __m256i *)b[1].qs), 1);

	return _mm512_xor_si512(v, _mm512_set1_epi8((char)0x80));
}

static inline __m512i wpair(enum edgeq_type t, const void *row, int64_t p)
{
	if (t == EDGEQ_TYPE_Q4_0)
		return wpair_q4_0((const struct edgeq_block_q4_0 *)row + 2 * p);
	return wpair_q8_0((const struct edgeq_block_q8_0 *)row + 2 * p);
}

/* Activation pair p in the weights' layout, and minus the bias of the
 * unsigned weights (8 or 128 times each lane's sum). */
static inline __m512i ypair(enum edgeq_type t, const void *a, int64_t p,
			    __m512i *nbias)
{
	const struct edgeq_block_q8_0 *y =
		(const struct edgeq_block_q8_0 *)a + 2 * p;
	__m256i y0 = _mm256_loadu_si256((const __m256i *)y[0].qs);
	__m256i y1 = _mm256_loadu_si256((const __m256i *)y[1].qs);
	__m512i v, s;

	if (t == EDGEQ_TYPE_Q4_0)
		v = _mm512_inserti64x4(
			_mm512_castsi256_si512(
				_mm256_permute2x128_si256(y0, y1, 0x20)),
			_mm256_permute2x128_si256(y0, y1, 0x31), 1);
	else
		v = _mm512_inserti64x4(_mm512_castsi256_si512(y0), y1, 1);
	s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), v);
	*nbias = _mm512_sub_epi32(_mm512_setzero_si512(),
				  _mm512_slli_epi32(s, bias_shift(t)));
	return v;
}

/* A single block (the odd last one) as 32 unsigned bytes in element order,
 * and its activation bias (256-bit: one block). */
static inline __m256i wblock(enum edgeq_type t, const void *row, int64_t i)
{
	if (t == EDGEQ_TYPE_Q4_0) {
		const struct edgeq_block_q4_0 *b =
			(const struct edgeq_block_q4_0 *)row + i;
		__m128i q = _mm_loadu_si128((const __m128i *)b->qs);
		__m128i m = _mm_set1_epi8(0x0f);

		return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m),
					_mm_and_si128(q, m));
	}
	return _mm256_xor_si256(
		_mm256_loadu_si256(
			(const __m256i *)((const struct edgeq_block_q8_0 *)row +
					  i)
				->qs),
		_mm256_set1_epi8((char)0x80));
}

static inline __m256i yblock(enum edgeq_type t, const void *a, int64_t i,
			     __m256i *nbias)
{
	__m256i v = _mm256_loadu_si256(
		(const __m256i *)((const struct edgeq_block_q8_0 *)a)[i].qs);
	__m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(),
					_mm256_set1_epi8(1), v);

	*nbias = _mm256_sub_epi32(_mm256_setzero_si256(),
				  _mm256_slli_epi32(s, bias_shift(t)));
	return v;
}

static inline float wscale(enum edgeq_type t, const void *row, int64_t i)
{
	if (t == EDGEQ_TYPE_Q4_0)
		return h2f(((const struct edgeq_block_q4_0 *)row)[i].d);
	return h2f(((const struct edgeq_block_q8_0 *)row)[i].d);
}

/* The two block sums of a pair's lane sums p (layout above). */
static inline void pair_sums(enum edgeq_type t, __m512i p, int32_t *s0,
			     int32_t *s1)
{
	__m256i lo = _mm512_castsi512_si256(p),
		hi = _mm512_extracti64x4_epi64(p, 1);

	if (t == EDGEQ_TYPE_Q4_0) {
		/* chunks 0, 2: block 2p; 1, 3: block 2p+1 */
		__m256i v = _mm256_add_epi32(lo, hi);

		*s0 = hsum_i32(_mm256_permute2x128_si256(v, v, 0x80));
		*s1 = hsum_i32(_mm256_permute2x128_si256(v, v, 0x81));
	} else {
		*s0 = hsum_i32(lo);
		*s1 = hsum_i32(hi);
	}
}

static inline float dot512(enum edgeq_type t, int64_t n, const void *w,
			   const void *a)
{
	const struct edgeq_block_q8_0 *y = a;
	int64_t nb = n / EDGEQ_QK8_0, p = 0;
	float acc = 0;

	for (; 2 * p + 2 <= nb; p++) {
		__m512i nbias, yv = ypair(t, a, p, &nbias);
		__m512i s = _mm512_dpbusd_epi32(nbias, wpair(t, w, p), yv);
		int32_t s0, s1;

		pair_sums(t, s, &s0, &s1);
		acc = fmaf(wscale(t, w, 2 * p) * h2f(y[2 * p].d), (float)s0,
			   acc);
		acc = fmaf(wscale(t, w, 2 * p + 1) * h2f(y[2 * p + 1].d),
			   (float)s1, acc);
	}
	if (2 * p < nb) {
		__m256i nbias, yv = yblock(t, a, 2 * p, &nbias);
		__m256i s = _mm256_dpbusd_epi32(nbias, wblock(t, w, 2 * p), yv);

		acc = fmaf(wscale(t, w, 2 * p) * h2f(y[2 * p].d),
			   (float)hsum_i32(s), acc);
	}
	return acc;
}

static float vec_dot_q8_0(int64_t n, const void *w, const void *a)
{
	return dot512(EDGEQ_TYPE_Q8_0, n, w, a);
}

static float vec_dot_q4_0(int64_t n, const void *w, const void *a)
{
	return dot512(EDGEQ_TYPE_Q4_0, n, w, a);
}

/* ---- decode matvec: 8 rows at a time ---- */

/* An activation pair prepared once per call: bytes in the weights' layout,
 * minus the bias, the two block scales (lanes 0-7, 8-15). */
struct act_pair {
	__m512i y, nbias;
	__m512 dy;
};

static inline __attribute__((always_inline)) void
rows8_512(enum edgeq_type t, int64_t nb, const char *w, size_t rs,
	  const struct act_pair *ap, const void *a, const float *dy, float *y,
	  bool prefetch)
{
	const size_t pb = t == EDGEQ_TYPE_Q4_0 ?
				  2 * sizeof(struct edgeq_block_q4_0) :
				  2 * sizeof(struct edgeq_block_q8_0);
	/* (row, block) sums to lanes: block 2p rows 0-7, block 2p+1 rows 0-7 */
	const __m512i i0 = t == EDGEQ_TYPE_Q4_0 ?
				   _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0) :
				   _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
	const __m512i i1 =
		t == EDGEQ_TYPE_Q4_0 ?
			_mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4) :
			_mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
	const int pf_lines = prefetch_lines(rs, nb, prefetch);
	__m256 acc = _mm256_setzero_ps();
	int64_t p = 0;

	for (; 2 * p + 2 <= nb; p++) {
		const char *wp = w + p * pb;

		/* the next 8 rows (contiguous), spread over this group */
		for (int k = 0; k < pf_lines; k++)
			_mm_prefetch(w + 8 * rs + (p * pf_lines + k) * 64,
				     _MM_HINT_T0);
		__m512i s[8], u0, u1, sum;
		__m512 d, sf;
		__m256i h = _mm256_setzero_si256();

		_Pragma("GCC unroll 8") for (int r = 0; r < 8; r++)
		{
			s[r] = _mm512_dpbusd_epi32(
				ap[p].nbias, wpair(t, wp + r * rs, 0), ap[p].y);
			/* word r: block 2p's scale, 8 + r: block 2p+1's */
			h = _mm256_mask_loadu_epi16(h, (__mmask16)(1u << r),
						    wp + r * rs - 2 * r);
			h = _mm256_mask_loadu_epi16(h, (__mmask16)(0x100u << r),
						    wp + r * rs + pb / 2 -
							    2 * (8 + r));
		}
		u0 = hsum_4x4(s[0], s[1], s[2], s[3]);
		u1 = hsum_4x4(s[4], s[5], s[6], s[7]);
		sum = _mm512_add_epi32(_mm512_permutex2var_epi64(u0, i0, u1),
				       _mm512_permutex2var_epi64(u0, i1, u1));
		sf = _mm512_cvtepi32_ps(sum);
		d = _mm512_mul_ps(_mm512_cvtph_ps(h), ap[p].dy);
		acc = _mm256_fmadd_ps(_mm512_castps512_ps256(d),
				      _mm512_castps512_ps256(sf), acc);
		acc = _mm256_fmadd_ps(_mm512_extractf32x8_ps(d, 1),
				      _mm512_extractf32x8_ps(sf, 1), acc);
	}
	if (2 * p < nb) { /* the odd last block */
		__m256i nbias, yv = yblock(t, a, 2 * p, &nbias), s[8];
		float dx[8];

		for (int r = 0; r < 8; r++) {
			s[r] = _mm256_dpbusd_epi32(
				nbias, wblock(t, w + r * rs, 2 * p), yv);
			dx[r] = wscale(t, w + r * rs, 2 * p);
		}
		acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(dx),
						    _mm256_set1_ps(dy[2 * p])),
				      _mm256_cvtepi32_ps(hsum_8x8(s)), acc);
	}
	_mm256_storeu_ps(y, acc);
}

/* Activation pairs and block scales of one activation row (nb blocks). */
static void act_prep(enum edgeq_type t, const void *a, int64_t nb,
		     struct act_pair *ap, float *dy)
{
	const struct edgeq_block_q8_0 *ya = a;

	for (int64_t i = 0; i < nb; i++)
		dy[i] = h2f(ya[i].d);
	for (int64_t p = 0; p < nb / 2; p++) {
		ap[p].y = ypair(t, a, p, &ap[p].nbias);
		ap[p].dy = _mm512_insertf32x8(_mm512_set1_ps(dy[2 * p]),
					      _mm256_set1_ps(dy[2 * p + 1]), 1);
	}
}

/*
 * Q4_0 with VBMI and GFNI (Zen 4/5, Ice Lake and later): one masked 36-byte
 * load per row and block pair; vpermb puts the two blocks' quants into the
 * pair layout above (qs of both blocks, twice) and one gf2p8affineqb takes
 * the low nibbles in chunks 0-1 and the high ones (shifted down) in chunks
 * 2-3. The 16 fp16 scales come from the same registers with a tree of 7
 * word permutes. The integer sums and the float chain are those of
 * rows8_512.
 */
#define VBMI_TARGET                                                            \
	__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni," \
			      "avx512vbmi,gfni")))

static bool q4_0_vbmi_on;

/* 8-row groups the VBMI Q4_0 matvec prefetches ahead (3 and 4 measured no
 * better at 2 threads) */
#define PF_AHEAD 2

VBMI_TARGET static void rows8_q4_0_vbmi(int64_t nb, const char *w, size_t rs,
					const struct act_pair *ap,
					const void *a, const float *dy,
					float *y, bool prefetch)
{
	const size_t pb = 2 * sizeof(struct edgeq_block_q4_0);
	const __m512i i0 = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
	const __m512i i1 = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
	/* byte j of the pair layout: chunk j / 16 odd: block 2p+1 (offset 20),
	 * even: block 2p (offset 2), quant j % 16 */
	const __m512i perm = _mm512_set_epi32(
		0x23222120, 0x1f1e1d1c, 0x1b1a1918, 0x17161514, 0x11100f0e,
		0x0d0c0b0a, 0x09080706, 0x05040302, 0x23222120, 0x1f1e1d1c,
		0x1b1a1918, 0x17161514, 0x11100f0e, 0x0d0c0b0a, 0x09080706,
		0x05040302);
	/* bit matrices: qwords 0-3 keep bits 0-3, 4-7 move bits 4-7 down */
	const __m512i nib = _mm512_set_epi64(
		0x1020408000000000, 0x1020408000000000, 0x1020408000000000,
		0x1020408000000000, 0x0102040800000000, 0x0102040800000000,
		0x0102040800000000, 0x0102040800000000);
	/* scales: words 0 and 9 of a row's pair; rows r, r+1 -> words
	 * (d0 r, d0 r+1, d1 r, d1 r+1), then 4 rows, then 8 */
	const __m256i s1 = _mm256_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					    25, 9, 16, 0);
	const __m256i s2 = _mm256_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 19, 18, 3,
					    2, 17, 16, 1, 0);
	const __m256i s3 = _mm256_set_epi16(23, 22, 21, 20, 7, 6, 5, 4, 19, 18,
					    17, 16, 3, 2, 1, 0);
	const int pf_lines = prefetch_lines(rs, nb, prefetch);
	__m256 acc = _mm256_setzero_ps();
	int64_t p = 0;

	for (; 2 * p + 2 <= nb; p++) {
		const char *wp = w + p * pb;

		/* the 8 rows after the next 8 (contiguous), spread over
		 * this group: the hardware prefetchers do not follow these
		 * 8 streams, and one group ahead is too late from DRAM */
		for (int k = 0; k < pf_lines; k++)
			_mm_prefetch(w + 8 * PF_AHEAD * rs +
					     (p * pf_lines + k) * 64,
				     _MM_HINT_T0);
		__m512i s[8], u0, u1, sum;
		__m256i t[4], h;
		__m512 d, sf;

		_Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
		{
			__m512i r0 = _mm512_maskz_loadu_epi8(0xfffffffffull,
							     wp + 2 * k * rs);
			__m512i r1 = _mm512_maskz_loadu_epi8(
				0xfffffffffull, wp + (2 * k + 1) * rs);

			s[2 * k] = _mm512_dpbusd_epi32(
				ap[p].nbias,
				_mm512_gf2p8affine_epi64_epi8(
					_mm512_permutexvar_epi8(perm, r0), nib,
					0),
				ap[p].y);
			s[2 * k + 1] = _mm512_dpbusd_epi32(
				ap[p].nbias,
				_mm512_gf2p8affine_epi64_epi8(
					_mm512_permutexvar_epi8(perm, r1), nib,
					0),
				ap[p].y);
			t[k] = _mm256_permutex2var_epi16(
				_mm512_castsi512_si256(r0), s1,
				_mm512_castsi512_si256(r1));
		}
		h = _mm256_permutex2var_epi16(
			_mm256_permutex2var_epi16(t[0], s2, t[1]), s3,
			_mm256_permutex2var_epi16(t[2], s2, t[3]));
		u0 = hsum_4x4(s[0], s[1], s[2], s[3]);
		u1 = hsum_4x4(s[4], s[5], s[6], s[7]);
		sum = _mm512_add_epi32(_mm512_permutex2var_epi64(u0, i0, u1),
				       _mm512_permutex2var_epi64(u0, i1, u1));
		sf = _mm512_cvtepi32_ps(sum);
		d = _mm512_mul_ps(_mm512_cvtph_ps(h), ap[p].dy);
		acc = _mm256_fmadd_ps(_mm512_castps512_ps256(d),
				      _mm512_castps512_ps256(sf), acc);
		acc = _mm256_fmadd_ps(_mm512_extractf32x8_ps(d, 1),
				      _mm512_extractf32x8_ps(sf, 1), acc);
	}
	if (2 * p < nb) { /* the odd last block */
		__m256i nbias, yv = yblock(EDGEQ_TYPE_Q4_0, a, 2 * p, &nbias),
			       s[8];
		float dx[8];

		for (int r = 0; r < 8; r++) {
			s[r] = _mm256_dpbusd_epi32(
				nbias,
				wblock(EDGEQ_TYPE_Q4_0, w + r * rs, 2 * p), yv);
			dx[r] = wscale(EDGEQ_TYPE_Q4_0, w + r * rs, 2 * p);
		}
		acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(dx),
						    _mm256_set1_ps(dy[2 * p])),
				      _mm256_cvtepi32_ps(hsum_8x8(s)), acc);
	}
	_mm256_storeu_ps(y, acc);
}

bool edgeq_avx512_q4_0_vbmi(bool on)
{
	__builtin_cpu_init();
	q4_0_vbmi_on = on && __builtin_cpu_supports("avx512vbmi") &&
		       __builtin_cpu_supports("gfni");
	return q4_0_vbmi_on;
}

static inline void rows8(enum edgeq_type t, int64_t nb, const char *w,
			 size_t rs, const struct act_pair *ap, const void *a,
			 const float *dy, float *y, bool prefetch)
{
	if (t == EDGEQ_TYPE_Q4_0 && q4_0_vbmi_on)
		rows8_q4_0_vbmi(nb, w, rs, ap, a, dy, y, prefetch);
	else if (t == EDGEQ_TYPE_Q4_0)
		rows8_512(EDGEQ_TYPE_Q4_0, nb, w, rs, ap, a, dy, y, prefetch);
	else
		rows8_512(EDGEQ_TYPE_Q8_0, nb, w, rs, ap, a, dy, y, prefetch);
}

#define AP_STACK 128 /* pairs: n up to 8192 on the stack (25 KiB) */
static void matvec512(enum edgeq_type t, const void *w, int64_t n, int64_t row0,
		      int64_t row1, const void *a, float *y)
{
	size_t rs = edgeq_row_size(t, n);
	int64_t nb = n / EDGEQ_QK8_0, np = nb / 2, r = row0;
	struct act_pair stack[AP_STACK] __attribute__((aligned(64))), *ap;
	float dy_stack[2 * AP_STACK + 1], *dy;
	int64_t pre;
	bool vbmi;

	if (row1 - row0 < 8)
		goto rest;
	ap = np <= AP_STACK ? stack :
			      aligned_alloc(64, sizeof(*ap) * (size_t)np);
	dy = np <= AP_STACK ? dy_stack : malloc(sizeof(float) * (size_t)nb);
	if (!ap || !dy) {
		if (ap != stack)
			free(ap);
		if (dy != dy_stack)
			free(dy);
		goto rest;
	}
	/* VBMI Q4_0: its first PF_AHEAD groups now, then each prefetches the
	 * group PF_AHEAD after it, if that is in [row0, row1): the rows after
	 * it are another chunk, usually another thread's */
	vbmi = t == EDGEQ_TYPE_Q4_0 && q4_0_vbmi_on;
	pre = !vbmi ? 0 : row1 - r < 8 * PF_AHEAD ? row1 - r : 8 * PF_AHEAD;
	for (size_t o = 0; o < (size_t)pre * rs; o += 64)
		_mm_prefetch((const char *)w + r * rs + o, _MM_HINT_T0);
	act_prep(t, a, nb, ap, dy);
	for (; r + 8 <= row1; r += 8)
		rows8(t, nb, (const char *)w + r * rs, rs, ap, a, dy, y + r,
		      !vbmi || r + 8 * PF_AHEAD + 8 <= row1);
	if (ap != stack)
		free(ap);
	if (dy != dy_stack)
		free(dy);
rest:
	for (; r < row1; r++)
		y[r] = dot512(t, n, (const char *)w + r * rs, a);
}

static void matvec_avx512(enum edgeq_type type, const void *w, int64_t n,
			  int64_t row0, int64_t row1, const void *a, float *y)
{
	if (type == EDGEQ_TYPE_Q4_0 || type == EDGEQ_TYPE_Q8_0) {
		matvec512(type, w, n, row0, row1, a, y);
		return;
	}
	if ((type == EDGEQ_TYPE_Q2_K || type == EDGEQ_TYPE_Q3_K ||
	     type == EDGEQ_TYPE_Q4_K || type == EDGEQ_TYPE_Q5_K ||
	     type == EDGEQ_TYPE_Q6_K || type == EDGEQ_TYPE_IQ4_XS) &&
	    edgeq_avx512_matvec_qk(type, w, n, row0, row1, a, y))
		return;
	edgeq_kernel_ops_avx2.matvec(type, w, n, row0, row1, a, y);
}

static void matmul_avx512(enum edgeq_type type, const void *w, int64_t n,
			  int64_t row0, int64_t row1, const void *a,
			  size_t a_stride, int64_t nb, float *y, int64_t ldy)
{
	if (type == EDGEQ_TYPE_Q4_0 || type == EDGEQ_TYPE_Q8_0 ||
	    type == EDGEQ_TYPE_Q5_0 || type == EDGEQ_TYPE_IQ4_NL ||
	    type == EDGEQ_TYPE_Q4_1 || type == EDGEQ_TYPE_Q5_1) {
		edgeq_avx512_q8_matmul(type, w, n, row0, row1, a, a_stride, nb,
				       y, ldy);
		return;
	}
	if ((type == EDGEQ_TYPE_Q2_K || type == EDGEQ_TYPE_Q3_K ||
	     type == EDGEQ_TYPE_Q4_K || type == EDGEQ_TYPE_Q5_K ||
	     type == EDGEQ_TYPE_Q6_K || type == EDGEQ_TYPE_IQ4_XS) &&
	    edgeq_avx512_matmul_qk(type, w, n, row0, row1, a, a_stride, nb, y,
				   ldy))
		return;
	edgeq_kernel_ops_avx2.matmul(type, w, n, row0, row1, a, a_stride, nb, y,
				     ldy);
}

static struct edgeq_kernel_ops table;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	table = edgeq_kernel_ops_avx2;
	table.name = "avx512";
	table.vec_dot[EDGEQ_TYPE_Q8_0] = vec_dot_q8_0;
	table.vec_dot[EDGEQ_TYPE_Q4_0] = vec_dot_q4_0;
	table.matvec = matvec_avx512;
	table.matmul = matmul_avx512;
	table.attn_scores_f16 = edgeq_attn_scores_f16_avx512;
	table.attn_av_f16 = edgeq_attn_av_f16_avx512;
	table.softmax = edgeq_softmax_avx512;
	table.silu_mul = edgeq_silu_mul_avx512;
	table.gelu_mul = edgeq_gelu_mul_avx512;
	table.quantize_act = edgeq_quantize_act_avx512;
	table.attn_scores_f16_g = edgeq_attn_scores_f16_g_avx512;
	table.attn_av_f16_g = edgeq_attn_av_f16_g_avx512;
	table.attn_scores_f16_t = edgeq_attn_scores_f16_t_avx512;
	table.attn_av_f16_t = edgeq_attn_av_f16_t_avx512;
	table.attn_av_q8_0_t = edgeq_attn_av_q8_0_t_avx512;
	table.pack16[EDGEQ_TYPE_Q4_0] = true;
	table.pack16[EDGEQ_TYPE_Q8_0] = true;
	table.pack16[EDGEQ_TYPE_Q5_0] = true;
	table.pack16[EDGEQ_TYPE_Q4_1] = true;
	table.pack16[EDGEQ_TYPE_Q5_1] = true;
	table.pack16[EDGEQ_TYPE_IQ4_NL] = true;
	table.pack16[EDGEQ_TYPE_IQ4_XS] = true;
	table.pack16[EDGEQ_TYPE_Q3_K] = true;
	table.pack16[EDGEQ_TYPE_Q2_K] = true;
	table.pack16[EDGEQ_TYPE_Q4_K] = true;
	table.pack16[EDGEQ_TYPE_Q5_K] = true;
	table.pack16[EDGEQ_TYPE_Q6_K] = true;
	table.matvec_packed = edgeq_avx512_matvec_packed;
	table.matmul_packed = edgeq_avx512_matmul_packed;
	edgeq_avx512_q4_0_vbmi(true);
}

const struct edgeq_kernel_ops *edgeq_kernel_ops_avx512(void)
{
	pthread_once(&table_once, table_init);
	return &table;
}
