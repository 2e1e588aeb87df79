// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kq backend: matrix ops placed on an edgeq queue go to its agent
 * through the module, driven by an io_uring.
 *
 * Per queue: the fd (O_NONBLOCK), a staging memfd for activations (input
 * vector, then output vector) registered once, and one memfd per weight
 * matrix, filled and registered on first use (the weights are read-only, so
 * a copy stays valid; a streamer-owned memfd would avoid the copy). A
 * weight is known by its tensor name, never by its address: in --weights
 * stream mode the streamer's slot buffers carry one layer, then another, at
 * the same address. One memfd per identity is also what lets the agent
 * keep one device copy (or one import) per weight. An op is
 * an IORING_OP_WRITE of its descriptor and an IORING_OP_POLL_ADD for POLLIN
 * on the same ring; when the poll completes the completion is read without
 * blocking. A failed op (-ENODEV when the agent is gone, -ETIMEDOUT ...)
 * returns its status, and the executor runs the op on the CPU instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <liburing.h>

#include <edgeq/kq.h>
#include <edgeq/placement.h>

#include "edgeq_config.h"
#include "placement/stage.h"
#include "placement/wset.h"

struct kq_dev {
	struct edgeq_kq *kq; /* NULL for the cpu */
	int stage_fd;
	void *stage;
	size_t stage_size;
	uint32_t stage_handle;
	struct place_wset w; /* one memfd per weight identity */
	uint64_t kv_id;	     /* the ctx KV mapping registered, 0: none */
	uint32_t kv_handle;
	/* the module's bounds: ops per write(), ops a client may have out */
	uint32_t max_batch, max_outstanding;
	unsigned int wait_s; /* how long a wait on the queue may take */
};

struct edgeq_place_kq {
	struct io_uring ring;
	size_t n;
	struct kq_dev dev[EDGEQ_MAX_DEVICES];
	uint64_t cookie;
	uint64_t tag;	   /* io_uring user data */
	uint64_t features; /* EDGEQ_F_* every queue's module reports */
};

/*
 * Cancel the request whose user data is @tag. liburing 2.1 (Ubuntu 22.04)
 * has no io_uring_prep_cancel64 and its io_uring_prep_cancel takes a pointer
 * (2.2's a __u64): the same SQE by hand, which every version accepts.
 */
static void prep_cancel(struct io_uring_sqe *sqe, uint64_t tag)
{
#if EDGEQ_HAVE_IO_URING_PREP_CANCEL64
	io_uring_prep_cancel64(sqe, tag, 0);
#else
	io_uring_prep_rw(IORING_OP_ASYNC_CANCEL, sqe, -1, NULL, 0, 0);
	sqe->addr = tag;
#endif
}

static int stage_ensure(struct kq_dev *d, size_t size)
{
	int ret;

	if (d->stage_size >= size)
		return 0;
	if (d->stage) {
		edgeq_kq_tensor_unregister(d->kq, d->stage_handle);
		munmap(d->stage, d->stage_size);
		close(d->stage_fd);
		d->stage = NULL;
	}
	size = (size + 65535) & ~(size_t)65535;
	ret = edgeq_kq_memfd("edgeq-stage", size, &d->stage_fd, &d->stage);
	if (ret)
		return ret;
	ret = edgeq_kq_tensor_register(d->kq, d->stage_fd, &d->stage_handle);
	if (ret) {
		munmap(d->stage, size);
		close(d->stage_fd);
		d->stage = NULL;
		return ret;
	}
	d->stage_size = size;
	return 0;
}

/* The handle of the memfd holding weight @w, registered on first use. */
static int weight_handle(struct kq_dev *d, const struct edgeq_place_weight *w,
			 uint32_t *handle)
{
	struct place_wslot *ws;
	bool created;
	int ret;

	ret = place_wset_get(&d->w, w, &ws, &created);
	if (ret)
		return ret;
	if (created) {
		ret = edgeq_kq_tensor_register(d->kq, ws->fd, &ws->handle);
		if (ret) {
			place_wset_drop_last(&d->w);
			return ret;
		}
	}
	*handle = ws->handle;
	return 0;
}

#define KQ_WAIT_S 10

/*
 * How long a wait on queue @name may take: past the module's op timeout
 * (sysfs timeout_ms; an agent slower than that has its ops failed by the
 * module, -ETIMEDOUT in their completions), at least KQ_WAIT_S. A queue
 * given minutes (a slow device, an emulated test VM) is waited for.
 */
