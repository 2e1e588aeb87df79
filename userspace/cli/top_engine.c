// SPDX-License-Identifier: GPL-2.0-or-later
/* edgeq top's ENGINE lines from the daemon's /metrics (top_engine.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include <edgeq/edgeq.h>

#include "top_engine.h"

struct fetch_buf {
	char *p;
	size_t len;
};

static size_t on_data(char *d, size_t size, size_t n, void *arg)
{
	struct fetch_buf *b = arg;
	size_t add = size * n;
	char *np;

	if (b->len + add > (8u << 20))
		return 0; /* a scrape is small; refuse a runaway one */
	np = realloc(b->p, b->len + add + 1);
	if (!np)
		return 0;
	memcpy(np + b->len, d, add);
	b->p = np;
	b->len += add;
	b->p[b->len] = '\0';
	return add;
}

/* GET @path; 0 and *out (malloc'd) or -1 with e->error. */
static int fetch(struct top_engine *e, const char *path, char **out)
{
	struct fetch_buf b = { 0 };
	struct curl_slist *h = NULL;
	char url[600], auth[600];
	CURL *c = curl_easy_init();
	CURLcode rc;
	long code = 0;

	if (!c) {
		snprintf(e->error, sizeof(e->error), "libcurl failed to start");
		return -1;
	}
	snprintf(url, sizeof(url), "%s%s",
		 e->unix_socket ? "http://localhost" : e->url, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (e->unix_socket)
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, e->unix_socket);
	if (e->api_key && *e->api_key) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %.500s",
			 e->api_key);
		h = curl_slist_append(h, auth);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	}
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 800L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (rc != CURLE_OK || (code != 200 && code != 503)) {
		snprintf(e->error, sizeof(e->error), "%.100s: %s", url,
			 rc != CURLE_OK ? curl_easy_strerror(rc) :
			 code == 401	? "HTTP 401: give --api-key" :
					  "unexpected HTTP status");
		free(b.p);
		return -1;
	}
	*out = b.p ? b.p : strdup("");
	return 0;
}

static bool is(const char *line, const char *name, const char **rest)
{
	size_t n = strlen(name);

	if (strncmp(line, name, n) || (line[n] != ' ' && line[n] != '{'))
		return false;
	*rest = line + n;
	return true;
}

static double value_of(const char *rest)
{
	const char *sp = strrchr(rest, ' ');

	return sp ? strtod(sp + 1, NULL) : 0;
}

/* label="x" -> x */
static void label(const char *rest, const char *key, char *out, size_t len)
{
	char pat[40];
	const char *p, *q;

	snprintf(pat, sizeof(pat), "%s=\"", key);
	out[0] = '\0';
	p = strstr(rest, pat);
	if (!p)
		return;
	p += strlen(pat);
	q = strchr(p, '"');
	if (q)
		snprintf(out, len, "%.*s", (int)(q - p), p);
}

void top_engine_parse(struct top_engine *e, const char *text)
{
	double le[32], cum[32];
	int nb = 0;
	const char *line = text;

	e->n_dev = 0;
	e->weights_mode[0] = '\0';
	while (line && *line) {
		const char *nl = strchr(line, '\n'), *rest;
		char buf[512], lab[32];

		snprintf(buf, sizeof(buf), "%.*s",
			 (int)(nl ? nl - line : (long)strlen(line)), line);
		line = nl ? nl + 1 : NULL;
		if (buf[0] == '#')
			continue;
		if (is(buf, "edgeq_requests_running", &rest))
			e->running = value_of(rest);
		else if (is(buf, "edgeq_requests_waiting", &rest))
			e->waiting = value_of(rest);
		else if (is(buf, "edgeq_slots", &rest))
			e->slots = value_of(rest);
		else if (is(buf, "edgeq_queue_limit", &rest))
			e->queue = value_of(rest);
		else if (is(buf, "edgeq_kv_cache_usage_ratio", &rest))
			e->kv_ratio = value_of(rest);
		else if (is(buf, "edgeq_generation_tokens_total", &rest))
			e->gen_total = value_of(rest);
		else if (is(buf, "edgeq_local_peak_tokens_per_second", &rest))
			e->peak_tok_s = value_of(rest);
		else if (is(buf, "edgeq_time_to_first_token_seconds_sum",
			    &rest))
			e->ttft_sum = value_of(rest);
		else if (is(buf, "edgeq_time_to_first_token_seconds_count",
			    &rest))
			e->ttft_count = value_of(rest);
		else if (is(buf, "edgeq_time_to_first_token_seconds_bucket",
			    &rest) &&
			 nb < 32) {
			label(rest, "le", lab, sizeof(lab));
			le[nb] = !strcmp(lab, "+Inf") ? INFINITY :
							strtod(lab, NULL);
			cum[nb++] = value_of(rest);
		} else if (is(buf, "edgeq_weights_budget_bytes", &rest))
			e->budget = value_of(rest);
		else if (is(buf, "edgeq_weights_resident_bytes", &rest))
			e->resident = value_of(rest);
		else if (is(buf, "edgeq_weights_mode", &rest))
			label(rest, "mode", e->weights_mode,
			      sizeof(e->weights_mode));
		else if (is(buf, "edgeq_device_ops_total", &rest) &&
			 e->n_dev < TOP_MAX_DEVICES) {
			label(rest, "device", e->dev[e->n_dev].name,
			      sizeof(e->dev[0].name));
			e->dev[e->n_dev++].ops = value_of(rest);
		}
	}
	/* p90 of the TTFT histogram: the bucket it falls in, interpolated */
	e->ttft_p90 = 0;
	if (nb && cum[nb - 1] > 0) {
		double want = 0.9 * cum[nb - 1], lo = 0, clo = 0;

		for (int i = 0; i < nb; i++) {
			if (cum[i] >= want) {
				e->ttft_p90 =
					isinf(le[i]) ?
						lo :
						lo + (le[i] - lo) *
								(want - clo) /
								(cum[i] - clo > 0 ?
									 cum[i] -
										 clo :
									 1);
				break;
			}
			lo = le[i];
			clo = cum[i];
		}
	}
}

