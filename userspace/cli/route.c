// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq route --explain: print the privacy router's decision table for a
 * request, with the same edgeq_router_decide() the daemon uses.
 */
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/router.h>

#include "cli.h"
#include "server/server.h"

static bool opt_explain, opt_private, opt_public, opt_local_down, opt_json;
static const char *opt_class, *opt_config;
static int opt_prompt_tokens = 0, opt_max_tokens = 256, opt_slots = 1;
static int opt_running, opt_waiting, opt_queue = 16;
static double opt_slo, opt_deadline, opt_peak, opt_throttle = 1,
					       opt_prompt_tok_s;

static const struct cli_option route_opts[] = {
	{ "explain", 'e', CLI_FLAG, &opt_explain, NULL,
	  "print the decision table (the default)" },
	{ "config", 0, CLI_STR, &opt_config, "FILE",
	  "take endpoints, local-tok-s, slots and queue from edgeq serve's config" },
	{ "class", 'c', CLI_STR, &opt_class, "CLASS",
	  "confidential, internal or public (default: all three)" },
	{ "prompt-tokens", 0, CLI_INT, &opt_prompt_tokens, "N",
	  "prompt length" },
	{ "max-tokens", 'n', CLI_INT, &opt_max_tokens, "N",
	  "tokens to generate (256)" },
	{ "slo", 0, CLI_DOUBLE, &opt_slo, "TOK_S",
	  "decode speed the client needs, tok/s (0: none)" },
	{ "deadline", 0, CLI_DOUBLE, &opt_deadline, "SECONDS",
	  "whole answer within (0: none)" },
	{ "peak-tok-s", 0, CLI_DOUBLE, &opt_peak, "TOK_S",
	  "local unthrottled decode speed (0: unknown)" },
	{ "prompt-tok-s", 0, CLI_DOUBLE, &opt_prompt_tok_s, "TOK_S",
	  "local prefill speed (0: not counted)" },
	{ "throttle", 0, CLI_DOUBLE, &opt_throttle, "F",
	  "share of peak available now, 0..1 (1)" },
	{ "slots", 0, CLI_INT, &opt_slots, "N",
	  "concurrent generations (1, as edgeq serve)" },
	{ "running", 0, CLI_INT, &opt_running, "N", "generations running now" },
	{ "waiting", 0, CLI_INT, &opt_waiting, "N", "requests waiting now" },
	{ "queue", 0, CLI_INT, &opt_queue, "N",
	  "queue bound (8, as edgeq serve)" },
	{ "local-down", 0, CLI_FLAG, &opt_local_down, NULL,
	  "the local engine or its device has failed" },
	{ "private", 0, CLI_FLAG, &opt_private, NULL,
	  "a private endpoint is configured" },
	{ "public", 0, CLI_FLAG, &opt_public, NULL,
	  "a public endpoint is configured" },
	{ "json", 0, CLI_FLAG, &opt_json, NULL, "one JSON object per class" },
	CLI_OPTIONS_END
};

/* The daemon's configuration, for the keys that change a decision; the
 * flags given here still win (they are parsed after). */
static int on_ini(void *user, const char *section, const char *name,
		  const char *value)
{
	if (!strcmp(name, "private-url"))
		opt_private = *value != '\0';
	else if (!strcmp(name, "public-url"))
		opt_public = *value != '\0';
	else if (!strcmp(name, "local-tok-s"))
		opt_peak = atof(value);
	else if (!strcmp(name, "slots"))
		opt_slots = atoi(value);
	else if (!strcmp(name, "queue"))
		opt_queue = atoi(value);
	return 1;
}

static int read_config(int argc, char **argv)
{
	const char *path = getenv("EDGEQ_CONFIG");
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			path = argv[++i];
		else if (!strncmp(argv[i], "--config=", 9))
			path = argv[i] + 9;
	}
	if (!path)
		return 0;
	if (ini_parse(path, on_ini, NULL))
		return cli_error(EXIT_USAGE, "route", "cannot read %s", path);
	return 0;
}

