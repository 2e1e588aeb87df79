// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * place-run: generate greedily with ops placed on devices, and report per
 * token where the plan put them. The placement tests and the VM scenario
 * drive it.
 *
 *   place-run -m MODEL [-p PROMPT] [-n N] [--queue npu0[=PROFILE],...]
 *             [--devices FILE] [--backend inline|kq|vulkan|cpudev|none]
 *             [--device N|NAME]                   vulkan: which device
 *             [--weights MODE --weights-budget B] how weights reach memory
 *             [--force TOKS --dump-logits FILE]   decode the comma-separated
 *                                                 tokens one by one instead of
 *                                                 generating; write each step's
 *                                                 logits (f32) to FILE
 *             [--throttle-at K --cooling S/MAX]   set npu0's state after token K
 *             [--fail-after N]                    inline: the agent dies at op N
 *             [--copy-budget BYTES]               kq, vulkan, cpudev: bound the
 *                                                 weight copies (memfds), the
 *                                                 placer planning within it
 *             [--copy-budget-unplanned BYTES]     the same, the placer not told
 *                                                 (the backend refuses ops)
 *             [--inline-delay-us N]               inline: a slower device
 *             [--kill-agent-at K --agent-pid PID] kq: SIGKILL the agent after token K
 *             [--mem-at K:LEVEL[:AVAILABLE]]      hand over a memory pressure
 *                                                 level (0-3) after token K
 *             [--kv-type f16|f32|q8_0]            the KV cache's type
 *             [--draft lookup|layers:L|MODEL]     speculative decoding
 *             [--draft-on target|draft|auto]      which model the queues
 *                                                 take (target: default;
 *                                                 auto: the placer's choice)
 *             [--draft-max N]                     most tokens per draft
 *             [--watch] [--sysfs DIR]             consume the pressure monitor
 *             [--no-calib]                        keep the profile's speeds
 *             [--margin F]                        hysteresis margin (0.05)
 *             [--save-calib FILE]                 calibration for edgeq plan --calib
 *
 * vulkan and cpudev run the placed matrix ops in this process on that
 * execution backend (edgeq_place_dev_new(): what an agent runs, without
 * edgeq.ko); --fail-after applies to them too.
 *
 * Prints one JSON object: "tokens" (generated ids), "per_token" (for each
 * token: ops of the plan off the CPU, replans so far, pressure events,
 * offloaded ops so far, the queue's sysfs cooling state when --sysfs),
 * "stats" and "error" (null when the generation succeeded).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <edgeq/backend.h>
#include <edgeq/engine.h>
#include <edgeq/placement.h>
#include <edgeq/stream.h>
#include <edgeq/pressure.h>

#include "place_kq.h"

struct run {
	struct edgeq_place_exec *x;
	struct edgeq_placer *pl;
	int npu; /* device index of the first queue */
	int n_tok;
	int throttle_at, kill_at;
	int mem_at, mem_level; /* --mem-at K:LEVEL[:AVAIL_BYTES] */
	uint64_t mem_avail;
	pid_t agent_pid;
	struct edgeq_device_state throttle;
	const char *sysfs, *qname;
	FILE *per;
};

static long sysfs_long(const char *dir, const char *q, const char *attr)
{
	char path[512];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, q, attr);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int on_token(void *user, int32_t tok, const char *piece, size_t len)
{
	struct run *r = user;
	struct edgeq_place_stats st;

	edgeq_place_stats(r->x, &st);
	fprintf(r->per,
		"%s{\"tok\": %d, \"off_cpu\": %u, \"replans\": %llu, "
		"\"reason\": %d, \"pressure_events\": %llu, \"offloaded\": %llu, "
		"\"fallbacks\": %llu, \"cooling_state\": %ld}",
		r->n_tok ? ", " : "", tok, st.ops_off_cpu,
		(unsigned long long)st.replans, (int)st.last_reason,
		(unsigned long long)st.pressure_events,
		(unsigned long long)st.offloaded,
		(unsigned long long)st.fallbacks,
		r->sysfs && r->qname ?
			sysfs_long(r->sysfs, r->qname, "cooling_state") :
			-1L);
	if (r->n_tok == r->throttle_at && r->npu > 0)
		edgeq_placer_set_state(r->pl, r->npu, &r->throttle);
	if (r->n_tok == r->mem_at) {
		/* memory pressure as a monitor would hand it over */
		struct edgeq_pressure_state *ps = calloc(1, sizeof(*ps));

		if (ps) {
			ps->mem.level = (enum edgeq_mem_level)r->mem_level;
			ps->mem.available = r->mem_avail;
			edgeq_place_pressure(r->x, ps);
			free(ps);
		}
	}
	if (r->n_tok == r->kill_at && r->agent_pid > 0) {
		kill(r->agent_pid, SIGKILL);
		usleep(20000); /* let the module see the agent go */
	}
	r->n_tok++;
	return 0;
}

static int add_queues(struct edgeq_devices *d, const char *list,
		      const struct edgeq_device_profile *profs, int n_profs)
{
	char buf[256], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		const struct edgeq_device_profile *p;
		char *eq = strchr(tok, '='), pn[EDGEQ_DEV_NAME_MAX], *e;

		snprintf(pn, sizeof(pn), "%s", eq ? eq + 1 : tok);
		if (eq)
			*eq = '\0';
		else
			for (e = pn + strlen(pn);
			     e > pn && e[-1] >= '0' && e[-1] <= '9'; e--)
				e[-1] = '\0';
		p = edgeq_devprof_find(profs, (size_t)n_profs, pn);
		if (!p || edgeq_devices_add(d, tok, p) < 0) {
			fprintf(stderr, "place-run: queue %s: no profile %s\n",
				tok, pn);
			return -1;
		}
	}
	return 0;
}

/*
 * Teacher forcing: decode the tokens of @csv one at a time (every step a
 * decode step, placed), calling on_token with each step's argmax and
 * appending its logits to @dump.
 */
static int force_tokens(struct edgeq_ctx *c, uint32_t n_vocab, const char *csv,
			const char *dump, struct run *r,
			struct edgeq_error *err)
{
	FILE *f = fopen(dump, "we");
	const char *p = csv;
	int ret = 0;

	if (!f)
		return edgeq_error_set(err, errno, "%s: %s", dump,
				       strerror(errno));
	while (*p && !ret) {
		char *end;
		int32_t tok = (int32_t)strtol(p, &end, 10);
		const float *lg;
		uint32_t best = 0;

		if (end == p) {
			ret = edgeq_error_set(err, EINVAL, "--force: bad list");
			break;
		}
		p = *end == ',' ? end + 1 : end;
		ret = edgeq_decode(c, &tok, 1, &lg, err);
		if (ret)
			break;
		for (uint32_t i = 1; i < n_vocab; i++)
			if (lg[i] > lg[best])
				best = i;
		if (fwrite(lg, sizeof(float), n_vocab, f) != n_vocab)
			ret = edgeq_error_set(err, EIO, "%s: short write",
					      dump);
		on_token(r, (int32_t)best, NULL, 0);
	}
	fclose(f);
	return ret;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: place-run -m MODEL [-p PROMPT] [-n N] [--queue Q[=P],...]\n"
		"  [--devices FILE] [--backend inline|kq|none] [--throttle-at K]\n"
		"  [--cooling S/MAX] [--fail-after N] [--kill-agent-at K]\n"
		"  [--agent-pid PID] [--watch] [--sysfs DIR] [--threads N]\n"
		"  [--no-calib] [--margin F] [--save-calib FILE]\n"
		"  [--inline-delay-us N] [--device N|NAME] [--weights MODE]\n"
		"  [--weights-budget BYTES] [--force TOKS --dump-logits FILE]\n"
		"  [--copy-budget[-unplanned] BYTES] [--kv-type f16|f32|q8_0]\n"
		"  [--mem-at K:LEVEL[:AVAILABLE]] [--draft SPEC]\n"
		"  [--draft-on target|draft|auto] [--draft-max N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *model = NULL, *prompt = "Once upon a time", *queues = NULL;
	const char *devfile = NULL, *backend = "inline", *save_calib = NULL;
	const char *device = NULL, *weights = NULL, *force = NULL;
	const char *dump = NULL, *draft = NULL, *draft_path = NULL;
	const char *draft_on = "target";
	struct edgeq_model *dm = NULL;
	struct edgeq_ctx *dc = NULL, *pc;
	int draft_max = 4;
	struct edgeq_draft_choice dch;
	bool chose = false;
	struct edgeq_place_dev *pdev = NULL;
	uint64_t wbudget = 0;
	struct edgeq_device_profile profs[16];
	struct edgeq_model_params mp;
	struct edgeq_ctx_params cp;
	struct edgeq_gen_params gp;
	struct edgeq_gen_stats gs;
	struct edgeq_error err = { 0 };
	struct edgeq_place_backend be;
	struct edgeq_place_inline inl;
	struct edgeq_place_stats st;
	struct edgeq_placer_params pp;
	struct edgeq_pressure *pm = NULL;
	struct place_kq *kqb = NULL;
	struct edgeq_devices d;
	struct edgeq_model *m;
	struct edgeq_ctx *c;
	struct run r;
	char *perbuf = NULL;
	size_t perlen = 0;
	int n = 16, n_profs, ret, threads = 1;
	unsigned cs = 3, cmax = 4;
	uint64_t fail_after = 0, delay_us = 0, copy_budget = 0;
	bool watch = false, unplanned = false;
	enum edgeq_kv_type kvt = EDGEQ_KV_F16;

	memset(&r, 0, sizeof(r));
	edgeq_placer_params_init(&pp);
	r.throttle_at = r.kill_at = r.mem_at = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--watch")) {
			watch = true;
			continue;
		}
		if (!strcmp(a, "--no-calib")) {
			pp.calibrate = false;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "-m"))
			model = v;
		else if (!strcmp(a, "-p"))
			prompt = v;
		else if (!strcmp(a, "-n"))
			n = atoi(v);
		else if (!strcmp(a, "--queue"))
			queues = v;
		else if (!strcmp(a, "--devices"))
			devfile = v;
		else if (!strcmp(a, "--backend"))
			backend = v;
		else if (!strcmp(a, "--throttle-at"))
			r.throttle_at = atoi(v);
		else if (!strcmp(a, "--cooling")) {
			if (sscanf(v, "%u/%u", &cs, &cmax) != 2)
				usage();
		} else if (!strcmp(a, "--fail-after"))
			fail_after = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--copy-budget"))
			copy_budget = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--copy-budget-unplanned")) {
			copy_budget = strtoull(v, NULL, 0);
			unplanned = true;
		} else if (!strcmp(a, "--kill-agent-at"))
			r.kill_at = atoi(v);
		else if (!strcmp(a, "--agent-pid"))
			r.agent_pid = atoi(v);
		else if (!strcmp(a, "--sysfs"))
			r.sysfs = v;
		else if (!strcmp(a, "--threads"))
			threads = atoi(v);
		else if (!strcmp(a, "--margin"))
			pp.margin = atof(v);
		else if (!strcmp(a, "--save-calib"))
			save_calib = v;
		else if (!strcmp(a, "--inline-delay-us"))
			delay_us = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--device"))
			device = v;
		else if (!strcmp(a, "--weights"))
			weights = v;
		else if (!strcmp(a, "--weights-budget"))
			wbudget = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--force"))
			force = v;
		else if (!strcmp(a, "--dump-logits"))
			dump = v;
		else if (!strcmp(a, "--mem-at")) {
			unsigned long long av = 0;

			if (sscanf(v, "%d:%d:%llu", &r.mem_at, &r.mem_level,
				   &av) < 2)
				usage();
			r.mem_avail = av;
		} else if (!strcmp(a, "--draft"))
			draft = v;
		else if (!strcmp(a, "--draft-on"))
			draft_on = v;
		else if (!strcmp(a, "--draft-max"))
			draft_max = atoi(v);
		else if (!strcmp(a, "--kv-type"))
			kvt = !strcmp(v, "f32")	 ? EDGEQ_KV_F32 :
			      !strcmp(v, "q8_0") ? EDGEQ_KV_Q8_0 :
			      !strcmp(v, "f16")	 ? EDGEQ_KV_F16 :
						   (usage(), EDGEQ_KV_F16);
		else
			usage();
	}
	if (!model || n < 1 || n > 4000 || !force != !dump ||
	    (strcmp(draft_on, "target") && strcmp(draft_on, "draft") &&
	     strcmp(draft_on, "auto")))
		usage();
	n_profs = edgeq_devprofs_load(devfile, profs, 16, &err);
	if (n_profs < 0) {
		fprintf(stderr, "place-run: %s\n", err.msg);
		return 1;
	}
	edgeq_devices_init(&d,
			   edgeq_devprof_find(profs, (size_t)n_profs, "cpu"));
	if (queues && add_queues(&d, queues, profs, n_profs))
		return 2;
	r.npu = d.n > 1 ? 1 : 0;
	r.qname = d.n > 1 ? d.dev[1].name : NULL;
	edgeq_device_state_init(&r.throttle);
	r.throttle.cooling_state = cs;
	r.throttle.cooling_max = cmax;

	edgeq_model_params_init(&mp);
	mp.path = model;
	mp.n_threads = threads;
	if (weights && edgeq_weights_mode_parse(weights, &mp.weights)) {
		fprintf(stderr, "place-run: bad --weights %s\n", weights);
		return 2;
	}
	mp.weights_budget = wbudget;
	ret = edgeq_model_load(&mp, &m, &err);
	if (ret) {
		fprintf(stderr, "place-run: %s\n", err.msg);
		return 1;
	}
	edgeq_ctx_params_init(&cp);
	cp.n_ctx = 512;
	cp.kv_type = kvt;
	ret = edgeq_ctx_new(m, &cp, &c, &err);
	if (ret) {
		fprintf(stderr, "place-run: %s\n", err.msg);
		edgeq_model_free(m);
		return 1;
	}
	edgeq_gen_params_init(&gp);
	if (draft) {
		struct edgeq_model_params dp = mp;

		if (edgeq_draft_parse(draft, &gp.draft, &draft_path)) {
			fprintf(stderr, "place-run: bad --draft %s\n", draft);
			return 2;
		}
		gp.draft.max_len = draft_max;
		if (draft_path) {
			dp.path = draft_path;
			dp.weights_budget = 0;
			ret = edgeq_model_load(&dp, &dm, &err);
			if (!ret)
				ret = edgeq_ctx_new(dm, &cp, &dc, &err);
			if (ret) {
				fprintf(stderr, "place-run: --draft %s: %s\n",
					draft_path, err.msg);
				return 1;
			}
			gp.draft.model = dm;
			gp.draft.ctx = dc;
		}
	}
	/* the context the queues take: the target's, or the draft model's
	 * (auto: the one the placer predicts more tokens/s for) */
	pc = c;
	if (!strcmp(draft_on, "auto") && dm) {
		struct edgeq_place_shape ts, ds;

		if (edgeq_place_model_shape(m, &ts) ||
		    edgeq_place_model_shape(dm, &ds) ||
		    edgeq_place_draft_choice(&d, &ts, &ds, 0.75, draft_max,
					     &dch)) {
			fprintf(stderr,
				"place-run: the models cannot be priced\n");
			return 1;
		}
		chose = true;
		draft_on = dch.draft_on_device ? "draft" : "target";
	}
	if (!strcmp(draft_on, "draft")) {
		if (!dc) {
			fprintf(stderr,
				"place-run: --draft-on draft needs a draft model\n");
			return 2;
		}
		pc = dc;
	}
	if (!strcmp(backend, "inline")) {
		edgeq_place_backend_inline(&be, &inl);
		inl.fail_after = fail_after;
		inl.delay_ns = delay_us * 1000;
	} else if (!strcmp(backend, "kq")) {
		ret = place_kq_new(&d, &kqb, &be);
		if (ret) {
			fprintf(stderr, "place-run: kq backend: %s\n",
				strerror(-ret));
			goto fail;
		}
		edgeq_place_kq_set_copy_budget((struct edgeq_place_kq *)kqb,
					       copy_budget);
	} else if (!strcmp(backend, "vulkan") || !strcmp(backend, "cpudev")) {
		struct edgeq_place_dev_params dp = {
			.kind = backend[0] == 'v' ? "vulkan" : "cpu",
			.device = device,
			.fail_after = fail_after,
			.copy_budget = copy_budget,
		};

		ret = edgeq_place_dev_new(&dp, &pdev, &be, &err);
		if (ret) {
			fprintf(stderr, "place-run: %s\n", err.msg);
			ret = ret == -ENODEV || ret == -EPROTONOSUPPORT ? 77 :
									  1;
			edgeq_ctx_free(c);
			edgeq_model_free(m);
			return ret;
		}
	} else if (strcmp(backend, "none")) {
		usage();
	}
	if (strcmp(backend, "none")) {
		pp.dev_bytes = unplanned ? 0 : copy_budget;
		ret = edgeq_place_attach(pc, &d, &pp, &be, &r.x, &err);
		if (ret) {
			fprintf(stderr, "place-run: %s\n", err.msg);
			goto fail;
		}
		r.pl = edgeq_place_placer(r.x);
		if (watch) {
			ret = edgeq_pressure_new(NULL, &pm, &err);
			if (ret) {
				fprintf(stderr, "place-run: monitor: %s\n",
					err.msg);
				goto fail;
			}
			edgeq_place_watch(r.x, pm, r.sysfs);
		}
	} else {
		struct edgeq_place_backend none;

		/* all on the CPU: still a placer so stats have one shape */
		edgeq_place_backend_inline(&none, &inl);
		d.n = 1;
		edgeq_place_attach(pc, &d, NULL, &none, &r.x, &err);
		r.pl = edgeq_place_placer(r.x);
		r.npu = 0;
	}
	r.per = open_memstream(&perbuf, &perlen);
	gp.sampling.temp = 0;
	gp.prompt = prompt;
	gp.add_bos = true;
	gp.n_predict = n;
	if (force)
		ret = force_tokens(c, edgeq_model_info(m)->n_vocab, force, dump,
				   &r, &err);
	else
		ret = edgeq_generate(c, &gp, on_token, &r, &gs, &err);
	fclose(r.per);
	edgeq_place_stats(r.x, &st);
	if (save_calib) {
		struct edgeq_placer *pl = r.pl;
		int sr = edgeq_calib_save(edgeq_placer_calib(pl),
					  edgeq_placer_devices(pl),
					  edgeq_placer_chain(pl), save_calib);

		if (sr)
			fprintf(stderr, "place-run: %s: %s\n", save_calib,
				strerror(-sr));
	}
	if (pdev) {
		struct edgeq_backend_info bi;
		struct edgeq_stream_status ws;
		uint64_t wb;

		edgeq_place_dev_info(pdev, &bi, &wb);
		if (edgeq_model_weights_status(m, &ws))
			memset(&ws, 0, sizeof(ws));
		printf("{\"dev\": {\"device\": \"%s\", \"memory\": \"%s\", "
		       "\"device_bytes\": %llu, \"weight_copies\": %llu, "
		       "\"weights\": \"%s\", \"stream_reads\": %llu, "
		       "\"chains\": %llu, \"dispatches\": %llu, "
		       "\"copies_dropped\": %llu}, ",
		       bi.device, edgeq_backend_mem_name(bi.mem),
		       (unsigned long long)bi.device_bytes,
		       (unsigned long long)wb, edgeq_weights_mode_name(ws.mode),
		       (unsigned long long)ws.reads,
		       (unsigned long long)bi.chains,
		       (unsigned long long)bi.dispatches,
		       (unsigned long long)edgeq_place_dev_copies_dropped(
			       pdev));
	} else if (kqb) {
		uint64_t cb, cd;

		edgeq_place_kq_copies((struct edgeq_place_kq *)kqb, &cb, &cd);
		printf("{\"kq\": {\"weight_copies\": %llu, "
		       "\"copies_dropped\": %llu}, ",
		       (unsigned long long)cb, (unsigned long long)cd);
	} else {
		putchar('{');
	}
	printf("\"backend\": \"%s\", \"per_token\": [%s], \"stats\": "
	       "{\"tokens\": %llu, \"replans\": %llu, \"offloaded\": %llu, "
	       "\"fallbacks\": %llu, \"last_error\": %d, \"pressure_events\": "
	       "%llu, \"copy_refused\": %llu, \"copy_bound\": %llu, "
	       "\"copy_bound_changes\": %llu, \"prefill_blocks\": %llu, "
	       "\"blocks\": %llu, "
	       "\"block_chains\": %llu, \"blocks_off\": \"%s\", "
	       "\"monitor\": \"%s\", \"drafted\": %u, \"accepted\": %u, "
	       "\"draft_on\": \"%s\"}, ",
	       backend, perbuf ? perbuf : "", (unsigned long long)st.tokens,
	       (unsigned long long)st.replans, (unsigned long long)st.offloaded,
	       (unsigned long long)st.fallbacks, st.last_error,
	       (unsigned long long)st.pressure_events,
	       (unsigned long long)st.copy_refused,
	       (unsigned long long)st.copy_bound,
	       (unsigned long long)st.copy_bound_changes,
	       (unsigned long long)st.prefill_blocks,
	       (unsigned long long)st.blocks,
	       (unsigned long long)st.block_chains, st.blocks_off,
	       pm ? edgeq_pressure_source_name(edgeq_pressure_source(pm)) : "",
	       force || ret ? 0 : gs.n_drafted,
	       force || ret ? 0 : gs.n_accepted, draft ? draft_on : "");
	if (chose)
		printf("\"draft_choice\": {\"target_on_tok_s\": %.3f, "
		       "\"draft_on_tok_s\": %.3f, \"target_on_k\": %d, "
		       "\"draft_on_k\": %d, \"target_dev_ms\": %.6f, "
		       "\"target_cpu_ms\": %.6f, \"draft_dev_ms\": %.6f, "
		       "\"draft_cpu_ms\": %.6f}, ",
		       dch.rate_target_on, dch.rate_draft_on, dch.k_target_on,
		       dch.k_draft_on, dch.target_dev_ns / 1e6,
		       dch.target_cpu_ns / 1e6, dch.draft_dev_ns / 1e6,
		       dch.draft_cpu_ns / 1e6);
	printf("\"error\": ");
	if (ret)
		printf("\"%s\"}\n", err.msg);
	else
		printf("null}\n");
	free(perbuf);
	edgeq_place_detach(r.x);
	edgeq_place_dev_free(pdev);
	place_kq_free(kqb);
	edgeq_pressure_free(pm);
	edgeq_ctx_free(dc);
	edgeq_model_free(dm);
	edgeq_ctx_free(c);
	edgeq_model_free(m);
	return ret ? 1 : 0;

fail:
	edgeq_place_detach(r.x);
	place_kq_free(kqb);
	edgeq_ctx_free(c);
	edgeq_model_free(m);
	return 1;
}
