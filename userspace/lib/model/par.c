// SPDX-License-Identifier: LGPL-2.1-or-later
/* The forward pass's parallel-for, on the kernels' pinned thread pool. */
#include "kernels/kernels.h"
#include "model/model.h"
#include "model/par.h"

void par_run(struct edgeq_model *m, par_fn fn, void *arg)
{
	edgeq_threadpool_run(m->pool, fn, arg);
}

int par_init(struct edgeq_model *m, struct edgeq_error *err)
{
	if (m->n_threads <= 1)
		return 0;
	return edgeq_threadpool_new(m->n_threads, 0, &m->pool, err);
}

void par_exit(struct edgeq_model *m)
{
	edgeq_threadpool_free(m->pool);
	m->pool = NULL;
}
