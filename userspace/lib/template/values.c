// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Template values: the arena they live in, Python's truth, equality and
 * ordering, str() and repr() as Python prints them, and UTF-8 helpers.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/tmpl.h"

/* ---- arena */
struct tchunk {
	struct tchunk *next;
	size_t used, size;
	max_align_t data[];
};

#define TA_CHUNK (64 * 1024)

void ta_fail(struct tarena *a, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	edgeq_error_vset(a->err, code, fmt, ap);
	va_end(ap);
	longjmp(*a->jb, 1);
}

void *ta_alloc(struct tarena *a, size_t n)
{
	struct tchunk *c = a->head;
	size_t need = (n + 15) & ~(size_t)15;
	void *p;

	if (n > a->limit || a->used + need > a->limit)
		ta_fail(a, ENOMEM,
			"memory limit: the template needs more than %zu bytes",
			a->limit);
	if (!c || c->size - c->used < need) {
		size_t sz = need > TA_CHUNK ? need : TA_CHUNK;

		c = malloc(sizeof(*c) + sz);
		if (!c)
			ta_fail(a, ENOMEM, "out of memory");
		c->size = sz;
		c->used = 0;
		c->next = a->head;
		a->head = c;
	}
	p = (char *)c->data + c->used;
	c->used += need;
	a->used += need;
	memset(p, 0, n);
	return p;
}

void *ta_grow(struct tarena *a, void *p, size_t old, size_t n)
{
	void *q = ta_alloc(a, n);

	if (old)
		memcpy(q, p, old < n ? old : n);
	return q;
}

char *ta_strndup(struct tarena *a, const char *s, size_t n)
{
	char *p = ta_alloc(a, n + 1);

	if (n)
		memcpy(p, s, n);
	p[n] = 0;
	return p;
}

