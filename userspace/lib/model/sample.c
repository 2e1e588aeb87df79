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

static bool seen(const int32_t *h, size_t n, size_t upto, int32_t id)
{
	size_t i;

	for (i = n - upto; i < n; i++)
		if (h[i] == id)
			return true;
	return false;
}

int32_t edgeq_sampler_sample(struct edgeq_sampler *s, const float *logits,
			     uint32_t n_vocab, const int32_t *history,
			     size_t n_history)
{
	const struct edgeq_sampler_params *p = &s->p;
	size_t last = n_history, i, n = n_vocab;
	float mx, sum, cum, r;

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
	if (p->temp <= 0) {
		size_t best = 0;

		for (i = 1; i < n; i++)
			if (s->c[i].logit > s->c[best].logit)
				best = i;
		return (int32_t)best;
	}
	qsort(s->c, n, sizeof(*s->c), cmp_cand);
	if (p->top_k > 0 && (size_t)p->top_k < n)
		n = (size_t)p->top_k;
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
	r = (float)((splitmix64(&s->rng) >> 40) * (1.0 / 16777216.0)) * sum;
	for (i = 0, cum = 0; i < n; i++) {
		cum += s->prob[i];
		if (r < cum)
			return s->c[i].id;
	}
	return s->c[n - 1].id;
}
