/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The NEON dots and matvec/matmul of Q4_1, Q5_0, Q5_1, IQ4_NL (x Q8_0) and
 * Q2_K, Q3_K, Q5_K, IQ4_XS (x Q8_K) (arm64/neon_quants.c), private to the
 * NEON table (arm64/neon.c); bit-identical to the scalar dots.
 */
#ifndef EDGEQ_KERNELS_ARM64_NEON_QUANTS_H
#define EDGEQ_KERNELS_ARM64_NEON_QUANTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

float edgeq_neon_dot_q4_1(int64_t n, const void *w, const void *a);
float edgeq_neon_dot_q5_0(int64_t n, const void *w, const void *a);
float edgeq_neon_dot_q5_1(int64_t n, const void *w, const void *a);
float edgeq_neon_dot_iq4_nl(int64_t n, const void *w, const void *a);
float edgeq_neon_dot_q2_K(int64_t n, const void *w, const void *a);
float edgeq_neon_dot_q3_K(int64_t n, const void *w, const void *a);
float edgeq_neon_dot_q5_K(int64_t n, const void *w, const void *a);
float edgeq_neon_dot_iq4_xs(int64_t n, const void *w, const void *a);

/* true when @type is one of those types (y written), else false */
bool edgeq_neon_matvec_more(enum edgeq_type type, const void *w, int64_t n,
			    int64_t row0, int64_t row1, const void *a,
			    float *y);
bool edgeq_neon_matmul_more(enum edgeq_type type, const void *w, int64_t n,
			    int64_t row0, int64_t row1, const void *a,
			    size_t a_stride, int64_t nb, float *y, int64_t ldy);

#endif /* EDGEQ_KERNELS_ARM64_NEON_QUANTS_H */
