// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A linear-time matcher for the pre-tokenizers' patterns (see regex.h):
 * parse to a tree, generate NFA code (CHAR, SPLIT, JMP, look-ahead, $,
 * MATCH), run it as a Pike VM.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/edgeq.h>

#include "model/regex.h"
#include "model/tokenize.h"
#include "model/unicode.h"

#define RE_MAX_NODES 4096
#define RE_MAX_CLASSES 1024
#define RE_MAX_INSTS 16384
#define RE_MAX_RANGES 1024
#define RE_INF 0xffff

/* Keys that stand for a non-ASCII code point in collapsed text. */
enum {
	KEY_WS = 0x0b,
	KEY_OTHER = 0xd0,
	KEY_N = 0xd1,
	KEY_L = 0xd2,
	KEY_P = 0xd3,
	KEY_M = 0xd4,
	KEY_S = 0xd5,
};

struct re_class {
	uint32_t bits[8];	 /* keys 0..255, negation applied */
	uint32_t first, n_range; /* ranges for keys >= 256 */
	bool neg;
};

enum re_op { OP_CHAR, OP_SPLIT, OP_JMP, OP_AHEAD, OP_NAHEAD, OP_EOL, OP_MATCH };

struct re_inst {
	uint8_t op;
	uint32_t k; /* class */
	uint32_t x, y;
};

enum re_node_type { N_CLASS, N_AHEAD, N_NAHEAD, N_EOL, N_CAT, N_ALT, N_REP };

struct re_node {
	uint8_t type;
	uint32_t k;	   /* class */
	int child, next;   /* first child (CAT, ALT, REP), next sibling */
	uint16_t min, max; /* REP */
};

struct re_prog {
	bool collapse;
	struct re_class *cls;
	uint32_t n_cls;
	uint32_t (*range)[2];
	uint32_t n_range;
	struct re_inst *code;
	uint32_t n_code;
};

struct re_parser {
	const char *s, *p, *end;
	struct re_prog *prog;
	struct re_node *nodes;
	int n_nodes;
	struct edgeq_error *err;
	int depth;
};

static int perr(struct re_parser *ps, const char *what)
{
	return edgeq_error_set(ps->err, EINVAL,
			       "regex: %s at offset %zu of '%s'", what,
			       (size_t)(ps->p - ps->s), ps->s);
}

static int new_node(struct re_parser *ps, enum re_node_type t)
{
	struct re_node *n;

	if (ps->n_nodes >= RE_MAX_NODES)
		return perr(ps, "pattern too large");
	n = &ps->nodes[ps->n_nodes];
	memset(n, 0, sizeof(*n));
	n->type = (uint8_t)t;
	n->child = n->next = -1;
	return ps->n_nodes++;
}

static int new_class(struct re_parser *ps)
{
	struct re_prog *p = ps->prog;

	if (p->n_cls >= RE_MAX_CLASSES)
		return perr(ps, "too many classes");
	memset(&p->cls[p->n_cls], 0, sizeof(p->cls[0]));
	p->cls[p->n_cls].first = p->n_range;
	return (int)p->n_cls++;
}

static void set_key(struct re_class *c, uint32_t k)
{
	c->bits[k >> 5] |= 1u << (k & 31);
}

static int add_range(struct re_parser *ps, struct re_class *c, uint32_t lo,
		     uint32_t hi)
{
	struct re_prog *p = ps->prog;
	uint32_t k;

	if (lo > hi)
		return perr(ps, "range out of order");
	for (k = lo; k <= hi && k < 256; k++)
		set_key(c, k);
	if (hi < 256)
		return 0;
	if (p->n_range >= RE_MAX_RANGES)
		return perr(ps, "too many ranges");
	p->range[p->n_range][0] = lo < 256 ? 256 : lo;
	p->range[p->n_range][1] = hi;
	p->n_range++;
	c->n_range++;
	return 0;
}

static void add_space(struct re_class *c)
{
	uint32_t k;

	for (k = 9; k <= 13; k++)
		set_key(c, k);
	set_key(c, ' ');
}

static void add_ascii(struct re_class *c, const char *set)
{
	for (; set[0]; set += 2) {
		uint32_t k;

		for (k = (uint8_t)set[0]; k <= (uint8_t)set[1]; k++)
			set_key(c, k);
	}
}