static unsigned int queue_wait_s(const char *name)
{
	struct edgeq_device_state st;
	unsigned long ms = 0;

	if (!edgeq_device_read_state(EDGEQ_SYSFS_CLASS, name, &st))
		ms = st.timeout_ms;
	return ms / 1000 + 2 > KQ_WAIT_S ? (unsigned int)(ms / 1000 + 2) :
					   KQ_WAIT_S;
}

/*
 * Submit @sqe (prepared on k->ring) and wait for its completion, at most
 * @wait_s (longer than the module's own op timeout, queue_wait_s()):
 * *@res gets its result. On timeout the request is cancelled and
 * -ETIMEDOUT returned.
 */
static int ring_wait_one(struct edgeq_place_kq *k, struct io_uring_sqe *sqe,
			 unsigned int wait_s, int *res)
{
	struct __kernel_timespec ts = { .tv_sec = wait_s };
	struct io_uring_cqe *cqe;
	uint64_t tag = ++k->tag;
	int ret;

	io_uring_sqe_set_data(sqe, (void *)(uintptr_t)tag);
	ret = io_uring_submit(&k->ring);
	if (ret < 0)
		return ret;
	for (;;) {
		ret = io_uring_wait_cqe_timeout(&k->ring, &cqe, &ts);
		if (ret == -EINTR)
			continue;
		if (ret == -ETIME) {
			sqe = io_uring_get_sqe(&k->ring);
			if (sqe) {
				prep_cancel(sqe, tag);
				io_uring_submit(&k->ring);
			}
			return -ETIMEDOUT;
		}
		if (ret)
			return ret;
		if ((uintptr_t)io_uring_cqe_get_data(cqe) == tag) {
			*res = cqe->res;
			io_uring_cqe_seen(&k->ring, cqe);
			return 0;
		}
		io_uring_cqe_seen(&k->ring, cqe); /* a cancelled one */
	}
}

/* Write @n descriptors in writes of at most the module's batch (it refuses
 * longer ones), waiting for each: 0, or -errno (-EIO: some taken). */
static int submit_writes(struct edgeq_place_kq *k, struct kq_dev *d,
			 const struct edgeq_op_desc *op, unsigned int n)
{
	for (unsigned int off = 0; off < n;) {
		unsigned int m = n - off < d->max_batch ? n - off :
							  d->max_batch;
		struct io_uring_sqe *sqe = io_uring_get_sqe(&k->ring);
		int ret, res;

		io_uring_prep_write(sqe, edgeq_kq_fd(d->kq), op + off,
				    m * sizeof(op[0]), 0);
		ret = ring_wait_one(k, sqe, d->wait_s, &res);
		if (ret)
			return ret;
		if (res < 0)
			return off ? -EIO : res; /* refused at once: -ENODEV */
		if ((size_t)res != m * sizeof(op[0]))
			return -EIO; /* some taken: their completions go stale */
		off += m;
	}
	return 0;
}

/* The completions of cookies [@first, @first + @n): POLL_ADD on the same
 * ring until all are in; 0 or the first failed op's status. */
static int collect(struct edgeq_place_kq *k, struct kq_dev *d, unsigned int n,
		   uint64_t first)
{
	struct edgeq_completion cpl;
	struct io_uring_sqe *sqe;
	unsigned int left = n;
	uint8_t *done;
	int ret = 0, res, status = 0;

	done = calloc((n + 7) / 8, 1);
	if (!done)
		return -ENOMEM;
	while (!ret && left) {
		ret = edgeq_kq_complete(d->kq, &cpl, 1);
		if (ret == 1) {
			uint64_t i = cpl.cookie - first;

			ret = 0;
			if (cpl.cookie < first || i >= n ||
			    done[i / 8] & (1u << (i % 8)))
				continue; /* a stale one (an op given up on) */
			done[i / 8] |= (uint8_t)(1u << (i % 8));
			left--;
			if (cpl.status && !status)
				status = cpl.status;
			continue;
		}
		if (ret != -EAGAIN) {
			ret = ret < 0 ? ret : -EIO;
			break;
		}
		sqe = io_uring_get_sqe(&k->ring);
		io_uring_prep_poll_add(sqe, edgeq_kq_fd(d->kq), POLLIN);
		ret = ring_wait_one(k, sqe, d->wait_s, &res);
		if (!ret && res < 0)
			ret = res;
	}
	free(done);
	return ret ? ret : status;
}

/*
 * Run @n descriptors (cookies @first ..) as one chain: written back to
 * back (the agent reads them in batches as its in-flight bound allows and
 * runs each as a chain), in segments of at most the ops a client may have
 * outstanding, each segment's completions collected before the next; 0,
 * or the first failed op's status.
 */
