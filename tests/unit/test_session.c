// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The engine session: text release (stop strings, UTF-8 hold-back), the
 * first-come-first-served wait queue and its bound, cancellation, request
 * validation, and greedy output that does not depend on what else runs in
 * the batch. The model is a tiny synthetic one written by the project's
 * gguf-gen (skipped when it is not built).
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <edgeq/engine.h>
#include <edgeq/session.h>

#include "engine/text.h"

static struct edgeq_model *model;
static char model_path[PATH_MAX];

/* ---- text release, no model */

static size_t rel(const char *p, const char *stop, bool final, bool *stopped)
{
	const char *stops[1] = { stop };

	return eng_text_release(p, strlen(p), stops, stop ? 1 : 0, final,
				stopped);
}

static void test_release_utf8(void **state)
{
	bool st;

	/* a partial sequence at the end waits for the next token */
	assert_int_equal(rel("ab\xc3", NULL, false, &st), 2);
	assert_false(st);
	assert_int_equal(rel("ab\xc3\xa9", NULL, false, &st), 4);
	assert_int_equal(rel("\xe2\x82", NULL, false, &st), 0);
	assert_int_equal(rel("\xe2\x82\xac", NULL, false, &st), 3);
	/* four bytes, three here */
	assert_int_equal(rel("x\xf0\x9f\x98", NULL, false, &st), 1);
	/* invalid bytes are not held (they cannot become valid) */
	assert_int_equal(rel("a\xff", NULL, false, &st), 2);
	/* final releases everything */
	assert_int_equal(rel("ab\xc3", NULL, true, &st), 3);
}

static void test_release_stop(void **state)
{
	bool st;

	/* a suffix that could start the stop string is held */
	assert_int_equal(rel("hello <|im", "<|im_end|>", false, &st), 6);
	assert_false(st);
	assert_int_equal(rel("hello <", "<|im_end|>", false, &st), 6);
	/* the stop string cuts, whatever follows */
	assert_int_equal(rel("hello <|im_end|> more", "<|im_end|>", false, &st),
			 6);
	assert_true(st);
	assert_int_equal(rel("<|im_end|>", "<|im_end|>", true, &st), 0);
	assert_true(st);
	/* not a prefix: released */
	assert_int_equal(rel("hello <|x", "<|im_end|>", false, &st), 9);
	/* a stop string that begins with a multi-byte character: its first
	 * byte alone is held, as is the whole character */
	assert_int_equal(rel("x\xc3", "\xc3\xa9!", false, &st), 1);
	assert_int_equal(rel("x\xc3\xa9", "\xc3\xa9!", false, &st), 1);
	assert_int_equal(rel("x\xc3\xa9?", "\xc3\xa9!", false, &st), 4);
	assert_int_equal(rel("x\xc3\xa9!", "\xc3\xa9!", false, &st), 1);
	assert_true(st);
	/* a held stop prefix that also ends inside a UTF-8 sequence */
	assert_int_equal(
		rel("ab\xe2\x82", "\xe2\x82\xac\xe2\x82\xac", false, &st), 2);
}

/* ---- with a model */

static int setup_model(void **state)
{
	char exe[PATH_MAX], gen[PATH_MAX + 64], cmd[3 * PATH_MAX];
	struct edgeq_model_params mp;
	ssize_t n;
	char *d;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	d = strrchr(exe, '/');
	if (!d)
		return 0;
	*d = '\0'; /* $O/tests/unit */
	snprintf(gen, sizeof(gen), "%s/../../tools/gguf-gen", exe);
	if (access(gen, X_OK))
		return 0;
	snprintf(model_path, sizeof(model_path),
		 "/tmp/edgeq-test-session-%d.gguf", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "'%s' -o '%s' --shape tiny --seed 7 >/dev/null", gen,
		 model_path);
	if (system(cmd))
		return 0;
	edgeq_model_params_init(&mp);
	mp.path = model_path;
	mp.n_threads = 2;
	if (edgeq_model_load(&mp, &model, NULL))
		model = NULL;
	return 0;
}

