// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq bench --profile: where one token's time goes. A prefill of each
 * -p length and a decode of -n tokens (with the default sampler, timed
 * apart) run with the forward pass's profile on; each part's time per
 * token, its share, its calls per token and, for the matvecs, the weight
 * bytes they stream per second next to the memory bandwidth measured in
 * the same run. The parts add up to the pass's time (the library
 * attributes every nanosecond), so what is missing from the total is
 * outside the forward pass.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <edgeq/engine.h>
#include <edgeq/kernels.h>

#include "bench_profile.h"
#include "cli.h"

struct phase {
	char name[16]; /* "pp64", "tg32" */
	struct edgeq_decode_profile p;
	double wall_s;	   /* the whole phase */
	double sample_ns;  /* sampling (decode only) */
	uint64_t n_tokens; /* prompt tokens, or decoded tokens */
};

static uint64_t weight_parts_bytes(const struct edgeq_decode_profile *p)
{
	uint64_t b = 0;

	for (int i = 0; i < EDGEQ_PROF_COUNT; i++)
		b += p->bytes[i];
	return b;
}

static void print_phase(const struct phase *ph, double bw);

void bench_profile_print(const char *name, const struct edgeq_decode_profile *p,
			 double wall_s, double sample_ns, uint64_t n_tokens,
			 double bw)
{
	struct phase one = { .p = *p,
			     .wall_s = wall_s,
			     .sample_ns = sample_ns,
			     .n_tokens = n_tokens };

	snprintf(one.name, sizeof(one.name), "%s", name);
	print_phase(&one, bw);
}

static void print_phase(const struct phase *ph, double bw)
{
	const struct edgeq_decode_profile *p = &ph->p;
	double tok = (double)(ph->n_tokens ? ph->n_tokens : 1);
	double total = (double)p->total_ns + ph->sample_ns;
	double mv_ns = 0, macs = 0;
	uint64_t mv_bytes = weight_parts_bytes(p);
	/* prompt passes are compute-bound: multiply-adds per second there */
	bool pp = p->passes && p->tokens > p->passes;

	printf("\n%s: %.2f ms per token, %.1f tok/s (%llu passes)\n", ph->name,
	       ph->wall_s * 1e3 / tok, tok / ph->wall_s,
	       (unsigned long long)p->passes);
	printf("  %-14s %11s %7s %10s %9s\n", "part", "us/token", "share",
	       "calls/tok", pp ? "GMAC/s" : "GB/s");
	for (int i = 0; i < EDGEQ_PROF_COUNT; i++) {
		double ns = (double)p->ns[i];

		if (!p->calls[i] && !p->ns[i])
			continue;
		if (p->bytes[i]) {
			mv_ns += ns;
			macs += (double)p->macs[i];
		}
		printf("  %-14s %11.1f %6.1f%% %10.1f", edgeq_prof_part_name(i),
		       ns / tok / 1e3, total > 0 ? 100 * ns / total : 0,
		       (double)p->calls[i] / tok);
		if (p->bytes[i] && ns > 0)
			printf(" %9.1f",
			       (double)(pp ? p->macs[i] : p->bytes[i]) / ns);
		putchar('\n');
	}
	if (ph->sample_ns > 0)
		printf("  %-14s %11.1f %6.1f%% %10.1f\n", "sampling",
		       ph->sample_ns / tok / 1e3, 100 * ph->sample_ns / total,
		       1.0);
	printf("  %-14s %11.1f %6.1f%%\n", "total", total / tok / 1e3, 100.0);
	if (pp && mv_ns > 0)
		printf("  matmuls: %.1f GMAC/s, %.0f%% of the time\n",
		       macs / mv_ns, 100 * mv_ns / total);
	else if (mv_ns > 0 && bw > 0)
		printf("  matvecs: %.1f GB/s of weights = %.0f%% of the %.1f GB/s measured now; %.0f%% of the time\n",
		       (double)mv_bytes / mv_ns,
		       100 * (double)mv_bytes / mv_ns / bw, bw,
		       100 * mv_ns / total);
}

