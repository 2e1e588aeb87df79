// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The HTTP side of edgeq serve: listening sockets, the request life cycle,
 * the small endpoints (/health, /v1/models, /metrics) and the dispatch of
 * generation requests through the privacy router.
 *
 * libmicrohttpd runs one thread per connection, so a handler may block: it
 * waits for a generation slot, runs the generation (or relays an upstream)
 * and checks between tokens whether its client is still there.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <sodium.h>

#include <edgeq/stream.h>

#include <edgeq/manifest.h>
#include <edgeq/pressure.h>

#include "server/internal.h"

void srv_config_init(struct srv_config *c)
{
	memset(c, 0, sizeof(*c));
	c->listen = "127.0.0.1";
	c->port = 8080;
	c->socket_mode = 0660;
	c->ctx_size = 2048;
	c->slots = 1;
	c->queue = 8;
	c->max_connections = 64;
	c->max_tokens = 4096;
	c->default_max_tokens = 256;
	c->max_body = 1 << 20;
	c->shutdown_timeout_s = 10;
	c->upstream_timeout_s = 60;
	c->request_timeout_s = 60;
	c->request_deadline_s = 30;
	c->max_conns_per_client = 16;
	c->prefix_cache = true;
	c->chat_template = "auto";
	c->default_class = EDGEQ_PRIVACY_CONFIDENTIAL;
	c->log_target = "auto";
}

/* ---- small endpoints */

static int do_health(struct srv_req *r)
{
	struct srv *s = r->s;
	json_t *j;
	int ret, st = atomic_load(&s->state);

	if (st == SRV_READY) {
		j = json_pack("{s:s,s:s}", "status", "ok", "model",
			      s->model_id);
		ret = srv_send_json(r, 200, j);
		json_decref(j);
		return ret;
	}
	if (st == SRV_LOADING)
		return srv_send_error(r, 503, "unavailable_error", NULL,
				      "model is loading");
	if (st == SRV_STOPPING)
		return srv_send_error(r, 503, "unavailable_error", NULL,
				      "server is shutting down");
	return srv_send_error(r, 503, "unavailable_error", NULL,
			      "model failed to load: %s", s->load_error);
}

static int do_models(struct srv_req *r)
{
	struct srv *s = r->s;
	json_t *j, *data = json_array();

	if (atomic_load(&s->state) == SRV_READY)
		json_array_append_new(data, json_pack("{s:s,s:s,s:I,s:s}", "id",
						      s->model_id, "object",
						      "model", "created",
						      (json_int_t)s->created,
						      "owned_by", "edgeq"));
	j = json_pack("{s:s,s:o}", "object", "list", "data", data);
	r->json = NULL;
	srv_send_json(r, 200, j);
	json_decref(j);
	return MHD_YES;
}

static void psi_memory(double *avg10, bool *ok)
{
	char line[256];
	FILE *f = fopen("/proc/pressure/memory", "re");

	*ok = false;
	if (!f)
		return;
	if (fgets(line, sizeof(line), f) &&
	    sscanf(line, "some avg10=%lf", avg10) == 1)
		*ok = true;
	fclose(f);
}

/* Fill the router's view of this box. Caller holds s->lock. */
static void capacity_locked(struct srv *s, struct edgeq_router_capacity *c)
{
	double mp;
	bool ok;

	memset(c, 0, sizeof(*c));
	c->peak_tok_s = s->cfg.local_tok_s > 0 ? s->cfg.local_tok_s :
						 s->peak_tok_s;
	c->prompt_tok_s = s->prompt_tok_s;
	/* sustained, not peak: the monitor's throttle of the engine's device */
	c->throttle = s->pressure.valid && s->pressure.have_throttle ?
			      s->pressure.throttle :
			      1;
	if (s->pressure.valid && s->pressure.mem_some10 >= 0) {
		c->mem_pressure = s->pressure.mem_some10;
	} else {
		psi_memory(&mp, &ok);
		c->mem_pressure = ok ? mp / 100 : 0;
	}
	c->slots = (uint32_t)s->n_slots;
	if (s->sess) {
		struct edgeq_session_status ss;

		edgeq_session_status(s->sess, &ss);
		c->running = (uint32_t)ss.running;
		c->waiting = (uint32_t)ss.waiting;
	}
	c->queue_max = (uint32_t)s->cfg.queue;
	c->local_down = atomic_load(&s->state) != SRV_READY;
}

static void render_weights(struct srv *s, struct srv_buf *b)
{
	struct edgeq_stream_status w;

	if (atomic_load(&s->state) != SRV_READY)
		return;
	/* read between engine steps: a busy engine gives its last reading */
	if (!edgeq_session_weights_status(s->sess, &w))
		srv_metrics_render_weights(&w, b);
}

