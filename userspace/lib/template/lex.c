// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Template lexer: text and tags, with Jinja2's whitespace rules as
 * transformers sets them: trim_blocks (the first newline after a block or
 * comment tag goes), lstrip_blocks (spaces before a block or comment tag
 * on its own line go, unless the tag opens with +), and the - markers that
 * strip all whitespace on their side. Newlines are normalized to \n and
 * one trailing newline of the source is dropped, as Jinja2 does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "template/tmpl.h"

struct lexer {
	struct tarena *a;
	const char *s;
	size_t n, pos;
	int line;
	struct tk *toks;
	size_t ntoks, cap;
	size_t lpos; /* line_at()'s position so far, and its line */
	int lline;
};

static bool is_ws(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' ||
	       ch == '\f' || ch == '\v';
}

static int line_at(struct lexer *lx, size_t pos)
{
	size_t i;

	if (pos < lx->lpos) {
		lx->lpos = 0;
		lx->lline = 1;
	}
	for (i = lx->lpos; i < pos && i < lx->n; i++)
		lx->lline += lx->s[i] == '\n';
	lx->lpos = i;
	return lx->lline;
}

static struct tk *emit(struct lexer *lx, enum tk_type t, size_t at)
{
	struct tk *k;

	if (lx->ntoks == lx->cap) {
		size_t cap = lx->cap ? lx->cap * 2 : 256;

		lx->toks = ta_grow(lx->a, lx->toks, lx->ntoks * sizeof(*k),
				   cap * sizeof(*k));
		lx->cap = cap;
	}
	k = &lx->toks[lx->ntoks++];
	memset(k, 0, sizeof(*k));
	k->t = t;
	k->line = line_at(lx, at);
	return k;
}