static json_t *phase_json(const struct phase *ph)
{
	const struct edgeq_decode_profile *p = &ph->p;
	double tok = (double)(ph->n_tokens ? ph->n_tokens : 1);
	json_t *parts = json_object();

	for (int i = 0; i < EDGEQ_PROF_COUNT; i++) {
		json_t *o;

		if (!p->calls[i] && !p->ns[i])
			continue;
		o = json_pack("{s:f, s:f, s:I, s:I}", "us_per_token",
			      (double)p->ns[i] / tok / 1e3, "calls_per_token",
			      (double)p->calls[i] / tok, "bytes",
			      (json_int_t)p->bytes[i], "macs",
			      (json_int_t)p->macs[i]);
		json_object_set_new(parts, edgeq_prof_part_name(i), o);
	}
	if (ph->sample_ns > 0)
		json_object_set_new(
			parts, "sampling",
			json_pack("{s:f, s:f, s:I, s:I}", "us_per_token",
				  ph->sample_ns / tok / 1e3, "calls_per_token",
				  1.0, "bytes", (json_int_t)0, "macs",
				  (json_int_t)0));
	return json_pack("{s:s, s:I, s:I, s:f, s:f, s:o}", "test", ph->name,
			 "tokens", (json_int_t)ph->n_tokens, "passes",
			 (json_int_t)p->passes, "wall_s", ph->wall_s,
			 "total_us_per_token",
			 ((double)p->total_ns + ph->sample_ns) / tok / 1e3,
			 "parts", parts);
}

/* Deterministic token ids past the special ones (as the table's rows). */
static void fill_tokens(int32_t *t, uint32_t n, uint32_t n_vocab)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (uint32_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		t[i] = (int32_t)(3 + x % (n_vocab > 3 ? n_vocab - 3 : 1));
	}
}

static int run_phases(struct edgeq_model *m, struct edgeq_ctx *c,
		      const int32_t *toks, const int *pp, int npp, int n_gen,
		      struct phase *ph, struct edgeq_error *err)
{
	const struct edgeq_model_info *in = edgeq_model_info(m);
	struct edgeq_sampler_params sp;
	struct edgeq_sampler *smp;
	const float *lg;
	uint64_t t0, t1;
	int ret, i;

	/*
	 * Warm-up: the weights' pages, the pool's threads and every KV
	 * position the phases will write, as the table's rows warm up. A
	 * small cache is in 4 KiB pages, first written a position at a
	 * time: in a VM each fault cost 23-75 us, so an 8-token warm-up left
	 * a decode step's rope_kv at ~200 us (its KV writes) against ~65.
	 */
	int w = pp[0] + n_gen;

	for (i = 0; i < npp; i++)
		if (pp[i] > w)
			w = pp[i];
	ret = edgeq_decode(c, toks, (size_t)w, &lg, err);
	if (ret)
		return ret;
	for (i = 0; i < npp; i++) {
		edgeq_ctx_truncate(c, 0);
		snprintf(ph[i].name, sizeof(ph[i].name), "pp%d", pp[i]);
		edgeq_model_profile(m, true);
		t0 = edgeq_now_ns();
		ret = edgeq_decode(c, toks, (size_t)pp[i], &lg, err);
		ph[i].wall_s = (double)(edgeq_now_ns() - t0) / 1e9;
		edgeq_model_profile_get(m, &ph[i].p);
		edgeq_model_profile(m, false);
		if (ret)
			return ret;
		ph[i].n_tokens = (uint64_t)pp[i];
	}
	/* decode after the first prompt, sampled as edgeq run does */
	edgeq_ctx_truncate(c, 0);
	ret = edgeq_decode(c, toks, (size_t)pp[0], &lg, err);
	if (ret)
		return ret;
	edgeq_sampler_params_init(&sp);
	if (edgeq_sampler_new(&sp, &smp))
		return edgeq_error_set(err, ENOMEM, "out of memory");
	snprintf(ph[npp].name, sizeof(ph[npp].name), "tg%d", n_gen);
	edgeq_model_profile(m, true);
	t0 = edgeq_now_ns();
	for (i = 0; i < n_gen && !ret; i++) {
		int32_t tok;

		t1 = edgeq_now_ns();
		tok = edgeq_sampler_sample(smp, lg, in->n_vocab, toks, 0);
		ph[npp].sample_ns += (double)(edgeq_now_ns() - t1);
		ret = edgeq_decode(c, &tok, 1, &lg, err);
	}
	ph[npp].wall_s = (double)(edgeq_now_ns() - t0) / 1e9;
	edgeq_model_profile_get(m, &ph[npp].p);
	edgeq_model_profile(m, false);
	edgeq_sampler_free(smp);
	ph[npp].n_tokens = (uint64_t)n_gen;
	return ret;
}

