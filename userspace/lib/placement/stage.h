/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The staging memfd both device backends (kq_backend.c, dev_backend.c)
 * hand a group of matrix products through: the shared input x at offset
 * 0, then each product's output, 64-byte aligned.
 */
#ifndef EDGEQ_PLACEMENT_STAGE_H
#define EDGEQ_PLACEMENT_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include <edgeq/kq.h>
#include <edgeq/placement.h>

/* Offset of output @i (i = n: the bytes the whole group needs). */
static inline size_t place_stage_out_off(uint64_t cols, const uint64_t *rows,
					 unsigned int i)
{
	size_t o = ((size_t)cols * 4 + 63) & ~(size_t)63;

	for (unsigned int k = 0; k < i; k++)
		o += ((size_t)rows[k] * 4 + 63) & ~(size_t)63;
	return o;
}

/* Product @i of the group as a MATVEC descriptor: weight @w in mapping
 * @wh, x and its output in the staging mapping @sh. */
static inline void place_stage_matvec(struct edgeq_op_desc *op, uint64_t cookie,
				      const struct edgeq_place_weight *w,
				      const uint64_t *rows, unsigned int i,
				      uint64_t cols, uint32_t wh, uint32_t sh)
{
	edgeq_op_desc_init(op, EDGEQ_OP_MATVEC, cookie);
	op->dtype = w->type;
	op->shape[0] = rows[i];
	op->shape[1] = cols;
	edgeq_op_desc_tensor(op, 0, wh, 0, w->bytes);
	edgeq_op_desc_tensor(op, 1, sh, 0, cols * 4);
	edgeq_op_desc_tensor(op, 2, sh, place_stage_out_off(cols, rows, i),
			     rows[i] * 4);
}

#endif /* EDGEQ_PLACEMENT_STAGE_H */
