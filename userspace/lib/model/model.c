// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Model loader: GGUF metadata -> hyperparameters, tensor table and layer
 * views (llama and qwen2 architectures), the tokenizer, and a weight
 * backend. Every tensor the forward pass uses is checked for presence,
 * type and shape here, so the forward pass can trust them.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <edgeq/engine.h>

#include "kernels/kernels.h"
#include "model/model.h"

void edgeq_model_params_init(struct edgeq_model_params *p)
{
	memset(p, 0, sizeof(*p));
	p->weights = EDGEQ_WEIGHTS_AUTO;
	p->use_io_uring = true;
	p->no_repack = getenv("EDGEQ_NO_REPACK") &&
		       strcmp(getenv("EDGEQ_NO_REPACK"), "0");
}

const struct edgeq_model_info *edgeq_model_info(const struct edgeq_model *m)
{
	return &m->info;
}

static int key_u32(const struct edgeq_gguf *g, const char *arch,
		   const char *suffix, uint32_t *out, bool required,
		   struct edgeq_error *err)
{
	char key[128];
	int ret;

	snprintf(key, sizeof(key), "%s.%s", arch, suffix);
	ret = edgeq_gguf_get_u32(g, key, out, err);
	if (ret == -ENOENT && required)
		return edgeq_error_set(
			err, EBADMSG, "model: metadata key %s is missing", key);
	return ret == -ENOENT ? 0 : ret;
}

static int key_f32(const struct edgeq_gguf *g, const char *arch,
		   const char *suffix, float *out, struct edgeq_error *err)
{
	char key[128];
	int ret;

	snprintf(key, sizeof(key), "%s.%s", arch, suffix);
	ret = edgeq_gguf_get_f32(g, key, out, err);
	return ret == -ENOENT ? 0 : ret;
}

static int bad_hparam(struct edgeq_error *err, const struct edgeq_gguf *g,
		      const char *arch, const char *suffix, uint64_t val,
		      const char *why)
{
	char key[128];
	const struct edgeq_gguf_kv *kv;

	snprintf(key, sizeof(key), "%s.%s", arch, suffix);
	kv = edgeq_gguf_find(g, key);
	return edgeq_error_set(err, EBADMSG,
			       "model: %s = %llu (at offset %llu) %s", key,
			       (unsigned long long)val,
			       kv ? (unsigned long long)kv->val_off : 0ull,
			       why);
}

static int load_hparams(struct edgeq_model *m, const char *arch,
			struct edgeq_error *err)
{
	const struct edgeq_gguf *g = m->gguf;
	struct edgeq_hparams *hp = &m->hp;
	struct edgeq_gguf_str st;
	char key[128];
	uint32_t kl = 0;
	int ret;

	bool qwen = !strcmp(arch, "qwen2") || !strcmp(arch, "qwen3");
	bool gemma3 = !strcmp(arch, "gemma3");
	bool gemma2 = !strcmp(arch, "gemma2");
	uint32_t vl = 0;

