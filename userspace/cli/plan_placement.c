// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `edgeq plan -m MODEL --placement`: explain the placement of a decode step.
 *
 * plan.c (the ledgers) owns `edgeq plan` and hands over to
 * cli_plan_placement() with its argv. Options of the ledgers that do not
 * concern placement are skipped here; placement's own options are also read
 * from EDGEQ_* variables.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <edgeq/placement.h>

#include "cli.h"
#include "plan_placement.h"

static const char *opt_model, *opt_devices, *opt_queues, *opt_map,
	*opt_sysfs = EDGEQ_SYSFS_CLASS, *opt_calib, *opt_cooling, *opt_lost,
	*opt_shape, *opt_wtype;
static bool opt_json, opt_placement, opt_all_ops;
static int opt_ctx = 512;

static const struct cli_option placement_opts[] = {
	{ "model", 'm', CLI_STR, &opt_model, "FILE", "GGUF model to place" },
	{ "placement", 0, CLI_FLAG, &opt_placement, NULL,
	  "explain the op placement (this)" },
	{ "shape", 0, CLI_STR, &opt_shape, "NAME",
	  "or: a built-in shape (tiny, 1b) instead of a model" },
	{ "wtype", 0, CLI_STR, &opt_wtype, "TYPE",
	  "weight type for --shape (q4_0)" },
	{ "ctx", 'c', CLI_INT, &opt_ctx, "N",
	  "context position the step attends to (512)" },
	{ "devices", 0, CLI_STR, &opt_devices, "FILE",
	  "device profiles (share/edgeq/devices.ini)" },
	{ "queue", 0, CLI_STR, &opt_queues, "NAME[=PROFILE],...",
	  "plan for these queues too (without the module)" },
	{ "device-map", 0, CLI_STR, &opt_map, "NAME=PROFILE,...",
	  "profile of each queue (default: name without digits)" },
	{ "sysfs", 0, CLI_STR, &opt_sysfs, "DIR",
	  "where the module's queues are (/sys/class/edgeq)" },
	{ "cooling", 0, CLI_STR, &opt_cooling, "NAME=S/MAX,...",
	  "what-if: cooling state of a queue" },
	{ "lost", 0, CLI_STR, &opt_lost, "NAME,...",
	  "what-if: these queues have lost their agent" },
	{ "calib", 0, CLI_STR, &opt_calib, "FILE",
	  "calibration from a run: show predicted against measured" },
	{ "all-ops", 0, CLI_FLAG, &opt_all_ops, NULL,
	  "list every op, not one line per op of a layer" },
	{ "json", 0, CLI_FLAG, &opt_json, NULL, "print one JSON object" },
	CLI_OPTIONS_END
};

static const struct cli_command placement_cmd = {
	"plan",
	"explain the placement of a decode step",
	"usage: edgeq plan (-m MODEL | --shape NAME) --placement [options]\n\n"
	"Shows which device runs each op of one decode step, the predicted\n"
	"step time per device, and the fallback tax (the share of the step\n"
	"spent handing data between devices), against naive op-by-op fallback\n"
	"and an all-CPU step. Devices: the CPU and each edgeq queue (from the\n"
	"module, or --queue). With --calib, predicted and measured op times\n"
	"side by side. Cost model: Documentation/placement.rst.",
	NULL,
	placement_opts,
};

static const struct cli_option *find_opt(const struct cli_option *opts,
					 const char *arg)
{
	const struct cli_option *o;

	if (!opts)
		return NULL;
	for (o = opts; o->name; o++) {
		size_t n = strlen(o->name);

		if (arg[1] == '-' && !strncmp(arg + 2, o->name, n) &&
		    (arg[2 + n] == '\0' || arg[2 + n] == '='))
			return o;
		if (arg[1] != '-' && o->short_name && arg[1] == o->short_name)
			return o;
	}
	return NULL;
}

