// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/class/edgeq/<name>/: knobs and counters of a queue
 * (Documentation/ABI/testing/sysfs-class-edgeq). Writes are validated.
 */
#include <linux/device.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "edgeq_drv.h"

static struct edgeq_queue *to_q(struct device *dev)
{
	return dev_get_drvdata(dev);
}

/* Reads the u64 at @off in the queue under its lock. */
static ssize_t edgeq_show_u64(struct device *dev, char *buf, size_t off)
{
	struct edgeq_queue *q = to_q(dev);
	u64 v;

	spin_lock(&q->lock);
	v = *(u64 *)((char *)q + off);
	spin_unlock(&q->lock);
	return sysfs_emit(buf, "%llu\n", v);
}

#define EDGEQ_SHOW_U64(field)                                                 \
	static ssize_t field##_show(struct device *dev,                       \
				    struct device_attribute *attr, char *buf) \
	{                                                                     \
		return edgeq_show_u64(dev, buf,                               \
				      offsetof(struct edgeq_queue, field));   \
	}                                                                     \
	static DEVICE_ATTR_RO(field)

EDGEQ_SHOW_U64(busy_ns);
EDGEQ_SHOW_U64(ops);
EDGEQ_SHOW_U64(bytes);
EDGEQ_SHOW_U64(errors);
EDGEQ_SHOW_U64(timeouts);
EDGEQ_SHOW_U64(submitted);

static ssize_t id_show(struct device *dev, struct device_attribute *attr,
		       char *buf)
{
	return sysfs_emit(buf, "%u\n", to_q(dev)->id);
}
static DEVICE_ATTR_RO(id);

#define EDGEQ_SHOW_U32(field)                                                 \
	static ssize_t field##_show(struct device *dev,                       \
				    struct device_attribute *attr, char *buf) \
	{                                                                     \
		return sysfs_emit(buf, "%u\n", READ_ONCE(to_q(dev)->field));  \
	}

EDGEQ_SHOW_U32(max_inflight)
EDGEQ_SHOW_U32(timeout_ms)
EDGEQ_SHOW_U32(nr_inflight)
EDGEQ_SHOW_U32(nr_waiting)
EDGEQ_SHOW_U32(nr_clients)
static DEVICE_ATTR_RO(nr_inflight);
static DEVICE_ATTR_RO(nr_waiting);
static DEVICE_ATTR_RO(nr_clients);

static ssize_t max_inflight_store(struct device *dev,
				  struct device_attribute *attr,
				  const char *buf, size_t len)
{
	struct edgeq_queue *q = to_q(dev);
	u32 v;
	int ret = kstrtou32(buf, 0, &v);

	if (ret)
		return ret;
	if (!v || v > EDGEQ_MAX_INFLIGHT)
		return -EINVAL;
	spin_lock(&q->lock);
	q->max_inflight = v;
	spin_unlock(&q->lock);
	wake_up_interruptible(&q->agent_wq);
	return len;
}
static DEVICE_ATTR_RW(max_inflight);

static ssize_t timeout_ms_store(struct device *dev,
				struct device_attribute *attr, const char *buf,
				size_t len)
{
	struct edgeq_queue *q = to_q(dev);
	u32 v;
	int ret = kstrtou32(buf, 0, &v);

	if (ret)
		return ret;
	if (v > EDGEQ_MAX_TIMEOUT_MS)
		return -EINVAL;
	spin_lock(&q->lock);
	q->timeout_ms = v;
	if (!list_empty(&q->all))
		edgeq_kick_timeout(q);
	spin_unlock(&q->lock);
	return len;
}
static DEVICE_ATTR_RW(timeout_ms);

static const char *const edgeq_policy_names[] = {
	[EDGEQ_POLICY_FAIL] = "fail",
	[EDGEQ_POLICY_REQUEUE] = "requeue",
};

static ssize_t policy_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%s\n",
			  edgeq_policy_names[READ_ONCE(to_q(dev)->policy)]);
}

static ssize_t policy_store(struct device *dev, struct device_attribute *attr,
			    const char *buf, size_t len)
{
	struct edgeq_queue *q = to_q(dev);
	int i = sysfs_match_string(edgeq_policy_names, buf);

	if (i < 0)
		return i;
	spin_lock(&q->lock);
	q->policy = i;
	spin_unlock(&q->lock);
	return len;
}
static DEVICE_ATTR_RW(policy);

static const char *const edgeq_sched_names[] = {
	[EDGEQ_SCHED_RR] = "rr",
	[EDGEQ_SCHED_DRR] = "drr",
};

static ssize_t sched_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%s\n",
			  edgeq_sched_names[READ_ONCE(to_q(dev)->sched)]);
}

static ssize_t sched_store(struct device *dev, struct device_attribute *attr,
			   const char *buf, size_t len)
{
	struct edgeq_queue *q = to_q(dev);
	int i = sysfs_match_string(edgeq_sched_names, buf);

	if (i < 0)
		return i;
	spin_lock(&q->lock);
	q->sched = i;
	spin_unlock(&q->lock);
	return len;
}
static DEVICE_ATTR_RW(sched);

static ssize_t cooling_state_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_q(dev)->cool_state));
}

static ssize_t cooling_state_store(struct device *dev,
				   struct device_attribute *attr,
				   const char *buf, size_t len)
{
	unsigned long v;
	int ret = kstrtoul(buf, 0, &v);

	if (ret)
		return ret;
	ret = edgeq_set_cool_state(to_q(dev), v);
	return ret ? ret : len;
}
static DEVICE_ATTR_RW(cooling_state);

