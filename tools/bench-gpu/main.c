// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-gpu: decode and prompt tok/s of one model with its decode steps on
 * the CPU, on the Vulkan backend in this process (whole blocks as one
 * submission a step, and op by op: the matrix products only), on the CPU
 * kernels through the backend interface (the op boundary without a
 * device), and,
 * with --queue, through an edgeq.ko queue to whatever agent serves it;
 * each row against the CPU-only row measured in the same run, plus what
 * each step and each offloaded op costs over the CPU-only run.
 *
 *   bench-gpu -m MODEL [-n GEN] [-p PROMPT_TOKENS] [-r REPS] [-t THREADS]
 *             [--device N|NAME] [--queue NAME]
 *
 * Where blocks chain (the vulkan, cpu via backend and kq rows) the prompt's
 * batches go to the device as whole blocks too, so their prompt column is
 * the device's; the per-op row prefills on the CPU (Documentation/
 * placement.rst). The machine's load average is printed with the table:
 * figures from a loaded machine are not clean.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/backend.h>
#include <edgeq/engine.h>
#include <edgeq/placement.h>

enum mode { M_CPU, M_VULKAN, M_VULKAN_OPS, M_CPUDEV, M_KQ, M_N };
static const char *const mode_names[M_N] = { "cpu only", "vulkan",
					     "vulkan, per op",
					     "cpu via backend", "kq queue" };

struct result {
	double pp, tg;	  /* tok/s, best of the reps */
	double ops_step;  /* offloaded ops per decode step */
	double subs_step; /* device submissions per decode step */
	bool ran;
	char what[640];
};

static int on_token(void *user, int32_t tok, const char *piece, size_t len)
{
	return 0;
}

/* One generation in @mode; 0 or -errno (then @r->what says why). */
static int run_once(struct edgeq_model *m, enum mode mode, const char *device,
		    const char *queue, const char *prompt, int gen,
		    struct result *r)
{
	struct edgeq_device_profile gpu = { .name = "gpu",
					    .ops_mask = ~0ULL,
					    .dtype_mask = ~0ULL,
					    .gflops = 1e6,
					    .mem_gbs = 1e4 };
	struct edgeq_place_dev_params dp = { .device = device };
	const struct edgeq_device_profile *cpu;
	struct edgeq_device_profile profs[16];
	struct edgeq_place_exec *x = NULL;
	struct edgeq_place_backend be;
	struct edgeq_place_dev *pd = NULL;
	struct edgeq_place_kq *kq = NULL;
	struct edgeq_placer_params pp;
	struct edgeq_place_stats st;
	struct edgeq_ctx_params cp;
	struct edgeq_gen_params gp;
	struct edgeq_gen_stats gs;
	struct edgeq_error err = { 0 };
	struct edgeq_devices d;
	struct edgeq_ctx *c;
	int ret, n;

