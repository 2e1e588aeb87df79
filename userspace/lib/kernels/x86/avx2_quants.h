/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The AVX2 dots and prefill tiles of Q4_1, Q5_0, Q5_1, IQ4_NL (x Q8_0) and
 * Q2_K, Q3_K, Q5_K, IQ4_XS (x Q8_K) (x86/avx2_quants.c), private to the
 * AVX2 table and those built on it (x86/avx2.c, x86/avx512.c). Each is
 * bit-identical to its scalar dot (scalar.c).
 */
#ifndef EDGEQ_KERNELS_X86_AVX2_QUANTS_H
#define EDGEQ_KERNELS_X86_AVX2_QUANTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

float edgeq_avx2_dot_q4_1(int64_t n, const void *w, const void *a);
float edgeq_avx2_dot_q5_0(int64_t n, const void *w, const void *a);
float edgeq_avx2_dot_q5_1(int64_t n, const void *w, const void *a);
float edgeq_avx2_dot_iq4_nl(int64_t n, const void *w, const void *a);
float edgeq_avx2_dot_q2_K(int64_t n, const void *w, const void *a);
float edgeq_avx2_dot_q3_K(int64_t n, const void *w, const void *a);
float edgeq_avx2_dot_q5_K(int64_t n, const void *w, const void *a);
float edgeq_avx2_dot_iq4_xs(int64_t n, const void *w, const void *a);

/* Decode and prefill for those types: true when @type is one of them
 * (y written as matvec / matmul do), false otherwise (nothing done). */
bool edgeq_avx2_matvec_more(enum edgeq_type type, const void *w, int64_t n,
			    int64_t row0, int64_t row1, const void *a,
			    float *y);
bool edgeq_avx2_matmul_more(enum edgeq_type type, const void *w, int64_t n,
			    int64_t row0, int64_t row1, const void *a,
			    size_t a_stride, int64_t nb, float *y, int64_t ldy);

#endif /* EDGEQ_KERNELS_X86_AVX2_QUANTS_H */
