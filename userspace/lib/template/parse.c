// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Template parser: tokens to the AST, following Jinja2's grammar and its
 * operator precedence (filters and tests bind tighter than any binary
 * operator; `is` tests sit in the filter chain). Unknown filters and tests
 * are errors here unless they sit inside an {% if %} or an inline if, where
 * Jinja2 defers the error to the moment they run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/tmpl.h"

struct parser {
	struct tarena *a;
	struct tk *t;
	size_t n, i;
	unsigned depth, max_depth;
	int soft;  /* inside an if: unknown filters fail when they run */
	int loops; /* for loops around, for break and continue */
};

#define P_FAIL(p, ...) ta_fail((p)->a, EINVAL, __VA_ARGS__)

static struct tk *cur(struct parser *p)
{
	return &p->t[p->i];
}

static struct tk *peek(struct parser *p, size_t k)
{
	return p->i + k < p->n ? &p->t[p->i + k] : &p->t[p->n - 1];
}

static struct tk *next(struct parser *p)
{
	struct tk *k = cur(p);

	if (p->i + 1 < p->n)
		p->i++;
	return k;
}

static bool is_name(struct tk *k, const char *name)
{
	return k->t == TK_NAME && !strcmp(k->s, name);
}

static bool is_op(struct tk *k, int op)
{
	return k->t == TK_OP && k->op == op;
}

static const char *tk_desc(struct tk *k)
{
	static __thread char buf[48];

	switch (k->t) {
	case TK_EOF:
		return "end of template";
	case TK_VAR_END:
		return "end of print statement";
	case TK_BLOCK_END:
		return "end of statement block";
	case TK_NAME:
		snprintf(buf, sizeof(buf), "'%.40s'", k->s);
		return buf;
	case TK_STRING:
		return "string";
	case TK_INT:
	case TK_FLOAT:
		return "number";
	case TK_OP:
		if (k->op < 256)
			snprintf(buf, sizeof(buf), "'%c'", k->op);
		else
			snprintf(buf, sizeof(buf), "operator");
		return buf;
	default:
		return "token";
	}
}

__attribute__((noreturn)) static void unexpected(struct parser *p,
						 const char *want)
{
	P_FAIL(p, "line %d: TemplateSyntaxError: expected %s, got %s",
	       cur(p)->line, want, tk_desc(cur(p)));
}

static void expect_op(struct parser *p, int op)
{
	char want[8];

	if (!is_op(cur(p), op)) {
		snprintf(want, sizeof(want), "'%c'", op);
		unexpected(p, want);
	}
	next(p);
}

static const char *expect_name(struct parser *p)
{
	if (cur(p)->t != TK_NAME)
		unexpected(p, "a name");
	return next(p)->s;
}

static struct tn *node(struct parser *p, enum tn_kind k)
{
	struct tn *n = ta_alloc(p->a, sizeof(*n));

	n->k = k;
	n->line = cur(p)->line;
	return n;
}

static void add_kid(struct parser *p, struct tn *n, struct tn *kid)
{
	if (!n->nkids || (n->nkids >= 2 && !(n->nkids & (n->nkids - 1)))) {
		size_t cap = n->nkids ? (n->nkids + 1) * 2 : 2;

		n->kids = ta_grow(p->a, n->kids, n->nkids * sizeof(kid),
				  cap * sizeof(kid));
	}
	n->kids[n->nkids++] = kid;
}

static void add_kw(struct parser *p, struct tn *n, const char *name,
		   struct tn *v)
{
	n->kwn = ta_grow(p->a, n->kwn, n->nkw * sizeof(*n->kwn),
			 (n->nkw + 1) * sizeof(*n->kwn));
	n->kwv = ta_grow(p->a, n->kwv, n->nkw * sizeof(*n->kwv),
			 (n->nkw + 1) * sizeof(*n->kwv));
	n->kwn[n->nkw] = name;
	n->kwv[n->nkw++] = v;
}

static void enter(struct parser *p)
{
	if (++p->depth > p->max_depth)
		ta_fail(p->a, ELOOP,
			"line %d: nesting limit: the template nests deeper than %u",
			cur(p)->line, p->max_depth);
}

