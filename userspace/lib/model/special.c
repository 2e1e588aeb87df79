// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Special tokens in text, partitioned out before the tokenizer runs, as
 * llama.cpp does it: the control, user-defined and unknown tokens are taken
 * longest first, and each one in turn claims its occurrences, left to right,
 * in whatever text no earlier token claimed (so a longer token wins over a
 * shorter one that starts before it). User-defined tokens are always
 * matched; control and unknown ones only with parse_special. A token may
 * strip the whitespace next to it (llama.cpp's per-model attributes: every
 * special of a Phi-3 model strips to its right, <mask> of jina-v2 and
 * [MASK] of ModernBERT to their left).
 *
 * The same result without llama.cpp's token-by-token scans of the text:
 * candidates are found in one pass through an index on the tokens' first two
 * bytes, then resolved in priority order.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenize.h"
#include "model/vocab.h"

#define N_BUCKETS (65536 + 256) /* first two bytes; one-byte tokens */

static size_t bucket_of(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	return len == 1 ? (size_t)65536 + u[0] : (size_t)u[0] << 8 | u[1];
}

static int cmp_special(const void *a, const void *b, void *arg)
{
	const struct edgeq_vocab *v = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (v->len[x] != v->len[y])
		return v->len[x] > v->len[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static bool contains_ci(const struct edgeq_gguf *g, const char *key,
			const char *needle)
{
	struct edgeq_gguf_str s;
	size_t n = strlen(needle), i, k;

	if (edgeq_gguf_get_str(g, key, &s, NULL))
		return false;
	for (i = 0; i + n <= s.len; i++) {
		for (k = 0; k < n; k++)
			if (tolower((unsigned char)s.ptr[i + k]) != needle[k])
				break;
		if (k == n)
			return true;
	}
	return false;
}

static void set_strip(struct edgeq_vocab *v, const char *tok, uint8_t attr,
		      bool on)
{
	int32_t id = vocab_find(v, tok, strlen(tok));

	if (id < 0)
		return;
	if (on)
		v->strip[id] |= attr;
	else
		v->strip[id] &= (uint8_t)~attr;
}

static void strip_attrs(struct edgeq_vocab *v, const struct edgeq_gguf *g)
{
	uint32_t i;

	if (contains_ci(g, "tokenizer.ggml.pre", "jina-v2-de") ||
	    contains_ci(g, "tokenizer.ggml.pre", "jina-v2-es") ||
	    contains_ci(g, "tokenizer.ggml.pre", "jina-v2-code") ||
	    contains_ci(g, "general.architecture", "nomic-bert-moe") ||
	    contains_ci(g, "general.architecture", "jina-bert-v3")) {
		set_strip(v, "<mask>", STRIP_LEFT, true);
	} else if (contains_ci(g, "general.name", "phi-3") ||
		   contains_ci(g, "general.name", "phi3")) {
		for (i = 0; i < v->n_special; i++)
			v->strip[v->special[i]] |= STRIP_RIGHT;
		set_strip(v, "</s>", STRIP_RIGHT, true);
		set_strip(v, "<unk>", STRIP_RIGHT, false);
		set_strip(v, "<s>", STRIP_RIGHT, false);
		set_strip(v, "<|endoftext|>", STRIP_RIGHT, false);
	} else if (contains_ci(g, "general.name", "modern-bert")) {
		set_strip(v, "[MASK]", STRIP_LEFT, true);
	}
}

int special_index(struct edgeq_vocab *v, const struct edgeq_gguf *g)
{
	uint32_t i, *fill;

	for (i = 0; i < v->n; i++)
		if ((v->ttype[i] == TT_CONTROL || v->ttype[i] == TT_USER ||
		     v->ttype[i] == TT_UNKNOWN) &&
		    v->len[i] > 0)
			v->special[v->n_special++] = i;
	qsort_r(v->special, v->n_special, sizeof(*v->special), cmp_special, v);
	v->strip = calloc(v->n, 1);
	v->sp_start = calloc(N_BUCKETS + 1, sizeof(*v->sp_start));
	v->sp_list = malloc((v->n_special + 1) * sizeof(*v->sp_list));
	fill = calloc(N_BUCKETS, sizeof(*fill));
	if (!v->strip || !v->sp_start || !v->sp_list || !fill) {
		free(fill);
		return -ENOMEM;
	}
	strip_attrs(v, g);
	/* buckets hold ranks in priority order */
	for (i = 0; i < v->n_special; i++) {
		uint32_t id = v->special[i];

		v->sp_start[bucket_of(v->text[id], v->len[id]) + 1]++;
	}
	for (i = 0; i < N_BUCKETS; i++)
		v->sp_start[i + 1] += v->sp_start[i];
	for (i = 0; i < v->n_special; i++) {
		uint32_t id = v->special[i];
		size_t b = bucket_of(v->text[id], v->len[id]);

		v->sp_list[v->sp_start[b] + fill[b]++] = i;
	}
	free(fill);
	return 0;
}

struct cand {
	uint32_t rank;
	size_t pos;
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int push_cand(struct cand **c, size_t *n, size_t *cap, uint32_t rank,
		     size_t pos)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct cand *nv = realloc(*c, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*c = nv;
		*cap = nc;
	}
	(*c)[*n].rank = rank;
	(*c)[*n].pos = pos;
	(*n)++;
	return 0;
}

static int scan_bucket(const struct edgeq_vocab *v, size_t b, const char *text,
		       size_t len, size_t i, bool parse_special,
		       struct cand **c, size_t *n, size_t *cap)
{
	uint32_t k;
	int ret;

	for (k = v->sp_start[b]; k < v->sp_start[b + 1]; k++) {
		uint32_t r = v->sp_list[k], id = v->special[r];

		if (!parse_special && v->ttype[id] != TT_USER)
			continue;
		if (v->len[id] > len - i ||
		    memcmp(v->text[id], text + i, v->len[id]))
			continue;
		if ((ret = push_cand(c, n, cap, r, i)))
			return ret;
	}
	return 0;
}

int special_partition(const struct edgeq_vocab *v, const char *text, size_t len,
		      bool parse_special, uint8_t *mark, int32_t *tok_at)
{
	struct cand *c = NULL;
	size_t n = 0, cap = 0, i, k, l;
	int ret = 0;

	memset(mark, SP_TEXT, len);
	if (!v->n_special)
		return 0;
	for (i = 0; i < len && !ret; i++) {
		if (i + 1 < len)
			ret = scan_bucket(v, bucket_of(text + i, 2), text, len,
					  i, parse_special, &c, &n, &cap);
		if (!ret)
			ret = scan_bucket(v, bucket_of(text + i, 1), text, len,
					  i, parse_special, &c, &n, &cap);
	}
	if (ret)
		goto out;
	if (n)
		qsort(c, n, sizeof(*c), cmp_cand);
	for (k = 0; k < n; k++) {
		uint32_t id = v->special[c[k].rank];
		size_t p = c[k].pos, j;

		l = v->len[id];
		for (j = p; j < p + l && mark[j] == SP_TEXT; j++)
			;
		if (j < p + l)
			continue; /* in text an earlier token took */
		memset(mark + p, SP_TOKEN, l);
		mark[p] = SP_START;
		tok_at[p] = (int32_t)id;
		if (v->strip[id] & STRIP_LEFT)
			for (j = p; j > 0 && mark[j - 1] == SP_TEXT &&
				    isspace((unsigned char)text[j - 1]);
			     j--)
				mark[j - 1] = SP_GONE;
		if (v->strip[id] & STRIP_RIGHT)
			for (j = p + l; j < len && mark[j] == SP_TEXT &&
					isspace((unsigned char)text[j]);
			     j++)
				mark[j] = SP_GONE;
	}
out:
	free(c);
	return ret;
}
