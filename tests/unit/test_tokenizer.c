// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Tokenizers: golden ids for the 32000-piece Llama SentencePiece vocabulary
 * ($EDGEQ_TEST_MODELS/ggml-vocab-llama-spm.gguf; skipped when absent; the
 * ids are those of the reference SentencePiece/llama.cpp tokenizer), encode/
 * decode round trips, special tokens, and the byte-level BPE tokenizer with
 * the Llama 3 and Qwen2 pre-tokenizers on a small vocabulary built here.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <edgeq/engine.h>
#include <edgeq/gguf.h>

#include "gguf_build.h"
#include "model/tokenize.h"
#include "model/vocab.h"

static struct edgeq_model *spm;

static int spm_setup(void **state)
{
	struct edgeq_model_params p;
	struct edgeq_error err = { 0 };
	const char *dir = getenv("EDGEQ_TEST_MODELS");
	char path[4096];

	if (!dir)
		dir = "../shared/models";
	snprintf(path, sizeof(path), "%s/ggml-vocab-llama-spm.gguf", dir);
	edgeq_model_params_init(&p);
	p.path = path;
	p.vocab_only = true;
	if (edgeq_model_load(&p, &spm, &err))
		spm = NULL; /* the tests skip */
	return 0;
}

static int spm_teardown(void **state)
{
	edgeq_model_free(spm);
	return 0;
}

struct golden {
	const char *text;
	int32_t ids[16];
	size_t n;
};

static const struct golden spm_golden[] = {
	{ "Hello world", { 15043, 3186 }, 2 },
	{ " Hello world", { 29871, 15043, 3186 }, 3 },
	{ "Hello World", { 15043, 2787 }, 2 },
	{ " Hello World!", { 29871, 15043, 2787, 29991 }, 4 },
	{ "Hello, world!", { 15043, 29892, 3186, 29991 }, 4 },
	{ " this is \xf0\x9f\xa6\x99.cpp",
	  { 29871, 445, 338, 29871, 243, 162, 169, 156, 29889, 8223 },
	  10 },
	{ "w048 7tuijk dsdfhu",
	  { 281, 29900, 29946, 29947, 29871, 29955, 9161, 13535, 18031, 2176,
	    6905 },
	  11 },
	{ "\xd0\xbd\xd0\xb5\xd1\x89\xd0\xbe \xd0\xbd\xd0\xb0 "
	  "\xd0\x91\xd1\x8a\xd0\xbb\xd0\xb3\xd0\xb0\xd1\x80\xd1\x81\xd0\xba\xd0\xb8",
	  { 1538, 4851, 665, 1386, 29713, 1305 },
	  6 },
	{ " ", { 259 }, 1 },
	{ "  ", { 1678 }, 1 },
	{ "   ", { 268 }, 1 },
	{ "\n", { 29871, 13 }, 2 },
	{ "\t", { 29871, 12 }, 2 },
	{ "", { 0 }, 0 },
};

static void test_spm_golden(void **state)
{
	int32_t t[64];
	size_t n, i, k;

	if (!spm)
		skip();
	for (i = 0; i < sizeof(spm_golden) / sizeof(spm_golden[0]); i++) {
		const struct golden *g = &spm_golden[i];

		assert_int_equal(edgeq_tokenize(spm, g->text, false, false, t,
						64, &n),
				 0);
		if (n != g->n)
			print_error("'%s': %zu tokens, want %zu\n", g->text, n,
				    g->n);
		assert_int_equal(n, g->n);
		for (k = 0; k < n; k++)
			assert_int_equal(t[k], g->ids[k]);
	}
}