static struct tn *parse_expr(struct parser *p, bool condexpr);
static struct tn *parse_tuple(struct parser *p, bool simplified, bool condexpr,
			      const char *extra_end, bool explicit_parens);
static struct tn *parse_unary(struct parser *p, bool with_filter);
static struct tn *parse_primary(struct parser *p);
static struct tn *parse_postfix(struct parser *p, struct tn *n);

/* ---- expressions */
static void parse_call_args(struct parser *p, struct tn *call)
{
	expect_op(p, '(');
	while (!is_op(cur(p), ')')) {
		if (call->nkids || call->nkw || call->dyn_args ||
		    call->dyn_kwargs)
			expect_op(p, ',');
		if (is_op(cur(p), ')'))
			break;
		if (is_op(cur(p), '*')) {
			next(p);
			call->dyn_args = parse_expr(p, true);
		} else if (cur(p)->t == TK_OP && cur(p)->op == TKO_POW) {
			next(p);
			call->dyn_kwargs = parse_expr(p, true);
		} else if (cur(p)->t == TK_NAME && is_op(peek(p, 1), '=')) {
			const char *k = next(p)->s;

			if (call->dyn_kwargs)
				P_FAIL(p,
				       "line %d: TemplateSyntaxError: invalid syntax for function call expression",
				       cur(p)->line);
			next(p);
			add_kw(p, call, k, parse_expr(p, true));
		} else {
			if (call->nkw || call->dyn_args || call->dyn_kwargs)
				P_FAIL(p,
				       "line %d: TemplateSyntaxError: invalid syntax for function call expression",
				       cur(p)->line);
			add_kid(p, call, parse_expr(p, true));
		}
	}
	next(p);
}

static const char *dotted_name(struct parser *p)
{
	const char *name = expect_name(p);

	while (is_op(cur(p), '.') && peek(p, 1)->t == TK_NAME) {
		struct tk *k;
		char *s;

		next(p);
		k = next(p);
		s = ta_alloc(p->a, strlen(name) + k->n + 2);
		strcpy(s, name);
		strcat(s, ".");
		strcat(s, k->s);
		name = s;
	}
	return name;
}

static struct tn *parse_filter(struct parser *p, struct tn *subject,
			       bool start_inline)
{
	while (is_op(cur(p), '|') || start_inline) {
		struct tn *f;

		if (!start_inline)
			next(p);
		start_inline = false;
		f = node(p, N_FILTER);
		f->name = dotted_name(p);
		f->fn = tb_filter(f->name);
		if (!f->fn && !p->soft)
			P_FAIL(p,
			       "line %d: TemplateAssertionError: No filter named '%s'.",
			       f->line, f->name);
		if (is_op(cur(p), '('))
			parse_call_args(p, f);
		f->a = subject;
		subject = f;
	}
	return subject;
}

static struct tn *parse_test(struct parser *p, struct tn *subject)
{
	struct tn *t = node(p, N_TEST);
	struct tk *k;

	next(p); /* is */
	if (is_name(cur(p), "not")) {
		next(p);
		t->op = 1;
	}
	t->name = dotted_name(p);
	t->fn = tb_test(t->name);
	if (!t->fn && !p->soft)
		P_FAIL(p,
		       "line %d: TemplateAssertionError: No test named '%s'.",
		       t->line, t->name);
	k = cur(p);
	if (is_op(k, '(')) {
		parse_call_args(p, t);
	} else if ((k->t == TK_NAME || k->t == TK_STRING || k->t == TK_INT ||
		    k->t == TK_FLOAT || is_op(k, '(') || is_op(k, '[') ||
		    is_op(k, '{')) &&
		   !is_name(k, "else") && !is_name(k, "or") &&
		   !is_name(k, "and")) {
		if (is_name(k, "is"))
			P_FAIL(p,
			       "line %d: TemplateSyntaxError: You cannot chain multiple tests with is",
			       k->line);
		add_kid(p, t, parse_postfix(p, parse_primary(p)));
	}
	t->a = subject;
	return t;
}

