// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Local generation through the engine session: submit the tokenized
 * prompt, then turn the session's events (text that is whole UTF-8 and past
 * any stop string) into one JSON answer or SSE chunks. The session checks
 * the client at every step; a gone client ends the generation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/internal.h"

int srv_tokenize_prompt(struct srv_req *r)
{
	struct srv *s = r->s;
	size_t max = s->n_ctx + 8, n = 0;
	int ret;

	r->toks = malloc(max * sizeof(int32_t));
	if (!r->toks)
		return srv_send_error(r, 500, "server_error", NULL,
				      "out of memory"),
		       -ENOMEM;
	ret = edgeq_tokenize(s->model, r->prompt, r->add_bos, r->parse_special,
			     r->toks, max, &n);
	if (ret == -ENOSPC || (!ret && n >= s->n_ctx))
		return srv_send_error(
			       r, 400, "invalid_request_error",
			       r->kind == SRV_CHAT ? "messages" : "prompt",
			       "the prompt is longer than the context (%u tokens)",
			       s->n_ctx),
		       -E2BIG;
	if (ret || !n)
		return srv_send_error(r, 400, "invalid_request_error", NULL,
				      "the prompt cannot be tokenized"),
		       -EINVAL;
	r->n_prompt = n;
	r->n_keep = r->add_bos ? 1 : 0; /* a context shift keeps BOS */
	if (r->keep_text) {
		/* and the system prompt, when its tokens begin the prompt's */
		size_t nk = 0;
		int32_t *kt = malloc(n * sizeof(int32_t));

		if (kt &&
		    !edgeq_tokenize(s->model, r->keep_text, r->add_bos,
				    r->parse_special, kt, n, &nk) &&
		    nk < n && !memcmp(kt, r->toks, nk * sizeof(int32_t)))
			r->n_keep = (uint32_t)nk;
		free(kt);
	}
	/* generate no further than the context (unless it shifts) */
	if (!s->cfg.context_shift &&
	    r->n_prompt + (size_t)r->max_tokens > s->n_ctx)
		r->max_tokens = (int)(s->n_ctx - r->n_prompt);
	return 0;
}

static bool req_gone(void *user)
{
	struct srv_req *r = user;

	return srv_client_gone(r);
}

static void ewma(double *avg, double v)
{
	*avg = *avg > 0 ? 0.7 * *avg + 0.3 * v : v;
}

/*
 * Take the next event of the generation: text into r->delta (and r->text),
 * metrics for its tokens. Returns 1 while generating, 0 when finished
 * (r->finish set), <0 when cancelled or the engine failed.
 */
static int local_step(struct srv_req *r)
{
	struct srv *s = r->s;
	struct edgeq_error err = { 0 };
	struct edgeq_gen_event *ev = &r->ev;
	uint64_t now;
	size_t i;
	int ret;

	r->delta.len = 0;
	if (r->have_event) {
		r->have_event = false;
		ret = r->ev_ret;
	} else {
		ret = edgeq_gen_next(r->gen, ev, &err);
	}
	now = edgeq_now_ns();
	for (i = 0; i < ev->n_toks;) {
		/* the tokens of one engine pass (a speculative one gives
		 * several) share the gap since the pass before; tokens of the
		 * first token's pass have none. The passes' own times, so
		 * tokens that reach this thread together (it was late) still
		 * count their gaps. */
		uint64_t t = ev->tok_ns ? ev->tok_ns[i] : now;
		size_t k = 1, j;

		while (ev->tok_ns && i + k < ev->n_toks &&
		       ev->tok_ns[i + k] == t)
			k++;
		for (j = 0; j < k; j++) {
			if (!r->t_first) {
				r->t_first = now;
				srv_metrics_observe(s->metrics, SRV_H_TTFT,
						    (now - r->t0) / 1e9);
			} else if (r->t_last && t > r->t_last) {
				srv_metrics_observe(s->metrics, SRV_H_ITL,
						    (t - r->t_last) / 1e9 /
							    (double)k);
			}
			r->n_gen++;
		}
		r->t_last = t;
		i += k;
	}
	if (ev->len) {
		srv_utf8_sanitize(ev->text, ev->len, &r->delta);
		srv_buf_add(&r->text, r->delta.p ? r->delta.p : "",
			    r->delta.len);
	}
	if (ret > 0)
		return 1;
	if (ret == 0 && ev->finish == EDGEQ_FINISH_CANCELLED) {
		r->cancelled = true;
		return -ECANCELED;
	}
	if (ret == 0) {
		r->finish = ev->finish == EDGEQ_FINISH_LENGTH ? "length" :
								"stop";
		return 0;
	}
	srv_log(SRV_WARN,
		(const char *const[]){ "EDGEQ_EVENT=generation-failed", NULL },
		"request %s: generation failed: %s", r->id,
		err.msg[0] ? err.msg : strerror(-ret));
	return ret;
}

