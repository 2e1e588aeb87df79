// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq template: render a chat template (a model's tokenizer.chat_template
 * or a file) for a conversation, exactly as transformers would, and print
 * the prompt and nothing else.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <edgeq/gguf.h>
#include <edgeq/template.h>

#include "cli.h"

static const char *tp_model, *tp_template, *tp_messages, *tp_bos, *tp_eos,
	*tp_now;
static bool tp_agp;

static const struct cli_option template_opts[] = {
	{ "model", 'm', CLI_STR, &tp_model, "FILE",
	  "GGUF whose tokenizer.chat_template (and BOS/EOS texts) to use" },
	{ "template", 0, CLI_STR, &tp_template, "FILE",
	  "a Jinja template file instead of a model's" },
	{ "messages", 0, CLI_STR, &tp_messages, "FILE.json",
	  "the conversation: a list of messages, or {\"messages\": [...], \"tools\": [...]}" },
	{ "add-generation-prompt", 0, CLI_FLAG, &tp_agp, NULL,
	  "end with the assistant's turn opening" },
	{ "bos", 0, CLI_STR, &tp_bos, "S",
	  "bos_token text (default: the model's)" },
	{ "eos", 0, CLI_STR, &tp_eos, "S",
	  "eos_token text (default: the model's)" },
	{ "now", 0, CLI_STR, &tp_now, "YYYY-MM-DD",
	  "the date strftime_now() formats (default: now, local time)" },
	CLI_OPTIONS_END,
};

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL, *nb;
	size_t cap = 0, n = 0, r;

	if (!f)
		return NULL;
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		errno = EIO;
		return NULL;
	}
	fclose(f);
	buf[n] = 0;
	*len = n;
	return buf;
}

/* A copy of the text of token @key_id ("tokenizer.ggml.bos_token_id"). */
static char *token_text(struct edgeq_gguf *g, const char *key_id)
{
	const struct edgeq_gguf_kv *kv;
	struct edgeq_gguf_str *s;
	uint32_t id;
	char *r;

	if (edgeq_gguf_get_u32(g, key_id, &id, NULL) ||
	    edgeq_gguf_get_arr(g, "tokenizer.ggml.tokens", EDGEQ_GGUF_STRING,
			       &kv, NULL) ||
	    id >= kv->arr_n)
		return NULL;
	s = calloc(kv->arr_n, sizeof(*s));
	if (!s)
		return NULL;
	edgeq_gguf_arr_strings(kv, s);
	r = strndup(s[id].ptr, s[id].len);
	free(s);
	return r;
}

static int load_model(char **src, size_t *len, char **bos, char **eos)
{
	struct edgeq_gguf_str str;
	struct edgeq_error err;
	struct edgeq_gguf *g;
	int ret;

	ret = edgeq_gguf_open_flags(tp_model, EDGEQ_GGUF_ANY_TYPE, &g, &err);
	if (ret)
		return cli_error(cli_exit_for(ret), "template", "%s: %s",
				 tp_model, err.msg);
	if (edgeq_gguf_get_str(g, "tokenizer.chat_template", &str, NULL)) {
		edgeq_gguf_close(g);
		return cli_error(EXIT_BADINPUT, "template",
				 "%s has no tokenizer.chat_template", tp_model);
	}
	*src = strndup(str.ptr, str.len);
	*len = str.len;
	*bos = token_text(g, "tokenizer.ggml.bos_token_id");
	*eos = token_text(g, "tokenizer.ggml.eos_token_id");
	edgeq_gguf_close(g);
	return *src ? 0 : cli_error(EXIT_NORES, "template", "out of memory");
}

