// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * SentencePiece-style BPE (the "llama" tokenizer in GGUF): spaces become
 * U+2581, the text is split into UTF-8 characters, and the adjacent pair
 * whose concatenation is a piece with the highest score is merged until no
 * pair is a piece (ties: leftmost first). Symbols that are not pieces fall
 * back to <0xXX> byte tokens, else <unk>.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenize.h"

uint32_t utf8_get(const char *s, size_t n, size_t *len)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t cp;
	size_t l, i;

	if (u[0] < 0x80) {
		*len = 1;
		return u[0];
	}
	if ((u[0] & 0xe0) == 0xc0) {
		l = 2;
		cp = u[0] & 0x1f;
	} else if ((u[0] & 0xf0) == 0xe0) {
		l = 3;
		cp = u[0] & 0x0f;
	} else if ((u[0] & 0xf8) == 0xf0) {
		l = 4;
		cp = u[0] & 0x07;
	} else {
		goto bad;
	}
	if (l > n)
		goto bad;
	for (i = 1; i < l; i++) {
		if ((u[i] & 0xc0) != 0x80)
			goto bad;
		cp = cp << 6 | (u[i] & 0x3f);
	}
	*len = l;
	return cp;
bad:
	*len = 1;
	return 0x110000 + u[0]; /* not a code point: classified as "other" */
}

size_t utf8_put(uint32_t cp, char *o)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

struct sym {
	size_t start, len;
	int prev, next;
};

struct bigram {
	int left, right;
	float score;
	size_t size;
};

/* Max-heap: higher score first, then the leftmost. */
static bool bg_before(const struct bigram *a, const struct bigram *b)
{
	return a->score > b->score ||
	       (a->score == b->score && a->left < b->left);
}

static void heap_push(struct bigram *h, size_t *n, struct bigram b)
{
	size_t i = (*n)++;

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!bg_before(&b, &h[p]))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = b;
}

static struct bigram heap_pop(struct bigram *h, size_t *n)
{
	struct bigram top = h[0], last = h[--(*n)];
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const struct bigram *best = &last;

		if (l < *n && bg_before(&h[l], best)) {
			m = l;
			best = &h[l];
		}
		if (r < *n && bg_before(&h[r], best))
			m = r;
		if (m == i)
			break;
		h[i] = h[m];
		i = m;
	}
	if (*n)
		h[i] = last;
	return top;
}

static void try_pair(const struct edgeq_vocab *v, const char *t, struct sym *s,
		     int l, int r, struct bigram *h, size_t *n)
{
	int32_t id;

	if (l < 0 || r < 0)
		return;
	id = vocab_find(v, t + s[l].start, s[l].len + s[r].len);
	if (id < 0)
		return;
	heap_push(h, n,
		  (struct bigram){ l, r, v->score[id], s[l].len + s[r].len });
}

static const size_t u8len[16] = {
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4
};

int spm_tokenize(const struct edgeq_vocab *v, const char *text, size_t len,
		 bool space_prefix, struct tok_out *o)
{
	size_t cap = len * 3 + 3, n = 0, i, nh = 0;
	struct bigram *h = NULL;
	struct sym *s = NULL;
	char *t;
	int ns = 0, k;

	t = malloc(cap);
	if (!t)
		return -ENOMEM;
	if (space_prefix) {
		memcpy(t, "\xe2\x96\x81", 3);
		n = 3;
	}
	for (i = 0; i < len; i++) {
		if (text[i] == ' ') {
			memcpy(t + n, "\xe2\x96\x81", 3);
			n += 3;
		} else {
			t[n++] = text[i];
		}
	}
	s = malloc((n + 1) * sizeof(*s));
	h = malloc((3 * n + 1) * sizeof(*h));
	if (!s || !h) {
		free(t);
		free(s);
		free(h);
		return -ENOMEM;
	}
	for (i = 0; i < n; ns++) {
		size_t l = u8len[(unsigned char)t[i] >> 4], j;

		if (l > n - i)
			l = n - i;
		/* invalid UTF-8: a character never swallows a following
		 * non-continuation byte (a space marker, say) */
		for (j = 1; j < l; j++)
			if (((unsigned char)t[i + j] & 0xc0) != 0x80)
				l = j;
		s[ns] = (struct sym){ i, l, ns - 1, -1 };
		if (ns)
			s[ns - 1].next = ns;
		i += l;
	}
	for (k = 1; k < ns; k++)
		try_pair(v, t, s, k - 1, k, h, &nh);
	while (nh) {
		struct bigram b = heap_pop(h, &nh);
		struct sym *l = &s[b.left], *r = &s[b.right];

		if (!l->len || !r->len || l->len + r->len != b.size)
			continue;
		l->len += r->len;
		r->len = 0;
		l->next = r->next;
		if (r->next >= 0)
			s[r->next].prev = b.left;
		try_pair(v, t, s, l->prev, b.left, h, &nh);
		try_pair(v, t, s, b.left, l->next, h, &nh);
	}
	for (k = ns ? 0 : -1; k >= 0; k = s[k].next) {
		int32_t id = vocab_find(v, t + s[k].start, s[k].len);

		if (id >= 0) {
			tok_push(o, id);
			continue;
		}
		for (i = 0; i < s[k].len; i++) {
			int32_t b =
				v->byte_tok[(unsigned char)t[s[k].start + i]];

			if (b < 0)
				b = v->unk;
			if (b >= 0)
				tok_push(o, b);
		}
	}
	free(t);
	free(s);
	free(h);
	return 0;
}