static struct tn *parse_filter_expr(struct parser *p, struct tn *n)
{
	for (;;) {
		if (is_op(cur(p), '|')) {
			n = parse_filter(p, n, false);
		} else if (is_name(cur(p), "is")) {
			n = parse_test(p, n);
		} else if (is_op(cur(p), '(')) {
			struct tn *c = node(p, N_CALL);

			c->a = n;
			parse_call_args(p, c);
			n = c;
		} else {
			return n;
		}
	}
}

static struct tn *parse_subscribed(struct parser *p)
{
	struct tn *s, *start = NULL;

	if (!is_op(cur(p), ':')) {
		start = parse_expr(p, true);
		if (!is_op(cur(p), ':'))
			return start;
	}
	s = node(p, N_SLICE);
	s->a = start;
	next(p); /* : */
	if (!is_op(cur(p), ']') && !is_op(cur(p), ',') && !is_op(cur(p), ':'))
		s->b = parse_expr(p, true);
	if (is_op(cur(p), ':')) {
		next(p);
		if (!is_op(cur(p), ']') && !is_op(cur(p), ','))
			s->c = parse_expr(p, true);
	}
	return s;
}

static struct tn *parse_postfix(struct parser *p, struct tn *n)
{
	for (;;) {
		struct tn *x;

		if (is_op(cur(p), '.')) {
			next(p);
			if (cur(p)->t == TK_NAME) {
				x = node(p, N_GETATTR);
				x->name = next(p)->s;
			} else if (cur(p)->t == TK_INT) {
				x = node(p, N_GETITEM);
				x->b = node(p, N_CONST);
				x->b->val = tv_int(next(p)->i);
			} else {
				unexpected(p, "a name or number after '.'");
			}
			x->a = n;
			n = x;
		} else if (is_op(cur(p), '[')) {
			struct tn *idx, *tup = NULL;

			next(p);
			x = node(p, N_GETITEM);
			idx = parse_subscribed(p);
			while (is_op(cur(p), ',')) {
				if (!tup) {
					tup = node(p, N_TUPLE);
					add_kid(p, tup, idx);
				}
				next(p);
				if (is_op(cur(p), ']'))
					break;
				add_kid(p, tup, parse_subscribed(p));
			}
			expect_op(p, ']');
			x->a = n;
			x->b = tup ? tup : idx;
			n = x;
		} else if (is_op(cur(p), '(')) {
			x = node(p, N_CALL);
			x->a = n;
			parse_call_args(p, x);
			n = x;
		} else {
			return n;
		}
	}
}

static struct tn *parse_primary(struct parser *p)
{
	struct tk *k = cur(p);
	struct tn *n;

	enter(p);
	switch (k->t) {
	case TK_NAME:
		n = node(p, N_CONST);
		if (!strcmp(k->s, "true") || !strcmp(k->s, "True"))
			n->val = tv_bool(true);
		else if (!strcmp(k->s, "false") || !strcmp(k->s, "False"))
			n->val = tv_bool(false);
		else if (!strcmp(k->s, "none") || !strcmp(k->s, "None"))
			n->val = tv_none();
		else
			n->k = N_NAME, n->name = k->s;
		next(p);
		break;
	case TK_STRING: {
		struct tbuf b = { 0 };

		n = node(p, N_CONST);
		while (cur(p)->t == TK_STRING) {
			tb_put(p->a, &b, cur(p)->s, cur(p)->n);
			next(p);
		}
		n->val.t = TV_STR;
		n->val.s = b.p ? b.p : "";
		n->val.n = b.n;
		break;
	}
	case TK_INT:
		n = node(p, N_CONST);
		n->val = tv_int(next(p)->i);
		break;
	case TK_FLOAT:
		n = node(p, N_CONST);
		n->val = tv_float(next(p)->f);
		break;
	case TK_OP:
		if (k->op == '(') {
			next(p);
			n = parse_tuple(p, false, true, NULL, true);
			expect_op(p, ')');
			break;
		}
		if (k->op == '[') {
			n = node(p, N_LIST);
			next(p);
			while (!is_op(cur(p), ']')) {
				if (n->nkids)
					expect_op(p, ',');
				if (is_op(cur(p), ']'))
					break;
				add_kid(p, n, parse_expr(p, true));
			}
			next(p);
			break;
		}
		if (k->op == '{') {
			n = node(p, N_DICT);
			next(p);
			while (!is_op(cur(p), '}')) {
				if (n->nkids)
					expect_op(p, ',');
				if (is_op(cur(p), '}'))
					break;
				add_kid(p, n, parse_expr(p, true));
				expect_op(p, ':');
				add_kid(p, n, parse_expr(p, true));
			}
			next(p);
			break;
		}
		/* fall through */
	default:
		P_FAIL(p, "line %d: TemplateSyntaxError: unexpected %s",
		       k->line, tk_desc(k));
	}
	p->depth--;
	return n;
}

