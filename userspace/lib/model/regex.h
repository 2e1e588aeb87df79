/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pre-tokenizers' regular expressions, matched without backtracking: a
 * pattern compiles to a small NFA run as a Pike VM (every thread in step,
 * leftmost-first priority), so a search costs O(text x pattern) whatever the
 * input.
 *
 * Syntax (the subset tokenizer.json patterns use, ECMAScript meaning):
 * literals (UTF-8), [...] classes with ranges and negation, \s \S \d \D,
 * \r \n \t \v \f, \p{L} \p{N} \p{P} \p{M} \p{S} (\p{Lu} \p{Ll} \p{Lt}
 * \p{Lm} \p{Lo} as \p{L}), escaped punctuation, (...) and (?:...) groups,
 * |, ? * + {n} {n,} {n,m} (greedy), $ (end of the piece of text) and
 * single-character look-aheads (?=X) (?!X) where X is one class or escape.
 *
 * Code points are compared as llama.cpp's std::regex path compares them,
 * so that the splits are the reference's own: a pattern that names a
 * Unicode category matches on "collapsed" text, where every code point
 * above U+007F stands for its category (White_Space ones for \v), and
 * literal characters above U+007F are refused in it; other patterns see
 * code points, non-ASCII White_Space ones again as \v.
 */
#ifndef EDGEQ_MODEL_REGEX_H
#define EDGEQ_MODEL_REGEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct edgeq_error;
struct re_prog;

/* Compile @pattern; -EINVAL with a message naming the problem's offset. */
int re_compile(const char *pattern, struct re_prog **out,
	       struct edgeq_error *err);
void re_free(struct re_prog *p);

/*
 * What a pattern sees of a text: one key per code point, as the pattern's
 * mode wants it (see above). @cps are the code points, @flags their
 * ucd_flags(). @keys receives @n entries.
 */
void re_keys(const struct re_prog *p, const uint32_t *cps, const uint8_t *flags,
	     size_t n, uint32_t *keys);

/* Scratch for re_search, sized for @p. */
struct re_vm;
int re_vm_new(const struct re_prog *p, struct re_vm **out);
void re_vm_free(struct re_vm *vm);

/*
 * The leftmost-first non-empty match of @p in keys[@from, @end) (look-aheads
 * and $ see nothing past @end). Returns true and sets [*@ms, *@me).
 */
bool re_search(const struct re_prog *p, struct re_vm *vm, const uint32_t *keys,
	       size_t from, size_t end, size_t *ms, size_t *me);

#endif /* EDGEQ_MODEL_REGEX_H */
