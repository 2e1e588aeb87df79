// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tokenizer data from GGUF metadata, and the two tokenizers' shared parts:
 * the piece -> id hash, special-token partitioning, ids -> bytes.
 * The algorithms themselves are in spm.c and bpe.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/pretok.h"
#include "model/tokenize.h"
#include "model/vocab.h"

static uint32_t fnv1a(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

int32_t vocab_find(const struct edgeq_vocab *v, const char *s, size_t len)
{
	uint32_t h = fnv1a(s, len) & v->hash_mask, id;

	while ((id = v->hash[h])) {
		id--;
		if (v->len[id] == len && !memcmp(v->text[id], s, len))
			return (int32_t)id;
		h = (h + 1) & v->hash_mask;
	}
	return -1;
}

static int32_t merge_find(const struct edgeq_vocab *v, int32_t a, int32_t b,
			  uint32_t *rank)
{
	uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) &
		     v->merge_mask;

	if (!v->merge_key)
		return -1;
	while (v->merge_key[h] != UINT64_MAX) {
		if (v->merge_key[h] == key) {
			*rank = v->merge_rank[h];
			return (int32_t)v->merge_res[h];
		}
		h = (h + 1) & v->merge_mask;
	}
	return -1;
}

int32_t vocab_merge(const struct edgeq_vocab *v, int32_t a, int32_t b,
		    uint32_t *rank)
{
	return merge_find(v, a, b, rank);
}

static int opt_id(const struct edgeq_gguf *g, const char *key, uint32_t n,
		  int32_t *out, struct edgeq_error *err)
{
	const struct edgeq_gguf_kv *kv;
	uint32_t id;
	int ret = edgeq_gguf_get_u32(g, key, &id, err);

	if (ret == -ENOENT)
		return 0;
	if (ret) {
		/* Some converters write -1 as int32 for "none". */
		int32_t s;

		if (!edgeq_gguf_get_i32(g, key, &s, NULL) && s == -1) {
			*out = -1;
			return 0;
		}
		return ret;
	}
	if (id == UINT32_MAX) {
		*out = -1;
		return 0;
	}
	if (id >= n) {
		kv = edgeq_gguf_find(g, key);
		return edgeq_error_set(
			err, EBADMSG,
			"tokenizer: %s = %u at offset %llu is out of range (vocabulary of %u)",
			key, id, (unsigned long long)kv->val_off, n);
	}
	*out = (int32_t)id;
	return 0;
}

static int opt_bool(const struct edgeq_gguf *g, const char *key, bool *out,
		    struct edgeq_error *err)
{
	int ret = edgeq_gguf_get_bool(g, key, out, err);

	return ret == -ENOENT ? 0 : ret;
}

static int load_merges(struct edgeq_vocab *v, const struct edgeq_gguf *g,
		       struct edgeq_error *err)
{
	const struct edgeq_gguf_kv *kv;
	struct edgeq_gguf_str *m;
	uint64_t i, cap = 2;
	char *buf = NULL;
	size_t bufcap = 0;
	int ret;

