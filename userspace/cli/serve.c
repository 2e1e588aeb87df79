// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq serve: the OpenAI-compatible HTTP daemon with the privacy router.
 *
 * Configuration precedence: command-line flag > EDGEQ_* environment variable
 * > /etc/edgeq/edgeq.conf (or --config FILE) > built-in default. Every key
 * of the file is the long name of a flag (sections are for readability).
 *
 * Under systemd (Type=notify): READY=1 once the model is loaded, WATCHDOG=1
 * from this event loop while no generation is stuck, STOPPING=1 on SIGTERM.
 */
#include <errno.h>
#include <ini.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include <edgeq/edgeq.h>
#include <edgeq/placement.h>
#include <edgeq/pressure.h>
#include <edgeq/router.h>
#include <edgeq/stream.h>

#include "cli.h"
#include "run_placement.h"
#include "serve_bundle.h"
#include "serve_energy.h"
#include "server/server.h"

#define DEFAULT_CONFIG "/etc/edgeq/edgeq.conf"

static struct srv_config cfg;
static const char *opt_config, *opt_default_class = "confidential";
static const char *opt_socket_mode = "0660", *opt_api_key_file;
static uint64_t opt_max_body = 1 << 20;
static bool opt_no_prefix_cache;
static const char *opt_pressure = "auto";
static const char *opt_cool_bind;
static const char *opt_weights = "auto", *opt_weights_budget;
static const char *opt_device_queue;
static uint64_t opt_device_copies;
static const char *opt_kv_type = "f16";

