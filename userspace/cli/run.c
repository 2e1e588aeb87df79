// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq run: load a model, generate from a prompt, print the text as it is
 * produced and one line of figures on stderr (or one JSON object).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include <edgeq/engine.h>
#include <edgeq/kernels.h>
#include <edgeq/ledger.h>
#include <edgeq/placement.h>
#include <edgeq/stream.h>

#include "cli.h"
#include "run_placement.h"

static const char *o_model, *o_prompt = "", *o_kv = "f16", *o_weights = "auto";
static const char *o_budget, *o_dump, *o_queue, *o_draft, *o_draft_on = "auto";
static uint64_t o_copies;
static int o_draft_max = 4;
static bool o_draft_fixed, o_shift;
static int o_keep;
static int o_n = 64, o_threads, o_top_k = 40, o_ctx, o_batch = 64,
	   o_last_n = 64;
static double o_temp = 0.8, o_top_p = 0.95, o_min_p = 0.05, o_rep = 1.0;
static uint64_t o_seed = 0x5eed;
static bool o_json, o_no_roof, o_no_bos, o_no_uring, o_no_repack;

static const struct cli_option run_opts[] = {
	{ "model", 'm', CLI_STR, &o_model, "FILE", "GGUF model file" },
	{ "prompt", 'p', CLI_STR, &o_prompt, "TEXT", "prompt text" },
	{ "n-predict", 'n', CLI_INT, &o_n, "N",
	  "tokens to generate (-1: until EOS or the context is full; default 64)" },
	{ "threads", 't', CLI_INT, &o_threads, "N",
	  "threads (default: all cores)" },
	{ "temp", 0, CLI_DOUBLE, &o_temp, "T",
	  "temperature, 0 = greedy (0.8)" },
	{ "top-k", 0, CLI_INT, &o_top_k, "K", "top-k, 0 = off (40)" },
	{ "top-p", 0, CLI_DOUBLE, &o_top_p, "P", "top-p, 1 = off (0.95)" },
	{ "min-p", 0, CLI_DOUBLE, &o_min_p, "P", "min-p, 0 = off (0.05)" },
	{ "repeat-penalty", 0, CLI_DOUBLE, &o_rep, "F",
	  "repetition penalty, 1 = off (1.0)" },
	{ "repeat-last-n", 0, CLI_INT, &o_last_n, "N",
	  "tokens the penalty looks back on (64)" },
	{ "seed", 's', CLI_U64, &o_seed, "N", "RNG seed" },
	{ "ctx-size", 'c', CLI_INT, &o_ctx, "N",
	  "context size (default: the model's, at most 4096 and what memory allows)" },
	{ "batch-size", 'b', CLI_INT, &o_batch, "N", "prefill batch (64)" },
	{ "kv-type", 0, CLI_STR, &o_kv, "f16|q8_0|f32", "KV cache type (f16)" },
	{ "weights", 0, CLI_STR, &o_weights, "auto|mmap|preload|stream",
	  "how weights reach memory (auto: mmap when the model fits and is in the page cache, preload when it fits cold, else stream)" },
	{ "weights-budget", 0, CLI_RAW, &o_budget, "SIZE|PCT",
	  "resident weight budget, bytes or percent of the model (default: from the memory cgroup and MemAvailable)" },
	{ "no-io-uring", 0, CLI_FLAG, &o_no_uring, NULL,
	  "read weights with a pread thread pool instead of io_uring" },
	{ "no-repack", 0, CLI_FLAG, &o_no_repack, NULL,
	  "keep the file's weight layout (default: Q4_0/Q8_0 matrices in 16-row groups when the budget has room)" },
	{ "json", 0, CLI_FLAG, &o_json, NULL,
	  "print one JSON object (prompt_tokens, tokens, text, timings)" },
	{ "no-roofline", 0, CLI_FLAG, &o_no_roof, NULL,
	  "skip the memory-bandwidth measurement" },
	{ "no-bos", 0, CLI_FLAG, &o_no_bos, NULL, "do not prepend BOS" },
	{ "queue", 0, CLI_STR, &o_queue, "NAME[=PROFILE],...",
	  "also use these edgeq queues, placed op by op (Documentation/placement.rst)" },
	{ "device-copies", 0, CLI_SIZE, &o_copies, "SIZE",
	  "bound the weight copies handed to the queues' agents (memfds beside the model's pages; default: no bound): an op whose weight does not fit runs on the CPU" },
	{ "draft", 0, CLI_STR, &o_draft, "lookup|layers:L|MODEL",
	  "speculative decoding: prompt-lookup n-grams, the model's first L layers, or a draft model with the same vocabulary" },
	{ "draft-on", 0, CLI_STR, &o_draft_on, "auto|target|draft",
	  "with --queue and a draft model: which model the queues take (auto: the placer's predicted tokens/s of each, at acceptance 0.75)" },
	{ "draft-max", 0, CLI_INT, &o_draft_max, "N",
	  "most tokens drafted per target pass (4; the session adapts below it)" },
	{ "draft-fixed", 0, CLI_FLAG, &o_draft_fixed, NULL,
	  "always draft --draft-max tokens (no adaptation)" },
	{ "context-shift", 0, CLI_FLAG, &o_shift, NULL,
	  "at the context limit keep --keep tokens and the newest half of the rest, and go on (off)" },
	{ "keep", 0, CLI_INT, &o_keep, "N",
	  "context shift: prompt tokens always kept (a system prompt; 0)" },
	{ "dump-logits", 0, CLI_STR, &o_dump, "FILE",
	  "(testing) greedy run writing every step's logits as float32 rows" },
	CLI_OPTIONS_END
};

