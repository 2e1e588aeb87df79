// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A small fork-join pool for the forward pass: n - 1 workers wait on a
 * generation counter; par_run() publishes a job, runs share 0 itself and
 * waits until every worker has reported. Workers spin briefly before
 * sleeping so back-to-back jobs of one token do not pay a wake-up each.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/par.h"

struct edgeq_pool {
	int n;
	pthread_t *th;
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	atomic_uint gen;
	atomic_int pending;
	par_fn fn;
	void *arg;
	bool stop;
};

struct worker {
	struct edgeq_pool *p;
	int ith;
};

#define SPIN 20000

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ volatile("yield" ::: "memory")
#else
#define cpu_relax() __asm__ volatile("" ::: "memory")
#endif

static void *worker_main(void *a)
{
	struct worker *w = a;
	struct edgeq_pool *p = w->p;
	int ith = w->ith;
	unsigned seen = 0;

	free(w);
	for (;;) {
		unsigned g;
		int i;

		for (i = 0; i < SPIN; i++) {
			g = atomic_load_explicit(&p->gen, memory_order_acquire);
			if (g != seen)
				break;
			cpu_relax();
		}
		if (g == seen) {
			pthread_mutex_lock(&p->mu);
			while ((g = atomic_load(&p->gen)) == seen && !p->stop)
				pthread_cond_wait(&p->go, &p->mu);
			pthread_mutex_unlock(&p->mu);
		}
		if (p->stop)
			return NULL;
		seen = g;
		p->fn(p->arg, ith, p->n);
		if (atomic_fetch_sub_explicit(&p->pending, 1,
					      memory_order_acq_rel) == 1) {
			pthread_mutex_lock(&p->mu);
			pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->mu);
		}
	}
}

void par_run(struct edgeq_model *m, par_fn fn, void *arg)
{
	struct edgeq_pool *p = m->pool;

	if (!p || p->n == 1) {
		fn(arg, 0, 1);
		return;
	}
	p->fn = fn;
	p->arg = arg;
	atomic_store(&p->pending, p->n - 1);
	pthread_mutex_lock(&p->mu);
	atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	fn(arg, 0, p->n);
	if (atomic_load_explicit(&p->pending, memory_order_acquire)) {
		int i;

		for (i = 0; i < SPIN; i++) {
			if (!atomic_load_explicit(&p->pending,
						  memory_order_acquire))
				return;
			cpu_relax();
		}
		pthread_mutex_lock(&p->mu);
		while (atomic_load(&p->pending))
			pthread_cond_wait(&p->done, &p->mu);
		pthread_mutex_unlock(&p->mu);
	}
}

int par_init(struct edgeq_model *m, struct edgeq_error *err)
{
	struct edgeq_pool *p;
	int i;

	if (m->n_threads <= 1)
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	p->n = m->n_threads;
	p->th = calloc((size_t)p->n, sizeof(*p->th));
	if (!p->th) {
		free(p);
		return edgeq_error_set(err, ENOMEM, "out of memory");
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	m->pool = p;
	for (i = 1; i < p->n; i++) {
		struct worker *w = malloc(sizeof(*w));
		int e;

		if (!w)
			return edgeq_error_set(err, ENOMEM, "out of memory");
		w->p = p;
		w->ith = i;
		e = pthread_create(&p->th[i], NULL, worker_main, w);
		if (e) {
			free(w);
			p->n = i; /* the ones started so far */
			return edgeq_error_set(err, e,
					       "cannot start thread %d: %s", i,
					       strerror(e));
		}
	}
	return 0;
}

void par_exit(struct edgeq_model *m)
{
	struct edgeq_pool *p = m->pool;
	int i;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	atomic_fetch_add(&p->gen, 1);
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (i = 1; i < p->n; i++)
		pthread_join(p->th[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	free(p->th);
	free(p);
	m->pool = NULL;
}
