/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the engine's files share (not exported). */
#ifndef EDGEQ_ENGINE_INTERNAL_H
#define EDGEQ_ENGINE_INTERNAL_H

#include <edgeq/session.h>

/*
 * A session of one slot on the caller's context @c (not freed with the
 * session): edgeq_generate() runs through it. Prefix reuse is on, so a
 * prompt that continues the context's history only prefills what is new.
 */
int eng_session_new_on(struct edgeq_ctx *c,
		       const struct edgeq_session_params *p,
		       struct edgeq_session **out, struct edgeq_error *err);

#endif