/*
 * \p{X} in collapsed text: the category's key and its ASCII members as
 * llama.cpp lists them (note that '~' is no \p{S} there).
 */
static int add_category(struct re_parser *ps, struct re_class *c)
{
	static const struct {
		const char *name, *ascii;
		uint32_t key;
	} cats[] = {
		{ "N", "09", KEY_N },	 { "L", "AZaz", KEY_L },
		{ "Lu", "AZaz", KEY_L }, { "Ll", "AZaz", KEY_L },
		{ "Lt", "AZaz", KEY_L }, { "Lm", "AZaz", KEY_L },
		{ "Lo", "AZaz", KEY_L }, { "P", "!#%*,/:;?@[]__{{}}", KEY_P },
		{ "M", "", KEY_M },	 { "S", "$$++<>^^``||", KEY_S },
	};
	const char *close;
	size_t i, len;

	if (ps->p + 2 >= ps->end || ps->p[1] != '{')
		return perr(ps, "\\p without {");
	close = memchr(ps->p + 2, '}', (size_t)(ps->end - ps->p - 2));
	if (!close)
		return perr(ps, "unterminated \\p{");
	len = (size_t)(close - ps->p - 2);
	for (i = 0; i < sizeof(cats) / sizeof(cats[0]); i++) {
		if (strlen(cats[i].name) != len ||
		    memcmp(cats[i].name, ps->p + 2, len))
			continue;
		if (!ps->prog->collapse)
			return perr(ps, "category in a code point pattern");
		add_ascii(c, cats[i].ascii);
		set_key(c, cats[i].key);
		ps->p = close + 1;
		return 0;
	}
	return perr(ps, "unknown Unicode category");
}

/* One literal code point at ps->p (escapes resolved); advances. */
static int literal(struct re_parser *ps, uint32_t *cp)
{
	size_t l;

	if (*ps->p == '\\') {
		char e;

		if (ps->p + 1 >= ps->end)
			return perr(ps, "trailing backslash");
		e = ps->p[1];
		ps->p += 2;
		switch (e) {
		case 'r':
			*cp = '\r';
			return 0;
		case 'n':
			*cp = '\n';
			return 0;
		case 't':
			*cp = '\t';
			return 0;
		case 'v':
			*cp = '\v';
			return 0;
		case 'f':
			*cp = '\f';
			return 0;
		}
		if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') ||
		    (e >= '0' && e <= '9')) {
			ps->p -= 2;
			return perr(ps, "unsupported escape");
		}
		*cp = (uint8_t)e;
		return 0;
	}
	*cp = utf8_get(ps->p, (size_t)(ps->end - ps->p), &l);
	if (*cp >= 0x110000)
		return perr(ps, "invalid UTF-8");
	if (*cp >= 0x80 && ps->prog->collapse)
		return perr(ps, "non-ASCII literal in a category pattern");
	ps->p += l;
	return 0;
}

/* Class escapes \s \S \d \D \p{}; returns 1 when none is at ps->p. */
static int class_escape(struct re_parser *ps, struct re_class *c, bool *neg)
{
	*neg = false;
	if (ps->p[0] != '\\' || ps->p + 1 >= ps->end)
		return 1;
	switch (ps->p[1]) {
	case 'S':
		*neg = true;
		/* fallthrough */
	case 's':
		add_space(c);
		ps->p += 2;
		return 0;
	case 'D':
		*neg = true;
		/* fallthrough */
	case 'd':
		add_ascii(c, "09");
		ps->p += 2;
		return 0;
	case 'p':
		ps->p++;
		return add_category(ps, c);
	}
	return 1;
}

static void invert(struct re_class *c)
{
	int i;

	for (i = 0; i < 8; i++)
		c->bits[i] = ~c->bits[i];
	c->neg = !c->neg;
}

