/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pressure monitor's insides, shared by monitor.c, sysfs.c and bpf.c. */
#ifndef EDGEQ_PRESSURE_INTERNAL_H
#define EDGEQ_PRESSURE_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <edgeq/pressure.h>

#define PM_MAX_TRIPS 12
#define PM_MAX_RULES 32
#define PM_MAX_CPUS 256

/* One "kind.pattern=device" line of devices.conf. */
struct pm_rule {
	char kind[8]; /* "zone", "devfreq", "cdev" or "" for any */
	char pattern[EDGEQ_PRESSURE_NAME];
	char device[16]; /* "none" unmaps */
};

/* What sysfs says about a zone beyond the published fields. */
struct pm_zone_sys {
	int n_trips;
	int32_t trip_mc[PM_MAX_TRIPS];
	char trip_type[PM_MAX_TRIPS][12];
	int32_t trip_hyst_mc[PM_MAX_TRIPS]; /* -1: the zone has none */
	uint64_t sampled_ns;		    /* for the fallback's own trend */
	bool from_bpf; /* temp/trend/level came from the zones map */
};

/* One queue:zone binding of cool.c, and what it last did. */
struct pm_cool {
	char queue[16];
	char zone[EDGEQ_PRESSURE_NAME];
	uint32_t state; /* what the binding asks for */
	bool written;	/* state has been written once */
};

struct pm_bpf;
struct edgeq_error;

struct edgeq_pressure {
	struct edgeq_pressure_opts o;
	char sysfs[256], proc[256];
	char cg_path[512]; /* own memory cgroup directory, "" unknown */
	bool cg_v2;
	uint64_t own_cgid;
	enum edgeq_pressure_source src;
	char reason[256];

	int epfd, timerfd, psi_fd, own_psi_fd;
	struct edgeq_pressure_state st;
	struct pm_zone_sys zsys[EDGEQ_PRESSURE_MAX_ZONES];
	int n_cpus;
	uint32_t cpu_max_khz[PM_MAX_CPUS];  /* cpuinfo_max_freq */
	uint32_t cpu_cur_khz[PM_MAX_CPUS];  /* scaling_cur_freq */
	uint32_t cpu_cap_khz[PM_MAX_CPUS];  /* scaling_max_freq (<= max) */
	uint32_t cpu_capacity[PM_MAX_CPUS]; /* cpu_capacity, 1024 absent */
	uint32_t cpu_pressure
		[PM_MAX_CPUS]; /* thermal pressure (BPF), capacity units */

	struct pm_rule rules[PM_MAX_RULES];
	int n_rules;

	uint64_t last_stall_total_ns; /* for stall_ms_per_s */
	uint64_t last_stall_at_ns;
	uint64_t last_psi_total_us;

	edgeq_pressure_event_fn fn;
	void *fn_ctx;

	struct pm_cool cool[EDGEQ_PRESSURE_MAX_COOL];
	unsigned int n_cool;

	struct pm_bpf *bpf;
	struct edgeq_pressure_probe probes[EDGEQ_PRESSURE_MAX_PROBES];
	unsigned int n_probes;
};

/* sysfs.c: the fallback's sources, also the static info in BPF mode. */
int pm_read_s64(const char *path, int64_t *out);
int pm_sysfs_scan(struct edgeq_pressure *p, struct edgeq_pressure_state *st);
int pm_read_meminfo(const struct edgeq_pressure *p, uint64_t *avail,
		    uint64_t *total);
int pm_read_psi(const char *path, double *some10, double *full10,
		uint64_t *some_total_us);
int pm_psi_trigger(const char *path, uint32_t stall_us, uint32_t window_us);
int pm_own_cgroup(struct edgeq_pressure *p);
uint32_t pm_temp_level(uint32_t old, int32_t t, int32_t warn, int32_t crit,
		       int32_t hyst);

/* bpf.c: all return -EOPNOTSUPP when built without BPF. */
int pm_bpf_open(struct edgeq_pressure *p, char *why, size_t len);
void pm_bpf_close(struct edgeq_pressure *p);
int pm_bpf_ringbuf_fd(struct edgeq_pressure *p);
int pm_bpf_consume(struct edgeq_pressure *p);
void pm_bpf_overlay(struct edgeq_pressure *p, struct edgeq_pressure_state *st);
void pm_bpf_configure(struct edgeq_pressure *p,
		      const struct edgeq_pressure_state *st);

/* cool.c: cooling states stepped from userspace (opts.cool_bind) */
int pm_cool_parse(struct edgeq_pressure *p, const char *spec,
		  struct edgeq_error *err);
void pm_cool_step(struct edgeq_pressure *p, struct edgeq_pressure_state *n);

/* monitor.c */
void pm_zone_limits(const struct edgeq_pressure *p,
		    const struct pm_zone_sys *zs, int32_t *warn, int32_t *crit);
void pm_deliver(struct edgeq_pressure *p,
		const struct edgeq_pressure_event *ev);

#endif /* EDGEQ_PRESSURE_INTERNAL_H */
