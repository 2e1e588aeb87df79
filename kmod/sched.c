// SPDX-License-Identifier: GPL-2.0
/*
 * Submission, dispatch order, completion and timeouts of a queue's ops.
 *
 * A client's op waits on client->waiting[prio] until the agent reads it.
 * Dispatch takes the highest priority level with a waiting op, and within a
 * level one op from each client in turn (q->active[prio] is the round-robin
 * list of clients with ops waiting at that level). At most edgeq_limit()
 * ops are with the agent at once. Every op not completed is also on q->all
 * in submission order, which the timeout work scans from its head.
 */
#include <linux/capability.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/overflow.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "edgeq_drv.h"
#include "edgeq_trace.h"

/* Tensors and dims each op takes (enum edgeq_opcode order). */
static const struct {
	u8 ntensors;
	u8 ndims;
} edgeq_op_shape[EDGEQ_OP_COUNT] = {
	[EDGEQ_OP_NOP] = { 0, 0 },	 [EDGEQ_OP_MATVEC] = { 3, 2 },
	[EDGEQ_OP_MATMUL] = { 3, 3 },	 [EDGEQ_OP_RMSNORM] = { 3, 1 },
	[EDGEQ_OP_ROPE] = { 1, 2 },	 [EDGEQ_OP_SOFTMAX] = { 1, 2 },
	[EDGEQ_OP_ATTENTION] = { 4, 4 }, [EDGEQ_OP_SILU_MUL] = { 3, 1 },
	[EDGEQ_OP_ADD] = { 3, 1 },	 [EDGEQ_OP_STORE] = { 2, 1 },
	[EDGEQ_OP_ROPE_FREQ] = { 2, 2 }, [EDGEQ_OP_GELU_MUL] = { 3, 1 },
};

/* RMSNORM takes rows as a second dim (EDGEQ_F_NORM_ROWS). */
static bool edgeq_ndims_valid(const struct edgeq_op_desc *op)
{
	return op->ndims == edgeq_op_shape[op->opcode].ndims ||
	       ((op->opcode == EDGEQ_OP_RMSNORM || op->opcode == EDGEQ_OP_ADD) &&
		op->ndims == 2) ||
	       (op->opcode == EDGEQ_OP_ROPE_FREQ && op->ndims == 3);
}

static bool edgeq_dtype_valid(u32 dtype)
{
	switch (dtype) {
	case EDGEQ_DTYPE_F32:
	case EDGEQ_DTYPE_F16:
	case EDGEQ_DTYPE_Q4_0:
	case EDGEQ_DTYPE_Q8_0:
	case EDGEQ_DTYPE_Q4_K:
	case EDGEQ_DTYPE_Q6_K:
	case EDGEQ_DTYPE_BF16:
		return true;
	}
	return false;
}

/* Bytes of a row of @n elements of @dtype; 0 when @n is not whole blocks. */
static u64 edgeq_row_bytes(u32 dtype, u64 n)
{
	switch (dtype) {
	case EDGEQ_DTYPE_F32:
		return n * 4;
	case EDGEQ_DTYPE_F16:
	case EDGEQ_DTYPE_BF16:
		return n * 2;
	case EDGEQ_DTYPE_Q4_0: /* 32 per block: f16 scale, 16 bytes */
		return n % 32 ? 0 : n / 32 * 18;
	case EDGEQ_DTYPE_Q8_0: /* 32 per block: f16 scale, 32 bytes */
		return n % 32 ? 0 : n / 32 * 34;
	case EDGEQ_DTYPE_Q4_K: /* 256 per super-block */
		return n % 256 ? 0 : n / 256 * 144;
	case EDGEQ_DTYPE_Q6_K:
		return n % 256 ? 0 : n / 256 * 210;
	}
	return 0;
}

/* @rows rows of @row bytes fit in tensor @i of @op. */
static bool edgeq_fits(const struct edgeq_op_desc *op, int i, u64 rows,
		       u64 row)
{
	u64 need;

	return row && !check_mul_overflow(rows, row, &need) &&
	       need <= op->tensors[i].length;
}

/*
 * Checks each tensor's length against the shape and dtype (enum
 * edgeq_opcode): the agent reads and writes that many bytes. Shapes are
 * at most U32_MAX per dim here, so two dims multiply without overflow.
 */
