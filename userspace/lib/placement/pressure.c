// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Device state for placement from the pressure monitor (cooling states,
 * throttle factors) and the module's sysfs (agent, in-flight limit).
 *
 * A queue "npu0" is cooled by the module's cooling device "edgeq-npu0"; its
 * throttle factor is that of the monitor's device of the same name or of its
 * profile ("npu"). The CPU's comes from the monitor's "cpu" device (CPU
 * frequency against its maximum, processor cooling).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <edgeq/placement.h>
#include <edgeq/pressure.h>

static const struct edgeq_pressure_device *
pdev_find(const struct edgeq_pressure_state *ps, const char *name)
{
	for (uint32_t i = 0;
	     i < ps->n_devices && i < EDGEQ_PRESSURE_MAX_DEVICES; i++)
		if (!strcmp(ps->devices[i].name, name))
			return &ps->devices[i];
	return NULL;
}

void edgeq_placement_states(const struct edgeq_devices *d,
			    const struct edgeq_pressure_state *ps,
			    const char *sysfs_dir,
			    struct edgeq_device_state *out)
{
	for (size_t k = 0; k < d->n; k++) {
		const struct edgeq_device *dv = &d->dev[k];
		const struct edgeq_pressure_device *pd;
		struct edgeq_device_state *s = &out[k];
		char cdev[EDGEQ_DEV_NAME_MAX + 8];

		edgeq_device_state_init(s);
		if (k > 0 && sysfs_dir &&
		    edgeq_device_read_state(sysfs_dir, dv->name, s) == -ENOENT)
			s->agent_alive = false; /* the queue is gone */
		if (!ps)
			continue;
		snprintf(cdev, sizeof(cdev), "edgeq-%s", dv->name);
		for (uint32_t i = 0;
		     i < ps->n_cdevs && i < EDGEQ_PRESSURE_MAX_CDEVS; i++) {
			if (strcmp(ps->cdevs[i].type, cdev))
				continue;
			s->cooling_state = (uint32_t)ps->cdevs[i].cur_state;
			s->cooling_max = (uint32_t)ps->cdevs[i].max_state;
		}
		pd = pdev_find(ps, dv->name);
		if (!pd)
			pd = pdev_find(ps, dv->prof.name);
		if (pd) {
			if (pd->throttle > 0 && pd->throttle < 1)
				s->freq_ratio = pd->throttle;
			if (pd->temp_mc != EDGEQ_PRESSURE_NONE)
				s->temp_c = pd->temp_mc / 1000.0;
		}
	}
}

int edgeq_placer_update_pressure(struct edgeq_placer *p,
				 const struct edgeq_pressure_state *ps,
				 const char *sysfs_dir)
{
	const struct edgeq_devices *d = edgeq_placer_devices(p);
	struct edgeq_device_state st[EDGEQ_MAX_DEVICES];
	int changed = 0;

	edgeq_placement_states(d, ps, sysfs_dir, st);
	for (size_t k = 0; k < d->n; k++) {
		const struct edgeq_device_state *cur = &d->dev[k].state;

		if (cur->agent_alive == st[k].agent_alive &&
		    cur->inflight_limit == st[k].inflight_limit &&
		    cur->cooling_state == st[k].cooling_state &&
		    cur->cooling_max == st[k].cooling_max &&
		    cur->freq_ratio == st[k].freq_ratio)
			continue;
		edgeq_placer_set_state(p, (int)k, &st[k]);
		changed++;
	}
	return changed;
}
