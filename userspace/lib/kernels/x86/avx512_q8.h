/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The AVX-512 VNNI prefill kernel for Q4_0, Q8_0, Q5_0, IQ4_NL, Q4_1 and
 * Q5_1 weights (avx512_q8.c),
 * private to the x86 tables.
 */
#ifndef EDGEQ_KERNELS_X86_AVX512_Q8_H
#define EDGEQ_KERNELS_X86_AVX512_Q8_H

#include "kernels/kernels.h"

/*
 * ops->matmul for @type EDGEQ_TYPE_Q4_0, _Q8_0, _Q5_0, _IQ4_NL, _Q4_1 or
 * _Q5_1 (Q8_0
 * activations): y[b * ldy + r] for r in [row0, row1), b < nb, each equal to
 * the scalar vec_dot bit for bit. Needs AVX-512 F/BW/VL/DQ and VNNI.
 */
void edgeq_avx512_q8_matmul(enum edgeq_type type, const void *w, int64_t n,
			    int64_t row0, int64_t row1, const void *a,
			    size_t a_stride, int64_t nb, float *y, int64_t ldy);

#endif
