// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tool calls out of a chat answer, as OpenAI clients expect them back
 * (message.tool_calls, finish_reason "tool_calls"). The model writes them
 * in its template's own format; the ones published models use:
 *
 *   Hermes, Qwen 2.5/3, SmolLM3   <tool_call>{"name": N, "arguments": A}</tool_call>
 *                                 (one block per call, text around them)
 *   Mistral (v3 and later)        [TOOL_CALLS][{"name": N, "arguments": A}, ...]
 *                                 [TOOL_CALLS]N[ARGS]A (2503 and later)
 *   Llama 3.1/3.2                 <|python_tag|>{"name": N, "parameters": A}
 *                                 or the whole answer one such object
 *
 * Anything that does not parse as such stays text in content: an answer is
 * never lost to a guess.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

static bool is_space(char c)
{
	return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* [*p, *p + *n) without the white space at either end */
static void trim(const char **p, size_t *n)
{
	while (*n && is_space(**p)) {
		(*p)++;
		(*n)--;
	}
	while (*n && is_space((*p)[*n - 1]))
		(*n)--;
}

/* @what in [@p, @p + @n), or NULL */
static const char *find(const char *p, size_t n, const char *what)
{
	return memmem(p, n, what, strlen(what));
}

/* One OpenAI tool call from a name and its arguments (any JSON value). */
static json_t *call_json(const char *name, json_t *args, size_t idx,
			 unsigned long long tag)
{
	char id[40], *a;
	json_t *c;

	if (!args)
		args = json_object();
	else
		json_incref(args);
	/* OpenAI sends the arguments as a JSON text */
	a = json_is_string(args) ?
		    strdup(json_string_value(args)) :
		    json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(args);
	if (!a)
		return NULL;
	snprintf(id, sizeof(id), "call_%llx_%zu", tag, idx);
	c = json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", id, "type", "function",
		      "function", "name", name, "arguments", a);
	free(a);
	return c;
}

/* {"name": N, "arguments"|"parameters": A} into @calls; false if not one */
static bool add_object(json_t *calls, json_t *o, unsigned long long tag)
{
	json_t *name = json_object_get(o, "name"), *args, *c;

	if (!json_is_object(o) || !json_is_string(name) ||
	    !*json_string_value(name))
		return false;
	args = json_object_get(o, "arguments");
	if (!args)
		args = json_object_get(o, "parameters");
	if (args && !json_is_object(args) && !json_is_string(args))
		return false;
	c = call_json(json_string_value(name), args, json_array_size(calls),
		      tag);
	return c && !json_array_append_new(calls, c);
}

