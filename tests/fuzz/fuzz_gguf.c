// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness: arbitrary bytes as a GGUF file. The reader must refuse
 * or accept without a crash, an out-of-bounds read or a huge allocation;
 * an accepted file's metadata is then walked, and its tokenizer data (when
 * present) loaded and used on a few strings.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/gguf.h>

#include "model/vocab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const texts[] = { "Hello world", " a  b\n\nc",
					     "<s>x</s>",
					     "\xf0\x9f\xa6\x99 12345" };
	struct edgeq_error err;
	struct edgeq_gguf *g;
	struct edgeq_vocab v;
	struct edgeq_gguf_str s;
	uint64_t i, j;
	uint32_t u;
	float f;
	size_t k;

	if (edgeq_gguf_open_mem(data, size, &g, &err))
		return 0;
	for (i = 0; i < g->n_kv; i++) {
		const struct edgeq_gguf_kv *kv = &g->kv[i];

		if (kv->type == EDGEQ_GGUF_ARRAY &&
		    kv->arr_type == EDGEQ_GGUF_STRING && kv->arr_n < 100000) {
			struct edgeq_gguf_str *a =
				malloc((kv->arr_n + 1) * sizeof(*a));

			if (a) {
				edgeq_gguf_arr_strings(kv, a);
				for (j = 0; j < kv->arr_n; j++)
					if (a[j].len)
						(void)*(volatile const char
								*)(a[j].ptr +
								   a[j].len -
								   1);
				free(a);
			}
		} else if (kv->type == EDGEQ_GGUF_ARRAY &&
			   kv->arr_type != EDGEQ_GGUF_STRING) {
			for (j = 0; j < kv->arr_n && j < 64; j++)
				(void)edgeq_gguf_arr_num(kv, j);
		}
	}
	(void)edgeq_gguf_get_u32(g, "general.alignment", &u, &err);
	(void)edgeq_gguf_get_f32(g, "llama.rope.freq_base", &f, &err);
	(void)edgeq_gguf_get_str(g, "general.architecture", &s, &err);
	for (i = 0; i < g->n_tensors; i++) {
		const struct edgeq_gguf_tensor *t = &g->tensors[i];

		if (t->size)
			(void)*(volatile const uint8_t *)(g->base + t->offset +
							  t->size - 1);
	}
	if (!vocab_load(&v, g, &err)) {
		int32_t toks[256];
		char piece[64];
		size_t n;

		for (k = 0; k < sizeof(texts) / sizeof(texts[0]); k++) {
			if (vocab_tokenize(&v, texts[k], strlen(texts[k]), true,
					   k & 1, toks, 256, &n))
				continue;
			for (j = 0; j < n; j++)
				(void)vocab_piece(&v, toks[j], piece,
						  sizeof(piece));
		}
		vocab_free(&v);
	}
	edgeq_gguf_close(g);
	return 0;
}
