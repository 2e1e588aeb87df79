// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The op chain of one decode step of a llama-family model: what each op
 * computes, reads and hands on. Activations are f32.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/placement.h>

#define F32 0u

int edgeq_op_chain_alloc(struct edgeq_op_chain *c, size_t n)
{
	memset(c, 0, sizeof(*c));
	if (!n || n > (1u << 20))
		return -EINVAL;
	c->ops = calloc(n, sizeof(*c->ops));
	if (!c->ops)
		return -ENOMEM;
	c->n = n;
	return 0;
}

void edgeq_op_chain_free(struct edgeq_op_chain *c)
{
	if (!c)
		return;
	free(c->ops);
	c->ops = NULL;
	c->n = 0;
}

void edgeq_op_chain_index(struct edgeq_op_chain *c)
{
	c->n_base = 0;
	for (size_t i = 0; i < c->n; i++) {
		struct edgeq_op *op = &c->ops[i];
		size_t b;

		for (b = 0; b < c->n_base; b++)
			if (!strcmp(c->base[b], op->name))
				break;
		if (b == c->n_base) {
			if (c->n_base == EDGEQ_MAX_BASE_OPS) {
				b = EDGEQ_MAX_BASE_OPS - 1; /* share the last */
			} else {
				memcpy(c->base[b], op->name,
				       sizeof(c->base[b]));
				c->n_base++;
			}
		}
		op->base = (uint16_t)b;
	}
}

static struct edgeq_op *add(struct edgeq_op_chain *c, size_t *i,
			    const char *name, enum edgeq_op_kind kind,
			    uint32_t dtype, int layer, double flops,
			    double bytes, double out_bytes)
{
	struct edgeq_op *op = &c->ops[(*i)++];

	snprintf(op->name, sizeof(op->name), "%s", name);
	op->kind = kind;
	op->dtype = dtype;
	op->layer = layer;
	op->flops = flops;
	op->bytes = bytes;
	op->out_bytes = out_bytes;
	return op;
}

/* Weight matrix rows x cols of type t times one activation vector. */
static void matmul(struct edgeq_op_chain *c, size_t *i, const char *name,
		   uint32_t t, int layer, double rows, double cols)
{
	struct edgeq_op *op =
		add(c, i, name, EDGEQ_OPK_MATMUL, t, layer, 2 * rows * cols,
		    edgeq_dtype_bytes(t, rows * cols) + 4 * cols + 4 * rows,
		    4 * rows);

	op->weight_bytes = edgeq_dtype_bytes(t, rows * cols);
}

#define OPS_PER_LAYER 11

int edgeq_op_chain_llama(const struct edgeq_place_shape *s,
			 struct edgeq_op_chain *c)
{
	double E, F, H, Q, Ekv, Dh, V, nkv, kvb;
	struct edgeq_op *op;
	size_t i = 0;
	int ret;

	if (!s->n_layer || !s->n_embd || !s->n_ff || !s->n_head ||
	    !s->n_vocab || s->n_layer > 4096)
		return -EINVAL;
	ret = edgeq_op_chain_alloc(c, 3 + (size_t)s->n_layer * OPS_PER_LAYER);
	if (ret)
		return ret;
	E = s->n_embd;
	F = s->n_ff;
	H = s->n_head;
	Dh = s->head_dim ? s->head_dim : E / H;
	Q = H * Dh; /* Qwen3: above E */
	Ekv = (s->n_head_kv ? s->n_head_kv : s->n_head) * Dh;
	V = s->n_vocab;
	nkv = s->n_kv ? s->n_kv : 1;
	kvb = edgeq_dtype_bytes(s->kvtype, nkv * Ekv); /* one of K or V */
	c->in_bytes = 4;			       /* the token id */

	add(c, &i, "embed", EDGEQ_OPK_EMBED, s->etype, -1, E,
	    edgeq_dtype_bytes(s->etype, E) + 4 * E, 4 * E);
	for (uint32_t l = 0; l < s->n_layer; l++) {
		int L = (int)l;

		op = add(c, &i, "attn_norm", EDGEQ_OPK_RMSNORM, F32, L, 4 * E,
			 12 * E, 4 * E);
		op->weight_bytes = 4 * E;
		matmul(c, &i, "attn_qkv", s->wtype, L, Q + 2 * Ekv, E);
		/* rotates q and k, appends k and v to the cache */
		add(c, &i, "rope", EDGEQ_OPK_ROPE, F32, L, 6 * (Q + Ekv),
		    8 * (Q + 2 * Ekv) + edgeq_dtype_bytes(s->kvtype, 2 * Ekv),
		    4 * Q);
		/* q.K^T, softmax, p.V per head, fused as the decoder runs it */
		op = add(c, &i, "attention", EDGEQ_OPK_ATTN, s->kvtype, L,
			 4 * H * Dh * nkv + 5 * H * nkv,
			 2 * kvb + 8 * Q + 8 * H * nkv, 4 * Q);
		op->also = 1u << EDGEQ_OPK_SOFTMAX;
		matmul(c, &i, "attn_out", s->wtype, L, E, Q);
		add(c, &i, "attn_add", EDGEQ_OPK_ADD, F32, L, E, 12 * E, 4 * E);
		op = add(c, &i, "ffn_norm", EDGEQ_OPK_RMSNORM, F32, L, 4 * E,
			 12 * E, 4 * E);
		op->weight_bytes = 4 * E;
		matmul(c, &i, "ffn_gate_up", s->wtype, L, 2 * F, E);
		add(c, &i, "ffn_swiglu", EDGEQ_OPK_SWIGLU, F32, L, 6 * F,
		    12 * F, 4 * F);
		matmul(c, &i, "ffn_down", s->wtype, L, E, F);
		add(c, &i, "ffn_add", EDGEQ_OPK_ADD, F32, L, E, 12 * E, 4 * E);
	}
	op = add(c, &i, "output_norm", EDGEQ_OPK_RMSNORM, F32, -1, 4 * E,
		 12 * E, 4 * E);
	op->weight_bytes = 4 * E;
	matmul(c, &i, "output", s->otype, -1, V, E);
	edgeq_op_chain_index(c);
	return 0;
}