static int do_metrics(struct srv_req *r)
{
	struct srv *s = r->s;
	struct srv_buf b = { 0 };
	struct MHD_Response *resp;
	uint64_t kv_used = 0, kv_cap = 0;
	int running = 0, waiting = 0, st, ret;
	struct edgeq_session_status ss;
	struct srv_pressure pr;
	double peak, prompt, mp;
	bool psi_ok;

	pthread_mutex_lock(&s->lock);
	pr = s->pressure;
	peak = s->cfg.local_tok_s > 0 ? s->cfg.local_tok_s : s->peak_tok_s;
	prompt = s->prompt_tok_s;
	pthread_mutex_unlock(&s->lock);
	if (s->sess && atomic_load(&s->state) != SRV_LOADING &&
	    atomic_load(&s->state) != SRV_FAILED) {
		edgeq_session_status(s->sess, &ss);
		running = ss.running;
		waiting = ss.waiting;
		kv_used = ss.kv_used;
		kv_cap = ss.kv_cap;
	}
	st = atomic_load(&s->state);

	srv_buf_printf(
		&b,
		"# HELP edgeq_model_loaded 1 when the model is loaded and requests are served.\n"
		"# TYPE edgeq_model_loaded gauge\nedgeq_model_loaded %d\n"
		"# HELP edgeq_requests_running Generations running on this box now.\n"
		"# TYPE edgeq_requests_running gauge\nedgeq_requests_running %d\n"
		"# HELP edgeq_requests_waiting Requests queued for a generation slot.\n"
		"# TYPE edgeq_requests_waiting gauge\nedgeq_requests_waiting %d\n"
		"# HELP edgeq_slots Generations that may run at once (--slots).\n"
		"# TYPE edgeq_slots gauge\nedgeq_slots %d\n"
		"# HELP edgeq_queue_limit Queued requests allowed before 429 (--queue).\n"
		"# TYPE edgeq_queue_limit gauge\nedgeq_queue_limit %d\n",
		st == SRV_READY, running, waiting, s->n_slots, s->cfg.queue);
	if (kv_cap)
		srv_buf_printf(
			&b,
			"# HELP edgeq_kv_cache_tokens Tokens held in the slots' KV caches (kept for prefix reuse).\n"
			"# TYPE edgeq_kv_cache_tokens gauge\nedgeq_kv_cache_tokens %llu\n"
			"# HELP edgeq_kv_cache_usage_ratio Share of the slots' KV cache capacity in use.\n"
			"# TYPE edgeq_kv_cache_usage_ratio gauge\nedgeq_kv_cache_usage_ratio %.6f\n",
			(unsigned long long)kv_used,
			(double)kv_used / (double)kv_cap);
	if (s->info)
		srv_buf_printf(
			&b,
			"# HELP edgeq_model_weight_bytes Bytes of tensor data of the loaded model.\n"
			"# TYPE edgeq_model_weight_bytes gauge\nedgeq_model_weight_bytes %llu\n",
			(unsigned long long)s->info->weight_bytes);
	if (peak > 0)
		srv_buf_printf(
			&b,
			"# HELP edgeq_local_peak_tokens_per_second Decode speed of one sequence the router plans with (%s).\n"
			"# TYPE edgeq_local_peak_tokens_per_second gauge\n"
			"edgeq_local_peak_tokens_per_second %.3f\n",
			s->cfg.local_tok_s > 0 ? "configured" :
						 "measured, moving average",
			peak);
	if (prompt > 0)
		srv_buf_printf(
			&b,
			"# HELP edgeq_local_prompt_tokens_per_second Prefill speed measured, moving average.\n"
			"# TYPE edgeq_local_prompt_tokens_per_second gauge\n"
			"edgeq_local_prompt_tokens_per_second %.3f\n",
			prompt);
	if (pr.valid && pr.mem_some10 >= 0) {
		mp = pr.mem_some10 * 100;
		psi_ok = true;
	} else {
		psi_memory(&mp, &psi_ok);
	}
	if (psi_ok)
		srv_buf_printf(
			&b,
			"# HELP edgeq_memory_pressure_ratio Share of time some task stalled on memory, 10 s average (PSI memory some avg10).\n"
			"# TYPE edgeq_memory_pressure_ratio gauge\n"
			"edgeq_memory_pressure_ratio %.4f\n",
			mp / 100);
	if (pr.valid)
		srv_metrics_render_pressure(&pr, &b);
	render_weights(s, &b);
	srv_metrics_render(s->metrics, &b);
	if (s->sess && st == SRV_READY)
		srv_metrics_render_session(&ss, s->draft_kind != 0, &b);
	if (s->cfg.on_metrics && srv_ready(s))
		s->cfg.on_metrics(s->cfg.hook_arg, &b);
	if (b.oom) {
		srv_buf_free(&b);
		return srv_send_error(r, 500, "server_error", NULL,
				      "out of memory");
	}
	resp = MHD_create_response_from_buffer(b.len, b.p,
					       MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, "Content-Type",
				"text/plain; version=0.0.4; charset=utf-8");
	srv_add_common_headers(resp);
	ret = MHD_queue_response(r->conn, 200, resp);
	MHD_destroy_response(resp);
	srv_metrics_request(s->metrics, r->endpoint, 200);
	return ret;
}

/* ---- generation requests: route, then serve */

static void log_decision(struct srv_req *r, const char *stage)
{
	char f[9][96];
	const char *fields[10];
	int n = 0;

	snprintf(f[n], sizeof(f[n]), "EDGEQ_REQUEST_ID=%s", r->id), n++;
	snprintf(f[n], sizeof(f[n]), "EDGEQ_EVENT=route-%s", stage), n++;
	/* the audit trail: who, which class, where and why; never the text */
	snprintf(f[n], sizeof(f[n]), "EDGEQ_KEY=%s",
		 r->key ? r->key->name : "-"),
		n++;
	snprintf(f[n], sizeof(f[n]), "EDGEQ_CLASS=%s",
		 edgeq_privacy_name(r->privacy)),
		n++;
	snprintf(f[n], sizeof(f[n]), "EDGEQ_ROUTE=%s",
		 edgeq_route_name(r->dec.route)),
		n++;
	snprintf(f[n], sizeof(f[n]), "EDGEQ_REASON=%s",
		 edgeq_route_reason_name(r->dec.reason)),
		n++;
	snprintf(f[n], sizeof(f[n]), "EDGEQ_SUSTAINED_TOK_S=%.2f",
		 r->dec.sustained_tok_s),
		n++;
	snprintf(f[n], sizeof(f[n]), "EDGEQ_PROMPT_TOKENS=%zu", r->n_prompt),
		n++;
	fields[n] = NULL;
	while (n--)
		fields[n] = f[n];
	srv_log(SRV_INFO, fields, "request %s key %s route %s -> %s (%s)",
		r->id, r->key ? r->key->name : "-",
		edgeq_privacy_name(r->privacy), edgeq_route_name(r->dec.route),
		edgeq_route_reason_name(r->dec.reason));
}

static int route_once(struct srv_req *r, const char *stage)
{
	struct edgeq_router_capacity cap;
	struct edgeq_route_request q = { 0 };
	struct srv *s = r->s;
	int ret;

	q.privacy = r->privacy;
	q.prompt_tokens = (uint32_t)r->n_prompt;
	q.max_tokens = (uint32_t)r->max_tokens;
	q.slo_tok_s = r->slo_tok_s;
	q.deadline_s = r->deadline_s;
	q.failed = r->failed;
	q.ttft_s = s->cfg.ttft_slo_s;
	/* the bundle's routing policy: routes a class may not use are
	 * unavailable to it, as are those its key may not use */
	if (s->cfg.class_routes[r->privacy])
		q.failed |= ((1u << EDGEQ_ROUTE_PRIVATE) |
			     (1u << EDGEQ_ROUTE_PUBLIC)) &
			    ~s->cfg.class_routes[r->privacy];
	if (r->key) /* the routes its key may not use count as unavailable */
		q.failed |= ((1u << EDGEQ_ROUTE_PRIVATE) |
			     (1u << EDGEQ_ROUTE_PUBLIC)) &
			    ~r->key->routes;
	pthread_mutex_lock(&s->lock);
	capacity_locked(s, &cap);
	pthread_mutex_unlock(&s->lock);
	ret = edgeq_router_decide(&s->rcfg, &cap, &q, &r->dec);
	if (ret)
		return ret;
	srv_metrics_route(s->metrics, r->privacy, r->dec.route, r->dec.reason);
	log_decision(r, stage);
	return 0;
}

