// SPDX-License-Identifier: GPL-2.0-or-later
/* edgeq pull: fetch a GGUF model into the model store. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include <edgeq/pull.h>

#include "cli.h"

static const char *o_store, *o_name, *o_sha, *o_endpoint, *o_rev, *o_token,
	*o_ca, *o_progress;
static int o_retries = 5, o_stall = 30;
static bool o_require, o_force, o_insecure, o_json, o_quiet;

static const struct cli_option pull_opts[] = {
	{ "models-dir", 'd', CLI_STR, &o_store, "DIR",
	  "model store (" EDGEQ_PULL_DEFAULT_STORE ", $EDGEQ_MODELS_DIR)" },
	{ "name", 'o', CLI_STR, &o_name, "NAME",
	  "file name in the store (default: the URL's last part)" },
	{ "sha256", 0, CLI_STR, &o_sha, "HEX",
	  "expected SHA-256 (default: what the server states)" },
	{ "require-sha256", 0, CLI_FLAG, &o_require, NULL,
	  "refuse a file whose digest nobody states" },
	{ "endpoint", 0, CLI_STR, &o_endpoint, "URL",
	  "hub for hf: sources ($HF_ENDPOINT, " EDGEQ_PULL_DEFAULT_ENDPOINT
	  ")" },
	{ "revision", 0, CLI_STR, &o_rev, "REV",
	  "hub branch, tag or commit (main)" },
	{ "token", 0, CLI_STR, &o_token, "TOKEN",
	  "bearer token (default for hf: $HF_TOKEN)" },
	{ "ca-file", 0, CLI_STR, &o_ca, "FILE",
	  "CA bundle that signs the servers' certificates" },
	{ "retries", 0, CLI_INT, &o_retries, "N",
	  "resume a dropped transfer up to N times (5)" },
	{ "stall-timeout", 0, CLI_INT, &o_stall, "S",
	  "give a transfer up (and resume it) after S idle seconds (30)" },
	{ "force", 'f', CLI_FLAG, &o_force, NULL,
	  "replace a model already in the store" },
	{ "insecure-http", 0, CLI_FLAG, &o_insecure, NULL,
	  "allow plain http to hosts other than loopback" },
	{ "progress", 0, CLI_STR, &o_progress, "WHEN",
	  "auto (a bar on a terminal), bar, lines or none" },
	{ "quiet", 'q', CLI_FLAG, &o_quiet, NULL, "print only errors" },
	{ "json", 0, CLI_FLAG, &o_json, NULL,
	  "print the result as one JSON object" },
	CLI_OPTIONS_END
};

enum progress_mode { PROGRESS_NONE, PROGRESS_BAR, PROGRESS_LINES };

struct progress {
	enum progress_mode mode;
	int last_tenth; /* for lines: the last 10 % step printed */
	bool drawn;
};

