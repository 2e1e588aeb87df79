// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Sampling, in llama.cpp's default order: repetition penalty -> top-k ->
 * top-p -> min-p -> temperature -> draw from a seeded RNG (splitmix64).
 * temp <= 0 is greedy (argmax, lowest id on ties). Scratch buffers grow
 * with the vocabulary once and are reused for every token.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/engine.h>

#include "model/model.h"

struct cand {
	float logit;
	int32_t id;
};

struct edgeq_sampler {
	struct edgeq_sampler_params p;
	uint64_t rng;
	struct cand *c;
	float *prob;
	uint32_t cap;
};

void edgeq_sampler_params_init(struct edgeq_sampler_params *p)
{
	memset(p, 0, sizeof(*p));
	p->temp = 0.8f;
	p->top_k = 40;
	p->top_p = 0.95f;
	p->min_p = 0.05f;
	p->repeat_penalty = 1.0f;
	p->repeat_last_n = 64;
	p->seed = 0x5eed;
}

int edgeq_sampler_new(const struct edgeq_sampler_params *p,
		      struct edgeq_sampler **out)
{
	struct edgeq_sampler *s;

	if (!(p->temp >= 0) || p->top_k < 0 || !(p->top_p > 0) ||
	    p->top_p > 1 || !(p->min_p >= 0) || p->min_p > 1 ||
	    !(p->repeat_penalty > 0) || p->repeat_last_n < 0)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->p = *p;
	s->rng = p->seed;
	*out = s;
	return 0;
}

void edgeq_sampler_free(struct edgeq_sampler *s)
{
	if (!s)
		return;
	free(s->c);
	free(s->prob);
	free(s);
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->logit != y->logit)
		return x->logit > y->logit ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* a after b in the sampling order (a worse candidate) */
static bool worse(const struct cand *a, const struct cand *b)
{
	return cmp_cand(a, b) > 0;
}

/* Restore the heap below @i: c[0] is the worst of c[0..k). */
static void sift_down(struct cand *c, size_t k, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, w = i;
		struct cand t;

		if (l < k && worse(&c[l], &c[w]))
			w = l;
		if (r < k && worse(&c[r], &c[w]))
			w = r;
		if (w == i)
			return;
		t = c[i], c[i] = c[w], c[w] = t;
		i = w;
	}
}

/*
 * The @k best of c[0..n) (k < n), sorted, into c[0..k); returns k. The
 * order is total (logit, then id), so this is the full sort's first k:
 * a heap of the k best seen so far, whose root is the worst of them, takes
 * each later candidate only when it beats the root. A full sort of a
 * 32000-token vocabulary per token was a quarter of a 1B model's decode.
 */
static size_t top_k(struct cand *c, size_t n, size_t k)
{
	size_t i;

	for (i = k / 2; i-- > 0;)
		sift_down(c, k, i);
	for (i = k; i < n; i++)
		if (worse(&c[0], &c[i])) {
			c[0] = c[i];
			sift_down(c, k, 0);
		}
	qsort(c, k, sizeof(*c), cmp_cand);
	return k;
}

static bool seen(const int32_t *h, size_t n, size_t upto, int32_t id)
{
	size_t i;

	for (i = n - upto; i < n; i++)
		if (h[i] == id)
			return true;
	return false;
}

/*
 * The distribution to draw from: s->c[0..*n) with weights s->prob[0..*n)
 * (summing to *sum). Greedy returns the argmax id instead (>= 0) and leaves
 * *n at 0.
 */
