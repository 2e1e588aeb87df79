/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal model representation shared by the loader, the forward pass and
 * the weight backends (mmap here; preload/stream in the streamer).
 *
 * The tensor table lists every tensor of the file with its absolute file
 * offset and byte size and the layer that uses it (EDGEQ_WEIGHTS_GLOBAL for
 * token_embd, output_norm, output), in file order. A weight backend serves
 * bytes for these entries; the forward pass reaches them only through
 * weights.h.
 */
#ifndef EDGEQ_MODEL_MODEL_H
#define EDGEQ_MODEL_MODEL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <edgeq/engine.h>
#include <edgeq/gguf.h>

#include "kernels/kernels.h"
#include "model/vocab.h"
#include "model/weights.h"

struct edgeq_tensor {
	char name[EDGEQ_GGUF_MAX_NAME];
	uint32_t type; /* enum edgeq_type */
	uint32_t n_dims;
	uint64_t ne[4];	    /* ne[0] = row length (cols), ne[1] = rows */
	uint64_t offset;    /* absolute file offset of the data */
	uint64_t size;	    /* bytes */
	size_t row_size;    /* bytes of one row of ne[0] elements */
	int layer;	    /* block index, or EDGEQ_WEIGHTS_GLOBAL */
	const void *packed; /* edgeq_pack16() form, or NULL (model/pack.c) */
	bool per_token;	    /* read by every decode step (not token_embd) */
};

/* phi3: wq is attn_qkv (rows q | k | v) with wk = wv = NULL, and w_up is
 * ffn_up (rows gate | up) with w_gate = NULL */
struct edgeq_layer {
	const struct edgeq_tensor *attn_norm, *wq, *wk, *wv, *wo;
	const struct edgeq_tensor *bq, *bk, *bv; /* qwen2; NULL for llama */
	/* qwen3, gemma3: RMSNorm of each head's query and key before RoPE */
	const struct edgeq_tensor *q_norm, *k_norm;
	/* gemma3: RMSNorm of the attention's and the FFN's outputs */
	const struct edgeq_tensor *post_attn_norm, *post_ffn_norm;
	const struct edgeq_tensor *ffn_norm, *w_gate, *w_up, *w_down;
};

struct edgeq_hparams {
	uint32_t n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv;
	uint32_t n_ff, head_dim, n_rot;
	float rms_eps;
	float rope_base;
	bool rope_neox; /* qwen2: rotate halves; llama: adjacent pairs */
	/* Llama 3 frequency scaling (rope.scaling.type "llama3") */
	bool rope_llama3;
	float rope_factor, rope_low_freq, rope_high_freq;
	uint32_t rope_orig_ctx;
	float rope_linear_scale; /* rope.scaling.type "linear": pos / factor */
	/* gemma3 */
	float attn_scale; /* q.k scale: 1 / sqrt(head_dim) but for 27B */
	float embd_scale; /* token embeddings times this (1: none) */
	bool gelu;	  /* FFN: gelu(gate) * up (tanh form), not SiLU */
	/* sliding-window layers: every layer when swa_pattern is 1, else
	 * those with l % swa_pattern below swa_pattern - 1, attend to their
	 * last n_swa positions (swa_pattern 0: no such layers); with a
	 * rope_base_swa their RoPE has that base and no scaling (gemma3),
	 * else the model's */
	uint32_t swa_pattern, n_swa;
	float rope_base_swa;
	float rope_attn_factor; /* cos and sin times this (1: none) */
	/* gemma2: scores and logits through cap * tanh(x / cap) (0: off) */
	float attn_softcap, final_softcap;
};

static inline bool hp_layer_swa(const struct edgeq_hparams *hp, uint32_t l)
{
	return hp->swa_pattern == 1 ||
	       (hp->swa_pattern && l % hp->swa_pattern < hp->swa_pattern - 1);
}

/* Does layer @l rotate with the sliding layers' own RoPE? */
static inline bool hp_layer_rope_swa(const struct edgeq_hparams *hp, uint32_t l)
{
	return hp->rope_base_swa > 0 && hp_layer_swa(hp, l);
}

/* Weight backend: the mmap one lives in weights_mmap.c. */
struct edgeq_weights_ops {
	int (*layer_begin)(struct edgeq_weights *w, int layer,
			   struct edgeq_error *err);
	const void *(*get)(struct edgeq_weights *w,
			   const struct edgeq_tensor *t);
	void (*layer_end)(struct edgeq_weights *w, int layer);
	/* Optional: whether get() answers for every layer without its
	 * layer_begin until the next layer_begin (mapped, or preloaded and
	 * read; not streamed) */
	bool (*resident)(struct edgeq_weights *w);
	int (*embed_rows)(struct edgeq_weights *w, const int32_t *toks,
			  size_t n, void *dst, size_t row_size,
			  struct edgeq_error *err);
	void (*free)(struct edgeq_weights *w);
};

