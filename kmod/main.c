// SPDX-License-Identifier: GPL-2.0
/*
 * edgeq.ko: accelerator work queues whose executors are userspace agents.
 * This file: the module, its parameters, the class, /dev/edgeq-control and
 * the creation and destruction of queues.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/ctype.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "edgeq_drv.h"

struct class *edgeq_class;
static dev_t edgeq_devt;
static DEFINE_MUTEX(edgeq_mutex); /* edgeq_queues[] */
static struct edgeq_queue *edgeq_queues[EDGEQ_MAX_QUEUES];

/* Module parameters; registered, with their bounds, at the end of the file. */
static char *queues;
static bool sim_sensor;
static u32 max_inflight = 8;
static u32 timeout_ms = 5000;

bool edgeq_sim_sensor_enabled(void)
{
	return sim_sensor;
}

/* ---- features */

int edgeq_get_features(void __user *arg)
{
	struct edgeq_features feat;

	if (copy_from_user(&feat, arg, sizeof(feat)))
		return -EFAULT;
	if (feat.size != sizeof(feat))
		return -EINVAL;
	memset(&feat, 0, sizeof(feat));
	feat.size = sizeof(feat);
	feat.version = EDGEQ_API_VERSION;
	feat.features = EDGEQ_F_ALL;
	if (!sim_sensor)
		feat.features &= ~EDGEQ_F_SIM_SENSOR;
	feat.op_size = sizeof(struct edgeq_op_desc);
	feat.completion_size = sizeof(struct edgeq_completion);
	feat.agent_op_size = sizeof(struct edgeq_agent_op);
	feat.agent_done_size = sizeof(struct edgeq_agent_done);
	feat.max_tensors = EDGEQ_MAX_TENSORS;
	feat.max_dims = EDGEQ_MAX_DIMS;
	feat.max_batch = EDGEQ_MAX_BATCH;
	feat.max_outstanding = EDGEQ_MAX_OUTSTANDING;
	if (copy_to_user(arg, &feat, sizeof(feat)))
		return -EFAULT;
	return 0;
}

/* ---- queues */

static bool edgeq_name_valid(const char *name)
{
	size_t i, len = strnlen(name, EDGEQ_NAME_MAX);

	if (!len || len > EDGEQ_NAME_LEN)
		return false;
	for (i = 0; i < len; i++)
		if (!islower(name[i]) && !isdigit(name[i]) && name[i] != '_' &&
		    name[i] != '-')
			return false;
	return true;
}

static struct edgeq_queue *edgeq_find(const char *name)
{
	int i;

	lockdep_assert_held(&edgeq_mutex);
	for (i = 0; i < EDGEQ_MAX_QUEUES; i++)
		if (edgeq_queues[i] && !strcmp(edgeq_queues[i]->name, name))
			return edgeq_queues[i];
	return NULL;
}

static void edgeq_queue_free(struct device *dev)
{
	struct edgeq_queue *q = container_of(dev, struct edgeq_queue, dev);

	xa_destroy(&q->tensors);
	kfree(q);
}

struct edgeq_queue *edgeq_queue_create(const char *name, u32 inflight,
				       u32 timeout)
{
	struct edgeq_queue *q;
	int i, id = -1, ret;

	if (!edgeq_name_valid(name) || inflight > EDGEQ_MAX_INFLIGHT ||
	    timeout > EDGEQ_MAX_TIMEOUT_MS)
		return ERR_PTR(-EINVAL);
	mutex_lock(&edgeq_mutex);
	if (edgeq_find(name)) {
		ret = -EEXIST;
		goto out_unlock;
	}
	for (i = 0; i < EDGEQ_MAX_QUEUES && id < 0; i++)
		if (!edgeq_queues[i])
			id = i;
	if (id < 0) {
		ret = -ENOSPC;
		goto out_unlock;
	}
	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	q->id = id;
	strscpy(q->name, name, sizeof(q->name));
	spin_lock_init(&q->lock);
	q->max_inflight = inflight ? inflight : max_inflight;
	q->timeout_ms = timeout ? timeout : timeout_ms;
	q->policy = EDGEQ_POLICY_FAIL;
	init_waitqueue_head(&q->agent_wq);
	for (i = 0; i < EDGEQ_PRIO_COUNT; i++)
		INIT_LIST_HEAD(&q->active[i]);
	INIT_LIST_HEAD(&q->inflight);
	INIT_LIST_HEAD(&q->all);
	INIT_DELAYED_WORK(&q->timeout_work, edgeq_timeout_work);
	xa_init_flags(&q->tensors, XA_FLAGS_ALLOC1);
	q->sim_ambient_mc = 40000;
	q->sim_rise_mc = 60000;
	q->sim_tau_ms = 2000;
	q->sim_trip_mc = 70000;

	device_initialize(&q->dev);
	q->dev.class = edgeq_class;
	q->dev.devt = MKDEV(MAJOR(edgeq_devt), id);
	q->dev.groups = edgeq_queue_groups;
	q->dev.release = edgeq_queue_free;
	dev_set_drvdata(&q->dev, q);
	ret = dev_set_name(&q->dev, "%s", name);
	if (ret)
		goto out_put;
	cdev_init(&q->cdev, &edgeq_queue_fops);
	q->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&q->cdev, &q->dev);
	if (ret)
		goto out_put;
	ret = edgeq_cooling_register(q);
	if (ret)
		goto out_del;
	if (sim_sensor) {
		ret = edgeq_sensor_register(q);
		if (ret)
			goto out_cooling;
	}
	edgeq_queues[id] = q;
	mutex_unlock(&edgeq_mutex);
	return q;

