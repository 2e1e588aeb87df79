// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Python's str methods as templates call them (strip, split, startswith,
 * replace, format, ...) and the case mappings behind upper/lower/title.
 * Strings are UTF-8; whitespace and case follow Unicode as Python does
 * (case through the C.UTF-8 locale's tables).
 */
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

#include "template/tmpl.h"
#include "template/builtins.h"

static locale_t utf8_locale(void)
{
	static locale_t loc;
	static bool tried;

	if (!tried) {
		tried = true;
		loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	}
	return loc;
}

static uint32_t case_map(uint32_t cp, bool upper)
{
	locale_t loc = utf8_locale();

	if (cp < 0x80)
		return upper ? (cp >= 'a' && cp <= 'z' ? cp - 32 : cp) :
			       (cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
	if (!loc)
		return cp;
	return upper ? (uint32_t)towupper_l((wint_t)cp, loc) :
		       (uint32_t)towlower_l((wint_t)cp, loc);
}

bool ts_iscased(uint32_t cp, bool upper)
{
	locale_t loc = utf8_locale();

	if (cp < 0x80)
		return upper ? cp >= 'A' && cp <= 'Z' : cp >= 'a' && cp <= 'z';
	if (!loc)
		return false;
	return upper ? iswupper_l((wint_t)cp, loc) :
		       iswlower_l((wint_t)cp, loc);
}

static struct tv from_buf(struct tbuf *b)
{
	struct tv r = { .t = TV_STR, .s = b->p ? b->p : "", .n = b->n };

	return r;
}

/* mode: 'u' upper, 'l' lower, 'c' capitalize, 't' str.title() */
struct tv ts_case(struct tctx *c, struct tv s, char mode)
{
	struct tbuf b = { 0 };
	bool prev_cased = false, first = true;
	size_t i, l;
	uint32_t cp, m;
	char enc[4];

	for (i = 0; i < s.n; i += l) {
		bool up;

		l = u8_decode(s.s + i, s.n - i, &cp);
		switch (mode) {
		case 'u':
			up = true;
			break;
		case 'l':
			up = false;
			break;
		case 'c':
			up = first;
			break;
		default:
			up = !prev_cased;
			break;
		}
		m = case_map(cp, up);
		prev_cased = ts_iscased(cp, true) || ts_iscased(cp, false);
		first = false;
		tb_put(&c->arena, &b, enc, utf8_put(m, enc));
	}
	return from_buf(&b);
}

static bool in_chars(struct tv chars, uint32_t cp)
{
	size_t i, l;
	uint32_t x;

	for (i = 0; i < chars.n; i += l) {
		l = u8_decode(chars.s + i, chars.n - i, &x);
		if (x == cp)
			return true;
	}
	return false;
}

/* Python's strip family: @how 'b' both, 'l' left, 'r' right. */
struct tv ts_strip(struct tctx *c, struct tv s, const struct tv *chars,
		   char how)
{
	size_t a = 0, e = s.n, l;
	uint32_t cp;

	if (chars && chars->t != TV_NONE && chars->t != TV_STR)
		tc_fail(c, EINVAL, "TypeError: strip arg must be None or str");
	if (chars && chars->t == TV_NONE)
		chars = NULL;
	while (how != 'r' && a < e) {
		l = u8_decode(s.s + a, e - a, &cp);
		if (chars ? !in_chars(*chars, cp) : !u_isspace(cp))
			break;
		a += l;
	}
	while (how != 'l' && e > a) {
		size_t st = e - 1;

		while (st > a && ((unsigned char)s.s[st] & 0xc0) == 0x80)
			st--;
		u8_decode(s.s + st, e - st, &cp);
		if (chars ? !in_chars(*chars, cp) : !u_isspace(cp))
			break;
		e = st;
	}
	return tv_str(&c->arena, s.s + a, e - a);
}

struct tv ts_replace(struct tctx *c, struct tv s, struct tv old, struct tv new,
		     int64_t count)
{
	struct tbuf b = { 0 };
	size_t i = 0;
	const char *hit;

	if (!old.n) {
		/* Python inserts new between every character */
		size_t l;
		uint32_t cp;

		while (count != 0 && i <= s.n) {
			tb_put(&c->arena, &b, new.s, new.n);
			if (count > 0)
				count--;
			if (i == s.n) {
				i++;
				break;
			}
			l = u8_decode(s.s + i, s.n - i, &cp);
			tb_put(&c->arena, &b, s.s + i, l);
			i += l;
		}
		if (i < s.n)
			tb_put(&c->arena, &b, s.s + i, s.n - i);
		return from_buf(&b);
	}
	while (count != 0 && i < s.n &&
	       (hit = memmem(s.s + i, s.n - i, old.s, old.n))) {
		tb_put(&c->arena, &b, s.s + i, (size_t)(hit - s.s) - i);
		tb_put(&c->arena, &b, new.s, new.n);
		i = (size_t)(hit - s.s) + old.n;
		if (count > 0)
			count--;
	}
	if (i < s.n)
		tb_put(&c->arena, &b, s.s + i, s.n - i);
	return from_buf(&b);
}

static struct tv ts_split(struct tctx *c, struct tv s, const struct tv *sep,
			  int64_t maxsplit, bool right)
{
	struct tv r = tv_list(&c->arena, 0);
	size_t i, l, st;
	uint32_t cp;

	if (sep && sep->t == TV_STR) {
		const char *hit;

		if (!sep->n)
			tc_fail(c, EINVAL, "ValueError: empty separator");
		if (right) {
			/* collect from the right, then reverse */
			size_t e = s.n;
			struct tv tmp = tv_list(&c->arena, 0);

			while (maxsplit != 0) {
				size_t k, found = (size_t)-1;

				for (k = e; k >= sep->n; k--)
					if (!memcmp(s.s + k - sep->n, sep->s,
						    sep->n)) {
						found = k - sep->n;
						break;
					}
				if (found == (size_t)-1)
					break;
				tl_push(&c->arena, tmp.l,
					tv_str(&c->arena, s.s + found + sep->n,
					       e - found - sep->n));
				e = found;
				if (maxsplit > 0)
					maxsplit--;
			}
			tl_push(&c->arena, tmp.l, tv_str(&c->arena, s.s, e));
			for (i = tmp.l->n; i-- > 0;)
				tl_push(&c->arena, r.l, tmp.l->v[i]);
			return r;
		}
		i = 0;
		while (maxsplit != 0 &&
		       (hit = memmem(s.s + i, s.n - i, sep->s, sep->n))) {
			tl_push(&c->arena, r.l,
				tv_str(&c->arena, s.s + i,
				       (size_t)(hit - s.s) - i));
			i = (size_t)(hit - s.s) + sep->n;
			if (maxsplit > 0)
				maxsplit--;
		}
		tl_push(&c->arena, r.l, tv_str(&c->arena, s.s + i, s.n - i));
		return r;
	}
	if (sep && sep->t != TV_NONE)
		tc_fail(c, EINVAL, "TypeError: must be str or None, not %s",
			tv_typename(*sep));
	if (right && maxsplit >= 0) {
		/* rsplit() with a bound: split from the right on whitespace */
		struct tv tmp = tv_list(&c->arena, 0);
		size_t e = s.n;

		for (;;) {
			while (e > 0) {
				st = e - 1;
				while (st > 0 &&
				       ((unsigned char)s.s[st] & 0xc0) == 0x80)
					st--;
				u8_decode(s.s + st, e - st, &cp);
				if (!u_isspace(cp))
					break;
				e = st;
			}
			if (!e)
				break;
			st = e;
			while (st > 0) {
				size_t p = st - 1;

				while (p > 0 &&
				       ((unsigned char)s.s[p] & 0xc0) == 0x80)
					p--;
				u8_decode(s.s + p, st - p, &cp);
				if (u_isspace(cp))
					break;
				st = p;
			}
			if (!maxsplit) {
				tl_push(&c->arena, tmp.l,
					tv_str(&c->arena, s.s, e));
				break;
			}
			tl_push(&c->arena, tmp.l,
				tv_str(&c->arena, s.s + st, e - st));
			maxsplit--;
			e = st;
		}
		for (i = tmp.l->n; i-- > 0;)
			tl_push(&c->arena, r.l, tmp.l->v[i]);
		return r;
	}
	i = 0;
	for (;;) {
		while (i < s.n) {
			l = u8_decode(s.s + i, s.n - i, &cp);
			if (!u_isspace(cp))
				break;
			i += l;
		}
		if (i >= s.n)
			break;
		if (maxsplit == 0) {
			/* the rest, as it is */
			tl_push(&c->arena, r.l,
				tv_str(&c->arena, s.s + i, s.n - i));
			break;
		}
		st = i;
		while (i < s.n) {
			l = u8_decode(s.s + i, s.n - i, &cp);
			if (u_isspace(cp))
				break;
			i += l;
		}
		tl_push(&c->arena, r.l, tv_str(&c->arena, s.s + st, i - st));
		if (maxsplit > 0)
			maxsplit--;
	}
	return r;
}

static bool match_affix(struct tctx *c, struct tv s, struct tv a, bool end)
{
	size_t i;

	if (a.t == TV_LIST && a.l->tuple) {
		for (i = 0; i < a.l->n; i++)
			if (match_affix(c, s, a.l->v[i], end))
				return true;
		return false;
	}
	if (a.t != TV_STR)
		tc_fail(c, EINVAL,
			"TypeError: %swith first arg must be str or a tuple of str, not %s",
			end ? "ends" : "starts", tv_typename(a));
	if (a.n > s.n)
		return false;
	return !memcmp(end ? s.s + s.n - a.n : s.s, a.s, a.n);
}

/* str.format(): {} {0} {name} {name.attr} {name[key]} and {{ }}. */
static struct tv ts_format(struct tctx *c, struct tv s, struct targs *a)
{
	struct tbuf b = { 0 };
	size_t i, auto_idx = 0;

	for (i = 0; i < s.n; i++) {
		size_t e, k;
		struct tv v;
		char name[128];

		if (s.s[i] == '}') {
			if (i + 1 < s.n && s.s[i + 1] == '}') {
				tb_putc(&c->arena, &b, '}');
				i++;
				continue;
			}
			tc_fail(c, EINVAL,
				"ValueError: Single '}' encountered in format string");
		}
		if (s.s[i] != '{') {
			tb_putc(&c->arena, &b, s.s[i]);
			continue;
		}
		if (i + 1 < s.n && s.s[i + 1] == '{') {
			tb_putc(&c->arena, &b, '{');
			i++;
			continue;
		}
		for (e = i + 1; e < s.n && s.s[e] != '}'; e++)
			;
		if (e >= s.n)
			tc_fail(c, EINVAL,
				"ValueError: Single '{' encountered in format string");
		k = e - i - 1;
		if (k >= sizeof(name) || memchr(s.s + i + 1, ':', k) ||
		    memchr(s.s + i + 1, '!', k) ||
		    memchr(s.s + i + 1, '.', k) || memchr(s.s + i + 1, '[', k))
			tc_fail(c, EINVAL,
				"str.format with conversions, specs or lookups is not supported");
		memcpy(name, s.s + i + 1, k);
		name[k] = 0;
		if (!k) {
			if (auto_idx >= a->npos)
				tc_fail(c, EINVAL,
					"IndexError: Replacement index %zu out of range for positional args tuple",
					auto_idx);
			v = a->pos[auto_idx++];
		} else if (name[0] >= '0' && name[0] <= '9') {
			size_t idx = (size_t)strtoul(name, NULL, 10);

			if (idx >= a->npos)
				tc_fail(c, EINVAL,
					"IndexError: Replacement index %zu out of range for positional args tuple",
					idx);
			v = a->pos[idx];
		} else {
			struct tv *p = targ(a, (size_t)-1, name);

			if (!p)
				tc_fail(c, EINVAL, "KeyError: '%s'", name);
			v = *p;
		}
		tv_write_str(c, &b, v);
		i = e;
	}
	return from_buf(&b);
}

static int64_t opt_int(struct tctx *c, struct targs *a, size_t pos,
		       const char *name, int64_t def)
{
	struct tv *v = targ(a, pos, name);

	if (!v || v->t == TV_NONE)
		return def;
	if (v->t != TV_INT && v->t != TV_BOOL)
		tc_fail(c, EINVAL, "TypeError: an integer is required, not %s",
			tv_typename(*v));
	return v->t == TV_BOOL ? v->b : v->i;
}

static struct tv need_str(struct tctx *c, struct targs *a, size_t pos,
			  const char *what)
{
	struct tv *v = targ(a, pos, NULL);

	if (!v)
		tc_fail(c, EINVAL,
			"TypeError: %s() takes at least %zu argument(s)", what,
			pos + 1);
	if (v->t != TV_STR)
		tc_fail(c, EINVAL,
			"TypeError: %s() argument must be str, not %s", what,
			tv_typename(*v));
	return *v;
}

static bool all_chars(struct tv s, bool (*pred)(uint32_t))
{
	size_t i, l;
	uint32_t cp;

	if (!s.n)
		return false;
	for (i = 0; i < s.n; i += l) {
		l = u8_decode(s.s + i, s.n - i, &cp);
		if (!pred(cp))
			return false;
	}
	return true;
}

static bool is_digit_cp(uint32_t cp)
{
	return cp >= '0' && cp <= '9';
}

static bool is_alpha_cp(uint32_t cp)
{
	return ts_iscased(cp, true) || ts_iscased(cp, false) ||
	       (cp > 0x7f && utf8_locale() &&
		iswalpha_l((wint_t)cp, utf8_locale()));
}

static bool is_alnum_cp(uint32_t cp)
{
	return is_digit_cp(cp) || is_alpha_cp(cp);
}

/* The method @name of the str @s called with @a. */
struct tv ts_method(struct tctx *c, struct tv s, const char *name,
		    struct targs *a)
{
	if (!strcmp(name, "strip") || !strcmp(name, "lstrip") ||
	    !strcmp(name, "rstrip"))
		return ts_strip(c, s, targ(a, 0, "chars"),
				name[0] == 's' ? 'b' : name[0]);
	if (!strcmp(name, "split") || !strcmp(name, "rsplit"))
		return ts_split(c, s, targ(a, 0, "sep"),
				opt_int(c, a, 1, "maxsplit", -1),
				name[0] == 'r');
	if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
		struct tv *p = targ(a, 0, NULL);

		if (!p)
			tc_fail(c, EINVAL,
				"TypeError: %s() takes at least 1 argument",
				name);
		return tv_bool(match_affix(c, s, *p, name[0] == 'e'));
	}
	if (!strcmp(name, "replace"))
		return ts_replace(c, s, need_str(c, a, 0, name),
				  need_str(c, a, 1, name),
				  opt_int(c, a, 2, "count", -1));
	if (!strcmp(name, "upper"))
		return ts_case(c, s, 'u');
	if (!strcmp(name, "lower"))
		return ts_case(c, s, 'l');
	if (!strcmp(name, "title"))
		return ts_case(c, s, 't');
	if (!strcmp(name, "capitalize")) {
		struct tv low = ts_case(c, s, 'l');
		struct tv first;
		uint32_t cp;
		size_t l;

		if (!low.n)
			return low;
		l = u8_decode(low.s, low.n, &cp);
		first = ts_case(
			c, tv_str(&c->arena, s.s, u8_decode(s.s, s.n, &cp)),
			'u');
		return binop_concat(c, first,
				    tv_str(&c->arena, low.s + l, low.n - l));
	}
	if (!strcmp(name, "find") || !strcmp(name, "rfind") ||
	    !strcmp(name, "index") || !strcmp(name, "count")) {
		struct tv sub = need_str(c, a, 0, name);
		const char *hit = NULL, *p;
		int64_t n = 0;

		if (!strcmp(name, "count")) {
			if (!sub.n)
				return tv_int((int64_t)u8_len(s.s, s.n) + 1);
			for (p = s.s; (p = memmem(p, s.n - (size_t)(p - s.s),
						  sub.s, sub.n));
			     p += sub.n)
				n++;
			return tv_int(n);
		}
		if (name[0] == 'r') {
			for (p = s.s; (p = memmem(p, s.n - (size_t)(p - s.s),
						  sub.s, sub.n));
			     p++)
				hit = p;
			if (!sub.n)
				hit = s.s + s.n;
		} else {
			hit = sub.n ? memmem(s.s, s.n, sub.s, sub.n) : s.s;
		}
		if (!hit && name[0] == 'i')
			tc_fail(c, EINVAL, "ValueError: substring not found");
		return tv_int(hit ? (int64_t)u8_len(s.s, (size_t)(hit - s.s)) :
				    -1);
	}
	if (!strcmp(name, "format"))
		return ts_format(c, s, a);
	if (!strcmp(name, "join")) {
		struct tv *it = targ(a, 0, NULL);
		struct tbuf b = { 0 };
		struct tlist *l;
		size_t i;

		if (!it)
			tc_fail(c, EINVAL,
				"TypeError: join() takes exactly one argument");
		l = tv_iter(c, *it);
		for (i = 0; i < l->n; i++) {
			if (l->v[i].t != TV_STR)
				tc_fail(c, EINVAL,
					"TypeError: sequence item %zu: expected str instance, %s found",
					i, tv_typename(l->v[i]));
			if (i)
				tb_put(&c->arena, &b, s.s, s.n);
			tb_put(&c->arena, &b, l->v[i].s, l->v[i].n);
		}
		return from_buf(&b);
	}
	if (!strcmp(name, "splitlines")) {
		struct tv r = tv_list(&c->arena, 0);
		size_t i, st = 0;

		for (i = 0; i < s.n; i++)
			if (s.s[i] == '\n' || s.s[i] == '\r') {
				tl_push(&c->arena, r.l,
					tv_str(&c->arena, s.s + st, i - st));
				if (s.s[i] == '\r' && i + 1 < s.n &&
				    s.s[i + 1] == '\n')
					i++;
				st = i + 1;
			}
		if (st < s.n)
			tl_push(&c->arena, r.l,
				tv_str(&c->arena, s.s + st, s.n - st));
		return r;
	}
	if (!strcmp(name, "isdigit"))
		return tv_bool(all_chars(s, is_digit_cp));
	if (!strcmp(name, "isalpha"))
		return tv_bool(all_chars(s, is_alpha_cp));
	if (!strcmp(name, "isalnum"))
		return tv_bool(all_chars(s, is_alnum_cp));
	if (!strcmp(name, "isspace"))
		return tv_bool(all_chars(s, u_isspace));
	if (!strcmp(name, "islower") || !strcmp(name, "isupper")) {
		struct tv other = ts_case(c, s, name[2] == 'l' ? 'u' : 'l');
		struct tv same = ts_case(c, s, name[2] == 'l' ? 'l' : 'u');

		/* cased, and unchanged by the mapping to its own case */
		return tv_bool(tv_equal(same, s) && !tv_equal(other, s));
	}
	if (!strcmp(name, "removeprefix") || !strcmp(name, "removesuffix")) {
		struct tv x = need_str(c, a, 0, name);
		bool suf = name[6] == 's';

		if (match_affix(c, s, x, suf))
			return tv_str(&c->arena, suf ? s.s : s.s + x.n,
				      s.n - x.n);
		return s;
	}
	tc_fail(c, EINVAL, "str method '%s' is not supported", name);
}

bool ts_has_method(const char *name)
{
	static const char *const names[] = {
		"strip",   "lstrip",	   "rstrip",	   "split",
		"rsplit",  "startswith",   "endswith",	   "replace",
		"upper",   "lower",	   "title",	   "capitalize",
		"find",	   "rfind",	   "index",	   "count",
		"format",  "join",	   "splitlines",   "isdigit",
		"isalpha", "isalnum",	   "isspace",	   "islower",
		"isupper", "removeprefix", "removesuffix", NULL
	};
	size_t i;

	for (i = 0; names[i]; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

/* Pad @s to @width code points (left-justified when @left). */
static void put_padded(struct tctx *c, struct tbuf *b, const char *s, size_t n,
		       long width, bool left)
{
	long pad = width - (long)u8_len(s, n), i;

	for (i = 0; !left && i < pad; i++)
		tb_putc(&c->arena, b, ' ');
	tb_put(&c->arena, b, s, n);
	for (i = 0; left && i < pad; i++)
		tb_putc(&c->arena, b, ' ');
}

static struct tv next_arg(struct tctx *c, struct tlist *args, size_t *k)
{
	if (!args || *k >= args->n)
		tc_fail(c, EINVAL,
			"TypeError: not enough arguments for format string");
	return args->v[(*k)++];
}

/* One printf-style conversion of @v by @conv with the C spec @spec. */
static void convert(struct tctx *c, struct tbuf *b, char conv,
		    const char *flags, long width, long prec, struct tv v)
{
	char spec[32], out[1024]; /* width, precision <= 400: fits */
	bool left = strchr(flags, '-') != NULL;
	struct tbuf t = { 0 };

	switch (conv) {
	case 's':
	case 'r':
	case 'a':
		if (conv == 's')
			tv_write_str(c, &t, v);
		else
			tv_write_repr(c, &t, v);
		if (prec >= 0 && t.n)
			t.n = u8_offset(t.p, t.n, (size_t)prec);
		put_padded(c, b, t.p ? t.p : "", t.n, width, left);
		return;
	case 'c':
		if (v.t == TV_STR && u8_len(v.s, v.n) == 1) {
			put_padded(c, b, v.s, v.n, width, left);
			return;
		}
		if (v.t == TV_INT && v.i >= 0 && v.i <= 0x10ffff) {
			char enc[4];

			put_padded(c, b, enc, utf8_put((uint32_t)v.i, enc),
				   width, left);
			return;
		}
		tc_fail(c, EINVAL, "TypeError: %%c requires an int or a char");
	default:
		break;
	}
	if (!tv_is_num(v))
		tc_fail(c, EINVAL,
			"TypeError: %%%c format: a real number is required, not %s",
			conv, tv_typename(v));
	if (prec >= 0)
		snprintf(spec, sizeof(spec), "%%%s%ld.%ld", flags, width, prec);
	else
		snprintf(spec, sizeof(spec), "%%%s%ld", flags, width);
	if (strchr("diuoxX", conv)) {
		long long x = v.t == TV_FLOAT ? (long long)v.f :
			      v.t == TV_BOOL  ? v.b :
						v.i;

		if (conv == 'u')
			conv = 'd';
		strcat(spec, "ll");
		spec[strlen(spec) + 1] = 0;
		spec[strlen(spec)] = conv;
		if ((conv == 'x' || conv == 'X' || conv == 'o') && x < 0) {
			/* Python keeps the sign; C would print two's complement */
			tb_putc(&c->arena, b, '-');
			x = -x;
		}
		snprintf(out, sizeof(out), spec, x);
	} else {
		spec[strlen(spec) + 1] = 0;
		spec[strlen(spec)] = conv;
		snprintf(out, sizeof(out), spec, tv_num(v));
	}
	tb_put(&c->arena, b, out, strlen(out));
}

/* Python's str % args (and the format filter). */
struct tv ts_percent(struct tctx *c, struct tv fmt, struct tv args)
{
	struct tlist *pos = NULL, one = { .n = 1, .cap = 1, .v = &args };
	struct tdict *map = args.t == TV_DICT ? args.d : NULL;
	struct tbuf b = { 0 };
	size_t i, k = 0;

	if (args.t == TV_LIST && args.l->tuple)
		pos = args.l;
	else if (!map)
		pos = &one;
	for (i = 0; i < fmt.n; i++) {
		char flags[8] = "", conv;
		long width = 0, prec = -1;
		size_t nf = 0;
		struct tv v;
		bool have_key = false;

		if (fmt.s[i] != '%') {
			tb_putc(&c->arena, &b, fmt.s[i]);
			continue;
		}
		if (++i >= fmt.n)
			tc_fail(c, EINVAL, "ValueError: incomplete format");
		if (fmt.s[i] == '(') {
			size_t e = i + 1;

			while (e < fmt.n && fmt.s[e] != ')')
				e++;
			if (e >= fmt.n || !map)
				tc_fail(c, EINVAL,
					"TypeError: format requires a mapping");
			{
				long j = -1;
				size_t q;

				for (q = 0; q < map->n; q++)
					if (map->k[q].t == TV_STR &&
					    map->k[q].n == e - i - 1 &&
					    !memcmp(map->k[q].s, fmt.s + i + 1,
						    e - i - 1))
						j = (long)q;
				if (j < 0)
					tc_fail(c, EINVAL, "KeyError: '%.*s'",
						(int)(e - i - 1),
						fmt.s + i + 1);
				v = map->v[j];
			}
			have_key = true;
			i = e + 1;
		}
		while (i < fmt.n && strchr("-+ #0", fmt.s[i]) && nf < 5)
			flags[nf++] = fmt.s[i++];
		if (i < fmt.n && fmt.s[i] == '*') {
			struct tv w = next_arg(c, pos, &k);

			width = w.t == TV_INT ? (long)w.i : 0;
			i++;
		}
		while (i < fmt.n && fmt.s[i] >= '0' && fmt.s[i] <= '9' &&
		       width < 10000)
			width = width * 10 + (fmt.s[i++] - '0');
		if (i < fmt.n && fmt.s[i] == '.') {
			prec = 0;
			i++;
			while (i < fmt.n && fmt.s[i] >= '0' &&
			       fmt.s[i] <= '9' && prec < 10000)
				prec = prec * 10 + (fmt.s[i++] - '0');
		}
		while (i < fmt.n && strchr("hlL", fmt.s[i]))
			i++;
		if (i >= fmt.n)
			tc_fail(c, EINVAL, "ValueError: incomplete format");
		conv = fmt.s[i];
		if (conv == '%') {
			tb_putc(&c->arena, &b, '%');
			continue;
		}
		if (!strchr("sradiuoxXeEfFgGc", conv))
			tc_fail(c, EINVAL,
				"ValueError: unsupported format character '%c'",
				conv);
		if (width > 400 || prec > 400)
			tc_fail(c, EINVAL,
				"format width or precision over 400");
		if (!have_key)
			v = next_arg(c, map ? &one : pos, &k);
		convert(c, &b, conv, flags, width, prec, v);
	}
	if (!map && pos && k < pos->n)
		tc_fail(c, EINVAL,
			"TypeError: not all arguments converted during string formatting");
	return tv_str(&c->arena, b.p ? b.p : "", b.n);
}
