// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pressure monitor's file sources: thermal zones, cooling devices,
 * devfreq and cpufreq in sysfs, MemAvailable, PSI and its triggers, and
 * finding this process's memory cgroup. Roots are overridable so tests can
 * feed a fake tree (EDGEQ_SYSFS_ROOT, EDGEQ_PROC_ROOT).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "core/readfile.h"
#include "internal.h"

int pm_read_s64(const char *path, int64_t *out)
{
	char buf[64], *end;
	long long v;
	int ret;

	ret = eq_read_trimmed(path, buf, sizeof(buf));
	if (ret)
		return ret;
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Entries "<prefix><N>" of @dir, their N sorted ascending. */
static int numbered(const char *dir, const char *prefix, int *ids, int max)
{
	size_t pl = strlen(prefix);
	struct dirent *de;
	int n = 0, i, j;
	DIR *d;

	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		char *end;
		long v;

		if (strncmp(de->d_name, prefix, pl) ||
		    !isdigit((unsigned char)de->d_name[pl]))
			continue;
		v = strtol(de->d_name + pl, &end, 10);
		if (*end || v < 0 || v > 65535)
			continue;
		ids[n++] = (int)v;
	}
	closedir(d);
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
			int t = ids[j];

			ids[j] = ids[j - 1];
			ids[j - 1] = t;
		}
	return n;
}

static void scan_zones(struct edgeq_pressure *p,
		       struct edgeq_pressure_state *st)
{
	int ids[EDGEQ_PRESSURE_MAX_ZONES], n, i, k;
	char dir[300], path[400];

	snprintf(dir, sizeof(dir), "%s/class/thermal", p->sysfs);
	n = numbered(dir, "thermal_zone", ids, EDGEQ_PRESSURE_MAX_ZONES);
	st->n_zones = 0;
	for (i = 0; i < n; i++) {
		struct edgeq_pressure_zone *z = &st->zones[st->n_zones];
		struct pm_zone_sys *zs = &p->zsys[st->n_zones];
		int64_t v;

		memset(z, 0, sizeof(*z));
		z->id = ids[i];
		snprintf(path, sizeof(path), "%s/thermal_zone%d/type", dir,
			 ids[i]);
		if (eq_read_trimmed(path, z->type, sizeof(z->type)))
			continue;
		snprintf(path, sizeof(path), "%s/thermal_zone%d/temp", dir,
			 ids[i]);
		z->temp_mc = pm_read_s64(path, &v) ? EDGEQ_PRESSURE_NONE :
						     (int32_t)v;
		zs->n_trips = 0;
		for (k = 0; k < PM_MAX_TRIPS; k++) {
			snprintf(path, sizeof(path),
				 "%s/thermal_zone%d/trip_point_%d_temp", dir,
				 ids[i], k);
			if (pm_read_s64(path, &v))
				break;
			zs->trip_mc[k] = (int32_t)v;
			snprintf(path, sizeof(path),
				 "%s/thermal_zone%d/trip_point_%d_type", dir,
				 ids[i], k);
			if (eq_read_trimmed(path, zs->trip_type[k],
					    sizeof(zs->trip_type[k])))
				strcpy(zs->trip_type[k], "passive");
			snprintf(path, sizeof(path),
				 "%s/thermal_zone%d/trip_point_%d_hyst", dir,
				 ids[i], k);
			zs->trip_hyst_mc[k] =
				pm_read_s64(path, &v) ? -1 : (int32_t)v;
			zs->n_trips++;
		}
		st->n_zones++;
	}
}

static void scan_cdevs(struct edgeq_pressure *p,
		       struct edgeq_pressure_state *st)
{
	int ids[EDGEQ_PRESSURE_MAX_CDEVS], n, i;
	char dir[300], path[400];

	snprintf(dir, sizeof(dir), "%s/class/thermal", p->sysfs);
	n = numbered(dir, "cooling_device", ids, EDGEQ_PRESSURE_MAX_CDEVS);
	st->n_cdevs = 0;
	for (i = 0; i < n; i++) {
		struct edgeq_pressure_cdev *c = &st->cdevs[st->n_cdevs];
		int64_t cur = 0, max = 0;

		memset(c, 0, sizeof(*c));
		c->id = ids[i];
		snprintf(path, sizeof(path), "%s/cooling_device%d/type", dir,
			 ids[i]);
		if (eq_read_trimmed(path, c->type, sizeof(c->type)))
			continue;
		snprintf(path, sizeof(path), "%s/cooling_device%d/cur_state",
			 dir, ids[i]);
		pm_read_s64(path, &cur);
		snprintf(path, sizeof(path), "%s/cooling_device%d/max_state",
			 dir, ids[i]);
		pm_read_s64(path, &max);
		c->cur_state = cur > 0 ? (uint64_t)cur : 0;
		c->max_state = max > 0 ? (uint64_t)max : 0;
		st->n_cdevs++;
	}
}

