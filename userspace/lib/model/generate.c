// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * edgeq_generate: a one-slot session on the caller's context. The prompt
 * continues what the context holds (its history is the cached prefix), the
 * session prefills, samples and decodes, and each token reaches @cb with
 * its own text.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/engine.h>
#include <edgeq/session.h>

#include "engine/internal.h"
#include "model/model.h"

/* Tokens of the context so far followed by the prompt's. */
static int full_prompt(struct edgeq_ctx *c, const struct edgeq_gen_params *p,
		       int32_t **out, size_t *n_out, struct edgeq_error *err)
{
	struct edgeq_model *m = ctx_model(c);
	uint32_t n_ctx = edgeq_ctx_n_ctx(c), pos0 = edgeq_ctx_pos(c);
	size_t n = 0;
	int32_t *t;
	int ret;

	t = malloc((size_t)n_ctx * sizeof(*t));
	if (!t)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	memcpy(t, ctx_history(c), pos0 * sizeof(*t));
	ret = edgeq_tokenize(m, p->prompt ? p->prompt : "", p->add_bos, false,
			     t + pos0, n_ctx - pos0, &n);
	if (!ret && pos0 + n >= n_ctx)
		ret = -ENOSPC; /* no room left to generate */
	if (ret == -ENOSPC)
		ret = edgeq_error_set(
			err, ENOSPC,
			"the prompt (%zu tokens) does not fit in the context of %u",
			n, n_ctx - pos0);
	else if (ret)
		ret = edgeq_error_set(err, -ret, "tokenize: %s",
				      strerror(-ret));
	else if (n == 0)
		ret = edgeq_error_set(
			err, EINVAL,
			"empty prompt and no BOS token to start from");
	if (ret) {
		free(t);
		return ret;
	}
	*out = t;
	*n_out = pos0 + n;
	return 0;
}

void edgeq_gen_params_init(struct edgeq_gen_params *p)
{
	memset(p, 0, sizeof(*p));
	p->n_predict = -1;
	edgeq_sampler_params_init(&p->sampling);
}

int edgeq_generate(struct edgeq_ctx *c, const struct edgeq_gen_params *p,
		   edgeq_token_cb cb, void *user, struct edgeq_gen_stats *st,
		   struct edgeq_error *err)
{
	struct edgeq_model *m = ctx_model(c);
	struct edgeq_session_params sp;
	struct edgeq_gen_request rq;
	struct edgeq_session *s = NULL;
	struct edgeq_gen *g = NULL;
	struct edgeq_gen_event ev;
	struct edgeq_gen_stats gs;
	uint32_t pos0 = edgeq_ctx_pos(c), n_cb = 0;
	char piece[4100]; /* the longest token the loader accepts is 4096 bytes */
	bool stopped = false;
	int32_t *toks = NULL;
	size_t n = 0, i;
	int ret, len;

	ret = full_prompt(c, p, &toks, &n, err);
	if (ret)
		return ret;
	memset(&rq, 0, sizeof(rq));
	rq.toks = toks;
	rq.n_toks = n;
	rq.n_predict = p->n_predict;
	rq.n_keep = p->n_keep;
	rq.sampling = p->sampling;
	edgeq_session_params_init(&sp);
	sp.ctx.n_ctx = edgeq_ctx_n_ctx(c);
	sp.draft = p->draft;
	sp.context_shift = p->context_shift;
	/* the callback sees the engine stopped between two tokens */
	sp.lockstep = true;
	ret = eng_session_new_on(c, &sp, &s, err);
	if (!ret)
		ret = edgeq_session_submit(s, &rq, &g, err);
	free(toks);
	while (!ret) {
		ret = edgeq_gen_next(g, &ev, err);
		if (ret < 0)
			break;
		for (i = 0; i < ev.n_toks && !stopped; i++) {
			len = edgeq_token_to_piece(m, ev.toks[i], piece,
						   sizeof(piece));
			if (len < 0)
				len = 0;
			n_cb++;
			if (cb && cb(user, ev.toks[i], piece, (size_t)len)) {
				stopped = true;
				edgeq_gen_cancel(g);
			}
		}
		ret = ret == 1 ? 0 : 1;
	}
	if (ret >= 0 && g) {
		ret = 0;
		edgeq_gen_get_stats(g, &gs);
		gs.n_prompt = (uint32_t)(n - pos0);
		gs.n_gen = n_cb;
		if (st)
			*st = gs;
	}
	edgeq_gen_free(g);
	edgeq_session_free(s);
	return ret;
}
