// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Chat prompts from the model's own template: tokenizer.chat_template (or
 * --chat-template FILE) rendered by the Jinja2 interpreter exactly as
 * transformers would, with the request's messages (any role, tool calls
 * included) and tools. The built-in formats of template.c remain only as
 * the fallback for a model without a template, said in the log. Request
 * fields the engine does not act on are accepted and named in an
 * X-Edgeq-Warning header, so OpenAI clients keep working.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <edgeq/gguf.h>
#include <edgeq/template.h>

#include "server/internal.h"

static bool has_special(struct edgeq_model *m, const char *text)
{
	int32_t t[4];
	size_t n = 0;

	return !edgeq_tokenize(m, text, false, true, t, 4, &n) && n == 1;
}

static char *token_text(struct edgeq_model *m, int32_t tok)
{
	char buf[256];
	int n;

	if (tok < 0)
		return NULL;
	n = edgeq_token_to_piece(m, tok, buf, sizeof(buf));
	return n < 0 ? NULL : strndup(buf, (size_t)n);
}

/* tokenizer.chat_template of the loaded model (no second open) */
static char *model_template(struct edgeq_model *m)
{
	size_t n;
	const char *p = edgeq_model_chat_template(m, &n);

	return p && n < (1u << 20) ? strndup(p, n) : NULL;
}

static char *read_file(const char *path, int *err)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f) {
		*err = errno;
		return NULL;
	}
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && n < (1 << 20) &&
	    !fseek(f, 0, SEEK_SET)) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
			buf[n] = 0;
		} else {
			free(buf);
			buf = NULL;
		}
	}
	*err = buf ? 0 : EIO;
	fclose(f);
	return buf;
}

int srv_chat_template_load(struct srv *s, struct edgeq_error *err)
{
	const char *want = s->cfg.chat_template;
	bool from_file = want && *want && strcmp(want, "auto");
	struct edgeq_error cerr;
	char *src;
	int ret, e = 0;

	if (from_file && !srv_template_parse(want, &s->tmpl)) {
		snprintf(s->tmpl_desc, sizeof(s->tmpl_desc),
			 "built-in %s (as configured)", want);
		return 0;
	}
	src = from_file ? read_file(want, &e) : model_template(s->model);
	if (from_file && !src)
		return edgeq_error_set(
			err, EINVAL,
			"chat template '%s': neither auto, llama3, chatml, llama2, mistral nor a readable file (%s)",
			want, strerror(e));
	/* the stop text of the nearest built-in format, and the fallback */
	s->tmpl = srv_template_detect(src, s->info->arch, s->info->name,
				      has_special(s->model,
						  "<|start_header_id|>"),
				      has_special(s->model, "<|im_start|>"));
	if (!src) {
		snprintf(
			s->tmpl_desc, sizeof(s->tmpl_desc),
			"built-in %s (fallback: the model has no tokenizer.chat_template)",
			srv_template_name(s->tmpl));
		srv_log(SRV_WARN,
			(const char *const[]){
				"EDGEQ_EVENT=chat-template-fallback", NULL },
			"model has no tokenizer.chat_template: chats use the built-in %s format",
			srv_template_name(s->tmpl));
		return 0;
	}
	ret = edgeq_tmpl_compile(src, strlen(src), NULL, &s->jinja, &cerr);
	if (!ret && strstr(src, srv_template_stop(s->tmpl)))
		s->jinja_stop = srv_template_stop(s->tmpl);
	free(src);
	if (ret)
		return edgeq_error_set(
			err, -ret,
			"chat template %s: %s (--chat-template FILE or a built-in name overrides it)",
			from_file ? want : "of the model", cerr.msg);
	s->bos_text = token_text(s->model, s->info->bos);
	s->eos_text = token_text(s->model, s->info->eos);
	snprintf(s->tmpl_desc, sizeof(s->tmpl_desc), "%s (Jinja)",
		 from_file ? want : "the model's");
	return 0;
}

void srv_chat_template_free(struct srv *s)
{
	edgeq_tmpl_free(s->jinja);
	s->jinja = NULL;
	free(s->bos_text);
	free(s->eos_text);
	s->bos_text = s->eos_text = NULL;
}

static void warn(struct srv_req *r, const char *what)
{
	size_t n = strlen(r->warning);

	snprintf(r->warning + n, sizeof(r->warning) - n, "%s%s", n ? "; " : "",
		 what);
}

