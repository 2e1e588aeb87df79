/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Chat templates: a Jinja2 interpreter for the subset that models'
 * tokenizer.chat_template sources use, rendering them exactly as Hugging
 * Face transformers does with Jinja2 (an immutable sandbox, trim_blocks and
 * lstrip_blocks on, the loopcontrols extension, {% generation %} blocks,
 * raise_exception(), strftime_now() and a tojson filter that keeps
 * non-ASCII). Templates and their inputs are untrusted: every resource a
 * render may use is bounded by struct edgeq_tmpl_limits.
 *
 * Errors (negative errno, with a message in struct edgeq_error):
 *   -EINVAL     syntax error, or a runtime error Jinja2 raises too
 *               (undefined attribute, type error, unsafe method...)
 *   -ECANCELED  the template called raise_exception(); msg is its message
 *   -E2BIG      the output would exceed max_output
 *   -ENOMEM     the render would allocate more than max_memory
 *   -ELOOP      expressions or calls nested deeper than max_depth
 *   -ETIME      more than max_steps loop iterations and calls
 */
#ifndef EDGEQ_TEMPLATE_H
#define EDGEQ_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <edgeq/edgeq.h>

#ifdef __cplusplus
extern "C" {
#endif

struct edgeq_tmpl;

/* Bounds on one compile or render; a zero field takes the default. */
struct edgeq_tmpl_limits {
	size_t max_output;  /* bytes of rendered text (default 4 MiB) */
	size_t max_memory;  /* bytes the interpreter may allocate (64 MiB) */
	unsigned max_depth; /* nesting of expressions, blocks, calls (200) */
	uint64_t max_steps; /* loop iterations + calls + filters (2,000,000) */
};

/*
 * Compile the template @src (@len bytes, UTF-8). A NULL @lim takes the
 * defaults. On success *@out is the template, freed with edgeq_tmpl_free().
 */
int edgeq_tmpl_compile(const char *src, size_t len,
		       const struct edgeq_tmpl_limits *lim,
		       struct edgeq_tmpl **out, struct edgeq_error *err);

/* Free a compiled template (NULL is fine). */
void edgeq_tmpl_free(struct edgeq_tmpl *t);

/*
 * Render @t with the variables of the JSON object @vars_json (for a chat:
 * messages, tools, add_generation_prompt, bos_token, eos_token...).
 * strftime_now() formats @now (local time of the process's zone is not
 * used: @now is taken as UTC). On success *@out is a malloc'd NUL-terminated
 * string of *@out_len bytes, which the caller frees.
 */
int edgeq_tmpl_render(const struct edgeq_tmpl *t, const char *vars_json,
		      time_t now, char **out, size_t *out_len,
		      struct edgeq_error *err);

/*
 * The chat prompt as transformers' apply_chat_template() renders it:
 * @messages_json is the JSON list of messages, @tools_json the JSON list of
 * tools or NULL (passed as none), @bos and @eos the token texts (NULL:
 * left undefined, as for a tokenizer without that token).
 * Same errors and result as edgeq_tmpl_render().
 */
int edgeq_tmpl_render_chat(const struct edgeq_tmpl *t,
			   const char *messages_json, const char *tools_json,
			   bool add_generation_prompt, const char *bos,
			   const char *eos, time_t now, char **out,
			   size_t *out_len, struct edgeq_error *err);

/*
 * As edgeq_tmpl_render_chat(), from one JSON document @conv_json: a list of
 * messages, or an object with "messages" and optionally "tools" (its other
 * keys are ignored), as `edgeq template --messages` reads.
 */
int edgeq_tmpl_render_conv(const struct edgeq_tmpl *t, const char *conv_json,
			   bool add_generation_prompt, const char *bos,
			   const char *eos, time_t now, char **out,
			   size_t *out_len, struct edgeq_error *err);

#ifdef __cplusplus
}
#endif

#endif /* EDGEQ_TEMPLATE_H */
