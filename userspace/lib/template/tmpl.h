/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The template interpreter's insides: values (Python's types as Jinja2
 * sees them), the arena every compile and render allocates from, the AST,
 * and the evaluation context. Errors unwind with longjmp() to the public
 * entry point: everything a compile or render allocates lives in its
 * arena, so nothing leaks on the way out.
 */
#ifndef EDGEQ_TMPL_H
#define EDGEQ_TMPL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <edgeq/edgeq.h>
#include <edgeq/template.h>

#include "model/tokenize.h" /* utf8_put() */

/* ---- arena: bump allocation in chunks, bounded in total */
struct tarena {
	struct tchunk *head;
	size_t used;  /* bytes handed out, all chunks */
	size_t limit; /* max bytes; exceeding it is -ENOMEM */
	jmp_buf *jb;  /* where to unwind on failure */
	struct edgeq_error *err;
};

void *ta_alloc(struct tarena *a, size_t n);
void *ta_grow(struct tarena *a, void *p, size_t old, size_t n);
char *ta_strndup(struct tarena *a, const char *s, size_t n);
void ta_free(struct tarena *a);
/* Record the error and unwind. */
__attribute__((noreturn, format(printf, 3, 4))) void
ta_fail(struct tarena *a, int code, const char *fmt, ...);

/* ---- values */
enum tv_type {
	TV_UNDEF,
	TV_NONE,
	TV_BOOL,
	TV_INT,
	TV_FLOAT,
	TV_STR,
	TV_LIST, /* list, tuple, or a one-shot generator (see struct tlist) */
	TV_DICT,
	TV_NS,	 /* namespace(): a dict whose attributes may be set */
	TV_FUNC, /* macro, global function or bound method */
	TV_LOOP, /* a for loop's `loop` */
};

/* Undefined flavours (struct tv.n when t == TV_UNDEF). */
#define TU_PLAIN 0
#define TU_UNSAFE 1 /* an unsafe attribute: calling it is a SecurityError */

struct tlist {
	size_t n, cap;
	struct tv *v;
	bool tuple;    /* prints as (a, b) */
	bool gen;      /* a generator: no len(), iterates once */
	bool consumed; /* a generator already iterated */
};

struct tdict {
	size_t n, cap;
	struct tv *k, *v;
};

struct tfunc;
struct tloop;

struct tv {
	enum tv_type t;
	bool markup; /* TV_STR: markupsafe's Markup (|safe, |escape) */
	union {
		bool b;
		int64_t i;
		double f;
		const char *s; /* TV_STR: bytes; TV_UNDEF: hint or NULL */
		struct tlist *l;
		struct tdict *d;
		struct tfunc *fn;
		struct tloop *lp;
	};
	size_t n; /* TV_STR: length in bytes; TV_UNDEF: flavour */
};

struct tbuf {
	char *p;
	size_t n, cap;
};

struct tctx;
struct targs {
	struct tv *pos;
	size_t npos;
	const char **kwn;
	struct tv *kwv;
	size_t nkw;
};

typedef struct tv (*tbuiltin_fn)(struct tctx *c, struct tv self,
				 struct targs *a);

/* ---- AST */
enum tn_kind {
	/* expressions */
	N_CONST,
	N_NAME,
	N_GETATTR,  /* a.name */
	N_GETITEM,  /* a[b] */
	N_SLICE,    /* a, b, c: start, stop, step (each may be NULL) */
	N_CALL,	    /* a(kids, kw...) */
	N_FILTER,   /* a | name(kids, kw...); a NULL in a filter block */
	N_TEST,	    /* a is [not] name(kids...) */
	N_BINOP,    /* a op b: + - * / // % ** ~ */
	N_NEG,	    /* -a */
	N_POS,	    /* +a */
	N_NOT,	    /* not a */
	N_AND,	    /* a and b */
	N_OR,	    /* a or b */
	N_COMPARE,  /* a (op kid)...: kids are N_OPERAND */
	N_OPERAND,  /* op a */
	N_CONDEXPR, /* a if b else c */
	N_LIST,
	N_TUPLE,
	N_DICT, /* kids: key, value, key, value... */
	/* statements */
	N_BODY,	  /* kids */
	N_TEXT,	  /* literal output: val */
	N_OUTPUT, /* {{ a }} */
	N_IF,	  /* if a: body; else orelse (elif is a nested N_IF) */
	N_FOR,	  /* for a in b [if c]: body; else orelse; recursive: flag */
	N_SET,	  /* a = b; a is a name, tuple of names, or N_GETATTR of a ns */
	N_SETBLOCK,    /* a = body rendered, through filter c */
	N_MACRO,       /* name(kids = kwv defaults): body */
	N_CALLBLOCK,   /* a (a call) with caller(kids): body */
	N_FILTERBLOCK, /* body | a (an N_FILTER chain with a NULL inside) */
	N_BREAK,
	N_CONTINUE,
	N_WITH, /* kids: targets, kwv: values; body */
};

