// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Parse and validate an OpenAI-style request body. Everything a client
 * controls is checked: unknown fields, wrong types and out-of-range values
 * get a 400 naming the field, in OpenAI's error shape.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/internal.h"

#define T_STR (1u << 0)
#define T_NUM (1u << 1)
#define T_INT (1u << 2)
#define T_BOOL (1u << 3)
#define T_ARR (1u << 4)
#define T_OBJ (1u << 5)
#define T_NULL (1u << 6)

#define K_CHAT (1u << SRV_CHAT)
#define K_CMPL (1u << SRV_COMPLETION)
#define K_BOTH (K_CHAT | K_CMPL)

struct field {
	const char *name;
	unsigned int types;
	unsigned int kinds;
};

/* Every field a request may carry. Anything else is refused. */
static const struct field fields[] = {
	{ "model", T_STR, K_BOTH },
	{ "messages", T_ARR, K_CHAT },
	{ "prompt", T_STR | T_ARR, K_CMPL },
	{ "max_tokens", T_INT | T_NULL, K_BOTH },
	{ "max_completion_tokens", T_INT | T_NULL, K_CHAT },
	{ "temperature", T_NUM | T_NULL, K_BOTH },
	{ "top_p", T_NUM | T_NULL, K_BOTH },
	{ "top_k", T_INT | T_NULL, K_BOTH },
	{ "min_p", T_NUM | T_NULL, K_BOTH },
	{ "repeat_penalty", T_NUM | T_NULL, K_BOTH },
	{ "presence_penalty", T_NUM | T_NULL, K_BOTH },
	{ "frequency_penalty", T_NUM | T_NULL, K_BOTH },
	{ "n", T_INT | T_NULL, K_BOTH },
	{ "stream", T_BOOL | T_NULL, K_BOTH },
	{ "stream_options", T_OBJ | T_NULL, K_BOTH },
	{ "stop", T_STR | T_ARR | T_NULL, K_BOTH },
	{ "seed", T_INT | T_NULL, K_BOTH },
	{ "user", T_STR, K_BOTH },
	{ "logprobs", T_BOOL | T_NULL, K_CHAT },
	{ "echo", T_BOOL | T_NULL, K_CMPL },
	/* OpenAI and LangChain clients send these: see chat.c */
	{ "tools", T_ARR | T_NULL, K_CHAT },
	{ "tool_choice", T_STR | T_OBJ | T_NULL, K_CHAT },
	{ "parallel_tool_calls", T_BOOL | T_NULL, K_CHAT },
	{ "response_format", T_OBJ | T_NULL, K_BOTH },
	{ "logit_bias", T_OBJ | T_NULL, K_BOTH },
	{ "edgeq_privacy", T_STR, K_BOTH },
	{ "edgeq_slo_tokens_per_s", T_NUM, K_BOTH },
	{ "edgeq_deadline_s", T_NUM, K_BOTH },
	{ NULL, 0, 0 },
};

static unsigned int type_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		return T_STR;
	case JSON_INTEGER:
		return T_INT | T_NUM;
	case JSON_REAL:
		return T_NUM;
	case JSON_TRUE:
	case JSON_FALSE:
		return T_BOOL;
	case JSON_ARRAY:
		return T_ARR;
	case JSON_OBJECT:
		return T_OBJ;
	default:
		return T_NULL;
	}
}

static const char *type_words(unsigned int t)
{
	t &= ~T_NULL;
	if (t == (T_STR | T_ARR))
		return "a string or an array of strings";
	if (t & T_INT)
		return "an integer";
	if (t & T_NUM)
		return "a number";
	if (t & T_STR)
		return "a string";
	if (t & T_BOOL)
		return "a boolean";
	if (t & T_ARR)
		return "an array";
	return "an object";
}

#define BAD srv_bad_request

static int check_fields(struct srv_req *r)
{
	const struct field *f;
	const char *key;
	json_t *v;

	json_object_foreach(r->json, key, v)
	{
		for (f = fields; f->name && strcmp(f->name, key); f++)
			;
		if (!f->name || !(f->kinds & (1u << r->kind)))
			return BAD(r, key,
				   "Unrecognized request argument supplied: %s",
				   key);
		if (!(type_of(v) & f->types))
			return BAD(r, key, "Invalid type for '%s': expected %s",
				   key, type_words(f->types));
	}
	return 0;
}

