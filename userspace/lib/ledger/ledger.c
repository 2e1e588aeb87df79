// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The ledgers' arithmetic: bandwidth, memory, load, speculative decoding,
 * sustained speed. Formulas and assumptions: Documentation/ledgers.rst.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <edgeq/gguf.h>
#include <edgeq/ledger.h>

#include "ledger/ledger_int.h"

/* Code, tokenizer, thread stacks, io buffers of the engine itself. */
#define ENGINE_RUNTIME_BYTES (64ull << 20)

uint64_t edgeq_ledger_weight_bytes(uint64_t n_params, double bpw)
{
	return (uint64_t)llround((double)n_params * bpw / 8.0);
}

uint64_t edgeq_ledger_kv_bytes(uint64_t batch, uint64_t ctx, uint64_t layers,
			       uint64_t kv_heads, uint64_t head_dim,
			       double elem_bytes)
{
	return (uint64_t)llround(
		(double)(batch * ctx * layers * 2 * kv_heads * head_dim) *
		elem_bytes);
}

double edgeq_ledger_decode_bound(double bw, double eff, double bytes_per_token)
{
	if (bytes_per_token <= 0)
		return 0;
	return bw * eff / bytes_per_token;
}

double edgeq_ledger_prefill_bound(double compute, uint64_t n_params, double bw,
				  double eff, uint64_t weight_bytes,
				  uint32_t batch)
{
	double by_compute = n_params ? compute / (2.0 * (double)n_params) : 0;
	double by_bw = weight_bytes ? bw * eff * batch / (double)weight_bytes :
				      0;

	if (by_compute <= 0)
		return by_bw;
	if (by_bw <= 0)
		return by_compute;
	return by_compute < by_bw ? by_compute : by_bw;
}

void edgeq_ledger_speculative_measured(uint64_t drafted, uint64_t accepted,
				       uint64_t rejected, uint64_t verifies,
				       double draft_cost, double *accept,
				       double *draft_len,
				       struct edgeq_spec *out)
{
	*accept = accepted + rejected ?
			  (double)accepted / (double)(accepted + rejected) :
			  0;
	*draft_len = verifies ? (double)drafted / (double)verifies : 0;
	edgeq_ledger_speculative(*accept, (int)(*draft_len + 0.5), draft_cost,
				 out);
}

void edgeq_ledger_speculative(double accept, int draft_len, double draft_cost,
			      struct edgeq_spec *out)
{
	if (accept < 0)
		accept = 0;
	if (draft_len < 0)
		draft_len = 0;
	if (accept >= 1)
		out->expected_tokens = draft_len + 1;
	else
		out->expected_tokens =
			(1 - pow(accept, draft_len + 1)) / (1 - accept);
	out->cost = draft_len * draft_cost + 1;
	out->speedup = out->expected_tokens / out->cost;
}

void edgeq_ledger_load(double bytes, double flash_bw, double fault_latency,
		       uint32_t page_size, uint32_t window, double working_set,
		       struct edgeq_load *out)
{
	double stream = flash_bw > 0 ? bytes / flash_bw : 0;
	uint64_t faults;

	if (!page_size)
		page_size = 4096;
	if (!window)
		window = 1;
	out->pages = (uint64_t)ceil(bytes / page_size);
	faults = (out->pages + window - 1) / window;
	out->preload_s = stream;
	out->on_demand_s = stream + (double)out->pages * fault_latency;
	out->prefetch_s = stream + (double)faults * fault_latency;
	out->partial_s = working_set * out->prefetch_s;
}

double edgeq_ledger_request_s(double prompt_tokens, double gen_tokens,
			      double prefill_tps, double decode_tps)
{
	double t = 0;

	if (prompt_tokens > 0)
		t += prefill_tps > 0 ? prompt_tokens / prefill_tps : INFINITY;
	if (gen_tokens > 0)
		t += decode_tps > 0 ? gen_tokens / decode_tps : INFINITY;
	return t;
}

double edgeq_ledger_trunc2(double v)
{
	/* the small epsilon keeps 3.61 from printing as 3.60 after rounding
	 * errors in the division */
	return floor(v * 100.0 + 1e-9) / 100.0;
}

void edgeq_shape_from_params(struct edgeq_model_shape *s, uint64_t n_params,
			     double bpw)
{
	memset(s, 0, sizeof(*s));
	strcpy(s->arch, "llama");
	s->n_params = n_params;
	s->bpw = bpw;
	s->weight_bytes = edgeq_ledger_weight_bytes(n_params, bpw);
	s->token_bytes = s->weight_bytes;
	/* Llama 3 8B's attention and width: the common case on edge boxes */
	s->n_layer = 32;
	s->n_head = 32;
	s->n_head_kv = 8;
	s->head_dim = 128;
	s->n_embd = 4096;
	s->n_ff = 14336;
	s->n_vocab = 128256;
}