static int edgeq_op_check_shape(const struct edgeq_op_desc *op)
{
	const u64 *d = op->shape;
	u64 w, rot, n;

	switch (op->opcode) {
	case EDGEQ_OP_MATVEC:
	case EDGEQ_OP_MATMUL:
		n = op->opcode == EDGEQ_OP_MATMUL ? d[2] : 1;
		w = edgeq_row_bytes(op->dtype, d[1]);
		if (!edgeq_fits(op, 0, d[0], w) ||
		    !edgeq_fits(op, 1, n, d[1] * 4) ||
		    !edgeq_fits(op, 2, n, d[0] * 4))
			return -EINVAL;
		return 0;
	case EDGEQ_OP_RMSNORM: {
		u64 rows = op->ndims == 2 ? d[1] : 1;

		if (!edgeq_fits(op, 0, rows, d[0] * 4) ||
		    !edgeq_fits(op, 1, 1, d[0] * 4) ||
		    !edgeq_fits(op, 2, rows, d[0] * 4))
			return -EINVAL;
		return 0;
	}
	case EDGEQ_OP_SILU_MUL:
	case EDGEQ_OP_GELU_MUL:
	case EDGEQ_OP_ADD:
		/* ADD {n, rows}: b one row, added to each (EDGEQ_F_TOKENS) */
		n = op->ndims == 2 ? d[1] : 1;
		if (!edgeq_fits(op, 0, n, d[0] * 4) ||
		    !edgeq_fits(op, 1, 1, d[0] * 4) ||
		    !edgeq_fits(op, 2, n, d[0] * 4))
			return -EINVAL;
		return 0;
	case EDGEQ_OP_ROPE:
	case EDGEQ_OP_ROPE_FREQ:
		/* {heads, head_dim} or {heads, head_dim, n_tok} */
		rot = op->param[1] >> 32;
		n = op->ndims == 3 ? d[2] : 1;
		if (rot > d[1] || rot % 2 || (!rot && d[1] % 2) ||
		    !edgeq_fits(op, 0, d[0] * n, d[1] * 4))
			return -EINVAL;
		/* one frequency per rotated pair */
		if (op->opcode == EDGEQ_OP_ROPE_FREQ &&
		    !edgeq_fits(op, 1, 1, (rot ? rot : d[1]) / 2 * 4))
			return -EINVAL;
		return 0;
	case EDGEQ_OP_SOFTMAX:
		return edgeq_fits(op, 0, d[1], d[0] * 4) ? 0 : -EINVAL;
	case EDGEQ_OP_STORE:
		if (op->dtype != EDGEQ_DTYPE_F32 &&
		    op->dtype != EDGEQ_DTYPE_F16 && op->dtype != EDGEQ_DTYPE_Q8_0)
			return -EINVAL;
		if (!edgeq_fits(op, 0, 1, d[0] * 4) ||
		    !edgeq_fits(op, 1, 1, edgeq_row_bytes(op->dtype, d[0])))
			return -EINVAL;
		return 0;
	case EDGEQ_OP_ATTENTION:
		/* {heads, kv_heads, head_dim, n_pos}; K and V F32, F16, Q8_0 */
		if (op->dtype != EDGEQ_DTYPE_F32 &&
		    op->dtype != EDGEQ_DTYPE_F16 && op->dtype != EDGEQ_DTYPE_Q8_0)
			return -EINVAL;
		if (d[0] % d[1])
			return -EINVAL;
		/* param[1]: the causal queries of a prompt (EDGEQ_F_TOKENS) */
		n = op->param[1] & 0xffffffffu;
		if (!n)
			n = 1;
		if (n > d[3])
			return -EINVAL;
		w = edgeq_row_bytes(op->dtype, d[2]);
		if (!edgeq_fits(op, 0, d[0] * n, d[2] * 4) ||
		    !edgeq_fits(op, 3, d[0] * n, d[2] * 4) || !w ||
		    !edgeq_fits(op, 1, d[3], d[1] * w) ||
		    !edgeq_fits(op, 2, d[3], d[1] * w))
			return -EINVAL;
		return 0;
	}
	return 0;
}

static bool edgeq_ref_zero(const struct edgeq_tensor_ref *r)
{
	return !r->handle && !r->reserved && !r->offset && !r->length;
}