	hp->rms_eps = qwen || gemma3 || gemma2 ? 1e-6f : 1e-5f;
	hp->rope_base = qwen || gemma3 ? 1000000.0f : 10000.0f;
	hp->rope_neox = qwen || gemma3 || gemma2 || !strcmp(arch, "phi3");
	hp->embd_scale = 1.0f;
	hp->rope_attn_factor = 1.0f;
	hp->rope_linear_scale = 1.0f;
	if ((ret = key_u32(g, arch, "block_count", &hp->n_layer, true, err)) ||
	    (ret = key_u32(g, arch, "embedding_length", &hp->n_embd, true,
			   err)) ||
	    (ret = key_u32(g, arch, "feed_forward_length", &hp->n_ff, true,
			   err)) ||
	    (ret = key_u32(g, arch, "attention.head_count", &hp->n_head, true,
			   err)) ||
	    (ret = key_u32(g, arch, "context_length", &hp->n_ctx_train, true,
			   err)))
		return ret;
	hp->n_head_kv = hp->n_head;
	if ((ret = key_u32(g, arch, "attention.head_count_kv", &hp->n_head_kv,
			   false, err)) ||
	    (ret = key_u32(g, arch, "attention.key_length", &kl, false, err)) ||
	    (ret = key_u32(g, arch, "attention.value_length", &vl, false,
			   err)) ||
	    (ret = key_f32(g, arch, "attention.layer_norm_rms_epsilon",
			   &hp->rms_eps, err)) ||
	    (ret = key_f32(g, arch, "rope.freq_base", &hp->rope_base, err)))
		return ret;
	if (hp->n_layer == 0 || hp->n_layer > 1024)
		return bad_hparam(err, g, arch, "block_count", hp->n_layer,
				  "is out of range (1..1024)");
	if (hp->n_embd == 0 || hp->n_embd > 65536)
		return bad_hparam(err, g, arch, "embedding_length", hp->n_embd,
				  "is out of range (1..65536)");
	if (hp->n_ff == 0 || hp->n_ff > 1u << 20)
		return bad_hparam(err, g, arch, "feed_forward_length", hp->n_ff,
				  "is out of range");
	if (hp->n_head == 0 || hp->n_head > 4096)
		return bad_hparam(err, g, arch, "attention.head_count",
				  hp->n_head, "is out of range (1..4096)");
	/* the head dimension: key_length when given (Qwen3's 128 with an
	 * embedding of 1024 and 16 heads), else embedding / heads */
	if (!kl && hp->n_embd % hp->n_head)
		return bad_hparam(err, g, arch, "attention.head_count",
				  hp->n_head,
				  "does not divide embedding_length");
	if (hp->n_head_kv == 0 || hp->n_head % hp->n_head_kv)
		return bad_hparam(err, g, arch, "attention.head_count_kv",
				  hp->n_head_kv, "does not divide head_count");
	if (hp->n_ctx_train == 0)
		return bad_hparam(err, g, arch, "context_length", 0, "is zero");
	hp->head_dim = kl ? kl : hp->n_embd / hp->n_head;
	if (hp->head_dim > 1024)
		return bad_hparam(err, g, arch, "attention.key_length",
				  hp->head_dim, "is out of range (1..1024)");
	if (vl && vl != hp->head_dim)
		return bad_hparam(
			err, g, arch, "attention.value_length", vl,
			"differs from attention.key_length (not supported)");
	if (hp->head_dim % 2)
		return bad_hparam(err, g, arch, "attention.head_count",
				  hp->n_head, "gives an odd head dimension");
	hp->n_rot = hp->head_dim;
	if ((ret = key_u32(g, arch, "rope.dimension_count", &hp->n_rot, false,
			   err)))
		return ret;
	if (hp->n_rot == 0 || hp->n_rot > hp->head_dim || hp->n_rot % 2)
		return bad_hparam(
			err, g, arch, "rope.dimension_count", hp->n_rot,
			"must be even and at most the head dimension");
	if (!(hp->rms_eps > 0 && hp->rms_eps < 1))
		return edgeq_error_set(
			err, EBADMSG,
			"model: %s.attention.layer_norm_rms_epsilon %g is out of range",
			arch, hp->rms_eps);
	if (!(hp->rope_base > 1 && hp->rope_base < 1e12f))
		return edgeq_error_set(
			err, EBADMSG,
			"model: %s.rope.freq_base %g is out of range", arch,
			hp->rope_base);
	hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
	if (gemma3 || gemma2) {
		/* as Google's reference: embeddings times sqrt(n_embd), GELU,
		 * sliding-window layers (gemma3: five of six, with RoPE base
		 * 10000; gemma2: every other one); the 27Bs (62 and 46
		 * layers) scale q.k by embedding / heads */
		hp->embd_scale = sqrtf((float)hp->n_embd);
		hp->gelu = true;
		if (hp->n_layer == (gemma3 ? 62u : 46u))
			hp->attn_scale =
				1.0f / sqrtf((float)(hp->n_embd / hp->n_head));
		if ((ret = key_u32(g, arch, "attention.sliding_window",
				   &hp->n_swa, false, err)))
			return ret;
		if (hp->n_swa) {
			hp->swa_pattern = gemma3 ? 6 : 2;
			hp->rope_base_swa = gemma3 ? 10000.0f : 0.0f;
		}
	}
	if (!strcmp(arch, "llama")) {
		/* Mistral 7B v0.1: every layer sees its last 4096 positions */
		if ((ret = key_u32(g, arch, "attention.sliding_window",
				   &hp->n_swa, false, err)))
			return ret;
		hp->swa_pattern = hp->n_swa ? 1 : 0;
	}
	if (gemma2) {
		hp->attn_softcap = 50.0f;
		hp->final_softcap = 30.0f;
		if ((ret = key_f32(g, arch, "attn_logit_softcapping",
				   &hp->attn_softcap, err)) ||
		    (ret = key_f32(g, arch, "final_logit_softcapping",
				   &hp->final_softcap, err)))
			return ret;
		if (!(hp->attn_softcap >= 0 && hp->attn_softcap < 1e6f) ||
		    !(hp->final_softcap >= 0 && hp->final_softcap < 1e6f))
			return edgeq_error_set(
				err, EBADMSG,
				"model: %s softcapping %g / %g is out of range",
				arch, hp->attn_softcap, hp->final_softcap);
	}
	/* cos and sin times this (Phi-3.5/4: 1.19), as ggml's rope does */
	if ((ret = key_f32(g, arch, "rope.scaling.attn_factor",
			   &hp->rope_attn_factor, err)))
		return ret;
	if (!(hp->rope_attn_factor > 0 && hp->rope_attn_factor < 100))
		return edgeq_error_set(
			err, EBADMSG,
			"model: %s.rope.scaling.attn_factor %g is out of range",
			arch, hp->rope_attn_factor);
	if (!strcmp(arch, "phi3")) {
		/* which long-RoPE factors: past this context the long ones.
		 * Its sliding window is not applied, as llama.cpp does not */
		hp->rope_orig_ctx = hp->n_ctx_train;
		if ((ret = key_u32(g, arch,
				   "rope.scaling.original_context_length",
				   &hp->rope_orig_ctx, false, err)))
			return ret;
	}
	snprintf(key, sizeof(key), "%s.rope.scaling.type", arch);
	if (!edgeq_gguf_get_str(g, key, &st, NULL)) {
		float f = 1.0f;

		if ((ret = key_f32(g, arch, "rope.scaling.factor", &f, err)))
			return ret;
		if (edgeq_gguf_str_eq(st, "linear")) {
			if (!(f >= 1 && f < 1024))
				return edgeq_error_set(
					err, EBADMSG,
					"model: %s.rope.scaling.factor %g is out of range",
					arch, f);
			hp->rope_linear_scale = 1.0f / f;
		} else if (edgeq_gguf_str_eq(st, "llama3")) {
			/* Llama 3.1's frequency bands, from the metadata (a
			 * rope_freqs tensor, when the file has one, wins) */
			hp->rope_llama3 = true;
			hp->rope_factor = f;
			hp->rope_low_freq = 1.0f;
			hp->rope_high_freq = 4.0f;
			hp->rope_orig_ctx = 8192;
			if ((ret = key_f32(g, arch,
					   "rope.scaling.low_freq_factor",
					   &hp->rope_low_freq, err)) ||
			    (ret = key_f32(g, arch,
					   "rope.scaling.high_freq_factor",
					   &hp->rope_high_freq, err)) ||
			    (ret = key_u32(
				     g, arch,
				     "rope.scaling.original_context_length",
				     &hp->rope_orig_ctx, false, err)))
				return ret;
			if (!(f >= 1 && f < 1024) ||
			    !(hp->rope_low_freq > 0 &&
			      hp->rope_high_freq > hp->rope_low_freq &&
			      hp->rope_high_freq < 1e6f) ||
			    !hp->rope_orig_ctx)
				return edgeq_error_set(
					err, EBADMSG,
					"model: %s llama3 scaling (factor %g, low %g, high %g, original context %u) is out of range",
					arch, f, hp->rope_low_freq,
					hp->rope_high_freq, hp->rope_orig_ctx);
		} else if (!edgeq_gguf_str_eq(st, "none")) {
			return edgeq_error_set(
				err, EOPNOTSUPP,
				"model: %s '%.*s' is not supported (none, linear, llama3)",
				key, (int)(st.len > 32 ? 32 : st.len), st.ptr);
		}
	}
	return 0;
}