static int parse_now(time_t *now)
{
	struct tm tm = { 0 };
	char *end;
	time_t t;

	if (!tp_now) {
		/* local wall-clock time, as Python's datetime.now() */
		t = time(NULL);
		localtime_r(&t, &tm);
		*now = t + tm.tm_gmtoff;
		return 0;
	}
	end = strptime(tp_now, "%Y-%m-%d", &tm);
	if (!end || *end)
		return cli_error(EXIT_USAGE, "template",
				 "--now: '%s' is not YYYY-MM-DD", tp_now);
	*now = timegm(&tm);
	return 0;
}

static int tmpl_exit(int ret)
{
	switch (-ret) {
	case E2BIG:
	case ENOMEM:
	case ELOOP:
	case ETIME:
		return EXIT_NORES;
	default:
		return EXIT_BADINPUT;
	}
}

static int cmd_template(int argc, char **argv)
{
	const struct cli_command *self = cli_find("template");
	char *src = NULL, *bos = NULL, *eos = NULL, *conv = NULL, *out = NULL;
	struct edgeq_tmpl *t = NULL;
	struct edgeq_error err;
	size_t len = 0, out_len;
	time_t now = 0;
	int first, ret;

	ret = cli_parse(self, argc, argv, &first);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (first < argc)
		return cli_error(EXIT_USAGE, "template",
				 "unexpected argument '%s'", argv[first]);
	if (!tp_model == !tp_template)
		return cli_error(EXIT_USAGE, "template",
				 "give one of -m MODEL or --template FILE");
	if (!tp_messages)
		return cli_error(EXIT_USAGE, "template",
				 "--messages FILE.json is required");
	ret = parse_now(&now);
	if (ret)
		return ret;
	if (tp_model) {
		ret = load_model(&src, &len, &bos, &eos);
		if (ret)
			goto out;
	} else {
		src = read_all(tp_template, &len);
		if (!src) {
			ret = cli_error(EXIT_FAIL, "template", "%s: %s",
					tp_template, strerror(errno));
			goto out;
		}
	}
	conv = read_all(tp_messages, &out_len);
	if (!conv) {
		ret = cli_error(EXIT_FAIL, "template", "%s: %s", tp_messages,
				strerror(errno));
		goto out;
	}
	ret = edgeq_tmpl_compile(src, len, NULL, &t, &err);
	if (ret) {
		ret = cli_error(tmpl_exit(ret), "template", "%s: %s",
				tp_model ? tp_model : tp_template, err.msg);
		goto out;
	}
	ret = edgeq_tmpl_render_conv(t, conv, tp_agp, tp_bos ? tp_bos : bos,
				     tp_eos ? tp_eos : eos, now, &out, &out_len,
				     &err);
	if (ret == -ECANCELED) {
		ret = cli_error(EXIT_BADINPUT, "template",
				"raise_exception: %s", err.msg);
		goto out;
	}
	if (ret) {
		ret = cli_error(tmpl_exit(ret), "template", "%s", err.msg);
		goto out;
	}
	if (fwrite(out, 1, out_len, stdout) != out_len || fflush(stdout))
		ret = cli_error(EXIT_FAIL, "template", "writing the prompt: %s",
				strerror(errno));
out:
	edgeq_tmpl_free(t);
	free(src);
	free(bos);
	free(eos);
	free(conv);
	free(out);
	return ret;
}

EDGEQ_COMMAND(
	template, "render a chat template for a conversation",
	"usage: edgeq template (-m MODEL | --template FILE) --messages FILE.json\n"
	"                      [--add-generation-prompt] [--bos S] [--eos S]\n"
	"                      [--now YYYY-MM-DD]\n\n"
	"Renders the model's tokenizer.chat_template (or FILE) for the messages\n"
	"exactly as Hugging Face transformers' apply_chat_template() does with\n"
	"Jinja2, and prints the prompt and nothing else. FILE.json is a list of\n"
	"messages, or an object with \"messages\" and optionally \"tools\" (other\n"
	"keys are ignored). Exit 3 when the template raises (raise_exception:\n"
	"its message on stderr) or is refused, 4 when it exceeds a limit.",
	template_opts, cmd_template);