out_cooling:
	edgeq_cooling_unregister(q);
out_del:
	cdev_device_del(&q->cdev, &q->dev);
out_put:
	put_device(&q->dev);
out_unlock:
	mutex_unlock(&edgeq_mutex);
	return ERR_PTR(ret);
}

/* Tears @q down; open files keep the memory until they close. */
static void edgeq_queue_kill(struct edgeq_queue *q)
{
	bool detached;

	edgeq_sensor_unregister(q);
	edgeq_cooling_unregister(q);
	spin_lock(&q->lock);
	q->dead = true;
	detached = edgeq_agent_detach_locked(q, true);
	while (!list_empty(&q->inflight))
		edgeq_complete(q,
			       list_first_entry(&q->inflight, struct edgeq_req,
						node),
			       -ENODEV, 0);
	edgeq_fail_waiting(q, -ENODEV);
	spin_unlock(&q->lock);
	if (detached)
		edgeq_agent_detached(q);
	cancel_delayed_work_sync(&q->timeout_work);
	wake_up_interruptible_all(&q->agent_wq);
	cdev_device_del(&q->cdev, &q->dev);
	put_device(&q->dev);
}

int edgeq_queue_destroy(const char *name)
{
	struct edgeq_queue *q;

	mutex_lock(&edgeq_mutex);
	q = edgeq_find(name);
	if (q)
		edgeq_queues[q->id] = NULL;
	mutex_unlock(&edgeq_mutex);
	if (!q)
		return -ENOENT;
	edgeq_queue_kill(q);
	return 0;
}

/* ---- /dev/edgeq-control */

static int edgeq_ctl_copy(struct edgeq_queue_ctl *c, void __user *arg)
{
	if (copy_from_user(c, arg, sizeof(*c)))
		return -EFAULT;
	if (c->size != sizeof(*c) || c->flags || c->id || c->reserved0 ||
	    c->reserved[0] || c->reserved[1] ||
	    strnlen(c->name, EDGEQ_NAME_MAX) == EDGEQ_NAME_MAX)
		return -EINVAL;
	return 0;
}

static long edgeq_ctl_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg)
{
	void __user *argp = (void __user *)arg;
	struct edgeq_queue_ctl c;
	struct edgeq_queue *q;
	int ret;

	switch (cmd) {
	case EDGEQ_IOC_GET_FEATURES:
		return edgeq_get_features(argp);
	case EDGEQ_IOC_QUEUE_CREATE:
		if (!capable(CAP_SYS_ADMIN))
			return -EPERM;
		ret = edgeq_ctl_copy(&c, argp);
		if (ret)
			return ret;
		q = edgeq_queue_create(c.name, c.max_inflight, c.timeout_ms);
		if (IS_ERR(q))
			return PTR_ERR(q);
		c.id = q->id;
		if (copy_to_user(argp, &c, sizeof(c)))
			return -EFAULT;
		return 0;
	case EDGEQ_IOC_QUEUE_DESTROY:
		if (!capable(CAP_SYS_ADMIN))
			return -EPERM;
		ret = edgeq_ctl_copy(&c, argp);
		if (ret)
			return ret;
		if (c.max_inflight || c.timeout_ms)
			return -EINVAL;
		return edgeq_queue_destroy(c.name);
	}
	return -ENOTTY;
}

static const struct file_operations edgeq_ctl_fops = {
	.owner = THIS_MODULE,
	.open = nonseekable_open,
	.unlocked_ioctl = edgeq_ctl_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = edgeq_no_llseek,
};

static struct miscdevice edgeq_ctl_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "edgeq-control",
	.fops = &edgeq_ctl_fops,
	.mode = 0600,
};

