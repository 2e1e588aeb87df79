// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq manifest keygen|create|sign|verify|show|install|status, and
 * edgeq rollback: signed bundles, installed atomically, rolled back as one.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include <edgeq/manifest.h>

#include "cli.h"

static const char *o_model, *o_output, *o_key, *o_trust, *o_pub, *o_profile,
	*o_family, *o_bench, *o_bpf_dir, *o_routing, *o_name, *o_store,
	*o_reason, *o_budget;
static int o_abi = -1, o_max_crashes = 3;
static double o_throttle_c = 85, o_critical_c = 95, o_ttft = 2, o_min_tps,
	      o_probation = 600, o_floor_window = 60;
static bool o_json;

static const struct cli_option manifest_opts[] = {
	{ "model", 'm', CLI_STR, &o_model, "FILE", "the model (GGUF)" },
	{ "output", 'o', CLI_STR, &o_output, "FILE",
	  "write here (create: stdout; sign: in place)" },
	{ "key", 'k', CLI_STR, &o_key, "FILE", "secret key (mode 0600)" },
	{ "trust", 'K', CLI_STR, &o_trust, "FILE", "trusted public key" },
	{ "pub", 0, CLI_STR, &o_pub, "FILE", "keygen: public key (KEY.pub)" },
	{ "name", 0, CLI_STR, &o_name, "NAME", "bundle name" },
	{ "profile", 'P', CLI_STR, &o_profile, "NAME",
	  "device profile the bundle was tested with (local)" },
	{ "family", 0, CLI_STR, &o_family, "FAMILY",
	  "device family (create: instead of this machine's; verify: pretend)" },
	{ "bench", 0, CLI_STR, &o_bench, "FILE",
	  "evidence: the JSON of edgeq bench" },
	{ "bpf-dir", 0, CLI_STR, &o_bpf_dir, "DIR",
	  "BPF objects to pin/check (build/bpf)" },
	{ "module-abi", 0, CLI_INT, &o_abi, "N",
	  "module ABI required (the loaded one; 0: no module)" },
	{ "memory-budget", 0, CLI_RAW, &o_budget, "SIZE", "memory budget" },
	{ "throttle-c", 0, CLI_DOUBLE, &o_throttle_c, "C",
	  "thermal: react above (85)" },
	{ "critical-c", 0, CLI_DOUBLE, &o_critical_c, "C",
	  "thermal: stop above (95)" },
	{ "slo-ttft", 0, CLI_DOUBLE, &o_ttft, "S",
	  "SLO: time to first token (2)" },
	{ "min-tps", 0, CLI_DOUBLE, &o_min_tps, "T",
	  "probation: decode tok/s floor (none)" },
	{ "probation", 0, CLI_DOUBLE, &o_probation, "S",
	  "probation period (600)" },
	{ "floor-window", 0, CLI_DOUBLE, &o_floor_window, "S",
	  "probation: under the floor this long fails (60)" },
	{ "max-crashes", 0, CLI_INT, &o_max_crashes, "N",
	  "probation: agent crashes that fail it (3)" },
	{ "routing", 0, CLI_STR, &o_routing, "JSON", "routing policy object" },
	{ "store", 's', CLI_STR, &o_store, "DIR",
	  "bundle store (/var/lib/edgeq/bundles)" },
	{ "json", 0, CLI_FLAG, &o_json, NULL, "show: the raw manifest" },
	CLI_OPTIONS_END
};

#define ERR(ret, e) cli_error(cli_exit_for(ret), "manifest", "%s", (e).msg)

/* Write @text to @path through a temporary file and rename. */
static int write_atomic(const char *path, const char *text)
{
	char tmp[PATH_MAX];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp-%d", path, (int)getpid());
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	if (fputs(text, f) < 0 || fputc('\n', f) < 0 || fflush(f) ||
	    fsync(fileno(f))) {
		fclose(f);
		unlink(tmp);
		return -EIO;
	}
	fclose(f);
	if (rename(tmp, path) < 0) {
		unlink(tmp);
		return -errno;
	}
	return 0;
}

static int emit(const char *text)
{
	int ret;

	if (!o_output) {
		printf("%s\n", text);
		return EXIT_OK;
	}
	ret = write_atomic(o_output, text);
	if (ret)
		return cli_error(cli_exit_for(ret), "manifest", "%s: %s",
				 o_output, strerror(-ret));
	return EXIT_OK;
}

