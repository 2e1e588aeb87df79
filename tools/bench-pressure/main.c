// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-pressure: checks and measures the pressure monitor.
 *
 *   bench-pressure selftest            BPF_PROG_TEST_RUN on the raw_tp thermal
 *                                      variants: trend, thresholds, hysteresis,
 *                                      headroom, device mapping, rate limit
 *   bench-pressure latency [-n N]      tracepoint -> published state, synthetic
 *                                      events (BPF_PROG_TEST_RUN, kernel clock)
 *   bench-pressure reclaim [-n N]      the same for real memcg reclaim events,
 *                                      forced by lowering a v1 cgroup's limit
 *   bench-pressure cpu [-s SECONDS]    the consumer's CPU time idle, under a
 *                                      synthetic storm, and the rate limit
 *
 * Needs root and BPF (exit 77 otherwise). Prints "N passed, N failed, N
 * skipped" (selftest) or key=value figures.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <liburing.h>

#include <edgeq/pressure.h>

#define EV_TEMP 1
#define EV_TRIP 2
#define EV_CDEV 3
#define EV_PRESSURE 11
#define EV_RECLAIM 6
#define EDGEQ_PM_F_TEST_RUN 8 /* EDGEQ_PM_F_TEST of bpf/pressure.h */

static int passed, failed;

#define CHECK(cond, ...)                   \
	do {                               \
		if (cond) {                \
			passed++;          \
			printf("ok - ");   \
		} else {                   \
			failed++;          \
			printf("FAIL - "); \
		}                          \
		printf(__VA_ARGS__);       \
		putchar('\n');             \
	} while (0)

static void put(const char *dir, const char *name, const char *val)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fputs(val, f);
		fputc('\n', f);
		fclose(f);
	}
}

static void mkzone(const char *root, int id, const char *type, const char *temp,
		   const char *passive, const char *crit)
{
	char dir[400];

	snprintf(dir, sizeof(dir), "%s/class/thermal/thermal_zone%d", root, id);
	mkdir(dir, 0755);
	put(dir, "type", type);
	put(dir, "temp", temp);
	put(dir, "trip_point_0_temp", passive);
	put(dir, "trip_point_0_type", "passive");
	put(dir, "trip_point_1_temp", crit);
	put(dir, "trip_point_1_type", "critical");
}

/* ---- events collected by the callback ---------------------------------- */

struct collect {
	pthread_mutex_t lock;
	struct edgeq_pressure_event ev[64];
	unsigned int n;
	unsigned int by_kind[16];
	/* latency: publish time minus the event's kernel timestamp */
	uint64_t *lat;
	size_t n_lat, max_lat;
	unsigned int batch_start;
	uint64_t pending_ts[4096];
	unsigned int n_pending;
	int want_kind;
	bool only_test;
};

static void on_event(void *ctx, const struct edgeq_pressure_event *ev)
{
	struct collect *c = ctx;

	/* the selftest counts only its own events, not the machine's */
	if (c->only_test && !(ev->flags & EDGEQ_PM_F_TEST_RUN))
		return;
	if (c->n < 64)
		c->ev[c->n] = *ev;
	c->n++;
	if (ev->kind < 16)
		c->by_kind[ev->kind]++;
	if (c->lat && (c->want_kind < 0 || (int)ev->kind == c->want_kind) &&
	    c->n_pending < 4096)
		c->pending_ts[c->n_pending++] = ev->ts_ns;
}

/* Wait up to @ms for the fd, then consume; the published state is current
 * when this returns. */
static int settle(struct edgeq_pressure *p, int ms)
{
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = {
		.tv_sec = ms / 1000, .tv_nsec = (long long)(ms % 1000) * 1000000
	};
	int ret;

	if (io_uring_queue_init(4, &ring, 0))
		return -ENOSYS;
	edgeq_pressure_poll_add(p, &ring, 7);
	io_uring_submit(&ring);
	ret = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
	if (!ret)
		io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	ret = edgeq_pressure_consume(p);
	/* map updates without a crossing are published by the refresh */
	return ret < 0 ? ret : edgeq_pressure_refresh(p);
}

static int temp(struct edgeq_pressure *p, uint32_t zone, int32_t mc,
		uint64_t ts)
{
	uint64_t a[3] = { zone, (uint64_t)(int64_t)mc, ts };

	return edgeq_pressure_test_run(p, "thermal_temperature", a, 3);
}

