// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Counters and histograms of the server, rendered in the Prometheus text
 * exposition format (version 0.0.4). Names follow vLLM's where one exists.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/ledger.h>
#include <edgeq/session.h>
#include <edgeq/stream.h>

#include "server/server.h"

#define NBUCKETS 12

struct hist {
	const char *name, *help;
	double le[NBUCKETS]; /* upper bounds; +Inf is implicit */
	int nle;
	uint64_t count[NBUCKETS + 1];
	uint64_t total;
	double sum;
};

#define N_ENDPOINTS 6
#define N_STATUS 16

struct srv_metrics {
	pthread_mutex_t lock;
	struct hist h[SRV_H_COUNT];
	uint64_t prompt_tokens, gen_tokens, cancelled;
	uint64_t requests[N_ENDPOINTS][N_STATUS];
	uint64_t routes[EDGEQ_PRIVACY_COUNT][EDGEQ_ROUTE_COUNT]
		       [EDGEQ_REASON_COUNT];
	uint64_t upstream[EDGEQ_ROUTE_COUNT][2];
};

static const char *const endpoints[N_ENDPOINTS] = {
	"chat", "completions", "models", "health", "metrics", "other",
};
/* 499: the client left before the answer; 500 (last) takes any other */
static const int statuses[N_STATUS] = { 200, 400, 401, 403, 404, 405, 408, 413,
					429, 431, 499, 501, 503, 505, 204, 500 };

static void hist_init(struct hist *h, const char *name, const char *help,
		      const double *le, int n)
{
	h->name = name;
	h->help = help;
	h->nle = n;
	memcpy(h->le, le, sizeof(double) * (size_t)n);
}

struct srv_metrics *srv_metrics_new(void)
{
	static const double ttft[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
				       0.5,   1,    2.5,   5,	 10,  30 };
	static const double itl[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
				      0.1,   0.25,   0.5,   1,	  2.5,	 5 };
	static const double dur[] = { 0.01, 0.05, 0.1, 0.25, 0.5, 1,
				      2.5,  5,	  10,  30,   60,  120 };
	struct srv_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	hist_init(
		&m->h[SRV_H_TTFT], "edgeq_time_to_first_token_seconds",
		"Time from request arrival to the first generated token (local route).",
		ttft, NBUCKETS);
	hist_init(&m->h[SRV_H_ITL], "edgeq_inter_token_latency_seconds",
		  "Time between consecutive generated tokens (local route).",
		  itl, NBUCKETS);
	hist_init(
		&m->h[SRV_H_DURATION], "edgeq_request_duration_seconds",
		"Time from request arrival to the end of the response, any route.",
		dur, NBUCKETS);
	return m;
}