/* Every backend's struct begins with this. */
struct edgeq_weights {
	const struct edgeq_weights_ops *ops;
	const struct edgeq_model *model;
};

struct edgeq_model {
	struct edgeq_model_info info;
	struct edgeq_model_params params;
	struct edgeq_hparams hp;
	struct edgeq_gguf *gguf;      /* the validated file (mmapped) */
	struct edgeq_tensor *tensors; /* table, file order */
	size_t n_tensors;
	const struct edgeq_tensor *tok_embd, *output_norm, *output;
	const struct edgeq_tensor *rope_freqs; /* Llama 3 factors, optional */
	/* phi3 long RoPE: divisors past rope_orig_ctx (long) or below */
	const struct edgeq_tensor *rope_long, *rope_short;
	float *rope_inv_freq;	  /* n_rot / 2: base^(-2i/n_rot) / factor_i */
	float *rope_inv_freq_swa; /* sliding-window layers' (gemma3), or NULL */
	float *rope_inv_freq_long; /* phi3's past rope_orig_ctx, or NULL */
	struct edgeq_layer *layers;
	struct edgeq_vocab vocab;
	struct edgeq_weights *weights;
	const struct edgeq_kernel_ops *ops;
	struct edgeq_threadpool *pool; /* NULL: one thread */
	int n_threads;
	bool vocab_only;
	pthread_mutex_t lock; /* one forward pass at a time (shared pool) */
	/* edgeq_model_profile(): the counts, and the last lap's clock and
	 * pool wait (decode.c) */
	bool prof_on;
	struct edgeq_decode_profile prof;
	uint64_t prof_last, prof_wait;
	char weights_why[160]; /* why the weights mode (the streamer's auto) */
	void *pack_base;       /* the packed matrices (model/pack.c) */
	size_t pack_len;
};

/*
 * Backend constructors. mmap is built in; preload/stream are provided by the
 * weight streamer (weights_stream.c); until it lands a stub answers
 * -EOPNOTSUPP.
 */
int edgeq_weights_mmap_new(const struct edgeq_model *m,
			   struct edgeq_weights **out, struct edgeq_error *err);
int edgeq_weights_stream_new(struct edgeq_model *m,
			     const struct edgeq_model_params *p,
			     struct edgeq_weights **out,
			     struct edgeq_error *err);
void edgeq_weights_free(struct edgeq_weights *w);
static inline bool edgeq_weights_resident(struct edgeq_weights *w)
{
	return w->ops->resident && w->ops->resident(w);
}

/*
 * Repack the matrices the kernels have a 16-row form of into one anonymous
 * region (tensor->packed), when the weights are mapped from the file and
 * the budget has room; records what was done in info.repack. Fails only
 * on a memory error.
 */
int model_pack_weights(struct edgeq_model *m,
		       const struct edgeq_model_params *p,
		       struct edgeq_error *err);
void model_pack_free(struct edgeq_model *m);
/* AUTO weights: map the file (and pack) rather than preload it, since the
 * packed copy is what the pass reads and it fits the budget. */
bool model_pack_wants_mmap(const struct edgeq_model *m,
			   const struct edgeq_model_params *p);

/* Forward-pass state that belongs to the model (decode.c). */
int edgeq_decode_init_model(struct edgeq_model *m, struct edgeq_error *err);
void edgeq_decode_exit_model(struct edgeq_model *m);
int32_t *ctx_history(struct edgeq_ctx *c);
struct edgeq_model *ctx_model(struct edgeq_ctx *c);

/*
 * Hooks placement installs on a ctx (userspace/lib/placement/exec.c) to run
 * ops on other devices. step_begin/step_end bracket one forward pass of @nb
 * tokens (a decode step is a token boundary); linear() may compute
 * y = W x elsewhere and return 0, or return non-zero to leave it to the CPU.
 */
struct edgeq_ctx_hooks {
	void (*step_begin)(void *arg, int nb);
	int (*linear)(void *arg, const struct edgeq_tensor *t, const float *x,
		      int nb, int ldx, float *y, int ldy);
	/* after the CPU ran a linear() the hook left to it */
	void (*linear_done)(void *arg, const struct edgeq_tensor *t, int nb);
	/* Optional: @n linears of the same input (q, k and v; gate and up),
	 * y[i] rows ldy[i] apart; 0 when it ran them all, else the decoder
	 * runs each through linear() (and the hook above). */
	int (*linear_n)(void *arg, const struct edgeq_tensor *const *t, int n,
			const float *x, int nb, int ldx, float *const *y,
			const int *ldy);
	/*
	 * Optional, passes of one ctx (a decode step or a prompt batch, not
	 * ctx_decode_batch()'s): run decoder blocks l .. l + n - 1, n <=
	 * @n_max, whole elsewhere (both norms, the products, RoPE, the KV
	 * writes at the tokens' positions, attention, both residual adds),
	 * reading and writing the ctx's hidden states (ctx_block_view()).
	 * Returns n, or 0 (or an error) when the CPU runs block l, with the
	 * hidden states as they were.
	 */
	int (*blocks)(void *arg, int l, int n_max);
	/* Optional, with blocks(): the n_vocab logits of the one-token pass
	 * if the call that ran its last block ran the output head too (the
	 * output norm and projection); 0 when it did, else the CPU runs the
	 * head. */
	int (*head)(void *arg, float *logits);
	void (*step_end)(void *arg, int nb);
};