static const struct edgeq_pressure_zone *
zone(const struct edgeq_pressure_state *s, int id)
{
	uint32_t i;

	for (i = 0; i < s->n_zones; i++)
		if (s->zones[i].id == id)
			return &s->zones[i];
	return NULL;
}

static const struct edgeq_pressure_device *
device(const struct edgeq_pressure_state *s, const char *name)
{
	uint32_t i;

	for (i = 0; i < s->n_devices; i++)
		if (!strcmp(s->devices[i].name, name))
			return &s->devices[i];
	return NULL;
}

static int open_monitor(struct edgeq_pressure_opts *o,
			struct edgeq_pressure **p)
{
	struct edgeq_error err = { 0 };
	int ret = edgeq_pressure_new(o, p, &err);

	if (ret) {
		printf("monitor: %s\n", err.msg);
		return ret;
	}
	if (edgeq_pressure_source(*p) != EDGEQ_PRESSURE_SRC_BPF) {
		printf("BPF not available: %s\n",
		       edgeq_pressure_fallback_reason(*p));
		edgeq_pressure_free(*p);
		return -EOPNOTSUPP;
	}
	return 0;
}

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	return remove(path);
}

static int selftest(void)
{
	char root[] = "/tmp/edgeq-pm-XXXXXX", dir[512];
	struct edgeq_pressure_state *s = calloc(1, sizeof(*s));
	struct collect c = { .lock = PTHREAD_MUTEX_INITIALIZER,
			     .only_test = true };
	const uint64_t T = 1000000000000ull, SEC = 1000000000ull;
	const struct edgeq_pressure_zone *z;
	const struct edgeq_pressure_device *d;
	struct edgeq_pressure_opts o;
	struct edgeq_pressure *p;
	uint64_t dropped0;
	int i, ret;

	if (!s || !mkdtemp(root))
		return 1;
	snprintf(dir, sizeof(dir), "%s/class", root);
	mkdir(dir, 0755);
	snprintf(dir, sizeof(dir), "%s/class/thermal", root);
	mkdir(dir, 0755);
	mkzone(root, 0, "cpu-thermal", "45000", "80000", "100000");
	mkzone(root, 1, "gpu-thermal", "40000", "85000", "105000");
	mkzone(root, 2, "cv0-thermal", "39000", "85000", "105000");
	snprintf(dir, sizeof(dir), "%s/class/thermal/cooling_device0", root);
	mkdir(dir, 0755);
	put(dir, "type", "Processor");
	put(dir, "cur_state", "0");
	put(dir, "max_state", "10");
	/* two CPUs a governor idles at 40 % of their maximum: not throttled */
	for (i = 0; i < 2; i++) {
		static const char *const sub[] = { "devices", "system", "cpu",
						   NULL };
		size_t n = (size_t)snprintf(dir, sizeof(dir), "%s", root);
		int k;

		for (k = 0; sub[k]; k++) {
			n += (size_t)snprintf(dir + n, sizeof(dir) - n, "/%s",
					      sub[k]);
			mkdir(dir, 0755);
		}
		snprintf(dir + n, sizeof(dir) - n, "/cpu%d", i);
		mkdir(dir, 0755);
		put(dir, "cpu_capacity", "1024");
		snprintf(dir + n, sizeof(dir) - n, "/cpu%d/cpufreq", i);
		mkdir(dir, 0755);
		put(dir, "scaling_cur_freq", "800000");
		put(dir, "scaling_max_freq", "2000000");
		put(dir, "cpuinfo_max_freq", "2000000");
	}

	edgeq_pressure_opts_init(&o);
	o.sysfs_root = root;
	o.rate_burst = 4;
	o.refresh_ms = 60000; /* only our own refreshes */
	ret = open_monitor(&o, &p);
	if (ret)
		return ret == -EOPNOTSUPP ? 77 : 1;
	edgeq_pressure_set_event_fn(p, on_event, &c);

	edgeq_pressure_get(p, s);
	CHECK(s->n_zones == 3, "fake tree: 3 zones (got %u)", s->n_zones);
	CHECK((d = device(s, "cpu")) && d->temp_mc == 45000 &&
		      d->headroom_mc == 35000,
	      "cpu-thermal -> cpu, 45 C, headroom 35 C before any event");
	CHECK(device(s, "gpu") && device(s, "npu"),
	      "gpu-thermal -> gpu, cv0-thermal -> npu");

	ret = temp(p, 0, 50000, T);
	CHECK(ret == 0, "BPF_PROG_TEST_RUN test_thermal_temperature runs (%d)",
	      ret);
	settle(p, 100);
	edgeq_pressure_get(p, s);
	z = zone(s, 0);
	CHECK(z && z->temp_mc == 50000 && z->level == 0 && c.n == 0,
	      "50 C: published, level ok, no event (temp %d, events %u)",
	      z ? z->temp_mc : 0, c.n);

	temp(p, 0, 82000, T + SEC);
	settle(p, 200);
	edgeq_pressure_get(p, s);
	z = zone(s, 0);
	CHECK(c.n == 1 && c.ev[0].kind == EV_TEMP && c.ev[0].level == 1 &&
		      (c.ev[0].flags & 4) && c.ev[0].value == 82000 &&
		      c.ev[0].prev == 50000,
	      "82 C crosses the passive trip (80 C): one rising warn event");
	CHECK(z && z->trend_mcps == 8000,
	      "trend: +32 C/s smoothed 1/4 = 8000 mC/s (got %d)",
	      z ? z->trend_mcps : 0);
	CHECK(z && z->headroom_mc == 18000 && z->next_trip_mc == 100000,
	      "headroom to the critical trip: 18 C (got %d)",
	      z ? z->headroom_mc : 0);

	temp(p, 0, 79000, T + 2 * SEC);
	settle(p, 100);
	edgeq_pressure_get(p, s);
	z = zone(s, 0);
	CHECK(c.n == 1 && z && z->level == 1,
	      "79 C stays warn inside the 2 C hysteresis");
	CHECK(z && z->trend_mcps == 5250,
	      "trend: (3*8000 - 3000)/4 = 5250 (got %d)",
	      z ? z->trend_mcps : 0);

	temp(p, 0, 77000, T + 3 * SEC);
	settle(p, 200);
	CHECK(c.n == 2 && c.ev[1].level == 0 && !(c.ev[1].flags & 4),
	      "77 C drops below 80-2 C: a falling ok event");

	temp(p, 0, 101000, T + 4 * SEC);
	settle(p, 200);
	edgeq_pressure_get(p, s);
	d = device(s, "cpu");
	CHECK(c.n == 3 && c.ev[2].level == 2, "101 C: critical event");
	CHECK(d && d->level == 2 && d->temp_mc == 101000 &&
		      d->headroom_mc == EDGEQ_PRESSURE_NONE,
	      "cpu device: 101 C, level 2, no trip left above");

	/* rate limit: 20 level changes inside one window, burst 4 */
	dropped0 = s->dropped;
	c.n = 0;
	for (i = 0; i < 20; i++)
		temp(p, 0, i % 2 ? 101000 : 50000,
		     T + 10 * SEC + (uint64_t)i * 1000000);
	settle(p, 200);
	settle(p, 50);
	edgeq_pressure_get(p, s);
	CHECK(c.n == 4,
	      "rate limit: 20 crossings in 1 s, burst 4 -> 4 events (got %u)",
	      c.n);
	/* (other kinds of events on a busy machine may add to the total) */
	CHECK(s->dropped - dropped0 >= 16,
	      "rate limit: 16 counted as dropped (got %llu)",
	      (unsigned long long)(s->dropped - dropped0));
	CHECK((z = zone(s, 0)) && z->temp_mc == 101000,
	      "the map keeps the latest temperature even when events are dropped");
	c.n = 0;
	temp(p, 0, 50000, T + 12 * SEC);
	settle(p, 200);
	CHECK(c.n == 1, "rate limit: the next window delivers again (got %u)",
	      c.n);

	{
		uint64_t a[4] = { 0, 1, 3, T + 13 * SEC };

		c.n = 0;
		edgeq_pressure_test_run(p, "thermal_zone_trip", a, 4);
		settle(p, 200);
		edgeq_pressure_get(p, s);
		CHECK(c.n == 1 && c.ev[0].kind == EV_TRIP && c.ev[0].aux == 1 &&
			      c.ev[0].level == 3 && (z = zone(s, 0)) &&
			      z->trips == 1,
		      "thermal_zone_trip: event with trip 1, type critical; zone counts it");
	}
	{
		const struct edgeq_pressure_freq *f = NULL;
		uint64_t a[3] = { 0, 512, T + 13 * SEC };
		unsigned int k;

		d = device(s, "cpu");
		CHECK(d && d->throttle > 0.999,
		      "CPUs idling at 40 %% of max: cpu throttle 1 (got %.3f)",
		      d ? d->throttle : -1);
		c.n = 0;
		ret = edgeq_pressure_test_run(p, "thermal_pressure", a, 3);
		settle(p, 200);
		edgeq_pressure_get(p, s);
		for (k = 0; k < s->n_freqs; k++)
			if (!strcmp(s->freqs[k].name, "cpu"))
				f = &s->freqs[k];
		d = device(s, "cpu");
		CHECK(ret == 0 && c.n == 1 && c.ev[0].kind == EV_PRESSURE &&
			      c.ev[0].id == 0 && c.ev[0].value == 512 &&
			      (c.ev[0].flags & 4),
		      "thermal pressure 512/1024 on cpu0: one rising event");
		CHECK(f && f->pressure > 0.249 && f->pressure < 0.251,
		      "cpu domain: mean thermal pressure 0.25 (got %.3f)",
		      f ? f->pressure : -1);
		CHECK(d && d->throttle > 0.749 && d->throttle < 0.751,
		      "cpu0 at half capacity -> cpu throttle 0.75 (got %.3f)",
		      d ? d->throttle : -1);
		a[1] = 0;
		a[2] = T + 13 * SEC + SEC / 2;
		edgeq_pressure_test_run(p, "thermal_pressure", a, 3);
		settle(p, 200);
		edgeq_pressure_get(p, s);
		d = device(s, "cpu");
		CHECK(d && d->throttle > 0.999,
		      "pressure gone: cpu throttle 1 again (got %.3f)",
		      d ? d->throttle : -1);
	}
	{
		uint64_t a[4] = { 0, 3, 10, T + 14 * SEC };

		c.n = 0;
		edgeq_pressure_test_run(p, "cdev_update", a, 4);
		settle(p, 200);
		edgeq_pressure_get(p, s);
		d = device(s, "cpu");
		CHECK(c.n == 1 && c.ev[0].kind == EV_CDEV && c.ev[0].value == 3,
		      "cdev_update: cooling state 3/10 event");
		CHECK(d && d->throttle > 0.69 && d->throttle < 0.71,
		      "Processor cooling 3/10 -> cpu throttle 0.70 (got %.3f)",
		      d ? d->throttle : -1);
		c.n = 0;
		edgeq_pressure_test_run(p, "cdev_update", a, 4);
		settle(p, 100);
		CHECK(c.n == 0, "same cooling state again: no event");
	}
	{
		uint64_t a[3] = { 999, 50000, T };

		CHECK(edgeq_pressure_test_run(p, "thermal_temperature", a, 3) ==
			      0,
		      "zone id out of range is ignored");
		CHECK(edgeq_pressure_test_run(p, "no_such_prog", a, 3) ==
			      -ENOENT,
		      "unknown test program: -ENOENT");
	}
	edgeq_pressure_free(p);
	/* no system("rm -rf"): in the aarch64 VM /bin/sh is an x86-64 program */
	if (nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS))
		return 1;
	free(s);
	printf("%d passed, %d failed, 0 skipped\n", passed, failed);
	return failed ? 1 : 0;
}

