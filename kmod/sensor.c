// SPDX-License-Identifier: GPL-2.0
/*
 * The simulated sensor (module parameter sim_sensor=1): a thermal zone per
 * queue whose temperature follows a first-order model of the queue's
 * utilisation u (busy ns per wall ns since the last reading, at most 1):
 *
 *	T_target = ambient + rise * u
 *	T += (T_target - T) * dt / (tau + dt)
 *
 * Two passive trips (trip, trip + 10 C, hysteresis 2 C) are bound to the
 * queue's cooling device under the step_wise governor, so the kernel's own
 * governor throttles a busy queue. Parameters: sysfs sim_* attributes.
 *
 * Where the device tree has a node for the queue's sensor (compatible
 * "edgeq,sim-sensor", edgeq,queue = the queue's name, #thermal-sensor-cells
 * = <0>) and the kernel registers such zones (6.1+), the sensor is that
 * node's: the zone, its trips and its cooling-maps are the tree's, as a
 * SoC sensor's are on a Jetson. It exists to test the cooling device's
 * device-tree binding (tests/cross/edgeq-dt.dtsi); sim_trip_mC does not
 * move the tree's trips.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/of.h>
#include <linux/slab.h>
#include <linux/thermal.h>

#include "compat.h"
#include "edgeq_drv.h"

#define EDGEQ_SIM_TRIPS 2
#define EDGEQ_SIM_HYST_MC 2000
#define EDGEQ_SIM_PASSIVE_MS 100
#define EDGEQ_SIM_POLL_MS 250

struct edgeq_sensor {
	struct thermal_zone_device *tz;
	struct edgeq_thermal_trip trips[EDGEQ_SIM_TRIPS];
	struct thermal_zone_params tzp;
	s64 temp_mc; /* model state, under q->lock */
	u64 last_ns, last_busy;
	bool of; /* the device tree's zone */
};

/* Advances the model to now; q->lock held. */
static int edgeq_sensor_step(struct edgeq_queue *q)
{
	struct edgeq_sensor *s = q->sensor;
	u64 now = ktime_get_ns(), dt = now - s->last_ns;
	u64 busy = q->busy_ns - s->last_busy;
	s64 target, dt_ms = div_u64(dt, NSEC_PER_MSEC);
	u64 util; /* per mille */

	if (!dt_ms)
		return s->temp_mc;
	util = min_t(u64, 1000, div64_u64(busy * 1000, dt));
	target = q->sim_ambient_mc + div_s64((s64)q->sim_rise_mc * util, 1000);
	s->temp_mc +=
		div64_s64((target - s->temp_mc) * dt_ms, q->sim_tau_ms + dt_ms);
	s->last_ns = now;
	s->last_busy = q->busy_ns;
	return s->temp_mc;
}

#ifdef EDGEQ_TZ_SET_TRIP_TEMP
struct edgeq_trip_move {
	struct thermal_zone_device *tz;
	int temp, i;
};

static int edgeq_trip_move(struct thermal_trip *trip, void *data)
{
	struct edgeq_trip_move *m = data;

	thermal_zone_set_trip_temp(m->tz, trip, m->temp + m->i++ * 10000);
	return 0;
}
#endif

/*
 * Moves the zone's trips to sim_trip_mC and sim_trip_mC + 10 C. Sleeps (the
 * zone's lock); q->sensor_mutex keeps the sensor meanwhile.
 */
void edgeq_sensor_set_trips(struct edgeq_queue *q)
{
	struct edgeq_sensor *s;
	int temp = READ_ONCE(q->sim_trip_mc);

	mutex_lock(&q->sensor_mutex);
	s = q->sensor;
	if (s && s->tz && !s->of) {
#ifdef EDGEQ_TZ_SET_TRIP_TEMP
		struct edgeq_trip_move m = { .tz = s->tz, .temp = temp };

		thermal_zone_for_each_trip(s->tz, edgeq_trip_move, &m);
#else
		int i;

		mutex_lock(&s->tz->lock);
		for (i = 0; i < EDGEQ_SIM_TRIPS; i++)
			s->trips[i].temperature = temp + i * 10000;
		mutex_unlock(&s->tz->lock);
		thermal_zone_device_update(s->tz, THERMAL_TRIP_CHANGED);
#endif
	}
	mutex_unlock(&q->sensor_mutex);
}

