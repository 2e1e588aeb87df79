/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Placement's part of `edgeq plan` (see plan_placement.c). */
#ifndef EDGEQ_CLI_PLAN_PLACEMENT_H
#define EDGEQ_CLI_PLAN_PLACEMENT_H

#include <edgeq/edgeq.h>
#include <edgeq/placement.h>

/* `edgeq plan ... --placement`: called by plan.c with its argv. */
int cli_plan_placement(int argc, char **argv);

/* The placement shape of the GGUF model at @path. */
int plan_placement_model_shape(const char *path, struct edgeq_place_shape *s,
			       struct edgeq_error *err);

/*
 * Add the --queue list "npu0=npu,gpu0" to @d: each queue with the profile
 * named after '=', else its name less trailing digits. With @sysfs, also
 * read each queue's state there and refuse a queue that does not exist.
 * Returns 0 or the exit code (message printed as @cmd, naming option @opt).
 */
int plan_placement_add_queues(struct edgeq_devices *d, const char *list,
			      const struct edgeq_device_profile *profs,
			      size_t n_profs, const char *cmd, const char *opt,
			      const char *sysfs);

#endif
