// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Power rails from hwmon and powercap, sampled and integrated into joules
 * (include/edgeq/power.h). hwmon readings are instantaneous power: energy is
 * the trapezoidal integral over the samples. powercap's energy_uj is an
 * energy counter: energy is its delta, wrap-around included.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <edgeq/power.h>

#include "core/readfile.h"

enum rail_kind { R_POWER, R_VI, R_ENERGY };

struct rail {
	enum rail_kind kind;
	char a[800], b[800]; /* power | in + curr | energy_uj */
	uint64_t range_uj;   /* energy counter wraps here (0: 2^64) */
	uint64_t last_uj;
	double last_w;
	bool have_last;
};

struct edgeq_power {
	char sysfs[256];
	char why[200];
	pthread_mutex_t lock;
	unsigned int n;
	struct edgeq_power_rail pub[EDGEQ_POWER_MAX_RAILS];
	struct rail r[EDGEQ_POWER_MAX_RAILS];
	uint64_t t0_ns, last_ns, samples;
	double total_w;
	/* the sampler */
	pthread_t thr;
	bool running;
	unsigned int period_ms;
	int stop_fd[2];
};

static int read_u64(const char *path, uint64_t *v)
{
	char buf[64], *end;
	unsigned long long x;
	int ret = eq_read_trimmed(path, buf, sizeof(buf));

	if (ret)
		return ret;
	errno = 0;
	x = strtoull(buf, &end, 10);
	if (errno || end == buf || buf[0] == '-')
		return -EINVAL;
	*v = x;
	return 0;
}

static struct edgeq_power_rail *add(struct edgeq_power *p, enum rail_kind k,
				    const char *source, const char *chip,
				    const char *name)
{
	struct edgeq_power_rail *o;

	if (p->n >= EDGEQ_POWER_MAX_RAILS)
		return NULL;
	o = &p->pub[p->n];
	memset(o, 0, sizeof(*o));
	memset(&p->r[p->n], 0, sizeof(p->r[p->n]));
	p->r[p->n].kind = k;
	snprintf(o->source, sizeof(o->source), "%s", source);
	snprintf(o->chip, sizeof(o->chip), "%s", chip);
	snprintf(o->name, sizeof(o->name), "%s", name);
	return o;
}

/* hwmon<N>/ (or its device/, where older drivers put the attributes) */
static void scan_hwmon_dir(struct edgeq_power *p, const char *dir,
			   const char *chip, bool *seen)
{
	char path[800], label[64], name[64];
	uint64_t v;
	int k;

	for (k = 0; k <= 16; k++) {
		enum rail_kind kind;
		char a[800], b[800] = "";

		snprintf(a, sizeof(a), "%s/power%d_input", dir, k);
		if (!access(a, F_OK)) {
			kind = R_POWER;
			snprintf(path, sizeof(path), "%s/power%d_label", dir,
				 k);
		} else {
			snprintf(a, sizeof(a), "%s/in%d_input", dir, k);
			snprintf(b, sizeof(b), "%s/curr%d_input", dir, k);
			if (access(a, F_OK) || access(b, F_OK))
				continue;
			kind = R_VI;
			snprintf(path, sizeof(path), "%s/in%d_label", dir, k);
			if (access(path, F_OK))
				snprintf(path, sizeof(path), "%s/curr%d_label",
					 dir, k);
		}
		*seen = true;
		if (eq_read_trimmed(path, label, sizeof(label)))
			snprintf(label, sizeof(label), "%s/%d", chip, k);
		if (!strcmp(label, "NC"))
			continue; /* INA3221 channel not connected */
		/* readable now, or it is no rail */
		if (read_u64(a, &v) || (b[0] && read_u64(b, &v)))
			continue;
		snprintf(name, sizeof(name), "%s", label);
		if (!add(p, kind, "hwmon", chip, name))
			return;
		snprintf(p->r[p->n].a, sizeof(p->r[p->n].a), "%s", a);
		snprintf(p->r[p->n].b, sizeof(p->r[p->n].b), "%s", b);
		p->n++;
	}
}