struct run_state {
	int32_t *toks;
	size_t n, cap;
	char *text;
	size_t tlen, tcap;
	bool stream;
};

static int on_token(void *user, int32_t tok, const char *piece, size_t len)
{
	struct run_state *rs = user;

	if (rs->n == rs->cap) {
		size_t nc = rs->cap ? rs->cap * 2 : 256;
		int32_t *t = realloc(rs->toks, nc * sizeof(*t));

		if (!t)
			return 1;
		rs->toks = t;
		rs->cap = nc;
	}
	rs->toks[rs->n++] = tok;
	if (rs->tlen + len + 1 > rs->tcap) {
		size_t nc = (rs->tlen + len + 1) * 2;
		char *t = realloc(rs->text, nc);

		if (!t)
			return 1;
		rs->text = t;
		rs->tcap = nc;
	}
	memcpy(rs->text + rs->tlen, piece, len);
	rs->tlen += len;
	rs->text[rs->tlen] = 0;
	if (rs->stream) {
		fwrite(piece, 1, len, stdout);
		fflush(stdout);
	}
	return 0;
}

/* Replace invalid UTF-8 with U+FFFD so the JSON stays valid. */
static char *utf8_clean(const char *s, size_t n)
{
	char *o = malloc(n * 3 + 1), *p = o;
	size_t i = 0;

	if (!o)
		return NULL;
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		size_t l = c < 0x80	      ? 1 :
			   (c & 0xe0) == 0xc0 ? 2 :
			   (c & 0xf0) == 0xe0 ? 3 :
			   (c & 0xf8) == 0xf0 ? 4 :
						0;
		size_t k;

		for (k = 1; l && k < l; k++)
			if (i + k >= n ||
			    ((unsigned char)s[i + k] & 0xc0) != 0x80)
				l = 0;
		if (l == 0 || (l == 2 && c < 0xc2)) {
			memcpy(p, "\xef\xbf\xbd", 3);
			p += 3;
			i++;
			continue;
		}
		memcpy(p, s + i, l);
		p += l;
		i += l;
	}
	*p = 0;
	return o;
}

