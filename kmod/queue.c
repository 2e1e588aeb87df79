// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/edgeq/<name>: the file operations of a queue. A file is a client
 * (submits ops, reads completions, registers memfds) until it attaches as
 * the agent; agent reads and writes go to agent.c.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "edgeq_drv.h"

static int edgeq_open(struct inode *inode, struct file *file)
{
	struct edgeq_queue *q =
		container_of(inode->i_cdev, struct edgeq_queue, cdev);
	struct edgeq_file *f;
	int prio;

	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return -ENOMEM;
	for (prio = 0; prio < EDGEQ_PRIO_COUNT; prio++) {
		INIT_LIST_HEAD(&f->waiting[prio]);
		INIT_LIST_HEAD(&f->active_node[prio]);
	}
	INIT_LIST_HEAD(&f->done);
	INIT_LIST_HEAD(&f->tensors);
	init_waitqueue_head(&f->wq);
	f->user = edgeq_user_get(current_euid());
	if (!f->user) {
		kfree(f);
		return -ENOMEM;
	}
	f->unlimited = file_ns_capable(file, &init_user_ns, CAP_SYS_RESOURCE);
	f->pid = get_pid(task_tgid(current));
	f->q = q;

	spin_lock(&q->lock);
	if (q->dead) {
		spin_unlock(&q->lock);
		edgeq_user_put(f->user);
		put_pid(f->pid);
		kfree(f);
		return -ENODEV;
	}
	f->id = ++q->next_client_id;
	q->nr_clients++;
	list_add_tail(&f->qnode, &q->files);
	spin_unlock(&q->lock);

	get_device(&q->dev);
	file->private_data = f;
	return nonseekable_open(inode, file);
}

static int edgeq_release(struct inode *inode, struct file *file)
{
	struct edgeq_file *f = file->private_data;
	struct edgeq_queue *q = f->q;

	edgeq_agent_detach(f); /* -EINVAL unless it is the agent */
	edgeq_client_release(f);
	edgeq_user_put(f->user);
	put_pid(f->pid);
	kfree(f);
	put_device(&q->dev);
	return 0;
}

static ssize_t edgeq_client_write(struct edgeq_file *f, const char __user *buf,
				  size_t len)
{
	struct edgeq_req *req;
	size_t done = 0;
	int ret = 0;

	if (!len || len % sizeof(struct edgeq_op_desc) ||
	    len / sizeof(struct edgeq_op_desc) > EDGEQ_MAX_BATCH)
		return -EINVAL;
	while (done < len) {
		req = kzalloc(sizeof(*req), GFP_KERNEL_ACCOUNT);
		if (!req) {
			ret = -ENOMEM;
			break;
		}
		if (copy_from_user(&req->op, buf + done, sizeof(req->op)))
			ret = -EFAULT;
		else
			ret = edgeq_op_check(&req->op);
		if (!ret)
			ret = edgeq_submit(f, req);
		if (ret) {
			kfree(req);
			break;
		}
		done += sizeof(struct edgeq_op_desc);
	}
	return done ? done : ret;
}

/* The role of @f now; the paths it picks recheck it under the lock. */
static bool edgeq_is_agent(struct edgeq_file *f)
{
	bool ret;

	spin_lock(&f->q->lock);
	ret = f->is_agent;
	spin_unlock(&f->q->lock);
	return ret;
}

static ssize_t edgeq_write(struct file *file, const char __user *buf,
			   size_t len, loff_t *ppos)
{
	struct edgeq_file *f = file->private_data;

	if (edgeq_is_agent(f))
		return edgeq_agent_write(f, buf, len);
	return edgeq_client_write(f, buf, len);
}

static bool edgeq_has_done(struct edgeq_file *f)
{
	bool ret;

	spin_lock(&f->q->lock);
	ret = !list_empty(&f->done) || f->q->dead;
	spin_unlock(&f->q->lock);
	return ret;
}

