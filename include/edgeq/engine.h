/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The decoder: load a llama-family GGUF model, tokenize, run the forward pass
 * and sample. This header is the contract the CLI, the daemon, the weight
 * streamer, placement and the benchmarks build on.
 *
 * Lifetimes: a struct edgeq_model owns the weights and the tokenizer and may
 * serve several struct edgeq_ctx (each a KV cache and run state for one
 * sequence). Nothing here prints; errors come back as -errno plus a message
 * in struct edgeq_error.
 */
#ifndef EDGEQ_ENGINE_H
#define EDGEQ_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <edgeq/edgeq.h>

#ifdef __cplusplus
extern "C" {
#endif

struct edgeq_model;
struct edgeq_ctx;

/* How tensor data reaches memory (the weight streamer implements these). */
enum edgeq_weights_mode {
	EDGEQ_WEIGHTS_AUTO = 0, /* chosen from the memory budget */
	EDGEQ_WEIGHTS_MMAP, /* mmap the file (llama.cpp's way; the baseline) */
	EDGEQ_WEIGHTS_PRELOAD, /* read everything with O_DIRECT io_uring */
	EDGEQ_WEIGHTS_STREAM,  /* resident budget < model; stream the rest */
};

enum edgeq_kv_type {
	EDGEQ_KV_F16 = 0,
	EDGEQ_KV_Q8_0,
	EDGEQ_KV_F32,
};

struct edgeq_model_params {
	const char *path;
	int n_threads; /* 0: all cores */
	enum edgeq_weights_mode weights;
	uint64_t weights_budget; /* bytes resident; 0: derive from memory */
	bool use_io_uring;	 /* false forces the pread fallback */
	bool vocab_only;	 /* load the tokenizer only (no weights) */
	/* keep the file's weight layout (default: repack the matrices the
	 * kernels have a faster layout for, when the budget has room; the
	 * environment's EDGEQ_NO_REPACK=1 sets it) */
	bool no_repack;
};

/* What a loaded model is; filled by the loader from GGUF metadata. */
struct edgeq_model_info {
	char arch[32];	/* "llama", "qwen2" */
	char name[128]; /* general.name, may be empty */
	uint32_t n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv;
	uint32_t n_ff, head_dim;
	uint64_t n_params;
	uint64_t file_size;	  /* bytes of the file */
	uint64_t weight_bytes;	  /* bytes of all tensor data (quantized) */
	uint64_t bytes_per_token; /* weight bytes one decode step reads */
	uint32_t type_counts[40]; /* tensors per ggml type id */
	char tokenizer[16];	  /* "llama" (SentencePiece) or "gpt2" (BPE) */
	int32_t bos, eos;	  /* -1 when absent */
	bool add_bos;		  /* the tokenizer wants BOS prepended */
	uint32_t n_rot;		  /* rotary dimensions per head */
	float rope_base, rms_eps;
	/* weights repacked at load (16-row groups), and what was done or why
	 * not: "Q4_0 x 155 in 16-row groups", "off: --no-repack", ... */
	uint64_t packed_bytes;
	uint32_t packed_tensors;
	char repack[96];
};

void edgeq_model_params_init(struct edgeq_model_params *p);
int edgeq_model_load(const struct edgeq_model_params *p,
		     struct edgeq_model **out, struct edgeq_error *err);
void edgeq_model_free(struct edgeq_model *m);
const struct edgeq_model_info *edgeq_model_info(const struct edgeq_model *m);
/* The file's tokenizer.chat_template text (not NUL-terminated; valid while
 * the model is loaded), or NULL with *@len 0 when it has none. */
const char *edgeq_model_chat_template(const struct edgeq_model *m, size_t *len);

/* Tokenizer. @n_out receives the count; -ENOSPC when @max is too small. */
int edgeq_tokenize(const struct edgeq_model *m, const char *text, bool add_bos,
		   bool parse_special, int32_t *toks, size_t max,
		   size_t *n_out);
/* The bytes of one token (raw; may be a partial UTF-8 sequence). Returns the
 * length, or -ENOSPC/-EINVAL. */
int edgeq_token_to_piece(const struct edgeq_model *m, int32_t tok, char *buf,
			 size_t len);
bool edgeq_token_is_eog(const struct edgeq_model *m, int32_t tok);

struct edgeq_ctx_params {
	uint32_t n_ctx;	  /* 0: min(model's, what memory allows) */
	uint32_t n_batch; /* prefill batch (default 64) */
	enum edgeq_kv_type kv_type;
};

void edgeq_ctx_params_init(struct edgeq_ctx_params *p);
int edgeq_ctx_new(struct edgeq_model *m, const struct edgeq_ctx_params *p,
		  struct edgeq_ctx **out, struct edgeq_error *err);
void edgeq_ctx_free(struct edgeq_ctx *c);
/* Forget the KV cache from position @pos on (0 clears it). */
void edgeq_ctx_truncate(struct edgeq_ctx *c, uint32_t pos);
uint32_t edgeq_ctx_pos(const struct edgeq_ctx *c);
/* The context size (positions) the ctx was created with. */
uint32_t edgeq_ctx_n_ctx(const struct edgeq_ctx *c);
/* The most prompt tokens one forward pass takes (n_batch as clamped). */
uint32_t edgeq_ctx_n_batch(const struct edgeq_ctx *c);

/*
 * Run @n tokens at the next positions (prefill in batches when n > 1) and
 * return the logits of the last one (n_vocab floats owned by the ctx, valid
 * until the next call). -ENOSPC when the context is full.
 */
int edgeq_decode(struct edgeq_ctx *c, const int32_t *toks, size_t n,
		 const float **logits, struct edgeq_error *err);

/*
 * Where the forward pass spends its time (edgeq bench --profile). Every
 * nanosecond between the start and the end of a pass goes to exactly one
 * part, so the parts add up to the total; matvecs are split by the tensor
 * they multiply, with the weight bytes they read. SYNC is the time the
 * calling thread waits at the end of a parallel op for the other threads
 * (imbalance and wake-up), taken out of the op it ends.
 */
enum edgeq_prof_part {
	EDGEQ_PROF_EMBED = 0, /* token rows, to float, embedding scale */
	EDGEQ_PROF_WEIGHTS,   /* waiting for streamed weights */
	EDGEQ_PROF_NORM,      /* RMSNorm (attention, FFN, head, q/k, post) */
	EDGEQ_PROF_QUANT_ACT, /* activations into the weights' dot type */
	EDGEQ_PROF_ATTN_Q,    /* matvec/matmul by tensor */
	EDGEQ_PROF_ATTN_K,
	EDGEQ_PROF_ATTN_V,
	EDGEQ_PROF_ATTN_QKV, /* phi3's fused q|k|v */
	EDGEQ_PROF_ATTN_OUT,
	EDGEQ_PROF_FFN_GATE,
	EDGEQ_PROF_FFN_UP, /* phi3: gate|up */
	EDGEQ_PROF_FFN_DOWN,
	EDGEQ_PROF_OUTPUT,
	EDGEQ_PROF_ROPE_KV,   /* RoPE and the KV cache writes */
	EDGEQ_PROF_ATTENTION, /* scores, softmax, weighted values */
	EDGEQ_PROF_ELEMWISE,  /* biases, SiLU/GELU x up, residuals, caps */
	EDGEQ_PROF_DEVICE,    /* linears placement ran on another device */
	EDGEQ_PROF_SYNC,      /* waiting for the pool's other threads */
	EDGEQ_PROF_COUNT,
};

struct edgeq_decode_profile {
	uint64_t ns[EDGEQ_PROF_COUNT];
	uint64_t calls[EDGEQ_PROF_COUNT];
	uint64_t bytes[EDGEQ_PROF_COUNT]; /* weight bytes read (matvecs) */
	uint64_t macs[EDGEQ_PROF_COUNT];  /* multiply-adds (matvecs) */
	uint64_t total_ns;		  /* sum of ns[] */
	uint64_t passes, tokens;	  /* forward passes, tokens in them */
	const char *kernels;		  /* the ops table: "avx512", "neon" */
	int threads;			  /* the pool's threads */
};

/* "attn_q", "sync", ...; NULL past the last part. */
const char *edgeq_prof_part_name(enum edgeq_prof_part p);
/* Start (@on: zeroed) or stop counting the model's forward passes. */
void edgeq_model_profile(struct edgeq_model *m, bool on);
/* The counts since the last start. */
void edgeq_model_profile_get(const struct edgeq_model *m,
			     struct edgeq_decode_profile *out);

struct edgeq_sampler_params {
	float temp;	      /* 0: greedy */
	int top_k;	      /* 0: off */
	float top_p;	      /* 1: off */
	float min_p;	      /* 0: off */
	float repeat_penalty; /* 1: off */
	int repeat_last_n;
	uint64_t seed;
};

struct edgeq_sampler;
void edgeq_sampler_params_init(struct edgeq_sampler_params *p);
int edgeq_sampler_new(const struct edgeq_sampler_params *p,
		      struct edgeq_sampler **out);
void edgeq_sampler_free(struct edgeq_sampler *s);
int32_t edgeq_sampler_sample(struct edgeq_sampler *s, const float *logits,
			     uint32_t n_vocab, const int32_t *history,
			     size_t n_history);

/*
 * Speculative decoding: what drafts tokens for the target to verify k + 1
 * at a time in one pass. Greedy output is identical to plain decoding; with
 * sampling, drafts are accepted by the standard speculative sampling rule,
 * so the output distribution is the target's.
 */
enum edgeq_draft_kind {
	EDGEQ_DRAFT_NONE = 0,
	EDGEQ_DRAFT_LOOKUP, /* n-grams of the context (prompt lookup) */
	EDGEQ_DRAFT_LAYERS, /* the target's first @layers layers and head */
	EDGEQ_DRAFT_MODEL,  /* a second model with the same vocabulary */
};

struct edgeq_draft_params {
	enum edgeq_draft_kind kind;
	int layers;		   /* LAYERS: 1 .. n_layer - 1 */
	struct edgeq_model *model; /* MODEL: loaded by the caller */
	int max_len;		   /* most tokens drafted per pass (4; 1..16) */
	bool fixed; /* always max_len; else adapted to acceptance */
	/*
	 * MODEL, one-slot generations (edgeq_generate) only: the caller's
	 * context of @model, used instead of one the session would make (so
	 * the caller can place the draft on a device queue); it must hold at
	 * least the target context's positions and outlive the generation,
	 * and is rewound to what the target holds. NULL: the session's own.
	 */
	struct edgeq_ctx *ctx;
};

/*
 * "lookup", "layers:L" or a model path (*@path set, the caller loads it).
 * Returns 0 or -EINVAL.
 */
int edgeq_draft_parse(const char *spec, struct edgeq_draft_params *p,
		      const char **path);
/* 0 when @draft's vocabulary is @target's token for token, else -EINVAL
 * naming the first difference. */
int edgeq_draft_check_vocab(const struct edgeq_model *target,
			    const struct edgeq_model *draft,
			    struct edgeq_error *err);

/* Figures of one generation. */
struct edgeq_gen_stats {
	uint32_t n_prompt, n_gen;
	uint64_t load_ns, prompt_ns, decode_ns, ttft_ns;
	uint64_t peak_rss;
	uint64_t bytes_per_token;
	uint32_t n_eval;	  /* decode passes of the target in decode_ns */
	uint32_t n_prompt_passes; /* passes that read a part of the prompt */
	/* speculation: tokens drafted, drafts accepted, verify passes that
	 * rejected one, verify passes (those with drafts; n_drafted /
	 * n_verify is the mean draft length), draft time, the measured cost
	 * of a draft token over a plain pass (the mean over its verify
	 * passes of the value the session chose lengths by) */
	uint32_t n_drafted, n_accepted, n_rejected, n_verify;
	uint64_t draft_ns;
	double draft_cost;
};

/* Called with each new token and its text; return non-zero to stop. */
typedef int (*edgeq_token_cb)(void *user, int32_t tok, const char *piece,
			      size_t len);

struct edgeq_gen_params {
	const char *prompt;
	bool add_bos;
	int n_predict; /* -1: until EOS or the context is full */
	struct edgeq_sampler_params sampling;
	struct edgeq_draft_params draft; /* zeroed: no speculation */
	/* at the context limit, keep the first n_keep tokens and the newest
	 * half of the rest instead of stopping */
	bool context_shift;
	uint32_t n_keep;
};

/* Defaults: no prompt, no BOS, n_predict -1, the sampler's defaults, no
 * speculation, no context shift. Callers set what they need after it. */
void edgeq_gen_params_init(struct edgeq_gen_params *p);

/*
 * Tokenize, prefill, then decode and sample until EOS or n_predict, calling
 * @cb for each generated token. Token ids may be collected through the
 * callback. Stats are written on success.
 */
int edgeq_generate(struct edgeq_ctx *c, const struct edgeq_gen_params *p,
		   edgeq_token_cb cb, void *user, struct edgeq_gen_stats *st,
		   struct edgeq_error *err);

#ifdef __cplusplus
}
#endif
#endif /* EDGEQ_ENGINE_H */