/*
 * Keep the arguments that are placement's, drop the ledgers' options (plan.c
 * has already checked them), keep anything else so cli_parse names it.
 */
static int filter_args(int argc, char **argv, char **out)
{
	const struct cli_command *plan = cli_find("plan");
	const struct cli_option *theirs = plan ? plan->options : NULL;
	int n = 0;

	out[n++] = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const struct cli_option *o;
		bool takes_value;

		if (a[0] != '-' || !a[1] || !strcmp(a, "--")) {
			out[n++] = argv[i];
			continue;
		}
		o = find_opt(placement_opts, a);
		takes_value = false;
		if (!o && (o = find_opt(theirs, a))) {
			takes_value = o->type != CLI_FLAG && !strchr(a, '=') &&
				      (a[1] == '-' || !a[2]);
			if (takes_value && i + 1 < argc)
				i++;
			continue;
		}
		out[n++] = argv[i];
		takes_value = o && o->type != CLI_FLAG && !strchr(a, '=') &&
			      (a[1] == '-' || !a[2]);
		if (takes_value && i + 1 < argc)
			out[n++] = argv[++i];
	}
	out[n] = NULL;
	return n;
}

/* Built-in shapes for planning without a model file. */
static int builtin_shape(const char *name, struct edgeq_place_shape *s)
{
	memset(s, 0, sizeof(*s));
	s->kvtype = 1; /* f16 */
	if (!strcmp(name, "1b")) {
		/* the decoder's ~1B synthetic model */
		s->n_layer = 16;
		s->n_embd = 2048;
		s->n_ff = 8192;
		s->n_head = 32;
		s->n_head_kv = 8;
		s->n_vocab = 32000;
	} else if (!strcmp(name, "tiny")) {
		s->n_layer = 2;
		s->n_embd = 64;
		s->n_ff = 192;
		s->n_head = 4;
		s->n_head_kv = 2;
		s->n_vocab = 512;
	} else {
		return -ENOENT;
	}
	s->head_dim = s->n_embd / s->n_head;
	return 0;
}

int plan_placement_add_queues(struct edgeq_devices *d, const char *list,
			      const struct edgeq_device_profile *profs,
			      size_t n_profs, const char *cmd, const char *opt,
			      const char *sysfs)
{
	char buf[512], *save = NULL, *tok;

	if (strlen(list) >= sizeof(buf))
		return cli_error(EXIT_USAGE, cmd, "%s: too long", opt);
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		const struct edgeq_device_profile *p;
		char *eq = strchr(tok, '='), pname[EDGEQ_DEV_NAME_MAX], *e;
		int k;

		snprintf(pname, sizeof(pname), "%s", eq ? eq + 1 : tok);
		if (eq) {
			*eq = '\0';
		} else {
			for (e = pname + strlen(pname);
			     e > pname && e[-1] >= '0' && e[-1] <= '9'; e--)
				;
			*e = '\0';
		}
		p = edgeq_devprof_find(profs, n_profs, pname);
		if (!p)
			return cli_error(EXIT_USAGE, cmd,
					 "%s %s: no device profile '%s' "
					 "(share/edgeq/devices.ini)",
					 opt, tok, pname);
		k = edgeq_devices_add(d, tok, p);
		if (k == -EEXIST)
			continue;
		if (k < 0)
			return cli_error(EXIT_USAGE, cmd, "%s %s: %s", opt, tok,
					 strerror(-k));
		if (sysfs && edgeq_device_read_state(
				     sysfs, tok, &d->dev[k].state) == -ENOENT)
			return cli_error(EXIT_UNAVAIL, cmd,
					 "%s %s: no such queue (is edgeq.ko "
					 "loaded and the queue created?)",
					 opt, tok);
	}
	return 0;
}

