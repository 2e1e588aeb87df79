// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The baseline weight backend: tensor bytes are read straight from the
 * validated, mmapped GGUF file (llama.cpp's way). The dispatching entry
 * points of weights.h live here too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* What one WILLNEED reads at most: the kernel caps each request at the
 * device's readahead size (128 KiB by default), so a long range is asked
 * for in steps of that. */
#define WILLNEED_STEP ((uint64_t)128 << 10)

/* Ask for the file's bytes [off, off + len) in the page cache, in the
 * background (advice: a failure changes nothing). */
static void willneed(int fd, uint64_t off, uint64_t len)
{
	for (uint64_t o = 0; o < len; o += WILLNEED_STEP)
		(void)posix_fadvise(fd, (off_t)(off + o),
				    (off_t)(len - o < WILLNEED_STEP ?
						    len - o :
						    WILLNEED_STEP),
				    POSIX_FADV_WILLNEED);
}

/* One row by pread(2); false when it did not give the whole row. */
static bool pread_row(int fd, void *dst, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = pread(fd, (char *)dst + got, len - got,
				  (off_t)(off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

/*
 * The rows are read with pread(2), not copied from the mapping: a row a
 * token has not used yet is a page this process never touched, and its
 * page fault cost 23-75 us in a VM (2.2 us a pread; --profile's embed was
 * 75 us per decode step, 80 us per prompt token, 2.6 % of a pp64) and
 * ~1 us natively, where a pread costs as much. A prompt's rows are asked
 * for first, so the ones the page cache lost are read together. Where the
 * file has no descriptor (a memory buffer) or a read falls short, the
 * mapping's bytes.
 */
static int mm_embed_rows(struct edgeq_weights *w, const int32_t *toks, size_t n,
			 void *dst, size_t row_size, struct edgeq_error *err)
{
	const struct edgeq_tensor *t = w->model->tok_embd;
	const struct edgeq_gguf *g = w->model->gguf;
	const uint8_t *base = g->base + t->offset;
	size_t i;

	if (row_size != t->row_size)
		return edgeq_error_set(err, EINVAL,
				       "embed_rows: row size %zu, expected %zu",
				       row_size, t->row_size);
	for (i = 0; i < n; i++)
		if (toks[i] < 0 || (uint64_t)toks[i] >= t->ne[1])
			return edgeq_error_set(
				err, EINVAL,
				"token id %d is out of range (vocabulary of %llu)",
				toks[i], (unsigned long long)t->ne[1]);
	for (i = 0; g->fd >= 0 && n > 1 && i < n; i++)
		willneed(g->fd, t->offset + (uint64_t)toks[i] * row_size,
			 row_size);
	for (i = 0; i < n; i++) {
		uint8_t *d = (uint8_t *)dst + i * row_size;
		uint64_t off = (uint64_t)toks[i] * row_size;

		if (g->fd < 0 ||
		    !pread_row(g->fd, d, row_size, t->offset + off))
			memcpy(d, base + off, row_size);
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
	/*
	 * The token embedding is read a row per token, anywhere in it, and a
	 * row the page cache lost costs a read from flash (~0.1-0.5 ms): 75
	 * us per decode step in --profile's embed, 19 ms of a cold 64-token
	 * prompt, one row after another. The matrices are read where they
	 * are used; the embedding is asked for whole now, in the background.
	 */
	if (m->tok_embd && m->gguf->fd >= 0)
		willneed(m->gguf->fd, m->tok_embd->offset, m->tok_embd->size);
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
