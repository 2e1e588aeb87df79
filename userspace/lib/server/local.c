// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Local generation: wait for a slot (bounded queue), prefill reusing the
 * slot's cached prefix, then sample token by token, releasing text only
 * when it is whole UTF-8 and cannot be the start of a stop sequence.
 * The client is checked between tokens; a gone client stops generation.
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
	/* generate no further than the context */
	if (r->n_prompt + (size_t)r->max_tokens > s->n_ctx)
		r->max_tokens = (int)(s->n_ctx - r->n_prompt);
	return 0;
}

/* Take the engine for one decode call; apply a pending weights budget at
 * this token boundary, where no other decode runs. */
static void srv_engine_lock(struct srv *s)
{
	uint64_t b;

	pthread_mutex_lock(&s->engine_lock);
	b = atomic_exchange(&s->pending_budget, 0);
	if (b)
		edgeq_model_set_weights_budget(s->model, b);
}

static void srv_engine_unlock(struct srv *s)
{
	pthread_mutex_unlock(&s->engine_lock);
}

static uint32_t common_prefix(const struct srv_slot *sl, const int32_t *t,
			      size_t n)
{
	uint32_t i;

	for (i = 0; i < sl->n_hist && i < n && sl->hist[i] == t[i]; i++)
		;
	return i;
}

/* Take a free slot, preferring the one whose cache shares most of the
 * prompt. Waits in the bounded queue. Returns 0 or an HTTP status. */
static int acquire_slot(struct srv_req *r)
{
	struct srv *s = r->s;
	struct srv_slot *best = NULL;
	uint32_t best_len = 0, l;
	struct timespec ts;
	bool queued = false;
	int i, status = 0;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		/* queued requests are still served while stopping, until
		 * the shutdown bound cancels everything */
		if (atomic_load(&s->cancel_all) ||
		    (atomic_load(&s->state) != SRV_READY &&
		     atomic_load(&s->state) != SRV_STOPPING)) {
			status = 503;
			break;
		}
		if (s->running < s->n_slots && (queued || !s->waiting)) {
			for (i = 0; i < s->n_slots; i++) {
				if (s->slots[i].busy)
					continue;
				l = common_prefix(&s->slots[i], r->toks,
						  r->n_prompt);
				if (!best || l > best_len) {
					best = &s->slots[i];
					best_len = l;
				}
			}
			best->busy = true;
			atomic_store(&best->progress_ns, edgeq_now_ns());
			s->running++;
			r->slot = best;
			break;
		}
		if (!queued) {
			if (s->waiting >= s->cfg.queue) {
				status = 429;
				break;
			}
			s->waiting++;
			queued = true;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&s->cond, &s->lock, &ts);
		if (srv_client_gone(r)) {
			r->cancelled = true;
			status = 499;
			break;
		}
	}
	if (queued)
		s->waiting--;
	pthread_mutex_unlock(&s->lock);
	return status;
}

