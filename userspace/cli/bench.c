// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq bench: the measured side of the ledgers.
 *
 *  1. a llama-bench-like table: prompt (ppN) and decode (tgN) tok/s for each
 *     thread count, and the decode roofline (bytes per token, memory
 *     bandwidth measured in the same run, efficiency = measured / bound);
 *  2. the on-device test matrix: runtime init, cold and warm time to first
 *     token, prompt-length buckets, decode tok/s with p50/p95/p99 per-token
 *     latency, peak memory, each next to `edgeq plan`'s prediction for the
 *     local profile;
 *  3. --soak MINUTES: continuous generation, first 30 s against the steady
 *     state, with temperatures and throttling from the pressure monitor.
 *
 * Output: a table, --json (schema Documentation/bench.schema.json), and
 * --svg FILE (tok/s, temperature and placement over time).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <edgeq/engine.h>
#include <edgeq/kernels.h>
#include <edgeq/ledger.h>
#include <edgeq/manifest.h>
#include <edgeq/power.h>
#include <edgeq/pressure.h>

#include "bench_profile.h"
#include "bench_session.h"
#include "cli.h"

#define MAX_LIST 8

static const char *b_model, *b_threads = "1,2", *b_prompts = "64,512",
			    *b_buckets = "32,128,512", *b_svg, *b_profile;
static int b_gen = 64, b_reps = 3, b_streams, b_draft_max = 4, b_batch;
static const char *b_draft, *b_kv = "f16";
static int b_kv_type; /* enum edgeq_kv_type */
static double b_soak;
static bool b_json, b_no_matrix, b_drop_caches, b_quiet, b_prof, b_no_repack;

static const struct cli_option bench_opts[] = {
	{ "model", 'm', CLI_STR, &b_model, "FILE", "GGUF model" },
	{ "threads", 't', CLI_STR, &b_threads, "LIST",
	  "thread counts, comma separated (1,2)" },
	{ "prompts", 'p', CLI_STR, &b_prompts, "LIST",
	  "prompt lengths of the ppN rows (64,512)" },
	{ "gen", 'n', CLI_INT, &b_gen, "N", "tokens of the tgN row (64)" },
	{ "reps", 'r', CLI_INT, &b_reps, "N", "repetitions per row (3)" },
	{ "batch-size", 'b', CLI_INT, &b_batch, "N",
	  "prompt tokens per forward pass (the engine's default, 64)" },
	{ "buckets", 0, CLI_STR, &b_buckets, "LIST",
	  "matrix: prompt-length buckets (32,128,512)" },
	{ "no-matrix", 0, CLI_FLAG, &b_no_matrix, NULL,
	  "only the llama-bench table" },
	{ "drop-caches", 0, CLI_FLAG, &b_drop_caches, NULL,
	  "cold start: drop the whole page cache (root) instead of the model's pages" },
	{ "soak", 0, CLI_DOUBLE, &b_soak, "MINUTES",
	  "continuous generation for MINUTES" },
	{ "profiles", 0, CLI_STR, &b_profile, "FILE",
	  "profiles file for the local profile's defaults" },
	{ "kv-type", 0, CLI_STR, &b_kv, "f16|q8_0|f32",
	  "KV cache type of the table, the matrix and --profile (f16)" },
	{ "no-repack", 0, CLI_FLAG, &b_no_repack, NULL,
	  "keep the file's weight layout (as EDGEQ_NO_REPACK=1)" },
	{ "profile", 0, CLI_FLAG, &b_prof, NULL,
	  "only the time breakdown: each forward-pass part per token, for each -p prompt and a -n token decode (the last -t thread count)" },
	{ "streams", 0, CLI_INT, &b_streams, "N",
	  "only the engine session: N concurrent streams batched vs 1 alone and vs time-shared, and TTFT of 2N clients on N slots (-n tokens each, the last -t thread count)" },
	{ "draft", 0, CLI_STR, &b_draft, "lookup|layers:L|MODEL",
	  "only speculative decoding: one stream with and without the draft on a prompt with repetition, the speedup next to the ledger's prediction" },
	{ "draft-max", 0, CLI_INT, &b_draft_max, "N",
	  "most tokens drafted per pass (4)" },
	{ "json", 0, CLI_FLAG, &b_json, NULL, "print one JSON object" },
	{ "svg", 0, CLI_STR, &b_svg, "FILE",
	  "write a chart of tok/s, temperature and placement over time" },
	{ "quiet", 'q', CLI_FLAG, &b_quiet, NULL, "no progress on stderr" },
	CLI_OPTIONS_END
};

