// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Jinja2's built-in filters, tests and global functions, transformers'
 * additions (tojson with json.dumps' options, raise_exception,
 * strftime_now), and the methods of str, list and dict that the immutable
 * sandbox allows; the mutating ones (append, pop, update...) give the
 * sandbox's SecurityError when called.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/tmpl.h"
#include "template/builtins.h"

#define SANDBOX_MAX_RANGE 100000

struct tv binop_concat(struct tctx *c, struct tv a, struct tv b)
{
	struct tbuf buf = { 0 };
	struct tv r = { .t = TV_STR };

	tb_put(&c->arena, &buf, a.s, a.n);
	tb_put(&c->arena, &buf, b.s, b.n);
	r.s = buf.p ? buf.p : "";
	r.n = buf.n;
	return r;
}

static struct tv str_of(struct tctx *c, struct tv v)
{
	return tv_to_str(c, v);
}

static bool opt_bool(struct targs *a, size_t pos, const char *name, bool def)
{
	struct tv *v = targ(a, pos, name);

	return v ? tv_truthy(*v) : def;
}

static struct tv gen_of(struct tv list)
{
	list.l->gen = true;
	return list;
}

static struct tv copy_list(struct tctx *c, struct tlist *l)
{
	struct tv r = tv_list(&c->arena, l->n);

	if (l->n)
		memcpy(r.l->v, l->v, l->n * sizeof(struct tv));
	r.l->n = l->n;
	return r;
}

/* make_attrgetter(): "a.b.0" through getitem, part by part */
static struct tv get_path(struct tctx *c, struct tv v, struct tv attr)
{
	const char *p, *e;
	char part[128];

	if (attr.t == TV_INT)
		return tmpl_getitem(c, v, attr);
	if (attr.t != TV_STR)
		tc_fail(c, EINVAL, "TypeError: attribute must be a string");
	for (p = attr.s; p && *p; p = *e ? e + 1 : NULL) {
		size_t n;
		char *end;
		long long idx;

		e = strchr(p, '.');
		if (!e)
			e = p + strlen(p);
		n = (size_t)(e - p);
		if (n >= sizeof(part))
			n = sizeof(part) - 1;
		memcpy(part, p, n);
		part[n] = 0;
		idx = strtoll(part, &end, 10);
		if (n && !*end)
			v = tmpl_getitem(c, v, tv_int(idx));
		else
			v = tmpl_getitem(c, v, tv_strz(&c->arena, part));
	}
	return v;
}

/* ---- filters */
static struct tv f_abs(struct tctx *c, struct tv v, struct targs *a)
{
	if (v.t == TV_INT)
		return tv_int(v.i < 0 ? -v.i : v.i);
	if (v.t == TV_BOOL)
		return tv_int(v.b);
	if (v.t == TV_FLOAT)
		return tv_float(fabs(v.f));
	tc_fail(c, EINVAL, "TypeError: bad operand type for abs(): '%s'",
		tv_typename(v));
}

static struct tv f_attr(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv *n = targ(a, 0, "name");

	if (!n || n->t != TV_STR)
		tc_fail(c, EINVAL, "TypeError: attr needs a name");
	return tmpl_getattr(c, v, n->s);
}

static struct tv f_batch(struct tctx *c, struct tv v, struct targs *a)
{
	struct tlist *l = tv_iter(c, v);
	int64_t n = targ(a, 0, "linecount") &&
				    targ(a, 0, "linecount")->t == TV_INT ?
			    targ(a, 0, "linecount")->i :
			    0;
	struct tv *fill = targ(a, 1, "fill_with"), r = tv_list(&c->arena, 0),
		  cur = { 0 };
	size_t i;

	if (n <= 0)
		tc_fail(c, EINVAL, "ValueError: batch needs a positive count");
	for (i = 0; i < l->n; i++) {
		if (!cur.t || cur.l->n == (size_t)n) {
			cur = tv_list(&c->arena, 0);
			tl_push(&c->arena, r.l, cur);
		}
		tl_push(&c->arena, cur.l, l->v[i]);
	}
	while (fill && fill->t != TV_NONE && cur.t && cur.l->n < (size_t)n)
		tl_push(&c->arena, cur.l, *fill);
	return gen_of(r);
}

static struct tv f_capitalize(struct tctx *c, struct tv v, struct targs *a)
{
	struct targs none = { 0 };

	return ts_method(c, str_of(c, v), "capitalize", &none);
}

static struct tv f_center(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv s = str_of(c, v), *w = targ(a, 0, "width");
	int64_t width = w && w->t == TV_INT ? w->i : 80;
	size_t len = u8_len(s.s, s.n), left, right, i;
	struct tbuf b = { 0 };

	if (width <= (int64_t)len)
		return s;
	left = ((size_t)width - len) / 2;
	right = (size_t)width - len - left;
	/* Python puts the extra space on the left when len is odd */
	if (((size_t)width - len) % 2 && len % 2) {
		left++;
		right--;
	}
	for (i = 0; i < left; i++)
		tb_putc(&c->arena, &b, ' ');
	tb_put(&c->arena, &b, s.s, s.n);
	for (i = 0; i < right; i++)
		tb_putc(&c->arena, &b, ' ');
	return tv_str(&c->arena, b.p, b.n);
}

static struct tv f_default(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv *d = targ(a, 0, "default_value");

	if (v.t == TV_UNDEF ||
	    (opt_bool(a, 1, "boolean", false) && !tv_truthy(v)))
		return d ? *d : tv_str_static("");
	return v;
}

static int ci_cmp(struct tctx *c, struct tv x, struct tv y, bool cs)
{
	int r;

	if (!cs && x.t == TV_STR)
		x = ts_case(c, x, 'l');
	if (!cs && y.t == TV_STR)
		y = ts_case(c, y, 'l');
	r = tv_cmp(x, y);
	if (r == -2)
		tc_fail(c, EINVAL,
			"TypeError: '<' not supported between instances of '%s' and '%s'",
			tv_typename(x), tv_typename(y));
	return r;
}