void srv_chat_fields(struct srv_req *r)
{
	json_t *j = r->json, *v;

	v = json_object_get(j, "tools");
	if (json_array_size(v))
		warn(r,
		     r->s->jinja ?
			     "tools are given to the chat template" :
			     "tools ignored: the model has no chat template");
	v = json_object_get(j, "tool_choice");
	if (v && !json_is_null(v) &&
	    !(json_is_string(v) && (!strcmp(json_string_value(v), "auto") ||
				    !strcmp(json_string_value(v), "none"))))
		warn(r, "tool_choice is not enforced");
	v = json_object_get(j, "response_format");
	if (json_is_object(v) &&
	    !(json_is_string(json_object_get(v, "type")) &&
	      !strcmp(json_string_value(json_object_get(v, "type")), "text")))
		warn(r, "response_format is not enforced");
	v = json_object_get(j, "logit_bias");
	if (json_object_size(v))
		warn(r, "logit_bias ignored");
	v = json_object_get(j, "parallel_tool_calls");
	if (v && !json_is_null(v))
		warn(r, "parallel_tool_calls ignored");
}

/*
 * The leading system messages rendered alone (no generation prompt): what
 * a context shift keeps when it is a prefix of the whole prompt, as the
 * template renders most (not all) conversations.
 */
static void keep_system(struct srv_req *r, json_t *msgs, const char *tools,
			const char *prompt)
{
	json_t *sys = json_array(), *m;
	struct edgeq_error err;
	char *sj, *out = NULL;
	size_t i, n;

	json_array_foreach(msgs, i, m)
	{
		const char *role =
			json_string_value(json_object_get(m, "role"));

		if (!role ||
		    (strcmp(role, "system") && strcmp(role, "developer")))
			break;
		json_array_append(sys, m);
	}
	sj = json_array_size(sys) ?
		     json_dumps(sys, JSON_COMPACT | JSON_ENCODE_ANY) :
		     NULL;
	json_decref(sys);
	if (sj &&
	    !edgeq_tmpl_render_chat(r->s->jinja, sj, tools, false,
				    r->s->bos_text, r->s->eos_text, time(NULL),
				    &out, &n, &err) &&
	    n && !strncmp(prompt, out, n))
		r->keep_text = out;
	else
		free(out);
	free(sj);
}

int srv_chat_prompt(struct srv_req *r, json_t *msgs)
{
	json_t *tools = json_object_get(r->json, "tools"), *m;
	struct edgeq_error err;
	char *mj, *tj = NULL, *out = NULL;
	size_t i, n;
	int ret;

	json_array_foreach(msgs, i, m)
	{
		if (!json_is_object(m) ||
		    !json_is_string(json_object_get(m, "role")))
			return srv_bad_request(
				r, "messages",
				"messages[%zu] must be an object with a string 'role'",
				i);
	}
	if (tools && !json_is_null(tools) && !json_is_array(tools))
		return srv_bad_request(r, "tools", "'tools' must be an array");
	mj = json_dumps(msgs, JSON_COMPACT | JSON_ENCODE_ANY);
	if (json_is_array(tools))
		tj = json_dumps(tools, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!mj || (json_is_array(tools) && !tj)) {
		free(mj);
		free(tj);
		srv_send_error(r, 500, "server_error", NULL, "out of memory");
		return -ENOMEM;
	}
	ret = edgeq_tmpl_render_chat(r->s->jinja, mj, tj, true, r->s->bos_text,
				     r->s->eos_text, time(NULL), &out, &n,
				     &err);
	if (!ret)
		keep_system(r, msgs, tj, out);
	free(mj);
	free(tj);
	if (ret)
		return srv_bad_request(
			r, "messages",
			"the model's chat template refused the messages: %s%s",
			ret == -ECANCELED ? "raise_exception: " : "", err.msg);
	r->prompt = out;
	/* the template writes BOS itself when the model wants one */
	r->add_bos = r->s->add_bos_chat &&
		     !(r->s->bos_text && *r->s->bos_text &&
		       !strncmp(out, r->s->bos_text, strlen(r->s->bos_text)));
	r->parse_special = true;
	if (r->s->jinja_stop)
		r->stops[r->n_stops++] = r->s->jinja_stop;
	return 0;
}

int srv_chat_render(struct srv *s, const struct srv_msg *msgs, size_t n,
		    struct srv_buf *out)
{
	return srv_template_render(s->tmpl, msgs, n, out);
}
