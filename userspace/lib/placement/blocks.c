// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Decoder blocks as device ops. One block of a one-token step is 16 ops
 * in the decoder's order (decode.c forward_layers()):
 *
 *   RMSNORM x -> xb; MATVEC q, k, v; ROPE q and k (one op: k's rows
 *   follow q's); STORE k, v into the layer's cache rows at the position;
 *   ATTENTION over the rows so far; MATVEC o -> xb; ADD x += xb; RMSNORM
 *   x -> xb; MATVEC gate, up; SILU_MUL; MATVEC down -> xb; ADD x += xb
 *
 * over an activation area (x at 0, then xb, q, k, v, the attention's
 * output, gate and up: a few KiB) and the ctx's own KV cache, shared with
 * the device, so the CPU can take over any step with the cache as the
 * device left it. Consecutive blocks chain through x; only x crosses the
 * boundary, once in and once out per chain; the chain that ends with the
 * last block may carry the output norm and projection too, the logits
 * coming back instead of a second submission.
 *
 * Biases (qwen2) are an ADD after their product (of the batch's rows where
 * the queues take tokens); per-head q and k norms
 * (qwen3, gemma3) one RMSNORM over every head as a row
 * (EDGEQ_F_NORM_ROWS); post norms (gemma3) an RMSNORM of xb before its
 * ADD; GELU (gemma3) GELU_MUL for SILU_MUL. A prompt batch's norms are
 * one op over its tokens where the queues take rows. What the ops cannot
 * express is refused up front (the CPU runs those models' blocks op by
 * op): fused q|k|v or gate|up (phi3), score caps (gemma2). A Q8_0 cache
 * is written by STORE's Q8_0 rows (EDGEQ_F_STORE_Q8_0) as the decoder's
 * kv_store() quantizes them, and read by ATTENTION's Q8_0 form.
 * RoPE goes as ROPE_FREQ with the ctx's own frequencies (Llama 3 bands,
 * per-dimension factors, phi3's long ones, linear scaling, the sliding
 * layers' base), so the table is the decoder's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/kq.h>

#include "kernels/kernels.h"
#include "placement/blocks.h"

const char *place_blocks_unsupported(const struct edgeq_model *m,
				     uint64_t features)
{
	const struct edgeq_hparams *hp = &m->hp;

	if ((features & (EDGEQ_F_OP_STORE | EDGEQ_F_OP_ROPE_FREQ)) !=
	    (EDGEQ_F_OP_STORE | EDGEQ_F_OP_ROPE_FREQ))
		return "the queues take no STORE or ROPE_FREQ";
	if (hp->gelu && !(features & EDGEQ_F_OP_GELU_MUL))
		return "GELU feed-forward (the queues take no GELU_MUL)";
	if (hp->attn_softcap > 0)
		return "attention score cap";
	for (uint32_t l = 0; l < hp->n_layer; l++) {
		const struct edgeq_layer *L = &m->layers[l];

		if (!L->wk || !L->w_gate)
			return "fused q|k|v or gate|up";
		if ((L->bq && L->bq->type != EDGEQ_TYPE_F32) ||
		    (L->bk && L->bk->type != EDGEQ_TYPE_F32) ||
		    (L->bv && L->bv->type != EDGEQ_TYPE_F32))
			return "attention biases not F32";
		if (!L->q_norm != !L->k_norm)
			return "a q norm without a k norm";
		if (L->q_norm && !(features & EDGEQ_F_NORM_ROWS))
			return "per-head norms (the queues take no RMSNORM "
			       "rows)";
		if ((L->q_norm && (L->q_norm->type != EDGEQ_TYPE_F32 ||
				   L->k_norm->type != EDGEQ_TYPE_F32)) ||
		    (L->post_attn_norm &&
		     L->post_attn_norm->type != EDGEQ_TYPE_F32) ||
		    (L->post_ffn_norm &&
		     L->post_ffn_norm->type != EDGEQ_TYPE_F32))
			return "norm weights not F32";
	}
	return NULL;
}

static uint64_t fbits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* Building one block: the next op and weight slots. */
struct bb {
	struct edgeq_place_cop *op;
	struct edgeq_place_weight *w;
	unsigned int nw;
	struct edgeq_model *m;
	bool rows;   /* RMSNORM over rows (EDGEQ_F_NORM_ROWS) */
	bool tokens; /* a prompt's RoPE, attention and biases as one op
		      * each (EDGEQ_F_TOKENS) */
};

static uint32_t weight(struct bb *b, const struct edgeq_tensor *t)
{
	struct edgeq_place_weight *w = &b->w[b->nw];

	for (uint32_t i = 0; i < b->nw; i++) /* a norm's, once per token */
		if (b->w[i].name == t->name)
			return i;

	w->name = t->name;
	w->layer = t->layer < 0 ? -1 : t->layer;
	w->type = t->type;
	w->data = edgeq_weights_get(b->m->weights, t);
	w->bytes = t->size;
	return b->nw++;
}

/* A table the decoder computed (RoPE frequencies) as a weight @name. */
static uint32_t table(struct bb *b, const char *name, const float *data,
		      uint32_t n)
{
	for (uint32_t i = 0; i < b->nw; i++)
		if (b->w[i].data == data && !strcmp(b->w[i].name, name))
			return i;
	b->w[b->nw] = (struct edgeq_place_weight){ name, -1, EDGEQ_TYPE_F32,
						   data, (uint64_t)n * 4 };
	return b->nw++;
}

static struct edgeq_place_cop *op(struct bb *b, uint16_t code)
{
	struct edgeq_place_cop *o = b->op++;

	memset(o, 0, sizeof(*o));
	edgeq_op_desc_init(&o->op, code, 0);
	return o;
}

static void act(struct edgeq_place_cop *o, int i, uint64_t off, uint64_t len)
{
	o->t[i] = (struct edgeq_place_tref){ EDGEQ_PLACE_MEM_ACT, 0, off, len };
}

static void kvref(struct edgeq_place_cop *o, int i, uint64_t off, uint64_t len)
{
	o->t[i] = (struct edgeq_place_tref){ EDGEQ_PLACE_MEM_KV, 0, off, len };
}

static void wref(struct edgeq_place_cop *o, int i, struct bb *b,
		 const struct edgeq_tensor *t)
{
	uint32_t k = weight(b, t);

	o->t[i] = (struct edgeq_place_tref){ EDGEQ_PLACE_MEM_WEIGHT, k, 0,
					     b->w[k].bytes };
}

/* y[nb][rows] = x[nb][cols] W^T: MATVEC for one token, MATMUL for more */
static void matvec(struct bb *b, const struct edgeq_tensor *t, uint64_t x,
		   uint64_t y, int nb)
{
	struct edgeq_place_cop *o =
		op(b, nb > 1 ? EDGEQ_OP_MATMUL : EDGEQ_OP_MATVEC);

	o->op.dtype = t->type;
	o->op.shape[0] = (uint64_t)t->ne[1];
	o->op.shape[1] = (uint64_t)t->ne[0];
	if (nb > 1)
		o->op.shape[2] = (uint64_t)nb;
	wref(o, 0, b, t);
	act(o, 1, x, (uint64_t)t->ne[0] * 4 * nb);
	act(o, 2, y, (uint64_t)t->ne[1] * 4 * nb);
}

/* @rows rows of @n: one op where the queues take rows, else one a row */
static void norm(struct bb *b, const struct edgeq_tensor *t, uint64_t x,
		 uint64_t y, uint32_t n, uint64_t rows)
{
	uint64_t per = b->rows ? rows : 1;

	for (uint64_t r = 0; r < rows; r += per) {
		struct edgeq_place_cop *o = op(b, EDGEQ_OP_RMSNORM);
		uint64_t off = r * n * 4;

		o->op.shape[0] = n;
		if (per > 1) {
			o->op.ndims = 2;
			o->op.shape[1] = per;
		}
		o->op.param[0] = fbits(b->m->hp.rms_eps);
		act(o, 0, x + off, per * n * 4);
		wref(o, 1, b, t);
		act(o, 2, y + off, per * n * 4);
	}
}

static void ew(struct bb *b, uint16_t code, uint64_t a, uint64_t c, uint64_t y,
	       uint32_t n)
{
	struct edgeq_place_cop *o = op(b, code);

	o->op.shape[0] = n;
	act(o, 0, a, (uint64_t)n * 4);
	act(o, 1, c, (uint64_t)n * 4);
	act(o, 2, y, (uint64_t)n * 4);
}

/* RoPE of layer @l as the decoder's rope_tables(): the ctx's frequencies
 * at the scaled position times the attention factor, or a sliding layer's
 * own base unscaled. */
/* @rows rows of y += bias (an F32 weight of @n), after its product: one
 * ADD of rows where the queues take tokens, else one a row */
static void bias(struct bb *b, const struct edgeq_tensor *t, uint64_t y,
		 uint32_t n, uint64_t rows)
{
	uint64_t per = b->tokens ? rows : 1;

	for (uint64_t r = 0; t && r < rows; r += per) {
		struct edgeq_place_cop *o = op(b, EDGEQ_OP_ADD);
		uint64_t off = y + r * n * 4;

		o->op.shape[0] = n;
		if (per > 1) {
			o->op.ndims = 2;
			o->op.shape[1] = per;
		}
		act(o, 0, off, per * n * 4);
		wref(o, 1, b, t);
		o->t[1].length = (uint64_t)n * 4;
		act(o, 2, off, per * n * 4);
	}
}

/* RoPE of @nt tokens from position @p of layer @l: one op of a token
 * dim where there are several (EDGEQ_F_TOKENS; the positions scaled on
 * the device as here), else ROPE_FREQ at the scaled position. */
static void rope(struct bb *b, const struct ctx_block_view *v, int l,
		 uint64_t x, uint32_t heads, uint32_t p, uint32_t nt)
{
	const struct edgeq_hparams *hp = &b->m->hp;
	struct edgeq_place_cop *o = op(b, EDGEQ_OP_ROPE_FREQ);
	bool swa = hp_layer_rope_swa(hp, (uint32_t)l);
	const float *inv = swa ? b->m->rope_inv_freq_swa : v->inv_freq;
	const char *name = swa ? "edgeq.rope.inv_freq_swa" :
			   inv == b->m->rope_inv_freq_long ?
				 "edgeq.rope.inv_freq_long" :
				 "edgeq.rope.inv_freq";
	float pos = swa ? (float)p : (float)p * hp->rope_linear_scale;
	uint32_t k = table(b, name, inv, hp->n_rot / 2);

	o->op.shape[0] = heads;
	o->op.shape[1] = hp->head_dim;
	o->op.param[0] = fbits(pos);
	if (nt > 1) {
		o->op.ndims = 3;
		o->op.shape[2] = nt;
		o->op.param[0] =
			fbits(swa ? 1.0f : hp->rope_linear_scale) << 32 | p;
	}
	o->op.param[1] = (uint64_t)hp->n_rot << 32 |
			 fbits(swa ? 1.0f : hp->rope_attn_factor);
	if (hp->rope_neox)
		o->op.flags = EDGEQ_OPF_ROPE_NEOX;
	act(o, 0, x, (uint64_t)nt * heads * hp->head_dim * 4);
	o->t[1] = (struct edgeq_place_tref){ EDGEQ_PLACE_MEM_WEIGHT, k, 0,
					     b->w[k].bytes };
}

static void store(struct bb *b, uint32_t dtype, uint64_t x, uint64_t row,
		  uint32_t n, size_t kv_row)
{
	struct edgeq_place_cop *o = op(b, EDGEQ_OP_STORE);

	o->op.dtype = dtype;
	o->op.shape[0] = n;
	act(o, 0, x, (uint64_t)n * 4);
	kvref(o, 1, row, kv_row);
}

static uint64_t al(uint64_t v)
{
	return (v + 255) & ~255ULL;
}

/* The attention of the @nt tokens from @p over layer @l's rows so far,
 * each over the rows up to its own (one op of @nt causal queries where
 * there are several, EDGEQ_F_TOKENS; a sliding layer's window bounds
 * each). */
static void attention(struct bb *b, const struct ctx_block_view *v, int l,
		      uint32_t p, uint32_t nt, uint32_t dtype, uint64_t v_off,
		      uint64_t q, uint64_t ao)
{
	const struct edgeq_hparams *hp = &b->m->hp;
	uint64_t q_bytes = (uint64_t)nt * hp->n_head * hp->head_dim * 4, row;
	struct edgeq_place_cop *o = op(b, EDGEQ_OP_ATTENTION);
	bool swa = hp_layer_swa(hp, (uint32_t)l);
	uint32_t first = 0;

	if (swa && p + 1 > hp->n_swa)
		first = p + 1 - hp->n_swa;
	o->op.dtype = dtype;
	o->op.shape[0] = hp->n_head;
	o->op.shape[1] = hp->n_head_kv;
	o->op.shape[2] = hp->head_dim;
	o->op.shape[3] = p + nt - first;
	o->op.param[0] = fbits(hp->attn_scale);
	if (nt > 1)
		o->op.param[1] = (uint64_t)(swa ? hp->n_swa : 0) << 32 | nt;
	act(o, 0, q, q_bytes);
	row = ((uint64_t)l * v->n_ctx + first) * v->kv_row;
	kvref(o, 1, row, o->op.shape[3] * v->kv_row);
	kvref(o, 2, v_off + row, o->op.shape[3] * v->kv_row);
	act(o, 3, ao, q_bytes);
}

/* The element type of a cache of @kv as an op's dtype. */
static uint32_t kv_dtype(enum edgeq_kv_type kv)
{
	return kv == EDGEQ_KV_F16  ? EDGEQ_DTYPE_F16 :
	       kv == EDGEQ_KV_Q8_0 ? EDGEQ_DTYPE_Q8_0 :
				     EDGEQ_DTYPE_F32;
}

/* A batch's K (and V) rows go as one STORE where a cache row is exactly
 * the stored elements (no padding between the tokens' rows). */
bool place_blocks_rows_packed(const struct edgeq_model *m,
			      const struct ctx_block_view *v)
{
	uint64_t kv_dim = (uint64_t)m->hp.n_head_kv * m->hp.head_dim;

	return v->kv_row ==
	       edgeq_row_size(kv_dtype(v->kv_type), (int64_t)kv_dim);
}

unsigned int place_blocks_ops(const struct edgeq_model *m, uint64_t features,
			      int nb, bool rows_packed)
{
	const struct edgeq_hparams *hp = &m->hp;
	unsigned int n = 0, norm = features & EDGEQ_F_NORM_ROWS ? 1 : nb;
	bool one_store = rows_packed && nb > 1;
	unsigned int per_tok = features & EDGEQ_F_TOKENS ? 1 : nb;

	/* the largest block: the ops build() emits for it */
	for (uint32_t l = 0; l < hp->n_layer; l++) {
		const struct edgeq_layer *L = &m->layers[l];
		unsigned int k =
			2 * norm + 7 + 3; /* norms, products, adds, gate */

		/* rope q, k and attention (one op each for the batch with
		 * EDGEQ_F_TOKENS; q and k one RoPE for one token); store k,
		 * v (the batch's at once where packed) */
		k += (nb == 1 ? 2 : 3 * per_tok) +
		     (one_store ? 2 : 2 * (unsigned int)nb);
		if (L->bq) /* an ADD a token, or of the batch's rows */
			k += 3 * per_tok;
		if (L->q_norm) /* every head a row */
			k += norm == 1 ? 2 :
					 (unsigned int)nb *
						 (hp->n_head + hp->n_head_kv);
		if (L->post_attn_norm)
			k += norm;
		if (L->post_ffn_norm)
			k += norm;
		if (k > n)
			n = k;
	}
	return n;
}

int place_blocks_build(struct place_blocks *b, struct edgeq_model *m,
		       uint64_t features, const struct ctx_block_view *v,
		       int l0, int n, float *head_logits,
		       struct edgeq_place_chain *ch)
{
	const struct edgeq_hparams *hp = &m->hp;
	uint64_t nb = v->nb > 0 ? (uint64_t)v->nb : 1;
	uint64_t E = hp->n_embd, F = hp->n_ff, hd = hp->head_dim;
	uint64_t q_dim = hp->n_head * hd, kv_dim = hp->n_head_kv * hd;
	/* each region holds the pass's nb rows */
	uint64_t x = 0, xb = al(x + nb * E * 4), q = al(xb + nb * E * 4);
	/* one token's k right after its q: one RoPE for both heads' rows */
	uint64_t k = nb == 1 ? q + q_dim * 4 : al(q + nb * q_dim * 4);
	uint64_t vv = al(k + nb * kv_dim * 4);
	uint64_t ao = al(vv + nb * kv_dim * 4), g = al(ao + nb * q_dim * 4);
	uint64_t u = al(g + nb * F * 4), lg = al(u + nb * F * 4);
	uint64_t end = lg + (head_logits ? al((uint64_t)hp->n_vocab * 4) : 0);
	uint64_t v_off = (uint64_t)(v->v_cache - (uint8_t *)v->kv_map);
	size_t per = place_blocks_ops(m, features, (int)nb,
				      place_blocks_rows_packed(m, v));
	uint32_t dtype;
	bool one_store;
	uint64_t tok; /* tokens an op of RoPE or attention takes */
	struct bb bb;

	dtype = kv_dtype(v->kv_type);
	if (dtype == EDGEQ_DTYPE_Q8_0 && !(features & EDGEQ_F_STORE_Q8_0))
		return -EOPNOTSUPP;
	if (!v->kv_map || v->k_cache != v->kv_map)
		return -EOPNOTSUPP;
	if (head_logits && nb != 1)
		return -EINVAL; /* a batch's head: the CPU's, last row only */
	/* room for one block more than asked: the head's two ops fit */
	if ((unsigned int)n + 1 > b->cap || per > b->per) {
		struct edgeq_place_cop *o =
			realloc(b->ops, (size_t)(n + 1) * per * sizeof(*o));
		struct edgeq_place_weight *w;

		if (!o)
			return -ENOMEM;
		b->ops = o;
		w = realloc(b->w,
			    (size_t)(n + 1) * PLACE_BLOCK_WEIGHTS * sizeof(*w));
		if (!w)
			return -ENOMEM;
		b->w = w;
		b->cap = (unsigned int)n + 1;
		b->per = per;
	}
	bb = (struct bb){ b->ops,
			  b->w,
			  0,
			  m,
			  !!(features & EDGEQ_F_NORM_ROWS),
			  nb > 1 && (features & EDGEQ_F_TOKENS) };
	one_store = nb > 1 && place_blocks_rows_packed(m, v);
	tok = bb.tokens ? nb : 1;
	for (int l = l0; l < l0 + n; l++) {
		const struct edgeq_layer *L = &m->layers[l];
		uint64_t t;

		norm(&bb, L->attn_norm, x, xb, (uint32_t)E, nb);
		matvec(&bb, L->wq, xb, q, (int)nb);
		matvec(&bb, L->wk, xb, k, (int)nb);
		matvec(&bb, L->wv, xb, vv, (int)nb);
		if (L->q_norm) { /* qwen3, gemma3: every head's, no biases */
			norm(&bb, L->q_norm, q, q, (uint32_t)hd,
			     nb * hp->n_head);
			norm(&bb, L->k_norm, k, k, (uint32_t)hd,
			     nb * hp->n_head_kv);
		}
		bias(&bb, L->bq, q, (uint32_t)q_dim, nb);
		bias(&bb, L->bk, k, (uint32_t)kv_dim, nb);
		bias(&bb, L->bv, vv, (uint32_t)kv_dim, nb);
		/* the batch's tokens are independent until attention */
		if (nb == 1)
			rope(&bb, v, l, q, hp->n_head + hp->n_head_kv, v->pos,
			     1);
		for (t = 0; t < nb && nb > 1; t += tok) {
			uint32_t p = v->pos + (uint32_t)t;

			rope(&bb, v, l, q + t * q_dim * 4, hp->n_head, p,
			     (uint32_t)tok);
			rope(&bb, v, l, k + t * kv_dim * 4, hp->n_head_kv, p,
			     (uint32_t)tok);
		}
		for (t = 0; t < nb; t += one_store ? nb : 1) {
			uint64_t row = ((uint64_t)l * v->n_ctx + v->pos + t) *
				       v->kv_row;
			uint64_t rows = one_store ? nb : 1;

			/* packed: the batch's rows are consecutive */
			store(&bb, dtype, k + t * kv_dim * 4, row,
			      (uint32_t)(rows * kv_dim), rows * v->kv_row);
			store(&bb, dtype, vv + t * kv_dim * 4, v_off + row,
			      (uint32_t)(rows * kv_dim), rows * v->kv_row);
		}
		/* causal: token t sees the rows up to its own, all stored */
		for (t = 0; t < nb; t += tok)
			attention(&bb, v, l, v->pos + (uint32_t)t,
				  (uint32_t)tok, dtype, v_off,
				  q + t * q_dim * 4, ao + t * q_dim * 4);
		matvec(&bb, L->wo, ao, xb, (int)nb);
		if (L->post_attn_norm)
			norm(&bb, L->post_attn_norm, xb, xb, (uint32_t)E, nb);
		ew(&bb, EDGEQ_OP_ADD, x, xb, x, (uint32_t)(nb * E));
		norm(&bb, L->ffn_norm, x, xb, (uint32_t)E, nb);
		matvec(&bb, L->w_gate, xb, g, (int)nb);
		matvec(&bb, L->w_up, xb, u, (int)nb);
		ew(&bb, hp->gelu ? EDGEQ_OP_GELU_MUL : EDGEQ_OP_SILU_MUL, g, u,
		   g, (uint32_t)(nb * F));
		matvec(&bb, L->w_down, g, xb, (int)nb);
		if (L->post_ffn_norm)
			norm(&bb, L->post_ffn_norm, xb, xb, (uint32_t)E, nb);
		ew(&bb, EDGEQ_OP_ADD, x, xb, x, (uint32_t)(nb * E));
	}
	if (head_logits) { /* forward_head(): x -> norm -> logits */
		norm(&bb, m->output_norm, x, xb, (uint32_t)E, 1);
		matvec(&bb, m->output, xb, lg, 1);
	}
	*ch = (struct edgeq_place_chain){
		.ops = b->ops,
		.n_ops = (unsigned int)(bb.op - b->ops),
		.w = b->w,
		.n_w = bb.nw,
		.act_bytes = end,
		.in = v->x,
		.in_len = nb * E * 4,
		.out = v->x,
		.out_len = nb * E * 4,
		.head_out = head_logits,
		.head_off = lg,
		.head_len = head_logits ? (uint64_t)hp->n_vocab * 4 : 0,
		.kv_fd = v->kv_fd,
		.kv_base = v->kv_map,
		.kv_len = v->kv_map_len,
	};
	return 0;
}

void place_blocks_free(struct place_blocks *b)
{
	free(b->ops);
	free(b->w);
	b->ops = NULL;
	b->w = NULL;
	b->cap = 0;
}
