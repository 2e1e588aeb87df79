/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Drafting for speculative decoding (the session's side). */
#ifndef EDGEQ_ENGINE_DRAFT_H
#define EDGEQ_ENGINE_DRAFT_H

#include <stddef.h>
#include <stdint.h>

#define ENG_LOOKUP_NGRAM 3 /* longest n-gram prompt lookup matches */
#define ENG_DRAFT_MAX 16   /* most tokens drafted per pass */

/*
 * Prompt lookup: find the latest earlier occurrence of the longest n-gram
 * (3 down to 1 tokens) that ends @h[0..n), and propose the tokens that
 * followed it, at most @k into @out. Returns how many.
 */
size_t eng_lookup_draft(const int32_t *h, size_t n, int32_t *out, size_t k);

/*
 * The draft length (0..max_len) that the geometric model says is fastest
 * for acceptance rate @accept and draft cost @cost (a draft token's time
 * over a target pass's); 0 when no length beats plain decoding. The
 * expected speedup in *@speedup.
 */
int eng_draft_choose(double accept, double cost, int max_len, double *speedup);

#endif