static int do_keygen(void)
{
	struct edgeq_error e = { 0 };
	char pub[PATH_MAX];
	int ret;

	if (!o_key)
		return cli_error(EXIT_USAGE, "manifest",
				 "keygen needs -k SECRET");
	snprintf(pub, sizeof(pub), "%s.pub", o_key);
	ret = edgeq_key_generate(o_key, o_pub ? o_pub : pub, &e);
	if (ret)
		return ERR(ret, e);
	fprintf(stderr, "secret key %s (mode 0600), public key %s\n", o_key,
		o_pub ? o_pub : pub);
	return EXIT_OK;
}

static int do_create(void)
{
	struct edgeq_manifest_params p;
	struct edgeq_error e = { 0 };
	char *out;
	int ret;

	if (!o_model)
		return cli_error(EXIT_USAGE, "manifest",
				 "create needs -m MODEL");
	edgeq_manifest_params_init(&p);
	p.model = o_model;
	p.name = o_name;
	if (o_profile)
		p.profile = o_profile;
	p.family = o_family;
	p.evidence = o_bench;
	p.bpf_dir = o_bpf_dir;
	p.module_abi = o_abi;
	if (o_budget && edgeq_parse_size(o_budget, 0, &p.memory_budget))
		return cli_error(EXIT_USAGE, "manifest",
				 "--memory-budget '%s' is not a size",
				 o_budget);
	p.throttle_c = o_throttle_c;
	p.critical_c = o_critical_c;
	p.slo_ttft_s = o_ttft;
	p.min_tps = o_min_tps;
	p.probation_s = o_probation;
	p.floor_window_s = o_floor_window;
	p.max_agent_crashes =
		(unsigned int)(o_max_crashes > 0 ? o_max_crashes : 1);
	p.routing = o_routing;
	ret = edgeq_manifest_create(&p, &out, &e);
	if (ret)
		return ERR(ret, e);
	ret = emit(out);
	free(out);
	return ret;
}

static int load(const char *file, char **text)
{
	struct edgeq_error e = { 0 };
	int ret = edgeq_read_text(file, text, NULL, &e);

	return ret ? ERR(ret, e) : 0;
}

static int do_sign(const char *file)
{
	struct edgeq_error e = { 0 };
	char *text, *out;
	int ret;

	if (!o_key)
		return cli_error(EXIT_USAGE, "manifest",
				 "sign needs -k SECRET");
	ret = load(file, &text);
	if (ret)
		return ret;
	ret = edgeq_manifest_sign(text, o_key, &out, &e);
	free(text);
	if (ret)
		return ERR(ret, e);
	if (!o_output)
		o_output = file;
	ret = emit(out);
	free(out);
	return ret;
}

/* The model next to the manifest: model.gguf (a store bundle), else the
 * file name the manifest records. */
static const char *model_beside(const char *file, const char *text, char *buf,
				size_t len)
{
	const char *slash = strrchr(file, '/');
	int dl = slash ? (int)(slash - file) : 1;
	const char *dir = slash ? file : ".";
	json_t *m = json_loads(text, 0, NULL);
	const char *name = json_string_value(
		json_object_get(json_object_get(m, "model"), "file"));

	snprintf(buf, len, "%.*s/model.gguf", dl, dir);
	if (access(buf, R_OK) && name)
		snprintf(buf, len, "%.*s/%s", dl, dir, name);
	json_decref(m);
	return access(buf, R_OK) ? NULL : buf;
}

static int verify(const char *file, const char *text, const char *model)
{
	struct edgeq_verify_env env;
	struct edgeq_error e = { 0 };
	int ret;

	if (!o_trust)
		return cli_error(EXIT_USAGE, "manifest",
				 "verifying needs -K TRUSTED_PUBLIC_KEY");
	edgeq_verify_env_init(&env);
	env.model = model;
	env.family = o_family;
	env.module_abi = o_abi;
	env.bpf_dir = o_bpf_dir;
	ret = edgeq_manifest_verify(text, o_trust, &env, &e);
	if (ret)
		return cli_error(cli_exit_for(ret), "manifest",
				 "%s refused: %s", file, e.msg);
	return 0;
}

static int do_verify(const char *file)
{
	char *text, buf[PATH_MAX];
	const char *model;
	int ret = load(file, &text);

	if (ret)
		return ret;
	model = o_model ? o_model : model_beside(file, text, buf, sizeof(buf));
	ret = verify(file, text, model);
	free(text);
	if (!ret)
		printf("%s: verified%s%s\n", file, model ? " with model " : "",
		       model ? model : " (model not checked: not found)");
	return ret;
}

