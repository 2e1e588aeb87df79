// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The preload and stream weight backends of the decoder (model.h): the
 * model's tensor table becomes the streamer's extents, one per tensor (its
 * index in the table is its handle), plus the token embedding as the
 * EMBED extent (a second extent over the same bytes when the output matrix
 * is tied to it). AUTO picks the mode from the budget; when that is mmap the
 * decoder's own mmap backend is used.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/stream.h>

#include "model/model.h"

struct stream_weights {
	struct edgeq_weights base; /* first: the decoder casts */
	struct edgeq_stream *s;
};

static struct stream_weights *sw_of(struct edgeq_weights *w)
{
	return (struct stream_weights *)w;
}

static int sw_layer_begin(struct edgeq_weights *w, int layer,
			  struct edgeq_error *err)
{
	return edgeq_stream_layer_begin(sw_of(w)->s, layer, err);
}

static const void *sw_get(struct edgeq_weights *w, const struct edgeq_tensor *t)
{
	return edgeq_stream_get(sw_of(w)->s, (size_t)(t - w->model->tensors));
}

static void sw_layer_end(struct edgeq_weights *w, int layer)
{
	edgeq_stream_layer_end(sw_of(w)->s, layer);
}

static int sw_embed_rows(struct edgeq_weights *w, const int32_t *toks, size_t n,
			 void *dst, size_t row_size, struct edgeq_error *err)
{
	if (row_size != w->model->tok_embd->row_size)
		return edgeq_error_set(err, EINVAL,
				       "embed_rows: row size %zu, expected %zu",
				       row_size, w->model->tok_embd->row_size);
	return edgeq_stream_embed_rows(sw_of(w)->s, toks, n, dst, row_size,
				       err);
}

static bool sw_resident(struct edgeq_weights *w)
{
	return edgeq_stream_resident(sw_of(w)->s);
}

static void sw_free(struct edgeq_weights *w)
{
	edgeq_stream_close(sw_of(w)->s);
	free(w);
}

static const struct edgeq_weights_ops stream_ops = {
	.layer_begin = sw_layer_begin,
	.get = sw_get,
	.layer_end = sw_layer_end,
	.resident = sw_resident,
	.embed_rows = sw_embed_rows,
	.free = sw_free,
};

int edgeq_weights_stream_new(struct edgeq_model *m,
			     const struct edgeq_model_params *p,
			     struct edgeq_weights **out,
			     struct edgeq_error *err)
{
	struct edgeq_stream_params sp;
	struct edgeq_stream_status st;
	struct edgeq_stream_extent *ext;
	struct stream_weights *w;
	bool tied = m->output == m->tok_embd;
	size_t n = 0;
	int ret;

	ext = calloc(m->n_tensors + 1, sizeof(*ext));
	w = calloc(1, sizeof(*w));
	if (!ext || !w) {
		free(ext);
		free(w);
		return edgeq_error_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < m->n_tensors; i++) {
		const struct edgeq_tensor *t = &m->tensors[i];

		ext[n].offset = t->offset;
		ext[n].size = t->size;
		ext[n].layer = t == m->tok_embd && !tied ? EDGEQ_STREAM_EMBED :
							   t->layer;
		n++;
	}
	if (tied && m->tok_embd)
		ext[n++] = (struct edgeq_stream_extent){ m->tok_embd->offset,
							 m->tok_embd->size,
							 EDGEQ_STREAM_EMBED };
	edgeq_stream_params_init(&sp);
	sp.path = p->path;
	sp.mode = p->weights;
	sp.budget = p->weights_budget;
	sp.n_layers = m->hp.n_layer;
	sp.use_io_uring = p->use_io_uring;
	/* tuning knob (Documentation/weights-streaming.rst) */
	if (getenv("EDGEQ_WEIGHTS_PREFETCH"))
		sp.prefetch = (uint32_t)atoi(getenv("EDGEQ_WEIGHTS_PREFETCH"));
	ret = edgeq_stream_open(&sp, ext, n, &w->s, err);
	free(ext);
	if (ret) {
		free(w);
		return ret;
	}
	edgeq_stream_status(w->s, &st);
	snprintf(m->weights_why, sizeof(m->weights_why), "%s", st.why);
	if (st.mode == EDGEQ_WEIGHTS_MMAP) {
		/* AUTO chose the baseline: the decoder's backend does it */
		edgeq_stream_close(w->s);
		free(w);
		return edgeq_weights_mmap_new(m, out, err);
	}
	w->base.ops = &stream_ops;
	w->base.model = m;
	*out = &w->base;
	return 0;
}

int edgeq_model_weights_status(const struct edgeq_model *m,
			       struct edgeq_stream_status *st)
{
	memset(st, 0, sizeof(*st));
	if (!m || !m->weights)
		return -EINVAL;
	if (m->weights->ops != &stream_ops) {
		st->mode = EDGEQ_WEIGHTS_MMAP;
		st->model_bytes = m->info.weight_bytes;
		snprintf(st->why, sizeof(st->why), "%s",
			 m->weights_why[0] ? m->weights_why : "requested");
		return 0;
	}
	edgeq_stream_status(sw_of(m->weights)->s, st);
	return 0;
}

int edgeq_model_set_weights_budget(struct edgeq_model *m, uint64_t bytes)
{
	if (!m || !m->weights)
		return -EINVAL;
	if (m->weights->ops != &stream_ops)
		return -EOPNOTSUPP; /* mmap: the kernel's page cache decides */
	edgeq_stream_set_budget(sw_of(m->weights)->s, bytes);
	return 0;
}
