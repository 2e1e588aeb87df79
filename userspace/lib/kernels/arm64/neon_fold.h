/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The float rows' fold on NEON (arm64/neon.c's dots, arm64/neon_attn.c's
 * scores): 32 lanes, lanes 4c..4c+3 in vector c, folded as
 * (l[k] + l[k+8]) + (l[k+16] + l[k+24]) and then edgeq_reduce8's
 * (t0 + t2) + (t1 + t3).
 */
#ifndef EDGEQ_KERNELS_ARM64_NEON_FOLD_H
#define EDGEQ_KERNELS_ARM64_NEON_FOLD_H

#include <arm_neon.h>

/* [l0+l4, l1+l5, l2+l6, l3+l7] of the 8 folded lanes l */
static inline __attribute__((always_inline)) float32x4_t
edgeq_neon_fold_t(const float32x4_t a[8])
{
	float32x4_t lo =
		vaddq_f32(vaddq_f32(a[0], a[2]), vaddq_f32(a[4], a[6]));
	float32x4_t hi =
		vaddq_f32(vaddq_f32(a[1], a[3]), vaddq_f32(a[5], a[7]));

	return vaddq_f32(lo, hi);
}

/* (t0 + t2) + (t1 + t3) */
static inline __attribute__((always_inline)) float
edgeq_neon_reduce_t(float32x4_t t)
{
	float32x2_t u = vadd_f32(vget_low_f32(t), vget_high_f32(t));

	return vget_lane_f32(u, 0) + vget_lane_f32(u, 1);
}

#endif /* EDGEQ_KERNELS_ARM64_NEON_FOLD_H */