/* Read CPU @cpu's cpufreq/<file> as a number; -errno when absent. */
static int read_cpu(const struct edgeq_pressure *p, int cpu, const char *file,
		    int64_t *v)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/%s", p->sysfs,
		 cpu, file);
	return pm_read_s64(path, v);
}

/* The highest entry of a devfreq device's available_frequencies, or 0. */
static uint64_t devfreq_hw_max(const char *dir)
{
	char path[700], buf[1024], *s, *end;
	unsigned long long v, best = 0;

	snprintf(path, sizeof(path), "%s/available_frequencies", dir);
	if (eq_read_trimmed(path, buf, sizeof(buf)))
		return 0;
	for (s = buf; *s; s = end) {
		errno = 0;
		v = strtoull(s, &end, 10);
		if (end == s || errno)
			break;
		if (v > best)
			best = v;
	}
	return best;
}

static void scan_freqs(struct edgeq_pressure *p,
		       struct edgeq_pressure_state *st)
{
	uint64_t cur = 0, max = 0, cap = 0;
	char dir[300], path[600];
	struct dirent *de;
	int i, n = 0;
	DIR *d;

	st->n_freqs = 0;
	/* CPUs: one "cpu" domain; the per-CPU figures stay for derive() */
	for (i = 0; i < PM_MAX_CPUS; i++) {
		int64_t c, m, sm, capa;

		if (read_cpu(p, i, "cpufreq/cpuinfo_max_freq", &m) || m <= 0) {
			p->cpu_max_khz[i] = 0;
			continue;
		}
		if (read_cpu(p, i, "cpufreq/scaling_cur_freq", &c) || c < 0)
			c = 0;
		if (read_cpu(p, i, "cpufreq/scaling_max_freq", &sm) ||
		    sm <= 0 || sm > m)
			sm = m;
		if (read_cpu(p, i, "cpu_capacity", &capa) || capa <= 0)
			capa = 1024;
		p->cpu_cur_khz[i] = (uint32_t)c;
		p->cpu_max_khz[i] = (uint32_t)m;
		p->cpu_cap_khz[i] = (uint32_t)sm;
		p->cpu_capacity[i] = (uint32_t)capa;
		n = i + 1;
	}
	p->n_cpus = n;
	for (i = 0; i < n; i++) {
		cur += p->cpu_cur_khz[i];
		max += p->cpu_max_khz[i];
		cap += p->cpu_max_khz[i] ? p->cpu_cap_khz[i] : 0;
	}
	if (max) {
		struct edgeq_pressure_freq *f = &st->freqs[st->n_freqs++];

		memset(f, 0, sizeof(*f));
		strcpy(f->name, "cpu");
		f->cur = cur;
		f->max = max;
		f->cap = cap;
	}

	snprintf(dir, sizeof(dir), "%s/class/devfreq", p->sysfs);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d)) && st->n_freqs < EDGEQ_PRESSURE_MAX_FREQS) {
		struct edgeq_pressure_freq *f = &st->freqs[st->n_freqs];
		uint64_t hw;
		int64_t c, m;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/cur_freq", dir, de->d_name);
		if (pm_read_s64(path, &c))
			continue;
		snprintf(path, sizeof(path), "%s/%s/max_freq", dir, de->d_name);
		if (pm_read_s64(path, &m) || m < 0)
			m = 0;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		hw = devfreq_hw_max(path);
		memset(f, 0, sizeof(*f));
		snprintf(f->name, sizeof(f->name), "%.31s", de->d_name);
		f->cur = c > 0 ? (uint64_t)c : 0;
		/* max_freq is the ceiling after thermal and QoS caps */
		f->cap = (uint64_t)m;
		f->max = hw > f->cap ? hw : f->cap;
		st->n_freqs++;
	}
	closedir(d);
}

int pm_read_meminfo(const struct edgeq_pressure *p, uint64_t *avail,
		    uint64_t *total)
{
	char path[300], line[256];
	unsigned long long v;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/meminfo", p->proc);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemAvailable: %llu kB", &v) == 1) {
			*avail = v * 1024;
			found |= 1;
		} else if (sscanf(line, "MemTotal: %llu kB", &v) == 1) {
			*total = v * 1024;
			found |= 2;
		}
	}
	fclose(f);
	return found == 3 ? 0 : -ENODATA;
}