/* Stable merge sort of @n values by @keys (Python's sorted is stable). */
static void sort_by(struct tctx *c, struct tv *vals, struct tv *keys, size_t n,
		    bool cs, bool rev)
{
	struct tv *tv, *tk;
	size_t w, i, lo, mid, hi, x, y;

	tv = ta_alloc(&c->arena, (n + 1) * sizeof(*tv));
	tk = ta_alloc(&c->arena, (n + 1) * sizeof(*tk));
	for (w = 1; w < n; w *= 2) {
		for (lo = 0; lo < n; lo += 2 * w) {
			mid = lo + w < n ? lo + w : n;
			hi = lo + 2 * w < n ? lo + 2 * w : n;
			for (x = lo, y = mid, i = lo; i < hi; i++) {
				bool take_y = false;

				if (x >= mid)
					take_y = true;
				else if (y < hi) {
					int r = ci_cmp(c, keys[y], keys[x], cs);

					take_y = rev ? r > 0 : r < 0;
				}
				if (take_y) {
					tv[i] = vals[y];
					tk[i] = keys[y++];
				} else {
					tv[i] = vals[x];
					tk[i] = keys[x++];
				}
			}
		}
		memcpy(vals, tv, n * sizeof(*tv));
		memcpy(keys, tk, n * sizeof(*tk));
		tc_step(c);
	}
}

static struct tv f_dictsort(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv r, *keys, *by = targ(a, 1, "by");
	bool cs = opt_bool(a, 0, "case_sensitive", false),
	     rev = opt_bool(a, 2, "reverse", false), by_value = false;
	size_t i;

	if (v.t == TV_UNDEF)
		tmpl_getattr(c, v, "items");
	if (v.t != TV_DICT)
		tc_fail(c, EINVAL, "TypeError: dictsort needs a mapping");
	if (by && by->t == TV_STR && !strcmp(by->s, "value"))
		by_value = true;
	else if (by && (by->t != TV_STR || strcmp(by->s, "key")))
		tc_fail(c, EINVAL,
			"FilterArgumentError: You can only sort by either \"key\" or \"value\"");
	r = tv_list(&c->arena, v.d->n);
	keys = ta_alloc(&c->arena, (v.d->n + 1) * sizeof(*keys));
	for (i = 0; i < v.d->n; i++) {
		struct tv t = tv_list(&c->arena, 2);

		t.l->tuple = true;
		t.l->v[0] = v.d->k[i];
		t.l->v[1] = v.d->v[i];
		t.l->n = 2;
		r.l->v[i] = t;
		keys[i] = by_value ? v.d->v[i] : v.d->k[i];
	}
	r.l->n = v.d->n;
	sort_by(c, r.l->v, keys, r.l->n, cs, rev);
	return r;
}

struct tv tv_escape(struct tctx *c, struct tv v)
{
	struct tv s;
	struct tbuf b = { 0 };
	size_t i;

	if (v.t == TV_STR && v.markup)
		return v;
	s = str_of(c, v);
	for (i = 0; i < s.n; i++) {
		switch (s.s[i]) {
		case '&':
			tb_put(&c->arena, &b, "&amp;", 5);
			break;
		case '<':
			tb_put(&c->arena, &b, "&lt;", 4);
			break;
		case '>':
			tb_put(&c->arena, &b, "&gt;", 4);
			break;
		case '"':
			tb_put(&c->arena, &b, "&#34;", 5);
			break;
		case '\'':
			tb_put(&c->arena, &b, "&#39;", 5);
			break;
		default:
			tb_putc(&c->arena, &b, s.s[i]);
		}
	}
	s = tv_str(&c->arena, b.p ? b.p : "", b.n);
	s.markup = true;
	return s;
}

static struct tv f_escape(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_escape(c, v);
}

/* Markup in, Markup out (markupsafe wraps str's methods so). */
static struct tv keep_markup(struct tv in, struct tv out)
{
	if (in.t == TV_STR && in.markup && out.t == TV_STR)
		out.markup = true;
	return out;
}

static struct tv f_first(struct tctx *c, struct tv v, struct targs *a)
{
	struct tlist *l = tv_iter(c, v);

	return l->n ? l->v[0] : tv_undef("No first item, sequence was empty.");
}

static struct tv f_last(struct tctx *c, struct tv v, struct targs *a)
{
	struct tlist *l;

	if (v.t == TV_LIST && v.l->gen)
		tc_fail(c, EINVAL,
			"TypeError: 'generator' object is not reversible");
	if (v.t == TV_DICT)
		tc_fail(c, EINVAL,
			"TypeError: 'dict' object is not reversible");
	l = tv_iter(c, v);
	return l->n ? l->v[l->n - 1] :
		      tv_undef("No last item, sequence was empty.");
}

static bool parse_number(struct tv s, bool as_int, int base, double *f,
			 int64_t *i)
{
	char buf[128], *e;
	struct tv t;
	size_t k, j;

	if (s.n >= sizeof(buf))
		return false;
	for (k = j = 0; k < s.n; k++)
		if (s.s[k] != '_')
			buf[j++] = s.s[k];
	buf[j] = 0;
	t.s = buf;
	t.n = j;
	while (t.n && (*t.s == ' ' || *t.s == '\t' || *t.s == '\n'))
		t.s++, t.n--;
	while (t.n && (t.s[t.n - 1] == ' ' || t.s[t.n - 1] == '\t' ||
		       t.s[t.n - 1] == '\n'))
		t.n--;
	if (!t.n)
		return false;
	((char *)t.s)[t.n] = 0;
	errno = 0;
	if (as_int) {
		*i = strtoll(t.s, &e, base);
		return !*e && !errno && !strchr(t.s, '.');
	}
	*f = strtod(t.s, &e);
	return !*e && !strchr(t.s, 'x') && !strchr(t.s, 'X');
}

static struct tv f_int(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv *d = targ(a, 0, "default");
	int64_t base = targ(a, 1, "base") && targ(a, 1, "base")->t == TV_INT ?
			       targ(a, 1, "base")->i :
			       10,
		i;
	double f;

	switch (v.t) {
	case TV_INT:
		return v;
	case TV_BOOL:
		return tv_int(v.b);
	case TV_FLOAT:
		if (isfinite(v.f) && fabs(v.f) < 9.2e18)
			return tv_int((int64_t)v.f);
		break;
	case TV_STR:
		if (parse_number(v, true, (int)base, &f, &i))
			return tv_int(i);
		if (parse_number(v, false, 10, &f, &i) && isfinite(f) &&
		    fabs(f) < 9.2e18)
			return tv_int((int64_t)f);
		break;
	case TV_UNDEF:
		tmpl_getattr(c, v, "__int__");
		break;
	default:
		break;
	}
	return d ? *d : tv_int(0);
}

