/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by the filters (builtins.c) and str methods (strings.c). */
#ifndef EDGEQ_TMPL_BUILTINS_H
#define EDGEQ_TMPL_BUILTINS_H

#include "template/tmpl.h"

/* mode: 'u' upper, 'l' lower, 'c' capitalize, 't' str.title() */
struct tv ts_case(struct tctx *c, struct tv s, char mode);
/* @how: 'b' both ends, 'l' left, 'r' right; @chars NULL: whitespace */
struct tv ts_strip(struct tctx *c, struct tv s, const struct tv *chars,
		   char how);
struct tv ts_replace(struct tctx *c, struct tv s, struct tv old, struct tv new,
		     int64_t count);
struct tv ts_method(struct tctx *c, struct tv s, const char *name,
		    struct targs *a);
bool ts_has_method(const char *name);
bool ts_iscased(uint32_t cp, bool upper);
/* markupsafe.escape(): Markup stays, anything else is str()'d and escaped. */
struct tv tv_escape(struct tctx *c, struct tv v);
/* Python's str % args: a tuple, a mapping for %(key)s, or one value. */
struct tv ts_percent(struct tctx *c, struct tv fmt, struct tv args);
/* Two strings joined. */
struct tv binop_concat(struct tctx *c, struct tv a, struct tv b);

#endif /* EDGEQ_TMPL_BUILTINS_H */