static int32_t distribution(struct edgeq_sampler *s, const float *logits,
			    uint32_t n_vocab, const int32_t *history,
			    size_t n_history, size_t *n_out, float *sum_out)
{
	const struct edgeq_sampler_params *p = &s->p;
	size_t last = n_history, i, n = n_vocab;
	float mx, sum, cum;

	*n_out = 0;
	if (!n_vocab)
		return -EINVAL;
	if (n_vocab > s->cap) {
		struct cand *c = realloc(s->c, n_vocab * sizeof(*c));
		float *pr;

		if (!c)
			return -ENOMEM;
		s->c = c;
		pr = realloc(s->prob, n_vocab * sizeof(*pr));
		if (!pr)
			return -ENOMEM;
		s->prob = pr;
		s->cap = n_vocab;
	}
	for (i = 0; i < n; i++) {
		s->c[i].logit = isnan(logits[i]) ? -INFINITY : logits[i];
		s->c[i].id = (int32_t)i;
	}
	if (p->repeat_penalty != 1.0f && history) {
		if (p->repeat_last_n > 0 && last > (size_t)p->repeat_last_n)
			last = (size_t)p->repeat_last_n;
		for (i = n_history - last; i < n_history; i++) {
			int32_t t = history[i];

			if (t < 0 || (uint32_t)t >= n_vocab ||
			    seen(history, i, i - (n_history - last), t))
				continue; /* penalize each token once */
			if (s->c[t].logit > 0)
				s->c[t].logit /= p->repeat_penalty;
			else
				s->c[t].logit *= p->repeat_penalty;
		}
	}
	*n_out = 0;
	if (p->temp <= 0) {
		size_t best = 0;

		for (i = 1; i < n; i++)
			if (s->c[i].logit > s->c[best].logit)
				best = i;
		return (int32_t)best;
	}
	if (p->top_k > 0 && (size_t)p->top_k < n) {
		n = top_k(s->c, n, (size_t)p->top_k);
	} else {
		qsort(s->c, n, sizeof(*s->c), cmp_cand);
	}
	/* probabilities at temperature 1 for top-p and min-p */
	mx = s->c[0].logit;
	for (i = 0, sum = 0; i < n; i++) {
		s->prob[i] = expf(s->c[i].logit - mx);
		sum += s->prob[i];
	}
	if (p->top_p < 1.0f) {
		for (i = 0, cum = 0; i < n; i++) {
			cum += s->prob[i] / sum;
			if (cum >= p->top_p) {
				n = i + 1;
				break;
			}
		}
	}
	if (p->min_p > 0) {
		for (i = 1; i < n; i++)
			if (s->prob[i] < p->min_p * s->prob[0]) {
				n = i;
				break;
			}
	}
	for (i = 0, sum = 0; i < n; i++) {
		s->prob[i] = expf((s->c[i].logit - mx) / p->temp);
		sum += s->prob[i];
	}
	*n_out = n;
	*sum_out = sum;
	return -1;
}

static float uniform(struct edgeq_sampler *s)
{
	return (float)((splitmix64(&s->rng) >> 40) * (1.0 / 16777216.0));
}

/* Draw from s->c/s->prob[0..n) of total @sum, skipping id @skip. */
static int32_t draw(struct edgeq_sampler *s, size_t n, float sum, int32_t skip)
{
	float r = uniform(s) * sum, cum = 0;
	size_t i, lastv = 0;

	for (i = 0; i < n; i++) {
		if (s->c[i].id == skip)
			continue;
		cum += s->prob[i];
		lastv = i;
		if (r < cum)
			return s->c[i].id;
	}
	return s->c[lastv].id;
}

int32_t edgeq_sampler_sample(struct edgeq_sampler *s, const float *logits,
			     uint32_t n_vocab, const int32_t *history,
			     size_t n_history)
{
	size_t n;
	float sum;
	int32_t best;

	if (!n_vocab)
		return -EINVAL;
	best = distribution(s, logits, n_vocab, history, n_history, &n, &sum);
	if (best < 0 && !n)
		return best; /* an error */
	return n ? draw(s, n, sum, -1) : best;
}

int32_t sampler_verify(struct edgeq_sampler *s, const float *logits,
		       uint32_t n_vocab, const int32_t *history,
		       size_t n_history, int32_t draft, bool *accepted)
{
	size_t n, i;
	float sum, pd = 0;
	int32_t best;

	*accepted = false;
	if (!n_vocab)
		return -EINVAL;
	best = distribution(s, logits, n_vocab, history, n_history, &n, &sum);
	if (!n) {
		*accepted = best == draft; /* greedy: the target's argmax */
		return best;
	}
	/* the draft proposes one token with certainty (q = 1 at draft):
	 * accept with min(1, p/q) = p(draft), else draw from the residual
	 * max(0, p - q), which is p without the draft, renormalized */
	for (i = 0; i < n; i++)
		if (s->c[i].id == draft)
			pd = s->prob[i];
	if (pd > 0 && uniform(s) * sum < pd) {
		*accepted = true;
		return draft;
	}
	if (pd >= sum)
		return draft; /* nothing else has mass (cannot reject) */
	return draw(s, n, sum - pd, pd > 0 ? draft : -1);
}
