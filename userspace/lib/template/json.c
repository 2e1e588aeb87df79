// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * JSON in and out of template values: reading the render's variables
 * (with jansson, objects in their order), and json.dumps() byte for byte
 * as transformers' tojson filter calls it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "template/tmpl.h"

static void json_string_out(struct tarena *a, struct tbuf *b, const char *s,
			    size_t n, bool ascii)
{
	size_t i, l;
	uint32_t cp;

	tb_putc(a, b, '"');
	for (i = 0; i < n; i += l) {
		l = u8_decode(s + i, n - i, &cp);
		switch (cp) {
		case '"':
			tb_put(a, b, "\\\"", 2);
			break;
		case '\\':
			tb_put(a, b, "\\\\", 2);
			break;
		case '\n':
			tb_put(a, b, "\\n", 2);
			break;
		case '\r':
			tb_put(a, b, "\\r", 2);
			break;
		case '\t':
			tb_put(a, b, "\\t", 2);
			break;
		case '\b':
			tb_put(a, b, "\\b", 2);
			break;
		case '\f':
			tb_put(a, b, "\\f", 2);
			break;
		default:
			if (cp < 0x20) {
				tb_printf(a, b, "\\u%04x", cp);
			} else if (ascii && cp > 0x7e) {
				if (cp >= 0x10000) {
					cp -= 0x10000;
					tb_printf(a, b, "\\u%04x\\u%04x",
						  0xd800 + (cp >> 10),
						  0xdc00 + (cp & 0x3ff));
				} else {
					tb_printf(a, b, "\\u%04x", cp);
				}
			} else {
				tb_put(a, b, s + i, l);
			}
		}
	}
	tb_putc(a, b, '"');
}

static void json_newline(struct tarena *a, struct tbuf *b,
			 const struct tjson_opts *o, int level)
{
	int i;

	tb_putc(a, b, '\n');
	for (i = 0; i < level; i++)
		tb_put(a, b, o->indent_str, strlen(o->indent_str));
}

/* A dict key as json.dumps converts it. */
static void json_key(struct tctx *c, struct tbuf *b, struct tv k,
		     const struct tjson_opts *o)
{
	struct tarena *a = &c->arena;
	struct tbuf t = { 0 };

	switch (k.t) {
	case TV_STR:
		json_string_out(a, b, k.s, k.n, o->ensure_ascii);
		return;
	case TV_NONE:
		tb_put(a, b, "\"null\"", 6);
		return;
	case TV_BOOL:
		tb_put(a, b, k.b ? "\"true\"" : "\"false\"", k.b ? 6 : 7);
		return;
	case TV_INT:
	case TV_FLOAT:
		tv_write_str(c, &t, k);
		json_string_out(a, b, t.p, t.n, false);
		return;
	default:
		tc_fail(c, EINVAL,
			"TypeError: keys must be str, int, float, bool or None, not %s",
			tv_typename(k));
	}
}

static int key_order(struct tctx *c, struct tdict *d, size_t x, size_t y)
{
	int r = tv_cmp(d->k[x], d->k[y]);

	if (r == -2)
		tc_fail(c, EINVAL,
			"TypeError: sort_keys on keys of mixed types");
	return r;
}