void srv_metrics_free(struct srv_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void srv_metrics_observe(struct srv_metrics *m, enum srv_hist which, double v)
{
	struct hist *h = &m->h[which];
	int i;

	pthread_mutex_lock(&m->lock);
	for (i = 0; i < h->nle && v > h->le[i]; i++)
		;
	h->count[i]++;
	h->total++;
	h->sum += v;
	pthread_mutex_unlock(&m->lock);
}

void srv_metrics_add_tokens(struct srv_metrics *m, uint64_t prompt,
			    uint64_t gen)
{
	pthread_mutex_lock(&m->lock);
	m->prompt_tokens += prompt;
	m->gen_tokens += gen;
	pthread_mutex_unlock(&m->lock);
}

void srv_metrics_request(struct srv_metrics *m, const char *endpoint,
			 int status)
{
	int e, s;

	for (e = 0; e < N_ENDPOINTS - 1 && strcmp(endpoints[e], endpoint); e++)
		;
	for (s = 0; s < N_STATUS - 1 && statuses[s] != status; s++)
		;
	if (statuses[s] != status) /* any other status counts as 500-class */
		s = status < 500 ? 1 : N_STATUS - 1;
	pthread_mutex_lock(&m->lock);
	m->requests[e][s]++;
	pthread_mutex_unlock(&m->lock);
}

void srv_metrics_route(struct srv_metrics *m, enum edgeq_privacy p,
		       enum edgeq_route r, enum edgeq_route_reason why)
{
	pthread_mutex_lock(&m->lock);
	m->routes[p][r][why]++;
	pthread_mutex_unlock(&m->lock);
}

void srv_metrics_upstream(struct srv_metrics *m, enum edgeq_route r, bool ok)
{
	pthread_mutex_lock(&m->lock);
	m->upstream[r][ok ? 0 : 1]++;
	pthread_mutex_unlock(&m->lock);
}

void srv_metrics_cancelled(struct srv_metrics *m)
{
	pthread_mutex_lock(&m->lock);
	m->cancelled++;
	pthread_mutex_unlock(&m->lock);
}

static void render_hist(const struct hist *h, struct srv_buf *o)
{
	uint64_t cum = 0;
	int i;

	srv_buf_printf(o, "# HELP %s %s\n# TYPE %s histogram\n", h->name,
		       h->help, h->name);
	for (i = 0; i < h->nle; i++) {
		cum += h->count[i];
		srv_buf_printf(o, "%s_bucket{le=\"%g\"} %llu\n", h->name,
			       h->le[i], (unsigned long long)cum);
	}
	srv_buf_printf(o, "%s_bucket{le=\"+Inf\"} %llu\n", h->name,
		       (unsigned long long)h->total);
	srv_buf_printf(o, "%s_sum %.9g\n%s_count %llu\n", h->name, h->sum,
		       h->name, (unsigned long long)h->total);
}

void srv_metrics_render(struct srv_metrics *m, struct srv_buf *o)
{
	int i, j, k;

	pthread_mutex_lock(&m->lock);
	srv_buf_printf(
		o,
		"# HELP edgeq_prompt_tokens_total Prompt tokens processed locally.\n"
		"# TYPE edgeq_prompt_tokens_total counter\n"
		"edgeq_prompt_tokens_total %llu\n"
		"# HELP edgeq_generation_tokens_total Tokens generated locally.\n"
		"# TYPE edgeq_generation_tokens_total counter\n"
		"edgeq_generation_tokens_total %llu\n"
		"# HELP edgeq_requests_cancelled_total Local generations stopped because the client went away or the server stopped.\n"
		"# TYPE edgeq_requests_cancelled_total counter\n"
		"edgeq_requests_cancelled_total %llu\n",
		(unsigned long long)m->prompt_tokens,
		(unsigned long long)m->gen_tokens,
		(unsigned long long)m->cancelled);
	for (i = 0; i < SRV_H_COUNT; i++)
		render_hist(&m->h[i], o);

	srv_buf_printf(
		o,
		"# HELP edgeq_http_requests_total HTTP requests by endpoint and status.\n"
		"# TYPE edgeq_http_requests_total counter\n");
	for (i = 0; i < N_ENDPOINTS; i++)
		for (j = 0; j < N_STATUS; j++)
			if (m->requests[i][j])
				srv_buf_printf(
					o,
					"edgeq_http_requests_total{endpoint=\"%s\",status=\"%d\"} %llu\n",
					endpoints[i], statuses[j],
					(unsigned long long)m->requests[i][j]);

	srv_buf_printf(
		o,
		"# HELP edgeq_router_decisions_total Privacy router decisions by class, route and reason.\n"
		"# TYPE edgeq_router_decisions_total counter\n");
	for (i = 0; i < EDGEQ_PRIVACY_COUNT; i++)
		for (j = 0; j < EDGEQ_ROUTE_COUNT; j++)
			for (k = 0; k < EDGEQ_REASON_COUNT; k++)
				if (m->routes[i][j][k])
					srv_buf_printf(
						o,
						"edgeq_router_decisions_total{class=\"%s\",route=\"%s\",reason=\"%s\"} %llu\n",
						edgeq_privacy_name(i),
						edgeq_route_name(j),
						edgeq_route_reason_name(k),
						(unsigned long long)
							m->routes[i][j][k]);

	srv_buf_printf(
		o,
		"# HELP edgeq_upstream_requests_total Requests forwarded to an upstream endpoint, by result.\n"
		"# TYPE edgeq_upstream_requests_total counter\n");
	for (j = EDGEQ_ROUTE_PRIVATE; j <= EDGEQ_ROUTE_PUBLIC; j++)
		for (k = 0; k < 2; k++)
			srv_buf_printf(
				o,
				"edgeq_upstream_requests_total{endpoint=\"%s\",result=\"%s\"} %llu\n",
				edgeq_route_name(j), k ? "failed" : "ok",
				(unsigned long long)m->upstream[j][k]);
	pthread_mutex_unlock(&m->lock);
}

void srv_metrics_render_session(const struct edgeq_session_status *ss,
				bool speculative, struct srv_buf *o)
{
	struct edgeq_spec sp;
	double a, k, tpp;

	srv_buf_printf(
		o,
		"# HELP edgeq_engine_steps_total Engine steps (one forward pass over every active slot each).\n"
		"# TYPE edgeq_engine_steps_total counter\nedgeq_engine_steps_total %llu\n",
		(unsigned long long)ss->steps);
	if (!speculative)
		return;
	tpp = ss->passes ?
		      (double)(ss->accepted + ss->passes) / (double)ss->passes :
		      0;
	/* a is ss->draft_accept, from the same counters */
	edgeq_ledger_speculative_measured(ss->drafted, ss->accepted,
					  ss->rejected, ss->verifies,
					  ss->draft_cost, &a, &k, &sp);
	srv_buf_printf(
		o,
		"# HELP edgeq_draft_tokens_total Tokens drafted for speculative decoding.\n"
		"# TYPE edgeq_draft_tokens_total counter\nedgeq_draft_tokens_total %llu\n"
		"# HELP edgeq_draft_accepted_total Drafted tokens the target accepted.\n"
		"# TYPE edgeq_draft_accepted_total counter\nedgeq_draft_accepted_total %llu\n"
		"# HELP edgeq_draft_acceptance_ratio Acceptance rate per drafted token (the geometric model's a).\n"
		"# TYPE edgeq_draft_acceptance_ratio gauge\nedgeq_draft_acceptance_ratio %.4f\n"
		"# HELP edgeq_draft_cost_ratio Measured cost of a draft token over a plain target pass.\n"
		"# TYPE edgeq_draft_cost_ratio gauge\nedgeq_draft_cost_ratio %.4f\n"
		"# HELP edgeq_tokens_per_pass Tokens per target decode pass (1 without speculation).\n"
		"# TYPE edgeq_tokens_per_pass gauge\nedgeq_tokens_per_pass %.4f\n"
		"# HELP edgeq_draft_predicted_speedup The ledger's speedup for the measured acceptance, draft length and cost.\n"
		"# TYPE edgeq_draft_predicted_speedup gauge\nedgeq_draft_predicted_speedup %.4f\n"
		"# HELP edgeq_draft_off_slots Running slots whose drafting is off (it does not pay now).\n"
		"# TYPE edgeq_draft_off_slots gauge\nedgeq_draft_off_slots %d\n",
		(unsigned long long)ss->drafted,
		(unsigned long long)ss->accepted, ss->draft_accept,
		ss->draft_cost, tpp, sp.speedup, ss->draft_off);
}

void srv_metrics_render_weights(const struct edgeq_stream_status *ws,
				struct srv_buf *b)
{
	struct edgeq_stream_status w = *ws;
	uint32_t layers;

	srv_buf_printf(
		b,
		"# HELP edgeq_weights_mode How tensor data reaches memory (weight streamer), always 1.\n"
		"# TYPE edgeq_weights_mode gauge\nedgeq_weights_mode{mode=\"%s\"} 1\n",
		edgeq_weights_mode_name(w.mode));
	if (w.mode == EDGEQ_WEIGHTS_MMAP)
		return; /* the page cache decides; there is no budget */
	layers = w.layers_resident + w.layers_streamed;
	srv_buf_printf(
		b,
		"# HELP edgeq_weights_budget_bytes Resident weights budget in force (streamer; memory pressure moves it).\n"
		"# TYPE edgeq_weights_budget_bytes gauge\nedgeq_weights_budget_bytes %llu\n"
		"# HELP edgeq_weights_resident_bytes Weight buffers held now, pool included (streamer).\n"
		"# TYPE edgeq_weights_resident_bytes gauge\nedgeq_weights_resident_bytes %llu\n"
		"# HELP edgeq_weights_read_bytes_total Weight bytes read from storage (streamer).\n"
		"# TYPE edgeq_weights_read_bytes_total counter\nedgeq_weights_read_bytes_total %llu\n"
		"# HELP edgeq_weights_stalls_total Layers whose weights were not there when needed (streamer).\n"
		"# TYPE edgeq_weights_stalls_total counter\nedgeq_weights_stalls_total %llu\n",
		(unsigned long long)w.budget,
		(unsigned long long)w.resident_bytes,
		(unsigned long long)w.bytes_read, (unsigned long long)w.stalls);
	if (layers)
		srv_buf_printf(
			b,
			"# HELP edgeq_weights_cache_hit_ratio Share of layers served from resident memory each token; the rest are streamed.\n"
			"# TYPE edgeq_weights_cache_hit_ratio gauge\nedgeq_weights_cache_hit_ratio %.4f\n",
			(double)w.layers_resident / layers);
}

void srv_metrics_render_pressure(const struct srv_pressure *p,
				 struct srv_buf *b)
{
	int i;

	srv_buf_printf(
		b,
		"# HELP edgeq_pressure_source The pressure monitor's source (bpf or psi), always 1.\n"
		"# TYPE edgeq_pressure_source gauge\n"
		"edgeq_pressure_source{source=\"%s\"} 1\n"
		"# HELP edgeq_memory_pressure_level Memory pressure level from the monitor: 0 none, 1 low, 2 medium, 3 critical.\n"
		"# TYPE edgeq_memory_pressure_level gauge\n"
		"edgeq_memory_pressure_level %d\n"
		"# HELP edgeq_memory_stall_ratio Seconds of reclaim or PSI memory stall per second of wall time (pressure monitor).\n"
		"# TYPE edgeq_memory_stall_ratio gauge\n"
		"edgeq_memory_stall_ratio %.6f\n",
		p->source, p->mem_level, p->stall_ms_per_s / 1000.0);
	if (!p->n_dev)
		return;
	srv_buf_printf(
		b,
		"# HELP edgeq_throttle_ratio Share of full speed left per device (pressure monitor: cooling state, clock over max); 1 unthrottled.\n"
		"# TYPE edgeq_throttle_ratio gauge\n");
	for (i = 0; i < p->n_dev; i++)
		srv_buf_printf(b, "edgeq_throttle_ratio{device=\"%s\"} %.4f\n",
			       p->dev[i].name, p->dev[i].throttle);
	srv_buf_printf(
		b,
		"# HELP edgeq_device_thermal_level Thermal state per device (pressure monitor): 0 ok, 1 warn, 2 critical.\n"
		"# TYPE edgeq_device_thermal_level gauge\n");
	for (i = 0; i < p->n_dev; i++)
		srv_buf_printf(b,
			       "edgeq_device_thermal_level{device=\"%s\"} %u\n",
			       p->dev[i].name, p->dev[i].level);
	srv_buf_printf(
		b,
		"# HELP edgeq_device_temperature_celsius Hottest thermal zone mapped to the device (pressure monitor).\n"
		"# TYPE edgeq_device_temperature_celsius gauge\n");
	for (i = 0; i < p->n_dev; i++)
		if (p->dev[i].temp_mc != INT32_MIN)
			srv_buf_printf(
				b,
				"edgeq_device_temperature_celsius{device=\"%s\"} %.3f\n",
				p->dev[i].name, p->dev[i].temp_mc / 1000.0);
}