/* Prompt tokens by the vocabulary loaded ahead of the weights (0 before). */
static size_t count_tokens(struct srv *s, struct srv_req *r)
{
	struct edgeq_model *v = atomic_load(&s->vocab);
	size_t max = strlen(r->prompt) + 8, n = 0;
	const struct edgeq_model_info *vi;
	int32_t *t;

	if (!v)
		return 0;
	/* BOS as the loaded model will add it (s->info is not there yet) */
	vi = edgeq_model_info(v);
	t = malloc(max * sizeof(*t));
	if (t && edgeq_tokenize(v, r->prompt, vi->bos >= 0 && vi->add_bos,
				r->parse_special, t, max, &n))
		n = 0;
	free(t);
	return n;
}

/*
 * Whether @name names a model this server answers for: its id in
 * /v1/models, the file's name (with or without .gguf), or the model an
 * endpoint is configured with. An empty or absent name means the local one.
 */
static bool model_known(struct srv *s, const char *name)
{
	const char *base = strrchr(s->cfg.model_path, '/');
	size_t n = strlen(name), bl;

	base = base ? base + 1 : s->cfg.model_path;
	bl = strlen(base);
	if (!n || !strcmp(name, s->model_id) || !strcmp(name, base) ||
	    (bl > 5 && n == bl - 5 && !strncmp(name, base, n) &&
	     !strcmp(base + n, ".gguf")))
		return true;
	return (s->cfg.private_model && !strcmp(name, s->cfg.private_model)) ||
	       (s->cfg.public_model && !strcmp(name, s->cfg.public_model));
}

/*
 * The bundle's thermal limits, against the hottest device the monitor
 * reports: at or above critical, no new generation (those running finish);
 * at or above throttle, no queueing: admitted only into a free slot.
 * 0 to go on, or the refusal already queued.
 */
static int thermal_admission(struct srv_req *r)
{
	struct srv *s = r->s;
	struct edgeq_router_capacity cap;
	int32_t hot = INT32_MIN;

	if (s->cfg.critical_c <= 0 && s->cfg.throttle_c <= 0)
		return 0;
	pthread_mutex_lock(&s->lock);
	for (int i = 0; s->pressure.valid && i < s->pressure.n_dev; i++)
		if (s->pressure.dev[i].temp_mc != INT32_MIN &&
		    s->pressure.dev[i].temp_mc > hot)
			hot = s->pressure.dev[i].temp_mc;
	capacity_locked(s, &cap);
	pthread_mutex_unlock(&s->lock);
	if (hot == INT32_MIN)
		return 0;
	if (s->cfg.critical_c > 0 && hot >= s->cfg.critical_c * 1000) {
		r->retry_after = 30;
		srv_send_error(
			r, 503, "unavailable_error", NULL,
			"the box is at %.1f C, at or above the bundle's critical %.1f C: no new generation until it cools",
			hot / 1000.0, s->cfg.critical_c);
		return 503;
	}
	if (s->cfg.throttle_c > 0 && hot >= s->cfg.throttle_c * 1000 &&
	    cap.running >= cap.slots) {
		r->retry_after = 5;
		srv_send_error(
			r, 429, "rate_limit_error", NULL,
			"the box is at %.1f C, above the bundle's throttle %.1f C: requests are taken only into a free slot",
			hot / 1000.0, s->cfg.throttle_c);
		return 429;
	}
	return 0;
}

static int do_generate(struct srv_req *r)
{
	struct srv *s = r->s;
	const char *model;
	int ret;

	ret = srv_parse_request(r);
	if (ret)
		return ret; /* the 4xx is queued */
	model = json_string_value(json_object_get(r->json, "model"));
	if (model && atomic_load(&s->state) == SRV_READY &&
	    !model_known(s, model)) {
		ret = srv_send_error(
			r, 404, "invalid_request_error", "model",
			"The model '%.200s' does not exist: this server has '%s' (GET /v1/models)",
			model, s->model_id);
		return ret;
	}
	if (atomic_load(&s->state) == SRV_READY) {
		ret = srv_tokenize_prompt(r);
		if (ret)
			return ret;
	} else if (r->prompt) {
		/* the weights are still loading: count with the vocabulary */
		r->n_prompt = count_tokens(s, r);
	}
	if (thermal_admission(r))
		return MHD_YES;
	if (r->key) {
		double retry = 1;

		ret = srv_key_admit(r->key, edgeq_now_ns(), &retry);
		if (ret == -EAGAIN) {
			r->retry_after = (int)retry + 1;
			return srv_send_error(
				r, 429, "rate_limit_error", NULL,
				"key '%s' is over its rate of %.3g requests per second; retry in %.1f s",
				r->key->name, r->key->rate, retry);
		}
		if (ret == -EBUSY)
			return srv_send_error(
				r, 429, "rate_limit_error", NULL,
				"key '%s' already has %u requests in flight, its cap",
				r->key->name, r->key->concurrency);
		r->key_admitted = true;
	}
	if (route_once(r, "decision"))
		return srv_send_error(r, 500, "server_error", NULL,
				      "router failed");
	while (r->dec.route == EDGEQ_ROUTE_PRIVATE ||
	       r->dec.route == EDGEQ_ROUTE_PUBLIC) {
		r->route = r->dec.route;
		ret = srv_upstream_respond(r, r->dec.route);
		if (ret == 0)
			return MHD_YES;
		/* The upstream failed before anything was sent: decide again
		 * without it; internal/public fall back to local. */
		srv_upstream_end(r);
		if (r->cancelled)
			return MHD_NO; /* the client left while we waited */
		r->failed |= 1u << r->dec.route;
		if (!r->fallback[0])
			snprintf(r->fallback, sizeof(r->fallback), "%s",
				 edgeq_route_name(r->dec.route));
		route_once(r, "fallback");
	}
	r->route = r->dec.route;
	if (r->dec.route == EDGEQ_ROUTE_LOCAL && r->key &&
	    !(r->key->routes & (1u << EDGEQ_ROUTE_LOCAL)))
		return srv_send_error(
			r, 403, "permission_error", NULL,
			"key '%s' may not use the local engine, and no endpoint it may use can take this request",
			r->key->name);
	if (r->dec.route == EDGEQ_ROUTE_REJECT) {
		if (r->dec.reason == EDGEQ_REASON_REJECT_OVERLOAD)
			return srv_send_error(
				r, 429, "rate_limit_error", NULL,
				"too many requests: all %d slots busy and the queue of %d is full",
				s->n_slots, s->cfg.queue);
		return srv_send_error(r, 503, "unavailable_error", NULL,
				      atomic_load(&s->state) == SRV_LOADING ?
					      "model is loading" :
					      "local engine unavailable");
	}
	return srv_local_respond(r);
}