/* A shape key, 0 when absent or not an unsigned 32-bit integer. */
static uint32_t arch_u32(const struct edgeq_gguf *g, const char *suffix)
{
	uint32_t v = 0;

	edgeq_gguf_get_arch_u32(g, suffix, &v, NULL);
	return v;
}

static void copy_str(char *dst, size_t n, const struct edgeq_gguf *g,
		     const char *key)
{
	struct edgeq_gguf_str s;

	if (edgeq_gguf_get_str(g, key, &s, NULL))
		return;
	snprintf(dst, n, "%.*s", (int)(s.len < n ? s.len : n - 1), s.ptr);
}

void ledger_gguf_shape(const struct edgeq_gguf *g, struct edgeq_model_shape *s)
{
	const struct edgeq_gguf_tensor *embd;
	const struct edgeq_gguf_kv *tokens;

	memset(s, 0, sizeof(*s));
	copy_str(s->arch, sizeof(s->arch), g, "general.architecture");
	copy_str(s->name, sizeof(s->name), g, "general.name");
	for (uint64_t i = 0; i < g->n_tensors; i++) {
		const struct edgeq_gguf_tensor *t = &g->tensors[i];

		s->n_params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
		s->weight_bytes += t->size;
	}
	/* An untied model reads one embedding row per token; a tied one reads
	 * the whole matrix as the output projection. */
	s->token_bytes = s->weight_bytes;
	embd = edgeq_gguf_tensor(g, "token_embd.weight");
	if (embd && edgeq_gguf_tensor(g, "output.weight"))
		s->token_bytes -= embd->size - embd->size / embd->ne[1];
	s->n_layer = arch_u32(g, "block_count");
	s->n_head = arch_u32(g, "attention.head_count");
	s->n_head_kv = arch_u32(g, "attention.head_count_kv");
	s->head_dim = arch_u32(g, "attention.key_length");
	s->n_embd = arch_u32(g, "embedding_length");
	s->n_ff = arch_u32(g, "feed_forward_length");
	s->n_ctx_train = arch_u32(g, "context_length");
	tokens = edgeq_gguf_find(g, "tokenizer.ggml.tokens");
	if (tokens && tokens->type == EDGEQ_GGUF_ARRAY)
		s->n_vocab = (uint32_t)tokens->arr_n;
	if (!s->n_vocab && embd)
		s->n_vocab = (uint32_t)embd->ne[1];
	if (!s->head_dim && s->n_head)
		s->head_dim = s->n_embd / s->n_head;
	if (!s->n_head_kv)
		s->n_head_kv = s->n_head;
	s->bpw = s->n_params ?
			 8.0 * (double)s->weight_bytes / (double)s->n_params :
			 0;
}

int edgeq_shape_from_gguf(const char *path, struct edgeq_model_shape *s,
			  struct edgeq_error *err)
{
	struct edgeq_gguf *g;
	int ret = edgeq_gguf_open_flags(path, EDGEQ_GGUF_ANY_TYPE, &g, err);

	if (ret)
		return ret;
	ledger_gguf_shape(g, s);
	edgeq_gguf_close(g);
	if (!s->n_layer || !s->n_head_kv || !s->head_dim)
		return edgeq_error_set(
			err, EBADMSG,
			"%s: GGUF metadata lacks %s.block_count, attention.head_count or embedding_length",
			path, s->arch[0] ? s->arch : "<arch>");
	return 0;
}

void edgeq_plan_params_init(struct edgeq_plan_params *pp)
{
	memset(pp, 0, sizeof(*pp));
	pp->ctx = 4096;
	pp->batch = 1;
	pp->prefill_batch = 512;
	pp->kv_elem_bytes = 2;
	pp->accept = 0.75;
	pp->draft_len = 4;
	pp->draft_cost = 0.15;
	pp->prompt_len = 512;
	pp->gen_len = 256;
	pp->window = 32;
	pp->working_set = 0.3;
}

/* Activations and scratch: float buffers of a prefill step of @pb tokens
 * (residual, norm, attention output, two feed-forward halves), the attention
 * scores of those tokens over @ctx positions, and the logits. */
