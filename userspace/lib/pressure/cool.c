// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Cooling states stepped from userspace: for each QUEUE:ZONE_TYPE of
 * opts.cool_bind, every refresh moves /sys/class/edgeq/QUEUE/cooling_state
 * one step the way the kernel's step_wise governor moves a bound cooling
 * device: up while the zone is at or above its lowest passive or active
 * trip, down once it is below that trip less the trip's hysteresis (the
 * monitor's temp_hyst_mc when the zone has none), held in between. This is
 * the path that works on every kernel: 6.12 binds a cooling device to a
 * zone only through the zone's own ops (edgeq.ko's bind= and cooling_zone
 * refuse there) and a Jetson's zones come from its device tree.
 *
 * The state written is the binding's own: whoever else writes the queue's
 * cooling_state (an administrator, a kernel binding to another zone) is
 * overwritten at the binding's next change, so use one binding per queue.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <edgeq/edgeq.h>

#include "internal.h"

int pm_cool_parse(struct edgeq_pressure *p, const char *spec,
		  struct edgeq_error *err)
{
	const char *s = spec, *end, *colon;
	struct pm_cool *c;
	size_t ql, zl;

	p->n_cool = 0;
	while (s && *s) {
		end = strchr(s, ',');
		if (!end)
			end = s + strlen(s);
		colon = memchr(s, ':', (size_t)(end - s));
		ql = colon ? (size_t)(colon - s) : 0;
		zl = colon ? (size_t)(end - colon - 1) : 0;
		if (!colon || !ql || !zl)
			return edgeq_error_set(
				err, EINVAL,
				"cooling binding '%.*s': want QUEUE:ZONE_TYPE",
				(int)(end - s), s);
		if (ql >= sizeof(c->queue) || zl >= sizeof(c->zone) ||
		    memchr(s, '/', (size_t)(end - s)))
			return edgeq_error_set(
				err, EINVAL,
				"cooling binding '%.*s': bad queue or zone name",
				(int)(end - s), s);
		if (p->n_cool == EDGEQ_PRESSURE_MAX_COOL)
			return edgeq_error_set(err, EINVAL,
					       "more than %d cooling bindings",
					       EDGEQ_PRESSURE_MAX_COOL);
		c = &p->cool[p->n_cool++];
		memset(c, 0, sizeof(*c));
		memcpy(c->queue, s, ql);
		memcpy(c->zone, colon + 1, zl);
		s = *end ? end + 1 : end;
	}
	return 0;
}

/* The zone's lowest passive or active trip and its hysteresis. */
static bool lowest_trip(const struct pm_zone_sys *zs, int32_t *trip,
			int32_t *hyst)
{
	bool found = false;
	int k;

	for (k = 0; k < zs->n_trips; k++) {
		if (strcmp(zs->trip_type[k], "passive") &&
		    strcmp(zs->trip_type[k], "active"))
			continue;
		if (!found || zs->trip_mc[k] < *trip) {
			*trip = zs->trip_mc[k];
			*hyst = zs->trip_hyst_mc[k];
			found = true;
		}
	}
	return found;
}

static int write_state(const char *path, uint32_t v)
{
	char buf[16];
	int fd, n, ret = 0;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%u\n", v);
	if (write(fd, buf, (size_t)n) != n)
		ret = errno ? -errno : -EIO;
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

void pm_cool_step(struct edgeq_pressure *p, struct edgeq_pressure_state *n)
{
	char path[400];
	unsigned int b;

	n->n_cool = p->n_cool;
	for (b = 0; b < p->n_cool; b++) {
		struct pm_cool *c = &p->cool[b];
		struct edgeq_pressure_cool *o = &n->cool[b];
		const struct edgeq_pressure_zone *z = NULL;
		const struct pm_zone_sys *zs = NULL;
		int32_t trip = 0, hyst = -1;
		uint32_t next;
		int64_t max;
		uint32_t i;

		memset(o, 0, sizeof(*o));
		snprintf(o->queue, sizeof(o->queue), "%s", c->queue);
		snprintf(o->zone, sizeof(o->zone), "%s", c->zone);
		o->temp_mc = o->trip_mc = o->hyst_mc = EDGEQ_PRESSURE_NONE;
		o->state = c->state;
		for (i = 0; i < n->n_zones && !z; i++)
			if (!strcmp(n->zones[i].type, c->zone)) {
				z = &n->zones[i];
				zs = &p->zsys[i];
			}
		snprintf(path, sizeof(path),
			 "%s/class/edgeq/%s/cooling_max_state", p->sysfs,
			 c->queue);
		if (!z || pm_read_s64(path, &max) || max < 0) {
			o->error = -ENODEV;
			continue;
		}
		o->max_state = (uint32_t)max;
		o->temp_mc = z->temp_mc;
		if (!lowest_trip(zs, &trip, &hyst)) {
			o->error = -ENOENT;
			continue;
		}
		if (hyst < 0)
			hyst = p->o.temp_hyst_mc;
		o->trip_mc = trip;
		o->hyst_mc = hyst;
		next = c->state;
		if (z->temp_mc == EDGEQ_PRESSURE_NONE)
			; /* unreadable: hold */
		else if (z->temp_mc >= trip)
			next = next < o->max_state ? next + 1 : o->max_state;
		else if (z->temp_mc < trip - hyst && next)
			next--;
		if (next == c->state && c->written)
			continue;
		snprintf(path, sizeof(path), "%s/class/edgeq/%s/cooling_state",
			 p->sysfs, c->queue);
		o->error = write_state(path, next);
		if (o->error)
			continue; /* tried again at the next refresh */
		c->state = next;
		c->written = true;
		o->state = next;
	}
}