static int parse_bracket(struct re_parser *ps, int k)
{
	struct re_class *c = &ps->prog->cls[k];
	bool neg = false;
	int ret;

	ps->p++;
	if (ps->p < ps->end && *ps->p == '^') {
		neg = true;
		ps->p++;
	}
	while (ps->p < ps->end && *ps->p != ']') {
		uint32_t lo, hi;
		bool eneg;

		ret = class_escape(ps, c, &eneg);
		if (ret < 0)
			return ret;
		if (!ret) {
			if (eneg)
				return perr(ps, "negated escape in a class");
			continue;
		}
		if ((ret = literal(ps, &lo)))
			return ret;
		hi = lo;
		if (ps->p + 1 < ps->end && *ps->p == '-' && ps->p[1] != ']') {
			ps->p++;
			if ((ret = literal(ps, &hi)))
				return ret;
		}
		if ((ret = add_range(ps, c, lo, hi)))
			return ret;
	}
	if (ps->p >= ps->end)
		return perr(ps, "unterminated class");
	ps->p++;
	if (neg)
		invert(c);
	return 0;
}

/* A single-character class at ps->p: [..], escape or literal. */
static int parse_class_atom(struct re_parser *ps)
{
	int k = new_class(ps), ret;
	struct re_class *c;
	bool neg;
	uint32_t cp;

	if (k < 0)
		return k;
	c = &ps->prog->cls[k];
	if (*ps->p == '[') {
		ret = parse_bracket(ps, k);
		return ret ? ret : k;
	}
	ret = class_escape(ps, c, &neg);
	if (ret < 0)
		return ret;
	if (!ret) {
		if (neg)
			invert(c);
		return k;
	}
	if ((ret = literal(ps, &cp)) || (ret = add_range(ps, c, cp, cp)))
		return ret;
	return k;
}

static int parse_alt(struct re_parser *ps);

static int parse_atom(struct re_parser *ps)
{
	int n, k;

	switch (*ps->p) {
	case '(':
		if (ps->p + 2 < ps->end && ps->p[1] == '?' &&
		    (ps->p[2] == '=' || ps->p[2] == '!')) {
			bool neg = ps->p[2] == '!';

			ps->p += 3;
			k = parse_class_atom(ps);
			if (k < 0)
				return k;
			if (ps->p >= ps->end || *ps->p != ')')
				return perr(
					ps,
					"look-ahead of more than one character");
			ps->p++;
			n = new_node(ps, neg ? N_NAHEAD : N_AHEAD);
			if (n >= 0)
				ps->nodes[n].k = (uint32_t)k;
			return n;
		}
		if (ps->p + 2 < ps->end && ps->p[1] == '?' && ps->p[2] == ':')
			ps->p += 3;
		else if (ps->p + 1 < ps->end && ps->p[1] == '?')
			return perr(ps, "unsupported group");
		else
			ps->p++;
		if (++ps->depth > 32)
			return perr(ps, "groups nested too deep");
		n = parse_alt(ps);
		ps->depth--;
		if (n < 0)
			return n;
		if (ps->p >= ps->end || *ps->p != ')')
			return perr(ps, "missing )");
		ps->p++;
		return n;
	case '$':
		ps->p++;
		return new_node(ps, N_EOL);
	case ')':
	case '|':
	case '*':
	case '+':
	case '?':
	case '{':
		return perr(ps, "nothing to repeat");
	case '.':
	case '^':
		return perr(ps, "unsupported operator");
	}
	k = parse_class_atom(ps);
	if (k < 0)
		return k;
	n = new_node(ps, N_CLASS);
	if (n >= 0)
		ps->nodes[n].k = (uint32_t)k;
	return n;
}

static int parse_count(struct re_parser *ps, uint16_t *out)
{
	unsigned long v = 0;
	int digits = 0;

	while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
		v = v * 10 + (unsigned long)(*ps->p++ - '0');
		if (v > 1024)
			return perr(ps, "repeat count over 1024");
		digits++;
	}
	if (!digits)
		return perr(ps, "bad repeat count");
	*out = (uint16_t)v;
	return 0;
}

