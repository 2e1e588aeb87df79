// SPDX-License-Identifier: GPL-2.0-or-later
/* edgeq keys: make and check the API keys file of edgeq serve. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "cli.h"
#include "server/keys.h"

static const char *o_class, *o_routes, *o_endpoints, *o_rate;
static int o_burst, o_conc;

static const struct cli_option keys_opts[] = {
	{ "class", 'c', CLI_STR, &o_class, "CLASS",
	  "lowest class its requests carry: confidential, internal, public" },
	{ "routes", 0, CLI_STR, &o_routes, "LIST",
	  "where its requests may run: local,private,public" },
	{ "endpoints", 0, CLI_STR, &o_endpoints, "LIST",
	  "chat,completions,models,metrics (all but metrics)" },
	{ "rate", 0, CLI_STR, &o_rate, "N/UNIT",
	  "token-bucket rate: N/s, N/min or N/h (unlimited)" },
	{ "burst", 0, CLI_INT, &o_burst, "N", "bucket size (the rate's N)" },
	{ "concurrency", 0, CLI_INT, &o_conc, "N", "requests in flight" },
	CLI_OPTIONS_END
};

/* The section for a new key, checked by the parser before it is shown. */
static int do_new(const char *name)
{
	struct edgeq_error e = { 0 };
	struct srv_keys *k = NULL;
	char key[80], hex[65], sec[1024];
	int n, ret;

	if (srv_key_generate(key, sizeof(key), hex))
		return cli_error(EXIT_FAIL, "keys", "no random source");
	n = snprintf(sec, sizeof(sec), "[%s]\nkey_sha256 = %s\n", name, hex);
	if (o_class)
		n += snprintf(sec + n, sizeof(sec) - (size_t)n, "class = %s\n",
			      o_class);
	if (o_routes)
		n += snprintf(sec + n, sizeof(sec) - (size_t)n, "routes = %s\n",
			      o_routes);
	if (o_endpoints)
		n += snprintf(sec + n, sizeof(sec) - (size_t)n,
			      "endpoints = %s\n", o_endpoints);
	if (o_rate)
		n += snprintf(sec + n, sizeof(sec) - (size_t)n, "rate = %s\n",
			      o_rate);
	if (o_burst)
		n += snprintf(sec + n, sizeof(sec) - (size_t)n, "burst = %d\n",
			      o_burst);
	if (o_conc)
		snprintf(sec + n, sizeof(sec) - (size_t)n, "concurrency = %d\n",
			 o_conc);
	ret = srv_keys_parse(sec, "new key", NULL, &k, &e);
	if (ret)
		return cli_error(EXIT_USAGE, "keys", "%s", e.msg);
	srv_keys_put(k);
	printf("%s\n", key);
	fprintf(stderr,
		"edgeq keys: the line above is the key: give it to the application now, it is not stored.\n"
		"edgeq keys: append this to the keys file (keys_file in edgeq.conf), then reload (SIGHUP):\n\n%s",
		sec);
	sodium_memzero(key, sizeof(key));
	return EXIT_OK;
}

static int do_check(const char *path)
{
	struct edgeq_error e = { 0 };
	struct srv_keys *k = NULL;
	int ret = srv_keys_load(path, NULL, &k, &e);

	if (ret)
		return cli_error(cli_exit_for(ret), "keys", "%s", e.msg);
	for (size_t i = 0; i < k->n; i++) {
		const struct srv_key *y = &k->keys[i];

		printf("%-24s floor=%s", y->name, edgeq_privacy_name(y->floor));
		printf(" routes=");
		for (int r = 0, c = 0; r < EDGEQ_ROUTE_REJECT; r++)
			if (y->routes & (1u << r))
				printf("%s%s", c++ ? "," : "",
				       edgeq_route_name((enum edgeq_route)r));
		printf(" endpoints=");
		for (int p = 0, c = 0; p < SRV_EP_COUNT; p++)
			if (y->endpoints & (1u << p))
				printf("%s%s", c++ ? "," : "",
				       srv_endpoint_name((enum srv_endpoint)p));
		if (y->rate > 0)
			printf(" rate=%.3g/s burst=%.0f", y->rate, y->burst);
		if (y->concurrency)
			printf(" concurrency=%u", y->concurrency);
		putchar('\n');
	}
	printf("%s: %zu key%s, valid\n", path, k->n, k->n == 1 ? "" : "s");
	srv_keys_put(k);
	return EXIT_OK;
}

static int cmd_keys(int argc, char **argv)
{
	const struct cli_command *self = cli_find("keys");
	const char *action, *arg;
	int first, ret;

	ret = cli_parse(self, argc, argv, &first);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (first >= argc)
		return cli_error(EXIT_USAGE, "keys",
				 "which action? new NAME, or check FILE");
	action = argv[first];
	arg = first + 1 < argc ? argv[first + 1] : NULL;
	if (first + 2 < argc)
		return cli_error(EXIT_USAGE, "keys", "unexpected argument '%s'",
				 argv[first + 2]);
	if (!strcmp(action, "new") && arg)
		return do_new(arg);
	if (!strcmp(action, "check") && arg)
		return do_check(arg);
	return cli_error(EXIT_USAGE, "keys",
			 "'%s%s%s': use 'keys new NAME' or 'keys check FILE'",
			 action, arg ? " " : "", arg ? arg : "");
}

EDGEQ_COMMAND(
	keys, "make API keys for edgeq serve and check the keys file",
	"usage: edgeq keys new NAME [--class C] [--routes LIST] [--endpoints LIST]\n"
	"                           [--rate N/UNIT] [--burst N] [--concurrency N]\n"
	"       edgeq keys check FILE\n\n"
	"new prints a fresh key on stdout (once: only its SHA-256 is kept) and,\n"
	"on stderr, the section to append to the keys file. check validates a\n"
	"keys file as edgeq serve would and lists what each key may do. A\n"
	"request's class is the stricter of its key's class and what it asks:\n"
	"an application registered as confidential never leaves the box.\n"
	"Format: Documentation/admin-guide.rst (API keys).",
	keys_opts, cmd_keys);
