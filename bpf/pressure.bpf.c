// SPDX-License-Identifier: (LGPL-2.1-or-later OR BSD-2-Clause)
/*
 * edgeq pressure monitor: watch thermal, frequency and memory pressure from
 * the tracepoints the kernel already has, keep the latest state in maps and
 * push threshold crossings through a ring buffer, rate-limited here so an
 * event storm cannot flood userspace.
 *
 * Every program is optional: the loader (userspace/lib/pressure/bpf.c)
 * switches off autoload for tracepoints this kernel lacks and reports them.
 * The test_* programs are raw_tp variants that take crafted scalar
 * arguments, for BPF_PROG_TEST_RUN; they share the logic with the real ones.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "pressure.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Tunables, set by the loader between open and load. */
const volatile __u64 own_cgid =
	0; /* memcg kernfs id of edgeq's cgroup, 0: none */
const volatile __s32 temp_warn_mc =
	85000; /* default thresholds when zone_cfg is 0 */
const volatile __s32 temp_crit_mc = 95000;
const volatile __s32 temp_hyst_mc = 2000;
const volatile __u32 freq_warn_pct = 80; /* CPU below this % of max: WARN */
const volatile __u64 stall_warn_ns =
	1000000; /* reclaim stalls this long are events */
const volatile __u64 stall_window_ns = 1000000000;
const volatile __u64 rl_window_ns =
	1000000000; /* rate limit: rl_burst per window per kind */
const volatile __u32 rl_burst = 32;
const volatile bool victim_arg_is_task =
	true; /* mark_victim(task, uid) vs (pid) */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EDGEQ_PM_RINGBUF_SIZE);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EDGEQ_PM_MAX_ZONES);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct edgeq_pm_zone);
} zones SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EDGEQ_PM_MAX_ZONES);
	__type(key, __u32);
	__type(value, struct edgeq_pm_zone_cfg);
} zone_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EDGEQ_PM_MAX_CDEVS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct edgeq_pm_cdev);
} cdevs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EDGEQ_PM_MAX_CPUS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct edgeq_pm_cpu);
} cpus SEC(".maps");

/* Maximum frequency per CPU in kHz, written by userspace from cpufreq. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EDGEQ_PM_MAX_CPUS);
	__type(key, __u32);
	__type(value, __u32);
} cpu_max SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EDGEQ_PM_MAX_DEVFREQ);
	__type(key, struct edgeq_pm_devfreq_key);
	__type(value, struct edgeq_pm_devfreq);
} devfreqs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EDGEQ_PM_MAX_QUEUES);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct edgeq_pm_queue);
} queues SEC(".maps");

/* Reclaim in progress: key = tid | kind << 32, value = start and scope. */
struct reclaim_start {
	__u64 ts;
	__u32 own;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct reclaim_start);
} reclaim_inflight SEC(".maps");

struct edgeq_pm_stats stats;
struct edgeq_pm_rate rate[EDGEQ_PM_EV_KIND_MAX];

static __always_inline __u64 now_or(__u64 crafted)
{
	return crafted ? crafted : bpf_ktime_get_ns();
}

/* A fixed window of rl_burst records per kind; the rest are counted. */
static __always_inline bool rate_ok(__u32 kind, __u64 now)
{
	struct edgeq_pm_rate *r;
	__u64 start;

	if (kind >= EDGEQ_PM_EV_KIND_MAX)
		return false;
	r = &rate[kind];
	start = r->win_start_ns;
	if (now - start >= rl_window_ns &&
	    __sync_bool_compare_and_swap(&r->win_start_ns, start, now))
		r->count = 0;
	if (__sync_fetch_and_add(&r->count, 1) >= rl_burst) {
		__sync_fetch_and_add(&stats.dropped_rate, 1);
		return false;
	}
	return true;
}