void top_engine_sample(struct top_engine *e)
{
	struct top_engine prev = *e;
	char *text = NULL, *health = NULL;
	uint64_t now = edgeq_now_ns();
	json_t *j;

	e->up = false;
	if (fetch(e, "/health", &health))
		return;
	j = json_loads(health, 0, NULL);
	snprintf(e->model, sizeof(e->model), "%s",
		 j && json_string_value(json_object_get(j, "model")) ?
			 json_string_value(json_object_get(j, "model")) :
			 "(loading)");
	json_decref(j);
	free(health);
	if (fetch(e, "/metrics", &text))
		return;
	top_engine_parse(e, text);
	free(text);
	e->up = true;
	e->t_ns = now;
	e->tok_s = 0;
	if (prev.up && now > prev.t_ns) {
		double dt = (now - prev.t_ns) / 1e9;

		e->tok_s = (e->gen_total - prev.gen_total) / dt;
		for (int i = 0; i < e->n_dev; i++)
			for (int k = 0; k < prev.n_dev; k++)
				if (!strcmp(e->dev[i].name, prev.dev[k].name))
					e->dev[i].rate = (e->dev[i].ops -
							  prev.dev[k].ops) /
							 dt;
	}
}

void top_engine_format(const struct top_engine *e, char *out, size_t len)
{
	double ttft_ms;
	size_t n;

	if (!e->up) {
		snprintf(out, len, "ENGINE  no edgeq serve answers: %s",
			 e->error);
		return;
	}
	/* A tiny model on a fast host answers in well under a millisecond:
	 * below 10 ms the mean keeps two decimals, so a measured TTFT never
	 * reads as 0. */
	ttft_ms = e->ttft_count > 0 ? e->ttft_sum / e->ttft_count * 1e3 : 0;
	n = (size_t)snprintf(
		out, len,
		"ENGINE  %.60s  %.1f tok/s (peak %.1f)  slots %.0f/%.0f running, %.0f/%.0f waiting  TTFT mean %.*f ms p90 %.0f ms  KV %.0f%%",
		e->model, e->tok_s, e->peak_tok_s, e->running, e->slots,
		e->waiting, e->queue, ttft_ms > 0 && ttft_ms < 10 ? 2 : 0,
		ttft_ms, e->ttft_p90 * 1e3, e->kv_ratio * 100);
	if (n >= len)
		return;
	n += (size_t)snprintf(out + n, len - n, "\nWEIGHTS %s",
			      e->weights_mode[0] ? e->weights_mode : "-");
	if (n < len && e->budget > 0)
		n += (size_t)snprintf(out + n, len - n,
				      "  budget %.0f MiB  resident %.0f MiB",
				      e->budget / 1048576,
				      e->resident / 1048576);
	for (int i = 0; i < e->n_dev && n < len; i++)
		n += (size_t)snprintf(out + n, len - n, "  %s %.0f ops/s",
				      e->dev[i].name, e->dev[i].rate);
}