static double num(json_t *j, const char *key, double dflt)
{
	json_t *v = json_object_get(j, key);

	return v && json_is_number(v) ? json_number_value(v) : dflt;
}

static int range(struct srv_req *r, const char *key, double v, double lo,
		 double hi)
{
	if (isnan(v) || v < lo || v > hi)
		return BAD(r, key, "'%s' must be between %g and %g", key, lo,
			   hi);
	return 0;
}

/* A message's content: a string, or an array of {"type":"text","text":..}
 * parts, joined. Returns a new string or NULL after sending the 400. */
static char *message_text(struct srv_req *r, json_t *content, size_t i)
{
	struct srv_buf b = { 0 };
	json_t *part, *t;
	size_t k;

	if (json_is_string(content))
		return strdup(json_string_value(content));
	if (!json_is_array(content)) {
		BAD(r, "messages",
		    "messages[%zu].content must be a string or an array of text parts",
		    i);
		return NULL;
	}
	json_array_foreach(content, k, part)
	{
		t = json_object_get(part, "type");
		if (!json_is_string(t) ||
		    strcmp(json_string_value(t), "text") ||
		    !json_is_string(json_object_get(part, "text"))) {
			srv_buf_free(&b);
			BAD(r, "messages",
			    "messages[%zu].content[%zu]: only text parts are supported",
			    i, k);
			return NULL;
		}
		srv_buf_printf(
			&b, "%s",
			json_string_value(json_object_get(part, "text")));
	}
	if (!b.p)
		return strdup("");
	return b.p;
}

static int parse_messages(struct srv_req *r)
{
	json_t *msgs = json_object_get(r->json, "messages"), *m, *role, *c;
	struct srv_buf out = { 0 };
	struct srv_msg *list;
	const char *key;
	json_t *v;
	size_t i, n;
	int ret = 0;

	if (!msgs)
		return BAD(r, "messages", "'messages' is required");
	n = json_array_size(msgs);
	if (!n)
		return BAD(r, "messages", "'messages' must not be empty");
	if (n > 1024)
		return BAD(r, "messages", "too many messages (%zu)", n);
	if (r->s->jinja)
		return srv_chat_prompt(r, msgs);
	list = calloc(n, sizeof(*list));
	if (!list)
		return srv_send_error(r, 500, "server_error", NULL,
				      "out of memory"),
		       -ENOMEM;
	json_array_foreach(msgs, i, m)
	{
		if (!json_is_object(m)) {
			ret = BAD(r, "messages",
				  "messages[%zu] must be an object", i);
			goto out;
		}
		json_object_foreach(m, key, v)
		{
			if (strcmp(key, "role") && strcmp(key, "content") &&
			    strcmp(key, "name")) {
				ret = BAD(
					r, "messages",
					"messages[%zu]: unrecognized field '%s'",
					i, key);
				goto out;
			}
		}
		role = json_object_get(m, "role");
		c = json_object_get(m, "content");
		if (!json_is_string(role) ||
		    (strcmp(json_string_value(role), "system") &&
		     strcmp(json_string_value(role), "user") &&
		     strcmp(json_string_value(role), "assistant") &&
		     strcmp(json_string_value(role), "developer"))) {
			ret = BAD(
				r, "messages",
				"messages[%zu].role must be system, developer, user or assistant",
				i);
			goto out;
		}
		if (!c) {
			ret = BAD(r, "messages",
				  "messages[%zu].content is required", i);
			goto out;
		}
		list[i].role = json_string_value(role);
		if (!strcmp(list[i].role, "developer"))
			list[i].role = "system";
		list[i].content = message_text(r, c, i);
		if (!list[i].content) {
			ret = -EINVAL;
			goto out;
		}
	}
	ret = srv_chat_render(r->s, list, n, &out);
	if (ret == -EINVAL) {
		ret = BAD(
			r, "messages",
			"messages do not fit the %s chat template: one system message first, then user and assistant taking turns, ending with user",
			srv_template_name(r->s->tmpl));
		goto out;
	} else if (ret) {
		srv_send_error(r, 500, "server_error", NULL, "out of memory");
		goto out;
	}
	r->prompt = out.p;
	out.p = NULL;
	r->add_bos = r->s->add_bos_chat;
	r->parse_special = true;
	r->stops[r->n_stops++] = srv_template_stop(r->s->tmpl);
out:
	for (i = 0; i < n; i++)
		free((char *)list[i].content);
	free(list);
	srv_buf_free(&out);
	return ret;
}

