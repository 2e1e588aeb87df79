// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The forward pass of llama-family models (llama, qwen2, qwen3, gemma3):
 *
 *   x = embed(tok) (gemma3: times sqrt(n_embd))      [B, n_embd]
 *   per layer:
 *     xb = rmsnorm(x) * attn_norm
 *     q, k, v = Wq xb (+bq), Wk xb (+bk), Wv xb (+bv)  [B, n_head*hd], [B, kv_dim]
 *     q, k = rmsnorm of each head (qwen3: q_norm, k_norm)
 *     rope(q, k) at each token's position (llama: adjacent pairs, the
 *       "normal" ggml mode, since GGUF llama weights are permuted; qwen: neox)
 *     K/V cache[pos] = k, v (F16, Q8_0 or F32)
 *     xb2 = softmax(q K^T / sqrt(hd)) V per head (grouped: head h reads
 *       kv head h / (n_head / n_head_kv)), causal
 *       (gemma3: sliding-window layers see their last n_swa positions)
 *     x += Wo xb2 (gemma3: rmsnorm'd with post_attention_norm first)
 *     xb = rmsnorm(x) * ffn_norm
 *     x += W_down (silu(W_gate xb) * (W_up xb))
 *       (gemma3: gelu for silu, the sum rmsnorm'd with post_ffw_norm)
 *   logits = W_out (rmsnorm(x_last) * output_norm)
 *
 * A batch of B tokens (prefill) goes through the kernels' matmul; one token
 * through matvec. Activations are quantized once per distinct input and
 * vec_dot type (q, k and v share one quantization). Nothing is allocated
 * per token: every buffer belongs to the ctx. Work is split over the thread
 * pool by output rows (matrices) and by (token, head) (attention); each
 * output is computed by one thread in a fixed order, so results do not
 * depend on the thread count.
 */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
#include <unistd.h>

#include <edgeq/engine.h>
#include <edgeq/kq.h>

#include "kernels/kernels.h"
#include "model/model.h"
#include "model/par.h"

/* Up to this many heads of a GQA group share one attention job. */
#define ATT_G 4
/*
 * A prompt's attention job with the keys-in-lanes form: a KV head's group
 * of heads for as many consecutive tokens as make up to ATT_TQ queries,
 * each 16-key tile transposed once for all of them. A thread's score rows
 * hold that many queries while ATT_TQ x n_ctx floats stay within
 * ATT_ROWS_MAX (past it, fewer: long contexts keep their scratch small).
 */
#define ATT_TQ 32
#define ATT_ROWS_MAX (512u * 1024)

struct edgeq_ctx {
	struct edgeq_model *m;
	uint32_t n_ctx, n_batch, pos;
	enum edgeq_kv_type kv_type;
	size_t kv_row; /* bytes of one position's K (or V) per layer */
	uint8_t *k_cache, *v_cache; /* [n_layer][n_ctx][kv_row] */
	void *kv_map; /* ctx_kv_share(): both caches in one memfd, or NULL */
	size_t kv_map_len;
	size_t kv_anon_len; /* else kv_anon_map()'s mapping, at k_cache */
	int kv_fd;
	int pass_nb; /* tokens of the forward pass running */
	float *x, *xb, *xb2, *q, *k, *v, *hb, *hb2; /* [n_batch][dim] */
	float *logits;				    /* [n_vocab] */
	float *att;	/* [n_threads][att_q][n_ctx] */
	uint32_t att_q; /* score rows a thread has: ATT_G to ATT_TQ */
	uint8_t *qh;	/* [n_threads][q8_0 of one head] */
	uint8_t *qa;	/* quantized activations [n_batch][qa_stride] */
	size_t qa_stride;
	uint8_t *emb;	       /* raw embedding rows [n_batch][row_size] */
	float *rope;	       /* [n_batch][n_rot / 2][2] cos, sin */
	float *rope_swa;       /* the same for sliding-window layers, or NULL */
	const float *inv_freq; /* the model's, or phi3's long ones past its
				* original context */
	float *fused; /* phi3: [n_batch][qkv or gate|up] before the split */
	struct edgeq_ctx **tc; /* [n_batch] the context of each token */
	uint32_t *tpos;	       /* [n_batch] the position of each token */
	float *lg_all;	       /* [n_batch][n_vocab], batch output; lazily */
	int32_t *history;      /* [n_ctx] for edgeq_generate */
	const struct edgeq_ctx_hooks *hooks; /* placement, or NULL */
	void *hooks_arg;
};

void edgeq_ctx_params_init(struct edgeq_ctx_params *p)
{
	memset(p, 0, sizeof(*p));
	p->n_batch = 64;
	p->kv_type = EDGEQ_KV_F16;
}

uint32_t edgeq_ctx_pos(const struct edgeq_ctx *c)
{
	return c->pos;
}

void edgeq_ctx_truncate(struct edgeq_ctx *c, uint32_t pos)
{
	if (pos < c->pos)
		c->pos = pos;
}

/*
 * Llama 3.1's divisor of a frequency: none for wavelengths below the
 * original context / high_freq_factor, the factor above original context
 * / low_freq_factor, a blend between.
 */
static float llama3_factor(const struct edgeq_hparams *hp, double freq)
{
	double wl = 2.0 * M_PI / freq, ctx = (double)hp->rope_orig_ctx;
	double lo = hp->rope_low_freq, hi = hp->rope_high_freq, sm;

	if (wl < ctx / hi)
		return 1.0f;
	if (wl > ctx / lo)
		return hp->rope_factor;
	sm = (ctx / wl - lo) / (hi - lo);
	return (float)(1.0 / ((1.0 - sm) / hp->rope_factor + sm));
}

/* @dst[i] = base^(-2i/n_rot) / divisor i: @factors' (a per-dimension F32
 * tensor), else Llama 3.1's bands when the metadata asks for them. */
static int inv_freqs(struct edgeq_model *m, float *dst,
		     const struct edgeq_tensor *factors,
		     struct edgeq_error *err)
{
	const struct edgeq_hparams *hp = &m->hp;
	const float *ff = NULL;
	uint32_t i, nf = hp->n_rot / 2;
	int ret;

	if (factors) {
		ret = edgeq_weights_layer_begin(m->weights,
						EDGEQ_WEIGHTS_GLOBAL, err);
		if (ret)
			return ret;
		ff = edgeq_weights_get(m->weights, factors);
	}
	for (i = 0; i < nf; i++) {
		double f = pow((double)hp->rope_base,
			       -2.0 * (double)i / (double)hp->n_rot);
		float fac = 1.0f;

		if (ff) {
			memcpy(&fac, (const uint8_t *)ff + 4 * i, 4);
			if (!(fac > 0 && fac < 1e6f))
				fac = 1.0f;
		}
		if (!ff && hp->rope_llama3)
			fac = llama3_factor(hp, f);
		dst[i] = (float)(f / fac);
	}
	if (factors)
		edgeq_weights_layer_end(m->weights, EDGEQ_WEIGHTS_GLOBAL);
	return 0;
}

int edgeq_decode_init_model(struct edgeq_model *m, struct edgeq_error *err)
{
	const struct edgeq_hparams *hp = &m->hp;
	uint32_t i, nf = hp->n_rot / 2;
	int ret;

	m->rope_inv_freq = calloc(nf, sizeof(float));
	if (m->rope_long)
		m->rope_inv_freq_long = calloc(nf, sizeof(float));
	if (!m->rope_inv_freq || (m->rope_long && !m->rope_inv_freq_long))
		return edgeq_error_set(err, ENOMEM, "out of memory");
	if (hp->rope_base_swa > 0)
		m->rope_inv_freq_swa = calloc(nf, sizeof(float));
	if (!m->rope_inv_freq ||
	    (hp->rope_base_swa > 0 && !m->rope_inv_freq_swa))
		return edgeq_error_set(err, ENOMEM, "out of memory");
	for (i = 0; hp->rope_base_swa > 0 && i < nf; i++)
		m->rope_inv_freq_swa[i] =
			(float)pow((double)hp->rope_base_swa,
				   -2.0 * (double)i / hp->n_rot);
	ret = inv_freqs(m, m->rope_inv_freq,
			m->rope_freqs ? m->rope_freqs : m->rope_short, err);
	if (!ret && m->rope_long)
		ret = inv_freqs(m, m->rope_inv_freq_long, m->rope_long, err);
	if (ret)
		return ret;
	return par_init(m, err);
}

void edgeq_decode_exit_model(struct edgeq_model *m)
{
	par_exit(m);
	free(m->rope_inv_freq);
	free(m->rope_inv_freq_swa);
	free(m->rope_inv_freq_long);
}

static uint64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	unsigned long long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

void edgeq_ctx_free(struct edgeq_ctx *c)
{
	if (!c)
		return;
	if (c->kv_map) {
		munmap(c->kv_map, c->kv_map_len);
		close(c->kv_fd);
	} else if (c->k_cache) {
		munmap(c->k_cache, c->kv_anon_len);
	}
	free(c->x);
	free(c->xb);
	free(c->xb2);
	free(c->q);
	free(c->k);
	free(c->v);
	free(c->hb);
	free(c->hb2);
	free(c->logits);
	free(c->att);
	free(c->qh);
	free(c->qa);
	free(c->emb);
	free(c->rope);
	free(c->rope_swa);
	free(c->fused);
	free(c->tc);
	free(c->tpos);
	free(c->lg_all);
	free(c->history);
	free(c);
}

static size_t kv_row_bytes(enum edgeq_kv_type t, uint32_t kv_dim)
{
	switch (t) {
	case EDGEQ_KV_F16:
		return (size_t)kv_dim * 2;
	case EDGEQ_KV_Q8_0:
		return edgeq_row_size(EDGEQ_TYPE_Q8_0, kv_dim);
	default:
		return (size_t)kv_dim * 4;
	}
}

/* Where position @pos of @layer lies in either cache, in bytes. */
static size_t kv_off(const struct edgeq_ctx *c, int layer, uint32_t pos)
{
	return ((size_t)layer * c->n_ctx + pos) * c->kv_row;
}

#define KV_HUGE ((size_t)2 << 20)
/* smaller caches keep 4 KiB pages: their faults cost little, and a
 * rounded-up huge page would be most of their memory */
#define KV_HUGE_MIN ((size_t)8 << 20)

/*
 * Both caches in one anonymous mapping of @half bytes each. From
 * KV_HUGE_MIN on, each is rounded up to 2 MiB, the mapping aligned to
 * 2 MiB and advised MADV_HUGEPAGE. Positions are written once, each into
 * memory no one touched before: in 4 KiB pages every fourth 1 KiB row took
 * a page fault, and a prompt's KV writes cost ~13.7k cycles per token and
 * layer (a fault is ~7 us in a VM) against ~0.7k once the pages were
 * there, 2.4-4 % of a prompt (Zen 5); a 2 MiB page takes one fault for
 * 2048 such rows. Still committed as it is written: RSS grows with the
 * context, not at creation. Where THP is off the advice is ignored.
 * NULL when the mapping fails.
 */
static uint8_t *kv_anon_map(struct edgeq_ctx *c, size_t half)
{
	bool huge = half >= KV_HUGE_MIN;
	size_t al = huge ? KV_HUGE : (size_t)sysconf(_SC_PAGESIZE);
	size_t h = (half + al - 1) & ~(al - 1), len = 2 * h;
	size_t extra = huge ? KV_HUGE : 0;
	uint8_t *raw, *a;

	raw = mmap(NULL, len + extra, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	a = raw;
	if (huge) {
		a = (uint8_t *)(((uintptr_t)raw + KV_HUGE - 1) &
				~(uintptr_t)(KV_HUGE - 1));
		if (a > raw)
			munmap(raw, (size_t)(a - raw));
		munmap(a + len, (size_t)(raw + len + extra - (a + len)));
		madvise(a, len, MADV_HUGEPAGE);
	}
	c->kv_anon_len = len;
	c->k_cache = a;
	c->v_cache = a + h;
	return a;
}

int edgeq_ctx_new(struct edgeq_model *m, const struct edgeq_ctx_params *p,
		  struct edgeq_ctx **out, struct edgeq_error *err)
{
	const struct edgeq_hparams *hp = &m->hp;
	uint32_t q_dim = hp->n_head * hp->head_dim;
	uint32_t kv_dim = hp->n_head_kv * hp->head_dim;
	uint32_t maxd, B;
	uint64_t per_pos, kv_bytes, avail;
	struct edgeq_ctx *c;
	size_t nt = (size_t)m->n_threads;

	if (m->vocab_only)
		return edgeq_error_set(
			err, EINVAL,
			"model was loaded for its vocabulary only");
	if (p->kv_type == EDGEQ_KV_Q8_0 && hp->head_dim % EDGEQ_QK8_0)
		return edgeq_error_set(
			err, EINVAL,
			"a Q8_0 KV cache needs a head dimension that is a multiple of 32 (this model's is %u); use f16",
			hp->head_dim);
	if (p->kv_type > EDGEQ_KV_F32)
		return edgeq_error_set(err, EINVAL, "unknown KV cache type %d",
				       p->kv_type);
	c = calloc(1, sizeof(*c));
	if (!c)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	c->m = m;
	c->kv_type = p->kv_type;
	c->kv_row = kv_row_bytes(p->kv_type, kv_dim);
	per_pos = 2ull * hp->n_layer * c->kv_row;
	c->n_ctx = p->n_ctx ? p->n_ctx : hp->n_ctx_train;
	if (!p->n_ctx && c->n_ctx > 4096)
		c->n_ctx = 4096;
	avail = mem_available();
	if (!p->n_ctx && avail && per_pos * c->n_ctx > avail / 2) {
		c->n_ctx = (uint32_t)(avail / 2 / per_pos);
		if (c->n_ctx < 16) {
			edgeq_ctx_free(c);
			return edgeq_error_set(
				err, ENOMEM,
				"not enough memory for a KV cache (%llu bytes per position, %llu available)",
				(unsigned long long)per_pos,
				(unsigned long long)avail);
		}
	}
	if (c->n_ctx > (1u << 20)) {
		edgeq_ctx_free(c);
		return edgeq_error_set(err, EINVAL,
				       "context size %u is too large (max %u)",
				       p->n_ctx, 1u << 20);
	}
	kv_bytes = per_pos * c->n_ctx;
	if (avail && kv_bytes > avail) {
		edgeq_ctx_free(c);
		return edgeq_error_set(
			err, ENOMEM,
			"a %u-position KV cache needs %llu MiB, only %llu MiB available; lower --ctx-size or use --kv-type q8_0",
			c->n_ctx, (unsigned long long)(kv_bytes >> 20),
			(unsigned long long)(avail >> 20));
	}
	B = p->n_batch ? p->n_batch : 64;
	if (B > 512)
		B = 512;
	if (B > c->n_ctx)
		B = c->n_ctx;
	c->n_batch = B;
	maxd = hp->n_embd;
	if (hp->n_ff > maxd)
		maxd = hp->n_ff;
	if (q_dim > maxd)
		maxd = q_dim;
	c->qa_stride = ((size_t)maxd * 4 + 512 + 63) & ~(size_t)63;
	if (!kv_anon_map(c, kv_bytes / 2)) {
		int e = errno;
		uint32_t n = c->n_ctx;

		edgeq_ctx_free(c);
		return edgeq_error_set(
			err, e,
			"a %u-position KV cache: cannot map %llu MiB: %s (lower --ctx-size or use --kv-type q8_0)",
			n, (unsigned long long)(kv_bytes >> 20), strerror(e));
	}
	c->x = calloc((size_t)B * hp->n_embd, sizeof(float));
	c->xb = calloc((size_t)B * hp->n_embd, sizeof(float));
	c->xb2 = calloc((size_t)B * q_dim, sizeof(float));
	c->q = calloc((size_t)B * q_dim, sizeof(float));
	c->k = calloc((size_t)B * kv_dim, sizeof(float));
	c->v = calloc((size_t)B * kv_dim, sizeof(float));
	c->hb = calloc((size_t)B * hp->n_ff, sizeof(float));
	c->hb2 = calloc((size_t)B * hp->n_ff, sizeof(float));
	c->logits = calloc(hp->n_vocab, sizeof(float));
	c->att_q = ATT_TQ;
	while (c->att_q > ATT_G && (size_t)c->att_q * c->n_ctx > ATT_ROWS_MAX)
		c->att_q /= 2;
	c->att = calloc(nt * c->att_q * c->n_ctx, sizeof(float));
	c->qh = calloc(nt, edgeq_row_size(EDGEQ_TYPE_Q8_0, 32) *
				   (hp->head_dim / 32 + 1));
	c->qa = malloc((size_t)B * c->qa_stride);
	c->emb = malloc((size_t)B * m->tok_embd->row_size);
	c->rope = calloc((size_t)B * hp->n_rot, sizeof(float));
	if (hp->rope_base_swa > 0)
		c->rope_swa = calloc((size_t)B * hp->n_rot, sizeof(float));
	c->inv_freq = m->rope_inv_freq_long && c->n_ctx > hp->rope_orig_ctx ?
			      m->rope_inv_freq_long :
			      m->rope_inv_freq;
	if (!m->layers[0].wk || !m->layers[0].w_gate)
		c->fused =
			calloc((size_t)B * (q_dim + 2 * kv_dim > 2 * hp->n_ff ?
						    q_dim + 2 * kv_dim :
						    2 * hp->n_ff),
			       sizeof(float));
	c->history = calloc(c->n_ctx, sizeof(int32_t));
	c->tc = calloc(B, sizeof(*c->tc));
	c->tpos = calloc(B, sizeof(*c->tpos));
	if (!c->tc || !c->tpos || !c->k_cache || !c->v_cache || !c->x ||
	    !c->xb || !c->xb2 || !c->q || !c->k || !c->v || !c->hb || !c->hb2 ||
	    !c->logits || !c->att || !c->qh || !c->qa || !c->emb || !c->rope ||
	    (hp->rope_base_swa > 0 && !c->rope_swa) ||
	    ((!m->layers[0].wk || !m->layers[0].w_gate) && !c->fused) ||
	    !c->history) {
		uint32_t n = c->n_ctx;

		edgeq_ctx_free(c);
		return edgeq_error_set(
			err, ENOMEM, "out of memory for a %u-position context",
			n);
	}
	*out = c;
	return 0;
}

/* ---- building blocks ---- */

static void rmsnorm(float *o, const float *x, const float *w, uint32_t n,
		    float eps)
{
	/* double: the sum of squares of a long row */
	double ss = edgeq_sumsq_ref(x, n);
	float s;
	uint32_t i;

	s = (float)(1.0 / sqrt(ss / n + eps));
	for (i = 0; i < n; i++)
		o[i] = x[i] * s * w[i];
}

struct quant_arg {
	const struct edgeq_kernel_ops *ops;
	enum edgeq_type vdt;
	const float *x;
	int ldx;
	uint8_t *out;
	size_t stride;
	int64_t n;
	int nb;
};

static void quant_task(void *arg, int ith, int nth)
{
	const struct quant_arg *q = arg;
	int b;

	for (b = ith; b < q->nb; b += nth)
		q->ops->quantize_act(q->vdt, q->x + (size_t)b * q->ldx,
				     q->out + (size_t)b * q->stride, q->n);
}

/* ---- the forward pass's profile (edgeq_model_profile) ---- */

static const char *const prof_names[EDGEQ_PROF_COUNT] = {
	[EDGEQ_PROF_EMBED] = "embed",
	[EDGEQ_PROF_WEIGHTS] = "weights_wait",
	[EDGEQ_PROF_NORM] = "norm",
	[EDGEQ_PROF_QUANT_ACT] = "quant_act",
	[EDGEQ_PROF_ATTN_Q] = "attn_q",
	[EDGEQ_PROF_ATTN_K] = "attn_k",
	[EDGEQ_PROF_ATTN_V] = "attn_v",
	[EDGEQ_PROF_ATTN_QKV] = "attn_qkv",
	[EDGEQ_PROF_ATTN_OUT] = "attn_output",
	[EDGEQ_PROF_FFN_GATE] = "ffn_gate",
	[EDGEQ_PROF_FFN_UP] = "ffn_up",
	[EDGEQ_PROF_FFN_DOWN] = "ffn_down",
	[EDGEQ_PROF_OUTPUT] = "output",
	[EDGEQ_PROF_ROPE_KV] = "rope_kv",
	[EDGEQ_PROF_ATTENTION] = "attention",
	[EDGEQ_PROF_ELEMWISE] = "elementwise",
	[EDGEQ_PROF_DEVICE] = "device",
	[EDGEQ_PROF_SYNC] = "sync",
};

const char *edgeq_prof_part_name(enum edgeq_prof_part p)
{
	return (unsigned)p < EDGEQ_PROF_COUNT ? prof_names[p] : NULL;
}

void edgeq_model_profile(struct edgeq_model *m, bool on)
{
	if (on)
		memset(&m->prof, 0, sizeof(m->prof));
	m->prof_on = on;
	edgeq_threadpool_timing(m->pool, on);
}

void edgeq_model_profile_get(const struct edgeq_model *m,
			     struct edgeq_decode_profile *out)
{
	*out = m->prof;
	out->kernels = m->ops->name;
	out->threads = edgeq_threadpool_size(m->pool);
}

static void prof_begin(struct edgeq_model *m)
{
	if (!m->prof_on)
		return;
	m->prof_last = edgeq_now_ns();
	m->prof_wait = edgeq_threadpool_wait_ns(m->pool);
}

/* The time since the last lap to @cnt parts, shared by their @bytes
 * (one dispatch ran them all), less the pool's wait in it. */
static void lap_mm_n(struct edgeq_model *m, const enum edgeq_prof_part *part,
		     int cnt, const uint64_t *bytes, const uint64_t *macs)
{
	uint64_t now, wait, dt, dw, sum = 0, left;

	if (!m->prof_on)
		return;
	now = edgeq_now_ns();
	wait = edgeq_threadpool_wait_ns(m->pool);
	dt = now - m->prof_last;
	dw = wait - m->prof_wait;
	if (dw > dt)
		dw = dt;
	for (int i = 0; i < cnt; i++)
		sum += bytes[i];
	left = dt - dw;
	for (int i = 0; i < cnt; i++) {
		uint64_t share =
			i == cnt - 1 ? left :
			sum ? (uint64_t)((double)(dt - dw) * (double)bytes[i] /
					 (double)sum) :
			      (dt - dw) / (uint64_t)cnt;

		if (share > left)
			share = left;
		left -= share;
		m->prof.ns[part[i]] += share;
		m->prof.calls[part[i]]++;
		m->prof.bytes[part[i]] += bytes[i];
		m->prof.macs[part[i]] += macs[i];
	}
	m->prof.ns[EDGEQ_PROF_SYNC] += dw;
	m->prof.total_ns += dt;
	m->prof_last = now;
	m->prof_wait = wait;
}

/* The time since the last lap to @part, less the pool's wait in it. */
static void lap(struct edgeq_model *m, enum edgeq_prof_part part,
		uint64_t bytes)
{
	uint64_t macs = 0;

	lap_mm_n(m, &part, 1, &bytes, &macs);
}

static void prof_end(struct edgeq_model *m, int nb)
{
	if (!m->prof_on)
		return;
	m->prof.passes++;
	m->prof.tokens += (uint64_t)nb;
}

/*
 * One forward pass over a list of tokens. The tokens may belong to
 * several contexts (continuous batching: the next token of every slot, a
 * prompt chunk of a new one), each at its own position; the matrices see
 * one batch, so their weights are read once for all of them. Buffers are
 * those of the workspace context @w (its n_batch bounds nb).
 */
struct fw {
	struct edgeq_ctx *w; /* workspace: activations, tc, tpos */
	const int32_t *toks; /* [nb] */
	int nb;
	const float *qa_src; /* what w->qa holds: source, type, rows */
	int qa_type, qa_nb;
	const struct edgeq_ctx_hooks *hooks; /* placement, or NULL */
	void *hooks_arg;
};

/*
 * x's @nb rows quantized into c->qa as @vdt (rows of @n), unless qa holds
 * them already: the next matrix of the same input and type reuses them.
 */
static void quant_in(struct fw *f, const float *x, enum edgeq_type vdt,
		     int64_t n, int nb, int ldx)
{
	struct edgeq_ctx *c = f->w;
	struct edgeq_model *m = c->m;

	if (f->qa_src == x && f->qa_type == (int)vdt && f->qa_nb == nb)
		return;
	if (nb == 1) {
		m->ops->quantize_act(vdt, x, c->qa, n);
	} else { /* prefill: rows spread over the pool */
		struct quant_arg qa = { m->ops, vdt,   x,
					ldx,	c->qa, edgeq_row_size(vdt, n),
					n,	nb };

		par_run(m, quant_task, &qa);
	}
	f->qa_src = x;
	f->qa_type = (int)vdt;
	f->qa_nb = nb;
	lap(m, EDGEQ_PROF_QUANT_ACT, 0);
}

/* What the pool's matvec/matmul takes for @t: its packed form or rows. */
static struct edgeq_par_mat par_mat(const struct edgeq_model *m,
				    const struct edgeq_tensor *t, float *y,
				    int ldy)
{
	return (struct edgeq_par_mat){
		.type = t->type,
		.w = t->packed ? t->packed : edgeq_weights_get(m->weights, t),
		.packed = t->packed != NULL,
		.rows = (int64_t)t->ne[1],
		.y = y,
		.ldy = ldy
	};
}

/*
 * @n (1-4) matrices of input x on the CPU, their activations of one
 * vec_dot type and width: the activations quantized once (reused by the
 * next call with the same input and type), one pool dispatch for all
 * (edgeq_par_linear_n), the profile's lap shared by their bytes.
 */
static void cpu_linear_n(struct fw *f, const enum edgeq_prof_part *part,
			 const struct edgeq_tensor *const *t, int n,
			 const float *x, int nb, int ldx, float *const *y,
			 const int *ldy)
{
	struct edgeq_model *m = f->w->m;
	enum edgeq_type vdt = edgeq_type_traits(t[0]->type)->vec_dot_type;
	int64_t cols = (int64_t)t[0]->ne[0];
	struct edgeq_par_mat pm[4];
	uint64_t bytes[4], macs[4];

	quant_in(f, x, vdt, cols, nb, ldx);
	for (int i = 0; i < n; i++) {
		pm[i] = par_mat(m, t[i], y[i], ldy[i]);
		bytes[i] = (uint64_t)t[i]->row_size * t[i]->ne[1];
		macs[i] = (uint64_t)cols * t[i]->ne[1] * (uint64_t)nb;
	}
	edgeq_par_linear_n(m->pool, m->ops, n, pm, cols, f->w->qa,
			   edgeq_row_size(vdt, cols), nb);
	lap_mm_n(m, part, n, bytes, macs);
}

/*
 * y[b][0..rows) = W x[b] for b < nb; x rows are ldx floats apart, y rows ldy.
 * The activations are quantized once into W's vec_dot type and reused by
 * the next call with the same input and type.
 */
static void linear(struct fw *f, enum edgeq_prof_part part,
		   const struct edgeq_tensor *t, const float *x, int nb,
		   int ldx, float *y, int ldy)
{
	if (f->hooks && f->hooks->linear &&
	    !f->hooks->linear(f->hooks_arg, t, x, nb, ldx, y, ldy)) {
		lap(f->w->m, EDGEQ_PROF_DEVICE, 0);
		return; /* placement ran it on another device */
	}
	cpu_linear_n(f, &part, &t, 1, x, nb, ldx, &y, &ldy);
	if (f->hooks && f->hooks->linear_done)
		f->hooks->linear_done(f->hooks_arg, t, nb);
}

/* @name=0 in the environment, read once into *@cache: an A/B switch
 * back to an older path (the values are the same either way). */
static bool env_zero(const char *name, int *cache)
{
	if (*cache < 0) {
		const char *e = getenv(name);

		*cache = e && !strcmp(e, "0");
	}
	return *cache;
}

/* EDGEQ_FUSE_LINEAR=0: each matrix of linear_n() its own dispatch */
static bool getenv_fuse_off(void)
{
	static int off = -1;

	return env_zero("EDGEQ_FUSE_LINEAR", &off);
}

/*
 * linear() for @n matrices of the same input: where the hooks place them
 * on a device, one submission for all of them (they are one op of the
 * plan); on the CPU, one dispatch of the pool for all of them when they
 * take the same activations (edgeq_par_linear_n: one barrier instead of
 * n, the small k and v matrices' tails overlapping q's), the profile
 * sharing its time among them by their bytes; otherwise each its own
 * linear().
 */
static void linear_n(struct fw *f, const enum edgeq_prof_part *part,
		     const struct edgeq_tensor *const *t, int n, const float *x,
		     int nb, int ldx, float *const *y, const int *ldy)
{
	enum edgeq_type vdt = edgeq_type_traits(t[0]->type)->vec_dot_type;
	bool one = n <= 4 && !getenv_fuse_off() &&
		   (!f->hooks || (!f->hooks->linear && !f->hooks->linear_done));

	if (f->hooks && f->hooks->linear_n &&
	    !f->hooks->linear_n(f->hooks_arg, t, n, x, nb, ldx, y, ldy)) {
		lap(f->w->m, EDGEQ_PROF_DEVICE, 0);
		return;
	}
	for (int i = 1; i < n && one; i++)
		one = edgeq_type_traits(t[i]->type)->vec_dot_type == vdt &&
		      t[i]->ne[0] == t[0]->ne[0];
	if (one) {
		cpu_linear_n(f, part, t, n, x, nb, ldx, y, ldy);
		return;
	}
	for (int i = 0; i < n; i++)
		linear(f, part[i], t[i], x, nb, ldx, y[i], ldy[i]);
}

static void add_bias(float *y, const float *bias, int nb, uint32_t n)
{
	int b;
	uint32_t i;

	for (b = 0; b < nb; b++)
		for (i = 0; i < n; i++)
			y[(size_t)b * n + i] += bias[i];
}

static void rope_tables(struct edgeq_ctx *w, int nb)
{
	const struct edgeq_hparams *hp = &w->m->hp;
	uint32_t nf = hp->n_rot / 2, i;
	int b;

	for (b = 0; b < nb; b++) {
		float p = (float)w->tpos[b] * hp->rope_linear_scale;
		float *cs = w->rope + (size_t)b * hp->n_rot;
		/* the token's own context picks phi3's long or short factors */
		const float *inv = w->tc[b]->inv_freq;
		float mul = hp->rope_attn_factor;

		for (i = 0; i < nf; i++) {
			float th = p * inv[i];

			cs[2 * i] = cosf(th) * mul;
			cs[2 * i + 1] = sinf(th) * mul;
		}
		if (!w->rope_swa)
			continue;
		/* sliding-window layers: their own base, never scaled */
		cs = w->rope_swa + (size_t)b * hp->n_rot;
		for (i = 0; i < nf; i++) {
			float th =
				(float)w->tpos[b] * w->m->rope_inv_freq_swa[i];

			cs[2 * i] = cosf(th);
			cs[2 * i + 1] = sinf(th);
		}
	}
}

static void rope_apply(const struct edgeq_hparams *hp, float *v,
		       uint32_t n_heads, const float *cs)
{
	uint32_t h, i, half = hp->n_rot / 2;

	for (h = 0; h < n_heads; h++) {
		float *x = v + (size_t)h * hp->head_dim;

		for (i = 0; i < half; i++) {
			float co = cs[2 * i], si = cs[2 * i + 1];
			uint32_t a = hp->rope_neox ? i : 2 * i;
			uint32_t bi = hp->rope_neox ? i + half : 2 * i + 1;
			float x0 = x[a], x1 = x[bi];

			x[a] = x0 * co - x1 * si;
			x[bi] = x0 * si + x1 * co;
		}
	}
}

/* x[t] *= s for t < n, 8 at a time (-O2 does not vectorize it: the
 * scalar loop was a third of a Q8_0 decode job's own time) */
static void scale_row(float *x, int64_t n, float s)
{
	typedef float v8 __attribute__((vector_size(32)));
	int64_t t = 0;

	for (; t + 8 <= n; t += 8) {
		v8 v;

		memcpy(&v, x + t, sizeof(v));
		v *= s;
		memcpy(x + t, &v, sizeof(v));
	}
	for (; t < n; t++)
		x[t] *= s;
}

/* gemma2: x = cap * tanh(x / cap) over @n values */
static void softcap(float *x, uint32_t n, float cap)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		x[i] = cap * tanhf(x[i] / cap);
}

struct att_arg {
	struct edgeq_ctx *w;
	int layer, nb;
	uint32_t tb; /* att_task_tiles: tokens per job */
	/* the next job: taken by whichever thread is free, so a thread
	 * that starts late (a worker waking to the dispatch) or runs slow
	 * leaves no one waiting more than a job; a decode step's 8 jobs
	 * dealt 4 and 4 left the caller waiting 4 us of a layer's 13 */
	_Atomic int64_t next;
};

static int64_t att_next(struct att_arg *aa)
{
	return atomic_fetch_add_explicit(&aa->next, 1, memory_order_relaxed);
}

/* The first key position a query at @p sees in @layer: a sliding-window
 * layer sees its last n_swa positions. */
static uint32_t att_first_key(const struct edgeq_hparams *hp, int layer,
			      uint32_t p)
{
	uint32_t win = hp_layer_swa(hp, (uint32_t)layer) ? hp->n_swa : 0;

	return win && p + 1 > win ? p + 1 - win : 0;
}

/* One head of token @b: scores, softmax, weighted values (any KV type). */
static void att_head(const struct att_arg *aa, int ith, int b, uint32_t h,
		     float *att)
{
	struct edgeq_ctx *w = aa->w;
	const struct edgeq_model *m = w->m;
	const struct edgeq_kernel_ops *ops = m->ops;
	const struct edgeq_hparams *hp = &m->hp;
	uint32_t hd = hp->head_dim, group = hp->n_head / hp->n_head_kv;
	uint32_t q_dim = hp->n_head * hd;
	float scale = hp->attn_scale, cap = hp->attn_softcap;
	size_t hoff_f16 = (size_t)hd * 2, hoff_f32 = (size_t)hd * 4;
	size_t hoff_q8 = edgeq_row_size(EDGEQ_TYPE_Q8_0, hd);
	size_t qh_size = edgeq_row_size(EDGEQ_TYPE_Q8_0, 32) * (hd / 32 + 1);
	void (*sm)(float *, int64_t) = ops->softmax ? ops->softmax :
						      edgeq_softmax_ref;
	/* the token's own context: its cache, its scratch */
	struct edgeq_ctx *c = w->tc[b];
	uint8_t *qh = c->qh + (size_t)ith * qh_size;
	const uint8_t *kc = c->k_cache + kv_off(c, aa->layer, 0);
	const uint8_t *vc = c->v_cache + kv_off(c, aa->layer, 0);
	uint32_t kvh = h / group;
	uint32_t p = w->tpos[b], t, t0;
	const float *q = w->q + (size_t)b * q_dim + (size_t)h * hd;
	float *out = w->xb2 + (size_t)b * q_dim + (size_t)h * hd;

	t0 = att_first_key(hp, aa->layer, p);
	if (c->kv_type == EDGEQ_KV_Q8_0)
		ops->quantize_act(EDGEQ_TYPE_Q8_0, q, qh, hd);
	if (c->kv_type == EDGEQ_KV_F16 && ops->attn_scores_f16 &&
	    ops->attn_av_f16) {
		/* the same values as the loops below, many keys per call */
		size_t ks = c->kv_row / 2;

		ops->attn_scores_f16(hd, (int64_t)(p + 1 - t0),
				     (const uint16_t *)kc + (size_t)t0 * ks +
					     kvh * hd,
				     ks, q, scale, att);
		if (cap > 0)
			softcap(att, p + 1 - t0, cap);
		sm(att, (int64_t)(p + 1 - t0));
		ops->attn_av_f16(hd, (int64_t)(p + 1 - t0), att,
				 (const uint16_t *)vc + (size_t)t0 * ks +
					 kvh * hd,
				 ks, out);
		return;
	}
	for (t = t0; t <= p; t++) {
		const uint8_t *kr = kc + (size_t)t * c->kv_row;
		float s;

		switch (c->kv_type) {
		case EDGEQ_KV_F16:
			s = ops->dot_f16(
				hd, (const uint16_t *)(kr + kvh * hoff_f16), q);
			break;
		case EDGEQ_KV_Q8_0:
			s = ops->vec_dot[EDGEQ_TYPE_Q8_0](
				hd, kr + kvh * hoff_q8, qh);
			break;
		default:
			s = ops->dot_f32(
				hd, (const float *)(kr + kvh * hoff_f32), q);
			break;
		}
		att[t - t0] = s * scale;
	}
	if (cap > 0)
		softcap(att, p + 1 - t0, cap);
	sm(att, (int64_t)(p + 1 - t0));
	memset(out, 0, hd * sizeof(float));
	for (t = t0; t <= p; t++) {
		const uint8_t *vr = vc + (size_t)t * c->kv_row;
		float a = att[t - t0];

		switch (c->kv_type) {
		case EDGEQ_KV_F16:
			ops->axpy_f16(hd, a,
				      (const uint16_t *)(vr + kvh * hoff_f16),
				      out);
			break;
		case EDGEQ_KV_Q8_0:
			ops->axpy_q8_0(hd, a, vr + kvh * hoff_q8, out);
			break;
		default:
			ops->axpy_f32(hd, a,
				      (const float *)(vr + kvh * hoff_f32),
				      out);
			break;
		}
	}
}

/* Bytes of keys a Q8_0 block's scores gather at a time, the largest head. */
#define ATT_Q8_GATHER (32 * 1024)
#define ATT_Q8_HD 256

/* @n rows of @size bytes, @stride apart from @src (which holds @avail),
 * packed at @dst; the common head sizes' rows (64 and 128: 68 and 136
 * bytes) copied inline, not by a libc call per row */
static inline __attribute__((always_inline)) void
gather_n(const size_t size, uint8_t *dst, const uint8_t *src, size_t stride,
	 int64_t n, int64_t avail)
{
	for (int64_t t = 0; t < n; t++) {
		if (t + 8 < avail) /* the row 8 ahead */
			edgeq_prefetch_row(src + (size_t)(t + 8) * stride,
					   size);
		memcpy(dst + (size_t)t * size, src + (size_t)t * stride, size);
	}
}

static void gather_rows(uint8_t *dst, const uint8_t *src, size_t stride,
			int64_t n, int64_t avail, size_t size)
{
	if (size == 68)
		gather_n(68, dst, src, stride, n, avail);
	else if (size == 136)
		gather_n(136, dst, src, stride, n, avail);
	else
		gather_n(size, dst, src, stride, n, avail);
}

/*
 * @nq queries that share KV head @kvh of a Q8_0 cache (a GQA group's
 * heads of one token or of a prompt block), query i at qp[i] seeing keys
 * t0 .. t0 + nkq[i] - 1, its scores at sp[i] (n_ctx apart), its output at
 * op[i]. Each query is quantized once; the keys' head rows, a cache row
 * apart, are gathered 32 KiB at a time (480 keys of a 64-element head:
 * the matmul prepares the queries once per call) into one matrix whose
 * product with all the queries is one matmul (each output vec_dot's,
 * bit for bit: the per-head path's scores); then, per query, the scale,
 * the cap, the softmax; the weighted values by attn_av_q8_0_t (each V
 * row converted once for the block) or axpy_q8_0 key by key: the same
 * values either way.
 */
static void att_block_q8(struct edgeq_ctx *c, int layer, uint32_t kvh,
			 uint32_t t0, int nq, const float *const *qp,
			 const int64_t *nkq, float *const *sp, float *const *op)
{
	const struct edgeq_model *m = c->m;
	const struct edgeq_kernel_ops *ops = m->ops;
	const struct edgeq_hparams *hp = &m->hp;
	uint32_t hd = hp->head_dim;
	size_t qrow = edgeq_row_size(EDGEQ_TYPE_Q8_0, hd);
	const uint8_t *kc = c->k_cache + kv_off(c, layer, t0) + kvh * qrow;
	const uint8_t *vc = c->v_cache + kv_off(c, layer, t0) + kvh * qrow;
	float scale = hp->attn_scale, cap = hp->attn_softcap;
	void (*sm)(float *, int64_t) = ops->softmax ? ops->softmax :
						      edgeq_softmax_ref;
	uint8_t qa[ATT_TQ * (ATT_Q8_HD / 32) * 34];
	uint8_t kg[ATT_Q8_GATHER] __attribute__((aligned(64)));
	int64_t kn = (int64_t)(ATT_Q8_GATHER / qrow) / 16 * 16;
	int64_t nk = 0;

	for (int i = 0; i < nq; i++) {
		ops->quantize_act(EDGEQ_TYPE_Q8_0, qp[i], qa + (size_t)i * qrow,
				  hd);
		if (nkq[i] > nk)
			nk = nkq[i];
	}
	for (int64_t c0 = 0; c0 < nk; c0 += kn) {
		int64_t n = nk - c0 < kn ? nk - c0 : kn;

		gather_rows(kg, kc + (size_t)c0 * c->kv_row, c->kv_row, n,
			    nk - c0, qrow);
		/* sp[i] = sp[0] + i * n_ctx (the callers' scratch rows) */
		ops->matmul(EDGEQ_TYPE_Q8_0, kg, hd, 0, n, qa, qrow, nq,
			    sp[0] + c0, c->n_ctx);
	}
	for (int i = 0; i < nq; i++) {
		scale_row(sp[i], nkq[i], scale);
		if (cap > 0)
			softcap(sp[i], (uint32_t)nkq[i], cap);
		sm(sp[i], nkq[i]);
	}
	if (ops->attn_av_q8_0_t) {
		ops->attn_av_q8_0_t(hd, nk, vc, c->kv_row, nq,
				    (const float *const *)sp, nkq, op);
		return;
	}
	for (int i = 0; i < nq; i++) {
		memset(op[i], 0, hd * sizeof(float));
		for (int64_t t = 0; t < nkq[i]; t++)
			ops->axpy_q8_0(hd, sp[i][t], vc + (size_t)t * c->kv_row,
				       op[i]);
	}
}

/* KV head @kvh's F16 rows of @cache (c->k_cache or c->v_cache) in
 * @layer, from position @t0 on; the next position's row is kv_row / 2
 * elements further. */
static const uint16_t *kv_rows_f16(const struct edgeq_ctx *c,
				   const uint8_t *cache, int layer, uint32_t t0,
				   uint32_t kvh)
{
	return (const uint16_t *)(cache + kv_off(c, layer, t0)) +
	       (size_t)kvh * c->m->hp.head_dim;
}

/*
 * Heads h0..h0+hn-1 of token @b, which share KV head @kvh: with an F16
 * cache and the table's group forms, each key and value row is converted
 * once for all of them (the values are each head's own, bit for bit);
 * otherwise head by head.
 */
static void att_job(const struct att_arg *aa, int ith, int b, uint32_t kvh,
		    uint32_t h0, uint32_t hn)
{
	struct edgeq_ctx *w = aa->w;
	const struct edgeq_model *m = w->m;
	const struct edgeq_kernel_ops *ops = m->ops;
	const struct edgeq_hparams *hp = &m->hp;
	uint32_t hd = hp->head_dim;
	uint32_t q_dim = hp->n_head * hd;
	float scale = hp->attn_scale, cap = hp->attn_softcap;
	void (*sm)(float *, int64_t) = ops->softmax ? ops->softmax :
						      edgeq_softmax_ref;
	struct edgeq_ctx *c = w->tc[b];
	float *att = c->att + (size_t)ith * c->att_q * c->n_ctx;
	size_t ks = c->kv_row / 2;
	uint32_t p, t0, i;
	int64_t nk;

	if (c->kv_type == EDGEQ_KV_Q8_0 && hp->head_dim <= ATT_Q8_HD) {
		const float *qp[ATT_G];
		float *sp[ATT_G], *op[ATT_G];
		int64_t nkq[ATT_G];

		p = w->tpos[b];
		t0 = att_first_key(hp, aa->layer, p);
		for (i = 0; i < hn; i++) {
			qp[i] = w->q + (size_t)b * q_dim +
				(size_t)(h0 + i) * hd;
			sp[i] = att + (size_t)i * c->n_ctx;
			op[i] = w->xb2 + (size_t)b * q_dim +
				(size_t)(h0 + i) * hd;
			nkq[i] = (int64_t)(p + 1 - t0);
		}
		att_block_q8(c, aa->layer, kvh, t0, (int)hn, qp, nkq, sp, op);
		return;
	}
	if (hn == 1 || c->kv_type != EDGEQ_KV_F16 || !ops->attn_scores_f16_g ||
	    !ops->attn_av_f16_g) {
		for (i = 0; i < hn; i++)
			att_head(aa, ith, b, h0 + i, att);
		return;
	}
	p = w->tpos[b];
	t0 = att_first_key(hp, aa->layer, p);
	nk = (int64_t)(p + 1 - t0);
	ops->attn_scores_f16_g(hd, nk,
			       kv_rows_f16(c, c->k_cache, aa->layer, t0, kvh),
			       ks, (int)hn,
			       w->q + (size_t)b * q_dim + (size_t)h0 * hd, hd,
			       scale, att, c->n_ctx);
	for (i = 0; i < hn; i++) {
		if (cap > 0)
			softcap(att + (size_t)i * c->n_ctx, (uint32_t)nk, cap);
		sm(att + (size_t)i * c->n_ctx, nk);
	}
	ops->attn_av_f16_g(hd, nk, (int)hn, att, c->n_ctx,
			   kv_rows_f16(c, c->v_cache, aa->layer, t0, kvh), ks,
			   w->xb2 + (size_t)b * q_dim + (size_t)h0 * hd, hd);
}

/* A job is up to ATT_G heads of one token that share a KV head (over a
 * Q8_0 cache, one att_block_q8). */
static void att_task(void *arg, int ith, int nth)
{
	struct att_arg *aa = arg;
	const struct edgeq_hparams *hp = &aa->w->m->hp;
	uint32_t group = hp->n_head / hp->n_head_kv;
	uint32_t nsub = (group + ATT_G - 1) / ATT_G;
	int64_t total = (int64_t)aa->nb * hp->n_head_kv * nsub, job;

	(void)nth;
	while ((job = att_next(aa)) < total) {
		int b = (int)(job / ((int64_t)hp->n_head_kv * nsub));
		uint32_t r = (uint32_t)(job % ((int64_t)hp->n_head_kv * nsub));
		uint32_t kvh = r / nsub, h0 = kvh * group + (r % nsub) * ATT_G;
		uint32_t hn = group - (r % nsub) * ATT_G;

		att_job(aa, ith, b, kvh, h0, hn > ATT_G ? ATT_G : hn);
	}
}

/*
 * The prompt's form: a job is KV head kvh's group of heads for a block of
 * consecutive tokens (up to the ctx's att_q queries), whose scores come
 * from attn_scores_f16_t (each 16-key tile transposed once for the whole
 * block), then the block's weighted values (attn_av_f16_t, else per
 * token with the group form); over a Q8_0 cache, att_block_q8 (one matmul
 * of the gathered keys, the values a chunk at a time). A block whose
 * tokens do not see the same
 * first key (a sliding window) goes token by token through att_job. Every
 * value is the per-token path's, bit for bit.
 */
static void att_task_tiles(void *arg, int ith, int nth)
{
	struct att_arg *aa = arg;
	struct edgeq_ctx *w = aa->w;
	const struct edgeq_model *m = w->m;
	const struct edgeq_kernel_ops *ops = m->ops;
	const struct edgeq_hparams *hp = &m->hp;
	uint32_t hd = hp->head_dim, group = hp->n_head / hp->n_head_kv;
	uint32_t q_dim = hp->n_head * hd;
	uint32_t tb = aa->tb;
	int64_t nblk = ((int64_t)aa->nb + tb - 1) / tb;
	int64_t total = nblk * hp->n_head_kv, job;
	float scale = hp->attn_scale, cap = hp->attn_softcap;
	void (*sm)(float *, int64_t) = ops->softmax ? ops->softmax :
						      edgeq_softmax_ref;

	(void)nth;
	while ((job = att_next(aa)) < total) {
		int b0 = (int)(job / hp->n_head_kv) * (int)tb, b1, b;
		uint32_t kvh = (uint32_t)(job % hp->n_head_kv);
		struct edgeq_ctx *c = w->tc[b0];
		uint32_t t0 = att_first_key(hp, aa->layer, w->tpos[b0]);
		float *att = c->att + (size_t)ith * c->att_q * c->n_ctx;
		const float *qp[ATT_TQ];
		float *sp[ATT_TQ];
		int64_t nkq[ATT_TQ], nk = 0;
		size_t ks = c->kv_row / 2;
		int nq = 0;
		bool one = true;

		/* att_tokens made the pass one context's, F16, and the
		 * block at most att_q queries: only a sliding window can
		 * give its tokens different first keys */
		b1 = b0 + (int)tb < aa->nb ? b0 + (int)tb : aa->nb;
		for (b = b0 + 1; b < b1 && one; b++)
			one = att_first_key(hp, aa->layer, w->tpos[b]) == t0;
		if (!one) {
			for (b = b0; b < b1; b++)
				for (uint32_t h = 0; h < group; h += ATT_G)
					att_job(aa, ith, b, kvh,
						kvh * group + h,
						group - h > ATT_G ? ATT_G :
								    group - h);
			continue;
		}
		for (b = b0; b < b1; b++)
			for (uint32_t i = 0; i < group; i++, nq++) {
				qp[nq] = w->q + (size_t)b * q_dim +
					 (size_t)(kvh * group + i) * hd;
				sp[nq] = att + (size_t)nq * c->n_ctx;
				nkq[nq] = (int64_t)(w->tpos[b] + 1 - t0);
				if (nkq[nq] > nk)
					nk = nkq[nq];
			}
		if (c->kv_type == EDGEQ_KV_Q8_0) {
			float *op[ATT_TQ];

			for (int i = 0; i < nq; i++)
				op[i] = w->xb2 +
					(size_t)(b0 + i / (int)group) * q_dim +
					(size_t)(kvh * group + i % group) * hd;
			att_block_q8(c, aa->layer, kvh, t0, nq, qp, nkq, sp,
				     op);
			continue;
		}
		ops->attn_scores_f16_t(
			hd, nk, kv_rows_f16(c, c->k_cache, aa->layer, t0, kvh),
			ks, nq, qp, nkq, scale, sp);
		for (int i = 0; i < nq; i++) {
			if (cap > 0)
				softcap(sp[i], (uint32_t)nkq[i], cap);
			sm(sp[i], nkq[i]);
		}
		if (ops->attn_av_f16_t) {
			float *op[ATT_TQ];

			for (int i = 0; i < nq; i++)
				op[i] = w->xb2 +
					(size_t)(b0 + i / (int)group) * q_dim +
					(size_t)(kvh * group + i % group) * hd;
			ops->attn_av_f16_t(
				hd, nk,
				kv_rows_f16(c, c->v_cache, aa->layer, t0, kvh),
				ks, nq, (const float *const *)sp, nkq, op);
			continue;
		}
		for (b = b0; b < b1; b++) {
			int i = (b - b0) * (int)group;

			ops->attn_av_f16_g(
				hd, nkq[i], (int)group, sp[i], c->n_ctx,
				kv_rows_f16(c, c->v_cache, aa->layer, t0, kvh),
				ks,
				w->xb2 + (size_t)b * q_dim +
					(size_t)kvh * group * hd,
				hd);
		}
	}
}

/* EDGEQ_ATTN_TILES=0: prompts take att_task too */
static bool getenv_tiles_off(void)
{
	static int off = -1;

	return env_zero("EDGEQ_ATTN_TILES", &off);
}

/*
 * Tokens per att_task_tiles job for a pass of @nb tokens, 0 for att_task:
 * the tile form needs all the tokens in one context (whose att_q bounds
 * a block) with an F16 cache and the table's keys-in-lanes scores, or a
 * Q8_0 cache (att_block_q8), and pays when a job holds at least 8
 * queries (a tile's transposition, a gathered key matrix, is shared by
 * them); blocks shrink until each thread has 4 jobs.
 */
static uint32_t att_tokens(const struct edgeq_ctx *w, int nb)
{
	const struct edgeq_model *m = w->m;
	const struct edgeq_hparams *hp = &m->hp;
	const struct edgeq_ctx *c = w->tc[0]; /* whose cache and scratch */
	uint32_t group = hp->n_head / hp->n_head_kv, tb;

	if (nb < 2 || getenv_tiles_off())
		return 0;
	/* a prompt's pass: continuous batching's steps (a token of each
	 * stream) share no keys between tokens */
	for (int b = 1; b < nb; b++)
		if (w->tc[b] != c)
			return 0;
	if (c->kv_type == EDGEQ_KV_F16 ?
		    !m->ops->attn_scores_f16_t || !m->ops->attn_av_f16_g :
		    c->kv_type != EDGEQ_KV_Q8_0 || hp->head_dim > ATT_Q8_HD)
		return 0;
	tb = c->att_q / group;
	if (tb > (uint32_t)nb)
		tb = (uint32_t)nb;
	while (tb > 1 && ((uint32_t)nb + tb - 1) / tb * hp->n_head_kv <
				 4u * (uint32_t)m->n_threads)
		tb--;
	return tb * group >= 8 ? tb : 0;
}

static void kv_store(struct edgeq_ctx *c, int layer, uint32_t pos,
		     const float *k, const float *v)
{
	uint32_t kv_dim = c->m->hp.n_head_kv * c->m->hp.head_dim;
	size_t off = kv_off(c, layer, pos);

	switch (c->kv_type) {
	case EDGEQ_KV_F16:
		edgeq_fp32_to_fp16_row(k, (uint16_t *)(c->k_cache + off),
				       kv_dim);
		edgeq_fp32_to_fp16_row(v, (uint16_t *)(c->v_cache + off),
				       kv_dim);
		break;
	case EDGEQ_KV_Q8_0:
		c->m->ops->quantize_act(EDGEQ_TYPE_Q8_0, k, c->k_cache + off,
					kv_dim);
		c->m->ops->quantize_act(EDGEQ_TYPE_Q8_0, v, c->v_cache + off,
					kv_dim);
		break;
	default:
		memcpy(c->k_cache + off, k, kv_dim * sizeof(float));
		memcpy(c->v_cache + off, v, kv_dim * sizeof(float));
		break;
	}
}

/*
 * Token @b's K and V cache rows of layer @l, prefetched for writing: each
 * position is written once, into lines no one has read, and a row's
 * stores left to miss line after line cost ~4k cycles more a token and
 * layer (Zen 5) than with the lines on their way during the RoPE.
 */
static void kv_prefetch(const struct edgeq_ctx *c, int l, int b)
{
	const struct edgeq_ctx *tc = c->tc[b];
	size_t off = kv_off(tc, l, c->tpos[b]);

	for (size_t o = 0; o < tc->kv_row; o += 64) {
		__builtin_prefetch(tc->k_cache + off + o, 1, 3);
		__builtin_prefetch(tc->v_cache + off + o, 1, 3);
	}
}

/* RoPE on token @b's q and k rows, then its K/V cache rows (layer @l) */
static void rope_kv_token(struct edgeq_ctx *c, int l, int b)
{
	const struct edgeq_hparams *hp = &c->m->hp;
	uint32_t q_dim = hp->n_head * hp->head_dim;
	uint32_t kv_dim = hp->n_head_kv * hp->head_dim;
	const float *cs =
		(hp_layer_rope_swa(hp, (uint32_t)l) ? c->rope_swa : c->rope) +
		(size_t)b * hp->n_rot;

	rope_apply(hp, c->q + (size_t)b * q_dim, hp->n_head, cs);
	rope_apply(hp, c->k + (size_t)b * kv_dim, hp->n_head_kv, cs);
	kv_store(c->tc[b], l, c->tpos[b], c->k + (size_t)b * kv_dim,
		 c->v + (size_t)b * kv_dim);
}

/* SiLU(gate) * up, or GELU's tanh form (as a device computes it), over @n
 * elements: the kernels' (same values on every table as
 * edgeq_silu_mul_ref / edgeq_gelu_mul_ref, so no split or table changes a
 * bit). */
static void act_mul(const struct edgeq_model *m, bool gelu, float *o,
		    const float *x, int64_t n)
{
	void (*f)(float *, const float *, int64_t) = gelu ? m->ops->gelu_mul :
							    m->ops->silu_mul;

	if (!f)
		f = gelu ? edgeq_gelu_mul_ref : edgeq_silu_mul_ref;
	f(o, x, n);
}

/*
 * Per-token and per-element work of a pass, spread over the pool (each
 * row or element is computed whole by one thread, so results do not
 * depend on the split). A prompt's norms, RoPE and KV writes and its
 * SiLU/GELU took a tenth of a 512-token prefill on one of two threads
 * while the other waited.
 */
enum pw_op { PW_NORM, PW_ROPE_KV, PW_ADD, PW_SILU_MUL, PW_GELU_MUL };

struct pw_arg {
	enum pw_op op;
	struct edgeq_ctx *c;
	int layer, n; /* rows (tokens, heads) or elements */
	uint32_t width;
	float *o;
	const float *x, *w;
};

static void rope_kv_token(struct edgeq_ctx *c, int l, int b);

static void pw_task(void *arg, int ith, int nth)
{
	const struct pw_arg *a = arg;
	const struct edgeq_hparams *hp = &a->c->m->hp;
	int i, i0, i1;

	switch (a->op) {
	case PW_NORM:
		for (i = ith; i < a->n; i += nth)
			rmsnorm(a->o + (size_t)i * a->width,
				a->x + (size_t)i * a->width, a->w, a->width,
				hp->rms_eps);
		return;
	case PW_ROPE_KV:
		/* each token's rows are on their way while the one before
		 * is stored (the first's during its RoPE) */
		if (ith < a->n)
			kv_prefetch(a->c, a->layer, ith);
		for (i = ith; i < a->n; i += nth) {
			if (i + nth < a->n)
				kv_prefetch(a->c, a->layer, i + nth);
			rope_kv_token(a->c, a->layer, i);
		}
		return;
	default:
		break;
	}
	/* elements in contiguous ranges of whole cache lines */
	i0 = (int)(((int64_t)a->n * ith / nth) & ~15);
	i1 = ith == nth - 1 ? a->n :
			      (int)(((int64_t)a->n * (ith + 1) / nth) & ~15);
	for (i = i0; i < i1; i++)
		switch (a->op) {
		case PW_ADD:
			a->o[i] += a->x[i];
			break;
		default: /* PW_SILU_MUL, PW_GELU_MUL */
			act_mul(a->c->m, a->op == PW_GELU_MUL, a->o + i,
				a->x + i, i1 - i);
			return;
		}
}

/* Run @a on the pool when it is worth a dispatch, else on this thread. */
static void pw_run(struct edgeq_ctx *c, struct pw_arg *a, int min_n)
{
	a->c = c;
	if (a->n >= min_n && c->m->pool)
		par_run(c->m, pw_task, a);
	else
		pw_task(a, 0, 1);
}

/* x[r] = rmsnorm(x[r]) * w for @n rows of @width: out of place into @o */
static void norm_par(struct edgeq_ctx *c, float *o, const float *x,
		     const float *w, int n, uint32_t width)
{
	struct pw_arg a = {
		.op = PW_NORM, .n = n, .width = width, .o = o, .x = x, .w = w
	};

	pw_run(c, &a, 2);
}

static void ew_par(struct edgeq_ctx *c, enum pw_op op, float *o, const float *x,
		   size_t n)
{
	struct pw_arg a = { .op = op, .n = (int)n, .o = o, .x = x };

	/* a dispatch costs about what 2048 exp or 32768 adds do */
	pw_run(c, &a, op == PW_ADD ? 32768 : 2048);
}

/* The transformer blocks over f's tokens: x holds their last hidden state. */
static int forward_layers(struct fw *f, int n_layer, struct edgeq_error *err)
{
	struct edgeq_ctx *c = f->w;
	struct edgeq_model *m = c->m;
	const struct edgeq_hparams *hp = &m->hp;
	struct edgeq_weights *w = m->weights;
	const struct edgeq_type_traits *et =
		edgeq_type_traits(m->tok_embd->type);
	uint32_t E = hp->n_embd, q_dim = hp->n_head * hp->head_dim;
	uint32_t kv_dim = hp->n_head_kv * hp->head_dim, F = hp->n_ff, i;
	size_t rs = m->tok_embd->row_size;
	int nb = f->nb;
	struct att_arg aa;
	int ret, b, l;

	prof_begin(m);
	ret = edgeq_weights_embed_rows(w, f->toks, (size_t)nb, c->emb, rs, err);
	if (ret)
		return ret;
	for (b = 0; b < nb; b++)
		et->to_float(c->emb + (size_t)b * rs, c->x + (size_t)b * E, E);
	if (hp->embd_scale != 1.0f)
		for (i = 0; i < (uint32_t)nb * E; i++)
			c->x[i] *= hp->embd_scale;
	rope_tables(c, nb);
	lap(m, EDGEQ_PROF_EMBED, 0);

	for (l = 0; l < n_layer; l++) {
		const struct edgeq_layer *L = &m->layers[l];
		const float *an, *fn;

		ret = edgeq_weights_layer_begin(w, l, err);
		if (ret)
			return ret;
		if (f->hooks && f->hooks->blocks && c->tc[0] == c &&
		    c->pass_nb == nb) {
			/* whole blocks elsewhere: several at once where every
			 * layer's weights are at hand without layer_begin */
			int done = f->hooks->blocks(
				f->hooks_arg, l,
				edgeq_weights_resident(w) ? n_layer - l : 1);

			if (done > 0) {
				edgeq_weights_layer_end(w, l);
				l += done - 1;
				lap(m, EDGEQ_PROF_DEVICE, 0);
				continue;
			}
		}
		an = edgeq_weights_get(w, L->attn_norm);
		fn = edgeq_weights_get(w, L->ffn_norm);
		lap(m, EDGEQ_PROF_WEIGHTS, 0);

		norm_par(c, c->xb, c->x, an, nb, E);
		lap(m, EDGEQ_PROF_NORM, 0);
		f->qa_src = NULL;
		if (L->wk) {
			static const enum edgeq_prof_part pq[3] = {
				EDGEQ_PROF_ATTN_Q, EDGEQ_PROF_ATTN_K,
				EDGEQ_PROF_ATTN_V
			};
			const struct edgeq_tensor *tq[3] = { L->wq, L->wk,
							     L->wv };
			float *yq[3] = { c->q, c->k, c->v };
			const int lq[3] = { (int)q_dim, (int)kv_dim,
					    (int)kv_dim };

			linear_n(f, pq, tq, 3, c->xb, nb, (int)E, yq, lq);
		} else { /* phi3: one matrix, rows q | k | v */
			uint32_t n3 = q_dim + 2 * kv_dim;

			linear(f, EDGEQ_PROF_ATTN_QKV, L->wq, c->xb, nb, (int)E,
			       c->fused, (int)n3);
			for (b = 0; b < nb; b++) {
				const float *r = c->fused + (size_t)b * n3;

				memcpy(c->q + (size_t)b * q_dim, r,
				       q_dim * sizeof(float));
				memcpy(c->k + (size_t)b * kv_dim, r + q_dim,
				       kv_dim * sizeof(float));
				memcpy(c->v + (size_t)b * kv_dim,
				       r + q_dim + kv_dim,
				       kv_dim * sizeof(float));
			}
			lap(m, EDGEQ_PROF_ELEMWISE, 0);
		}
		if (L->bq) {
			add_bias(c->q, edgeq_weights_get(w, L->bq), nb, q_dim);
			add_bias(c->k, edgeq_weights_get(w, L->bk), nb, kv_dim);
			add_bias(c->v, edgeq_weights_get(w, L->bv), nb, kv_dim);
			lap(m, EDGEQ_PROF_ELEMWISE, 0);
		}
		if (L->q_norm) {
			norm_par(c, c->q, c->q, edgeq_weights_get(w, L->q_norm),
				 nb * (int)hp->n_head, hp->head_dim);
			norm_par(c, c->k, c->k, edgeq_weights_get(w, L->k_norm),
				 nb * (int)hp->n_head_kv, hp->head_dim);
			lap(m, EDGEQ_PROF_NORM, 0);
		}
		{
			struct pw_arg pa = { .op = PW_ROPE_KV,
					     .layer = l,
					     .n = nb };

			pw_run(c, &pa, 2);
		}
		lap(m, EDGEQ_PROF_ROPE_KV, 0);
		aa = (struct att_arg){ c, l, nb, att_tokens(c, nb), 0 };
		par_run(m, aa.tb ? att_task_tiles : att_task, &aa);
		lap(m, EDGEQ_PROF_ATTENTION, 0);
		f->qa_src = NULL;
		linear(f, EDGEQ_PROF_ATTN_OUT, L->wo, c->xb2, nb, (int)q_dim,
		       c->xb, (int)E);
		if (L->post_attn_norm) {
			norm_par(c, c->xb, c->xb,
				 edgeq_weights_get(w, L->post_attn_norm), nb,
				 E);
			lap(m, EDGEQ_PROF_NORM, 0);
		}
		ew_par(c, PW_ADD, c->x, c->xb, (size_t)nb * E);
		lap(m, EDGEQ_PROF_ELEMWISE, 0);

		norm_par(c, c->xb, c->x, fn, nb, E);
		lap(m, EDGEQ_PROF_NORM, 0);
		f->qa_src = NULL;
		if (L->w_gate) {
			static const enum edgeq_prof_part pg[2] = {
				EDGEQ_PROF_FFN_GATE, EDGEQ_PROF_FFN_UP
			};
			const struct edgeq_tensor *tg[2] = { L->w_gate,
							     L->w_up };
			float *yg[2] = { c->hb, c->hb2 };
			const int lg[2] = { (int)F, (int)F };

			linear_n(f, pg, tg, 2, c->xb, nb, (int)E, yg, lg);
		} else { /* phi3: one matrix, rows gate | up */
			linear(f, EDGEQ_PROF_FFN_UP, L->w_up, c->xb, nb, (int)E,
			       c->fused, (int)(2 * F));
			for (b = 0; b < nb; b++) {
				const float *r = c->fused + (size_t)b * 2 * F;

				memcpy(c->hb + (size_t)b * F, r,
				       F * sizeof(float));
				memcpy(c->hb2 + (size_t)b * F, r + F,
				       F * sizeof(float));
			}
		}
		ew_par(c, hp->gelu ? PW_GELU_MUL : PW_SILU_MUL, c->hb, c->hb2,
		       (size_t)nb * F);
		lap(m, EDGEQ_PROF_ELEMWISE, 0);
		f->qa_src = NULL;
		linear(f, EDGEQ_PROF_FFN_DOWN, L->w_down, c->hb, nb, (int)F,
		       c->xb, (int)E);
		if (L->post_ffn_norm) {
			norm_par(c, c->xb, c->xb,
				 edgeq_weights_get(w, L->post_ffn_norm), nb, E);
			lap(m, EDGEQ_PROF_NORM, 0);
		}
		ew_par(c, PW_ADD, c->x, c->xb, (size_t)nb * E);
		edgeq_weights_layer_end(w, l);
		lap(m, EDGEQ_PROF_ELEMWISE, 0);
	}
	prof_end(m, nb);
	return 0;
}

/*
 * The output head for @n_out of f's tokens (indices @idx): logits into
 * @dst (n_out rows of n_vocab).
 */
static int forward_head(struct fw *f, const int *idx, int n_out, float *dst,
			struct edgeq_error *err)
{
	struct edgeq_ctx *c = f->w;
	struct edgeq_model *m = c->m;
	const struct edgeq_hparams *hp = &m->hp;
	struct edgeq_weights *w = m->weights;
	uint32_t E = hp->n_embd;
	int ret, j;

	if (f->hooks && f->hooks->head && f->nb == 1 && n_out == 1 &&
	    idx[0] == 0 && c->tc[0] == c &&
	    !f->hooks->head(f->hooks_arg, dst)) {
		if (hp->final_softcap > 0)
			softcap(dst, hp->n_vocab, hp->final_softcap);
		lap(m, EDGEQ_PROF_DEVICE, 0);
		return 0;
	}
	ret = edgeq_weights_layer_begin(w, EDGEQ_WEIGHTS_GLOBAL, err);
	if (ret)
		return ret;
	lap(m, EDGEQ_PROF_WEIGHTS, 0);
	for (j = 0; j < n_out; j++)
		rmsnorm(c->xb + (size_t)j * E, c->x + (size_t)idx[j] * E,
			edgeq_weights_get(w, m->output_norm), E, hp->rms_eps);
	lap(m, EDGEQ_PROF_NORM, 0);
	f->qa_src = NULL;
	linear(f, EDGEQ_PROF_OUTPUT, m->output, c->xb, n_out, (int)E, dst,
	       (int)hp->n_vocab);
	f->qa_src = NULL;
	if (hp->final_softcap > 0)
		softcap(dst, (uint32_t)n_out * hp->n_vocab, hp->final_softcap);
	edgeq_weights_layer_end(w, EDGEQ_WEIGHTS_GLOBAL);
	lap(m, EDGEQ_PROF_ELEMWISE, 0);
	return 0;
}

/*
 * One batch of nb tokens of @c at positions c->pos.. ; logits of the last
 * (@want_logits) into c->logits, or of every token into @all ([nb][n_vocab]).
 */
static int forward(struct edgeq_ctx *c, const int32_t *toks, int nb,
		   bool want_logits, float *all, struct edgeq_error *err)
{
	struct fw f = { c, toks, nb, NULL, 0, 0, c->hooks, c->hooks_arg };
	int ret, b, last = nb - 1, idx[EDGEQ_VERIFY_MAX];

	for (b = 0; b < nb; b++) {
		c->tc[b] = c;
		c->tpos[b] = c->pos + (uint32_t)b;
	}
	c->pass_nb = nb;
	if (c->hooks && c->hooks->step_begin)
		c->hooks->step_begin(c->hooks_arg, nb);
	ret = forward_layers(&f, (int)c->m->hp.n_layer, err);
	if (ret)
		return ret;
	c->pos += (uint32_t)nb;
	if (all) {
		for (b = 0; b < nb; b++)
			idx[b] = b;
		ret = forward_head(&f, idx, nb, all, err);
	} else if (want_logits) {
		ret = forward_head(&f, &last, 1, c->logits, err);
	}
	if (c->hooks && c->hooks->step_end)
		c->hooks->step_end(c->hooks_arg, nb);
	return ret;
}

static int check_tokens(struct edgeq_ctx *c, const int32_t *toks, size_t n,
			struct edgeq_error *err)
{
	size_t i;

	if (n == 0)
		return edgeq_error_set(err, EINVAL, "decode: no tokens");
	if (n > c->n_ctx - c->pos)
		return edgeq_error_set(
			err, ENOSPC,
			"decode: %zu tokens at position %u exceed the context of %u",
			n, c->pos, c->n_ctx);
	for (i = 0; i < n; i++)
		if (toks[i] < 0 || (uint32_t)toks[i] >= c->m->hp.n_vocab)
			return edgeq_error_set(
				err, EINVAL,
				"decode: token id %d is out of range (vocabulary of %u)",
				toks[i], c->m->hp.n_vocab);
	return 0;
}

int edgeq_decode(struct edgeq_ctx *c, const int32_t *toks, size_t n,
		 const float **logits, struct edgeq_error *err)
{
	size_t done = 0;
	int ret;

	ret = check_tokens(c, toks, n, err);
	if (ret)
		return ret;
	/* contexts of one model share its thread pool: one pass at a time */
	pthread_mutex_lock(&c->m->lock);
	while (done < n) {
		size_t nb = n - done;

		if (nb > c->n_batch)
			nb = c->n_batch;
		ret = forward(c, toks + done, (int)nb, done + nb == n, NULL,
			      err);
		if (ret) {
			pthread_mutex_unlock(&c->m->lock);
			return ret;
		}
		done += nb;
	}
	pthread_mutex_unlock(&c->m->lock);
	if (logits)
		*logits = c->logits;
	return 0;
}

int ctx_decode_all(struct edgeq_ctx *c, const int32_t *toks, size_t n,
		   float *all, struct edgeq_error *err)
{
	int ret;

	if (n > EDGEQ_VERIFY_MAX || n > c->n_batch)
		return edgeq_error_set(
			err, EINVAL,
			"decode: %zu positions' logits at once (at most %d)", n,
			n > c->n_batch ? (int)c->n_batch : EDGEQ_VERIFY_MAX);
	ret = check_tokens(c, toks, n, err);
	if (ret)
		return ret;
	pthread_mutex_lock(&c->m->lock);
	ret = forward(c, toks, (int)n, false, all, err);
	pthread_mutex_unlock(&c->m->lock);
	return ret;
}

int ctx_draft_step(struct edgeq_ctx *c, int32_t tok, uint32_t pos, int n_layers,
		   struct edgeq_error *err)
{
	struct fw f = { c, &tok, 1, NULL, 0, 0, NULL, NULL };
	int last = 0, ret;

	if (pos >= c->n_ctx)
		return edgeq_error_set(err, ENOSPC,
				       "draft: position %u past the context",
				       pos);
	if (n_layers < 1 || n_layers > (int)c->m->hp.n_layer)
		return edgeq_error_set(err, EINVAL,
				       "draft: %d layers (the model has %u)",
				       n_layers, c->m->hp.n_layer);
	if (tok < 0 || (uint32_t)tok >= c->m->hp.n_vocab)
		return edgeq_error_set(
			err, EINVAL, "draft: token id %d is out of range", tok);
	c->tc[0] = c;
	c->tpos[0] = pos;
	pthread_mutex_lock(&c->m->lock);
	ret = forward_layers(&f, n_layers, err);
	if (!ret)
		ret = forward_head(&f, &last, 1, c->logits, err);
	pthread_mutex_unlock(&c->m->lock);
	return ret;
}

/* Re-rope one stored key row by @cs (a rotation by the position change). */
static void kv_rerope_row(struct edgeq_ctx *c, uint8_t *row, float *tmp,
			  const float *cs)
{
	const struct edgeq_hparams *hp = &c->m->hp;
	uint32_t kv_dim = hp->n_head_kv * hp->head_dim;

	switch (c->kv_type) {
	case EDGEQ_KV_F16:
		edgeq_fp16_to_fp32_row((const uint16_t *)row, tmp, kv_dim);
		rope_apply(hp, tmp, hp->n_head_kv, cs);
		edgeq_fp32_to_fp16_row(tmp, (uint16_t *)row, kv_dim);
		break;
	case EDGEQ_KV_Q8_0:
		edgeq_type_traits(EDGEQ_TYPE_Q8_0)->to_float(row, tmp, kv_dim);
		rope_apply(hp, tmp, hp->n_head_kv, cs);
		c->m->ops->quantize_act(EDGEQ_TYPE_Q8_0, tmp, row, kv_dim);
		break;
	default:
		rope_apply(hp, (float *)row, hp->n_head_kv, cs);
		break;
	}
}

int ctx_shift(struct edgeq_ctx *c, uint32_t keep, uint32_t n_discard,
	      struct edgeq_error *err)
{
	const struct edgeq_hparams *hp = &c->m->hp;
	uint32_t nf = hp->n_rot / 2, i, p, l;
	float *tmp, *cs;
	size_t row = c->kv_row;

	if (!n_discard || keep + n_discard > c->pos)
		return edgeq_error_set(
			err, EINVAL,
			"context shift: keep %u and drop %u of %u positions",
			keep, n_discard, c->pos);
	tmp = malloc(((size_t)hp->n_head_kv * hp->head_dim + hp->n_rot) *
		     sizeof(float));
	if (!tmp)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	cs = tmp + (size_t)hp->n_head_kv * hp->head_dim;
	for (l = 0; l < hp->n_layer; l++) {
		uint8_t *kc = c->k_cache + kv_off(c, (int)l, 0);
		uint8_t *vc = c->v_cache + kv_off(c, (int)l, 0);
		bool swa = hp_layer_rope_swa(hp, l);

		/* rotating by the position change: angles add (a
		 * sliding-window layer's RoPE has its own base, unscaled) */
		for (i = 0;
		     i < nf && (l == 0 || swa != hp_layer_rope_swa(hp, l - 1));
		     i++) {
			float th = swa ? -(float)n_discard *
						   c->m->rope_inv_freq_swa[i] :
					 -(float)n_discard *
						   hp->rope_linear_scale *
						   c->inv_freq[i];

			cs[2 * i] = cosf(th);
			cs[2 * i + 1] = sinf(th);
		}

		for (p = keep + n_discard; p < c->pos; p++) {
			memcpy(kc + (size_t)(p - n_discard) * row,
			       kc + (size_t)p * row, row);
			kv_rerope_row(c, kc + (size_t)(p - n_discard) * row,
				      tmp, cs);
			memcpy(vc + (size_t)(p - n_discard) * row,
			       vc + (size_t)p * row, row);
		}
	}
	memmove(c->history + keep, c->history + keep + n_discard,
		(c->pos - keep - n_discard) * sizeof(int32_t));
	c->pos -= n_discard;
	free(tmp);
	return 0;
}

void ctx_block_view(struct edgeq_ctx *c, struct ctx_block_view *v)
{
	v->x = c->x;
	v->nb = c->pass_nb ? c->pass_nb : 1;
	v->k_cache = c->k_cache;
	v->v_cache = c->v_cache;
	v->kv_row = c->kv_row;
	v->n_ctx = c->n_ctx;
	v->pos = c->tpos[0];
	v->inv_freq = c->inv_freq;
	v->kv_type = c->kv_type;
	v->kv_map = c->kv_map;
	v->kv_map_len = c->kv_map_len;
	v->kv_fd = c->kv_map ? c->kv_fd : -1;
}

int ctx_kv_share(struct edgeq_ctx *c, struct edgeq_error *err)
{
	size_t half = (size_t)c->m->hp.n_layer * c->n_ctx * c->kv_row;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE),
	       hp = (half + pg - 1) & ~(pg - 1);
	void *map;
	int fd, ret;

	if (c->kv_map)
		return 0;
	ret = edgeq_kq_memfd("edgeq-kv", 2 * hp, &fd, &map);
	if (ret)
		return edgeq_error_set(
			err, -ret,
			"KV cache: %zu MiB of shared memory for a device: %s",
			(2 * hp) >> 20, strerror(-ret));
	memcpy(map, c->k_cache, half);
	memcpy((char *)map + hp, c->v_cache, half);
	munmap(c->k_cache, c->kv_anon_len);
	c->k_cache = map;
	c->v_cache = (uint8_t *)map + hp;
	c->kv_map = map;
	c->kv_map_len = 2 * hp;
	c->kv_fd = fd;
	return 0;
}

bool ctx_has_hooks(const struct edgeq_ctx *c)
{
	return c->hooks != NULL;
}

int ctx_workspace_new(struct edgeq_model *m, uint32_t n_tokens,
		      struct edgeq_ctx **out, struct edgeq_error *err)
{
	struct edgeq_ctx_params p;
	struct edgeq_ctx *w;
	int ret;

	edgeq_ctx_params_init(&p);
	p.n_ctx = n_tokens < 16 ? 16 : n_tokens;
	p.n_batch = p.n_ctx;
	p.kv_type = EDGEQ_KV_F32;
	ret = edgeq_ctx_new(m, &p, &w, err);
	if (ret)
		return ret;
	w->lg_all = malloc((size_t)w->n_batch * m->hp.n_vocab * sizeof(float));
	if (!w->lg_all) {
		edgeq_ctx_free(w);
		return edgeq_error_set(err, ENOMEM,
				       "out of memory for batch logits");
	}
	*out = w;
	return 0;
}

uint32_t ctx_workspace_tokens(const struct edgeq_ctx *w)
{
	return w->n_batch;
}

int ctx_decode_batch(struct edgeq_ctx *w, struct ctx_batch_item *it, int n,
		     struct edgeq_error *err)
{
	struct edgeq_model *m = w->m;
	int32_t *toks;
	int idx[EDGEQ_BATCH_MAX_ITEMS];
	uint32_t V = m->hp.n_vocab;
	int i, nb = 0, n_out = 0, ret;
	size_t k;

	if (n < 1 || n > EDGEQ_BATCH_MAX_ITEMS)
		return edgeq_error_set(err, EINVAL,
				       "decode batch: %d items (1..%d)", n,
				       EDGEQ_BATCH_MAX_ITEMS);
	for (i = 0; i < n; i++) {
		if (it[i].c->m != m || it[i].c == w)
			return edgeq_error_set(
				err, EINVAL,
				"decode batch: a context of another model");
		ret = check_tokens(it[i].c, it[i].toks, it[i].n, err);
		if (ret)
			return ret;
		nb += (int)it[i].n;
		n_out += it[i].all_logits ? (int)it[i].n : 1;
	}
	if ((uint32_t)nb > w->n_batch || n_out > (int)w->n_batch)
		return edgeq_error_set(err, E2BIG,
				       "decode batch: %d tokens, room for %u",
				       nb, w->n_batch);
	toks = w->history; /* the workspace's own history is unused */
	nb = 0;
	n_out = 0;
	for (i = 0; i < n; i++) {
		for (k = 0; k < it[i].n; k++) {
			toks[nb] = it[i].toks[k];
			w->tc[nb] = it[i].c;
			w->tpos[nb] = it[i].c->pos + (uint32_t)k;
			if (it[i].all_logits || k + 1 == it[i].n)
				idx[n_out++] = nb;
			nb++;
		}
	}
	pthread_mutex_lock(&m->lock);
	{
		struct fw f = { w, toks, nb, NULL, 0, 0, NULL, NULL };

		ret = forward_layers(&f, (int)m->hp.n_layer, err);
		if (!ret)
			ret = forward_head(&f, idx, n_out, w->lg_all, err);
	}
	pthread_mutex_unlock(&m->lock);
	if (ret)
		return ret;
	n_out = 0;
	for (i = 0; i < n; i++) {
		it[i].c->pos += (uint32_t)it[i].n;
		if (it[i].all_logits) {
			memcpy(it[i].all_logits, w->lg_all + (size_t)n_out * V,
			       it[i].n * V * sizeof(float));
			n_out += (int)it[i].n;
		} else {
			memcpy(it[i].c->logits, w->lg_all + (size_t)n_out * V,
			       V * sizeof(float));
			n_out++;
		}
	}
	return 0;
}

int32_t *ctx_history(struct edgeq_ctx *c)
{
	return c->history;
}

uint32_t edgeq_ctx_n_ctx(const struct edgeq_ctx *c)
{
	return c->n_ctx;
}

uint32_t edgeq_ctx_n_batch(const struct edgeq_ctx *c)
{
	return c->n_batch;
}

const float *ctx_logits(struct edgeq_ctx *c)
{
	return c->logits;
}

struct edgeq_model *ctx_model(struct edgeq_ctx *c)
{
	return c->m;
}

void ctx_set_hooks(struct edgeq_ctx *c, const struct edgeq_ctx_hooks *h,
		   void *arg)
{
	c->hooks = h;
	c->hooks_arg = arg;
}