static const struct cli_option serve_opts[] = {
	{ "config", 'c', CLI_STR, &opt_config, "FILE",
	  "configuration file (default " DEFAULT_CONFIG ", if present)" },
	{ "model", 'm', CLI_STR, &cfg.model_path, "FILE",
	  "GGUF model to serve" },
	{ "model-name", 0, CLI_STR, &cfg.model_name, "ID",
	  "model id in /v1/models (default: general.name or the file name)" },
	{ "listen", 'l', CLI_STR, &cfg.listen, "ADDR",
	  "address to listen on (127.0.0.1; 'none': no TCP)" },
	{ "port", 'p', CLI_INT, &cfg.port, "PORT",
	  "TCP port (8080; 0: any free)" },
	{ "port-file", 0, CLI_STR, &cfg.port_file, "FILE",
	  "write the bound port to FILE" },
	{ "unix-socket", 0, CLI_STR, &cfg.unix_socket, "PATH",
	  "also listen on a unix socket" },
	{ "socket-mode", 0, CLI_STR, &opt_socket_mode, "MODE",
	  "permissions of the unix socket (0660)" },
	{ "api-key", 0, CLI_STR, &cfg.api_key, "TOKEN",
	  "require 'Authorization: Bearer TOKEN' (prefer --api-key-file)" },
	{ "api-key-file", 0, CLI_STR, &opt_api_key_file, "FILE",
	  "read the bearer token from FILE" },
	{ "keys-file", 0, CLI_STR, &cfg.keys_file, "FILE",
	  "API keys, one per application (edgeq keys; reloaded on SIGHUP)" },
	{ "metrics-public", 0, CLI_FLAG, &cfg.metrics_public, NULL,
	  "answer /metrics without a key" },
	{ "cors-origins", 0, CLI_STR, &cfg.cors_origins, "LIST",
	  "browser origins allowed (comma-separated, or *): CORS headers and preflight" },
	{ "tls-cert", 0, CLI_STR, &cfg.tls_cert, "FILE",
	  "PEM certificate chain: serve HTTPS on TCP (reloaded on SIGHUP)" },
	{ "tls-key", 0, CLI_STR, &cfg.tls_key, "FILE",
	  "the certificate's PEM private key" },
	{ "threads", 't', CLI_INT, &cfg.threads, "N",
	  "engine threads (0: all cores)" },
	{ "weights", 0, CLI_STR, &opt_weights, "MODE",
	  "auto, mmap, preload or stream (auto: from the memory budget)" },
	{ "weights-budget", 0, CLI_RAW, &opt_weights_budget, "SIZE",
	  "most weight bytes kept resident, e.g. 2G or 50% of the model (default: what memory allows)" },
	{ "ctx-size", 0, CLI_INT, &cfg.ctx_size, "N",
	  "context tokens per slot (2048)" },
	{ "slots", 0, CLI_INT, &cfg.slots, "N",
	  "generations running at once, one KV cache each (1)" },
	{ "queue", 0, CLI_INT, &cfg.queue, "N",
	  "requests waiting for a slot before 429 (8)" },
	{ "max-connections", 0, CLI_INT, &cfg.max_connections, "N",
	  "open HTTP connections (64)" },
	{ "max-tokens", 0, CLI_INT, &cfg.max_tokens, "N",
	  "largest max_tokens a request may ask (4096)" },
	{ "default-max-tokens", 0, CLI_INT, &cfg.default_max_tokens, "N",
	  "max_tokens when a request gives none (256)" },
	{ "max-body", 0, CLI_SIZE, &opt_max_body, "SIZE",
	  "largest request body (1M)" },
	{ "request-timeout", 0, CLI_INT, &cfg.request_timeout_s, "SECONDS",
	  "idle connection timeout (60)" },
	{ "request-deadline", 0, CLI_INT, &cfg.request_deadline_s, "SECONDS",
	  "a request's head and body must arrive within this (30)" },
	{ "max-conns-per-client", 0, CLI_INT, &cfg.max_conns_per_client, "N",
	  "open connections per client address (16)" },
	{ "shutdown-timeout", 0, CLI_INT, &cfg.shutdown_timeout_s, "SECONDS",
	  "SIGTERM: let in-flight requests finish this long, then cancel (10)" },
	{ "chat-template", 0, CLI_STR, &cfg.chat_template, "FILE|NAME",
	  "auto: the model's tokenizer.chat_template (Jinja); a Jinja FILE; or a built-in llama3, chatml, llama2, mistral (auto)" },
	{ "draft", 0, CLI_STR, &cfg.draft, "lookup|layers:L|MODEL",
	  "speculative decoding in every slot: prompt-lookup n-grams, the model's first L layers, or a draft model with the same vocabulary (off)" },
	{ "draft-max", 0, CLI_INT, &cfg.draft_max, "N",
	  "most tokens drafted per target pass (4)" },
	{ "context-shift", 0, CLI_FLAG, &cfg.context_shift, NULL,
	  "a slot at its context limit keeps the system prompt and the newest half and goes on (off: the answer ends with finish_reason length)" },
	{ "kv-type", 0, CLI_STR, &opt_kv_type, "f16|q8_0",
	  "KV cache type of the slots (f16; q8_0 halves the cache)" },
	{ "no-prefix-cache", 0, CLI_FLAG, &opt_no_prefix_cache, NULL,
	  "do not reuse a slot's KV cache for a common prompt prefix" },
	{ "privacy-default", 0, CLI_STR, &opt_default_class, "CLASS",
	  "class of requests that name none (confidential)" },
	{ "private-url", 0, CLI_STR, &cfg.private_url, "URL",
	  "OpenAI-compatible endpoint for internal requests" },
	{ "private-model", 0, CLI_STR, &cfg.private_model, "ID",
	  "model name sent to the private endpoint" },
	{ "private-key", 0, CLI_STR, &cfg.private_key, "TOKEN",
	  "bearer token for the private endpoint" },
	{ "public-url", 0, CLI_STR, &cfg.public_url, "URL",
	  "OpenAI-compatible endpoint for public requests" },
	{ "public-model", 0, CLI_STR, &cfg.public_model, "ID",
	  "model name sent to the public endpoint" },
	{ "public-key", 0, CLI_STR, &cfg.public_key, "TOKEN",
	  "bearer token for the public endpoint" },
	{ "upstream-ca", 0, CLI_STR, &cfg.upstream_ca, "FILE",
	  "CA bundle that signs the endpoints' certificates (system's)" },
	{ "private-pin", 0, CLI_STR, &cfg.private_pin, "sha256//B64",
	  "pin the private endpoint's public key" },
	{ "public-pin", 0, CLI_STR, &cfg.public_pin, "sha256//B64",
	  "pin the public endpoint's public key" },
	{ "upstream-timeout", 0, CLI_INT, &cfg.upstream_timeout_s, "SECONDS",
	  "whole-request timeout for endpoints (60)" },
	{ "local-tok-s", 0, CLI_DOUBLE, &cfg.local_tok_s, "TOK_S",
	  "fixed local decode speed for the router (0: measure)" },
	{ "device-queue", 0, CLI_STR, &opt_device_queue, "Q[=PROFILE],...",
	  "run decode-step matrix ops on these edgeq queues as placement decides (as edgeq run --queue)" },
	{ "device-copies", 0, CLI_SIZE, &opt_device_copies, "SIZE",
	  "bound the weight copies handed to the queues' agents, per slot (as edgeq run --device-copies)" },
	{ "pressure", 0, CLI_STR, &opt_pressure, "SOURCE",
	  "pressure monitor: auto (BPF, else PSI), psi or off" },
	{ "cool-bind", 0, CLI_STR, &opt_cool_bind, "Q:ZONE,...",
	  "the pressure monitor steps queue Q's cooling_state from the thermal zone of type ZONE (where edgeq.ko cannot bind it: 6.12)" },
	{ "log-prompts", 0, CLI_FLAG, &cfg.log_prompts, NULL,
	  "write prompts and completions to the log (off)" },
	{ "log-target", 0, CLI_STR, &cfg.log_target, "WHERE",
	  "auto, journal or stderr (auto: journal under systemd)" },
	{ "load-delay", 0, CLI_INT, &cfg.load_delay_ms, "MS",
	  "test hook: stay in 'loading' MS longer" },
	{ "token-delay", 0, CLI_INT, &cfg.token_delay_ms, "MS",
	  "test hook: sleep MS before each generated token" },
	CLI_OPTIONS_END
};

