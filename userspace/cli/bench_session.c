// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq bench --streams N: the engine session under concurrent streams, all
 * measured in one run so the figures are ratios against a baseline taken
 * under the same load:
 *
 *   single     one stream alone: decode tok/s, inter-token latency, TTFT
 *   batched    N streams decoded together (one forward pass per step)
 *              (these two in -r rounds, A B A B, the decode ratio the
 *              median of the rounds')
 *   timeshare  N streams with one pass per slot and step (what serve did
 *              before continuous batching)
 *   queue      2N clients on N slots: the TTFT distribution, and each
 *              request's TTFT over what the queue explains: the requests
 *              ahead of it, in waves of N, each wave taking a batched
 *              request's time, then the prompts ahead of it in its own
 *              wave and its own, each a queue-free TTFT (a prompt's pass
 *              is compute bound: N prompts batched cost about N alone)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <edgeq/engine.h>
#include <edgeq/ledger.h>
#include <edgeq/session.h>

#include "bench_profile.h"
#include "bench_session.h"
#include "cli.h"

#define MAX_STREAMS 64
#define MAX_ROUNDS 32

struct phase {
	double agg_tok_s; /* generated tokens / wall time of the phase */
	double itl_ms;	  /* mean over streams of decode time per token */
	double ttft_ms[2 * MAX_STREAMS];
	double req_ms;	  /* mean time from submit to the last token */
	double dec_tok_s; /* tokens of the steps that read no prompt over
			   * their wall time: the aggregate decode rate */
	double ttft_mean_ms;
	/* the same steps' weight reads: steps per second times the bytes
	 * one step reads (so dec_tok_s / dec_gb_s is the tokens per GB) */
	double dec_gb_s;
	int n;
	uint64_t steps;
};

/*
 * @clients greedy requests of @n_gen tokens on @slots slots (drafting with
 * @d unless NULL); the first request's figures in *@st0 unless NULL.
 */
/* Tokens a phase's decode steps gave per GB of weights they read. */
static double tok_per_gb(const struct phase *ph)
{
	return ph->dec_gb_s > 0 ? ph->dec_tok_s / ph->dec_gb_s : 0;
}

static int run_phase(struct edgeq_model *m, int slots, int clients,
		     bool sequential, const struct edgeq_draft_params *d,
		     const int32_t *toks, size_t n_toks, int n_gen,
		     struct phase *ph, struct edgeq_gen_stats *st0,
		     struct edgeq_error *err)
{
	struct edgeq_session_params sp;
	struct edgeq_session *s = NULL;
	struct edgeq_gen_request rq;
	struct edgeq_gen *g[2 * MAX_STREAMS] = { 0 };
	struct edgeq_gen_event ev;
	struct edgeq_gen_stats st;
	struct edgeq_session_status ss;
	uint64_t t0, t1;
	double itl = 0, req = 0, ttft = 0, bpt;
	long total = 0;
	int i, ret, n_itl = 0;

	memset(ph, 0, sizeof(*ph));
	edgeq_session_params_init(&sp);
	sp.n_slots = slots;
	sp.queue = clients;
	sp.sequential = sequential;
	sp.ctx.n_ctx = (uint32_t)(n_toks + (size_t)n_gen + 8);
	if (d)
		sp.draft = *d;
	ret = edgeq_session_new(m, &sp, &s, err);
	if (ret)
		return ret;
	memset(&rq, 0, sizeof(rq));
	rq.toks = toks;
	rq.n_toks = n_toks;
	rq.n_predict = n_gen;
	edgeq_sampler_params_init(&rq.sampling);
	rq.sampling.temp = 0;
	t0 = edgeq_now_ns();
	for (i = 0; i < clients; i++) {
		ret = edgeq_session_submit(s, &rq, &g[i], err);
		if (ret)
			goto out;
	}
	for (i = 0; i < clients; i++) {
		do
			ret = edgeq_gen_next(g[i], &ev, err);
		while (ret == 1);
		if (ret < 0)
			goto out;
	}
	t1 = edgeq_now_ns();
	for (i = 0; i < clients; i++) {
		edgeq_gen_get_stats(g[i], &st);
		ph->ttft_ms[i] = st.ttft_ns / 1e6;
		ttft += ph->ttft_ms[i];
		total += st.n_gen;
		if (st.n_eval) {
			itl += st.decode_ns / 1e6 / st.n_eval;
			n_itl++;
		}
		req += (st.ttft_ns + st.decode_ns) / 1e6;
		if (!i && st0)
			*st0 = st;
	}
	edgeq_session_status(s, &ss);
	ph->n = clients;
	ph->steps = ss.steps;
	ph->agg_tok_s = total * 1e9 / (double)(t1 - t0);
	ph->itl_ms = n_itl ? itl / n_itl : 0;
	ph->req_ms = req / clients;
	ph->ttft_mean_ms = ttft / clients;
	ph->dec_tok_s = ss.decode_ns ? ss.decode_tokens * 1e9 / ss.decode_ns :
				       0;
	bpt = (double)edgeq_model_info(m)->bytes_per_token;
	ph->dec_gb_s = ss.decode_ns ? (double)ss.decode_steps * bpt /
					      (double)ss.decode_ns :
				      0;
	ret = 0;
out:
	for (i = 0; i < clients; i++)
		edgeq_gen_free(g[i]);
	edgeq_session_free(s);
	return ret;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *sorted, int n, double p)
{
	int i = (int)(p * (n - 1) + 0.5);

	return sorted[i < 0 ? 0 : i >= n ? n - 1 : i];
}

int bench_streams(const char *path, int threads, int streams, int n_gen,
		  int rounds, bool json, bool profile)
{
	struct edgeq_decode_profile p1, pb;
	struct edgeq_model_params mp;
	struct edgeq_error err = { 0 };
	struct edgeq_model *m = NULL;
	struct phase one, bat, ts, q, r1, rb;
	double sorted[2 * MAX_STREAMS], expl[2 * MAX_STREAMS], worst = 0, r;
	double dec[MAX_ROUNDS], dec_sorted[MAX_ROUNDS], dec_ratio;
	double gb1, gbn, tpb; /* tokens per GB read: 1 stream, N, N / 1 */
	json_t *each;
	const char *prompt = "Benchmark prompt: the session decodes several "
			     "streams at once.";
	int32_t toks[256];
	size_t n_toks = 0;
	int ret, i, status = EXIT_OK;

	if (streams < 2 || streams > MAX_STREAMS)
		return cli_error(EXIT_USAGE, "bench", "--streams must be 2..%d",
				 MAX_STREAMS);
	if (rounds < 1 || rounds > MAX_ROUNDS)
		return cli_error(EXIT_USAGE, "bench",
				 "--streams: -r must be 1..%d rounds",
				 MAX_ROUNDS);
	edgeq_model_params_init(&mp);
	mp.path = path;
	mp.n_threads = threads;
	ret = edgeq_model_load(&mp, &m, &err);
	if (ret)
		return cli_error(cli_exit_for(ret), "bench", "%s: %s", path,
				 err.msg);
	ret = edgeq_tokenize(m, prompt, edgeq_model_info(m)->add_bos, false,
			     toks, 256, &n_toks);
	/* one stream and N batched in turns, A B A B, so a change in the
	 * host's speed lands on both; the first round is the one shown
	 * phase by phase (and profiled) */
	for (i = 0; !ret && i < rounds; i++) {
		edgeq_model_profile(m, profile && !i);
		ret = run_phase(m, 1, 1, true, NULL, toks, n_toks, n_gen,
				i ? &r1 : &one, NULL, &err);
		if (!i)
			edgeq_model_profile_get(m, &p1);
		edgeq_model_profile(m, profile && !i);
		if (!ret)
			ret = run_phase(m, streams, streams, false, NULL, toks,
					n_toks, n_gen, i ? &rb : &bat, NULL,
					&err);
		if (!i)
			edgeq_model_profile_get(m, &pb);
		edgeq_model_profile(m, false);
		if (!ret) {
			const struct phase *a = i ? &r1 : &one,
					   *b = i ? &rb : &bat;

			dec[i] = a->dec_tok_s > 0 ?
					 b->dec_tok_s / a->dec_tok_s :
					 0;
			dec_sorted[i] = dec[i];
		}
	}
	if (!ret) {
		qsort(dec_sorted, (size_t)rounds, sizeof(double), cmp_double);
		dec_ratio = rounds % 2 ? dec_sorted[rounds / 2] :
					 (dec_sorted[rounds / 2 - 1] +
					  dec_sorted[rounds / 2]) /
						 2;
	}
	if (!ret)
		ret = run_phase(m, streams, streams, true, NULL, toks, n_toks,
				n_gen, &ts, NULL, &err);
	if (!ret)
		ret = run_phase(m, streams, 2 * streams, false, NULL, toks,
				n_toks, n_gen, &q, NULL, &err);
	if (ret) {
		status = cli_error(cli_exit_for(ret), "bench", "%s",
				   err.msg[0] ? err.msg : strerror(-ret));
		goto out;
	}
	/* what the queue explains: waves of `streams` ahead, each a batched
	 * request's time, then a queue-free TTFT for each prompt ahead in
	 * its wave and its own */
	for (i = 0; i < q.n; i++) {
		expl[i] = (i / streams) * bat.req_ms +
			  (i % streams + 1) * one.ttft_ms[0];
		r = q.ttft_ms[i] / expl[i];
		if (r > worst)
			worst = r;
		sorted[i] = q.ttft_ms[i];
	}
	qsort(sorted, (size_t)q.n, sizeof(double), cmp_double);
	gb1 = tok_per_gb(&one);
	gbn = tok_per_gb(&bat);
	tpb = gb1 > 0 ? gbn / gb1 : 0;
	if (json) {
		json_t *j = json_pack(
			"{s:i,s:i,s:i,s:{s:f,s:f,s:f},s:{s:f,s:f,s:I,s:f,s:f},s:{s:f,s:f,s:I},"
			"s:{s:f,s:f,s:f,s:f,s:f},s:{s:f,s:f,s:f,s:f}}",
			"streams", streams, "threads", threads, "gen", n_gen,
			"single", "tok_s", one.agg_tok_s, "itl_ms", one.itl_ms,
			"ttft_ms", one.ttft_ms[0], "batched", "tok_s",
			bat.agg_tok_s, "itl_ms", bat.itl_ms, "steps",
			(json_int_t)bat.steps, "request_ms", bat.req_ms,
			"ttft_ms", bat.ttft_mean_ms, "timeshare", "tok_s",
			ts.agg_tok_s, "itl_ms", ts.itl_ms, "steps",
			(json_int_t)ts.steps, "queue", "ttft_p50_ms",
			pct(sorted, q.n, 0.5), "ttft_p90_ms",
			pct(sorted, q.n, 0.9), "ttft_p99_ms",
			pct(sorted, q.n, 0.99), "ttft_max_ms", sorted[q.n - 1],
			"worst_over_queue", worst, "ratios",
			"batched_over_single_tok_s",
			bat.agg_tok_s / one.agg_tok_s,
			"batched_over_single_itl", bat.itl_ms / one.itl_ms,
			"batched_over_timeshare_tok_s",
			bat.agg_tok_s / ts.agg_tok_s, "ttft_p99_over_queue",
			worst);

		/* the distribution: each request in submission order */
		each = json_array();
		for (i = 0; i < q.n; i++)
			json_array_append_new(
				each,
				json_pack("{s:f,s:f}", "ttft_ms", q.ttft_ms[i],
					  "explained_ms", expl[i]));
		json_object_set_new(json_object_get(j, "queue"), "requests",
				    each);
		json_object_set_new(json_object_get(j, "single"),
				    "decode_tok_s", json_real(one.dec_tok_s));
		json_object_set_new(json_object_get(j, "batched"),
				    "decode_tok_s", json_real(bat.dec_tok_s));
		json_object_set_new(json_object_get(j, "single"), "decode_gb_s",
				    json_real(one.dec_gb_s));
		json_object_set_new(json_object_get(j, "batched"),
				    "decode_gb_s", json_real(bat.dec_gb_s));
		json_object_set_new(json_object_get(j, "single"),
				    "decode_tokens_per_gb", json_real(gb1));
		json_object_set_new(json_object_get(j, "batched"),
				    "decode_tokens_per_gb", json_real(gbn));
		json_object_set_new(json_object_get(j, "ratios"),
				    "batched_over_single_tokens_per_byte",
				    json_real(tpb));
		each = json_array();
		for (i = 0; i < rounds; i++)
			json_array_append_new(each, json_real(dec[i]));
		json_object_set_new(json_object_get(j, "ratios"),
				    "decode_rounds", each);
		json_object_set_new(json_object_get(j, "ratios"),
				    "batched_over_single_decode_tok_s",
				    json_real(dec_ratio));
		json_dumpf(j, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(j);
		goto out;
	}
	printf("session, %d threads, %d tokens per stream, prompt %zu tokens\n",
	       threads, n_gen, n_toks);
	printf("%-22s %10s %10s %8s\n", "", "tok/s", "ITL ms", "steps");
	printf("%-22s %10.2f %10.2f %8s\n", "1 stream", one.agg_tok_s,
	       one.itl_ms, "");
	printf("%-22s %10.2f %10.2f %8llu\n", "batched", bat.agg_tok_s,
	       bat.itl_ms, (unsigned long long)bat.steps);
	printf("%-22s %10.2f %10.2f %8llu\n", "time-shared", ts.agg_tok_s,
	       ts.itl_ms, (unsigned long long)ts.steps);
	printf("ratios: %d streams batched / 1 stream: tok/s %.2fx, ITL %.2fx; batched / time-shared tok/s %.2fx\n",
	       streams, bat.agg_tok_s / one.agg_tok_s, bat.itl_ms / one.itl_ms,
	       bat.agg_tok_s / ts.agg_tok_s);
	/* tok/s above is a phase's tokens over its wall time, prompts
	 * included (N of them batched, 1 alone); decode alone counts the
	 * steps that read no prompt, in every round */
	printf("decode only: %d streams %.2f tok/s, 1 stream %.2f tok/s: %.2fx (median of %d rounds:",
	       streams, bat.dec_tok_s, one.dec_tok_s, dec_ratio, rounds);
	for (i = 0; i < rounds; i++)
		printf(" %.2fx", dec[i]);
	printf(")\n");
	/* the bandwidth ledger of the same steps: each read the weights
	 * once, for as many tokens as streams were decoding */
	printf("weights read by those steps (round 1): %d streams %.2f GB/s, %.1f tokens per GB; 1 stream %.2f GB/s, %.1f tokens per GB: %.2fx the tokens per byte read\n",
	       streams, bat.dec_gb_s, gbn, one.dec_gb_s, gb1, tpb);
	printf("TTFT, %d clients on %d slots: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms (queue-free %.1f ms); worst TTFT / (waves ahead x batched request + (prompts ahead in its wave + 1) x queue-free) %.2fx\n",
	       q.n, streams, pct(sorted, q.n, 0.5), pct(sorted, q.n, 0.9),
	       pct(sorted, q.n, 0.99), sorted[q.n - 1], one.ttft_ms[0], worst);
	printf("TTFT by request (submission order), ms over what the queue explains:");
	for (i = 0; i < q.n; i++)
		printf(" %.1f/%.1f", q.ttft_ms[i], expl[i]);
	putchar('\n');
	if (profile) {
		/* per generated token: a pass of N tokens counts N */
		bench_profile_print("1 stream", &p1, (double)p1.total_ns / 1e9,
				    0, p1.tokens, 0);
		bench_profile_print("batched", &pb, (double)pb.total_ns / 1e9,
				    0, pb.tokens, 0);
	}
out:
	edgeq_model_free(m);
	return status;
}

/* One stream of @n_gen greedy tokens; figures of its generation. */
static int one_stream(struct edgeq_model *m, const struct edgeq_draft_params *d,
		      const int32_t *toks, size_t n_toks, int n_gen,
		      struct edgeq_gen_stats *st, struct edgeq_error *err)
{
	struct phase ph;

	return run_phase(m, 1, 1, true, d, toks, n_toks, n_gen, &ph, st, err);
}

static double dec_tok_s(const struct edgeq_gen_stats *st)
{
	return st->decode_ns && st->n_gen > 1 ?
		       (st->n_gen - 1) * 1e9 / (double)st->decode_ns :
		       0;
}

/*
 * For prompt lookup: the text, the model's own greedy continuation of it
 * (up to @want tokens) and the text again (without BOS), in place, so
 * that what follows the second copy is largely what followed the first:
 * a given text rewritten, the case lookup is for. Returns the tokens of
 * the continuation, or -errno.
 */
static int echo_prompt(struct edgeq_model *m, int32_t *toks, size_t *n,
		       size_t cap, int want, bool bos, struct edgeq_error *err)
{
	struct edgeq_session_params sp;
	struct edgeq_session *s = NULL;
	struct edgeq_gen_request rq;
	struct edgeq_gen *g = NULL;
	struct edgeq_gen_event ev;
	size_t n0 = *n, skip = bos ? 1 : 0, got = 0;
	int ret;

	if (n0 + (n0 - skip) + 1 > cap)
		return 0;
	if ((size_t)want > cap - n0 - (n0 - skip))
		want = (int)(cap - n0 - (n0 - skip));
	edgeq_session_params_init(&sp);
	sp.n_slots = 1;
	sp.ctx.n_ctx = (uint32_t)(n0 + (size_t)want + 8);
	ret = edgeq_session_new(m, &sp, &s, err);
	if (ret)
		return ret;
	memset(&rq, 0, sizeof(rq));
	rq.toks = toks;
	rq.n_toks = n0;
	rq.n_predict = want;
	edgeq_sampler_params_init(&rq.sampling);
	rq.sampling.temp = 0;
	ret = edgeq_session_submit(s, &rq, &g, err);
	while (!ret) { /* the last event (0) may bring tokens too */
		ret = edgeq_gen_next(g, &ev, err);
		for (size_t i = 0;
		     ret >= 0 && i < ev.n_toks && got < (size_t)want; i++)
			toks[n0 + got++] = ev.toks[i];
		ret = ret == 1 ? 0 : ret < 0 ? ret : 1;
	}
	if (ret > 0)
		ret = 0;
	edgeq_gen_free(g);
	edgeq_session_free(s);
	if (ret < 0)
		return ret;
	memmove(toks + n0 + got, toks + skip, (n0 - skip) * sizeof(*toks));
	*n = n0 + got + (n0 - skip);
	return (int)got;
}

int bench_draft(const char *path, int threads, const char *draft, int max_len,
		int n_gen, bool json)
{
	/* a prompt with repetition, as when editing or summarising a text */
	static const char text[] =
		"Rewrite the following text, keeping every sentence.\n"
		"Text: The small robot walked to the river every morning. "
		"It looked at the water and counted the fish. The small robot "
		"walked to the river every morning, and it looked at the water "
		"again. Every morning the robot counted the fish in the river.\n"
		"Rewritten: The small robot walked to the river every morning.";
	struct edgeq_model_params mp;
	struct edgeq_draft_params d;
	struct edgeq_error err = { 0 };
	struct edgeq_model *m = NULL, *dm = NULL;
	struct edgeq_gen_stats plain, spec;
	struct edgeq_spec pred;
	int32_t toks[512];
	size_t n_toks = 0;
	const char *dpath;
	double a, k, speedup;
	int ret, status = EXIT_OK, echo = 0;

	if (edgeq_draft_parse(draft, &d, &dpath) || !d.kind)
		return cli_error(EXIT_USAGE, "bench",
				 "--draft must be lookup, layers:L or a model");
	d.max_len = max_len;
	edgeq_model_params_init(&mp);
	mp.path = path;
	mp.n_threads = threads;
	ret = edgeq_model_load(&mp, &m, &err);
	if (!ret && dpath) {
		mp.path = dpath;
		ret = edgeq_model_load(&mp, &dm, &err);
		d.model = dm;
	}
	if (!ret)
		ret = edgeq_tokenize(m, text, edgeq_model_info(m)->add_bos,
				     false, toks, 512, &n_toks);
	if (!ret && d.kind == EDGEQ_DRAFT_LOOKUP) {
		ret = echo_prompt(m, toks, &n_toks, 512, n_gen,
				  edgeq_model_info(m)->add_bos, &err);
		echo = ret > 0 ? ret : 0;
		if (ret > 0)
			ret = 0;
	}
	/* plain first, then speculative, then plain again: the baseline is
	 * the two plain runs' mean decode time, so a linear drift of the
	 * host's speed cancels (the better of the two, as before, took the
	 * noise's favourable side and put every speedup low) */
	if (!ret)
		ret = one_stream(m, NULL, toks, n_toks, n_gen, &plain, &err);
	if (!ret)
		ret = one_stream(m, &d, toks, n_toks, n_gen, &spec, &err);
	if (!ret) {
		struct edgeq_gen_stats again;

		ret = one_stream(m, NULL, toks, n_toks, n_gen, &again, &err);
		if (!ret && again.n_gen == plain.n_gen)
			plain.decode_ns =
				(plain.decode_ns + again.decode_ns) / 2;
	}
	if (ret) {
		status = cli_error(cli_exit_for(ret), "bench", "%s",
				   err.msg[0] ? err.msg : strerror(-ret));
		goto out;
	}
	edgeq_ledger_speculative_measured(spec.n_drafted, spec.n_accepted,
					  spec.n_rejected, spec.n_verify,
					  spec.draft_cost, &a, &k, &pred);
	speedup = dec_tok_s(&plain) > 0 ? dec_tok_s(&spec) / dec_tok_s(&plain) :
					  0;
	if (json) {
		json_t *j = json_pack(
			"{s:s,s:i,s:i,s:I,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:I,s:f}",
			"draft", draft, "threads", threads, "gen", n_gen,
			"prompt_tokens", (json_int_t)n_toks, "prompt_echo",
			echo, "plain_tok_s", dec_tok_s(&plain), "draft_tok_s",
			dec_tok_s(&spec), "speedup", speedup,
			"draft_acceptance", a, "draft_len", k, "draft_cost",
			spec.draft_cost, "tokens_per_pass",
			spec.n_eval ? (double)(spec.n_gen - 1) / spec.n_eval :
				      0,
			"draft_tokens", (json_int_t)spec.n_drafted,
			"predicted_speedup", pred.speedup);

		json_dumpf(j, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(j);
		goto out;
	}
	printf("speculative decoding, --draft %s, %d threads, %d tokens, prompt %zu tokens\n",
	       draft, threads, n_gen, n_toks);
	if (echo)
		printf("prompt: the text, the model's own continuation of it (%d tokens), the text again\n",
		       echo);
	printf("plain %.2f tok/s, drafted %.2f tok/s: measured speedup %.2fx\n",
	       dec_tok_s(&plain), dec_tok_s(&spec), speedup);
	printf("acceptance %.3f per draft token, %.2f drafted per verify pass, draft cost %.3f, %.2f tokens per target pass\n",
	       a, k, spec.draft_cost,
	       spec.n_eval ? (double)(spec.n_gen - 1) / spec.n_eval : 0);
	printf("ledger prediction for that acceptance, length and cost: %.2fx (measured / predicted %.2f)%s\n",
	       pred.speedup, pred.speedup > 0 ? speedup / pred.speedup : 0,
	       spec.n_drafted < (uint32_t)n_gen / 4 ?
		       "; drafting was mostly off (it did not pay)" :
		       "");
out:
	edgeq_model_free(dm);
	edgeq_model_free(m);
	return status;
}
