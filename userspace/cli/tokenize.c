// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq tokenize: the token ids of a text under a model's tokenizer, as
 * llama.cpp's llama-tokenize gives them. Only the vocabulary is read, so a
 * full model and a vocabulary-only GGUF work alike, whatever decoder the
 * file is for.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/engine.h>

#include "cli.h"
#include "model/model.h"

static const char *opt_model;
static bool opt_ids, opt_pieces, opt_no_bos, opt_parse_special, opt_stdin;

static const struct cli_option tokenize_opts[] = {
	{ "model", 'm', CLI_STR, &opt_model, "FILE",
	  "GGUF model or vocabulary-only file" },
	{ "ids", 0, CLI_FLAG, &opt_ids, NULL,
	  "print the ids as a JSON list (the default)" },
	{ "pieces", 0, CLI_FLAG, &opt_pieces, NULL,
	  "print one line per token: id -> 'piece' (raw bytes; a control token's text)" },
	{ "no-bos", 0, CLI_FLAG, &opt_no_bos, NULL,
	  "add no BOS (nor EOS), which by default are added when the vocabulary asks" },
	{ "parse-special", 0, CLI_FLAG, &opt_parse_special, NULL,
	  "match control tokens written in the text, such as <|im_start|>" },
	{ "stdin", 0, CLI_FLAG, &opt_stdin, NULL,
	  "read the text from standard input instead of the argument" },
	CLI_OPTIONS_END
};

/* All of stdin; NUL-terminated. A NUL byte in it is refused. */
static int read_stdin(char **out)
{
	size_t n = 0, cap = 4096, got;
	char *buf = malloc(cap), *nb;

	if (!buf)
		return -ENOMEM;
	while ((got = fread(buf + n, 1, cap - n - 1, stdin)) > 0) {
		n += got;
		if (cap - n - 1 == 0) {
			if (cap > (1u << 30)) {
				free(buf);
				return -E2BIG;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (ferror(stdin)) {
		free(buf);
		return -EIO;
	}
	buf[n] = 0;
	if (strlen(buf) != n) {
		free(buf);
		return -EILSEQ;
	}
	*out = buf;
	return 0;
}

static int print_pieces(const struct edgeq_model *m, const int32_t *ids,
			size_t n)
{
	char piece[4096];
	size_t i;

	for (i = 0; i < n; i++) {
		const struct edgeq_vocab *v = &m->vocab;
		int l = edgeq_token_to_piece(m, ids[i], piece, sizeof(piece));

		if (l < 0)
			return l;
		printf("%6d -> '", ids[i]);
		/* a control token decodes to nothing: show its text, as
		 * llama-tokenize does */
		if (v->ttype[ids[i]] == TT_CONTROL)
			fwrite(v->text[ids[i]], 1, v->len[ids[i]], stdout);
		else
			fwrite(piece, 1, (size_t)l, stdout);
		fputs("'\n", stdout);
	}
	return 0;
}

static int cmd_tokenize(int argc, char **argv)
{
	const struct cli_command *self = cli_find("tokenize");
	struct edgeq_model_params mp;
	struct edgeq_error err = { 0 };
	struct edgeq_model *m = NULL;
	char *text = NULL, *owned = NULL;
	int32_t *ids = NULL;
	size_t cap, n, i;
	int ret, arg, st = EXIT_OK;

	ret = cli_parse(self, argc, argv, &arg);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (!opt_model)
		return cli_error(EXIT_USAGE, "tokenize", "-m FILE is required");
	if (opt_ids && opt_pieces)
		return cli_error(EXIT_USAGE, "tokenize",
				 "--ids and --pieces exclude each other");
	if (opt_stdin) {
		if (arg < argc)
			return cli_error(
				EXIT_USAGE, "tokenize",
				"a TEXT argument and --stdin exclude each other");
		ret = read_stdin(&owned);
		if (ret)
			return cli_error(ret == -EILSEQ ? EXIT_BADINPUT :
							  cli_exit_for(ret),
					 "tokenize",
					 "reading standard input: %s",
					 ret == -EILSEQ ?
						 "it holds a NUL byte" :
						 strerror(-ret));
		text = owned;
	} else {
		if (arg >= argc)
			return cli_error(EXIT_USAGE, "tokenize",
					 "no TEXT given (or --stdin)");
		if (arg + 1 < argc)
			return cli_error(
				EXIT_USAGE, "tokenize",
				"unexpected argument '%s' (quote the text)",
				argv[arg + 1]);
		text = argv[arg];
	}

	edgeq_model_params_init(&mp);
	mp.path = opt_model;
	mp.vocab_only = true;
	ret = edgeq_model_load(&mp, &m, &err);
	if (ret) {
		st = ret == -EOPNOTSUPP || ret == -EBADMSG || ret == -EPROTO ?
			     EXIT_BADINPUT :
			     cli_exit_for(ret);
		if (strstr(err.msg, opt_model))
			cli_error(st, "tokenize", "%s", err.msg);
		else
			cli_error(st, "tokenize", "%s: %s", opt_model, err.msg);
		goto out;
	}
	cap = strlen(text) + 17; /* room for BOS and EOS */
	for (;;) {
		ids = malloc(cap * sizeof(*ids));
		if (!ids) {
			st = cli_error(EXIT_NORES, "tokenize", "out of memory");
			goto out;
		}
		ret = edgeq_tokenize(
			m, text, !opt_no_bos && edgeq_model_info(m)->add_bos,
			opt_parse_special, ids, cap, &n);
		if (ret != -ENOSPC)
			break;
		free(ids);
		cap = n + 1;
	}
	/* llama-tokenize's add_special: EOS too when the vocabulary asks */
	if (!ret && !opt_no_bos && m->vocab.add_eos && m->vocab.eos >= 0) {
		int32_t *more = n < cap ? ids :
					  realloc(ids, (n + 1) * sizeof(*ids));

		if (!more) {
			st = cli_error(EXIT_NORES, "tokenize", "out of memory");
			goto out;
		}
		ids = more;
		ids[n++] = m->vocab.eos;
	}
	if (ret) {
		st = cli_error(cli_exit_for(ret), "tokenize", "%s",
			       strerror(-ret));
		goto out;
	}
	if (opt_pieces) {
		ret = print_pieces(m, ids, n);
		if (ret) {
			st = cli_error(cli_exit_for(ret), "tokenize",
				       "a piece: %s", strerror(-ret));
			goto out;
		}
	} else {
		putchar('[');
		for (i = 0; i < n; i++)
			printf("%s%d", i ? ", " : "", ids[i]);
		puts("]");
	}
	if (fflush(stdout))
		st = cli_error(EXIT_FAIL, "tokenize", "writing: %s",
			       strerror(errno));
out:
	free(ids);
	free(owned);
	edgeq_model_free(m);
	return st;
}

EDGEQ_COMMAND(
	tokenize, "print the token ids of a text under a model's tokenizer",
	"usage: edgeq tokenize -m FILE [--ids|--pieces] [--no-bos] [--parse-special] TEXT|--stdin\n"
	"\n"
	"Tokenizes TEXT (or standard input) with the vocabulary of FILE, a model or\n"
	"a vocabulary-only GGUF, exactly as llama.cpp's llama-tokenize does: BOS\n"
	"when the vocabulary asks for it (tokenizer.ggml.add_bos_token, or the\n"
	"pre-tokenizer's default) and EOS when it asks (add_eos_token), neither with\n"
	"--no-bos; special tokens in the text taken literally unless\n"
	"--parse-special. Prints the ids as a JSON list.",
	tokenize_opts, cmd_tokenize);
