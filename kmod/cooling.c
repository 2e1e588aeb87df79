// SPDX-License-Identifier: GPL-2.0
/*
 * The thermal cooling device of a queue: state s of EDGEQ_COOLING_STATES
 * lowers the in-flight limit to max(1, max_inflight * (N - s) / N); the top
 * state pauses dispatch.
 *
 * The device is registered with the device-tree node that names the queue,
 * if there is one (compatible "edgeq,queue", property edgeq,queue = the
 * queue's name, #cooling-cells = <2>), so that a zone's cooling-maps can
 * reference it: the only way a zone binds it on kernels whose zones bind
 * through their own ops alone (6.12; see bind.c). Without a node it is
 * registered as before.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/of.h>
#include <linux/thermal.h>

#include "compat.h"
#include "edgeq_drv.h"
#include "edgeq_trace.h"

int edgeq_set_cool_state(struct edgeq_queue *q, unsigned long state)
{
	u32 old, limit;

	if (state > EDGEQ_COOLING_STATES)
		return -EINVAL;
	spin_lock(&q->lock);
	old = q->cool_state;
	q->cool_state = state;
	limit = edgeq_limit(q);
	if (old != state)
		trace_edgeq_throttle(q->id, old, state, limit);
	spin_unlock(&q->lock);
	wake_up_interruptible(&q->agent_wq);
	return 0;
}

static int edgeq_cool_get_max(struct thermal_cooling_device *cdev,
			      unsigned long *state)
{
	*state = EDGEQ_COOLING_STATES;
	return 0;
}

static int edgeq_cool_get_cur(struct thermal_cooling_device *cdev,
			      unsigned long *state)
{
	struct edgeq_queue *q = cdev->devdata;

	*state = READ_ONCE(q->cool_state);
	return 0;
}

static int edgeq_cool_set_cur(struct thermal_cooling_device *cdev,
			      unsigned long state)
{
	return edgeq_set_cool_state(cdev->devdata, state);
}

static const struct thermal_cooling_device_ops edgeq_cool_ops = {
	.get_max_state = edgeq_cool_get_max,
	.get_cur_state = edgeq_cool_get_cur,
	.set_cur_state = edgeq_cool_set_cur,
};

/*
 * The device-tree node compatible with @compatible whose edgeq,queue is
 * @name (a reference), or NULL: the queue's own ("edgeq,queue") or its
 * simulated sensor's ("edgeq,sim-sensor", sensor.c).
 */
struct device_node *edgeq_queue_node(const char *compatible, const char *name)
{
	struct device_node *np;
	const char *s;

	for_each_compatible_node(np, NULL, compatible)
		if (!of_property_read_string(np, "edgeq,queue", &s) &&
		    !strcmp(s, name))
			return np; /* the loop's reference is ours */
	return NULL;
}

int edgeq_cooling_register(struct edgeq_queue *q)
{
	char type[THERMAL_NAME_LENGTH];
	struct thermal_cooling_device *cdev;
	struct device_node *np = edgeq_queue_node("edgeq,queue", q->name);

	snprintf(type, sizeof(type), "edgeq-%s", q->name);
	cdev = thermal_of_cooling_device_register(np, type, q, &edgeq_cool_ops);
	if (IS_ERR(cdev)) {
		of_node_put(np);
		return PTR_ERR(cdev);
	}
	q->cooling = cdev;
	q->cooling_np = np;
	if (np)
		pr_info("queue %s: cooling device on %pOF\n", q->name, np);
	return 0;
}

void edgeq_cooling_unregister(struct edgeq_queue *q)
{
	if (q->cooling)
		thermal_cooling_device_unregister(q->cooling);
	q->cooling = NULL;
	of_node_put(q->cooling_np);
	q->cooling_np = NULL;
}
