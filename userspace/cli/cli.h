/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The edgeq command's framework: subcommands register themselves with
 * EDGEQ_COMMAND() (no central table to edit), and parse their options with
 * cli_parse(), which also reads every option from an EDGEQ_* environment
 * variable (the flag wins).
 */
#ifndef EDGEQ_CLI_H
#define EDGEQ_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses, documented in `edgeq help` and edgeq(1). */
enum cli_exit {
	EXIT_OK = 0,
	EXIT_FAIL = 1,	/* the operation failed (message on stderr) */
	EXIT_USAGE = 2, /* bad command line */
	EXIT_BADINPUT =
		3,	/* a file or request was refused: malformed, tampered */
	EXIT_NORES = 4, /* out of a resource: memory budget, disk space */
	EXIT_NOPERM = 5,  /* missing privilege or kernel feature */
	EXIT_UNAVAIL = 6, /* a device, agent or service is not there */
};

struct cli_command {
	const char *name;
	const char *summary; /* one line for `edgeq help` */
	const char
		*usage; /* the synopsis and description for `edgeq help NAME` */
	int (*main)(int argc, char **argv);
	const struct cli_option *options;
};

#define EDGEQ_COMMAND(cname, summ, usage_text, opts, fn)                     \
	static const struct cli_command cli_cmd_##cname                      \
		__attribute__((used, section("edgeq_cmds"), aligned(8))) = { \
			#cname, summ, usage_text, fn, opts                   \
		}

enum cli_arg {
	CLI_END = 0,
	CLI_FLAG,   /* bool; env: 1/true/yes/on or 0/false/no/off */
	CLI_STR,    /* const char * */
	CLI_INT,    /* int */
	CLI_U64,    /* uint64_t */
	CLI_DOUBLE, /* double */
	CLI_SIZE,   /* uint64_t bytes: 512M, 2G ... (see edgeq_parse_size) */
	CLI_RAW,    /* const char *, kept as the user wrote it (e.g. "50%") */
};

struct cli_option {
	const char *name; /* --name, and EDGEQ_NAME (dashes become _) */
	char short_name;  /* -x, or 0 */
	enum cli_arg type;
	void *dest;
	const char *argname; /* shown in help: --model FILE */
	const char *help;
};

#define CLI_OPTIONS_END                            \
	{                                          \
		NULL, 0, CLI_END, NULL, NULL, NULL \
	}

/*
 * Parse @argv against @opts: first from the environment, then from the
 * command line. On return *@first_arg indexes the first positional argument.
 * Returns 0 to go on, -1 when --help was printed (exit 0), or EXIT_USAGE
 * after printing the problem on stderr.
 */
int cli_parse(const struct cli_command *cmd, int argc, char **argv,
	      int *first_arg);

/*
 * Set option @name of @cmd from the text @value, as a flag would (for
 * configuration files read before cli_parse()). Returns 0, -ENOENT for an
 * unknown name, -EINVAL for a bad value. CLI_STR values are kept as given:
 * pass a string that lives as long as the program.
 */
int cli_set_option(const struct cli_command *cmd, const char *name,
		   const char *value);

/* Print "edgeq NAME: message" on stderr; returns @status. */
int cli_kv_type(const char *cmd, const char *name, bool f32_ok, int *out);
int cli_error(int status, const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Map a negative errno from the library to an exit status. */
int cli_exit_for(int neg_errno);

/* The registered commands, for help and dispatch. */
const struct cli_command *cli_find(const char *name);
void cli_print_usage(const struct cli_command *cmd, FILE *out);

#endif /* EDGEQ_CLI_H */
