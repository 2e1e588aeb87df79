// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The baseline weight backend: tensor bytes are read straight from the
 * validated, mmapped GGUF file (llama.cpp's way). The dispatching entry
 * points of weights.h live here too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

static int mm_layer_begin(struct edgeq_weights *w, int layer,
			  struct edgeq_error *err)
{
	return 0;
}

static bool mm_resident(struct edgeq_weights *w)
{
	return true;
}

static const void *mm_get(struct edgeq_weights *w, const struct edgeq_tensor *t)
{
	return w->model->gguf->base + t->offset;
}

static void mm_layer_end(struct edgeq_weights *w, int layer)
{
}

static int mm_embed_rows(struct edgeq_weights *w, const int32_t *toks, size_t n,
			 void *dst, size_t row_size, struct edgeq_error *err)
{
	const struct edgeq_tensor *t = w->model->tok_embd;
	const uint8_t *base = w->model->gguf->base + t->offset;
	size_t i;

	if (row_size != t->row_size)
		return edgeq_error_set(err, EINVAL,
				       "embed_rows: row size %zu, expected %zu",
				       row_size, t->row_size);
	for (i = 0; i < n; i++) {
		if (toks[i] < 0 || (uint64_t)toks[i] >= t->ne[1])
			return edgeq_error_set(
				err, EINVAL,
				"token id %d is out of range (vocabulary of %llu)",
				toks[i], (unsigned long long)t->ne[1]);
		memcpy((uint8_t *)dst + i * row_size,
		       base + (size_t)toks[i] * row_size, row_size);
	}
	return 0;
}

static void mm_free(struct edgeq_weights *w)
{
	free(w);
}

static const struct edgeq_weights_ops mmap_ops = {
	.layer_begin = mm_layer_begin,
	.resident = mm_resident,
	.get = mm_get,
	.layer_end = mm_layer_end,
	.embed_rows = mm_embed_rows,
	.free = mm_free,
};

int edgeq_weights_mmap_new(const struct edgeq_model *m,
			   struct edgeq_weights **out, struct edgeq_error *err)
{
	struct edgeq_weights *w = calloc(1, sizeof(*w));

	if (!w)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	w->ops = &mmap_ops;
	w->model = m;
	*out = w;
	return 0;
}

void edgeq_weights_free(struct edgeq_weights *w)
{
	if (w)
		w->ops->free(w);
}

int edgeq_weights_layer_begin(struct edgeq_weights *w, int layer,
			      struct edgeq_error *err)
{
	return w->ops->layer_begin(w, layer, err);
}

const void *edgeq_weights_get(struct edgeq_weights *w,
			      const struct edgeq_tensor *t)
{
	return w->ops->get(w, t);
}

void edgeq_weights_layer_end(struct edgeq_weights *w, int layer)
{
	w->ops->layer_end(w, layer);
}

int edgeq_weights_embed_rows(struct edgeq_weights *w, const int32_t *toks,
			     size_t n, void *dst, size_t row_size,
			     struct edgeq_error *err)
{
	return w->ops->embed_rows(w, toks, n, dst, row_size, err);
}
