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
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <edgeq/engine.h>
#include <edgeq/pressure.h>
#include <edgeq/session.h>
#include <edgeq/stream.h>

#include "engine/draft.h"
#include "engine/text.h"
#include "model/model.h"

static struct edgeq_model *model, *model2, *micro;
static char model_path[PATH_MAX], micro_path[PATH_MAX];

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
	/* no text yet: a slot's buffer before its first piece is NULL (UBSan
	 * caught memmem on it under t_asan's chat template test) */
	{
		const char *stops[1] = { "</s>" };

		st = true;
		assert_int_equal(
			eng_text_release(NULL, 0, stops, 1, false, &st), 0);
		assert_false(st);
		assert_int_equal(eng_text_release(NULL, 0, stops, 1, true, &st),
				 0);
	}
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
	/* the same file again: a draft model whose vocabulary matches */
	if (edgeq_model_load(&mp, &model2, NULL))
		model2 =
			NULL; /* one layer, F32: a shifted cache equals a fresh one exactly */
	snprintf(micro_path, sizeof(micro_path),
		 "/tmp/edgeq-test-session-%d-m.gguf", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "'%s' -o '%s' --shape micro --type f32 >/dev/null", gen,
		 micro_path);
	mp.path = micro_path;
	if (system(cmd) || edgeq_model_load(&mp, &micro, NULL))
		micro = NULL;
	return 0;
}

static int teardown_model(void **state)
{
	edgeq_model_free(model);
	edgeq_model_free(model2);
	edgeq_model_free(micro);
	if (micro_path[0])
		unlink(micro_path);
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

static struct edgeq_session *
mk_session_draft(int slots, int queue, int delay_ms, bool sequential,
		 const struct edgeq_draft_params *d)
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
	if (d)
		p.draft = *d;
	assert_int_equal(edgeq_session_new(model, &p, &s, &err), 0);
	return s;
}