static struct tv f_float(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv *d = targ(a, 0, "default");
	double f;
	int64_t i;

	switch (v.t) {
	case TV_INT:
		return tv_float((double)v.i);
	case TV_BOOL:
		return tv_float(v.b);
	case TV_FLOAT:
		return v;
	case TV_STR:
		if (parse_number(v, false, 10, &f, &i))
			return tv_float(f);
		break;
	case TV_UNDEF:
		tmpl_getattr(c, v, "__float__");
		break;
	default:
		break;
	}
	return d ? *d : tv_float(0);
}

/* soft_str(value) % (kwargs or args) */
static struct tv f_format(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv args;
	size_t i;

	if (a->nkw) {
		args = tv_dict(&c->arena, a->nkw);
		for (i = 0; i < a->nkw; i++)
			td_set(&c->arena, args.d, tv_strz(&c->arena, a->kwn[i]),
			       a->kwv[i]);
	} else {
		args = tv_list(&c->arena, a->npos);
		args.l->tuple = true;
		for (i = 0; i < a->npos; i++)
			args.l->v[args.l->n++] = a->pos[i];
	}
	return ts_percent(c, str_of(c, v), args);
}

static struct tv f_indent(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv *w = targ(a, 0, "width"), ind, s, lines, r;
	bool first = opt_bool(a, 1, "first", false),
	     blank = opt_bool(a, 2, "blank", false);
	struct targs none = { 0 };
	struct tbuf b = { 0 };
	size_t i;

	if (v.t != TV_STR)
		tc_fail(c, EINVAL, "TypeError: indent needs a string, not %s",
			tv_typename(v));
	if (w && w->t == TV_STR) {
		ind = *w;
	} else {
		int64_t n = w && w->t == TV_INT ? w->i : 4;
		struct tbuf sp = { 0 };

		for (i = 0; n > 0 && i < (size_t)n; i++)
			tb_putc(&c->arena, &sp, ' ');
		ind.t = TV_STR;
		ind.markup = false;
		ind.s = sp.p ? sp.p : "";
		ind.n = sp.n;
	}
	s = binop_concat(c, v, tv_str_static("\n"));
	lines = ts_method(c, s, "splitlines", &none);
	for (i = 0; i < lines.l->n; i++) {
		struct tv ln = lines.l->v[i];

		if (i)
			tb_putc(&c->arena, &b, '\n');
		if (i && (blank || ln.n))
			tb_put(&c->arena, &b, ind.s, ind.n);
		tb_put(&c->arena, &b, ln.s, ln.n);
	}
	r.t = TV_STR;
	r.markup = false;
	r.s = b.p ? b.p : "";
	r.n = b.n;
	if (first)
		r = binop_concat(c, ind, r);
	return r;
}

static struct tv f_items(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv r;
	size_t i;

	if (v.t == TV_UNDEF)
		return gen_of(tv_list(&c->arena, 0));
	if (v.t != TV_DICT)
		tc_fail(c, EINVAL,
			"TypeError: Can only get item pairs from a mapping.");
	r = tv_list(&c->arena, v.d->n);
	for (i = 0; i < v.d->n; i++) {
		struct tv t = tv_list(&c->arena, 2);

		t.l->tuple = true;
		t.l->v[0] = v.d->k[i];
		t.l->v[1] = v.d->v[i];
		t.l->n = 2;
		r.l->v[r.l->n++] = t;
	}
	return gen_of(r);
}

static struct tv f_join(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv *d = targ(a, 0, "d"), *attr = targ(a, 1, "attribute");
	struct tlist *l = tv_iter(c, v);
	struct tbuf b = { 0 };
	struct tv sep = d ? str_of(c, *d) : tv_str_static("");
	size_t i;

	for (i = 0; i < l->n; i++) {
		if (i)
			tb_put(&c->arena, &b, sep.s, sep.n);
		tv_write_str(c, &b,
			     attr && attr->t != TV_NONE ?
				     get_path(c, l->v[i], *attr) :
				     l->v[i]);
	}
	return tv_str(&c->arena, b.p ? b.p : "", b.n);
}

static struct tv f_length(struct tctx *c, struct tv v, struct targs *a)
{
	switch (v.t) {
	case TV_UNDEF:
		return tv_int(0);
	case TV_STR:
		return tv_int((int64_t)u8_len(v.s, v.n));
	case TV_LIST:
		if (!v.l->gen)
			return tv_int((int64_t)v.l->n);
		break;
	case TV_DICT:
		return tv_int((int64_t)v.d->n);
	default:
		break;
	}
	tc_fail(c, EINVAL, "TypeError: object of type '%s' has no len()",
		tv_typename(v));
}

static struct tv f_list(struct tctx *c, struct tv v, struct targs *a)
{
	return copy_list(c, tv_iter(c, v));
}

static struct tv f_lower(struct tctx *c, struct tv v, struct targs *a)
{
	return keep_markup(v, ts_case(c, str_of(c, v), 'l'));
}

static struct tv f_upper(struct tctx *c, struct tv v, struct targs *a)
{
	return keep_markup(v, ts_case(c, str_of(c, v), 'u'));
}

static struct tv f_title(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv s = str_of(c, v);
	struct tbuf b = { 0 };
	size_t i = 0, l;
	uint32_t cp;

	/* words begin after runs of -, whitespace, (, {, [ and < */
	while (i < s.n) {
		size_t st = i;
		struct tv w;

		while (i < s.n) {
			l = u8_decode(s.s + i, s.n - i, &cp);
			if (!(cp == '-' || cp == '(' || cp == '{' ||
			      cp == '[' || cp == '<' || u_isspace(cp)))
				break;
			i += l;
		}
		tb_put(&c->arena, &b, s.s + st, i - st);
		if (i >= s.n)
			break;
		st = i;
		while (i < s.n) {
			l = u8_decode(s.s + i, s.n - i, &cp);
			if (cp == '-' || cp == '(' || cp == '{' || cp == '[' ||
			    cp == '<' || u_isspace(cp))
				break;
			i += l;
		}
		l = u8_decode(s.s + st, i - st, &cp);
		w = ts_case(c, tv_str(&c->arena, s.s + st, l), 'u');
		tb_put(&c->arena, &b, w.s, w.n);
		w = ts_case(c, tv_str(&c->arena, s.s + st + l, i - st - l),
			    'l');
		tb_put(&c->arena, &b, w.s, w.n);
	}
	return tv_str(&c->arena, b.p ? b.p : "", b.n);
}

