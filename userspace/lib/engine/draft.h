/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Drafting for speculative decoding (the session's side). */
#ifndef EDGEQ_ENGINE_DRAFT_H
#define EDGEQ_ENGINE_DRAFT_H

#include <stddef.h>
#include <stdint.h>

#define ENG_LOOKUP_NGRAM 3 /* longest n-gram prompt lookup matches */
#define ENG_DRAFT_MAX 16   /* most tokens drafted per pass */
/* a draft length must promise this speedup, or drafting stays off (the
 * model's inputs are estimates) */
#define ENG_DRAFT_MIN_GAIN 1.05

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
 * expected speedup in *@speedup (1 when off). A length must promise
 * ENG_DRAFT_MIN_GAIN.
 */
int eng_draft_choose(double accept, double cost, int max_len, double *speedup);

/* steps between probes of a slot whose drafting is off */
#define ENG_PROBE_MIN 16
#define ENG_PROBE_MAX 256

/*
 * The length a slot drafts given what eng_draft_choose() said (@k): @k
 * when on (the probe interval *@every back to ENG_PROBE_MIN); when off,
 * 2 once every *@every steps (counted in *@off_steps) to re-measure, the
 * interval doubled each time up to ENG_PROBE_MAX (a draft model's probe
 * first reads every token since the last one), else 0.
 */
int eng_draft_probe(int k, uint32_t *off_steps, uint32_t *every);

#endif