static ssize_t edgeq_client_read(struct edgeq_file *f, char __user *buf,
				 size_t len, bool nonblock)
{
	struct edgeq_queue *q = f->q;
	size_t max = min_t(size_t, len / sizeof(struct edgeq_completion),
			   EDGEQ_MAX_BATCH);
	struct edgeq_req *req, *rn;
	LIST_HEAD(delivered);
	LIST_HEAD(got);
	size_t n = 0;
	bool was_full;
	ssize_t ret;

	if (!max)
		return -EINVAL;
	for (;;) {
		spin_lock(&q->lock);
		while (n < max &&
		       (req = list_first_entry_or_null(&f->done,
						       struct edgeq_req,
						       node))) {
			list_move_tail(&req->node, &got);
			n++;
		}
		ret = q->dead ? -ENODEV : f->is_agent ? -EBUSY : 0;
		spin_unlock(&q->lock);
		if (n)
			break;
		if (ret)
			return ret;
		if (nonblock)
			return -EAGAIN;
		ret = wait_event_interruptible(f->wq, edgeq_has_done(f));
		if (ret)
			return ret;
	}
	n = 0;
	list_for_each_entry(req, &got, node) {
		if (copy_to_user(buf + n * sizeof(req->comp), &req->comp,
				 sizeof(req->comp)))
			break;
		n++;
	}
	/* The first n were delivered; the rest go back, in order. */
	ret = n;
	list_for_each_entry_safe(req, rn, &got, node) {
		if (!ret--)
			break;
		list_move_tail(&req->node, &delivered);
	}
	spin_lock(&q->lock);
	list_splice(&got, &f->done);
	was_full = f->outstanding >= EDGEQ_MAX_OUTSTANDING;
	f->outstanding -= n;
	spin_unlock(&q->lock);
	edgeq_user_uncharge(f, false, n);
	/* Room again: whoever polls for POLLOUT may submit. */
	if (n && was_full)
		wake_up_interruptible_poll(&f->wq, EPOLLOUT | EPOLLWRNORM);
	list_for_each_entry_safe(req, rn, &delivered, node) {
		put_pid(req->client_pid);
		kfree(req);
	}
	if (!n)
		return -EFAULT;
	return n * sizeof(struct edgeq_completion);
}

static ssize_t edgeq_read(struct file *file, char __user *buf, size_t len,
			  loff_t *ppos)
{
	struct edgeq_file *f = file->private_data;
	bool nonblock = file->f_flags & O_NONBLOCK;

	if (edgeq_is_agent(f))
		return edgeq_agent_read(f, buf, len, nonblock);
	return edgeq_client_read(f, buf, len, nonblock);
}

static __poll_t edgeq_poll(struct file *file, poll_table *wait)
{
	struct edgeq_file *f = file->private_data;
	struct edgeq_queue *q = f->q;
	__poll_t mask = 0;

	if (edgeq_is_agent(f))
		poll_wait(file, &q->agent_wq, wait);
	else
		poll_wait(file, &f->wq, wait);
	spin_lock(&q->lock);
	if (q->dead) {
		mask = EPOLLERR | EPOLLHUP;
	} else if (q->agent == f) {
		if (edgeq_can_dispatch(q))
			mask |= EPOLLIN | EPOLLRDNORM;
		mask |= EPOLLOUT | EPOLLWRNORM;
	} else {
		if (!list_empty(&f->done))
			mask |= EPOLLIN | EPOLLRDNORM;
		if (q->agent && f->outstanding < EDGEQ_MAX_OUTSTANDING)
			mask |= EPOLLOUT | EPOLLWRNORM;
	}
	spin_unlock(&q->lock);
	return mask;
}

static int edgeq_tensor_register(struct edgeq_file *f, void __user *arg)
{
	struct edgeq_queue *q = f->q;
	struct edgeq_tensor_reg r;
	struct edgeq_tensor *t;
	struct file *file;
	u32 handle;
	int ret;

	if (copy_from_user(&r, arg, sizeof(r)))
		return -EFAULT;
	if (r.size != sizeof(r) || r.flags || r.handle || r.length ||
	    r.reserved[0] || r.reserved[1] || r.fd < 0)
		return -EINVAL;
	file = fget(r.fd);
	if (!file)
		return -EBADF;
	/* A shmem file (memfd) that cannot shrink under the agent's map. */
	ret = -EINVAL;
	if (!edgeq_shmem_file(file) ||
	    !(SHMEM_I(file_inode(file))->seals & F_SEAL_SHRINK) ||
	    !i_size_read(file_inode(file)))
		goto out_fput;
	ret = -ENOMEM;
	t = kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);
	if (!t)
		goto out_fput;
	t->file = file;
	t->owner = f;
	t->length = i_size_read(file_inode(file));

	spin_lock(&q->lock);
	if (q->dead)
		ret = -ENODEV;
	else if (f->is_agent)
		ret = -EBUSY;
	else if (f->ntensors >= EDGEQ_MAX_CLIENT_TENSORS)
		ret = -EMFILE;
	else if (!edgeq_user_charge(f, true, 1))
		ret = -EDQUOT;
	else
		ret = 0;
	if (!ret)
		f->ntensors++;
	spin_unlock(&q->lock);
	if (ret)
		goto out_free;

	ret = xa_alloc_cyclic(&q->tensors, &handle, NULL, XA_LIMIT(1, INT_MAX),
			      &q->next_handle, GFP_KERNEL);
	if (ret < 0)
		goto out_uncount;
	t->handle = handle;
	spin_lock(&q->lock);
	xa_store(&q->tensors, handle, t, GFP_ATOMIC);
	list_add_tail(&t->node, &f->tensors);
	spin_unlock(&q->lock);

	r.handle = handle;
	r.length = t->length;
	if (copy_to_user(arg, &r, sizeof(r)))
		return -EFAULT; /* registered; freed with the file */
	return 0;