static int parse_repeat(struct re_parser *ps)
{
	int a = parse_atom(ps), n, ret;
	uint16_t min, max;

	if (a < 0)
		return a;
	while (ps->p < ps->end) {
		switch (*ps->p) {
		case '?':
			min = 0, max = 1;
			ps->p++;
			break;
		case '*':
			min = 0, max = RE_INF;
			ps->p++;
			break;
		case '+':
			min = 1, max = RE_INF;
			ps->p++;
			break;
		case '{':
			ps->p++;
			if ((ret = parse_count(ps, &min)))
				return ret;
			max = min;
			if (ps->p < ps->end && *ps->p == ',') {
				ps->p++;
				max = RE_INF;
				if (ps->p < ps->end && *ps->p != '}' &&
				    (ret = parse_count(ps, &max)))
					return ret;
			}
			if (ps->p >= ps->end || *ps->p != '}' || max < min)
				return perr(ps, "bad repeat");
			ps->p++;
			break;
		default:
			return a;
		}
		if (ps->p < ps->end && (*ps->p == '?' || *ps->p == '+'))
			return perr(ps, "lazy or possessive repeat");
		n = new_node(ps, N_REP);
		if (n < 0)
			return n;
		ps->nodes[n].child = a;
		ps->nodes[n].min = min;
		ps->nodes[n].max = max;
		a = n;
	}
	return a;
}

static int parse_seq(struct re_parser *ps)
{
	int cat = new_node(ps, N_CAT), last = -1, n;

	if (cat < 0)
		return cat;
	while (ps->p < ps->end && *ps->p != '|' && *ps->p != ')') {
		n = parse_repeat(ps);
		if (n < 0)
			return n;
		if (last < 0)
			ps->nodes[cat].child = n;
		else
			ps->nodes[last].next = n;
		last = n;
	}
	return cat;
}

static int parse_alt(struct re_parser *ps)
{
	int alt = new_node(ps, N_ALT), last, n;

	if (alt < 0)
		return alt;
	n = parse_seq(ps);
	if (n < 0)
		return n;
	ps->nodes[alt].child = last = n;
	while (ps->p < ps->end && *ps->p == '|') {
		ps->p++;
		n = parse_seq(ps);
		if (n < 0)
			return n;
		ps->nodes[last].next = n;
		last = n;
	}
	return alt;
}

static int emit(struct re_parser *ps, enum re_op op, uint32_t k, uint32_t x,
		uint32_t y)
{
	struct re_prog *p = ps->prog;

	if (p->n_code >= RE_MAX_INSTS)
		return perr(ps, "pattern too large once expanded");
	p->code[p->n_code].op = (uint8_t)op;
	p->code[p->n_code].k = k;
	p->code[p->n_code].x = x;
	p->code[p->n_code].y = y;
	return (int)p->n_code++;
}

static int gen(struct re_parser *ps, int n)
{
	const struct re_node *nd = &ps->nodes[n];
	struct re_prog *p = ps->prog;
	int c, s, ret, i;

	switch (nd->type) {
	case N_CLASS:
		return emit(ps, OP_CHAR, nd->k, 0, 0) < 0 ? -EINVAL : 0;
	case N_AHEAD:
	case N_NAHEAD:
		return emit(ps, nd->type == N_AHEAD ? OP_AHEAD : OP_NAHEAD,
			    nd->k, 0, 0) < 0 ?
			       -EINVAL :
			       0;
	case N_EOL:
		return emit(ps, OP_EOL, 0, 0, 0) < 0 ? -EINVAL : 0;
	case N_CAT:
		for (c = nd->child; c >= 0; c = ps->nodes[c].next)
			if ((ret = gen(ps, c)))
				return ret;
		return 0;
	case N_ALT: {
		uint32_t first_jmp = UINT32_MAX;

		for (c = nd->child; c >= 0; c = ps->nodes[c].next) {
			if (ps->nodes[c].next < 0) {
				if ((ret = gen(ps, c)))
					return ret;
				break;
			}
			s = emit(ps, OP_SPLIT, 0, 0, 0);
			if (s < 0)
				return s;
			p->code[s].x = p->n_code;
			if ((ret = gen(ps, c)))
				return ret;
			/* chain the JMPs through y, patched below */
			i = emit(ps, OP_JMP, 0, 0, first_jmp);
			if (i < 0)
				return i;
			first_jmp = (uint32_t)i;
			p->code[s].y = p->n_code;
		}
		while (first_jmp != UINT32_MAX) {
			uint32_t nx = p->code[first_jmp].y;

			p->code[first_jmp].x = p->n_code;
			first_jmp = nx;
		}
		return 0;
	}
	case N_REP:
		for (i = 0; i < nd->min; i++)
			if ((ret = gen(ps, nd->child)))
				return ret;
		if (nd->max == RE_INF) {
			s = emit(ps, OP_SPLIT, 0, 0, 0);
			if (s < 0)
				return s;
			p->code[s].x = p->n_code;
			if ((ret = gen(ps, nd->child)) ||
			    (ret = emit(ps, OP_JMP, 0, (uint32_t)s, 0)) < 0)
				return ret < 0 ? ret : -EINVAL;
			p->code[s].y = p->n_code;
			return 0;
		} else {
			uint32_t chain = UINT32_MAX;

			for (i = nd->min; i < nd->max; i++) {
				s = emit(ps, OP_SPLIT, 0, 0, chain);
				if (s < 0)
					return s;
				chain = (uint32_t)s;
				p->code[s].x = p->n_code;
				if ((ret = gen(ps, nd->child)))
					return ret;
			}
			while (chain != UINT32_MAX) {
				uint32_t nx = p->code[chain].y;

				p->code[chain].y = p->n_code;
				chain = nx;
			}
			return 0;
		}
	}
	return perr(ps, "internal: bad node");
}