static const char *bearer(struct srv_req *r)
{
	const char *h = MHD_lookup_connection_value(
		r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);

	if (!h || strncasecmp(h, "Bearer ", 7))
		return NULL;
	return h + 7;
}

/*
 * Who is asking: with a keys file, the key's application (0), or the
 * status to refuse with (401 unknown key, 403 endpoint not allowed); with
 * a single --api-key, whether it matches.
 */
static int authenticate(struct srv_req *r, enum srv_endpoint ep)
{
	struct srv *s = r->s;
	const char *key = s->cfg.api_key, *tok = bearer(r);
	size_t kl;

	if (ep == SRV_EP_METRICS && s->cfg.metrics_public)
		return 0;
	if (s->cfg.keys_file) {
		pthread_mutex_lock(&s->keys_lock);
		r->keyset = srv_keys_get(s->keys);
		pthread_mutex_unlock(&s->keys_lock);
		r->key = srv_keys_match(r->keyset, tok);
		if (!r->key)
			return 401;
		return r->key->endpoints & (1u << ep) ? 0 : 403;
	}
	if (!key || !*key)
		return 0;
	if (!tok)
		return 401;
	kl = strlen(key);
	return strlen(tok) == kl && sodium_memcmp(tok, key, kl) == 0 ? 0 : 401;
}

static int not_allowed(struct srv_req *r, const char *allow)
{
	r->allow = allow;
	return srv_send_error(r, 405, "invalid_request_error", NULL,
			      "method not allowed here; use %s", allow);
}

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind,
				    const char *key, const char *value)
{
	int *n = cls;

	if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH))
		n[0]++;
	else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING))
		n[1]++;
	else if (!strcasecmp(key, MHD_HTTP_HEADER_HOST))
		n[2]++;
	return MHD_YES;
}

/*
 * The gate checked the first request's head on each connection; a later
 * one on a kept-alive connection is checked here, as far as what
 * libmicrohttpd parsed allows. 0 or the 400 already queued.
 */
static int check_framing(struct srv_req *r, const char *version)
{
	int n[3] = { 0, 0, 0 };
	const char *why = NULL;

	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, count_header, n);
	if (n[0] > 1)
		why = "more than one Content-Length";
	else if (n[0] && n[1])
		why = "Content-Length together with Transfer-Encoding";
	else if (n[2] > 1 || (!n[2] && !strcmp(version, MHD_HTTP_VERSION_1_1)))
		why = "HTTP/1.1 needs exactly one Host header";
	if (!why)
		return 0;
	r->close = true;
	srv_send_error(r, 400, "invalid_request_error", NULL, "%s", why);
	return 400;
}

/* A CORS preflight: 204, with the grants only for an allowed origin. */
static int do_preflight(struct srv_req *r)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		0, NULL, MHD_RESPMEM_PERSISTENT);
	int ret;

	if (!resp)
		return MHD_NO;
	srv_add_common_headers(resp);
	srv_add_route_headers(r, resp);
	if (srv_cors_origin(r)) {
		MHD_add_response_header(resp, "Access-Control-Allow-Methods",
					"GET, HEAD, POST, OPTIONS");
		MHD_add_response_header(
			resp, "Access-Control-Allow-Headers",
			"Authorization, Content-Type, X-Edgeq-Privacy, X-Edgeq-Slo-Tokens-Per-S, X-Edgeq-Deadline");
		MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
	}
	ret = MHD_queue_response(r->conn, 204, resp);
	MHD_destroy_response(resp);
	srv_metrics_request(r->s->metrics, r->endpoint, 204);
	return ret;
}