static int submit_collect(struct edgeq_place_kq *k, struct kq_dev *d,
			  const struct edgeq_op_desc *op, unsigned int n,
			  uint64_t first)
{
	for (unsigned int off = 0; off < n;) {
		unsigned int m = n - off < d->max_outstanding ?
					 n - off :
					 d->max_outstanding;
		int ret = submit_writes(k, d, op + off, m);

		if (!ret)
			ret = collect(k, d, m, first + off);
		if (ret)
			return ret;
		off += m;
	}
	return 0;
}

/*
 * @n MATVEC ops of one input, written to the queue in one write() (so the
 * agent reads them as one batch and runs them as one chain), then their
 * completions collected; n = 1 is a single op.
 */
static int kq_matvec_n(void *arg, int dev, const struct edgeq_place_weight *w,
		       const uint64_t *rows, unsigned int n, uint64_t cols,
		       const float *x, float *const *y)
{
	struct edgeq_place_kq *k = arg;
	struct kq_dev *d;
	struct edgeq_op_desc op[4];
	uint64_t first;
	int ret;

	if (dev <= 0 || (size_t)dev >= k->n || !k->dev[dev].kq)
		return -ENODEV;
	if (!n || n > 4)
		return -EINVAL;
	d = &k->dev[dev];
	ret = stage_ensure(d, place_stage_out_off(cols, rows, n));
	if (ret)
		return ret;
	memcpy(d->stage, x, (size_t)cols * 4);
	place_wset_begin(&d->w);
	first = k->cookie + 1;
	for (unsigned int i = 0; i < n; i++) {
		uint32_t wh;

		ret = weight_handle(d, &w[i], &wh);
		if (ret)
			return ret;
		place_stage_matvec(&op[i], ++k->cookie, &w[i], rows, i, cols,
				   wh, d->stage_handle);
	}

	ret = submit_collect(k, d, op, n, first);
	if (ret)
		return ret;
	for (unsigned int i = 0; i < n; i++)
		memcpy(y[i],
		       (char *)d->stage + place_stage_out_off(cols, rows, i),
		       (size_t)rows[i] * 4);
	return 0;
}

/*
 * Whole blocks (blocks.c) as one write of their descriptors: the hidden
 * state through the staging memfd, the KV cache as the ctx's own memfd,
 * registered once per ctx (the agent maps it: its rows are written in
 * place, the CPU reads them from the same pages).
 */
static int kq_chain(void *arg, int dev, const struct edgeq_place_chain *c)
{
	struct edgeq_place_kq *k = arg;
	struct edgeq_op_desc *op;
	uint32_t *wh;
	struct kq_dev *d;
	uint64_t first;
	int ret;

	if (dev <= 0 || (size_t)dev >= k->n || !k->dev[dev].kq)
		return -ENODEV;
	if (!c->n_ops || c->in_len > c->act_bytes ||
	    c->out_len > c->act_bytes || c->kv_fd < 0 ||
	    c->head_off > c->act_bytes ||
	    c->head_len > c->act_bytes - c->head_off)
		return -EINVAL;
	d = &k->dev[dev];
	ret = stage_ensure(d, c->act_bytes);
	if (ret)
		return ret;
	if (d->kv_id != c->kv_id) {
		if (d->kv_id)
			edgeq_kq_tensor_unregister(d->kq, d->kv_handle);
		d->kv_id = 0;
		ret = edgeq_kq_tensor_register(d->kq, c->kv_fd, &d->kv_handle);
		if (ret)
			return ret;
		d->kv_id = c->kv_id;
	}
	op = calloc(c->n_ops, sizeof(*op));
	wh = calloc(c->n_w ? c->n_w : 1, sizeof(*wh));
	ret = -ENOMEM;
	if (!op || !wh)
		goto out;
	place_wset_begin(&d->w);
	for (unsigned int i = 0; i < c->n_w; i++) {
		ret = weight_handle(d, &c->w[i], &wh[i]);
		if (ret)
			goto out;
	}
	first = k->cookie + 1;
	for (unsigned int i = 0; i < c->n_ops; i++) {
		op[i] = c->ops[i].op;
		op[i].cookie = ++k->cookie;
		for (unsigned int t = 0; t < op[i].ntensors; t++) {
			const struct edgeq_place_tref *r = &c->ops[i].t[t];
			uint32_t h =
				r->mem == EDGEQ_PLACE_MEM_WEIGHT ?
					(r->index < c->n_w ? wh[r->index] : 0) :
				r->mem == EDGEQ_PLACE_MEM_KV ? d->kv_handle :
							       d->stage_handle;

			ret = -EINVAL;
			if (!h)
				goto out;
			edgeq_op_desc_tensor(&op[i], t, h, r->offset,
					     r->length);
		}
	}
	memcpy(d->stage, c->in, c->in_len);
	ret = submit_collect(k, d, op, c->n_ops, first);
	if (!ret) {
		memcpy(c->out, d->stage, c->out_len);
		if (c->head_len)
			memcpy(c->head_out, (char *)d->stage + c->head_off,
			       c->head_len);
	}
out:
	free(op);
	free(wh);
	return ret;
}

