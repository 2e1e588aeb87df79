// SPDX-License-Identifier: GPL-2.0
/*
 * The agent side of a queue: attach and detach, reading dispatched ops,
 * writing their results, and handing the agent fds of client memfds.
 * Detach runs from release() too, so an agent that exits or crashes fails
 * (or requeues) its in-flight ops at once.
 */
#include <linux/capability.h>
#include <linux/file.h>
#include <linux/fcntl.h>
#include <linux/fs.h>
#include <linux/kobject.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "edgeq_drv.h"
#include "edgeq_trace.h"

#define EDGEQ_AGENT_BATCH 32 /* ops one read() hands out at most */

static void edgeq_agent_uevent(struct edgeq_queue *q, const char *event)
{
	char ev[32], name[32];
	char *envp[3];

	envp[0] = ev;
	envp[1] = name;
	envp[2] = NULL;
	snprintf(ev, sizeof(ev), "EDGEQ_EVENT=%s", event);
	snprintf(name, sizeof(name), "EDGEQ_QUEUE=%s", q->name);
	kobject_uevent_env(&q->dev.kobj, KOBJ_CHANGE, envp);
}

int edgeq_agent_attach(struct edgeq_file *f, void __user *arg)
{
	struct edgeq_agent_attach a;
	struct edgeq_queue *q = f->q;
	u64 all_ops = BIT_ULL(EDGEQ_OP_COUNT) - 1;
	struct edgeq_file *c;
	int ret = 0;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.size != sizeof(a) || a.flags || a.reserved[0] || a.reserved[1] ||
	    !a.op_mask || a.op_mask & ~all_ops)
		return -EINVAL;

	spin_lock(&q->lock);
	if (q->dead)
		ret = -ENODEV;
	else if (q->agent)
		ret = -EBUSY;
	else if (f->outstanding || f->ntensors)
		ret = -EBUSY; /* a file is a client or the agent, not both */
	if (!ret) {
		q->agent = f;
		f->is_agent = true;
		q->agent_pid = pid_nr(f->pid);
		q->agent_op_mask = a.op_mask;
		trace_edgeq_agent_attach(q->id, q->agent_pid);
		/* Clients polling for POLLOUT may write now. */
		list_for_each_entry(c, &q->files, qnode)
			if (c != f)
				wake_up_interruptible_poll(&c->wq,
							   EPOLLOUT |
								   EPOLLWRNORM);
	}
	spin_unlock(&q->lock);
	if (ret)
		return ret;
	edgeq_agent_uevent(q, "agent-attach");
	return 0;
}

/*
 * Detaches the queue's agent, q->lock held. In-flight ops go back to their
 * clients' queues under policy "requeue" (unless @force_fail), else they and
 * every waiting op complete with -ENODEV. Returns whether an agent was
 * attached; the caller sends the uevent after unlocking.
 */
bool edgeq_agent_detach_locked(struct edgeq_queue *q, bool force_fail)
{
	struct edgeq_req *req, *rn;
	u32 failed = 0, requeued = 0;
	bool requeue;

	lockdep_assert_held(&q->lock);
	if (!q->agent)
		return false;
	requeue = q->policy == EDGEQ_POLICY_REQUEUE && !force_fail;
	list_for_each_entry_safe_reverse(req, rn, &q->inflight, node) {
		if (requeue && req->client) {
			edgeq_requeue(q, req);
			requeued++;
		} else {
			edgeq_complete(q, req, -ENODEV, 0);
			failed++;
		}
	}
	if (!requeue) {
		failed += q->nr_waiting;
		edgeq_fail_waiting(q, -ENODEV);
	}
	trace_edgeq_agent_detach(q->id, q->agent_pid, failed, requeued);
	q->agent->is_agent = false;
	q->agent = NULL;
	q->agent_pid = 0;
	q->agent_op_mask = 0;
	return true;
}

void edgeq_agent_detached(struct edgeq_queue *q)
{
	wake_up_interruptible(&q->agent_wq);
	edgeq_agent_uevent(q, "agent-detach");
}

/* Detaches @f if it is the agent (ioctl, release). */
int edgeq_agent_detach(struct edgeq_file *f)
{
	struct edgeq_queue *q = f->q;
	bool was;

	spin_lock(&q->lock);
	was = q->agent == f && edgeq_agent_detach_locked(q, false);
	spin_unlock(&q->lock);
	if (!was)
		return -EINVAL;
	edgeq_agent_detached(q);
	return 0;
}

static struct edgeq_req *edgeq_find_tag(struct edgeq_queue *q, u64 tag)
{
	struct edgeq_req *req;