int edgeq_sensor_temp(struct edgeq_queue *q)
{
	int t = 0;

	spin_lock(&q->lock);
	if (q->sensor)
		t = edgeq_sensor_step(q);
	spin_unlock(&q->lock);
	return t;
}

static int edgeq_tz_get_temp(struct thermal_zone_device *tz, int *temp)
{
	*temp = edgeq_sensor_temp(edgeq_tz_priv(tz));
	return 0;
}

#ifdef EDGEQ_TZ_TRIP_OPS
static int edgeq_tz_trip_type(struct thermal_zone_device *tz, int trip,
			      enum thermal_trip_type *type)
{
	*type = THERMAL_TRIP_PASSIVE;
	return 0;
}

static int edgeq_tz_trip_temp(struct thermal_zone_device *tz, int trip,
			      int *temp)
{
	struct edgeq_queue *q = edgeq_tz_priv(tz);

	if (trip < 0 || trip >= EDGEQ_SIM_TRIPS)
		return -EINVAL;
	*temp = q->sensor->trips[trip].temperature;
	return 0;
}

static int edgeq_tz_trip_hyst(struct thermal_zone_device *tz, int trip,
			      int *hyst)
{
	*hyst = EDGEQ_SIM_HYST_MC;
	return 0;
}
#endif

#ifdef EDGEQ_TZ_SHOULD_BIND
static bool edgeq_tz_should_bind(struct thermal_zone_device *tz,
				 const struct thermal_trip *trip,
				 struct thermal_cooling_device *cdev,
				 struct cooling_spec *c)
{
	struct edgeq_queue *q = thermal_zone_device_priv(tz);

	return cdev == q->cooling;
}
#else
static int edgeq_tz_bind(struct thermal_zone_device *tz,
			 struct thermal_cooling_device *cdev)
{
	struct edgeq_queue *q = edgeq_tz_priv(tz);
	int i, ret;

	if (cdev != q->cooling)
		return 0;
	for (i = 0; i < EDGEQ_SIM_TRIPS; i++) {
		ret = thermal_zone_bind_cooling_device(tz, i, cdev,
						       THERMAL_NO_LIMIT,
						       THERMAL_NO_LIMIT,
						       THERMAL_WEIGHT_DEFAULT);
		if (ret)
			return ret;
	}
	return 0;
}

static int edgeq_tz_unbind(struct thermal_zone_device *tz,
			   struct thermal_cooling_device *cdev)
{
	struct edgeq_queue *q = edgeq_tz_priv(tz);
	int i;

	if (cdev != q->cooling)
		return 0;
	for (i = 0; i < EDGEQ_SIM_TRIPS; i++)
		thermal_zone_unbind_cooling_device(tz, i, cdev);
	return 0;
}
#endif

static struct thermal_zone_device_ops edgeq_tz_ops = {
	.get_temp = edgeq_tz_get_temp,
#ifdef EDGEQ_TZ_TRIP_OPS
	.get_trip_type = edgeq_tz_trip_type,
	.get_trip_temp = edgeq_tz_trip_temp,
	.get_trip_hyst = edgeq_tz_trip_hyst,
#endif
#ifdef EDGEQ_TZ_SHOULD_BIND
	.should_bind = edgeq_tz_should_bind,
#else
	.bind = edgeq_tz_bind,
	.unbind = edgeq_tz_unbind,
#endif
};

#ifdef EDGEQ_TZ_OF
static const struct thermal_zone_device_ops edgeq_tz_of_ops = {
	.get_temp = edgeq_tz_get_temp,
};

/*
 * The tree's zone of @q's sensor node, NULL without one, or an error. The
 * devm form (the one every kernel from 6.1 to 6.12 exports) reads the
 * sensor's node from the device: the queue's device carries it for the
 * call; the zone is unregistered explicitly, before the device goes.
 */