/* Operators (struct tn.op). */
enum {
	OP_ADD = 1,
	OP_SUB,
	OP_MUL,
	OP_DIV,
	OP_FLOORDIV,
	OP_MOD,
	OP_POW,
	OP_CONCAT,
	OP_EQ,
	OP_NE,
	OP_LT,
	OP_LE,
	OP_GT,
	OP_GE,
	OP_IN,
	OP_NOTIN,
};

struct tbuiltin;

struct tn {
	enum tn_kind k;
	int op;	  /* operator; for N_TEST 1 when negated; N_FOR 1: recursive */
	int line; /* 1-based source line */
	const char *name; /* name, attribute, filter, test, macro */
	struct tv val;	  /* N_CONST, N_TEXT */
	struct tn *a, *b, *c;
	struct tn *body, *orelse;
	struct tn **kids;
	size_t nkids;
	const char **kwn; /* keyword names (calls, filters), or NULL */
	struct tn **kwv;  /* keyword values; macro defaults (NULL: none) */
	size_t nkw;
	struct tn *dyn_args, *dyn_kwargs; /* *args, **kwargs in a call */
	const struct tbuiltin *fn; /* N_FILTER, N_TEST: NULL if unknown */
};

/* ---- builtins: filters, tests, global functions */
struct tbuiltin {
	const char *name;
	tbuiltin_fn fn;
};

const struct tbuiltin *tb_filter(const char *name);
const struct tbuiltin *tb_test(const char *name);
const struct tbuiltin *tb_global(const char *name);
/* A method of a str, list or dict (bound to self), or an undefined. */
struct tv tb_method(struct tctx *c, struct tv self, const char *name);

/* ---- compiled template */
struct edgeq_tmpl {
	struct tarena arena;
	struct tn *root;
	struct edgeq_tmpl_limits lim;
};

/* Lexer output. */
enum tk_type {
	TK_EOF,
	TK_DATA,
	TK_VAR_BEGIN,
	TK_VAR_END,
	TK_BLOCK_BEGIN,
	TK_BLOCK_END,
	TK_NAME,
	TK_STRING,
	TK_INT,
	TK_FLOAT,
	TK_OP,
};

struct tk {
	enum tk_type t;
	int line;
	int op;	       /* TK_OP: the char, or one of the TKO_* pairs */
	const char *s; /* TK_DATA, TK_NAME, TK_STRING: text */
	size_t n;
	int64_t i;
	double f;
};

enum {
	TKO_FLOORDIV = 256, /* // */
	TKO_POW,	    /* ** */
	TKO_EQ,		    /* == */
	TKO_NE,		    /* != */
	TKO_LE,		    /* <= */
	TKO_GE,		    /* >= */
};

/* Tokenize @src into *@out (arena), fails through the arena. */
size_t tmpl_lex(struct tarena *a, const char *src, size_t len, struct tk **out);
/* Parse the tokens into the template body. */
struct tn *tmpl_parse(struct tarena *a, struct tk *toks, size_t ntoks,
		      unsigned max_depth);

/* ---- evaluation */
struct tscope {
	struct tscope *parent;
	bool captured; /* a macro or caller closes over it: keep it */
	size_t n, cap;
	const char **names;
	struct tv *vals;
};

struct tloop {
	struct tlist *items;
	size_t index0;
	unsigned depth0;
	struct tn *recurse; /* the recursive for, or NULL */
	struct tscope *scope;
	size_t cycle_n;
};