static __always_inline void emit(__u32 kind, __u32 id, __s64 value, __s64 prev,
				 __u64 aux, __u32 level, __u32 flags,
				 const char *name, __u64 now)
{
	struct edgeq_pm_event *e;

	if (!rate_ok(kind, now))
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&stats.dropped_full, 1);
		return;
	}
	e->ts_ns = now;
	e->kind = kind;
	e->id = id;
	e->value = value;
	e->prev = prev;
	e->aux = aux;
	e->level = level;
	e->flags = flags;
	if (name)
		__builtin_memcpy(e->name, name, EDGEQ_PM_NAME_LEN);
	else
		__builtin_memset(e->name, 0, EDGEQ_PM_NAME_LEN);
	bpf_ringbuf_submit(e, 0);
	__sync_fetch_and_add(&stats.events, 1);
}

static __always_inline void hit(__u32 kind)
{
	if (kind < EDGEQ_PM_EV_KIND_MAX)
		__sync_fetch_and_add(&stats.hits[kind], 1);
}

/* ---- thermal ---------------------------------------------------------- */

static __always_inline __u32 temp_level(__u32 old, __s32 t, __s32 warn,
					__s32 crit, __s32 hyst)
{
	__u32 up = t >= crit ? EDGEQ_PM_LEVEL_CRIT :
		   t >= warn ? EDGEQ_PM_LEVEL_WARN :
			       EDGEQ_PM_LEVEL_OK;

	if (up >= old)
		return up;
	/* Falling: leave a level only once hyst below its threshold. */
	if (old == EDGEQ_PM_LEVEL_CRIT && t >= crit - hyst)
		return EDGEQ_PM_LEVEL_CRIT;
	if (t >= warn - hyst)
		return EDGEQ_PM_LEVEL_WARN;
	return EDGEQ_PM_LEVEL_OK;
}

static __noinline int zone_update(__u32 id, __s32 temp, __u64 now, __u32 flags)
{
	struct edgeq_pm_zone_cfg *cfg;
	struct edgeq_pm_zone *z;
	__s32 warn, crit, hyst, old_temp;
	__u32 lvl, old;

	z = bpf_map_lookup_elem(&zones, &id);
	if (!z)
		return 0;
	cfg = bpf_map_lookup_elem(&zone_cfg, &id);
	warn = cfg && cfg->warn_mc ? cfg->warn_mc : temp_warn_mc;
	crit = cfg && cfg->crit_mc ? cfg->crit_mc : temp_crit_mc;
	hyst = cfg && cfg->hyst_mc ? cfg->hyst_mc : temp_hyst_mc;

	old_temp = z->temp_mc;
	if (z->updated_ns && now > z->updated_ns) {
		__s64 d = (__s64)temp - old_temp;
		__u64 dt = now - z->updated_ns;
		__u64 mag = (__u64)(d < 0 ? -d : d) * 1000000000ull / dt;
		__s32 rate;

		if (mag > 10000000)
			mag = 10000000;
		rate = d < 0 ? -(__s32)mag : (__s32)mag;
		/* EWMA, weight 1/4 on the new slope. */
		z->trend_mcps = (3 * z->trend_mcps + rate) >> 2;
	}
	z->prev_mc = old_temp;
	z->temp_mc = temp;
	z->updated_ns = now;
	z->samples++;

	old = z->level;
	lvl = temp_level(old, temp, warn, crit, hyst);
	if (lvl != old) {
		z->level = lvl;
		emit(EDGEQ_PM_EV_TEMP, id, temp, old_temp, z->trend_mcps, lvl,
		     flags | (lvl > old ? EDGEQ_PM_F_RISING : 0), z->type, now);
	}
	return 0;
}

static __noinline int zone_trip(__u32 id, __s32 trip, __u32 type, __u64 now,
				__u32 flags)
{
	struct edgeq_pm_zone *z = bpf_map_lookup_elem(&zones, &id);

	if (!z)
		return 0;
	z->trips++;
	z->last_trip = trip;
	z->last_trip_type = type;
	emit(EDGEQ_PM_EV_TRIP, id, z->temp_mc, 0, trip, type, flags, z->type,
	     now);
	return 0;
}

static __noinline int cdev_update(__u32 id, __u64 target, __u64 max, __u64 now,
				  __u32 flags)
{
	struct edgeq_pm_cdev *c = bpf_map_lookup_elem(&cdevs, &id);
	__u64 old;

	if (!c)
		return 0;
	old = c->state;
	c->max_state = max;
	if (old == target && c->updated_ns) {
		c->updated_ns = now;
		return 0;
	}
	c->state = target;
	c->updated_ns = now;
	c->changes++;
	emit(EDGEQ_PM_EV_CDEV, id, target, old, max, 0,
	     flags | (target > old ? EDGEQ_PM_F_RISING : 0), c->type, now);
	return 0;
}