static struct edgeq_session *mk_session(int slots, int queue, int delay_ms,
					bool sequential)
{
	return mk_session_draft(slots, queue, delay_ms, sequential, NULL);
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
		assert_true(tl + ev.len < cap);
		if (ev.len)
			memcpy(text + tl, ev.text, ev.len);
		tl += ev.len;
		if (toks && ev.n_toks) /* an event without tokens has none */
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

/* The largest event when the consumer sleeps between events. Every token
 * carries the end of its own pass (one token per pass here): strictly
 * later than the one before, also when several reach the consumer in one
 * event (the serve metrics' inter-token gaps come from these). */
static size_t largest_event(bool lockstep)
{
	struct edgeq_session_params p;
	struct edgeq_session *s = NULL;
	struct edgeq_gen_request rq;
	struct edgeq_gen_event ev;
	struct edgeq_gen *g;
	size_t n, nt = 0, most = 0;
	uint64_t last = 0;
	int32_t t[64];
	int ret;

	edgeq_session_params_init(&p);
	p.ctx.n_ctx = 256;
	p.lockstep = lockstep;
	assert_int_equal(edgeq_session_new(model, &p, &s, NULL), 0);
	n = tok("Once upon a time", t, 64);
	req_init(&rq, t, n, 12);
	assert_int_equal(edgeq_session_submit(s, &rq, &g, NULL), 0);
	do {
		ret = edgeq_gen_next(g, &ev, NULL);
		assert_true(ret >= 0);
		nt += ev.n_toks;
		if (ev.n_toks > most)
			most = ev.n_toks;
		for (size_t j = 0; j < ev.n_toks; j++) {
			assert_non_null(ev.tok_ns);
			assert_true(ev.tok_ns[j] > last);
			last = ev.tok_ns[j];
		}
		usleep(20000); /* the engine would decode several meanwhile */
	} while (ret == 1);
	assert_int_equal(nt, 12);
	edgeq_gen_free(g);
	edgeq_session_free(s);
	return most;
}

/* Lockstep: however slow the consumer, each event carries one token (the
 * engine waits for it); without, the engine runs ahead of it. */
static void test_lockstep(void **state)
{
	NEED_MODEL();
	assert_int_equal(largest_event(true), 1);
	assert_true(largest_event(false) > 1);
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

/*
 * Prompts admitted together share a pass, but after the first a prompt
 * joins only whole: with 2n + 1 tokens a pass, two n-token prompts share
 * one and the third (which would fit only in part) waits for the next,
 * reading all of its prompt in one pass, not two. The three are submitted
 * while a fourth request decodes (each step sleeps 30 ms first), so they
 * are admitted together.
 */
static void test_prompts_join_whole(void **state)
{
	struct edgeq_session_params p;
	struct edgeq_session *s = NULL;
	struct edgeq_gen_request rq, rq0;
	struct edgeq_gen *g[4];
	struct edgeq_gen_event ev;
	struct edgeq_gen_stats st;
	char text[1024];
	int32_t t[64];
	size_t n;
	int i;

	NEED_MODEL();
	n = tok("one two", t, 64);
	assert_true(n >= 2);
	edgeq_session_params_init(&p);
	p.n_slots = 4;
	p.ctx.n_ctx = 64;
	p.prefill_chunk = (uint32_t)(2 * n + 1);
	p.token_delay_ms = 30;
	assert_int_equal(edgeq_session_new(model, &p, &s, NULL), 0);
	req_init(&rq0, t, n, 12);
	assert_int_equal(edgeq_session_submit(s, &rq0, &g[0], NULL), 0);
	assert_int_equal(edgeq_gen_next(g[0], &ev, NULL), 1); /* decoding */
	req_init(&rq, t, n, 2);
	for (i = 1; i < 4; i++)
		assert_int_equal(edgeq_session_submit(s, &rq, &g[i], NULL), 0);
	for (i = 0; i < 4; i++) {
		assert_int_equal(drain(g[i], text, sizeof(text), NULL, NULL,
				       NULL),
				 EDGEQ_FINISH_LENGTH);
		edgeq_gen_get_stats(g[i], &st);
		assert_int_equal(st.n_prompt_passes, 1);
		edgeq_gen_free(g[i]);
	}
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
		"The quick brown fox",
		"Once upon a time there was",
		"one two three four five six seven",
		"Hello",
	};
	static const int np[4] = { 20, 12, 16, 20 };
	int32_t want[4][64], acc[4][128], t[4][64];
	size_t nwant[4], n[4], nacc[4], total;
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
			assert_int_equal(edgeq_session_submit(s, &rq[i], &g[i],
							      NULL),
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
		/* the decode rate's count: every token but those of steps
		 * that read a prompt (each request's first, and what the
		 * others gave in the steps where one joined: 4 at most) */
		total = nacc[0] + nacc[1] + nacc[2] + nacc[3];
		assert_int_equal(ss.gen_tokens, total);
		assert_true(ss.decode_tokens <= total - 4);
		assert_true(ss.decode_tokens + 16 >= total);
		assert_true(ss.decode_ns > 0);
		edgeq_session_free(s);
	}
}

/* Greedy tokens of @text in a session drafting with @d (NULL: none). */
static size_t greedy_with(const struct edgeq_draft_params *d, int slots,
			  const char *text, int n_predict, int32_t *out,
			  struct edgeq_gen_stats *st)
{
	struct edgeq_session *s = mk_session_draft(slots, 1, 0, false, d);
	struct edgeq_gen_request rq;
	struct edgeq_gen *g;
	char buf[8192];
	int32_t t[128];
	size_t n, nt;

	n = tok(text, t, 128);
	req_init(&rq, t, n, n_predict);
	assert_int_equal(edgeq_session_submit(s, &rq, &g, NULL), 0);
	drain(g, buf, sizeof(buf), out, &nt, NULL);
	edgeq_gen_get_stats(g, st);
	edgeq_gen_free(g);
	edgeq_session_free(s);
	return nt;
}

/* Speculative greedy output is byte-identical to plain greedy output, for
 * every kind of draft, alone and batched; rejected drafts roll back. */
static void test_spec_greedy_identical(void **state)
{
	const char *text = "one two three four one two three four one two "
			   "three four one two";
	struct edgeq_draft_params d[3];
	struct edgeq_gen_stats st;
	int32_t want[64], got[64];
	size_t nw, ng;
	int i, slots;

	NEED_MODEL();
	nw = greedy_with(NULL, 1, text, 40, want, &st);
	assert_int_equal(st.n_drafted, 0);
	memset(d, 0, sizeof(d));
	d[0].kind = EDGEQ_DRAFT_LOOKUP;
	d[1].kind = EDGEQ_DRAFT_LAYERS;
	d[1].layers = 1;
	d[2].kind = EDGEQ_DRAFT_MODEL;
	d[2].model = model2;
	for (slots = 1; slots <= 2; slots++) {
		for (i = 0; i < 3; i++) {
			d[i].max_len = 3;
			d[i].fixed = true; /* draft every step */
			ng = greedy_with(&d[i], slots, text, 40, got, &st);
			assert_int_equal(ng, nw);
			assert_memory_equal(got, want, nw * sizeof(int32_t));
			assert_true(st.n_drafted > 0);
			/* fewer target passes than tokens when drafts are
			 * accepted (the same model drafting: all of them) */
			if (i == 2)
				assert_true(st.n_eval < st.n_gen / 2);
		}
	}
}

struct collect {
	int32_t t[128];
	size_t n;
};

static int collect_tok(void *user, int32_t tok, const char *piece, size_t len)
{
	struct collect *c = user;

	(void)piece;
	(void)len;
	if (c->n < 128)
		c->t[c->n++] = tok;
	return 0;
}

/*
 * A caller's draft context (what run and place-run place on a queue): the
 * model drafting for itself accepts every draft and gives plain greedy's
 * tokens; the context is the caller's (rewound, not freed, reusable); a
 * multi-slot session, a context of too few positions are refused.
 */
static void test_spec_caller_draft_ctx(void **state)
{
	struct edgeq_ctx_params cp;
	struct edgeq_ctx *c, *dc, *small;
	struct edgeq_gen_params gp;
	struct edgeq_gen_stats st;
	struct edgeq_session_params p;
	struct edgeq_session *s = NULL;
	struct edgeq_error err = { 0 };
	struct collect plain = { 0 }, spec = { 0 };

	NEED_MODEL();
	edgeq_ctx_params_init(&cp);
	cp.n_ctx = 256;
	assert_int_equal(edgeq_ctx_new(model, &cp, &c, NULL), 0);
	assert_int_equal(edgeq_ctx_new(model, &cp, &dc, NULL), 0);
	edgeq_gen_params_init(&gp);
	gp.prompt = "Once upon a time";
	gp.add_bos = true;
	gp.n_predict = 24;
	gp.sampling.temp = 0;
	assert_int_equal(edgeq_generate(c, &gp, collect_tok, &plain, &st, NULL),
			 0);
	gp.draft.kind = EDGEQ_DRAFT_MODEL;
	gp.draft.model = model;
	gp.draft.ctx = dc;
	gp.draft.max_len = 4;
	gp.draft.fixed = true;
	for (int round = 0; round < 2; round++) {
		spec.n = 0;
		edgeq_ctx_truncate(c, 0);
		assert_int_equal(edgeq_generate(c, &gp, collect_tok, &spec, &st,
						&err),
				 0);
		assert_int_equal(spec.n, plain.n);
		assert_memory_equal(spec.t, plain.t, plain.n * sizeof(int32_t));
		assert_true(st.n_drafted > 0);
		assert_int_equal(st.n_accepted, st.n_drafted);
		/* the caller's context drafted: it holds the positions */
		assert_true(edgeq_ctx_pos(dc) > 0);
	}
	cp.n_ctx = 64;
	assert_int_equal(edgeq_ctx_new(model, &cp, &small, NULL), 0);
	gp.draft.ctx = small;
	assert_int_equal(edgeq_generate(c, &gp, collect_tok, &spec, &st, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "draft context holds 64 positions"));
	edgeq_session_params_init(&p);
	p.n_slots = 2;
	p.draft = gp.draft;
	p.draft.ctx = dc;
	assert_int_equal(edgeq_session_new(model, &p, &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "one-slot"));
	edgeq_ctx_free(small);
	edgeq_ctx_free(dc);
	edgeq_ctx_free(c);
}

static void test_spec_bad_drafts(void **state)
{
	struct edgeq_session_params p;
	struct edgeq_session *s = NULL;
	struct edgeq_error err = { 0 };
	const char *path;

	NEED_MODEL();
	assert_int_equal(edgeq_draft_parse("lookup", &p.draft, &path), 0);
	assert_int_equal(p.draft.kind, EDGEQ_DRAFT_LOOKUP);
	assert_int_equal(edgeq_draft_parse("layers:2", &p.draft, &path), 0);
	assert_int_equal(p.draft.layers, 2);
	assert_int_equal(edgeq_draft_parse("layers:x", &p.draft, &path),
			 -EINVAL);
	assert_int_equal(edgeq_draft_parse("layers:0", &p.draft, &path),
			 -EINVAL);
	assert_int_equal(edgeq_draft_parse("d.gguf", &p.draft, &path), 0);
	assert_string_equal(path, "d.gguf");
	edgeq_session_params_init(&p);
	p.draft.kind = EDGEQ_DRAFT_LAYERS;
	p.draft.layers = 99;
	assert_int_equal(edgeq_session_new(model, &p, &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "layers"));
	p.draft.layers = 1;
	p.draft.max_len = 99;
	assert_int_equal(edgeq_session_new(model, &p, &s, &err), -EINVAL);
	p.draft.max_len = 4;
	p.draft.kind = EDGEQ_DRAFT_MODEL;
	p.draft.model = NULL;
	assert_int_equal(edgeq_session_new(model, &p, &s, &err), -EINVAL);
	if (!micro) {
		print_message("no micro model\n");
		return;
	}
	/* a draft model whose vocabulary differs is refused */
	p.draft.model = micro;
	assert_int_equal(edgeq_session_new(model, &p, &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "vocabulary"));
}

static void test_lookup_draft(void **state)
{
	const int32_t h[] = { 5, 6, 7, 8, 9, 5, 6, 7 };
	const int32_t one[] = { 1, 2, 3, 2 };
	int32_t out[8];

	/* "5 6 7" occurred before: propose what followed it */
	assert_int_equal(eng_lookup_draft(h, 8, out, 4), 4);
	assert_int_equal(out[0], 8);
	assert_int_equal(out[1], 9);
	assert_int_equal(out[2], 5);
	assert_int_equal(out[3], 6);
	assert_int_equal(eng_lookup_draft(h, 8, out, 1), 1);
	/* a 1-gram when nothing longer matches; the latest occurrence */
	assert_int_equal(eng_lookup_draft(one, 4, out, 2), 2);
	assert_int_equal(out[0], 3);
	assert_int_equal(out[1], 2);
	assert_int_equal(eng_lookup_draft(one, 3, out, 2), 0);
}

static void test_draft_choose(void **state)
{
	double sp;

	/* the seed's figures: a = 0.75, c = 0.15 -> k = 4 pays ~1.91x */
	assert_true(eng_draft_choose(0.75, 0.15, 4, &sp) == 4);
	assert_true(sp > 1.9 && sp < 1.92);
	/* drafts that are never accepted, or too dear, switch it off */
	assert_int_equal(eng_draft_choose(0.0, 0.15, 4, &sp), 0);
	assert_int_equal(eng_draft_choose(0.5, 2.0, 4, &sp), 0);
	/* free drafts accepted half the time: draft long */
	assert_int_equal(eng_draft_choose(0.5, 0.0, 8, NULL), 8);
}

/* Off, a slot probes after 16 steps, then 32, 64, ... 256 while the
 * probes find it still does not pay; on again, back to 16. */
static void test_draft_probe(void **state)
{
	uint32_t off = 0, every = 0, steps = 0, probes[12];
	int n = 0;

	for (steps = 1; steps <= 1200 && n < 12; steps++)
		if (eng_draft_probe(0, &off, &every) == 2)
			probes[n++] = steps;
	assert_int_equal(n, 7);
	/* 16, 16 + 32, ..., then every 256 */
	assert_int_equal(probes[0], 16);
	assert_int_equal(probes[1], 48);
	assert_int_equal(probes[2], 112);
	assert_int_equal(probes[3], 240);
	assert_int_equal(probes[4], 496);
	assert_int_equal(probes[5], 752);
	assert_int_equal(probes[6], 1008);
	/* drafting on: its length, and the next time off probes at 16 */
	assert_int_equal(eng_draft_probe(3, &off, &every), 3);
	off = 0;
	for (steps = 1; eng_draft_probe(0, &off, &every) != 2; steps++)
		;
	assert_int_equal(steps, 16);
}

/*
 * With sampling, the speculative sampling rule keeps the target's
 * distribution: the second and third tokens (drawn by verification, the
 * same-model draft proposing the argmax, so drafts are accepted and
 * rejected often) are counted over many seeded runs with and without
 * speculation, and a two-sample chi-square test must not tell them apart.
 */
#define CHI_RUNS 800
static void count_tokens(const struct edgeq_draft_params *d, uint64_t seed0,
			 uint32_t *cnt, uint32_t V)
{
	struct edgeq_session *s = mk_session_draft(1, 1, 0, false, d);
	struct edgeq_gen_request rq;
	struct edgeq_gen *g;
	int32_t t[64], out[8];
	char buf[4096];
	size_t n, nt;
	int r;

	n = tok("The quick brown fox", t, 64);
	for (r = 0; r < CHI_RUNS; r++) {
		req_init(&rq, t, n, 3);
		rq.sampling.temp = 0.5f;
		rq.sampling.top_k = 0;
		rq.sampling.top_p = 1;
		rq.sampling.min_p = 0;
		rq.sampling.seed = seed0 + (uint64_t)r;
		assert_int_equal(edgeq_session_submit(s, &rq, &g, NULL), 0);
		drain(g, buf, sizeof(buf), out, &nt, NULL);
		edgeq_gen_free(g);
		if (nt >= 2 && (uint32_t)out[1] < V)
			cnt[out[1]]++;
		if (nt >= 3 && (uint32_t)out[2] < V)
			cnt[V + (uint32_t)out[2]]++;
	}
	edgeq_session_free(s);
}

static void test_spec_sampling_distribution(void **state)
{
	uint32_t V, *a, *b, i, df = 0;
	struct edgeq_draft_params d;
	double chi = 0, pa = 0, pb = 0, ea, crit, na = 0, nb = 0, x;
	struct edgeq_session_status ss;

	NEED_MODEL();
	V = edgeq_model_info(model)->n_vocab;
	a = calloc(2 * V, sizeof(*a));
	b = calloc(2 * V, sizeof(*b));
	assert_non_null(a);
	assert_non_null(b);
	memset(&d, 0, sizeof(d));
	d.kind = EDGEQ_DRAFT_MODEL;
	d.model = model2;
	d.max_len = 2;
	d.fixed = true;
	count_tokens(NULL, 1, a, V);
	count_tokens(&d, 1000003, b, V);
	for (i = 0; i < 2 * V; i++) {
		na += a[i];
		nb += b[i];
	}
	/* two-sample chi-square over bins with enough mass; the rest pooled */
	for (i = 0; i < 2 * V; i++) {
		ea = (a[i] + b[i]) / 2.0;
		if (ea < 5) {
			pa += a[i];
			pb += b[i];
			continue;
		}
		x = (double)a[i] - b[i];
		chi += x * x / (a[i] + b[i]);
		df++;
	}
	if (pa + pb >= 10) {
		chi += (pa - pb) * (pa - pb) / (pa + pb);
		df++;
	}
	df -= 2; /* two positions, each summing to the run count */
	/* critical value at p = 0.001 (Wilson-Hilferty) */
	x = 1 - 2.0 / (9 * df) + 3.09 * sqrt(2.0 / (9 * df));
	crit = df * x * x * x;
	print_message("chi-square %.1f, df %u, critical %.1f (p = 0.001)\n",
		      chi, df, crit);
	assert_true(df >= 5);
	assert_true(chi < crit);
	(void)ss;
	free(a);
	free(b);
}

/*
 * The re-roped cache after a shift gives what a fresh context holding the
 * kept tokens gives. With one layer the keys do not depend on the dropped
 * tokens, so only the rotation's rounding differs (F32 cache); deeper
 * models' kept keys did see the dropped tokens, which is what a context
 * shift gives up.
 */
static void test_ctx_shift_rerope(void **state)
{
	struct edgeq_ctx_params cp;
	struct edgeq_ctx *a, *b;
	const float *la, *lb;
	int32_t t[48], kept[48], x = 7;
	uint32_t V, i, keep = 4, drop = 10, n = 40, nk = 0;
	float *sa;
	double md = 0, ma = 0;

	NEED_MODEL();
	if (!micro) {
		print_message("no micro model\n");
		skip();
	}
	V = edgeq_model_info(micro)->n_vocab;
	for (i = 0; i < n; i++)
		t[i] = (int32_t)(3 + (i * 7) % (V - 3));
	edgeq_ctx_params_init(&cp);
	cp.n_ctx = 64;
	cp.kv_type = EDGEQ_KV_F32;
	assert_int_equal(edgeq_ctx_new(micro, &cp, &a, NULL), 0);
	assert_int_equal(edgeq_ctx_new(micro, &cp, &b, NULL), 0);
	assert_int_equal(edgeq_decode(a, t, n, &la, NULL), 0);
	assert_int_equal(ctx_shift(a, keep, 99, NULL), -EINVAL);
	assert_int_equal(ctx_shift(a, keep, drop, NULL), 0);
	assert_int_equal(edgeq_ctx_pos(a), n - drop);
	assert_int_equal(edgeq_decode(a, &x, 1, &la, NULL), 0);
	sa = malloc(V * sizeof(float));
	memcpy(sa, la, V * sizeof(float));
	for (i = 0; i < n; i++)
		if (i < keep || i >= keep + drop)
			kept[nk++] = t[i];
	assert_int_equal(edgeq_decode(b, kept, nk, &lb, NULL), 0);
	assert_int_equal(edgeq_decode(b, &x, 1, &lb, NULL), 0);
	for (i = 0; i < V; i++) {
		if (fabs(sa[i] - lb[i]) > md)
			md = fabs(sa[i] - lb[i]);
		if (fabs(lb[i]) > ma)
			ma = fabs(lb[i]);
	}
	print_message("shifted vs fresh: max |diff| %.3g of max |logit| %.3g\n",
		      md, ma);
	assert_true(md <= 1e-3 * (ma > 1 ? ma : 1));
	free(sa);
	edgeq_ctx_free(a);
	edgeq_ctx_free(b);
}

/* With --context-shift a generation goes past the context; without, it
 * ends there. */
static void test_context_shift(void **state)
{
	struct edgeq_session_params p;
	struct edgeq_session *s;
	struct edgeq_gen_request rq;
	struct edgeq_gen_stats st;
	struct edgeq_session_status ss;
	struct edgeq_gen *g;
	char buf[16384];
	int32_t t[64];
	size_t n, nt;
	int shift;

	NEED_MODEL();
	for (shift = 0; shift < 2; shift++) {
		edgeq_session_params_init(&p);
		p.ctx.n_ctx = 32;
		p.context_shift = shift;
		assert_int_equal(edgeq_session_new(model, &p, &s, NULL), 0);
		n = tok("one two three", t, 64);
		req_init(&rq, t, n, 100);
		rq.n_keep = 2;
		assert_int_equal(edgeq_session_submit(s, &rq, &g, NULL), 0);
		assert_int_equal(drain(g, buf, sizeof(buf), NULL, &nt, NULL),
				 EDGEQ_FINISH_LENGTH);
		edgeq_gen_get_stats(g, &st);
		edgeq_session_status(s, &ss);
		if (shift) {
			assert_int_equal(nt, 100);
			assert_true(edgeq_gen_n_shifts(g) >= 3);
		} else {
			assert_int_equal(nt + n, 32);
			assert_int_equal(edgeq_gen_n_shifts(g), 0);
		}
		assert_true(ss.kv_used <= 32);
		edgeq_gen_free(g);
		edgeq_session_free(s);
	}
}

/* ---- the session's pressure monitor and the budget it drives */

struct seen {
	pthread_mutex_t lock;
	int calls, level;
	uint64_t was, now;
};

static void on_pressure(void *arg, const struct edgeq_pressure_state *st,
			uint64_t was, uint64_t now)
{
	struct seen *sn = arg;

	pthread_mutex_lock(&sn->lock);
	sn->calls++;
	sn->level = (int)st->mem.level;
	sn->was = was;
	sn->now = now;
	pthread_mutex_unlock(&sn->lock);
}

/* A short greedy generation (its passes apply a new budget). */
static void gen4(struct edgeq_session *s)
{
	struct edgeq_gen_request rq;
	struct edgeq_gen *g;
	char text[256];
	int32_t t[64];

	req_init(&rq, t, tok("one two three", t, 64), 4);
	assert_int_equal(edgeq_session_submit(s, &rq, &g, NULL), 0);
	assert_int_equal(drain(g, text, sizeof(text), NULL, NULL, NULL),
			 EDGEQ_FINISH_LENGTH);
	edgeq_gen_free(g);
}

/* Wait (up to 10 s) until the hook saw memory level @level. */
static bool wait_level(struct seen *sn, int level, struct seen *out)
{
	int i;

	for (i = 0; i < 1000; i++) {
		pthread_mutex_lock(&sn->lock);
		*out = *sn;
		pthread_mutex_unlock(&sn->lock);
		if (out->calls && out->level == level)
			return true;
		usleep(10000);
	}
	return false;
}

static void put_meminfo(const char *root, uint64_t avail_kb)
{
	char path[400], to[400];
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/proc/meminfo.new", root);
	snprintf(to, sizeof(to), "%s/proc/meminfo", root);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"MemTotal:       8000000 kB\nMemFree:          10000 kB\n"
		"MemAvailable:   %llu kB\n",
		(unsigned long long)avail_kb);
	assert_int_equal(fclose(f), 0);
	/* whole: the monitor never reads half a file */
	assert_int_equal(rename(path, to), 0);
}

