/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The engine session: the one place that owns generation. A session holds a
 * model's slots (each a context, its token history and the sampler and text
 * state of the request it runs), a bounded first-come-first-served wait
 * queue, and one engine thread that steps every active slot: admit waiting
 * requests into free slots (reusing the longest cached prefix), prefill in
 * chunks, sample, release text that is whole UTF-8 and cannot be the start
 * of a stop string, and run the next forward pass. `edgeq run`, `edgeq
 * serve` and `edgeq bench` generate through it; edgeq_generate() is a
 * one-slot session on the caller's context.
 *
 * Requests are pulled: submit, then call edgeq_gen_next() until it returns
 * 0 (finished) or an error. A request ends early when its cancel callback
 * says so (polled by the engine thread at every step, also while queued),
 * when edgeq_gen_cancel() is called, or when the session cancels all.
 *
 * Errors are -errno plus a message in struct edgeq_error; nothing prints.
 */
#ifndef EDGEQ_SESSION_H
#define EDGEQ_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <edgeq/engine.h>
#include <edgeq/stream.h>

#ifdef __cplusplus
extern "C" {
#endif

struct edgeq_session;
struct edgeq_gen;
struct edgeq_pressure_opts;
struct edgeq_pressure_state;

#define EDGEQ_SESSION_MAX_SLOTS 64
#define EDGEQ_GEN_MAX_STOPS 8
#define EDGEQ_GEN_MAX_STOP_LEN 256

struct edgeq_session_params {
	int n_slots; /* generations decoded together, 1..64 (default 1) */
	int queue;   /* requests that may wait for a slot (default 8) */
	struct edgeq_ctx_params ctx; /* every slot's context */
	bool prefix_cache; /* reuse a slot's KV cache for a common prefix */
	/* sequential: one forward pass per slot and step instead of one
	 * batched pass over all of them (the baseline of the benchmark) */
	bool sequential;
	/* prompt tokens per step (64), shared by the prompts being read in
	 * the order they were admitted (after the first, a prompt joins only
	 * whole), beside the decoding slots' tokens */
	uint32_t prefill_chunk;
	int token_delay_ms; /* test hook: sleep before each step */
	/* speculative decoding in every slot (kind NONE: off); a draft
	 * model must outlive the session */
	struct edgeq_draft_params draft;
	/* at the context limit, keep each request's first n_keep tokens and
	 * the newest half of the rest (keys re-roped) and go on, instead of
	 * ending with EDGEQ_FINISH_LENGTH (off by default) */
	bool context_shift;
	/* lockstep: a generation's next token waits until its consumer has
	 * come back to edgeq_gen_next() for more, so that what the consumer
	 * does between two events (re-placing ops, throttling a device)
	 * applies to the very next token (edgeq_generate runs this way) */
	bool lockstep;
	/*
	 * Placement hooks, called with @hook_arg: on_ctx after a slot's
	 * context is created (non-zero fails the session), on_ctx_free
	 * before it is freed.
	 */
	void *hook_arg;
	int (*on_ctx)(void *arg, struct edgeq_ctx *c, int slot,
		      struct edgeq_error *err);
	void (*on_ctx_free)(void *arg, struct edgeq_ctx *c, int slot);
	/*
	 * Pressure: with @pressure set the session opens one monitor with
	 * these options (copied; their strings must outlive the session)
	 * and follows it on a thread of its own, whatever its slots and
	 * device queues. A monitor that cannot open is no error: the
	 * session runs unthrottled and edgeq_session_pressure() says why.
	 * On every change of the memory level the weights budget becomes
	 * what memory allows now less 256 MiB for the KV caches and
	 * activations, never above @weights_budget (0: no ceiling) nor the
	 * model, applied at a token boundary (mmap weights have no budget).
	 * @on_pressure (with @pressure_arg), if set, is called on that
	 * thread with the first state and after every change: the state,
	 * and the budget before and after it (equal: unchanged; 0: none).
	 */
	const struct edgeq_pressure_opts *pressure;
	uint64_t weights_budget;
	void *pressure_arg;
	void (*on_pressure)(void *arg, const struct edgeq_pressure_state *st,
			    uint64_t budget_was, uint64_t budget);
};

void edgeq_session_params_init(struct edgeq_session_params *p);

/*
 * Create the slots' contexts and start the engine thread. When memory
 * allows fewer contexts than asked (but at least one), the session has
 * fewer slots: edgeq_session_status() says how many.
 */
int edgeq_session_new(struct edgeq_model *m,
		      const struct edgeq_session_params *p,
		      struct edgeq_session **out, struct edgeq_error *err);
/* Cancel everything, stop the engine thread, free the slots. NULL is ok.
 * Every struct edgeq_gen must have been freed before. */
void edgeq_session_free(struct edgeq_session *s);

struct edgeq_gen_request {
	const int32_t *toks; /* the prompt, tokenized (copied) */
	size_t n_toks;
	int n_predict; /* -1: until EOS or the context is full */
	struct edgeq_sampler_params sampling;
	const char *stops[EDGEQ_GEN_MAX_STOPS]; /* stop strings (copied) */
	int n_stops;
	uint32_t n_keep; /* context shift: tokens always kept (a system
			  * prompt); at most half the context */
	/* polled by the engine thread; true ends the request */
	bool (*cancelled)(void *user);
	void *user;
};

enum edgeq_finish {
	EDGEQ_FINISH_NONE = 0, /* still running */
	EDGEQ_FINISH_STOP,     /* an end-of-generation token or stop string */
	EDGEQ_FINISH_LENGTH,   /* n_predict reached or the context is full */
	EDGEQ_FINISH_CANCELLED,
	EDGEQ_FINISH_ERROR,
};

const char *edgeq_finish_name(enum edgeq_finish f);

/* What edgeq_gen_next() hands over; valid until the next call. */
struct edgeq_gen_event {
	const char *text; /* released text: whole UTF-8, no stop string */
	size_t len;
	const int32_t *toks; /* tokens sampled since the last event */
	size_t n_toks;
	enum edgeq_finish finish; /* set on the last event */
	/* when the engine pass that gave each token ended (edgeq_now_ns()):
	 * the tokens of one pass (a speculative one gives several) share it;
	 * gaps between passes, not between the caller's reads */
	const uint64_t *tok_ns;
};

/*
 * Queue a request. -EBUSY when the wait queue is full, -ESHUTDOWN after
 * edgeq_session_cancel_all(), -E2BIG when the prompt does not fit a slot's
 * context, -EINVAL for bad sampling parameters, an empty prompt, or a
 * stop string that is empty or too long.
 */
int edgeq_session_submit(struct edgeq_session *s,
			 const struct edgeq_gen_request *rq,
			 struct edgeq_gen **out, struct edgeq_error *err);
/*
 * Wait for the next event. Returns 1 with text and/or tokens, 0 when the
 * request has finished (ev->finish says how; the last text comes with
 * it), or a negative errno when the engine failed (the message in @err).
 */
int edgeq_gen_next(struct edgeq_gen *g, struct edgeq_gen_event *ev,
		   struct edgeq_error *err);
/* Ask the engine to stop this request at its next step. */
void edgeq_gen_cancel(struct edgeq_gen *g);
/* Figures of the request so far (queue wait included in ttft_ns). */
void edgeq_gen_get_stats(const struct edgeq_gen *g, struct edgeq_gen_stats *st);
/* Prompt tokens that were served from the slot's cached prefix. */
uint32_t edgeq_gen_n_cached(const struct edgeq_gen *g);
/* Context shifts the request went through. */
uint32_t edgeq_gen_n_shifts(const struct edgeq_gen *g);
/* Cancel if still running, wait until its slot lets go, free. NULL ok. */
void edgeq_gen_free(struct edgeq_gen *g);

/* Cancel every running and queued request; refuse new ones. */
void edgeq_session_cancel_all(struct edgeq_session *s);
/* A new resident weights budget, applied at the next step boundary. */
void edgeq_session_set_weights_budget(struct edgeq_session *s, uint64_t bytes);

/*
 * The weights' status (edgeq_model_weights_status), read between steps:
 * while the engine runs, the reading taken after its last step.
 */
int edgeq_session_weights_status(struct edgeq_session *s,
				 struct edgeq_stream_status *st);

struct edgeq_session_status {
	int n_slots, running, waiting, queue;
	uint64_t kv_used, kv_cap; /* positions held, positions in all */
	uint64_t steps;		  /* engine steps so far */
	uint64_t stalled_ns; /* longest time a busy slot made no progress */
	uint64_t prompt_tokens, gen_tokens; /* totals */
	/* speculation: drafts made and accepted, verifications that
	 * rejected one, verifications, decode passes; the acceptance rate
	 * per draft token
	 * (the geometric model's a) and the measured draft cost (a draft
	 * token's time over a plain pass) the draft length is chosen by */
	uint64_t drafted, accepted, rejected, verifies, passes;
	double draft_accept, draft_cost;
	int draft_off; /* slots whose drafting is off (does not pay now) */
	/* the steps that read no prompt: their wall time (drafting, the
	 * pass and sampling), the tokens they gave and how many there were
	 * (each read the weights once), so the aggregate decode rate is
	 * decode_tokens / decode_ns and the weights were read
	 * decode_steps times in it */
	uint64_t decode_ns, decode_tokens, decode_steps;
};

void edgeq_session_status(struct edgeq_session *s,
			  struct edgeq_session_status *st);

/*
 * The pressure monitor's latest state into *@st: 0, with *@why (if not
 * NULL) why BPF is not its source ("" when it is); -ENODEV without a
 * monitor, with *@why saying why (not asked for, or the error that kept
 * it from opening). The strings live as long as the session.
 */
int edgeq_session_pressure(struct edgeq_session *s,
			   struct edgeq_pressure_state *st, const char **why);

#ifdef __cplusplus
}
#endif
#endif /* EDGEQ_SESSION_H */