out_uncount:
	spin_lock(&q->lock);
	f->ntensors--;
	spin_unlock(&q->lock);
	edgeq_user_uncharge(f, true, 1);
out_free:
	kfree(t);
out_fput:
	fput(file);
	return ret;
}

static int edgeq_tensor_unregister(struct edgeq_file *f, void __user *arg)
{
	struct edgeq_queue *q = f->q;
	struct edgeq_tensor_unreg u;
	struct edgeq_tensor *t;
	int ret = 0;

	if (copy_from_user(&u, arg, sizeof(u)))
		return -EFAULT;
	if (u.size != sizeof(u) || u.reserved[0])
		return -EINVAL;
	spin_lock(&q->lock);
	t = xa_load(&q->tensors, u.handle);
	if (!t || t->owner != f) {
		ret = -ENOENT;
	} else if (t->users) {
		ret = -EBUSY;
	} else {
		xa_erase(&q->tensors, u.handle);
		list_del(&t->node);
		f->ntensors--;
	}
	spin_unlock(&q->lock);
	if (ret)
		return ret;
	edgeq_user_uncharge(f, true, 1);
	fput(t->file);
	kfree(t);
	return 0;
}

static int edgeq_ioc_submit(struct edgeq_file *f, void __user *arg)
{
	struct edgeq_submit s;
	ssize_t ret;

	if (copy_from_user(&s, arg, sizeof(s)))
		return -EFAULT;
	if (s.size != sizeof(s) || !s.count || s.count > EDGEQ_MAX_BATCH ||
	    s.submitted || s.reserved0 || s.reserved[0] || s.reserved[1])
		return -EINVAL;
	ret = edgeq_client_write(f, u64_to_user_ptr(s.ops),
				 (size_t)s.count *
					 sizeof(struct edgeq_op_desc));
	if (ret < 0)
		return ret;
	s.submitted = ret / sizeof(struct edgeq_op_desc);
	if (put_user(s.submitted,
		     (__u32 __user *)(arg + offsetof(struct edgeq_submit,
						     submitted))))
		return -EFAULT;
	return 0; /* submitted < count: stopped at a refused op */
}

static long edgeq_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct edgeq_file *f = file->private_data;
	void __user *argp = (void __user *)arg;

	if (READ_ONCE(f->q->dead))
		return -ENODEV;
	switch (cmd) {
	case EDGEQ_IOC_GET_FEATURES:
		return edgeq_get_features(argp);
	case EDGEQ_IOC_TENSOR_REGISTER:
		return edgeq_tensor_register(f, argp);
	case EDGEQ_IOC_TENSOR_UNREGISTER:
		return edgeq_tensor_unregister(f, argp);
	case EDGEQ_IOC_SUBMIT:
		return edgeq_ioc_submit(f, argp);
	case EDGEQ_IOC_AGENT_ATTACH:
		return edgeq_agent_attach(f, argp);
	case EDGEQ_IOC_AGENT_DETACH:
		if (arg)
			return -EINVAL;
		return edgeq_agent_detach(f);
	case EDGEQ_IOC_AGENT_TENSOR_FD:
		return edgeq_agent_tensor_fd(f, argp);
	}
	return -ENOTTY;
}

/* DRM usage-stats style (Documentation/gpu/drm-usage-stats.rst). */
static void edgeq_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct edgeq_file *f = file->private_data;
	struct edgeq_queue *q = f->q;
	u64 busy, ops, bytes;

	spin_lock(&q->lock);
	busy = f->busy_ns;
	ops = f->ops;
	bytes = f->bytes;
	spin_unlock(&q->lock);
	seq_puts(m, "drm-driver:\tedgeq\n");
	seq_printf(m, "drm-client-id:\t%u\n", f->id);
	seq_printf(m, "drm-engine-%s:\t%llu ns\n", q->name, busy);
	seq_printf(m, "edgeq-ops-%s:\t%llu\n", q->name, ops);
	seq_printf(m, "edgeq-bytes-%s:\t%llu\n", q->name, bytes);
	seq_printf(m, "edgeq-role:\t%s\n",
		   edgeq_is_agent(f) ? "agent" : "client");
}

const struct file_operations edgeq_queue_fops = {
	.owner = THIS_MODULE,
	.open = edgeq_open,
	.release = edgeq_release,
	.read = edgeq_read,
	.write = edgeq_write,
	.poll = edgeq_poll,
	.unlocked_ioctl = edgeq_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.show_fdinfo = edgeq_show_fdinfo,
	.llseek = edgeq_no_llseek,
};
