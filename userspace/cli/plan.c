// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq plan: the ledgers for a model on a device profile, before buying the
 * device: decode and prefill bounds, memory, load time, speculative decoding,
 * sustained speed against an SLO, and the routing table for a request mix.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <edgeq/ledger.h>
#include <edgeq/router.h>

#include "cli.h"

/* Placement's explanation (userspace/cli/plan_placement.c), when built in. */
extern int cli_plan_placement(int argc, char **argv) __attribute__((weak));

static const char *opt_model, *opt_params, *opt_profile = "local",
					   *opt_profiles, *opt_requests;
static double opt_bpw = 4.5, opt_kv_bytes = 2, opt_eff, opt_throttle;
static double opt_accept = 0.75, opt_draft_cost = 0.15, opt_slo;
static double opt_working_set = 0.3;
static int opt_ctx, opt_batch = 1, opt_draft = 4, opt_window = 32;
static int opt_prompt = 512, opt_gen = 256, opt_layers, opt_kv_heads,
	   opt_head_dim;
static double opt_priv_tps = 40, opt_priv_rtt = 0.3, opt_pub_tps = 80,
	      opt_pub_rtt = 0.5, opt_up_prefill = 2000;
static bool opt_json, opt_list, opt_placement, opt_no_private, opt_no_public;

static const struct cli_option plan_opts[] = {
	{ "model", 'm', CLI_STR, &opt_model, "FILE", "GGUF model to plan for" },
	{ "params", 0, CLI_RAW, &opt_params, "N",
	  "or: parameter count (7B, 1.1B, 8e9) ..." },
	{ "bpw", 0, CLI_DOUBLE, &opt_bpw, "B",
	  "... at B bits per weight incl. block scales (4.5)" },
	{ "profile", 'P', CLI_STR, &opt_profile, "NAME",
	  "device profile (local: this machine, measured)" },
	{ "profiles", 0, CLI_STR, &opt_profiles, "FILE",
	  "profiles file (share/edgeq/profiles.ini)" },
	{ "list", 'l', CLI_FLAG, &opt_list, NULL, "list the profiles" },
	{ "ctx", 'c', CLI_INT, &opt_ctx, "N",
	  "context length (4096, at most the model's)" },
	{ "batch", 'b', CLI_INT, &opt_batch, "N", "sequences at once (1)" },
	{ "kv-bytes", 0, CLI_DOUBLE, &opt_kv_bytes, "B",
	  "bytes per KV element (2 = F16, 1.0625 = Q8_0)" },
	{ "layers", 0, CLI_INT, &opt_layers, "N", "override: layers" },
	{ "kv-heads", 0, CLI_INT, &opt_kv_heads, "N", "override: KV heads" },
	{ "head-dim", 0, CLI_INT, &opt_head_dim, "N", "override: head size" },
	{ "efficiency", 'e', CLI_DOUBLE, &opt_eff, "E",
	  "bandwidth efficiency (the profile's, 0.85)" },
	{ "throttle", 0, CLI_DOUBLE, &opt_throttle, "F",
	  "sustained/peak factor (the profile's)" },
	{ "accept", 0, CLI_DOUBLE, &opt_accept, "A",
	  "speculative: acceptance rate (0.75)" },
	{ "draft", 0, CLI_INT, &opt_draft, "K",
	  "speculative: draft length (4)" },
	{ "draft-cost", 0, CLI_DOUBLE, &opt_draft_cost, "C",
	  "speculative: draft step cost / target step (0.15)" },
	{ "window", 0, CLI_INT, &opt_window, "PAGES",
	  "load: prefetch window (32)" },
	{ "working-set", 0, CLI_DOUBLE, &opt_working_set, "F",
	  "load: share of pages a session touches (0.3)" },
	{ "prompt-len", 0, CLI_INT, &opt_prompt, "N",
	  "SLO request: prompt tokens (512)" },
	{ "gen-len", 0, CLI_INT, &opt_gen, "N",
	  "SLO request: generated tokens (256)" },
	{ "slo", 0, CLI_DOUBLE, &opt_slo, "S", "SLO request: seconds (none)" },
	{ "requests", 'r', CLI_STR, &opt_requests, "FILE",
	  "routing: lines 'CLASS PROMPT GEN SLO_S [NAME]'" },
	{ "private-tps", 0, CLI_DOUBLE, &opt_priv_tps, "T",
	  "routing: private endpoint decode tok/s (40)" },
	{ "private-rtt", 0, CLI_DOUBLE, &opt_priv_rtt, "S",
	  "routing: private endpoint round trip (0.3)" },
	{ "public-tps", 0, CLI_DOUBLE, &opt_pub_tps, "T",
	  "routing: public endpoint decode tok/s (80)" },
	{ "public-rtt", 0, CLI_DOUBLE, &opt_pub_rtt, "S",
	  "routing: public endpoint round trip (0.5)" },
	{ "upstream-prefill", 0, CLI_DOUBLE, &opt_up_prefill, "T",
	  "routing: endpoints' prefill tok/s (2000)" },
	{ "no-private", 0, CLI_FLAG, &opt_no_private, NULL,
	  "routing: no private endpoint" },
	{ "no-public", 0, CLI_FLAG, &opt_no_public, NULL,
	  "routing: no public endpoint" },
	{ "placement", 0, CLI_FLAG, &opt_placement, NULL,
	  "explain the op placement for the model (placement part)" },
	{ "json", 0, CLI_FLAG, &opt_json, NULL, "print one JSON object" },
	CLI_OPTIONS_END
};