static struct tv apply_filter(struct tctx *c, const char *name, struct tv v,
			      struct targs *a)
{
	const struct tbuiltin *f = tb_filter(name);

	if (!f)
		tc_fail(c, EINVAL,
			"TemplateRuntimeError: No filter named '%s' found.",
			name);
	tc_step(c);
	return f->fn(c, v, a);
}

static struct tv apply_test(struct tctx *c, const char *name, struct tv v,
			    struct targs *a)
{
	const struct tbuiltin *t = tb_test(name);

	if (!t)
		tc_fail(c, EINVAL,
			"TemplateRuntimeError: No test named '%s' found.",
			name);
	tc_step(c);
	return t->fn(c, v, a);
}

/* The arguments after the first @skip positional ones. */
static struct targs shift_args(struct targs *a, size_t skip)
{
	struct targs r = *a;

	r.pos += skip;
	r.npos -= skip;
	return r;
}

static struct tv f_map(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv r = tv_list(&c->arena, 0),
		  *attr = targ(a, (size_t)-1, "attribute");
	struct tlist *l;
	size_t i;

	if (!tv_truthy(v))
		return gen_of(r);
	l = tv_iter(c, v);
	if (!a->npos && attr) {
		struct tv *def = targ(a, (size_t)-1, "default");

		for (i = 0; i < l->n; i++) {
			struct tv x = get_path(c, l->v[i], *attr);

			tl_push(&c->arena, r.l,
				x.t == TV_UNDEF && def ? *def : x);
		}
		return gen_of(r);
	}
	if (!a->npos || a->pos[0].t != TV_STR)
		tc_fail(c, EINVAL,
			"TypeError: map needs a filter name or attribute=");
	for (i = 0; i < l->n; i++) {
		struct targs rest = shift_args(a, 1);

		tl_push(&c->arena, r.l,
			apply_filter(c, a->pos[0].s, l->v[i], &rest));
	}
	return gen_of(r);
}

static struct tv select_reject(struct tctx *c, struct tv v, struct targs *a,
			       bool attr, bool keep)
{
	struct tv r = tv_list(&c->arena, 0);
	size_t off = attr ? 1 : 0, i;
	struct tlist *l;

	if (!tv_truthy(v))
		return gen_of(r);
	if (attr && !a->npos)
		tc_fail(c, EINVAL,
			"FilterArgumentError: Missing parameter for attribute name");
	l = tv_iter(c, v);
	for (i = 0; i < l->n; i++) {
		struct tv x = attr ? get_path(c, l->v[i], a->pos[0]) : l->v[i];
		bool ok;

		if (a->npos > off) {
			struct targs rest = shift_args(a, off + 1);

			if (a->pos[off].t != TV_STR)
				tc_fail(c, EINVAL,
					"TypeError: test name must be a string");
			ok = tv_truthy(apply_test(c, a->pos[off].s, x, &rest));
		} else {
			ok = tv_truthy(x);
		}
		if (ok == keep)
			tl_push(&c->arena, r.l, l->v[i]);
	}
	return gen_of(r);
}

static struct tv f_select(struct tctx *c, struct tv v, struct targs *a)
{
	return select_reject(c, v, a, false, true);
}

static struct tv f_reject(struct tctx *c, struct tv v, struct targs *a)
{
	return select_reject(c, v, a, false, false);
}

static struct tv f_selectattr(struct tctx *c, struct tv v, struct targs *a)
{
	return select_reject(c, v, a, true, true);
}

static struct tv f_rejectattr(struct tctx *c, struct tv v, struct targs *a)
{
	return select_reject(c, v, a, true, false);
}

static struct tv minmax(struct tctx *c, struct tv v, struct targs *a, int want)
{
	struct tlist *l = tv_iter(c, v);
	bool cs = opt_bool(a, 0, "case_sensitive", false);
	struct tv *attr = targ(a, 1, "attribute"), best = { 0 }, bk = { 0 };
	size_t i;

	for (i = 0; i < l->n; i++) {
		struct tv k = attr && attr->t != TV_NONE ?
				      get_path(c, l->v[i], *attr) :
				      l->v[i];

		if (!best.t || ci_cmp(c, k, bk, cs) == want) {
			best = l->v[i];
			bk = k;
		}
	}
	return best.t ? best :
			tv_undef("No aggregated item, sequence was empty.");
}

static struct tv f_min(struct tctx *c, struct tv v, struct targs *a)
{
	return minmax(c, v, a, -1);
}

static struct tv f_max(struct tctx *c, struct tv v, struct targs *a)
{
	return minmax(c, v, a, 1);
}

static struct tv f_replace(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv *o = targ(a, 0, "old"), *n = targ(a, 1, "new"),
		  *cnt = targ(a, 2, "count");

	if (!o || !n)
		tc_fail(c, EINVAL, "TypeError: replace needs old and new");
	return ts_replace(c, str_of(c, v), str_of(c, *o), str_of(c, *n),
			  cnt && cnt->t == TV_INT ? cnt->i : -1);
}

static struct tv f_reverse(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv r;
	struct tlist *l;
	size_t i;

	if (v.t == TV_STR) {
		struct tbuf b = { 0 };
		size_t e = v.n;

		while (e > 0) {
			size_t st = e - 1;

			while (st > 0 &&
			       ((unsigned char)v.s[st] & 0xc0) == 0x80)
				st--;
			tb_put(&c->arena, &b, v.s + st, e - st);
			e = st;
		}
		return tv_str(&c->arena, b.p ? b.p : "", b.n);
	}
	l = tv_iter(c, v);
	r = tv_list(&c->arena, l->n);
	for (i = l->n; i-- > 0;)
		r.l->v[r.l->n++] = l->v[i];
	return gen_of(r);
}

static struct tv f_round(struct tctx *c, struct tv v, struct targs *a)
{
	int64_t prec = targ(a, 0, "precision") &&
				       targ(a, 0, "precision")->t == TV_INT ?
			       targ(a, 0, "precision")->i :
			       0;
	struct tv *m = targ(a, 1, "method");
	const char *method = m && m->t == TV_STR ? m->s : "common";
	double f, p10;
	char buf[400];

