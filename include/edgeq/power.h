/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Energy: the board's power rails as the kernel exposes them, read and
 * integrated so `edgeq bench` and /metrics can report joules per generated
 * token and average power.
 *
 * Sources, found under sysfs (EDGEQ_SYSFS_ROOT for tests):
 *   hwmon     power<N>_input (uW), or in<N>_input (mV) with curr<N>_input
 *             (mA) of the same channel: the INA3221 monitors on Jetson
 *             boards (labels VDD_IN, VDD_CPU_GPU_CV, VDD_SOC...). Channels
 *             labelled "NC" are not connected and skipped.
 *   powercap  energy_uj of each top-level zone (intel-rapl:N, psys), a
 *             counter that wraps at max_energy_range_uj.
 * The board total is VDD_IN when a rail has that label (the module's input,
 * which the others are part of), else psys when present, else the sum.
 *
 * A box without a readable rail (a VM, a container, powercap readable only
 * by root) gets zero rails and a sentence saying why; never a fake zero.
 */
#ifndef EDGEQ_POWER_H
#define EDGEQ_POWER_H

#include <stdbool.h>
#include <stdint.h>

#include <edgeq/edgeq.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EDGEQ_POWER_MAX_RAILS 16

struct edgeq_power;

struct edgeq_power_rail {
	char name[32];	 /* "VDD_IN", "package-0" */
	char source[12]; /* "hwmon" or "powercap" */
	char chip[24]; /* hwmon name ("ina3221") or powercap zone ("intel-rapl:0") */
	bool in_total; /* counted in the board total */
	double watts;  /* latest reading (powercap: over the last interval) */
	double joules; /* since edgeq_power_start() */
};

struct edgeq_power_reading {
	unsigned int n_rails; /* 0: nothing readable (see _none_reason) */
	double seconds;	      /* since edgeq_power_start() */
	double joules;	      /* board total since then */
	double avg_watts;     /* joules / seconds */
	double watts;	      /* board total, latest */
	uint64_t samples;
};

/*
 * Find the rails under @sysfs_root (NULL: $EDGEQ_SYSFS_ROOT, else /sys).
 * Succeeds with zero rails when there are none; fails only on allocation.
 */
int edgeq_power_open(const char *sysfs_root, struct edgeq_power **out,
		     struct edgeq_error *err);
void edgeq_power_free(struct edgeq_power *p);

/* The rails (their latest readings); returns the count. */
unsigned int edgeq_power_rails(const struct edgeq_power *p,
			       const struct edgeq_power_rail **out);

/* Why there is no rail ("" when there is one), e.g. "no readable power
 * rail: no hwmon power or voltage and current channel, no powercap zone". */
const char *edgeq_power_none_reason(const struct edgeq_power *p);

/*
 * Zero the accumulators and take the first sample. With @period_ms > 0 a
 * thread samples that often (hwmon power is instantaneous: the energy is
 * the integral of the samples, trapezoids between them); 0: only explicit
 * edgeq_power_sample() calls and reads sample.
 */
int edgeq_power_start(struct edgeq_power *p, unsigned int period_ms);
void edgeq_power_stop(struct edgeq_power *p);

/* Take one sample at @now_ns (CLOCK_MONOTONIC; tests pass their own). */
int edgeq_power_sample(struct edgeq_power *p, uint64_t now_ns);

/* Sample now and report the totals since edgeq_power_start(). */
int edgeq_power_read(struct edgeq_power *p, struct edgeq_power_reading *r);

#ifdef __cplusplus
}
#endif
#endif /* EDGEQ_POWER_H */