static int tensor_layer(const char *name, uint32_t n_layer, int *layer)
{
	char *end;
	unsigned long l;

	if (strncmp(name, "blk.", 4)) {
		*layer = EDGEQ_WEIGHTS_GLOBAL;
		return 0;
	}
	l = strtoul(name + 4, &end, 10);
	if (end == name + 4 || *end != '.' || l >= n_layer)
		return -EINVAL;
	*layer = (int)l;
	return 0;
}

static const struct edgeq_tensor *find_t(struct edgeq_model *m,
					 const char *name)
{
	size_t i;

	for (i = 0; i < m->n_tensors; i++)
		if (!strcmp(m->tensors[i].name, name))
			return &m->tensors[i];
	return NULL;
}

/* Look up a tensor and check its shape (ne1 = 0: a vector) and type. */
static int want(struct edgeq_model *m, const char *name, uint64_t ne0,
		uint64_t ne1, bool is_matrix, bool optional,
		const struct edgeq_tensor **out, struct edgeq_error *err)
{
	const struct edgeq_tensor *t = find_t(m, name);
	const struct edgeq_gguf_tensor *gt;

	*out = NULL;
	if (!t) {
		if (optional)
			return 0;
		return edgeq_error_set(err, EBADMSG,
				       "model: tensor '%s' is missing", name);
	}
	gt = edgeq_gguf_tensor(m->gguf, name);
	if (t->ne[0] != ne0 || t->ne[1] != (ne1 ? ne1 : 1) || t->ne[2] != 1 ||
	    t->ne[3] != 1)
		return edgeq_error_set(
			err, EBADMSG,
			"model: tensor '%s' (info at offset %llu) has shape [%llu, %llu, %llu, %llu], expected [%llu, %llu]",
			name, (unsigned long long)gt->info_off,
			(unsigned long long)t->ne[0],
			(unsigned long long)t->ne[1],
			(unsigned long long)t->ne[2],
			(unsigned long long)t->ne[3], (unsigned long long)ne0,
			(unsigned long long)(ne1 ? ne1 : 1));
	if (!is_matrix && t->type != EDGEQ_TYPE_F32)
		return edgeq_error_set(
			err, EOPNOTSUPP,
			"model: tensor '%s' (info at offset %llu) has type %s; norms and biases must be F32",
			name, (unsigned long long)gt->info_off,
			edgeq_type_name(t->type));
	if (is_matrix && (!edgeq_type_traits(t->type) ||
			  !edgeq_type_traits(t->type)->weight))
		return edgeq_error_set(
			err, EOPNOTSUPP,
			"model: tensor '%s' (info at offset %llu) has type %s, which edgeq does not support",
			name, (unsigned long long)gt->info_off,
			edgeq_type_name(t->type));
	*out = t;
	return 0;
}