	ret = edgeq_gguf_get_arr(g, "tokenizer.ggml.merges", EDGEQ_GGUF_STRING,
				 &kv, err);
	if (ret == -ENOENT)
		return edgeq_error_set(
			err, EBADMSG,
			"tokenizer: gpt2 vocabulary without tokenizer.ggml.merges");
	if (ret)
		return ret;
	m = calloc(kv->arr_n ? kv->arr_n : 1, sizeof(*m));
	while (cap < kv->arr_n * 2 + 2)
		cap <<= 1;
	v->merge_key = malloc(cap * sizeof(*v->merge_key));
	v->merge_rank = malloc(cap * sizeof(*v->merge_rank));
	v->merge_res = malloc(cap * sizeof(*v->merge_res));
	if (!m || !v->merge_key || !v->merge_rank || !v->merge_res) {
		free(m);
		return edgeq_error_set(err, ENOMEM, "tokenizer: out of memory");
	}
	memset(v->merge_key, 0xff, cap * sizeof(*v->merge_key));
	v->merge_mask = (uint32_t)(cap - 1);
	edgeq_gguf_arr_strings(kv, m);
	for (i = 0; i < kv->arr_n; i++) {
		const char *sp = memchr(m[i].ptr + (m[i].len ? 1 : 0), ' ',
					m[i].len ? m[i].len - 1 : 0);
		int32_t a, b, r;
		uint64_t key;
		uint32_t h;
		size_t la, lb;

		if (!sp)
			continue; /* not "left right": ignore, as llama.cpp would fail */
		la = (size_t)(sp - m[i].ptr);
		lb = m[i].len - la - 1;
		a = vocab_find(v, m[i].ptr, la);
		b = vocab_find(v, sp + 1, lb);
		if (la + lb > bufcap) {
			char *nb = realloc(buf, la + lb + 1);

			if (!nb) {
				free(buf);
				free(m);
				return edgeq_error_set(
					err, ENOMEM,
					"tokenizer: out of memory");
			}
			buf = nb;
			bufcap = la + lb;
		}
		memcpy(buf, m[i].ptr, la);
		memcpy(buf + la, sp + 1, lb);
		r = vocab_find(v, buf, la + lb);
		if (a < 0 || b < 0 || r < 0)
			continue;
		key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
		h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) &
		    v->merge_mask;
		while (v->merge_key[h] != UINT64_MAX && v->merge_key[h] != key)
			h = (h + 1) & v->merge_mask;
		if (v->merge_key[h] == key)
			continue; /* the first (best) rank wins */
		v->merge_key[h] = key;
		v->merge_rank[h] = (uint32_t)i;
		v->merge_res[h] = (uint32_t)r;
	}
	free(buf);
	free(m);
	return 0;
}

/*
 * GPT-2's byte <-> printable code point map: printable Latin-1 bytes stand
 * for themselves, the 68 others (0..32, 127..160, 173) for U+0100.. in
 * order.
 */
static bool bpe_printable(uint32_t b)
{
	return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) ||
	       (b >= 174 && b <= 255);
}

uint32_t bpe_byte_to_cp(uint8_t b)
{
	if (bpe_printable(b))
		return b;
	if (b <= 32)
		return 256 + (uint32_t)b;
	if (b <= 160)
		return 256 + 33 + (uint32_t)(b - 127);
	return 256 + 33 + 34; /* 173 */
}

int bpe_cp_to_byte(uint32_t cp)
{
	if (cp < 256)
		return bpe_printable(cp) ? (int)cp : -1;
	if (cp < 256 + 33)
		return (int)(cp - 256);
	if (cp < 256 + 33 + 34)
		return (int)(cp - 256 - 33 + 127);
	return cp == 256 + 33 + 34 ? 173 : -1;
}

static const char *const eog_names[] = {
	"<|eot_id|>",	 "<|im_end|>", "<|end_of_text|>",
	"<|endoftext|>", "<|eom_id|>", "<end_of_turn>",
	"</s>",
};

static int vocab_read(struct edgeq_vocab *v, const struct edgeq_gguf *g,
		      struct edgeq_error *err)
{
	const struct edgeq_gguf_kv *tk, *sk = NULL, *tt = NULL;
	struct edgeq_gguf_str model, pre, *strs = NULL;
	uint32_t i, cap = 2;
	unsigned int pre_flags = 0;
	int ret;

