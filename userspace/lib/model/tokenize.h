/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal pieces shared by the SentencePiece and byte-level BPE tokenizers. */
#ifndef EDGEQ_MODEL_TOKENIZE_H
#define EDGEQ_MODEL_TOKENIZE_H

#include <stddef.h>
#include <stdint.h>

#include "model/vocab.h"

struct tok_out {
	int32_t *toks;
	size_t max, n;
};

void tok_push(struct tok_out *o, int32_t t);

/* UTF-8: decode one code point (invalid bytes decode as themselves, length 1). */
uint32_t utf8_get(const char *s, size_t n, size_t *len);
/* Encode @cp; returns its length (1..4). */
size_t utf8_put(uint32_t cp, char *out);

uint32_t bpe_byte_to_cp(uint8_t b);
int bpe_cp_to_byte(uint32_t cp);
int32_t vocab_merge(const struct edgeq_vocab *v, int32_t a, int32_t b,
		    uint32_t *rank);

/* special.c: the index, and the partition of a text (see there). */
enum { STRIP_LEFT = 1, STRIP_RIGHT = 2 };
enum { SP_TEXT = 0, SP_START, SP_TOKEN, SP_GONE }; /* per byte of text */
int special_index(struct edgeq_vocab *v, const struct edgeq_gguf *g);
/* Marks each byte of @text in @mark; tok_at[i] is the token starting at a
 * SP_START byte i. */
int special_partition(const struct edgeq_vocab *v, const char *text, size_t len,
		      bool parse_special, uint8_t *mark, int32_t *tok_at);

int spm_tokenize(const struct edgeq_vocab *v, const char *text, size_t len,
		 bool space_prefix, struct tok_out *o);
int bpe_tokenize(const struct edgeq_vocab *v, const char *text, size_t len,
		 struct tok_out *o);

#endif /* EDGEQ_MODEL_TOKENIZE_H */