static json_t *parse_json(const char *p, size_t n)
{
	return json_loadb(p, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
}

/* <tool_call>...</tool_call> blocks; the rest is content */
static json_t *hermes(const char *t, size_t n, struct srv_buf *content,
		      unsigned long long tag)
{
	static const char open_tag[] = "<tool_call>",
			  close_tag[] = "</tool_call>";
	const char *p = t, *end = t + n, *o, *c, *body;
	json_t *calls = json_array();
	size_t bl;

	while (calls && (o = find(p, (size_t)(end - p), open_tag))) {
		json_t *j;

		body = o + sizeof(open_tag) - 1;
		c = find(body, (size_t)(end - body), close_tag);
		/* the last block may lack its close when the answer ended */
		bl = c ? (size_t)(c - body) : (size_t)(end - body);
		trim(&body, &bl);
		j = parse_json(body, bl);
		if (!add_object(calls, j, tag)) {
			json_decref(j);
			json_decref(calls);
			return NULL;
		}
		json_decref(j);
		srv_buf_add(content, p, (size_t)(o - p));
		p = c ? c + sizeof(close_tag) - 1 : end;
	}
	srv_buf_add(content, p, (size_t)(end - p));
	return calls;
}

/* [TOOL_CALLS] followed by a JSON array, or by name[ARGS]json pairs */
static json_t *mistral(const char *t, size_t n, const char *m,
		       struct srv_buf *content, unsigned long long tag)
{
	static const char mark[] = "[TOOL_CALLS]", args_mark[] = "[ARGS]";
	const char *p = m + sizeof(mark) - 1, *end = t + n;
	json_t *calls = json_array(), *j;
	size_t rl = (size_t)(end - p);

	srv_buf_add(content, t, (size_t)(m - t));
	trim(&p, &rl);
	if (rl && *p == '[') {
		size_t i;
		json_t *o;

		j = parse_json(p, rl);
		if (!json_is_array(j) || !json_array_size(j))
			goto bad;
		json_array_foreach(j, i, o)
		{
			if (!add_object(calls, o, tag))
				goto bad;
		}
		json_decref(j);
		return calls;
	}
	/* name[ARGS]{...}, possibly several, each after its own mark */
	while (p < end) {
		const char *a = find(p, (size_t)(end - p), args_mark), *nx;
		char name[256];
		size_t nl, al;
		json_t *c;

		if (!a)
			goto bad0;
		nl = (size_t)(a - p);
		trim(&p, &nl);
		if (!nl || nl >= sizeof(name))
			goto bad0;
		memcpy(name, p, nl);
		name[nl] = '\0';
		a += sizeof(args_mark) - 1;
		nx = find(a, (size_t)(end - a), mark);
		al = nx ? (size_t)(nx - a) : (size_t)(end - a);
		trim(&a, &al);
		j = parse_json(a, al);
		if (!json_is_object(j))
			goto bad;
		c = call_json(name, j, json_array_size(calls), tag);
		json_decref(j);
		if (!c || json_array_append_new(calls, c))
			goto bad0;
		p = nx ? nx + sizeof(mark) - 1 : end;
	}
	return calls;
bad:
	json_decref(j);
bad0:
	json_decref(calls);
	return NULL;
}

/* The markers that start a call; a streamed answer holds back any text
 * that may be one of them. */
static const char *const markers[] = { "<tool_call>", "[TOOL_CALLS]",
				       "<|python_tag|>" };

size_t srv_tool_safe_len(const char *text, size_t len)
{
	const char *p = text;
	size_t n = len, i, k, safe = len;

	/* Llama 3.x: an answer that is a JSON object may be a call */
	trim(&p, &n);
	if (n && *p == '{')
		return 0;
	if (!n)
		return 0; /* only white space so far: it may precede one */
	for (k = 0; k < sizeof(markers) / sizeof(markers[0]); k++) {
		const char *m = find(text, len, markers[k]);
		size_t ml = strlen(markers[k]);

		if (m && (size_t)(m - text) < safe)
			safe = (size_t)(m - text);
		/* a suffix of the text that begins the marker */
		for (i = ml - 1; i > 0; i--)
			if (i <= len &&
			    !memcmp(text + len - i, markers[k], i)) {
				if (len - i < safe)
					safe = len - i;
				break;
			}
	}
	return safe;
}

json_t *srv_tool_calls(const char *text, size_t len, struct srv_buf *content)
{
	static const char python_tag[] = "<|python_tag|>";
	unsigned long long tag = ((unsigned long long)random() << 31) ^
				 (unsigned long long)random();
	const char *m, *p = text;
	json_t *calls = NULL, *j;
	size_t n = len;

	content->len = 0;
	if (find(text, len, "<tool_call>"))
		calls = hermes(text, len, content, tag);
	else if ((m = find(text, len, "[TOOL_CALLS]")))
		calls = mistral(text, len, m, content, tag);
	else {
		m = find(text, len, python_tag);
		if (m) {
			p = m + sizeof(python_tag) - 1;
			n = len - (size_t)(p - text);
		}
		trim(&p, &n);
		/* Llama 3.x: the answer is the call, nothing else */
		if (n && *p == '{' && p[n - 1] == '}') {
			calls = json_array();
			j = parse_json(p, n);
			if (!calls || !add_object(calls, j, tag)) {
				json_decref(calls);
				calls = NULL;
			}
			json_decref(j);
			if (calls && m)
				srv_buf_add(content, text, (size_t)(m - text));
		}
	}
	if (!calls || !json_array_size(calls)) {
		json_decref(calls);
		content->len = 0;
		return NULL;
	}
	/* the text around the calls, without the white space at its ends */
	p = content->p;
	n = content->len;
	trim(&p, &n);
	if (n)
		memmove(content->p, p, n);
	content->len = n;
	return calls;
}
