/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The ENGINE part of edgeq top: the running service as its /metrics and
 * /health tell it (tok/s, slots running and waiting, TTFT, per-device ops,
 * weights, KV cache), fetched over TCP or the daemon's unix socket.
 */
#ifndef EDGEQ_TOP_ENGINE_H
#define EDGEQ_TOP_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOP_MAX_DEVICES 8

struct top_engine {
	const char *url;	 /* base URL, e.g. http://127.0.0.1:8080 */
	const char *unix_socket; /* or the daemon's socket; NULL: TCP */
	const char *api_key;	 /* bearer token; NULL: none */
	/* last sample */
	bool up;
	char error[160]; /* why not, when !up */
	char model[160];
	double running, waiting, slots, queue, kv_ratio;
	double gen_total, peak_tok_s, ttft_sum, ttft_count, ttft_p90;
	double budget, resident;
	char weights_mode[16];
	int n_dev;
	struct {
		char name[16];
		double ops, rate;
	} dev[TOP_MAX_DEVICES];
	/* rates since the previous sample */
	double tok_s;
	uint64_t t_ns;
};

/* Fetch and parse one sample; fills @e (e->up false and e->error on a
 * failure, never fatal). */
void top_engine_sample(struct top_engine *e);
/* Parse a Prometheus text scrape into @e (tests). */
void top_engine_parse(struct top_engine *e, const char *text);
/* One or two lines describing @e, into @out. */
void top_engine_format(const struct top_engine *e, char *out, size_t len);

#endif