SEC("tp_btf/thermal_temperature")
int BPF_PROG(on_thermal_temperature, struct thermal_zone_device *tz)
{
	__u32 id = BPF_CORE_READ(tz, id);
	struct edgeq_pm_zone *z;

	hit(EDGEQ_PM_EV_TEMP);
	z = bpf_map_lookup_elem(&zones, &id);
	if (!z)
		return 0;
	if (!z->type[0])
		bpf_core_read_str(z->type, sizeof(z->type), &tz->type);
	return zone_update(id, BPF_CORE_READ(tz, temperature),
			   bpf_ktime_get_ns(), 0);
}

SEC("tp_btf/thermal_zone_trip")
int BPF_PROG(on_thermal_zone_trip, struct thermal_zone_device *tz, int trip,
	     enum thermal_trip_type type)
{
	hit(EDGEQ_PM_EV_TRIP);
	return zone_trip(BPF_CORE_READ(tz, id), trip, type, bpf_ktime_get_ns(),
			 0);
}

SEC("tp_btf/cdev_update")
int BPF_PROG(on_cdev_update, struct thermal_cooling_device *cdev,
	     unsigned long target)
{
	__u32 id = BPF_CORE_READ(cdev, id);
	struct edgeq_pm_cdev *c;

	hit(EDGEQ_PM_EV_CDEV);
	c = bpf_map_lookup_elem(&cdevs, &id);
	if (!c)
		return 0;
	if (!c->type[0])
		bpf_probe_read_kernel_str(c->type, sizeof(c->type),
					  BPF_CORE_READ(cdev, type));
	return cdev_update(id, target, BPF_CORE_READ(cdev, max_state),
			   bpf_ktime_get_ns(), 0);
}

/* BPF_PROG_TEST_RUN variants: ctx[] are crafted scalars, ctx[last] a clock
 * (0: bpf_ktime_get_ns()), so tests drive trend and rate limit exactly. */

SEC("raw_tp")
int test_thermal_temperature(__u64 *ctx)
{
	/* ctx: zone id, temperature mC, now ns */
	return zone_update((__u32)ctx[0], (__s32)ctx[1], now_or(ctx[2]),
			   EDGEQ_PM_F_TEST);
}

SEC("raw_tp")
int test_thermal_zone_trip(__u64 *ctx)
{
	/* ctx: zone id, trip index, trip type, now ns */
	return zone_trip((__u32)ctx[0], (__s32)ctx[1], (__u32)ctx[2],
			 now_or(ctx[3]), EDGEQ_PM_F_TEST);
}

SEC("raw_tp")
int test_cdev_update(__u64 *ctx)
{
	/* ctx: cdev id, target state, max state, now ns */
	return cdev_update((__u32)ctx[0], ctx[1], ctx[2], now_or(ctx[3]),
			   EDGEQ_PM_F_TEST);
}

/* ---- frequency -------------------------------------------------------- */

SEC("tp_btf/cpu_frequency")
int BPF_PROG(on_cpu_frequency, unsigned int freq, unsigned int cpu)
{
	__u64 now = bpf_ktime_get_ns();
	struct edgeq_pm_cpu *c;
	__u32 *max, lvl;

	hit(EDGEQ_PM_EV_CPUFREQ);
	c = bpf_map_lookup_elem(&cpus, &cpu);
	max = bpf_map_lookup_elem(&cpu_max, &cpu);
	if (!c || !max)
		return 0;
	lvl = *max && (__u64)freq * 100 < (__u64)*max * freq_warn_pct ?
		      EDGEQ_PM_LEVEL_WARN :
		      EDGEQ_PM_LEVEL_OK;
	c->khz = freq;
	c->updated_ns = now;
	c->changes++;
	if (lvl != c->level) {
		emit(EDGEQ_PM_EV_CPUFREQ, cpu, freq, 0, *max, lvl,
		     lvl > c->level ? EDGEQ_PM_F_RISING : 0, NULL, now);
		c->level = lvl;
	}
	return 0;
}