/* What a blocks() hook reads and writes. */
struct ctx_block_view {
	float *x; /* the pass's hidden states [nb][n_embd] */
	int nb;	  /* its tokens, at positions pos .. pos + nb - 1 */
	uint8_t *k_cache, *v_cache; /* [n_layer][n_ctx][kv_row] */
	size_t kv_row;
	uint32_t n_ctx, pos;   /* the first token's position */
	const float *inv_freq; /* its RoPE frequencies [n_rot / 2] */
	enum edgeq_kv_type kv_type;
	/* ctx_kv_share(): the memfd and mapping both caches live in */
	int kv_fd; /* -1: not shared */
	void *kv_map;
	size_t kv_map_len;
};

void ctx_block_view(struct edgeq_ctx *c, struct ctx_block_view *v);
/*
 * Move the KV cache into one memfd (K, then V at a page boundary) that a
 * device or an agent can map: zero-copy KV for offloaded blocks. Once per
 * ctx; the contents are kept.
 */
int ctx_kv_share(struct edgeq_ctx *c, struct edgeq_error *err);

/*
 * Continuous batching: one forward pass over the tokens of several contexts
 * of one model (the next token of each slot, prompt chunks), each at its own
 * position, through the buffers of a workspace context made for it. Each
 * item's last logits land in its context (edgeq_decode's), or, with
 * all_logits, the logits of every one of its tokens there ([n][n_vocab]).
 * Placement hooks are not used: callers batch hook-less contexts only.
 */
#define EDGEQ_BATCH_MAX_ITEMS 256
struct ctx_batch_item {
	struct edgeq_ctx *c;
	const int32_t *toks;
	size_t n;
	float *all_logits;
};

int ctx_workspace_new(struct edgeq_model *m, uint32_t n_tokens,
		      struct edgeq_ctx **out, struct edgeq_error *err);
uint32_t ctx_workspace_tokens(const struct edgeq_ctx *w);
int ctx_decode_batch(struct edgeq_ctx *w, struct ctx_batch_item *it, int n,
		     struct edgeq_error *err);
bool ctx_has_hooks(const struct edgeq_ctx *c);
/*
 * One pass of @n <= EDGEQ_VERIFY_MAX tokens of @c (its placement hooks
 * used) with the logits of every one into @all ([n][n_vocab]): verifying
 * drafts in a placed context. c->logits is left as it was.
 */
#define EDGEQ_VERIFY_MAX 32
int ctx_decode_all(struct edgeq_ctx *c, const int32_t *toks, size_t n,
		   float *all, struct edgeq_error *err);
/*
 * Context shift: drop positions [keep, keep + n_discard) and move the rest
 * down, re-roping the moved keys to their new positions (history too).
 */
int ctx_shift(struct edgeq_ctx *c, uint32_t keep, uint32_t n_discard,
	      struct edgeq_error *err);
/*
 * Self-speculation: run @tok at @pos through the first @n_layers blocks and
 * the output head (logits into the ctx's). Writes those layers' KV at @pos
 * (the verifying pass writes the same values) and leaves the ctx's
 * position alone.
 */
int ctx_draft_step(struct edgeq_ctx *c, int32_t tok, uint32_t pos, int n_layers,
		   struct edgeq_error *err);
/* The logits of the last decode (n_vocab floats). */
const float *ctx_logits(struct edgeq_ctx *c);

/*
 * Speculative sampling with a deterministic draft token: sample from the
 * target's distribution (after every sampler stage) at @logits, accepting
 * @draft with probability p(draft) and otherwise drawing from p with the
 * draft removed, so the output distribution is exactly the target's.
 * Greedy: the argmax, accepted when it equals @draft.
 */
int32_t sampler_verify(struct edgeq_sampler *s, const float *logits,
		       uint32_t n_vocab, const int32_t *history,
		       size_t n_history, int32_t draft, bool *accepted);

/* Install (or with NULL remove) @h on @c. */
void ctx_set_hooks(struct edgeq_ctx *c, const struct edgeq_ctx_hooks *h,
		   void *arg);

#endif /* EDGEQ_MODEL_MODEL_H */