static void scan_hwmon(struct edgeq_power *p, bool *seen)
{
	char dir[300], sub[600], chip[64], path[700];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/class/hwmon", p->sysfs);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "hwmon", 5))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		snprintf(path, sizeof(path), "%s/name", sub);
		if (eq_read_trimmed(path, chip, sizeof(chip)))
			snprintf(chip, sizeof(chip), "%.63s", de->d_name);
		scan_hwmon_dir(p, sub, chip, seen);
		snprintf(path, sizeof(path), "%s/device", sub);
		scan_hwmon_dir(p, path, chip, seen);
	}
	closedir(d);
}

/* Top-level powercap zones: "<type>:<N>" (intel-rapl:0), not their
 * subzones "<type>:<N>:<M>", which the parent already counts. */
static void scan_powercap(struct edgeq_power *p, bool *seen, bool *denied)
{
	char dir[300], path[800], name[64];
	struct dirent *de;
	uint64_t v;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/class/powercap", p->sysfs);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		const char *c = strchr(de->d_name, ':');
		struct edgeq_power_rail *o;
		int ret;

		if (!c || strchr(c + 1, ':'))
			continue;
		snprintf(path, sizeof(path), "%s/%s/energy_uj", dir,
			 de->d_name);
		if (access(path, F_OK))
			continue;
		*seen = true;
		ret = read_u64(path, &v);
		if (ret) {
			/* root only since Linux 5.10 (CVE-2020-8694) */
			if (ret == -EACCES || ret == -EPERM)
				*denied = true;
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s/name", dir, de->d_name);
		if (eq_read_trimmed(path, name, sizeof(name)))
			snprintf(name, sizeof(name), "%.63s", de->d_name);
		o = add(p, R_ENERGY, "powercap", de->d_name, name);
		if (!o)
			break;
		snprintf(p->r[p->n].a, sizeof(p->r[p->n].a), "%s/%s/energy_uj",
			 dir, de->d_name);
		snprintf(path, sizeof(path), "%s/%s/max_energy_range_uj", dir,
			 de->d_name);
		if (read_u64(path, &p->r[p->n].range_uj))
			p->r[p->n].range_uj = 0;
		p->n++;
	}
	closedir(d);
}

static void pick_total(struct edgeq_power *p)
{
	const char *only = NULL;
	unsigned int i;

	for (i = 0; i < p->n; i++)
		if (!strcmp(p->pub[i].name, "VDD_IN"))
			only = "VDD_IN";
	for (i = 0; i < p->n && !only; i++)
		if (!strcmp(p->pub[i].name, "psys"))
			only = "psys";
	for (i = 0; i < p->n; i++)
		p->pub[i].in_total = !only || !strcmp(p->pub[i].name, only);
}

int edgeq_power_open(const char *sysfs_root, struct edgeq_power **out,
		     struct edgeq_error *err)
{
	bool hw = false, pc = false, denied = false;
	struct edgeq_power *p;
	const char *root = sysfs_root;

	*out = NULL;
	if (!root)
		root = getenv("EDGEQ_SYSFS_ROOT");
	if (!root || !*root)
		root = "/sys";
	p = calloc(1, sizeof(*p));
	if (!p)
		return edgeq_error_set(err, ENOMEM, "power: out of memory");
	pthread_mutex_init(&p->lock, NULL);
	p->stop_fd[0] = p->stop_fd[1] = -1;
	snprintf(p->sysfs, sizeof(p->sysfs), "%s", root);
	scan_hwmon(p, &hw);
	scan_powercap(p, &pc, &denied);
	pick_total(p);
	if (!p->n)
		snprintf(p->why, sizeof(p->why),
			 "no readable power rail: %s, %s",
			 hw ? "hwmon power channels unreadable" :
			      "no hwmon power or voltage and current channel",
			 denied ? "powercap energy_uj readable only by root" :
			 pc	? "powercap energy_uj unreadable" :
				  "no powercap zone");
	*out = p;
	return 0;
}

unsigned int edgeq_power_rails(const struct edgeq_power *p,
			       const struct edgeq_power_rail **out)
{
	*out = p->pub;
	return p->n;
}

const char *edgeq_power_none_reason(const struct edgeq_power *p)
{
	return p->why;
}