	if (!tv_is_num(v))
		tc_fail(c, EINVAL,
			"TypeError: type %s doesn't define __round__",
			tv_typename(v));
	f = tv_num(v);
	if (prec > 300 || prec < -300)
		return tv_float(f);
	p10 = pow(10, (double)prec);
	if (!strcmp(method, "common")) {
		if (v.t != TV_FLOAT)
			return tv_int(v.t == TV_BOOL ? v.b : v.i);
		if (prec >= 0) {
			/* correctly rounded, half to even, as Python's round */
			snprintf(buf, sizeof(buf), "%.*f", (int)prec, f);
			return tv_float(strtod(buf, NULL));
		}
		return tv_float(nearbyint(f / pow(10, (double)-prec)) *
				pow(10, (double)-prec));
	}
	if (!strcmp(method, "ceil"))
		return tv_float(ceil(f * p10) / p10);
	if (!strcmp(method, "floor"))
		return tv_float(floor(f * p10) / p10);
	tc_fail(c, EINVAL,
		"FilterArgumentError: method must be common, ceil or floor");
}

static struct tv f_safe(struct tctx *c, struct tv v, struct targs *a)
{
	v = v.t == TV_STR ? v : str_of(c, v);
	v.markup = true;
	return v;
}

static struct tv f_sort(struct tctx *c, struct tv v, struct targs *a)
{
	struct tlist *l = tv_iter(c, v);
	struct tv r = copy_list(c, l), *keys, *attr = targ(a, 2, "attribute");
	size_t i;

	keys = ta_alloc(&c->arena, (l->n + 1) * sizeof(*keys));
	for (i = 0; i < l->n; i++)
		keys[i] = attr && attr->t != TV_NONE ?
				  get_path(c, l->v[i], *attr) :
				  l->v[i];
	sort_by(c, r.l->v, keys, r.l->n,
		opt_bool(a, 1, "case_sensitive", false),
		opt_bool(a, 0, "reverse", false));
	return r;
}

static struct tv f_string(struct tctx *c, struct tv v, struct targs *a)
{
	return str_of(c, v);
}

static struct tv f_sum(struct tctx *c, struct tv v, struct targs *a)
{
	struct tlist *l = tv_iter(c, v);
	struct tv *attr = targ(a, 0, "attribute"), *st = targ(a, 1, "start");
	struct tv acc = st ? *st : tv_int(0);
	size_t i;

	for (i = 0; i < l->n; i++) {
		struct tv x = attr && attr->t != TV_NONE ?
				      get_path(c, l->v[i], *attr) :
				      l->v[i];

		if (!tv_is_num(acc) || !tv_is_num(x))
			tc_fail(c, EINVAL,
				"TypeError: unsupported operand type(s) for +: '%s' and '%s'",
				tv_typename(acc), tv_typename(x));
		if (acc.t == TV_FLOAT || x.t == TV_FLOAT)
			acc = tv_float(tv_num(acc) + tv_num(x));
		else if (__builtin_add_overflow(
				 acc.t == TV_BOOL ? acc.b : acc.i,
				 x.t == TV_BOOL ? x.b : x.i, &acc.i))
			tc_fail(c, EINVAL, "OverflowError: sum beyond 64 bits");
		else
			acc.t = TV_INT;
	}
	return acc;
}

static struct tv f_tojson(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv *ind = targ(a, 1, "indent"), *sep = targ(a, 2, "separators");
	struct tjson_opts o = {
		.ensure_ascii = opt_bool(a, 0, "ensure_ascii", false),
		.sort_keys = opt_bool(a, 3, "sort_keys", false),
		.item_sep = ", ",
		.key_sep = ": ",
	};
	struct tbuf b = { 0 };

	if (ind && ind->t == TV_INT) {
		struct tbuf sp = { 0 };
		int64_t i;

		for (i = 0; i < ind->i && i < 64; i++)
			tb_putc(&c->arena, &sp, ' ');
		o.indent_str = sp.p ? sp.p : "";
	} else if (ind && ind->t == TV_STR) {
		o.indent_str = ind->s;
	} else if (ind && ind->t != TV_NONE) {
		tc_fail(c, EINVAL, "TypeError: indent must be an int or a str");
	}
	if (o.indent_str)
		o.item_sep = ",";
	if (sep && sep->t == TV_LIST && !sep->l->gen && sep->l->n == 2 &&
	    sep->l->v[0].t == TV_STR && sep->l->v[1].t == TV_STR) {
		o.item_sep = sep->l->v[0].s;
		o.key_sep = sep->l->v[1].s;
	} else if (sep && sep->t != TV_NONE) {
		tc_fail(c, EINVAL,
			"TypeError: separators must be a pair of strings");
	}
	tv_write_json(c, &b, v, &o, 0);
	return tv_str(&c->arena, b.p ? b.p : "", b.n);
}

static struct tv f_trim(struct tctx *c, struct tv v, struct targs *a)
{
	return keep_markup(v,
			   ts_strip(c, str_of(c, v), targ(a, 0, "chars"), 'b'));
}

static struct tv f_unique(struct tctx *c, struct tv v, struct targs *a)
{
	struct tlist *l = tv_iter(c, v);
	bool cs = opt_bool(a, 0, "case_sensitive", false);
	struct tv *attr = targ(a, 1, "attribute"), r = tv_list(&c->arena, 0),
		  seen = tv_list(&c->arena, 0);
	size_t i, j;

	for (i = 0; i < l->n; i++) {
		struct tv k = attr && attr->t != TV_NONE ?
				      get_path(c, l->v[i], *attr) :
				      l->v[i];

		if (!cs && k.t == TV_STR)
			k = ts_case(c, k, 'l');
		for (j = 0; j < seen.l->n; j++)
			if (tv_equal(seen.l->v[j], k))
				break;
		if (j < seen.l->n)
			continue;
		tl_push(&c->arena, seen.l, k);
		tl_push(&c->arena, r.l, l->v[i]);
		tc_step(c);
	}
	return gen_of(r);
}

