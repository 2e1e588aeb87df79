// SPDX-License-Identifier: GPL-2.0
/*
 * A queue's cooling device bound to a thermal zone that is not its own,
 * found by type (a Jetson's gpu-thermal or cv0-thermal), so that the zone's
 * governor throttles the queue with the zone's own trips and hysteresis:
 * the bind=QUEUE:TYPE[,QUEUE:TYPE] parameter at load, or the queue's
 * cooling_zone attribute at any time (an empty write unbinds).
 *
 * Up to 6.11 this is thermal_zone_bind_cooling_device() on every trip of
 * the zone. 6.12 binds only through the zone's own ops (should_bind), so
 * there it is refused with -EOPNOTSUPP: such kernels bind through a
 * device-tree cooling-map naming the queue's node, or through the pressure
 * monitor, which steps cooling_state from userspace
 * (Documentation/userspace-api/edgeq.rst).
 *
 * Bindings change under edgeq_bind_lock, never under edgeq_mutex: a
 * queue's teardown holds edgeq_mutex while it waits for its sysfs writers.
 * A zone owned by a queue (its simulated sensor) loses its bound cooling
 * devices before it goes (edgeq_bind_queue_gone()); a zone of another
 * driver must outlive the binding (unbind first when unloading it).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/err.h>
#include <linux/mutex.h>
#include <linux/string.h>
#include <linux/thermal.h>

#include "compat.h"
#include "edgeq_drv.h"

static DEFINE_MUTEX(edgeq_bind_lock);

#ifndef EDGEQ_TZ_SHOULD_BIND
static void edgeq_unbind_locked(struct edgeq_queue *q)
{
	int i;

	lockdep_assert_held(&edgeq_bind_lock);
	if (!q->bind_tz)
		return;
	for (i = 0; i < q->bind_trips; i++)
		thermal_zone_unbind_cooling_device(q->bind_tz, i, q->cooling);
	thermal_zone_device_update(q->bind_tz, THERMAL_EVENT_UNSPECIFIED);
	q->bind_tz = NULL;
	q->bind_trips = 0;
	q->bind_zone[0] = '\0';
}

static int edgeq_bind_locked(struct edgeq_queue *q, const char *type)
{
	struct thermal_zone_device *tz;
	int i, ret;

	lockdep_assert_held(&edgeq_bind_lock);
	if (q->bind_closed)
		return -ENODEV;
	edgeq_unbind_locked(q);
	if (!*type)
		return 0;
	tz = thermal_zone_get_zone_by_name(type);
	if (IS_ERR(tz)) {
		ret = PTR_ERR(tz);
		pr_warn("queue %s: cooling_zone %s: %s\n", q->name, type,
			ret == -EEXIST ? "more than one zone of that type" :
					 "no thermal zone of that type");
		return ret;
	}
	/* every trip, until the index runs past the zone's last */
	for (i = 0;; i++) {
		ret = thermal_zone_bind_cooling_device(tz, i, q->cooling,
						       THERMAL_NO_LIMIT,
						       THERMAL_NO_LIMIT,
						       THERMAL_WEIGHT_DEFAULT);
		if (ret)
			break;
	}
	if (ret == -EINVAL && i > 0) {
		q->bind_tz = tz;
		q->bind_trips = i;
		strscpy(q->bind_zone, type, sizeof(q->bind_zone));
		thermal_zone_device_update(tz, THERMAL_EVENT_UNSPECIFIED);
		return 0;
	}
	while (i--)
		thermal_zone_unbind_cooling_device(tz, i, q->cooling);
	if (ret == -EEXIST)
		pr_warn("queue %s: cooling_zone %s: already bound to it\n",
			q->name, type);
	else if (!i && ret == -EINVAL)
		pr_warn("queue %s: cooling_zone %s: the zone has no trips\n",
			q->name, type);
	else
		pr_warn("queue %s: cooling_zone %s: binding failed (%d)\n",
			q->name, type, ret);
	return ret == -EINVAL ? -ENOENT : ret;
}
#else
static void edgeq_unbind_locked(struct edgeq_queue *q)
{
}

static int edgeq_bind_locked(struct edgeq_queue *q, const char *type)
{
	if (q->bind_closed)
		return -ENODEV;
	if (!*type)
		return 0;
	pr_warn("queue %s: cooling_zone %s: this kernel binds cooling devices only through the zone's own ops; use a device-tree cooling-map or the pressure monitor's binding\n",
		q->name, type);
	return -EOPNOTSUPP;
}
#endif

int edgeq_bind(struct edgeq_queue *q, const char *type)
{
	int ret;

	if (strlen(type) >= sizeof(q->bind_zone))
		return -ENAMETOOLONG;
	mutex_lock(&edgeq_bind_lock);
	ret = edgeq_bind_locked(q, type);
	mutex_unlock(&edgeq_bind_lock);
	return ret;
}

ssize_t edgeq_bind_show(struct edgeq_queue *q, char *buf)
{
	ssize_t n;

	mutex_lock(&edgeq_bind_lock);
	n = sysfs_emit(buf, "%s\n", q->bind_zone);
	mutex_unlock(&edgeq_bind_lock);
	return n;
}

/*
 * @q goes: its own binding is undone, and so is every queue's (of @all,
 * @n entries, edgeq_mutex held) bound to @q's zone, which is unregistered
 * here, so that no binding to it can be made in between.
 */
void edgeq_bind_queue_gone(struct edgeq_queue *q, struct edgeq_queue **all,
			   int n)
{
	struct thermal_zone_device *own;
	int i;

	mutex_lock(&edgeq_bind_lock);
	q->bind_closed = true;
	edgeq_unbind_locked(q);
	own = edgeq_sensor_zone(q);
	for (i = 0; own && i < n; i++)
		if (all[i] && all[i] != q && all[i]->bind_tz == own)
			edgeq_unbind_locked(all[i]);
	edgeq_sensor_unregister(q);
	mutex_unlock(&edgeq_bind_lock);
}
