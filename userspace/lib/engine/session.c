// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The engine session: slots, the first-come-first-served wait queue and the
 * engine thread that steps every active slot.
 *
 * One step: (1) under the lock, drop cancelled requests from the queue and
 * admit the queue's head into a free slot while there is one (the head
 * only, so a late request can never overtake an earlier one); (2) without
 * the lock, build the step's work: a prompt chunk for each prefilling slot,
 * the last sampled token for each decoding one; (3) run it as one forward
 * pass over all slots (or one per slot when sequential); (4) sample every
 * slot whose logits are fresh and hand its text to its request.
 *
 * Locking: s->lock guards the queue, the slots' ownership (sl->g), each
 * request's state and output buffers. Everything else of a slot (its
 * context, sampler, pending text) belongs to the engine thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <edgeq/session.h>
#include <edgeq/stream.h>

#include "engine/draft.h"
#include "engine/internal.h"
#include "engine/text.h"
#include "engine/watch.h"
#include "model/model.h"

struct eng_buf {
	char *p;
	size_t len, cap;
};

static int buf_add(struct eng_buf *b, const void *d, size_t n)
{
	size_t nc;
	char *p;

	if (b->len + n + 1 > b->cap) {
		nc = (b->len + n + 1) * 2;
		p = realloc(b->p, nc);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = nc;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

struct tok_buf {
	int32_t *t;
	uint64_t *ns; /* when each token's pass ended */
	size_t n, cap;
};

static int toks_add(struct tok_buf *b, int32_t tok, uint64_t ns)
{
	size_t nc;
	int32_t *t;
	uint64_t *tn;

	if (b->n == b->cap) {
		nc = b->cap ? b->cap * 2 : 64;
		t = realloc(b->t, nc * sizeof(*t));
		if (!t)
			return -ENOMEM;
		b->t = t;
		tn = realloc(b->ns, nc * sizeof(*tn));
		if (!tn)
			return -ENOMEM;
		b->ns = tn;
		b->cap = nc;
	}
	b->ns[b->n] = ns;
	b->t[b->n++] = tok;
	return 0;
}

enum gen_state { GEN_QUEUED = 0, GEN_RUNNING, GEN_DONE };

struct edgeq_gen {
	struct edgeq_session *s;
	struct edgeq_gen *next; /* wait queue */
	int32_t *prompt;
	size_t n_prompt;
	int n_predict;
	uint32_t n_keep;
	struct edgeq_sampler_params sp;
	char *stops[EDGEQ_GEN_MAX_STOPS];
	int n_stops;
	bool (*cancelled)(void *user);
	void *user;
	_Atomic bool cancel;

	/* under s->lock */
	enum gen_state state;
	bool held; /* lockstep: tokens out, the consumer not yet back */
	struct eng_buf out; /* released, not yet handed over */
	struct tok_buf out_toks;
	enum edgeq_finish finish;
	int err_code;
	struct edgeq_error err;
	pthread_cond_t cond;
	struct edgeq_gen_stats st;
	uint32_t n_cached, n_shifts;
	double cost_sum; /* the draft cost at each of its verify passes */
	uint32_t cost_n; /* (st.draft_cost is their mean) */

	/* the consumer's (edgeq_gen_next) */
	struct eng_buf ev;
	struct tok_buf ev_toks;

	/* the engine thread's */
	struct eng_buf pend; /* generated text not yet released */
	uint64_t t_submit, t_admit, t_prefilled;
};

struct eng_slot {
	int idx;
	struct edgeq_ctx *ctx;
	bool own_ctx;
	int32_t *hist; /* the context's token history */
	uint32_t n_ctx;
	struct edgeq_gen *g; /* running request (under s->lock) */
	/* the engine thread's */
	struct edgeq_sampler *smp;
	size_t pos_prompt; /* next prompt token to prefill */
	bool have_tok;	   /* next_tok waits to be decoded */
	int32_t next_tok;
	const float *logits; /* fresh logits, or NULL */
	/* speculation (the engine thread's) */
	int32_t vtoks[ENG_DRAFT_MAX + 1]; /* next_tok, then the drafts */
	int n_draft;
	float *vlogits;		/* [max_len + 1][n_vocab] of the verify pass */
	struct edgeq_ctx *dctx; /* MODEL: the draft model's context */
	bool dctx_own;		/* made by the session (else the caller's) */
	double acc_n, rej_n;	/* decayed counts: drafts accepted, rejected */
	int k;			/* draft length now; 0: off */
	uint32_t off_steps;	/* steps since it went off (probing) */
	uint32_t probe_every;	/* steps between probes: 16, doubled up to
				 * 256 while probes keep it off */
	_Atomic uint32_t n_kv;	/* positions held (for status) */
	_Atomic uint64_t progress_ns; /* last step; 0 when idle */
};

struct edgeq_session {
	struct edgeq_model *m;
	const struct edgeq_model_info *info;
	struct edgeq_session_params p;
	struct eng_slot *slots;
	int n_slots;
	struct edgeq_ctx *ws; /* batch workspace; NULL: one pass per slot */
	struct edgeq_draft_params draft;
	double t_plain;	     /* EWMA ns of a decode pass without drafts */
	uint64_t t_pass_end; /* when the last engine pass ended (its tokens') */
	double cost;	     /* EWMA: a draft token's cost over a plain pass */
	uint64_t n_cost;     /* measurements in cost */
	uint64_t drafted, accepted, rejected, verifies, passes;

	pthread_mutex_t lock;
	pthread_cond_t work; /* the engine thread waits for work here */
	struct edgeq_gen *q_head, *q_tail;
	int waiting, running;
	bool cancel_all, stop;
	uint64_t pending_budget;
	uint64_t acks; /* lockstep: consumers come back for more */
	uint64_t steps, prompt_tokens, gen_tokens;
	/* steps without prompt rows: their wall time, the tokens they gave,
	 * their count */
	uint64_t decode_ns, decode_tokens, decode_steps;
	struct edgeq_stream_status wstat; /* after the last step */
	int wstat_ret;
	uint64_t wstat_ns;

	pthread_t thread;
	bool thread_started;
	struct eng_watch *watch; /* the pressure monitor, or NULL */
};

static const char *const finish_names[] = {
	[EDGEQ_FINISH_NONE] = "none",
	[EDGEQ_FINISH_STOP] = "stop",
	[EDGEQ_FINISH_LENGTH] = "length",
	[EDGEQ_FINISH_CANCELLED] = "cancelled",
	[EDGEQ_FINISH_ERROR] = "error",
};

const char *edgeq_finish_name(enum edgeq_finish f)
{
	return (unsigned)f <= EDGEQ_FINISH_ERROR ? finish_names[f] : "?";
}

void edgeq_session_params_init(struct edgeq_session_params *p)
{
	memset(p, 0, sizeof(*p));
	p->n_slots = 1;
	p->queue = 8;
	edgeq_ctx_params_init(&p->ctx);
	p->prefix_cache = true;
	p->prefill_chunk = 64;
}

static void gen_free_mem(struct edgeq_gen *g)
{
	int i;

	for (i = 0; i < g->n_stops; i++)
		free(g->stops[i]);
	free(g->prompt);
	free(g->out.p);
	free(g->out_toks.t);
	free(g->out_toks.ns);
	free(g->ev.p);
	free(g->ev_toks.t);
	free(g->ev_toks.ns);
	free(g->pend.p);
	pthread_cond_destroy(&g->cond);
	free(g);
}

/* ---- the engine thread's side */

/* End @sl's request. Caller holds s->lock. */
static void finish_locked(struct edgeq_session *s, struct eng_slot *sl,
			  enum edgeq_finish why)
{
	struct edgeq_gen *g = sl->g;
	uint64_t now = edgeq_now_ns();

	if (!g)
		return;
	if (g->pend.len && buf_add(&g->out, g->pend.p, g->pend.len))
		why = EDGEQ_FINISH_ERROR;
	g->pend.len = 0;
	g->finish = why;
	g->state = GEN_DONE;
	if (g->t_prefilled)
		g->st.decode_ns = now - g->t_prefilled;
	g->st.peak_rss = edgeq_peak_rss();
	g->st.bytes_per_token = s->info->bytes_per_token;
	sl->g = NULL;
	s->running--;
	atomic_store(&sl->progress_ns, 0);
	pthread_cond_broadcast(&g->cond);
}

static void finish(struct edgeq_session *s, struct eng_slot *sl,
		   enum edgeq_finish why)
{
	edgeq_sampler_free(sl->smp);
	sl->smp = NULL;
	sl->have_tok = false;
	sl->logits = NULL;
	pthread_mutex_lock(&s->lock);
	finish_locked(s, sl, why);
	pthread_mutex_unlock(&s->lock);
}

static void fail(struct edgeq_session *s, struct eng_slot *sl, int ret,
		 const struct edgeq_error *err)
{
	pthread_mutex_lock(&s->lock);
	if (sl->g) {
		sl->g->err_code = ret;
		sl->g->err = *err;
	}
	pthread_mutex_unlock(&s->lock);
	finish(s, sl, EDGEQ_FINISH_ERROR);
}

static uint32_t common_prefix(const struct eng_slot *sl, const int32_t *t,
			      size_t n)
{
	uint32_t i, held = edgeq_ctx_pos(sl->ctx);

	for (i = 0; i < held && i < n && sl->hist[i] == t[i]; i++)
		;
	return i;
}

/* Give the queue's head a free slot. Caller holds s->lock. */
static bool admit_locked(struct edgeq_session *s)
{
	struct edgeq_gen *g = s->q_head;
	struct eng_slot *best = NULL, *sl;
	uint32_t best_len = 0, l, keep;
	int i;

	if (!g || s->running >= s->n_slots)
		return false;
	for (i = 0; i < s->n_slots; i++) {
		sl = &s->slots[i];
		if (sl->g)
			continue;
		l = s->p.prefix_cache ?
			    common_prefix(sl, g->prompt, g->n_prompt) :
			    0;
		if (!best || l > best_len) {
			best = sl;
			best_len = l;
		}
	}
	if (edgeq_sampler_new(&g->sp, &best->smp))
		return false; /* validated at submit */
	s->q_head = g->next;
	if (!s->q_head)
		s->q_tail = NULL;
	s->waiting--;
	keep = best_len;
	if (keep >= g->n_prompt)
		keep = (uint32_t)g->n_prompt - 1; /* need the last logits */
	edgeq_ctx_truncate(best->ctx, keep);
	if (best->dctx && edgeq_ctx_pos(best->dctx) > keep)
		edgeq_ctx_truncate(best->dctx, keep);
	/* speculation starts from the session's rate so far (even odds
	 * when there is none) and learns this request's */
	if (s->accepted + s->rejected) {
		best->acc_n = 2.0 * (double)s->accepted /
			      (double)(s->accepted + s->rejected);
		best->rej_n = 2.0 - best->acc_n;
	} else {
		best->acc_n = 1;
		best->rej_n = 1;
	}
	best->off_steps = 0;
	best->probe_every = ENG_PROBE_MIN;
	atomic_store(&best->n_kv, keep);
	best->pos_prompt = keep;
	best->have_tok = false;
	best->logits = NULL;
	best->g = g;
	g->state = GEN_RUNNING;
	g->n_cached = keep;
	g->t_admit = edgeq_now_ns();
	atomic_store(&best->progress_ns, g->t_admit);
	s->running++;
	return true;
}

/* Requests that were cancelled while waiting leave the queue. */
static void reap_queue_locked(struct edgeq_session *s)
{
	struct edgeq_gen **pp = &s->q_head, *g, *prev = NULL;

	while ((g = *pp)) {
		if (s->cancel_all || atomic_load(&g->cancel) ||
		    (g->cancelled && g->cancelled(g->user))) {
			*pp = g->next;
			s->waiting--;
			g->state = GEN_DONE;
			g->finish = EDGEQ_FINISH_CANCELLED;
			pthread_cond_broadcast(&g->cond);
			continue;
		}
		prev = g;
		pp = &g->next;
	}
	s->q_tail = prev;
}

/* Hand released text and the token to the request. */
static int deliver(struct edgeq_session *s, struct edgeq_gen *g,
		   const char *text, size_t len, const int32_t *tok)
{
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	if (len)
		ret = buf_add(&g->out, text, len);
	if (!ret && tok)
		ret = toks_add(&g->out_toks, *tok,
			       s->t_pass_end ? s->t_pass_end : edgeq_now_ns());
	if (tok && s->p.lockstep)
		g->held = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* Release what the pending text allows; true when a stop string ended it. */
static bool release(struct edgeq_session *s, struct edgeq_gen *g,
		    const int32_t *tok, bool final)
{
	bool stopped;
	size_t cut;

	cut = eng_text_release(g->pend.p, g->pend.len,
			       (const char *const *)g->stops, g->n_stops, final,
			       &stopped);
	if (final) {
		/* the rest goes out with the finish, in one event */
		g->pend.len = cut;
		if (tok)
			deliver(s, g, NULL, 0, tok);
		return stopped;
	}
	deliver(s, g, g->pend.p, cut, tok);
	if (stopped) {
		g->pend.len = 0;
		return stopped;
	}
	if (g->pend.len > cut) /* (pend.p is NULL while nothing is pending) */
		memmove(g->pend.p, g->pend.p + cut, g->pend.len - cut);
	g->pend.len -= cut;
	return false;
}

static bool is_cancelled(struct edgeq_session *s, struct edgeq_gen *g)
{
	bool all;

	pthread_mutex_lock(&s->lock);
	all = s->cancel_all;
	pthread_mutex_unlock(&s->lock);
	return all || atomic_load(&g->cancel) ||
	       (g->cancelled && g->cancelled(g->user));
}

/*
 * The context is full: keep the first n_keep tokens and the newest half of
 * the rest. Returns the new position of @tok (unchanged when it fails).
 */
static uint32_t shift(struct edgeq_session *s, struct eng_slot *sl,
		      uint32_t pos, int32_t tok)
{
	uint32_t keep = sl->g->n_keep, drop;
	struct edgeq_error err;

	if (keep > pos / 2)
		keep = pos / 2;
	drop = (pos - keep) / 2;
	if (!drop || ctx_shift(sl->ctx, keep, drop, &err))
		return pos;
	if (sl->dctx)
		edgeq_ctx_truncate(sl->dctx, keep);
	pos -= drop;
	sl->hist[pos] = tok;
	atomic_store(&sl->n_kv, pos);
	pthread_mutex_lock(&s->lock);
	sl->g->n_shifts++;
	pthread_mutex_unlock(&s->lock);
	return pos;
}

/*
 * Hand @tok, placed at @pos, to the request: end it on EOG, a stop string,
 * n_predict or a full context. Returns true while it goes on (then @tok is
 * the slot's next token to decode).
 */
static bool emit(struct edgeq_session *s, struct eng_slot *sl, int32_t tok,
		 uint32_t pos)
{
	struct edgeq_gen *g = sl->g;
	char piece[4100]; /* the longest token the loader accepts is 4096 */
	uint64_t now = edgeq_now_ns();
	int len;

	atomic_store(&sl->progress_ns, now);
	if (tok < 0 || edgeq_token_is_eog(s->m, tok)) {
		release(s, g, NULL, true);
		finish(s, sl, EDGEQ_FINISH_STOP);
		return false;
	}
	pthread_mutex_lock(&s->lock);
	if (!g->st.n_gen)
		g->st.ttft_ns = now - g->t_submit;
	g->st.n_gen++;
	s->gen_tokens++;
	pthread_mutex_unlock(&s->lock);
	sl->hist[pos] = tok;
	len = edgeq_token_to_piece(s->m, tok, piece, sizeof(piece));
	if (len > 0 && buf_add(&g->pend, piece, (size_t)len)) {
		struct edgeq_error e;

		edgeq_error_set(&e, ENOMEM, "out of memory for the text");
		fail(s, sl, -ENOMEM, &e);
		return false;
	}
	if (release(s, g, &tok, false)) {
		finish(s, sl, EDGEQ_FINISH_STOP);
		return false;
	}
	if (pos + 1 >= sl->n_ctx && s->p.context_shift &&
	    !(g->n_predict >= 0 && g->st.n_gen >= (uint32_t)g->n_predict))
		pos = shift(s, sl, pos, tok);
	if ((g->n_predict >= 0 && g->st.n_gen >= (uint32_t)g->n_predict) ||
	    pos + 1 >= sl->n_ctx) {
		release(s, g, NULL, true);
		finish(s, sl, EDGEQ_FINISH_LENGTH);
		return false;
	}
	sl->logits = NULL;
	sl->next_tok = tok;
	sl->have_tok = true;
	return true;
}

/* Sample from fresh logits: emit the token, or end the request. */
static void sample(struct edgeq_session *s, struct eng_slot *sl)
{
	uint32_t pos = edgeq_ctx_pos(sl->ctx);
	int32_t tok;

	if (sl->g->n_predict == 0) {
		finish(s, sl, EDGEQ_FINISH_LENGTH);
		return;
	}
	tok = edgeq_sampler_sample(sl->smp, sl->logits, s->info->n_vocab,
				   sl->hist, pos);
	emit(s, sl, tok, pos);
}

static int32_t argmax(const float *l, uint32_t n)
{
	uint32_t i, best = 0;

	for (i = 1; i < n; i++)
		if (l[i] > l[best])
			best = i;
	return (int32_t)best;
}

/* Feed the draft model's context the target's history up to @upto. */
static int draft_sync(struct eng_slot *sl, uint32_t upto)
{
	uint32_t dp = edgeq_ctx_pos(sl->dctx);

	if (dp > upto)
		edgeq_ctx_truncate(sl->dctx, dp = upto);
	if (dp == upto)
		return 0;
	return edgeq_decode(sl->dctx, sl->hist + dp, upto - dp, NULL, NULL);
}

/*
 * Draft up to @k tokens after the slot's next token into @out. A draft
 * model first catches up with the target's history. After a verify pass
 * that accepted every draft, that is the last draft (proposed, never
 * read): one more draft pass that comes with every k drafts, so it counts
 * in the per-token draft cost (left out, c was a third low at k = 2 and
 * the session drafted where it lost: 0.7x measured against 1.0x
 * predicted). More than one token behind is the prompt or the tokens of
 * plain steps (drafting was off): that goes to *@catchup_ns.
 */
static int make_draft(struct edgeq_session *s, struct eng_slot *sl, int k,
		      int32_t *out, uint64_t *catchup_ns)
{
	uint32_t pos0 = edgeq_ctx_pos(sl->ctx), V = s->info->n_vocab;
	struct edgeq_error err;
	uint64_t t0;
	const float *lg;
	int32_t tok = sl->next_tok;
	bool behind;
	int j;

	switch (s->draft.kind) {
	case EDGEQ_DRAFT_LOOKUP:
		return (int)eng_lookup_draft(sl->hist, pos0 + 1, out,
					     (size_t)k);
	case EDGEQ_DRAFT_LAYERS:
		for (j = 0; j < k; j++) {
			if (ctx_draft_step(sl->ctx, tok, pos0 + (uint32_t)j,
					   s->draft.layers, &err))
				return j;
			tok = argmax(ctx_logits(sl->ctx), V);
			out[j] = tok;
		}
		return k;
	case EDGEQ_DRAFT_MODEL:
		/* catch up with what the target holds, then draft */
		t0 = edgeq_now_ns();
		behind = edgeq_ctx_pos(sl->dctx) + 1 < pos0;
		if (draft_sync(sl, pos0))
			return 0;
		if (behind)
			*catchup_ns = edgeq_now_ns() - t0;
		if (edgeq_decode(sl->dctx, sl->hist + pos0, 1, &lg, &err))
			return 0;
		for (j = 0; j < k; j++) {
			out[j] = argmax(lg, V);
			if (j + 1 < k &&
			    edgeq_decode(sl->dctx, &out[j], 1, &lg, &err))
				return j + 1;
		}
		return k;
	default:
		return 0;
	}
}

/* How many tokens to draft for @sl this step (0: a plain step). */
static int draft_len(struct edgeq_session *s, struct eng_slot *sl)
{
	struct edgeq_gen *g = sl->g;
	uint32_t pos = edgeq_ctx_pos(sl->ctx);
	double a;
	int k, left;

	if (!s->draft.kind || !s->ws || s->t_plain <= 0)
		return 0; /* no speculation, or no plain pass measured yet */
	if (s->draft.fixed) {
		k = s->draft.max_len;
	} else {
		a = sl->acc_n / (sl->acc_n + sl->rej_n);
		k = eng_draft_choose(a, s->cost, s->draft.max_len, NULL);
		k = eng_draft_probe(k, &sl->off_steps, &sl->probe_every);
	}
	sl->k = k;
	left = g->n_predict >= 0 ? g->n_predict - (int)g->st.n_gen - 1 :
				   INT32_MAX;
	if (k > left)
		k = left;
	if ((int64_t)k + pos + 2 > (int64_t)sl->n_ctx)
		k = (int)sl->n_ctx - (int)pos - 2;
	return k > 0 ? k : 0;
}

/*
 * After the verify pass over [next, d1..dk]: accept drafts in order by the
 * speculative sampling rule, take the target's token at the first
 * rejection (or the bonus token after all k), roll the KV cache back past
 * the rejected drafts and emit.
 */
static void verify(struct edgeq_session *s, struct eng_slot *sl)
{
	uint32_t V = s->info->n_vocab, n_d = (uint32_t)sl->n_draft;
	uint32_t pos0 = edgeq_ctx_pos(sl->ctx) - 1 - n_d, i, m = 0, keep;
	int32_t out[ENG_DRAFT_MAX + 1];
	bool acc = true;

	for (i = 0; i < n_d && acc; i++) {
		out[m++] = sampler_verify(sl->smp, sl->vlogits + (size_t)i * V,
					  V, sl->hist, pos0 + 1 + i,
					  sl->vtoks[1 + i], &acc);
		if (acc)
			sl->hist[pos0 + 1 + i] = out[m - 1];
	}
	if (acc) /* all accepted: the pass also gave the next token */
		out[m++] = edgeq_sampler_sample(sl->smp,
						sl->vlogits + (size_t)n_d * V,
						V, sl->hist, pos0 + 1 + n_d);
	keep = pos0 + m; /* next, then the accepted drafts */
	edgeq_ctx_truncate(sl->ctx, keep);
	if (sl->dctx && edgeq_ctx_pos(sl->dctx) > keep)
		edgeq_ctx_truncate(sl->dctx, keep);
	atomic_store(&sl->n_kv, keep);
	sl->acc_n = sl->acc_n * 0.9 + (m - 1);
	sl->rej_n = sl->rej_n * 0.9 + (acc ? 0 : 1);
	pthread_mutex_lock(&s->lock);
	sl->g->st.n_drafted += n_d;
	sl->g->st.n_accepted += m - 1;
	sl->g->st.n_rejected += acc ? 0 : 1;
	sl->g->st.n_verify += n_d > 0;
	/* the run's mean of the cost the choices used, not the last one:
	 * what the ledger's prediction for the whole run should take (the
	 * last value moved 0.25-0.49 between runs of the same setup) */
	sl->g->cost_sum += s->cost;
	sl->g->st.draft_cost = sl->g->cost_sum / ++sl->g->cost_n;
	s->drafted += n_d;
	s->accepted += m - 1;
	s->rejected += acc ? 0 : 1;
	s->verifies += n_d > 0;
	pthread_mutex_unlock(&s->lock);
	for (i = 0; i < m; i++)
		if (!emit(s, sl, out[i], pos0 + 1 + i))
			return;
}

/* One forward pass's work for one slot. */
struct eng_work {
	struct eng_slot *sl;
	const int32_t *toks;
	size_t n;
	bool prefill;
	float *all; /* verifying drafts: every position's logits */
};

static int run_work(struct edgeq_session *s, struct eng_work *w, int nw,
		    struct edgeq_error *err, int *failed)
{
	struct ctx_batch_item it[EDGEQ_SESSION_MAX_SLOTS];
	const float *lg;
	bool batch = s->ws != NULL;
	int i, ret;

	for (i = 0; i < nw && batch; i++)
		if (ctx_has_hooks(w[i].sl->ctx))
			batch = false; /* placement runs its own passes */
	if (batch) {
		for (i = 0; i < nw; i++)
			it[i] = (struct ctx_batch_item){ w[i].sl->ctx,
							 w[i].toks, w[i].n,
							 w[i].all };
		*failed = -1;
		ret = ctx_decode_batch(s->ws, it, nw, err);
		for (i = 0; !ret && i < nw; i++)
			w[i].sl->logits = ctx_logits(w[i].sl->ctx);
		return ret;
	}
	/* a pass per slot, its placement hooks used (verifying a draft:
	 * every position's logits) */
	for (i = 0; i < nw; i++) {
		if (w[i].all)
			ret = ctx_decode_all(w[i].sl->ctx, w[i].toks, w[i].n,
					     w[i].all, err);
		else
			ret = edgeq_decode(w[i].sl->ctx, w[i].toks, w[i].n, &lg,
					   err);
		if (ret) {
			*failed = i;
			return ret;
		}
		w[i].sl->logits = w[i].all ? NULL : lg;
	}
	return 0;
}

/* The draft cost's moving average; the first measurement stands alone. */
static double cost_update(double avg, uint64_t n, double v)
{
	if (v < 0)
		v = 0;
	return n ? 0.7 * avg + 0.3 * v : v;
}

/* One forward pass over the slots that have work; returns how many ran. */
static int step(struct edgeq_session *s)
{
	struct eng_work w[EDGEQ_SESSION_MAX_SLOTS];
	struct eng_slot *pre[EDGEQ_SESSION_MAX_SLOTS];
	struct edgeq_error err;
	struct eng_slot *sl;
	struct edgeq_gen *g;
	int nw = 0, npre = 0, i, j, k, ret, failed = -1, n_drafts = 0;
	size_t n, budget = s->p.prefill_chunk;
	uint64_t t0, t_draft = 0, t_pass, t_step, gen0;

	if (s->p.token_delay_ms > 0)
		usleep((useconds_t)s->p.token_delay_ms * 1000);
	t_step = edgeq_now_ns();
	for (i = 0; i < s->n_slots; i++) {
		bool held;

		sl = &s->slots[i];
		pthread_mutex_lock(&s->lock);
		g = sl->g;
		held = g && g->held;
		pthread_mutex_unlock(&s->lock);
		if (!g)
			continue;
		if (is_cancelled(s, g)) {
			release(s, g, NULL, true);
			finish(s, sl, EDGEQ_FINISH_CANCELLED);
			continue;
		}
		if (held)
			continue; /* lockstep: its consumer has not come back */
		if (sl->have_tok) {
			k = draft_len(s, sl);
			if (k) {
				uint64_t cu = 0;

				t0 = edgeq_now_ns();
				k = make_draft(s, sl, k, sl->vtoks + 1, &cu);
				t_draft += edgeq_now_ns() - t0 - cu;
				g->st.draft_ns += edgeq_now_ns() - t0;
			}
			sl->vtoks[0] = sl->next_tok;
			sl->n_draft = k;
			n_drafts += k;
			w[nw++] = (struct eng_work){ sl, sl->vtoks,
						     1 + (size_t)k, false,
						     k ? sl->vlogits : NULL };
			continue;
		}
		/* prefilling: in the order the requests were admitted */
		for (j = npre; j > 0 && pre[j - 1]->g->t_admit > g->t_admit;
		     j--)
			pre[j] = pre[j - 1];
		pre[j] = sl;
		npre++;
	}
	/*
	 * Prompt chunks share one budget of tokens per step, in admission
	 * order. After the first, a prompt joins only whole: a part of it
	 * would make the pass (compute bound) longer, so the earlier prompts'
	 * first tokens later, and give it no first token in exchange.
	 */
	for (j = 0; j < npre && budget; j++) {
		sl = pre[j];
		g = sl->g;
		n = g->n_prompt - sl->pos_prompt;
		if (n > budget && j > 0)
			break;
		if (n > budget)
			n = budget;
		budget -= n;
		memcpy(sl->hist + sl->pos_prompt, g->prompt + sl->pos_prompt,
		       n * sizeof(int32_t));
		w[nw++] = (struct eng_work){ sl, g->prompt + sl->pos_prompt, n,
					     true, NULL };
	}
	if (!nw)
		return 0;
	edgeq_error_clear(&err);
	t0 = edgeq_now_ns();
	ret = run_work(s, w, nw, &err, &failed);
	t_pass = edgeq_now_ns() - t0;
	s->t_pass_end = t0 + t_pass; /* the stamp of the tokens it gives */
	pthread_mutex_lock(&s->lock);
	s->steps++;
	gen0 = s->gen_tokens;
	if (!ret && !npre) {
		s->passes++;
		/* the draft cost the length choice weighs: drafting plus the
		 * verify pass's extra time, per draft token, over a plain
		 * pass */
		if (!n_drafts)
			s->t_plain = s->t_plain > 0 ?
					     0.8 * s->t_plain + 0.2 * t_pass :
					     (double)t_pass;
		else if (s->t_plain > 0)
			s->cost = cost_update(
				s->cost, s->n_cost++,
				((double)(t_draft + t_pass) / s->t_plain - 1) /
					n_drafts);
	}
	pthread_mutex_unlock(&s->lock);
	for (i = 0; i < nw; i++) {
		sl = w[i].sl;
		g = sl->g;
		if (ret && (i == failed || failed < 0)) {
			if (ret == -ENOSPC) {
				release(s, g, NULL, true);
				finish(s, sl, EDGEQ_FINISH_LENGTH);
			} else {
				fail(s, sl, ret, &err);
			}
			continue;
		}
		if (ret && i > failed)
			continue; /* not run; again next step */
		atomic_store(&sl->n_kv, edgeq_ctx_pos(sl->ctx));
		atomic_store(&sl->progress_ns, edgeq_now_ns());
		if (w[i].prefill) {
			sl->pos_prompt += w[i].n;
			g->st.n_prompt_passes++;
			/* the draft model reads the prompt with the target */
			if (sl->dctx)
				draft_sync(sl, (uint32_t)sl->pos_prompt);
			pthread_mutex_lock(&s->lock);
			s->prompt_tokens += w[i].n;
			pthread_mutex_unlock(&s->lock);
			if (sl->pos_prompt < g->n_prompt)
				continue;
			g->t_prefilled = edgeq_now_ns();
			g->st.prompt_ns = g->t_prefilled - g->t_admit;
		} else {
			sl->have_tok = false;
			g->st.n_eval++;
			if (w[i].all) {
				verify(s, sl);
				continue;
			}
		}
		sample(s, sl);
	}
	if (!ret && !npre) {
		pthread_mutex_lock(&s->lock);
		s->decode_ns += edgeq_now_ns() - t_step;
		s->decode_tokens += s->gen_tokens - gen0;
		s->decode_steps++;
		pthread_mutex_unlock(&s->lock);
	}
	return nw;
}

static void *engine_main(void *arg)
{
	struct edgeq_session *s = arg;
	uint64_t budget, acks;
	int worked;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		reap_queue_locked(s);
		while (admit_locked(s))
			;
		if (!s->running) {
			if (s->stop)
				break;
			pthread_cond_wait(&s->work, &s->lock);
			continue;
		}
		budget = s->pending_budget;
		s->pending_budget = 0;
		acks = s->acks;
		pthread_mutex_unlock(&s->lock);
		/* a token boundary: no forward pass runs */
		if (budget)
			edgeq_model_set_weights_budget(s->m, budget);
		worked = step(s);
		pthread_mutex_lock(&s->lock);
		/* lockstep: every running generation waits for its consumer */
		if (!worked && s->p.lockstep && s->acks == acks && !s->stop &&
		    !s->cancel_all)
			pthread_cond_wait(&s->work, &s->lock);
		if (edgeq_now_ns() - s->wstat_ns > 100000000ull) {
			s->wstat_ret =
				edgeq_model_weights_status(s->m, &s->wstat);
			s->wstat_ns = edgeq_now_ns();
		}
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* ---- the callers' side */

static int check_draft(struct edgeq_model *m, struct edgeq_draft_params *d,
		       struct edgeq_error *err)
{
	uint32_t nl = edgeq_model_info(m)->n_layer;

	if (!d->kind)
		return 0;
	if (!d->max_len)
		d->max_len = 4;
	if (d->max_len < 1 || d->max_len > ENG_DRAFT_MAX)
		return edgeq_error_set(err, EINVAL,
				       "draft length must be 1..%d (got %d)",
				       ENG_DRAFT_MAX, d->max_len);
	switch (d->kind) {
	case EDGEQ_DRAFT_LOOKUP:
		return 0;
	case EDGEQ_DRAFT_LAYERS:
		if (d->layers < 1 || (uint32_t)d->layers >= nl)
			return edgeq_error_set(
				err, EINVAL,
				"--draft layers:%d: self-speculation drafts with 1 to %u of the model's %u layers",
				d->layers, nl - 1, nl);
		return 0;
	case EDGEQ_DRAFT_MODEL:
		if (!d->model)
			return edgeq_error_set(err, EINVAL,
					       "no draft model given");
		return edgeq_draft_check_vocab(m, d->model, err);
	default:
		return edgeq_error_set(err, EINVAL, "unknown draft kind %d",
				       d->kind);
	}
}

/* A slot's speculation state: verify logits, the draft model's context. */
static int slot_draft_init(struct edgeq_session *s, struct eng_slot *sl,
			   struct edgeq_error *err)
{
	struct edgeq_ctx_params cp = s->p.ctx;

	if (!s->draft.kind)
		return 0;
	sl->vlogits = malloc((size_t)(s->draft.max_len + 1) * s->info->n_vocab *
			     sizeof(float));
	if (!sl->vlogits)
		return edgeq_error_set(err, ENOMEM,
				       "out of memory for draft logits");
	if (s->draft.kind != EDGEQ_DRAFT_MODEL)
		return 0;
	if (s->draft.ctx) { /* the caller's (placed, perhaps) */
		if (ctx_model(s->draft.ctx) != s->draft.model)
			return edgeq_error_set(
				err, EINVAL,
				"the draft context is not of the draft model");
		if (edgeq_ctx_n_ctx(s->draft.ctx) < sl->n_ctx)
			return edgeq_error_set(
				err, EINVAL,
				"the draft context holds %u positions, the target's %u",
				edgeq_ctx_n_ctx(s->draft.ctx), sl->n_ctx);
		sl->dctx = s->draft.ctx;
		sl->dctx_own = false;
		edgeq_ctx_truncate(sl->dctx, 0); /* what it held is not ours */
		return 0;
	}
	cp.n_ctx = sl->n_ctx;
	sl->dctx_own = true;
	return edgeq_ctx_new(s->draft.model, &cp, &sl->dctx, err);
}

static int session_alloc(struct edgeq_model *m,
			 const struct edgeq_session_params *p,
			 struct edgeq_session **out, struct edgeq_error *err)
{
	struct edgeq_draft_params d = p->draft;
	struct edgeq_session *s;
	int ret;

	if (p->n_slots < 1 || p->n_slots > EDGEQ_SESSION_MAX_SLOTS)
		return edgeq_error_set(err, EINVAL,
				       "slots must be 1..%d (got %d)",
				       EDGEQ_SESSION_MAX_SLOTS, p->n_slots);
	if (p->queue < 0)
		return edgeq_error_set(err, EINVAL,
				       "the wait queue must not be negative");
	ret = check_draft(m, &d, err);
	if (ret)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	s->m = m;
	s->info = edgeq_model_info(m);
	s->p = *p;
	if (!s->p.prefill_chunk)
		s->p.prefill_chunk = 64;
	if (s->p.prefill_chunk > 256)
		s->p.prefill_chunk = 256;
	s->draft = d;
	s->slots = calloc((size_t)p->n_slots, sizeof(*s->slots));
	if (!s->slots) {
		free(s);
		return edgeq_error_set(err, ENOMEM, "out of memory");
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->work, NULL);
	s->wstat_ret = edgeq_model_weights_status(m, &s->wstat);
	*out = s;
	return 0;
}

static void slot_init(struct eng_slot *sl, int idx, struct edgeq_ctx *c,
		      bool own)
{
	sl->idx = idx;
	sl->ctx = c;
	sl->own_ctx = own;
	sl->hist = ctx_history(c);
	sl->n_ctx = edgeq_ctx_n_ctx(c);
	atomic_store(&sl->n_kv, edgeq_ctx_pos(c));
}

/* The batch workspace: several slots, or drafts to verify k + 1 at once. */
static int workspace_init(struct edgeq_session *s, struct edgeq_error *err)
{
	uint32_t per = 1 + (s->draft.kind ? (uint32_t)s->draft.max_len : 0);

	if ((s->p.n_slots < 2 || s->p.sequential) && !s->draft.kind)
		return 0;
	return ctx_workspace_new(
		s->m, (uint32_t)s->p.n_slots * per + s->p.prefill_chunk, &s->ws,
		err);
}

static int session_start(struct edgeq_session *s, struct edgeq_error *err)
{
	if (pthread_create(&s->thread, NULL, engine_main, s))
		return edgeq_error_set(err, EAGAIN,
				       "cannot start the engine thread");
	s->thread_started = true;
	return 0;
}

/* the pressure watch's view of the session (engine/watch.h) */
static int watch_weights(void *arg, struct edgeq_stream_status *st)
{
	return edgeq_session_weights_status(arg, st);
}

static void watch_budget(void *arg, uint64_t bytes)
{
	edgeq_session_set_weights_budget(arg, bytes);
}

int edgeq_session_new(struct edgeq_model *m,
		      const struct edgeq_session_params *p,
		      struct edgeq_session **out, struct edgeq_error *err)
{
	struct edgeq_session *s;
	struct edgeq_ctx *c;
	int i, ret;

	if (p->draft.ctx)
		return edgeq_error_set(
			err, EINVAL,
			"a caller's draft context serves one-slot generations only");
	ret = session_alloc(m, p, &s, err);
	if (ret)
		return ret;
	ret = workspace_init(s, err);
	if (ret)
		goto fail;
	for (i = 0; i < p->n_slots; i++) {
		ret = edgeq_ctx_new(m, &p->ctx, &c, err);
		if (ret == -ENOMEM && i > 0) {
			/* as many KV caches as memory allows */
			edgeq_error_clear(err);
			ret = 0;
			break;
		}
		if (ret)
			goto fail;
		slot_init(&s->slots[i], i, c, true);
		s->n_slots = i + 1;
		ret = slot_draft_init(s, &s->slots[i], err);
		if (ret)
			goto fail;
		if (p->on_ctx) {
			ret = p->on_ctx(p->hook_arg, c, i, err);
			if (ret)
				goto fail;
		}
	}
	ret = session_start(s, err);
	if (!ret) {
		const struct eng_watch_ops ops = { s, watch_weights,
						   watch_budget };

		ret = eng_watch_start(&ops, p, &s->watch, err);
	}
	s->p.pressure = NULL; /* the caller's: read by eng_watch_start only */
	if (ret)
		goto fail;
	*out = s;
	return 0;
fail:
	edgeq_session_free(s);
	return ret;
}

int edgeq_session_pressure(struct edgeq_session *s,
			   struct edgeq_pressure_state *st, const char **why)
{
	return eng_watch_get(s->watch, st, why);
}

int eng_session_new_on(struct edgeq_ctx *c,
		       const struct edgeq_session_params *p,
		       struct edgeq_session **out, struct edgeq_error *err)
{
	struct edgeq_session_params q = *p;
	struct edgeq_session *s;
	int ret;

	q.n_slots = 1;
	q.prefix_cache = true;
	q.on_ctx = NULL;
	q.on_ctx_free = NULL;
	q.pressure = NULL; /* the caller's context, the caller's monitor */
	q.on_pressure = NULL;
	ret = session_alloc(ctx_model(c), &q, &s, err);
	if (ret)
		return ret;
	slot_init(&s->slots[0], 0, c, false);
	s->n_slots = 1;
	ret = workspace_init(s, err);
	if (!ret)
		ret = slot_draft_init(s, &s->slots[0], err);
	if (!ret)
		ret = session_start(s, err);
	if (ret) {
		edgeq_session_free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void edgeq_session_cancel_all(struct edgeq_session *s)
{
	pthread_mutex_lock(&s->lock);
	s->cancel_all = true;
	pthread_cond_broadcast(&s->work);
	pthread_mutex_unlock(&s->lock);
}

void edgeq_session_free(struct edgeq_session *s)
{
	struct eng_slot *sl;
	int i;

	if (!s)
		return;
	eng_watch_stop(s->watch); /* it sets budgets through the session */
	if (s->thread_started) {
		pthread_mutex_lock(&s->lock);
		s->cancel_all = true;
		s->stop = true;
		pthread_cond_broadcast(&s->work);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
	}
	for (i = 0; i < s->n_slots; i++) {
		sl = &s->slots[i];
		edgeq_sampler_free(sl->smp);
		free(sl->vlogits);
		if (sl->dctx_own)
			edgeq_ctx_free(sl->dctx);
		if (!sl->own_ctx)
			continue;
		if (s->p.on_ctx_free)
			s->p.on_ctx_free(s->p.hook_arg, sl->ctx, i);
		edgeq_ctx_free(sl->ctx);
	}
	free(s->slots);
	edgeq_ctx_free(s->ws);
	pthread_cond_destroy(&s->work);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static int gen_copy_request(struct edgeq_gen *g,
			    const struct edgeq_gen_request *rq,
			    struct edgeq_error *err)
{
	size_t l;
	int i;

	g->prompt = malloc(rq->n_toks * sizeof(int32_t));
	if (!g->prompt)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	memcpy(g->prompt, rq->toks, rq->n_toks * sizeof(int32_t));
	g->n_prompt = rq->n_toks;
	g->n_predict = rq->n_predict;
	g->n_keep = rq->n_keep;
	g->sp = rq->sampling;
	g->cancelled = rq->cancelled;
	g->user = rq->user;
	if (rq->n_stops < 0 || rq->n_stops > EDGEQ_GEN_MAX_STOPS)
		return edgeq_error_set(err, EINVAL,
				       "at most %d stop strings (got %d)",
				       EDGEQ_GEN_MAX_STOPS, rq->n_stops);
	for (i = 0; i < rq->n_stops; i++) {
		l = rq->stops[i] ? strlen(rq->stops[i]) : 0;
		if (!l || l > EDGEQ_GEN_MAX_STOP_LEN)
			return edgeq_error_set(
				err, EINVAL,
				"stop string %d is empty or longer than %d bytes",
				i, EDGEQ_GEN_MAX_STOP_LEN);
		g->stops[i] = strdup(rq->stops[i]);
		if (!g->stops[i])
			return edgeq_error_set(err, ENOMEM, "out of memory");
		g->n_stops = i + 1;
	}
	return 0;
}

int edgeq_session_submit(struct edgeq_session *s,
			 const struct edgeq_gen_request *rq,
			 struct edgeq_gen **out, struct edgeq_error *err)
{
	struct edgeq_sampler *smp;
	struct edgeq_gen *g;
	uint32_t n_ctx = s->slots[0].n_ctx;
	size_t i;
	int ret;

	if (!rq->n_toks || !rq->toks)
		return edgeq_error_set(err, EINVAL, "empty prompt");
	if (rq->n_toks >= n_ctx)
		return edgeq_error_set(
			err, E2BIG,
			"the prompt (%zu tokens) does not fit in the context of %u",
			rq->n_toks, n_ctx);
	for (i = 0; i < rq->n_toks; i++)
		if (rq->toks[i] < 0 ||
		    (uint32_t)rq->toks[i] >= s->info->n_vocab)
			return edgeq_error_set(
				err, EINVAL,
				"prompt token %d is out of range (vocabulary of %u)",
				rq->toks[i], s->info->n_vocab);
	if (rq->n_predict < -1)
		return edgeq_error_set(err, EINVAL,
				       "n_predict must be -1 or more");
	if (edgeq_sampler_new(&rq->sampling, &smp))
		return edgeq_error_set(err, EINVAL,
				       "invalid sampling parameters");
	edgeq_sampler_free(smp);
	g = calloc(1, sizeof(*g));
	if (!g)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	g->s = s;
	pthread_cond_init(&g->cond, NULL);
	ret = gen_copy_request(g, rq, err);
	if (ret) {
		gen_free_mem(g);
		return ret;
	}
	g->st.n_prompt = (uint32_t)rq->n_toks;
	g->t_submit = edgeq_now_ns();
	pthread_mutex_lock(&s->lock);
	if (s->cancel_all) {
		pthread_mutex_unlock(&s->lock);
		gen_free_mem(g);
		return edgeq_error_set(err, ESHUTDOWN,
				       "the session is shutting down");
	}
	/* a free slot takes it at once, unless others wait before it */
	if (s->waiting >= s->p.queue + (s->n_slots - s->running)) {
		pthread_mutex_unlock(&s->lock);
		gen_free_mem(g);
		return edgeq_error_set(
			err, EBUSY, "all %d slots busy and %d requests queued",
			s->n_slots, s->p.queue);
	}
	if (s->q_tail)
		s->q_tail->next = g;
	else
		s->q_head = g;
	s->q_tail = g;
	s->waiting++;
	pthread_cond_broadcast(&s->work);
	pthread_mutex_unlock(&s->lock);
	*out = g;
	return 0;
}

int edgeq_gen_next(struct edgeq_gen *g, struct edgeq_gen_event *ev,
		   struct edgeq_error *err)
{
	struct edgeq_session *s = g->s;
	struct eng_buf tb;
	struct tok_buf tt;
	int ret;

	pthread_mutex_lock(&s->lock);
	if (g->held) { /* lockstep: done with the last event */
		g->held = false;
		s->acks++;
		pthread_cond_broadcast(&s->work);
	}
	while (!g->out.len && !g->out_toks.n && g->state != GEN_DONE)
		pthread_cond_wait(&g->cond, &s->lock);
	/* hand over the output buffers, take the consumed ones back */
	tb = g->ev;
	g->ev = g->out;
	g->out = tb;
	g->out.len = 0;
	tt = g->ev_toks;
	g->ev_toks = g->out_toks;
	g->out_toks = tt;
	g->out_toks.n = 0;
	memset(ev, 0, sizeof(*ev));
	ev->text = g->ev.p ? g->ev.p : "";
	ev->len = g->ev.len;
	ev->toks = g->ev_toks.t;
	ev->tok_ns = g->ev_toks.ns;
	ev->n_toks = g->ev_toks.n;
	ret = 1;
	if (g->state == GEN_DONE) {
		ev->finish = g->finish;
		ret = 0;
		if (g->finish == EDGEQ_FINISH_ERROR) {
			ret = g->err_code ? g->err_code : -EIO;
			if (err)
				*err = g->err;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

void edgeq_gen_cancel(struct edgeq_gen *g)
{
	atomic_store(&g->cancel, true);
	pthread_mutex_lock(&g->s->lock);
	pthread_cond_broadcast(&g->s->work);
	pthread_mutex_unlock(&g->s->lock);
}

void edgeq_gen_get_stats(const struct edgeq_gen *g, struct edgeq_gen_stats *st)
{
	struct edgeq_gen *w = (struct edgeq_gen *)g;

	pthread_mutex_lock(&w->s->lock);
	*st = g->st;
	if (g->state != GEN_DONE && g->t_prefilled)
		st->decode_ns = edgeq_now_ns() - g->t_prefilled;
	pthread_mutex_unlock(&w->s->lock);
}

uint32_t edgeq_gen_n_cached(const struct edgeq_gen *g)
{
	return g->n_cached;
}

uint32_t edgeq_gen_n_shifts(const struct edgeq_gen *g)
{
	return g->n_shifts;
}

void edgeq_gen_free(struct edgeq_gen *g)
{
	struct edgeq_session *s;
	struct edgeq_gen **pp;

	if (!g)
		return;
	s = g->s;
	atomic_store(&g->cancel, true);
	pthread_mutex_lock(&s->lock);
	if (g->state == GEN_QUEUED) {
		for (pp = &s->q_head; *pp && *pp != g; pp = &(*pp)->next)
			;
		if (*pp) {
			*pp = g->next;
			s->waiting--;
			s->q_tail = NULL;
			for (pp = &s->q_head; *pp; pp = &(*pp)->next)
				s->q_tail = *pp;
		}
		g->state = GEN_DONE;
	}
	pthread_cond_broadcast(&s->work);
	while (g->state != GEN_DONE)
		pthread_cond_wait(&g->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	gen_free_mem(g);
}

void edgeq_session_set_weights_budget(struct edgeq_session *s, uint64_t bytes)
{
	pthread_mutex_lock(&s->lock);
	if (!s->running) /* idle: no forward pass can run now */
		edgeq_model_set_weights_budget(s->m, bytes);
	else
		s->pending_budget = bytes;
	pthread_mutex_unlock(&s->lock);
}

int edgeq_session_weights_status(struct edgeq_session *s,
				 struct edgeq_stream_status *st)
{
	int ret;

	pthread_mutex_lock(&s->lock);
	if (!s->running) { /* idle: no forward pass can run now */
		s->wstat_ret = edgeq_model_weights_status(s->m, &s->wstat);
		s->wstat_ns = edgeq_now_ns();
	}
	*st = s->wstat;
	ret = s->wstat_ret;
	pthread_mutex_unlock(&s->lock);
	return ret;
}

void edgeq_session_status(struct edgeq_session *s,
			  struct edgeq_session_status *st)
{
	uint64_t now = edgeq_now_ns(), p;
	int i;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&s->lock);
	st->n_slots = s->n_slots;
	st->running = s->running;
	st->waiting = s->waiting;
	st->queue = s->p.queue;
	st->steps = s->steps;
	st->prompt_tokens = s->prompt_tokens;
	st->gen_tokens = s->gen_tokens;
	st->drafted = s->drafted;
	st->accepted = s->accepted;
	st->rejected = s->rejected;
	st->verifies = s->verifies;
	st->passes = s->passes;
	st->decode_ns = s->decode_ns;
	st->decode_tokens = s->decode_tokens;
	st->decode_steps = s->decode_steps;
	st->draft_accept = s->accepted + s->rejected ?
				   (double)s->accepted /
					   (double)(s->accepted + s->rejected) :
				   0;
	st->draft_cost = s->cost;
	for (i = 0; i < s->n_slots; i++) {
		st->kv_used += atomic_load(&s->slots[i].n_kv);
		st->kv_cap += s->slots[i].n_ctx;
		p = atomic_load(&s->slots[i].progress_ns);
		if (s->draft.kind && s->slots[i].g && !s->slots[i].k)
			st->draft_off++;
		if (s->slots[i].g && p && now - p > st->stalled_ns)
			st->stalled_ns = now - p;
	}
	pthread_mutex_unlock(&s->lock);
}