void tv_write_json(struct tctx *c, struct tbuf *b, struct tv v,
		   const struct tjson_opts *o, int level)
{
	struct tarena *a = &c->arena;
	size_t i, j, *ord;

	if (level > (int)c->max_depth)
		tc_fail(c, ELOOP, "nesting limit: tojson deeper than %u",
			c->max_depth);
	switch (v.t) {
	case TV_NONE:
		tb_put(a, b, "null", 4);
		return;
	case TV_BOOL:
		tb_put(a, b, v.b ? "true" : "false", v.b ? 4 : 5);
		return;
	case TV_INT:
		tb_printf(a, b, "%lld", (long long)v.i);
		return;
	case TV_FLOAT:
		if (isnan(v.f))
			tb_put(a, b, "NaN", 3);
		else if (isinf(v.f))
			tb_put(a, b, v.f < 0 ? "-Infinity" : "Infinity",
			       v.f < 0 ? 9 : 8);
		else
			tv_write_float(a, b, v.f);
		return;
	case TV_STR:
		json_string_out(a, b, v.s, v.n, o->ensure_ascii);
		return;
	case TV_LIST:
		if (v.l->gen)
			break;
		if (!v.l->n) {
			tb_put(a, b, "[]", 2);
			return;
		}
		tb_putc(a, b, '[');
		for (i = 0; i < v.l->n; i++) {
			if (i)
				tb_put(a, b, o->item_sep, strlen(o->item_sep));
			if (o->indent_str)
				json_newline(a, b, o, level + 1);
			tv_write_json(c, b, v.l->v[i], o, level + 1);
		}
		if (o->indent_str)
			json_newline(a, b, o, level);
		tb_putc(a, b, ']');
		return;
	case TV_DICT:
		if (!v.d->n) {
			tb_put(a, b, "{}", 2);
			return;
		}
		ord = ta_alloc(a, v.d->n * sizeof(*ord));
		for (i = 0; i < v.d->n; i++)
			ord[i] = i;
		/* insertion sort: stable, and dicts here are small */
		for (i = 1; o->sort_keys && i < v.d->n; i++)
			for (j = i;
			     j > 0 && key_order(c, v.d, ord[j - 1], ord[j]) > 0;
			     j--) {
				size_t t = ord[j];

				ord[j] = ord[j - 1];
				ord[j - 1] = t;
			}
		tb_putc(a, b, '{');
		for (i = 0; i < v.d->n; i++) {
			if (i)
				tb_put(a, b, o->item_sep, strlen(o->item_sep));
			if (o->indent_str)
				json_newline(a, b, o, level + 1);
			json_key(c, b, v.d->k[ord[i]], o);
			tb_put(a, b, o->key_sep, strlen(o->key_sep));
			tv_write_json(c, b, v.d->v[ord[i]], o, level + 1);
		}
		if (o->indent_str)
			json_newline(a, b, o, level);
		tb_putc(a, b, '}');
		return;
	default:
		break;
	}
	tc_fail(c, EINVAL,
		"TypeError: Object of type %s is not JSON serializable",
		tv_typename(v));
}

static int from_jansson(struct tarena *a, json_t *j, struct tv *out,
			unsigned depth, struct edgeq_error *err)
{
	const char *k;
	json_t *x;
	size_t i;
	int ret;

	if (depth > 200)
		return edgeq_error_set(err, ELOOP,
				       "JSON nests deeper than 200 levels");
	switch (json_typeof(j)) {
	case JSON_OBJECT:
		*out = tv_dict(a, json_object_size(j));
		json_object_foreach(j, k, x)
		{
			struct tv v;

			ret = from_jansson(a, x, &v, depth + 1, err);
			if (ret)
				return ret;
			td_set(a, out->d, tv_strz(a, k), v);
		}
		return 0;
	case JSON_ARRAY:
		*out = tv_list(a, json_array_size(j));
		json_array_foreach(j, i, x)
		{
			ret = from_jansson(a, x, &out->l->v[i], depth + 1, err);
			if (ret)
				return ret;
			out->l->n++;
		}
		return 0;
	case JSON_STRING:
		*out = tv_str(a, json_string_value(j), json_string_length(j));
		return 0;
	case JSON_INTEGER:
		*out = tv_int(json_integer_value(j));
		return 0;
	case JSON_REAL:
		*out = tv_float(json_real_value(j));
		return 0;
	case JSON_TRUE:
		*out = tv_bool(true);
		return 0;
	case JSON_FALSE:
		*out = tv_bool(false);
		return 0;
	default:
		*out = tv_none();
		return 0;
	}
}

int tv_from_json(struct tarena *a, const char *text, struct tv *out,
		 struct edgeq_error *err)
{
	jmp_buf jb, *saved = a->jb;
	json_error_t je;
	json_t *j;
	volatile int ret;

	j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (!j)
		return edgeq_error_set(err, EINVAL, "JSON line %d: %s", je.line,
				       je.text);
	/* the arena's limit unwinds to here first, to free the parse */
	a->jb = &jb;
	if (setjmp(jb))
		ret = -ENOMEM;
	else
		ret = from_jansson(a, j, out, 0, err);
	a->jb = saved;
	json_decref(j);
	return ret;
}
