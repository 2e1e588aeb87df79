// SPDX-License-Identifier: GPL-2.0-or-later
/* Sampler: greedy, top-k, top-p, min-p, repetition penalty, seeding. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <edgeq/engine.h>

static struct edgeq_sampler *mk(float temp, int top_k, float top_p, float min_p,
				float rep, uint64_t seed)
{
	struct edgeq_sampler_params p;
	struct edgeq_sampler *s;

	edgeq_sampler_params_init(&p);
	p.temp = temp;
	p.top_k = top_k;
	p.top_p = top_p;
	p.min_p = min_p;
	p.repeat_penalty = rep;
	p.seed = seed;
	assert_int_equal(edgeq_sampler_new(&p, &s), 0);
	return s;
}

static void test_greedy(void **state)
{
	const float l[5] = { 0.5f, 3.0f, -1.0f, 3.0f, NAN };
	struct edgeq_sampler *s = mk(0, 0, 1, 0, 1, 1);

	/* argmax, lowest id on ties, NaN never wins */
	assert_int_equal(edgeq_sampler_sample(s, l, 5, NULL, 0), 1);
	edgeq_sampler_free(s);
}

static void test_top_k_1_and_min_p_1_are_greedy(void **state)
{
	const float l[4] = { 0.1f, 0.2f, 2.0f, 1.9f };
	struct edgeq_sampler *a = mk(1.5f, 1, 1, 0, 1, 7);
	struct edgeq_sampler *b = mk(1.5f, 0, 1, 1.0f, 1, 7);
	int i;

	for (i = 0; i < 200; i++) {
		assert_int_equal(edgeq_sampler_sample(a, l, 4, NULL, 0), 2);
		assert_int_equal(edgeq_sampler_sample(b, l, 4, NULL, 0), 2);
	}
	edgeq_sampler_free(a);
	edgeq_sampler_free(b);
}

static void test_top_p_and_top_k_limit_the_set(void **state)
{
	/* probabilities ~ 0.64, 0.24, 0.09, 0.03 */
	const float l[4] = { 3.0f, 2.0f, 1.0f, 0.0f };
	struct edgeq_sampler *p = mk(1, 0, 0.7f, 0, 1, 3);
	struct edgeq_sampler *k = mk(1, 2, 1, 0, 1, 3);
	int i, seen[4] = { 0 }, seenk[4] = { 0 };

	for (i = 0; i < 2000; i++) {
		seen[edgeq_sampler_sample(p, l, 4, NULL, 0)]++;
		seenk[edgeq_sampler_sample(k, l, 4, NULL, 0)]++;
	}
	/* top-p 0.7 keeps the first two (0.64 < 0.7 <= 0.88) */
	assert_true(seen[0] > 0 && seen[1] > 0);
	assert_int_equal(seen[2] + seen[3], 0);
	assert_true(seenk[0] > seenk[1] && seenk[1] > 0);
	assert_int_equal(seenk[2] + seenk[3], 0);
	edgeq_sampler_free(p);
	edgeq_sampler_free(k);
}

/*
 * Top-k over a large vocabulary with ties, NaN and -inf: the set sampled
 * from is exactly the k best by (logit, lower id), the full sort's first
 * k; and a draw stays within it. A near-infinite temperature spreads the
 * draws over the whole set.
 */
static void test_top_k_is_the_full_sorts_prefix(void **state)
{
	enum { N = 5000, K = 12 };
	static float l[N];
	static int hits[N];
	struct edgeq_sampler *s = mk(1e9f, K, 1, 0, 1, 11);
	uint64_t x = 12345;
	int i, j, best[K], nbest = 0;

	for (i = 0; i < N; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		l[i] = (float)(x % 64) / 8; /* many ties */
	}
	l[17] = NAN;
	l[18] = -INFINITY;
	l[4000] = 7.875f; /* ties with the top value, a late id */
	/* the reference: K times the best remaining (highest, lowest id) */
	for (j = 0; j < K; j++) {
		int b = -1;

		for (i = 0; i < N; i++) {
			int k, taken = 0;

			for (k = 0; k < nbest; k++)
				taken |= best[k] == i;
			if (taken || isnan(l[i]))
				continue;
			if (b < 0 || l[i] > l[b])
				b = i;
		}
		best[nbest++] = b;
	}
	for (i = 0; i < 4000; i++) {
		int32_t t = edgeq_sampler_sample(s, l, N, NULL, 0);

		assert_true(t >= 0 && t < N);
		hits[t]++;
	}
	for (j = 0; j < K; j++) {
		assert_true(hits[best[j]] > 0);
		hits[best[j]] = 0;
	}
	for (i = 0; i < N; i++)
		assert_int_equal(hits[i], 0);
	edgeq_sampler_free(s);
}

static void test_repeat_penalty(void **state)
{
	const float l[3] = { 2.0f, 1.9f, -1.0f };
	const int32_t hist[3] = { 0, 0, 0 };
	struct edgeq_sampler *s = mk(0, 0, 1, 0, 1.2f, 1);

	/* 2.0 / 1.2 < 1.9: the repeated token loses, penalized once only */
	assert_int_equal(edgeq_sampler_sample(s, l, 3, hist, 3), 1);
	assert_int_equal(edgeq_sampler_sample(s, l, 3, hist, 0), 0);
	edgeq_sampler_free(s);
}

static void test_seeded(void **state)
{
	float l[64];
	struct edgeq_sampler *a, *b;
	int i;

	for (i = 0; i < 64; i++)
		l[i] = (float)(i % 7) * 0.3f;
	a = mk(1, 0, 1, 0, 1, 42);
	b = mk(1, 0, 1, 0, 1, 42);
	for (i = 0; i < 100; i++)
		assert_int_equal(edgeq_sampler_sample(a, l, 64, NULL, 0),
				 edgeq_sampler_sample(b, l, 64, NULL, 0));
	edgeq_sampler_free(a);
	edgeq_sampler_free(b);
}

static void test_bad_params(void **state)
{
	struct edgeq_sampler_params p;
	struct edgeq_sampler *s;

	edgeq_sampler_params_init(&p);
	p.temp = -1;
	assert_int_equal(edgeq_sampler_new(&p, &s), -EINVAL);
	edgeq_sampler_params_init(&p);
	p.top_p = 0;
	assert_int_equal(edgeq_sampler_new(&p, &s), -EINVAL);
	edgeq_sampler_params_init(&p);
	p.min_p = 1.5f;
	assert_int_equal(edgeq_sampler_new(&p, &s), -EINVAL);
	edgeq_sampler_params_init(&p);
	p.repeat_penalty = 0;
	assert_int_equal(edgeq_sampler_new(&p, &s), -EINVAL);
	edgeq_sampler_params_init(&p);
	p.top_k = -1;
	assert_int_equal(edgeq_sampler_new(&p, &s), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_greedy),
		cmocka_unit_test(test_top_k_1_and_min_p_1_are_greedy),
		cmocka_unit_test(test_top_p_and_top_k_limit_the_set),
		cmocka_unit_test(test_top_k_is_the_full_sorts_prefix),
		cmocka_unit_test(test_repeat_penalty),
		cmocka_unit_test(test_seeded),
		cmocka_unit_test(test_bad_params),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
