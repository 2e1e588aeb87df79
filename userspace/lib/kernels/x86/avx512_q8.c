// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * AVX-512 VNNI prefill matmul for Q4_0, Q8_0, Q5_0, IQ4_NL, Q4_1 and Q5_1
 * weights x Q8_0 activations: one output row per 32-bit lane.
 *
 * The canonical order (scalar.c) is, per output, an exact integer dot
 * isum_i per 32-element block and one float step per block in block
 * order: acc = fmaf(d_w * d_a, (float)isum_i, acc), from 0.0f. So a lane
 * may hold a whole output: for a group of 16 rows the weights of block i
 * are prepared as 8 zmm, zmm g holding in lane r row r's 4 unsigned bytes
 * of elements 4g..4g+3 (Q4_0: nibbles; Q8_0: w + 128; Q5_0 and IQ4_NL,
 * whose values are signed bytes too: value + 128; the affine Q4_1 and Q5_1
 * their unsigned values, no bias, and a tenth zmm of mins), plus the 16 rows'
 * scales as floats. For each token, vpdpbusd with the token's 4 bytes
 * broadcast to all lanes adds 4 products per lane; 8 of them, started at
 * the bias -8 (Q4_0) or -128 (Q8_0) times the sum of the token's block,
 * give the 16 exact signed sums; then one cvt, one mul (d_w * d_a, exact:
 * two fp16 values) and one fma per 16 outputs. 8 tokens run together: 8
 * weight zmm + scales + 8 integer + 8 float accumulators fill the 32
 * registers, and the multiply ports do 8 vpdpbusd + 2 float ops per 512
 * MACs.
 *
 * Activations are prepared once per call and token block (their bytes,
 * bias and scale for 8 tokens per 320-byte record, block by block);
 * weights once per 16 rows and token block (576 bytes per block). The
 * token block is sized so that its prepared activations stay in L2.
 * Missing rows (row1 - row0 not a multiple of 16) repeat the last row and
 * are not stored; missing tokens are zeros and not stored.
 */
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/x86/avx512_q8.h"

#define ROWS 16	     /* output rows per group: one per lane */
#define TOKS 8	     /* tokens per tile */
#define WVECS 9	     /* prepared zmm per block: 8 byte groups + scales */
#define WVECS_AFF 10 /* Q4_1, Q5_1: + mins */

static inline bool affine(enum edgeq_type t)
{
	return t == EDGEQ_TYPE_Q4_1 || t == EDGEQ_TYPE_Q5_1;
}
/* prepared activations per token block: at most this many bytes */
#define ACT_BYTES (768 << 10)

/* 8 tokens' block i: bytes, -(8 or 128) * sum of the bytes, scales. */
struct act8 {
	int8_t q[TOKS][EDGEQ_QK8_0];
	int32_t bias[TOKS];
	float da[TOKS];
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct act8) == 320, "act8 is 5 cache lines");

