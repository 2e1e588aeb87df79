// SPDX-License-Identifier: GPL-2.0-or-later
/* Option parsing shared by every subcommand: flags, env, help, errors. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/edgeq.h>
#include <edgeq/engine.h>

#include "cli.h"

int cli_error(int status, const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "edgeq%s%s: ", cmd ? " " : "", cmd ? cmd : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return status;
}

/* --kv-type NAME of @cmd into *out (enum edgeq_kv_type); F32 only where
 * @f32_ok. 0, or the usage error (said). */
int cli_kv_type(const char *cmd, const char *name, bool f32_ok, int *out)
{
	if (!strcmp(name, "f16"))
		*out = EDGEQ_KV_F16;
	else if (!strcmp(name, "q8_0"))
		*out = EDGEQ_KV_Q8_0;
	else if (f32_ok && !strcmp(name, "f32"))
		*out = EDGEQ_KV_F32;
	else
		return cli_error(EXIT_USAGE, cmd, "--kv-type '%s': %s", name,
				 f32_ok ? "f16, q8_0 or f32" : "f16 or q8_0");
	return 0;
}

int cli_exit_for(int neg_errno)
{
	switch (-neg_errno) {
	case 0:
		return EXIT_OK;
	case EINVAL:
	case EBADMSG:
	case EPROTO:
	case EILSEQ:
	case ENOEXEC:
	case EKEYREJECTED:
		return EXIT_BADINPUT;
	case ENOMEM:
	case ENOSPC:
	case EDQUOT:
	case E2BIG:
		return EXIT_NORES;
	case EPERM:
	case EACCES:
	case ENOSYS:
	case EOPNOTSUPP:
		return EXIT_NOPERM;
	case ENODEV:
	case ENXIO:
	case ECONNREFUSED:
	case EHOSTUNREACH:
		return EXIT_UNAVAIL;
	default:
		return EXIT_FAIL;
	}
}

static void env_name(const char *name, char *buf, size_t len)
{
	size_t i = 0, j;

	j = (size_t)snprintf(buf, len, "EDGEQ_");
	for (; name[i] && j + 1 < len; i++, j++)
		buf[j] = name[i] == '-' ? '_' :
					  (char)toupper((unsigned char)name[i]);
	buf[j] = '\0';
}

static int parse_bool(const char *v, bool *out)
{
	if (!strcasecmp(v, "1") || !strcasecmp(v, "true") ||
	    !strcasecmp(v, "yes") || !strcasecmp(v, "on")) {
		*out = true;
		return 0;
	}
	if (!strcasecmp(v, "0") || !strcasecmp(v, "false") ||
	    !strcasecmp(v, "no") || !strcasecmp(v, "off")) {
		*out = false;
		return 0;
	}
	return -EINVAL;
}

static int set_value(const struct cli_option *o, const char *v)
{
	char *end;
	long long ll;
	double d;

	switch (o->type) {
	case CLI_FLAG:
		if (!v) {
			*(bool *)o->dest = true;
			return 0;
		}
		return parse_bool(v, (bool *)o->dest);
	case CLI_STR:
	case CLI_RAW:
		*(const char **)o->dest = v;
		return 0;
	case CLI_INT:
		errno = 0;
		ll = strtoll(v, &end, 0);
		if (errno || end == v || *end || ll < -2147483647LL ||
		    ll > 2147483647LL)
			return -EINVAL;
		*(int *)o->dest = (int)ll;
		return 0;
	case CLI_U64:
		if (*v == '-')
			return -EINVAL;
		errno = 0;
		*(uint64_t *)o->dest = strtoull(v, &end, 0);
		return errno || end == v || *end ? -EINVAL : 0;
	case CLI_DOUBLE:
		errno = 0;
		d = strtod(v, &end);
		if (errno || end == v || *end)
			return -EINVAL;
		*(double *)o->dest = d;
		return 0;
	case CLI_SIZE:
		return edgeq_parse_size(v, 0, (uint64_t *)o->dest);
	default:
		return -EINVAL;
	}
}

static const char *type_word(const struct cli_option *o)
{
	if (o->argname)
		return o->argname;
	switch (o->type) {
	case CLI_INT:
	case CLI_U64:
		return "N";
	case CLI_DOUBLE:
		return "X";
	case CLI_SIZE:
		return "SIZE";
	default:
		return "VALUE";
	}
}

