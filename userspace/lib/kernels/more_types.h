/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The types with their own AVX2 and NEON files (x86/avx2_quants.c,
 * arm64/neon_quants.c): X32 is applied to the 32-element block types (x
 * Q8_0 activations), XK to the K-quants (x Q8_K), so both files dispatch
 * from one list.
 */
#ifndef EDGEQ_KERNELS_MORE_TYPES_H
#define EDGEQ_KERNELS_MORE_TYPES_H

#define EDGEQ_FOR_MORE_TYPES(X32, XK) \
	X32(EDGEQ_TYPE_Q4_1)          \
	X32(EDGEQ_TYPE_Q5_0)          \
	X32(EDGEQ_TYPE_Q5_1)          \
	X32(EDGEQ_TYPE_IQ4_NL)        \
	XK(EDGEQ_TYPE_Q2_K)           \
	XK(EDGEQ_TYPE_Q3_K)           \
	XK(EDGEQ_TYPE_Q5_K)           \
	XK(EDGEQ_TYPE_IQ4_XS)

#endif /* EDGEQ_KERNELS_MORE_TYPES_H */