static int teardown_model(void **state)
{
	edgeq_model_free(model);
	if (model_path[0])
		unlink(model_path);
	return 0;
}

#define NEED_MODEL()                                                        \
	do {                                                                \
		if (!model) {                                               \
			print_message("no model: gguf-gen is not built\n"); \
			skip();                                             \
		}                                                           \
	} while (0)

static struct edgeq_session *mk_session(int slots, int queue, int delay_ms,
					bool sequential)
{
	struct edgeq_session_params p;
	struct edgeq_session *s = NULL;
	struct edgeq_error err = { 0 };

	edgeq_session_params_init(&p);
	p.n_slots = slots;
	p.queue = queue;
	p.ctx.n_ctx = 256;
	p.token_delay_ms = delay_ms;
	p.sequential = sequential;
	assert_int_equal(edgeq_session_new(model, &p, &s, &err), 0);
	return s;
}

static size_t tok(const char *text, int32_t *t, size_t max)
{
	size_t n = 0;

	assert_int_equal(edgeq_tokenize(model, text, true, false, t, max, &n),
			 0);
	return n;
}

static void req_init(struct edgeq_gen_request *rq, const int32_t *t, size_t n,
		     int n_predict)
{
	memset(rq, 0, sizeof(*rq));
	rq->toks = t;
	rq->n_toks = n;
	rq->n_predict = n_predict;
	edgeq_sampler_params_init(&rq->sampling);
	rq->sampling.temp = 0;
}

/* Run @g to its end: all text, all tokens, the finish reason. */
static enum edgeq_finish drain(struct edgeq_gen *g, char *text, size_t cap,
			       int32_t *toks, size_t *n_toks, int *n_events)
{
	struct edgeq_gen_event ev;
	size_t tl = 0, nt = 0;
	int ret, ne = 0;

	do {
		ret = edgeq_gen_next(g, &ev, NULL);
		assert_true(ret >= 0);
		/* every event's text but the last is whole UTF-8 (the
		 * last releases what is left) */
		if (ret == 1)
			assert_int_equal(eng_utf8_complete(ev.text, ev.len),
					 ev.len);
		assert_true(tl + ev.len < cap);
		memcpy(text + tl, ev.text, ev.len);
		tl += ev.len;
		if (toks)
			memcpy(toks + nt, ev.toks, ev.n_toks * sizeof(int32_t));
		nt += ev.n_toks;
		ne++;
	} while (ret == 1);
	text[tl] = '\0';
	if (n_toks)
		*n_toks = nt;
	if (n_events)
		*n_events = ne;
	return ev.finish;
}

static void test_generate_and_stop_string(void **state)
{
	struct edgeq_session *s;
	struct edgeq_gen_request rq;
	struct edgeq_gen *g;
	char full[8192], cut[8192], stop[16];
	int32_t t[64], out[64];
	size_t n, nt, at, sl;
	enum edgeq_finish f;

	NEED_MODEL();
	s = mk_session(1, 4, 0, false);
	n = tok("The quick brown fox", t, 64);
	req_init(&rq, t, n, 24);
	assert_int_equal(edgeq_session_submit(s, &rq, &g, NULL), 0);
	f = drain(g, full, sizeof(full), out, &nt, NULL);
	edgeq_gen_free(g);
	assert_int_equal(f, EDGEQ_FINISH_LENGTH);
	assert_int_equal(nt, 24);
	assert_true(strlen(full) > 8);
	/* a stop string from the middle of the text (likely across a token
	 * boundary): the answer is the text before its first occurrence */
	at = strlen(full) / 3;
	while (at > 0 && ((unsigned char)full[at] & 0xc0) == 0x80)
		at--;
	sl = strlen(full) - at < 5 ? strlen(full) - at : 5;
	memcpy(stop, full + at, sl);
	stop[sl] = '\0';
	rq.stops[0] = stop;
	rq.n_stops = 1;
	assert_int_equal(edgeq_session_submit(s, &rq, &g, NULL), 0);
	f = drain(g, cut, sizeof(cut), NULL, NULL, NULL);
	edgeq_gen_free(g);
	assert_int_equal(f, EDGEQ_FINISH_STOP);
	assert_int_equal(strlen(cut), (size_t)(strstr(full, stop) - full));
	assert_memory_equal(cut, full, strlen(cut));
	edgeq_session_free(s);
}

