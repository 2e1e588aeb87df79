// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pressure monitor: picks BPF or the PSI/sysfs fallback, keeps one
 * published state, and turns ring-buffer events, PSI triggers and a refresh
 * timer behind one pollable fd into state changes.
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <liburing.h>

#include "internal.h"

enum { TAG_RINGBUF = 1, TAG_TIMER, TAG_PSI, TAG_OWN_PSI };

static const char *const event_names[] = {
	[1] = "temp",	 [2] = "trip",	  [3] = "cdev",	     [4] = "cpufreq",
	[5] = "devfreq", [6] = "reclaim", [7] = "throttled", [8] = "oom",
	[9] = "queue",	 [10] = "agent",  [11] = "pressure",
};

const char *edgeq_pressure_event_name(uint32_t kind)
{
	if (kind < sizeof(event_names) / sizeof(event_names[0]) &&
	    event_names[kind])
		return event_names[kind];
	return "?";
}

const char *edgeq_pressure_source_name(enum edgeq_pressure_source s)
{
	return s == EDGEQ_PRESSURE_SRC_BPF ? "bpf" : "psi";
}

const char *edgeq_mem_level_name(enum edgeq_mem_level l)
{
	static const char *const n[] = { "none", "low", "medium", "critical" };

	return (unsigned int)l < 4 ? n[l] : "?";
}

void edgeq_pressure_opts_init(struct edgeq_pressure_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->refresh_ms = 1000;
	o->temp_warn_mc = 85000;
	o->temp_crit_mc = 95000;
	o->temp_hyst_mc = 2000;
	o->freq_warn_pct = 80;
	o->stall_warn_ns = 1000000;
	o->rate_burst = 32;
	o->rate_window_ns = 1000000000ull;
	o->psi_stall_us = 100000;
	o->psi_window_us = 1000000;
}

static bool env_true(const char *name)
{
	const char *v = getenv(name);

	return v && (!strcmp(v, "1") || !strcasecmp(v, "yes") ||
		     !strcasecmp(v, "true") || !strcasecmp(v, "on"));
}

/* ---- mapping zones and devices to edgeq devices ----------------------- */

static void lower(const char *in, char *out, size_t len)
{
	size_t i;

	for (i = 0; in[i] && i + 1 < len; i++)
		out[i] = (char)tolower((unsigned char)in[i]);
	out[i] = '\0';
}

static void builtin_map(const char *kind, const char *type, char *dev,
			size_t len)
{
	char t[EDGEQ_PRESSURE_NAME];
	const char *d = "";

	lower(type, t, sizeof(t));
	if (!strncmp(t, "edgeq-", 6)) {
		/* the module's own zones and cooling devices: edgeq-npu0 -> npu */
		size_t n = strcspn(t + 6, "0123456789-");

		snprintf(dev, len, "%.*s", (int)n, t + 6);
		return;
	}
	if (strstr(t, "gpu") || strstr(t, "ga10b") || strstr(t, "gv11b"))
		d = "gpu";
	else if (!strncmp(t, "cv", 2) || strstr(t, "npu") || strstr(t, "dla") ||
		 strstr(t, "pva"))
		d = "npu";
	else if (strstr(t, "cpu") || !strcmp(t, "x86_pkg_temp") ||
		 (!strcmp(kind, "cdev") && !strcmp(t, "processor")))
		d = "cpu";
	snprintf(dev, len, "%s", d);
}

void edgeq_pressure_map_device(const struct edgeq_pressure *p, const char *kind,
			       const char *type, char *dev, size_t len)
{
	int i;

	if (!len)
		return;
	for (i = 0; p && i < p->n_rules; i++) {
		const struct pm_rule *r = &p->rules[i];

		if (r->kind[0] && strcmp(r->kind, kind))
			continue;
		if (fnmatch(r->pattern, type, 0))
			continue;
		snprintf(dev, len, "%s",
			 strcmp(r->device, "none") ? r->device : "");
		return;
	}
	builtin_map(kind, type, dev, len);
}

