// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The device backend: matrix ops placed on a device run in this process on
 * an execution backend (include/edgeq/backend.h), exactly as an agent
 * behind an edgeq.ko queue runs them, without the module: the weight in
 * its own sealed memfd (one per identity, wset.c), the activations in a
 * staging memfd, one MATVEC op. For hosts without edgeq.ko (CI, tests of
 * the GPU path against the CPU) and for measuring what the queue's round
 * trip adds (edgeq bench).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <edgeq/backend.h>
#include <edgeq/kq.h>
#include <edgeq/placement.h>

#include "placement/stage.h"
#include "placement/wset.h"

#define STAGE_ID (1ULL << 63) /* mapping ids above the weights' */
#define KV_ID (1ULL << 62)    /* and the KV caches' between them */

struct edgeq_place_dev {
	struct edgeq_backend *b;
	struct place_wset w;
	int stage_fd;
	void *stage;
	size_t stage_size;
	uint64_t stage_id;
	uint64_t kv_id; /* the KV mapping last used (KV_ID | chain's id) */
	uint64_t fail_after, ops;
};

static int stage_ensure(struct edgeq_place_dev *d, size_t size)
{
	int ret;

	if (d->stage_size >= size)
		return 0;
	if (d->stage) {
		edgeq_backend_forget(d->b, d->stage_id);
		munmap(d->stage, d->stage_size);
		close(d->stage_fd);
		d->stage = NULL;
		d->stage_size = 0;
	}
	size = (size + 65535) & ~(size_t)65535;
	ret = edgeq_kq_memfd("edgeq-stage", size, &d->stage_fd, &d->stage);
	if (ret)
		return ret;
	d->stage_size = size;
	d->stage_id++;
	return 0;
}

/* @n MATVEC ops of one input as one chain (n = 1: a single op). */
static int dev_matvec_n(void *arg, int dev, const struct edgeq_place_weight *w,
			const uint64_t *rows, unsigned int n, uint64_t cols,
			const float *x, float *const *y)
{
	struct edgeq_place_dev *d = arg;
	struct edgeq_backend_tensor t[4][EDGEQ_MAX_TENSORS];
	struct edgeq_op_desc op[4];
	int ret, st[4];

	if (!n || n > 4)
		return -EINVAL;
	if (d->fail_after && d->ops >= d->fail_after)
		return -ENODEV; /* the agent is gone */
	place_wset_begin(&d->w);
	ret = stage_ensure(d, place_stage_out_off(cols, rows, n));
	if (ret)
		return ret;
	memcpy(d->stage, x, (size_t)cols * 4);
	for (unsigned int i = 0; i < n; i++) {
		struct place_wslot *ws;
		bool created;

		/* the slot's fields now: a later get may move the slots */
		ret = place_wset_get(&d->w, &w[i], &ws, &created);
		if (ret)
			return ret;
		place_stage_matvec(&op[i], d->ops + i, &w[i], rows, i, cols, 0,
				   0);
		t[i][0] = (struct edgeq_backend_tensor){ ws->map, ws->bytes, 0,
							 w[i].bytes, ws->id };
		for (int k = 1; k < 3; k++)
			t[i][k] = (struct edgeq_backend_tensor){
				d->stage, d->stage_size,
				op[i].tensors[k].offset,
				op[i].tensors[k].length, STAGE_ID | d->stage_id
			};
	}
	ret = edgeq_backend_run(d->b, op, t, st, n);
	if (ret)
		return ret;
	for (unsigned int i = 0; i < n; i++)
		if (st[i])
			return st[i];
	for (unsigned int i = 0; i < n; i++)
		memcpy(y[i],
		       (char *)d->stage + place_stage_out_off(cols, rows, i),
		       (size_t)rows[i] * 4);
	d->ops += n;
	return 0;
}

static int dev_matvec(void *arg, int dev, const struct edgeq_place_weight *w,
		      uint64_t rows, uint64_t cols, const float *x, float *y)
{
	return dev_matvec_n(arg, dev, w, &rows, 1, cols, x, &y);
}

/*
 * Whole blocks (blocks.c) as one backend chain: the hidden state through
 * the staging memfd, each weight from its copy, the KV rows straight in
 * the ctx's shared mapping.
 */