static ssize_t cooling_max_state_show(struct device *dev,
				      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", EDGEQ_COOLING_STATES);
}
static DEVICE_ATTR_RO(cooling_max_state);

static ssize_t effective_inflight_show(struct device *dev,
				       struct device_attribute *attr, char *buf)
{
	struct edgeq_queue *q = to_q(dev);
	u32 v;

	spin_lock(&q->lock);
	v = edgeq_limit(q);
	spin_unlock(&q->lock);
	return sysfs_emit(buf, "%u\n", v);
}
static DEVICE_ATTR_RO(effective_inflight);

static ssize_t agent_pid_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(to_q(dev)->agent_pid));
}
static DEVICE_ATTR_RO(agent_pid);

static ssize_t agent_ops_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	return sysfs_emit(buf, "0x%llx\n", READ_ONCE(to_q(dev)->agent_op_mask));
}
static DEVICE_ATTR_RO(agent_ops);

/* Simulated sensor parameters: milli-Celsius and ms, bounded. */
static ssize_t edgeq_sim_store(struct device *dev, const char *buf, size_t len,
			       size_t off, int lo, int hi)
{
	struct edgeq_queue *q = to_q(dev);
	int v, ret = kstrtoint(buf, 0, &v);

	if (ret)
		return ret;
	if (v < lo || v > hi)
		return -EINVAL;
	spin_lock(&q->lock);
	*(int *)((char *)q + off) = v;
	spin_unlock(&q->lock);
	if (off == offsetof(struct edgeq_queue, sim_trip_mc))
		edgeq_sensor_set_trips(q);
	return len;
}

#define EDGEQ_SIM_ATTR(attr_name, field, lo, hi)                              \
	static ssize_t attr_name##_show(                                      \
		struct device *dev, struct device_attribute *attr, char *buf) \
	{                                                                     \
		return sysfs_emit(buf, "%d\n", READ_ONCE(to_q(dev)->field));  \
	}                                                                     \
	static ssize_t attr_name##_store(struct device *dev,                  \
					 struct device_attribute *attr,       \
					 const char *buf, size_t len)         \
	{                                                                     \
		return edgeq_sim_store(dev, buf, len,                         \
				       offsetof(struct edgeq_queue, field),   \
				       lo, hi);                               \
	}                                                                     \
	static DEVICE_ATTR_RW(attr_name)

EDGEQ_SIM_ATTR(sim_ambient_mC, sim_ambient_mc, -40000, 100000);
EDGEQ_SIM_ATTR(sim_rise_mC, sim_rise_mc, 0, 200000);
EDGEQ_SIM_ATTR(sim_tau_ms, sim_tau_ms, 1, 3600000);
EDGEQ_SIM_ATTR(sim_trip_mC, sim_trip_mc, 0, 150000);

static ssize_t sim_temp_mC_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	struct edgeq_queue *q = to_q(dev);

	if (!READ_ONCE(q->sensor))
		return -ENODEV;
	return sysfs_emit(buf, "%d\n", edgeq_sensor_temp(q));
}
static DEVICE_ATTR_RO(sim_temp_mC);

static ssize_t cooling_zone_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	return edgeq_bind_show(to_q(dev), buf);
}

/* a zone type binds the queue's cooling to it; an empty line unbinds */
static ssize_t cooling_zone_store(struct device *dev,
				  struct device_attribute *attr,
				  const char *buf, size_t len)
{
	char type[THERMAL_NAME_LENGTH];
	size_t n = len;
	int ret;

	if (n && buf[n - 1] == '\n')
		n--;
	if (n >= sizeof(type))
		return -ENAMETOOLONG;
	memcpy(type, buf, n);
	type[n] = '\0';
	ret = edgeq_bind(to_q(dev), type);
	return ret ? ret : (ssize_t)len;
}
static DEVICE_ATTR_RW(cooling_zone);

static struct attribute *edgeq_queue_attrs[] = {
	&dev_attr_id.attr,
	&dev_attr_max_inflight.attr,
	&dev_attr_effective_inflight.attr,
	&dev_attr_timeout_ms.attr,
	&dev_attr_policy.attr,
	&dev_attr_sched.attr,
	&dev_attr_cooling_state.attr,
	&dev_attr_cooling_max_state.attr,
	&dev_attr_cooling_zone.attr,
	&dev_attr_busy_ns.attr,
	&dev_attr_ops.attr,
	&dev_attr_bytes.attr,
	&dev_attr_errors.attr,
	&dev_attr_timeouts.attr,
	&dev_attr_submitted.attr,
	&dev_attr_nr_inflight.attr,
	&dev_attr_nr_waiting.attr,
	&dev_attr_nr_clients.attr,
	&dev_attr_agent_pid.attr,
	&dev_attr_agent_ops.attr,
	&dev_attr_sim_ambient_mC.attr,
	&dev_attr_sim_rise_mC.attr,
	&dev_attr_sim_tau_ms.attr,
	&dev_attr_sim_trip_mC.attr,
	&dev_attr_sim_temp_mC.attr,
	NULL,
};

static const struct attribute_group edgeq_queue_group = {
	.attrs = edgeq_queue_attrs,
};

const struct attribute_group *edgeq_queue_groups[] = {
	&edgeq_queue_group,
	NULL,
};