/* Late requests cannot overtake: on one slot, requests submitted one after
 * the other get their first token in the order they came. */
static void test_fifo(void **state)
{
	struct edgeq_session *s;
	struct edgeq_gen_request rq;
	struct edgeq_gen *g[6];
	struct edgeq_gen_stats st[6];
	uint64_t first[6];
	char text[4096];
	int32_t t[64];
	size_t n;
	int i;

	NEED_MODEL();
	s = mk_session(1, 8, 2, false);
	n = tok("one two three", t, 64);
	req_init(&rq, t, n, 3);
	for (i = 0; i < 6; i++)
		assert_int_equal(edgeq_session_submit(s, &rq, &g[i], NULL), 0);
	/* wait for the last one only: by then all before it are done */
	assert_int_equal(drain(g[5], text, sizeof(text), NULL, NULL, NULL),
			 EDGEQ_FINISH_LENGTH);
	for (i = 0; i < 6; i++) {
		edgeq_gen_get_stats(g[i], &st[i]);
		assert_int_equal(st[i].n_gen, 3);
	}
	/* submit times are microseconds apart; first tokens are steps apart */
	for (i = 0; i < 6; i++)
		first[i] = st[i].ttft_ns;
	for (i = 1; i < 6; i++)
		assert_true(first[i] > first[i - 1]);
	for (i = 0; i < 6; i++)
		edgeq_gen_free(g[i]);
	edgeq_session_free(s);
}

static void test_queue_bound(void **state)
{
	struct edgeq_session *s;
	struct edgeq_gen_request rq;
	struct edgeq_gen *g[4];
	struct edgeq_error err = { 0 };
	struct edgeq_session_status ss;
	int32_t t[64];
	size_t n;
	int i;

	NEED_MODEL();
	/* 1 slot, 2 waiting: the fourth is refused */
	s = mk_session(1, 2, 20, false);
	n = tok("a queue", t, 64);
	req_init(&rq, t, n, 50);
	for (i = 0; i < 3; i++)
		assert_int_equal(edgeq_session_submit(s, &rq, &g[i], NULL), 0);
	assert_int_equal(edgeq_session_submit(s, &rq, &g[3], &err), -EBUSY);
	assert_non_null(strstr(err.msg, "queued"));
	edgeq_session_status(s, &ss);
	assert_int_equal(ss.running + ss.waiting, 3);
	/* freeing a queued request takes it out of the queue */
	edgeq_gen_free(g[2]);
	edgeq_session_status(s, &ss);
	assert_int_equal(ss.running + ss.waiting, 2);
	assert_int_equal(edgeq_session_submit(s, &rq, &g[2], NULL), 0);
	edgeq_session_cancel_all(s);
	assert_int_equal(edgeq_session_submit(s, &rq, &g[3], &err), -ESHUTDOWN);
	for (i = 0; i < 3; i++)
		edgeq_gen_free(g[i]);
	edgeq_session_free(s);
}

static int cancel_after;

static bool cancel_cb(void *user)
{
	int *seen = user;

	return *seen >= cancel_after;
}

