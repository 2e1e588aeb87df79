/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal contract between the forward pass and the weight streamer.
 *
 * The forward pass never dereferences the GGUF file directly: it asks this
 * interface for each tensor's bytes, layer by layer in execution order, so
 * the same decoder runs with weights mmapped (the baseline), preloaded with
 * O_DIRECT io_uring reads, or streamed under a resident budget.
 *
 *   edgeq_weights_layer_begin(w, L)   blocks until layer L's tensors are
 *                                     resident, and lets the streamer start
 *                                     prefetching L+1..L+k
 *   edgeq_weights_get(w, t)           the tensor's bytes (valid until
 *                                     layer_end of its layer)
 *   edgeq_weights_layer_end(w, L)     layer L's buffers may be recycled
 *   edgeq_weights_embed_rows(...)     token-embedding rows, read one by one
 *
 * Layer index EDGEQ_WEIGHTS_GLOBAL (-1) holds the tensors outside the
 * repeating blocks (output norm, output matrix); the token embedding is only
 * reached through embed_rows. Errors are -errno with a message.
 */
#ifndef EDGEQ_MODEL_WEIGHTS_H
#define EDGEQ_MODEL_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include <edgeq/edgeq.h>

#define EDGEQ_WEIGHTS_GLOBAL (-1)

struct edgeq_weights;
struct edgeq_tensor; /* defined by the model loader: name, type, dims, offset, size, layer */

int edgeq_weights_layer_begin(struct edgeq_weights *w, int layer,
			      struct edgeq_error *err);
const void *edgeq_weights_get(struct edgeq_weights *w,
			      const struct edgeq_tensor *t);
void edgeq_weights_layer_end(struct edgeq_weights *w, int layer);
/* Copy the dequantized-or-raw rows for @n tokens into @dst (raw row bytes,
 * row_size each); the caller converts them to float. */
int edgeq_weights_embed_rows(struct edgeq_weights *w, const int32_t *toks,
			     size_t n, void *dst, size_t row_size,
			     struct edgeq_error *err);

#endif /* EDGEQ_MODEL_WEIGHTS_H */
