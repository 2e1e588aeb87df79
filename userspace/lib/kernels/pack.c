// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Weights repacked at load into groups of 16 interleaved rows (issue 19;
 * Documentation/kernels.rst, "Repacked weights"). For Q4_0 and Q8_0, per
 * group of 16 rows and per 32-column block:
 *
 *   16 fp16 scales, row r's at word r (32 bytes), then
 *   Q4_0: 4 x 64 bytes; in chunk c, bytes 4r..4r+3 are row r's
 *         qs[4c..4c+3] as the file has them (low nibbles: elements
 *         4c..4c+3, high nibbles: 16+4c..16+4c+3);
 *   Q8_0: 8 x 64 bytes; in chunk c, bytes 4r..4r+3 are row r's
 *         qs[4c..4c+3] + 128 (unsigned).
 *
 * and for Q4_K, per group and 256-column super-block (2368 bytes, 2.8 %
 * more than the file's 16 x 144: the 6-bit scales and mins unpacked):
 *
 *   16 fp16 d, 16 fp16 dmin (64 bytes), then the scales sc[j][r] and the
 *   mins m[j][r] of sub-block j and row r as bytes (2 x 128), then for
 *   each pair jj of sub-blocks (2jj: low nibbles, 2jj+1: high) 8 chunks
 *   of 64 bytes; in chunk c, bytes 4r..4r+3 are row r's
 *   qs[32jj + 4c..32jj + 4c + 3].
 *
 * Q6_K, per group and super-block (3360 bytes, the file's size): the 16
 * fp16 d, the int8 scales sc[g][r] of the 16 sub-blocks (256 bytes), 32
 * chunks of ql (chunk c: row r's ql[4c..4c+3]) and 16 of qh (chunk c:
 * row r's qh[4c..4c+3]).
 *
 * Q5_0, Q4_1, Q5_1 and IQ4_NL, per group and 32-column block (the file's
 * size): the 16 fp16 d, the affine types' 16 fp16 m, the 5-bit types'
 * qh (row r's 4 bytes at 4r of one chunk: bit j is bit 4 of element j),
 * then 4 chunks of nibbles as Q4_0's; IQ4_NL is Q4_0's layout.
 *
 * IQ4_XS, per group and super-block (2208 bytes, 1.5 % over the file:
 * the 6-bit scales unpacked): the 16 fp16 d, the int8 scales ls[j][r]
 * (value - 32) of the 8 sub-blocks (128 bytes), then 32 chunks of qs
 * (chunk c: row r's qs[4c..4c+3]; sub-block j's are chunks 4j..4j+3, its
 * low nibbles elements 32j + 4c'.., its high 32j + 16 + 4c'..).
 *
 * Q5_K is Q4_K's layout followed by 8 chunks of qh: in chunk c, bytes
 * 4r..4r+3 are row r's qh[4c..4c+3] (bit j: bit 4 of sub-block j's
 * element; inverted on aarch64, bit_chunks()), 2880 bytes per group and
 * super-block (2.3 % over the file).
 *
 * Q3_K and Q2_K keep Q6_K's frame (d at 0, the 16 sub-blocks' scales
 * from byte 32, the quants from byte 288) so one NEON tile serves the
 * three, with the scales ordered for the row group (edgeq_pk_sc16() in
 * pack_layout.h): Q3_K, 1824 bytes (3.6 % over the file: the 6-bit scales unpacked to int8,
 * value - 32), has 16 chunks of qs (chunk c: row r's qs[4c..4c+3]) and
 * from byte 1312 8 chunks of hmask (chunk c: row r's hmask[4c..4c+3], the
 * file's bit order); Q2_K, 1344 bytes (the file's size), has the file's
 * scale bytes (scale | min << 4), 16 chunks of qs and the 16 fp16 dmin at
 * byte 1312.
 *
 * So one 64-byte load holds 4 weights of each of the 16 rows, one 32-bit
 * lane per row: a SIMD table multiplies them by 4 broadcast activation
 * bytes and the 16 rows' exact block sums land in 16 lanes, with no
 * horizontal reduction and no per-call weight preparation; each group is
 * one sequential stream. A last group with fewer than 16 rows is padded
 * with zero rows (scale 0). The canonical reduction order is unchanged:
 * one fma of d_w * d_a and the exact block sum per block and output.
 */
#include <stdbool.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/pack_layout.h"

/* @nc chunks into @dst: row @r's src[4c..4c+3] at bytes 4r.. of chunk c */
static void chunks(uint8_t *dst, const uint8_t *src, int nc, int64_t r)
{
	for (int c = 0; c < nc; c++)
		memcpy(dst + 64 * c + 4 * r, src + 4 * c, 4);
}

/*
 * Q5_K's qh and Q3_K's hmask chunks (chunks() of the file's 32 bytes);
 * NEON's inverted: a compare of a set bit then marks the elements whose
 * bit is clear, the ones its signed weights take 16 (Q5_K, tile_k) or 4
 * (Q3_K, w16) off. The packed copy lives only in the process that made
 * it, so each ISA has its own.
 */
static void bit_chunks(uint8_t *dst, const uint8_t *qh, int64_t r)
{
	chunks(dst, qh, 8, r);
#if defined(__aarch64__)
	for (int c = 0; c < 8; c++)
		for (int b = 0; b < 4; b++)
			dst[64 * c + 4 * r + b] ^= 0xff;
#endif
}

/* columns per block: the 32-column types' 32, the K-quants' 256 */
static int64_t block_cols(enum edgeq_type t)
{
	return t == EDGEQ_TYPE_Q4_0 || t == EDGEQ_TYPE_Q8_0 ||
			       t == EDGEQ_TYPE_Q5_0 || t == EDGEQ_TYPE_Q4_1 ||
			       t == EDGEQ_TYPE_Q5_1 || t == EDGEQ_TYPE_IQ4_NL ?
		       32 :
		       256;
}

static size_t group_block_bytes(enum edgeq_type t)
{
	if (block_cols(t) == 32)
		return edgeq_pk_gb32(t);
	switch (t) {
	case EDGEQ_TYPE_Q4_K:
		return EDGEQ_PK_GB_Q4_K;
	case EDGEQ_TYPE_Q5_K:
		return EDGEQ_PK_GB_Q5_K;
	case EDGEQ_TYPE_Q6_K:
		return EDGEQ_PK_GB_Q6_K;
	case EDGEQ_TYPE_Q3_K:
		return EDGEQ_PK_GB_Q3_K;
	case EDGEQ_TYPE_Q2_K:
		return EDGEQ_PK_GB_Q2_K;
	case EDGEQ_TYPE_IQ4_XS:
		return EDGEQ_PK_GB_IQ4_XS;
	default:
		return 0;
	}
}

size_t edgeq_pack16_size(enum edgeq_type t, int64_t rows, int64_t n)
{
	size_t gb = group_block_bytes(t);
	int64_t bs = block_cols(t);

	if (!gb || rows < 1 || n < bs || n % bs)
		return 0;
	return (size_t)((rows + 15) / 16) * (size_t)(n / bs) * gb;
}

void edgeq_pack16(enum edgeq_type t, const void *w, int64_t rows, int64_t n,
		  void *out)
{
	size_t gb = group_block_bytes(t), rs = edgeq_row_size(t, n);
	bool k = t == EDGEQ_TYPE_Q4_K || t == EDGEQ_TYPE_Q5_K;
	int64_t nblk = n / block_cols(t), g, i, r;
	uint8_t *o = out;

	for (g = 0; g < (rows + 15) / 16; g++)
		for (i = 0; i < nblk; i++, o += gb) {
			memset(o, 0, gb);
			for (r = 0; r < 16 && 16 * g + r < rows; r++) {
				const uint8_t *row =
					(const uint8_t *)w + (16 * g + r) * rs;

				if (t == EDGEQ_TYPE_Q6_K) {
					const struct edgeq_block_q6_K *b =
						(const void *)(row + i * 210);

					memcpy(o + 2 * r, &b->d, 2);
					for (int j = 0; j < 16; j++)
						o[EDGEQ_PK_16_SC + 16 * j + r] =
							(uint8_t)b->scales[j];
					chunks(o + EDGEQ_PK_16_QS, b->ql, 32,
					       r);
					chunks(o + EDGEQ_PK_Q6K_QH, b->qh, 16,
					       r);
				} else if (t == EDGEQ_TYPE_Q3_K) {
					const struct edgeq_block_q3_K *b =
						(const void *)(row + i * 110);
					int8_t sc[16];

					memcpy(o + 2 * r, &b->d, 2);
					edgeq_q3_K_scales(b->scales, sc);
					for (int j = 0; j < 16; j++)
						o[edgeq_pk_sc16(j, r)] =
							(uint8_t)sc[j];
					chunks(o + EDGEQ_PK_16_QS, b->qs, 16,
					       r);
					bit_chunks(o + EDGEQ_PK_Q3K_HMASK,
						   b->hmask, r);
				} else if (t == EDGEQ_TYPE_IQ4_XS) {
					const struct edgeq_block_iq4_xs *b =
						(const void *)(row + i * 136);
					int8_t ls[8];

					memcpy(o + 2 * r, &b->d, 2);
					edgeq_iq4_xs_scales(b, ls);
					for (int j = 0; j < 8; j++)
						o[EDGEQ_PK_XS_SC + 16 * j + r] =
							(uint8_t)ls[j];
					chunks(o + EDGEQ_PK_XS_QS, b->qs, 32,
					       r);
				} else if (t == EDGEQ_TYPE_Q2_K) {
					const struct edgeq_block_q2_K *b =
						(const void *)(row + i * 84);

					memcpy(o + 2 * r, &b->d, 2);
					memcpy(o + EDGEQ_PK_Q2K_DMIN + 2 * r,
					       &b->dmin, 2);
					for (int j = 0; j < 16; j++)
						o[edgeq_pk_sc16(j, r)] =
							b->scales[j];
					chunks(o + EDGEQ_PK_16_QS, b->qs, 16,
					       r);
				} else if (k) {
					/* Q4_K and Q5_K share d, dmin,
					 * scales and qs (at other offsets) */
					const struct edgeq_block_q4_K *b4 =
						(const void *)(row + i * 144);
					const struct edgeq_block_q5_K *b5 =
						(const void *)(row + i * 176);
					bool five = t == EDGEQ_TYPE_Q5_K;
					const uint16_t *d = five ? &b5->d :
								   &b4->d;
					const uint16_t *dm = five ? &b5->dmin :
								    &b4->dmin;
					const uint8_t *scl = five ? b5->scales :
								    b4->scales;
					const uint8_t *qs = five ? b5->qs :
								   b4->qs;
					uint8_t sc[8], m[8];

					memcpy(o + 2 * r, d, 2);
					memcpy(o + EDGEQ_PK_K_DMIN + 2 * r, dm,
					       2);
					edgeq_q4_K_unpack_scales(scl, sc, m);
					for (int j = 0; j < 8; j++) {
						o[EDGEQ_PK_K_SC + 16 * j + r] =
							sc[j];
						o[EDGEQ_PK_K_MIN + 16 * j + r] =
							m[j];
					}
					chunks(o + EDGEQ_PK_K_QS, qs, 32, r);
					if (five)
						bit_chunks(o + EDGEQ_PK_Q5K_QH,
							   b5->qh, r);
				} else if (t == EDGEQ_TYPE_Q4_0 ||
					   t == EDGEQ_TYPE_IQ4_NL) {
					const struct edgeq_block_q4_0 *b =
						(const void *)(row + i * 18);

					memcpy(o + 2 * r, &b->d, 2);
					chunks(o + EDGEQ_PK_Q80_QS, b->qs, 4,
					       r);
				} else if (t == EDGEQ_TYPE_Q5_0) {
					const struct edgeq_block_q5_0 *b =
						(const void *)(row + i * 22);

					memcpy(o + 2 * r, &b->d, 2);
					memcpy(o + EDGEQ_PK_Q50_QH + 4 * r,
					       b->qh, 4);
					chunks(o + EDGEQ_PK_Q50_QS, b->qs, 4,
					       r);
				} else if (t == EDGEQ_TYPE_Q4_1) {
					const struct edgeq_block_q4_1 *b =
						(const void *)(row + i * 20);

					memcpy(o + 2 * r, &b->d, 2);
					memcpy(o + EDGEQ_PK_A_M + 2 * r, &b->m,
					       2);
					chunks(o + EDGEQ_PK_Q41_QS, b->qs, 4,
					       r);
				} else if (t == EDGEQ_TYPE_Q5_1) {
					const struct edgeq_block_q5_1 *b =
						(const void *)(row + i * 24);

					memcpy(o + 2 * r, &b->d, 2);
					memcpy(o + EDGEQ_PK_A_M + 2 * r, &b->m,
					       2);
					memcpy(o + EDGEQ_PK_Q51_QH + 4 * r,
					       b->qh, 4);
					chunks(o + EDGEQ_PK_Q51_QS, b->qs, 4,
					       r);
				} else {
					const struct edgeq_block_q8_0 *b =
						(const void *)(row + i * 34);

					memcpy(o + 2 * r, &b->d, 2);
					for (int c = 0; c < 8; c++)
						for (int j = 0; j < 4; j++)
							o[EDGEQ_PK_Q80_QS +
							  64 * c + 4 * r +
							  j] = (uint8_t)(b->qs[4 * c +
									       j] +
									 128);
				}
			}
		}
}