	memset(v, 0, sizeof(*v));
	v->bos = v->eos = v->eot = v->eom = v->unk = v->pad = -1;
	ret = edgeq_gguf_get_str(g, "tokenizer.ggml.model", &model, err);
	if (ret == -ENOENT)
		return edgeq_error_set(
			err, EBADMSG,
			"tokenizer: tokenizer.ggml.model is missing");
	if (ret)
		return ret;
	if (edgeq_gguf_str_eq(model, "llama")) {
		v->kind = VOCAB_SPM;
	} else if (edgeq_gguf_str_eq(model, "gpt2")) {
		v->kind = VOCAB_BPE;
	} else {
		const struct edgeq_gguf_kv *mk =
			edgeq_gguf_find(g, "tokenizer.ggml.model");

		return edgeq_error_set(
			err, EOPNOTSUPP,
			"tokenizer: tokenizer.ggml.model '%.*s' at offset %llu is not supported (llama, gpt2)",
			(int)(model.len > 32 ? 32 : model.len), model.ptr,
			(unsigned long long)mk->val_off);
	}
	if (v->kind == VOCAB_BPE) {
		/* The split rules first: an unknown name is refused by name. */
		ret = edgeq_gguf_get_str(g, "tokenizer.ggml.pre", &pre, err);
		if (ret && ret != -ENOENT)
			return ret;
		ret = pretok_new(ret ? NULL : pre.ptr, ret ? 0 : pre.len,
				 &v->pre, err);
		if (ret)
			return ret;
		pre_flags = pretok_flags(v->pre);
		v->ignore_merges = pre_flags & PRETOK_IGNORE_MERGES;
	}
	ret = edgeq_gguf_get_arr(g, "tokenizer.ggml.tokens", EDGEQ_GGUF_STRING,
				 &tk, err);
	if (ret == -ENOENT)
		return edgeq_error_set(
			err, EBADMSG,
			"tokenizer: tokenizer.ggml.tokens is missing");
	if (ret)
		return ret;
	if (tk->arr_n == 0 || tk->arr_n > (1u << 24))
		return edgeq_error_set(
			err, EBADMSG,
			"tokenizer: tokenizer.ggml.tokens at offset %llu has %llu entries (1..%u)",
			(unsigned long long)tk->val_off,
			(unsigned long long)tk->arr_n, 1u << 24);
	v->n = (uint32_t)tk->arr_n;
	ret = edgeq_gguf_get_arr(g, "tokenizer.ggml.scores", EDGEQ_GGUF_FLOAT32,
				 &sk, err);
	if (ret && ret != -ENOENT)
		return ret;
	if (sk && sk->arr_n != v->n)
		return edgeq_error_set(
			err, EBADMSG,
			"tokenizer: tokenizer.ggml.scores at offset %llu has %llu entries, tokens has %u",
			(unsigned long long)sk->val_off,
			(unsigned long long)sk->arr_n, v->n);
	ret = edgeq_gguf_get_arr(g, "tokenizer.ggml.token_type",
				 EDGEQ_GGUF_INT32, &tt, err);
	if (ret && ret != -ENOENT)
		return ret;
	if (tt && tt->arr_n != v->n)
		return edgeq_error_set(
			err, EBADMSG,
			"tokenizer: tokenizer.ggml.token_type at offset %llu has %llu entries, tokens has %u",
			(unsigned long long)tt->val_off,
			(unsigned long long)tt->arr_n, v->n);

	strs = calloc(v->n, sizeof(*strs));
	v->text = calloc(v->n, sizeof(*v->text));
	v->len = calloc(v->n, sizeof(*v->len));
	v->score = calloc(v->n, sizeof(*v->score));
	v->ttype = calloc(v->n, sizeof(*v->ttype));
	while (cap < v->n * 2u)
		cap <<= 1;
	v->hash = calloc(cap, sizeof(*v->hash));
	v->special = calloc(v->n, sizeof(*v->special));
	if (!strs || !v->text || !v->len || !v->score || !v->ttype ||
	    !v->hash || !v->special) {
		ret = edgeq_error_set(err, ENOMEM, "tokenizer: out of memory");
		goto fail;
	}
	v->hash_mask = cap - 1;
	edgeq_gguf_arr_strings(tk, strs);
	for (i = 0; i < v->n; i++) {
		uint32_t h;

		if (strs[i].len > 4096) {
			ret = edgeq_error_set(
				err, EBADMSG,
				"tokenizer: token %u in tokenizer.ggml.tokens (offset %llu) is %llu bytes long (max 4096)",
				i, (unsigned long long)tk->val_off,
				(unsigned long long)strs[i].len);
			goto fail;
		}
		v->text[i] = malloc(strs[i].len + 1);
		if (!v->text[i]) {
			ret = edgeq_error_set(err, ENOMEM,
					      "tokenizer: out of memory");
			goto fail;
		}
		memcpy(v->text[i], strs[i].ptr, strs[i].len);
		v->text[i][strs[i].len] = 0;
		v->len[i] = (uint32_t)strs[i].len;
		v->score[i] = sk ? (float)edgeq_gguf_arr_num(sk, i) : 0.0f;
		if (tt) {
			double t = edgeq_gguf_arr_num(tt, i);

			v->ttype[i] = t >= 0 && t <= 6 ? (uint8_t)t : TT_NORMAL;
		} else {
			v->ttype[i] = TT_NORMAL;
		}
		/* First occurrence wins on duplicate pieces. */
		if (vocab_find(v, v->text[i], v->len[i]) >= 0)
			continue;
		h = fnv1a(v->text[i], v->len[i]) & v->hash_mask;
		while (v->hash[h])
			h = (h + 1) & v->hash_mask;
		v->hash[h] = i + 1;
	}
	free(strs);
	strs = NULL;