	n = edgeq_devprofs_load(NULL, profs, 16, &err);
	cpu = n > 0 ? edgeq_devprof_find(profs, (size_t)n, "cpu") : NULL;
	edgeq_devices_init(&d, cpu);
	edgeq_ctx_params_init(&cp);
	cp.n_ctx = 1024;
	ret = edgeq_ctx_new(m, &cp, &c, &err);
	if (ret) {
		snprintf(r->what, sizeof(r->what), "%s", err.msg);
		return ret;
	}
	edgeq_placer_params_init(&pp);
	pp.calibrate = false;
	if (mode != M_CPU) {
		/* per op: the matrix products only, the rest and the
		 * boundaries of a block on the CPU */
		if (mode == M_VULKAN_OPS)
			gpu.ops_mask = 1u << EDGEQ_OPK_MATMUL;
		edgeq_devices_add(&d, mode == M_KQ ? queue : "gpu0", &gpu);
		if (mode == M_KQ) {
			ret = edgeq_place_kq_new(&d, &kq, &be, &err);
		} else {
			dp.kind = mode == M_CPUDEV ? "cpu" : "vulkan";
			ret = edgeq_place_dev_new(&dp, &pd, &be, &err);
		}
		if (!ret)
			ret = edgeq_place_attach(c, &d, &pp, &be, &x, &err);
		if (ret) {
			snprintf(r->what, sizeof(r->what), "%s", err.msg);
			goto out;
		}
	}
	edgeq_sampler_params_init(&gp.sampling);
	gp.sampling.temp = 0;
	gp.prompt = prompt;
	gp.add_bos = true;
	gp.n_predict = gen;
	ret = edgeq_generate(c, &gp, on_token, NULL, &gs, &err);
	if (ret) {
		snprintf(r->what, sizeof(r->what), "%s", err.msg);
		goto out;
	}
	if (gs.prompt_ns && gs.n_prompt / (gs.prompt_ns / 1e9) > r->pp)
		r->pp = gs.n_prompt / (gs.prompt_ns / 1e9);
	if (gs.decode_ns && gs.n_eval / (gs.decode_ns / 1e9) > r->tg)
		r->tg = gs.n_eval / (gs.decode_ns / 1e9);
	if (x) {
		edgeq_place_stats(x, &st);
		r->ops_step = st.tokens ? (double)st.offloaded / st.tokens : 0;
		if (st.fallbacks)
			snprintf(r->what, sizeof(r->what),
				 "%llu ops fell back to the CPU",
				 (unsigned long long)st.fallbacks);
	}
	if (pd && !r->what[0]) {
		struct edgeq_backend_info bi;

		edgeq_place_dev_info(pd, &bi, NULL);
		r->subs_step = st.tokens ? (double)bi.chains / st.tokens : 0;
		snprintf(r->what, sizeof(r->what), "%s, memory %s", bi.device,
			 edgeq_backend_mem_name(bi.mem));
	}
	r->ran = true;
out:
	edgeq_place_detach(x);
	edgeq_place_dev_free(pd);
	edgeq_place_kq_free(kq);
	edgeq_ctx_free(c);
	return ret;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench-gpu -m MODEL [-n GEN] [-p PROMPT_TOKENS] "
			"[-r REPS] [-t THREADS] [--device N|NAME] "
			"[--queue NAME]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *model = NULL, *device = NULL, *queue = NULL;
	int gen = 64, plen = 32, reps = 3, threads = 1;
	struct result res[M_N] = { 0 };
	struct edgeq_model_params mp;
	struct edgeq_error err = { 0 };
	struct edgeq_model *m;
	double load[3] = { 0 };
	char *prompt;
	FILE *f;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		i++;
		if (!strcmp(a, "-m"))
			model = v;
		else if (!strcmp(a, "-n"))
			gen = atoi(v);
		else if (!strcmp(a, "-p"))
			plen = atoi(v);
		else if (!strcmp(a, "-r"))
			reps = atoi(v);
		else if (!strcmp(a, "-t"))
			threads = atoi(v);
		else if (!strcmp(a, "--device"))
			device = v;
		else if (!strcmp(a, "--queue"))
			queue = v;
		else
			usage();
	}
	if (!model || gen < 1 || plen < 1 || plen > 512 || reps < 1)
		usage();
	/* a prompt of about plen tokens: one word per token */
	prompt = calloc((size_t)plen, 6);
	if (!prompt)
		return 1;
	for (int i = 0; i < plen; i++)
		strcat(prompt, i ? " once" : "Once");
	edgeq_model_params_init(&mp);
	mp.path = model;
	mp.n_threads = threads;
	if (edgeq_model_load(&mp, &m, &err)) {
		fprintf(stderr, "bench-gpu: %s\n", err.msg);
		return 1;
	}
	for (int rep = 0; rep < reps; rep++)
		for (int k = 0; k < M_N; k++) {
			if (k == M_KQ && !queue)
				continue;
			if (run_once(m, (enum mode)k, device, queue, prompt,
				     gen, &res[k]) &&
			    rep == 0)
				fprintf(stderr, "bench-gpu: %s: %s\n",
					mode_names[k], res[k].what);
		}
	f = fopen("/proc/loadavg", "re");
	if (f) {
		if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
			load[0] = -1;
		fclose(f);
	}
	printf("model %s, %d threads, pp%d tg%d, best of %d; load average "
	       "%.2f %.2f %.2f\n",
	       model, threads, plen, gen, reps, load[0], load[1], load[2]);
	printf("%-16s %10s %10s %8s %9s %9s %12s %12s  %s\n", "decode on",
	       "pp tok/s", "tg tok/s", "tg x cpu", "ops/step", "subm/step",
	       "+us/step", "+us/op", "device");
	for (int k = 0; k < M_N; k++) {
		const struct result *r = &res[k];
		double extra;

		if (!r->ran)
			continue;
		extra = r->tg && res[0].tg ? 1e6 / r->tg - 1e6 / res[0].tg : 0;
		printf("%-16s %10.1f %10.1f %8.3f %9.1f %9.1f %12.1f %12.2f  %s\n",
		       mode_names[k], r->pp, r->tg,
		       res[0].tg ? r->tg / res[0].tg : 0, r->ops_step,
		       r->subs_step, k ? extra : 0,
		       k && r->ops_step ? extra / r->ops_step : 0,
		       k ? r->what : "");
	}
	edgeq_model_free(m);
	free(prompt);
	return 0;
}