int bench_profile(const char *path, int threads, const int *pp, int npp,
		  int n_gen, uint32_t n_batch, int kv_type, bool json)
{
	struct edgeq_model_params mp;
	struct edgeq_ctx_params cp;
	struct edgeq_error err = { 0 };
	struct edgeq_model *m = NULL;
	struct edgeq_ctx *c = NULL;
	struct phase *ph = NULL;
	int32_t *toks = NULL;
	uint32_t n_ctx = 0;
	double bw = 0;
	int ret, i;

	for (i = 0; i < npp; i++)
		if ((uint32_t)pp[i] > n_ctx)
			n_ctx = (uint32_t)pp[i];
	n_ctx += (uint32_t)n_gen + 8;
	edgeq_model_params_init(&mp);
	mp.path = path;
	mp.n_threads = threads;
	ret = edgeq_model_load(&mp, &m, &err);
	if (!ret && edgeq_model_info(m)->n_ctx_train &&
	    n_ctx > edgeq_model_info(m)->n_ctx_train) {
		ret = cli_error(EXIT_USAGE, "bench",
				"--profile: %u positions (the longest -p, -n "
				"and 8), the model has %u",
				n_ctx, edgeq_model_info(m)->n_ctx_train);
		goto out;
	}
	if (!ret) {
		edgeq_ctx_params_init(&cp);
		cp.n_ctx = n_ctx;
		if (n_batch)
			cp.n_batch = n_batch;
		cp.kv_type = (enum edgeq_kv_type)kv_type;
		ret = edgeq_ctx_new(m, &cp, &c, &err);
	}
	if (!ret) {
		toks = calloc(n_ctx, sizeof(*toks));
		ph = calloc((size_t)npp + 1, sizeof(*ph));
		if (!toks || !ph)
			ret = edgeq_error_set(&err, ENOMEM, "out of memory");
	}
	if (!ret) {
		fill_tokens(toks, n_ctx, edgeq_model_info(m)->n_vocab);
		/* the roofline's bandwidth, measured beside the runs */
		if (edgeq_membw_measure(0, 0, 3, &bw))
			bw = 0;
		ret = run_phases(m, c, toks, pp, npp, n_gen, ph, &err);
	}
	if (ret) {
		ret = cli_error(cli_exit_for(ret), "bench", "%s: %s", path,
				err.msg[0] ? err.msg : strerror(-ret));
		goto out;
	}
	if (json) {
		json_t *a = json_array(), *j;

		for (i = 0; i <= npp; i++)
			json_array_append_new(a, phase_json(&ph[i]));
		j = json_pack("{s:s, s:s, s:I, s:i, s:i, s:s, s:f, s:I, s:o}",
			      "model", path, "repack",
			      edgeq_model_info(m)->repack, "packed_bytes",
			      (json_int_t)edgeq_model_info(m)->packed_bytes,
			      "n_layer", (int)edgeq_model_info(m)->n_layer,
			      "threads", ph[0].p.threads, "kernels",
			      ph[0].p.kernels, "mem_gbps", bw,
			      "bytes_per_token",
			      (json_int_t)edgeq_model_info(m)->bytes_per_token,
			      "phases", a);
		json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(8));
		putchar('\n');
		json_decref(j);
	} else {
		printf("profile: %s, %d thread%s, %s kernels, memory %.1f GB/s (measured now)\nrepack: %s\n",
		       path, ph[0].p.threads, ph[0].p.threads == 1 ? "" : "s",
		       ph[0].p.kernels, bw, edgeq_model_info(m)->repack);
		for (i = 0; i <= npp; i++)
			print_phase(&ph[i], bw);
	}
	ret = EXIT_OK;
out:
	free(ph);
	free(toks);
	edgeq_ctx_free(c);
	edgeq_model_free(m);
	return ret;
}