static struct tn *parse_unary(struct parser *p, bool with_filter)
{
	struct tn *n;

	enter(p);
	if (is_op(cur(p), '-') || is_op(cur(p), '+')) {
		n = node(p, is_op(cur(p), '-') ? N_NEG : N_POS);
		next(p);
		n->a = parse_unary(p, false);
	} else {
		n = parse_primary(p);
	}
	n = parse_postfix(p, n);
	if (with_filter)
		n = parse_filter_expr(p, n);
	p->depth--;
	return n;
}

static struct tn *binop(struct parser *p, int op, struct tn *l, struct tn *r)
{
	struct tn *n = node(p, N_BINOP);

	n->op = op;
	n->a = l;
	n->b = r;
	return n;
}

static struct tn *parse_pow(struct parser *p)
{
	struct tn *l = parse_unary(p, true);

	while (cur(p)->t == TK_OP && cur(p)->op == TKO_POW) {
		next(p);
		l = binop(p, OP_POW, l, parse_unary(p, true));
	}
	return l;
}

static struct tn *parse_math2(struct parser *p)
{
	struct tn *l = parse_pow(p);

	for (;;) {
		struct tk *k = cur(p);
		int op = is_op(k, '*') ? OP_MUL :
			 is_op(k, '/') ? OP_DIV :
			 is_op(k, '%') ? OP_MOD :
			 (k->t == TK_OP && k->op == TKO_FLOORDIV) ?
					 OP_FLOORDIV :
					 0;

		if (!op)
			return l;
		next(p);
		l = binop(p, op, l, parse_pow(p));
	}
}

static struct tn *parse_concat(struct parser *p)
{
	struct tn *l = parse_math2(p);

	while (is_op(cur(p), '~')) {
		next(p);
		l = binop(p, OP_CONCAT, l, parse_math2(p));
	}
	return l;
}

static struct tn *parse_math1(struct parser *p)
{
	struct tn *l = parse_concat(p);

	while (is_op(cur(p), '+') || is_op(cur(p), '-')) {
		int op = is_op(cur(p), '+') ? OP_ADD : OP_SUB;

		next(p);
		l = binop(p, op, l, parse_concat(p));
	}
	return l;
}

static struct tn *parse_compare(struct parser *p)
{
	struct tn *e = parse_math1(p), *c = NULL;

	for (;;) {
		struct tk *k = cur(p);
		struct tn *o;
		int op = 0;

		if (k->t == TK_OP)
			op = k->op == TKO_EQ ? OP_EQ :
			     k->op == TKO_NE ? OP_NE :
			     k->op == '<'    ? OP_LT :
			     k->op == TKO_LE ? OP_LE :
			     k->op == '>'    ? OP_GT :
			     k->op == TKO_GE ? OP_GE :
					       0;
		if (op) {
			next(p);
		} else if (is_name(k, "in")) {
			op = OP_IN;
			next(p);
		} else if (is_name(k, "not") && is_name(peek(p, 1), "in")) {
			op = OP_NOTIN;
			next(p);
			next(p);
		} else {
			break;
		}
		if (!c) {
			c = node(p, N_COMPARE);
			c->a = e;
		}
		o = node(p, N_OPERAND);
		o->op = op;
		o->a = parse_math1(p);
		add_kid(p, c, o);
	}
	return c ? c : e;
}

static struct tn *parse_not(struct parser *p)
{
	struct tn *n;

