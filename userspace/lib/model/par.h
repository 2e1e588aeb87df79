/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Parallel-for for the forward pass: par_run(m, fn, arg) calls fn(arg, ith,
 * nth) on each of the model's n_threads threads (the caller is thread 0)
 * and returns when all have finished.
 */
#ifndef EDGEQ_MODEL_PAR_H
#define EDGEQ_MODEL_PAR_H

#include <edgeq/edgeq.h>

struct edgeq_model;

typedef void (*par_fn)(void *arg, int ith, int nth);

int par_init(struct edgeq_model *m, struct edgeq_error *err);
void par_exit(struct edgeq_model *m);
void par_run(struct edgeq_model *m, par_fn fn, void *arg);

#endif /* EDGEQ_MODEL_PAR_H */