static struct tv f_wordcount(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv s = str_of(c, v);
	int64_t n = 0;
	bool in = false;
	size_t i;

	/* \w+ runs */
	for (i = 0; i < s.n; i++) {
		unsigned char ch = (unsigned char)s.s[i];
		bool w = ch >= 0x80 || ch == '_' || (ch >= '0' && ch <= '9') ||
			 ((ch | 32) >= 'a' && (ch | 32) <= 'z');

		if (w && !in)
			n++;
		in = w;
	}
	return tv_int(n);
}

static const struct tbuiltin filters[] = {
	{ "abs", f_abs },
	{ "attr", f_attr },
	{ "batch", f_batch },
	{ "capitalize", f_capitalize },
	{ "center", f_center },
	{ "count", f_length },
	{ "d", f_default },
	{ "default", f_default },
	{ "dictsort", f_dictsort },
	{ "e", f_escape },
	{ "escape", f_escape },
	{ "first", f_first },
	{ "float", f_float },
	{ "forceescape", f_escape },
	{ "format", f_format },
	{ "indent", f_indent },
	{ "int", f_int },
	{ "items", f_items },
	{ "join", f_join },
	{ "last", f_last },
	{ "length", f_length },
	{ "list", f_list },
	{ "lower", f_lower },
	{ "map", f_map },
	{ "max", f_max },
	{ "min", f_min },
	{ "reject", f_reject },
	{ "rejectattr", f_rejectattr },
	{ "replace", f_replace },
	{ "reverse", f_reverse },
	{ "round", f_round },
	{ "safe", f_safe },
	{ "select", f_select },
	{ "selectattr", f_selectattr },
	{ "sort", f_sort },
	{ "string", f_string },
	{ "sum", f_sum },
	{ "title", f_title },
	{ "tojson", f_tojson },
	{ "trim", f_trim },
	{ "unique", f_unique },
	{ "upper", f_upper },
	{ "wordcount", f_wordcount },
	{ NULL, NULL },
};

/* ---- tests */
static struct tv t_defined(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(v.t != TV_UNDEF);
}

static struct tv t_undefined(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(v.t == TV_UNDEF);
}

static struct tv t_none(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(v.t == TV_NONE);
}

static struct tv t_boolean(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(v.t == TV_BOOL);
}

static struct tv t_true(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(v.t == TV_BOOL && v.b);
}

static struct tv t_false(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(v.t == TV_BOOL && !v.b);
}

static struct tv t_integer(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(v.t == TV_INT);
}

static struct tv t_float(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(v.t == TV_FLOAT);
}

static struct tv t_number(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(tv_is_num(v));
}

static struct tv t_string(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(v.t == TV_STR);
}

static struct tv t_mapping(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(v.t == TV_DICT);
}

static struct tv t_iterable(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(v.t == TV_UNDEF || v.t == TV_STR || v.t == TV_LIST ||
		       v.t == TV_DICT);
}

static struct tv t_sequence(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(v.t == TV_UNDEF || v.t == TV_STR ||
		       (v.t == TV_LIST && !v.l->gen) || v.t == TV_DICT);
}

static struct tv t_callable(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(v.t == TV_FUNC || v.t == TV_UNDEF);
}

static struct tv *need_arg(struct tctx *c, struct targs *a, const char *what)
{
	struct tv *o = targ(a, 0, NULL);

	if (!o)
		tc_fail(c, EINVAL, "TypeError: test '%s' needs an argument",
			what);
	return o;
}

static struct tv t_sameas(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv *o = need_arg(c, a, "sameas");

	if (v.t != o->t)
		return tv_bool(false);
	switch (v.t) {
	case TV_NONE:
	case TV_UNDEF:
		return tv_bool(v.t == TV_NONE);
	case TV_BOOL:
	case TV_INT:
		return tv_bool(tv_equal(v, *o));
	case TV_LIST:
		return tv_bool(v.l == o->l);
	case TV_DICT:
	case TV_NS:
		return tv_bool(v.d == o->d);
	case TV_STR:
		return tv_bool(v.s == o->s);
	default:
		return tv_bool(false);
	}
}

static struct tv t_escaped(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(false);
}

static struct tv t_lower(struct tctx *c, struct tv v, struct targs *a)
{
	struct targs none = { 0 };

	return ts_method(c, str_of(c, v), "islower", &none);
}

static struct tv t_upper(struct tctx *c, struct tv v, struct targs *a)
{
	struct targs none = { 0 };

	return ts_method(c, str_of(c, v), "isupper", &none);
}

static int64_t mod_of(struct tctx *c, struct tv v, int64_t m)
{
	if (v.t != TV_INT && v.t != TV_BOOL)
		tc_fail(c, EINVAL,
			"TypeError: unsupported operand type(s) for %%: '%s' and 'int'",
			tv_typename(v));
	if (!m)
		tc_fail(c, EINVAL, "ZeroDivisionError: integer modulo by zero");
	return ((v.t == TV_BOOL ? v.b : v.i) % m + m) % m;
}

static struct tv t_odd(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(mod_of(c, v, 2) == 1);
}

static struct tv t_even(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(mod_of(c, v, 2) == 0);
}

static struct tv t_divisibleby(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv *o = need_arg(c, a, "divisibleby");

	if (o->t != TV_INT)
		tc_fail(c, EINVAL, "TypeError: divisibleby needs an integer");
	return tv_bool(mod_of(c, v, o->i < 0 ? -o->i : o->i) == 0);
}

static struct tv t_eq(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(tv_equal(v, *need_arg(c, a, "eq")));
}

static struct tv t_ne(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(!tv_equal(v, *need_arg(c, a, "ne")));
}

static int order(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv *o = need_arg(c, a, "comparison");
	int r;

	if (v.t == TV_UNDEF || o->t == TV_UNDEF)
		tmpl_getattr(c, v.t == TV_UNDEF ? v : *o, "__lt__");
	r = tv_cmp(v, *o);
	if (r == -2)
		tc_fail(c, EINVAL,
			"TypeError: comparison not supported between instances of '%s' and '%s'",
			tv_typename(v), tv_typename(*o));
	return r;
}

static struct tv t_lt(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(order(c, v, a) < 0);
}

static struct tv t_le(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(order(c, v, a) <= 0);
}

static struct tv t_gt(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(order(c, v, a) > 0);
}

static struct tv t_ge(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(order(c, v, a) >= 0);
}

static struct tv t_in(struct tctx *c, struct tv v, struct targs *a)
{
	struct tv *seq = need_arg(c, a, "in");
	struct tlist *l;
	size_t i;