static void test_spm_bos_special(void **state)
{
	int32_t t[64];
	size_t n;

	if (!spm)
		skip();
	assert_int_equal(edgeq_tokenize(spm, "Hello", true, false, t, 64, &n),
			 0);
	assert_int_equal(n, 2);
	assert_int_equal(t[0], 1);
	assert_int_equal(t[1], 15043);
	/* with parse_special, "<s>" is the control token and the text after
	 * it gets the leading space again */
	assert_int_equal(
		edgeq_tokenize(spm, "<s>Hello", false, true, t, 64, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(t[0], 1);
	assert_int_equal(t[1], 15043);
	assert_int_equal(
		edgeq_tokenize(spm, "<s>Hello", false, false, t, 64, &n), 0);
	assert_true(n > 2);
	assert_int_not_equal(t[0], 1);
	/* -ENOSPC reports the size needed */
	assert_int_equal(edgeq_tokenize(spm, "Hello world", false, false, t, 1,
					&n),
			 -ENOSPC);
	assert_int_equal(n, 2);
	assert_true(edgeq_token_is_eog(spm, 2));
	assert_false(edgeq_token_is_eog(spm, 1));
}

static void roundtrip(struct edgeq_model *m, const char *text,
		      const char *prefix)
{
	int32_t t[512];
	char out[2048], *p = out;
	size_t n, i;
	int len;

	assert_int_equal(edgeq_tokenize(m, text, false, false, t, 512, &n), 0);
	for (i = 0; i < n; i++) {
		len = edgeq_token_to_piece(m, t[i], p,
					   sizeof(out) - (size_t)(p - out));
		assert_true(len >= 0);
		p += len;
	}
	*p = 0;
	assert_int_equal(strncmp(out, prefix, strlen(prefix)), 0);
	assert_string_equal(out + strlen(prefix), text);
}

static void test_spm_roundtrip(void **state)
{
	static const char *const texts[] = {
		"Hello world",
		"The quick brown fox jumps over the lazy dog.",
		"  leading and trailing  ",
		"tabs\tand\nnewlines\r\n",
		"\xf0\x9f\xa6\x99 emoji and \xe4\xb8\xad\xe6\x96\x87",
		"bytes \x01\x02\x7f",
		/* invalid UTF-8 (found by the fuzzer): a truncated character
		 * must not swallow the space after it */
		"broken \xf0\x9f\xa6 utf8 \xfc"
		"1234",
	};
	char buf[8];
	size_t i;

	if (!spm)
		skip();
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		roundtrip(spm, texts[i], " ");
	/* the one lossy case, as in SentencePiece: a literal U+2581 in the
	 * text comes back as a space */
	assert_int_equal(edgeq_token_to_piece(spm, 1, buf, sizeof(buf)), 0);
	assert_int_equal(edgeq_token_to_piece(spm, 3 + 0x41, buf, sizeof(buf)),
			 1);
	assert_int_equal(buf[0], 'A');
	assert_int_equal(edgeq_token_to_piece(spm, 99999, buf, sizeof(buf)),
			 -EINVAL);
	assert_int_equal(edgeq_token_to_piece(spm, 15043, buf, 2), -ENOSPC);
}

/* ---- byte-level BPE on a small vocabulary ---- */

static const char *const extra[] = {
	"Hello",
	"\xc4\xa0world",
	"'s",
	"123",
	"\xc4\xa0!!!\xc4\x8a\xc4\x8a",
	"lo",
	"low",
	"er",
	"<|begin_of_text|>",
};

static void bpe_vocab(struct edgeq_vocab *v, struct gb *g, const char *pre)
{
	const char *toks[256 + 9];
	int32_t types[256 + 9];
	static const char *const merges[] = { "l o", "lo w", "e r" };
	struct edgeq_gguf *f;
	struct edgeq_error err = { 0 };
	int i;

	gb_bpe_bytes(toks, types);
	for (i = 0; i < 9; i++) {
		toks[256 + i] = extra[i];
		types[256 + i] = i == 8 ? 3 : 1;
	}
	memset(g, 0, sizeof(*g));
	gb_header(g, 3, 0, 5);
	gb_kv_str(g, "tokenizer.ggml.model", "gpt2");
	gb_kv_str(g, "tokenizer.ggml.pre", pre);
	gb_kv_arr_str(g, "tokenizer.ggml.tokens", toks, 265);
	gb_kv_arr_i32(g, "tokenizer.ggml.token_type", types, 265);
	gb_kv_arr_str(g, "tokenizer.ggml.merges", merges, 3);
	assert_int_equal(edgeq_gguf_open_mem(g->b, g->n, &f, &err), 0);
	assert_int_equal(vocab_load(v, f, &err), 0);
	edgeq_gguf_close(f);
}

static void bpe_expect(struct edgeq_vocab *v, const char *text, bool special,
		       const int32_t *want, size_t nwant)
{
	int32_t t[128];
	size_t n, i;

	assert_int_equal(vocab_tokenize(v, text, strlen(text), false, special,
					t, 128, &n),
			 0);
	if (n != nwant)
		print_error("'%s': %zu tokens, want %zu\n", text, n, nwant);
	assert_int_equal(n, nwant);
	for (i = 0; i < n; i++)
		assert_int_equal(t[i], want[i]);
}

static void test_bpe_llama3(void **state)
{
	static const int32_t a[] = { 256, 257, 258, 32, 259, 52, 260 };
	static const int32_t b[] = { 262, 263 };
	static const int32_t c[] = { 264, 256 };
	static const int32_t d[] = { 'a', 'b', 'c', '\'', 'S', 'x' };
	struct edgeq_vocab v;
	struct gb g;
	char out[256], *p = out;
	int32_t t[64];
	size_t n, i;

	bpe_vocab(&v, &g, "llama-bpe");
	/* words: "Hello" " world" "'s" " " "123" "4" " !!!\n\n" */
	bpe_expect(&v, "Hello world's 1234 !!!\n\n", false, a, 7);
	/* not a word of the vocabulary: ranked merges l o -> lo w; e r */
	bpe_expect(&v, "lower", false, b, 2);
	bpe_expect(&v, "<|begin_of_text|>Hello", true, c, 2);
	/* contractions are case-insensitive in llama3: "'S" is a word */
	bpe_expect(&v, "abc'Sx", false, d, 6);
	assert_int_equal(vocab_tokenize(&v, "Hello world's 1234 !!!\n\n", 24,
					false, false, t, 64, &n),
			 0);
	for (i = 0; i < n; i++)
		p += vocab_piece(&v, t[i], p, sizeof(out) - (size_t)(p - out));
	*p = 0;
	assert_string_equal(out, "Hello world's 1234 !!!\n\n");
	assert_int_equal(vocab_piece(&v, 264, out, sizeof(out)), 0);
	vocab_free(&v);
	gb_free(&g);
}

/* A hostile 200 kB "word": merges must stay O(n log n) (the test timeout
 * catches a quadratic loop). */
static void test_bpe_long_word(void **state)
{
	size_t n = 200000, got, i;
	char *text = malloc(n + 1);
	int32_t *t = malloc(n * sizeof(*t));
	struct edgeq_vocab v;
	struct gb g;

	assert_non_null(text);
	assert_non_null(t);
	for (i = 0; i < n; i++)
		text[i] = i % 2 ? 'o' : 'l';
	text[n] = 0;
	bpe_vocab(&v, &g, "llama-bpe");
	assert_int_equal(vocab_tokenize(&v, text, n, false, false, t, n, &got),
			 0);
	assert_int_equal(got, n / 2);
	for (i = 0; i < got; i++)
		assert_int_equal(t[i], 261); /* "lo" */
	vocab_free(&v);
	gb_free(&g);
	free(text);
	free(t);
}

static void test_bpe_qwen2_digits(void **state)
{
	static const int32_t a[] = { '1', '2', '3', '4' };
	struct edgeq_vocab v;
	struct gb g;

	bpe_vocab(&v, &g, "qwen2");
	bpe_expect(&v, "1234", false, a, 4);
	vocab_free(&v);
	gb_free(&g);
}

static void test_bpe_gpt2_spaces(void **state)
{
	/* gpt2: "  x" -> " " + " x"; bytes since " x" is not a token */
	static const int32_t a[] = { ' ', ' ', 'x' };
	struct edgeq_vocab v;
	struct gb g;

	bpe_vocab(&v, &g, "gpt-2");
	bpe_expect(&v, "  x", false, a, 3);
	vocab_free(&v);
	gb_free(&g);
}

/*
 * Special tokens as llama.cpp partitions them: longest first, each claiming
 * its occurrences in the text left; unknown and control tokens only with
 * parse_special; the per-model whitespace stripping.
 */
static void special_vocab(struct edgeq_vocab *v, struct gb *g, const char *pre,
			  const char *name)
{
	static const char *const sp[] = { "ab", "bcd", "<unk>", "<|end|>",
					  "<mask>" };
	static const int32_t sp_type[] = { 4, 4, 2, 3, 4 };
	static const char *const merges[] = { "a b" };
	const char *toks[256 + 5];
	int32_t types[256 + 5];
	struct edgeq_gguf *f;
	struct edgeq_error err = { 0 };
	int i;

	gb_bpe_bytes(toks, types);
	for (i = 0; i < 5; i++) {
		toks[256 + i] = sp[i];
		types[256 + i] = sp_type[i];
	}
	memset(g, 0, sizeof(*g));
	gb_header(g, 3, 0, name ? 6 : 5);
	gb_kv_str(g, "tokenizer.ggml.model", "gpt2");
	gb_kv_str(g, "tokenizer.ggml.pre", pre);
	gb_kv_arr_str(g, "tokenizer.ggml.tokens", toks, 261);
	gb_kv_arr_i32(g, "tokenizer.ggml.token_type", types, 261);
	gb_kv_arr_str(g, "tokenizer.ggml.merges", merges, 1);
	if (name)
		gb_kv_str(g, "general.name", name);
	assert_int_equal(edgeq_gguf_open_mem(g->b, g->n, &f, &err), 0);
	assert_int_equal(vocab_load(v, f, &err), 0);
	edgeq_gguf_close(f);
}

static void test_special_partition(void **state)
{
	static const int32_t longest[] = { 'a', 257 }; /* a + bcd */
	static const int32_t left[] = { 256, 'c' };    /* ab + c */
	static const int32_t unk_text[] = { '<', 'u', 'n', 'k', '>' };
	static const int32_t unk[] = { 258, 'x' };
	static const int32_t end_ws[] = { 259, ' ', ' ', '\n', ' ', 'x' };
	static const int32_t end_strip[] = { 259, 'x' };
	static const int32_t mask_ws[] = { 'a', ' ', ' ', 260 };
	static const int32_t mask_strip[] = { 'a', 260 };
	struct edgeq_vocab v;
	struct gb g;

	special_vocab(&v, &g, "gpt-2", NULL);
	/* "bcd" is longer: it wins though "ab" starts first */
	bpe_expect(&v, "abcd", false, longest, 2);
	bpe_expect(&v, "abc", false, left, 2);
	bpe_expect(&v, "<unk>", false, unk_text, 5);
	bpe_expect(&v, "<unk>x", true, unk, 2);
	bpe_expect(&v, "<|end|>  \n x", true, end_ws, 6);
	bpe_expect(&v, "a  <mask>", false, mask_ws, 4);
	vocab_free(&v);
	gb_free(&g);
	/* a Phi-3 model: specials strip the whitespace to their right */
	special_vocab(&v, &g, "gpt-2", "Phi-3 mini");
	bpe_expect(&v, "<|end|>  \n x", true, end_strip, 2);
	bpe_expect(&v, "<unk>x", true, unk, 2);
	vocab_free(&v);
	gb_free(&g);
	/* jina-v2: <mask> strips to its left */
	special_vocab(&v, &g, "jina-v2-de", NULL);
	bpe_expect(&v, "a  <mask>", false, mask_strip, 2);
	vocab_free(&v);
	gb_free(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spm_golden),
		cmocka_unit_test(test_spm_bos_special),
		cmocka_unit_test(test_spm_roundtrip),
		cmocka_unit_test(test_bpe_llama3),
		cmocka_unit_test(test_bpe_long_word),
		cmocka_unit_test(test_bpe_qwen2_digits),
		cmocka_unit_test(test_bpe_gpt2_spaces),
		cmocka_unit_test(test_special_partition),
	};

	return cmocka_run_group_tests(tests, spm_setup, spm_teardown);
}