static void kq_forget_kv(void *arg, uint64_t kv_id)
{
	struct edgeq_place_kq *k = arg;

	for (size_t i = 1; i < k->n; i++)
		if (k->dev[i].kq && k->dev[i].kv_id == kv_id) {
			edgeq_kq_tensor_unregister(k->dev[i].kq,
						   k->dev[i].kv_handle);
			k->dev[i].kv_id = 0;
		}
}

static int kq_matvec(void *arg, int dev, const struct edgeq_place_weight *w,
		     uint64_t rows, uint64_t cols, const float *x, float *y)
{
	return kq_matvec_n(arg, dev, w, &rows, 1, cols, x, &y);
}

/* A copy dropped for the budget: its queue handle goes (the agent then
 * drops its mapping, edgeq_kq_agent_on_unmap()). */
static void kq_drop(void *arg, const struct place_wslot *ws)
{
	struct kq_dev *d = arg;

	edgeq_kq_tensor_unregister(d->kq, ws->handle);
}

void edgeq_place_kq_set_copy_budget(struct edgeq_place_kq *k, uint64_t bytes)
{
	for (size_t i = 1; i < k->n; i++) {
		k->dev[i].w.on_drop = kq_drop;
		k->dev[i].w.drop_arg = &k->dev[i];
		place_wset_set_budget(&k->dev[i].w, bytes);
	}
}

static void kq_set_copy_budget(void *arg, uint64_t bytes)
{
	edgeq_place_kq_set_copy_budget(arg, bytes);
}

void edgeq_place_kq_copies(const struct edgeq_place_kq *k, uint64_t *bytes,
			   uint64_t *dropped)
{
	*bytes = *dropped = 0;
	for (size_t i = 1; i < k->n; i++) {
		*bytes += k->dev[i].w.bytes;
		*dropped += k->dev[i].w.dropped;
	}
}

void edgeq_place_kq_free(struct edgeq_place_kq *k)
{
	if (!k)
		return;
	for (size_t i = 1; i < k->n; i++) {
		struct kq_dev *d = &k->dev[i];

		place_wset_fini(&d->w);
		if (d->stage) {
			munmap(d->stage, d->stage_size);
			close(d->stage_fd);
		}
		edgeq_kq_close(d->kq);
	}
	io_uring_queue_exit(&k->ring);
	free(k);
}

int edgeq_place_kq_new(const struct edgeq_devices *devs,
		       struct edgeq_place_kq **out,
		       struct edgeq_place_backend *be, struct edgeq_error *err)
{
	struct edgeq_place_kq *k = calloc(1, sizeof(*k));
	int ret;

	if (!k)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	ret = io_uring_queue_init(8, &k->ring, 0);
	if (ret) {
		free(k);
		return edgeq_error_set(err, -ret, "io_uring: %s",
				       strerror(-ret));
	}
	k->n = devs->n;
	k->features = EDGEQ_F_ALL;
	for (size_t i = 1; i < devs->n; i++) {
		ret = edgeq_kq_open(devs->dev[i].name, O_NONBLOCK,
				    &k->dev[i].kq);
		if (!ret) {
			struct edgeq_features f;

			/* the bounds of v1 where the module does not say */
			k->dev[i].wait_s = queue_wait_s(devs->dev[i].name);
			k->dev[i].max_batch = 64;
			k->dev[i].max_outstanding = 1024;
			if (edgeq_kq_features(k->dev[i].kq, &f)) {
				k->features = 0;
			} else {
				k->features &= f.features;
				if (f.max_batch)
					k->dev[i].max_batch = f.max_batch;
				if (f.max_outstanding)
					k->dev[i].max_outstanding =
						f.max_outstanding;
			}
		}
		if (ret) {
			edgeq_place_kq_free(k);
			return edgeq_error_set(err, -ret,
					       "queue %s: %s (is edgeq.ko "
					       "loaded?)",
					       devs->dev[i].name,
					       strerror(-ret));
		}
	}
	memset(be, 0, sizeof(*be));
	be->name = "kq";
	be->matvec = kq_matvec;
	be->matvec_n = kq_matvec_n;
	be->chain = kq_chain;
	be->chain_features = k->features;
	be->forget_kv = kq_forget_kv;
	be->set_copy_budget = kq_set_copy_budget;
	be->arg = k;
	*out = k;
	return 0;
}