/* devices.conf: "# comment", "[zone.|devfreq.|cdev.]PATTERN = DEVICE". */
static int load_rules(struct edgeq_pressure *p, const char *path, bool must,
		      struct edgeq_error *err)
{
	char line[256];
	int lineno = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f) {
		if (!must && errno == ENOENT)
			return 0;
		return edgeq_error_set(err, errno, "%s: %s", path,
				       strerror(errno));
	}
	while (fgets(line, sizeof(line), f)) {
		char *s = line, *eq, *key, *val, *dot;
		struct pm_rule *r;

		lineno++;
		s[strcspn(s, "#\n")] = '\0';
		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			continue;
		eq = strchr(s, '=');
		if (!eq || p->n_rules >= PM_MAX_RULES) {
			fclose(f);
			return edgeq_error_set(
				err, EINVAL,
				"%s:%d: expected KIND.PATTERN=DEVICE%s", path,
				lineno, eq ? " (too many rules)" : "");
		}
		*eq = '\0';
		key = s;
		val = eq + 1;
		while (*key && isspace((unsigned char)key[strlen(key) - 1]))
			key[strlen(key) - 1] = '\0';
		while (isspace((unsigned char)*val))
			val++;
		while (*val && isspace((unsigned char)val[strlen(val) - 1]))
			val[strlen(val) - 1] = '\0';
		r = &p->rules[p->n_rules];
		memset(r, 0, sizeof(*r));
		dot = strchr(key, '.');
		if (dot && (!strncmp(key, "zone.", 5) ||
			    !strncmp(key, "devfreq.", 8) ||
			    !strncmp(key, "cdev.", 5))) {
			snprintf(r->kind, sizeof(r->kind), "%.*s",
				 (int)(dot - key), key);
			key = dot + 1;
		}
		if (!*key || !*val || strlen(val) >= sizeof(r->device)) {
			fclose(f);
			return edgeq_error_set(
				err, EINVAL,
				"%s:%d: empty pattern or bad device", path,
				lineno);
		}
		snprintf(r->pattern, sizeof(r->pattern), "%s", key);
		snprintf(r->device, sizeof(r->device), "%s", val);
		p->n_rules++;
	}
	fclose(f);
	return 0;
}

/* ---- deriving the published state ------------------------------------- */

void pm_zone_limits(const struct edgeq_pressure *p,
		    const struct pm_zone_sys *zs, int32_t *warn, int32_t *crit)
{
	int k;

	*warn = p->o.temp_warn_mc;
	*crit = p->o.temp_crit_mc;
	for (k = zs->n_trips - 1; k >= 0; k--) {
		if (!strcmp(zs->trip_type[k], "critical") ||
		    !strcmp(zs->trip_type[k], "hot")) {
			if (zs->trip_mc[k] < *crit || k == zs->n_trips - 1)
				*crit = zs->trip_mc[k];
		} else if (!strcmp(zs->trip_type[k], "passive")) {
			*warn = zs->trip_mc[k];
		}
	}
	if (*warn > *crit)
		*warn = *crit;
}

static const struct edgeq_pressure_zone *
find_zone(const struct edgeq_pressure_state *s, int id)
{
	uint32_t i;

	for (i = 0; i < s->n_zones; i++)
		if (s->zones[i].id == id)
			return &s->zones[i];
	return NULL;
}

static struct edgeq_pressure_device *device_slot(struct edgeq_pressure_state *s,
						 const char *name)
{
	struct edgeq_pressure_device *d;
	uint32_t i;

	if (!name[0])
		return NULL;
	for (i = 0; i < s->n_devices; i++)
		if (!strcmp(s->devices[i].name, name))
			return &s->devices[i];
	if (s->n_devices >= EDGEQ_PRESSURE_MAX_DEVICES)
		return NULL;
	d = &s->devices[s->n_devices++];
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->temp_mc = EDGEQ_PRESSURE_NONE;
	d->headroom_mc = EDGEQ_PRESSURE_NONE;
	d->throttle = 1.0;
	return d;
}