static void release_slot(struct srv_req *r)
{
	struct srv *s = r->s;

	pthread_mutex_lock(&s->lock);
	atomic_store(&r->slot->progress_ns, 0);
	r->slot->busy = false;
	r->slot = NULL;
	s->running--;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static void ewma(double *avg, double v)
{
	*avg = *avg > 0 ? 0.7 * *avg + 0.3 * v : v;
}

#define PREFILL_CHUNK 64

/* Prefill the prompt after the slot's cached prefix. */
static int prefill(struct srv_req *r, struct edgeq_error *err)
{
	struct srv_slot *sl = r->slot;
	struct srv *s = r->s;
	uint32_t keep = 0;
	uint64_t t, t0;
	size_t pos, n;
	int ret;

	if (s->cfg.prefix_cache)
		keep = common_prefix(sl, r->toks, r->n_prompt);
	if (keep >= r->n_prompt)
		keep = (uint32_t)r->n_prompt - 1; /* need the last logits */
	edgeq_ctx_truncate(sl->ctx, keep);
	sl->n_hist = keep;
	/*
	 * In chunks: progress for the watchdog, a check for a gone client,
	 * and other slots get the engine in between.
	 */
	t = 0;
	for (pos = keep; pos < r->n_prompt; pos += n) {
		n = r->n_prompt - pos < PREFILL_CHUNK ? r->n_prompt - pos :
							PREFILL_CHUNK;
		if (pos > keep &&
		    (atomic_load(&s->cancel_all) || srv_client_gone(r))) {
			r->cancelled = true;
			return -ECANCELED;
		}
		srv_engine_lock(s);
		t0 = edgeq_now_ns();
		ret = edgeq_decode(sl->ctx, r->toks + pos, n, &r->logits, err);
		t += edgeq_now_ns() - t0;
		srv_engine_unlock(s);
		if (ret)
			return ret;
		memcpy(sl->hist + pos, r->toks + pos, n * sizeof(int32_t));
		sl->n_hist = (uint32_t)(pos + n);
		atomic_store(&sl->progress_ns, edgeq_now_ns());
	}
	if (r->n_prompt - keep >= 8 && t) {
		pthread_mutex_lock(&s->lock);
		ewma(&s->prompt_tok_s, (r->n_prompt - keep) * 1e9 / (double)t);
		pthread_mutex_unlock(&s->lock);
	}
	srv_metrics_add_tokens(s->metrics, r->n_prompt, 0);
	return 0;
}

/* Begin: slot, sampler, prefill. On failure the error is sent. */
static int local_begin(struct srv_req *r)
{
	struct edgeq_error err = { 0 };
	int status, ret;

	status = acquire_slot(r);
	if (status == 429)
		return srv_send_error(
			       r, 429, "rate_limit_error", NULL,
			       "too many requests: all %d slots busy and %d queued",
			       r->s->n_slots, r->s->cfg.queue),
		       -EBUSY;
	if (status == 499) {
		srv_metrics_cancelled(r->s->metrics);
		srv_log_request(r, 499);
		return -ECONNRESET;
	}
	if (status)
		return srv_send_error(r, 503, "unavailable_error", NULL,
				      "server is shutting down"),
		       -ESHUTDOWN;
	ret = edgeq_sampler_new(&r->sp, &r->sampler);
	if (!ret)
		ret = prefill(r, &err);
	if (ret == -ECANCELED) {
		srv_local_end(r);
		srv_log_request(r, 499);
		if (atomic_load(&r->s->cancel_all))
			return srv_send_error(r, 503, "unavailable_error", NULL,
					      "server is shutting down"),
			       -ESHUTDOWN;
		return -ECONNRESET;
	}
	if (ret) {
		release_slot(r);
		return srv_send_error(r, 500, "server_error", NULL,
				      "generation failed: %s",
				      err.msg[0] ? err.msg : strerror(-ret)),
		       ret;
	}
	r->t_decode0 = edgeq_now_ns();
	return 0;
}

/* Longest suffix of @s (len @n) that is a proper prefix of a stop string. */
static size_t stop_holdback(struct srv_req *r, const char *s, size_t n)
{
	size_t best = 0, k, sl;
	int i;

	for (i = 0; i < r->n_stops; i++) {
		sl = strlen(r->stops[i]);
		for (k = sl - 1 < n ? sl - 1 : n; k > best; k--)
			if (!memcmp(s + n - k, r->stops[i], k)) {
				best = k;
				break;
			}
	}
	return best;
}

/* Move releasable text from pending to delta (and text). */
static void release_text(struct srv_req *r, bool final)
{
	size_t n = r->pending.len, cut = n, hold;
	const char *p = r->pending.p, *hit;
	int k;

	if (!n)
		return;
	for (k = 0; k < r->n_stops; k++) {
		hit = memmem(p, n, r->stops[k], strlen(r->stops[k]));
		if (hit && (size_t)(hit - p) < cut) {
			cut = (size_t)(hit - p);
			r->finish = "stop";
		}
	}
	if (cut == n && !final) {
		hold = stop_holdback(r, p, n);
		cut = n - hold;
		cut = srv_utf8_complete(p, cut);
	}
	if (cut || final) {
		srv_utf8_sanitize(p, cut, &r->delta);
		srv_buf_add(&r->text, r->delta.p ? r->delta.p : "",
			    r->delta.len);
	}
	if (r->finish || final) {
		r->pending.len = 0;
		return;
	}
	memmove(r->pending.p, r->pending.p + cut, n - cut);
	r->pending.len = n - cut;
}

/*
 * One step: sample, release text, feed the token back. Returns 1 while
 * generating, 0 when finished (r->finish set), <0 on an engine error.
 */
static int local_step(struct srv_req *r)
{
	struct srv *s = r->s;
	struct srv_slot *sl = r->slot;
	struct edgeq_error err = { 0 };
	char piece[256];
	uint64_t now;
	int32_t tok;
	int len, ret;

	r->delta.len = 0;
	if (s->cfg.token_delay_ms > 0)
		usleep((useconds_t)s->cfg.token_delay_ms * 1000);
	if (atomic_load(&s->cancel_all) || srv_client_gone(r)) {
		r->cancelled = true;
		return -ECANCELED;
	}
	tok = edgeq_sampler_sample(r->sampler, r->logits, s->info->n_vocab,
				   sl->hist, sl->n_hist);
	now = edgeq_now_ns();
	atomic_store(&sl->progress_ns, now);
	if (tok < 0 || edgeq_token_is_eog(s->model, tok)) {
		r->finish = "stop";
		release_text(r, true);
		return 0;
	}
	if (!r->t_first) {
		r->t_first = now;
		srv_metrics_observe(s->metrics, SRV_H_TTFT,
				    (now - r->t0) / 1e9);
	} else {
		srv_metrics_observe(s->metrics, SRV_H_ITL,
				    (now - r->t_last) / 1e9);
	}
	r->t_last = now;
	r->n_gen++;
	sl->hist[sl->n_hist++] = tok;
	len = edgeq_token_to_piece(s->model, tok, piece, sizeof(piece));
	if (len > 0)
		srv_buf_add(&r->pending, piece, (size_t)len);
	release_text(r, false);
	if (r->finish)
		return 0;
	if (r->n_gen >= r->max_tokens || sl->n_hist >= sl->cap) {
		r->finish = "length";
		release_text(r, true);
		return 0;
	}
	srv_engine_lock(s);
	ret = edgeq_decode(sl->ctx, &tok, 1, &r->logits, &err);
	srv_engine_unlock(s);
	if (ret == -ENOSPC) {
		r->finish = "length";
		release_text(r, true);
		return 0;
	}
	return ret ? ret : 1;
}

/* Account for a finished (or cancelled) generation and free the slot. */
void srv_local_end(struct srv_req *r)
{
	struct srv *s = r->s;
	uint64_t dt;
	double tps;
	int active;

	/* the generation's own decode speed, e.g. for a bundle's probation */
	if (s->cfg.on_generation && !r->counted) {
		tps = 0;
		if (r->n_gen > 1 && r->t_last > r->t_decode0)
			tps = (r->n_gen - 1) * 1e9 /
			      (double)(r->t_last - r->t_decode0);
		s->cfg.on_generation(s->cfg.hook_arg, tps, r->n_gen);
	}
	if (r->n_gen > 4 && r->t_last > r->t_decode0) {
		pthread_mutex_lock(&s->lock);
		active = s->running;
		pthread_mutex_unlock(&s->lock);
		dt = r->t_last - r->t_decode0;
		/* per-sequence speed x sequences sharing the box, over the
		 * throttle at the time ~ the unthrottled peak */
		tps = (r->n_gen - 1) * 1e9 / (double)dt *
		      (active ? active : 1) / srv_throttle(s);
		pthread_mutex_lock(&s->lock);
		ewma(&s->peak_tok_s, tps);
		pthread_mutex_unlock(&s->lock);
	}
	if (!r->counted) {
		srv_metrics_add_tokens(s->metrics, 0, (uint64_t)r->n_gen);
		srv_metrics_observe(s->metrics, SRV_H_DURATION,
				    (edgeq_now_ns() - r->t0) / 1e9);
		if (r->cancelled)
			srv_metrics_cancelled(s->metrics);
		r->counted = true;
	}
	release_slot(r);
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
	return json_pack("{s:s,s:s,s:s,s:s?}", "class",
			 edgeq_privacy_name(r->privacy), "route",
			 edgeq_route_name(r->route), "reason",
			 edgeq_route_reason_name(r->dec.reason),
			 "fallback_from", r->fallback[0] ? r->fallback : NULL);
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
		choice = json_pack("{s:i,s:{s:s,s:o},s:n,s:s}", "index", 0,
				   "message", "role", "assistant", "content",
				   text_json(&r->text), "logprobs",
				   "finish_reason", r->finish);
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
		ret = local_step(r);
		if (r->delta.len)
			sse(r, chunk(r, delta_json(r, &r->delta), NULL));
		if (ret > 0)
			return true;
		if (ret < 0) {
			*error = true;
			return false;
		}
		r->phase = 2;
		sse(r, chunk(r,
			     r->kind == SRV_CHAT ? json_object() :
						   text_json(&empty),
			     r->finish));
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
		if (!r->slot)
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
