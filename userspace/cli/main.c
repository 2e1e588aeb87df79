// SPDX-License-Identifier: GPL-2.0-or-later
/* edgeq: one command, subcommands in the manner of git and ollama. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/edgeq.h>

#include "cli.h"

extern const struct cli_command __start_edgeq_cmds[];
extern const struct cli_command __stop_edgeq_cmds[];

const struct cli_command *cli_find(const char *name)
{
	const struct cli_command *c;

	for (c = __start_edgeq_cmds; c < __stop_edgeq_cmds; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static int cmp_cmd(const void *a, const void *b)
{
	const struct cli_command *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

static void print_exit_statuses(FILE *out)
{
	fputs("Exit status:\n"
	      "  0  success\n"
	      "  1  the operation failed (the message on stderr says why)\n"
	      "  2  usage error: unknown command or option, bad value\n"
	      "  3  input refused: malformed model file, bad request, tampered bundle\n"
	      "  4  out of a resource: memory budget, disk space\n"
	      "  5  missing privilege or kernel feature (CAP_BPF, io_uring, module)\n"
	      "  6  a device, agent or service is not available\n",
	      out);
}

static void print_overview(FILE *out)
{
	const struct cli_command *sorted[128];
	const struct cli_command *c;
	size_t n = 0, i;

	for (c = __start_edgeq_cmds; c < __stop_edgeq_cmds && n < 128; c++)
		sorted[n++] = c;
	qsort(sorted, n, sizeof(sorted[0]), cmp_cmd);
	fprintf(out,
		"usage: edgeq COMMAND [OPTIONS] [ARGS]\n\n"
		"edgeq runs llama-family language models on edge boxes, keeping them fast\n"
		"while the box heats up, runs short of memory and shares its accelerators.\n\n"
		"Commands:\n");
	for (i = 0; i < n; i++)
		fprintf(out, "  %-10s %s\n", sorted[i]->name,
			sorted[i]->summary);
	fputs("\nRun 'edgeq help COMMAND' or 'edgeq COMMAND --help' for a command's options.\n"
	      "Every option can also be set by an environment variable EDGEQ_<OPTION>\n"
	      "(upper case, dashes as underscores); a flag on the command line wins.\n\n",
	      out);
	print_exit_statuses(out);
}

static int cmd_help(int argc, char **argv)
{
	const struct cli_command *c;

	if (argc < 2) {
		print_overview(stdout);
		return EXIT_OK;
	}
	c = cli_find(argv[1]);
	if (!c)
		return cli_error(EXIT_USAGE, "help", "unknown command '%s'",
				 argv[1]);
	cli_print_usage(c, stdout);
	return EXIT_OK;
}

EDGEQ_COMMAND(help, "show the commands, or one command's options",
	      "usage: edgeq help [COMMAND]", NULL, cmd_help);

static bool version_json;
static const struct cli_option version_opts[] = {
	{ "json", 0, CLI_FLAG, &version_json, NULL, "print one JSON object" },
	CLI_OPTIONS_END
};

static int cmd_version(int argc, char **argv)
{
	const struct cli_command *self = cli_find("version");
	int first, ret;

	ret = cli_parse(self, argc, argv, &first);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (first < argc)
		return cli_error(EXIT_USAGE, "version",
				 "unexpected argument '%s'", argv[first]);
	if (version_json)
		printf("{\"version\": \"%s\", \"commit\": \"%s\"}\n",
		       edgeq_version(), edgeq_commit());
	else
		printf("edgeq %s (commit %s)\n", edgeq_version(),
		       edgeq_commit());
	return EXIT_OK;
}

EDGEQ_COMMAND(version, "print the version and the commit it was built from",
	      "usage: edgeq version [--json]", version_opts, cmd_version);

int main(int argc, char **argv)
{
	const struct cli_command *c;

	if (argc < 2) {
		print_overview(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cmd_help(1, argv);
	if (!strcmp(argv[1], "--version"))
		argv[1] = (char *)"version";
	c = cli_find(argv[1]);
	if (!c)
		return cli_error(
			EXIT_USAGE, NULL,
			"'%s' is not an edgeq command; see 'edgeq help'",
			argv[1]);
	return c->main(argc - 1, argv + 1);
}