	if (seq->t == TV_STR) {
		if (v.t != TV_STR)
			tc_fail(c, EINVAL,
				"TypeError: 'in <string>' requires string as left operand");
		return tv_bool(!v.n || memmem(seq->s, seq->n, v.s, v.n));
	}
	if (seq->t == TV_DICT)
		return tv_bool(td_find(seq->d, v) >= 0);
	l = tv_iter(c, *seq);
	for (i = 0; i < l->n; i++)
		if (tv_equal(l->v[i], v))
			return tv_bool(true);
	return tv_bool(false);
}

static struct tv t_filter(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(v.t == TV_STR && tb_filter(v.s));
}

static struct tv t_test(struct tctx *c, struct tv v, struct targs *a)
{
	return tv_bool(v.t == TV_STR && tb_test(v.s));
}

static const struct tbuiltin tests[] = {
	{ "!=", t_ne },
	{ "<", t_lt },
	{ "<=", t_le },
	{ "==", t_eq },
	{ ">", t_gt },
	{ ">=", t_ge },
	{ "boolean", t_boolean },
	{ "callable", t_callable },
	{ "defined", t_defined },
	{ "divisibleby", t_divisibleby },
	{ "eq", t_eq },
	{ "equalto", t_eq },
	{ "escaped", t_escaped },
	{ "even", t_even },
	{ "false", t_false },
	{ "filter", t_filter },
	{ "float", t_float },
	{ "ge", t_ge },
	{ "greaterthan", t_gt },
	{ "gt", t_gt },
	{ "in", t_in },
	{ "integer", t_integer },
	{ "iterable", t_iterable },
	{ "le", t_le },
	{ "lessthan", t_lt },
	{ "lower", t_lower },
	{ "lt", t_lt },
	{ "mapping", t_mapping },
	{ "ne", t_ne },
	{ "none", t_none },
	{ "number", t_number },
	{ "odd", t_odd },
	{ "sameas", t_sameas },
	{ "sequence", t_sequence },
	{ "string", t_string },
	{ "test", t_test },
	{ "true", t_true },
	{ "undefined", t_undefined },
	{ "upper", t_upper },
	{ NULL, NULL },
};

/* ---- global functions */
static struct tv g_range(struct tctx *c, struct tv self, struct targs *a)
{
	int64_t start = 0, stop, step = 1, i, n;
	struct tv r;
	size_t k;

	for (k = 0; k < a->npos; k++)
		if (a->pos[k].t != TV_INT && a->pos[k].t != TV_BOOL)
			tc_fail(c, EINVAL,
				"TypeError: '%s' object cannot be interpreted as an integer",
				tv_typename(a->pos[k]));
	if (a->npos == 1) {
		stop = a->pos[0].i;
	} else if (a->npos == 2 || a->npos == 3) {
		start = a->pos[0].i;
		stop = a->pos[1].i;
		if (a->npos == 3)
			step = a->pos[2].i;
	} else {
		tc_fail(c, EINVAL,
			"TypeError: range expected 1 to 3 arguments");
	}
	if (!step)
		tc_fail(c, EINVAL,
			"ValueError: range() arg 3 must not be zero");
	if (step > 0)
		n = stop > start ? (stop - start + step - 1) / step : 0;
	else
		n = start > stop ? (start - stop - step - 1) / -step : 0;
	if (n > SANDBOX_MAX_RANGE)
		tc_fail(c, EINVAL,
			"OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).",
			SANDBOX_MAX_RANGE);
	r = tv_list(&c->arena, (size_t)n);
	for (i = 0; i < n; i++)
		r.l->v[r.l->n++] = tv_int(start + i * step);
	return r;
}

static struct tv g_dict(struct tctx *c, struct tv self, struct targs *a)
{
	struct tv r = tv_dict(&c->arena, a->nkw);
	size_t i;

	if (a->npos)
		tc_fail(c, EINVAL,
			"dict() with positional arguments is not supported");
	for (i = 0; i < a->nkw; i++)
		td_set(&c->arena, r.d, tv_strz(&c->arena, a->kwn[i]),
		       a->kwv[i]);
	return r;
}

static struct tv g_namespace(struct tctx *c, struct tv self, struct targs *a)
{
	struct tv r = tv_dict(&c->arena, a->nkw);
	size_t i;

	r.t = TV_NS;
	if (a->npos > 1)
		tc_fail(c, EINVAL,
			"TypeError: namespace takes at most one positional argument");
	if (a->npos) {
		if (a->pos[0].t != TV_DICT)
			tc_fail(c, EINVAL,
				"TypeError: namespace() argument must be a mapping");
		for (i = 0; i < a->pos[0].d->n; i++)
			td_set(&c->arena, r.d, a->pos[0].d->k[i],
			       a->pos[0].d->v[i]);
	}
	for (i = 0; i < a->nkw; i++)
		td_set(&c->arena, r.d, tv_strz(&c->arena, a->kwn[i]),
		       a->kwv[i]);
	return r;
}

static struct tv g_raise(struct tctx *c, struct tv self, struct targs *a)
{
	struct tv *m = targ(a, 0, "message");
	struct tv s = m ? tv_to_str(c, *m) : tv_str_static("");

	tc_fail(c, ECANCELED, "%.*s", (int)(s.n > 390 ? 390 : s.n), s.s);
}

static struct tv g_strftime_now(struct tctx *c, struct tv self, struct targs *a)
{
	struct tv *f = targ(a, 0, "format");
	char buf[512];
	struct tm tm;
	size_t n;

	if (!f || f->t != TV_STR)
		tc_fail(c, EINVAL,
			"TypeError: strftime_now needs a format string");
	if (f->n > 200)
		tc_fail(c, EINVAL,
			"strftime_now: format longer than 200 bytes");
	gmtime_r(&c->now, &tm);
	n = strftime(buf, sizeof(buf), f->s, &tm);
	return tv_str(&c->arena, buf, n);
}

static const struct tbuiltin globals[] = {
	{ "dict", g_dict },
	{ "namespace", g_namespace },
	{ "raise_exception", g_raise },
	{ "range", g_range },
	{ "strftime_now", g_strftime_now },
	{ NULL, NULL },
};

static const struct tbuiltin *find(const struct tbuiltin *t, const char *name)
{
	for (; t->name; t++)
		if (!strcmp(t->name, name))
			return t;
	return NULL;
}