/* Queue the generation and wait for its first event (the slot, the
 * prefill and the first token). On failure the error is sent. */
static int local_begin(struct srv_req *r)
{
	struct srv *s = r->s;
	struct edgeq_error err = { 0 };
	struct edgeq_gen_request rq;
	int i, ret;

	memset(&rq, 0, sizeof(rq));
	rq.toks = r->toks;
	rq.n_toks = r->n_prompt;
	rq.n_predict = r->max_tokens;
	rq.n_keep = r->n_keep;
	rq.sampling = r->sp;
	for (i = 0; i < r->n_stops && i < EDGEQ_GEN_MAX_STOPS; i++)
		rq.stops[rq.n_stops++] = r->stops[i];
	rq.cancelled = req_gone;
	rq.user = r;
	/* counted before the session sees it, so that a shutdown waits */
	atomic_fetch_add(&s->answering, 1);
	r->answering = true;
	ret = edgeq_session_submit(s->sess, &rq, &r->gen, &err);
	if (ret) {
		atomic_fetch_sub(&s->answering, 1);
		r->answering = false;
	}
	if (ret == -EBUSY)
		return srv_send_error(
			       r, 429, "rate_limit_error", NULL,
			       "too many requests: all %d slots busy and %d queued",
			       s->n_slots, s->cfg.queue),
		       -EBUSY;
	if (ret == -ESHUTDOWN)
		return srv_send_error(r, 503, "unavailable_error", NULL,
				      "server is shutting down"),
		       -ESHUTDOWN;
	if (ret)
		return srv_send_error(r, 400, "invalid_request_error", NULL,
				      "%s", err.msg),
		       ret;
	r->ev_ret = edgeq_gen_next(r->gen, &r->ev, &err);
	r->have_event = true;
	if (r->ev_ret == 0 && r->ev.finish == EDGEQ_FINISH_CANCELLED) {
		r->cancelled = true;
		srv_local_end(r);
		srv_log_request(r, 499);
		if (atomic_load(&s->cancel_all))
			return srv_send_error(r, 503, "unavailable_error", NULL,
					      "server is shutting down"),
			       -ESHUTDOWN;
		return -ECONNRESET;
	}
	if (r->ev_ret < 0) {
		srv_local_end(r);
		return srv_send_error(r, 500, "server_error", NULL,
				      "generation failed: %s",
				      err.msg[0] ? err.msg :
						   strerror(-r->ev_ret)),
		       r->ev_ret;
	}
	return 0;
}