static int dispatch(struct srv_req *r, const char *method, const char *url)
{
	bool post = !strcmp(method, "POST");
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");

	if (!strcmp(method, "OPTIONS"))
		return do_preflight(r);

	if (!strcmp(url, "/health") || !strcmp(url, "/v1/health")) {
		r->endpoint = "health";
		return get ? do_health(r) : not_allowed(r, "GET, HEAD");
	}
	if (!strcmp(url, "/v1/chat/completions"))
		r->endpoint = "chat";
	else if (!strcmp(url, "/v1/completions"))
		r->endpoint = "completions";
	else if (!strcmp(url, "/v1/models"))
		r->endpoint = "models";
	else if (!strcmp(url, "/metrics"))
		r->endpoint = "metrics";
	else
		return srv_send_error(r, 404, "invalid_request_error", NULL,
				      "no such endpoint: %s %s", method, url);
	switch (authenticate(
		r, !strcmp(r->endpoint, "chat")	       ? SRV_EP_CHAT :
		   !strcmp(r->endpoint, "completions") ? SRV_EP_COMPLETIONS :
		   !strcmp(r->endpoint, "models")      ? SRV_EP_MODELS :
							 SRV_EP_METRICS)) {
	case 0:
		break;
	case 403:
		return srv_send_error(r, 403, "permission_error", NULL,
				      "key '%s' may not use %s", r->key->name,
				      url);
	default:
		return srv_send_error(r, 401, "invalid_request_error", NULL,
				      "missing or wrong bearer token");
	}
	if (!strcmp(r->endpoint, "models") || !strcmp(r->endpoint, "metrics")) {
		if (!get)
			return not_allowed(r, "GET, HEAD");
		return r->endpoint[0] == 'm' && r->endpoint[1] == 'o' ?
			       do_models(r) :
			       do_metrics(r);
	}
	if (!post)
		return not_allowed(r, "POST");
	if (r->too_big)
		return srv_send_error(r, 413, "invalid_request_error", NULL,
				      "request body larger than %llu bytes",
				      (unsigned long long)r->s->cfg.max_body);
	if (atomic_load(&r->s->state) == SRV_STOPPING)
		return srv_send_error(r, 503, "unavailable_error", NULL,
				      "server is shutting down");
	r->kind = r->endpoint[0] == 'c' && r->endpoint[1] == 'h' ?
			  SRV_CHAT :
			  SRV_COMPLETION;
	return do_generate(r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct srv *s = cls;
	struct srv_req *r = *con_cls;
	const char *cl;

	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		r->s = s;
		r->conn = conn;
		r->t0 = edgeq_now_ns();
		r->endpoint = "other";
		r->route = EDGEQ_ROUTE_LOCAL;
		snprintf(r->id, sizeof(r->id), "%llx%06llx",
			 (unsigned long long)time(NULL),
			 (unsigned long long)atomic_fetch_add(&s->seq, 1));
		cl = MHD_lookup_connection_value(
			conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		*con_cls = r;
		r->head = !strcmp(method, "HEAD");
		if (check_framing(r, version))
			return MHD_YES;
		if (cl && strtoull(cl, NULL, 10) > s->cfg.max_body)
			r->too_big = true;
		if (cl && strtoull(cl, NULL, 10) / 8 > s->cfg.max_body) {
			/*
			 * Far too big: refuse before reading it (MHD closes the
			 * connection; a client still sending may see a reset).
			 * A body just over the limit is read and dropped, so
			 * that every client gets the 413 and its JSON body.
			 */
			r->endpoint = !strcmp(url, "/v1/chat/completions") ?
					      "chat" :
				      !strcmp(url, "/v1/completions") ?
					      "completions" :
					      "other";
			return srv_send_error(
				r, 413, "invalid_request_error", NULL,
				"request body larger than %llu bytes",
				(unsigned long long)s->cfg.max_body);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		/* a body trickled in past the deadline: close */
		if (s->cfg.request_deadline_s > 0 &&
		    edgeq_now_ns() - r->t0 >
			    (uint64_t)s->cfg.request_deadline_s *
				    1000000000ull) {
			srv_metrics_request(s->metrics, "other", 408);
			srv_log(SRV_INFO,
				(const char *const[]){
					"EDGEQ_EVENT=request-refused", NULL },
				"request %s: its body did not arrive within %d s; closed",
				r->id, s->cfg.request_deadline_s);
			return MHD_NO;
		}
		if (!r->too_big &&
		    r->body.len + *upload_size <= s->cfg.max_body)
			srv_buf_add(&r->body, upload, *upload_size);
		else
			r->too_big = true;
		*upload_size = 0;
		return MHD_YES;
	}
	return dispatch(r, method, url) == MHD_NO ? MHD_NO : MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct srv_req *r = *con_cls;

	if (!r)
		return;
	*con_cls = NULL;
	if (r->answering)
		atomic_fetch_sub(&r->s->answering, 1);
	if (r->gen) {
		/* the connection ended before the generation did */
		if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
			r->cancelled = true;
		srv_local_end(r);
		srv_log_request(r, 499);
		if (r->cancelled)
			srv_metrics_request(r->s->metrics, r->endpoint, 499);
	}
	srv_upstream_end(r);
	if (r->key_admitted)
		srv_key_release(r->key);
	srv_keys_put(r->keyset);
	json_decref(r->json);
	free(r->prompt);
	free(r->keep_text);
	free(r->toks);
	srv_buf_free(&r->body);
	srv_buf_free(&r->text);
	srv_buf_free(&r->delta);
	srv_buf_free(&r->out);
	free(r);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	srv_log(SRV_DEBUG, (const char *const[]){ "EDGEQ_EVENT=http", NULL },
		"http: %s", msg);
}

/* ---- life cycle */

int srv_new(const struct srv_config *cfg, struct srv **out,
	    struct edgeq_error *err)
{
	struct srv *s;

	if (cfg->slots < 1 || cfg->slots > 64 || cfg->queue < 0 ||
	    cfg->ctx_size < 16 || cfg->max_tokens < 1 ||
	    cfg->default_max_tokens < 1 || cfg->max_connections < 2 ||
	    cfg->max_body < 64 || !cfg->model_path)
		return edgeq_error_set(
			err, EINVAL,
			"invalid configuration: need --model, slots 1..64, ctx-size >= 16, max-body >= 64");
	if (sodium_init() < 0)
		return edgeq_error_set(err, EIO, "libsodium failed to start");
	s = calloc(1, sizeof(*s));
	if (!s)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	s->cfg = *cfg;
	s->listen_fd[0] = s->listen_fd[1] = -1;
	s->n_slots = cfg->slots;
	s->created = time(NULL);
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->keys_lock, NULL);
	pthread_mutex_init(&s->tls_lock, NULL);
	if (cfg->keys_file) {
		int ret = srv_keys_load(cfg->keys_file, NULL, &s->keys, err);

		if (ret) {
			pthread_mutex_destroy(&s->tls_lock);
			pthread_mutex_destroy(&s->keys_lock);
			pthread_mutex_destroy(&s->lock);
			free(s);
			return ret;
		}
	}
	s->metrics = srv_metrics_new();
	s->rcfg.have_private = cfg->private_url && *cfg->private_url;
	s->rcfg.have_public = cfg->public_url && *cfg->public_url;
	if (!s->metrics) {
		srv_free(s);
		return edgeq_error_set(err, ENOMEM, "out of memory");
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	*out = s;
	return 0;
}

static int listen_tcp(struct srv *s, struct edgeq_error *err)
{
	struct sockaddr_in6 a6 = { 0 };
	struct sockaddr_in a4 = { 0 };
	struct sockaddr_storage got;
	socklen_t gl = sizeof(got);
	int fd, one = 1, fam;

	if (inet_pton(AF_INET, s->cfg.listen, &a4.sin_addr) == 1) {
		fam = AF_INET;
		a4.sin_family = AF_INET;
		a4.sin_port = htons((uint16_t)s->cfg.port);
	} else if (inet_pton(AF_INET6, s->cfg.listen, &a6.sin6_addr) == 1) {
		fam = AF_INET6;
		a6.sin6_family = AF_INET6;
		a6.sin6_port = htons((uint16_t)s->cfg.port);
	} else {
		return edgeq_error_set(
			err, EINVAL,
			"listen address '%s' is not an IPv4 or IPv6 address",
			s->cfg.listen);
	}
	fd = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return edgeq_error_set(err, errno, "socket: %s",
				       strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fam == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if ((fam == AF_INET ? bind(fd, (struct sockaddr *)&a4, sizeof(a4)) :
			      bind(fd, (struct sockaddr *)&a6, sizeof(a6))) ||
	    listen(fd, 64)) {
		int e = errno;

		close(fd);
		return edgeq_error_set(err, e,
				       "cannot listen on %s port %d: %s",
				       s->cfg.listen, s->cfg.port, strerror(e));
	}
	if (!getsockname(fd, (struct sockaddr *)&got, &gl))
		s->port =
			ntohs(got.ss_family == AF_INET ?
				      ((struct sockaddr_in *)&got)->sin_port :
				      ((struct sockaddr_in6 *)&got)->sin6_port);
	s->listen_fd[0] = fd;
	return 0;
}

static int listen_unix(struct srv *s, struct edgeq_error *err)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *path = s->cfg.unix_socket;
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(a.sun_path))
		return edgeq_error_set(err, ENAMETOOLONG,
				       "unix socket path too long: %s", path);
	strcpy(a.sun_path, path);
	/* a stale socket of an earlier run: replace it, nothing else */
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode))
			return edgeq_error_set(err, EEXIST,
					       "%s exists and is not a socket",
					       path);
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return edgeq_error_set(err, errno, "socket: %s",
				       strerror(errno));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    chmod(path, s->cfg.socket_mode) || listen(fd, 64)) {
		int e = errno;

		close(fd);
		return edgeq_error_set(err, e, "cannot listen on %s: %s", path,
				       strerror(e));
	}
	s->listen_fd[1] = fd;
	return 0;
}

