/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The AVX2 table's softmax, SiLU and GELU (avx2_exp.c), private to the x86 tables. */
#ifndef EDGEQ_KERNELS_X86_AVX2_EXP_H
#define EDGEQ_KERNELS_X86_AVX2_EXP_H

#include <stdint.h>

void edgeq_softmax_avx2(float *x, int64_t n);
void edgeq_silu_mul_avx2(float *o, const float *x, int64_t n);
void edgeq_gelu_mul_avx2(float *o, const float *x, int64_t n);

#endif