	list_for_each_entry(req, &q->inflight, node)
		if (req->tag == tag)
			return req;
	return NULL;
}

ssize_t edgeq_agent_read(struct edgeq_file *f, char __user *buf, size_t len,
			 bool nonblock)
{
	struct edgeq_queue *q = f->q;
	struct edgeq_agent_op *ops;
	struct edgeq_req *req;
	size_t max = min_t(size_t, len / sizeof(*ops), EDGEQ_AGENT_BATCH);
	size_t n = 0, i;
	int ret;

	if (!max)
		return -EINVAL;
	ops = kcalloc(max, sizeof(*ops), GFP_KERNEL);
	if (!ops)
		return -ENOMEM;
	for (;;) {
		spin_lock(&q->lock);
		if (q->dead || q->agent != f) {
			spin_unlock(&q->lock);
			ret = q->dead ? -ENODEV : -EINVAL;
			goto out_free;
		}
		while (n < max && (req = edgeq_pick(q))) {
			ops[n].tag = req->tag;
			ops[n].client_pid = pid_vnr(req->client_pid);
			ops[n].client_id = req->client_id;
			ops[n].op = req->op;
			n++;
		}
		spin_unlock(&q->lock);
		if (n)
			break;
		if (nonblock) {
			ret = -EAGAIN;
			goto out_free;
		}
		ret = wait_event_interruptible(q->agent_wq,
					       READ_ONCE(q->dead) ||
					       READ_ONCE(q->agent) != f ||
					       edgeq_can_dispatch(q));
		if (ret)
			goto out_free;
	}
	if (copy_to_user(buf, ops, n * sizeof(*ops))) {
		/* Nobody saw them: give them back, newest first. */
		spin_lock(&q->lock);
		for (i = n; i-- > 0;) {
			req = edgeq_find_tag(q, ops[i].tag);
			if (req && req->client)
				edgeq_requeue(q, req);
			else if (req)
				edgeq_complete(q, req, -ENODEV, 0);
		}
		spin_unlock(&q->lock);
		ret = -EFAULT;
		goto out_free;
	}
	ret = n * sizeof(*ops);
out_free:
	kfree(ops);
	return ret;
}

ssize_t edgeq_agent_write(struct edgeq_file *f, const char __user *buf,
			  size_t len)
{
	struct edgeq_queue *q = f->q;
	struct edgeq_agent_done d;
	struct edgeq_req *req;
	size_t done = 0;
	int ret = 0;

	if (!len || len % sizeof(d) || len / sizeof(d) > EDGEQ_MAX_BATCH)
		return -EINVAL;
	while (done < len) {
		if (copy_from_user(&d, buf + done, sizeof(d))) {
			ret = -EFAULT;
			break;
		}
		if (d.flags || d.reserved[0] || d.reserved[1] || d.status > 0 ||
		    d.status < -MAX_ERRNO) {
			ret = -EINVAL;
			break;
		}
		spin_lock(&q->lock);
		if (q->dead || q->agent != f) {
			ret = q->dead ? -ENODEV : -EINVAL;
		} else {
			req = edgeq_find_tag(q, d.tag);
			if (req)
				edgeq_complete(q, req, d.status, d.busy_ns);
			else
				ret = -ENOENT;
		}
		spin_unlock(&q->lock);
		if (ret)
			break;
		done += sizeof(d);
	}
	if (done)
		wake_up_interruptible(&q->agent_wq);
	return done ? done : ret;
}

int edgeq_agent_tensor_fd(struct edgeq_file *f, void __user *arg)
{
	struct edgeq_agent_tensor_fd a;
	struct edgeq_queue *q = f->q;
	struct edgeq_tensor *t;
	struct file *file = NULL;
	int fd, ret = 0;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.size != sizeof(a) || a.flags || a.fd || a.length ||
	    a.reserved[0] || a.reserved[1])
		return -EINVAL;
	spin_lock(&q->lock);
	if (q->dead) {
		ret = -ENODEV;
	} else if (q->agent != f) {
		ret = -EPERM;
	} else {
		/* Only the memfds of ops it holds: a handle is no capability. */
		t = xa_load(&q->tensors, a.handle);
		if (t && t->inflight) {
			file = get_file(t->file);
			a.length = t->length;
		} else {
			ret = -ENOENT;
		}
	}
	spin_unlock(&q->lock);
	if (ret)
		return ret;

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		fput(file);
		return fd;
	}
	a.fd = fd;
	if (copy_to_user(arg, &a, sizeof(a))) {
		put_unused_fd(fd);
		fput(file);
		return -EFAULT;
	}
	fd_install(fd, file);
	return 0;
}