/* Account for a finished (or cancelled) generation and free it. */
void srv_local_end(struct srv_req *r)
{
	struct srv *s = r->s;
	struct edgeq_session_status ss;
	struct edgeq_gen_stats st;
	uint32_t fresh;
	double tps, thr;

	if (!r->gen)
		return;
	edgeq_gen_cancel(r->gen);
	edgeq_gen_get_stats(r->gen, &st);
	r->n_shifts = edgeq_gen_n_shifts(r->gen);
	fresh = st.n_prompt - edgeq_gen_n_cached(r->gen);
	/* the generation's own decode speed, e.g. for a bundle's probation */
	tps = st.n_eval > 0 && st.decode_ns ?
		      st.n_eval * 1e9 / (double)st.decode_ns :
		      0;
	if (s->cfg.on_generation && !r->counted)
		s->cfg.on_generation(s->cfg.hook_arg, r->n_gen > 1 ? tps : 0,
				     r->n_gen);
	edgeq_session_status(s->sess, &ss);
	thr = srv_throttle(s);
	pthread_mutex_lock(&s->lock);
	/* per-sequence speed x sequences sharing the box, over the
	 * throttle at the time ~ the unthrottled peak */
	if (r->n_gen > 4 && tps > 0)
		ewma(&s->peak_tok_s, tps * (ss.running ? ss.running : 1) / thr);
	if (fresh >= 8 && st.prompt_ns)
		ewma(&s->prompt_tok_s, fresh * 1e9 / (double)st.prompt_ns);
	pthread_mutex_unlock(&s->lock);
	if (!r->counted) {
		srv_metrics_add_tokens(s->metrics, r->n_prompt,
				       (uint64_t)r->n_gen);
		srv_metrics_observe(s->metrics, SRV_H_DURATION,
				    (edgeq_now_ns() - r->t0) / 1e9);
		if (r->cancelled)
			srv_metrics_cancelled(s->metrics);
		r->counted = true;
	}
	edgeq_gen_free(r->gen);
	r->gen = NULL;
}

static json_t *usage_json(struct srv_req *r)
{
	return json_pack("{s:I,s:I,s:I}", "prompt_tokens",
			 (json_int_t)r->n_prompt, "completion_tokens",
			 (json_int_t)r->n_gen, "total_tokens",
			 (json_int_t)(r->n_prompt + (size_t)r->n_gen));
}

static json_t *edgeq_json(struct srv_req *r)
{
	json_t *j = json_pack("{s:s,s:s,s:s,s:s?}", "class",
			      edgeq_privacy_name(r->privacy), "route",
			      edgeq_route_name(r->route), "reason",
			      edgeq_route_reason_name(r->dec.reason),
			      "fallback_from",
			      r->fallback[0] ? r->fallback : NULL);

	/* what a context shift kept, and how often it shifted */
	if (j && r->s->cfg.context_shift) {
		json_object_set_new(j, "kept_tokens", json_integer(r->n_keep));
		json_object_set_new(j, "context_shifts",
				    json_integer(r->n_shifts));
	}
	return j;
}

static json_t *envelope(struct srv_req *r, const char *object)
{
	char id[64];

	snprintf(id, sizeof(id), "%s-%s",
		 r->kind == SRV_CHAT ? "chatcmpl" : "cmpl", r->id);
	return json_pack("{s:s,s:s,s:I,s:s,s:s}", "id", id, "object", object,
			 "created", (json_int_t)time(NULL), "model",
			 r->s->model_id, "system_fingerprint",
			 "edgeq-" EDGEQ_VERSION);
}

static json_t *text_json(struct srv_buf *b)
{
	return json_stringn(b->p ? b->p : "", b->len);
}

/* Did the request give tools the model may call? */
static bool wants_tools(const struct srv_req *r)
{
	json_t *c = json_object_get(r->json, "tool_choice");

	return json_array_size(json_object_get(r->json, "tools")) &&
	       !(json_is_string(c) && !strcmp(json_string_value(c), "none"));
}

/* The answer's message: its text, or the tool calls it makes and the
 * text around them (null when there is none) */