static int dump_logits(struct edgeq_model *m, struct edgeq_ctx *c,
		       const struct edgeq_model_info *in, bool add_bos)
{
	struct edgeq_error err = { 0 };
	int32_t *toks;
	size_t n = 0, max = strlen(o_prompt) + 8, i;
	const float *lg;
	json_t *jo, *jp, *jt;
	FILE *f;
	int ret, k;

	toks = calloc(max, sizeof(*toks));
	if (!toks)
		return EXIT_NORES;
	ret = edgeq_tokenize(m, o_prompt, add_bos, false, toks, max, &n);
	if (ret || !n) {
		free(toks);
		return cli_error(EXIT_FAIL, "run",
				 "cannot tokenize the prompt");
	}
	f = fopen(o_dump, "we");
	if (!f) {
		free(toks);
		return cli_error(EXIT_FAIL, "run", "%s: %s", o_dump,
				 strerror(errno));
	}
	jo = json_object();
	jp = json_array();
	jt = json_array();
	for (i = 0; i < n; i++)
		json_array_append_new(jp, json_integer(toks[i]));
	ret = edgeq_decode(c, toks, n, &lg, &err);
	for (k = 0; !ret; k++) {
		int32_t best = 0;
		uint32_t v;

		fwrite(lg, sizeof(float), in->n_vocab, f);
		for (v = 1; v < in->n_vocab; v++)
			if (lg[v] > lg[best])
				best = (int32_t)v;
		if (k >= o_n)
			break;
		json_array_append_new(jt, json_integer(best));
		if (edgeq_ctx_pos(c) >= edgeq_ctx_n_ctx(c))
			break;
		ret = edgeq_decode(c, &best, 1, &lg, &err);
	}
	fclose(f);
	free(toks);
	json_object_set_new(jo, "prompt_tokens", jp);
	json_object_set_new(jo, "tokens", jt);
	json_dumpf(jo, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(jo);
	if (ret)
		return cli_error(cli_exit_for(ret), "run", "%s", err.msg);
	return EXIT_OK;
}

static int cmd_run(int argc, char **argv)
{
	const struct cli_command *self = cli_find("run");
	struct edgeq_model_params mp;
	struct edgeq_ctx_params cp;
	struct edgeq_gen_params gp;
	struct edgeq_gen_stats st;
	struct edgeq_error err = { 0 };
	struct run_state rs = { 0 };
	const struct edgeq_model_info *in;
	struct edgeq_model *m = NULL, *dm = NULL;
	struct edgeq_ctx *c = NULL, *dc = NULL, *pc;
	struct edgeq_draft_choice dch;
	bool chose = false;
	const char *draft_path = NULL;
	struct run_placement *rp = NULL;
	double bw = 0, pps, dps;
	int first, ret, status = EXIT_OK;
	struct edgeq_stream_status ws;
	uint64_t t0, load_ns = 0;

	ret = cli_parse(self, argc, argv, &first);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (first < argc)
		return cli_error(EXIT_USAGE, "run", "unexpected argument '%s'",
				 argv[first]);
	if (!o_model)
		return cli_error(EXIT_USAGE, "run", "no model: use -m FILE");
	if (o_threads < 0 || o_n < -1 || o_ctx < 0 || o_batch < 1)
		return cli_error(
			EXIT_USAGE, "run",
			"-t, -n, --ctx-size and --batch-size must not be negative");
	edgeq_model_params_init(&mp);
	mp.path = o_model;
	mp.n_threads = o_threads;
	if (o_no_repack)
		mp.no_repack = true;
	if (!strcmp(o_weights, "mmap"))
		mp.weights = EDGEQ_WEIGHTS_MMAP;
	else if (!strcmp(o_weights, "preload"))
		mp.weights = EDGEQ_WEIGHTS_PRELOAD;
	else if (!strcmp(o_weights, "stream"))
		mp.weights = EDGEQ_WEIGHTS_STREAM;
	else if (!strcmp(o_weights, "auto"))
		mp.weights = EDGEQ_WEIGHTS_AUTO;
	else
		return cli_error(
			EXIT_USAGE, "run",
			"--weights must be mmap, preload, stream or auto");
	mp.use_io_uring = !o_no_uring;
	if (o_budget) {
		/* a percentage is of the model (its file: the tensor data) */
		uint64_t total = 0;
		struct stat sb;

		if (!stat(o_model, &sb))
			total = (uint64_t)sb.st_size;
		if (edgeq_parse_size(o_budget, total, &mp.weights_budget))
			return cli_error(EXIT_USAGE, "run",
					 "bad --weights-budget '%s'", o_budget);
	}
	edgeq_ctx_params_init(&cp);
	cp.n_ctx = (uint32_t)o_ctx;
	cp.n_batch = (uint32_t)o_batch;
	{
		int kv, e = cli_kv_type("run", o_kv, true, &kv);

		if (e)
			return e;
		cp.kv_type = (enum edgeq_kv_type)kv;
	}
	edgeq_gen_params_init(&gp);
	gp.prompt = o_prompt;
	gp.n_predict = o_n;
	gp.sampling.temp = (float)o_temp;
	gp.sampling.top_k = o_top_k;
	gp.sampling.top_p = (float)o_top_p;
	gp.sampling.min_p = (float)o_min_p;
	gp.sampling.repeat_penalty = (float)o_rep;
	gp.sampling.repeat_last_n = o_last_n;
	gp.sampling.seed = o_seed;
	if (edgeq_draft_parse(o_draft, &gp.draft, &draft_path))
		return cli_error(
			EXIT_USAGE, "run",
			"--draft must be lookup, layers:L (L >= 1) or a model file");
	gp.draft.max_len = o_draft_max;
	gp.draft.fixed = o_draft_fixed;
	gp.context_shift = o_shift;
	if (o_keep < 0)
		return cli_error(EXIT_USAGE, "run",
				 "--keep must not be negative");
	gp.n_keep = (uint32_t)o_keep;
	{
		struct edgeq_sampler *s;

		if (edgeq_sampler_new(&gp.sampling, &s))
			return cli_error(
				EXIT_USAGE, "run",
				"bad sampling parameters (temp >= 0, top-k >= 0, 0 < top-p <= 1, 0 <= min-p <= 1, repeat-penalty > 0)");
		edgeq_sampler_free(s);
	}

	t0 = edgeq_now_ns();
	ret = edgeq_model_load(&mp, &m, &err);
	if (ret) {
		int st2 = cli_exit_for(ret);

		if (ret == -EOPNOTSUPP || ret == -EBADMSG || ret == -EPROTO)
			st2 = EXIT_BADINPUT;
		/* open errors already name the file; format errors do not */
		if (strstr(err.msg, o_model))
			return cli_error(st2, "run", "%s", err.msg);
		return cli_error(st2, "run", "%s: %s", o_model, err.msg);
	}
	in = edgeq_model_info(m);
	load_ns = edgeq_now_ns() - t0;
	if (!edgeq_model_weights_status(m, &ws) && ws.fallback[0])
		fprintf(stderr, "edgeq run: weights (%s): %s\n",
			edgeq_weights_mode_name(ws.mode), ws.fallback);
	gp.add_bos = in->add_bos && !o_no_bos;
	if (draft_path) {
		struct edgeq_model_params dp = mp;

		dp.path = draft_path;
		dp.weights_budget = 0;
		ret = edgeq_model_load(&dp, &dm, &err);
		if (ret) {
			status = cli_error(cli_exit_for(ret), "run",
					   "--draft %s: %s", draft_path,
					   err.msg);
			goto out;
		}
		gp.draft.model = dm;
	}
	ret = edgeq_ctx_new(m, &cp, &c, &err);
	if (ret) {
		status = cli_error(cli_exit_for(ret), "run", "%s", err.msg);
		goto out;
	}
	if (o_dump) {
		status = dump_logits(m, c, in, gp.add_bos);
		goto out;
	}
	if (strcmp(o_draft_on, "auto") && strcmp(o_draft_on, "target") &&
	    strcmp(o_draft_on, "draft")) {
		status = cli_error(EXIT_USAGE, "run",
				   "--draft-on must be auto, target or draft");
		goto out;
	}
	if (!strcmp(o_draft_on, "draft") && (!o_queue || !dm)) {
		status = cli_error(
			EXIT_USAGE, "run",
			"--draft-on draft needs --queue and a draft model (--draft MODEL)");
		goto out;
	}
	pc = c;
	if (o_queue && dm && !strcmp(o_draft_on, "auto")) {
		/* the queues take the model the placer predicts more
		 * tokens per second for (Documentation/session.rst) */
		status = run_placement_draft_choice(o_queue, m, dm, 0.75,
						    o_draft_max, "run",
						    "--draft-on", &dch);
		if (status)
			goto out;
		chose = true;
		o_draft_on = dch.draft_on_device ? "draft" : "target";
		if (!o_json)
			fprintf(stderr,
				"edgeq run: --draft-on auto: the queues take the %s (predicted %.1f tok/s, draft length %d; the %s there: %.1f tok/s, length %d; acceptance 0.75)\n",
				o_draft_on,
				dch.draft_on_device ? dch.rate_draft_on :
						      dch.rate_target_on,
				dch.draft_on_device ? dch.k_draft_on :
						      dch.k_target_on,
				dch.draft_on_device ? "target" : "draft",
				dch.draft_on_device ? dch.rate_target_on :
						      dch.rate_draft_on,
				dch.draft_on_device ? dch.k_target_on :
						      dch.k_draft_on);
	}
	if (o_queue && dm && !strcmp(o_draft_on, "draft")) {
		struct edgeq_ctx_params dcp = cp;

		/* the draft's context, placed here, handed to the session:
		 * as many positions as the target's */
		dcp.n_ctx = edgeq_ctx_n_ctx(c);
		ret = edgeq_ctx_new(dm, &dcp, &dc, &err);
		if (ret) {
			status = cli_error(cli_exit_for(ret), "run",
					   "--draft %s: %s", draft_path,
					   err.msg);
			goto out;
		}
		gp.draft.ctx = dc;
		pc = dc;
	}
	if (o_queue) {
		const struct run_placement_opts po = {
			.who = "run", .opt = "--queue", .copy_budget = o_copies
		};

		status = run_placement_start_opts(pc, o_queue, &po, &rp);
		if (status)
			goto out;
	}
	rs.stream = !o_json;
	if (!o_json) {
		fputs(o_prompt, stdout);
		fflush(stdout);
	}
	ret = edgeq_generate(c, &gp, on_token, &rs, &st, &err);
	if (ret) {
		status = cli_error(cli_exit_for(ret), "run", "%s", err.msg);
		goto out;
	}
	st.load_ns = 0;
	(void)t0;
	if (!o_no_roof) {
		/* the kernels' measurement, same thread count, after the run so
		 * it does not disturb it; about a tenth of a second */
		double gbps = 0;

		if (!edgeq_membw_measure(o_threads, 0, 0, &gbps))
			bw = gbps * 1e9;
	}
	/* the process's real peak, the diagnostic's buffer included: that
	 * buffer is bounded by what memory allows (edgeq_membw_measure) */
	if (edgeq_peak_rss() > st.peak_rss)
		st.peak_rss = edgeq_peak_rss();
	pps = st.prompt_ns ? st.n_prompt * 1e9 / (double)st.prompt_ns : 0;
	/* tokens after the first one (which the prefill gives), per second:
	 * with speculation a pass may give several */
	dps = st.decode_ns && st.n_eval && st.n_gen > 1 ?
		      (st.n_gen - 1) * 1e9 / (double)st.decode_ns :
		      0;
	if (o_json) {
		json_t *jo = json_object(), *jp = json_array(),
		       *jt = json_array();
		json_t *tm = json_object();
		int32_t *pt = calloc(st.n_prompt + 1, sizeof(*pt));
		size_t np = 0, i;
		char *clean = utf8_clean(rs.text ? rs.text : "", rs.tlen);

		if (pt && !edgeq_tokenize(m, o_prompt, gp.add_bos, false, pt,
					  st.n_prompt + 1, &np))
			for (i = 0; i < np; i++)
				json_array_append_new(jp, json_integer(pt[i]));
		for (i = 0; i < rs.n; i++)
			json_array_append_new(jt, json_integer(rs.toks[i]));
		json_object_set_new(jo, "prompt_tokens", jp);
		json_object_set_new(jo, "tokens", jt);
		json_object_set_new(jo, "text",
				    json_string(clean ? clean : ""));
		json_object_set_new(tm, "prompt_ms",
				    json_real(st.prompt_ns / 1e6));
		json_object_set_new(tm, "decode_ms",
				    json_real(st.decode_ns / 1e6));
		json_object_set_new(tm, "ttft_ms", json_real(st.ttft_ns / 1e6));
		json_object_set_new(tm, "load_ms", json_real(load_ns / 1e6));
		if (!edgeq_model_weights_status(m, &ws)) {
			json_object_set_new(
				tm, "weights",
				json_string(edgeq_weights_mode_name(ws.mode)));
			json_object_set_new(tm, "weights_why",
					    json_string(ws.why));
			json_object_set_new(
				tm, "weights_bytes_read",
				json_integer((json_int_t)ws.bytes_read));
		}
		json_object_set_new(tm, "repack",
				    json_string(edgeq_model_info(m)->repack));
		json_object_set_new(
			tm, "packed_bytes",
			json_integer(
				(json_int_t)edgeq_model_info(m)->packed_bytes));
		json_object_set_new(tm, "prompt_tok_s", json_real(pps));
		if (gp.draft.kind) {
			struct edgeq_spec sp;
			double a, k;

			edgeq_ledger_speculative_measured(
				st.n_drafted, st.n_accepted, st.n_rejected,
				st.n_verify, st.draft_cost, &a, &k, &sp);
			json_object_set_new(tm, "draft_acceptance",
					    json_real(a));
			json_object_set_new(
				tm, "draft_accepted_share",
				json_real(st.n_drafted ? (double)st.n_accepted /
								 st.n_drafted :
							 0));
			json_object_set_new(tm, "draft_tokens",
					    json_integer(st.n_drafted));
			json_object_set_new(tm, "draft_len", json_real(k));
			json_object_set_new(tm, "draft_cost",
					    json_real(st.draft_cost));
			json_object_set_new(tm, "draft_ms",
					    json_real(st.draft_ns / 1e6));
			json_object_set_new(tm, "predicted_speedup",
					    json_real(sp.speedup));
			if (o_queue && dm)
				json_object_set_new(tm, "draft_on",
						    json_string(o_draft_on));
			if (chose)
				json_object_set_new(
					tm, "draft_choice",
					json_pack(
						"{s:f,s:f,s:i,s:i,s:f,s:f,s:f,s:f}",
						"target_on_tok_s",
						dch.rate_target_on,
						"draft_on_tok_s",
						dch.rate_draft_on,
						"target_on_k", dch.k_target_on,
						"draft_on_k", dch.k_draft_on,
						"target_dev_ms",
						dch.target_dev_ns / 1e6,
						"target_cpu_ms",
						dch.target_cpu_ns / 1e6,
						"draft_dev_ms",
						dch.draft_dev_ns / 1e6,
						"draft_cpu_ms",
						dch.draft_cpu_ns / 1e6));
		}
		json_object_set_new(
			tm, "tokens_per_pass",
			json_real(st.n_eval && st.n_gen ?
					  (double)(st.n_gen - 1) / st.n_eval :
					  0));
		json_object_set_new(tm, "decode_tok_s", json_real(dps));
		json_object_set_new(tm, "peak_rss",
				    json_integer((json_int_t)st.peak_rss));
		json_object_set_new(
			tm, "bytes_per_token",
			json_integer((json_int_t)st.bytes_per_token));
		if (bw > 0) {
			json_object_set_new(tm, "membw", json_real(bw));
			json_object_set_new(
				tm, "roofline",
				json_real(dps * st.bytes_per_token / bw));
		}
		json_object_set_new(jo, "timings", tm);
		json_dumpf(jo, stdout, JSON_COMPACT);
		putchar('\n');
		json_decref(jo);
		free(pt);
		free(clean);
	} else {
		putchar('\n');
		fflush(stdout);
	}
	fprintf(stderr,
		"prompt %u tok %.1f tok/s | decode %u tok %.1f tok/s | TTFT %.1f ms | peak RSS %.1f MiB | %.1f MiB/token",
		st.n_prompt, pps, st.n_gen, dps, st.ttft_ns / 1e6,
		st.peak_rss / 1048576.0, st.bytes_per_token / 1048576.0);
	if (bw > 0)
		fprintf(stderr, " | roofline %.0f%% of %.1f GB/s",
			100.0 * dps * (double)st.bytes_per_token / bw,
			bw / 1e9);
	if (!edgeq_model_weights_status(m, &ws))
		fprintf(stderr, " | weights %s (%s)",
			edgeq_weights_mode_name(ws.mode), ws.why);
	fprintf(stderr, " | repack %s", edgeq_model_info(m)->repack);
	fputc('\n', stderr);
out:
	run_placement_stop(rp, o_json);
	edgeq_ctx_free(dc);
	edgeq_ctx_free(c);
	edgeq_model_free(m);
	edgeq_model_free(dm);
	free(rs.toks);
	free(rs.text);
	return status;
}

EDGEQ_COMMAND(
	run, "generate text from a prompt with a local model",
	"usage: edgeq run -m MODEL -p PROMPT [-n N] [-t THREADS] [OPTIONS]\n\n"
	"Prints the prompt and the generated text as it is produced, then one\n"
	"line on stderr: prompt and decode tok/s, time to first token, peak RSS,\n"
	"weight bytes read per token and the share of the memory-bandwidth\n"
	"roofline reached. --temp 0 is greedy. A malformed model exits with 3.",
	run_opts, cmd_run);
