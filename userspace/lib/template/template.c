// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The template interpreter's public entry points: compile (lex + parse
 * into the template's arena) and render (evaluate into a render arena that
 * is freed whole afterwards). Both catch the interpreter's errors here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/template.h>

#include "template/tmpl.h"

static void limits_fill(struct edgeq_tmpl_limits *l,
			const struct edgeq_tmpl_limits *in)
{
	if (in)
		*l = *in;
	else
		memset(l, 0, sizeof(*l));
	if (!l->max_output)
		l->max_output = 4u << 20;
	if (!l->max_memory)
		l->max_memory = 64u << 20;
	if (!l->max_depth)
		l->max_depth = 500;
	if (!l->max_steps)
		l->max_steps = 2000000;
}

int edgeq_tmpl_compile(const char *src, size_t len,
		       const struct edgeq_tmpl_limits *lim,
		       struct edgeq_tmpl **out, struct edgeq_error *err)
{
	struct edgeq_error local;
	struct edgeq_tmpl *t;
	jmp_buf jb;
	struct tk *toks;
	size_t n;

	*out = NULL;
	if (!src)
		return edgeq_error_set(err, EINVAL, "no template");
	t = calloc(1, sizeof(*t));
	if (!t)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	limits_fill(&t->lim, lim);
	t->arena.limit = t->lim.max_memory;
	t->arena.jb = &jb;
	t->arena.err = err ? err : &local;
	if (setjmp(jb)) {
		int code = t->arena.err->code;

		ta_free(&t->arena);
		free(t);
		return -code;
	}
	n = tmpl_lex(&t->arena, src, len, &toks);
	t->root = tmpl_parse(&t->arena, toks, n, t->lim.max_depth);
	t->arena.jb = NULL;
	*out = t;
	return 0;
}

void edgeq_tmpl_free(struct edgeq_tmpl *t)
{
	if (!t)
		return;
	ta_free(&t->arena);
	free(t);
}

static int render_vars(struct tctx *c, const struct edgeq_tmpl *t,
		       struct tv vars, time_t now, char **out, size_t *out_len)
{
	struct tarena *arena = &c->arena;
	struct tbuf buf = { 0 };
	size_t i;

	c->t = t;
	c->max_output = t->lim.max_output;
	c->max_depth = t->lim.max_depth;
	c->max_steps = t->lim.max_steps;
	c->now = now;
	c->globals = tscope_new(c, NULL);
	if (vars.t != TV_DICT)
		ta_fail(arena, EINVAL, "the variables must be a JSON object");
	for (i = 0; i < vars.d->n; i++)
		if (vars.d->k[i].t == TV_STR)
			tscope_set(c, c->globals, vars.d->k[i].s, vars.d->v[i]);
	c->out = &buf;
	tmpl_render_body(c, t->root, tscope_new(c, c->globals));
	*out = malloc(buf.n + 1);
	if (!*out)
		ta_fail(arena, ENOMEM, "out of memory");
	if (buf.n)
		memcpy(*out, buf.p, buf.n);
	(*out)[buf.n] = 0;
	*out_len = buf.n;
	return 0;
}

/*
 * Render with the variables that @fill puts in place (in the render's
 * arena, so their size counts against the limit too).
 */
static int render(const struct edgeq_tmpl *t,
		  int (*fill)(struct tarena *a, void *arg, struct tv *vars,
			      struct edgeq_error *err),
		  void *arg, time_t now, char **out, size_t *out_len,
		  struct edgeq_error *err)
{
	struct edgeq_error local;
	struct tctx *c;
	struct tv vars;
	jmp_buf jb;
	volatile int ret;

	*out = NULL;
	*out_len = 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	c->arena.limit = t->lim.max_memory;
	c->arena.jb = &jb;
	c->arena.err = err ? err : &local;
	if (setjmp(jb)) {
		ret = -c->arena.err->code;
	} else {
		ret = fill(&c->arena, arg, &vars, c->arena.err);
		if (!ret)
			ret = render_vars(c, t, vars, now, out, out_len);
	}
	ta_free(&c->arena);
	free(c);
	return ret;
}

