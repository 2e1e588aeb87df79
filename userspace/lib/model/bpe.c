// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Byte-level BPE (the "gpt2" tokenizer in GGUF): the pre-tokenizer that
 * tokenizer.ggml.pre names splits the text into words (pretok.c), each
 * word's bytes are mapped to printable code points (GPT-2's byte map), and
 * ranked merges are applied lowest rank first.
 *
 * As in llama.cpp, the text is read as code points first: a byte that is
 * not valid UTF-8 becomes U+FFFD, whose bytes are what gets tokenized.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/pretok.h"
#include "model/tokenize.h"
#include "model/unicode.h"

/*
 * Merge state of one word: a linked list of symbols and a min-heap of
 * candidate merges (rank, then leftmost), so a word of n bytes costs
 * O(n log n) however long it is. A popped candidate is stale when either
 * side has changed since it was pushed.
 */
struct bpe_cand {
	uint32_t rank;
	int left, right;
	int32_t lid, rid, res;
};

struct bpe_scratch {
	int32_t *ids;
	int *prev, *next;
	struct bpe_cand *heap;
	size_t nh;
	char *buf;
};

static bool cand_before(const struct bpe_cand *a, const struct bpe_cand *b)
{
	return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void cand_push(struct bpe_scratch *s, struct bpe_cand c)
{
	size_t i = s->nh++;

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!cand_before(&c, &s->heap[p]))
			break;
		s->heap[i] = s->heap[p];
		i = p;
	}
	s->heap[i] = c;
}

static struct bpe_cand cand_pop(struct bpe_scratch *s)
{
	struct bpe_cand top = s->heap[0], last = s->heap[--s->nh];
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const struct bpe_cand *best = &last;

		if (l < s->nh && cand_before(&s->heap[l], best)) {
			m = l;
			best = &s->heap[l];
		}
		if (r < s->nh && cand_before(&s->heap[r], best))
			m = r;
		if (m == i)
			break;
		s->heap[i] = s->heap[m];
		i = m;
	}
	if (s->nh)
		s->heap[i] = last;
	return top;
}

static void try_merge(const struct edgeq_vocab *v, struct bpe_scratch *s, int l,
		      int r)
{
	struct bpe_cand c;

	if (l < 0 || r < 0 || s->ids[l] < 0 || s->ids[r] < 0)
		return;
	c.res = vocab_merge(v, s->ids[l], s->ids[r], &c.rank);
	if (c.res < 0)
		return;
	c.left = l;
	c.right = r;
	c.lid = s->ids[l];
	c.rid = s->ids[r];
	cand_push(s, c);
}

static int bpe_word(const struct edgeq_vocab *v, const char *w, size_t len,
		    struct bpe_scratch *s, struct tok_out *o)
{
	size_t i, bl = 0;
	int n = (int)len, k;

	for (i = 0; i < len; i++)
		bl += utf8_put(bpe_byte_to_cp((unsigned char)w[i]),
			       s->buf + bl);
	if (v->ignore_merges) {
		int32_t id = vocab_find(v, s->buf, bl);

		if (id >= 0) {
			tok_push(o, id);
			return 0;
		}
	}
	for (k = 0; k < n; k++) {
		s->ids[k] = v->byte_tok[(unsigned char)w[k]];
		s->prev[k] = k - 1;
		s->next[k] = k + 1 < n ? k + 1 : -1;
	}
	s->nh = 0;
	for (k = 0; k + 1 < n; k++)
		try_merge(v, s, k, k + 1);
	while (s->nh) {
		struct bpe_cand c = cand_pop(s);

		if (s->ids[c.left] != c.lid || s->ids[c.right] != c.rid ||
		    s->next[c.left] != c.right)
			continue; /* stale */
		s->ids[c.left] = c.res;
		s->ids[c.right] = -2; /* gone */
		s->next[c.left] = s->next[c.right];
		if (s->next[c.right] >= 0)
			s->prev[s->next[c.right]] = c.left;
		try_merge(v, s, s->prev[c.left], c.left);
		try_merge(v, s, c.left, s->next[c.left]);
	}
	for (k = n ? 0 : -1; k >= 0; k = s->next[k]) {
		if (s->ids[k] >= 0)
			tok_push(o, s->ids[k]);
		else if (v->unk >= 0)
			tok_push(o, v->unk);
	}
	return 0;
}

int bpe_tokenize(const struct edgeq_vocab *v, const char *text, size_t len,
		 struct tok_out *o)
{
	struct bpe_scratch s = { 0 };
	struct pretok_piece *pc = NULL;
	uint32_t *cps = NULL;
	uint8_t *fl = NULL;
	size_t *off = NULL, i, l, n = 0, npc = 0, bl = 0, w = 1;
	char *u = NULL;
	int ret = -ENOMEM;

	if (len > INT32_MAX / 4)
		return -E2BIG;
	cps = malloc((len + 1) * sizeof(*cps));
	fl = malloc(len + 1);
	off = malloc((len + 1) * sizeof(*off));
	u = malloc(len * 3 + 4); /* an invalid byte grows to U+FFFD's 3 */
	if (!cps || !fl || !off || !u)
		goto out;
	for (i = 0; i < len; i += l) {
		uint32_t c = utf8_get(text + i, len - i, &l);

		if (c >= 0x110000)
			c = 0xfffd;
		cps[n] = c;
		fl[n] = ucd_flags(c);
		off[n++] = bl;
		bl += utf8_put(c, u + bl);
	}
	off[n] = bl;
	ret = pretok_split(v->pre, cps, fl, n, &pc, &npc);
	if (ret)
		goto out;
	/* merge scratch for the longest word, not the whole text */
	for (i = 0; i < npc; i++) {
		size_t b = off[pc[i].start + pc[i].len] - off[pc[i].start];

		w = b > w ? b : w;
	}
	ret = -ENOMEM;
	s.ids = malloc((w + 1) * sizeof(*s.ids));
	s.prev = malloc((w + 1) * sizeof(*s.prev));
	s.next = malloc((w + 1) * sizeof(*s.next));
	s.heap = malloc((3 * w + 3) * sizeof(*s.heap));
	s.buf = malloc(w * 2 + 4); /* a byte maps to at most 2 UTF-8 bytes */
	if (!s.ids || !s.prev || !s.next || !s.heap || !s.buf)
		goto out;
	ret = 0;
	for (i = 0; i < npc; i++) {
		size_t a = off[pc[i].start], b = off[pc[i].start + pc[i].len];

		bpe_word(v, u + a, b - a, &s, o);
	}
out:
	free(pc);
	free(cps);
	free(fl);
	free(off);
	free(u);
	free(s.ids);
	free(s.prev);
	free(s.next);
	free(s.heap);
	free(s.buf);
	return ret;
}