/*
 * Thermal pressure: the CPU capacity the scheduler takes off because cooling
 * capped the CPU's frequency (arm64's arch_topology: the thermal_pressure_update
 * tracepoint since 5.19, hw_pressure_update since 6.9). What the kernel does
 * about heat, as opposed to a governor choosing a low clock.
 */
static __always_inline int cpu_pressure(__u32 cpu, __u64 pressure, __u64 now,
					__u32 flags)
{
	struct edgeq_pm_cpu *c;
	__u32 old;

	hit(EDGEQ_PM_EV_PRESSURE);
	c = bpf_map_lookup_elem(&cpus, &cpu);
	if (!c)
		return 0;
	old = c->pressure;
	c->pressure = pressure > 0xffffffffull ? 0xffffffffu : (__u32)pressure;
	c->pressure_ns = now;
	c->pressure_updates++;
	if (c->pressure != old)
		emit(EDGEQ_PM_EV_PRESSURE, cpu, c->pressure, old, 0,
		     c->pressure ? EDGEQ_PM_LEVEL_WARN : EDGEQ_PM_LEVEL_OK,
		     flags | (c->pressure > old ? EDGEQ_PM_F_RISING : 0), NULL,
		     now);
	return 0;
}

SEC("tp_btf/thermal_pressure_update")
int BPF_PROG(on_thermal_pressure_update, int cpu, unsigned long pressure)
{
	return cpu_pressure((__u32)cpu, pressure, bpf_ktime_get_ns(), 0);
}

SEC("tp_btf/hw_pressure_update")
int BPF_PROG(on_hw_pressure_update, int cpu, unsigned long pressure)
{
	return cpu_pressure((__u32)cpu, pressure, bpf_ktime_get_ns(), 0);
}

SEC("raw_tp")
int test_thermal_pressure(__u64 *ctx)
{
	/* ctx: cpu, pressure (capacity units), now ns */
	return cpu_pressure((__u32)ctx[0], ctx[1], now_or(ctx[2]),
			    EDGEQ_PM_F_TEST);
}

/* struct devfreq as CO-RE sees it; the flavour suffix keeps this apart
 * from a vmlinux.h that has the full definition. */
struct devfreq___edgeq {
	struct device dev;
} __attribute__((preserve_access_index));

SEC("tp_btf/devfreq_frequency")
int BPF_PROG(on_devfreq_frequency, struct devfreq___edgeq *df,
	     unsigned long freq, unsigned long prev)
{
	struct edgeq_pm_devfreq_key key = {};
	struct edgeq_pm_devfreq *d, init = {};
	__u64 now = bpf_ktime_get_ns();

	hit(EDGEQ_PM_EV_DEVFREQ);
	bpf_probe_read_kernel_str(key.name, sizeof(key.name),
				  BPF_CORE_READ(df, dev.kobj.name));
	d = bpf_map_lookup_elem(&devfreqs, &key);
	if (!d) {
		bpf_map_update_elem(&devfreqs, &key, &init, BPF_NOEXIST);
		d = bpf_map_lookup_elem(&devfreqs, &key);
		if (!d)
			return 0;
	}
	d->prev_hz = prev;
	d->hz = freq;
	d->updated_ns = now;
	d->changes++;
	if (freq != prev)
		emit(EDGEQ_PM_EV_DEVFREQ, 0, freq, prev, 0, 0,
		     freq < prev ? EDGEQ_PM_F_RISING : 0, key.name, now);
	return 0;
}

/* ---- memory ----------------------------------------------------------- */

/* Is the current task in edgeq's memory cgroup or below it? The memory
 * controller's css works for cgroup v1 and v2 alike. */
static __always_inline bool in_own_cgroup(void)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	int idx = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
	struct cgroup_subsys_state *css = NULL;
	struct css_set *cs;
	int i;

	if (!own_cgid)
		return false;
	cs = BPF_CORE_READ(task, cgroups);
	if (!cs || idx < 0 || idx >= 16)
		return false;
	bpf_probe_read_kernel(&css, sizeof(css), &cs->subsys[idx]);
	for (i = 0; i < 8 && css; i++) {
		if (BPF_CORE_READ(css, cgroup, kn, id) == own_cgid)
			return true;
		css = BPF_CORE_READ(css, parent);
	}
	return false;
}