static inline int32_t ld32(const int8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Sum of the 32 signed bytes at @q. */
static inline int32_t bsum32(__m256i q)
{
	__m256i s = _mm256_sad_epu8(_mm256_xor_si256(q, _mm256_set1_epi8(-128)),
				    _mm256_setzero_si256());
	__m128i t = _mm_add_epi64(_mm256_castsi256_si128(s),
				  _mm256_extracti128_si256(s, 1));

	t = _mm_add_epi64(t, _mm_unpackhi_epi64(t, t));
	return _mm_cvtsi128_si32(t) - 32 * 128;
}

/* Tokens [b0, b1) into ap[j * nblk + i] (tile j, block i). */
static void prep_act(const char *a, size_t as, int64_t b0, int64_t b1,
		     int64_t nblk, int shift, struct act8 *ap)
{
	for (int64_t j = 0; b0 + j * TOKS < b1; j++)
		for (int k = 0; k < TOKS; k++) {
			int64_t b = b0 + j * TOKS + k;
			const struct edgeq_block_q8_0 *x =
				(const struct edgeq_block_q8_0 *)(a + b * as);

			for (int64_t i = 0; i < nblk; i++) {
				struct act8 *p = &ap[j * nblk + i];
				__m256i q = _mm256_setzero_si256();
				float d = 0.0f;

				if (b < b1) {
					q = _mm256_loadu_si256(
						(const __m256i *)x[i].qs);
					d = _cvtsh_ss(x[i].d);
				}
				_mm256_store_si256((__m256i *)p->q[k], q);
				p->bias[k] = -(bsum32(q) * (1 << shift));
				p->da[k] = d;
			}
		}
}

/*
 * 16 rows x 4 dwords (the 16 bytes at rp[r] + off) transposed: d[g] lane r
 * = dword g of row r. z[j] holds rows j, 4 + j, 8 + j, 12 + j in its four
 * 128-bit lanes, so the in-lane 4x4 transposes land row r in lane r.
 */
static inline __m512i rows4(const char *const rp[ROWS], int j, size_t off)
{
	__m512i z = _mm512_castsi128_si512(
		_mm_loadu_si128((const __m128i *)(rp[j] + off)));

	z = _mm512_inserti32x4(
		z, _mm_loadu_si128((const __m128i *)(rp[4 + j] + off)), 1);
	z = _mm512_inserti32x4(
		z, _mm_loadu_si128((const __m128i *)(rp[8 + j] + off)), 2);
	return _mm512_inserti32x4(
		z, _mm_loadu_si128((const __m128i *)(rp[12 + j] + off)), 3);
}

static inline __attribute__((always_inline)) void
transpose16x4(const char *const rp[ROWS], size_t off, __m512i d[4])
{
	__m512i z0 = rows4(rp, 0, off), z1 = rows4(rp, 1, off);
	__m512i z2 = rows4(rp, 2, off), z3 = rows4(rp, 3, off);
	__m512i t0 = _mm512_unpacklo_epi32(z0, z1);
	__m512i t1 = _mm512_unpackhi_epi32(z0, z1);
	__m512i t2 = _mm512_unpacklo_epi32(z2, z3);
	__m512i t3 = _mm512_unpackhi_epi32(z2, z3);

	d[0] = _mm512_unpacklo_epi64(t0, t2);
	d[1] = _mm512_unpackhi_epi64(t0, t2);
	d[2] = _mm512_unpacklo_epi64(t1, t3);
	d[3] = _mm512_unpackhi_epi64(t1, t3);
}

/* Block i of the 16 rows at rp[] (row r at w0 + vidx[r]) into out[0..9). */
static inline __attribute__((always_inline)) void
prep_w(enum edgeq_type t, const char *const rp[ROWS], const char *w0,
       __m512i vidx, int64_t i, __m512i *out)
{
	__m512i d[4], g;

	if (t == EDGEQ_TYPE_IQ4_NL) {
		/* Q4_0's layout; the table as value + 128 through vpshufb */
		const __m512i m4 = _mm512_set1_epi8(0x0f);
		const __m512i tab = _mm512_broadcast_i32x4(_mm_xor_si128(
			_mm_loadu_si128((const __m128i *)edgeq_kvalues_iq4nl),
			_mm_set1_epi8((char)0x80)));
		size_t off = (size_t)i * sizeof(struct edgeq_block_iq4_nl);

		transpose16x4(rp, off + 2, d);
		_Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
		{
			out[k] = _mm512_shuffle_epi8(tab, _mm512_and_si512(d[k],
									   m4));
			out[4 + k] = _mm512_shuffle_epi8(
				tab, _mm512_and_si512(
					     _mm512_srli_epi32(d[k], 4), m4));
		}
		g = _mm512_i32gather_epi32(vidx, w0 + off, 1);
	} else if (t == EDGEQ_TYPE_Q4_1) {
		const __m512i m4 = _mm512_set1_epi8(0x0f);
		size_t off = (size_t)i * sizeof(struct edgeq_block_q4_1);

		transpose16x4(rp, off + 4, d);
		_Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
		{
			out[k] = _mm512_and_si512(d[k], m4);
			out[4 + k] = _mm512_and_si512(
				_mm512_srli_epi32(d[k], 4), m4);
		}
		g = _mm512_i32gather_epi32(vidx, w0 + off, 1);
	} else if (t == EDGEQ_TYPE_Q5_0 || t == EDGEQ_TYPE_Q5_1) {
		/* Q5_0: q - 16 + 128 = (nibble | qh bit << 4) + 112; Q5_1: q.
		 * The 4 qh bits of a dword's elements spread to bit 4 of its
		 * bytes. */
		const __m512i m4 = _mm512_set1_epi8(0x0f);
		const bool q51 = t == EDGEQ_TYPE_Q5_1;
		size_t off =
			(size_t)i * (q51 ? sizeof(struct edgeq_block_q5_1) :
					   sizeof(struct edgeq_block_q5_0));
		__m512i qh;

		transpose16x4(rp, off + (q51 ? 8 : 6), d);
		qh = _mm512_i32gather_epi32(vidx, w0 + off + (q51 ? 4 : 2), 1);
		_Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
		{
			__m512i x = _mm512_srli_epi32(
				qh, 4 * (k & 3) + 16 * (k >> 2));
			__m512i hb = _mm512_or_si512(
				_mm512_or_si512(
					_mm512_and_si512(x,
							 _mm512_set1_epi32(1)),
					_mm512_and_si512(
						_mm512_slli_epi32(x, 7),
						_mm512_set1_epi32(0x100))),
				_mm512_or_si512(
					_mm512_and_si512(
						_mm512_slli_epi32(x, 14),
						_mm512_set1_epi32(0x10000)),
					_mm512_and_si512(
						_mm512_slli_epi32(x, 21),
						_mm512_set1_epi32(0x1000000))));
			__m512i nib = _mm512_and_si512(
				k < 4 ? d[k] : _mm512_srli_epi32(d[k & 3], 4),
				m4);

			out[k] = _mm512_or_si512(nib, _mm512_slli_epi32(hb, 4));
			if (!q51)
				out[k] = _mm512_add_epi8(out[k],
							 _mm512_set1_epi8(112));
		}
		g = _mm512_i32gather_epi32(vidx, w0 + off, 1);
	} else if (t == EDGEQ_TYPE_Q4_0) {
		const __m512i m4 = _mm512_set1_epi8(0x0f);
		size_t off = (size_t)i * sizeof(struct edgeq_block_q4_0);

		transpose16x4(rp, off + 2, d);
		_Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
		{
			/* low nibbles: elements 4k..; high: 16 + 4k.. */
			out[k] = _mm512_and_si512(d[k], m4);
			out[4 + k] = _mm512_and_si512(
				_mm512_srli_epi32(d[k], 4), m4);
		}
		g = _mm512_i32gather_epi32(vidx, w0 + off, 1);
	} else {
		const __m512i s = _mm512_set1_epi8(-128);
		size_t off = (size_t)i * sizeof(struct edgeq_block_q8_0);

		transpose16x4(rp, off + 2, d);
		_Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
			out[k] = _mm512_xor_si512(d[k], s);
		transpose16x4(rp, off + 18, d);
		_Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
			out[4 + k] = _mm512_xor_si512(d[k], s);
		g = _mm512_i32gather_epi32(vidx, w0 + off, 1);
	}
	/* the low 16 bits of each gathered dword are the fp16 scale (the
	 * affine types' min the high 16) */
	out[8] = _mm512_castps_si512(_mm512_cvtph_ps(_mm512_cvtepi32_epi16(g)));
	if (affine(t))
		out[9] = _mm512_castps_si512(_mm512_cvtph_ps(
			_mm512_cvtepi32_epi16(_mm512_srli_epi32(g, 16))));
}

/* 16 rows (prepared: wb) x 8 tokens (prepared: ap), all blocks. The
 * affine types (aff) start each dot at 0 and add their min term with the
 * token's block sum (-bias: prepared with shift 0). */
static inline __attribute__((always_inline)) void
tile(bool aff, const __m512i *wb, const struct act8 *ap, int64_t nblk, float *y,
     int64_t ldy, int nt, __mmask16 m)
{
	const int wvecs = aff ? WVECS_AFF : WVECS;
	__m512 acc[TOKS];

	_Pragma("GCC unroll 8") for (int k = 0; k < TOKS; k++)
		acc[k] = _mm512_setzero_ps();
	for (int64_t i = 0; i < nblk; i++) {
		const __m512i *wv = wb + wvecs * i;
		const struct act8 *p = ap + i;
		__m512i w[8];
		__m512 dw = _mm512_castsi512_ps(_mm512_load_si512(wv + 8));

		_Pragma("GCC unroll 8") for (int g = 0; g < 8; g++)
			w[g] = _mm512_load_si512(wv + g);
		_Pragma("GCC unroll 8") for (int k = 0; k < TOKS; k++)
		{
			__m512i s = aff ? _mm512_setzero_si512() :
					  _mm512_set1_epi32(p->bias[k]);

			_Pragma("GCC unroll 8") for (int g = 0; g < 8; g++) s =
				_mm512_dpbusd_epi32(s, w[g],
						    _mm512_set1_epi32(ld32(
							    p->q[k] + 4 * g)));
			acc[k] = _mm512_fmadd_ps(
				_mm512_mul_ps(dw, _mm512_set1_ps(p->da[k])),
				_mm512_cvtepi32_ps(s), acc[k]);
			if (aff)
				acc[k] = _mm512_fmadd_ps(
					_mm512_mul_ps(_mm512_castsi512_ps(
							      _mm512_load_si512(
								      wv + 9)),
						      _mm512_set1_ps(p->da[k])),
					_mm512_set1_ps((float)-p->bias[k]),
					acc[k]);
		}
	}
	for (int k = 0; k < nt; k++)
		_mm512_mask_storeu_ps(y + k * ldy, m, acc[k]);
}

void edgeq_avx512_q8_matmul(enum edgeq_type type, const void *w, int64_t n,
			    int64_t row0, int64_t row1, const void *a,
			    size_t a_stride, int64_t nb, float *y, int64_t ldy)
{
	size_t rs = edgeq_row_size(type, n);
	int64_t nblk = n / EDGEQ_QK8_0;
	int shift = type == EDGEQ_TYPE_Q4_0 ? 3 : affine(type) ? 0 : 7;
	int wvecs = affine(type) ? WVECS_AFF : WVECS;
	int64_t tbmax, nblocks, tb;
	struct act8 *ap;
	__m512i *wb;

	if (row1 <= row0 || nb <= 0 || nblk <= 0)
		return;
	/* token block: prepared activations within ACT_BYTES, 8..256 tokens,
	 * blocks of equal size */
	tbmax = ACT_BYTES / (nblk * (int64_t)sizeof(struct act8) / TOKS);
	tbmax = tbmax < TOKS ? TOKS : tbmax > 256 ? 256 : tbmax / TOKS * TOKS;
	nblocks = (nb + tbmax - 1) / tbmax;
	tb = ((nb + nblocks - 1) / nblocks + TOKS - 1) / TOKS * TOKS;
	ap = aligned_alloc(64, (size_t)(tb / TOKS * nblk) * sizeof(*ap));
	wb = aligned_alloc(64, (size_t)(nblk * wvecs) * sizeof(*wb));
	if (!ap || !wb || rs * ROWS > 0x7fffffff) {
		free(ap);
		free(wb);
		edgeq_matmul_generic(edgeq_kernels_scalar(), type, w, n, row0,
				     row1, a, a_stride, nb, y, ldy);
		return;
	}
	for (int64_t b0 = 0; b0 < nb; b0 += tb) {
		int64_t b1 = b0 + tb < nb ? b0 + tb : nb;

		prep_act(a, a_stride, b0, b1, nblk, shift, ap);
		for (int64_t r0 = row0; r0 < row1; r0 += ROWS) {
			int nr = row1 - r0 < ROWS ? (int)(row1 - r0) : ROWS;
			const char *w0 = (const char *)w + r0 * rs;
			const char *rp[ROWS];
			int32_t idx[ROWS];
			__m512i vidx;

			for (int r = 0; r < ROWS; r++) {
				idx[r] = (int32_t)((r < nr ? r : nr - 1) * rs);
				rp[r] = w0 + idx[r];
			}
			vidx = _mm512_loadu_si512(idx);
			if (type == EDGEQ_TYPE_Q4_0)
				for (int64_t i = 0; i < nblk; i++)
					prep_w(EDGEQ_TYPE_Q4_0, rp, w0, vidx, i,
					       wb + WVECS * i);
			else if (type == EDGEQ_TYPE_Q5_0)
				for (int64_t i = 0; i < nblk; i++)
					prep_w(EDGEQ_TYPE_Q5_0, rp, w0, vidx, i,
					       wb + WVECS * i);
			else if (type == EDGEQ_TYPE_Q4_1)
				for (int64_t i = 0; i < nblk; i++)
					prep_w(EDGEQ_TYPE_Q4_1, rp, w0, vidx, i,
					       wb + WVECS_AFF * i);
			else if (type == EDGEQ_TYPE_Q5_1)
				for (int64_t i = 0; i < nblk; i++)
					prep_w(EDGEQ_TYPE_Q5_1, rp, w0, vidx, i,
					       wb + WVECS_AFF * i);
			else if (type == EDGEQ_TYPE_IQ4_NL)
				for (int64_t i = 0; i < nblk; i++)
					prep_w(EDGEQ_TYPE_IQ4_NL, rp, w0, vidx,
					       i, wb + WVECS * i);
			else
				for (int64_t i = 0; i < nblk; i++)
					prep_w(EDGEQ_TYPE_Q8_0, rp, w0, vidx, i,
					       wb + WVECS * i);
			for (int64_t b = b0; b < b1; b += TOKS) {
				int nt = b1 - b < TOKS ? (int)(b1 - b) : TOKS;

				if (affine(type))
					tile(true, wb,
					     ap + (b - b0) / TOKS * nblk, nblk,
					     y + b * ldy + r0, ldy, nt,
					     (__mmask16)((1u << nr) - 1));
				else
					tile(false, wb,
					     ap + (b - b0) / TOKS * nblk, nblk,
					     y + b * ldy + r0, ldy, nt,
					     (__mmask16)((1u << nr) - 1));
			}
		}
	}
	free(ap);
	free(wb);
}