/* ---- placement and probation hooks of the server library */

/*
 * Every slot's context gets a placement executor: the CPU alone without
 * --device-queue (its ops are still counted for /metrics), else the queues
 * through edgeq.ko. Test hook EDGEQ_TEST_INLINE_AGENT=N runs the queues
 * in-process with an agent that dies at its Nth op (0: never).
 */
static struct {
	pthread_mutex_t lock;
	struct run_placement *rp[64];
	uint64_t lost_seen;
} pl = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int hook_ctx(void *arg, struct edgeq_ctx *c, int slot,
		    struct edgeq_error *err)
{
	struct run_placement_opts o = { .who = "serve",
					.opt = "--device-queue",
					.copy_budget = opt_device_copies };
	const char *t = getenv("EDGEQ_TEST_INLINE_AGENT");
	struct run_placement *rp = NULL;
	int ret;

	if (slot < 0 || slot >= 64)
		return 0;
	/* the session's monitor feeds the placement (hook_pressure) */
	o.no_pressure = true;
	if (t && *t) {
		o.inline_be = true;
		o.fail_after = strtoull(t, NULL, 10);
	}
	ret = run_placement_start_opts(c, opt_device_queue, &o, &rp);
	pthread_mutex_lock(&pl.lock); /* hook_pressure reads the table */
	pl.rp[slot] = ret ? NULL : rp;
	pthread_mutex_unlock(&pl.lock);
	if (ret)
		return edgeq_error_set(
			err, ret == EXIT_UNAVAIL ? ENODEV : EINVAL,
			"--device-queue %s: placement failed",
			opt_device_queue ? opt_device_queue : "");
	return 0;
}

static void hook_ctx_free(void *arg, struct edgeq_ctx *c, int slot)
{
	if (slot < 0 || slot >= 64)
		return;
	pthread_mutex_lock(&pl.lock);
	run_placement_stop(pl.rp[slot], true);
	pl.rp[slot] = NULL;
	pthread_mutex_unlock(&pl.lock);
}