/*
 * One monitor per session (PSI fallback on a fake /proc): its memory level
 * moves a streamed model's weights budget to what memory allows less the
 * 256 MiB reserve, after a token some layers stream instead of staying
 * resident, and when memory comes back the whole model is resident again;
 * the hook sees every state with the budget before and after.
 */
static void test_pressure_budget(void **state)
{
	struct edgeq_session_params p;
	struct edgeq_pressure_opts o;
	struct edgeq_model_params mp;
	struct edgeq_model *sm = NULL;
	struct edgeq_session *s = NULL;
	struct edgeq_stream_status ws;
	struct edgeq_pressure_state *st;
	struct edgeq_mem_info mi;
	struct edgeq_error err = { 0 };
	struct seen sn = { .lock = PTHREAD_MUTEX_INITIALIZER }, got;
	const char *tmp = getenv("EDGEQ_TEST_TMP"), *why = NULL;
	char root[200], sys[220], procd[220], cmd[300];
	uint64_t model_bytes, avail, want;

	NEED_MODEL();
	snprintf(root, sizeof(root), "%s/pressure.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(root));
	snprintf(sys, sizeof(sys), "%s/sys", root);
	mkdir(sys, 0755);
	edgeq_model_params_init(&mp);
	mp.path = model_path;
	mp.n_threads = 1;
	mp.weights = EDGEQ_WEIGHTS_STREAM;
	assert_int_equal(edgeq_model_load(&mp, &sm, &err), 0);
	assert_int_equal(edgeq_model_weights_status(sm, &ws), 0);
	model_bytes = ws.model_bytes;
	assert_true(model_bytes > 0);
	assert_int_equal(ws.layers_streamed, 0); /* memory allows it all */

	/* 3 % of memory available (critical): what is left past the reserve
	 * is half the model; a limited cgroup of this process may leave less */
	avail = (256ull << 20) + model_bytes / 2;
	put_meminfo(root, avail / 1024);
	avail = avail / 1024 * 1024;
	if (!edgeq_mem_probe(NULL, &mi) && mi.cg_limit != UINT64_MAX &&
	    mi.available < avail)
		avail = mi.available;
	want = avail > (256ull << 20) ? avail - (256ull << 20) : 0;

	edgeq_pressure_opts_init(&o);
	o.no_bpf = true;
	snprintf(procd, sizeof(procd), "%s/proc", root);
	o.proc_root = procd;
	o.sysfs_root = sys;
	o.devices_conf = "";
	o.refresh_ms = 20;
	edgeq_session_params_init(&p);
	p.ctx.n_ctx = 64;
	p.pressure = &o;
	p.pressure_arg = &sn;
	p.on_pressure = on_pressure;
	assert_int_equal(edgeq_session_new(sm, &p, &s, &err), 0);
	assert_true(wait_level(&sn, EDGEQ_MEM_CRITICAL, &got));
	st = malloc(sizeof(*st));
	assert_non_null(st);
	assert_int_equal(edgeq_session_pressure(s, st, &why), 0);
	assert_int_equal(st->source, EDGEQ_PRESSURE_SRC_PSI);
	assert_int_equal(st->mem.level, EDGEQ_MEM_CRITICAL);
	assert_non_null(why);
	assert_true(strlen(why) > 0); /* why not BPF: asked for PSI */
	assert_true(got.was == model_bytes || got.was >= got.now);
	if (want >= model_bytes || !want) {
		print_message("memory this cgroup leaves does not let the test "
			      "shrink the budget\n");
	} else {
		assert_int_equal(got.now, want);
		/* applied at a token boundary: generate, then look */
		gen4(s);
		assert_int_equal(edgeq_session_weights_status(s, &ws), 0);
		assert_int_equal(ws.budget, want);
		assert_true(ws.layers_streamed > 0);
	}
	/* memory comes back (50 %: level none): the whole model again */
	put_meminfo(root, 4000000);
	assert_true(wait_level(&sn, EDGEQ_MEM_NONE, &got));
	if (want < model_bytes && want) {
		assert_int_equal(got.now, model_bytes);
		gen4(s);
		assert_int_equal(edgeq_session_weights_status(s, &ws), 0);
		assert_int_equal(ws.budget, model_bytes);
		assert_int_equal(ws.layers_streamed, 0);
	}
	assert_int_equal(edgeq_session_pressure(s, st, NULL), 0);
	assert_int_equal(st->mem.level, EDGEQ_MEM_NONE);
	edgeq_session_free(s);
	edgeq_model_free(sm);
	free(st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	(void)!system(cmd);
}

/* No monitor asked for, or one that cannot open: the session runs
 * without, and says why. */
static void test_pressure_none(void **state)
{
	struct edgeq_session_params p;
	struct edgeq_pressure_opts o;
	struct edgeq_pressure_state *st;
	struct edgeq_session *s = NULL;
	struct edgeq_error err = { 0 };
	const char *why = NULL;

	NEED_MODEL(); /* (a skip returns: allocate after it) */
	st = malloc(sizeof(*st));
	assert_non_null(st);
	s = mk_session(1, 1, 0, false);
	assert_int_equal(edgeq_session_pressure(s, st, &why), -ENODEV);
	assert_string_equal(why, "not asked for");
	edgeq_session_free(s);

	edgeq_pressure_opts_init(&o);
	o.no_bpf = true;
	o.devices_conf = "/nonexistent/edgeq-devices.conf";
	edgeq_session_params_init(&p);
	p.ctx.n_ctx = 64;
	p.pressure = &o;
	assert_int_equal(edgeq_session_new(model, &p, &s, &err), 0);
	assert_int_equal(edgeq_session_pressure(s, st, &why), -ENODEV);
	assert_non_null(strstr(why, "edgeq-devices.conf"));
	edgeq_session_free(s);

	/* a malformed cooling binding is the caller's error: no session */
	o.devices_conf = NULL;
	o.cool_bind = "gpu0";
	s = NULL;
	assert_int_equal(edgeq_session_new(model, &p, &s, &err), -EINVAL);
	assert_null(s);
	assert_non_null(strstr(err.msg, "cooling binding 'gpu0'"));
	free(st);
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
		cmocka_unit_test(test_lockstep),
		cmocka_unit_test(test_fifo),
		cmocka_unit_test(test_prompts_join_whole),
		cmocka_unit_test(test_queue_bound),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_batched_equals_alone),
		cmocka_unit_test(test_spec_greedy_identical),
		cmocka_unit_test(test_spec_bad_drafts),
		cmocka_unit_test(test_spec_caller_draft_ctx),
		cmocka_unit_test(test_lookup_draft),
		cmocka_unit_test(test_draft_choose),
		cmocka_unit_test(test_draft_probe),
		cmocka_unit_test(test_spec_sampling_distribution),
		cmocka_unit_test(test_ctx_shift_rerope),
		cmocka_unit_test(test_context_shift),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_pressure_budget),
		cmocka_unit_test(test_pressure_none),
	};

	return cmocka_run_group_tests(tests, setup_model, teardown_model);
}