	if (v->kind == VOCAB_SPM) {
		v->bos = 1 < v->n ? 1 : -1;
		v->eos = 2 < v->n ? 2 : -1;
		v->unk = 0;
		v->add_bos = true;
		v->add_space_prefix = true;
	} else {
		v->add_bos = pre_flags & PRETOK_ADD_BOS;
	}
	if ((ret = opt_id(g, "tokenizer.ggml.bos_token_id", v->n, &v->bos,
			  err)) ||
	    (ret = opt_id(g, "tokenizer.ggml.eos_token_id", v->n, &v->eos,
			  err)) ||
	    (ret = opt_id(g, "tokenizer.ggml.eot_token_id", v->n, &v->eot,
			  err)) ||
	    (ret = opt_id(g, "tokenizer.ggml.eom_token_id", v->n, &v->eom,
			  err)) ||
	    (ret = opt_id(g, "tokenizer.ggml.unknown_token_id", v->n, &v->unk,
			  err)) ||
	    (ret = opt_id(g, "tokenizer.ggml.padding_token_id", v->n, &v->pad,
			  err)) ||
	    (ret = opt_bool(g, "tokenizer.ggml.add_bos_token", &v->add_bos,
			    err)) ||
	    (ret = opt_bool(g, "tokenizer.ggml.add_eos_token", &v->add_eos,
			    err)) ||
	    (ret = opt_bool(g, "tokenizer.ggml.add_space_prefix",
			    &v->add_space_prefix, err)))
		goto fail;

	for (i = 0; i < 256; i++)
		v->byte_tok[i] = -1;
	if (v->kind == VOCAB_SPM) {
		for (i = 0; i < 256; i++) {
			char b[8];

			snprintf(b, sizeof(b), "<0x%02X>", i);
			v->byte_tok[i] = vocab_find(v, b, 6);
		}
	} else {
		for (i = 0; i < 256; i++) {
			char b[4];
			size_t n = utf8_put(bpe_byte_to_cp((uint8_t)i), b);

			v->byte_tok[i] = vocab_find(v, b, n);
		}
		ret = load_merges(v, g, err);
		if (ret)
			goto fail;
	}

	if (special_index(v, g)) {
		ret = edgeq_error_set(err, ENOMEM, "tokenizer: out of memory");
		goto fail;
	}

	if (v->eos >= 0)
		v->eog_ids[v->n_eog++] = v->eos;
	if (v->eot >= 0 && v->eot != v->eos)
		v->eog_ids[v->n_eog++] = v->eot;
	if (v->eom >= 0 && v->eom != v->eos && v->eom != v->eot)
		v->eog_ids[v->n_eog++] = v->eom;
	for (i = 0; i < sizeof(eog_names) / sizeof(eog_names[0]); i++) {
		int32_t id = vocab_find(v, eog_names[i], strlen(eog_names[i]));

		if (id >= 0 && v->ttype[id] == TT_CONTROL &&
		    !vocab_is_eog(v, id) && v->n_eog < 8)
			v->eog_ids[v->n_eog++] = id;
	}
	return 0;
fail:
	free(strs);
	vocab_free(v);
	return ret;
}

int vocab_load(struct edgeq_vocab *v, const struct edgeq_gguf *g,
	       struct edgeq_error *err)
{
	int ret = vocab_read(v, g, err);

	if (ret)
		vocab_free(v); /* what an early return left */
	return ret;
}

void vocab_free(struct edgeq_vocab *v)
{
	uint32_t i;

	if (v->text)
		for (i = 0; i < v->n; i++)
			free(v->text[i]);
	free(v->text);
	free(v->len);
	free(v->score);
	free(v->ttype);
	free(v->hash);
	free(v->special);
	free(v->strip);
	free(v->sp_start);
	free(v->sp_list);
	free(v->merge_key);
	free(v->merge_rank);
	free(v->merge_res);
	pretok_free(v->pre);
	memset(v, 0, sizeof(*v));
}