/* ---- routing: the privacy ledger over a request list ---- */

/* A request of the table and the router's decision for it. */
struct plan_req {
	enum edgeq_privacy cls;
	unsigned int prompt, gen;
	double slo;
	char name[48];
	struct edgeq_route_decision d;
	double route_s; /* estimated time where it goes */
};

static double upstream_s(const struct plan_req *r, double tps, double rtt)
{
	return rtt +
	       edgeq_ledger_request_s(r->prompt, r->gen, opt_up_prefill, tps);
}

/*
 * The daemon's decision (edgeq_router_decide: privacy filter, SLO at the
 * sustained speed, then cost) for an idle box at the planned speed.
 */
static int route_one(struct plan_req *r, double peak_prefill,
		     double peak_decode, double throttle)
{
	struct edgeq_router_config cfg = { .have_private = !opt_no_private,
					   .have_public = !opt_no_public };
	struct edgeq_router_capacity cap = { .peak_tok_s = peak_decode,
					     .throttle = throttle,
					     .prompt_tok_s = peak_prefill,
					     .slots = 1,
					     .queue_max = 1 };
	struct edgeq_route_request req = { .privacy = r->cls,
					   .prompt_tokens = r->prompt,
					   .max_tokens = r->gen,
					   .deadline_s = r->slo };
	int ret = edgeq_router_decide(&cfg, &cap, &req, &r->d);

	if (ret)
		return ret;
	switch (r->d.route) {
	case EDGEQ_ROUTE_PRIVATE:
		r->route_s = upstream_s(r, opt_priv_tps, opt_priv_rtt);
		break;
	case EDGEQ_ROUTE_PUBLIC:
		r->route_s = upstream_s(r, opt_pub_tps, opt_pub_rtt);
		break;
	default:
		r->route_s = r->d.local_s;
	}
	return 0;
}

static const struct plan_req default_reqs[] = {
	{ .cls = EDGEQ_PRIVACY_CONFIDENTIAL,
	  .prompt = 1024,
	  .gen = 256,
	  .slo = 10,
	  .name = "medical-record summary" },
	{ .cls = EDGEQ_PRIVACY_PUBLIC,
	  .prompt = 64,
	  .gen = 64,
	  .slo = 3,
	  .name = "public chat" },
	{ .cls = EDGEQ_PRIVACY_INTERNAL,
	  .prompt = 2048,
	  .gen = 256,
	  .slo = 10,
	  .name = "meeting notes" },
	{ .cls = EDGEQ_PRIVACY_PUBLIC,
	  .prompt = 256,
	  .gen = 768,
	  .slo = 120,
	  .name = "long continuation" },
};