static json_t *chat_choice(struct srv_req *r)
{
	struct srv_buf rest = { 0 };
	json_t *calls = NULL, *msg;

	if (wants_tools(r) && r->text.len)
		calls = srv_tool_calls(r->text.p, r->text.len, &rest);
	if (!calls)
		return json_pack("{s:i,s:{s:s,s:o},s:n,s:s}", "index", 0,
				 "message", "role", "assistant", "content",
				 text_json(&r->text), "logprobs",
				 "finish_reason", r->finish);
	msg = json_pack("{s:s,s:o,s:o}", "role", "assistant", "content",
			rest.len ? text_json(&rest) : json_null(), "tool_calls",
			calls);
	srv_buf_free(&rest);
	return json_pack("{s:i,s:o,s:n,s:s}", "index", 0, "message", msg,
			 "logprobs", "finish_reason",
			 strcmp(r->finish, "stop") ? r->finish : "tool_calls");
}

static int respond_whole(struct srv_req *r)
{
	json_t *j, *choice;
	int ret = 1, status;

	while (ret > 0)
		ret = local_step(r);
	if (ret < 0 && r->cancelled) {
		/* nobody to answer: the connection is gone or we stop */
		srv_local_end(r);
		srv_log_request(r, 499);
		return atomic_load(&r->s->cancel_all) ?
			       srv_send_error(r, 503, "unavailable_error", NULL,
					      "server is shutting down") :
			       MHD_NO;
	}
	srv_local_end(r);
	if (ret < 0) {
		srv_log_request(r, 500);
		return srv_send_error(r, 500, "server_error", NULL,
				      "generation failed: %s", strerror(-ret));
	}
	j = envelope(r, r->kind == SRV_CHAT ? "chat.completion" :
					      "text_completion");
	if (r->kind == SRV_CHAT)
		choice = chat_choice(r);
	else
		choice = json_pack("{s:o,s:i,s:n,s:s}", "text",
				   text_json(&r->text), "index", 0, "logprobs",
				   "finish_reason", r->finish);
	json_object_set_new(j, "choices", json_pack("[o]", choice));
	json_object_set_new(j, "usage", usage_json(r));
	json_object_set_new(j, "edgeq", edgeq_json(r));
	status = srv_send_json(r, 200, j);
	json_decref(j);
	srv_log_request(r, 200);
	return status;
}

/* Append one SSE event "data: {json}\n\n" to r->out. */
static void sse(struct srv_req *r, json_t *j)
{
	char *txt = json_dumps(j, JSON_COMPACT);

	json_decref(j);
	if (!txt) {
		r->out.oom = true;
		return;
	}
	srv_buf_printf(&r->out, "data: %s\n\n", txt);
	free(txt);
}

static json_t *chunk(struct srv_req *r, json_t *delta, const char *finish)
{
	json_t *j, *c;

	j = envelope(r, r->kind == SRV_CHAT ? "chat.completion.chunk" :
					      "text_completion");
	if (r->kind == SRV_CHAT)
		c = json_pack("{s:i,s:o,s:n,s:s?}", "index", 0, "delta", delta,
			      "logprobs", "finish_reason", finish);
	else
		c = json_pack("{s:o,s:i,s:n,s:s?}", "text", delta, "index", 0,
			      "logprobs", "finish_reason", finish);
	json_object_set_new(j, "choices", json_pack("[o]", c));
	if (r->include_usage)
		json_object_set_new(j, "usage", json_null());
	return j;
}

static json_t *delta_json(struct srv_req *r, struct srv_buf *b)
{
	if (r->kind == SRV_CHAT)
		return json_pack("{s:o}", "content", text_json(b));
	return text_json(b);
}

/* With tools: the answer's text as content, but for what may begin a
 * tool call (all of it at @end) */
static void stream_content(struct srv_req *r, bool end)
{
	size_t safe = end ? r->text.len :
			    srv_tool_safe_len(r->text.p ? r->text.p : "",
					      r->text.len);
	struct srv_buf part;

	if (safe <= r->tc_sent)
		return;
	part.p = r->text.p + r->tc_sent;
	part.len = safe - r->tc_sent;
	sse(r, chunk(r, delta_json(r, &part), NULL));
	r->tc_sent = safe;
}

