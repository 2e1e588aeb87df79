// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * edgeq_generate: tokenize, prefill, then sample and decode one token at a
 * time until an end-of-generation token, n_predict tokens, the callback
 * asks to stop, or the context is full.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/engine.h>

#include "model/model.h"

int edgeq_generate(struct edgeq_ctx *c, const struct edgeq_gen_params *p,
		   edgeq_token_cb cb, void *user, struct edgeq_gen_stats *st,
		   struct edgeq_error *err)
{
	struct edgeq_model *m = ctx_model(c);
	const struct edgeq_model_info *in = edgeq_model_info(m);
	uint32_t n_ctx = edgeq_ctx_n_ctx(c), pos0 = edgeq_ctx_pos(c);
	int32_t *hist = ctx_history(c);
	struct edgeq_gen_stats s;
	struct edgeq_sampler *smp = NULL;
	const float *logits;
	size_t n_prompt = 0;
	uint64_t t0, t1;
	char piece[4100]; /* the longest token the loader accepts is 4096 bytes */
	int ret;

	memset(&s, 0, sizeof(s));
	t0 = edgeq_now_ns();
	ret = edgeq_tokenize(m, p->prompt ? p->prompt : "", p->add_bos, false,
			     hist + pos0, n_ctx - pos0, &n_prompt);
	if (ret == -ENOSPC)
		return edgeq_error_set(
			err, ENOSPC,
			"the prompt (%zu tokens) does not fit in the context of %u",
			n_prompt, n_ctx - pos0);
	if (ret)
		return edgeq_error_set(err, -ret, "tokenize: %s",
				       strerror(-ret));
	if (n_prompt == 0)
		return edgeq_error_set(
			err, EINVAL,
			"empty prompt and no BOS token to start from");
	ret = edgeq_sampler_new(&p->sampling, &smp);
	if (ret)
		return edgeq_error_set(err, -ret,
				       "invalid sampling parameters");
	s.n_prompt = (uint32_t)n_prompt;
	ret = edgeq_decode(c, hist + pos0, n_prompt, &logits, err);
	if (ret)
		goto out;
	t1 = edgeq_now_ns();
	s.prompt_ns = t1 - t0;
	while (p->n_predict != 0) {
		uint32_t pos = edgeq_ctx_pos(c);
		int32_t tok = edgeq_sampler_sample(smp, logits, in->n_vocab,
						   hist, pos);
		int len;

		if (!s.n_gen)
			s.ttft_ns = edgeq_now_ns() - t0;
		if (tok < 0 || edgeq_token_is_eog(m, tok))
			break;
		s.n_gen++;
		hist[pos] = tok;
		len = edgeq_token_to_piece(m, tok, piece, sizeof(piece));
		if (len < 0)
			len = 0;
		if (cb && cb(user, tok, piece, (size_t)len))
			break;
		if (p->n_predict >= 0 && s.n_gen >= (uint32_t)p->n_predict)
			break;
		if (pos + 1 >= n_ctx)
			break; /* the context is full */
		ret = edgeq_decode(c, &tok, 1, &logits, err);
		if (ret)
			goto out;
		s.n_eval++;
	}
	s.decode_ns = edgeq_now_ns() - t1;
	s.peak_rss = edgeq_peak_rss();
	s.bytes_per_token = in->bytes_per_token;
	if (st)
		*st = s;
out:
	edgeq_sampler_free(smp);
	return ret;
}