static enum edgeq_mem_level mem_level(const struct edgeq_pressure_mem *m)
{
	enum edgeq_mem_level l = EDGEQ_MEM_NONE;
	double pct = m->total ?
			     100.0 * (double)m->available / (double)m->total :
			     100;

	if (m->stall_ms_per_s >= 200 || pct < 5)
		l = EDGEQ_MEM_CRITICAL;
	else if (m->stall_ms_per_s >= 50 || pct < 10)
		l = EDGEQ_MEM_MEDIUM;
	else if (m->stall_ms_per_s >= 1 || pct < 20)
		l = EDGEQ_MEM_LOW;
	return l;
}

/*
 * The CPUs' share of full speed the kernel allows: per CPU the lower of its
 * frequency ceiling (scaling_max_freq / cpuinfo_max_freq, lowered by
 * cpufreq cooling and QoS) and the capacity thermal pressure leaves it,
 * weighted by its maximum frequency. The current frequency plays no part.
 */
static void cpu_throttle(const struct edgeq_pressure *p,
			 struct edgeq_pressure_freq *f)
{
	double left = 0, all = 0, lost = 0;
	int i, k = 0;

	for (i = 0; i < p->n_cpus; i++) {
		double m = p->cpu_max_khz[i], r, t;

		if (!m)
			continue;
		r = (double)p->cpu_cap_khz[i] / m;
		t = p->cpu_capacity[i] ?
			    (double)p->cpu_pressure[i] / p->cpu_capacity[i] :
			    0;
		if (t > 1)
			t = 1;
		lost += t;
		k++;
		if (1 - t < r)
			r = 1 - t;
		left += r * m;
		all += m;
	}
	f->throttle = all > 0 ? left / all : 1.0;
	f->pressure = k ? lost / k : 0;
}

static void derive(struct edgeq_pressure *p,
		   const struct edgeq_pressure_state *old,
		   struct edgeq_pressure_state *n, uint64_t now, bool sampled)
{
	struct edgeq_pressure_device *d;
	uint32_t i;
	int k;