static int route_main(int argc, char **argv)
{
	const struct cli_command *self = cli_find("route");
	struct edgeq_router_config cfg = { 0 };
	struct edgeq_router_capacity cap = { 0 };
	struct edgeq_route_request req = { 0 };
	struct edgeq_route_decision d;
	enum edgeq_privacy p, first = 0, last = EDGEQ_PRIVACY_COUNT - 1;
	int ret, arg;

	/* serve's own defaults, so that both tell the same story */
	{
		struct srv_config sc;

		srv_config_init(&sc);
		opt_slots = sc.slots;
		opt_queue = sc.queue;
		opt_max_tokens = sc.default_max_tokens;
	}
	ret = read_config(argc, argv);
	if (ret)
		return ret;
	ret = cli_parse(self, argc, argv, &arg);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (arg < argc)
		return cli_error(EXIT_USAGE, "route",
				 "unexpected argument '%s'", argv[arg]);
	if (opt_class) {
		if (edgeq_privacy_parse(opt_class, &first))
			return cli_error(
				EXIT_USAGE, "route",
				"unknown class '%s': confidential, internal or public",
				opt_class);
		last = first;
	}
	if (opt_prompt_tokens < 0 || opt_max_tokens < 0 || opt_slots < 1 ||
	    opt_running < 0 || opt_waiting < 0 || opt_queue < 0 ||
	    opt_slo < 0 || opt_deadline < 0 || opt_peak < 0 ||
	    opt_throttle < 0 || opt_throttle > 1)
		return cli_error(
			EXIT_USAGE, "route",
			"counts, speeds and times must be >= 0, --slots >= 1, --throttle in 0..1");

	cfg.have_private = opt_private;
	cfg.have_public = opt_public;
	cap.peak_tok_s = opt_peak;
	cap.throttle = opt_throttle;
	cap.prompt_tok_s = opt_prompt_tok_s;
	cap.slots = (uint32_t)opt_slots;
	cap.running = (uint32_t)opt_running;
	cap.waiting = (uint32_t)opt_waiting;
	cap.queue_max = (uint32_t)opt_queue;
	cap.local_down = opt_local_down;
	req.prompt_tokens = (uint32_t)opt_prompt_tokens;
	req.max_tokens = (uint32_t)opt_max_tokens;
	req.slo_tok_s = opt_slo;
	req.deadline_s = opt_deadline;

	if (!opt_json) {
		printf("local: peak %.1f tok/s x throttle %.2f = sustained %.1f tok/s; "
		       "%d/%d slots busy, %d/%d waiting%s\n",
		       opt_peak, opt_throttle > 0 ? opt_throttle : 1,
		       opt_peak * (opt_throttle > 0 ? opt_throttle : 1),
		       opt_running, opt_slots, opt_waiting, opt_queue,
		       opt_local_down ? "; LOCAL DOWN" : "");
		printf("request: %d prompt + %d new tokens; SLO %.1f tok/s, deadline %.1f s; "
		       "endpoints: private %s, public %s\n\n",
		       opt_prompt_tokens, opt_max_tokens, opt_slo, opt_deadline,
		       opt_private ? "yes" : "no", opt_public ? "yes" : "no");
		printf("%-13s %-22s %-8s %-9s %-9s %-6s %s\n", "class",
		       "allowed", "route", "local t/s", "local s", "slo",
		       "reason");
	}
	for (p = first; p <= last; p++) {
		char allowed[32] = "";
		int r;

		req.privacy = p;
		ret = edgeq_router_decide(&cfg, &cap, &req, &d);
		if (ret)
			return cli_error(cli_exit_for(ret), "route",
					 "cannot decide: %s", strerror(-ret));
		for (r = 0; r < EDGEQ_ROUTE_REJECT; r++)
			if (d.allowed & (1u << r)) {
				if (*allowed)
					strcat(allowed, ",");
				strcat(allowed, edgeq_route_name(r));
			}
		if (opt_json)
			printf("{\"class\": \"%s\", \"route\": \"%s\", \"reason\": \"%s\", "
			       "\"allowed\": \"%s\", \"sustained_tok_s\": %.3f, "
			       "\"local_tok_s\": %.3f, \"local_s\": %.3f, "
			       "\"slo_feasible\": %s, \"overloaded\": %s}\n",
			       edgeq_privacy_name(p), edgeq_route_name(d.route),
			       edgeq_route_reason_name(d.reason), allowed,
			       d.sustained_tok_s, d.local_tok_s, d.local_s,
			       d.slo_feasible ? "true" : "false",
			       d.overloaded ? "true" : "false");
		else
			printf("%-13s %-22s %-8s %-9.1f %-9.2f %-6s %s: %s\n",
			       edgeq_privacy_name(p), allowed,
			       edgeq_route_name(d.route), d.local_tok_s,
			       d.local_s, d.slo_feasible ? "met" : "UNMET",
			       edgeq_route_reason_name(d.reason),
			       edgeq_route_reason_text(d.reason));
	}
	return EXIT_OK;
}

EDGEQ_COMMAND(
	route, "explain where the privacy router sends a request",
	"usage: edgeq route [--explain] [--class CLASS] [--prompt-tokens N]\n"
	"                   [--max-tokens N] [--slo TOK_S] [--deadline S] ...\n\n"
	"Prints the router's decision table: for each privacy class (or the one\n"
	"given), the routes it allows, where it goes and why. The local speed is\n"
	"the SUSTAINED one: --peak-tok-s x --throttle, shared among the running\n"
	"generations and behind the queue. Confidential never leaves the box.",
	route_opts, route_main);