/* ---- latency ----------------------------------------------------------- */

struct consumer {
	struct edgeq_pressure *p;
	struct collect *c;
	volatile int stop;
	struct rusage ru;
};

static void *consume_loop(void *arg)
{
	struct consumer *k = arg;
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 100000000 };
	bool armed = false;

	if (io_uring_queue_init(4, &ring, 0))
		return NULL;
	while (!k->stop) {
		unsigned int i;
		uint64_t now;

		if (!armed) {
			edgeq_pressure_poll_add(k->p, &ring, 1);
			io_uring_submit(&ring);
			armed = true;
		}
		if (io_uring_wait_cqe_timeout(&ring, &cqe, &ts))
			continue;
		io_uring_cqe_seen(&ring, cqe);
		armed = false;
		k->c->n_pending = 0;
		edgeq_pressure_consume(k->p);
		now = edgeq_now_ns();
		for (i = 0; i < k->c->n_pending && k->c->n_lat < k->c->max_lat;
		     i++)
			k->c->lat[k->c->n_lat++] = now - k->c->pending_ts[i];
	}
	getrusage(RUSAGE_THREAD, &k->ru);
	io_uring_queue_exit(&ring);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, uint64_t *lat, size_t n)
{
	if (!n) {
		printf("%s: no samples\n", what);
		return;
	}
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("%s: samples=%zu median_us=%.1f p99_us=%.1f max_us=%.1f\n", what,
	       n, lat[n / 2] / 1e3, lat[(n * 99) / 100] / 1e3,
	       lat[n - 1] / 1e3);
}