	n->n_devices = 0;
	for (i = 0; i < n->n_zones; i++) {
		struct edgeq_pressure_zone *z = &n->zones[i];
		struct pm_zone_sys *zs = &p->zsys[i];
		const struct edgeq_pressure_zone *oz = find_zone(old, z->id);
		int32_t warn, crit;

		edgeq_pressure_map_device(p, "zone", z->type, z->device,
					  sizeof(z->device));
		pm_zone_limits(p, zs, &warn, &crit);
		if (sampled && !zs->from_bpf &&
		    z->temp_mc != EDGEQ_PRESSURE_NONE) {
			/* the fallback's own trend and level, as BPF does them */
			if (oz && oz->temp_mc != EDGEQ_PRESSURE_NONE &&
			    zs->sampled_ns && now > zs->sampled_ns) {
				double rate =
					(double)(z->temp_mc - oz->temp_mc) *
					1e9 / (double)(now - zs->sampled_ns);

				z->trend_mcps =
					(int32_t)((3.0 * oz->trend_mcps +
						   rate) /
						  4);
			}
			z->level = pm_temp_level(oz ? oz->level : 0, z->temp_mc,
						 warn, crit, p->o.temp_hyst_mc);
			if (oz)
				z->trips = oz->trips;
			zs->sampled_ns = now;
		}
		z->next_trip_mc = EDGEQ_PRESSURE_NONE;
		z->headroom_mc = EDGEQ_PRESSURE_NONE;
		for (k = 0;
		     k < zs->n_trips && z->temp_mc != EDGEQ_PRESSURE_NONE; k++)
			if (zs->trip_mc[k] > z->temp_mc &&
			    (z->next_trip_mc == EDGEQ_PRESSURE_NONE ||
			     zs->trip_mc[k] < z->next_trip_mc))
				z->next_trip_mc = zs->trip_mc[k];
		if (z->next_trip_mc != EDGEQ_PRESSURE_NONE)
			z->headroom_mc = z->next_trip_mc - z->temp_mc;

		d = device_slot(n, z->device);
		if (!d)
			continue;
		if (z->temp_mc != EDGEQ_PRESSURE_NONE &&
		    (d->temp_mc == EDGEQ_PRESSURE_NONE ||
		     z->temp_mc > d->temp_mc))
			d->temp_mc = z->temp_mc;
		if (z->headroom_mc != EDGEQ_PRESSURE_NONE &&
		    (d->headroom_mc == EDGEQ_PRESSURE_NONE ||
		     z->headroom_mc < d->headroom_mc))
			d->headroom_mc = z->headroom_mc;
		if (z->level > d->level)
			d->level = z->level;
	}
	for (i = 0; i < n->n_cdevs; i++) {
		struct edgeq_pressure_cdev *c = &n->cdevs[i];

		edgeq_pressure_map_device(p, "cdev", c->type, c->device,
					  sizeof(c->device));
		d = device_slot(n, c->device);
		if (d && c->max_state) {
			double f = 1.0 -
				   (double)c->cur_state / (double)c->max_state;

			if (f < d->throttle)
				d->throttle = f < 0 ? 0 : f;
		}
	}
	for (i = 0; i < n->n_freqs; i++) {
		struct edgeq_pressure_freq *f = &n->freqs[i];

		if (!strcmp(f->name, "cpu"))
			strcpy(f->device, "cpu");
		else
			edgeq_pressure_map_device(p, "devfreq", f->name,
						  f->device, sizeof(f->device));
		if (!strcmp(f->name, "cpu"))
			cpu_throttle(p, f);
		else
			f->throttle = f->max && f->cap ?
					      (double)f->cap / (double)f->max :
					      1.0;
		if (f->throttle > 1)
			f->throttle = 1;
		d = device_slot(n, f->device);
		if (d && f->throttle < d->throttle)
			d->throttle = f->throttle;
	}

	/* memory: stall rate over the time since the last sample */
	if (n->source == EDGEQ_PRESSURE_SRC_BPF) {
		uint64_t tot = n->mem.direct.total_ns + n->mem.memcg.total_ns;

		if (p->last_stall_at_ns && now > p->last_stall_at_ns &&
		    tot >= p->last_stall_total_ns) {
			if (sampled || tot != p->last_stall_total_ns)
				n->mem.stall_ms_per_s =
					(double)(tot - p->last_stall_total_ns) *
					1e3 /
					(double)(now - p->last_stall_at_ns);
			else
				n->mem.stall_ms_per_s = old->mem.stall_ms_per_s;
		}
		if (sampled || tot != p->last_stall_total_ns) {
			p->last_stall_total_ns = tot;
			p->last_stall_at_ns = now;
		}
	}
	n->mem.level = mem_level(&n->mem);
}