static int load_tensors(struct edgeq_model *m, struct edgeq_error *err)
{
	const struct edgeq_hparams *hp = &m->hp;
	uint32_t q_dim = hp->n_head * hp->head_dim;
	uint32_t kv_dim = hp->n_head_kv * hp->head_dim;
	bool qwen2 = !strcmp(m->info.arch, "qwen2");
	bool qwen3 = !strcmp(m->info.arch, "qwen3");
	bool gemma3 = !strcmp(m->info.arch, "gemma3");
	bool gemma = gemma3 || !strcmp(m->info.arch, "gemma2");
	bool phi3 = !strcmp(m->info.arch, "phi3");
	size_t i;
	uint32_t l;
	int ret;

	m->n_tensors = m->gguf->n_tensors;
	m->tensors =
		calloc(m->n_tensors ? m->n_tensors : 1, sizeof(*m->tensors));
	m->layers = calloc(hp->n_layer, sizeof(*m->layers));
	if (!m->tensors || !m->layers)
		return edgeq_error_set(err, ENOMEM, "model: out of memory");
	for (i = 0; i < m->n_tensors; i++) {
		const struct edgeq_gguf_tensor *gt = &m->gguf->tensors[i];
		struct edgeq_tensor *t = &m->tensors[i];

		memcpy(t->name, gt->name, sizeof(t->name));
		t->type = gt->type;
		t->n_dims = gt->n_dims;
		memcpy(t->ne, gt->ne, sizeof(t->ne));
		t->offset = gt->offset;
		t->size = gt->size;
		t->row_size = edgeq_row_size(t->type, (int64_t)t->ne[0]);
		if (tensor_layer(t->name, hp->n_layer, &t->layer))
			return edgeq_error_set(
				err, EBADMSG,
				"model: tensor '%s' (info at offset %llu) names a block outside block_count %u",
				t->name, (unsigned long long)gt->info_off,
				hp->n_layer);
	}
	if ((ret = want(m, "token_embd.weight", hp->n_embd, hp->n_vocab, true,
			false, &m->tok_embd, err)) ||
	    (ret = want(m, "output_norm.weight", hp->n_embd, 0, false, false,
			&m->output_norm, err)) ||
	    (ret = want(m, "output.weight", hp->n_embd, hp->n_vocab, true, true,
			&m->output, err)))
		return ret;
	if (!m->output)
		m->output = m->tok_embd; /* tied */
	if ((ret = want(m, "rope_freqs.weight", hp->n_rot / 2, 0, false, true,
			&m->rope_freqs, err)) ||
	    /* Phi-3.5's long-RoPE factors: long beyond the original context */
	    (ret = want(m, "rope_factors_long.weight", hp->n_rot / 2, 0, false,
			true, &m->rope_long, err)) ||
	    (ret = want(m, "rope_factors_short.weight", hp->n_rot / 2, 0, false,
			true, &m->rope_short, err)))
		return ret;
	if (!m->rope_long != !m->rope_short)
		return edgeq_error_set(
			err, EBADMSG,
			"model: rope_factors_long.weight and rope_factors_short.weight come together; this file has only one");
	if (m->rope_long && m->rope_freqs)
		return edgeq_error_set(
			err, EBADMSG,
			"model: both rope_freqs.weight and long-RoPE factors; which applies is undefined");
	for (l = 0; l < hp->n_layer; l++) {
		struct edgeq_layer *L = &m->layers[l];
		char n[EDGEQ_GGUF_MAX_NAME];

#define W(field, suffix, ne0, ne1, mat, opt)                          \
	do {                                                          \
		snprintf(n, sizeof(n), "blk.%u." suffix, l);          \
		ret = want(m, n, ne0, ne1, mat, opt, &L->field, err); \
		if (ret)                                              \
			return ret;                                   \
	} while (0)
		W(attn_norm, "attn_norm.weight", hp->n_embd, 0, false, false);
		if (phi3) { /* q, k and v in one matrix: wk, wv stay NULL */
			W(wq, "attn_qkv.weight", hp->n_embd, q_dim + 2 * kv_dim,
			  true, false);
		} else {
			W(wq, "attn_q.weight", hp->n_embd, q_dim, true, false);
			W(wk, "attn_k.weight", hp->n_embd, kv_dim, true, false);
			W(wv, "attn_v.weight", hp->n_embd, kv_dim, true, false);
		}
		W(wo, "attn_output.weight", q_dim, hp->n_embd, true, false);
		W(bq, "attn_q.bias", q_dim, 0, false, !qwen2);
		W(bk, "attn_k.bias", kv_dim, 0, false, !qwen2);
		W(bv, "attn_v.bias", kv_dim, 0, false, !qwen2);
		W(q_norm, "attn_q_norm.weight", hp->head_dim, 0, false,
		  !qwen3 && !gemma3);
		W(k_norm, "attn_k_norm.weight", hp->head_dim, 0, false,
		  !qwen3 && !gemma3);
		W(post_attn_norm, "post_attention_norm.weight", hp->n_embd, 0,
		  false, !gemma);
		W(post_ffn_norm, "post_ffw_norm.weight", hp->n_embd, 0, false,
		  !gemma);
		W(ffn_norm, "ffn_norm.weight", hp->n_embd, 0, false, false);
		if (phi3) { /* gate then up in one matrix: w_gate stays NULL */
			W(w_up, "ffn_up.weight", hp->n_embd, 2 * hp->n_ff, true,
			  false);
		} else {
			W(w_gate, "ffn_gate.weight", hp->n_embd, hp->n_ff, true,
			  false);
			W(w_up, "ffn_up.weight", hp->n_embd, hp->n_ff, true,
			  false);
		}
		W(w_down, "ffn_down.weight", hp->n_ff, hp->n_embd, true, false);
#undef W
	}
	return 0;
}

