/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Q4_0/Q8_0 prefill driver of the AVX2 and NEON tables, which both have
 * a tile of 4 rows x 2 tokens: token blocks of EDGEQ_Q80_TOK_BLK keep their
 * activations in L2 while the tiles walk the rows, and each tile's weight
 * rows stay in L1 across the block's tokens; tokens and rows past the last
 * whole tile take the table's dot. The tile is called with a constant type
 * so each type gets its own inlined copy. Include after the ISA's
 * intrinsics; @tile and @dot are the table's static inline functions.
 */
#ifndef EDGEQ_KERNELS_Q80_TILES_H
#define EDGEQ_KERNELS_Q80_TILES_H

#include "kernels/kernels.h"

#define EDGEQ_Q80_TOK_BLK 64

typedef void (*edgeq_q80_tile_fn)(enum edgeq_type t, int64_t nb, const char *w,
				  size_t rs, const char *a, size_t as, float *y,
				  int64_t ldy);
typedef float (*edgeq_q80_dot_fn)(enum edgeq_type t, int64_t n, const void *w,
				  const void *a);

static inline __attribute__((always_inline)) void
edgeq_matmul_q80_4x2(enum edgeq_type t, const void *w, int64_t n, int64_t row0,
		     int64_t row1, const char *a, size_t as, int64_t nb,
		     float *y, int64_t ldy, edgeq_q80_tile_fn tile,
		     edgeq_q80_dot_fn dot)
{
	size_t rs = edgeq_row_size(t, n);
	int64_t nblk = n / EDGEQ_QK8_0;

	for (int64_t b0 = 0; b0 < nb; b0 += EDGEQ_Q80_TOK_BLK) {
		int64_t b1 = b0 + EDGEQ_Q80_TOK_BLK < nb ?
				     b0 + EDGEQ_Q80_TOK_BLK :
				     nb;
		int64_t r = row0;

		for (; r + 4 <= row1; r += 4) {
			const char *wr = (const char *)w + r * rs;
			int64_t b = b0;

			if (t == EDGEQ_TYPE_Q4_0)
				for (; b + 2 <= b1; b += 2)
					tile(EDGEQ_TYPE_Q4_0, nblk, wr, rs,
					     a + b * as, as, y + b * ldy + r,
					     ldy);
			else
				for (; b + 2 <= b1; b += 2)
					tile(EDGEQ_TYPE_Q8_0, nblk, wr, rs,
					     a + b * as, as, y + b * ldy + r,
					     ldy);
			for (; b < b1; b++)
				for (int k = 0; k < 4; k++)
					y[b * ldy + r + k] = dot(
						t, n, wr + k * rs, a + b * as);
		}
		for (; r < row1; r++)
			for (int64_t b = b0; b < b1; b++)
				y[b * ldy + r] = dot(t, n,
						     (const char *)w + r * rs,
						     a + b * as);
	}
}

#endif /* EDGEQ_KERNELS_Q80_TILES_H */
