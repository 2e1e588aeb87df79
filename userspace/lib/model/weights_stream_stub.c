// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Placeholder for the weight streamer's preload/stream backends: the
 * streamer replaces this file with its implementation of
 * edgeq_weights_stream_new() (see model.h).
 */
#include <errno.h>

#include "model/model.h"

int edgeq_weights_stream_new(const struct edgeq_model *m,
			     const struct edgeq_model_params *p,
			     struct edgeq_weights **out,
			     struct edgeq_error *err)
{
	return edgeq_error_set(
		err, EOPNOTSUPP,
		"weights mode %s is not available in this build (use mmap)",
		p->weights == EDGEQ_WEIGHTS_PRELOAD ? "preload" : "stream");
}