static void fill_info(struct edgeq_model *m)
{
	struct edgeq_model_info *in = &m->info;
	const struct edgeq_hparams *hp = &m->hp;
	struct edgeq_gguf_str s;
	size_t i;

	if (!edgeq_gguf_get_str(m->gguf, "general.name", &s, NULL))
		snprintf(in->name, sizeof(in->name), "%.*s",
			 (int)(s.len > 127 ? 127 : s.len), s.ptr);
	in->n_vocab = hp->n_vocab;
	in->n_ctx_train = hp->n_ctx_train;
	in->n_embd = hp->n_embd;
	in->n_layer = hp->n_layer;
	in->n_head = hp->n_head;
	in->n_head_kv = hp->n_head_kv;
	in->n_ff = hp->n_ff;
	in->head_dim = hp->head_dim;
	in->n_rot = hp->n_rot;
	in->rope_base = hp->rope_base;
	in->rms_eps = hp->rms_eps;
	in->file_size = m->gguf->size;
	for (i = 0; i < m->n_tensors; i++) {
		const struct edgeq_tensor *t = &m->tensors[i];

		in->n_params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
		in->weight_bytes += t->size;
		if (t->type < 40)
			in->type_counts[t->type]++;
		if (t != m->tok_embd || m->output == m->tok_embd)
			in->bytes_per_token += t->size;
	}
	if (m->output != m->tok_embd && m->tok_embd)
		in->bytes_per_token += m->tok_embd->row_size;
}