static char *edgeq_devnode(EDGEQ_DEVNODE_CONST struct device *dev,
			   umode_t *mode)
{
	if (mode)
		*mode = 0666;
	return kasprintf(GFP_KERNEL, "edgeq/%s", dev_name(dev));
}

/* ---- init/exit */

static void edgeq_destroy_all(void)
{
	int i;

	for (i = 0; i < EDGEQ_MAX_QUEUES; i++) {
		struct edgeq_queue *q;

		mutex_lock(&edgeq_mutex);
		q = edgeq_queues[i];
		edgeq_queues[i] = NULL;
		mutex_unlock(&edgeq_mutex);
		if (q)
			edgeq_queue_kill(q);
	}
}

static int __init edgeq_create_param_queues(void)
{
	char *list, *p, *name;
	struct edgeq_queue *q;
	int ret = 0;

	if (!queues || !*queues)
		return 0;
	list = kstrdup(queues, GFP_KERNEL);
	if (!list)
		return -ENOMEM;
	p = list;
	while ((name = strsep(&p, ",")) != NULL) {
		if (!*name)
			continue;
		q = edgeq_queue_create(name, 0, 0);
		if (IS_ERR(q)) {
			ret = PTR_ERR(q);
			pr_err("queue \"%s\": %d\n", name, ret);
			break;
		}
	}
	kfree(list);
	return ret;
}

static int __init edgeq_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&edgeq_devt, 0, EDGEQ_MAX_QUEUES, "edgeq");
	if (ret)
		return ret;
	edgeq_class = edgeq_class_create("edgeq");
	if (IS_ERR(edgeq_class)) {
		ret = PTR_ERR(edgeq_class);
		goto out_region;
	}
	edgeq_class->devnode = edgeq_devnode;
	ret = misc_register(&edgeq_ctl_dev);
	if (ret)
		goto out_class;
	ret = edgeq_create_param_queues();
	if (ret)
		goto out_queues;
	return 0;

out_queues:
	edgeq_destroy_all();
	misc_deregister(&edgeq_ctl_dev);
out_class:
	class_destroy(edgeq_class);
out_region:
	unregister_chrdev_region(edgeq_devt, EDGEQ_MAX_QUEUES);
	return ret;
}

static void __exit edgeq_exit(void)
{
	misc_deregister(&edgeq_ctl_dev);
	edgeq_destroy_all();
	class_destroy(edgeq_class);
	unregister_chrdev_region(edgeq_devt, EDGEQ_MAX_QUEUES);
}

/* ---- module parameters, bounded */

module_param(queues, charp, 0444);
MODULE_PARM_DESC(queues,
		 "queues to create at load, comma separated (e.g. npu0,gpu0)");

module_param(sim_sensor, bool, 0444);
MODULE_PARM_DESC(sim_sensor,
		 "register a simulated thermal zone per queue (default off)");

static int edgeq_param_set_bounded(const char *val,
				   const struct kernel_param *kp, u32 lo,
				   u32 hi)
{
	u32 v;
	int ret = kstrtou32(val, 0, &v);

	if (ret)
		return ret;
	if (v < lo || v > hi)
		return -EINVAL;
	*(u32 *)kp->arg = v;
	return 0;
}

static int edgeq_inflight_set(const char *val, const struct kernel_param *kp)
{
	return edgeq_param_set_bounded(val, kp, 1, EDGEQ_MAX_INFLIGHT);
}

static int edgeq_timeout_set(const char *val, const struct kernel_param *kp)
{
	return edgeq_param_set_bounded(val, kp, 0, EDGEQ_MAX_TIMEOUT_MS);
}

static const struct kernel_param_ops edgeq_inflight_ops = {
	.set = edgeq_inflight_set,
	.get = param_get_uint,
};

static const struct kernel_param_ops edgeq_timeout_ops = {
	.set = edgeq_timeout_set,
	.get = param_get_uint,
};

module_param_cb(max_inflight, &edgeq_inflight_ops, &max_inflight, 0644);
MODULE_PARM_DESC(max_inflight,
		 "default in-flight limit of new queues (1..256, default 8)");

module_param_cb(timeout_ms, &edgeq_timeout_ops, &timeout_ms, 0644);
MODULE_PARM_DESC(
	timeout_ms,
	"default op timeout of new queues in ms (0 = none, default 5000)");

module_init(edgeq_init);
module_exit(edgeq_exit);

MODULE_DESCRIPTION(
	"edgeq: accelerator work queues executed by userspace agents");
MODULE_AUTHOR("edgeq developers");
MODULE_LICENSE("GPL");
