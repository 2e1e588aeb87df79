// SPDX-License-Identifier: GPL-2.0
/*
 * edgeq.ko: accelerator work queues whose executors are userspace agents.
 * This file: the module, its parameters, the class, /dev/edgeq-control and
 * the creation and destruction of queues.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/poll.h>
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
static char *bind;
static u32 max_inflight = 8;
static u32 timeout_ms = 5000;
static u32 node_uid, node_gid;
static u32 node_mode = 0660;
static u32 max_user_ops = 4096;
static u32 max_user_tensors = 1024;

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
	feat.max_user_ops = READ_ONCE(max_user_ops);
	feat.max_user_tensors = READ_ONCE(max_user_tensors);
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
	/* ASCII only: islower() would take Latin-1 letters too. */
	for (i = 0; i < len; i++)
		if (!(name[i] >= 'a' && name[i] <= 'z') &&
		    !(name[i] >= '0' && name[i] <= '9') && name[i] != '_' &&
		    name[i] != '-')
			return false;
	return true;
}

/* ---- what each user holds, across every queue */

static DEFINE_SPINLOCK(edgeq_users_lock);
static LIST_HEAD(edgeq_users);

struct edgeq_user *edgeq_user_get(kuid_t uid)
{
	struct edgeq_user *u, *n;

	n = kzalloc(sizeof(*n), GFP_KERNEL);
	if (!n)
		return NULL;
	spin_lock(&edgeq_users_lock);
	list_for_each_entry(u, &edgeq_users, node) {
		if (uid_eq(u->uid, uid)) {
			u->refs++;
			spin_unlock(&edgeq_users_lock);
			kfree(n);
			return u;
		}
	}
	n->uid = uid;
	n->refs = 1;
	list_add(&n->node, &edgeq_users);
	spin_unlock(&edgeq_users_lock);
	return n;
}

void edgeq_user_put(struct edgeq_user *u)
{
	bool last;

	spin_lock(&edgeq_users_lock);
	last = !--u->refs;
	if (last)
		list_del(&u->node);
	spin_unlock(&edgeq_users_lock);
	if (last) {
		WARN_ON_ONCE(atomic_read(&u->ops) || atomic_read(&u->tensors));
		kfree(u);
	}
}

/*
 * Takes @n more of what @v counts for @f's user, at most the limit
 * (max_user_ops or max_user_tensors); files opened with CAP_SYS_RESOURCE
 * are not limited. Returns false when the user is at the limit.
 */
bool edgeq_user_charge(struct edgeq_file *f, bool tensors, int n)
{
	atomic_t *v = tensors ? &f->user->tensors : &f->user->ops;
	u32 max = tensors ? READ_ONCE(max_user_tensors) : READ_ONCE(max_user_ops);

	if (atomic_add_return(n, v) > max && !f->unlimited) {
		atomic_sub(n, v);
		return false;
	}
	return true;
}

void edgeq_user_uncharge(struct edgeq_file *f, bool tensors, int n)
{
	atomic_sub(n, tensors ? &f->user->tensors : &f->user->ops);
}

/* /dev/edgeq/<name>, owner, group and mode from the node_* parameters. */
static char *edgeq_type_devnode(EDGEQ_DEVNODE_CONST struct device *dev,
				umode_t *mode, kuid_t *uid, kgid_t *gid)
{
	if (mode)
		*mode = READ_ONCE(node_mode);
	if (uid)
		*uid = make_kuid(&init_user_ns, READ_ONCE(node_uid));
	if (gid)
		*gid = make_kgid(&init_user_ns, READ_ONCE(node_gid));
	return kasprintf(GFP_KERNEL, "edgeq/%s", dev_name(dev));
}

static const struct device_type edgeq_queue_type = {
	.name = "edgeq_queue",
	.devnode = edgeq_type_devnode,
};

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
	mutex_init(&q->sensor_mutex);
	INIT_LIST_HEAD(&q->files);
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
	q->dev.type = &edgeq_queue_type;
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

/*
 * Tears @q down, edgeq_mutex held: its slot (the minor) is freed by the
 * caller only after the char device is gone, so that a new queue never
 * shares a device number with a dying one. Every file open on it is woken
 * (read() returns -ENODEV, poll EPOLLERR | EPOLLHUP); open files keep the
 * memory until they close.
 */
static void edgeq_queue_kill(struct edgeq_queue *q)
{
	struct edgeq_file *f;
	bool detached;

	lockdep_assert_held(&edgeq_mutex);
	/* bindings to or of its cooling go with its zone */
	edgeq_bind_queue_gone(q, edgeq_queues, EDGEQ_MAX_QUEUES);
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
	list_for_each_entry(f, &q->files, qnode)
		wake_up_interruptible_poll(&f->wq, EPOLLERR | EPOLLHUP);
	wake_up_interruptible_poll(&q->agent_wq, EPOLLERR | EPOLLHUP);
	spin_unlock(&q->lock);
	if (detached)
		edgeq_agent_detached(q);
	cancel_delayed_work_sync(&q->timeout_work);
	cdev_device_del(&q->cdev, &q->dev);
	put_device(&q->dev);
}