static uint64_t workspace_bytes(const struct edgeq_model_shape *s, uint64_t pb,
				uint64_t ctx, uint64_t batch)
{
	uint64_t embd = s->n_embd ? s->n_embd : 4096;
	uint64_t ff = s->n_ff ? s->n_ff : 4 * embd;
	uint64_t heads = s->n_head ? s->n_head : 32;

	return 4 * (pb * (3 * embd + 2 * ff) + heads * pb * ctx +
		    batch * s->n_vocab);
}

int edgeq_plan_compute(const struct edgeq_profile *prof,
		       const struct edgeq_model_shape *s,
		       const struct edgeq_plan_params *pp, struct edgeq_plan *o,
		       struct edgeq_error *err)
{
	double eff = pp->efficiency > 0 ? pp->efficiency : prof->efficiency;
	double thr = pp->throttle > 0 ? pp->throttle : prof->throttle;
	uint64_t avail, fixed, per_pos, heads;
	uint32_t batch = pp->batch ? pp->batch : 1;

	if (!(prof->mem_bw > 0) || !(eff > 0) || eff > 1)
		return edgeq_error_set(
			err, EINVAL,
			"profile %s: memory bandwidth %.3g B/s and efficiency %.2f must be positive (efficiency at most 1)",
			prof->name, prof->mem_bw, eff);
	if (!s->weight_bytes || !s->n_layer)
		return edgeq_error_set(
			err, EINVAL,
			"model: no weights or no layers to plan for");
	if (!(thr > 0) || thr > 1)
		thr = 1;
	memset(o, 0, sizeof(*o));

	/* bandwidth ledger */
	o->kv_bytes_per_pos = (double)edgeq_ledger_kv_bytes(
		1, 1, s->n_layer, s->n_head_kv, s->head_dim, pp->kv_elem_bytes);
	o->bytes_per_token =
		(double)s->token_bytes + o->kv_bytes_per_pos * pp->ctx * batch;
	o->decode_tps = batch * edgeq_ledger_decode_bound(prof->mem_bw, eff,
							  o->bytes_per_token);
	o->decode_tps_empty = edgeq_ledger_decode_bound(prof->mem_bw, eff,
							(double)s->token_bytes);
	o->prefill_tps = edgeq_ledger_prefill_bound(prof->compute, s->n_params,
						    prof->mem_bw, eff,
						    s->token_bytes,
						    pp->prefill_batch);

	/* memory ledger */
	o->weights = s->weight_bytes;
	o->kv = edgeq_ledger_kv_bytes(batch, pp->ctx, s->n_layer, s->n_head_kv,
				      s->head_dim, pp->kv_elem_bytes);
	o->workspace = workspace_bytes(s, pp->prefill_batch, pp->ctx, batch);
	o->runtime = ENGINE_RUNTIME_BYTES;
	o->total = o->weights + o->kv + o->workspace + o->runtime;
	o->ram = prof->ram;
	avail = prof->ram > prof->reserved ? prof->ram - prof->reserved : 0;
	o->fits = prof->ram && o->total <= avail;
	heads = s->n_head ? s->n_head : 32;
	fixed = o->weights + o->runtime +
		workspace_bytes(s, pp->prefill_batch, 0, batch);
	per_pos = (uint64_t)(o->kv_bytes_per_pos * batch) +
		  4 * heads * pp->prefill_batch;
	o->max_ctx = avail > fixed && per_pos ? (avail - fixed) / per_pos : 0;

	/* load ledger */
	edgeq_ledger_load((double)s->weight_bytes, prof->flash_bw,
			  prof->fault_latency, prof->page_size, pp->window,
			  pp->working_set, &o->load);

	/* speculative decoding */
	edgeq_ledger_speculative(pp->accept, pp->draft_len, pp->draft_cost,
				 &o->spec);
	o->spec_tps = o->decode_tps * o->spec.speedup;

	/* sustained */
	o->sustained_tps = o->decode_tps * thr;
	o->sustained_prefill_tps = o->prefill_tps * thr;
	o->req_peak_s = edgeq_ledger_request_s(pp->prompt_len, pp->gen_len,
					       o->prefill_tps, o->decode_tps);
	o->req_sustained_s = edgeq_ledger_request_s(pp->prompt_len, pp->gen_len,
						    o->sustained_prefill_tps,
						    o->sustained_tps);
	o->slo_met_peak = pp->slo_s <= 0 || o->req_peak_s <= pp->slo_s;
	o->slo_met_sustained = pp->slo_s <= 0 ||
			       o->req_sustained_s <= pp->slo_s;
	return 0;
}