void ta_free(struct tarena *a)
{
	struct tchunk *c = a->head, *next;

	for (; c; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
	a->used = 0;
}

/* ---- buffers */
void tb_put(struct tarena *a, struct tbuf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;

		while (cap < b->n + n + 1)
			cap *= 2;
		b->p = ta_grow(a, b->p, b->n, cap);
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

void tb_putc(struct tarena *a, struct tbuf *b, char ch)
{
	tb_put(a, b, &ch, 1);
}

void tb_printf(struct tarena *a, struct tbuf *b, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	tb_put(a, b, tmp, n < (int)sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* ---- constructors */
struct tv tv_undef(const char *hint)
{
	struct tv v = { .t = TV_UNDEF, .s = hint, .n = TU_PLAIN };

	return v;
}

struct tv tv_none(void)
{
	struct tv v = { .t = TV_NONE };

	return v;
}

struct tv tv_bool(bool b)
{
	struct tv v = { .t = TV_BOOL, .b = b };

	return v;
}

struct tv tv_int(int64_t i)
{
	struct tv v = { .t = TV_INT, .i = i };

	return v;
}

struct tv tv_float(double f)
{
	struct tv v = { .t = TV_FLOAT, .f = f };

	return v;
}

struct tv tv_str(struct tarena *a, const char *s, size_t n)
{
	struct tv v = { .t = TV_STR, .n = n };

	v.s = ta_strndup(a, s, n);
	return v;
}

struct tv tv_strz(struct tarena *a, const char *s)
{
	return tv_str(a, s, strlen(s));
}

struct tv tv_str_static(const char *s)
{
	struct tv v = { .t = TV_STR, .s = s, .n = strlen(s) };

	return v;
}

struct tv tv_list(struct tarena *a, size_t cap)
{
	struct tv v = { .t = TV_LIST };

	v.l = ta_alloc(a, sizeof(*v.l));
	if (cap) {
		v.l->v = ta_alloc(a, cap * sizeof(struct tv));
		v.l->cap = cap;
	}
	return v;
}

struct tv tv_dict(struct tarena *a, size_t cap)
{
	struct tv v = { .t = TV_DICT };

	v.d = ta_alloc(a, sizeof(*v.d));
	if (cap) {
		v.d->k = ta_alloc(a, cap * sizeof(struct tv));
		v.d->v = ta_alloc(a, cap * sizeof(struct tv));
		v.d->cap = cap;
	}
	return v;
}

void tl_push(struct tarena *a, struct tlist *l, struct tv v)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;

		l->v = ta_grow(a, l->v, l->n * sizeof(struct tv),
			       cap * sizeof(struct tv));
		l->cap = cap;
	}
	l->v[l->n++] = v;
}

long td_find(const struct tdict *d, struct tv k)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (tv_equal(d->k[i], k))
			return (long)i;
	return -1;
}

long td_finds(const struct tdict *d, const char *k)
{
	size_t i, n = strlen(k);

	for (i = 0; i < d->n; i++)
		if (d->k[i].t == TV_STR && d->k[i].n == n &&
		    !memcmp(d->k[i].s, k, n))
			return (long)i;
	return -1;
}

void td_set(struct tarena *a, struct tdict *d, struct tv k, struct tv v)
{
	long i = td_find(d, k);

	if (i >= 0) {
		d->v[i] = v;
		return;
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;

		d->k = ta_grow(a, d->k, d->n * sizeof(struct tv),
			       cap * sizeof(struct tv));
		d->v = ta_grow(a, d->v, d->n * sizeof(struct tv),
			       cap * sizeof(struct tv));
		d->cap = cap;
	}
	d->k[d->n] = k;
	d->v[d->n++] = v;
}

/* ---- Python semantics */
bool tv_truthy(struct tv v)
{
	switch (v.t) {
	case TV_UNDEF:
	case TV_NONE:
		return false;
	case TV_BOOL:
		return v.b;
	case TV_INT:
		return v.i != 0;
	case TV_FLOAT:
		return v.f != 0;
	case TV_STR:
		return v.n != 0;
	case TV_LIST:
		return v.l->gen || v.l->n != 0;
	case TV_DICT:
		return v.d->n != 0;
	default:
		return true;
	}
}

bool tv_is_num(struct tv v)
{
	return v.t == TV_BOOL || v.t == TV_INT || v.t == TV_FLOAT;
}

double tv_num(struct tv v)
{
	return v.t == TV_FLOAT ? v.f : v.t == TV_BOOL ? v.b : (double)v.i;
}

static int64_t tv_intval(struct tv v)
{
	return v.t == TV_BOOL ? v.b : v.i;
}

bool tv_equal(struct tv a, struct tv b)
{
	size_t i;

	if (tv_is_num(a) && tv_is_num(b)) {
		if (a.t != TV_FLOAT && b.t != TV_FLOAT)
			return tv_intval(a) == tv_intval(b);
		return tv_num(a) == tv_num(b);
	}
	if (a.t != b.t)
		return false;
	switch (a.t) {
	case TV_UNDEF:
	case TV_NONE:
		return true;
	case TV_STR:
		return a.n == b.n && !memcmp(a.s, b.s, a.n);
	case TV_LIST:
		if (a.l == b.l)
			return true;
		if (a.l->gen || b.l->gen || a.l->tuple != b.l->tuple ||
		    a.l->n != b.l->n)
			return false;
		for (i = 0; i < a.l->n; i++)
			if (!tv_equal(a.l->v[i], b.l->v[i]))
				return false;
		return true;
	case TV_DICT:
		if (a.d->n != b.d->n)
			return false;
		for (i = 0; i < a.d->n; i++) {
			long j = td_find(b.d, a.d->k[i]);

			if (j < 0 || !tv_equal(a.d->v[i], b.d->v[j]))
				return false;
		}
		return true;
	case TV_NS:
		return a.d == b.d;
	case TV_FUNC:
		return a.fn == b.fn;
	case TV_LOOP:
		return a.lp == b.lp;
	default:
		return false;
	}
}

int tv_cmp(struct tv a, struct tv b)
{
	size_t i;
	int r;

	if (tv_is_num(a) && tv_is_num(b)) {
		if (a.t != TV_FLOAT && b.t != TV_FLOAT)
			return (tv_intval(a) > tv_intval(b)) -
			       (tv_intval(a) < tv_intval(b));
		return (tv_num(a) > tv_num(b)) - (tv_num(a) < tv_num(b));
	}
	if (a.t == TV_STR && b.t == TV_STR) {
		size_t n = a.n < b.n ? a.n : b.n;

		r = memcmp(a.s, b.s, n);
		if (r)
			return r < 0 ? -1 : 1;
		return (a.n > b.n) - (a.n < b.n);
	}
	if (a.t == TV_LIST && b.t == TV_LIST && !a.l->gen && !b.l->gen &&
	    a.l->tuple == b.l->tuple) {
		for (i = 0; i < a.l->n && i < b.l->n; i++) {
			if (tv_equal(a.l->v[i], b.l->v[i]))
				continue;
			return tv_cmp(a.l->v[i], b.l->v[i]);
		}
		return (a.l->n > b.l->n) - (a.l->n < b.l->n);
	}
	return -2;
}

const char *tv_typename(struct tv v)
{
	switch (v.t) {
	case TV_UNDEF:
		return "Undefined";
	case TV_NONE:
		return "NoneType";
	case TV_BOOL:
		return "bool";
	case TV_INT:
		return "int";
	case TV_FLOAT:
		return "float";
	case TV_STR:
		return "str";
	case TV_LIST:
		return v.l->gen ? "generator" : v.l->tuple ? "tuple" : "list";
	case TV_DICT:
		return "dict";
	case TV_NS:
		return "Namespace";
	case TV_FUNC:
		return v.fn->macro ? "Macro" : "builtin_function_or_method";
	case TV_LOOP:
		return "LoopContext";
	}
	return "object";
}

/* ---- UTF-8 */
size_t u8_decode(const char *s, size_t n, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len, i;
	uint32_t c;

	if (u[0] < 0x80) {
		*cp = u[0];
		return 1;
	}
	if ((u[0] & 0xe0) == 0xc0)
		len = 2, c = u[0] & 0x1f;
	else if ((u[0] & 0xf0) == 0xe0)
		len = 3, c = u[0] & 0x0f;
	else if ((u[0] & 0xf8) == 0xf0)
		len = 4, c = u[0] & 0x07;
	else
		goto bad;
	if (len > n)
		goto bad;
	for (i = 1; i < len; i++) {
		if ((u[i] & 0xc0) != 0x80)
			goto bad;
		c = (c << 6) | (u[i] & 0x3f);
	}
	*cp = c;
	return len;
bad:
	*cp = 0xfffd;
	return 1;
}

size_t u8_len(const char *s, size_t n)
{
	size_t i, c = 0;

	for (i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

size_t u8_offset(const char *s, size_t n, size_t cp)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && cp-- == 0)
			return i;
	return n;
}

/* str.isspace() */
bool u_isspace(uint32_t c)
{
	return (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x20) || c == 0x85 ||
	       c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
	       c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
	       c == 0x3000;
}

/* str.isprintable() for one code point, as far as repr() needs it. */
static bool u_isprintable(uint32_t c)
{
	if (c < 0x20 || c == 0x7f)
		return false;
	if (c < 0x7f)
		return true;
	if (c <= 0xa0 || c == 0xad || u_isspace(c))
		return false;
	if ((c >= 0x200b && c <= 0x200f) || (c >= 0x202a && c <= 0x202e) ||
	    (c >= 0x2060 && c <= 0x206f) || c == 0xfeff ||
	    (c >= 0xd800 && c <= 0xf8ff) || (c >= 0xfff9 && c <= 0xfffb) ||
	    c >= 0xf0000)
		return false;
	return true;
}

/* ---- str() and repr() */
void tv_write_float(struct tarena *a, struct tbuf *b, double f)
{
	char tmp[40], dig[24];
	int prec, exp, nd, i, decpt;
	char *e;

	if (isnan(f)) {
		tb_put(a, b, "nan", 3);
		return;
	}
	if (isinf(f)) {
		tb_put(a, b, f < 0 ? "-inf" : "inf", f < 0 ? 4 : 3);
		return;
	}
	/* shortest digits that read back as f */
	for (prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, f);
		if (strtod(tmp, NULL) == f)
			break;
	}
	e = strchr(tmp, 'e');
	exp = atoi(e + 1);
	nd = 0;
	for (i = 0; tmp + i < e; i++)
		if (tmp[i] >= '0' && tmp[i] <= '9')
			dig[nd++] = tmp[i];
	while (nd > 1 && dig[nd - 1] == '0')
		nd--;
	dig[nd] = 0;
	if (tmp[0] == '-')
		tb_putc(a, b, '-');
	decpt = exp + 1;
	if (decpt > -4 && decpt <= 16) {
		if (decpt <= 0) {
			tb_put(a, b, "0.", 2);
			for (i = 0; i < -decpt; i++)
				tb_putc(a, b, '0');
			tb_put(a, b, dig, (size_t)nd);
		} else if (decpt >= nd) {
			tb_put(a, b, dig, (size_t)nd);
			for (i = nd; i < decpt; i++)
				tb_putc(a, b, '0');
			tb_put(a, b, ".0", 2);
		} else {
			tb_put(a, b, dig, (size_t)decpt);
			tb_putc(a, b, '.');
			tb_put(a, b, dig + decpt, (size_t)(nd - decpt));
		}
		return;
	}
	tb_putc(a, b, dig[0]);
	if (nd > 1) {
		tb_putc(a, b, '.');
		tb_put(a, b, dig + 1, (size_t)(nd - 1));
	}
	tb_printf(a, b, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
}

static void write_str_repr(struct tarena *a, struct tbuf *b, const char *s,
			   size_t n)
{
	char q = '\'';
	size_t i, l;
	uint32_t cp;

	if (memchr(s, '\'', n) && !memchr(s, '"', n))
		q = '"';
	tb_putc(a, b, q);
	for (i = 0; i < n; i += l) {
		l = u8_decode(s + i, n - i, &cp);
		if (cp == (uint32_t)q || cp == '\\') {
			tb_putc(a, b, '\\');
			tb_putc(a, b, (char)cp);
		} else if (cp == '\n') {
			tb_put(a, b, "\\n", 2);
		} else if (cp == '\r') {
			tb_put(a, b, "\\r", 2);
		} else if (cp == '\t') {
			tb_put(a, b, "\\t", 2);
		} else if (!u_isprintable(cp)) {
			if (cp < 0x100)
				tb_printf(a, b, "\\x%02x", cp);
			else if (cp < 0x10000)
				tb_printf(a, b, "\\u%04x", cp);
			else
				tb_printf(a, b, "\\U%08x", cp);
		} else {
			tb_put(a, b, s + i, l);
		}
	}
	tb_putc(a, b, q);
}

static void write_items(struct tctx *c, struct tbuf *b, struct tlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		if (i)
			tb_put(&c->arena, b, ", ", 2);
		tv_write_repr(c, b, l->v[i]);
	}
}