int edgeq_queue_destroy(const char *name)
{
	struct edgeq_queue *q;
	u32 id;

	mutex_lock(&edgeq_mutex);
	q = edgeq_find(name);
	if (q) {
		id = q->id;
		edgeq_queue_kill(q);
		edgeq_queues[id] = NULL;
	}
	mutex_unlock(&edgeq_mutex);
	return q ? 0 : -ENOENT;
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

/* ---- init/exit */

static void edgeq_destroy_all(void)
{
	int i;

	mutex_lock(&edgeq_mutex);
	for (i = 0; i < EDGEQ_MAX_QUEUES; i++) {
		if (edgeq_queues[i])
			edgeq_queue_kill(edgeq_queues[i]);
		edgeq_queues[i] = NULL;
	}
	mutex_unlock(&edgeq_mutex);
}

/* @fn on each non-empty item of the comma-separated @val, to the first error */
static int __init edgeq_param_each(const char *val, int (*fn)(char *item))
{
	char *list, *p, *item;
	int ret = 0;

	if (!val || !*val)
		return 0;
	list = kstrdup(val, GFP_KERNEL);
	if (!list)
		return -ENOMEM;
	p = list;
	while (!ret && (item = strsep(&p, ",")) != NULL)
		if (*item)
			ret = fn(item);
	kfree(list);
	return ret;
}

/* queues=NAME[,NAME]: a queue created at load */
static int __init edgeq_param_queue(char *name)
{
	int ret = PTR_ERR_OR_ZERO(edgeq_queue_create(name, 0, 0));

	if (ret)
		pr_err("queue \"%s\": %d\n", name, ret);
	return ret;
}

/* bind=QUEUE:TYPE[,QUEUE:TYPE]: a queue's cooling bound to a zone by type */
static int __init edgeq_param_bind(char *pair)
{
	char *type = strchr(pair, ':');
	struct edgeq_queue *q;
	int ret;

	if (!type || type == pair || !type[1]) {
		pr_err("bind=%s: want QUEUE:ZONE_TYPE\n", pair);
		return -EINVAL;
	}
	*type++ = '\0';
	mutex_lock(&edgeq_mutex);
	q = edgeq_find(pair);
	ret = q ? edgeq_bind(q, type) : -EINVAL;
	mutex_unlock(&edgeq_mutex);
	if (!q)
		pr_err("bind: no queue \"%s\" (queues=%s)\n", pair,
		       queues ? queues : "");
	else if (ret)
		pr_err("bind=%s:%s: %d\n", pair, type, ret);
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
	ret = misc_register(&edgeq_ctl_dev);
	if (ret)
		goto out_class;
	ret = edgeq_param_each(queues, edgeq_param_queue);
	if (!ret)
		ret = edgeq_param_each(bind, edgeq_param_bind);
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

module_param(bind, charp, 0444);
MODULE_PARM_DESC(bind,
		 "cooling devices to bind at load to thermal zones found by type, QUEUE:TYPE comma separated (e.g. gpu0:gpu-thermal)");

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

static int edgeq_mode_set(const char *val, const struct kernel_param *kp)
{
	return edgeq_param_set_bounded(val, kp, 0, 0777);
}

static int edgeq_user_limit_set(const char *val, const struct kernel_param *kp)
{
	return edgeq_param_set_bounded(val, kp, 1, 1U << 20);
}

static int edgeq_id_set(const char *val, const struct kernel_param *kp)
{
	int ret = edgeq_param_set_bounded(val, kp, 0, U32_MAX - 1);

	if (ret)
		return ret;
	/* An id that does not map is refused, not turned into nobody. */
	if (kp->arg == &node_uid &&
	    !uid_valid(make_kuid(&init_user_ns, node_uid)))
		return -EINVAL;
	if (kp->arg == &node_gid &&
	    !gid_valid(make_kgid(&init_user_ns, node_gid)))
		return -EINVAL;
	return 0;
}

static int edgeq_param_get_octal(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "0%o\n", *(u32 *)kp->arg);
}

static const struct kernel_param_ops edgeq_mode_ops = {
	.set = edgeq_mode_set,
	.get = edgeq_param_get_octal,
};

static const struct kernel_param_ops edgeq_user_limit_ops = {
	.set = edgeq_user_limit_set,
	.get = param_get_uint,
};

static const struct kernel_param_ops edgeq_id_ops = {
	.set = edgeq_id_set,
	.get = param_get_uint,
};

module_param_cb(node_uid, &edgeq_id_ops, &node_uid, 0644);
MODULE_PARM_DESC(node_uid, "owner of new /dev/edgeq/<name> nodes (default 0)");
module_param_cb(node_gid, &edgeq_id_ops, &node_gid, 0644);
MODULE_PARM_DESC(node_gid,
		 "group of new /dev/edgeq/<name> nodes (default 0; udev rules may set the edgeq group)");
module_param_cb(node_mode, &edgeq_mode_ops, &node_mode, 0644);
MODULE_PARM_DESC(node_mode, "mode of new /dev/edgeq/<name> nodes (default 0660)");
module_param_cb(max_user_ops, &edgeq_user_limit_ops, &max_user_ops, 0644);
MODULE_PARM_DESC(max_user_ops,
		 "ops one user may have outstanding over all files (default 4096; CAP_SYS_RESOURCE: no limit)");
module_param_cb(max_user_tensors, &edgeq_user_limit_ops, &max_user_tensors,
		0644);
MODULE_PARM_DESC(max_user_tensors,
		 "memfds one user may have registered over all files (default 1024; CAP_SYS_RESOURCE: no limit)");

module_param_cb(max_inflight, &edgeq_inflight_ops, &max_inflight, 0644);
MODULE_PARM_DESC(max_inflight,
		 "default in-flight limit of new queues (1..256, default 8)");

module_param_cb(timeout_ms, &edgeq_timeout_ops, &timeout_ms, 0644);
MODULE_PARM_DESC(timeout_ms,
		 "default op timeout of new queues in ms (0 = none, default 5000)");

module_init(edgeq_init);
module_exit(edgeq_exit);

MODULE_DESCRIPTION("edgeq: accelerator work queues executed by userspace agents");
MODULE_AUTHOR("edgeq developers");
MODULE_LICENSE("GPL");
