// SPDX-License-Identifier: GPL-2.0-or-later
/* The shape placement needs, read from a GGUF model's header. */
#include <errno.h>
#include <string.h>

#include "ledger/gguf_scan.h"
#include "plan_placement.h"

/*
 * The block matrices' type is the most frequent non-float tensor type
 * (a Q4_K_M file mixes Q4_K and Q6_K: Q4_K). The header walk does not say
 * which type the output matrix has; the planner uses the same one.
 */
static uint32_t dominant_type(const struct gguf_scan *g)
{
	uint32_t best = 0, n = 0;

	for (uint32_t t = 0; t < GGUF_SCAN_NTYPES; t++) {
		if (t == 0) /* f32: norms */
			continue;
		if (g->type_counts[t] > n) {
			n = g->type_counts[t];
			best = t;
		}
	}
	return n ? best : 0;
}

int plan_placement_model_shape(const char *path, struct edgeq_place_shape *s,
			       struct edgeq_error *err)
{
	struct gguf_scan g;
	int ret;

	ret = gguf_scan_open(path, &g, err);
	if (ret)
		return ret;
	memset(s, 0, sizeof(*s));
	s->n_layer = g.n_layer;
	s->n_embd = g.n_embd;
	s->n_ff = g.n_ff;
	s->n_head = g.n_head;
	s->n_head_kv = g.n_head_kv;
	s->head_dim = g.head_dim;
	s->n_vocab = g.n_vocab;
	s->wtype = s->otype = s->etype = dominant_type(&g);
	s->kvtype = 1; /* f16, the decoder's default */
	gguf_scan_close(&g);
	if (!s->n_layer || !s->n_embd || !s->n_ff || !s->n_head || !s->n_vocab)
		return edgeq_error_set(
			err, EINVAL,
			"%s: not a llama-family model placement "
			"knows (layers, sizes or vocabulary missing)",
			path);
	return 0;
}