/* The session's monitor changed: every slot's placement re-plans on it. */
static void hook_pressure(void *arg, const struct edgeq_pressure_state *st)
{
	int i;

	pthread_mutex_lock(&pl.lock);
	for (i = 0; i < 64; i++)
		if (pl.rp[i])
			run_placement_pressure(pl.rp[i], st);
	pthread_mutex_unlock(&pl.lock);
}

/* Per-device ops summed over the slots; agent losses seen. */
static size_t device_ops(const char **names, uint64_t *ops, size_t max,
			 uint64_t *lost)
{
	const char *nm[EDGEQ_MAX_DEVICES];
	uint64_t o[EDGEQ_MAX_DEVICES], l;
	size_t n = 0, k, i;

	*lost = 0;
	for (i = 0; i < 64; i++) {
		if (!pl.rp[i])
			continue;
		k = run_placement_ops(pl.rp[i], nm, o, EDGEQ_MAX_DEVICES, &l);
		if (!n) {
			n = k < max ? k : max;
			memset(ops, 0, n * sizeof(*ops));
			memcpy(names, nm, n * sizeof(*names));
		}
		for (k = 0; k < n; k++)
			ops[k] += o[k];
		*lost += l;
	}
	return n;
}

/* the bundle on probation was rolled back: stop, exit non-zero */
static _Atomic bool rolled_back;
static _Atomic uint64_t rolled_back_ns;

static void hook_generation(void *arg, double tok_s, int n_gen)
{
	const char *names[EDGEQ_MAX_DEVICES];
	uint64_t ops[EDGEQ_MAX_DEVICES], lost;

	serve_energy_tokens(n_gen);
	pthread_mutex_lock(&pl.lock);
	device_ops(names, ops, EDGEQ_MAX_DEVICES, &lost);
	/* an op a queue failed is a device agent lost (crashed, killed) */
	for (; pl.lost_seen < lost; pl.lost_seen++) {
		srv_log(SRV_WARN,
			(const char *const[]){ "EDGEQ_EVENT=agent-lost", NULL },
			"a device agent was lost; its ops run on the cpu");
		if (serve_bundle_report(EDGEQ_PROBATION_AGENT_CRASH, 0))
			rolled_back = true;
	}
	pthread_mutex_unlock(&pl.lock);
	if (tok_s > 0 && serve_bundle_report(EDGEQ_PROBATION_THROUGHPUT, tok_s))
		rolled_back = true;
	/* the event loop stops as on SIGTERM (in-flight requests finish)
	 * and exits non-zero: the restart serves the previous bundle */
	if (rolled_back && !rolled_back_ns)
		rolled_back_ns = edgeq_now_ns();
}

static void hook_metrics(void *arg, struct srv_buf *out)
{
	const char *names[EDGEQ_MAX_DEVICES];
	uint64_t ops[EDGEQ_MAX_DEVICES], lost;
	size_t n, k;

	pthread_mutex_lock(&pl.lock);
	n = device_ops(names, ops, EDGEQ_MAX_DEVICES, &lost);
	if (n) {
		srv_buf_printf(
			out,
			"# HELP edgeq_device_ops_total Decode-step matrix ops run per device (placement executor).\n"
			"# TYPE edgeq_device_ops_total counter\n");
		for (k = 0; k < n; k++)
			srv_buf_printf(
				out,
				"edgeq_device_ops_total{device=\"%s\"} %llu\n",
				names[k], (unsigned long long)ops[k]);
		srv_buf_printf(
			out,
			"# HELP edgeq_device_agents_lost_total Device agents lost (an op failed; the cpu ran it).\n"
			"# TYPE edgeq_device_agents_lost_total counter\n"
			"edgeq_device_agents_lost_total %llu\n",
			(unsigned long long)lost);
	}
	pthread_mutex_unlock(&pl.lock);
	serve_energy_metrics(out);
}

/* ---- configuration file */