	if (is_name(cur(p), "not")) {
		enter(p);
		n = node(p, N_NOT);
		next(p);
		n->a = parse_not(p);
		p->depth--;
		return n;
	}
	return parse_compare(p);
}

static struct tn *parse_and(struct parser *p)
{
	struct tn *l = parse_not(p);

	while (is_name(cur(p), "and")) {
		struct tn *n = node(p, N_AND);

		next(p);
		n->a = l;
		n->b = parse_not(p);
		l = n;
	}
	return l;
}

static struct tn *parse_or(struct parser *p)
{
	struct tn *l = parse_and(p);

	while (is_name(cur(p), "or")) {
		struct tn *n = node(p, N_OR);

		next(p);
		n->a = l;
		n->b = parse_and(p);
		l = n;
	}
	return l;
}

static struct tn *parse_expr(struct parser *p, bool condexpr)
{
	struct tn *e;

	enter(p);
	if (!condexpr) {
		e = parse_or(p);
		p->depth--;
		return e;
	}
	/* an inline if anywhere makes unknown filters a run-time error */
	{
		size_t save = p->i, d;
		int nest = 0;

		for (d = p->i; d < p->n; d++) {
			struct tk *k = &p->t[d];

			if (k->t == TK_VAR_END || k->t == TK_BLOCK_END ||
			    k->t == TK_EOF)
				break;
			if (is_name(k, "if")) {
				nest = 1;
				break;
			}
		}
		p->i = save;
		p->soft += nest;
		e = parse_or(p);
		while (is_name(cur(p), "if")) {
			struct tn *c = node(p, N_CONDEXPR);

			next(p);
			c->a = e;
			c->b = parse_or(p);
			if (is_name(cur(p), "else")) {
				next(p);
				c->c = parse_expr(p, true);
			}
			e = c;
		}
		p->soft -= nest;
	}
	p->depth--;
	return e;
}

static bool tuple_end(struct parser *p, const char *extra)
{
	struct tk *k = cur(p);

	return k->t == TK_VAR_END || k->t == TK_BLOCK_END || is_op(k, ')') ||
	       k->t == TK_EOF || (extra && is_name(k, extra));
}

static struct tn *parse_tuple(struct parser *p, bool simplified, bool condexpr,
			      const char *extra_end, bool explicit_parens)
{
	struct tn *t = node(p, N_TUPLE), *e;
	bool is_tuple = false;

	for (;;) {
		if (t->nkids)
			expect_op(p, ',');
		if (tuple_end(p, extra_end))
			break;
		e = simplified ? parse_primary(p) : parse_expr(p, condexpr);
		add_kid(p, t, e);
		if (is_op(cur(p), ','))
			is_tuple = true;
		else
			break;
	}
	if (!is_tuple) {
		if (t->nkids)
			return t->kids[0];
		if (!explicit_parens)
			P_FAIL(p,
			       "line %d: TemplateSyntaxError: Expected an expression, got %s",
			       cur(p)->line, tk_desc(cur(p)));
	}
	return t;
}

/* ---- statements */
static struct tn *parse_body(struct parser *p, const char *const *ends);

static void end_block(struct parser *p)
{
	if (cur(p)->t != TK_BLOCK_END)
		unexpected(p, "end of statement block");
	next(p);
}

static void check_target(struct parser *p, struct tn *t)
{
	size_t i;

	if (t->k == N_NAME) {
		if (!strcmp(t->name, "true") || !strcmp(t->name, "false") ||
		    !strcmp(t->name, "none"))
			goto bad;
		return;
	}
	if (t->k == N_TUPLE) {
		for (i = 0; i < t->nkids; i++)
			check_target(p, t->kids[i]);
		return;
	}
bad:
	P_FAIL(p, "line %d: TemplateSyntaxError: can't assign to %s", t->line,
	       t->k == N_CONST ? "a constant" : "this expression");
}

static struct tn *parse_target(struct parser *p, bool ns, const char *extra)
{
	struct tn *t;

	if (ns && cur(p)->t == TK_NAME && is_op(peek(p, 1), '.') &&
	    peek(p, 2)->t == TK_NAME) {
		t = node(p, N_GETATTR);
		t->a = node(p, N_NAME);
		t->a->name = next(p)->s;
		next(p);
		t->name = next(p)->s;
		return t;
	}
	t = parse_tuple(p, true, false, extra, false);
	check_target(p, t);
	return t;
}

