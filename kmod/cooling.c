// SPDX-License-Identifier: GPL-2.0
/*
 * The thermal cooling device of a queue: state s of EDGEQ_COOLING_STATES
 * lowers the in-flight limit to max(1, max_inflight * (N - s) / N); the top
 * state pauses dispatch.
 */
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

int edgeq_cooling_register(struct edgeq_queue *q)
{
	char type[THERMAL_NAME_LENGTH];
	struct thermal_cooling_device *cdev;

	snprintf(type, sizeof(type), "edgeq-%s", q->name);
	cdev = thermal_cooling_device_register(type, q, &edgeq_cool_ops);
	if (IS_ERR(cdev))
		return PTR_ERR(cdev);
	q->cooling = cdev;
	return 0;
}

void edgeq_cooling_unregister(struct edgeq_queue *q)
{
	if (q->cooling)
		thermal_cooling_device_unregister(q->cooling);
	q->cooling = NULL;
}
