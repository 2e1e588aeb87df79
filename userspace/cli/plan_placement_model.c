// SPDX-License-Identifier: GPL-2.0-or-later
/* The shape placement needs, read from a GGUF model's header. */
#include <errno.h>
#include <string.h>

#include <edgeq/gguf.h>

#include "ledger/ledger_int.h"
#include "plan_placement.h"

/*
 * The block matrices' type is the most frequent non-float tensor type
 * (a Q4_K_M file mixes Q4_K and Q6_K: Q4_K). The header walk does not say
 * which type the output matrix has; the planner uses the same one.
 */
static uint32_t dominant_type(const struct edgeq_gguf *g)
{
	uint32_t counts[EDGEQ_GGUF_NTYPES] = { 0 }, best = 0, n = 0;

	for (uint64_t i = 0; i < g->n_tensors; i++)
		counts[g->tensors[i].type]++;
	for (uint32_t t = 1; t < EDGEQ_GGUF_NTYPES; t++) { /* not f32: norms */
		if (counts[t] > n) {
			n = counts[t];
			best = t;
		}
	}
	return n ? best : 0;
}

int plan_placement_model_shape(const char *path, struct edgeq_place_shape *s,
			       struct edgeq_error *err)
{
	struct edgeq_model_shape ms;
	struct edgeq_gguf *g;
	int ret;

	ret = edgeq_gguf_open_flags(path, EDGEQ_GGUF_ANY_TYPE, &g, err);
	if (ret)
		return ret;
	ledger_gguf_shape(g, &ms);
	memset(s, 0, sizeof(*s));
	s->n_layer = ms.n_layer;
	s->n_embd = ms.n_embd;
	s->n_ff = ms.n_ff;
	s->n_head = ms.n_head;
	s->n_head_kv = ms.n_head_kv;
	s->head_dim = ms.head_dim;
	s->n_vocab = ms.n_vocab;
	s->wtype = s->otype = s->etype = dominant_type(g);
	s->kvtype = 1; /* f16, the decoder's default */
	edgeq_gguf_close(g);
	if (!s->n_layer || !s->n_embd || !s->n_ff || !s->n_head || !s->n_vocab)
		return edgeq_error_set(
			err, EINVAL,
			"%s: not a llama-family model placement "
			"knows (layers, sizes or vocabulary missing)",
			path);
	return 0;
}