void cli_print_usage(const struct cli_command *cmd, FILE *out)
{
	const struct cli_option *o;
	char env[64], left[80];

	fprintf(out, "%s\n", cmd->usage);
	if (!cmd->options || !cmd->options[0].name)
		return;
	fprintf(out,
		"\nOptions (each also read from the EDGEQ_* variable shown; the flag wins):\n");
	for (o = cmd->options; o->name; o++) {
		env_name(o->name, env, sizeof(env));
		if (o->type == CLI_FLAG)
			snprintf(left, sizeof(left), "%s%c%s--%s",
				 o->short_name ? "-" : "",
				 o->short_name ? o->short_name : ' ',
				 o->short_name ? ", " : "  ", o->name);
		else
			snprintf(left, sizeof(left), "%s%c%s--%s %s",
				 o->short_name ? "-" : "",
				 o->short_name ? o->short_name : ' ',
				 o->short_name ? ", " : "  ", o->name,
				 type_word(o));
		fprintf(out, "  %-28s %s [%s]\n", left, o->help ? o->help : "",
			env);
	}
	fprintf(out, "  %-28s %s\n", "-h, --help", "show this help");
}

int cli_parse(const struct cli_command *cmd, int argc, char **argv,
	      int *first_arg)
{
	const struct cli_option *opts = cmd->options;
	struct option lopts[64];
	char shorts[160] = "h";
	size_t n = 0, sl = 1;
	const struct cli_option *o;
	char env[64];
	int c, idx;

	/* 1. environment */
	for (o = opts; o && o->name; o++) {
		const char *v;

		env_name(o->name, env, sizeof(env));
		v = getenv(env);
		if (!v)
			continue;
		if (set_value(o, v))
			return cli_error(EXIT_USAGE, cmd->name,
					 "invalid value '%s' in %s", v, env);
	}

	/* 2. command line */
	for (o = opts; o && o->name && n < 62; o++, n++) {
		lopts[n].name = o->name;
		lopts[n].has_arg = o->type == CLI_FLAG ? no_argument :
							 required_argument;
		lopts[n].flag = NULL;
		lopts[n].val = 256 + (int)n;
		if (o->short_name && sl + 3 < sizeof(shorts)) {
			shorts[sl++] = o->short_name;
			if (o->type != CLI_FLAG)
				shorts[sl++] = ':';
		}
	}
	lopts[n].name = "help";
	lopts[n].has_arg = no_argument;
	lopts[n].flag = NULL;
	lopts[n].val = 'h';
	memset(&lopts[n + 1], 0, sizeof(lopts[0]));
	shorts[sl] = '\0';

	/*
	 * GNU order: options may follow positional arguments (the form usage
	 * lines print, "manifest verify -K KEY FILE -m MODEL"); "--" ends the
	 * options. optind = 0 makes glibc start its permutation afresh.
	 */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lopts, &idx)) != -1) {
		if (c == 'h') {
			cli_print_usage(cmd, stdout);
			return -1;
		}
		if (c == '?' || c == ':') {
			if (optopt && optopt < 256)
				return cli_error(
					EXIT_USAGE, cmd->name,
					"%s option -%c; see 'edgeq help %s'",
					c == ':' ? "missing value for" :
						   "unknown",
					optopt, cmd->name);
			return cli_error(
				EXIT_USAGE, cmd->name,
				"unknown or incomplete option '%s'; see 'edgeq help %s'",
				argv[optind - 1], cmd->name);
		}
		if (c >= 256)
			o = &opts[c - 256];
		else
			for (o = opts; o->name && o->short_name != c; o++)
				;
		if (set_value(o, optarg))
			return cli_error(EXIT_USAGE, cmd->name,
					 "invalid value '%s' for --%s",
					 optarg ? optarg : "", o->name);
	}
	*first_arg = optind;
	return 0;
}

int cli_set_option(const struct cli_command *cmd, const char *name,
		   const char *value)
{
	const struct cli_option *o;

	for (o = cmd->options; o && o->name; o++)
		if (!strcmp(o->name, name))
			return set_value(o, value) ? -EINVAL : 0;
	return -ENOENT;
}