struct ini_ctx {
	const struct cli_command *cmd;
	const char *path;
	int err;
};

static int on_ini(void *user, const char *section, const char *name,
		  const char *value)
{
	struct ini_ctx *c = user;
	const struct cli_option *o;
	char *v;
	int ret;

	if (!strcmp(name, "config")) {
		cli_error(EXIT_USAGE, "serve",
			  "%s: 'config' cannot be set in a file", c->path);
		c->err = EXIT_USAGE;
		return 0;
	}
	for (o = c->cmd->options; o->name && strcmp(o->name, name); o++)
		;
	/* option strings must outlive the parser; numbers are copied out */
	v = strdup(value);
	if (!v)
		return 0;
	ret = cli_set_option(c->cmd, name, v);
	if (ret || (o->type != CLI_STR && o->type != CLI_RAW))
		free(v);
	if (ret == -ENOENT) {
		cli_error(EXIT_USAGE, "serve", "%s: unknown key '%s' in [%s]",
			  c->path, name, section);
		c->err = EXIT_USAGE;
		return 0;
	}
	if (ret) {
		cli_error(EXIT_USAGE, "serve",
			  "%s: invalid value '%s' for '%s'", c->path, value,
			  name);
		c->err = EXIT_USAGE;
		return 0;
	}
	return 1;
}

/* --config FILE / -c FILE / EDGEQ_CONFIG, found before the real parse so
 * that the file's values sit under the environment's and the flags'. */
static const char *find_config(int argc, char **argv, bool *explicit)
{
	const char *e, *last = NULL;
	int i;

	*explicit = true;
	for (i = 1; i < argc; i++) { /* the last one wins, as for any flag */
		if (!strcmp(argv[i], "--"))
			break;
		if ((!strcmp(argv[i], "--config") || !strcmp(argv[i], "-c")) &&
		    i + 1 < argc)
			last = argv[++i];
		else if (!strncmp(argv[i], "--config=", 9))
			last = argv[i] + 9;
	}
	if (last)
		return last;
	e = getenv("EDGEQ_CONFIG");
	if (e && *e)
		return e;
	*explicit = false;
	return DEFAULT_CONFIG;
}

static int load_config(const struct cli_command *self, int argc, char **argv)
{
	struct ini_ctx c = { self, NULL, 0 };
	bool explicit;
	FILE *f;
	int ret;

	c.path = find_config(argc, argv, &explicit);
	f = fopen(c.path, "re");
	if (!f) {
		if (!explicit && errno == ENOENT)
			return 0;
		return cli_error(explicit ? EXIT_USAGE : EXIT_FAIL, "serve",
				 "cannot read %s: %s", c.path, strerror(errno));
	}
	ret = ini_parse_file(f, on_ini, &c);
	fclose(f);
	if (c.err)
		return c.err;
	if (ret)
		return cli_error(EXIT_USAGE, "serve", "%s:%d: syntax error",
				 c.path, ret);
	return 0;
}

static int read_key_file(const char *path)
{
	char buf[512];
	size_t n;
	FILE *f = fopen(path, "re");

	if (!f)
		return cli_error(EXIT_USAGE, "serve", "cannot read %s: %s",
				 path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	if (!*buf)
		return cli_error(EXIT_USAGE, "serve", "%s is empty", path);
	cfg.api_key = strdup(buf);
	return cfg.api_key ? 0 : EXIT_FAIL;
}

/* ---- the loader thread and the event loop */

struct loader {
	struct srv *srv;
	int efd;
	int ret;
	struct edgeq_error err;
};

static void *load_thread(void *arg)
{
	struct loader *l = arg;
	uint64_t one = 1;

	l->ret = srv_load(l->srv, &l->err);
	/* at once, before any generation can end and report to it */
	if (!l->ret)
		serve_bundle_loaded();
	if (write(l->efd, &one, sizeof(one)) < 0) {
		/* the main loop also polls; nothing to do */
	}
	return NULL;
}

static int write_port_file(const char *path, int port)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "%d\n", port);
	if (fclose(f))
		return -EIO;
	return rename(tmp, path) ? -errno : 0;
}