static const char *const ends_if[] = { "elif", "else", "endif", NULL };
static const char *const ends_endif[] = { "endif", NULL };
static const char *const ends_for[] = { "endfor", "else", NULL };
static const char *const ends_endfor[] = { "endfor", NULL };

static struct tn *parse_if(struct parser *p)
{
	struct tn *n = node(p, N_IF);

	p->soft++;
	n->a = parse_tuple(p, false, false, NULL, false);
	end_block(p);
	n->body = parse_body(p, ends_if);
	if (is_name(cur(p), "elif")) {
		next(p);
		n->orelse = parse_if(p);
		p->soft--;
		return n;
	}
	if (is_name(cur(p), "else")) {
		next(p);
		end_block(p);
		n->orelse = parse_body(p, ends_endif);
	}
	next(p); /* endif */
	end_block(p);
	p->soft--;
	return n;
}

static struct tn *parse_for(struct parser *p)
{
	struct tn *n = node(p, N_FOR);

	n->a = parse_target(p, false, "in");
	if (!is_name(cur(p), "in"))
		unexpected(p, "'in'");
	next(p);
	n->b = parse_tuple(p, false, false, "recursive", false);
	if (is_name(cur(p), "if")) {
		next(p);
		n->c = parse_expr(p, true);
	}
	if (is_name(cur(p), "recursive")) {
		next(p);
		n->op = 1;
	}
	end_block(p);
	p->loops++;
	n->body = parse_body(p, ends_for);
	p->loops--;
	if (is_name(cur(p), "else")) {
		next(p);
		end_block(p);
		n->orelse = parse_body(p, ends_endfor);
	}
	next(p);
	end_block(p);
	return n;
}

static struct tn *parse_set(struct parser *p)
{
	static const char *const ends[] = { "endset", NULL };
	struct tn *n = node(p, N_SET);

	n->a = parse_target(p, true, NULL);
	if (is_op(cur(p), '=')) {
		next(p);
		n->b = parse_tuple(p, false, true, NULL, false);
		end_block(p);
		return n;
	}
	n->k = N_SETBLOCK;
	if (is_op(cur(p), '|'))
		n->c = parse_filter(p, NULL, false);
	end_block(p);
	n->body = parse_body(p, ends);
	next(p);
	end_block(p);
	return n;
}

/* (a, b=default, ...) of a macro or a call block's caller */
static void parse_signature(struct parser *p, struct tn *n)
{
	expect_op(p, '(');
	while (!is_op(cur(p), ')')) {
		struct tn *arg;

		if (n->nkids)
			expect_op(p, ',');
		arg = node(p, N_NAME);
		arg->name = expect_name(p);
		check_target(p, arg);
		n->kwv = ta_grow(p->a, n->kwv, n->nkids * sizeof(*n->kwv),
				 (n->nkids + 1) * sizeof(*n->kwv));
		if (is_op(cur(p), '=')) {
			next(p);
			n->kwv[n->nkids] = parse_expr(p, true);
		} else if (n->nkids && n->kwv[n->nkids - 1]) {
			P_FAIL(p,
			       "line %d: TemplateSyntaxError: non-default argument follows default argument",
			       arg->line);
		}
		add_kid(p, n, arg);
	}
	next(p);
}

static struct tn *parse_macro_like(struct parser *p, enum tn_kind k,
				   const char *end)
{
	const char *ends[] = { end, NULL };
	struct tn *n = node(p, k);
	int loops = p->loops;

	if (k == N_MACRO) {
		n->name = expect_name(p);
		parse_signature(p, n);
	} else {
		if (is_op(cur(p), '('))
			parse_signature(p, n);
		n->a = parse_expr(p, true);
		if (n->a->k != N_CALL)
			P_FAIL(p, "line %d: TemplateSyntaxError: expected call",
			       n->line);
	}
	end_block(p);
	p->loops = 0;
	n->body = parse_body(p, ends);
	p->loops = loops;
	next(p);
	end_block(p);
	return n;
}