static int load_requests(const char *path, struct plan_req *reqs, int max,
			 int *n)
{
	char line[256], cls[32];
	int count = 0, lineno = 0;
	FILE *f;

	if (!path) {
		memcpy(reqs, default_reqs, sizeof(default_reqs));
		*n = 4;
		return 0;
	}
	f = fopen(path, "re");
	if (!f)
		return cli_error(EXIT_FAIL, "plan", "%s: %s", path,
				 strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		struct plan_req *r = &reqs[count];
		int used = 0;

		lineno++;
		if (line[strspn(line, " \t")] == '#' ||
		    line[strspn(line, " \t\n")] == '\0')
			continue;
		if (count == max) {
			fclose(f);
			return cli_error(EXIT_USAGE, "plan",
					 "%s: more than %d requests", path,
					 max);
		}
		memset(r, 0, sizeof(*r));
		if (sscanf(line, "%31s %u %u %lf %n", cls, &r->prompt, &r->gen,
			   &r->slo, &used) < 4) {
			fclose(f);
			return cli_error(
				EXIT_USAGE, "plan",
				"%s:%d: expected 'CLASS PROMPT GEN SLO_S [NAME]'",
				path, lineno);
		}
		if (edgeq_privacy_parse(cls, &r->cls)) {
			fclose(f);
			return cli_error(
				EXIT_USAGE, "plan",
				"%s:%d: class '%s' is not confidential, internal or public",
				path, lineno, cls);
		}
		snprintf(r->name, sizeof(r->name), "%s", line + used);
		r->name[strcspn(r->name, "\n")] = '\0';
		count++;
	}
	fclose(f);
	*n = count;
	return 0;
}

/* ---- the command ---- */

static int parse_count(const char *s, uint64_t *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || !(v > 0))
		return -EINVAL;
	switch (*end) {
	case 'B':
	case 'b':
		v *= 1e9;
		end++;
		break;
	case 'M':
	case 'm':
		v *= 1e6;
		end++;
		break;
	case 'K':
	case 'k':
		v *= 1e3;
		end++;
		break;
	}
	if (*end || v > 1e15)
		return -EINVAL;
	*out = (uint64_t)llround(v);
	return 0;
}

#define GB(x) ((double)(x) / 1e9)
#define GIB(x) ((double)(x) / (double)(1ull << 30))
#define MIB(x) ((double)(x) / (double)(1ull << 20))

/*
 * The CPU kernels' expected stream (counted: tools/kcount) against the
 * memory's: the types whose kernels stream slower than mem_bw x efficiency
 * are bound by the CPU, and their decode bound above is too high.
 */
static void print_cpu_stream(const struct edgeq_profile *p, double eff)
{
	bool slower = false;

	if (!p->n_cpu_stream)
		return;
	printf("  CPU kernels' stream      ");
	for (unsigned int i = 0; i < p->n_cpu_stream; i++)
		printf("%s%s %.1f", i ? ", " : "", p->cpu_stream[i].type,
		       p->cpu_stream[i].bw / 1e9);
	printf(" GB/s (%d cores at %.2f GHz, counted)\n", p->cores, p->cpu_ghz);
	for (unsigned int i = 0; i < p->n_cpu_stream; i++) {
		if (p->cpu_stream[i].bw >= p->mem_bw * eff)
			continue;
		if (!slower)
			printf("  bound by the CPU, not memory, for:");
		printf(" %s (%.0f %%)", p->cpu_stream[i].type,
		       100.0 * p->cpu_stream[i].bw / (p->mem_bw * eff));
		slower = true;
	}
	if (slower)
		printf("\n");
}

