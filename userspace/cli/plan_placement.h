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

#endif
