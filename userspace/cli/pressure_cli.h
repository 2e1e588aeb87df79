/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What `edgeq status` and `edgeq top` share: starting the pressure monitor
 * from common options, and the JSON form of its state. */
#ifndef EDGEQ_PRESSURE_CLI_H
#define EDGEQ_PRESSURE_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <edgeq/pressure.h>

struct pressure_cli_opts {
	bool no_bpf;
	const char *sysfs_root;
	const char *proc_root;
	const char *devices_conf;
	const char *cgroup;
	const char *cool_bind;
	int refresh_ms;
	int stall_warn_us;
	int rate_burst;
};

/* The option table entries both commands take (append CLI_OPTIONS_END). */
#define PRESSURE_CLI_OPTIONS(po)                                                      \
	{                                                                             \
		"no-bpf", 0,                                                          \
		CLI_FLAG, &(po).no_bpf,                                               \
		NULL,	  "do not use BPF: PSI triggers and sysfs polling"            \
	},                                                                            \
		{ "sysfs-root",                                                       \
		  0,                                                                  \
		  CLI_STR,                                                            \
		  &(po).sysfs_root,                                                   \
		  "DIR",                                                              \
		  "read thermal/devfreq/cpufreq under DIR instead of /sys" },         \
		{ "proc-root",                                                        \
		  0,                                                                  \
		  CLI_STR,                                                            \
		  &(po).proc_root,                                                    \
		  "DIR",                                                              \
		  "read meminfo and pressure/ under DIR instead of /proc" },          \
		{ "devices-conf",                                                     \
		  0,                                                                  \
		  CLI_STR,                                                            \
		  &(po).devices_conf,                                                 \
		  "FILE",                                                             \
		  "zone/devfreq to device map (default /etc/edgeq/devices.conf)" },   \
		{ "cgroup",                                                           \
		  0,                                                                  \
		  CLI_STR,                                                            \
		  &(po).cgroup,                                                       \
		  "DIR",                                                              \
		  "memory cgroup counted as edgeq's own (default: this process's)" }, \
		{ "cool-bind",                                                        \
		  0,                                                                  \
		  CLI_STR,                                                            \
		  &(po).cool_bind,                                                    \
		  "Q:ZONE,...",                                                       \
		  "step queue Q's cooling_state from the zone of type ZONE" },        \
		{ "refresh-ms",                                                       \
		  0,                                                                  \
		  CLI_INT,                                                            \
		  &(po).refresh_ms,                                                   \
		  "MS",                                                               \
		  "sysfs and meminfo refresh period (default 1000)" },                \
		{ "stall-warn-us",                                                    \
		  0,                                                                  \
		  CLI_INT,                                                            \
		  &(po).stall_warn_us,                                                \
		  "US",                                                               \
		  "BPF: reclaim stalls this long become events (default 1000)" },     \
	{                                                                             \
		"rate-burst", 0, CLI_INT, &(po).rate_burst, "N",                      \
			"BPF: at most N events of a kind per second (default 32)"     \
	}

/* Start the monitor; prints the problem and returns an exit status on failure. */
int pressure_cli_start(const char *cmd, const struct pressure_cli_opts *po,
		       struct edgeq_pressure **out);

/* One JSON object (no newline); @n_ev events, when given, are added as
 * "new_events" and the last of them as "event". */
void pressure_cli_json(FILE *out, const struct edgeq_pressure *p,
		       const struct edgeq_pressure_state *s,
		       const struct edgeq_pressure_event *ev,
		       unsigned int n_ev);

#endif /* EDGEQ_PRESSURE_CLI_H */