static bool differs(const struct edgeq_pressure_state *a,
		    const struct edgeq_pressure_state *b)
{
	uint32_t i;
	int64_t d;

	if (a->n_zones != b->n_zones || a->n_cdevs != b->n_cdevs ||
	    a->n_freqs != b->n_freqs || a->n_devices != b->n_devices ||
	    a->n_queues != b->n_queues || a->events != b->events)
		return true;
	for (i = 0; i < a->n_zones; i++) {
		d = (int64_t)a->zones[i].temp_mc - b->zones[i].temp_mc;
		if (d >= 500 || d <= -500 ||
		    a->zones[i].level != b->zones[i].level ||
		    a->zones[i].trips != b->zones[i].trips)
			return true;
	}
	for (i = 0; i < a->n_cdevs; i++)
		if (a->cdevs[i].cur_state != b->cdevs[i].cur_state)
			return true;
	for (i = 0; i < a->n_freqs; i++) {
		d = (int64_t)a->freqs[i].cur - (int64_t)b->freqs[i].cur;
		if (d < 0)
			d = -d;
		if ((uint64_t)d * 20 > a->freqs[i].max)
			return true;
	}
	for (i = 0; i < a->n_devices; i++) {
		double t = a->devices[i].throttle - b->devices[i].throttle;

		if (t > 0.01 || t < -0.01 ||
		    a->devices[i].level != b->devices[i].level)
			return true;
	}
	for (i = 0; i < a->n_queues; i++)
		if (memcmp(&a->queues[i], &b->queues[i], sizeof(a->queues[i])))
			return true;
	if (a->n_cool != b->n_cool)
		return true;
	for (i = 0; i < a->n_cool; i++)
		if (a->cool[i].state != b->cool[i].state ||
		    a->cool[i].error != b->cool[i].error)
			return true;
	if (a->mem.level != b->mem.level ||
	    a->mem.direct.count != b->mem.direct.count ||
	    a->mem.memcg.count != b->mem.memcg.count ||
	    a->mem.own.count != b->mem.own.count ||
	    a->mem.oom_victims != b->mem.oom_victims ||
	    a->mem.throttled != b->mem.throttled)
		return true;
	d = (int64_t)a->mem.available - (int64_t)b->mem.available;
	if (d < 0)
		d = -d;
	if (a->mem.total && (uint64_t)d * 50 > a->mem.total)
		return true;
	if (a->mem.psi_some_avg10 - b->mem.psi_some_avg10 >= 1.0 ||
	    b->mem.psi_some_avg10 - a->mem.psi_some_avg10 >= 1.0)
		return true;
	return false;
}

static void read_mem(struct edgeq_pressure *p, struct edgeq_pressure_state *n,
		     uint64_t now)
{
	char path[600];
	uint64_t tot = 0;
	double full = -1;

	n->mem.psi_some_avg10 = -1;
	n->mem.psi_full_avg10 = -1;
	n->mem.own_psi_some_avg10 = -1;
	pm_read_meminfo(p, &n->mem.available, &n->mem.total);
	snprintf(path, sizeof(path), "%s/pressure/memory", p->proc);
	if (!pm_read_psi(path, &n->mem.psi_some_avg10, &full, &tot)) {
		n->mem.psi_full_avg10 = full;
		if (n->source == EDGEQ_PRESSURE_SRC_PSI) {
			if (p->last_stall_at_ns && now > p->last_stall_at_ns &&
			    tot >= p->last_psi_total_us)
				n->mem.stall_ms_per_s =
					(double)(tot - p->last_psi_total_us) *
					1e6 /
					(double)(now - p->last_stall_at_ns);
			p->last_psi_total_us = tot;
			p->last_stall_at_ns = now;
		}
	}
	if (p->cg_v2 && p->cg_path[0]) {
		double s = -1, f2;
		uint64_t t2;

		snprintf(path, sizeof(path), "%s/memory.pressure", p->cg_path);
		if (!pm_read_psi(path, &s, &f2, &t2))
			n->mem.own_psi_some_avg10 = s;
	}
}

static int publish(struct edgeq_pressure *p, struct edgeq_pressure_state *n,
		   uint64_t now)
{
	bool changed = differs(&p->st, n);

	n->seq = p->st.seq + (changed ? 1 : 0);
	n->updated_ns = now;
	p->st = *n;
	return changed ? 1 : 0;
}

int edgeq_pressure_refresh(struct edgeq_pressure *p)
{
	struct edgeq_pressure_state *n;
	uint64_t now = edgeq_now_ns();
	uint32_t i;
	int ret;

	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->source = p->src;
	for (i = 0; i < EDGEQ_PRESSURE_MAX_ZONES; i++) {
		p->zsys[i].n_trips = 0;
		p->zsys[i].from_bpf = false;
	}
	pm_sysfs_scan(p, n);
	read_mem(p, n, now);
	if (p->src == EDGEQ_PRESSURE_SRC_BPF) {
		pm_bpf_configure(p, n);
		pm_bpf_overlay(p, n);
	}
	derive(p, &p->st, n, now, true);
	pm_cool_step(p, n);
	ret = publish(p, n, now);
	free(n);
	return ret;
}