static int latency(int n)
{
	struct collect c = { .lock = PTHREAD_MUTEX_INITIALIZER,
			     .want_kind = EV_TEMP };
	struct consumer k = { .c = &c };
	struct edgeq_pressure_opts o;
	pthread_t th;
	int i;

	edgeq_pressure_opts_init(&o);
	o.rate_burst = 1000000;
	o.refresh_ms = 60000;
	if (open_monitor(&o, &k.p))
		return 77;
	c.lat = calloc((size_t)n, sizeof(uint64_t));
	c.max_lat = (size_t)n;
	edgeq_pressure_set_event_fn(k.p, on_event, &c);
	pthread_create(&th, NULL, consume_loop, &k);
	for (i = 0; i < n; i++) {
		temp(k.p, 63, i % 2 ? 101000 : 50000, 0);
		usleep(2000);
	}
	usleep(200000);
	k.stop = 1;
	pthread_join(th, NULL);
	report("latency tracepoint->published (BPF_PROG_TEST_RUN, thermal)",
	       c.lat, c.n_lat);
	printf("comparison: tegrastats/jtop sample every 500-1000 ms (mean delay 250-500 ms)\n");
	edgeq_pressure_free(k.p);
	free(c.lat);
	return 0;
}

static int write_str(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, v, strlen(v)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static long long read_ll(const char *path)
{
	char buf[64] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (read(fd, buf, sizeof(buf) - 1) < 0)
		buf[0] = '\0';
	close(fd);
	return atoll(buf);
}

/* Real memcg reclaim: fill a v1 cgroup's page cache, then lower its limit
 * step by step; each write reclaims in this thread's context. */
static int reclaim(int n)
{
	struct collect c = { .lock = PTHREAD_MUTEX_INITIALIZER,
			     .want_kind = EV_RECLAIM };
	struct consumer k = { .c = &c };
	char cg[256], path[400], cmd[600], v[32];
	struct edgeq_pressure_opts o;
	long long usage;
	pthread_t th;
	int i, ret = 0;
	pid_t pid;

	snprintf(cg, sizeof(cg), "/sys/fs/cgroup/memory/edgeq-test-bench-%d",
		 getpid());
	if (mkdir(cg, 0755)) {
		printf("no cgroup v1 memory hierarchy: %s\n", strerror(errno));
		return 77;
	}
	edgeq_pressure_opts_init(&o);
	o.rate_burst = 1000000;
	o.stall_warn_ns = 1; /* every stall is an event */
	o.refresh_ms = 60000;
	if (open_monitor(&o, &k.p)) {
		rmdir(cg);
		return 77;
	}
	c.lat = calloc((size_t)n, sizeof(uint64_t));
	c.max_lat = (size_t)n;
	edgeq_pressure_set_event_fn(k.p, on_event, &c);
	pthread_create(&th, NULL, consume_loop, &k);
	snprintf(path, sizeof(path), "%s/memory.limit_in_bytes", cg);
	for (i = 0; i < n && c.n_lat < (size_t)n;) {
		/* fill 64 MiB of page cache charged to the cgroup */
		pid = fork();
		if (!pid) {
			snprintf(cmd, sizeof(cmd), "%s/tasks", cg);
			snprintf(v, sizeof(v), "%d", getpid());
			write_str(cmd, v);
			execlp("dd", "dd", "if=/dev/zero",
			       "of=/tmp/edgeq-bench-fill", "bs=1M", "count=64",
			       "status=none", NULL);
			_exit(127);
		}
		waitpid(pid, NULL, 0);
		write_str(path, "-1");
		snprintf(cmd, sizeof(cmd), "%s/memory.usage_in_bytes", cg);
		usage = read_ll(cmd);
		while (usage > (8 << 20) && i < n) {
			usage -= 2 << 20;
			snprintf(v, sizeof(v), "%lld", usage);
			if (write_str(path, v))
				break;
			i++;
			usleep(2000);
		}
		unlink("/tmp/edgeq-bench-fill");
	}
	usleep(200000);
	k.stop = 1;
	pthread_join(th, NULL);
	report("latency tracepoint->published (real memcg reclaim end)", c.lat,
	       c.n_lat);
	edgeq_pressure_free(k.p);
	unlink("/tmp/edgeq-bench-fill");
	if (rmdir(cg))
		ret = 1;
	free(c.lat);
	return ret;
}

static double cpu_ms(const struct rusage *r)
{
	return r->ru_utime.tv_sec * 1e3 + r->ru_utime.tv_usec / 1e3 +
	       r->ru_stime.tv_sec * 1e3 + r->ru_stime.tv_usec / 1e3;
}

static int cpu(int secs)
{
	struct collect c = { .lock = PTHREAD_MUTEX_INITIALIZER,
			     .want_kind = -1 };
	struct consumer k = { .c = &c };
	struct edgeq_pressure_state s;
	struct edgeq_pressure_opts o;
	uint64_t end, fired = 0;
	pthread_t th;
	unsigned int delivered;

	edgeq_pressure_opts_init(&o);
	if (open_monitor(&o, &k.p))
		return 77;
	edgeq_pressure_set_event_fn(k.p, on_event, &c);

	pthread_create(&th, NULL, consume_loop, &k);
	sleep((unsigned int)secs);
	k.stop = 1;
	pthread_join(th, NULL);
	printf("idle: consumer_cpu_ms=%.2f over %d s (%.3f%% of a core), events=%u\n",
	       cpu_ms(&k.ru), secs, cpu_ms(&k.ru) / (secs * 10.0), c.n);

	c.n = 0;
	memset(c.by_kind, 0, sizeof(c.by_kind));
	k.stop = 0;
	pthread_create(&th, NULL, consume_loop, &k);
	end = edgeq_now_ns() + (uint64_t)secs * 1000000000ull;
	while (edgeq_now_ns() < end) {
		temp(k.p, 62, fired % 2 ? 101000 : 50000, 0);
		fired++;
	}
	usleep(200000);
	k.stop = 1;
	pthread_join(th, NULL);
	edgeq_pressure_get(k.p, &s);
	delivered = c.by_kind[EV_TEMP];
	printf("storm: crossings=%llu (%.0f/s) delivered=%u dropped=%llu consumer_cpu_ms=%.2f "
	       "(%.3f%% of a core) rate_limit=%u/s %s\n",
	       (unsigned long long)fired, fired / (double)secs, delivered,
	       (unsigned long long)s.dropped, cpu_ms(&k.ru),
	       cpu_ms(&k.ru) / (secs * 10.0), o.rate_burst,
	       delivered <= o.rate_burst * (unsigned int)(secs + 1) ? "holds" :
								      "BROKEN");
	edgeq_pressure_free(k.p);
	return delivered <= o.rate_burst * (unsigned int)(secs + 1) ? 0 : 1;
}

int main(int argc, char **argv)
{
	int n = 0, opt;
	const char *mode;

	if (argc < 2) {
		fprintf(stderr,
			"usage: bench-pressure selftest|latency|reclaim|cpu [-n N] [-s SECONDS]\n");
		return 2;
	}
	mode = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "n:s:")) != -1)
		n = atoi(optarg);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "selftest"))
		return selftest();
	if (!strcmp(mode, "latency"))
		return latency(n > 0 ? n : 1000);
	if (!strcmp(mode, "reclaim"))
		return reclaim(n > 0 ? n : 200);
	if (!strcmp(mode, "cpu"))
		return cpu(n > 0 ? n : 3);
	fprintf(stderr, "bench-pressure: unknown mode %s\n", mode);
	return 2;
}
