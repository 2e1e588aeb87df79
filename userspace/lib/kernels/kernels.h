/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CPU kernels: GGUF tensor types, their block layouts (bit-exact with
 * ggml-common.h), and the per-ISA ops table chosen once at start-up.
 *
 * Contract between the kernels and the decoder:
 *  - A weight matrix W is rows x cols, row-major, each row stored as
 *    cols / blck_size(type) blocks of type_size(type) bytes.
 *  - Activations are quantized once per matvec into the weight type's
 *    vec_dot_type (Q8_0 for Q4_0/Q8_0, Q8_K for Q4_K/Q6_K, F32 for float types)
 *    with ops->quantize_act, then ops->vec_dot[type] gives one output.
 *  - Canonical reduction order: every implementation (scalar, AVX2, NEON)
 *    adds partial products in the same order with the same roundings, so
 *    results are bit-identical across ISAs and thread counts; the scalar
 *    implementation is the oracle and the tests compare exactly.
 */
#ifndef EDGEQ_KERNELS_H
#define EDGEQ_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* GGUF/ggml type ids (the numbers stored in the file). */
enum edgeq_type {
	EDGEQ_TYPE_F32 = 0,
	EDGEQ_TYPE_F16 = 1,
	EDGEQ_TYPE_Q4_0 = 2,
	EDGEQ_TYPE_Q4_1 = 3,
	EDGEQ_TYPE_Q5_0 = 6,
	EDGEQ_TYPE_Q5_1 = 7,
	EDGEQ_TYPE_Q8_0 = 8,
	EDGEQ_TYPE_Q8_1 = 9,
	EDGEQ_TYPE_Q2_K = 10,
	EDGEQ_TYPE_Q3_K = 11,
	EDGEQ_TYPE_Q4_K = 12,
	EDGEQ_TYPE_Q5_K = 13,
	EDGEQ_TYPE_Q6_K = 14,
	EDGEQ_TYPE_Q8_K = 15,
	EDGEQ_TYPE_BF16 = 30,
	EDGEQ_TYPE_COUNT = 40,
};

#define EDGEQ_QK4_0 32
#define EDGEQ_QK8_0 32
#define EDGEQ_QK_K 256
#define EDGEQ_K_SCALE_SIZE 12

/* Block layouts; fp16 values are stored as raw uint16_t. */
struct edgeq_block_q4_0 {
	uint16_t d;                    /* scale (fp16) */
	uint8_t qs[EDGEQ_QK4_0 / 2];   /* nibbles: low = elements 0..15, high = 16..31 */
};
struct edgeq_block_q8_0 {
	uint16_t d;                    /* scale (fp16) */
	int8_t qs[EDGEQ_QK8_0];
};
struct edgeq_block_q4_K {
	uint16_t d;                    /* super-block scale for the scales (fp16) */
	uint16_t dmin;                 /* super-block scale for the mins (fp16) */
	uint8_t scales[EDGEQ_K_SCALE_SIZE]; /* 8 scales + 8 mins, 6 bits each */
	uint8_t qs[EDGEQ_QK_K / 2];    /* 4-bit quants */
};
struct edgeq_block_q6_K {
	uint8_t ql[EDGEQ_QK_K / 2];    /* low 4 bits */
	uint8_t qh[EDGEQ_QK_K / 4];    /* high 2 bits */
	int8_t scales[EDGEQ_QK_K / 16];/* 8-bit scales */
	uint16_t d;                    /* super-block scale (fp16) */
};
struct edgeq_block_q8_K {
	float d;                       /* activation block for K-quant dots */
	int8_t qs[EDGEQ_QK_K];
	int16_t bsums[EDGEQ_QK_K / 16];/* sums of groups of 16 */
};

_Static_assert(sizeof(struct edgeq_block_q4_0) == 18, "q4_0 layout");
_Static_assert(sizeof(struct edgeq_block_q8_0) == 34, "q8_0 layout");
_Static_assert(sizeof(struct edgeq_block_q4_K) == 144, "q4_K layout");
_Static_assert(sizeof(struct edgeq_block_q6_K) == 210, "q6_K layout");
_Static_assert(sizeof(struct edgeq_block_q8_K) == 292, "q8_K layout");

#endif /* EDGEQ_KERNELS_H */