/* Checks what needs no queue state. */
int edgeq_op_check(const struct edgeq_op_desc *op)
{
	unsigned int i;

	if (op->size != sizeof(*op) || op->opcode >= EDGEQ_OP_COUNT ||
	    op->priority >= EDGEQ_PRIO_COUNT || op->flags & ~EDGEQ_OPF_ALL ||
	    !edgeq_dtype_valid(op->dtype) || op->reserved0)
		return -EINVAL;
	if (!edgeq_ndims_valid(op) ||
	    op->ntensors != edgeq_op_shape[op->opcode].ntensors)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(op->reserved); i++)
		if (op->reserved[i])
			return -EINVAL;
	for (i = 0; i < EDGEQ_MAX_DIMS; i++) {
		if (i < op->ndims ? !op->shape[i] || op->shape[i] > U32_MAX :
				    op->shape[i])
			return -EINVAL;
	}
	for (i = 0; i < EDGEQ_MAX_TENSORS; i++) {
		const struct edgeq_tensor_ref *r = &op->tensors[i];

		if (i >= op->ntensors) {
			if (!edgeq_ref_zero(r))
				return -EINVAL;
			continue;
		}
		if (r->reserved || !r->handle || !r->length ||
		    r->length > EDGEQ_MAX_TENSOR_LEN ||
		    r->offset > EDGEQ_MAX_TENSOR_LEN - r->length)
			return -EINVAL;
	}
	if (edgeq_op_check_shape(op))
		return -EINVAL;
	/* Strict levels: above NORMAL is for whoever may raise priorities. */
	if (op->priority >= EDGEQ_PRIO_HIGH && !capable(CAP_SYS_NICE))
		return -EPERM;
	return 0;
}

u32 edgeq_limit(const struct edgeq_queue *q)
{
	u32 left;

	if (q->cool_state >= EDGEQ_COOLING_STATES)
		return 0;
	left = EDGEQ_COOLING_STATES - q->cool_state;
	return max_t(u32, 1, q->max_inflight * left / EDGEQ_COOLING_STATES);
}

bool edgeq_can_dispatch(const struct edgeq_queue *q)
{
	return q->agent && !q->dead && q->nr_waiting &&
	       q->nr_inflight < edgeq_limit(q);
}

void edgeq_kick_timeout(struct edgeq_queue *q)
{
	if (q->timeout_ms)
		mod_delayed_work(system_wq, &q->timeout_work,
				 msecs_to_jiffies(q->timeout_ms) + 1);
}

/* Puts @req on its client's waiting list; @head for a requeue. */
static void edgeq_enqueue(struct edgeq_queue *q, struct edgeq_req *req,
			  bool head)
{
	struct edgeq_file *c = req->client;
	unsigned int prio = req->op.priority;

	if (head)
		list_add(&req->node, &c->waiting[prio]);
	else
		list_add_tail(&req->node, &c->waiting[prio]);
	if (list_empty(&c->active_node[prio]))
		list_add_tail(&c->active_node[prio], &q->active[prio]);
	req->state = EDGEQ_REQ_WAITING;
	q->nr_waiting++;
}

/*
 * Validates @req's tensors against @f's registry and queues it. Takes
 * ownership of @req on success. Called without q->lock.
 */
int edgeq_submit(struct edgeq_file *f, struct edgeq_req *req)
{
	struct edgeq_queue *q = f->q;
	struct edgeq_op_desc *op = &req->op;
	struct edgeq_tensor *t;
	bool kick;
	unsigned int i;
	int ret = 0;

	req->bytes = 0;
	spin_lock(&q->lock);
	if (q->dead || !q->agent) {
		ret = -ENODEV;
		goto out_unlock;
	}
	if (f->is_agent) {
		ret = -EBUSY; /* raced ATTACH on the same file */
		goto out_unlock;
	}
	if (!(q->agent_op_mask & BIT_ULL(op->opcode))) {
		ret = -EOPNOTSUPP;
		goto out_unlock;
	}
	if (f->outstanding >= EDGEQ_MAX_OUTSTANDING) {
		ret = -EAGAIN;
		goto out_unlock;
	}
	for (i = 0; i < op->ntensors; i++) {
		const struct edgeq_tensor_ref *r = &op->tensors[i];

		t = xa_load(&q->tensors, r->handle);
		if (!t || t->owner != f) {
			ret = -ENOENT;
			goto out_unlock;
		}
		if (r->offset + r->length >
		    (u64)i_size_read(file_inode(t->file))) {
			ret = -EINVAL;
			goto out_unlock;
		}
		req->tensors[i] = t;
		req->bytes += r->length;
	}
	if (!edgeq_user_charge(f, false, 1)) {
		ret = -EDQUOT;
		goto out_unlock;
	}
	for (i = 0; i < op->ntensors; i++)
		req->tensors[i]->users++;
	req->client = f;
	req->client_id = f->id;
	req->client_tgid = pid_nr(f->pid);
	req->client_pid = get_pid(f->pid);
	req->submit_ns = ktime_get_ns();
	kick = list_empty(&q->all);
	list_add_tail(&req->all, &q->all);
	edgeq_enqueue(q, req, false);
	f->outstanding++;
	f->bytes += req->bytes;
	q->submitted++;
	q->bytes += req->bytes;
	trace_edgeq_submit(q->id, op->cookie, op->opcode, req->client_tgid,
			   req->bytes);
	if (kick)
		edgeq_kick_timeout(q);
	spin_unlock(&q->lock);
	wake_up_interruptible(&q->agent_wq);
	return 0;

out_unlock:
	spin_unlock(&q->lock);
	return ret;
}