static void write_dict(struct tctx *c, struct tbuf *b, struct tdict *d)
{
	size_t i;

	tb_putc(&c->arena, b, '{');
	for (i = 0; i < d->n; i++) {
		if (i)
			tb_put(&c->arena, b, ", ", 2);
		tv_write_repr(c, b, d->k[i]);
		tb_put(&c->arena, b, ": ", 2);
		tv_write_repr(c, b, d->v[i]);
	}
	tb_putc(&c->arena, b, '}');
}

static void write_common(struct tctx *c, struct tbuf *b, struct tv v)
{
	struct tarena *a = &c->arena;

	if (++c->depth > c->max_depth)
		tc_fail(c, ELOOP, "nesting limit: a value nests deeper than %u",
			c->max_depth);
	switch (v.t) {
	case TV_NONE:
		tb_put(a, b, "None", 4);
		break;
	case TV_BOOL:
		tb_put(a, b, v.b ? "True" : "False", v.b ? 4 : 5);
		break;
	case TV_INT:
		tb_printf(a, b, "%lld", (long long)v.i);
		break;
	case TV_FLOAT:
		tv_write_float(a, b, v.f);
		break;
	case TV_LIST:
		if (v.l->gen)
			tc_fail(c, EINVAL,
				"printing a generator (its address) is not supported; add |list");
		tb_putc(a, b, v.l->tuple ? '(' : '[');
		write_items(c, b, v.l);
		if (v.l->tuple && v.l->n == 1)
			tb_putc(a, b, ',');
		tb_putc(a, b, v.l->tuple ? ')' : ']');
		break;
	case TV_DICT:
		write_dict(c, b, v.d);
		break;
	case TV_NS:
		tb_put(a, b, "<Namespace ", 11);
		write_dict(c, b, v.d);
		tb_putc(a, b, '>');
		break;
	case TV_FUNC:
		tb_printf(a, b, "<%s '%s'>", v.fn->macro ? "Macro" : "function",
			  v.fn->name ? v.fn->name : "?");
		break;
	case TV_LOOP:
		tb_printf(a, b, "<LoopContext %zu/%zu>", v.lp->index0 + 1,
			  v.lp->items->n);
		break;
	default:
		break;
	}
	c->depth--;
}