int edgeq_model_load(const struct edgeq_model_params *p,
		     struct edgeq_model **out, struct edgeq_error *err)
{
	struct edgeq_model *m;
	struct edgeq_gguf_str arch;
	long ncpu;
	int ret;

	if (!p || !p->path)
		return edgeq_error_set(err, EINVAL, "model: no path given");
	m = calloc(1, sizeof(*m));
	if (!m)
		return edgeq_error_set(err, ENOMEM, "model: out of memory");
	m->params = *p;
	m->vocab_only = p->vocab_only;
	pthread_mutex_init(&m->lock, NULL);
	ret = edgeq_gguf_open(p->path, &m->gguf, err);
	if (ret)
		goto fail;
	ret = edgeq_gguf_get_str(m->gguf, "general.architecture", &arch, err);
	if (ret == -ENOENT)
		ret = edgeq_error_set(err, EBADMSG,
				      "model: general.architecture is missing");
	if (ret)
		goto fail;
	/* A vocabulary is read whatever decoder the file is for. */
	if (!p->vocab_only && !edgeq_gguf_str_eq(arch, "llama") &&
	    !edgeq_gguf_str_eq(arch, "qwen2") &&
	    !edgeq_gguf_str_eq(arch, "qwen3") &&
	    !edgeq_gguf_str_eq(arch, "gemma2") &&
	    !edgeq_gguf_str_eq(arch, "gemma3") &&
	    !edgeq_gguf_str_eq(arch, "phi3")) {
		ret = edgeq_error_set(
			err, EOPNOTSUPP,
			"model: architecture '%.*s' is not supported (llama, qwen2, qwen3, gemma2, gemma3, phi3)",
			(int)(arch.len > 32 ? 32 : arch.len), arch.ptr);
		goto fail;
	}
	snprintf(m->info.arch, sizeof(m->info.arch), "%.*s", (int)arch.len,
		 arch.ptr);
	ret = vocab_load(&m->vocab, m->gguf, err);
	if (ret)
		goto fail;
	snprintf(m->info.tokenizer, sizeof(m->info.tokenizer), "%s",
		 m->vocab.kind == VOCAB_SPM ? "llama" : "gpt2");
	m->info.bos = m->vocab.bos;
	m->info.eos = m->vocab.eos;
	m->info.add_bos = m->vocab.add_bos;
	m->hp.n_vocab = m->vocab.n;
	m->info.n_vocab = m->vocab.n;
	if (p->vocab_only) {
		*out = m;
		return 0;
	}
	ret = load_hparams(m, m->info.arch, err);
	if (ret)
		goto fail;
	ret = load_tensors(m, err);
	if (ret)
		goto fail;
	fill_info(m);
	m->ops = edgeq_kernels_select();
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	m->n_threads = p->n_threads > 0 ? p->n_threads :
					  (int)(ncpu > 0 ? ncpu : 1);
	if (m->n_threads > 256)
		m->n_threads = 256;
	if (p->weights == EDGEQ_WEIGHTS_AUTO && model_pack_wants_mmap(m, p)) {
		/* the pass reads the packed copy: map the file to pack it */
		ret = edgeq_weights_mmap_new(m, &m->weights, err);
		snprintf(
			m->weights_why, sizeof(m->weights_why),
			"mapped to repack (the packed matrices fit the budget)");
	} else if (p->weights != EDGEQ_WEIGHTS_MMAP) {
		/* the streamer decides AUTO */
		ret = edgeq_weights_stream_new(m, p, &m->weights, err);
	} else {
		ret = edgeq_weights_mmap_new(m, &m->weights, err);
	}
	if (ret)
		goto fail;
	ret = edgeq_decode_init_model(m, err);
	if (!ret)
		ret = model_pack_weights(m, p, err);
	if (ret)
		goto fail;
	*out = m;
	return 0;
fail:
	edgeq_model_free(m);
	return ret;
}

