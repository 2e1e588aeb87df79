// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * llama.cpp's own tokenizer suite (../shared/vocab, or $EDGEQ_TEST_VOCAB;
 * its README describes the files): every vocabulary-only GGUF is loaded as
 * edgeq loads a model's vocabulary, every input of its .inp is tokenized
 * (no BOS, special tokens not parsed, as test-tokenizer-0 does) and must
 * give the ids of the .out line exactly; the ids then decode back to the
 * input (after SentencePiece's added leading space). A case skips when its
 * file is absent.
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

#define SEP "\n__ggml_vocab_test__\n"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET))
		goto out;
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
		goto out;
	}
	if (buf)
		buf[n] = 0;
	*len = (size_t)n;
out:
	fclose(f);
	return buf;
}

static const char *vocab_dir(void)
{
	const char *d = getenv("EDGEQ_TEST_VOCAB");

	return d ? d : "../shared/vocab";
}

static bool valid_utf8(const char *s, size_t n)
{
	size_t i = 0, l, k;

	while (i < n) {
		unsigned char c = (unsigned char)s[i];

		l = c < 0x80	       ? 1 :
		    (c & 0xe0) == 0xc0 ? 2 :
		    (c & 0xf0) == 0xe0 ? 3 :
		    (c & 0xf8) == 0xf0 ? 4 :
					 0;
		if (!l || i + l > n)
			return false;
		for (k = 1; k < l; k++)
			if (((unsigned char)s[i + k] & 0xc0) != 0x80)
				return false;
		i += l;
	}
	return true;
}

static void run_file(const char *name)
{
	struct edgeq_model_params p;
	struct edgeq_error err = { 0 };
	struct edgeq_model *m = NULL;
	char path[4096], *inp, *out, *text, *line, *next_line, *dec;
	size_t ninp, nout, k = 0, bad = 0;
	int32_t *ids;

	snprintf(path, sizeof(path), "%s/%s.inp", vocab_dir(), name);
	inp = slurp(path, &ninp);
	snprintf(path, sizeof(path), "%s/%s.out", vocab_dir(), name);
	out = slurp(path, &nout);
	if (!inp || !out) {
		free(inp);
		free(out);
		print_message("%s: not in %s\n", name, vocab_dir());
		skip();
	}
	snprintf(path, sizeof(path), "%s/%s", vocab_dir(), name);
	edgeq_model_params_init(&p);
	p.path = path;
	p.vocab_only = true;
	if (edgeq_model_load(&p, &m, &err))
		fail_msg("%s: %s", name, err.msg);
	ids = malloc((ninp + 16) * sizeof(*ids));
	dec = malloc(ninp * 4 + 64);
	assert_non_null(ids);
	assert_non_null(dec);
	text = inp;
	line = out;
	while (*text) {
		char *end = strstr(text, SEP);
		size_t n, want = 0, i, dl = 0;
		bool ok = true, spm;
		int32_t w[1024];

		assert_non_null(end);
		assert_non_null(line);
		*end = 0;
		next_line = strchr(line, '\n');
		if (next_line)
			*next_line++ = 0;
		for (char *t = strtok(line, " "); t; t = strtok(NULL, " "))
			w[want++] = (int32_t)strtol(t, NULL, 10);
		assert_int_equal(edgeq_tokenize(m, text, false, false, ids,
						ninp + 16, &n),
				 0);
		ok = n == want;
		for (i = 0; ok && i < n; i++)
			ok = ids[i] == w[i];
		if (!ok) {
			bad++;
			print_message("%s input %zu '%s': got", name, k, text);
			for (i = 0; i < n; i++)
				print_message(" %d", ids[i]);
			print_message(", want");
			for (i = 0; i < want; i++)
				print_message(" %d", w[i]);
			print_message("\n");
		}
		/* decode back */
		for (i = 0; i < n; i++) {
			int l = edgeq_token_to_piece(m, ids[i], dec + dl,
						     ninp * 4 + 64 - dl);

			assert_true(l >= 0);
			dl += (size_t)l;
		}
		spm = !strcmp(edgeq_model_info(m)->tokenizer, "llama");
		if (valid_utf8(text, strlen(text))) {
			size_t skip_sp = spm && dl && dec[0] == ' ' ? 1 : 0;

			if (dl - skip_sp != strlen(text) ||
			    memcmp(dec + skip_sp, text, dl - skip_sp)) {
				bad++;
				print_message(
					"%s input %zu '%s': decodes to '%.*s'\n",
					name, k, text, (int)dl, dec);
			}
		}
		text = end + strlen(SEP);
		line = next_line;
		k++;
	}
	print_message("%s: %zu inputs, %zu mismatches\n", name, k, bad);
	free(ids);
	free(dec);
	free(inp);
	free(out);
	edgeq_model_free(m);
	assert_int_equal(bad, 0);
	assert_true(k > 0);
}

#define SUITE_CASE(fn, file)                          \
	static void fn(void **state)                  \
	{                                             \
		run_file("ggml-vocab-" file ".gguf"); \
	}

SUITE_CASE(test_llama_spm, "llama-spm")
SUITE_CASE(test_phi_3, "phi-3")
SUITE_CASE(test_gpt_2, "gpt-2")
SUITE_CASE(test_deepseek_llm, "deepseek-llm")
SUITE_CASE(test_deepseek_coder, "deepseek-coder")
SUITE_CASE(test_falcon, "falcon")
SUITE_CASE(test_starcoder, "starcoder")
SUITE_CASE(test_mpt, "mpt")

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_llama_spm),
		cmocka_unit_test(test_phi_3),
		cmocka_unit_test(test_gpt_2),
		cmocka_unit_test(test_deepseek_llm),
		cmocka_unit_test(test_deepseek_coder),
		cmocka_unit_test(test_falcon),
		cmocka_unit_test(test_starcoder),
		cmocka_unit_test(test_mpt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
