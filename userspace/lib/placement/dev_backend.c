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

#include "placement/wset.h"

#define STAGE_ID (1ULL << 63) /* mapping ids above the weights' */

struct edgeq_place_dev {
	struct edgeq_backend *b;
	struct place_wset w;
	int stage_fd;
	void *stage;
	size_t stage_size;
	uint64_t stage_id;
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

static int dev_matvec(void *arg, int dev, const struct edgeq_place_weight *w,
		      uint64_t rows, uint64_t cols, const float *x, float *y)
{
	struct edgeq_place_dev *d = arg;
	struct edgeq_backend_tensor t[1][EDGEQ_MAX_TENSORS];
	size_t yoff = ((size_t)cols * 4 + 63) & ~(size_t)63;
	struct edgeq_op_desc op;
	struct place_wslot *ws;
	bool created;
	int ret, st;

	if (d->fail_after && d->ops >= d->fail_after)
		return -ENODEV; /* the agent is gone */
	ret = stage_ensure(d, yoff + (size_t)rows * 4);
	if (!ret)
		ret = place_wset_get(&d->w, w, &ws, &created);
	if (ret)
		return ret;
	memcpy(d->stage, x, (size_t)cols * 4);
	edgeq_op_desc_init(&op, EDGEQ_OP_MATVEC, d->ops);
	op.dtype = w->type;
	op.shape[0] = rows;
	op.shape[1] = cols;
	edgeq_op_desc_tensor(&op, 0, 0, 0, w->bytes);
	edgeq_op_desc_tensor(&op, 1, 0, 0, cols * 4);
	edgeq_op_desc_tensor(&op, 2, 0, yoff, rows * 4);
	t[0][0] = (struct edgeq_backend_tensor){ ws->map, ws->bytes, 0,
						 w->bytes, ws->id };
	for (int i = 1; i < 3; i++)
		t[0][i] = (struct edgeq_backend_tensor){
			d->stage, d->stage_size, op.tensors[i].offset,
			op.tensors[i].length, STAGE_ID | d->stage_id
		};
	ret = edgeq_backend_run(d->b, &op, t, &st, 1);
	if (ret)
		return ret;
	if (st)
		return st;
	memcpy(y, (char *)d->stage + yoff, (size_t)rows * 4);
	d->ops++;
	return 0;
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
	be->name = "dev";
	be->matvec = dev_matvec;
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