static int dev_chain(void *arg, int dev, const struct edgeq_place_chain *c)
{
	struct edgeq_place_dev *d = arg;
	struct edgeq_backend_tensor(*t)[EDGEQ_MAX_TENSORS] = NULL;
	struct edgeq_backend_tensor *wt = NULL;
	struct edgeq_op_desc *ops = NULL;
	int *st = NULL, ret;
	unsigned int i, k;

	if (d->fail_after && d->ops >= d->fail_after)
		return -ENODEV;
	if (!c->n_ops || c->in_len > c->act_bytes ||
	    c->out_len > c->act_bytes || c->head_off > c->act_bytes ||
	    c->head_len > c->act_bytes - c->head_off)
		return -EINVAL;
	ret = stage_ensure(d, c->act_bytes);
	if (ret)
		return ret;
	if (d->kv_id && d->kv_id != (KV_ID | c->kv_id))
		edgeq_backend_forget(d->b, d->kv_id);
	d->kv_id = KV_ID | c->kv_id;
	wt = calloc(c->n_w ? c->n_w : 1, sizeof(*wt));
	ops = calloc(c->n_ops, sizeof(*ops));
	t = calloc(c->n_ops, sizeof(*t));
	st = calloc(c->n_ops, sizeof(*st));
	ret = -ENOMEM;
	if (!wt || !ops || !t || !st)
		goto out;
	place_wset_begin(&d->w);
	for (i = 0; i < c->n_w; i++) {
		struct place_wslot *ws;
		bool created;

		ret = place_wset_get(&d->w, &c->w[i], &ws, &created);
		if (ret)
			goto out;
		wt[i] = (struct edgeq_backend_tensor){ ws->map, ws->bytes, 0, 0,
						       ws->id };
	}
	for (i = 0; i < c->n_ops; i++) {
		ops[i] = c->ops[i].op;
		ops[i].cookie = d->ops + i;
		for (k = 0; k < ops[i].ntensors; k++) {
			const struct edgeq_place_tref *r = &c->ops[i].t[k];
			struct edgeq_backend_tensor *bt = &t[i][k];

			ret = -EINVAL;
			if (r->mem == EDGEQ_PLACE_MEM_WEIGHT) {
				if (r->index >= c->n_w)
					goto out;
				*bt = wt[r->index];
			} else if (r->mem == EDGEQ_PLACE_MEM_KV) {
				*bt = (struct edgeq_backend_tensor){
					c->kv_base, c->kv_len, 0, 0, d->kv_id
				};
			} else {
				*bt = (struct edgeq_backend_tensor){
					d->stage, d->stage_size, 0, 0,
					STAGE_ID | d->stage_id
				};
			}
			if (r->offset > bt->map_len ||
			    r->length > bt->map_len - r->offset)
				goto out;
			bt->offset = r->offset;
			bt->length = r->length;
			edgeq_op_desc_tensor(&ops[i], k, 1, r->offset,
					     r->length);
		}
	}
	memcpy(d->stage, c->in, c->in_len);
	ret = edgeq_backend_run(d->b, ops, t, st, c->n_ops);
	for (i = 0; !ret && i < c->n_ops; i++)
		ret = st[i];
	if (!ret) {
		memcpy(c->out, d->stage, c->out_len);
		if (c->head_len)
			memcpy(c->head_out, (char *)d->stage + c->head_off,
			       c->head_len);
		d->ops += c->n_ops;
	}
out:
	free(wt);
	free(ops);
	free(t);
	free(st);
	return ret;
}

static void dev_forget_kv(void *arg, uint64_t kv_id)
{
	struct edgeq_place_dev *d = arg;

	if (d->kv_id == (KV_ID | kv_id)) {
		edgeq_backend_forget(d->b, d->kv_id);
		d->kv_id = 0;
	}
}

static void dev_set_copy_budget(void *arg, uint64_t bytes)
{
	struct edgeq_place_dev *d = arg;

	place_wset_set_budget(&d->w, bytes);
}

/* A copy dropped for the budget: the device lets go of its mapping. */
static void dev_drop(void *arg, const struct place_wslot *ws)
{
	struct edgeq_place_dev *d = arg;

	edgeq_backend_forget(d->b, ws->id);
}

uint64_t edgeq_place_dev_copies_dropped(const struct edgeq_place_dev *d)
{
	return d->w.dropped;
}

int edgeq_place_dev_new(const struct edgeq_place_dev_params *p,
			struct edgeq_place_dev **out,
			struct edgeq_place_backend *be, struct edgeq_error *err)
{
	struct edgeq_place_dev *d = calloc(1, sizeof(*d));
	int ret;

	if (!d)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	ret = edgeq_backend_open(p->kind, p->device, &d->b);
	if (ret) {
		free(d);
		return edgeq_error_set(err, -ret, "backend %s%s%s: %s", p->kind,
				       p->device ? " device " : "",
				       p->device ? p->device : "",
				       ret == -EPROTONOSUPPORT ?
					       "not built in" :
					       strerror(-ret));
	}
	d->fail_after = p->fail_after;
	d->w.budget = p->copy_budget;
	d->w.on_drop = dev_drop;
	d->w.drop_arg = d;
	memset(be, 0, sizeof(*be));
	be->name = "dev";
	be->matvec = dev_matvec;
	be->matvec_n = dev_matvec_n;
	be->chain = dev_chain;
	be->chain_features = EDGEQ_F_ALL; /* the backend's own op set */
	be->forget_kv = dev_forget_kv;
	be->set_copy_budget = dev_set_copy_budget;
	be->arg = d;
	*out = d;
	return 0;
}

void edgeq_place_dev_info(const struct edgeq_place_dev *d,
			  struct edgeq_backend_info *info,
			  uint64_t *weight_bytes)
{
	edgeq_backend_get_info(d->b, info);
	if (weight_bytes)
		*weight_bytes = d->w.bytes;
}

void edgeq_place_dev_free(struct edgeq_place_dev *d)
{
	if (!d)
		return;
	edgeq_backend_free(d->b);
	place_wset_fini(&d->w);
	if (d->stage) {
		munmap(d->stage, d->stage_size);
		close(d->stage_fd);
	}
	free(d);
}