/* libmicrohttpd closed a connection the gate handed it */
static void on_connection(void *cls, struct MHD_Connection *conn,
			  void **socket_ctx,
			  enum MHD_ConnectionNotificationCode c)
{
	struct srv_gate *g = *socket_ctx;
	const union MHD_ConnectionInfo *ci;

	if (c == MHD_CONNECTION_NOTIFY_STARTED) {
		struct srv *s = cls;
		const union MHD_ConnectionInfo *di = MHD_get_connection_info(
			conn, MHD_CONNECTION_INFO_DAEMON);

		/* the unix socket's daemon, else a TCP one (maybe retired) */
		*socket_ctx = di && s->httpd[1] && di->daemon == s->httpd[1] ?
				      s->gate[1] :
				      s->gate[0];
		return;
	}
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (g && ci && ci->client_addr)
		srv_gate_closed(g, ci->client_addr);
	else if (g) {
		struct sockaddr su = { .sa_family = AF_UNIX };

		srv_gate_closed(g, &su);
	}
}

static void on_refuse(void *arg, int status, const char *why)
{
	struct srv *s = arg;

	srv_metrics_request(s->metrics, "other", status);
	srv_log(SRV_INFO,
		(const char *const[]){ "EDGEQ_EVENT=connection-refused", NULL },
		"connection refused with %d: %s", status, why);
}

/* A daemon for one listener; with @cert and @key, HTTPS. */
static struct MHD_Daemon *start_httpd(struct srv *s, const char *cert,
				      const char *key)
{
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD |
			     MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG |
			     MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET;

	struct MHD_OptionItem o[] = {
		{ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, s },
		{ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, s },
		{ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, s },
		{ MHD_OPTION_CONNECTION_LIMIT, s->cfg.max_connections, NULL },
		{ MHD_OPTION_CONNECTION_TIMEOUT, s->cfg.request_timeout_s,
		  NULL },
		{ MHD_OPTION_CONNECTION_MEMORY_LIMIT, 64 * 1024, NULL },
		{ cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0,
		  (void *)cert },
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)key },
		{ MHD_OPTION_END, 0, NULL },
	};

	return MHD_start_daemon(flags | (cert ? MHD_USE_TLS : 0), 0, NULL, NULL,
				on_request, s, MHD_OPTION_ARRAY, o,
				MHD_OPTION_END);
}

static int read_tls(struct srv *s, char **cert, char **key,
		    struct edgeq_error *err)
{
	size_t len;
	int ret;

	if (!s->cfg.tls_cert || !s->cfg.tls_key)
		return edgeq_error_set(
			err, EINVAL, "TLS needs both --tls-cert and --tls-key");
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
		return edgeq_error_set(
			err, EOPNOTSUPP,
			"this libmicrohttpd was built without TLS (GnuTLS)");
	ret = edgeq_read_text(s->cfg.tls_cert, cert, &len, err);
	if (ret)
		return ret;
	ret = edgeq_read_text(s->cfg.tls_key, key, &len, err);
	if (ret) {
		free(*cert);
		*cert = NULL;
	}
	return ret;
}