/* The streamed answer's end with tools: its calls in one delta (finish
 * "tool_calls"), or the text held back. Returns the finish reason. */
static const char *stream_tool_calls(struct srv_req *r)
{
	struct srv_buf rest = { 0 };
	json_t *calls, *c;
	size_t i;

	calls = r->text.len ? srv_tool_calls(r->text.p, r->text.len, &rest) :
			      NULL;
	srv_buf_free(&rest);
	if (!calls) {
		stream_content(r, true);
		return r->finish;
	}
	json_array_foreach(calls, i, c)
		json_object_set_new(c, "index", json_integer((json_int_t)i));
	sse(r, chunk(r, json_pack("{s:o}", "tool_calls", calls), NULL));
	return strcmp(r->finish, "stop") ? r->finish : "tool_calls";
}

/* Fill r->out with the next events. Returns false at the end. */
static bool stream_next(struct srv_req *r, bool *error)
{
	struct srv_buf empty = { 0 };
	json_t *j;
	int ret;

	if (r->phase == 0) {
		r->phase = 1;
		if (r->kind == SRV_CHAT) {
			sse(r, chunk(r,
				     json_pack("{s:s,s:s}", "role", "assistant",
					       "content", ""),
				     NULL));
			return true;
		}
	}
	if (r->phase == 1) {
		bool tools = r->kind == SRV_CHAT && wants_tools(r);
		const char *finish;

		ret = local_step(r);
		if (tools)
			stream_content(r, false);
		else if (r->delta.len)
			sse(r, chunk(r, delta_json(r, &r->delta), NULL));
		if (ret > 0)
			return true;
		if (ret < 0) {
			*error = true;
			return false;
		}
		r->phase = 2;
		finish = tools ? stream_tool_calls(r) : r->finish;
		sse(r, chunk(r,
			     r->kind == SRV_CHAT ? json_object() :
						   text_json(&empty),
			     finish));
		if (r->include_usage) {
			j = envelope(r, r->kind == SRV_CHAT ?
						"chat.completion.chunk" :
						"text_completion");
			json_object_set_new(j, "choices", json_array());
			json_object_set_new(j, "usage", usage_json(r));
			sse(r, j);
		}
		srv_buf_printf(&r->out, "data: [DONE]\n\n");
		return true;
	}
	return false;
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct srv_req *r = cls;
	bool error = false;
	size_t n;

	while (r->out_off >= r->out.len) {
		r->out.len = 0;
		r->out_off = 0;
		if (!r->gen)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (!stream_next(r, &error)) {
			srv_local_end(r);
			srv_log_request(r, error ? 499 : 200);
			return error ? MHD_CONTENT_READER_END_WITH_ERROR :
				       MHD_CONTENT_READER_END_OF_STREAM;
		}
		if (r->out.oom)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	n = r->out.len - r->out_off;
	if (n > max)
		n = max;
	memcpy(buf, r->out.p + r->out_off, n);
	r->out_off += n;
	return (ssize_t)n;
}

static int respond_stream(struct srv_req *r)
{
	struct MHD_Response *resp;
	int ret;

	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096,
						 stream_reader, r, NULL);
	if (!resp) {
		srv_local_end(r);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "text/event-stream");
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
	srv_add_route_headers(r, resp);
	ret = MHD_queue_response(r->conn, 200, resp);
	MHD_destroy_response(resp);
	srv_metrics_request(r->s->metrics, r->endpoint, 200);
	return ret;
}

int srv_local_respond(struct srv_req *r)
{
	int ret = local_begin(r);

	if (ret == -ECONNRESET)
		return MHD_NO;
	if (ret)
		return MHD_YES; /* the error response is queued */
	return r->stream ? respond_stream(r) : respond_whole(r);
}