static void progress(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static void progress(const char *fmt, ...)
{
	va_list ap;

	if (b_quiet)
		return;
	fputs("bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int parse_list(const char *s, int *v, int max, const char *what)
{
	int n = 0;
	char *end;

	while (*s) {
		long x = strtol(s, &end, 10);

		if (end == s || x < 1 || x > 1 << 20 || n == max ||
		    (*end && *end != ','))
			return cli_error(
				EXIT_USAGE, "bench",
				"--%s '%s': expected up to %d positive numbers, comma separated",
				what, s, max);
		v[n++] = (int)x;
		s = *end ? end + 1 : end;
	}
	return n ? -n : cli_error(EXIT_USAGE, "bench", "--%s is empty", what);
}

/* ---- the engine, one model and ctx per thread count ---- */

struct run {
	struct edgeq_model *m;
	struct edgeq_ctx *c;
	const struct edgeq_model_info *in;
	int32_t *toks;
	uint32_t n_toks;
};

static void run_free(struct run *r)
{
	edgeq_ctx_free(r->c);
	edgeq_model_free(r->m);
	free(r->toks);
	memset(r, 0, sizeof(*r));
}

static int run_open(struct run *r, int threads, uint32_t n_ctx,
		    struct edgeq_error *err)
{
	struct edgeq_model_params mp;
	struct edgeq_ctx_params cp;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int ret;

	memset(r, 0, sizeof(*r));
	edgeq_model_params_init(&mp);
	mp.path = b_model;
	mp.n_threads = threads;
	ret = edgeq_model_load(&mp, &r->m, err);
	if (ret)
		return ret;
	r->in = edgeq_model_info(r->m);
	edgeq_ctx_params_init(&cp);
	cp.n_ctx = n_ctx;
	if (b_batch)
		cp.n_batch = (uint32_t)b_batch;
	cp.kv_type = (enum edgeq_kv_type)b_kv_type;
	ret = edgeq_ctx_new(r->m, &cp, &r->c, err);
	if (ret) {
		run_free(r);
		return ret;
	}
	/* deterministic token ids past the special ones */
	r->n_toks = n_ctx;
	r->toks = malloc(sizeof(*r->toks) * n_ctx);
	if (!r->toks) {
		run_free(r);
		return edgeq_error_set(err, ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < n_ctx; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		r->toks[i] = (int32_t)(3 + x % (r->in->n_vocab > 3 ?
							r->in->n_vocab - 3 :
							1));
	}
	return 0;
}

/* Prefill @n tokens from position 0; seconds. */
static int time_prefill(struct run *r, uint32_t n, double *s,
			struct edgeq_error *err)
{
	const float *lg;
	uint64_t t0;
	int ret;

	edgeq_ctx_truncate(r->c, 0);
	t0 = edgeq_now_ns();
	ret = edgeq_decode(r->c, r->toks, n, &lg, err);
	*s = (double)(edgeq_now_ns() - t0) / 1e9;
	return ret;
}

/* Decode @n single tokens after the current position; per-token seconds
 * into @lat (may be NULL); total seconds. */
static int time_decode(struct run *r, uint32_t n, double *lat, double *s,
		       struct edgeq_error *err)
{
	uint64_t t0 = edgeq_now_ns(), t1;
	const float *lg;
	int ret;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t pos = edgeq_ctx_pos(r->c);

		t1 = edgeq_now_ns();
		ret = edgeq_decode(r->c, &r->toks[pos % r->n_toks], 1, &lg,
				   err);
		if (ret)
			return ret;
		if (lat)
			lat[i] = (double)(edgeq_now_ns() - t1) / 1e9;
	}
	*s = (double)(edgeq_now_ns() - t0) / 1e9;
	return 0;
}

/* ---- results ---- */

struct row {
	char test[16];
	int threads, n;
	uint32_t n_batch; /* ppN: prompt tokens per forward pass */
	double tps, sd;
	/* tgN: read bandwidth of `threads` threads (the roofline a decode on
	 * that many cores can reach: one core cannot keep enough misses in
	 * flight to read what all of them do), measured right before each
	 * repetition of a DRAM-sized model's row; 0 when not measured */
	double bw_threads;
};

struct bucket {
	int prompt, gen;
	double ttft_s, tps, pred_ttft_s, pred_tps;
	double j_per_tok, watts; /* prefill + decode; NAN: no power rail */
};

struct sample {
	double t, tokens, tps, temp_c, throttle;
	double watts; /* board power over the interval; NAN: no rail */
	const char *placement;
};

struct results {
	struct row rows[2 * MAX_LIST * MAX_LIST];
	int nrows;
	/* roofline of the best tgN row */
	double bytes_per_token, mem_bw, dram_bw, bound_tps, eff, tg_tps;
	double kernels_bw; /* edgeq_membw_measure(), 0 when it failed */
	/* DRAM-sized models: read bandwidth measured right before each
	 * repetition of the best tgN row (mean), 0 if not measured; the
	 * bound uses it, so a host whose bandwidth drifts (shared VMs) is
	 * compared with itself at the same moment */
	double tg_bw, start_bw;
	int tg_threads;
	/* matrix */
	bool matrix;
	double init_s, cold_ttft_s, warm_ttft_s;
	double pred_warm_ttft_s; /* plan: first bucket's prefill + a token */
	int ttft_prompt;
	const char *cold_method;
	struct bucket buckets[MAX_LIST];
	int nbuckets;
	double decode_tps, p50, p95, p99;
	uint64_t peak_rss;
	/* the plan for the local profile */
	struct edgeq_profile prof;
	struct edgeq_model_shape shape;
	struct edgeq_plan plan;
	/* timeline (soak, or the matrix decode run) */
	struct sample *samples;
	size_t nsamples, cap;
	bool soak;
	double soak_min, burst_tps, steady_tps, ratio, max_temp_c;
	unsigned int throttle_events;
	const char *pressure_source;
	/* energy (board power rails; NAN when none is readable) */
	double decode_j_per_tok, decode_w, soak_j_per_tok, soak_w;
};

/* ---- energy: the board's power rails over each measured interval ---- */

static struct edgeq_power *b_pw; /* NULL or without rails: no figures */

struct emark {
	double j, t;
	bool ok;
};

static struct emark emark(void)
{
	struct edgeq_power_reading r;
	struct emark m = { 0 };

	if (b_pw && !edgeq_power_read(b_pw, &r)) {
		m.j = r.joules;
		m.t = r.seconds;
		m.ok = true;
	}
	return m;
}

/* Joules per generated token and average watts between two marks. */
static void energy_between(const struct emark *a, const struct emark *b,
			   double tokens, double *j_per_tok, double *watts)
{
	*j_per_tok = NAN;
	*watts = NAN;
	if (!a->ok || !b->ok || b->t <= a->t)
		return;
	*watts = (b->j - a->j) / (b->t - a->t);
	if (tokens > 0)
		*j_per_tok = (b->j - a->j) / tokens;
}

/* "hwmon VDD_IN", "powercap package-0 + package-1", or why there is none */
static void energy_what(char *buf, size_t len)
{
	const struct edgeq_power_rail *r;
	unsigned int i, n = b_pw ? edgeq_power_rails(b_pw, &r) : 0;
	size_t k = 0;

	buf[0] = '\0';
	if (!n) {
		snprintf(
			buf, len, "%s",
			b_pw ? edgeq_power_none_reason(b_pw) :
			       "no readable power rail: power meter unavailable");
		return;
	}
	for (i = 0; i < n && k < len; i++)
		if (r[i].in_total)
			k += (size_t)snprintf(buf + k, len - k, "%s%s %s",
					      k ? " + " : "", r[i].source,
					      r[i].name);
}

static int add_sample(struct results *R, const struct sample *s)
{
	if (R->nsamples == R->cap) {
		size_t cap = R->cap ? 2 * R->cap : 256;
		struct sample *n = realloc(R->samples, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		R->samples = n;
		R->cap = cap;
	}
	R->samples[R->nsamples++] = *s;
	return 0;
}

static double plan_decode_at(const struct results *R, double pos)
{
	return edgeq_ledger_decode_bound(
		R->prof.mem_bw, R->prof.efficiency,
		(double)R->shape.token_bytes + R->plan.kv_bytes_per_pos * pos);
}

/* ---- part 1: the llama-bench table ---- */

static int bench_table(struct results *R, const int *thr, int nthr,
		       const int *pp, int npp, struct edgeq_error *err)
{
	double v[64], s;
	uint32_t n_ctx = (uint32_t)b_gen + 8;
	bool dram = R->shape.token_bytes >= (128ull << 20);
	/* the threads edgeq_membw_measure(0, ...) reads with */
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int ret;

	for (int i = 0; i < npp; i++)
		if ((uint32_t)pp[i] + 8 > n_ctx)
			n_ctx = (uint32_t)pp[i] + 8;
	for (int t = 0; t < nthr; t++) {
		struct run r;

		ret = run_open(&r, thr[t], n_ctx, err);
		if (ret)
			return ret;
		for (int i = 0; i <= npp; i++) {
			struct row *row = &R->rows[R->nrows++];
			bool tg = i == npp;

			row->threads = thr[t];
			row->n = tg ? b_gen : pp[i];
			row->n_batch = tg ? 0 : edgeq_ctx_n_batch(r.c);
			snprintf(row->test, sizeof(row->test), "%s%d",
				 tg ? "tg" : "pp", row->n);
			progress("%s, %d thread%s, %d rep%s", row->test, thr[t],
				 thr[t] > 1 ? "s" : "", b_reps,
				 b_reps > 1 ? "s" : "");
			double bw_sum = 0, bwt_sum = 0;
			int bw_n = 0, bwt_n = 0;

			/* one warm-up, then the repetitions */
			for (int k = -1; k < b_reps; k++) {
				if (tg && dram && k >= 0) {
					double g = 0, gt = 0;

					if (!edgeq_membw_measure(0, 0, 2, &g) &&
					    g > 0)
						bw_sum += g * 1e9, bw_n++;
					/* all the cores: the read above */
					if (thr[t] == ncpu)
						gt = g;
					else if (edgeq_membw_measure(thr[t], 0,
								     2, &gt))
						gt = 0;
					if (gt > 0)
						bwt_sum += gt * 1e9, bwt_n++;
				}
				if (tg) {
					edgeq_ctx_truncate(r.c, 0);
					ret = time_decode(&r, (uint32_t)row->n,
							  NULL, &s, err);
				} else {
					ret = time_prefill(&r, (uint32_t)row->n,
							   &s, err);
				}
				if (ret) {
					run_free(&r);
					return ret;
				}
				if (k >= 0)
					v[k] = row->n / s;
				if (s > 2) /* long runs: each repetition */
					progress(
						"  %s %s: %.2f tok/s in %.1f s",
						row->test,
						k < 0 ? "warm-up" : "rep",
						row->n / s, s);
			}
			row->tps = edgeq_stats_mean(v, (size_t)b_reps);
			row->sd = edgeq_stats_stddev(v, (size_t)b_reps);
			row->bw_threads = bwt_n ? bwt_sum / bwt_n : 0;
			if (tg && row->tps > R->tg_tps) {
				R->tg_tps = row->tps;
				R->tg_threads = thr[t];
				R->tg_bw = bw_n ? bw_sum / bw_n : 0;
			}
		}
		if (!R->bytes_per_token) {
			/* weights of one step + the KV cache read, averaged
			 * over the positions of the tgN row */
			R->bytes_per_token =
				(double)(r.in->bytes_per_token ?
						 r.in->bytes_per_token :
						 R->shape.token_bytes) +
				R->plan.kv_bytes_per_pos * (b_gen - 1) / 2.0;
		}
		run_free(&r);
	}
	R->start_bw = R->mem_bw;
	if (R->tg_bw > 0)
		R->mem_bw = R->tg_bw;
	R->bound_tps = R->mem_bw / R->bytes_per_token;
	R->eff = R->tg_tps / R->bound_tps;
	return 0;
}

/* ---- part 2: the test matrix ---- */

static const char *evict(void)
{
	int fd;

	if (b_drop_caches && geteuid() == 0) {
		sync();
		fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			bool ok = write(fd, "3", 1) == 1;

			close(fd);
			if (ok)
				return "drop_caches";
		}
	}
	fd = open(b_model, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
	return "fadvise";
}

static int bench_matrix(struct results *R, int threads, const int *bk, int nbk,
			struct edgeq_error *err)
{
	uint32_t n_ctx = (uint32_t)b_gen + 8;
	double s, pf, *lat;
	const float *lg;
	struct run r;
	uint64_t t0;
	int ret, first = nbk ? bk[0] : 16;

	for (int i = 0; i < nbk; i++)
		if ((uint32_t)(bk[i] + b_gen) + 8 > n_ctx)
			n_ctx = (uint32_t)(bk[i] + b_gen) + 8;
	R->matrix = true;
	progress("matrix: cold start, %d threads", threads);
	/* peak RSS from here on: forget the bandwidth measurement's buffer
	 * (writing 5 to clear_refs resets VmHWM) */
	{
		int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);

		if (fd >= 0) {
			if (write(fd, "5", 1) != 1)
				progress("could not reset the peak RSS");
			close(fd);
		}
	}
	R->cold_method = evict();
	t0 = edgeq_now_ns();
	ret = run_open(&r, threads, n_ctx, err);
	if (ret)
		return ret;
	R->init_s = (double)(edgeq_now_ns() - t0) / 1e9;
	ret = time_prefill(&r, (uint32_t)first, &pf, err);
	if (!ret)
		ret = time_decode(&r, 1, NULL, &s, err);
	if (ret)
		goto out;
	R->cold_ttft_s = (double)(edgeq_now_ns() - t0) / 1e9;
	ret = time_prefill(&r, (uint32_t)first, &pf, err);
	if (!ret)
		ret = time_decode(&r, 1, NULL, &s, err);
	if (ret)
		goto out;
	R->warm_ttft_s = pf + s;
	R->ttft_prompt = first;
	R->pred_warm_ttft_s =
		first / R->plan.prefill_tps + 1 / plan_decode_at(R, first);

	lat = calloc((size_t)b_gen, sizeof(*lat));
	if (!lat) {
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < nbk; i++) {
		struct bucket *b = &R->buckets[R->nbuckets++];
		double dec;

		struct emark e0, e1;

		progress("matrix: prompt bucket %d", bk[i]);
		b->prompt = bk[i];
		b->gen = b_gen;
		e0 = emark();
		ret = time_prefill(&r, (uint32_t)bk[i], &pf, err);
		if (!ret)
			ret = time_decode(&r, (uint32_t)b_gen, lat, &dec, err);
		if (ret)
			break;
		e1 = emark();
		energy_between(&e0, &e1, b_gen, &b->j_per_tok, &b->watts);
		b->ttft_s = pf + lat[0];
		b->tps = b_gen / dec;
		b->pred_tps = plan_decode_at(R, bk[i] + b_gen / 2.0);
		b->pred_ttft_s = bk[i] / R->plan.prefill_tps +
				 1 / plan_decode_at(R, bk[i]);
	}
	if (!ret) {
		/* decode from an empty context: tok/s, per-token latency and
		 * the timeline the chart shows without a soak */
		progress("matrix: decode %d tokens", b_gen);
		edgeq_ctx_truncate(r.c, 0);
		ret = edgeq_decode(r.c, r.toks, 1, &lg, err);
		if (!ret) {
			struct emark e0 = emark(), e1;

			ret = time_decode(&r, (uint32_t)b_gen, lat, &s, err);
			e1 = emark();
			energy_between(&e0, &e1, b_gen, &R->decode_j_per_tok,
				       &R->decode_w);
		}
	}
	if (!ret) {
		double t = 0;

		R->decode_tps = b_gen / s;
		for (int i = 0; i < b_gen; i++) {
			struct sample sm = { .tokens = 1,
					     .temp_c = NAN,
					     .throttle = 1,
					     .watts = R->decode_w,
					     .placement = "cpu" };

			t += lat[i];
			sm.t = t;
			sm.tps = 1 / lat[i];
			if (!R->soak)
				add_sample(R, &sm);
			lat[i] *= 1e3;
		}
		R->p50 = edgeq_stats_percentile(lat, (size_t)b_gen, 50);
		R->p95 = edgeq_stats_percentile(lat, (size_t)b_gen, 95);
		R->p99 = edgeq_stats_percentile(lat, (size_t)b_gen, 99);
	}
	free(lat);
	R->peak_rss = edgeq_peak_rss();
out:
	run_free(&r);
	return ret;
}

/* ---- part 3: soak ---- */

static void pressure_now(struct edgeq_pressure *pm, double *temp, double *thr)
{
	struct edgeq_pressure_state *st;

	*temp = NAN;
	*thr = 1;
	if (!pm)
		return;
	st = malloc(sizeof(*st));
	if (!st)
		return;
	edgeq_pressure_refresh(pm);
	edgeq_pressure_get(pm, st);
	for (uint32_t i = 0; i < st->n_zones; i++)
		if (st->zones[i].temp_mc != EDGEQ_PRESSURE_NONE &&
		    (isnan(*temp) || st->zones[i].temp_mc / 1e3 > *temp))
			*temp = st->zones[i].temp_mc / 1e3;
	for (uint32_t i = 0; i < st->n_devices; i++)
		if (st->devices[i].throttle > 0 &&
		    st->devices[i].throttle < *thr)
			*thr = st->devices[i].throttle;
	free(st);
}

static int bench_soak(struct results *R, int threads, struct edgeq_error *err)
{
	double dur = b_soak * 60, interval = dur < 60 ? 0.5 : 1,
	       last_report = 0;
	struct edgeq_pressure_opts po;
	struct edgeq_pressure *pm = NULL;
	struct edgeq_error perr;
	uint64_t t0, tick;
	double *ts, *tk, tokens = 0, jt;
	struct emark es, ei, ee;
	bool throttled = false;
	struct run r;
	int ret;

	R->soak = true;
	R->soak_min = b_soak;
	R->nsamples = 0;
	R->max_temp_c = NAN;
	edgeq_pressure_opts_init(&po);
	if (edgeq_pressure_new(&po, &pm, &perr)) {
		pm = NULL;
		R->pressure_source = "none";
	} else {
		R->pressure_source =
			edgeq_pressure_source_name(edgeq_pressure_source(pm));
	}
	ret = run_open(&r, threads, 512, err);
	if (ret)
		goto out_pm;
	progress("soak: %.1f min of continuous generation, %d threads", b_soak,
		 threads);
	t0 = tick = edgeq_now_ns();
	es = ei = emark();
	for (;;) {
		uint64_t now;
		double n = 0, s;

		/* generate for one interval; start over when the ctx is full */
		do {
			if (edgeq_ctx_pos(r.c) + 1 >= edgeq_ctx_n_ctx(r.c))
				edgeq_ctx_truncate(r.c, 0);
			ret = time_decode(&r, 1, NULL, &s, err);
			if (ret)
				goto out_run;
			n++;
			now = edgeq_now_ns();
		} while ((double)(now - tick) / 1e9 < interval);
		{
			struct sample sm = { .tokens = n, .placement = "cpu" };

			sm.t = (double)(now - t0) / 1e9;
			sm.tps = n / ((double)(now - tick) / 1e9);
			tokens += n;
			ee = emark();
			energy_between(&ei, &ee, n, &jt, &sm.watts);
			ei = ee;
			pressure_now(pm, &sm.temp_c, &sm.throttle);
			if (!isnan(sm.temp_c) &&
			    (isnan(R->max_temp_c) || sm.temp_c > R->max_temp_c))
				R->max_temp_c = sm.temp_c;
			if ((sm.throttle < 0.999) != throttled) {
				throttled = !throttled;
				if (throttled)
					R->throttle_events++;
			}
			ret = add_sample(R, &sm);
			if (ret)
				goto out_run;
			if (sm.t - last_report >= 10) {
				last_report = sm.t;
				progress("soak: %.0f/%.0f s, %.1f tok/s", sm.t,
					 dur, sm.tps);
			}
			if (sm.t >= dur)
				break;
		}
		tick = now;
	}
	energy_between(&es, &ee, tokens, &R->soak_j_per_tok, &R->soak_w);
	ts = malloc(R->nsamples * sizeof(double));
	tk = malloc(R->nsamples * sizeof(double));
	if (ts && tk) {
		struct edgeq_soak_split sp;

		for (size_t i = 0; i < R->nsamples; i++) {
			ts[i] = R->samples[i].t;
			tk[i] = R->samples[i].tokens;
		}
		edgeq_soak_split(ts, tk, R->nsamples, dur < 60 ? dur / 2 : 30,
				 &sp);
		R->burst_tps = sp.burst_tps;
		R->steady_tps = sp.steady_tps;
		R->ratio = sp.ratio;
	}
	free(ts);
	free(tk);
out_run:
	run_free(&r);
out_pm:
	edgeq_pressure_free(pm);
	return ret;
}

/* ---- output ---- */

/* a tgN row's decode over the bandwidth of its own thread count */
static double row_eff_threads(const struct results *R, const struct row *w)
{
	return R->bytes_per_token * w->tps / w->bw_threads;
}

static void print_table(const struct results *R)
{
	char what[256];

	printf("model %s: %s, %.2f M parameters, %.3f MB of weights\n", b_model,
	       R->shape.arch, R->shape.n_params / 1e6,
	       R->shape.weight_bytes / 1e6);
	printf("machine: %d cores, memory read %.2f GB/s (DRAM; kernels' measurement %.2f), %.2f GB/s over the model's %.3f MB (measured now)\n\n",
	       R->prof.cores, R->dram_bw / 1e9, R->kernels_bw / 1e9,
	       R->mem_bw / 1e9, R->shape.token_bytes / 1e6);
	printf("| %-8s | %7s | %20s | %14s |\n", "test", "threads", "tok/s",
	       "plan bound");
	printf("| %-8s | %7s | %20s | %14s |\n", "--------",
	       "------:", "-------------------:", "-------------:");
	for (int i = 0; i < R->nrows; i++) {
		const struct row *w = &R->rows[i];
		double bound = w->test[0] == 't' ?
				       plan_decode_at(R, w->n / 2.0) :
				       R->plan.prefill_tps;

		printf("| %-8s | %7d | %10.1f +- %7.1f | %14.1f |\n", w->test,
		       w->threads, w->tps, w->sd, bound);
	}
	printf("\ndecode roofline: %.3f MB per token x %.1f tok/s = %.2f GB/s of %.2f GB/s measured%s: efficiency %.0f %% (bound %.1f tok/s, %d threads)\n",
	       R->bytes_per_token / 1e6, R->tg_tps,
	       R->bytes_per_token * R->tg_tps / 1e9, R->mem_bw / 1e9,
	       R->tg_bw > 0 ? " between the decode repetitions" : "",
	       R->eff * 100, R->bound_tps, R->tg_threads);
	for (int i = 0; i < R->nrows; i++) {
		const struct row *w = &R->rows[i];

		if (w->test[0] != 't' || w->bw_threads <= 0)
			continue;
		printf("  %s at %d thread%s: %.2f GB/s of the %.2f GB/s %d thread%s read%s (measured between its repetitions): efficiency %.0f %%\n",
		       w->test, w->threads, w->threads > 1 ? "s" : "",
		       R->bytes_per_token * w->tps / 1e9, w->bw_threads / 1e9,
		       w->threads, w->threads > 1 ? "s" : "",
		       w->threads > 1 ? "" : "s", 100 * row_eff_threads(R, w));
	}
	if (R->matrix) {
		printf("\ntest matrix                measured      plan (local)   efficiency\n");
		printf("  runtime init           %9.3f s   %9.3f s (preload from disk)\n",
		       R->init_s, R->plan.load.preload_s);
		printf("  cold TTFT              %9.3f s   %9.3f s (pages evicted by %s)\n",
		       R->cold_ttft_s,
		       R->plan.load.preload_s + R->pred_warm_ttft_s,
		       R->cold_method);
		printf("  warm TTFT, prompt %-4d %9.4f s   %9.4f s     %5.0f %%\n",
		       R->ttft_prompt, R->warm_ttft_s, R->pred_warm_ttft_s,
		       100 * R->pred_warm_ttft_s / R->warm_ttft_s);
		for (int i = 0; i < R->nbuckets; i++) {
			const struct bucket *b = &R->buckets[i];

			printf("  prompt %-5d TTFT       %9.4f s   %9.4f s     %5.0f %%\n",
			       b->prompt, b->ttft_s, b->pred_ttft_s,
			       100 * b->pred_ttft_s / b->ttft_s);
			printf("  prompt %-5d decode     %9.1f t/s %9.1f t/s   %5.0f %%\n",
			       b->prompt, b->tps, b->pred_tps,
			       100 * b->tps / b->pred_tps);
		}
		printf("  decode                 %9.1f t/s %9.1f t/s   %5.0f %%\n",
		       R->decode_tps, plan_decode_at(R, b_gen / 2.0),
		       100 * R->decode_tps / plan_decode_at(R, b_gen / 2.0));
		printf("  per-token latency      p50 %.3f ms, p95 %.3f ms, p99 %.3f ms\n",
		       R->p50, R->p95, R->p99);
		printf("  peak memory            %9.1f MiB %9.1f MiB (memory ledger)\n",
		       R->peak_rss / 1048576.0, R->plan.total / 1048576.0);
		energy_what(what, sizeof(what));
		if (isfinite(R->decode_j_per_tok))
			printf("  energy (decode)        %9.4f J/token at %.2f W average (%s)\n",
			       R->decode_j_per_tok, R->decode_w, what);
		else
			printf("  energy                 not measured: %s\n",
			       what);
		for (int i = 0; i < R->nbuckets; i++)
			if (isfinite(R->buckets[i].j_per_tok))
				printf("  prompt %-5d energy     %9.4f J/token at %.2f W average (prefill + decode)\n",
				       R->buckets[i].prompt,
				       R->buckets[i].j_per_tok,
				       R->buckets[i].watts);
	}
	if (R->soak) {
		printf("\nsoak %.2f min: first %s %.1f tok/s, steady %.1f tok/s (%.0f %%); ",
		       R->soak_min, R->soak_min * 60 < 60 ? "half" : "30 s",
		       R->burst_tps, R->steady_tps, 100 * R->ratio);
		if (isnan(R->max_temp_c))
			printf("no temperature sensor");
		else
			printf("max %.1f C", R->max_temp_c);
		printf(", %u throttle event%s (pressure monitor: %s)\n",
		       R->throttle_events, R->throttle_events == 1 ? "" : "s",
		       R->pressure_source);
		energy_what(what, sizeof(what));
		if (isfinite(R->soak_j_per_tok))
			printf("soak energy: %.4f J/token at %.2f W average (%s)\n",
			       R->soak_j_per_tok, R->soak_w, what);
		else
			printf("soak energy: not measured: %s\n", what);
	}
}

static json_t *jnum_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* The rails the figures come from, or why there are none. */
static json_t *energy_json(void)
{
	const struct edgeq_power_rail *r;
	unsigned int i, n = b_pw ? edgeq_power_rails(b_pw, &r) : 0;
	json_t *rails = json_array(), *o;
	char what[256];

	for (i = 0; i < n; i++)
		json_array_append_new(rails,
				      json_pack("{s:s, s:s, s:s, s:b}", "name",
						r[i].name, "source",
						r[i].source, "chip", r[i].chip,
						"in_total", r[i].in_total));
	o = json_pack("{s:o}", "rails", rails);
	if (!n) {
		energy_what(what, sizeof(what));
		json_object_set_new(o, "none_reason", json_string(what));
	}
	return o;
}

static json_t *results_json(const struct results *R)
{
	json_t *j = json_object(), *rows = json_array(), *o;
	char date[32], family[64], model[256];
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	edgeq_device_family(family, sizeof(family), model, sizeof(model));
	json_object_set_new(j, "schema", json_string("edgeq-bench/1"));
	json_object_set_new(j, "date", json_string(date));
	json_object_set_new(j, "device", json_string(family));
	json_object_set_new(j, "device_model", json_string(model));
	json_object_set_new(j, "engine",
			    json_pack("{s:s, s:s}", "version", edgeq_version(),
				      "commit", edgeq_commit()));
	json_object_set_new(j, "kv_type", json_string(b_kv));
	json_object_set_new(j, "host",
			    json_pack("{s:i, s:f, s:f, s:f, s:I}", "cores",
				      R->prof.cores, "mem_bw", R->dram_bw,
				      "mem_bw_kernels", R->kernels_bw,
				      "disk_bw", R->prof.flash_bw, "ram",
				      (json_int_t)R->prof.ram));
	json_object_set_new(
		j, "model",
		json_pack("{s:s, s:s, s:I, s:I, s:I}", "file", b_model, "arch",
			  R->shape.arch, "params",
			  (json_int_t)R->shape.n_params, "weight_bytes",
			  (json_int_t)R->shape.weight_bytes, "token_bytes",
			  (json_int_t)R->shape.token_bytes));
	for (int i = 0; i < R->nrows; i++) {
		const struct row *w = &R->rows[i];

		o = json_pack("{s:s, s:i, s:i, s:i, s:f, s:f}", "test", w->test,
			      "threads", w->threads, "n", w->n, "reps", b_reps,
			      "tok_s", w->tps, "sd", w->sd);
		if (w->n_batch)
			json_object_set_new(o, "n_batch",
					    json_integer(w->n_batch));
		if (w->test[0] == 't' && w->bw_threads > 0) {
			json_object_set_new(o, "mem_bw_threads",
					    json_real(w->bw_threads));
			json_object_set_new(o, "efficiency_threads",
					    json_real(row_eff_threads(R, w)));
		}
		json_array_append_new(rows, o);
	}
	json_object_set_new(j, "llama_bench", rows);
	json_object_set_new(
		j, "roofline",
		json_pack("{s:f, s:I, s:f, s:f, s:f, s:f, s:f, s:i, s:b}",
			  "bytes_per_token", R->bytes_per_token, "working_set",
			  (json_int_t)R->shape.token_bytes, "mem_bw", R->mem_bw,
			  "mem_bw_start", R->start_bw, "bound_tok_s",
			  R->bound_tps, "tok_s", R->tg_tps, "efficiency",
			  R->eff, "threads", R->tg_threads,
			  "mem_bw_during_decode", R->tg_bw > 0));
	json_object_set_new(
		j, "plan",
		json_pack("{s:s, s:f, s:f, s:f, s:f, s:I, s:f}", "profile",
			  "local", "efficiency", R->prof.efficiency,
			  "decode_tok_s", plan_decode_at(R, b_gen / 2.0),
			  "decode_tok_s_pos0", R->plan.decode_tps_empty,
			  "prefill_tok_s", R->plan.prefill_tps, "memory_total",
			  (json_int_t)R->plan.total, "preload_s",
			  R->plan.load.preload_s));
	if (R->matrix) {
		json_t *bks = json_array();

		for (int i = 0; i < R->nbuckets; i++) {
			const struct bucket *b = &R->buckets[i];

			json_array_append_new(
				bks,
				json_pack(
					"{s:i, s:i, s:f, s:f, s:f, s:f, s:o, s:o}",
					"prompt", b->prompt, "gen", b->gen,
					"ttft_s", b->ttft_s, "tok_s", b->tps,
					"pred_ttft_s", b->pred_ttft_s,
					"pred_tok_s", b->pred_tps,
					"j_per_token",
					jnum_or_null(b->j_per_tok), "avg_w",
					jnum_or_null(b->watts)));
		}
		o = json_pack(
			"{s:f, s:f, s:f, s:f, s:i, s:f, s:f, s:s, s:o, s:f, s:f, s:{s:f, s:f, s:f}, s:I}",
			"init_s", R->init_s, "pred_init_s",
			R->plan.load.preload_s, "cold_ttft_s", R->cold_ttft_s,
			"pred_cold_ttft_s",
			R->plan.load.preload_s + R->pred_warm_ttft_s,
			"ttft_prompt", R->ttft_prompt, "pred_warm_ttft_s",
			R->pred_warm_ttft_s, "warm_ttft_s", R->warm_ttft_s,
			"cold_method", R->cold_method, "buckets", bks,
			"decode_tok_s", R->decode_tps, "efficiency",
			R->decode_tps / plan_decode_at(R, b_gen / 2.0),
			"latency_ms", "p50", R->p50, "p95", R->p95, "p99",
			R->p99, "peak_rss", (json_int_t)R->peak_rss);
		json_object_set_new(o, "j_per_token",
				    jnum_or_null(R->decode_j_per_tok));
		json_object_set_new(o, "avg_w", jnum_or_null(R->decode_w));
	} else {
		o = json_null();
	}
	json_object_set_new(j, "matrix", o);
	if (R->soak) {
		json_t *sm = json_array();

		for (size_t i = 0; i < R->nsamples; i++) {
			const struct sample *s = &R->samples[i];

			json_array_append_new(
				sm, json_pack("{s:f, s:f, s:o, s:f, s:s, s:o}",
					      "t", s->t, "tok_s", s->tps,
					      "temp_c", jnum_or_null(s->temp_c),
					      "throttle", s->throttle,
					      "placement", s->placement,
					      "watts", jnum_or_null(s->watts)));
		}
		o = json_pack("{s:f, s:f, s:f, s:f, s:o, s:i, s:s, s:o}",
			      "minutes", R->soak_min, "burst_tok_s",
			      R->burst_tps, "steady_tok_s", R->steady_tps,
			      "ratio", R->ratio, "max_temp_c",
			      jnum_or_null(R->max_temp_c), "throttle_events",
			      (int)R->throttle_events, "pressure_source",
			      R->pressure_source, "samples", sm);
		json_object_set_new(o, "j_per_token",
				    jnum_or_null(R->soak_j_per_tok));
		json_object_set_new(o, "avg_w", jnum_or_null(R->soak_w));
	} else {
		o = json_null();
	}
	json_object_set_new(j, "soak", o);
	json_object_set_new(j, "energy", energy_json());
	return j;
}

/* A "nice" tick step (1, 2 or 5 x 10^k) for about @n ticks over @span. */
static double tick_step(double span, int n)
{
	double raw = span / n, mag = pow(10, floor(log10(raw))), f = raw / mag;

	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

/* The time axis' unit for a run of @tmax seconds: ms, s or min. */
static double time_unit(double tmax, const char **name)
{
	if (tmax < 2) {
		*name = "ms";
		return 1e-3;
	}
	if (tmax >= 180) {
		*name = "min";
		return 60;
	}
	*name = "s";
	return 1;
}

/* Horizontal grid lines and labels for a value axis of a panel. */
static void svg_value_axis(FILE *f, double x0, double x1, double y_top,
			   double h, double lo, double hi, const char *unit)
{
	double step = tick_step(hi - lo, 4);
	int prec = step < 1 ? (step < 0.1 ? 2 : 1) : 0;

	for (double v = ceil(lo / step) * step; v <= hi + step * 1e-9;
	     v += step) {
		double y = y_top + h - (v - lo) / (hi - lo) * h;

		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
			"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"10\">%.*f</text>\n",
			x0, y, x1, y, x0 - 4, y + 3, prec, v);
	}
	fprintf(f,
		"<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\" transform=\"rotate(-90 %.1f %.1f)\">%s</text>\n",
		x0 - 50, y_top + h / 2, x0 - 50, y_top + h / 2, unit);
}

/* Three stacked panels: tok/s, temperature, placement, over time, each
 * with its axis, ticks and unit; a panel with no sensor behind it says
 * so instead of drawing a flat line. */
static int write_svg(const struct results *R, const char *path)
{
	const double W = 800, H = 460, L = 60, Rm = 20, ph = 100;
	const double top[3] = { 50, 185, 320 };
	double tmax = 0, ymax = 0, tmin_c = INFINITY, tmax_c = -INFINITY;
	double tu, tstep;
	const char *tname;
	FILE *f = fopen(path, "we");
	size_t n = R->nsamples, n_temp = 0;

	if (!f)
		return -errno;
	for (size_t i = 0; i < n; i++) {
		const struct sample *s = &R->samples[i];

		tmax = fmax(tmax, s->t);
		ymax = fmax(ymax, s->tps);
		if (!isnan(s->temp_c)) {
			tmin_c = fmin(tmin_c, s->temp_c);
			tmax_c = fmax(tmax_c, s->temp_c);
			n_temp++;
		}
	}
	if (tmax <= 0)
		tmax = 1e-3;
	if (ymax <= 0)
		ymax = 1;
	ymax = ceil(ymax / tick_step(ymax, 4)) * tick_step(ymax, 4);
	if (tmax_c - tmin_c < 2) {
		tmin_c = isfinite(tmin_c) ? floor(tmin_c) - 1 : 0;
		tmax_c = tmin_c + 2;
	}
	tu = time_unit(tmax, &tname);
#define X(t) (L + (t) / tmax * (W - L - Rm))
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<title>edgeq bench: tok/s, temperature and placement over time</title>\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text x=\"%.0f\" y=\"22\" font-size=\"15\">edgeq bench %s: %s</text>\n",
		W, H, W, H, L, R->soak ? "soak" : "decode",
		R->soak ? "continuous generation" : "per-token speed");
	for (int p = 0; p < 3; p++) {
		static const char *const names[] = { "tok/s", "temperature",
						     "placement" };

		fprintf(f,
			"<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#888\"/>\n"
			"<text x=\"%.0f\" y=\"%.0f\" font-weight=\"bold\">%s</text>\n",
			L, top[p], W - L - Rm, ph, L + 2, top[p] - 6, names[p]);
	}
	/* time ticks under every panel, labelled under the last */
	tstep = tick_step(tmax / tu, 8) * tu;
	for (double t = 0; t <= tmax + tstep * 1e-9; t += tstep) {
		for (int p = 0; p < 3; p++)
			fprintf(f,
				"<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#888\"/>\n",
				X(t), top[p] + ph, X(t), top[p] + ph + 4);
		fprintf(f,
			"<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" font-size=\"10\">%.*f</text>\n",
			X(t), top[2] + ph + 16, tstep / tu < 1 ? 1 : 0, t / tu);
	}
	fprintf(f,
		"<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">time (%s)</text>\n",
		W - Rm, top[2] + ph + 32, tname);

	svg_value_axis(f, L, W - Rm, top[0], ph, 0, ymax, "tok/s");
	fprintf(f,
		"<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%.1f,%.1f ", X(R->samples[i].t),
			top[0] + ph - R->samples[i].tps / ymax * ph);
	fprintf(f, "\"/>\n");

	if (n_temp) {
		svg_value_axis(f, L, W - Rm, top[1], ph, tmin_c, tmax_c,
			       "\u00b0C");
		fprintf(f,
			"<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"1.5\" points=\"");
		for (size_t i = 0; i < n; i++)
			if (!isnan(R->samples[i].temp_c))
				fprintf(f, "%.1f,%.1f ", X(R->samples[i].t),
					top[1] + ph -
						(R->samples[i].temp_c -
						 tmin_c) /
							(tmax_c - tmin_c) * ph);
		fprintf(f, "\"/>\n");
	} else {
		fprintf(f,
			"<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#888\">no temperature sensor is readable on this box: nothing to plot</text>\n",
			(L + W - Rm) / 2, top[1] + ph / 2);
	}

	for (size_t i = 0; i < n; i++) {
		double x0 = i ? X(R->samples[i - 1].t) : L;

		fprintf(f,
			"<rect x=\"%.1f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\" fill=\"%s\"><title>%s, throttle %.2f</title></rect>\n",
			x0, top[2] + 20, fmax(X(R->samples[i].t) - x0, 0.5),
			ph - 40,
			R->samples[i].throttle < 0.999 ? "#ff7f0e" : "#2ca02c",
			R->samples[i].placement, R->samples[i].throttle);
	}
	fprintf(f,
		"<text x=\"%.0f\" y=\"%.0f\" font-size=\"10\">green: %s, unthrottled; orange: throttled</text>\n</svg>\n",
		L + 4, top[2] + 14, n ? R->samples[n - 1].placement : "cpu");
#undef X
	if (fclose(f))
		return -errno;
	return 0;
}

static int cmd_bench(int argc, char **argv)
{
	const struct cli_command *self = cli_find("bench");
	int thr[MAX_LIST], pp[MAX_LIST], bk[MAX_LIST], nthr, npp, nbk = 0;
	struct edgeq_plan_params pparams;
	struct edgeq_error err = { 0 };
	struct results *R;
	int first, ret, best;

	ret = cli_parse(self, argc, argv, &first);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (first < argc)
		return cli_error(EXIT_USAGE, "bench",
				 "unexpected argument '%s'", argv[first]);
	if (!b_model)
		return cli_error(EXIT_USAGE, "bench", "give a model: -m FILE");
	if (b_gen < 2 || b_gen > 65536 || b_reps < 1 || b_reps > 64 ||
	    b_soak < 0 || b_soak > 24 * 60)
		return cli_error(
			EXIT_USAGE, "bench",
			"-n 2..65536, -r 1..64, --soak 0..1440 minutes");
	if (b_batch < 0 || b_batch > 512)
		return cli_error(EXIT_USAGE, "bench",
				 "-b %d: a prompt batch is 1..512 tokens",
				 b_batch);
	ret = cli_kv_type("bench", b_kv, true, &b_kv_type);
	if (ret)
		return ret;
	nthr = parse_list(b_threads, thr, MAX_LIST, "threads");
	if (nthr >= 0)
		return nthr;
	npp = parse_list(b_prompts, pp, MAX_LIST, "prompts");
	if (npp >= 0)
		return npp;
	nbk = parse_list(b_buckets, bk, MAX_LIST, "buckets");
	if (nbk >= 0)
		return nbk;
	nthr = -nthr, npp = -npp, nbk = -nbk;
	if (b_no_repack) /* every mode below loads its own model */
		setenv("EDGEQ_NO_REPACK", "1", 1);
	if (b_draft)
		return bench_draft(b_model, thr[nthr - 1], b_draft, b_draft_max,
				   b_gen, b_json);
	if (b_streams)
		return bench_streams(b_model, thr[nthr - 1], b_streams, b_gen,
				     b_reps, b_json, b_prof);
	if (b_prof)
		return bench_profile(b_model, thr[nthr - 1], pp, npp, b_gen,
				     (uint32_t)b_batch, b_kv_type, b_json);
	R = calloc(1, sizeof(*R));
	if (!R)
		return cli_error(EXIT_NORES, "bench", "out of memory");
	R->decode_j_per_tok = R->decode_w = NAN;
	R->soak_j_per_tok = R->soak_w = NAN;
	/* power rails, sampled every 20 ms for the whole run */
	if (!edgeq_power_open(NULL, &b_pw, NULL) &&
	    edgeq_power_start(b_pw, 20)) {
		edgeq_power_free(b_pw);
		b_pw = NULL;
	}

	/* the plan's side: the local profile measured now, same model */
	progress("measuring this machine (memory and disk bandwidth)");
	ret = edgeq_shape_from_gguf(b_model, &R->shape, &err);
	if (!ret)
		ret = edgeq_profile_load(b_profile, "local", &R->prof, &err);
	if (ret == -ENOENT) { /* no profiles file: built-in defaults */
		memset(&R->prof, 0, sizeof(R->prof));
		snprintf(R->prof.name, sizeof(R->prof.name), "local");
		R->prof.efficiency = 0.85;
		R->prof.throttle = 1;
		R->prof.page_size = 4096;
		R->prof.fault_latency = 80e-6;
		ret = 0;
	}
	if (!ret)
		ret = edgeq_profile_local(&R->prof, b_model, &err);
	if (ret)
		goto fail;
	/* the roofline of this model: bandwidth at its working set (the
	 * weights one step reads); the same for the plan's local profile */
	R->dram_bw = R->prof.mem_bw;
	{
		double gbps = 0;

		/* the kernels' measurement (8 x LLC, at least 256 MiB) */
		if (!edgeq_membw_measure(0, 0, 3, &gbps) && gbps > 0)
			R->kernels_bw = gbps * 1e9;
		if (R->kernels_bw > R->dram_bw)
			R->dram_bw = R->kernels_bw;
	}
	R->mem_bw = edgeq_ledger_membw_at(R->shape.token_bytes);
	/* past the caches both measure DRAM: the bound is the better one */
	if (R->mem_bw < R->dram_bw && R->shape.token_bytes >= (128ull << 20))
		R->mem_bw = R->dram_bw;
	if (R->mem_bw > 0)
		R->prof.mem_bw = R->mem_bw;
	else
		R->mem_bw = R->prof.mem_bw;
	edgeq_plan_params_init(&pparams);
	pparams.ctx = (uint32_t)b_gen;
	pparams.prefill_batch = 64;
	/* the roofline's KV bytes: a Q8_0 block is 34 bytes per 32 */
	pparams.kv_elem_bytes = b_kv_type == EDGEQ_KV_Q8_0 ? 34.0 / 32 :
				b_kv_type == EDGEQ_KV_F32  ? 4 :
							     2;
	ret = edgeq_plan_compute(&R->prof, &R->shape, &pparams, &R->plan, &err);
	if (ret)
		goto fail;

	ret = bench_table(R, thr, nthr, pp, npp, &err);
	if (ret)
		goto fail;
	best = R->tg_threads ? R->tg_threads : thr[nthr - 1];
	if (!b_no_matrix) {
		ret = bench_matrix(R, best, bk, nbk, &err);
		if (ret)
			goto fail;
	}
	if (b_soak > 0) {
		ret = bench_soak(R, best, &err);
		if (ret)
			goto fail;
	}
	if (b_svg) {
		ret = write_svg(R, b_svg);
		if (ret) {
			cli_error(EXIT_FAIL, "bench", "%s: %s", b_svg,
				  strerror(-ret));
			goto out;
		}
	}
	if (b_json) {
		json_t *j = results_json(R);

		json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(8));
		putchar('\n');
		json_decref(j);
	} else {
		print_table(R);
	}
	ret = EXIT_OK;
	goto out;
fail:
	ret = cli_error(cli_exit_for(ret), "bench", "%s",
			err.msg[0] ? err.msg : strerror(-ret));
out:
	edgeq_power_free(b_pw);
	b_pw = NULL;
	free(R->samples);
	free(R);
	return ret;
}

EDGEQ_COMMAND(
	bench, "measure a model on this machine against the plan",
	"usage: edgeq bench -m MODEL [-t 1,2] [-p 64,512] [-n 64] [-r 3]\n"
	"                   [--buckets 32,128,512] [--soak MINUTES] [--json] [--svg FILE]\n\n"
	"Prints a llama-bench-like table (ppN prompt and tgN decode tok/s per\n"
	"thread count) with the decode roofline (bytes per token, memory\n"
	"bandwidth measured in the same run, efficiency = measured / bound),\n"
	"then the test matrix: runtime init, cold and warm TTFT, prompt-length\n"
	"buckets, decode tok/s, p50/p95/p99 per-token latency and peak memory,\n"
	"each next to `edgeq plan`'s prediction for the local profile. --soak\n"
	"generates continuously and compares the first 30 s with the steady\n"
	"state, with temperatures and throttling from the pressure monitor.\n"
	"JSON schema: Documentation/bench.schema.json.",
	bench_opts, cmd_bench);