/* Does the pattern name a Unicode category (llama.cpp's test)? */
static bool names_category(const char *s)
{
	static const char *const cats[] = { "\\p{N}",  "\\p{L}",  "\\p{P}",
					    "\\p{M}",  "\\p{S}",  "\\p{Lu}",
					    "\\p{Ll}", "\\p{Lt}", "\\p{Lm}",
					    "\\p{Lo}" };
	size_t i;

	for (i = 0; i < sizeof(cats) / sizeof(cats[0]); i++)
		if (strstr(s, cats[i]))
			return true;
	return false;
}

int re_compile(const char *pattern, struct re_prog **out,
	       struct edgeq_error *err)
{
	struct re_parser ps = { 0 };
	struct re_prog *p = calloc(1, sizeof(*p));
	int root, ret = -ENOMEM;

	ps.s = ps.p = pattern;
	ps.end = pattern + strlen(pattern);
	ps.err = err;
	ps.prog = p;
	ps.nodes = malloc(RE_MAX_NODES * sizeof(*ps.nodes));
	if (!p || !ps.nodes)
		goto nomem;
	p->collapse = names_category(pattern);
	p->cls = malloc(RE_MAX_CLASSES * sizeof(*p->cls));
	p->range = malloc(RE_MAX_RANGES * sizeof(*p->range));
	p->code = malloc(RE_MAX_INSTS * sizeof(*p->code));
	if (!p->cls || !p->range || !p->code)
		goto nomem;
	root = parse_alt(&ps);
	if (root < 0) {
		ret = root;
		goto fail;
	}
	if (ps.p != ps.end) {
		ret = perr(&ps, "unbalanced )");
		goto fail;
	}
	if ((ret = gen(&ps, root)) || (ret = emit(&ps, OP_MATCH, 0, 0, 0)) < 0)
		goto fail;
	free(ps.nodes);
	*out = p;
	return 0;
nomem:
	ret = edgeq_error_set(err, ENOMEM, "regex: out of memory");
fail:
	free(ps.nodes);
	re_free(p);
	return ret < 0 ? ret : -EINVAL;
}

void re_free(struct re_prog *p)
{
	if (!p)
		return;
	free(p->cls);
	free(p->range);
	free(p->code);
	free(p);
}

static uint32_t collapse_key(uint32_t cp, uint8_t f)
{
	if (cp < 0x80)
		return cp;
	if (f & UCD_WS)
		return KEY_WS;
	if (f & UCD_N)
		return KEY_N;
	if (f & UCD_L)
		return KEY_L;
	if (f & UCD_P)
		return KEY_P;
	if (f & UCD_M)
		return KEY_M;
	if (f & UCD_S)
		return KEY_S;
	return KEY_OTHER;
}

void re_keys(const struct re_prog *p, const uint32_t *cps, const uint8_t *flags,
	     size_t n, uint32_t *keys)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (p->collapse)
			keys[i] = collapse_key(cps[i], flags[i]);
		else if (cps[i] >= 0x80 && (flags[i] & UCD_WS))
			keys[i] = KEY_WS;
		else
			keys[i] = cps[i];
	}
}

