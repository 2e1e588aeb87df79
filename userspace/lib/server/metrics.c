// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Counters and histograms of the server, rendered in the Prometheus text
 * exposition format (version 0.0.4). Names follow vLLM's where one exists.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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