static u64 edgeq_drr_cost(const struct edgeq_req *req)
{
	return min_t(u64, req->bytes + EDGEQ_DRR_OP_COST, EDGEQ_DRR_MAX_COST);
}

/*
 * The client whose op goes next at @prio. RR: the head of the level, which
 * then moves to the tail. DRR: clients at the head earn a quantum per turn
 * and stay there while their credit covers their next op; a client that
 * empties its queue forfeits its credit. Costs are capped at 16 quanta, so
 * this loops at most 16 times per client.
 */
static struct edgeq_file *edgeq_pick_client(struct edgeq_queue *q, int prio)
{
	struct edgeq_file *c;
	struct edgeq_req *req;

	for (;;) {
		c = list_first_entry(&q->active[prio], struct edgeq_file,
				     active_node[prio]);
		if (q->sched != EDGEQ_SCHED_DRR)
			return c;
		req = list_first_entry(&c->waiting[prio], struct edgeq_req,
				       node);
		if (c->deficit[prio] >= edgeq_drr_cost(req)) {
			c->deficit[prio] -= edgeq_drr_cost(req);
			return c;
		}
		c->deficit[prio] += EDGEQ_DRR_QUANTUM;
		list_move_tail(&c->active_node[prio], &q->active[prio]);
	}
}

/* Counts @req's tensors as with the agent (+1) or back from it (-1). */
static void edgeq_req_inflight(struct edgeq_req *req, int d)
{
	unsigned int i;

	for (i = 0; i < req->op.ntensors; i++)
		req->tensors[i]->inflight += d;
}

/* The next op to dispatch, off its waiting list; NULL when none may go. */
struct edgeq_req *edgeq_pick(struct edgeq_queue *q)
{
	struct edgeq_file *c;
	struct edgeq_req *req;
	int prio;

	lockdep_assert_held(&q->lock);
	if (!edgeq_can_dispatch(q))
		return NULL;
	for (prio = EDGEQ_PRIO_COUNT - 1; prio >= 0; prio--) {
		if (list_empty(&q->active[prio]))
			continue;
		c = edgeq_pick_client(q, prio);
		req = list_first_entry(&c->waiting[prio], struct edgeq_req,
				       node);
		list_del(&req->node);
		if (list_empty(&c->waiting[prio])) {
			list_del_init(&c->active_node[prio]);
			c->deficit[prio] = 0;
		} else if (q->sched != EDGEQ_SCHED_DRR) {
			list_move_tail(&c->active_node[prio], &q->active[prio]);
		}
		q->nr_waiting--;
		req->state = EDGEQ_REQ_INFLIGHT;
		edgeq_req_inflight(req, 1);
		req->tag = ++q->next_tag;
		req->dispatch_ns = ktime_get_ns();
		list_add_tail(&req->node, &q->inflight);
		q->nr_inflight++;
		return req;
	}
	WARN_ON_ONCE(1); /* nr_waiting and the lists disagree */
	return NULL;
}

/* Gives an in-flight op back to the head of its client's queue. */
void edgeq_requeue(struct edgeq_queue *q, struct edgeq_req *req)
{
	lockdep_assert_held(&q->lock);
	list_del(&req->node);
	q->nr_inflight--;
	edgeq_req_inflight(req, -1);
	req->tag = 0;
	edgeq_enqueue(q, req, true);
}

static void edgeq_req_free(struct edgeq_req *req)
{
	put_pid(req->client_pid);
	kfree(req);
}

