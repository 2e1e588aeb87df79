/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Byte-level BPE pre-tokenizers: tokenizer.ggml.pre names (as llama.cpp's
 * loader knows them) mapped to their split rules, a list of steps that each
 * split every piece of the text further (a regular expression whose matches
 * and the gaps between them become pieces, or one of llama.cpp's
 * hand-written splitters for the GPT-2 and Llama 3 patterns).
 */
#ifndef EDGEQ_MODEL_PRETOK_H
#define EDGEQ_MODEL_PRETOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct edgeq_error;
struct pretok;

enum pretok_flag {
	PRETOK_IGNORE_MERGES = 1 << 0, /* a piece that is a token stays whole */
	PRETOK_ADD_BOS = 1 << 1,       /* BOS by default */
	PRETOK_NO_BOS = 1 << 2,	       /* no BOS token by default */
};

/*
 * The pre-tokenizer named @name (@len bytes; NULL: the key is absent, which
 * means llama.cpp's "default"). -EOPNOTSUPP with a message naming it when
 * the name is unknown or known but not implemented here.
 */
int pretok_new(const char *name, size_t len, struct pretok **out,
	       struct edgeq_error *err);
void pretok_free(struct pretok *p);
unsigned int pretok_flags(const struct pretok *p);
const char *pretok_name(const struct pretok *p);
/* Step @i: its pattern, or "@gpt2", "@llama3", "@digits3" for the
 * hand-written splitters; NULL past the last. */
const char *pretok_step(const struct pretok *p, unsigned int i);

/* A piece: code points [start, start + len). */
struct pretok_piece {
	size_t start, len;
};

/*
 * Split @n code points @cps (with their ucd_flags() @fl) into pieces, in
 * order, covering the text. *@out (malloc'ed, caller frees) and *@n_out.
 */
int pretok_split(const struct pretok *p, const uint32_t *cps, const uint8_t *fl,
		 size_t n, struct pretok_piece **out, size_t *n_out);

/*
 * Name @i of those llama.cpp knows (NULL past the last), whether it is
 * implemented, and which set of split rules it names (aliases share one).
 */
const char *pretok_known(size_t i, bool *implemented, size_t *rules);

#endif /* EDGEQ_MODEL_PRETOK_H */