static int serve_main(int argc, char **argv)
{
	const struct cli_command *self = cli_find("serve");
	struct loader l = { 0 };
	struct signalfd_siginfo si;
	uint64_t wd_usec = 0, stall_ns;
	struct edgeq_pressure_opts popts;
	struct pollfd pfd[2];
	struct edgeq_error err = { 0 };
	struct srv *srv = NULL;
	bool loaded = false, stop = false;
	pthread_t th;
	sigset_t mask;
	char *end;
	int ret, arg, sfd, left, status = EXIT_OK;
	long mode;

	srv_config_init(&cfg);
	ret = load_config(self, argc, argv);
	if (ret)
		return ret;
	ret = cli_parse(self, argc, argv, &arg);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (arg < argc)
		return cli_error(EXIT_USAGE, "serve",
				 "unexpected argument '%s'", argv[arg]);
	/* with EDGEQ_TRUST_KEY, only a verified bundle is served */
	ret = serve_bundle_resolve(&cfg.model_path);
	if (!ret)
		ret = serve_bundle_apply(&cfg);
	if (ret)
		return ret;
	if (!cfg.model_path)
		return cli_error(
			EXIT_USAGE, "serve",
			"no model: give --model FILE (or model= in the config)");
	if (edgeq_privacy_parse(opt_default_class, &cfg.default_class))
		return cli_error(
			EXIT_USAGE, "serve",
			"--privacy-default must be confidential, internal or public");
	mode = strtol(opt_socket_mode, &end, 8);
	if (*end || mode < 0 || mode > 0777)
		return cli_error(EXIT_USAGE, "serve",
				 "--socket-mode must be octal, e.g. 0660");
	cfg.socket_mode = (unsigned int)mode;
	cfg.max_body = opt_max_body;
	cfg.prefix_cache = !opt_no_prefix_cache;
	{
		struct edgeq_draft_params dp;
		const char *dpath;

		if (edgeq_draft_parse(cfg.draft, &dp, &dpath))
			return cli_error(
				EXIT_USAGE, "serve",
				"--draft must be lookup, layers:L (L >= 1) or a model file");
		if (cfg.draft_max < 0 || cfg.draft_max > 16)
			return cli_error(EXIT_USAGE, "serve",
					 "--draft-max must be 1..16");
	}
	{
		int kv, e = cli_kv_type("serve", opt_kv_type, false, &kv);

		if (e)
			return e;
		cfg.kv_type = kv;
	}
	if (opt_api_key_file && read_key_file(opt_api_key_file))
		return EXIT_USAGE;
	{
		struct edgeq_error ue = { 0 };

		if ((cfg.private_url && *cfg.private_url &&
		     srv_check_upstream_url("--private-url", cfg.private_url,
					    &ue)) ||
		    (cfg.public_url && *cfg.public_url &&
		     srv_check_upstream_url("--public-url", cfg.public_url,
					    &ue)))
			return cli_error(EXIT_USAGE, "serve", "%s", ue.msg);
		if ((cfg.private_pin &&
		     strncmp(cfg.private_pin, "sha256//", 8)) ||
		    (cfg.public_pin && strncmp(cfg.public_pin, "sha256//", 8)))
			return cli_error(
				EXIT_USAGE, "serve",
				"a pin is sha256//BASE64 of the endpoint's public key");
	}
	if (cfg.keys_file && cfg.api_key)
		return cli_error(
			EXIT_USAGE, "serve",
			"--keys-file replaces --api-key: give each application its own key (edgeq keys new NAME)");
	if (cfg.port < 0 || cfg.port > 65535)
		return cli_error(EXIT_USAGE, "serve",
				 "--port must be 0..65535");
	{
		enum edgeq_weights_mode wm;

		if (edgeq_weights_mode_parse(opt_weights, &wm))
			return cli_error(
				EXIT_USAGE, "serve",
				"--weights must be auto, mmap, preload or stream");
		cfg.weights_mode = (int)wm;
	}
	if (opt_weights_budget) {
		struct stat st;

		/* a percentage is of the model, as for edgeq run */
		if (stat(cfg.model_path, &st))
			st.st_size = 0;
		if (edgeq_parse_size(opt_weights_budget, (uint64_t)st.st_size,
				     &cfg.weights_budget))
			return cli_error(
				EXIT_USAGE, "serve",
				"--weights-budget: '%s' is not a size (512M, 2G, 50%% of the model)",
				opt_weights_budget);
	}
	if (strcmp(opt_pressure, "auto") && strcmp(opt_pressure, "psi") &&
	    strcmp(opt_pressure, "off"))
		return cli_error(EXIT_USAGE, "serve",
				 "--pressure must be auto, psi or off");
	if (strcmp(cfg.log_target, "auto") &&
	    strcmp(cfg.log_target, "journal") &&
	    strcmp(cfg.log_target, "stderr"))
		return cli_error(
			EXIT_USAGE, "serve",
			"--log-target must be auto, journal or stderr");
	srv_log_setup(cfg.log_target);
	/* one monitor, the engine session's: its memory level moves the
	 * weights budget, its states reach the router and each slot's
	 * placement (hook_pressure) */
	if (strcmp(opt_pressure, "off")) {
		edgeq_pressure_opts_init(&popts);
		popts.no_bpf = !strcmp(opt_pressure, "psi");
		popts.cool_bind = opt_cool_bind;
		cfg.pressure = &popts;
	} else if (opt_cool_bind) {
		return cli_error(
			EXIT_USAGE, "serve",
			"--cool-bind needs the pressure monitor (not --pressure off)");
	}
	cfg.on_pressure = hook_pressure;
	cfg.on_ctx = hook_ctx;
	cfg.on_ctx_free = hook_ctx_free;
	cfg.on_generation = hook_generation;
	cfg.on_metrics = hook_metrics;

	/* signals through a signalfd, read by the loop below */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	l.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (sfd < 0 || l.efd < 0)
		return cli_error(EXIT_FAIL, "serve", "signalfd/eventfd: %s",
				 strerror(errno));

	serve_energy_start();
	ret = srv_new(&cfg, &srv, &err);
	if (!ret)
		ret = srv_start(srv, &err);
	if (ret) {
		srv_log(SRV_ERR, NULL, "cannot start: %s", err.msg);
		srv_free(srv);
		return cli_exit_for(ret);
	}
	if (cfg.port_file && write_port_file(cfg.port_file, srv_port(srv)))
		srv_log(SRV_WARN, NULL, "cannot write %s", cfg.port_file);
	srv_log(SRV_NOTICE,
		(const char *const[]){ "EDGEQ_EVENT=listening", NULL },
		"listening on %s port %d%s%s; loading %s", cfg.listen,
		srv_port(srv), cfg.unix_socket ? " and " : "",
		cfg.unix_socket ? cfg.unix_socket : "", cfg.model_path);
	sd_notifyf(0, "STATUS=loading %s", cfg.model_path);

	l.srv = srv;
	if (pthread_create(&th, NULL, load_thread, &l)) {
		srv_free(srv);
		return cli_error(EXIT_FAIL, "serve", "cannot start the loader");
	}
	if (sd_watchdog_enabled(0, &wd_usec) <= 0)
		wd_usec = 0;
	/* a generation with no token for a whole watchdog period is stuck */
	stall_ns = wd_usec ? wd_usec * 1000 : 60ull * 1000000000;

	pfd[0].fd = sfd;
	pfd[0].events = POLLIN;
	pfd[1].fd = l.efd;
	pfd[1].events = POLLIN;
	while (!stop) {
		ret = poll(pfd, 2,
			   rolled_back_ns ? 100 :
			   wd_usec	  ? (int)(wd_usec / 2000) :
					    1000);
		if (ret < 0 && errno != EINTR)
			break;
		if (pfd[1].revents & POLLIN) {
			uint64_t v;

			if (read(l.efd, &v, sizeof(v)) < 0) {
				/* counted wake-up; value unused */
			}
			pthread_join(th, NULL);
			loaded = true;
			if (l.ret) {
				srv_log(SRV_ERR,
					(const char *const[]){
						"EDGEQ_EVENT=load-failed",
						NULL },
					"cannot load %s: %s", cfg.model_path,
					l.err.msg);
				sd_notifyf(0, "STATUS=load failed: %s",
					   l.err.msg);
				status = cli_exit_for(l.ret);
				serve_bundle_load_failed(l.err.msg);
				break;
			}
			sd_notifyf(0, "READY=1\nSTATUS=serving on port %d",
				   srv_port(srv));
		}
		if (pfd[0].revents & POLLIN &&
		    read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGHUP) {
				struct edgeq_error ke = { 0 };

				if (cfg.keys_file && srv_reload_keys(srv, &ke))
					srv_log(SRV_ERR, NULL,
						"SIGHUP: the keys file was not reloaded, the old keys stay: %s",
						ke.msg);
				if (cfg.tls_cert && srv_reload_tls(srv, &ke))
					srv_log(SRV_ERR, NULL,
						"SIGHUP: the TLS certificate was not reloaded, the old one stays: %s",
						ke.msg);
				srv_log(SRV_NOTICE, NULL,
					"SIGHUP: keys and TLS certificate reloaded where configured and valid; the rest of the configuration is read at start: restart to apply it");
				continue;
			}
			stop = true;
		}
		/* ping only while generations progress and the listener
		 * itself accepts and answers: a stuck or saturated listener
		 * gets the service restarted */
		if (wd_usec && srv_alive(srv, stall_ns) &&
		    srv_listener_answers(srv, 2000))
			sd_notify(0, "WATCHDOG=1");
		/* a bundle rolled back by its probation: let the answer that
		 * reported it go out, then stop */
		if (rolled_back_ns &&
		    edgeq_now_ns() - rolled_back_ns > 200000000ull)
			stop = true;
	}

	sd_notify(0, "STOPPING=1\nSTATUS=stopping");
	srv_log(SRV_NOTICE,
		(const char *const[]){ "EDGEQ_EVENT=stopping", NULL },
		"stopping: in-flight requests have %d s to finish",
		cfg.shutdown_timeout_s);
	if (!loaded) {
		/* still loading: no request can be running; wait for the loader */
		pthread_join(th, NULL);
	}
	left = srv_shutdown(srv,
			    (uint64_t)cfg.shutdown_timeout_s * 1000000000ull);
	srv_log(SRV_NOTICE,
		(const char *const[]){ "EDGEQ_EVENT=stopped", NULL },
		"stopped; %d request(s) had to be cancelled", left);
	srv_free(srv);
	serve_energy_stop();
	close(sfd);
	close(l.efd);
	if (rolled_back && status == EXIT_OK)
		status = EXIT_FAIL;
	return status;
}

EDGEQ_COMMAND(
	serve, "serve a model over an OpenAI-compatible HTTP API",
	"usage: edgeq serve -m MODEL [--listen ADDR] [--port PORT] [OPTIONS]\n\n"
	"Serves POST /v1/chat/completions and /v1/completions (stream: true gives\n"
	"server-sent events), GET /v1/models, /health and /metrics (Prometheus).\n"
	"Each request has a privacy class (confidential, internal, public: the\n"
	"edgeq_privacy field or the X-Edgeq-Privacy header; the stricter wins):\n"
	"confidential never leaves the box; internal may go to --private-url;\n"
	"public may go to --public-url when the local sustained speed cannot meet\n"
	"its SLO (edgeq_slo_tokens_per_s, edgeq_deadline_s). See 'edgeq route'.\n\n"
	"Settings come from flags, then EDGEQ_* variables, then the configuration\n"
	"file (" DEFAULT_CONFIG " or --config; keys are the flag names), then\n"
	"the defaults. Under systemd it notifies readiness and pings the watchdog.",
	serve_opts, serve_main);