static struct tn *parse_statement(struct parser *p)
{
	static const char *const ends_filter[] = { "endfilter", NULL };
	static const char *const ends_gen[] = { "endgeneration", NULL };
	static const char *const ends_with[] = { "endwith", NULL };
	struct tk *k = cur(p);
	struct tn *n;

	if (k->t != TK_NAME)
		P_FAIL(p, "line %d: TemplateSyntaxError: tag name expected",
		       k->line);
	enter(p);
	next(p);
	if (!strcmp(k->s, "if")) {
		n = parse_if(p);
	} else if (!strcmp(k->s, "for")) {
		n = parse_for(p);
	} else if (!strcmp(k->s, "set")) {
		n = parse_set(p);
	} else if (!strcmp(k->s, "macro")) {
		n = parse_macro_like(p, N_MACRO, "endmacro");
	} else if (!strcmp(k->s, "call")) {
		n = parse_macro_like(p, N_CALLBLOCK, "endcall");
	} else if (!strcmp(k->s, "filter")) {
		n = node(p, N_FILTERBLOCK);
		n->a = parse_filter(p, NULL, true);
		end_block(p);
		n->body = parse_body(p, ends_filter);
		next(p);
		end_block(p);
	} else if (!strcmp(k->s, "generation")) {
		end_block(p);
		n = parse_body(p, ends_gen);
		next(p);
		end_block(p);
	} else if (!strcmp(k->s, "with")) {
		n = node(p, N_WITH);
		while (cur(p)->t != TK_BLOCK_END) {
			struct tn *t;

			if (n->nkids)
				expect_op(p, ',');
			t = parse_target(p, false, NULL);
			expect_op(p, '=');
			add_kw(p, n, NULL, parse_expr(p, true));
			add_kid(p, n, t);
		}
		end_block(p);
		n->body = parse_body(p, ends_with);
		next(p);
		end_block(p);
	} else if (!strcmp(k->s, "break") || !strcmp(k->s, "continue")) {
		if (!p->loops)
			P_FAIL(p,
			       "line %d: TemplateSyntaxError: '%s' outside a loop",
			       k->line, k->s);
		n = node(p, k->s[0] == 'b' ? N_BREAK : N_CONTINUE);
		end_block(p);
	} else {
		P_FAIL(p,
		       "line %d: TemplateSyntaxError: Encountered unknown tag '%s'.",
		       k->line, k->s);
	}
	p->depth--;
	return n;
}

static bool at_end(struct parser *p, const char *const *ends)
{
	struct tk *k = cur(p);

	for (; ends && *ends; ends++)
		if (is_name(k, *ends))
			return true;
	return false;
}

static struct tn *parse_body(struct parser *p, const char *const *ends)
{
	struct tn *b = node(p, N_BODY), *n;

	for (;;) {
		struct tk *k = cur(p);

		switch (k->t) {
		case TK_EOF:
			if (ends)
				P_FAIL(p,
				       "line %d: TemplateSyntaxError: Unexpected end of template. Jinja was looking for the following tags: '%s'.",
				       k->line, ends[0]);
			return b;
		case TK_DATA:
			n = node(p, N_TEXT);
			n->val.t = TV_STR;
			n->val.s = k->s;
			n->val.n = k->n;
			next(p);
			add_kid(p, b, n);
			break;
		case TK_VAR_BEGIN:
			next(p);
			n = node(p, N_OUTPUT);
			n->a = parse_tuple(p, false, true, NULL, false);
			if (cur(p)->t != TK_VAR_END)
				unexpected(p, "end of print statement");
			next(p);
			add_kid(p, b, n);
			break;
		case TK_BLOCK_BEGIN:
			next(p);
			if (at_end(p, ends))
				return b;
			add_kid(p, b, parse_statement(p));
			break;
		default:
			unexpected(p, "template data");
		}
	}
}

struct tn *tmpl_parse(struct tarena *a, struct tk *toks, size_t ntoks,
		      unsigned max_depth)
{
	struct parser p = {
		.a = a, .t = toks, .n = ntoks, .max_depth = max_depth
	};

	return parse_body(&p, NULL);
}
