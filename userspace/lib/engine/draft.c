// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Drafting for speculative decoding: the options, the vocabulary check of a
 * draft model, prompt-lookup drafts and the choice of the draft length from
 * the measured acceptance and draft cost (the ledger's geometric model).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/engine.h>
#include <edgeq/ledger.h>

#include "engine/draft.h"

int edgeq_draft_parse(const char *spec, struct edgeq_draft_params *p,
		      const char **path)
{
	char *end;
	long l;

	memset(p, 0, sizeof(*p));
	p->max_len = 4;
	*path = NULL;
	if (!spec || !*spec || !strcmp(spec, "none") || !strcmp(spec, "off"))
		return 0;
	if (!strcmp(spec, "lookup")) {
		p->kind = EDGEQ_DRAFT_LOOKUP;
		return 0;
	}
	if (!strncmp(spec, "layers:", 7)) {
		l = strtol(spec + 7, &end, 10);
		if (end == spec + 7 || *end || l < 1 || l > 4096)
			return -EINVAL;
		p->kind = EDGEQ_DRAFT_LAYERS;
		p->layers = (int)l;
		return 0;
	}
	p->kind = EDGEQ_DRAFT_MODEL;
	*path = spec;
	return 0;
}

int edgeq_draft_check_vocab(const struct edgeq_model *target,
			    const struct edgeq_model *draft,
			    struct edgeq_error *err)
{
	const struct edgeq_model_info *a = edgeq_model_info(target);
	const struct edgeq_model_info *b = edgeq_model_info(draft);
	char pa[4100], pb[4100];
	int la, lb;
	uint32_t i;

	if (a->n_vocab != b->n_vocab)
		return edgeq_error_set(
			err, EINVAL,
			"the draft model's vocabulary has %u tokens, the target's %u: they must match token for token",
			b->n_vocab, a->n_vocab);
	if (strcmp(a->tokenizer, b->tokenizer))
		return edgeq_error_set(
			err, EINVAL,
			"the draft model's tokenizer is %s, the target's %s",
			b->tokenizer, a->tokenizer);
	for (i = 0; i < a->n_vocab; i++) {
		la = edgeq_token_to_piece(target, (int32_t)i, pa, sizeof(pa));
		lb = edgeq_token_to_piece(draft, (int32_t)i, pb, sizeof(pb));
		if (la != lb || (la > 0 && memcmp(pa, pb, (size_t)la)))
			return edgeq_error_set(
				err, EINVAL,
				"the draft model's token %u is '%.*s', the target's '%.*s': the vocabularies must match token for token",
				i, lb > 0 ? (lb > 40 ? 40 : lb) : 0, pb,
				la > 0 ? (la > 40 ? 40 : la) : 0, pa);
		if (edgeq_token_is_eog(target, (int32_t)i) !=
		    edgeq_token_is_eog(draft, (int32_t)i))
			return edgeq_error_set(
				err, EINVAL,
				"token %u ends generation in one model and not the other",
				i);
	}
	return 0;
}

size_t eng_lookup_draft(const int32_t *h, size_t n, int32_t *out, size_t k)
{
	size_t ng, j, i, m;

	/* the longest n-gram ending the context that occurred before wins;
	 * of its occurrences, the latest */
	for (ng = ENG_LOOKUP_NGRAM; ng >= 1; ng--) {
		if (n < ng + 1)
			continue;
		for (j = n - ng; j-- > 0;) {
			for (i = 0; i < ng && h[j + i] == h[n - ng + i]; i++)
				;
			if (i < ng)
				continue;
			for (m = 0; m < k && j + ng + m < n; m++)
				out[m] = h[j + ng + m];
			if (m)
				return m;
		}
	}
	return 0;
}

int eng_draft_choose(double accept, double cost, int max_len, double *speedup)
{
	struct edgeq_spec sp;
	double best = ENG_DRAFT_MIN_GAIN;
	int k, best_k = 0;

	if (accept > 0.999)
		accept = 0.999;
	for (k = 1; k <= max_len; k++) {
		edgeq_ledger_speculative(accept, k, cost, &sp);
		if (sp.speedup > best) {
			best = sp.speedup;
			best_k = k;
		}
	}
	if (speedup)
		*speedup = best_k ? best : 1;
	return best_k;
}

int eng_draft_probe(int k, uint32_t *off_steps, uint32_t *every)
{
	if (*every < ENG_PROBE_MIN)
		*every = ENG_PROBE_MIN;
	if (k) {
		*every = ENG_PROBE_MIN;
		return k;
	}
	if (++*off_steps < *every)
		return 0;
	*off_steps = 0;
	if (*every < ENG_PROBE_MAX)
		*every *= 2;
	return 2;
}
