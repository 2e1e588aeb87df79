// SPDX-License-Identifier: LGPL-2.1-or-later
/* The set of devices a plan may use, their state and capacity. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <edgeq/placement.h>

void edgeq_device_state_init(struct edgeq_device_state *s)
{
	memset(s, 0, sizeof(*s));
	s->agent_alive = true;
	s->inflight_limit = UINT32_MAX;
	s->freq_ratio = 1.0;
}

double edgeq_device_capacity(const struct edgeq_device_state *s)
{
	double cap = 1.0;

	if (!s->agent_alive || s->inflight_limit == 0)
		return 0.0;
	if (s->cooling_max) {
		uint32_t cs = s->cooling_state < s->cooling_max ?
				      s->cooling_state :
				      s->cooling_max;

		cap = 1.0 - (double)cs / s->cooling_max;
	}
	if (s->freq_ratio > 0 && s->freq_ratio < cap)
		cap = s->freq_ratio;
	return cap < 0 ? 0 : cap;
}

void edgeq_devices_init(struct edgeq_devices *d,
			const struct edgeq_device_profile *cpu)
{
	memset(d, 0, sizeof(*d));
	d->n = 1;
	snprintf(d->dev[0].name, sizeof(d->dev[0].name), "cpu");
	d->dev[0].prof = *cpu;
	edgeq_device_state_init(&d->dev[0].state);
}

int edgeq_devices_find(const struct edgeq_devices *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->dev[i].name, name))
			return (int)i;
	return -ENOENT;
}

int edgeq_devices_add(struct edgeq_devices *d, const char *name,
		      const struct edgeq_device_profile *prof)
{
	struct edgeq_device *dev;

	if (!*name || strlen(name) >= EDGEQ_DEV_NAME_MAX)
		return -EINVAL;
	if (edgeq_devices_find(d, name) >= 0)
		return -EEXIST;
	if (d->n == EDGEQ_MAX_DEVICES)
		return -ENOSPC;
	dev = &d->dev[d->n];
	memset(dev, 0, sizeof(*dev));
	snprintf(dev->name, sizeof(dev->name), "%s", name);
	dev->prof = *prof;
	edgeq_device_state_init(&dev->state);
	return (int)d->n++;
}

/* Read a small unsigned attribute; -errno when absent or not a number. */
static int read_u64(const char *dir, const char *name, const char *attr,
		    uint64_t *out)
{
	char path[512], buf[64], *end;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, name, attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -EIO;
	buf[len] = '\0';
	errno = 0;
	*out = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	return 0;
}

/*
 * A queue's state from /sys/class/edgeq/<name>/: agent_pid (0: no agent),
 * effective_inflight (the limit the cooling state leaves; else max_inflight),
 * cooling_state, cooling_max_state and timeout_ms. Attributes the module
 * lacks keep the full-capacity defaults.
 */
int edgeq_device_read_state(const char *sysfs_dir, const char *name,
			    struct edgeq_device_state *s)
{
	char path[512];
	uint64_t v;

	snprintf(path, sizeof(path), "%s/%s", sysfs_dir, name);
	if (access(path, F_OK))
		return -ENOENT;
	edgeq_device_state_init(s);
	if (!read_u64(sysfs_dir, name, "agent_pid", &v))
		s->agent_alive = v != 0;
	if (!read_u64(sysfs_dir, name, "effective_inflight", &v) ||
	    !read_u64(sysfs_dir, name, "max_inflight", &v))
		s->inflight_limit = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
	if (!read_u64(sysfs_dir, name, "cooling_state", &v))
		s->cooling_state = (uint32_t)v;
	if (!read_u64(sysfs_dir, name, "cooling_max_state", &v))
		s->cooling_max = (uint32_t)v;
	if (!read_u64(sysfs_dir, name, "timeout_ms", &v))
		s->timeout_ms = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
	return 0;
}

/* "npu0=dla,gpu1=gpu": the profile for @name, else NULL. */
static const char *map_lookup(const char *map, const char *name, char *buf,
			      size_t len)
{
	size_t nl = strlen(name);
	const char *p = map;

	while (p && *p) {
		const char *eq = strchr(p, '='), *end = strchr(p, ',');

		if (!end)
			end = p + strlen(p);
		if (eq && eq < end && (size_t)(eq - p) == nl &&
		    !strncmp(p, name, nl)) {
			size_t vl = (size_t)(end - eq - 1);

			if (vl >= len)
				return NULL;
			memcpy(buf, eq + 1, vl);
			buf[vl] = '\0';
			return buf;
		}
		p = *end ? end + 1 : end;
	}
	return NULL;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int edgeq_devices_discover(struct edgeq_devices *d, const char *sysfs_dir,
			   const struct edgeq_device_profile *profs,
			   size_t n_profs, const char *map,
			   struct edgeq_error *err)
{
	char *names[EDGEQ_MAX_DEVICES * 4];
	size_t n_names = 0, i;
	struct dirent *de;
	int added = 0, ret = 0;
	DIR *dir;

	dir = opendir(sysfs_dir);
	if (!dir)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(dir)) &&
	       n_names < sizeof(names) / sizeof(*names)) {
		if (de->d_name[0] == '.' ||
		    strlen(de->d_name) >= EDGEQ_DEV_NAME_MAX)
			continue;
		names[n_names] = strdup(de->d_name);
		if (!names[n_names]) {
			ret = -ENOMEM;
			break;
		}
		n_names++;
	}
	closedir(dir);
	qsort(names, n_names, sizeof(*names), cmp_names);
	for (i = 0; i < n_names && !ret; i++) {
		const struct edgeq_device_profile *prof;
		char pname[EDGEQ_DEV_NAME_MAX], *e;
		const char *want;
		int idx;

		want = map_lookup(map, names[i], pname, sizeof(pname));
		if (!want) {
			snprintf(pname, sizeof(pname), "%s", names[i]);
			for (e = pname + strlen(pname);
			     e > pname && isdigit((unsigned char)e[-1]); e--)
				;
			*e = '\0';
			want = pname;
		}
		prof = edgeq_devprof_find(profs, n_profs, want);
		if (!prof) {
			ret = edgeq_error_set(
				err, ENOENT,
				"queue %s: no device profile '%s' "
				"(add [device.%s] to devices.ini "
				"or map it: --device-map %s=npu)",
				names[i], want, want, names[i]);
			break;
		}
		idx = edgeq_devices_add(d, names[i], prof);
		if (idx == -EEXIST)
			continue;
		if (idx < 0) {
			ret = edgeq_error_set(err, -idx, "queue %s: %s",
					      names[i], strerror(-idx));
			break;
		}
		edgeq_device_read_state(sysfs_dir, names[i],
					&d->dev[idx].state);
		added++;
	}
	for (i = 0; i < n_names; i++)
		free(names[i]);
	return ret ? ret : added;
}
