/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pressure monitor: thermal, frequency and memory pressure as one state
 * the engine can act on.
 *
 * With BPF (CAP_BPF + CAP_PERFMON, kernel BTF) the monitor attaches programs
 * to the kernel's thermal, power, devfreq, vmscan and oom tracepoints and to
 * the edgeq module's; threshold crossings arrive through a ring buffer.
 * Without it (no privilege, no BTF, a container, qemu-user, EDGEQ_NO_BPF=1)
 * it falls back to PSI triggers and polling of sysfs. Either way the state
 * has the same shape and names its source.
 *
 * Event loop: edgeq_pressure_fd() is one pollable fd (POLLIN) that covers the
 * ring buffer, the PSI triggers and the refresh timer; when it is readable,
 * call edgeq_pressure_consume(). edgeq_pressure_poll_add() queues the poll on
 * the engine's io_uring.
 *
 * Units: temperatures in millidegrees Celsius, CPU frequencies in kHz,
 * devfreq in Hz, times in nanoseconds (CLOCK_MONOTONIC), memory in bytes.
 */
#ifndef EDGEQ_PRESSURE_H
#define EDGEQ_PRESSURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <edgeq/edgeq.h>

#ifdef __cplusplus
extern "C" {
#endif

struct io_uring;
struct edgeq_pressure;

#define EDGEQ_PRESSURE_MAX_ZONES 32
#define EDGEQ_PRESSURE_MAX_CDEVS 32
#define EDGEQ_PRESSURE_MAX_FREQS 16
#define EDGEQ_PRESSURE_MAX_DEVICES 8
#define EDGEQ_PRESSURE_MAX_PROBES 32
#define EDGEQ_PRESSURE_NAME 32
/* "no value" for temperatures and headroom */
#define EDGEQ_PRESSURE_NONE INT32_MIN

enum edgeq_pressure_source {
	EDGEQ_PRESSURE_SRC_BPF = 0, /* tracepoints through BPF */
	EDGEQ_PRESSURE_SRC_PSI,	    /* PSI triggers and sysfs polling */
};

enum edgeq_mem_level {
	EDGEQ_MEM_NONE = 0, /* no reclaim stalls, plenty available */
	EDGEQ_MEM_LOW,
	EDGEQ_MEM_MEDIUM,
	EDGEQ_MEM_CRITICAL, /* shrink now: OOM is near */
};

struct edgeq_pressure_opts {
	bool no_bpf; /* force the PSI/sysfs fallback (also EDGEQ_NO_BPF=1) */
	const char *sysfs_root; /* "/sys"; also EDGEQ_SYSFS_ROOT */
	const char *proc_root;	/* "/proc"; also EDGEQ_PROC_ROOT */
	const char *
		devices_conf; /* zone/devfreq -> device map; also EDGEQ_DEVICES_CONF,
				     default /etc/edgeq/devices.conf (absent is fine) */
	const char *cgroup;   /* memory cgroup directory counted as "own";
				     NULL: this process's */
	uint32_t refresh_ms;  /* sysfs/meminfo refresh period (default 1000) */
	int32_t temp_warn_mc; /* default thresholds when a zone has no trip */
	int32_t temp_crit_mc;
	int32_t temp_hyst_mc;
	uint32_t freq_warn_pct; /* CPU below this % of its max counts as throttled */
	uint64_t stall_warn_ns; /* reclaim stalls at least this long are events */
	uint32_t rate_burst; /* ring-buffer events per kind per rate_window_ns */
	uint64_t rate_window_ns;
	uint32_t psi_stall_us; /* PSI trigger: some stall of this many us ... */
	uint32_t psi_window_us; /* ... within this window */
	/*
	 * "QUEUE:ZONE_TYPE[,...]": at every refresh, step each queue's
	 * cooling_state (/sys/class/edgeq/QUEUE) from the zone of that type
	 * the way the kernel's step_wise does: one state up while the zone is
	 * at or above its lowest passive/active trip, one down once it is
	 * below that trip less its hysteresis (temp_hyst_mc when the zone has
	 * none). For kernels that cannot bind the cooling device to the zone
	 * (6.12 without a device tree). NULL: none.
	 */
	const char *cool_bind;
};

/* One thermal zone (thermal_zone<id> in sysfs). */
struct edgeq_pressure_zone {
	int id;
	char type[EDGEQ_PRESSURE_NAME]; /* "cpu-thermal" */
	char device[16];		/* edgeq device it maps to, "" none */
	int32_t temp_mc;      /* EDGEQ_PRESSURE_NONE when unreadable */
	int32_t trend_mcps;   /* millidegrees per second, smoothed */
	int32_t next_trip_mc; /* the lowest trip above temp, or NONE */
	int32_t headroom_mc;  /* next_trip_mc - temp_mc, or NONE */
	uint32_t level;	      /* 0 ok, 1 warn, 2 crit (with hysteresis) */
	uint64_t trips;	      /* trip crossings seen */
};

/* One cooling device (cooling_device<id>). */
struct edgeq_pressure_cdev {
	int id;
	char type[EDGEQ_PRESSURE_NAME]; /* "Processor", "edgeq-npu0" */
	char device[16];
	uint64_t cur_state, max_state;
};

/*
 * One frequency domain: a devfreq device or the CPUs together. Throttling is
 * what the kernel imposes, never cur/max (a governor idling at a low clock is
 * not throttled): the ceiling it allows now (cpufreq's scaling_max_freq,
 * devfreq's max_freq, which thermal cooling and PM QoS lower) against the
 * hardware's maximum, and for CPUs the scheduler's thermal pressure.
 */
struct edgeq_pressure_freq {
	char name[EDGEQ_PRESSURE_NAME]; /* "cpu" or the devfreq name "17000000.gpu" */
	char device[16];
	uint64_t cur; /* kHz for cpu (summed), Hz for devfreq */
	uint64_t max; /* hardware max: cpuinfo_max_freq (summed), the
			    highest available_frequencies entry (else max_freq) */
	uint64_t cap; /* ceiling allowed now: scaling_max_freq (summed), max_freq */
	double pressure; /* cpu: mean share of capacity lost to thermal
			    pressure (thermal/hw_pressure_update, BPF), else 0 */
	double throttle; /* share of full speed allowed: 1 = unthrottled */
};

/* Per edgeq device ("cpu", "gpu", "npu"): what placement reads. */
struct edgeq_pressure_device {
	char name[16];
	int32_t temp_mc;     /* hottest mapped zone, or NONE */
	int32_t headroom_mc; /* least headroom to a trip, or NONE */
	double throttle;     /* share of full speed left: 1 = unthrottled */
	uint32_t level;	     /* worst zone level */
};

/* Reclaim stalls in one scope, since the monitor started. */
struct edgeq_pressure_stall {
	uint64_t count;
	uint64_t total_ns;
	uint64_t max_ns;
};

struct edgeq_pressure_mem {
	enum edgeq_mem_level level;
	double stall_ms_per_s; /* reclaim/PSI stall per second of wall time */
	uint64_t available;    /* MemAvailable */
	uint64_t total;	       /* MemTotal */
	double psi_some_avg10, psi_full_avg10; /* -1 when PSI is absent */
	struct edgeq_pressure_stall direct, memcg, own; /* BPF source only */
	uint64_t throttled, kswapd_wakeups, oom_victims;
	double own_psi_some_avg10; /* own cgroup's memory.pressure (v2), -1 absent */
};

struct edgeq_pressure_queue {
	uint32_t id;
	uint32_t state, max_inflight, agent;
	uint64_t submits, completes, throttles, timeouts;
};

#define EDGEQ_PRESSURE_MAX_COOL 8

/* One binding of opts.cool_bind, as its last step left it. */
struct edgeq_pressure_cool {
	char queue[16];
	char zone[EDGEQ_PRESSURE_NAME];
	int32_t temp_mc, trip_mc, hyst_mc; /* EDGEQ_PRESSURE_NONE: unknown */
	uint32_t state, max_state;
	/* 0, or why the last step did nothing: -ENODEV (no such zone or
	 * queue), -ENOENT (the zone has no passive or active trip), or the
	 * write's error (-EACCES: cooling_state is root's) */
	int error;
};

struct edgeq_pressure_state {
	enum edgeq_pressure_source source;
	uint64_t seq; /* bumps on every change */
	uint64_t updated_ns;
	uint32_t n_zones, n_cdevs, n_freqs, n_devices, n_queues;
	struct edgeq_pressure_zone zones[EDGEQ_PRESSURE_MAX_ZONES];
	struct edgeq_pressure_cdev cdevs[EDGEQ_PRESSURE_MAX_CDEVS];
	struct edgeq_pressure_freq freqs[EDGEQ_PRESSURE_MAX_FREQS];
	struct edgeq_pressure_device devices[EDGEQ_PRESSURE_MAX_DEVICES];
	struct edgeq_pressure_queue queues[EDGEQ_PRESSURE_MAX_DEVICES];
	struct edgeq_pressure_mem mem;
	uint64_t events, dropped; /* ring-buffer records seen / suppressed */
	uint32_t n_cool;
	struct edgeq_pressure_cool cool[EDGEQ_PRESSURE_MAX_COOL];
};

/* One ring-buffer record or fallback change, for callers that want them. */
struct edgeq_pressure_event {
	uint64_t ts_ns; /* when the kernel saw it (CLOCK_MONOTONIC) */
	uint32_t kind;	/* EDGEQ_PM_EV_* of bpf/pressure.h (same numbers) */
	uint32_t id;
	int64_t value, prev;
	uint64_t aux;
	uint32_t level, flags;
	char name[24];
};

/* Names of the event kinds: "temp", "trip", "cdev", "cpufreq", "devfreq",
 * "reclaim", "throttled", "oom", "queue", "agent"; "?" otherwise. */
const char *edgeq_pressure_event_name(uint32_t kind);

/* What happened to one BPF program. */
struct edgeq_pressure_probe {
	char prog[40];	     /* program name */
	char tracepoint[48]; /* "thermal:thermal_temperature" */
	bool attached;
	int err; /* 0, or a negative errno (-ENOENT: no such tracepoint) */
};

typedef void (*edgeq_pressure_event_fn)(void *ctx,
					const struct edgeq_pressure_event *ev);

void edgeq_pressure_opts_init(struct edgeq_pressure_opts *o);

/*
 * Start the monitor. Tries BPF unless disabled; on any BPF failure falls back
 * to PSI/sysfs and records why (edgeq_pressure_fallback_reason()). Fails only
 * when neither works. @o may be NULL for defaults.
 */
int edgeq_pressure_new(const struct edgeq_pressure_opts *o,
		       struct edgeq_pressure **out, struct edgeq_error *err);
void edgeq_pressure_free(struct edgeq_pressure *p);

enum edgeq_pressure_source
edgeq_pressure_source(const struct edgeq_pressure *p);
/* "bpf" or "psi" */
const char *edgeq_pressure_source_name(enum edgeq_pressure_source s);
/* Why BPF is not in use ("" when it is). */
const char *edgeq_pressure_fallback_reason(const struct edgeq_pressure *p);

/* BPF programs and what became of them; returns the count (0 with PSI). */
unsigned int edgeq_pressure_probes(const struct edgeq_pressure *p,
				   const struct edgeq_pressure_probe **out);

/* Called for every ring-buffer event from edgeq_pressure_consume(). */
void edgeq_pressure_set_event_fn(struct edgeq_pressure *p,
				 edgeq_pressure_event_fn fn, void *ctx);

/* One fd, readable (POLLIN) when there is something to consume. */
int edgeq_pressure_fd(const struct edgeq_pressure *p);

/*
 * Queue IORING_OP_POLL_ADD (POLLIN) for the monitor's fd on @ring with
 * @user_data; the caller submits. One-shot: queue it again after each
 * completion. Returns 0 or -EBUSY when the submission queue is full.
 */
int edgeq_pressure_poll_add(struct edgeq_pressure *p, struct io_uring *ring,
			    uint64_t user_data);

/*
 * Drain what is pending (ring buffer, PSI triggers, refresh timer) without
 * blocking and update the state. Returns 1 when the state changed, 0 when
 * not, or a negative errno.
 */
int edgeq_pressure_consume(struct edgeq_pressure *p);

/* Re-read everything now (maps, sysfs, meminfo, PSI). Same returns. */
int edgeq_pressure_refresh(struct edgeq_pressure *p);

/* Copy the current state. */
void edgeq_pressure_get(const struct edgeq_pressure *p,
			struct edgeq_pressure_state *out);

/* "none", "low", "medium", "critical" */
const char *edgeq_mem_level_name(enum edgeq_mem_level l);

/*
 * The edgeq device a thermal zone or devfreq/cooling device of @type maps to
 * under the built-in rules and @p's configuration ("" when none); @p may be
 * NULL for the built-in rules only. Writes at most @len bytes.
 */
void edgeq_pressure_map_device(const struct edgeq_pressure *p, const char *kind,
			       const char *type, char *dev, size_t len);

/*
 * For tests and benchmarks: run the BPF_PROG_TEST_RUN variant of a program
 * ("thermal_temperature", "thermal_zone_trip", "cdev_update") on crafted
 * arguments (see bpf/pressure.bpf.c; the last one is a clock, 0 = now) in
 * the live monitor. Returns the program's return value, -EOPNOTSUPP when
 * the source is not BPF, or a negative errno.
 */
int edgeq_pressure_test_run(struct edgeq_pressure *p, const char *name,
			    const uint64_t *args, unsigned int n_args);

#ifdef __cplusplus
}
#endif
#endif /* EDGEQ_PRESSURE_H */