static int parse_prompt(struct srv_req *r)
{
	json_t *p = json_object_get(r->json, "prompt");

	if (!p)
		return BAD(r, "prompt", "'prompt' is required");
	if (json_is_array(p)) {
		if (json_array_size(p) != 1 ||
		    !json_is_string(json_array_get(p, 0)))
			return BAD(
				r, "prompt",
				"'prompt' as an array must hold exactly one string");
		p = json_array_get(p, 0);
	}
	r->prompt = strdup(json_string_value(p));
	r->add_bos = r->s->info && r->s->info->bos >= 0 && r->s->info->add_bos;
	r->parse_special = false;
	return r->prompt ? 0 : -ENOMEM;
}

static int parse_stop(struct srv_req *r)
{
	json_t *st = json_object_get(r->json, "stop"), *v;
	size_t i;

	if (!st || json_is_null(st))
		return 0;
	if (json_is_string(st)) {
		if (!*json_string_value(st))
			return BAD(r, "stop",
				   "'stop' strings must not be empty");
		r->stops[r->n_stops++] = json_string_value(st);
		return 0;
	}
	if (json_array_size(st) > 4)
		return BAD(r, "stop", "'stop' takes at most 4 sequences");
	json_array_foreach(st, i, v)
	{
		if (!json_is_string(v) || !*json_string_value(v) ||
		    strlen(json_string_value(v)) > 256)
			return BAD(
				r, "stop",
				"'stop' must hold non-empty strings of at most 256 bytes");
		r->stops[r->n_stops++] = json_string_value(v);
	}
	return 0;
}

/* The stricter of the body's and the header's class wins. */
static int parse_privacy(struct srv_req *r)
{
	const char *hv, *bv;
	enum edgeq_privacy hp = EDGEQ_PRIVACY_PUBLIC, bp = EDGEQ_PRIVACY_PUBLIC;
	json_t *v;

	hv = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
					 "X-Edgeq-Privacy");
	v = json_object_get(r->json, "edgeq_privacy");
	bv = v ? json_string_value(v) : NULL;
	if (hv && edgeq_privacy_parse(hv, &hp))
		return BAD(
			r, NULL,
			"X-Edgeq-Privacy must be confidential, internal or public");
	if (bv && edgeq_privacy_parse(bv, &bp))
		return BAD(
			r, "edgeq_privacy",
			"'edgeq_privacy' must be confidential, internal or public");
	if (!hv && !bv)
		r->privacy = r->s->cfg.default_class;
	else
		r->privacy = hp < bp ? hp : bp;
	return 0;
}

static int header_num(struct srv_req *r, const char *name, double *out)
{
	const char *h =
		MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
	char *end;
	double d;

	if (!h)
		return 0;
	d = strtod(h, &end);
	if (end == h || *end || !(d >= 0) || d > 1e9)
		return BAD(r, NULL, "%s must be a non-negative number", name);
	*out = d;
	return 0;
}