static void human(char *out, size_t len, double bytes)
{
	const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (bytes >= 1024 && u < 4) {
		bytes /= 1024;
		u++;
	}
	snprintf(out, len, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
}

static void on_progress(void *arg, uint64_t done, uint64_t total, double bps)
{
	struct progress *pr = arg;
	char d[32], t[32], s[32], bar[41];
	int fill, tenth;

	human(d, sizeof(d), (double)done);
	human(s, sizeof(s), bps);
	if (pr->mode == PROGRESS_LINES) {
		tenth = total ? (int)(done * 10 / total) : 0;
		if (total && tenth > pr->last_tenth) {
			pr->last_tenth = tenth;
			human(t, sizeof(t), (double)total);
			fprintf(stderr, "pull: %3d%%  %s of %s  %s/s\n",
				tenth * 10, d, t, s);
		}
		return;
	}
	if (pr->mode != PROGRESS_BAR)
		return;
	if (!total) {
		fprintf(stderr, "\r%s  %s/s   ", d, s);
	} else {
		double eta = bps > 0 ? (double)(total - done) / bps : 0;

		human(t, sizeof(t), (double)total);
		fill = (int)(done * 40 / total);
		memset(bar, '=', (size_t)fill);
		memset(bar + fill, ' ', (size_t)(40 - fill));
		bar[40] = '\0';
		if (fill < 40 && fill > 0)
			bar[fill - 1] = '>';
		fprintf(stderr, "\r%3d%% [%s] %s / %s  %s/s  ETA %.0fs   ",
			(int)(done * 100 / total), bar, d, t, s, eta);
	}
	pr->drawn = true;
}

static void print_result(const struct edgeq_pull_result *r)
{
	char sz[32];

	if (o_json) {
		json_t *j = json_pack(
			"{s:s, s:s, s:s, s:I, s:s, s:s?, s:I, s:i}", "path",
			r->path, "manifest", r->manifest, "url", r->url, "size",
			(json_int_t)r->size, "sha256", r->sha256, "verified_by",
			r->digest_from, "resumed_from",
			(json_int_t)r->resumed_from, "attempts",
			(int)r->attempts);
		char *txt = j ? json_dumps(j, JSON_COMPACT) : NULL;

		if (txt)
			puts(txt);
		free(txt);
		json_decref(j);
		return;
	}
	if (o_quiet)
		return;
	human(sz, sizeof(sz), (double)r->size);
	printf("pulled %s (%s)\n", r->path, sz);
	printf("  sha256 %s (%s)\n", r->sha256,
	       r->digest_from ? r->digest_from : "not verified");
	if (r->resumed_from)
		printf("  resumed from byte %llu\n",
		       (unsigned long long)r->resumed_from);
	printf("  manifest %s (unsigned: edgeq manifest sign)\n", r->manifest);
}

static int cmd_pull(int argc, char **argv)
{
	const struct cli_command *self = cli_find("pull");
	struct edgeq_pull_params p;
	struct edgeq_pull_result *r;
	struct edgeq_error e = { 0 };
	struct progress pr = { 0 };
	int first, ret;

	ret = cli_parse(self, argc, argv, &first);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (first >= argc)
		return cli_error(EXIT_USAGE, "pull",
				 "which model? a URL or hf:OWNER/REPO/FILE");
	if (first + 1 < argc)
		return cli_error(EXIT_USAGE, "pull", "unexpected argument '%s'",
				 argv[first + 1]);
	if (o_retries < 0 || o_retries > 1000)
		return cli_error(EXIT_USAGE, "pull",
				 "--retries wants 0 to 1000, not %d",
				 o_retries);
	if (o_stall < 1 || o_stall > 3600)
		return cli_error(EXIT_USAGE, "pull",
				 "--stall-timeout wants 1 to 3600 s, not %d",
				 o_stall);
	if (!o_progress || !strcmp(o_progress, "auto"))
		pr.mode = !o_quiet && !o_json && isatty(2) ? PROGRESS_BAR :
							     PROGRESS_NONE;
	else if (!strcmp(o_progress, "bar"))
		pr.mode = PROGRESS_BAR;
	else if (!strcmp(o_progress, "lines"))
		pr.mode = PROGRESS_LINES;
	else if (!strcmp(o_progress, "none"))
		pr.mode = PROGRESS_NONE;
	else
		return cli_error(
			EXIT_USAGE, "pull",
			"--progress: auto, bar, lines or none, not '%s'",
			o_progress);

	edgeq_pull_params_init(&p);
	p.source = argv[first];
	p.store = o_store;
	p.name = o_name;
	p.sha256 = o_sha;
	p.endpoint = o_endpoint;
	p.revision = o_rev;
	p.token = o_token;
	p.ca_file = o_ca;
	p.retries = (unsigned int)o_retries;
	p.require_sha256 = o_require;
	p.force = o_force;
	p.insecure_http = o_insecure;
	if (getenv("EDGEQ_PULL_RETRY_DELAY_MS"))
		p.retry_delay_ms =
			(unsigned int)atoi(getenv("EDGEQ_PULL_RETRY_DELAY_MS"));
	p.stall_s = (unsigned int)o_stall;
	p.progress = on_progress;
	p.progress_arg = &pr;

	/* a source or name that cannot work is a usage error, before any I/O */
	ret = edgeq_pull_resolve(&p, NULL, 0, NULL, 0, &e);
	if (!ret && o_sha &&
	    (strlen(o_sha) != 64 ||
	     strspn(o_sha, "0123456789abcdefABCDEF") != 64))
		ret = edgeq_error_set(&e, EINVAL,
				      "--sha256 wants 64 hex digits, not '%s'",
				      o_sha);
	if (ret)
		return cli_error(EXIT_USAGE, "pull", "%s", e.msg);

	r = calloc(1, sizeof(*r));
	if (!r)
		return cli_error(EXIT_NORES, "pull", "out of memory");
	ret = edgeq_pull(&p, r, &e);
	if (pr.drawn)
		fputc('\n', stderr);
	if (ret) {
		free(r);
		return cli_error(ret == -EEXIST ? EXIT_FAIL : cli_exit_for(ret),
				 "pull", "%s", e.msg);
	}
	if (!r->digest_from && !o_quiet)
		fprintf(stderr,
			"edgeq pull: warning: nobody stated a SHA-256 for this file, so it was not verified (--sha256 HEX checks it)\n");
	print_result(r);
	free(r);
	return EXIT_OK;
}

EDGEQ_COMMAND(
	pull, "download a GGUF model into the model store",
	"usage: edgeq pull [OPTIONS] URL|hf:OWNER/REPO/FILE\n\n"
	"Downloads a model over http(s) into the model store, resuming an\n"
	"interrupted download (HTTP Range) and retrying a dropped connection.\n"
	"hf:OWNER/REPO/FILE is fetched from a Hugging Face-style hub\n"
	"(ENDPOINT/OWNER/REPO/resolve/REV/FILE). The SHA-256 is checked against\n"
	"--sha256, or what the server states (X-Linked-Etag, or an ETag that is\n"
	"a SHA-256); a .gguf must be a well-formed GGUF file. The file appears\n"
	"in the store only when complete and checked (atomic rename), with an\n"
	"unsigned manifest beside it (NAME.gguf.manifest.json).\n\n"
	"Exit status 3: checksum mismatch or not a GGUF file; 4: the disk is\n"
	"full (the partial file is kept: pull again to resume).",
	pull_opts, cmd_pull);
