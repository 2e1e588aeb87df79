/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The K-quant prefill driver of x86/avx2_quants.c and arm64/neon_quants.c:
 * token blocks of EDGEQ_K_TOK_BLK (their Q8_K rows stay in L2), each
 * weight row against EDGEQ_K_TK tokens at a time with @tile (the
 * super-block unpacked once for them), the rest token by token with @dot
 * (the same sums and chain: every output is bit-identical). Called with a
 * constant type and the file's static inline functions, so each type gets
 * its own inlined copy.
 */
#ifndef EDGEQ_KERNELS_K_ROWS_H
#define EDGEQ_KERNELS_K_ROWS_H

#include "kernels/kernels.h"

#define EDGEQ_K_TOK_BLK 64
#define EDGEQ_K_TK 4

typedef void (*edgeq_k_tile_fn)(enum edgeq_type t, int64_t n, const void *w,
				const char *a, size_t as, float *y,
				int64_t ldy);
typedef float (*edgeq_k_dot_fn)(enum edgeq_type t, int64_t n, const void *w,
				const void *a);

static inline __attribute__((always_inline)) void
edgeq_matmul_k_rows(enum edgeq_type t, const void *w, int64_t n, int64_t row0,
		    int64_t row1, const char *a, size_t as, int64_t nb,
		    float *y, int64_t ldy, edgeq_k_tile_fn tile,
		    edgeq_k_dot_fn dot)
{
	size_t rs = edgeq_row_size(t, n);

	for (int64_t b0 = 0; b0 < nb; b0 += EDGEQ_K_TOK_BLK) {
		int64_t b1 = b0 + EDGEQ_K_TOK_BLK < nb ? b0 + EDGEQ_K_TOK_BLK :
							 nb;

		for (int64_t r = row0; r < row1; r++) {
			const char *wr = (const char *)w + r * rs;
			int64_t b = b0;

			for (; b + EDGEQ_K_TK <= b1; b += EDGEQ_K_TK)
				tile(t, n, wr, a + b * as, as, y + b * ldy + r,
				     ldy);
			for (; b < b1; b++)
				y[b * ldy + r] = dot(t, n, wr, a + b * as);
		}
	}
}

#endif /* EDGEQ_KERNELS_K_ROWS_H */