void edgeq_model_free(struct edgeq_model *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	edgeq_decode_exit_model(m);
	model_pack_free(m);
	edgeq_weights_free(m->weights);
	vocab_free(&m->vocab);
	free(m->tensors);
	free(m->layers);
	edgeq_gguf_close(m->gguf);
	free(m);
}

int edgeq_tokenize(const struct edgeq_model *m, const char *text, bool add_bos,
		   bool parse_special, int32_t *toks, size_t max, size_t *n_out)
{
	return vocab_tokenize(&m->vocab, text, strlen(text), add_bos,
			      parse_special, toks, max, n_out);
}

int edgeq_token_to_piece(const struct edgeq_model *m, int32_t tok, char *buf,
			 size_t len)
{
	return vocab_piece(&m->vocab, tok, buf, len);
}

bool edgeq_token_is_eog(const struct edgeq_model *m, int32_t tok)
{
	return vocab_is_eog(&m->vocab, tok);
}

const char *edgeq_model_chat_template(const struct edgeq_model *m, size_t *len)
{
	struct edgeq_gguf_str st;

	*len = 0;
	if (!m->gguf ||
	    edgeq_gguf_get_str(m->gguf, "tokenizer.chat_template", &st, NULL))
		return NULL;
	*len = (size_t)st.len;
	return st.ptr;
}
