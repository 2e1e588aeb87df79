/* SPDX-License-Identifier: (LGPL-2.1-or-later OR BSD-2-Clause) */
/*
 * Structures shared by bpf/pressure.bpf.c and the loader in
 * userspace/lib/pressure/: map values, ring-buffer events and the
 * configuration userspace writes. Fixed-size, naturally aligned, no pointers.
 * Temperatures are millidegrees Celsius (the kernel's unit), frequencies kHz
 * for CPUs (cpufreq) and Hz for devfreq devices, times nanoseconds of
 * CLOCK_MONOTONIC (bpf_ktime_get_ns()).
 */
#ifndef EDGEQ_BPF_PRESSURE_H
#define EDGEQ_BPF_PRESSURE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define EDGEQ_PM_MAX_ZONES 64 /* thermal_zone ids 0..63 */
#define EDGEQ_PM_MAX_CDEVS 64 /* cooling_device ids 0..63 */
#define EDGEQ_PM_MAX_CPUS 256
#define EDGEQ_PM_MAX_DEVFREQ 16
#define EDGEQ_PM_MAX_QUEUES 32 /* edgeq module queues */
#define EDGEQ_PM_NAME_LEN 24
#define EDGEQ_PM_RINGBUF_SIZE (256 * 1024)

/* What one ring-buffer record reports (struct edgeq_pm_event.kind). */
enum edgeq_pm_event_kind {
	EDGEQ_PM_EV_TEMP =
		1, /* a zone changed threshold level; value=temp, prev=old temp, level */
	EDGEQ_PM_EV_TRIP, /* thermal_zone_trip: id=zone, aux=trip index, level=trip type */
	EDGEQ_PM_EV_CDEV, /* cdev_update: id=cdev, value=state, prev=old state, aux=max */
	EDGEQ_PM_EV_CPUFREQ, /* a CPU changed frequency level; id=cpu, value=kHz, aux=max kHz */
	EDGEQ_PM_EV_DEVFREQ, /* a devfreq device changed frequency; value=Hz, prev=old Hz */
	EDGEQ_PM_EV_RECLAIM, /* a reclaim stall >= stall threshold ended; value=ns, aux=pages */
	EDGEQ_PM_EV_THROTTLED, /* vmscan throttled a task; value=usec delayed, aux=reason */
	EDGEQ_PM_EV_OOM, /* oom:mark_victim; id=pid */
	EDGEQ_PM_EV_QUEUE, /* edgeq_throttle; id=queue, value=new state, prev=old, aux=max_inflight */
	EDGEQ_PM_EV_AGENT, /* edgeq agent attach/detach/timeout; id=queue, level=EDGEQ_PM_AGENT_* */
	EDGEQ_PM_EV_PRESSURE, /* thermal (hw) pressure on a CPU changed; id=cpu, value, prev (capacity units) */
	EDGEQ_PM_EV_KIND_MAX,
};

/* struct edgeq_pm_event.flags */
#define EDGEQ_PM_F_MEMCG \
	(1u << 0) /* reclaim: memcg (limit) reclaim, not direct */
#define EDGEQ_PM_F_OWN_CG \
	(1u << 1) /* reclaim: by a task in edgeq's own cgroup */
#define EDGEQ_PM_F_RISING (1u << 2) /* temp/freq level change: getting worse */
#define EDGEQ_PM_F_TEST (1u << 3) /* produced by a BPF_PROG_TEST_RUN variant */

/* Threshold levels (struct edgeq_pm_event.level for TEMP/CPUFREQ). */
#define EDGEQ_PM_LEVEL_OK 0
#define EDGEQ_PM_LEVEL_WARN 1
#define EDGEQ_PM_LEVEL_CRIT 2

#define EDGEQ_PM_AGENT_ATTACH 1
#define EDGEQ_PM_AGENT_DETACH 2
#define EDGEQ_PM_AGENT_TIMEOUT 3

struct edgeq_pm_event {
	__u64 ts_ns; /* bpf_ktime_get_ns() when the tracepoint fired */
	__u32 kind;  /* enum edgeq_pm_event_kind */
	__u32 id;    /* zone, cooling device, cpu, queue id or pid */
	__s64 value;
	__s64 prev;
	__u64 aux;
	__u32 level;
	__u32 flags;		      /* EDGEQ_PM_F_* */
	char name[EDGEQ_PM_NAME_LEN]; /* zone/cdev/devfreq type, task comm */
};