static void test_cancel(void **state)
{
	struct edgeq_session *s;
	struct edgeq_gen_request rq, rq2;
	struct edgeq_gen_event ev;
	struct edgeq_gen_stats st;
	struct edgeq_gen *g, *q;
	int32_t t[64];
	int seen = 0, ret, never = INT_MAX, yes = 0;
	size_t n;

	NEED_MODEL();
	s = mk_session(1, 4, 5, false);
	n = tok("cancel me", t, 64);
	/* by callback, after a few tokens */
	cancel_after = 3;
	req_init(&rq, t, n, 200);
	rq.cancelled = cancel_cb;
	rq.user = &seen;
	assert_int_equal(edgeq_session_submit(s, &rq, &g, NULL), 0);
	/* a queued request whose callback says cancelled at once never runs */
	req_init(&rq2, t, n, 200);
	rq2.cancelled = cancel_cb;
	rq2.user = &yes;
	yes = INT_MAX;
	assert_int_equal(edgeq_session_submit(s, &rq2, &q, NULL), 0);
	do {
		ret = edgeq_gen_next(g, &ev, NULL);
		seen += (int)ev.n_toks;
	} while (ret == 1);
	assert_int_equal(ret, 0);
	assert_int_equal(ev.finish, EDGEQ_FINISH_CANCELLED);
	edgeq_gen_get_stats(g, &st);
	assert_true(st.n_gen < 20);
	edgeq_gen_free(g);
	do
		ret = edgeq_gen_next(q, &ev, NULL);
	while (ret == 1);
	assert_int_equal(ev.finish, EDGEQ_FINISH_CANCELLED);
	edgeq_gen_get_stats(q, &st);
	assert_int_equal(st.n_gen, 0);
	edgeq_gen_free(q);
	/* by edgeq_gen_cancel() */
	cancel_after = never;
	assert_int_equal(edgeq_session_submit(s, &rq, &g, NULL), 0);
	assert_true(edgeq_gen_next(g, &ev, NULL) >= 0);
	edgeq_gen_cancel(g);
	do
		ret = edgeq_gen_next(g, &ev, NULL);
	while (ret == 1);
	assert_int_equal(ev.finish, EDGEQ_FINISH_CANCELLED);
	edgeq_gen_free(g);
	/* freeing a running request cancels it */
	assert_int_equal(edgeq_session_submit(s, &rq, &g, NULL), 0);
	edgeq_gen_free(g);
	edgeq_session_free(s);
}

/* Greedy tokens of @text on their own in a one-slot session. */
static size_t alone(const char *text, int n_predict, int32_t *out)
{
	struct edgeq_session *s = mk_session(1, 1, 0, true);
	struct edgeq_gen_request rq;
	struct edgeq_gen *g;
	char buf[8192];
	int32_t t[64];
	size_t n, nt;

	n = tok(text, t, 64);
	req_init(&rq, t, n, n_predict);
	assert_int_equal(edgeq_session_submit(s, &rq, &g, NULL), 0);
	drain(g, buf, sizeof(buf), out, &nt, NULL);
	edgeq_gen_free(g);
	edgeq_session_free(s);
	return nt;
}

/*
 * A slot's greedy output is byte-identical alone and batched with others,
 * whether it starts with them or joins while they decode, and the batch
 * really is one pass per step (fewer steps than tokens).
 */