/* After ring-buffer events: the maps only, no sysfs walk. */
static int quick_update(struct edgeq_pressure *p)
{
	struct edgeq_pressure_state *n;
	uint64_t now = edgeq_now_ns();
	int ret;

	n = malloc(sizeof(*n));
	if (!n)
		return -ENOMEM;
	*n = p->st;
	pm_bpf_overlay(p, n);
	derive(p, &p->st, n, now, false);
	ret = publish(p, n, now);
	free(n);
	return ret;
}

void pm_deliver(struct edgeq_pressure *p, const struct edgeq_pressure_event *ev)
{
	if (p->fn)
		p->fn(p->fn_ctx, ev);
}

int edgeq_pressure_consume(struct edgeq_pressure *p)
{
	struct epoll_event evs[8];
	bool rb = false, full = false;
	int n, i, ret = 0, r;

	n = epoll_wait(p->epfd, evs, 8, 0);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (i = 0; i < n; i++) {
		uint64_t ticks;

		switch (evs[i].data.u32) {
		case TAG_RINGBUF:
			rb = true;
			break;
		case TAG_TIMER:
			if (read(p->timerfd, &ticks, sizeof(ticks)) < 0 &&
			    errno != EAGAIN)
				return -errno;
			full = true;
			break;
		default: /* PSI triggers: POLLPRI until the next window */
			full = true;
			break;
		}
	}
	if (rb) {
		r = pm_bpf_consume(p);
		if (r < 0)
			return r;
		if (!full) {
			r = quick_update(p);
			if (r < 0)
				return r;
			ret |= r;
		}
	}
	if (full) {
		r = edgeq_pressure_refresh(p);
		if (r < 0)
			return r;
		ret |= r;
	}
	return ret;
}

/* ---- lifecycle --------------------------------------------------------- */

