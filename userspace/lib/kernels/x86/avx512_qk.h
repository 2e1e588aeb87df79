/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * AVX-512 VNNI prefill matmul for the K-quants x Q8_K activations
 * (x86/avx512_qk.c), on the file's rows or (edgeq_avx512_matmul_qk_groups)
 * prepared from the packed layout, and the decode matvec
 * (x86/avx512_qk_mv.c); private to the AVX-512 table (x86/avx512.c).
 */
#ifndef EDGEQ_KERNELS_X86_AVX512_QK_H
#define EDGEQ_KERNELS_X86_AVX512_QK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <immintrin.h>

#include "kernels/kernels.h"

/*
 * The prefill tiles' prepared form of a group of 16 rows, per super-block
 * (lane r: row r), made from the file's rows (avx512_qk.c) or from the
 * packed layout (avx512_pack.c).
 */
/* One Q4_K super-block of 16 rows, transposed. */
struct q4k_prep {
	__m512i sc[8]; /* sub-block scales */
	__m512i mp[4]; /* mins pairs (m[2p], m[2p + 1]) as int16 */
	__m512 d, dmin;
	__m512i qs[32]; /* word k of the 128 nibble bytes, per row */
};

/* One Q5_K super-block of 16 rows, transposed: the scale part first, as
 * Q4_K's (prep_k4_scales fills both). */
struct q5k_prep {
	__m512i sc[8], mp[4];
	__m512 d, dmin;
	__m512i q[64]; /* elements 4k..4k+3, per row */
};

/* One Q6_K super-block of 16 rows, transposed. */
struct q6k_prep {
	__m512i q[64];	/* elements 4k..4k+3 as q + 32, per row */
	__m512i sc[16]; /* sub-block scales (signed) */
	__m512 d;
};

/* One Q2_K super-block: Q6_K's fields first, then the mins. Q3_K and
 * IQ4_XS take Q6_K's (their q as q + 4 and the table + 128). */
struct q2k_prep {
	__m512i q[64], sc[16];
	__m512 d;
	__m512i mp[8]; /* mins pairs (m[2p], m[2p + 1]) as int16 */
	__m512 dmin;
};

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

/*
 * The same prefill for Q4_K, Q5_K or Q6_K with the rows in groups of 16
 * (lane l of a group: its row 16 g + l, as edgeq_pack16() groups them):
 * @prep writes the @nsb prepared super-blocks (struct q4k_prep, q5k_prep
 * or q6k_prep) of the group whose first row is @r into @P. Returns false
 * (nothing written) when its buffers cannot be allocated.
 */
bool edgeq_avx512_matmul_qk_groups(
	enum edgeq_type type, int64_t n, int64_t row0, int64_t row1,
	const void *a, size_t a_stride, int64_t nb, float *y, int64_t ldy,
	void (*prep)(void *P, int64_t r, int64_t nsb, const void *arg),
	const void *arg);

#endif /* EDGEQ_KERNELS_X86_AVX512_QK_H */