/* Latest state of one thermal zone: map "zones", key = thermal zone id. */
struct edgeq_pm_zone {
	__u64 updated_ns; /* 0: no event seen yet */
	__s32 temp_mc;
	__s32 prev_mc;
	__s32 trend_mcps; /* smoothed slope, millidegrees per second */
	__u32 level;	  /* EDGEQ_PM_LEVEL_* after hysteresis */
	__u64 samples;
	__u64 trips;	 /* thermal_zone_trip events */
	__s32 last_trip; /* index of the last trip crossed, -1 none */
	__u32 last_trip_type;
	char type[EDGEQ_PM_NAME_LEN];
};

/* Per-zone thresholds from userspace: map "zone_cfg"; 0 = rodata default. */
struct edgeq_pm_zone_cfg {
	__s32 warn_mc;
	__s32 crit_mc;
	__s32 hyst_mc;
	__u32 pad;
};

/* Latest state of one cooling device: map "cdevs", key = cooling device id. */
struct edgeq_pm_cdev {
	__u64 updated_ns;
	__u64 state;
	__u64 max_state;
	__u64 changes;
	char type[EDGEQ_PM_NAME_LEN];
};

/* Latest frequency of one CPU: map "cpus", key = cpu. max from "cpu_max". */
struct edgeq_pm_cpu {
	__u64 updated_ns;
	__u32 khz;
	__u32 level; /* WARN when below freq_warn_pct of the max */
	__u64 changes;
	__u64 pressure_ns; /* last thermal_pressure_update / hw_pressure_update */
	__u32 pressure; /* capacity the scheduler takes off for heat (of 1024) */
	__u32 pressure_updates;
};

/* A devfreq device (the Jetson GPU): map "devfreqs", key = name. */
struct edgeq_pm_devfreq_key {
	char name[EDGEQ_PM_NAME_LEN];
};

struct edgeq_pm_devfreq {
	__u64 updated_ns;
	__u64 hz;
	__u64 prev_hz;
	__u64 changes;
};

/* An edgeq module queue: map "queues", key = queue id. */
struct edgeq_pm_queue {
	__u64 updated_ns;
	__u64 submits;
	__u64 completes;
	__u64 throttles;
	__u32 state; /* cooling state set by edgeq_throttle */
	__u32 max_inflight;
	__u32 agent; /* EDGEQ_PM_AGENT_* last seen, 0 never */
	__u32 timeouts;
};

/* Reclaim stall accounting for one scope. */
struct edgeq_pm_stall {
	__u64 count;	/* stalls that ended */
	__u64 total_ns; /* summed duration */
	__u64 max_ns;
	__u64 win_ns;	   /* stall time in the current window */
	__u64 prev_win_ns; /* stall time in the previous, complete window */
};

/* Scopes of struct edgeq_pm_stats.stall[] */
#define EDGEQ_PM_STALL_DIRECT 0 /* system-wide direct reclaim */
#define EDGEQ_PM_STALL_MEMCG 1	/* system-wide memcg (limit) reclaim */
#define EDGEQ_PM_STALL_OWN 2	/* either kind, by a task in edgeq's cgroup */
#define EDGEQ_PM_STALL_SCOPES 3

/* Global counters (the program's .bss; mmapped by the loader). */
struct edgeq_pm_stats {
	struct edgeq_pm_stall stall[EDGEQ_PM_STALL_SCOPES];
	__u64 win_start_ns; /* start of the current stall window */
	__u64 throttled;    /* vmscan_throttled events */
	__u64 throttled_us; /* summed usec_delayed */
	__u64 kswapd_wakeups;
	__u64 oom_victims;
	__u64 events;	    /* ring-buffer records written */
	__u64 dropped_rate; /* records suppressed by the rate limit */
	__u64 dropped_full; /* records lost to a full ring buffer */
	__u64 hits[EDGEQ_PM_EV_KIND_MAX]; /* tracepoint hits per event kind */
};

/* Rate limiter state per event kind: a fixed window of burst records. */
struct edgeq_pm_rate {
	__u64 win_start_ns;
	__u64 count;
};

#endif /* EDGEQ_BPF_PRESSURE_H */
