/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * AVX-512 VNNI prefill matmul for Q4_K and Q6_K weights x Q8_K activations
 * (x86/avx512_qk.c) and decode matvec (x86/avx512_qk_mv.c), private to the AVX-512 table (x86/avx512.c).
 */
#ifndef EDGEQ_KERNELS_X86_AVX512_QK_H
#define EDGEQ_KERNELS_X86_AVX512_QK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

/* y[b * ldy + r] for rows [row0, row1) and nb tokens; type is Q4_K or
 * Q6_K. Bit-identical to scalar's vec_dot_q4_K / vec_dot_q6_K. Returns
 * false (nothing written) when its buffers cannot be allocated. */
bool edgeq_avx512_matmul_qk(enum edgeq_type type, const void *w, int64_t n,
			    int64_t row0, int64_t row1, const void *a,
			    size_t a_stride, int64_t nb, float *y, int64_t ldy);

/* The decode matvec (x86/avx512_qk_mv.c): y[r] for rows [row0, row1) and
 * one Q8_K activation vector a; type is Q4_K or Q6_K. Bit-identical to
 * scalar. Returns false (nothing written) when its buffer cannot be
 * allocated. */
bool edgeq_avx512_matvec_qk(enum edgeq_type type, const void *w, int64_t n,
			    int64_t row0, int64_t row1, const void *a,
			    float *y);

#endif /* EDGEQ_KERNELS_X86_AVX512_QK_H */