struct tfunc {
	const char *name;
	tbuiltin_fn fn;	    /* builtin or bound method; NULL for a macro */
	struct tv self;	    /* a bound method's object */
	struct tn *macro;   /* N_MACRO, or the call block (caller) */
	struct tscope *env; /* the macro's defining scope */
	struct tv caller;   /* for a call block's macro call */
};

struct tctx {
	struct tarena arena;
	const struct edgeq_tmpl *t;
	struct tscope *globals;
	struct tbuf *out; /* where output goes now */
	size_t max_output;
	unsigned depth, max_depth;
	uint64_t steps, max_steps;
	time_t now;
	int line; /* line being evaluated, for messages */
};

/* Fail with a Jinja2-like error: "line N: TypeError: ...". */
__attribute__((noreturn, format(printf, 3, 4))) void
tc_fail(struct tctx *c, int code, const char *fmt, ...);
void tc_step(struct tctx *c);

/* values.c */
struct tv tv_undef(const char *hint);
struct tv tv_none(void);
struct tv tv_bool(bool b);
struct tv tv_int(int64_t i);
struct tv tv_float(double f);
struct tv tv_str(struct tarena *a, const char *s, size_t n);
struct tv tv_strz(struct tarena *a, const char *s);
struct tv tv_str_static(const char *s);
struct tv tv_list(struct tarena *a, size_t cap);
struct tv tv_dict(struct tarena *a, size_t cap);
void tl_push(struct tarena *a, struct tlist *l, struct tv v);
void td_set(struct tarena *a, struct tdict *d, struct tv k, struct tv v);
/* Index of key @k in @d, or -1. */
long td_find(const struct tdict *d, struct tv k);
long td_finds(const struct tdict *d, const char *k);

bool tv_truthy(struct tv v);
bool tv_equal(struct tv a, struct tv b);
/* Python's <: -2 when the types do not order, else -1, 0, 1. */
int tv_cmp(struct tv a, struct tv b);
const char *tv_typename(struct tv v);
bool tv_is_num(struct tv v);
double tv_num(struct tv v);

void tb_put(struct tarena *a, struct tbuf *b, const char *s, size_t n);
void tb_putc(struct tarena *a, struct tbuf *b, char ch);
void tb_printf(struct tarena *a, struct tbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Python's str() and repr() of @v appended to @b. */
void tv_write_str(struct tctx *c, struct tbuf *b, struct tv v);
void tv_write_repr(struct tctx *c, struct tbuf *b, struct tv v);
struct tv tv_to_str(struct tctx *c, struct tv v);
void tv_write_float(struct tarena *a, struct tbuf *b, double f);

/* json.dumps(v, ...) with Python's defaults as transformers calls it. */
struct tjson_opts {
	bool ensure_ascii;
	bool sort_keys;
	int indent; /* -1: none */
	const char *indent_str;
	const char *item_sep, *key_sep;
};
void tv_write_json(struct tctx *c, struct tbuf *b, struct tv v,
		   const struct tjson_opts *o, int level);
/* Parse JSON text into a value (objects keep their order). */
int tv_from_json(struct tarena *a, const char *text, struct tv *out,
		 struct edgeq_error *err);

/* UTF-8 helpers */
size_t u8_len(const char *s, size_t n);		      /* code points */
size_t u8_offset(const char *s, size_t n, size_t cp); /* byte of cp */
size_t u8_decode(const char *s, size_t n, uint32_t *cp);
bool u_isspace(uint32_t cp);

/* Iterate a value as Jinja2's for does: a list (generators marked used). */
struct tlist *tv_iter(struct tctx *c, struct tv v);

/* eval.c */
struct tv tmpl_eval(struct tctx *c, struct tn *n, struct tscope *s);
struct tv tmpl_call(struct tctx *c, struct tv fn, struct targs *a);
struct tv tmpl_getattr(struct tctx *c, struct tv obj, const char *name);
struct tv tmpl_getitem(struct tctx *c, struct tv obj, struct tv key);
void tmpl_render_body(struct tctx *c, struct tn *body, struct tscope *s);
struct tscope *tscope_new(struct tctx *c, struct tscope *parent);
void tscope_set(struct tctx *c, struct tscope *s, const char *name,
		struct tv v);
/* The keyword argument @name or positional @pos of @a, or NULL. */
struct tv *targ(struct targs *a, size_t pos, const char *name);

#endif /* EDGEQ_TMPL_H */
