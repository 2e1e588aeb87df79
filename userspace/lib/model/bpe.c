// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Byte-level BPE (the "gpt2" tokenizer in GGUF): the text is split into
 * words by a pre-tokenizer, each word's bytes are mapped to printable code
 * points (GPT-2's byte map), and ranked merges are applied lowest rank first.
 *
 * The pre-tokenizers are the regular expressions of the reference
 * tokenizers, implemented by hand:
 *   llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *           ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *   qwen2:  the same with \p{N} (one digit per word)
 *   gpt2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|
 *           \s+(?!\S)|\s+
 *   smollm: every \p{N} alone, then gpt2 on the rest
 * Unicode classes come from a compact table (see cp_class): exact for
 * ASCII and Latin-1, by block for the rest.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenize.h"

enum cclass { C_OTHER, C_LETTER, C_NUMBER, C_SPACE };

static enum cclass cp_class(uint32_t c)
{
	if (c < 0x80) {
		if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
			return C_LETTER;
		if (c >= '0' && c <= '9')
			return C_NUMBER;
		if (c == ' ' || (c >= 9 && c <= 13))
			return C_SPACE;
		return C_OTHER;
	}
	if (c >= 0x110000)
		return C_OTHER; /* invalid UTF-8 byte */
	if (c == 0x85 || c == 0xa0 || c == 0x1680 ||
	    (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
	    c == 0x202f || c == 0x205f || c == 0x3000)
		return C_SPACE;
	if (c < 0x100) {
		if (c == 0xaa || c == 0xb5 || c == 0xba)
			return C_LETTER;
		if (c == 0xb2 || c == 0xb3 || c == 0xb9 ||
		    (c >= 0xbc && c <= 0xbe))
			return C_NUMBER;
		if (c < 0xc0 || c == 0xd7 || c == 0xf7)
			return C_OTHER;
		return C_LETTER;
	}
	if ((c >= 0x660 && c <= 0x669) || (c >= 0x6f0 && c <= 0x6f9) ||
	    (c >= 0x966 && c <= 0x96f) || (c >= 0x2070 && c <= 0x2079) ||
	    (c >= 0x2080 && c <= 0x2089) || (c >= 0x2150 && c <= 0x2189) ||
	    (c >= 0x2460 && c <= 0x249b) || (c >= 0xff10 && c <= 0xff19))
		return C_NUMBER;
	if ((c >= 0x300 && c <= 0x36f) ||   /* combining marks */
	    (c >= 0x2000 && c <= 0x2bff) || /* punctuation, symbols, arrows */
	    (c >= 0x3000 && c <= 0x303f) || /* CJK punctuation */
	    (c >= 0xe000 && c <= 0xf8ff) || /* private use */
	    (c >= 0xfe30 && c <= 0xfe4f) || (c >= 0xff00 && c <= 0xff0f) ||
	    (c >= 0xff1a && c <= 0xff20) || (c >= 0xff3b && c <= 0xff40) ||
	    (c >= 0xff5b && c <= 0xff65) || (c >= 0x1f000 && c <= 0x1faff))
		return C_OTHER;
	return C_LETTER;
}

struct cps {
	const char *t;
	size_t *off; /* byte offset of each code point, n + 1 entries */
	uint8_t *cl;
	uint32_t *cp;
	size_t n;
};

static bool is_nl(const struct cps *c, size_t i)
{
	return c->cp[i] == '\r' || c->cp[i] == '\n';
}

static size_t lower(uint32_t c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* 's 't 're 've 'm 'll 'd at i; returns the length in code points or 0. */
static size_t contraction(const struct cps *c, size_t i, size_t end, bool icase)
{
	uint32_t a, b;

	if (c->cp[i] != '\'' || i + 1 >= end)
		return 0;
	a = icase ? lower(c->cp[i + 1]) : c->cp[i + 1];
	b = i + 2 < end ? (icase ? lower(c->cp[i + 2]) : c->cp[i + 2]) : 0;
	if (a == 's' || a == 't')
		return 2;
	if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e'))
		return 3;
	if (a == 'm')
		return 2;
	if (a == 'l' && b == 'l')
		return 3;
	if (a == 'd')
		return 2;
	return 0;
}

/* Whitespace rules shared by all: \s+(?!\S)|\s+ (and llama3's \s*[\r\n]+). */
static size_t spaces(const struct cps *c, size_t i, size_t end, bool nl_rule)
{
	size_t j = i, k, last_nl = SIZE_MAX;

	while (j < end && c->cl[j] == C_SPACE) {
		if (is_nl(c, j))
			last_nl = j;
		j++;
	}
	if (nl_rule && last_nl != SIZE_MAX)
		return last_nl + 1 - i;
	if (j == end)
		return j - i;
	k = j - i;
	if (k > 1)
		return k - 1; /* leave one space for the next word */
	return k;
}

static size_t word_llama3(const struct cps *c, size_t i, size_t end,
			  size_t max_digits)
{
	size_t j, k;

	k = contraction(c, i, end, true);
	if (k)
		return k;
	j = i;
	if (c->cl[j] != C_LETTER && c->cl[j] != C_NUMBER && !is_nl(c, j) &&
	    j + 1 < end && c->cl[j + 1] == C_LETTER)
		j++;
	if (c->cl[j] == C_LETTER) {
		while (j < end && c->cl[j] == C_LETTER)
			j++;
		return j - i;
	}
	if (c->cl[i] == C_NUMBER) {
		for (j = i;
		     j < end && j - i < max_digits && c->cl[j] == C_NUMBER; j++)
			;
		return j - i;
	}
	j = i;
	if (c->cp[j] == ' ' && j + 1 < end && c->cl[j + 1] == C_OTHER)
		j++;
	if (c->cl[j] == C_OTHER) {
		while (j < end && c->cl[j] == C_OTHER)
			j++;
		while (j < end && is_nl(c, j))
			j++;
		return j - i;
	}
	return spaces(c, i, end, true);
}

static size_t word_gpt2(const struct cps *c, size_t i, size_t end)
{
	size_t j, k;
	enum cclass want;

	k = contraction(c, i, end, false);
	if (k)
		return k;
	j = i;
	if (c->cp[j] == ' ' && j + 1 < end && c->cl[j + 1] != C_SPACE)
		j++;
	want = c->cl[j];
	if (want != C_SPACE) {
		while (j < end && c->cl[j] == want)
			j++;
		return j - i;
	}
	return spaces(c, i, end, false);
}

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
	struct cps c = { text, NULL, NULL, NULL, 0 };
	struct bpe_scratch s = { 0 };
	size_t i, l, seg, end;
	int ret = -ENOMEM;

	if (len > INT32_MAX / 4)
		return -E2BIG;

	c.off = malloc((len + 1) * sizeof(*c.off));
	c.cl = malloc(len + 1);
	c.cp = malloc((len + 1) * sizeof(*c.cp));
	s.ids = malloc((len + 1) * sizeof(*s.ids));
	s.prev = malloc((len + 1) * sizeof(*s.prev));
	s.next = malloc((len + 1) * sizeof(*s.next));
	s.heap = malloc((3 * len + 3) * sizeof(*s.heap));
	s.buf = malloc(len * 2 + 4);
	if (!c.off || !c.cl || !c.cp || !s.ids || !s.prev || !s.next ||
	    !s.heap || !s.buf)
		goto out;
	for (i = 0; i < len; i += l) {
		c.cp[c.n] = utf8_get(text + i, len - i, &l);
		c.cl[c.n] = (uint8_t)cp_class(c.cp[c.n]);
		c.off[c.n++] = i;
	}
	c.off[c.n] = len;
	for (seg = 0; seg < c.n; seg = end) {
		/* smollm: every digit is a word of its own first. */
		end = c.n;
		if (v->pre == PRE_SMOLLM) {
			if (c.cl[seg] == C_NUMBER) {
				end = seg + 1;
			} else {
				for (end = seg;
				     end < c.n && c.cl[end] != C_NUMBER; end++)
					;
			}
		}
		for (i = seg; i < end; i += l) {
			switch (v->pre) {
			case PRE_LLAMA3:
				l = word_llama3(&c, i, end, 3);
				break;
			case PRE_QWEN2:
				l = word_llama3(&c, i, end, 1);
				break;
			default:
				l = word_gpt2(&c, i, end);
				break;
			}
			if (!l)
				l = 1;
			bpe_word(v, text + c.off[i], c.off[i + l] - c.off[i],
				 &s, o);
		}
	}
	ret = 0;
out:
	free(c.off);
	free(c.cl);
	free(c.cp);
	free(s.ids);
	free(s.prev);
	free(s.next);
	free(s.heap);
	free(s.buf);
	return ret;
}
