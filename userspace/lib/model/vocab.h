/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Tokenizers built from GGUF metadata (internal):
 *  - "llama": SentencePiece-style BPE over pieces with scores, "\xe2\x96\x81"
 *    for spaces, byte fallback <0xXX>;
 *  - "gpt2": byte-level BPE with ranked merges, after the pre-tokenizer
 *    that tokenizer.ggml.pre names (pretok.c).
 */
#ifndef EDGEQ_MODEL_VOCAB_H
#define EDGEQ_MODEL_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <edgeq/edgeq.h>
#include <edgeq/gguf.h>

enum vocab_kind { VOCAB_SPM = 1, VOCAB_BPE = 2 };

struct pretok;

/* Token types (tokenizer.ggml.token_type). */
enum vocab_ttype {
	TT_UNDEFINED = 0,
	TT_NORMAL = 1,
	TT_UNKNOWN = 2,
	TT_CONTROL = 3,
	TT_USER = 4,
	TT_UNUSED = 5,
	TT_BYTE = 6,
};

struct edgeq_vocab {
	enum vocab_kind kind;
	struct pretok *pre; /* BPE only */
	uint32_t n;
	char **text; /* NUL-terminated copies; may contain no NUL */
	uint32_t *len;
	float *score;
	uint8_t *ttype;
	uint32_t *hash; /* open addressing: id + 1, 0 empty */
	uint32_t hash_mask;
	int32_t byte_tok[256]; /* SPM: <0xXX> ids; BPE: id of the mapped char */
	/* BPE merges: (left, right) -> rank, result */
	uint64_t *merge_key;
	uint32_t *merge_rank, *merge_res;
	uint32_t merge_mask;
	/* special tokens to match in text, longest first (special.c) */
	uint32_t *special;
	uint32_t n_special;
	uint8_t *strip;		      /* per token: STRIP_LEFT, STRIP_RIGHT */
	uint32_t *sp_start, *sp_list; /* ranks by their first two bytes */
	int32_t bos, eos, eot, eom, unk, pad;
	bool add_bos, add_eos, add_space_prefix, ignore_merges;
	int32_t eog_ids[8];
	uint32_t n_eog;
};

int vocab_load(struct edgeq_vocab *v, const struct edgeq_gguf *g,
	       struct edgeq_error *err);
void vocab_free(struct edgeq_vocab *v);
int32_t vocab_find(const struct edgeq_vocab *v, const char *s, size_t len);
int vocab_tokenize(const struct edgeq_vocab *v, const char *text, size_t len,
		   bool add_bos, bool parse_special, int32_t *toks, size_t max,
		   size_t *n_out);
int vocab_piece(const struct edgeq_vocab *v, int32_t tok, char *buf,
		size_t len);
bool vocab_is_eog(const struct edgeq_vocab *v, int32_t tok);

#endif /* EDGEQ_MODEL_VOCAB_H */