static __always_inline void reclaim_begin(__u32 memcg)
{
	__u64 key = (__u32)bpf_get_current_pid_tgid() | (__u64)memcg << 32;
	struct reclaim_start s = { .ts = bpf_ktime_get_ns() };

	s.own = in_own_cgroup();
	bpf_map_update_elem(&reclaim_inflight, &key, &s, BPF_ANY);
}

static __always_inline void stall_add(__u32 scope, __u64 dur)
{
	struct edgeq_pm_stall *st;

	if (scope >= EDGEQ_PM_STALL_SCOPES)
		return;
	st = &stats.stall[scope];
	__sync_fetch_and_add(&st->count, 1);
	__sync_fetch_and_add(&st->total_ns, dur);
	__sync_fetch_and_add(&st->win_ns, dur);
	if (dur > st->max_ns)
		st->max_ns = dur;
}

static __noinline int reclaim_end(__u32 memcg, __u64 nr_reclaimed)
{
	__u64 key = (__u32)bpf_get_current_pid_tgid() | (__u64)memcg << 32;
	__u64 now = bpf_ktime_get_ns(), dur, start;
	struct reclaim_start *s;
	__u32 own, flags, i;
	char comm[EDGEQ_PM_NAME_LEN] = {};

	s = bpf_map_lookup_elem(&reclaim_inflight, &key);
	if (!s)
		return 0;
	dur = now - s->ts;
	own = s->own;
	bpf_map_delete_elem(&reclaim_inflight, &key);

	start = stats.win_start_ns;
	if (now - start >= stall_window_ns &&
	    __sync_bool_compare_and_swap(&stats.win_start_ns, start, now)) {
		for (i = 0; i < EDGEQ_PM_STALL_SCOPES; i++) {
			stats.stall[i].prev_win_ns = stats.stall[i].win_ns;
			stats.stall[i].win_ns = 0;
		}
	}
	stall_add(memcg ? EDGEQ_PM_STALL_MEMCG : EDGEQ_PM_STALL_DIRECT, dur);
	if (own)
		stall_add(EDGEQ_PM_STALL_OWN, dur);
	if (dur < stall_warn_ns)
		return 0;
	flags = (memcg ? EDGEQ_PM_F_MEMCG : 0) | (own ? EDGEQ_PM_F_OWN_CG : 0);
	bpf_get_current_comm(comm, sizeof(comm));
	emit(EDGEQ_PM_EV_RECLAIM, bpf_get_current_pid_tgid() >> 32, dur, 0,
	     nr_reclaimed, 0, flags, comm, now);
	return 0;
}

SEC("tp_btf/mm_vmscan_direct_reclaim_begin")
int BPF_PROG(on_direct_reclaim_begin)
{
	hit(EDGEQ_PM_EV_RECLAIM);
	reclaim_begin(0);
	return 0;
}

