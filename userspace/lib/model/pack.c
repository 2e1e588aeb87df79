// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Weights repacked at load (issue 19): the matrices the kernels have a
 * 16-row interleaved form of (kernels/pack.c) are copied once into one
 * anonymous region and the forward pass's matvecs and matmuls read that
 * instead of the file's rows; outputs are bit-identical (the canonical
 * order is kept), only faster: one sequential stream per group of 16 rows,
 * no per-call weight preparation, no horizontal sums.
 *
 * Only when the weights are mapped from the file: the streamer's slots
 * are reused by other layers, and a preload already holds one anonymous
 * copy. The packed copy is anonymous memory that cannot be reclaimed, so
 * it must fit the weight budget (the one given, else what memory allows);
 * the file pages it replaces are dropped from the mapping (they stay in
 * the page cache, reclaimable, for the embedding rows, the devices
 * placement offloads to, and the next start).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <edgeq/engine.h>
#include <edgeq/stream.h>

#include "kernels/kernels.h"
#include "model/model.h"
#include "model/par.h"

struct pack_job {
	struct edgeq_model *m;
	struct edgeq_tensor **t;
	uint8_t **dst;
	size_t n;
	_Atomic size_t next;
};

static void pack_task(void *arg, int ith, int nth)
{
	struct pack_job *j = arg;
	size_t i;

	(void)ith, (void)nth;
	while ((i = atomic_fetch_add(&j->next, 1)) < j->n) {
		struct edgeq_tensor *t = j->t[i];

		edgeq_pack16((enum edgeq_type)t->type,
			     edgeq_weights_get(j->m->weights, t),
			     (int64_t)t->ne[1], (int64_t)t->ne[0], j->dst[i]);
	}
}

/* A matrix the forward pass multiplies by (not the embedding table). */
static bool is_linear(const struct edgeq_model *m, const struct edgeq_tensor *t)
{
	if (t == m->tok_embd || t->n_dims != 2)
		return false;
	if (t == m->output)
		return true;
	for (uint32_t l = 0; l < m->hp.n_layer; l++) {
		const struct edgeq_layer *L = &m->layers[l];

		if (t == L->wq || t == L->wk || t == L->wv || t == L->wo ||
		    t == L->w_gate || t == L->w_up || t == L->w_down)
			return true;
	}
	return false;
}

static void drop_file_pages(const void *p, size_t len)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)p + pg - 1) & ~(pg - 1);
	uintptr_t b = ((uintptr_t)p + len) & ~(pg - 1);

	if (b > a)
		madvise((void *)a, b - a, MADV_DONTNEED);
}

/* A matrix this table packs. */
static bool packable(const struct edgeq_model *m, const struct edgeq_tensor *t)
{
	return m->ops->pack16[t->type] && is_linear(m, t);
}

/* Bytes and count of the matrices packing would take (0: none). */
static uint64_t pack_total(const struct edgeq_model *m, size_t *count)
{
	uint64_t total = 0;
	size_t n = 0;

	for (size_t i = 0; m->ops->matvec_packed && i < m->n_tensors; i++) {
		const struct edgeq_tensor *t = &m->tensors[i];
		size_t sz;

		if (!packable(m, t))
			continue;
		sz = edgeq_pack16_size((enum edgeq_type)t->type,
				       (int64_t)t->ne[1], (int64_t)t->ne[0]);
		if (sz) {
			total += sz;
			n++;
		}
	}
	if (count)
		*count = n;
	return total;
}

static uint64_t budget_of(const struct edgeq_model_params *p)
{
	struct edgeq_mem_info mi;

	if (p->weights_budget)
		return p->weights_budget;
	if (!edgeq_mem_probe(NULL, &mi))
		return edgeq_weights_default_budget(&mi, 0);
	return 0;
}

bool model_pack_wants_mmap(const struct edgeq_model *m,
			   const struct edgeq_model_params *p)
{
	uint64_t total = pack_total(m, NULL), budget = budget_of(p);

	return !p->no_repack && total && (!budget || total <= budget);
}

int model_pack_weights(struct edgeq_model *m,
		       const struct edgeq_model_params *p,
		       struct edgeq_error *err)
{
	struct edgeq_model_info *in = &m->info;
	struct edgeq_stream_status st;
	struct pack_job j = { .m = m };
	uint64_t total, budget;
	size_t n = 0, i, k;
	uint8_t *base;

	(void)err;
	if (p->no_repack) {
		snprintf(in->repack, sizeof(in->repack), "off: asked not to");
		return 0;
	}
	if (!m->ops->matvec_packed) {
		snprintf(in->repack, sizeof(in->repack),
			 "off: the %s kernels have no packed layout",
			 m->ops->name);
		return 0;
	}
	if (edgeq_model_weights_status(m, &st) ||
	    st.mode != EDGEQ_WEIGHTS_MMAP) {
		snprintf(in->repack, sizeof(in->repack),
			 "off: the weights are %s, not mapped",
			 st.mode == EDGEQ_WEIGHTS_STREAM ? "streamed" :
							   "preloaded");
		return 0;
	}
	total = pack_total(m, &n);
	if (!n) {
		snprintf(in->repack, sizeof(in->repack),
			 "off: no matrix of a type the %s kernels pack",
			 m->ops->name);
		return 0;
	}
	budget = budget_of(p);
	if (budget && total > budget) {
		snprintf(
			in->repack, sizeof(in->repack),
			"off: %llu MiB packed would exceed the %llu MiB budget",
			(unsigned long long)(total >> 20),
			(unsigned long long)(budget >> 20));
		return 0;
	}
	base = mmap(NULL, total, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED) {
		snprintf(in->repack, sizeof(in->repack),
			 "off: cannot map %llu MiB: %s",
			 (unsigned long long)(total >> 20), strerror(errno));
		return 0;
	}
	madvise(base, total, MADV_HUGEPAGE);
	j.t = calloc(n, sizeof(*j.t));
	j.dst = calloc(n, sizeof(*j.dst));
	if (!j.t || !j.dst) {
		free(j.t);
		free(j.dst);
		munmap(base, total);
		snprintf(in->repack, sizeof(in->repack), "off: out of memory");
		return 0;
	}
	total = 0;
	for (i = 0, k = 0; i < m->n_tensors; i++) {
		struct edgeq_tensor *t = &m->tensors[i];
		size_t sz;

		if (!packable(m, t))
			continue;
		sz = edgeq_pack16_size((enum edgeq_type)t->type,
				       (int64_t)t->ne[1], (int64_t)t->ne[0]);
		if (!sz)
			continue;
		j.t[k] = t;
		j.dst[k++] = base + total;
		total += sz;
	}
	j.n = k;
	par_run(m, pack_task, &j);
	for (k = 0; k < j.n; k++) {
		j.t[k]->packed = j.dst[k];
		drop_file_pages(edgeq_weights_get(m->weights, j.t[k]),
				j.t[k]->size);
	}
	m->pack_base = base;
	m->pack_len = total;
	in->packed_bytes = total;
	in->packed_tensors = (uint32_t)j.n;
	snprintf(in->repack, sizeof(in->repack),
		 "%zu matrices in 16-row groups (%llu MiB)", j.n,
		 (unsigned long long)(total >> 20));
	free(j.t);
	free(j.dst);
	return 0;
}

void model_pack_free(struct edgeq_model *m)
{
	for (size_t i = 0; m->tensors && i < m->n_tensors; i++)
		m->tensors[i].packed = NULL;
	if (m->pack_base)
		munmap(m->pack_base, m->pack_len);
	m->pack_base = NULL;
	m->pack_len = 0;
}
