/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where things lie in the 16-row packed layouts, per group of 16 rows and
 * block (32 columns for Q4_0/Q8_0, a 256-column super-block for the
 * K-quants): kernels/pack.c writes them (its comment says what each part
 * holds), arm64/neon_pack.c and x86/avx512_pack.c read them. A chunk is
 * 64 bytes: 4 bytes of each of the 16 rows, row r's at 4r.
 */
#ifndef EDGEQ_KERNELS_PACK_LAYOUT_H
#define EDGEQ_KERNELS_PACK_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/kernels.h"

#define EDGEQ_PK_CHUNK 64

/* Q4_0, Q8_0: the 16 fp16 d, then 4 (Q4_0) or 8 (Q8_0) chunks */
#define EDGEQ_PK_Q80_QS 32
#define EDGEQ_PK_GB_Q4_0 (EDGEQ_PK_Q80_QS + 4 * EDGEQ_PK_CHUNK)
#define EDGEQ_PK_GB_Q8_0 (EDGEQ_PK_Q80_QS + 8 * EDGEQ_PK_CHUNK)

/* The other 32-column types: the 16 fp16 d, then the affine types' 16
 * fp16 m, the 5-bit types' qh chunk (row r's 32 bits at 4r), then 4
 * chunks of nibbles as Q4_0's. IQ4_NL is Q4_0's layout (its nibbles
 * index the table). */
#define EDGEQ_PK_A_M 32
#define EDGEQ_PK_Q50_QH 32
#define EDGEQ_PK_Q50_QS 96
#define EDGEQ_PK_GB_Q5_0 (EDGEQ_PK_Q50_QS + 4 * EDGEQ_PK_CHUNK)
#define EDGEQ_PK_Q41_QS 64
#define EDGEQ_PK_GB_Q4_1 (EDGEQ_PK_Q41_QS + 4 * EDGEQ_PK_CHUNK)
#define EDGEQ_PK_Q51_QH 64
#define EDGEQ_PK_Q51_QS 128
#define EDGEQ_PK_GB_Q5_1 (EDGEQ_PK_Q51_QS + 4 * EDGEQ_PK_CHUNK)

/* Q4_K, Q5_K: 16 fp16 d, 16 fp16 dmin, the scales and the mins as bytes
 * (16 per sub-block), 32 chunks of nibbles; Q5_K then 8 chunks of qh */
#define EDGEQ_PK_K_DMIN 32
#define EDGEQ_PK_K_SC 64
#define EDGEQ_PK_K_MIN 192
#define EDGEQ_PK_K_QS 320
#define EDGEQ_PK_GB_Q4_K (EDGEQ_PK_K_QS + 32 * EDGEQ_PK_CHUNK)
#define EDGEQ_PK_Q5K_QH EDGEQ_PK_GB_Q4_K
#define EDGEQ_PK_GB_Q5_K (EDGEQ_PK_Q5K_QH + 8 * EDGEQ_PK_CHUNK)

/* IQ4_XS: 16 fp16 d, the 8 sub-blocks' scales as int8 (value - 32 done;
 * 16 per sub-block), then 4 chunks of nibbles per sub-block as IQ4_NL's
 * (2208 bytes, 1.5 % over the file: the 6-bit scales unpacked) */
#define EDGEQ_PK_XS_SC 32
#define EDGEQ_PK_XS_QS 160
#define EDGEQ_PK_GB_IQ4_XS (EDGEQ_PK_XS_QS + 32 * EDGEQ_PK_CHUNK)

/* Q6_K, Q3_K, Q2_K, one frame: 16 fp16 d, the 16 sub-blocks' scales as
 * bytes, then the quants; Q6_K's qh, Q3_K's hmask or Q2_K's dmin after */
#define EDGEQ_PK_16_SC 32
#define EDGEQ_PK_16_QS 288
#define EDGEQ_PK_Q6K_QH (EDGEQ_PK_16_QS + 32 * EDGEQ_PK_CHUNK)
#define EDGEQ_PK_GB_Q6_K (EDGEQ_PK_Q6K_QH + 16 * EDGEQ_PK_CHUNK)
#define EDGEQ_PK_Q3K_HMASK (EDGEQ_PK_16_QS + 16 * EDGEQ_PK_CHUNK)
#define EDGEQ_PK_GB_Q3_K (EDGEQ_PK_Q3K_HMASK + 8 * EDGEQ_PK_CHUNK)
#define EDGEQ_PK_Q2K_DMIN (EDGEQ_PK_16_QS + 16 * EDGEQ_PK_CHUNK)
#define EDGEQ_PK_GB_Q2_K (EDGEQ_PK_Q2K_DMIN + 32)

_Static_assert(EDGEQ_PK_GB_Q5_0 == 16 * 22 && EDGEQ_PK_GB_Q4_1 == 16 * 20 &&
		       EDGEQ_PK_GB_Q5_1 == 16 * 24,
	       "the 32-column types pack to the file's size");
_Static_assert(EDGEQ_PK_GB_Q4_K == 2368 && EDGEQ_PK_GB_Q5_K == 2880 &&
		       EDGEQ_PK_GB_Q6_K == 3360 && EDGEQ_PK_GB_Q3_K == 1824 &&
		       EDGEQ_PK_GB_Q2_K == 1344 && EDGEQ_PK_GB_IQ4_XS == 2208,
	       "the packed sizes Documentation/kernels.rst states");

/*
 * Q3_K/Q2_K: where sub-block g's scale of row r lies in a packed block.
 * By row group v = r / 4, then by quarter q = 2 (g / 8) + g % 2 (the half
 * and 16-column half the NEON tile walks), then j = (g / 2) % 4: one
 * 16-byte load holds what a row group needs for a quarter.
 */
static inline size_t edgeq_pk_sc16(int g, int64_t r)
{
	return EDGEQ_PK_16_SC + 64 * (size_t)(r / 4) +
	       16 * (2 * (g / 8) + g % 2) + 4 * ((g / 2) % 4) + (size_t)(r % 4);
}

/* Packed bytes per group and block of a 32-column type. */
static inline size_t edgeq_pk_gb32(enum edgeq_type t)
{
	switch (t) {
	case EDGEQ_TYPE_Q4_0:
	case EDGEQ_TYPE_IQ4_NL:
		return EDGEQ_PK_GB_Q4_0;
	case EDGEQ_TYPE_Q5_0:
		return EDGEQ_PK_GB_Q5_0;
	case EDGEQ_TYPE_Q4_1:
		return EDGEQ_PK_GB_Q4_1;
	case EDGEQ_TYPE_Q5_1:
		return EDGEQ_PK_GB_Q5_1;
	default:
		return EDGEQ_PK_GB_Q8_0;
	}
}

/* Where a 32-column type's nibbles (Q8_0: its bytes) start in a block. */
static inline size_t edgeq_pk_qs32(enum edgeq_type t)
{
	return t == EDGEQ_TYPE_Q5_0 ? EDGEQ_PK_Q50_QS :
	       t == EDGEQ_TYPE_Q4_1 ? EDGEQ_PK_Q41_QS :
	       t == EDGEQ_TYPE_Q5_1 ? EDGEQ_PK_Q51_QS :
				      EDGEQ_PK_Q80_QS;
}

/* Q4_1, Q5_1: value = q * d + m, a min step after each block's sum. */
static inline bool edgeq_pk_affine(enum edgeq_type t)
{
	return t == EDGEQ_TYPE_Q4_1 || t == EDGEQ_TYPE_Q5_1;
}

#endif /* EDGEQ_KERNELS_PACK_LAYOUT_H */