static void show_text(json_t *m)
{
	json_t *mo = json_object_get(m, "model"), *t, *v, *sig, *ev;
	const char *k;

#define S(o, key) (json_string_value(json_object_get((o), (key))) ?: "-")
	printf("bundle     %s (schema %s, created %s)\n", S(m, "name"),
	       S(m, "schema"), S(m, "created"));
	printf("model      %s, %lld bytes, arch %s, ctx %lld\n", S(mo, "file"),
	       (long long)json_integer_value(json_object_get(mo, "size")),
	       S(mo, "arch"),
	       (long long)json_integer_value(json_object_get(mo, "ctx_limit")));
	printf("  sha256     %s\n  tokenizer  %s\n  types     ",
	       S(mo, "sha256"), S(mo, "tokenizer_sha256"));
	json_object_foreach(json_object_get(mo, "tensor_types"), k, v)
		printf(" %s x%lld", k, (long long)json_integer_value(v));
	t = json_object_get(m, "engine");
	printf("\nengine     %s (commit %s)\n", S(t, "version"),
	       S(t, "commit"));
	t = json_object_get(m, "kernel");
	printf("kernel     module ABI %lld;",
	       (long long)json_integer_value(json_object_get(t, "module_abi")));
	json_object_foreach(json_object_get(t, "bpf_objects"), k, v)
		printf(" %s %.12s...", k, json_string_value(v));
	t = json_object_get(m, "device");
	printf("\ndevice     family %s, profile %s\n", S(t, "family"),
	       S(t, "profile"));
	t = json_object_get(m, "thresholds");
	printf("thresholds memory budget %lld, throttle %.0f C, critical %.0f C, TTFT %.2f s, floor %.2f tok/s\n",
	       (long long)json_integer_value(
		       json_object_get(t, "memory_budget")),
	       json_number_value(json_object_get(json_object_get(t, "thermal"),
						 "throttle_c")),
	       json_number_value(json_object_get(json_object_get(t, "thermal"),
						 "critical_c")),
	       json_number_value(
		       json_object_get(json_object_get(t, "slo"), "ttft_s")),
	       json_number_value(json_object_get(json_object_get(t, "slo"),
						 "min_tok_s")));
	ev = json_object_get(m, "evidence");
	if (json_is_object(ev))
		printf("evidence   edgeq bench of %s on %s\n", S(ev, "date"),
		       json_is_string(json_object_get(ev, "device")) ?
			       S(ev, "device") :
			       "-");
	else
		printf("evidence   none\n");
	sig = json_object_get(m, "signature");
	printf("signature  %s\n", sig ? S(sig, "key_id") : "UNSIGNED");
#undef S
}

static int do_show(const char *file)
{
	char *text;
	json_t *m;
	int ret = load(file, &text);

	if (ret)
		return ret;
	m = json_loads(text, 0, NULL);
	if (!m) {
		free(text);
		return cli_error(EXIT_BADINPUT, "manifest", "%s: not JSON",
				 file);
	}
	if (o_json)
		printf("%s\n", text);
	else
		show_text(m);
	json_decref(m);
	free(text);
	return EXIT_OK;
}

static int do_install(const char *file)
{
	struct edgeq_error e = { 0 };
	struct edgeq_store st;
	char id[64], *text;
	int ret;

	if (!o_model)
		return cli_error(EXIT_USAGE, "manifest",
				 "install needs -m MODEL");
	ret = load(file, &text);
	if (ret)
		return ret;
	ret = verify(file, text, o_model);
	if (!ret) {
		ret = edgeq_store_open(&st, o_store, &e);
		if (!ret)
			ret = edgeq_store_install(&st, text, o_model, id,
						  sizeof(id), &e);
		ret = ret ? ERR(ret, e) : 0;
	}
	free(text);
	if (!ret)
		printf("installed bundle %s in %s; it is current\n", id,
		       st.dir);
	return ret;
}

static void status_line(struct edgeq_store *st, const char *which)
{
	char id[256], p[PATH_MAX + 300];

	if (edgeq_store_get(st, which, id, sizeof(id), NULL)) {
		printf("%-9s (none)\n", which);
		return;
	}
	snprintf(p, sizeof(p), "%s/%s/good", st->dir, id);
	printf("%-9s %s%s", which, id,
	       access(p, F_OK) ? "" : " (passed probation)");
	snprintf(p, sizeof(p), "%s/%s/rejected", st->dir, id);
	printf("%s\n", access(p, F_OK) ? "" : " (rejected before)");
}