static void test_batched_equals_alone(void **state)
{
	static const char *const prompts[4] = {
		"The quick brown fox", "Once upon a time there was",
		"one two three four five six seven", "Hello",
	};
	static const int np[4] = { 20, 12, 16, 20 };
	int32_t want[4][64], acc[4][128], t[4][64];
	size_t nwant[4], n[4], nacc[4];
	struct edgeq_session *s;
	struct edgeq_gen_request rq[4];
	struct edgeq_gen *g[4];
	struct edgeq_session_status ss;
	struct edgeq_gen_event ev;
	int i, round, ret;

	NEED_MODEL();
	for (i = 0; i < 4; i++) {
		nwant[i] = alone(prompts[i], np[i], want[i]);
		n[i] = tok(prompts[i], t[i], 64);
		req_init(&rq[i], t[i], n[i], np[i]);
	}
	for (round = 0; round < 2; round++) {
		s = mk_session(4, 4, 0, false);
		memset(nacc, 0, sizeof(nacc));
		for (i = 0; i < 4; i++) {
			assert_int_equal(
				edgeq_session_submit(s, &rq[i], &g[i], NULL),
				0);
			/* second round: each joins once the one before it
			 * has produced tokens (it decodes meanwhile) */
			while (round == 1 && i < 3 && nacc[i] < 3) {
				ret = edgeq_gen_next(g[i], &ev, NULL);
				assert_true(ret >= 0);
				memcpy(acc[i] + nacc[i], ev.toks,
				       ev.n_toks * sizeof(int32_t));
				nacc[i] += ev.n_toks;
				if (!ret)
					break;
			}
		}
		for (i = 0; i < 4; i++) {
			do {
				ret = edgeq_gen_next(g[i], &ev, NULL);
				assert_true(ret >= 0);
				memcpy(acc[i] + nacc[i], ev.toks,
				       ev.n_toks * sizeof(int32_t));
				nacc[i] += ev.n_toks;
			} while (ret == 1);
			assert_int_equal(nacc[i], nwant[i]);
			assert_memory_equal(acc[i], want[i],
					    nacc[i] * sizeof(int32_t));
			edgeq_gen_free(g[i]);
		}
		edgeq_session_status(s, &ss);
		if (round == 0)
			assert_true(ss.steps < (uint64_t)(20 + 12 + 16 + 20));
		edgeq_session_free(s);
	}
}

static void test_bad_requests(void **state)
{
	struct edgeq_session_params p;
	struct edgeq_session *s = NULL;
	struct edgeq_gen_request rq;
	struct edgeq_error err = { 0 };
	struct edgeq_gen *g;
	int32_t t[300];
	char longstop[EDGEQ_GEN_MAX_STOP_LEN + 2];
	size_t i;

	NEED_MODEL();
	edgeq_session_params_init(&p);
	p.n_slots = 0;
	assert_int_equal(edgeq_session_new(model, &p, &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "slots"));
	p.n_slots = 65;
	assert_int_equal(edgeq_session_new(model, &p, &s, &err), -EINVAL);
	s = mk_session(1, 4, 0, false);
	for (i = 0; i < 300; i++)
		t[i] = 5;
	req_init(&rq, t, 0, 4);
	assert_int_equal(edgeq_session_submit(s, &rq, &g, &err), -EINVAL);
	req_init(&rq, t, 256, 4);
	assert_int_equal(edgeq_session_submit(s, &rq, &g, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "does not fit"));
	req_init(&rq, t, 4, 4);
	t[1] = -3;
	assert_int_equal(edgeq_session_submit(s, &rq, &g, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "out of range"));
	t[1] = 5;
	rq.sampling.top_p = 2;
	assert_int_equal(edgeq_session_submit(s, &rq, &g, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "sampling"));
	rq.sampling.top_p = 1;
	rq.n_predict = -2;
	assert_int_equal(edgeq_session_submit(s, &rq, &g, &err), -EINVAL);
	rq.n_predict = 4;
	rq.stops[0] = "";
	rq.n_stops = 1;
	assert_int_equal(edgeq_session_submit(s, &rq, &g, &err), -EINVAL);
	memset(longstop, 'x', sizeof(longstop) - 1);
	longstop[sizeof(longstop) - 1] = '\0';
	rq.stops[0] = longstop;
	assert_int_equal(edgeq_session_submit(s, &rq, &g, &err), -EINVAL);
	rq.n_stops = EDGEQ_GEN_MAX_STOPS + 1;
	assert_int_equal(edgeq_session_submit(s, &rq, &g, &err), -EINVAL);
	edgeq_session_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_release_utf8),
		cmocka_unit_test(test_release_stop),
		cmocka_unit_test(test_generate_and_stop_string),
		cmocka_unit_test(test_fifo),
		cmocka_unit_test(test_queue_bound),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_batched_equals_alone),
		cmocka_unit_test(test_bad_requests),
	};

	return cmocka_run_group_tests(tests, setup_model, teardown_model);
}