static int watch(struct edgeq_pressure *p, int fd, uint32_t events,
		 uint32_t tag)
{
	struct epoll_event ev = { .events = events, .data.u32 = tag };

	return epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static int start_fallback(struct edgeq_pressure *p)
{
	char path[600];
	int fd;

	p->psi_fd = -1;
	p->own_psi_fd = -1;
	snprintf(path, sizeof(path), "%s/pressure/memory", p->proc);
	fd = pm_psi_trigger(path, p->o.psi_stall_us, p->o.psi_window_us);
	if (fd >= 0) {
		p->psi_fd = fd;
		watch(p, fd, EPOLLPRI, TAG_PSI);
	}
	if (p->cg_v2 && p->cg_path[0]) {
		snprintf(path, sizeof(path), "%s/memory.pressure", p->cg_path);
		fd = pm_psi_trigger(path, p->o.psi_stall_us,
				    p->o.psi_window_us);
		if (fd >= 0) {
			p->own_psi_fd = fd;
			watch(p, fd, EPOLLPRI, TAG_OWN_PSI);
		}
	}
	return 0;
}

int edgeq_pressure_new(const struct edgeq_pressure_opts *o,
		       struct edgeq_pressure **out, struct edgeq_error *err)
{
	struct edgeq_pressure *p;
	struct itimerspec its = { 0 };
	const char *conf, *root;
	int ret;

	p = calloc(1, sizeof(*p));
	if (!p)
		return edgeq_error_set(err, ENOMEM,
				       "pressure monitor: out of memory");
	if (o)
		p->o = *o;
	else
		edgeq_pressure_opts_init(&p->o);
	if (!p->o.refresh_ms)
		p->o.refresh_ms = 1000;
	p->epfd = p->timerfd = p->psi_fd = p->own_psi_fd = -1;
	root = p->o.sysfs_root ? p->o.sysfs_root : getenv("EDGEQ_SYSFS_ROOT");
	snprintf(p->sysfs, sizeof(p->sysfs), "%s",
		 root && *root ? root : "/sys");
	root = p->o.proc_root ? p->o.proc_root : getenv("EDGEQ_PROC_ROOT");
	snprintf(p->proc, sizeof(p->proc), "%s",
		 root && *root ? root : "/proc");

	conf = p->o.devices_conf ? p->o.devices_conf :
				   getenv("EDGEQ_DEVICES_CONF");
	ret = load_rules(p, conf && *conf ? conf : "/etc/edgeq/devices.conf",
			 conf && *conf, err);
	if (ret)
		goto fail;
	ret = pm_cool_parse(p, p->o.cool_bind, err);
	if (ret)
		goto fail;
	pm_own_cgroup(p);

	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	p->timerfd =
		timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (p->epfd < 0 || p->timerfd < 0) {
		ret = edgeq_error_set(err, errno, "pressure monitor: %s",
				      strerror(errno));
		goto fail;
	}
	its.it_interval.tv_sec = p->o.refresh_ms / 1000;
	its.it_interval.tv_nsec = (long)(p->o.refresh_ms % 1000) * 1000000;
	its.it_value = its.it_interval;
	timerfd_settime(p->timerfd, 0, &its, NULL);
	ret = watch(p, p->timerfd, EPOLLIN, TAG_TIMER);
	if (ret) {
		edgeq_error_set(err, -ret, "pressure monitor: epoll: %s",
				strerror(-ret));
		goto fail;
	}

	p->src = EDGEQ_PRESSURE_SRC_PSI;
	if (p->o.no_bpf || env_true("EDGEQ_NO_BPF")) {
		snprintf(p->reason, sizeof(p->reason),
			 "BPF disabled (EDGEQ_NO_BPF or --no-bpf)");
	} else if (!pm_bpf_open(p, p->reason, sizeof(p->reason))) {
		p->src = EDGEQ_PRESSURE_SRC_BPF;
		p->reason[0] = '\0';
		ret = watch(p, pm_bpf_ringbuf_fd(p), EPOLLIN, TAG_RINGBUF);
		if (ret) {
			edgeq_error_set(err, -ret,
					"pressure monitor: epoll: %s",
					strerror(-ret));
			goto fail;
		}
	}
	if (p->src == EDGEQ_PRESSURE_SRC_PSI)
		start_fallback(p);
	p->st.source = p->src;
	ret = edgeq_pressure_refresh(p);
	if (ret < 0) {
		edgeq_error_set(err, -ret,
				"pressure monitor: first refresh: %s",
				strerror(-ret));
		goto fail;
	}
	*out = p;
	return 0;
fail:
	edgeq_pressure_free(p);
	return ret;
}

void edgeq_pressure_free(struct edgeq_pressure *p)
{
	if (!p)
		return;
	pm_bpf_close(p);
	if (p->psi_fd >= 0)
		close(p->psi_fd);
	if (p->own_psi_fd >= 0)
		close(p->own_psi_fd);
	if (p->timerfd >= 0)
		close(p->timerfd);
	if (p->epfd >= 0)
		close(p->epfd);
	free(p);
}

enum edgeq_pressure_source edgeq_pressure_source(const struct edgeq_pressure *p)
{
	return p->src;
}

const char *edgeq_pressure_fallback_reason(const struct edgeq_pressure *p)
{
	return p->reason;
}

unsigned int edgeq_pressure_probes(const struct edgeq_pressure *p,
				   const struct edgeq_pressure_probe **out)
{
	*out = p->probes;
	return p->n_probes;
}

void edgeq_pressure_set_event_fn(struct edgeq_pressure *p,
				 edgeq_pressure_event_fn fn, void *ctx)
{
	p->fn = fn;
	p->fn_ctx = ctx;
}

int edgeq_pressure_fd(const struct edgeq_pressure *p)
{
	return p->epfd;
}

int edgeq_pressure_poll_add(struct edgeq_pressure *p, struct io_uring *ring,
			    uint64_t user_data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, p->epfd, POLLIN);
	sqe->user_data = user_data;
	return 0;
}

void edgeq_pressure_get(const struct edgeq_pressure *p,
			struct edgeq_pressure_state *out)
{
	*out = p->st;
}