/* Python's unicode-escape decoding of a string literal's body. */
static void unescape(struct lexer *lx, struct tk *k, const char *s, size_t n)
{
	char *o = ta_alloc(lx->a, n + 1);
	size_t i, j = 0, d;
	uint32_t cp;

	for (i = 0; i < n; i++) {
		if (s[i] != '\\' || i + 1 == n) {
			o[j++] = s[i];
			continue;
		}
		switch (s[++i]) {
		case 'n':
			o[j++] = '\n';
			break;
		case 't':
			o[j++] = '\t';
			break;
		case 'r':
			o[j++] = '\r';
			break;
		case 'a':
			o[j++] = '\a';
			break;
		case 'b':
			o[j++] = '\b';
			break;
		case 'f':
			o[j++] = '\f';
			break;
		case 'v':
			o[j++] = '\v';
			break;
		case '\\':
		case '\'':
		case '"':
			o[j++] = s[i];
			break;
		case '\n':
			break;
		case 'x':
		case 'u':
		case 'U':
			d = s[i] == 'x' ? 2 : s[i] == 'u' ? 4 : 8;
			if (i + d >= n)
				ta_fail(lx->a, EINVAL,
					"line %d: TemplateSyntaxError: truncated \\%c escape",
					k->line, s[i]);
			{
				char hex[9];
				char *end;

				memcpy(hex, s + i + 1, d);
				hex[d] = 0;
				cp = (uint32_t)strtoul(hex, &end, 16);
				if (*end || strchr(hex, '-') ||
				    strchr(hex, '+') || strchr(hex, ' ') ||
				    cp > 0x10ffff)
					ta_fail(lx->a, EINVAL,
						"line %d: TemplateSyntaxError: bad \\%c escape",
						k->line, s[i]);
			}
			i += d;
			j += utf8_put(cp, o + j);
			break;
		default:
			if (s[i] >= '0' && s[i] <= '7') {
				cp = 0;
				for (d = 0; d < 3 && i < n && s[i] >= '0' &&
					    s[i] <= '7';
				     d++, i++)
					cp = cp * 8 + (uint32_t)(s[i] - '0');
				i--;
				j += utf8_put(cp, o + j);
			} else {
				o[j++] = '\\';
				o[j++] = s[i];
			}
		}
	}
	o[j] = 0;
	k->s = o;
	k->n = j;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A number: [digits][_digits] with an optional fraction and exponent. */
static size_t lex_number(struct lexer *lx, size_t p)
{
	const char *s = lx->s;
	size_t q = p, e;
	bool flt = false;
	char *buf, *w;
	struct tk *k;

	while (q < lx->n && (is_digit(s[q]) || (s[q] == '_' && q + 1 < lx->n &&
						is_digit(s[q + 1]))))
		q++;
	if (q + 1 < lx->n && s[q] == '.' && is_digit(s[q + 1])) {
		flt = true;
		q++;
		while (q < lx->n && (is_digit(s[q]) || s[q] == '_'))
			q++;
	}
	if (q < lx->n && (s[q] == 'e' || s[q] == 'E')) {
		e = q + 1;
		if (e < lx->n && (s[e] == '+' || s[e] == '-'))
			e++;
		if (e < lx->n && is_digit(s[e])) {
			flt = true;
			q = e;
			while (q < lx->n && is_digit(s[q]))
				q++;
		}
	}
	buf = ta_alloc(lx->a, q - p + 1);
	for (w = buf, e = p; e < q; e++)
		if (s[e] != '_')
			*w++ = s[e];
	k = emit(lx, flt ? TK_FLOAT : TK_INT, p);
	if (flt) {
		k->f = strtod(buf, NULL);
	} else {
		errno = 0;
		k->i = strtoll(buf, NULL, 10);
		if (errno)
			ta_fail(lx->a, EINVAL,
				"line %d: integer literal too large", k->line);
	}
	return q;
}

static const char *const two_ops[] = { "//", "**", "==", "!=", "<=", ">=" };

/* The inside of a {{ }} or {% %} tag from @p; returns the end past it. */
static size_t lex_tag(struct lexer *lx, size_t p, bool block, bool *strip)
{
	const char *s = lx->s;
	char close = block ? '%' : '}';
	char stack[256];
	int depth = 0;
	size_t q, i;
	struct tk *k;

	for (;;) {
		while (p < lx->n && is_ws(s[p]))
			p++;
		if (p >= lx->n)
			ta_fail(lx->a, EINVAL,
				"line %d: TemplateSyntaxError: unexpected end of template, the tag is not closed",
				line_at(lx, p));
		if (!depth) {
			if (s[p] == '-' && p + 2 < lx->n && s[p + 1] == close &&
			    s[p + 2] == '}') {
				*strip = true;
				emit(lx, block ? TK_BLOCK_END : TK_VAR_END, p);
				return p + 3;
			}
			if (s[p] == close && p + 1 < lx->n && s[p + 1] == '}') {
				*strip = false;
				emit(lx, block ? TK_BLOCK_END : TK_VAR_END, p);
				return p + 2;
			}
		}
		if ((s[p] >= 'a' && s[p] <= 'z') ||
		    (s[p] >= 'A' && s[p] <= 'Z') || s[p] == '_') {
			q = p;
			while (q < lx->n && ((s[q] >= 'a' && s[q] <= 'z') ||
					     (s[q] >= 'A' && s[q] <= 'Z') ||
					     s[q] == '_' || is_digit(s[q])))
				q++;
			k = emit(lx, TK_NAME, p);
			k->s = ta_strndup(lx->a, s + p, q - p);
			k->n = q - p;
			p = q;
			continue;
		}
		if (is_digit(s[p])) {
			p = lex_number(lx, p);
			continue;
		}
		if (s[p] == '\'' || s[p] == '"') {
			for (q = p + 1; q < lx->n && s[q] != s[p]; q++)
				if (s[q] == '\\')
					q++;
			if (q >= lx->n)
				ta_fail(lx->a, EINVAL,
					"line %d: TemplateSyntaxError: unexpected char %c, the string is not closed",
					line_at(lx, p), s[p]);
			k = emit(lx, TK_STRING, p);
			unescape(lx, k, s + p + 1, q - p - 1);
			p = q + 1;
			continue;
		}
		k = emit(lx, TK_OP, p);
		for (i = 0; i < sizeof(two_ops) / sizeof(two_ops[0]); i++)
			if (p + 1 < lx->n && s[p] == two_ops[i][0] &&
			    s[p + 1] == two_ops[i][1])
				break;
		if (i < sizeof(two_ops) / sizeof(two_ops[0])) {
			k->op = TKO_FLOORDIV + (int)i;
			p += 2;
			continue;
		}
		if (!strchr("+-/*%~[](){}<>=.:|,;", s[p]) || !s[p])
			ta_fail(lx->a, EINVAL,
				"line %d: TemplateSyntaxError: unexpected char '%c'",
				k->line, s[p]);
		k->op = s[p];
		if (s[p] == '(' || s[p] == '[' || s[p] == '{') {
			if (depth == (int)sizeof(stack))
				ta_fail(lx->a, ELOOP,
					"line %d: nesting limit: brackets nest deeper than %zu",
					k->line, sizeof(stack));
			stack[depth++] = s[p] == '(' ? ')' :
					 s[p] == '[' ? ']' :
						       '}';
		} else if (s[p] == ')' || s[p] == ']' || s[p] == '}') {
			if (!depth || stack[depth - 1] != s[p])
				ta_fail(lx->a, EINVAL,
					"line %d: TemplateSyntaxError: unexpected '%c'",
					k->line, s[p]);
			depth--;
		}
		p++;
	}
}

static void emit_data(struct lexer *lx, size_t at, const char *s, size_t n)
{
	struct tk *k;

	if (!n)
		return;
	k = emit(lx, TK_DATA, at);
	k->s = s;
	k->n = n;
}

/*
 * How much of the text from @p to the tag at @start stays: a - sign strips
 * all whitespace before the tag; lstrip_blocks strips the spaces before a
 * block or comment tag alone on its line, unless the sign is +.
 */
static size_t data_before(const char *s, size_t p, size_t start, char sign,
			  char kind, bool line_starting)
{
	size_t tlen = start - p, lp, i;

	if (sign == '-') {
		while (tlen && is_ws(s[p + tlen - 1]))
			tlen--;
	} else if (sign != '+' && kind != '{') {
		for (lp = tlen; lp && s[p + lp - 1] != '\n'; lp--)
			;
		if (lp > 0 || line_starting) {
			for (i = p + lp; i < start && is_ws(s[i]); i++)
				;
			if (i == start)
				tlen = lp;
		}
	}
	return tlen;
}

/*
 * {%[-+] WORD [-+]%} at @p ("raw", "endraw"): returns the index past it and
 * the sign before its %} in *@close, or 0.
 */
static size_t raw_tag(const char *s, size_t p, size_t n, const char *word,
		      char *close)
{
	size_t wl = strlen(word);

	if (p + 2 > n || s[p] != '{' || s[p + 1] != '%')
		return 0;
	p += 2;
	if (p < n && (s[p] == '-' || s[p] == '+'))
		p++;
	while (p < n && is_ws(s[p]))
		p++;
	if (p + wl > n || memcmp(s + p, word, wl))
		return 0;
	p += wl;
	while (p < n && is_ws(s[p]))
		p++;
	*close = 0;
	if (p < n && (s[p] == '-' || s[p] == '+'))
		*close = s[p++];
	if (p + 2 > n || s[p] != '%' || s[p + 1] != '}')
		return 0;
	return p + 2;
}

/*
 * The body of {% raw %} from @p (past the tag) as text, to its
 * {% endraw %}; returns the position past that. Whitespace as Jinja2: no
 * trim_blocks after raw, the usual rules before and after endraw.
 */
static size_t lex_raw(struct lexer *lx, size_t p, bool strip_after)
{
	const char *s = lx->s;
	size_t i, q = 0, tlen;
	char close = 0;

	if (strip_after)
		while (p < lx->n && is_ws(s[p]))
			p++;
	for (i = p; i + 1 < lx->n; i++)
		if (s[i] == '{' && s[i + 1] == '%' &&
		    (q = raw_tag(s, i, lx->n, "endraw", &close)))
			break;
	if (!q)
		ta_fail(lx->a, EINVAL,
			"line %d: TemplateSyntaxError: Missing end of raw directive",
			line_at(lx, p));
	tlen = data_before(s, p, i, i + 2 < lx->n ? s[i + 2] : 0, '%',
			   p > 0 && s[p - 1] == '\n');
	emit_data(lx, p, s + p, tlen);
	if (close == '-')
		while (q < lx->n && is_ws(s[q]))
			q++;
	else if (close != '+' && q < lx->n && s[q] == '\n')
		q++;
	return q;
}

size_t tmpl_lex(struct tarena *a, const char *src, size_t len, struct tk **out)
{
	struct lexer lx = { .a = a, .lline = 1 };
	bool line_starting = true, strip;
	size_t i, j, p, q, start, tlen;
	char close;
	char *s;

	/* newlines: \r\n and \r become \n; one trailing newline goes */
	s = ta_alloc(a, len + 1);
	for (i = j = 0; i < len; i++) {
		if (src[i] == '\r') {
			s[j++] = '\n';
			if (i + 1 < len && src[i + 1] == '\n')
				i++;
		} else {
			s[j++] = src[i];
		}
	}
	if (j && s[j - 1] == '\n')
		j--;
	s[j] = 0;
	lx.s = s;
	lx.n = j;

	for (p = 0;;) {
		const char *o = NULL;
		char kind, sign;

		for (i = p; i + 1 < lx.n; i++)
			if (s[i] == '{' &&
			    (s[i + 1] == '{' || s[i + 1] == '%' ||
			     s[i + 1] == '#')) {
				o = s + i;
				break;
			}
		if (!o) {
			emit_data(&lx, p, s + p, lx.n - p);
			break;
		}
		start = (size_t)(o - s);
		kind = o[1];
		sign = start + 2 < lx.n ? o[2] : 0;
		tlen = data_before(s, p, start, sign, kind, line_starting);
		emit_data(&lx, p, s + p, tlen);
		if (kind == '%' &&
		    (q = raw_tag(s, start, lx.n, "raw", &close))) {
			p = lex_raw(&lx, q, close == '-');
			line_starting = p > 0 && s[p - 1] == '\n';
			continue;
		}
		p = start + 2 + (sign == '-' || sign == '+');
		if (kind == '#') {
			const char *e = NULL;

			for (i = p; i + 1 < lx.n; i++)
				if (s[i] == '#' && s[i + 1] == '}') {
					e = s + i;
					break;
				}
			if (!e)
				ta_fail(a, EINVAL,
					"line %d: TemplateSyntaxError: missing end of comment tag",
					line_at(&lx, start));
			strip = e > s + p && e[-1] == '-';
			p = (size_t)(e - s) + 2;
		} else {
			emit(&lx, kind == '%' ? TK_BLOCK_BEGIN : TK_VAR_BEGIN,
			     start);
			p = lex_tag(&lx, p, kind == '%', &strip);
		}
		if (strip)
			while (p < lx.n && is_ws(s[p]))
				p++;
		if (kind != '{' && p < lx.n && s[p] == '\n')
			p++;
		line_starting = p > 0 && s[p - 1] == '\n';
	}
	emit(&lx, TK_EOF, lx.n);
	*out = lx.toks;
	return lx.ntoks;
}
