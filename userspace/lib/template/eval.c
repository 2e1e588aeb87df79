// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Template evaluator: walks the AST with Jinja2's semantics in the sandbox
 * transformers uses. Scopes: each for-loop iteration, macro call and with
 * block gets a fresh scope over the enclosing one; if blocks share theirs;
 * macros see their defining scope as it is when they are called. Every
 * loop iteration, call and filter counts a step; every nested evaluation
 * counts depth; both are bounded.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/tmpl.h"
#include "template/builtins.h"

#define ST_NORMAL 0
#define ST_BREAK 1
#define ST_CONTINUE 2

void tc_fail(struct tctx *c, int code, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (code == ECANCELED)
		ta_fail(&c->arena, code, "%s", msg);
	ta_fail(&c->arena, code, "line %d: %s", c->line, msg);
}

void tc_step(struct tctx *c)
{
	if (++c->steps > c->max_steps)
		tc_fail(c, ETIME,
			"step limit: more than %llu loop iterations, calls and filters",
			(unsigned long long)c->max_steps);
}

/* ---- scopes */
struct tscope *tscope_new(struct tctx *c, struct tscope *parent)
{
	struct tscope *s = ta_alloc(&c->arena, sizeof(*s));

	s->parent = parent;
	return s;
}

void tscope_set(struct tctx *c, struct tscope *s, const char *name, struct tv v)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->names[i], name)) {
			s->vals[i] = v;
			return;
		}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;

		s->names = ta_grow(&c->arena, s->names,
				   s->n * sizeof(*s->names),
				   cap * sizeof(*s->names));
		s->vals = ta_grow(&c->arena, s->vals, s->n * sizeof(*s->vals),
				  cap * sizeof(*s->vals));
		s->cap = cap;
	}
	s->names[s->n] = name;
	s->vals[s->n++] = v;
}

static bool scope_get(struct tscope *s, const char *name, struct tv *out)
{
	size_t i;

	for (; s; s = s->parent)
		for (i = s->n; i-- > 0;)
			if (!strcmp(s->names[i], name)) {
				*out = s->vals[i];
				return true;
			}
	return false;
}

