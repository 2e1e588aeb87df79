/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dot_f16's canonical fold with keys in the vector lanes (the attention
 * tile forms of x86/attn512.c and arm64/neon_attn.c). Every operand is a
 * vector holding one value per key: the 32 lane chains are
 * l[k] = fma over elements k, k + 32, ... from +0; the fold is
 * v[k] = (l[k] + l[k+8]) + (l[k+16] + l[k+24]), then
 * ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)).
 *
 * The fold groups are taken in EDGEQ_FOLD_ORDER, so each pair of
 * consecutive groups completes one of edgeq_reduce8's sums and at most
 * three partial vectors are live per query: step g of that order, with
 * the group's four chains a (u = 0..3: lanes k, k+8, k+16, k+24), is
 * EDGEQ_FOLD_LANE for each u, then EDGEQ_FOLD_STEP. ADD is the ISA's
 * vector add, MULS its multiply by a float.
 */
#ifndef EDGEQ_KERNELS_FOLD_LANES_H
#define EDGEQ_KERNELS_FOLD_LANES_H

#define EDGEQ_FOLD_ORDER               \
	{                              \
		0, 4, 2, 6, 1, 5, 3, 7 \
	}

/* p = l[k] + l[k+8], p2 = l[k+16] + l[k+24], chain a being lane k + 8u */
#define EDGEQ_FOLD_LANE(u, a, p, p2, ADD)      \
	do {                                   \
		if ((u) == 0)                  \
			(p) = (a);             \
		else if ((u) == 1)             \
			(p) = ADD((p), (a));   \
		else if ((u) == 2)             \
			(p2) = (a);            \
		else                           \
			(p2) = ADD((p2), (a)); \
	} while (0)

/* v = v[order[g]]; x, t02, t1: the partial sums; res at g = 7 */
#define EDGEQ_FOLD_STEP(g, v, x, t02, t1, res, scale, ADD, MULS)           \
	do {                                                               \
		switch (g) {                                               \
		case 0: /* v0 */                                           \
		case 2: /* v2 */                                           \
		case 4: /* v1 */                                           \
		case 6: /* v3 */                                           \
			(x) = (v);                                         \
			break;                                             \
		case 1: /* t0 = v0 + v4 */                                 \
			(t02) = ADD((x), (v));                             \
			break;                                             \
		case 3: /* t2 = v2 + v6, then t0 + t2 */                   \
			(t02) = ADD((t02), ADD((x), (v)));                 \
			break;                                             \
		case 5: /* t1 = v1 + v5 */                                 \
			(t1) = ADD((x), (v));                              \
			break;                                             \
		default: /* t3 = v3 + v7; (t0 + t2) + (t1 + t3) */         \
			(res) = MULS(ADD((t02), ADD((t1), ADD((x), (v)))), \
				     (scale));                             \
			break;                                             \
		}                                                          \
	} while (0)

#endif /* EDGEQ_KERNELS_FOLD_LANES_H */