int pm_read_psi(const char *path, double *some10, double *full10,
		uint64_t *some_total_us)
{
	char line[256];
	unsigned long long tot;
	double a10;
	int found = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "some avg10=%lf %*s %*s total=%llu", &a10,
			   &tot) == 2) {
			*some10 = a10;
			*some_total_us = tot;
			found |= 1;
		} else if (sscanf(line, "full avg10=%lf", &a10) == 1) {
			*full10 = a10;
			found |= 2;
		}
	}
	fclose(f);
	return found & 1 ? 0 : -ENODATA;
}

/* A PSI trigger: the fd gets POLLPRI when "some" stall >= @stall_us within
 * any @window_us. Returns the fd or -errno. */
int pm_psi_trigger(const char *path, uint32_t stall_us, uint32_t window_us)
{
	struct statfs sfs;
	char buf[64];
	int fd, n;

	fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* only procfs and cgroupfs have triggers; never write into a fake tree */
	if (fstatfs(fd, &sfs) || (sfs.f_type != PROC_SUPER_MAGIC &&
				  sfs.f_type != CGROUP2_SUPER_MAGIC)) {
		close(fd);
		return -EOPNOTSUPP;
	}
	n = snprintf(buf, sizeof(buf), "some %u %u", stall_us, window_us);
	if (write(fd, buf, (size_t)n + 1) < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	return fd;
}

/* Mount point of the hierarchy whose super options include @opt ("memory"),
 * or of cgroup2 when @opt is NULL. */
static int cgroup_mount(const char *opt, char *out, size_t len)
{
	char line[1024], mnt[512], fstype[32], opts[512];
	int ret = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1)
			continue;
		if (sscanf(sep + 3, "%31s %*s %511s", fstype, opts) != 2)
			continue;
		if (opt ? strcmp(fstype, "cgroup") || !strstr(opts, opt) :
			  strcmp(fstype, "cgroup2"))
			continue;
		snprintf(out, len, "%s", mnt);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

/*
 * Find the memory cgroup counted as edgeq's own: opts.cgroup, else this
 * process's (cgroup v1 memory hierarchy, else v2). Its id for BPF is the
 * directory's inode number (the kernfs node id).
 */
int pm_own_cgroup(struct edgeq_pressure *p)
{
	char line[1024], mnt[512], v1[512] = "", v2[512] = "";
	struct stat sb;
	FILE *f;

	p->cg_path[0] = '\0';
	if (p->o.cgroup) {
		snprintf(p->cg_path, sizeof(p->cg_path), "%s", p->o.cgroup);
		snprintf(line, sizeof(line), "%s/cgroup.controllers",
			 p->o.cgroup);
		p->cg_v2 = !access(line, F_OK);
	} else {
		f = fopen("/proc/self/cgroup", "re");
		if (!f)
			return -errno;
		while (fgets(line, sizeof(line), f)) {
			char *ctl = strchr(line, ':'), *path;

			line[strcspn(line, "\n")] = '\0';
			if (!ctl || !(path = strchr(ctl + 1, ':')))
				continue;
			*path++ = '\0';
			ctl++;
			if (!*ctl)
				snprintf(v2, sizeof(v2), "%s", path);
			else if (!strcmp(ctl, "memory") ||
				 strstr(ctl, "memory,") ||
				 strstr(ctl, ",memory"))
				snprintf(v1, sizeof(v1), "%s", path);
		}
		fclose(f);
		if (v1[0] && !cgroup_mount("memory", mnt, sizeof(mnt))) {
			snprintf(p->cg_path, sizeof(p->cg_path), "%s%s", mnt,
				 strcmp(v1, "/") ? v1 : "");
			p->cg_v2 = false;
		} else if (v2[0] && !cgroup_mount(NULL, mnt, sizeof(mnt))) {
			snprintf(p->cg_path, sizeof(p->cg_path), "%s%s", mnt,
				 strcmp(v2, "/") ? v2 : "");
			p->cg_v2 = true;
		}
	}
	if (!p->cg_path[0] || stat(p->cg_path, &sb))
		return -ENOENT;
	p->own_cgid = sb.st_ino;
	return 0;
}

uint32_t pm_temp_level(uint32_t old, int32_t t, int32_t warn, int32_t crit,
		       int32_t hyst)
{
	uint32_t up = t >= crit ? 2 : t >= warn ? 1 : 0;

	if (up >= old)
		return up;
	if (old == 2 && t >= crit - hyst)
		return 2;
	if (t >= warn - hyst)
		return 1;
	return 0;
}

int pm_sysfs_scan(struct edgeq_pressure *p, struct edgeq_pressure_state *st)
{
	scan_zones(p, st);
	scan_cdevs(p, st);
	scan_freqs(p, st);
	return 0;
}
