// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Chat templates written natively (no Jinja): the four prompt formats that
 * cover most llama-family chat models. The model's tokenizer.chat_template
 * is only inspected for the markers that identify its family.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "server/server.h"

static const char *const tmpl_names[SRV_TMPL_COUNT] = {
	[SRV_TMPL_CHATML] = "chatml",
	[SRV_TMPL_LLAMA3] = "llama3",
	[SRV_TMPL_LLAMA2] = "llama2",
	[SRV_TMPL_MISTRAL] = "mistral",
};

const char *srv_template_name(enum srv_template t)
{
	return (unsigned)t < SRV_TMPL_COUNT ? tmpl_names[t] : NULL;
}

int srv_template_parse(const char *s, enum srv_template *out)
{
	int i;

	for (i = 0; i < SRV_TMPL_COUNT; i++)
		if (!strcasecmp(s, tmpl_names[i])) {
			*out = (enum srv_template)i;
			return 0;
		}
	return -EINVAL;
}

static bool icontains(const char *hay, const char *needle)
{
	return hay && strcasestr(hay, needle);
}

enum srv_template srv_template_detect(const char *jinja, const char *arch,
				      const char *name, bool has_llama3_tokens,
				      bool has_chatml_tokens)
{
	/* 1. the template text names its markers */
	if (jinja && *jinja) {
		if (strstr(jinja, "<|start_header_id|>"))
			return SRV_TMPL_LLAMA3;
		if (strstr(jinja, "<|im_start|>"))
			return SRV_TMPL_CHATML;
		if (strstr(jinja, "[INST]"))
			return strstr(jinja, "<<SYS>>") ? SRV_TMPL_LLAMA2 :
							  SRV_TMPL_MISTRAL;
	}
	/* 2. the architecture and the model's name */
	if (icontains(arch, "qwen"))
		return SRV_TMPL_CHATML;
	if (icontains(name, "mistral") || icontains(name, "mixtral"))
		return SRV_TMPL_MISTRAL;
	/* 3. the vocabulary's special tokens */
	if (has_llama3_tokens)
		return SRV_TMPL_LLAMA3;
	if (has_chatml_tokens)
		return SRV_TMPL_CHATML;
	if (icontains(name, "llama-2") || icontains(name, "llama 2") ||
	    icontains(name, "llama2"))
		return SRV_TMPL_LLAMA2;
	/* No marker at all: ChatML is what generic chat fine-tunes use. */
	return SRV_TMPL_CHATML;
}

const char *srv_template_stop(enum srv_template t)
{
	switch (t) {
	case SRV_TMPL_LLAMA3:
		return "<|eot_id|>";
	case SRV_TMPL_CHATML:
		return "<|im_end|>";
	default:
		return "</s>";
	}
}

/* Append @s without leading and trailing white space (Llama's templates
 * trim the content). */
static void add_trimmed(struct srv_buf *b, const char *s)
{
	size_t n = strlen(s);

	while (n && strchr(" \t\r\n", *s))
		s++, n--;
	while (n && strchr(" \t\r\n", s[n - 1]))
		n--;
	srv_buf_add(b, s, n);
}

static void render_llama3(const struct srv_msg *m, size_t n, struct srv_buf *b)
{
	size_t i;

	for (i = 0; i < n; i++) {
		srv_buf_printf(b, "<|start_header_id|>%s<|end_header_id|>\n\n",
			       m[i].role);
		add_trimmed(b, m[i].content);
		srv_buf_printf(b, "<|eot_id|>");
	}
	srv_buf_printf(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

static void render_chatml(const struct srv_msg *m, size_t n, struct srv_buf *b)
{
	size_t i;

	for (i = 0; i < n; i++)
		srv_buf_printf(b, "<|im_start|>%s\n%s<|im_end|>\n", m[i].role,
			       m[i].content);
	srv_buf_printf(b, "<|im_start|>assistant\n");
}

/*
 * Llama 2: [INST] <<SYS>>\nsys\n<</SYS>>\n\nuser [/INST] answer </s><s>[INST] ...
 * Mistral: [INST] sys\n\nuser [/INST]answer</s>[INST] ...
 * The first <s> is the BOS the engine adds.
 */
static int render_inst(bool llama2, const struct srv_msg *m, size_t n,
		       struct srv_buf *b)
{
	const char *sys = NULL;
	bool first = true, open = false;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!strcmp(m[i].role, "system")) {
			if (!first || sys)
				return -EINVAL; /* only one, at the start */
			sys = m[i].content;
			continue;
		}
		if (!strcmp(m[i].role, "assistant")) {
			if (!open)
				return -EINVAL; /* must answer a user turn */
			srv_buf_add(b, llama2 ? " " : "", llama2 ? 1 : 0);
			add_trimmed(b, m[i].content);
			srv_buf_printf(b, llama2 ? " </s>" : "</s>");
			open = false;
			continue;
		}
		/* user (and tool results, shown as user turns) */
		if (open)
			return -EINVAL; /* two user turns in a row */
		if (!first)
			srv_buf_printf(b, llama2 ? "<s>" : "");
		srv_buf_printf(b, "[INST] ");
		if (first && sys) {
			if (llama2) {
				srv_buf_printf(b, "<<SYS>>\n");
				add_trimmed(b, sys);
				srv_buf_printf(b, "\n<</SYS>>\n\n");
			} else {
				add_trimmed(b, sys);
				srv_buf_printf(b, "\n\n");
			}
		}
		add_trimmed(b, m[i].content);
		srv_buf_printf(b, " [/INST]");
		first = false;
		open = true;
	}
	if (!open)
		return -EINVAL; /* the last turn must be the user's */
	return 0;
}

int srv_template_render(enum srv_template t, const struct srv_msg *msgs,
			size_t n, struct srv_buf *out)
{
	int ret = 0;

	if (!n)
		return -EINVAL;
	switch (t) {
	case SRV_TMPL_LLAMA3:
		render_llama3(msgs, n, out);
		break;
	case SRV_TMPL_CHATML:
		render_chatml(msgs, n, out);
		break;
	case SRV_TMPL_LLAMA2:
		ret = render_inst(true, msgs, n, out);
		break;
	case SRV_TMPL_MISTRAL:
		ret = render_inst(false, msgs, n, out);
		break;
	default:
		return -EINVAL;
	}
	if (!ret && out->oom)
		ret = -ENOMEM;
	return ret;
}