static int fill_json(struct tarena *a, void *arg, struct tv *vars,
		     struct edgeq_error *err)
{
	return tv_from_json(a, arg, vars, err);
}

int edgeq_tmpl_render(const struct edgeq_tmpl *t, const char *vars_json,
		      time_t now, char **out, size_t *out_len,
		      struct edgeq_error *err)
{
	return render(t, fill_json, (void *)vars_json, now, out, out_len, err);
}

struct chat_args {
	const char *messages, *tools, *bos, *eos, *conv;
	bool agp;
};

/* messages and tools of a conversation document */
static int conv_parts(struct tarena *a, const char *conv, struct tv *msgs,
		      struct tv *tools, struct edgeq_error *err)
{
	struct tv doc;
	long i;
	int ret;

	ret = tv_from_json(a, conv, &doc, err);
	if (ret)
		return ret;
	if (doc.t == TV_LIST) {
		*msgs = doc;
		return 0;
	}
	if (doc.t != TV_DICT || (i = td_finds(doc.d, "messages")) < 0 ||
	    doc.d->v[i].t != TV_LIST)
		return edgeq_error_set(
			err, EINVAL,
			"expected a list of messages, or an object with a \"messages\" list");
	*msgs = doc.d->v[i];
	i = td_finds(doc.d, "tools");
	if (i >= 0 && doc.d->v[i].t != TV_NONE) {
		if (doc.d->v[i].t != TV_LIST)
			return edgeq_error_set(err, EINVAL,
					       "\"tools\" must be a list");
		*tools = doc.d->v[i];
	}
	return 0;
}

static int fill_chat(struct tarena *a, void *arg, struct tv *vars,
		     struct edgeq_error *err)
{
	struct chat_args *ca = arg;
	struct tv msgs, tools = tv_none();
	int ret;

	if (ca->conv) {
		ret = conv_parts(a, ca->conv, &msgs, &tools, err);
		if (ret)
			return ret;
	} else {
		ret = tv_from_json(a, ca->messages, &msgs, err);
		if (ret)
			return ret;
		if (msgs.t != TV_LIST)
			return edgeq_error_set(err, EINVAL,
					       "messages must be a JSON list");
	}
	if (ca->tools) {
		ret = tv_from_json(a, ca->tools, &tools, err);
		if (ret)
			return ret;
		if (tools.t != TV_LIST && tools.t != TV_NONE)
			return edgeq_error_set(err, EINVAL,
					       "tools must be a JSON list");
	}
	/* what transformers' apply_chat_template() passes */
	*vars = tv_dict(a, 8);
	td_set(a, vars->d, tv_str_static("messages"), msgs);
	td_set(a, vars->d, tv_str_static("tools"), tools);
	td_set(a, vars->d, tv_str_static("documents"), tv_none());
	td_set(a, vars->d, tv_str_static("add_generation_prompt"),
	       tv_bool(ca->agp));
	/* a tokenizer without the token has no variable for it */
	if (ca->bos)
		td_set(a, vars->d, tv_str_static("bos_token"),
		       tv_strz(a, ca->bos));
	if (ca->eos)
		td_set(a, vars->d, tv_str_static("eos_token"),
		       tv_strz(a, ca->eos));
	return 0;
}

int edgeq_tmpl_render_chat(const struct edgeq_tmpl *t,
			   const char *messages_json, const char *tools_json,
			   bool add_generation_prompt, const char *bos,
			   const char *eos, time_t now, char **out,
			   size_t *out_len, struct edgeq_error *err)
{
	struct chat_args ca = { .messages = messages_json,
				.tools = tools_json,
				.bos = bos,
				.eos = eos,
				.agp = add_generation_prompt };

	return render(t, fill_chat, &ca, now, out, out_len, err);
}

int edgeq_tmpl_render_conv(const struct edgeq_tmpl *t, const char *conv_json,
			   bool add_generation_prompt, const char *bos,
			   const char *eos, time_t now, char **out,
			   size_t *out_len, struct edgeq_error *err)
{
	struct chat_args ca = { .conv = conv_json,
				.bos = bos,
				.eos = eos,
				.agp = add_generation_prompt };

	return render(t, fill_chat, &ca, now, out, out_len, err);
}