int srv_parse_request(struct srv_req *r)
{
	struct srv *s = r->s;
	json_error_t jerr;
	json_t *v, *so;
	int ret;

	if (!r->body.len)
		return BAD(r, NULL, "the request body must be a JSON object");
	r->json = json_loadb(r->body.p, r->body.len, JSON_REJECT_DUPLICATES,
			     &jerr);
	if (!r->json)
		return BAD(r, NULL, "malformed JSON at line %d column %d: %s",
			   jerr.line, jerr.column, jerr.text);
	if (!json_is_object(r->json)) {
		json_decref(r->json);
		r->json = NULL;
		return BAD(r, NULL, "the request body must be a JSON object");
	}
	ret = check_fields(r);
	if (ret)
		return ret;
	srv_chat_fields(r);

	r->stream = json_is_true(json_object_get(r->json, "stream"));
	so = json_object_get(r->json, "stream_options");
	if (so && json_is_object(so)) {
		const char *key;

		json_object_foreach(so, key, v)
		{
			if (strcmp(key, "include_usage") || !json_is_boolean(v))
				return BAD(
					r, "stream_options",
					"stream_options takes only include_usage (boolean)");
		}
		r->include_usage =
			json_is_true(json_object_get(so, "include_usage"));
	}
	v = json_object_get(r->json, "max_completion_tokens");
	if (!v || json_is_null(v))
		v = json_object_get(r->json, "max_tokens");
	r->max_tokens = s->cfg.default_max_tokens;
	if (v && json_is_integer(v)) {
		json_int_t mt = json_integer_value(v);

		if (mt < 1 || mt > s->cfg.max_tokens)
			return BAD(r, "max_tokens",
				   "'max_tokens' must be between 1 and %d",
				   s->cfg.max_tokens);
		r->max_tokens = (int)mt;
	}
	if (r->max_tokens > s->cfg.max_tokens)
		r->max_tokens = s->cfg.max_tokens;
	v = json_object_get(r->json, "n");
	if (v && json_is_integer(v) && json_integer_value(v) != 1)
		return BAD(r, "n", "only n=1 is supported");
	if (json_is_true(json_object_get(r->json, "logprobs")))
		return BAD(r, "logprobs", "logprobs are not supported");
	if (json_is_true(json_object_get(r->json, "echo")))
		return BAD(r, "echo", "echo is not supported");

	edgeq_sampler_params_init(&r->sp);
	r->sp.temp = (float)num(r->json, "temperature", 1.0);
	r->sp.top_p = (float)num(r->json, "top_p", 1.0);
	r->sp.top_k = (int)num(r->json, "top_k", 0);
	r->sp.min_p = (float)num(r->json, "min_p", 0);
	r->sp.repeat_penalty = (float)num(r->json, "repeat_penalty", 1.0);
	if (range(r, "temperature", r->sp.temp, 0, 2) ||
	    range(r, "top_p", r->sp.top_p, 0, 1) ||
	    range(r, "top_k", r->sp.top_k, 0, 1 << 20) ||
	    range(r, "min_p", r->sp.min_p, 0, 1) ||
	    range(r, "repeat_penalty", r->sp.repeat_penalty, 0.01, 10) ||
	    range(r, "presence_penalty", num(r->json, "presence_penalty", 0),
		  -2, 2) ||
	    range(r, "frequency_penalty", num(r->json, "frequency_penalty", 0),
		  -2, 2))
		return -EINVAL;
	v = json_object_get(r->json, "seed");
	if (v && json_is_integer(v))
		r->sp.seed = (uint64_t)json_integer_value(v);
	else
		r->sp.seed = edgeq_now_ns() ^
			     ((uint64_t)atomic_load(&s->seq) << 32);

	r->slo_tok_s = num(r->json, "edgeq_slo_tokens_per_s", 0);
	r->deadline_s = num(r->json, "edgeq_deadline_s", 0);
	if (range(r, "edgeq_slo_tokens_per_s", r->slo_tok_s, 0, 1e6) ||
	    range(r, "edgeq_deadline_s", r->deadline_s, 0, 1e6))
		return -EINVAL;
	if (!r->slo_tok_s &&
	    header_num(r, "X-Edgeq-Slo-Tokens-Per-S", &r->slo_tok_s))
		return -EINVAL;
	if (!r->deadline_s && header_num(r, "X-Edgeq-Deadline", &r->deadline_s))
		return -EINVAL;
	ret = parse_privacy(r);
	if (ret)
		return ret;
	/* an application's key sets the floor: what it asks can only be
	 * stricter, so a confidential app never leaves the box */
	if (r->key)
		r->privacy = srv_privacy_stricter(r->privacy, r->key->floor);
	ret = parse_stop(r);
	if (ret)
		return ret;
	return r->kind == SRV_CHAT ? parse_messages(r) : parse_prompt(r);
}