static void print_human(const struct edgeq_profile *p,
			const struct edgeq_model_shape *s,
			const struct edgeq_plan_params *pp,
			const struct edgeq_plan *o, struct plan_req *reqs,
			int nreq)
{
	double eff = pp->efficiency > 0 ? pp->efficiency : p->efficiency;
	double thr = pp->throttle > 0 ? pp->throttle : p->throttle;

	bool big = s->n_params >= 100000000;

	printf("model    %s (%s): %.2f %s parameters, %.2f bits/weight, ",
	       s->name[0] ? s->name : "-", s->arch,
	       (double)s->n_params / (big ? 1e9 : 1e6), big ? "B" : "M",
	       s->bpw);
	if (big)
		printf("%.2f GB (%.2f GiB)\n", GB(s->weight_bytes),
		       GIB(s->weight_bytes));
	else
		printf("%.3f MB (%.3f MiB)\n", s->weight_bytes / 1e6,
		       MIB(s->weight_bytes));
	printf("device   %s: %s%s\n\n", p->name, p->desc,
	       p->measured ? " (measured)" : "");
	printf("bandwidth ledger  %.2f GB/s x %.2f efficiency\n",
	       p->mem_bw / 1e9, eff);
	printf("  weights read per token   %.2f GB\n", GB(s->token_bytes));
	printf("  KV per position          %.1f KiB (%u layers x 2 x %u KV heads x %u x %.4g B)\n",
	       o->kv_bytes_per_pos / 1024, s->n_layer, s->n_head_kv,
	       s->head_dim, pp->kv_elem_bytes);
	printf("  decode bound, position 0 %.2f tok/s\n",
	       edgeq_ledger_trunc2(o->decode_tps_empty));
	printf("  decode bound, ctx %-6u %.2f tok/s (%.2f GB per token)\n",
	       pp->ctx, edgeq_ledger_trunc2(o->decode_tps),
	       o->bytes_per_token / 1e9);
	printf("  prefill bound            %.2f tok/s (%.0f GFLOP/s, 2 FLOP per parameter)\n",
	       edgeq_ledger_trunc2(o->prefill_tps), p->compute / 1e9);
	print_cpu_stream(p, eff);
	printf("\n");
	printf("memory ledger  RAM %.2f GiB, %.2f GiB kept by the OS\n",
	       GIB(p->ram), GIB(p->reserved));
	printf("  weights    %9.1f MiB\n", MIB(o->weights));
	printf("  KV cache   %9.1f MiB (%u x %u x %u x 2 x %u x %u x %.4g B)\n",
	       MIB(o->kv), pp->batch, pp->ctx, s->n_layer, s->n_head_kv,
	       s->head_dim, pp->kv_elem_bytes);
	printf("  workspace  %9.1f MiB\n", MIB(o->workspace));
	printf("  runtime    %9.1f MiB\n", MIB(o->runtime));
	printf("  total      %9.1f MiB: %s\n", MIB(o->total),
	       o->fits ? "fits" : "does NOT fit");
	printf("  longest context that fits: %llu tokens%s\n\n",
	       (unsigned long long)o->max_ctx,
	       s->n_ctx_train && o->max_ctx > s->n_ctx_train ?
		       " (more than the model was trained for)" :
		       "");
	printf("load ledger  flash %.2f GB/s, %.0f us per fault, %u-byte pages\n",
	       p->flash_bw / 1e9, p->fault_latency * 1e6, p->page_size);
	printf("  full preload             %8.3f s\n", o->load.preload_s);
	printf("  on-demand faults         %8.3f s (%llu faults)\n",
	       o->load.on_demand_s, (unsigned long long)o->load.pages);
	printf("  prefetch window %-4u     %8.3f s\n", pp->window,
	       o->load.prefetch_s);
	printf("  working set %3.0f%%         %8.3f s\n\n",
	       pp->working_set * 100, o->load.partial_s);
	printf("speculative decoding  acceptance %.2f, draft %d, draft cost %.2f\n",
	       pp->accept, pp->draft_len, pp->draft_cost);
	printf("  %.2f tokens per step / cost %.2f = %.2fx: %.2f -> %.2f tok/s\n\n",
	       o->spec.expected_tokens, o->spec.cost, o->spec.speedup,
	       edgeq_ledger_trunc2(o->decode_tps),
	       edgeq_ledger_trunc2(o->spec_tps));
	printf("sustained  throttle %.2f: decode %.2f peak, %.2f sustained tok/s\n",
	       thr, edgeq_ledger_trunc2(o->decode_tps),
	       edgeq_ledger_trunc2(o->sustained_tps));
	printf("  request %u + %u tokens: %.2f s at peak, %.2f s sustained",
	       pp->prompt_len, pp->gen_len, o->req_peak_s, o->req_sustained_s);
	if (pp->slo_s > 0)
		printf("; SLO %.2f s %s", pp->slo_s,
		       o->slo_met_sustained ? "met" :
		       o->slo_met_peak ? "met at peak only, MISSED sustained" :
					 "MISSED");
	printf("\n\nrouting  (private %s, public %s)\n",
	       opt_no_private ? "none" : "configured",
	       opt_no_public ? "none" : "configured");
	printf("  %-24s %-12s %6s %5s %7s %8s  %-7s %8s  %s\n", "request",
	       "class", "prompt", "gen", "SLO s", "box s", "route", "route s",
	       "why");
	for (int i = 0; i < nreq; i++) {
		struct plan_req *r = &reqs[i];

		printf("  %-24.24s %-12s %6u %5u %7.2f %8.2f  %-7s %8.2f  %s\n",
		       r->name[0] ? r->name : "-", edgeq_privacy_name(r->cls),
		       r->prompt, r->gen, r->slo, r->d.local_s,
		       edgeq_route_name(r->d.route), r->route_s,
		       edgeq_route_reason_text(r->d.reason));
	}
}

