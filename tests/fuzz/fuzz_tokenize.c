// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness: arbitrary text through both tokenizers (SentencePiece
 * with byte fallback, byte-level BPE under every set of split rules that
 * pretok.c implements), with and without special-token parsing. Checks: no
 * crash; every id in range; the SentencePiece decode of the ids gives back
 * the text (after the added leading space) whenever the text holds no
 * U+2581 and no special token; the BPE decode gives back the text read as
 * code points (each undecodable byte as U+FFFD).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/gguf.h>

#include "gguf_build.h"
#include "model/pretok.h"
#include "model/tokenize.h"
#include "model/vocab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_BPE 64
static struct edgeq_vocab spm, bpe[MAX_BPE];
static struct gb spm_buf, bpe_buf[MAX_BPE];
static int n_bpe;

static void build_spm(void)
{
	static const char *const pieces[] = { "\xe2\x96\x81",
					      "\xe2\x96\x81t",
					      "he",
					      "\xe2\x96\x81the",
					      "in",
					      "er",
					      "\xe2\x96\x81"
					      "a",
					      "on",
					      "<|user|>" };
	const char *toks[3 + 256 + 9];
	float scores[3 + 256 + 9];
	int32_t types[3 + 256 + 9];
	static char bytes[256][8];
	struct edgeq_gguf *g;
	struct edgeq_error err;
	int i, n = 0;

	toks[n] = "<unk>", types[n] = 2, scores[n++] = 0;
	toks[n] = "<s>", types[n] = 3, scores[n++] = 0;
	toks[n] = "</s>", types[n] = 3, scores[n++] = 0;
	for (i = 0; i < 256; i++) {
		snprintf(bytes[i], sizeof(bytes[i]), "<0x%02X>", i);
		toks[n] = bytes[i], types[n] = 6, scores[n++] = 0;
	}
	for (i = 0; i < 9; i++)
		toks[n] = pieces[i], types[n] = i == 8 ? 4 : 1,
		scores[n++] = -(float)i;
	gb_header(&spm_buf, 3, 0, 4);
	gb_kv_str(&spm_buf, "tokenizer.ggml.model", "llama");
	gb_kv_arr_str(&spm_buf, "tokenizer.ggml.tokens", toks, (size_t)n);
	gb_kv_arr_f32(&spm_buf, "tokenizer.ggml.scores", scores, (size_t)n);
	gb_kv_arr_i32(&spm_buf, "tokenizer.ggml.token_type", types, (size_t)n);
	if (edgeq_gguf_open_mem(spm_buf.b, spm_buf.n, &g, &err) ||
	    vocab_load(&spm, g, &err))
		abort();
	edgeq_gguf_close(g);
}

static void build_bpe(int k, const char *pre)
{
	static const char *const merges[] = { "\xc4\xa0 t", "h e",
					      "\xc4\xa0t he", "i n", "1 2" };
	const char *toks[256 + 6];
	int32_t types[256 + 6];
	struct edgeq_gguf *g;
	struct edgeq_error err;
	int i;

	gb_bpe_bytes(toks, types);
	toks[256] = "\xc4\xa0t", toks[257] = "he", toks[258] = "\xc4\xa0the";
	toks[259] = "in", toks[260] = "12", toks[261] = "<|eot_id|>";
	for (i = 256; i < 262; i++)
		types[i] = i == 261 ? 3 : 1;
	gb_header(&bpe_buf[k], 3, 0, 5);
	gb_kv_str(&bpe_buf[k], "tokenizer.ggml.model", "gpt2");
	gb_kv_str(&bpe_buf[k], "tokenizer.ggml.pre", pre);
	gb_kv_arr_str(&bpe_buf[k], "tokenizer.ggml.tokens", toks, 262);
	gb_kv_arr_i32(&bpe_buf[k], "tokenizer.ggml.token_type", types, 262);
	gb_kv_arr_str(&bpe_buf[k], "tokenizer.ggml.merges", merges, 5);
	if (edgeq_gguf_open_mem(bpe_buf[k].b, bpe_buf[k].n, &g, &err) ||
	    vocab_load(&bpe[k], g, &err))
		abort();
	edgeq_gguf_close(g);
}

/* BPE reads code points: what does not decode becomes U+FFFD. */
static size_t as_code_points(const char *t, size_t n, char *out)
{
	size_t i, l, o = 0;

	for (i = 0; i < n; i += l) {
		uint32_t c = utf8_get(t + i, n - i, &l);

		o += utf8_put(c >= 0x110000 ? 0xfffd : c, out + o);
	}
	return o;
}

static void run(const struct edgeq_vocab *v, const char *t, size_t n,
		bool special, bool check_rt)
{
	size_t cap = n * 3 + 8, got, i;
	int32_t *toks = malloc(cap * sizeof(*toks));
	char *out = malloc(n * 4 + 16), *p = out;
	char *want = malloc(n * 3 + 4);

	if (!toks || !out || !want)
		abort();
	if (vocab_tokenize(v, t, n, false, special, toks, cap, &got))
		abort(); /* every byte is at most one token or two */
	for (i = 0; i < got; i++) {
		int l;

		if (toks[i] < 0 || (uint32_t)toks[i] >= v->n)
			abort();
		l = vocab_piece(v, toks[i], p, 64);
		if (l < 0)
			abort();
		p += l;
	}
	if (check_rt) {
		size_t pre = v->kind == VOCAB_SPM && n ? 1 : 0, wn = n;

		if (v->kind == VOCAB_BPE)
			wn = as_code_points(t, n, want);
		else
			memcpy(want, t, n);
		if ((size_t)(p - out) != wn + pre ||
		    memcmp(out + pre, want, wn))
			abort();
	}
	free(toks);
	free(out);
	free(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *t = (const char *)data;
	bool plain;
	int k;

	if (!spm.n) {
		size_t i, rules, prev = SIZE_MAX;
		const char *name;
		bool impl;

		build_spm();
		/* every set of split rules, by its first name */
		for (i = 0; (name = pretok_known(i, &impl, &rules)); i++) {
			if (!impl || rules == prev || n_bpe == MAX_BPE)
				continue;
			prev = rules;
			build_bpe(n_bpe++, name);
		}
	}
	plain = !memmem(t, size, "\xe2\x96\x81", 3) &&
		!memmem(t, size, "<|user|>", 8) && !memmem(t, size, "<s>", 3) &&
		!memmem(t, size, "</s>", 4) && !memmem(t, size, "<unk>", 5);
	run(&spm, t, size, false, plain);
	run(&spm, t, size, true, false);
	/* short texts through every rule set; a long one through the set its
	 * first byte picks, so that each run stays quick */
	for (k = 0; k < n_bpe; k++) {
		if (size > 256 && k != data[0] % n_bpe)
			continue;
		run(&bpe[k], t, size, false, true);
		run(&bpe[k], t, size, true, false);
	}
	return 0;
}