static int apply_whatif(struct edgeq_devices *d)
{
	char buf[512], *save = NULL, *tok;

	if (opt_cooling) {
		if (strlen(opt_cooling) >= sizeof(buf))
			return cli_error(EXIT_USAGE, "plan",
					 "--cooling: too long");
		strcpy(buf, opt_cooling);
		for (tok = strtok_r(buf, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(tok, '=');
			unsigned s, m;
			int k;

			if (!eq || sscanf(eq + 1, "%u/%u", &s, &m) != 2 || !m ||
			    s > m)
				return cli_error(
					EXIT_USAGE, "plan",
					"--cooling '%s': expected NAME=STATE/MAX",
					tok);
			*eq = '\0';
			k = edgeq_devices_find(d, tok);
			if (k < 0)
				return cli_error(EXIT_USAGE, "plan",
						 "--cooling: no device '%s'",
						 tok);
			d->dev[k].state.cooling_state = s;
			d->dev[k].state.cooling_max = m;
		}
	}
	if (opt_lost) {
		save = NULL;
		if (strlen(opt_lost) >= sizeof(buf))
			return cli_error(EXIT_USAGE, "plan",
					 "--lost: too long");
		strcpy(buf, opt_lost);
		for (tok = strtok_r(buf, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			int k = edgeq_devices_find(d, tok);

			if (k <= 0)
				return cli_error(EXIT_USAGE, "plan",
						 "--lost: no queue '%s'", tok);
			d->dev[k].state.agent_alive = false;
		}
	}
	return 0;
}

static void fmt_ns(char *buf, size_t len, double ns)
{
	if (!isfinite(ns))
		snprintf(buf, len, "-");
	else if (ns >= 1e6)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else
		snprintf(buf, len, "%.0f ns", ns);
}

struct explain {
	const char *what;
	struct edgeq_place_shape shape;
	struct edgeq_devices devs;
	struct edgeq_op_chain chain;
	struct edgeq_calib cal;
	bool have_calib;
	const char *calibration; /* the measured profiles laid over, or NULL */
	struct edgeq_placement opt, naive, cpu;
	double planner_ns;
};

/* Devices that op base @b runs on across the layers, as text. */
static void where(const struct explain *x, size_t b, char *buf, size_t len)
{
	int first_layer[EDGEQ_MAX_DEVICES], last_layer[EDGEQ_MAX_DEVICES];
	size_t used = 0, devs = 0;

	for (size_t k = 0; k < EDGEQ_MAX_DEVICES; k++)
		first_layer[k] = last_layer[k] = -2;
	for (size_t i = 0; i < x->chain.n; i++) {
		int dv = x->opt.dev[i], l = x->chain.ops[i].layer;

		if (x->chain.ops[i].base != b)
			continue;
		if (first_layer[dv] == -2)
			first_layer[dv] = l;
		last_layer[dv] = l;
	}
	buf[0] = '\0';
	for (size_t k = 0; k < x->devs.n; k++)
		devs += first_layer[k] != -2;
	for (size_t k = 0; k < x->devs.n && used < len; k++) {
		if (first_layer[k] == -2)
			continue;
		if (devs == 1)
			used += (size_t)snprintf(buf + used, len - used, "%s",
						 x->devs.dev[k].name);
		else
			used += (size_t)snprintf(buf + used, len - used,
						 "%s%s(L%d-%d)",
						 used ? " " : "",
						 x->devs.dev[k].name,
						 first_layer[k], last_layer[k]);
	}
}

static void print_human(const struct explain *x)
{
	const struct edgeq_placement *p = &x->opt;
	char a[32], b[32], c[32];

	printf("placement of one decode step: %s, %u layers, %s weights, "
	       "context %u\n\n",
	       x->what, x->shape.n_layer, edgeq_dtype_name(x->shape.wtype),
	       x->shape.n_kv);
	printf("devices:\n");
	for (size_t k = 0; k < x->devs.n; k++) {
		const struct edgeq_device *d = &x->devs.dev[k];

		printf("  %-8s profile %-6s capacity %.2f  (%g GF/s, %g GB/s)%s",
		       d->name, d->prof.name, edgeq_device_capacity(&d->state),
		       d->prof.gflops, d->prof.mem_gbs,
		       d->state.agent_alive ? "" : "  agent lost");
		if (d->state.cooling_max)
			printf("  cooling %u/%u", d->state.cooling_state,
			       d->state.cooling_max);
		putchar('\n');
	}
	printf("  cpu profile: %s%s\n",
	       x->calibration ? "measured, " :
				"configured (no edgeq calibrate)",
	       x->calibration ? x->calibration : "");
	printf("\n  %-12s %-8s %-22s %10s", "op", "kind", "device",
	       "predicted");
	if (x->have_calib)
		printf(" %10s", "measured");
	putchar('\n');
	for (size_t b0 = 0; b0 < x->chain.n_base; b0++) {
		const struct edgeq_op *op = NULL;
		char dev[96];
		double pred = 0;
		int dv = 0;

		for (size_t i = 0; i < x->chain.n && !op; i++)
			if (x->chain.ops[i].base == b0) {
				op = &x->chain.ops[i];
				dv = x->opt.dev[i];
			}
		if (!op)
			continue;
		where(x, b0, dev, sizeof(dev));
		pred = edgeq_op_time_ns(&x->devs, dv, op, &x->cal);
		fmt_ns(a, sizeof(a), pred);
		printf("  %-12s %-8s %-22s %10s", op->name,
		       edgeq_op_kind_name(op->kind), dev, a);
		if (x->have_calib) {
			if (x->cal.count[dv][b0])
				fmt_ns(b, sizeof(b), x->cal.meas_ns[dv][b0]);
			else
				snprintf(b, sizeof(b), "-");
			printf(" %10s", b);
		}
		printf("%s\n", op->layer >= 0 ? "  (per layer)" : "");
	}
	if (opt_all_ops) {
		printf("\n  every op:\n");
		for (size_t i = 0; i < x->chain.n; i++)
			printf("  %4zu  L%-3d %-12s %s\n", i,
			       x->chain.ops[i].layer, x->chain.ops[i].name,
			       x->devs.dev[p->dev[i]].name);
	}
	fmt_ns(a, sizeof(a), p->step_ns);
	printf("\npredicted step time: %s (%.1f tok/s), %u segments, %u "
	       "device boundaries\n",
	       a, 1e9 / p->step_ns, p->n_segments, p->n_boundaries);
	for (size_t k = 0; k < x->devs.n; k++) {
		fmt_ns(a, sizeof(a), p->dev_ns[k]);
		printf("  %-8s %10s\n", x->devs.dev[k].name, a);
	}
	fmt_ns(a, sizeof(a), p->transfer_ns);
	printf("  %-8s %10s  fallback tax %.1f %%\n", "transfer", a,
	       100 * edgeq_placement_fallback_tax(p));
	fmt_ns(a, sizeof(a), x->naive.step_ns);
	fmt_ns(b, sizeof(b), x->cpu.step_ns);
	fmt_ns(c, sizeof(c), x->planner_ns);
	printf("naive op-by-op fallback: %s, fallback tax %.1f %%, %u "
	       "segments\n",
	       a, 100 * edgeq_placement_fallback_tax(&x->naive),
	       x->naive.n_segments);
	printf("all on the cpu: %s\n", b);
	printf("planner: %s per call\n", c);
}

static json_t *plan_obj(const struct explain *x,
			const struct edgeq_placement *p)
{
	json_t *o = json_object(), *per = json_object();

	for (size_t k = 0; k < x->devs.n; k++)
		json_object_set_new(per, x->devs.dev[k].name,
				    json_real(p->dev_ns[k]));
	json_object_set_new(o, "step_ns", json_real(p->step_ns));
	json_object_set_new(o, "transfer_ns", json_real(p->transfer_ns));
	json_object_set_new(o, "fallback_tax",
			    json_real(edgeq_placement_fallback_tax(p)));
	json_object_set_new(o, "segments", json_integer(p->n_segments));
	json_object_set_new(o, "boundaries", json_integer(p->n_boundaries));
	json_object_set_new(o, "device_ns", per);
	return o;
}

static int print_json(const struct explain *x)
{
	json_t *root = json_object(), *devs = json_array(), *ops = json_array();
	int ret;

	for (size_t k = 0; k < x->devs.n; k++) {
		const struct edgeq_device *d = &x->devs.dev[k];

		json_array_append_new(
			devs,
			json_pack("{s:s, s:s, s:f, s:b, s:i, s:i}", "name",
				  d->name, "profile", d->prof.name, "capacity",
				  edgeq_device_capacity(&d->state),
				  "agent_alive", d->state.agent_alive,
				  "cooling_state", (int)d->state.cooling_state,
				  "cooling_max", (int)d->state.cooling_max));
	}
	for (size_t i = 0; i < x->chain.n; i++) {
		const struct edgeq_op *op = &x->chain.ops[i];
		int dv = x->opt.dev[i];
		json_t *o =
			json_pack("{s:s, s:i, s:s, s:s, s:s, s:f}", "name",
				  op->name, "layer", op->layer, "kind",
				  edgeq_op_kind_name(op->kind), "dtype",
				  edgeq_dtype_name(op->dtype), "device",
				  x->devs.dev[dv].name, "predicted_ns",
				  edgeq_op_time_ns(&x->devs, dv, op, &x->cal));

		if (x->cal.count[dv][op->base])
			json_object_set_new(
				o, "measured_ns",
				json_real(x->cal.meas_ns[dv][op->base]));
		json_array_append_new(ops, o);
	}
	json_object_set_new(root, "model", json_string(x->what));
	json_object_set_new(root, "ctx", json_integer(x->shape.n_kv));
	json_object_set_new(root, "devices", devs);
	json_object_set_new(root, "ops", ops);
	json_object_set_new(root, "plan", plan_obj(x, &x->opt));
	json_object_set_new(root, "naive", plan_obj(x, &x->naive));
	json_object_set_new(root, "cpu_only", plan_obj(x, &x->cpu));
	json_object_set_new(root, "calibrated", json_boolean(x->have_calib));
	json_object_set_new(root, "cpu_calibration",
			    x->calibration ? json_string(x->calibration) :
					     json_null());
	json_object_set_new(root, "planner_ns", json_real(x->planner_ns));
	ret = json_dumpf(root, stdout,
			 JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	putchar('\n');
	json_decref(root);
	return ret ? EXIT_FAIL : EXIT_OK;
}

static int explain_run(struct explain *x,
		       const struct edgeq_device_profile *profs, size_t n_profs)
{
	struct edgeq_error err = { 0 };
	const struct edgeq_device_profile *cpu;
	uint64_t t0;
	int ret, reps = 200;

	cpu = edgeq_devprof_find(profs, n_profs, "cpu");
	if (!cpu)
		return cli_error(EXIT_BADINPUT, "plan",
				 "device profiles: no [device.cpu]");
	edgeq_devices_init(&x->devs, cpu);
	ret = edgeq_devices_discover(&x->devs, opt_sysfs, profs, n_profs,
				     opt_map, &err);
	if (ret < 0)
		return cli_error(cli_exit_for(ret), "plan", "%s",
				 err.msg[0] ? err.msg : strerror(-ret));
	if (opt_queues) {
		ret = plan_placement_add_queues(&x->devs, opt_queues, profs,
						n_profs, "plan", "--queue",
						NULL);
		if (ret)
			return ret;
	}
	ret = apply_whatif(&x->devs);
	if (ret)
		return ret;
	ret = edgeq_op_chain_llama(&x->shape, &x->chain);
	if (ret)
		return cli_error(EXIT_BADINPUT, "plan",
				 "model shape not usable for placement");
	edgeq_calib_init(&x->cal);
	if (opt_calib) {
		ret = edgeq_calib_load(&x->cal, &x->devs, &x->chain, opt_calib,
				       &err);
		if (ret)
			return cli_error(cli_exit_for(ret), "plan",
					 "--calib: %s", err.msg);
		x->have_calib = true;
	}
	if (edgeq_placement_alloc(&x->opt, x->chain.n) ||
	    edgeq_placement_alloc(&x->naive, x->chain.n) ||
	    edgeq_placement_alloc(&x->cpu, x->chain.n))
		return cli_error(EXIT_NORES, "plan", "out of memory");
	t0 = edgeq_now_ns();
	for (int i = 0; i < reps; i++)
		ret = edgeq_placement_optimal(&x->devs, &x->chain, &x->cal,
					      &x->opt);
	x->planner_ns = (double)(edgeq_now_ns() - t0) / reps;
	if (ret)
		return cli_error(EXIT_FAIL, "plan", "no feasible placement: %s",
				 strerror(-ret));
	edgeq_placement_naive(&x->devs, &x->chain, &x->cal, &x->naive);
	edgeq_placement_cpu(&x->devs, &x->chain, &x->cal, &x->cpu);
	return opt_json ? print_json(x) : (print_human(x), EXIT_OK);
}

int cli_plan_placement(int argc, char **argv)
{
	struct edgeq_device_profile profs[EDGEQ_MAX_DEVICES * 2];
	struct edgeq_error err = { 0 };
	struct explain x;
	char **args;
	int first, ret, n;

	args = calloc((size_t)argc + 1, sizeof(*args));
	if (!args)
		return cli_error(EXIT_NORES, "plan", "out of memory");
	n = filter_args(argc, argv, args);
	ret = cli_parse(&placement_cmd, n, args, &first);
	if (ret) {
		free(args);
		return ret < 0 ? EXIT_OK : ret;
	}
	if (first < n) {
		ret = cli_error(EXIT_USAGE, "plan", "unexpected argument '%s'",
				args[first]);
		free(args);
		return ret;
	}
	free(args);
	memset(&x, 0, sizeof(x));
	if (!opt_model == !opt_shape)
		return cli_error(EXIT_USAGE, "plan",
				 "--placement: give -m MODEL or --shape NAME");
	if (opt_ctx < 1 || opt_ctx > (1 << 24))
		return cli_error(EXIT_USAGE, "plan", "--ctx %d: out of range",
				 opt_ctx);
	if (opt_shape) {
		int wt = edgeq_dtype_parse(opt_wtype ? opt_wtype : "q4_0");

		if (builtin_shape(opt_shape, &x.shape))
			return cli_error(EXIT_USAGE, "plan",
					 "--shape '%s': expected tiny or 1b",
					 opt_shape);
		if (wt < 0)
			return cli_error(EXIT_USAGE, "plan",
					 "--wtype '%s': unknown type",
					 opt_wtype);
		x.shape.wtype = x.shape.otype = x.shape.etype = (uint32_t)wt;
		x.what = opt_shape;
	} else {
		ret = plan_placement_model_shape(opt_model, &x.shape, &err);
		if (ret)
			return cli_error(cli_exit_for(ret), "plan", "%s",
					 err.msg);
		x.what = opt_model;
	}
	x.shape.n_kv = (uint32_t)opt_ctx;
	if (!opt_devices)
		opt_devices = edgeq_devprofs_default_path();
	ret = edgeq_devprofs_load_all(opt_devices, profs,
				      sizeof(profs) / sizeof(profs[0]),
				      &x.calibration, &err);
	if (ret < 0)
		return cli_error(cli_exit_for(ret), "plan", "%s", err.msg);
	n = ret;
	ret = explain_run(&x, profs, (size_t)n);
	edgeq_placement_free(&x.opt);
	edgeq_placement_free(&x.naive);
	edgeq_placement_free(&x.cpu);
	edgeq_op_chain_free(&x.chain);
	return ret;
}
