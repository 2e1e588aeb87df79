/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Whole decoder blocks as one chain of device ops (blocks.c): what the
 * executor hands a backend's chain() when the plan puts every op of a
 * block on one device.
 */
#ifndef EDGEQ_PLACEMENT_BLOCKS_H
#define EDGEQ_PLACEMENT_BLOCKS_H

#include <edgeq/placement.h>

#include "model/model.h"

/* Ops and weights of one block (blocks.c's list, in order). */
#define PLACE_BLOCK_WEIGHTS 17 /* its 9, 3 biases, 4 norms, a RoPE table */

/* The storage of a built chain, reused from step to step. */
struct place_blocks {
	struct edgeq_place_cop *ops;
	struct edgeq_place_weight *w;
	unsigned int cap; /* blocks there is room for, */
	size_t per;	  /* of this many ops each */
};

/* At most this many ops a block of an @nb-token pass takes, on devices
 * that take the EDGEQ_F_* op @features, the cache's rows packed or not
 * (place_blocks_rows_packed()). */
unsigned int place_blocks_ops(const struct edgeq_model *m, uint64_t features,
			      int nb, bool rows_packed);
/* The cache rows of @v are the stored elements back to back (a batch's K
 * or V rows are one STORE). */
bool place_blocks_rows_packed(const struct edgeq_model *m,
			      const struct ctx_block_view *v);

/* Why @m's blocks cannot run as chains of devices that take the EDGEQ_F_*
 * op @features, or NULL when they can. */
const char *place_blocks_unsupported(const struct edgeq_model *m,
				     uint64_t features);

/*
 * The chain of blocks [@l0, @l0 + @n) for the pass @v describes (its
 * tokens' hidden states in, out; their K and V rows written at their
 * positions, each token attending causally to the rows up to its own;
 * a prompt batch's products as MATMUL), into
 * @ch, with its ops and weights in @b (RMSNORM over rows where @features
 * has EDGEQ_F_NORM_ROWS); with @head_logits also the output
 * norm and projection after the last block, the logits to @head_logits.
 * -ENOMEM, or -EOPNOTSUPP for a KV cache type the ops do not write (Q8_0
 * without EDGEQ_F_STORE_Q8_0) or a cache not shared.
 */
int place_blocks_build(struct place_blocks *b, struct edgeq_model *m,
		       uint64_t features, const struct ctx_block_view *v,
		       int l0, int n, float *head_logits,
		       struct edgeq_place_chain *ch);
void place_blocks_free(struct place_blocks *b);

#endif /* EDGEQ_PLACEMENT_BLOCKS_H */