bool vocab_is_eog(const struct edgeq_vocab *v, int32_t tok)
{
	uint32_t i;

	for (i = 0; i < v->n_eog; i++)
		if (v->eog_ids[i] == tok)
			return true;
	return false;
}

static int put(char *buf, size_t cap, size_t *o, const char *s, size_t n)
{
	if (*o + n > cap)
		return -ENOSPC;
	memcpy(buf + *o, s, n);
	*o += n;
	return 0;
}

int vocab_piece(const struct edgeq_vocab *v, int32_t tok, char *buf, size_t cap)
{
	const char *t;
	size_t o = 0, i, n;

	if (tok < 0 || (uint32_t)tok >= v->n)
		return -EINVAL;
	t = v->text[tok];
	n = v->len[tok];
	switch (v->ttype[tok]) {
	case TT_CONTROL:
		return 0;
	case TT_USER:
		return put(buf, cap, &o, t, n) ?: (int)o;
	case TT_UNKNOWN:
		if (v->kind == VOCAB_SPM)
			return put(buf, cap, &o, "\xe2\x96\x85", 3) ?: (int)o;
		break;
	case TT_BYTE:
		if (v->kind == VOCAB_SPM && n == 6 && !memcmp(t, "<0x", 3)) {
			char c = (char)strtoul(t + 3, NULL, 16);

			return put(buf, cap, &o, &c, 1) ?: (int)o;
		}
		break;
	}
	if (v->kind == VOCAB_SPM) {
		for (i = 0; i < n;) {
			if (i + 3 <= n && !memcmp(t + i, "\xe2\x96\x81", 3)) {
				if (put(buf, cap, &o, " ", 1))
					return -ENOSPC;
				i += 3;
			} else {
				if (put(buf, cap, &o, t + i, 1))
					return -ENOSPC;
				i++;
			}
		}
		return (int)o;
	}
	for (i = 0; i < n;) {
		size_t l;
		uint32_t cp = utf8_get(t + i, n - i, &l);
		int b = bpe_cp_to_byte(cp);

		if (b >= 0) {
			char c = (char)b;

			if (put(buf, cap, &o, &c, 1))
				return -ENOSPC;
		} else if (put(buf, cap, &o, t + i, l)) {
			return -ENOSPC;
		}
		i += l;
	}
	return (int)o;
}

/* Output collector: counts past @max so the caller learns the size. */
void tok_push(struct tok_out *o, int32_t t)
{
	if (o->n < o->max)
		o->toks[o->n] = t;
	o->n++;
}

static int tokenize_text(const struct edgeq_vocab *v, const char *text,
			 size_t len, bool space_prefix, struct tok_out *o)
{
	if (v->kind == VOCAB_SPM)
		return spm_tokenize(v, text, len,
				    space_prefix && v->add_space_prefix, o);
	return bpe_tokenize(v, text, len, o);
}

int vocab_tokenize(const struct edgeq_vocab *v, const char *text, size_t len,
		   bool add_bos, bool parse_special, int32_t *toks, size_t max,
		   size_t *n_out)
{
	struct tok_out o = { toks, max, 0 };
	bool prev_special = true;
	uint8_t *mark = malloc(len + 1);
	int32_t *tok_at = malloc((len + 1) * sizeof(*tok_at));
	size_t i = 0, j;
	int ret = -ENOMEM;

	if (!mark || !tok_at)
		goto out;
	ret = special_partition(v, text, len, parse_special, mark, tok_at);
	if (ret)
		goto out;
	if (add_bos && v->bos >= 0)
		tok_push(&o, v->bos);
	while (i < len) {
		switch (mark[i]) {
		case SP_START:
			tok_push(&o, tok_at[i]);
			prev_special = true;
			i += v->len[tok_at[i]];
			break;
		case SP_TEXT:
			for (j = i; j < len && mark[j] == SP_TEXT; j++)
				;
			ret = tokenize_text(v, text + i, j - i, prev_special,
					    &o);
			if (ret)
				goto out;
			prev_special = false;
			i = j;
			break;
		default: /* whitespace a token stripped */
			i++;
			break;
		}
	}
	*n_out = o.n;
	ret = o.n > max ? -ENOSPC : 0;
out:
	free(mark);
	free(tok_at);
	return ret;
}