static bool class_has(const struct re_prog *p, uint32_t k, uint32_t key)
{
	const struct re_class *c = &p->cls[k];
	uint32_t i;

	if (key < 256)
		return c->bits[key >> 5] >> (key & 31) & 1;
	for (i = 0; i < c->n_range; i++)
		if (key >= p->range[c->first + i][0] &&
		    key <= p->range[c->first + i][1])
			return !c->neg;
	return c->neg;
}

struct re_thread {
	uint32_t pc;
	size_t start;
};

struct re_vm {
	struct re_thread *a, *b;
	uint32_t *mark;
	uint32_t gen;
};

int re_vm_new(const struct re_prog *p, struct re_vm **out)
{
	struct re_vm *vm = calloc(1, sizeof(*vm));

	if (!vm)
		return -ENOMEM;
	vm->a = malloc(p->n_code * sizeof(*vm->a));
	vm->b = malloc(p->n_code * sizeof(*vm->b));
	vm->mark = calloc(p->n_code, sizeof(*vm->mark));
	if (!vm->a || !vm->b || !vm->mark) {
		re_vm_free(vm);
		return -ENOMEM;
	}
	*out = vm;
	return 0;
}

void re_vm_free(struct re_vm *vm)
{
	if (!vm)
		return;
	free(vm->a);
	free(vm->b);
	free(vm->mark);
	free(vm);
}

struct re_run {
	const struct re_prog *p;
	struct re_vm *vm;
	const uint32_t *keys;
	size_t end;
};

/* Follow the epsilon moves from @pc at text position @pos. */
static void add_thread(struct re_run *r, struct re_thread *list, size_t *n,
		       uint32_t pc, size_t start, size_t pos)
{
	const struct re_inst *in;

	for (;;) {
		if (r->vm->mark[pc] == r->vm->gen)
			return;
		r->vm->mark[pc] = r->vm->gen;
		in = &r->p->code[pc];
		switch (in->op) {
		case OP_JMP:
			pc = in->x;
			continue;
		case OP_SPLIT:
			add_thread(r, list, n, in->x, start, pos);
			pc = in->y;
			continue;
		case OP_AHEAD:
			if (pos >= r->end ||
			    !class_has(r->p, in->k, r->keys[pos]))
				return;
			pc++;
			continue;
		case OP_NAHEAD:
			if (pos < r->end &&
			    class_has(r->p, in->k, r->keys[pos]))
				return;
			pc++;
			continue;
		case OP_EOL:
			if (pos != r->end)
				return;
			pc++;
			continue;
		default:
			list[*n].pc = pc;
			list[*n].start = start;
			(*n)++;
			return;
		}
	}
}

static void next_gen(struct re_vm *vm, uint32_t n_code)
{
	if (++vm->gen == 0) {
		memset(vm->mark, 0, n_code * sizeof(*vm->mark));
		vm->gen = 1;
	}
}

bool re_search(const struct re_prog *p, struct re_vm *vm, const uint32_t *keys,
	       size_t from, size_t end, size_t *ms, size_t *me)
{
	struct re_run r = { p, vm, keys, end };
	struct re_thread *cl = vm->a, *nl = vm->b, *t;
	size_t nc = 0, nn, i, pos;
	bool matched = false;

	next_gen(vm, p->n_code);
	for (pos = from;; pos++) {
		if (!matched)
			add_thread(&r, cl, &nc, 0, pos, pos);
		if (!nc && (matched || pos >= end))
			break;
		next_gen(vm, p->n_code);
		nn = 0;
		for (i = 0; i < nc; i++) {
			const struct re_inst *in = &p->code[cl[i].pc];

			if (in->op == OP_MATCH) {
				if (cl[i].start == pos)
					continue; /* empty: not a match */
				*ms = cl[i].start;
				*me = pos;
				matched = true;
				break; /* lower priorities lose */
			}
			if (pos < end && class_has(p, in->k, keys[pos]))
				add_thread(&r, nl, &nn, cl[i].pc + 1,
					   cl[i].start, pos + 1);
		}
		t = cl, cl = nl, nl = t;
		nc = nn;
		if (pos >= end)
			break;
	}
	return matched;
}