void tv_write_str(struct tctx *c, struct tbuf *b, struct tv v)
{
	if (v.t == TV_STR)
		tb_put(&c->arena, b, v.s, v.n);
	else if (v.t != TV_UNDEF)
		write_common(c, b, v);
}

void tv_write_repr(struct tctx *c, struct tbuf *b, struct tv v)
{
	if (v.t == TV_STR)
		write_str_repr(&c->arena, b, v.s, v.n);
	else if (v.t == TV_UNDEF)
		tb_put(&c->arena, b, "Undefined", 9);
	else
		write_common(c, b, v);
}

struct tv tv_to_str(struct tctx *c, struct tv v)
{
	struct tbuf b = { 0 };
	struct tv r = { .t = TV_STR };

	if (v.t == TV_STR)
		return v;
	tv_write_str(c, &b, v);
	r.s = b.p ? b.p : "";
	r.n = b.n;
	return r;
}

struct tlist *tv_iter(struct tctx *c, struct tv v)
{
	struct tlist *l;
	size_t i, n;
	uint32_t cp;

	switch (v.t) {
	case TV_UNDEF:
		return tv_list(&c->arena, 0).l;
	case TV_LIST:
		if (v.l->gen) {
			if (v.l->consumed)
				return tv_list(&c->arena, 0).l;
			v.l->consumed = true;
		}
		return v.l;
	case TV_DICT:
		l = tv_list(&c->arena, v.d->n).l;
		if (v.d->n)
			memcpy(l->v, v.d->k, v.d->n * sizeof(struct tv));
		l->n = v.d->n;
		return l;
	case TV_STR:
		l = tv_list(&c->arena, v.n).l;
		for (i = 0; i < v.n; i += n) {
			n = u8_decode(v.s + i, v.n - i, &cp);
			l->v[l->n++] = tv_str(&c->arena, v.s + i, n);
		}
		return l;
	default:
		tc_fail(c, EINVAL, "TypeError: '%s' object is not iterable",
			tv_typename(v));
	}
}