static struct tv undef_fmt(struct tctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static struct tv undef_fmt(struct tctx *c, const char *fmt, ...)
{
	char buf[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return tv_undef(ta_strndup(&c->arena, buf, strlen(buf)));
}

static struct tv lookup(struct tctx *c, struct tscope *s, const char *name)
{
	const struct tbuiltin *g;
	struct tv v;

	if (scope_get(s, name, &v))
		return v;
	g = tb_global(name);
	if (g) {
		v.t = TV_FUNC;
		v.fn = ta_alloc(&c->arena, sizeof(*v.fn));
		v.fn->name = g->name;
		v.fn->fn = g->fn;
		return v;
	}
	return undef_fmt(c, "'%.100s' is undefined", name);
}

__attribute__((noreturn)) static void fail_undef(struct tctx *c, struct tv u)
{
	if (u.n == TU_UNSAFE)
		tc_fail(c, EINVAL, "SecurityError: %s",
			u.s ? u.s : "unsafe access");
	tc_fail(c, EINVAL, "UndefinedError: %s", u.s ? u.s : "undefined");
}

struct tv *targ(struct targs *a, size_t pos, const char *name)
{
	size_t i;

	for (i = 0; name && i < a->nkw; i++)
		if (!strcmp(a->kwn[i], name))
			return &a->kwv[i];
	return pos < a->npos ? &a->pos[pos] : NULL;
}

/* ---- attribute and item access (SandboxedEnvironment.getattr/getitem) */
static struct tv loop_attr(struct tctx *c, struct tloop *lp, const char *n)
{
	size_t len = lp->items->n, i0 = lp->index0;

	if (!strcmp(n, "index"))
		return tv_int((int64_t)i0 + 1);
	if (!strcmp(n, "index0"))
		return tv_int((int64_t)i0);
	if (!strcmp(n, "revindex"))
		return tv_int((int64_t)(len - i0));
	if (!strcmp(n, "revindex0"))
		return tv_int((int64_t)(len - i0 - 1));
	if (!strcmp(n, "first"))
		return tv_bool(i0 == 0);
	if (!strcmp(n, "last"))
		return tv_bool(i0 + 1 == len);
	if (!strcmp(n, "length"))
		return tv_int((int64_t)len);
	if (!strcmp(n, "depth"))
		return tv_int((int64_t)lp->depth0 + 1);
	if (!strcmp(n, "depth0"))
		return tv_int((int64_t)lp->depth0);
	if (!strcmp(n, "previtem"))
		return i0 ? lp->items->v[i0 - 1] :
			    tv_undef("there is no previous item");
	if (!strcmp(n, "nextitem"))
		return i0 + 1 < len ? lp->items->v[i0 + 1] :
				      tv_undef("there is no next item");
	if (!strcmp(n, "cycle") || !strcmp(n, "changed")) {
		struct tv self = { .t = TV_LOOP, .lp = lp };

		return tb_method(c, self, n);
	}
	return undef_fmt(c, "'LoopContext object' has no attribute '%.100s'",
			 n);
}

struct tv tmpl_getattr(struct tctx *c, struct tv obj, const char *name)
{
	long i;

	switch (obj.t) {
	case TV_UNDEF:
		fail_undef(c, obj);
	case TV_DICT: {
		struct tv m = tb_method(c, obj, name);

		if (m.t != TV_UNDEF || m.n == TU_UNSAFE)
			return m;
		i = td_finds(obj.d, name);
		if (i >= 0)
			return obj.d->v[i];
		return undef_fmt(c, "'dict object' has no attribute '%.100s'",
				 name);
	}
	case TV_NS:
		i = td_finds(obj.d, name);
		if (i >= 0)
			return obj.d->v[i];
		return undef_fmt(c, "'%.100s' is undefined", name);
	case TV_STR:
	case TV_LIST:
		return tb_method(c, obj, name);
	case TV_LOOP:
		return loop_attr(c, obj.lp, name);
	default:
		return undef_fmt(c, "'%s object' has no attribute '%.100s'",
				 tv_typename(obj), name);
	}
}

static int64_t index_of(struct tctx *c, struct tv v)
{
	if (v.t == TV_INT)
		return v.i;
	if (v.t == TV_BOOL)
		return v.b;
	tc_fail(c, EINVAL,
		"TypeError: slice indices must be integers or None, not %s",
		tv_typename(v));
}

/* Python's slice.indices() for a sequence of @len items. */
static void slice_bounds(struct tctx *c, struct tv *st, struct tv *sp,
			 struct tv *sk, int64_t len, int64_t *start,
			 int64_t *stop, int64_t *step)
{
	*step = sk && sk->t != TV_NONE ? index_of(c, *sk) : 1;
	if (*step == 0)
		tc_fail(c, EINVAL, "ValueError: slice step cannot be zero");
	if (st && st->t != TV_NONE) {
		*start = index_of(c, *st);
		if (*start < 0)
			*start += len;
		if (*start < 0)
			*start = *step < 0 ? -1 : 0;
		if (*start >= len)
			*start = *step < 0 ? len - 1 : len;
	} else {
		*start = *step < 0 ? len - 1 : 0;
	}
	if (sp && sp->t != TV_NONE) {
		*stop = index_of(c, *sp);
		if (*stop < 0)
			*stop += len;
		if (*stop < 0)
			*stop = *step < 0 ? -1 : 0;
		if (*stop >= len)
			*stop = *step < 0 ? len - 1 : len;
	} else {
		*stop = *step < 0 ? -1 : len;
	}
}

static struct tv do_slice(struct tctx *c, struct tv obj, struct tv *st,
			  struct tv *sp, struct tv *sk)
{
	int64_t start, stop, step, i, len;
	struct tv r;

	if (obj.t == TV_LIST && !obj.l->gen) {
		len = (int64_t)obj.l->n;
		slice_bounds(c, st, sp, sk, len, &start, &stop, &step);
		r = tv_list(&c->arena, 0);
		r.l->tuple = obj.l->tuple;
		for (i = start; step > 0 ? i < stop : i > stop; i += step)
			tl_push(&c->arena, r.l, obj.l->v[i]);
		return r;
	}
	if (obj.t == TV_STR) {
		struct tbuf b = { 0 };
		bool ascii = u8_len(obj.s, obj.n) == obj.n;

		len = (int64_t)u8_len(obj.s, obj.n);
		slice_bounds(c, st, sp, sk, len, &start, &stop, &step);
		if (ascii && step == 1)
			return tv_str(&c->arena, obj.s + start,
				      stop > start ? (size_t)(stop - start) :
						     0);
		for (i = start; step > 0 ? i < stop : i > stop; i += step) {
			size_t o = ascii ? (size_t)i :
					   u8_offset(obj.s, obj.n, (size_t)i);
			uint32_t cp;

			tb_put(&c->arena, &b, obj.s + o,
			       u8_decode(obj.s + o, obj.n - o, &cp));
		}
		r.t = TV_STR;
		r.markup = false;
		r.s = b.p ? b.p : "";
		r.n = b.n;
		return r;
	}
	if (obj.t == TV_UNDEF)
		fail_undef(c, obj);
	return undef_fmt(c, "'%s object' has no attribute 'slice'",
			 tv_typename(obj));
}

struct tv tmpl_getitem(struct tctx *c, struct tv obj, struct tv key)
{
	int64_t i, len;
	long j;

	switch (obj.t) {
	case TV_UNDEF:
		fail_undef(c, obj);
	case TV_DICT:
		if (key.t == TV_LIST || key.t == TV_DICT)
			tc_fail(c, EINVAL, "TypeError: unhashable type: '%s'",
				tv_typename(key));
		j = td_find(obj.d, key);
		if (j >= 0)
			return obj.d->v[j];
		break;
	case TV_LIST:
	case TV_STR:
		if (key.t != TV_INT && key.t != TV_BOOL)
			break;
		if (obj.t == TV_LIST && obj.l->gen)
			break;
		i = index_of(c, key);
		len = obj.t == TV_LIST ? (int64_t)obj.l->n :
					 (int64_t)u8_len(obj.s, obj.n);
		if (i < 0)
			i += len;
		if (i < 0 || i >= len)
			return tv_undef("index out of range");
		if (obj.t == TV_LIST)
			return obj.l->v[i];
		{
			size_t o = u8_offset(obj.s, obj.n, (size_t)i);
			uint32_t cp;

			return tv_str(&c->arena, obj.s + o,
				      u8_decode(obj.s + o, obj.n - o, &cp));
		}
	default:
		break;
	}
	if (key.t == TV_STR && obj.t != TV_DICT)
		return tmpl_getattr(c, obj, key.s);
	if (key.t == TV_STR) {
		struct tv m = tb_method(c, obj, key.s);

		if (m.t != TV_UNDEF || m.n == TU_UNSAFE)
			return m;
		return undef_fmt(c, "'dict object' has no attribute '%.100s'",
				 key.s);
	}
	return undef_fmt(c, "'%s object' has no element %s", tv_typename(obj),
			 tv_typename(key));
}

/* ---- calls */
static struct tv call_macro(struct tctx *c, struct tfunc *f, struct targs *a)
{
	struct tn *m = f->macro;
	struct tscope *s = tscope_new(c, f->env);
	struct tbuf buf = { 0 }, *saved = c->out;
	struct tv varargs = tv_list(&c->arena, 0),
		  kwargs = tv_dict(&c->arena, 0), r;
	size_t i, k;
	bool *given = ta_alloc(&c->arena, m->nkids + 1);

	tc_step(c);
	for (i = 0; i < a->npos; i++) {
		if (i < m->nkids) {
			tscope_set(c, s, m->kids[i]->name, a->pos[i]);
			given[i] = true;
		} else {
			tl_push(&c->arena, varargs.l, a->pos[i]);
		}
	}
	for (k = 0; k < a->nkw; k++) {
		for (i = 0; i < m->nkids; i++)
			if (!strcmp(m->kids[i]->name, a->kwn[k]))
				break;
		if (i < m->nkids) {
			if (given[i])
				tc_fail(c, EINVAL,
					"TypeError: macro '%s' got multiple values for argument '%s'",
					f->name, a->kwn[k]);
			tscope_set(c, s, m->kids[i]->name, a->kwv[k]);
			given[i] = true;
		} else if (!strcmp(a->kwn[k], "caller") && f->caller.t) {
			continue;
		} else {
			td_set(&c->arena, kwargs.d,
			       tv_strz(&c->arena, a->kwn[k]), a->kwv[k]);
		}
	}
	for (i = 0; i < m->nkids; i++) {
		if (given[i])
			continue;
		if (m->kwv && m->kwv[i])
			tscope_set(c, s, m->kids[i]->name,
				   tmpl_eval(c, m->kwv[i], s));
		else
			tscope_set(
				c, s, m->kids[i]->name,
				undef_fmt(c,
					  "parameter '%.100s' was not provided",
					  m->kids[i]->name));
	}
	tscope_set(c, s, "varargs", varargs);
	tscope_set(c, s, "kwargs", kwargs);
	if (f->caller.t)
		tscope_set(c, s, "caller", f->caller);
	c->out = &buf;
	tmpl_render_body(c, m->body, s);
	c->out = saved;
	r.t = TV_STR;
	r.markup = false;
	r.s = buf.p ? buf.p : "";
	r.n = buf.n;
	return r;
}

struct tv tmpl_call(struct tctx *c, struct tv fn, struct targs *a)
{
	if (fn.t == TV_UNDEF)
		fail_undef(c, fn);
	if (fn.t != TV_FUNC)
		tc_fail(c, EINVAL, "TypeError: '%s' object is not callable",
			tv_typename(fn));
	if (fn.fn->macro)
		return call_macro(c, fn.fn, a);
	tc_step(c);
	return fn.fn->fn(c, fn.fn->self, a);
}

/* Evaluate a call's arguments (with *args and **kwargs spread). */
static void eval_args(struct tctx *c, struct tn *n, struct tscope *s,
		      struct targs *a, size_t extra_kw)
{
	struct tv dyn = { 0 }, dkw = { 0 };
	size_t i, np = n->nkids, nk = n->nkw;

	if (n->dyn_args) {
		dyn = tmpl_eval(c, n->dyn_args, s);
		dyn.l = tv_iter(c, dyn);
		np += dyn.l->n;
	}
	if (n->dyn_kwargs) {
		dkw = tmpl_eval(c, n->dyn_kwargs, s);
		if (dkw.t != TV_DICT)
			tc_fail(c, EINVAL,
				"TypeError: argument after ** must be a mapping");
		nk += dkw.d->n;
	}
	a->pos = ta_alloc(&c->arena, (np + 1) * sizeof(*a->pos));
	a->kwn = ta_alloc(&c->arena, (nk + extra_kw + 1) * sizeof(*a->kwn));
	a->kwv = ta_alloc(&c->arena, (nk + extra_kw + 1) * sizeof(*a->kwv));
	a->npos = a->nkw = 0;
	for (i = 0; i < n->nkids; i++)
		a->pos[a->npos++] = tmpl_eval(c, n->kids[i], s);
	for (i = 0; dyn.t && i < dyn.l->n; i++)
		a->pos[a->npos++] = dyn.l->v[i];
	for (i = 0; i < n->nkw; i++) {
		a->kwn[a->nkw] = n->kwn[i];
		a->kwv[a->nkw++] = tmpl_eval(c, n->kwv[i], s);
	}
	for (i = 0; dkw.t && i < dkw.d->n; i++) {
		if (dkw.d->k[i].t != TV_STR)
			tc_fail(c, EINVAL,
				"TypeError: keywords must be strings");
		a->kwn[a->nkw] = dkw.d->k[i].s;
		a->kwv[a->nkw++] = dkw.d->v[i];
	}
}

/* ---- operators */
static struct tv int_result(struct tctx *c, bool overflow, int64_t r)
{
	if (overflow)
		tc_fail(c, EINVAL,
			"OverflowError: integer result beyond 64 bits");
	return tv_int(r);
}

static struct tv repeat(struct tctx *c, struct tv seq, int64_t times)
{
	struct tv r;
	int64_t i;

	if (times < 0)
		times = 0;
	if (seq.t == TV_STR) {
		struct tbuf b = { 0 };

		if (seq.n && (uint64_t)times > c->arena.limit / seq.n)
			tc_fail(c, ENOMEM,
				"memory limit: string repeated %lld times",
				(long long)times);
		for (i = 0; i < times; i++)
			tb_put(&c->arena, &b, seq.s, seq.n);
		r.t = TV_STR;
		r.markup = false;
		r.s = b.p ? b.p : "";
		r.n = b.n;
		return r;
	}
	if (seq.l->n && (uint64_t)times > c->arena.limit / seq.l->n)
		tc_fail(c, ENOMEM, "memory limit: list repeated %lld times",
			(long long)times);
	r = tv_list(&c->arena, 0);
	r.l->tuple = seq.l->tuple;
	for (i = 0; i < times; i++) {
		size_t k;

		for (k = 0; k < seq.l->n; k++)
			tl_push(&c->arena, r.l, seq.l->v[k]);
	}
	return r;
}

static const char *const op_names[] = {
	[OP_ADD] = "+",	       [OP_SUB] = "-",	     [OP_MUL] = "*",
	[OP_DIV] = "/",	       [OP_FLOORDIV] = "//", [OP_MOD] = "%",
	[OP_POW] = "**",       [OP_CONCAT] = "~",    [OP_EQ] = "==",
	[OP_NE] = "!=",	       [OP_LT] = "<",	     [OP_LE] = "<=",
	[OP_GT] = ">",	       [OP_GE] = ">=",	     [OP_IN] = "in",
	[OP_NOTIN] = "not in",
};

static struct tv binop(struct tctx *c, int op, struct tv l, struct tv r)
{
	int64_t x, y, res;
	bool ovf;

	if (op == OP_CONCAT) {
		struct tbuf b = { 0 };
		struct tv s = { .t = TV_STR };

		tv_write_str(c, &b, l);
		tv_write_str(c, &b, r);
		s.s = b.p ? b.p : "";
		s.n = b.n;
		return s;
	}
	if (l.t == TV_UNDEF)
		fail_undef(c, l);
	if (r.t == TV_UNDEF)
		fail_undef(c, r);
	if (tv_is_num(l) && tv_is_num(r)) {
		if (l.t != TV_FLOAT && r.t != TV_FLOAT) {
			x = l.t == TV_BOOL ? l.b : l.i;
			y = r.t == TV_BOOL ? r.b : r.i;
			switch (op) {
			case OP_ADD:
				ovf = __builtin_add_overflow(x, y, &res);
				return int_result(c, ovf, res);
			case OP_SUB:
				ovf = __builtin_sub_overflow(x, y, &res);
				return int_result(c, ovf, res);
			case OP_MUL:
				ovf = __builtin_mul_overflow(x, y, &res);
				return int_result(c, ovf, res);
			case OP_DIV:
				if (!y)
					goto zero;
				return tv_float((double)x / (double)y);
			case OP_FLOORDIV:
			case OP_MOD:
				if (!y)
					goto zero;
				if (x == INT64_MIN && y == -1)
					return int_result(c, true, 0);
				res = x / y;
				if ((x % y) && ((x < 0) != (y < 0)))
					res--;
				return tv_int(op == OP_FLOORDIV ? res :
								  x - res * y);
			case OP_POW:
				if (y < 0)
					return tv_float(
						pow((double)x, (double)y));
				res = 1;
				ovf = false;
				while (y-- > 0 && !ovf)
					ovf = __builtin_mul_overflow(res, x,
								     &res);
				return int_result(c, ovf, res);
			}
		} else {
			double a = tv_num(l), b = tv_num(r), q, d;

			switch (op) {
			case OP_ADD:
				return tv_float(a + b);
			case OP_SUB:
				return tv_float(a - b);
			case OP_MUL:
				return tv_float(a * b);
			case OP_DIV:
				if (b == 0)
					goto zero;
				return tv_float(a / b);
			case OP_FLOORDIV:
			case OP_MOD:
				if (b == 0)
					goto zero;
				/* Python's float_divmod */
				q = fmod(a, b);
				d = (a - q) / b;
				if (q && ((b < 0) != (q < 0))) {
					q += b;
					d -= 1.0;
				} else if (!q) {
					q = copysign(0.0, b);
				}
				if (op == OP_MOD)
					return tv_float(q);
				if (d) {
					double fd = floor(d);

					if (d - fd > 0.5)
						fd += 1.0;
					return tv_float(fd);
				}
				return tv_float(copysign(0.0, a / b));
			case OP_POW:
				return tv_float(pow(a, b));
			}
		}
	}
	if (op == OP_ADD && l.t == TV_STR && r.t == TV_STR) {
		struct tbuf b = { 0 };
		struct tv s = { .t = TV_STR };

		/* Markup + str escapes the str, and stays Markup */
		if (l.markup || r.markup) {
			l = tv_escape(c, l);
			r = tv_escape(c, r);
			s.markup = true;
		}
		tb_put(&c->arena, &b, l.s, l.n);
		tb_put(&c->arena, &b, r.s, r.n);
		s.s = b.p ? b.p : "";
		s.n = b.n;
		return s;
	}
	if (op == OP_ADD && l.t == TV_LIST && r.t == TV_LIST && !l.l->gen &&
	    !r.l->gen && l.l->tuple == r.l->tuple) {
		struct tv s = tv_list(&c->arena, l.l->n + r.l->n);

		if (l.l->n)
			memcpy(s.l->v, l.l->v, l.l->n * sizeof(struct tv));
		if (r.l->n)
			memcpy(s.l->v + l.l->n, r.l->v,
			       r.l->n * sizeof(struct tv));
		s.l->n = l.l->n + r.l->n;
		s.l->tuple = l.l->tuple;
		return s;
	}
	if (op == OP_MUL) {
		if ((l.t == TV_STR || (l.t == TV_LIST && !l.l->gen)) &&
		    (r.t == TV_INT || r.t == TV_BOOL))
			return repeat(c, l, index_of(c, r));
		if ((r.t == TV_STR || (r.t == TV_LIST && !r.l->gen)) &&
		    (l.t == TV_INT || l.t == TV_BOOL))
			return repeat(c, r, index_of(c, l));
	}
	if (op == OP_MOD && l.t == TV_STR)
		return ts_percent(c, l, r);
	tc_fail(c, EINVAL,
		"TypeError: unsupported operand type(s) for %s: '%s' and '%s'",
		op_names[op], tv_typename(l), tv_typename(r));
zero:
	tc_fail(c, EINVAL, "ZeroDivisionError: division by zero");
}

static bool contains(struct tctx *c, struct tv needle, struct tv hay)
{
	struct tlist *l;
	size_t i;

	switch (hay.t) {
	case TV_UNDEF:
		return false;
	case TV_STR:
		if (needle.t != TV_STR)
			tc_fail(c, EINVAL,
				"TypeError: 'in <string>' requires string as left operand, not %s",
				tv_typename(needle));
		if (!needle.n)
			return true;
		return memmem(hay.s, hay.n, needle.s, needle.n) != NULL;
	case TV_DICT:
	case TV_NS:
		if (needle.t == TV_LIST || needle.t == TV_DICT)
			tc_fail(c, EINVAL, "TypeError: unhashable type: '%s'",
				tv_typename(needle));
		return hay.t == TV_DICT && td_find(hay.d, needle) >= 0;
	case TV_LIST:
		l = tv_iter(c, hay);
		for (i = 0; i < l->n; i++)
			if (tv_equal(l->v[i], needle))
				return true;
		return false;
	default:
		tc_fail(c, EINVAL,
			"TypeError: argument of type '%s' is not iterable",
			tv_typename(hay));
	}
}

static bool compare(struct tctx *c, int op, struct tv l, struct tv r)
{
	int k;

	switch (op) {
	case OP_EQ:
		return tv_equal(l, r);
	case OP_NE:
		return !tv_equal(l, r);
	case OP_IN:
		return contains(c, l, r);
	case OP_NOTIN:
		return !contains(c, l, r);
	}
	if (l.t == TV_UNDEF)
		fail_undef(c, l);
	if (r.t == TV_UNDEF)
		fail_undef(c, r);
	k = tv_cmp(l, r);
	if (k == -2)
		tc_fail(c, EINVAL,
			"TypeError: '%s' not supported between instances of '%s' and '%s'",
			op_names[op], tv_typename(l), tv_typename(r));
	switch (op) {
	case OP_LT:
		return k < 0;
	case OP_LE:
		return k <= 0;
	case OP_GT:
		return k > 0;
	default:
		return k >= 0;
	}
}

/* ---- filters and tests */
static struct tv eval_filter(struct tctx *c, struct tn *n, struct tscope *s,
			     const struct tv *subject)
{
	struct tv v;
	struct targs a;

	if (n->a)
		v = n->a->k == N_FILTER && subject ?
			    eval_filter(c, n->a, s, subject) :
			    tmpl_eval(c, n->a, s);
	else
		v = *subject;
	c->line = n->line;
	if (!n->fn)
		tc_fail(c, EINVAL,
			"TemplateRuntimeError: No filter named '%s' found.",
			n->name);
	eval_args(c, n, s, &a, 0);
	tc_step(c);
	c->line = n->line;
	return n->fn->fn(c, v, &a);
}

static struct tv eval_test(struct tctx *c, struct tn *n, struct tscope *s)
{
	struct tv v = tmpl_eval(c, n->a, s), r;
	struct targs a;

	c->line = n->line;
	if (!n->fn)
		tc_fail(c, EINVAL,
			"TemplateRuntimeError: No test named '%s' found.",
			n->name);
	eval_args(c, n, s, &a, 0);
	tc_step(c);
	r = n->fn->fn(c, v, &a);
	return tv_bool(tv_truthy(r) != (n->op == 1));
}

static struct tv eval_call(struct tctx *c, struct tn *n, struct tscope *s,
			   const struct tv *caller)
{
	struct tv fn = tmpl_eval(c, n->a, s);
	struct targs a;

	eval_args(c, n, s, &a, 1);
	c->line = n->line;
	if (caller) {
		if (fn.t != TV_FUNC || !fn.fn->macro)
			tc_fail(c, EINVAL,
				"TypeError: a call block needs a macro");
		a.kwn[a.nkw] = "caller";
		a.kwv[a.nkw++] = *caller;
		{
			struct tfunc *f = ta_alloc(&c->arena, sizeof(*f));

			*f = *fn.fn;
			f->caller = *caller;
			fn.fn = f;
		}
	}
	return tmpl_call(c, fn, &a);
}

struct tv tmpl_eval(struct tctx *c, struct tn *n, struct tscope *s)
{
	struct tv r, l;
	size_t i;

	if (++c->depth > c->max_depth)
		tc_fail(c, ELOOP,
			"nesting limit: evaluation nests deeper than %u",
			c->max_depth);
	c->line = n->line;
	switch (n->k) {
	case N_CONST:
		r = n->val;
		break;
	case N_NAME:
		r = lookup(c, s, n->name);
		break;
	case N_GETATTR:
		r = tmpl_getattr(c, tmpl_eval(c, n->a, s), n->name);
		break;
	case N_GETITEM:
		l = tmpl_eval(c, n->a, s);
		if (n->b->k == N_SLICE) {
			struct tv st, sp, sk;

			st = n->b->a ? tmpl_eval(c, n->b->a, s) : tv_none();
			sp = n->b->b ? tmpl_eval(c, n->b->b, s) : tv_none();
			sk = n->b->c ? tmpl_eval(c, n->b->c, s) : tv_none();
			r = do_slice(c, l, &st, &sp, &sk);
		} else {
			r = tmpl_getitem(c, l, tmpl_eval(c, n->b, s));
		}
		break;
	case N_CALL:
		r = eval_call(c, n, s, NULL);
		break;
	case N_FILTER:
		r = eval_filter(c, n, s, NULL);
		break;
	case N_TEST:
		r = eval_test(c, n, s);
		break;
	case N_BINOP:
		l = tmpl_eval(c, n->a, s);
		r = binop(c, n->op, l, tmpl_eval(c, n->b, s));
		break;
	case N_NEG:
	case N_POS:
		r = tmpl_eval(c, n->a, s);
		if (r.t == TV_UNDEF)
			fail_undef(c, r);
		if (r.t == TV_BOOL)
			r = tv_int(r.b);
		if (r.t == TV_INT && n->k == N_NEG) {
			if (r.i == INT64_MIN)
				int_result(c, true, 0);
			r.i = -r.i;
		} else if (r.t == TV_FLOAT && n->k == N_NEG) {
			r.f = -r.f;
		} else if (r.t != TV_INT && r.t != TV_FLOAT) {
			tc_fail(c, EINVAL,
				"TypeError: bad operand type for unary %c: '%s'",
				n->k == N_NEG ? '-' : '+', tv_typename(r));
		}
		break;
	case N_NOT:
		r = tv_bool(!tv_truthy(tmpl_eval(c, n->a, s)));
		break;
	case N_AND:
		r = tmpl_eval(c, n->a, s);
		if (tv_truthy(r))
			r = tmpl_eval(c, n->b, s);
		break;
	case N_OR:
		r = tmpl_eval(c, n->a, s);
		if (!tv_truthy(r))
			r = tmpl_eval(c, n->b, s);
		break;
	case N_COMPARE:
		l = tmpl_eval(c, n->a, s);
		r = tv_bool(true);
		for (i = 0; i < n->nkids; i++) {
			struct tv x = tmpl_eval(c, n->kids[i]->a, s);

			if (!compare(c, n->kids[i]->op, l, x)) {
				r = tv_bool(false);
				break;
			}
			l = x;
		}
		break;
	case N_CONDEXPR:
		if (tv_truthy(tmpl_eval(c, n->b, s)))
			r = tmpl_eval(c, n->a, s);
		else if (n->c)
			r = tmpl_eval(c, n->c, s);
		else
			r = undef_fmt(
				c,
				"the inline if-expression on line %d evaluated to false and no else section was defined.",
				n->line);
		break;
	case N_LIST:
	case N_TUPLE:
		r = tv_list(&c->arena, n->nkids);
		r.l->tuple = n->k == N_TUPLE;
		for (i = 0; i < n->nkids; i++)
			r.l->v[r.l->n++] = tmpl_eval(c, n->kids[i], s);
		break;
	case N_DICT:
		r = tv_dict(&c->arena, n->nkids / 2);
		for (i = 0; i + 1 < n->nkids; i += 2) {
			struct tv k = tmpl_eval(c, n->kids[i], s);

			if (k.t == TV_LIST || k.t == TV_DICT || k.t == TV_NS)
				tc_fail(c, EINVAL,
					"TypeError: unhashable type: '%s'",
					tv_typename(k));
			td_set(&c->arena, r.d, k,
			       tmpl_eval(c, n->kids[i + 1], s));
		}
		break;
	default:
		tc_fail(c, EINVAL, "internal: node %d is not an expression",
			n->k);
	}
	c->depth--;
	return r;
}

/* ---- statements */
static void out_check(struct tctx *c)
{
	if (c->out->n > c->max_output)
		tc_fail(c, E2BIG,
			"output limit: the template renders more than %zu bytes",
			c->max_output);
}

static void assign(struct tctx *c, struct tscope *s, struct tn *t, struct tv v)
{
	struct tlist *l;
	size_t i;

	if (t->k == N_NAME) {
		tscope_set(c, s, t->name, v);
		return;
	}
	if (t->k == N_GETATTR) {
		struct tv ns = lookup(c, s, t->a->name);

		if (ns.t != TV_NS)
			tc_fail(c, EINVAL,
				"TemplateRuntimeError: cannot assign attribute on non-namespace object");
		td_set(&c->arena, ns.d, tv_strz(&c->arena, t->name), v);
		return;
	}
	l = tv_iter(c, v);
	if (l->n != t->nkids)
		tc_fail(c, EINVAL,
			"ValueError: %s values to unpack (expected %zu, got %zu)",
			l->n > t->nkids ? "too many" : "not enough", t->nkids,
			l->n);
	for (i = 0; i < t->nkids; i++)
		assign(c, s, t->kids[i], l->v[i]);
}

static struct tv capture(struct tctx *c, struct tn *body, struct tscope *s)
{
	struct tbuf buf = { 0 }, *saved = c->out;
	struct tv r = { .t = TV_STR };

	c->out = &buf;
	tmpl_render_body(c, body, s);
	c->out = saved;
	r.s = buf.p ? buf.p : "";
	r.n = buf.n;
	return r;
}

static int exec_body(struct tctx *c, struct tn *body, struct tscope *s);

/*
 * A fresh scope for the next iteration: the last one emptied, unless a
 * closure still refers to it (so long loops do not grow memory).
 */
static struct tscope *iter_scope(struct tctx *c, struct tscope *last,
				 struct tscope *parent)
{
	if (!last || last->captured)
		return tscope_new(c, parent);
	last->n = 0;
	return last;
}

static int exec_for(struct tctx *c, struct tn *n, struct tscope *s)
{
	struct tlist *items = tv_iter(c, tmpl_eval(c, n->b, s));
	struct tloop *lp;
	struct tscope *it;
	struct tv loopv = { .t = TV_LOOP };
	size_t i;
	int st;

	if (n->op == 1)
		tc_fail(c, EINVAL, "recursive for loops are not supported");
	if (n->c) {
		struct tlist *kept = tv_list(&c->arena, 0).l;

		for (i = 0, it = NULL; i < items->n; i++) {
			tc_step(c);
			it = iter_scope(c, it, s);
			assign(c, it, n->a, items->v[i]);
			if (tv_truthy(tmpl_eval(c, n->c, it)))
				tl_push(&c->arena, kept, items->v[i]);
		}
		items = kept;
	}
	lp = ta_alloc(&c->arena, sizeof(*lp));
	lp->items = items;
	loopv.lp = lp;
	for (i = 0, it = NULL; i < items->n; i++) {
		tc_step(c);
		lp->index0 = i;
		it = iter_scope(c, it, s);
		assign(c, it, n->a, items->v[i]);
		tscope_set(c, it, "loop", loopv);
		st = exec_body(c, n->body, it);
		if (st == ST_BREAK)
			break;
	}
	if (!items->n && n->orelse)
		return exec_body(c, n->orelse, s);
	return ST_NORMAL;
}

static int exec_stmt(struct tctx *c, struct tn *n, struct tscope *s)
{
	struct tv v;
	size_t i;
	int st = ST_NORMAL;

	c->line = n->line;
	switch (n->k) {
	case N_TEXT:
		tb_put(&c->arena, c->out, n->val.s, n->val.n);
		out_check(c);
		break;
	case N_OUTPUT:
		v = tmpl_eval(c, n->a, s);
		tv_write_str(c, c->out, v);
		out_check(c);
		break;
	case N_BODY:
		st = exec_body(c, n, s);
		break;
	case N_IF:
		if (tv_truthy(tmpl_eval(c, n->a, s)))
			st = exec_body(c, n->body, s);
		else if (n->orelse)
			st = n->orelse->k == N_IF ? exec_stmt(c, n->orelse, s) :
						    exec_body(c, n->orelse, s);
		break;
	case N_FOR:
		st = exec_for(c, n, s);
		break;
	case N_SET:
		assign(c, s, n->a, tmpl_eval(c, n->b, s));
		break;
	case N_SETBLOCK:
		v = capture(c, n->body, s);
		if (n->c)
			v = eval_filter(c, n->c, s, &v);
		assign(c, s, n->a, v);
		break;
	case N_MACRO:
		v.t = TV_FUNC;
		v.fn = ta_alloc(&c->arena, sizeof(*v.fn));
		v.fn->name = n->name;
		v.fn->macro = n;
		v.fn->env = s;
		s->captured = true;
		tscope_set(c, s, n->name, v);
		break;
	case N_CALLBLOCK: {
		struct tv caller = { .t = TV_FUNC };

		caller.fn = ta_alloc(&c->arena, sizeof(*caller.fn));
		caller.fn->name = "caller";
		caller.fn->macro = n;
		caller.fn->env = s;
		s->captured = true;
		v = eval_call(c, n->a, s, &caller);
		tv_write_str(c, c->out, v);
		out_check(c);
		break;
	}
	case N_FILTERBLOCK:
		v = capture(c, n->body, s);
		v = eval_filter(c, n->a, s, &v);
		tv_write_str(c, c->out, v);
		out_check(c);
		break;
	case N_WITH: {
		struct tscope *w = tscope_new(c, s);

		for (i = 0; i < n->nkids; i++)
			assign(c, w, n->kids[i], tmpl_eval(c, n->kwv[i], s));
		st = exec_body(c, n->body, w);
		break;
	}
	case N_BREAK:
		return ST_BREAK;
	case N_CONTINUE:
		return ST_CONTINUE;
	default:
		tc_fail(c, EINVAL, "internal: node %d is not a statement",
			n->k);
	}
	return st;
}

static int exec_body(struct tctx *c, struct tn *body, struct tscope *s)
{
	size_t i;
	int st = ST_NORMAL;

	if (++c->depth > c->max_depth)
		tc_fail(c, ELOOP, "nesting limit: blocks nest deeper than %u",
			c->max_depth);
	for (i = 0; i < body->nkids && st == ST_NORMAL; i++)
		st = exec_stmt(c, body->kids[i], s);
	c->depth--;
	return st;
}

void tmpl_render_body(struct tctx *c, struct tn *body, struct tscope *s)
{
	exec_body(c, body, s);
}