static json_t *plan_json(const struct edgeq_profile *p,
			 const struct edgeq_model_shape *s,
			 const struct edgeq_plan_params *pp,
			 const struct edgeq_plan *o, struct plan_req *reqs,
			 int nreq)
{
	json_t *routes = json_array(), *j;

	for (int i = 0; i < nreq; i++)
		json_array_append_new(
			routes,
			json_pack(
				"{s:s, s:s, s:i, s:i, s:f, s:f, s:s, s:f, s:b, s:s}",
				"name", reqs[i].name, "class",
				edgeq_privacy_name(reqs[i].cls), "prompt",
				(int)reqs[i].prompt, "gen", (int)reqs[i].gen,
				"slo_s", reqs[i].slo, "local_s",
				reqs[i].d.local_s, "route",
				edgeq_route_name(reqs[i].d.route), "route_s",
				reqs[i].route_s, "slo_feasible_local",
				reqs[i].d.slo_feasible, "reason",
				edgeq_route_reason_name(reqs[i].d.reason)));
	j = json_pack(
		"{s:{s:s, s:s, s:s, s:f, s:f, s:I, s:I, s:f, s:f, s:f, s:f, s:i, s:b},"
		" s:{s:s, s:s, s:I, s:f, s:I, s:I, s:i, s:i, s:i, s:i, s:i},"
		" s:{s:f, s:f, s:f, s:f, s:f, s:i},"
		" s:{s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:I},"
		" s:{s:f, s:f, s:f, s:f, s:I, s:i, s:f},"
		" s:{s:f, s:i, s:f, s:f, s:f, s:f, s:f},"
		" s:{s:f, s:f, s:f, s:i, s:i, s:f, s:f, s:f, s:b, s:b},"
		" s:o}",
		"profile", "name", p->name, "desc", p->desc, "family",
		p->family, "mem_bw", p->mem_bw, "efficiency",
		pp->efficiency > 0 ? pp->efficiency : p->efficiency, "ram",
		(json_int_t)p->ram, "reserved", (json_int_t)p->reserved,
		"flash_bw", p->flash_bw, "fault_latency_s", p->fault_latency,
		"compute_flops", p->compute, "throttle", p->throttle, "cores",
		p->cores, "measured", p->measured, "model", "arch", s->arch,
		"name", s->name, "params", (json_int_t)s->n_params, "bpw",
		s->bpw, "weight_bytes", (json_int_t)s->weight_bytes,
		"token_bytes", (json_int_t)s->token_bytes, "layers",
		(int)s->n_layer, "kv_heads", (int)s->n_head_kv, "head_dim",
		(int)s->head_dim, "ctx_train", (int)s->n_ctx_train, "vocab",
		(int)s->n_vocab, "bandwidth", "bytes_per_token",
		o->bytes_per_token, "kv_bytes_per_pos", o->kv_bytes_per_pos,
		"decode_tps", o->decode_tps, "decode_tps_pos0",
		o->decode_tps_empty, "prefill_tps", o->prefill_tps, "ctx",
		(int)pp->ctx, "memory", "weights", (json_int_t)o->weights, "kv",
		(json_int_t)o->kv, "workspace", (json_int_t)o->workspace,
		"runtime", (json_int_t)o->runtime, "total",
		(json_int_t)o->total, "available",
		(json_int_t)(p->ram > p->reserved ? p->ram - p->reserved : 0),
		"fits", o->fits, "max_ctx", (json_int_t)o->max_ctx, "load",
		"preload_s", o->load.preload_s, "on_demand_s",
		o->load.on_demand_s, "prefetch_s", o->load.prefetch_s,
		"partial_s", o->load.partial_s, "pages",
		(json_int_t)o->load.pages, "window", (int)pp->window,
		"working_set", pp->working_set, "speculative", "accept",
		pp->accept, "draft_len", pp->draft_len, "draft_cost",
		pp->draft_cost, "expected_tokens", o->spec.expected_tokens,
		"cost", o->spec.cost, "speedup", o->spec.speedup, "tps",
		o->spec_tps, "sustained", "peak_tps", o->decode_tps,
		"sustained_tps", o->sustained_tps, "throttle",
		pp->throttle > 0 ? pp->throttle : p->throttle, "prompt_len",
		(int)pp->prompt_len, "gen_len", (int)pp->gen_len, "slo_s",
		pp->slo_s, "peak_s", o->req_peak_s, "sustained_s",
		o->req_sustained_s, "slo_met_peak", o->slo_met_peak,
		"slo_met_sustained", o->slo_met_sustained, "routing", routes);
	if (j && p->n_cpu_stream) {
		json_t *cs = json_object(), *pj = json_object_get(j, "profile");

		for (unsigned int i = 0; i < p->n_cpu_stream; i++)
			json_object_set_new(cs, p->cpu_stream[i].type,
					    json_real(p->cpu_stream[i].bw));
		json_object_set_new(pj, "cpu_stream", cs);
		json_object_set_new(pj, "cpu_ghz", json_real(p->cpu_ghz));
	}
	return j;
}