static int do_status(void)
{
	struct edgeq_error e = { 0 };
	struct edgeq_store st;
	int ret = edgeq_store_open(&st, o_store, &e);

	if (ret)
		return ERR(ret, e);
	printf("store     %s\n", st.dir);
	status_line(&st, "current");
	status_line(&st, "previous");
	return EXIT_OK;
}

static int cmd_manifest(int argc, char **argv)
{
	const struct cli_command *self = cli_find("manifest");
	const char *action, *file;
	int first, ret;

	/* edgeq manifest ACTION [OPTIONS] [FILE] */
	if (argc < 2 || argv[1][0] == '-') {
		ret = cli_parse(self, argc, argv, &first);
		if (ret)
			return ret < 0 ? EXIT_OK : ret;
		return cli_error(
			EXIT_USAGE, "manifest",
			"which action? keygen, create, sign, verify, show, install, status");
	}
	action = argv[1];
	ret = cli_parse(self, argc - 1, argv + 1, &first);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	first++;
	file = first < argc ? argv[first] : NULL;
	if (first + 1 < argc)
		return cli_error(EXIT_USAGE, "manifest",
				 "unexpected argument '%s'", argv[first + 1]);
	if (!strcmp(action, "keygen"))
		return do_keygen();
	if (!strcmp(action, "create"))
		return do_create();
	if (!strcmp(action, "status"))
		return do_status();
	if (strcmp(action, "sign") && strcmp(action, "verify") &&
	    strcmp(action, "show") && strcmp(action, "install"))
		return cli_error(EXIT_USAGE, "manifest", "unknown action '%s'",
				 action);
	if (!file)
		return cli_error(EXIT_USAGE, "manifest",
				 "%s needs a manifest file", action);
	if (!strcmp(action, "sign"))
		return do_sign(file);
	if (!strcmp(action, "verify"))
		return do_verify(file);
	if (!strcmp(action, "show"))
		return do_show(file);
	return do_install(file);
}

EDGEQ_COMMAND(
	manifest, "create, sign, verify and install model bundles",
	"usage: edgeq manifest keygen -k SECRET [--pub PUBLIC]\n"
	"       edgeq manifest create -m MODEL [--bench BENCH.json] [-o FILE] [thresholds]\n"
	"       edgeq manifest sign -k SECRET FILE [-o OUT]\n"
	"       edgeq manifest verify -K PUBLIC FILE [-m MODEL]\n"
	"       edgeq manifest show FILE [--json]\n"
	"       edgeq manifest install -K PUBLIC FILE -m MODEL [--store DIR]\n"
	"       edgeq manifest status [--store DIR]\n\n"
	"A manifest binds a model (file and tokenizer hashes), the engine,\n"
	"module ABI, BPF objects, device family, thresholds, routing policy and\n"
	"the bench evidence, signed with Ed25519. Verification names what\n"
	"differs. Schema and update procedure: Documentation/manifest.rst.",
	manifest_opts, cmd_manifest);

static const struct cli_option rollback_opts[] = {
	{ "store", 's', CLI_STR, &o_store, "DIR",
	  "bundle store (/var/lib/edgeq/bundles)" },
	{ "reason", 0, CLI_STR, &o_reason, "TEXT", "recorded in rollback.log" },
	CLI_OPTIONS_END
};

static int cmd_rollback(int argc, char **argv)
{
	const struct cli_command *self = cli_find("rollback");
	struct edgeq_error e = { 0 };
	struct edgeq_store st;
	char id[256];
	int first, ret;

	ret = cli_parse(self, argc, argv, &first);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (first < argc)
		return cli_error(EXIT_USAGE, "rollback",
				 "unexpected argument '%s'", argv[first]);
	ret = edgeq_store_open(&st, o_store, &e);
	if (!ret)
		ret = edgeq_store_rollback(&st, o_reason ? o_reason : "by hand",
					   &e);
	if (ret)
		return cli_error(cli_exit_for(ret), "rollback", "%s", e.msg);
	edgeq_store_get(&st, "current", id, sizeof(id), NULL);
	printf("rolled back; current bundle is %s\n", id);
	return EXIT_OK;
}

EDGEQ_COMMAND(
	rollback, "make the previous bundle current again",
	"usage: edgeq rollback [--store DIR] [--reason TEXT]\n\n"
	"Switches the store's current bundle back to the previous one and\n"
	"records why in rollback.log (edgeq serve does the same by itself when\n"
	"a new bundle fails its probation).",
	rollback_opts, cmd_rollback);