int srv_reload_tls(struct srv *s, struct edgeq_error *err)
{
	struct MHD_Daemon *d, *old;
	char *cert = NULL, *key = NULL;
	int ret, i;

	if (!s->tls_cert || !s->httpd[0])
		return 0;
	ret = read_tls(s, &cert, &key, err);
	if (ret)
		return ret;
	pthread_mutex_lock(&s->tls_lock);
	d = start_httpd(s, cert, key);
	if (!d) {
		pthread_mutex_unlock(&s->tls_lock);
		free(cert);
		free(key);
		return edgeq_error_set(
			err, EINVAL,
			"%s / %s: not a valid PEM certificate chain and key; the old ones stay",
			s->cfg.tls_cert, s->cfg.tls_key);
	}
	/* retired daemons that have no connection left go now */
	for (i = 0; i < 8; i++) {
		const union MHD_DaemonInfo *di;

		if (!s->retired[i])
			continue;
		di = MHD_get_daemon_info(s->retired[i],
					 MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		if (di && di->num_connections == 0) {
			MHD_stop_daemon(s->retired[i]);
			s->retired[i] = NULL;
		}
	}
	for (i = 0; i < 8 && s->retired[i]; i++)
		;
	old = s->httpd[0];
	if (i == 8) { /* too many still busy: the oldest goes anyway */
		MHD_stop_daemon(s->retired[0]);
		memmove(s->retired, s->retired + 1, 7 * sizeof(s->retired[0]));
		i = 7;
	}
	s->retired[i] = old;
	s->httpd[0] = d;
	srv_gate_set_httpd(s->gate[0], d);
	free(s->tls_cert);
	free(s->tls_key);
	s->tls_cert = cert;
	s->tls_key = key;
	pthread_mutex_unlock(&s->tls_lock);
	srv_log(SRV_NOTICE,
		(const char *const[]){ "EDGEQ_EVENT=tls-reloaded", NULL },
		"tls: new connections use %s", s->cfg.tls_cert);
	return 0;
}

static void stop_retired(struct srv *s)
{
	for (int i = 0; i < 8; i++) {
		if (s->retired[i])
			MHD_stop_daemon(s->retired[i]);
		s->retired[i] = NULL;
	}
}

int srv_start(struct srv *s, struct edgeq_error *err)
{
	bool tcp = s->cfg.listen && *s->cfg.listen &&
		   strcmp(s->cfg.listen, "none");
	int i, ret;

	if (!tcp && !s->cfg.unix_socket)
		return edgeq_error_set(
			err, EINVAL,
			"nothing to listen on: set --listen or --unix-socket");
	if (tcp) {
		ret = listen_tcp(s, err);
		if (ret)
			return ret;
	}
	if (s->cfg.unix_socket) {
		ret = listen_unix(s, err);
		if (ret)
			return ret;
	}
	if (s->cfg.tls_cert || s->cfg.tls_key) {
		ret = read_tls(s, &s->tls_cert, &s->tls_key, err);
		if (ret)
			return ret;
	}
	for (i = 0; i < 2; i++) {
		if (s->listen_fd[i] < 0)
			continue;
		s->httpd[i] = start_httpd(s, i == 0 ? s->tls_cert : NULL,
					  i == 0 ? s->tls_key : NULL);
		if (!s->httpd[i])
			return edgeq_error_set(
				err, EIO,
				i == 0 && s->tls_cert ?
					"the HTTPS server failed to start: is %s a PEM certificate chain and %s its PEM key?" :
					"the HTTP server failed to start",
				s->cfg.tls_cert, s->cfg.tls_key);
	}
	for (i = 0; i < 2; i++) {
		struct srv_gate_config gc = {
			.listen_fd = s->listen_fd[i],
			.httpd = s->httpd[i],
			.head_ms =
				(unsigned int)(s->cfg.request_deadline_s > 0 ?
						       s->cfg.request_deadline_s :
						       30) *
				1000u,
			.per_addr = (unsigned int)s->cfg.max_conns_per_client,
			.max_pending = 1024,
			.max_head = 16384,
			.max_body = s->cfg.max_body,
			.tls = i == 0 && s->tls_cert,
			.on_refuse = on_refuse,
			.arg = s,
		};

		if (!s->httpd[i])
			continue;
		ret = srv_gate_start(&gc, &s->gate[i]);
		if (ret)
			return edgeq_error_set(
				err, -ret, "the accept loop failed to start");
	}
	return 0;
}

bool srv_listener_answers(struct srv *s, int timeout_ms)
{
	static const char req[] =
		"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
	static _Atomic uint64_t last_ns;
	static _Atomic bool last_ok = true;
	struct sockaddr_storage a = { 0 };
	struct pollfd pf;
	uint64_t now = edgeq_now_ns(), end;
	socklen_t al = sizeof(a);
	char buf[16];
	size_t got = 0;
	bool ok = false;
	int fd;

	if (now - atomic_load(&last_ns) < 1000000000ull)
		return atomic_load(&last_ok);
	atomic_store(&last_ns, now);
	if (s->listen_fd[0] >= 0 &&
	    getsockname(s->listen_fd[0], (struct sockaddr *)&a, &al) == 0) {
		/* a wildcard listener is reached on loopback */
		if (a.ss_family == AF_INET &&
		    ((struct sockaddr_in *)&a)->sin_addr.s_addr == INADDR_ANY)
			((struct sockaddr_in *)&a)->sin_addr.s_addr =
				htonl(INADDR_LOOPBACK);
		if (a.ss_family == AF_INET6 &&
		    IN6_IS_ADDR_UNSPECIFIED(
			    &((struct sockaddr_in6 *)&a)->sin6_addr))
			((struct sockaddr_in6 *)&a)->sin6_addr =
				in6addr_loopback;
	} else if (s->listen_fd[1] >= 0) {
		al = sizeof(a);
		if (getsockname(s->listen_fd[1], (struct sockaddr *)&a, &al))
			return false;
	} else {
		return true; /* nothing to check */
	}
	fd = socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		goto out;
	end = now + (uint64_t)timeout_ms * 1000000ull;
	if (connect(fd, (struct sockaddr *)&a, al) < 0 && errno != EINPROGRESS)
		goto out;
	pf.fd = fd;
	pf.events = POLLOUT;
	if (poll(&pf, 1, timeout_ms) != 1 ||
	    send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != sizeof(req) - 1)
		goto out;
	pf.events = POLLIN;
	while (got < 9 && edgeq_now_ns() < end) {
		ssize_t n;

		if (poll(&pf, 1, (int)((end - edgeq_now_ns()) / 1000000) + 1) !=
		    1)
			break;
		n = recv(fd, buf + got, 9 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	/* over TLS the plain request is refused: any answer, even the
	 * close, shows that the listener accepts and serves */
	ok = s->tls_cert && s->listen_fd[0] >= 0 ?
		     got > 0 || edgeq_now_ns() < end :
		     got == 9 && !memcmp(buf, "HTTP/1.1 ", 9);
out:
	if (fd >= 0)
		close(fd);
	atomic_store(&last_ok, ok);
	if (!ok)
		srv_log(SRV_WARN,
			(const char *const[]){ "EDGEQ_EVENT=listener-stuck",
					       NULL },
			"the listener did not answer its own /health within %d ms: no watchdog ping",
			timeout_ms);
	return ok;
}

int srv_port(struct srv *s)
{
	return s->port;
}

bool srv_ready(struct srv *s)
{
	return atomic_load(&s->state) == SRV_READY;
}

/* --draft: the option, and a draft model loaded like the target. */
static int load_draft(struct srv *s, const struct edgeq_model_params *mp,
		      struct edgeq_draft_params *d, struct edgeq_error *err)
{
	struct edgeq_model_params dp = *mp;
	const char *path;
	int ret;

	if (edgeq_draft_parse(s->cfg.draft, d, &path))
		return edgeq_error_set(
			err, EINVAL,
			"--draft must be lookup, layers:L (L >= 1) or a model file");
	d->max_len = s->cfg.draft_max > 0 ? s->cfg.draft_max : 4;
	s->draft_kind = (int)d->kind;
	if (!path)
		return 0;
	dp.path = path;
	dp.weights_budget = 0;
	ret = edgeq_model_load(&dp, &s->draft_model, err);
	if (ret)
		return ret;
	d->model = s->draft_model;
	return 0;
}

int srv_load(struct srv *s, struct edgeq_error *err)
{
	struct edgeq_model_params mp;
	struct edgeq_session_params sp;
	struct edgeq_session_status ss;
	const char *base;
	int ret;

	edgeq_model_params_init(&mp);
	mp.path = s->cfg.model_path;
	mp.n_threads = s->cfg.threads;
	mp.weights = (enum edgeq_weights_mode)s->cfg.weights_mode;
	mp.weights_budget = s->cfg.weights_budget;
	/* the vocabulary first (quick): requests that come while the
	 * weights load are routed with real token counts */
	{
		struct edgeq_model_params vp = mp;
		struct edgeq_model *v = NULL;

		vp.vocab_only = true;
		if (!edgeq_model_load(&vp, &v, NULL))
			atomic_store(&s->vocab, v);
	}
	ret = edgeq_model_load(&mp, &s->model, err);
	if (ret)
		goto fail;
	s->info = edgeq_model_info(s->model);
	s->n_ctx = (uint32_t)s->cfg.ctx_size;
	if (s->info->n_ctx_train && s->n_ctx > s->info->n_ctx_train)
		s->n_ctx = s->info->n_ctx_train;

	edgeq_session_params_init(&sp);
	sp.n_slots = s->n_slots;
	sp.queue = s->cfg.queue;
	sp.ctx.n_ctx = s->n_ctx;
	sp.ctx.kv_type = (enum edgeq_kv_type)s->cfg.kv_type;
	sp.prefix_cache = s->cfg.prefix_cache;
	sp.context_shift = s->cfg.context_shift;
	sp.token_delay_ms = s->cfg.token_delay_ms;
	sp.hook_arg = s->cfg.hook_arg;
	sp.on_ctx = s->cfg.on_ctx;
	sp.on_ctx_free = s->cfg.on_ctx_free;
	sp.pressure = s->cfg.pressure;
	sp.weights_budget = s->cfg.weights_budget;
	sp.pressure_arg = s;
	sp.on_pressure = srv_on_pressure;
	ret = load_draft(s, &mp, &sp.draft, err);
	if (ret)
		goto fail;
	ret = edgeq_session_new(s->model, &sp, &s->sess, err);
	if (ret)
		goto fail;
	srv_log_pressure(s);
	edgeq_session_status(s->sess, &ss);
	if (ss.n_slots < s->n_slots) /* as many KV caches as memory allows */
		srv_log(SRV_WARN,
			(const char *const[]){ "EDGEQ_EVENT=slots-reduced",
					       NULL },
			"memory for %d of %d slots only", ss.n_slots,
			s->n_slots);
	s->n_slots = ss.n_slots;

	if (s->cfg.model_name && *s->cfg.model_name) {
		snprintf(s->model_id, sizeof(s->model_id), "%s",
			 s->cfg.model_name);
	} else if (s->info->name[0]) {
		snprintf(s->model_id, sizeof(s->model_id), "%s", s->info->name);
	} else {
		base = strrchr(s->cfg.model_path, '/');
		snprintf(s->model_id, sizeof(s->model_id), "%s",
			 base ? base + 1 : s->cfg.model_path);
	}
	ret = srv_chat_template_load(s, err);
	if (ret)
		goto fail;
	/* the tokenizer's own add_bos_token (Qwen's ChatML has none) */
	s->add_bos_chat = s->info->bos >= 0 && s->info->add_bos;

	if (s->cfg.load_delay_ms > 0)
		usleep((useconds_t)s->cfg.load_delay_ms * 1000);
	if (atomic_load(&s->state) == SRV_LOADING)
		atomic_store(&s->state, SRV_READY);
	srv_log(SRV_NOTICE,
		(const char *const[]){ "EDGEQ_EVENT=model-loaded", NULL },
		"model %s loaded: %s, %u layers, %u slots of %u tokens, chat template %s",
		s->model_id, s->info->arch, s->info->n_layer, s->n_slots,
		s->n_ctx, s->tmpl_desc);
	return 0;
fail:
	snprintf(s->load_error, sizeof(s->load_error), "%s",
		 err ? err->msg : "load failed");
	atomic_store(&s->state, SRV_FAILED);
	return ret;
}

bool srv_alive(struct srv *s, uint64_t stall_ns)
{
	struct edgeq_session_status ss;

	if (!s->sess || atomic_load(&s->state) == SRV_LOADING)
		return true;
	edgeq_session_status(s->sess, &ss);
	return ss.stalled_ns <= stall_ns;
}

/* Generations running or waiting for a slot, or whose answer has not
 * left yet. */
static int in_flight(struct srv *s)
{
	struct edgeq_session_status ss;
	int n, a = atomic_load(&s->answering);

	if (!s->sess)
		return a;
	edgeq_session_status(s->sess, &ss);
	n = ss.running + ss.waiting;
	return n > a ? n : a;
}

int srv_shutdown(struct srv *s, uint64_t timeout_ns)
{
	uint64_t end = edgeq_now_ns() + timeout_ns;
	int left, i;

	/* connections are still accepted: /health answers 503 "shutting
	 * down" and new generations 503, until the daemon stops */
	if (atomic_load(&s->state) != SRV_FAILED)
		atomic_store(&s->state, SRV_STOPPING);
	for (;;) {
		left = in_flight(s);
		if (!left || edgeq_now_ns() >= end)
			break;
		usleep(20000);
	}
	if (left) {
		atomic_store(&s->cancel_all, true);
		if (s->sess)
			edgeq_session_cancel_all(s->sess);
		/* generations stop at their next token; give their answers
		 * (503) a moment to leave before the connections close */
		end = edgeq_now_ns() + 2000000000ull;
		do {
			usleep(20000);
		} while (in_flight(s) && edgeq_now_ns() < end);
		usleep(100000);
	}
	/* the gates first (no more hand-overs), then the daemons (their
	 * closing connections still count down the gates), then the gates'
	 * memory */
	for (i = 0; i < 2; i++)
		srv_gate_stop(s->gate[i]);
	for (i = 0; i < 2; i++) {
		if (s->httpd[i])
			MHD_stop_daemon(s->httpd[i]);
		s->httpd[i] = NULL;
	}
	stop_retired(s);
	for (i = 0; i < 2; i++) {
		srv_gate_free(s->gate[i]);
		s->gate[i] = NULL;
	}
	return left;
}

void srv_free(struct srv *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < 2; i++)
		srv_gate_stop(s->gate[i]);
	for (i = 0; i < 2; i++) {
		if (s->httpd[i])
			MHD_stop_daemon(s->httpd[i]);
		if (s->listen_fd[i] >= 0)
			close(s->listen_fd[i]);
	}
	stop_retired(s);
	for (i = 0; i < 2; i++)
		srv_gate_free(s->gate[i]);
	free(s->tls_cert);
	free(s->tls_key);
	pthread_mutex_destroy(&s->tls_lock);
	if (s->cfg.unix_socket && s->listen_fd[1] != -1)
		unlink(s->cfg.unix_socket);
	edgeq_session_free(s->sess);
	edgeq_model_free(s->draft_model);
	edgeq_model_free(atomic_load(&s->vocab));
	srv_chat_template_free(s);
	if (s->model)
		edgeq_model_free(s->model);
	srv_metrics_free(s->metrics);
	srv_keys_put(s->keys);
	pthread_mutex_destroy(&s->keys_lock);
	pthread_mutex_destroy(&s->lock);
	curl_global_cleanup();
	free(s);
}

int srv_reload_keys(struct srv *s, struct edgeq_error *err)
{
	struct srv_keys *old, *neu = NULL;
	int ret;

	if (!s->cfg.keys_file)
		return 0;
	pthread_mutex_lock(&s->keys_lock);
	old = srv_keys_get(s->keys);
	pthread_mutex_unlock(&s->keys_lock);
	ret = srv_keys_load(s->cfg.keys_file, old, &neu, err);
	if (!ret) {
		pthread_mutex_lock(&s->keys_lock);
		srv_keys_put(s->keys); /* requests keep their own references */
		s->keys = neu;
		pthread_mutex_unlock(&s->keys_lock);
		srv_log(SRV_NOTICE,
			(const char *const[]){ "EDGEQ_EVENT=keys-reloaded",
					       NULL },
			"keys: %zu from %s", neu->n, s->cfg.keys_file);
	}
	srv_keys_put(old);
	return ret;
}