SEC("tp_btf/mm_vmscan_direct_reclaim_end")
int BPF_PROG(on_direct_reclaim_end, unsigned long nr_reclaimed)
{
	return reclaim_end(0, nr_reclaimed);
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(on_memcg_reclaim_begin)
{
	hit(EDGEQ_PM_EV_RECLAIM);
	reclaim_begin(1);
	return 0;
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(on_memcg_reclaim_end, unsigned long nr_reclaimed)
{
	return reclaim_end(1, nr_reclaimed);
}

SEC("tp_btf/mm_vmscan_throttled")
int BPF_PROG(on_vmscan_throttled, int nid, int usec_timeout, int usec_delayed,
	     int reason)
{
	__u64 now = bpf_ktime_get_ns();

	hit(EDGEQ_PM_EV_THROTTLED);
	__sync_fetch_and_add(&stats.throttled, 1);
	__sync_fetch_and_add(&stats.throttled_us, (__u32)usec_delayed);
	emit(EDGEQ_PM_EV_THROTTLED, nid, usec_delayed, usec_timeout, reason, 0,
	     0, NULL, now);
	return 0;
}

SEC("tp_btf/mm_vmscan_wakeup_kswapd")
int BPF_PROG(on_wakeup_kswapd)
{
	__sync_fetch_and_add(&stats.kswapd_wakeups, 1);
	return 0;
}

SEC("tp_btf/mark_victim")
int on_mark_victim(__u64 *ctx)
{
	char comm[EDGEQ_PM_NAME_LEN] = {};
	__u32 pid;

	hit(EDGEQ_PM_EV_OOM);
	__sync_fetch_and_add(&stats.oom_victims, 1);
	if (victim_arg_is_task) {
		struct task_struct *t = (void *)ctx[0];

		pid = BPF_CORE_READ(t, pid);
		bpf_probe_read_kernel_str(comm, sizeof(comm), &t->comm);
	} else {
		pid = (__u32)ctx[0];
	}
	emit(EDGEQ_PM_EV_OOM, pid, 0, 0, 0, 0, 0, comm, bpf_ktime_get_ns());
	return 0;
}

/* ---- the edgeq module's tracepoints (scalar arguments, queue id first) - */

static __always_inline struct edgeq_pm_queue *queue(__u64 id)
{
	__u32 k = (__u32)id;

	return bpf_map_lookup_elem(&queues, &k);
}

SEC("raw_tp/edgeq_submit")
int on_edgeq_submit(__u64 *ctx)
{
	struct edgeq_pm_queue *q = queue(ctx[0]);

	if (q) {
		__sync_fetch_and_add(&q->submits, 1);
		q->updated_ns = bpf_ktime_get_ns();
	}
	return 0;
}

SEC("raw_tp/edgeq_complete")
int on_edgeq_complete(__u64 *ctx)
{
	struct edgeq_pm_queue *q = queue(ctx[0]);

	if (q) {
		__sync_fetch_and_add(&q->completes, 1);
		q->updated_ns = bpf_ktime_get_ns();
	}
	return 0;
}

SEC("raw_tp/edgeq_throttle")
int on_edgeq_throttle(__u64 *ctx)
{
	/* edgeq_throttle(u32 queue_id, u32 old_state, u32 new_state, u32 max_inflight) */
	struct edgeq_pm_queue *q = queue(ctx[0]);
	__u64 now = bpf_ktime_get_ns();

	hit(EDGEQ_PM_EV_QUEUE);
	if (q) {
		q->state = (__u32)ctx[2];
		q->max_inflight = (__u32)ctx[3];
		q->throttles++;
		q->updated_ns = now;
	}
	emit(EDGEQ_PM_EV_QUEUE, (__u32)ctx[0], (__u32)ctx[2], (__u32)ctx[1],
	     (__u32)ctx[3], 0,
	     (__u32)ctx[2] > (__u32)ctx[1] ? EDGEQ_PM_F_RISING : 0, NULL, now);
	return 0;
}

static __always_inline int agent_event(__u64 *ctx, __u32 what)
{
	struct edgeq_pm_queue *q = queue(ctx[0]);
	__u64 now = bpf_ktime_get_ns();

	hit(EDGEQ_PM_EV_AGENT);
	if (q) {
		q->agent = what;
		if (what == EDGEQ_PM_AGENT_TIMEOUT)
			q->timeouts++;
		q->updated_ns = now;
	}
	emit(EDGEQ_PM_EV_AGENT, (__u32)ctx[0], 0, 0, 0, what, 0, NULL, now);
	return 0;
}

SEC("raw_tp/edgeq_agent_attach")
int on_edgeq_agent_attach(__u64 *ctx)
{
	return agent_event(ctx, EDGEQ_PM_AGENT_ATTACH);
}

SEC("raw_tp/edgeq_agent_detach")
int on_edgeq_agent_detach(__u64 *ctx)
{
	return agent_event(ctx, EDGEQ_PM_AGENT_DETACH);
}

SEC("raw_tp/edgeq_agent_timeout")
int on_edgeq_agent_timeout(__u64 *ctx)
{
	return agent_event(ctx, EDGEQ_PM_AGENT_TIMEOUT);
}