const struct tbuiltin *tb_filter(const char *name)
{
	return find(filters, name);
}

const struct tbuiltin *tb_test(const char *name)
{
	return find(tests, name);
}

const struct tbuiltin *tb_global(const char *name)
{
	return find(globals, name);
}

/* ---- methods */
static struct tv call_str_method(struct tctx *c, struct tv self,
				 struct targs *a);
static struct tv call_dict_method(struct tctx *c, struct tv self,
				  struct targs *a);
static struct tv call_list_method(struct tctx *c, struct tv self,
				  struct targs *a);
static struct tv call_loop_method(struct tctx *c, struct tv self,
				  struct targs *a);

static const char *const unsafe_list[] = { "append",  "clear", "extend",
					   "insert",  "pop",   "remove",
					   "reverse", "sort",  NULL };
static const char *const unsafe_dict[] = { "clear",	 "pop",	   "popitem",
					   "setdefault", "update", NULL };

static bool listed(const char *const *l, const char *name)
{
	for (; *l; l++)
		if (!strcmp(*l, name))
			return true;
	return false;
}

/*
 * The bound method is a tfunc whose self is a 2-list (object, name): the
 * callee reads the name back from it.
 */
static struct tv bind(struct tctx *c, struct tv self, const char *name,
		      tbuiltin_fn fn)
{
	struct tv f = { .t = TV_FUNC }, pair = tv_list(&c->arena, 2);

	pair.l->v[0] = self;
	pair.l->v[1] = tv_str_static(name);
	pair.l->n = 2;
	f.fn = ta_alloc(&c->arena, sizeof(*f.fn));
	f.fn->name = name;
	f.fn->fn = fn;
	f.fn->self = pair;
	return f;
}

struct tv tb_method(struct tctx *c, struct tv self, const char *name)
{
	char hint[160];

	switch (self.t) {
	case TV_STR:
		if (ts_has_method(name))
			return bind(c, self, name, call_str_method);
		break;
	case TV_DICT:
		if (!strcmp(name, "get") || !strcmp(name, "items") ||
		    !strcmp(name, "keys") || !strcmp(name, "values") ||
		    !strcmp(name, "copy"))
			return bind(c, self, name, call_dict_method);
		if (listed(unsafe_dict, name))
			goto unsafe;
		return tv_undef(NULL);
	case TV_LIST:
		if (self.l->gen)
			break;
		if (!strcmp(name, "index") || !strcmp(name, "count") ||
		    !strcmp(name, "copy"))
			return bind(c, self, name, call_list_method);
		if (listed(unsafe_list, name))
			goto unsafe;
		break;
	case TV_LOOP:
		return bind(c, self, name, call_loop_method);
	default:
		break;
	}
	snprintf(hint, sizeof(hint), "'%s object' has no attribute '%.80s'",
		 tv_typename(self), name);
	return tv_undef(ta_strndup(&c->arena, hint, strlen(hint)));
unsafe:
	snprintf(hint, sizeof(hint),
		 "access to attribute '%.80s' of '%s' object is unsafe.", name,
		 tv_typename(self));
	{
		struct tv u =
			tv_undef(ta_strndup(&c->arena, hint, strlen(hint)));

		u.n = TU_UNSAFE;
		return u;
	}
}

static struct tv call_str_method(struct tctx *c, struct tv self,
				 struct targs *a)
{
	return keep_markup(self.l->v[0],
			   ts_method(c, self.l->v[0], self.l->v[1].s, a));
}

static struct tv call_dict_method(struct tctx *c, struct tv self,
				  struct targs *a)
{
	struct tv d = self.l->v[0], r;
	const char *m = self.l->v[1].s;
	size_t i;

	if (!strcmp(m, "get")) {
		struct tv *k = targ(a, 0, NULL), *def = targ(a, 1, NULL);
		long j;

		if (!k)
			tc_fail(c, EINVAL,
				"TypeError: get expected at least 1 argument");
		if (k->t == TV_LIST || k->t == TV_DICT)
			tc_fail(c, EINVAL, "TypeError: unhashable type: '%s'",
				tv_typename(*k));
		j = td_find(d.d, *k);
		return j >= 0 ? d.d->v[j] : def ? *def : tv_none();
	}
	if (!strcmp(m, "copy")) {
		r = tv_dict(&c->arena, d.d->n);
		for (i = 0; i < d.d->n; i++)
			td_set(&c->arena, r.d, d.d->k[i], d.d->v[i]);
		return r;
	}
	r = tv_list(&c->arena, d.d->n);
	for (i = 0; i < d.d->n; i++) {
		if (m[0] == 'k') {
			r.l->v[i] = d.d->k[i];
		} else if (m[0] == 'v') {
			r.l->v[i] = d.d->v[i];
		} else {
			struct tv t = tv_list(&c->arena, 2);

			t.l->tuple = true;
			t.l->v[0] = d.d->k[i];
			t.l->v[1] = d.d->v[i];
			t.l->n = 2;
			r.l->v[i] = t;
		}
	}
	r.l->n = d.d->n;
	return r;
}

static struct tv call_list_method(struct tctx *c, struct tv self,
				  struct targs *a)
{
	struct tv l = self.l->v[0], *x = targ(a, 0, NULL);
	const char *m = self.l->v[1].s;
	int64_t n = 0;
	size_t i;

	if (!strcmp(m, "copy"))
		return copy_list(c, l.l);
	if (!x)
		tc_fail(c, EINVAL, "TypeError: %s() takes exactly one argument",
			m);
	for (i = 0; i < l.l->n; i++)
		if (tv_equal(l.l->v[i], *x)) {
			if (m[0] == 'i')
				return tv_int((int64_t)i);
			n++;
		}
	if (m[0] == 'i')
		tc_fail(c, EINVAL, "ValueError: value is not in list");
	return tv_int(n);
}

static struct tv call_loop_method(struct tctx *c, struct tv self,
				  struct targs *a)
{
	struct tloop *lp = self.l->v[0].lp;
	const char *m = self.l->v[1].s;

	if (!strcmp(m, "cycle")) {
		if (!a->npos)
			tc_fail(c, EINVAL,
				"TypeError: no items for cycling given");
		return a->pos[lp->index0 % a->npos];
	}
	tc_fail(c, EINVAL, "loop.%s() is not supported", m);
}