static struct thermal_zone_device *edgeq_sensor_of_zone(struct edgeq_queue *q)
{
	struct device_node *np = edgeq_queue_node("edgeq,sim-sensor", q->name);
	struct thermal_zone_device *tz;

	if (!np)
		return NULL;
	/* registers and enables it; it keeps no reference to the node */
	q->dev.of_node = np;
	tz = devm_thermal_of_zone_register(&q->dev, 0, q, &edgeq_tz_of_ops);
	q->dev.of_node = NULL;
	if (!IS_ERR(tz))
		pr_info("queue %s: sensor of the device tree's zone (%pOF)\n",
			q->name, np);
	of_node_put(np);
	return tz;
}
#else
static struct thermal_zone_device *edgeq_sensor_of_zone(struct edgeq_queue *q)
{
	return NULL;
}
#endif

int edgeq_sensor_register(struct edgeq_queue *q)
{
	char type[THERMAL_NAME_LENGTH];
	struct thermal_zone_device *tz;
	struct edgeq_sensor *s;
	int i, ret;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	for (i = 0; i < EDGEQ_SIM_TRIPS; i++) {
		s->trips[i].temperature = q->sim_trip_mc + i * 10000;
		s->trips[i].hysteresis = EDGEQ_SIM_HYST_MC;
		s->trips[i].type = THERMAL_TRIP_PASSIVE;
	}
	edgeq_tzp_set_governor(&s->tzp, "step_wise");
	s->tzp.no_hwmon = true;
	s->temp_mc = q->sim_ambient_mc;
	s->last_ns = ktime_get_ns();
	s->last_busy = q->busy_ns;
	spin_lock(&q->lock);
	q->sensor = s;
	spin_unlock(&q->lock);

	tz = edgeq_sensor_of_zone(q);
	if (IS_ERR(tz)) {
		ret = PTR_ERR(tz);
		pr_err("queue %s: the device tree's sensor zone: %d\n", q->name,
		       ret);
		goto out_free;
	}
	if (tz) {
		s->of = true;
		goto done;
	}
	snprintf(type, sizeof(type), "edgeq-%s", q->name);
	tz = edgeq_tz_register(type, s->trips, EDGEQ_SIM_TRIPS, q,
			       &edgeq_tz_ops, &s->tzp, EDGEQ_SIM_PASSIVE_MS,
			       EDGEQ_SIM_POLL_MS);
	if (IS_ERR(tz)) {
		ret = PTR_ERR(tz);
		goto out_free;
	}
	ret = thermal_zone_device_enable(tz);
	if (ret) {
		thermal_zone_device_unregister(tz);
		goto out_free;
	}
done:
	mutex_lock(&q->sensor_mutex);
	s->tz = tz;
	mutex_unlock(&q->sensor_mutex);
	return 0;

out_free:
	spin_lock(&q->lock);
	q->sensor = NULL;
	spin_unlock(&q->lock);
	kfree(s);
	return ret;
}

/* The zone of @q's simulated sensor, or NULL. */
struct thermal_zone_device *edgeq_sensor_zone(struct edgeq_queue *q)
{
	struct thermal_zone_device *tz = NULL;

	mutex_lock(&q->sensor_mutex);
	if (q->sensor)
		tz = q->sensor->tz;
	mutex_unlock(&q->sensor_mutex);
	return tz;
}

void edgeq_sensor_unregister(struct edgeq_queue *q)
{
	struct edgeq_sensor *s = q->sensor;
	struct thermal_zone_device *tz;

	if (!s)
		return;
	/* The zone goes first: its ops read q->sensor until then. */
	mutex_lock(&q->sensor_mutex);
	tz = s->tz;
	s->tz = NULL;
	mutex_unlock(&q->sensor_mutex);
#ifdef EDGEQ_TZ_OF
	if (s->of)
		devm_thermal_of_zone_unregister(&q->dev, tz);
	else
#endif
		thermal_zone_device_unregister(tz);
	mutex_lock(&q->sensor_mutex);
	spin_lock(&q->lock);
	q->sensor = NULL;
	spin_unlock(&q->lock);
	mutex_unlock(&q->sensor_mutex);
	kfree(s);
}