static void sample_locked(struct edgeq_power *p, uint64_t now)
{
	double dt = p->last_ns && now > p->last_ns ?
			    (double)(now - p->last_ns) / 1e9 :
			    0;
	double total = 0;
	unsigned int i;

	for (i = 0; i < p->n; i++) {
		struct edgeq_power_rail *o = &p->pub[i];
		struct rail *r = &p->r[i];
		uint64_t a, b;
		double w = r->last_w;

		if (r->kind == R_ENERGY) {
			if (read_u64(r->a, &a))
				continue;
			if (r->have_last) {
				uint64_t d =
					a >= r->last_uj ?
						a - r->last_uj :
						(r->range_uj ?
							 r->range_uj -
								 r->last_uj +
								 a :
							 0);
				o->joules += (double)d / 1e6;
				if (dt > 0)
					w = (double)d / 1e6 / dt;
			}
			r->last_uj = a;
		} else {
			if (read_u64(r->a, &a))
				continue;
			if (r->kind == R_POWER)
				w = (double)a / 1e6; /* uW */
			else if (!read_u64(r->b, &b))
				w = (double)a * (double)b / 1e6; /* mV x mA */
			else
				continue;
			if (r->have_last && dt > 0)
				o->joules += (r->last_w + w) / 2 * dt;
		}
		r->last_w = w;
		r->have_last = true;
		o->watts = w;
		if (o->in_total)
			total += w;
	}
	p->total_w = total;
	if (now > p->last_ns)
		p->last_ns = now;
	p->samples++;
}

int edgeq_power_sample(struct edgeq_power *p, uint64_t now_ns)
{
	if (!p->n)
		return -ENODATA;
	pthread_mutex_lock(&p->lock);
	sample_locked(p, now_ns);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static void *sampler(void *arg)
{
	struct edgeq_power *p = arg;
	struct pollfd pfd = { .fd = p->stop_fd[0], .events = POLLIN };

	/* until edgeq_power_stop() writes to the pipe */
	while (poll(&pfd, 1, (int)p->period_ms) == 0)
		edgeq_power_sample(p, edgeq_now_ns());
	return NULL;
}

int edgeq_power_start(struct edgeq_power *p, unsigned int period_ms)
{
	unsigned int i;
	int ret;

	edgeq_power_stop(p);
	pthread_mutex_lock(&p->lock);
	for (i = 0; i < p->n; i++) {
		p->pub[i].joules = 0;
		p->r[i].have_last = false;
	}
	p->last_ns = 0;
	p->samples = 0;
	p->t0_ns = edgeq_now_ns();
	if (p->n)
		sample_locked(p, p->t0_ns);
	pthread_mutex_unlock(&p->lock);
	if (!p->n || !period_ms)
		return 0;
	if (pipe2(p->stop_fd, O_CLOEXEC))
		return -errno;
	p->period_ms = period_ms;
	ret = pthread_create(&p->thr, NULL, sampler, p);
	if (ret) {
		close(p->stop_fd[0]);
		close(p->stop_fd[1]);
		p->stop_fd[0] = p->stop_fd[1] = -1;
		return -ret;
	}
	p->running = true;
	return 0;
}

void edgeq_power_stop(struct edgeq_power *p)
{
	if (!p->running)
		return;
	if (write(p->stop_fd[1], "x", 1) == 1)
		pthread_join(p->thr, NULL);
	close(p->stop_fd[0]);
	close(p->stop_fd[1]);
	p->stop_fd[0] = p->stop_fd[1] = -1;
	p->running = false;
}

static int read_at(struct edgeq_power *p, uint64_t now,
		   struct edgeq_power_reading *r)
{
	unsigned int i;

	memset(r, 0, sizeof(*r));
	r->n_rails = p->n;
	if (!p->n)
		return -ENODATA;
	pthread_mutex_lock(&p->lock);
	sample_locked(p, now);
	for (i = 0; i < p->n; i++)
		if (p->pub[i].in_total)
			r->joules += p->pub[i].joules;
	r->seconds =
		p->t0_ns && now > p->t0_ns ? (double)(now - p->t0_ns) / 1e9 : 0;
	r->avg_watts = r->seconds > 0 ? r->joules / r->seconds : p->total_w;
	r->watts = p->total_w;
	r->samples = p->samples;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

int edgeq_power_read(struct edgeq_power *p, struct edgeq_power_reading *r)
{
	return read_at(p, edgeq_now_ns(), r);
}

void edgeq_power_free(struct edgeq_power *p)
{
	if (!p)
		return;
	edgeq_power_stop(p);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