static int cmd_plan(int argc, char **argv)
{
	const struct cli_command *self = cli_find("plan");
	struct edgeq_model_shape shape;
	struct edgeq_plan_params pp;
	struct edgeq_profile prof;
	struct edgeq_error err = { 0 };
	struct edgeq_plan out;
	struct plan_req reqs[64];
	int first, ret, nreq = 0;
	uint64_t nparams;

	/* placement has options of its own (see 'edgeq plan --placement
	 * --help'): hand over before parsing the ledgers' */
	for (int i = 1; i < argc && cli_plan_placement; i++)
		if (!strcmp(argv[i], "--placement"))
			return cli_plan_placement(argc, argv);
	ret = cli_parse(self, argc, argv, &first);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (first < argc)
		return cli_error(EXIT_USAGE, "plan", "unexpected argument '%s'",
				 argv[first]);
	if (opt_list) {
		char names[512];

		ret = edgeq_profile_list(opt_profiles, names, sizeof(names),
					 &err);
		if (ret)
			return cli_error(cli_exit_for(ret), "plan", "%s",
					 err.msg);
		printf("%s\n", names);
		return EXIT_OK;
	}
	if (opt_placement) {
		if (!cli_plan_placement)
			return cli_error(
				EXIT_UNAVAIL, "plan",
				"--placement: this edgeq was built without the placement planner");
		return cli_plan_placement(argc, argv);
	}
	if (!opt_model == !opt_params)
		return cli_error(
			EXIT_USAGE, "plan",
			"give a model: -m FILE, or --params N [--bpw B]");
	if (opt_ctx < 0 || opt_batch < 1 || opt_draft < 0 || opt_window < 1 ||
	    opt_prompt < 0 || opt_gen < 0 || !(opt_bpw > 0) || opt_bpw > 64 ||
	    !(opt_kv_bytes > 0) || opt_accept < 0 || opt_accept > 1 ||
	    opt_draft_cost < 0 || opt_eff < 0 || opt_eff > 1 ||
	    opt_throttle < 0 || opt_throttle > 1 || opt_working_set < 0 ||
	    opt_working_set > 1)
		return cli_error(
			EXIT_USAGE, "plan",
			"a value is out of range (see 'edgeq help plan')");
	if (opt_params) {
		if (parse_count(opt_params, &nparams))
			return cli_error(
				EXIT_USAGE, "plan",
				"--params '%s': expected a count such as 7B, 1.1B or 8e9",
				opt_params);
		edgeq_shape_from_params(&shape, nparams, opt_bpw);
	} else {
		ret = edgeq_shape_from_gguf(opt_model, &shape, &err);
		if (ret)
			return cli_error(cli_exit_for(ret), "plan", "%s",
					 err.msg);
	}
	if (opt_layers > 0)
		shape.n_layer = (uint32_t)opt_layers;
	if (opt_kv_heads > 0)
		shape.n_head_kv = (uint32_t)opt_kv_heads;
	if (opt_head_dim > 0)
		shape.head_dim = (uint32_t)opt_head_dim;

	ret = edgeq_profile_load(opt_profiles, opt_profile, &prof, &err);
	if (!ret && !strcmp(opt_profile, "local"))
		ret = edgeq_profile_local(&prof, opt_model, &err);
	if (ret)
		return cli_error(cli_exit_for(ret), "plan", "%s", err.msg);

	edgeq_plan_params_init(&pp);
	if (opt_ctx)
		pp.ctx = (uint32_t)opt_ctx;
	else if (shape.n_ctx_train && shape.n_ctx_train < pp.ctx)
		pp.ctx = shape.n_ctx_train;
	pp.batch = (uint32_t)opt_batch;
	pp.kv_elem_bytes = opt_kv_bytes;
	pp.efficiency = opt_eff;
	pp.throttle = opt_throttle;
	pp.accept = opt_accept;
	pp.draft_len = opt_draft;
	pp.draft_cost = opt_draft_cost;
	pp.prompt_len = (uint32_t)opt_prompt;
	pp.gen_len = (uint32_t)opt_gen;
	pp.slo_s = opt_slo;
	pp.window = (uint32_t)opt_window;
	pp.working_set = opt_working_set;
	ret = edgeq_plan_compute(&prof, &shape, &pp, &out, &err);
	if (ret)
		return cli_error(cli_exit_for(ret), "plan", "%s", err.msg);

	ret = load_requests(opt_requests, reqs, 64, &nreq);
	if (ret)
		return ret;
	for (int i = 0; i < nreq; i++)
		if (route_one(&reqs[i], out.prefill_tps, out.decode_tps,
			      pp.throttle > 0 ? pp.throttle : prof.throttle))
			return cli_error(EXIT_FAIL, "plan",
					 "routing request %d failed", i + 1);

	if (opt_json) {
		json_t *j = plan_json(&prof, &shape, &pp, &out, reqs, nreq);

		if (!j)
			return cli_error(EXIT_FAIL, "plan",
					 "JSON output failed");
		json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
		putchar('\n');
		json_decref(j);
	} else {
		print_human(&prof, &shape, &pp, &out, reqs, nreq);
	}
	return EXIT_OK;
}

EDGEQ_COMMAND(
	plan, "the ledgers for a model on a device, before deploying",
	"usage: edgeq plan (-m MODEL | --params N [--bpw B]) [-P PROFILE] [options]\n"
	"       edgeq plan --list\n"
	"       edgeq plan -m MODEL --placement\n\n"
	"Computes the bandwidth ledger (decode bound = bandwidth x efficiency /\n"
	"bytes per token; prefill bound), the memory ledger (weights + KV cache\n"
	"+ workspace + runtime against RAM, longest context that fits), load\n"
	"time from flash (preload, on-demand faults, prefetch window, partial\n"
	"working set), speculative decoding (geometric model), sustained speed\n"
	"against an SLO, and the privacy routing table for a request list.\n"
	"tok/s bounds are printed truncated to two decimals. Formulas:\n"
	"Documentation/ledgers.rst. Profiles: share/edgeq/profiles.ini; `local`\n"
	"is measured on this machine.",
	plan_opts, cmd_plan);