/* Completes @req (waiting or in flight) with @status. */
void edgeq_complete(struct edgeq_queue *q, struct edgeq_req *req, int status,
		    u64 busy_ns)
{
	struct edgeq_file *c = req->client;
	u64 now = ktime_get_ns();
	unsigned int i;

	lockdep_assert_held(&q->lock);
	list_del(&req->node);
	list_del(&req->all);
	if (req->state == EDGEQ_REQ_INFLIGHT) {
		q->nr_inflight--;
		/* An orphan's tensors went with its client. */
		if (c)
			edgeq_req_inflight(req, -1);
		busy_ns = min(busy_ns, now - req->dispatch_ns);
	} else {
		q->nr_waiting--;
		busy_ns = 0;
		if (c && list_empty(&c->waiting[req->op.priority]))
			list_del_init(&c->active_node[req->op.priority]);
	}
	req->comp.cookie = req->op.cookie;
	req->comp.status = status;
	req->comp.opcode = req->op.opcode;
	req->comp.busy_ns = busy_ns;
	req->comp.latency_ns = now - req->submit_ns;
	q->ops++;
	q->busy_ns += busy_ns;
	if (status)
		q->errors++;
	trace_edgeq_complete(q->id, req->op.cookie, req->op.opcode, status,
			     busy_ns, req->comp.latency_ns);
	if (!c) {
		edgeq_req_free(req);
		return;
	}
	for (i = 0; i < req->op.ntensors; i++)
		req->tensors[i]->users--;
	c->busy_ns += busy_ns;
	c->ops++;
	req->state = EDGEQ_REQ_DONE;
	list_add_tail(&req->node, &c->done);
	wake_up_interruptible_poll(&c->wq, EPOLLIN | EPOLLRDNORM);
}

/* Fails every waiting op of the queue (agent gone under "fail", destroy). */
void edgeq_fail_waiting(struct edgeq_queue *q, int status)
{
	struct edgeq_file *c;
	struct edgeq_req *req;
	int prio;

	lockdep_assert_held(&q->lock);
	for (prio = 0; prio < EDGEQ_PRIO_COUNT; prio++) {
		while ((c = list_first_entry_or_null(&q->active[prio],
						     struct edgeq_file,
						     active_node[prio]))) {
			req = list_first_entry(&c->waiting[prio],
					       struct edgeq_req, node);
			edgeq_complete(q, req, status, 0);
		}
	}
}

void edgeq_timeout_work(struct work_struct *work)
{
	struct edgeq_queue *q = container_of(to_delayed_work(work),
					     struct edgeq_queue, timeout_work);
	struct edgeq_req *req;
	u64 now, limit, left;

	spin_lock(&q->lock);
	now = ktime_get_ns();
	limit = (u64)q->timeout_ms * NSEC_PER_MSEC;
	while (limit &&
	       (req = list_first_entry_or_null(&q->all, struct edgeq_req,
					       all))) {
		if (now - req->submit_ns < limit) {
			left = limit - (now - req->submit_ns);
			mod_delayed_work(system_wq, &q->timeout_work,
					 nsecs_to_jiffies(left) + 1);
			break;
		}
		if (req->state == EDGEQ_REQ_INFLIGHT)
			trace_edgeq_agent_timeout(q->id, req->op.cookie,
						  req->op.opcode, q->agent_pid);
		q->timeouts++;
		edgeq_complete(q, req, -ETIMEDOUT, 0);
	}
	spin_unlock(&q->lock);
	wake_up_interruptible(&q->agent_wq);
}

/* Drops everything of a closing client; its in-flight ops become orphans. */
void edgeq_client_release(struct edgeq_file *f)
{
	struct edgeq_queue *q = f->q;
	struct edgeq_tensor *t, *tn;
	struct edgeq_req *req, *rn;
	LIST_HEAD(tensors);
	LIST_HEAD(reqs);
	u32 ops, ntensors;
	int prio;

	spin_lock(&q->lock);
	list_del(&f->qnode);
	for (prio = 0; prio < EDGEQ_PRIO_COUNT; prio++) {
		list_for_each_entry_safe(req, rn, &f->waiting[prio], node) {
			list_del(&req->all);
			list_move(&req->node, &reqs);
			q->nr_waiting--;
		}
		list_del_init(&f->active_node[prio]);
	}
	list_splice_init(&f->done, &reqs);
	list_for_each_entry(req, &q->inflight, node) {
		if (req->client == f)
			req->client = NULL;
	}
	list_for_each_entry_safe(t, tn, &f->tensors, node) {
		xa_erase(&q->tensors, t->handle);
		list_move(&t->node, &tensors);
	}
	ntensors = f->ntensors;
	ops = f->outstanding;
	f->ntensors = 0;
	f->outstanding = 0;
	q->nr_clients--;
	spin_unlock(&q->lock);
	edgeq_user_uncharge(f, true, ntensors);
	edgeq_user_uncharge(f, false, ops);

	list_for_each_entry_safe(req, rn, &reqs, node)
		edgeq_req_free(req);
	list_for_each_entry_safe(t, tn, &tensors, node) {
		fput(t->file);
		kfree(t);
	}
}
